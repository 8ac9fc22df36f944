//! Borrowing jobs: `JobSystem::scope`.

use crate::desc::JobDesc;
use crate::error::JobError;
use crate::handle::JobHandle;
use crate::parallel_for::{vtables_per_index, Batch};
use crate::registry::ThisThread;
use crate::slot::JobVTable;
use crate::spawn::{JobBuilder, ScopeSink};
use crate::system::JobSystem;
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::Range;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Mutex;

/// Jobs scheduled through a `Scope` may borrow anything that outlives the
/// `scope` call; the call returns only after all of them finished.
pub struct Scope<'scope, 'env: 'scope> {
    system: &'scope JobSystem,
    /// Identity of the context of the thread that opened the scope; its
    /// jobs are tracked in `own` without locking.
    creator: *const (),
    own: UnsafeCell<Vec<JobHandle>>,
    /// Jobs scheduled into the scope from other threads.
    shared: Mutex<Vec<JobHandle>>,
    /// The message of the first panic of one of its closures, kept here
    /// whatever the failure log forgets (`failures.rs`): the scope never
    /// returns normally after one of its jobs panicked.
    panicked: Mutex<Option<String>>,
    // Invariant in 'scope and 'env, as std::thread::Scope.
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

// SAFETY: `own` is only touched by the creating thread (checked by context
// identity in `track`, and `run` runs on that thread); the rest is Sync.
unsafe impl Sync for Scope<'_, '_> {}

impl<'scope, 'env> Scope<'scope, 'env> {
    /// Run `f`, noting its panic (if the first) before it goes on unwinding
    /// as the job's failure.
    #[inline(always)]
    fn noting<R>(&self, f: impl FnOnce() -> R) -> R {
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(r) => r,
            Err(p) => {
                self.note_panic(&*p);
                resume_unwind(p)
            }
        }
    }

    #[cold]
    fn note_panic(&self, p: &(dyn std::any::Any + Send)) {
        let mut first = self.panicked.lock().unwrap_or_else(|e| e.into_inner());
        if first.is_none() {
            *first = Some(crate::error::panic_message(p));
        }
    }

    pub(crate) fn track(&self, h: JobHandle) -> JobHandle {
        if self.system.current_context_id() == self.creator {
            // SAFETY: only the creating thread gets here, and it holds no
            // other reference to `own` during this call.
            unsafe { (*self.own.get()).push(h) };
        } else {
            self.shared
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(h);
        }
        h
    }

    /// Schedule a job that may borrow from outside the scope.
    pub fn schedule<F: FnOnce() + Send + 'scope>(&'scope self, f: F) -> JobHandle {
        // SAFETY: the scope waits for every tracked job before 'scope ends.
        self.track(unsafe {
            self.system
                .schedule_unchecked(&JobDesc::default(), &[], move || self.noting(f))
        })
    }

    /// `schedule` after `deps`.
    pub fn schedule_after<F: FnOnce() + Send + 'scope>(
        &'scope self,
        deps: &[JobHandle],
        f: F,
    ) -> JobHandle {
        // SAFETY: as in `schedule`.
        self.track(unsafe {
            self.system
                .schedule_unchecked(&JobDesc::default(), deps, move || self.noting(f))
        })
    }

    /// A borrowing `parallel_for`.
    #[track_caller]
    pub fn parallel_for<F>(&'scope self, range: Range<usize>, batch: Batch, f: F) -> JobHandle
    where
        F: Fn(usize) + Send + Sync + 'scope,
    {
        let f = move |i| self.noting(|| f(i));
        let vt = per_index_vtables(&f);
        // SAFETY: as in `schedule`.
        self.track(unsafe {
            self.system
                .pfor_unchecked(&JobDesc::default(), &[], range, batch, false, f, vt)
        })
    }

    /// Options for a job that may borrow from outside the scope: the
    /// [`JobBuilder`] of [`JobSystem::job`](crate::JobSystem::job), whose
    /// closures must outlive the scope instead of being `'static`.
    ///
    /// ```
    /// use jobsys::{Batch, JobSystem};
    /// let js = JobSystem::builder().workers(2).build().unwrap();
    /// let mut v = vec![0u32; 64];
    /// js.scope(|s| {
    ///     let fill = s.job().name("fill").parallel_for_chunked(0..64, Batch::Auto, |r| {
    ///         let _ = r; // a piece of the range
    ///     });
    ///     let total = &mut v;
    ///     s.job().after(&[fill]).schedule(move || total[0] = 1);
    /// });
    /// assert_eq!(v[0], 1);
    /// ```
    #[inline(always)]
    pub fn job(&'scope self) -> JobBuilder<'scope, 'scope, 'static> {
        JobBuilder::new(self.system, Some(self))
    }

    /// The job system this scope schedules on.
    pub fn system(&self) -> &'scope JobSystem {
        self.system
    }
}

/// `vtables_per_index` of a closure whose type has no name.
fn per_index_vtables<F: Fn(usize)>(_: &F) -> (&'static JobVTable, &'static JobVTable) {
    vtables_per_index::<F>()
}

impl ScopeSink for Scope<'_, '_> {
    fn track(&self, h: JobHandle) -> JobHandle {
        Scope::track(self, h)
    }
    fn note_panic(&self, p: &(dyn std::any::Any + Send)) {
        Scope::note_panic(self, p)
    }
}

// Here, not in `system.rs`: a scope schedules through the system's calls
// and the job builder, which sit below it.
impl JobSystem {
    /// Run `f` with a [`Scope`] whose jobs may borrow from the caller's
    /// stack; returns after every job scheduled in the scope has finished.
    /// A panic in `f` or in a scope job is re-raised then.
    pub fn scope<'env, F, R>(&self, f: F) -> R
    where
        F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R,
    {
        run(self, f)
    }
}

fn run<'env, F, R>(system: &JobSystem, f: F) -> R
where
    F: for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R,
{
    let scope = Scope {
        system,
        creator: system.current_context_id(),
        own: UnsafeCell::new(Vec::new()),
        shared: Mutex::new(Vec::new()),
        panicked: Mutex::new(None),
        _scope: PhantomData,
        _env: PhantomData,
    };
    let r = catch_unwind(AssertUnwindSafe(|| f(&scope)));
    // Wait for every job, newest first (they are on top of our deque), also
    // those scheduled while we wait. Keep the first failure.
    let mut first_err: Option<JobError> = None;
    // One wait for the whole drain: the waits below nest in it, so the
    // bookkeeping of a thread's outermost wait (deque compaction, the
    // storage demand count, `wait/mod.rs` `DepthGuard`) runs once per scope,
    // not once per job (W1 flat's count shows it per job otherwise).
    let reg = system.reg();
    let _depth = crate::wait::DepthGuard::new(ThisThread::current_for(reg, || "JobSystem::scope"));
    loop {
        // SAFETY: this is the creating thread; no other reference to `own`
        // is live (jobs scheduled from here are tracked between waits).
        let mut batch = std::mem::take(unsafe { &mut *scope.own.get() });
        batch.append(&mut scope.shared.lock().unwrap_or_else(|e| e.into_inner()));
        if batch.is_empty() {
            break;
        }
        for h in batch.into_iter().rev() {
            // Never returns before `h`'s closure has run or been dropped,
            // whatever it reports (a wait cycle included).
            match ThisThread::current_for(reg, || "JobSystem::complete").wait_scoped(h) {
                // Cancelled on purpose (`JobSystem::cancel`, or a pinned
                // job whose thread is gone): not an error of the scope.
                Ok(()) | Err(JobError::Cancelled(_)) => {}
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
    }
    // A panic the waits could not report (the failure log forgot it: the
    // wait said `OutcomeUnknown`) is still the scope's, from its own note.
    let noted = scope
        .panicked
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    match (r, first_err, noted) {
        (Err(p), _, _) => resume_unwind(p),
        (Ok(_), Some(JobError::Panicked(p)), _) => p.resume(),
        (Ok(_), Some(JobError::OutcomeUnknown) | None, Some(msg)) => {
            panic!("jobsys: job panicked: {msg}")
        }
        (Ok(_), Some(e), _) => panic!("{e}"),
        (Ok(r), None, None) => r,
    }
}
