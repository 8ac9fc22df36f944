//! Gates: jobs that wait for something other than jobs; and end events,
//! jobs that wait for another job to end however it ends.
//!
//! A gate is a job with nothing to run that cannot finish until its
//! [`Hold`] is released: it keeps one pending count of its own
//! (`ThisThread::submit_held`) that the hold gives back. Jobs that must wait
//! for an event outside the job graph (the first of several jobs to finish,
//! a free slot of a `Limiter`) are scheduled after a gate, and whoever sees
//! the event releases the hold. Nothing spins and no worker is held while
//! a gate is closed.
//!
//! Holds are crate-private and always owned by a closure or a queue that
//! the library drops: a hold is released exactly once, when `release` is
//! called or when it is dropped (an unwind, a job skipped or cancelled),
//! so a gate cannot stay closed because its opener went away.

use crate::desc::JobDesc;
use crate::handle::JobHandle;
use crate::registry::Registry;
use crate::registry::ThisThread;
use crate::slot::{END_EVENT, NOOP_VTABLE};
use crate::system::JobSystem;
use std::sync::Arc;

/// The count that keeps a gate closed. Dropping it opens the gate.
///
/// It keeps the registry alive, not the `JobSystem`: dropping the last
/// `JobSystem` shuts down as usual, and that shutdown waits for the gate
/// (an unfinished job) like for any other job.
pub(crate) struct Hold {
    registry: Arc<Registry>,
    gate: JobHandle,
}

impl Hold {
    /// Open the gate: jobs after it run once their other dependencies have
    /// finished.
    pub(crate) fn release(self) {
        drop(self)
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        let reg = &*self.registry;
        ThisThread::current_for(reg, || "a jobsys gate").release_hold(self.gate);
    }
}

/// A closed gate: its handle (to schedule jobs after, or to wait on) and
/// the hold that opens it.
pub(crate) fn gate(js: &JobSystem, desc: &JobDesc) -> (JobHandle, Hold) {
    let reg = js.reg();
    let ctx = reg.current_for(|| "a jobsys gate");
    let (slot, gen) = crate::room::alloc_job(reg, ctx, desc);
    // SAFETY: fresh slot, unpublished: ours to give a vtable.
    unsafe { slot.set_vtable(&NOOP_VTABLE) };
    let gate = ThisThread::new(reg, ctx).submit_held(slot, gen, &[], 0);
    (
        gate,
        Hold {
            registry: js.reg_arc().clone(),
            gate,
        },
    )
}

/// A job that finishes once `before` has ended, however it ended (ran,
/// panicked, skipped after a failed dependency, cancelled): an event
/// (`slot::is_event`), so it finishes without error and its dependents do
/// not inherit `before`'s failure. Unlike a gate it is an ordinary edge
/// for waits: a wait on a job after it walks to `before` and helps with it
/// (a thread at `workers(0)` runs it). `High`: it is a no-op that only
/// releases what waits for it.
pub(crate) fn end_of(js: &JobSystem, before: JobHandle) -> JobHandle {
    let reg = js.reg();
    let ctx = reg.current_for(|| "a jobsys end event");
    let desc = JobDesc::default().with_priority(crate::desc::Priority::High);
    let (slot, gen) = crate::room::alloc_job(reg, ctx, &desc);
    // SAFETY: fresh slot, unpublished: ours to give a vtable.
    unsafe { slot.set_vtable(&END_EVENT) };
    ThisThread::new(reg, ctx).submit(slot, gen, &[before], 0)
}
