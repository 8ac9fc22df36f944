//! `ThisThread`: the calling thread's view of a system, its registry and
//! its own context together (as rayon-core's `WorkerThread`). Code that
//! runs on one thread's behalf (finding work, `search.rs`) is written as
//! its methods, so that `Registry` can keep only the state every thread
//! shares. Two references, `Copy`: passed in registers as the pair it
//! replaces.

use crate::context::Context;
use crate::registry::Registry;

/// The calling thread's registry and context (the context this thread
/// holds: `Registry::current_for` or a worker's own).
#[derive(Clone, Copy)]
pub(crate) struct ThisThread<'a> {
    pub(crate) reg: &'a Registry,
    pub(crate) ctx: &'a Context,
}

impl<'a> ThisThread<'a> {
    /// `ctx` must be the context the calling thread holds.
    #[inline(always)]
    pub(crate) fn new(reg: &'a Registry, ctx: &'a Context) -> Self {
        ThisThread { reg, ctx }
    }

    /// The calling thread's view of `reg`, its context claimed if need be
    /// (`Registry::current_for`; `call` names the API call in the panic
    /// that refuses it inside a profiler hook).
    #[inline(always)]
    pub(crate) fn current_for(reg: &'a Registry, call: impl Fn() -> &'static str) -> Self {
        ThisThread::new(reg, reg.current_for(call))
    }
}
