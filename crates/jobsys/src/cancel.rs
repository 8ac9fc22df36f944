//! Cancelling jobs: `JobSystem::cancel` (a job, or a `combine` group and
//! its members) and the one cancel every path uses (`cancel_with`: a
//! scope's cycle, a job whose pinned thread is gone). Free functions of
//! the registry; the state change is `Slot::cancel`'s.

use crate::context::Context;
use crate::error::Failure;
use crate::handle::JobHandle;
use crate::registry::Registry;
use crate::registry::ThisThread;
use crate::running::{drop_as_job, failed_name};
use crate::slot::{Cancel, Ending, NOOP_VTABLE};
use std::sync::Arc;

/// Why `JobSystem::cancel` cancelled a job (its dependents report it too).
pub(crate) const CANCELLED_BY_USER: &str = "cancelled by JobSystem::cancel";

/// `JobSystem::cancel`: cancel `h`, and if it is a `combine`, every job
/// of the group first (nested groups included; the dependencies of a
/// single job are not touched). Returns whether `h` itself was stopped
/// before it started.
pub(crate) fn cancel(reg: &Registry, ctx: &Context, h: JobHandle) -> bool {
    let mut todo = vec![h];
    let mut members = Vec::new();
    // `h` is a group that had not finished: true, whatever the race
    // below (cancelling the members may let the group finish, as
    // failed, before `cancel_with` reaches it, which then reads
    // "finished" and returns false).
    let mut unfinished_group = false;
    while let Some(g) = todo.pop() {
        let slot = g.slot();
        let Some(st) = slot.pin(g.gen) else { continue };
        let is_group =
            st.is_waiting() && !st.is_pfor() && std::ptr::eq(slot.vtable(), &NOOP_VTABLE);
        if is_group {
            unfinished_group |= g == h;
            // SAFETY: pinned and WAITING: its edges are final.
            unsafe {
                slot.for_each_dep(|dep, gen| {
                    let d = JobHandle {
                        slot: dep,
                        gen,
                        system: reg.id(),
                    };
                    todo.push(d);
                    members.push(d);
                })
            };
        }
        ThisThread::new(reg, ctx).unpin(slot);
    }
    for m in members {
        cancel_with(reg, ctx, m, CANCELLED_BY_USER, true);
    }
    cancel_with(reg, ctx, h, CANCELLED_BY_USER, true) || unfinished_group
}

/// Cancel the job `h` (`Slot::cancel`), recording `why`. A job that
/// had not started never runs: its closure is dropped here, now, on
/// this thread, as part of the job (a `Drop` that waits on `h` gets
/// `WaitOnSelf`); a runnable one finishes at once, one that waits for
/// dependencies when they are done. With `stop_started`, a job already
/// running is asked to stop (`is_cancelled`, a loop's remaining pieces
/// skipped) and fails when it returns. Dependents fail with the same
/// cause. Returns whether the job was stopped before it started.
pub(crate) fn cancel_with(
    reg: &Registry,
    ctx: &Context,
    h: JobHandle,
    why: &str,
    stop_started: bool,
) -> bool {
    let slot = h.slot();
    let outcome = slot.cancel(h.gen, stop_started);
    match outcome {
        Cancel::No => false,
        Cancel::Waiting | Cancel::Claimed => {
            // The cause, recorded while we own the closure and before
            // anyone can see the job finish (`finish` passes it on).
            slot.set_failure(Arc::new(Failure::cancelled(why, failed_name(slot))));
            // SAFETY: the cancelling CAS gave us the payload: nobody
            // runs or drops a CANCELLED job's closure, and our pin (or
            // claim) keeps the slot from being recycled meanwhile.
            let _ = unsafe { drop_as_job(ctx, slot, h.gen) };
            if outcome == Cancel::Claimed {
                ThisThread::new(reg, ctx).finish(slot, h.gen, Ending::FAILED);
            } else {
                // Until here the job could not become runnable, so
                // nobody saw it finish while its closure was being
                // dropped. If its last dependency finished meanwhile,
                // its release was left to us (our pin keeps the slot).
                if slot.end_cancel_drop()
                    && ThisThread::new(reg, ctx).make_runnable(slot)
                    && ctx.is_top_level_worker()
                {
                    // `make_runnable` leaves waking parked waiters to a
                    // top-level worker's next job; this worker goes on
                    // with its own.
                    ThisThread::new(reg, ctx).wake_parked_waiters();
                }
                ThisThread::new(reg, ctx).unpin(slot);
            }
            true
        }
        // Started: no failure recorded here. The runner already holds
        // its claim and may be about to read `has_failure` as "a
        // dependency failed, skip the closure" (`run_claimed`); the
        // finishing CAS refuses while STOP is set and `finish` records
        // the cancellation then.
        Cancel::Started if slot.state().is_pfor() => {
            ThisThread::new(reg, ctx).cancel_pieces(slot, h.gen)
        }
        Cancel::Started => {
            ThisThread::new(reg, ctx).unpin(slot);
            false
        }
    }
}
