//! `JobSystem::wait_any`: wait for the first of several jobs to finish.
//!
//! Handles already finished answer at once. Otherwise the caller waits on a
//! gate (`held.rs`) and each job gets a small continuation (a `High` job
//! after it) that opens the gate if it is the first to finish: it opens it
//! when it runs, and when it is dropped unrun (its job failed or was
//! cancelled, so it is skipped). The caller helps with other jobs while it
//! waits, as `complete` does; continuations of the jobs that finish later
//! run then and do nothing.

use crate::desc::{JobDesc, Priority};
use crate::error::JobError;
use crate::handle::JobHandle;
use crate::held::{gate, Hold};
use crate::system::JobSystem;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// No job has finished yet.
const NONE: usize = usize::MAX;

/// What the continuations of one `wait_any` share.
struct First {
    /// The index of the first job seen finished (`NONE`: none yet).
    index: AtomicUsize,
    /// The hold of the caller's gate, taken by the first continuation.
    hold: Mutex<Option<Hold>>,
}

/// A continuation's part of `First`: opens the gate when dropped (after
/// its job ran, or unrun), if its job is the first.
struct Opener {
    first: Arc<First>,
    index: usize,
}

impl Drop for Opener {
    fn drop(&mut self) {
        // AcqRel: the winner's store is what the caller reads after the
        // gate opened (it also reads it through the gate's finish, which
        // orders it anyway); losers only need to see it is taken.
        if self
            .first
            .index
            .compare_exchange(NONE, self.index, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            let hold = self
                .first
                .hold
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let Some(h) = hold {
                h.release();
            }
        }
    }
}

impl JobSystem {
    /// Wait until one of `handles` has finished (successfully or not) and
    /// return its index; ask [`try_complete`](Self::try_complete) for its
    /// outcome. Several finished already: the lowest index. Helps with
    /// other jobs while it waits, as [`complete`](Self::complete) does;
    /// the jobs not chosen go on as they were.
    ///
    /// `Err(JobError::WaitOnSelf)` when none of them can finish while this
    /// thread waits: each is a job this thread is inside of, or needs one.
    ///
    /// Cost: nothing when a job has finished already; otherwise one gate
    /// and one small job per unfinished handle.
    ///
    /// ```
    /// # let js = jobsys::JobSystem::builder().workers(2).build().unwrap();
    /// let slow = js.schedule(|| std::thread::sleep(std::time::Duration::from_millis(50)));
    /// let quick = js.schedule(|| {});
    /// let first = js.wait_any(&[slow, quick]).unwrap();
    /// assert!(js.is_complete([slow, quick][first]));
    /// js.complete(slow);
    /// ```
    ///
    /// # Panics
    /// If `handles` is empty; if a handle belongs to another `JobSystem`.
    #[track_caller]
    pub fn wait_any(&self, handles: &[JobHandle]) -> Result<usize, JobError> {
        assert!(
            !handles.is_empty(),
            "jobsys: wait_any needs at least one handle"
        );
        let reg = self.reg();
        crate::handle::check_handles(reg.id(), handles, "wait_any");
        // A look at each, helping with what it needs: a finished job is
        // never reported as timed out, and a zero deadline ends the wait
        // after that first round of help.
        let mut open = Vec::with_capacity(handles.len());
        for (i, &h) in handles.iter().enumerate() {
            match self.try_complete_timeout(h, Duration::ZERO) {
                Err(JobError::Timeout) => open.push(i),
                Err(JobError::WaitOnSelf) => {}
                _ => return Ok(i),
            }
        }
        if open.is_empty() {
            return Err(JobError::WaitOnSelf);
        }
        let (g, hold) = gate(self, &JobDesc::default());
        let first = Arc::new(First {
            index: AtomicUsize::new(NONE),
            hold: Mutex::new(Some(hold)),
        });
        let desc = JobDesc::default().with_priority(Priority::High);
        for &i in &open {
            let opener = Opener {
                first: first.clone(),
                index: i,
            };
            // The closure owns the opener: it drops when the job has run,
            // or unrun when `handles[i]` failed and the job is skipped.
            self.job()
                .desc(desc)
                .after(&handles[i..=i])
                .schedule(move || {
                    let _opener = opener;
                });
        }
        // The gate has no dependencies and is not this thread's: the wait
        // ends when an opener releases it.
        let r = self.try_complete(g);
        debug_assert!(r.is_ok(), "a gate finishes cleanly: {r:?}");
        let i = first.index.load(Ordering::Acquire);
        debug_assert!(i != NONE, "the gate opened without a first job");
        Ok(i)
    }
}
