//! `JobSystem::wait_async`: a job's handle as a `Future`, for async code
//! (asset streaming, networking) that waits for frame jobs. Runtime-
//! agnostic: no executor is assumed and no thread polls.
//!
//! The first poll of an unfinished job schedules one small `High` job
//! after it whose closure owns a `Wake`: when that closure is gone (it ran
//! once the job had finished, or was dropped unrun because the job failed
//! or was cancelled, which skips its dependents) the `Wake` marks the
//! future's state finished and wakes the waker the future registered last.
//! The future then reads the job's outcome with a wait that cannot block
//! (the job has finished).

use crate::desc::{JobDesc, Priority};
use crate::error::JobError;
use crate::handle::JobHandle;
use crate::system::JobSystem;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// What the future and its `Wake` share.
#[derive(Default)]
struct State {
    finished: bool,
    waker: Option<Waker>,
}

/// Owned by the job after the awaited one: marks the state finished and
/// wakes the task when dropped (after that job ran, or unrun).
struct Wake(Arc<Mutex<State>>);

impl Drop for Wake {
    fn drop(&mut self) {
        let waker = {
            let mut st = self.0.lock().unwrap_or_else(|e| e.into_inner());
            st.finished = true;
            st.waker.take()
        };
        // Outside the lock: the waker may poll at once, on this thread.
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// The future of [`JobSystem::wait_async`]: ready with the job's outcome
/// once it has finished.
#[must_use = "a future does nothing unless awaited or polled"]
pub struct JobFuture {
    system: JobSystem,
    handle: JobHandle,
    /// `None` until the first poll that found the job unfinished.
    state: Option<Arc<Mutex<State>>>,
}

impl std::fmt::Debug for JobFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobFuture")
            .field("handle", &self.handle)
            .finish_non_exhaustive()
    }
}

impl JobSystem {
    /// `h` as a future, for async code: ready with what
    /// [`try_complete`](Self::try_complete) would return, once the job
    /// has finished. Works with any executor (it registers the task's
    /// waker; no thread polls and nothing spins); the job runs on the
    /// system's threads as usual and is not run by the awaiting task.
    /// Costs one small job if the job has not finished at the first poll.
    /// Dropping the future leaves the job alone.
    ///
    /// ```
    /// # let js = jobsys::JobSystem::builder().workers(1).build().unwrap();
    /// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
    /// #     use std::task::{Context, Poll, Wake, Waker};
    /// #     struct Unpark(std::thread::Thread);
    /// #     impl Wake for Unpark { fn wake(self: std::sync::Arc<Self>) { self.0.unpark() } }
    /// #     let waker = Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    /// #     let mut f = std::pin::pin!(f);
    /// #     loop {
    /// #         if let Poll::Ready(v) = f.as_mut().poll(&mut Context::from_waker(&waker)) { return v; }
    /// #         std::thread::park();
    /// #     }
    /// # }
    /// let decode = js.job().name("decode").schedule(|| { /* CPU work */ });
    /// let r = block_on(async { js.wait_async(decode).await });
    /// assert!(r.is_ok());
    /// ```
    ///
    /// # Panics
    /// When polled, if `h` belongs to another `JobSystem`.
    pub fn wait_async(&self, h: JobHandle) -> JobFuture {
        JobFuture {
            system: self.clone(),
            handle: h,
            state: None,
        }
    }
}

impl Future for JobFuture {
    type Output = Result<(), JobError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let st = match &this.state {
            Some(st) => st.clone(),
            None => {
                if this.system.is_complete(this.handle) {
                    return Poll::Ready(this.system.try_complete(this.handle));
                }
                let st = Arc::new(Mutex::new(State {
                    finished: false,
                    waker: Some(cx.waker().clone()),
                }));
                let wake = Wake(st.clone());
                let desc = JobDesc::default().with_priority(Priority::High);
                this.system
                    .job()
                    .desc(desc)
                    .after(std::slice::from_ref(&this.handle))
                    .schedule(move || drop(wake));
                this.state = Some(st);
                return Poll::Pending;
            }
        };
        let mut s = st.lock().unwrap_or_else(|e| e.into_inner());
        if s.finished {
            drop(s);
            // Finished: this wait reads the outcome and cannot block.
            return Poll::Ready(this.system.try_complete(this.handle));
        }
        match &s.waker {
            Some(w) if w.will_wake(cx.waker()) => {}
            _ => s.waker = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}
