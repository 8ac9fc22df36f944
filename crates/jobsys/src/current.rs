//! The calling thread's context cache: which (registry id, context) it
//! used last, so that finding a thread's context is one thread-local read
//! and a compare (`Registry::current_for`). A thread inside a profiler
//! hook has a mark there instead of a context (`enter_hook`): every look-up
//! then misses, and the slow path refuses the call (`in_hook`).

use crate::context::Context;
use std::cell::Cell;
use std::ptr;

thread_local! {
    /// Cache of the last (registry id, context) this thread used; `(0,
    /// null)`: none. No registry has id 0.
    pub(crate) static CURRENT: Cell<(u32, *const Context)> = const { Cell::new((0, ptr::null())) };
}

/// Mark this thread as inside the profiler hook `method` for the length
/// of the hook (`trace::hooks::call`, through `TraceHost::enter_hook`):
/// the context cache holds
/// `(0, method)` instead of a context, and the value it held is returned
/// for `leave_hook`. No registry has id 0, so every look-up misses and
/// takes `current_named`, which refuses it (`in_hook`). The mark lives in
/// the cache itself, not in a thread-local of its own, so that the
/// refusal adds nothing to the hot paths' code: a second thread-local read
/// in the cold look-up changed the inlining around them (W1 counts moved).
#[cfg(feature = "trace")]
pub(crate) fn enter_hook(method: &'static &'static str) -> (u32, *const Context) {
    let mark = (method as *const &'static str).cast::<Context>();
    CURRENT.with(|c| c.replace((0, mark)))
}

/// Undo `enter_hook` after the hook returned. Nothing in between changed
/// the cache: only the hook's code ran, and a look-up from it panics before
/// caching anything.
#[cfg(feature = "trace")]
pub(crate) fn leave_hook(cached: (u32, *const Context)) {
    CURRENT.with(|c| c.set(cached));
}

/// The profiler hook method this thread is inside of, if any (the mark of
/// `enter_hook`).
#[cfg(feature = "trace")]
#[inline]
pub(crate) fn in_hook() -> Option<&'static str> {
    let (id, mark) = CURRENT.with(|c| c.get());
    if id != 0 || mark.is_null() {
        return None;
    }
    // SAFETY: `(0, non-null)` is only ever stored by `enter_hook` (a
    // context is cached with its registry's id, never 0; the empty cache
    // is `(0, null)`), from a `&'static &'static str`.
    Some(unsafe { *mark.cast::<&'static str>() })
}

/// Panic if this thread is inside a profiler hook: `call` (e.g.
/// `"JobSystem::hot_zone"`) is being made from it, and is formatted only
/// then. For the calls that take a lock a hook's caller may hold before
/// they look up the thread's context; the others are refused by
/// `Registry::current_named`.
#[inline]
pub(crate) fn forbid_in_hook(call: impl std::fmt::Display) {
    #[cfg(feature = "trace")]
    if let Some(method) = in_hook() {
        crate::trace::refuse_in_hook(&call, method);
    }
    #[cfg(not(feature = "trace"))]
    let _ = call;
}
