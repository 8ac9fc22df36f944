//! The job a thread is running, as the job sees it: the marker behind
//! `is_cancelled` (`CurrentJob`), dropping a closure as part of its job
//! (`drop_as_job`), the name a failure is recorded with
//! (`failed_name`), and whether this thread is a blocking thread running a
//! blocking job's closure (`InBlocking`).

use crate::context::Context;
use crate::slot::Slot;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The `JobDesc` name of the failing job in `slot`, for its failure
/// record; read only when a failure is recorded (the caller holds a pin or
/// claim, so the meta is this job's). Out of line: the success path never
/// calls it.
#[cold]
#[inline(never)]
pub(crate) fn failed_name(slot: &Slot) -> Option<&'static str> {
    crate::desc::name_of(slot.meta().name)
}

thread_local! {
    /// The job this thread is running, for `is_cancelled`.
    static CURRENT_JOB: std::cell::Cell<(*const Slot, u32)> =
        const { std::cell::Cell::new((std::ptr::null(), 0)) };
}

/// Marks the job a thread runs (for `is_cancelled`) until dropped, which
/// restores the outer one (nested jobs: a wait that helps).
pub(crate) struct CurrentJob((*const Slot, u32));

impl CurrentJob {
    #[inline]
    pub(crate) fn enter(slot: &Slot, gen: u32) -> CurrentJob {
        CurrentJob(
            CURRENT_JOB
                .try_with(|c| c.replace((slot, gen)))
                .unwrap_or((std::ptr::null(), 0)),
        )
    }
}

impl Drop for CurrentJob {
    #[inline]
    fn drop(&mut self) {
        let _ = CURRENT_JOB.try_with(|c| c.set(self.0));
    }
}

thread_local! {
    /// This thread runs a blocking job's closure (`blocking.rs`).
    static IN_BLOCKING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks this thread as running a blocking job's closure until dropped:
/// the closure is part of an unfinished job (its gate opens after it), so
/// a `JobSystem` dropped inside it must not wait for the drain
/// (`start.rs`, `Owner::drop`), as inside any job.
pub(crate) struct InBlocking(bool);

impl InBlocking {
    pub(crate) fn enter() -> InBlocking {
        InBlocking(IN_BLOCKING.try_with(|c| c.replace(true)).unwrap_or(false))
    }

    /// Is this thread inside a blocking job's closure?
    pub(crate) fn here() -> bool {
        IN_BLOCKING.try_with(|c| c.get()).unwrap_or(false)
    }
}

impl Drop for InBlocking {
    fn drop(&mut self) {
        let _ = IN_BLOCKING.try_with(|c| c.set(self.0));
    }
}

/// Has the job running on this thread been cancelled (`JobSystem::cancel`
/// after it started)? A long job polls this to stop early; it then fails
/// as cancelled whatever it returns. False outside a job.
pub fn is_cancelled() -> bool {
    CURRENT_JOB
        .try_with(|c| {
            let (slot, gen) = c.get();
            // SAFETY: set only while this thread runs that job, which holds
            // a claim or a piece pin on the slot (and the registry that owns
            // its page is alive while one of its jobs runs).
            !slot.is_null() && unsafe { &*slot }.cancel_requested(gen)
        })
        .unwrap_or(false)
}

/// Drop a job's closure without running it, as part of the job: the slot
/// is on this thread's `running` stack meanwhile, so a `Drop` that waits on
/// the job's own handle gets `WaitOnSelf` instead of parking forever.
/// Returns the `Drop`'s panic, if any. Used by every path that ends a job
/// without running its closure (skipped, cancelled, a parallel_for after
/// its last piece).
///
/// # Safety
/// The caller alone may drop `slot`'s payload (it holds the claim, the
/// cancel, or the last piece), and does so exactly once, here.
pub(crate) unsafe fn drop_as_job(ctx: &Context, slot: &Slot, gen: u32) -> std::thread::Result<()> {
    let vt = slot.vtable();
    ctx.running_push(slot, gen);
    // SAFETY: exclusive, single drop of an initialised payload (above).
    let r = catch_unwind(AssertUnwindSafe(|| unsafe {
        (vt.drop)(slot.payload_ptr())
    }));
    ctx.running_pop(slot, gen);
    r
}
