//! `JobBuilder`: every option a job can have, and one way to schedule it.
//!
//! ```
//! use jobsys::{Batch, JobSystem, Priority};
//! let js = JobSystem::builder().workers(2).build().unwrap();
//! let a = js.schedule(|| {});
//! let b = js.job().name("physics").priority(Priority::High).after(&[a]).schedule(|| {});
//! let c = js.job().after(&[b]).parallel_for(0..1000, Batch::Auto, |_i| {});
//! js.complete(c);
//! ```
//!
//! Options are methods of the builder (`name`, `priority`, `desc`,
//! `after`, `pin`, `batched`, `access`); the builder ends in `schedule`,
//! `parallel_for` or `parallel_for_chunked`. Every combination works:
//!
//! - `pin` with a loop: the loop is one job on the pinned thread, its
//!   pieces one after another (only that thread may run it); an empty
//!   range is a pinned job that runs nothing.
//! - `pin` with `batched`: the pinned thread is woken as for any pinned job
//!   (a batch only defers waking the shared workers).
//! - `batched` with `after`: a job whose dependencies are unfinished is
//!   queued, with a wake as usual, by the thread that finishes the last of
//!   them; only a job runnable at once joins the batch.
//! - `access` with any of them: the declared accesses add their derived
//!   dependencies to `after`'s (`docs/access.md`).
//!
//! `JobSystem::job` takes `'static` closures; `Scope::job` takes closures
//! that borrow from outside the scope, and the scope waits for the job.
//! The builder is a few words on the stack: with its options unset,
//! `js.job().schedule(f)` compiles to `js.schedule(f)`.

use crate::access::{Access, ParAccess};
use crate::desc::{JobDesc, Priority};
use crate::handle::JobHandle;
use crate::limiter::Limiter;
use crate::parallel_for::{vtables_chunked, vtables_per_index, Batch};
use crate::pinned::{Pin, RunOn};
use crate::registry::ThisThread;
use crate::system::JobSystem;
use std::any::Any;
use std::marker::PhantomData;
use std::ops::Range;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// What a `Scope` does for a job scheduled into it: track the handle (the
/// scope waits for it) and note the first panic of its closures.
pub(crate) trait ScopeSink: Sync {
    fn track(&self, h: JobHandle) -> JobHandle;
    fn note_panic(&self, p: &(dyn Any + Send));
}

/// Run `f`, noting its panic in `scope` before it goes on unwinding as the
/// job's failure.
#[inline(always)]
fn noting<R>(scope: &dyn ScopeSink, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            scope.note_panic(&*p);
            resume_unwind(p)
        }
    }
}

// Here, not in `system.rs`: the system's scheduling calls sit below the
// builder, which uses them; the method that hands out a builder belongs
// with the builder.
impl JobSystem {
    /// Options for a job: a name, a priority, dependencies, a pin, batching,
    /// declared access; then `schedule`, `parallel_for` or
    /// `parallel_for_chunked`. See [`JobBuilder`].
    ///
    /// ```
    /// use jobsys::{JobSystem, Priority};
    /// let js = JobSystem::builder().workers(1).build().unwrap();
    /// let a = js.schedule(|| {});
    /// let h = js.job().name("stream").priority(Priority::Low).after(&[a]).schedule(|| {});
    /// js.complete(h);
    /// ```
    #[inline(always)]
    pub fn job(&self) -> JobBuilder<'_, 'static, 'static> {
        JobBuilder::new(self, None)
    }
}

/// The options of one job, gathered by [`JobSystem::job`] or
/// [`Scope::job`](crate::Scope::job) and used by the call that ends it
/// ([`schedule`](Self::schedule), [`parallel_for`](Self::parallel_for),
/// [`parallel_for_chunked`](Self::parallel_for_chunked)).
///
/// `'f` is what the job's closure must outlive: `'static` from
/// `JobSystem::job`, the scope from `Scope::job`; `'d` is the borrow of
/// the dependency slice.
///
/// A `JobSystem` builder never takes a closure that borrows the stack:
///
/// ```compile_fail
/// let js = jobsys::JobSystem::builder().workers(1).build().unwrap();
/// let v = vec![1, 2, 3];
/// let h = js.job().schedule(|| println!("{}", v.len())); // `v` does not live long enough
/// js.complete(h);
/// ```
#[must_use = "a job builder does nothing until `schedule` or `parallel_for`"]
pub struct JobBuilder<'a, 'f, 'd> {
    system: &'a JobSystem,
    scope: Option<&'f dyn ScopeSink>,
    desc: JobDesc,
    deps: &'d [JobHandle],
    pin: Option<RunOn>,
    batched: bool,
    /// A pinned job submitted under declared access's locks: held until
    /// they are released (`submit_with_access`).
    held: bool,
    /// Runs only with a seat of this limiter (`limit`).
    limit: Option<&'a Limiter>,
    /// Invariant in `'f`: a `'static` builder must never become a
    /// shorter-lived one without a scope to wait for its job.
    _f: PhantomData<fn(&'f ()) -> &'f ()>,
}

impl<'a, 'f, 'd> JobBuilder<'a, 'f, 'd> {
    #[inline(always)]
    pub(crate) fn new(system: &'a JobSystem, scope: Option<&'f dyn ScopeSink>) -> Self {
        JobBuilder {
            system,
            scope,
            desc: JobDesc::default(),
            deps: &[],
            pin: None,
            batched: false,
            held: false,
            limit: None,
            _f: PhantomData,
        }
    }

    /// The job's name, shown by the tracer and the profiler hooks.
    #[inline(always)]
    pub fn name(mut self, name: &'static str) -> Self {
        self.desc.name = Some(name);
        self
    }

    /// The job's priority: runnable `High` jobs are taken before `Normal`
    /// before `Low` by every thread, from its own deques and when
    /// stealing; a job some thread waits on is taken before any of those
    /// (priority inheritance). For a pinned job it orders nothing: a
    /// thread runs its pinned jobs first, in order.
    #[inline(always)]
    pub fn priority(mut self, priority: Priority) -> Self {
        self.desc.priority = priority;
        self
    }

    /// Name and priority at once, from a `JobDesc` (e.g. a `const`).
    #[inline(always)]
    pub fn desc(mut self, desc: impl Into<JobDesc>) -> Self {
        self.desc = desc.into();
        self
    }

    /// Run after every job in `deps` has finished (replacing an earlier
    /// `after`). If one of them fails, this job does not run and fails
    /// with the same cause. An empty slice: no dependencies.
    #[inline(always)]
    pub fn after<'e>(self, deps: &'e [JobHandle]) -> JobBuilder<'a, 'f, 'e> {
        JobBuilder {
            system: self.system,
            scope: self.scope,
            desc: self.desc,
            deps,
            pin: self.pin,
            batched: self.batched,
            held: self.held,
            limit: self.limit,
            _f: PhantomData,
        }
    }

    /// Run on one thread only: the thread that built the system
    /// (`Pin::Main`), a worker (`Pin::Worker(i)`, `i` its thread index,
    /// 1..=workers: `docs/engine.md`, "Thread index"), or an outside thread
    /// that called [`JobSystem::register_thread`]. Nobody else ever runs
    /// it; a job pinned to an outside thread that exits first is
    /// cancelled. See `docs/engine.md`.
    ///
    /// ```
    /// use jobsys::{JobSystem, Pin};
    /// let js = JobSystem::builder().workers(2).build().unwrap();
    /// let main = std::thread::current().id();
    /// let h = js.job().pin(Pin::Main).schedule(move || assert_eq!(std::thread::current().id(), main));
    /// js.complete(h); // this thread runs it while it waits
    /// ```
    ///
    /// The pin is checked when the job is scheduled: `Pin::Worker(i)` with
    /// `i` outside 1..=[`JobSystem::workers`], or a `ThreadIndex` of another
    /// system, panics there (at the caller's line).
    #[inline(always)]
    pub fn pin(mut self, pin: Pin) -> Self {
        self.pin = Some(RunOn::Thread(pin));
        self
    }

    /// Run on a worker of this class of core (docs/engine.md, "Core classes"):
    /// any worker of the class, one waiting in `complete` too. Replaces an
    /// earlier `pin`. Nothing for `Any`, or unless the workers span two
    /// classes.
    pub fn core_class(mut self, class: crate::topology::CoreClass) -> Self {
        if let Some(t) = self.system.reg().class_target(class) {
            self.pin = Some(RunOn::Class(t));
        }
        self
    }

    /// Wake nobody: the job waits in this thread's deque (awake workers
    /// may take it) until [`JobSystem::flush`] — or a wait on this thread
    /// (`complete`, or an `is_complete` that finds its job unfinished), its
    /// exit, or shutdown — so a burst of jobs costs at most one round of
    /// wakes. Jobs that only the thread's exit or shutdown published are
    /// counted in [`Stats::batched_unflushed`](crate::Stats) (and a debug
    /// build says so once): a sign of a missing `flush`.
    #[inline(always)]
    pub fn batched(mut self) -> Self {
        self.batched = true;
        self
    }

    /// Run only while holding a seat of `limiter`: at most
    /// [`limiter.max()`](Limiter::max) of its jobs run at once, and each
    /// reads its seat with [`limiter_slot`](crate::limiter_slot). A job
    /// waiting for a seat holds no thread; the seat is asked for once its
    /// dependencies have finished, and given back when its closure is
    /// gone (ran, panicked, skipped or cancelled). A loop holds one seat
    /// for all its pieces. See [`Limiter`].
    #[inline(always)]
    pub fn limit(mut self, limiter: &'a Limiter) -> Self {
        self.limit = Some(limiter);
        self
    }

    /// Declared access to resources (`docs/access.md`): `res.read()`,
    /// `res.write()`, `slice_res.write_each()` (loops), or a tuple of them.
    /// The job runs after the previous writer of each resource it reads,
    /// and after the previous writer and every reader since of each
    /// resource it writes.
    #[inline(always)]
    pub fn access<A>(self, access: A) -> AccessJobBuilder<'a, 'f, 'd, A> {
        AccessJobBuilder { job: self, access }
    }

    /// Schedule `f`. Returns its handle.
    ///
    /// # Panics
    /// If a handle in `after` belongs to another `JobSystem`; on a bad pin
    /// (see [`pin`](Self::pin)).
    #[inline(always)]
    #[track_caller]
    pub fn schedule<F: FnOnce() + Send + 'f>(self, f: F) -> JobHandle {
        if let Some(l) = self.limit {
            return self.schedule_limited(l, f);
        }
        self.schedule_now(f)
    }

    /// Schedule `f`, which may block (file or network I/O, a call that
    /// sleeps), on a blocking thread instead of a worker: no worker is
    /// held while it blocks. The handle is an ordinary job's: it finishes
    /// when `f` has returned and fails if `f` panics. Name, priority,
    /// dependencies, batching and `limit` apply (a limited blocking job
    /// holds its seat while `f` runs). Blocking threads are shared by the
    /// process's job systems, started on demand and ended when idle
    /// (`docs/engine.md`, "Blocking work"). `f` is not interrupted by
    /// [`JobSystem::cancel`].
    ///
    /// # Panics
    /// With [`pin`](Self::pin) (`f` runs on a blocking thread), and as
    /// [`schedule`](Self::schedule).
    #[track_caller]
    pub fn schedule_blocking<F: FnOnce() + Send + 'static>(mut self, f: F) -> JobHandle {
        assert!(
            self.pin.is_none(),
            "jobsys: JobBuilder::schedule_blocking: a blocking job runs on a blocking thread, \
             it cannot be pinned"
        );
        crate::handle::check_handles(self.system.reg().id(), self.deps, "JobBuilder::after");
        let (seat, before) = match self.limit.take() {
            Some(l) => {
                let (seat, b) = l.ask(self.system, self.deps, self.desc.priority);
                (Some(seat), b)
            }
            None => (None, crate::limiter::Before::Nothing),
        };
        let deps = match before.as_slice() {
            [] => self.deps,
            b => b,
        };
        let (after, outcome) = crate::blocking::start(self.system, deps, self.batched, seat, f);
        self.batched = false;
        self.after(&after).schedule_now(move || outcome.finish())
    }

    /// `schedule` of a job without a limiter (or with its seat arranged).
    #[inline(always)]
    #[track_caller]
    fn schedule_now<F: FnOnce() + Send + 'f>(self, f: F) -> JobHandle {
        match self.scope {
            // SAFETY: no scope: `'f` is `'static` (only `JobSystem::job`
            // makes a builder without one, and `'f` is invariant).
            None => unsafe { self.spawn(f) },
            Some(s) => {
                // SAFETY: the scope waits for every tracked job before
                // `'f` (the scope's lifetime) ends.
                let h = unsafe { self.spawn(move || noting(s, f)) };
                s.track(h)
            }
        }
    }

    /// Run `f(i)` for every `i` in `range`, in pieces of `batch` indices on
    /// all threads (on the pinned thread alone with [`pin`](Self::pin)). An
    /// empty range gives a handle that completes with its dependencies.
    ///
    /// # Panics
    /// On `Batch::Fixed(0)`, and as [`schedule`](Self::schedule).
    #[inline]
    #[track_caller]
    pub fn parallel_for<F>(self, range: Range<usize>, batch: Batch, f: F) -> JobHandle
    where
        F: Fn(usize) + Send + Sync + 'f,
    {
        if let Some(l) = self.limit {
            let _ = batch.piece_len(range.len(), 1);
            return self.loop_limited(l, |j, seat| {
                j.parallel_for_now(range, batch, move |i| seat.run(|| f(i)))
            });
        }
        self.parallel_for_now(range, batch, f)
    }

    /// `parallel_for` without a limiter (or with its seat arranged).
    #[inline(always)]
    #[track_caller]
    fn parallel_for_now<F>(self, range: Range<usize>, batch: Batch, f: F) -> JobHandle
    where
        F: Fn(usize) + Send + Sync + 'f,
    {
        match self.scope {
            // SAFETY: as in `schedule`.
            None => unsafe { self.spawn_loop(range, batch, f, vtables_per_index::<F>()) },
            Some(s) => {
                let f = move |i| noting(s, || f(i));
                let vts = per_index_vtables(&f);
                // SAFETY: as in `schedule`.
                s.track(unsafe { self.spawn_loop(range, batch, f, vts) })
            }
        }
    }

    /// Like [`parallel_for`](Self::parallel_for), but `f` gets each piece
    /// as a `Range`.
    #[inline]
    #[track_caller]
    pub fn parallel_for_chunked<F>(self, range: Range<usize>, batch: Batch, f: F) -> JobHandle
    where
        F: Fn(Range<usize>) + Send + Sync + 'f,
    {
        if let Some(l) = self.limit {
            let _ = batch.piece_len(range.len(), 1);
            return self.loop_limited(l, |j, seat| {
                j.chunked_now(range, batch, move |r| seat.run(|| f(r)))
            });
        }
        self.chunked_now(range, batch, f)
    }

    /// `parallel_for_chunked` without a limiter (or with its seat arranged).
    #[inline(always)]
    #[track_caller]
    fn chunked_now<F>(self, range: Range<usize>, batch: Batch, f: F) -> JobHandle
    where
        F: Fn(Range<usize>) + Send + Sync + 'f,
    {
        match self.scope {
            // SAFETY: as in `schedule`.
            None => unsafe { self.spawn_chunks(range, batch, f, vtables_chunked::<F>()) },
            Some(s) => {
                let f = move |r| noting(s, || f(r));
                let vts = chunked_vtables(&f);
                // SAFETY: as in `schedule`.
                s.track(unsafe { self.spawn_chunks(range, batch, f, vts) })
            }
        }
    }

    /// `schedule` with `limit`: after its seat (`limiter.rs`); the closure
    /// owns the seat and gives it back when it is gone.
    #[track_caller]
    fn schedule_limited<F: FnOnce() + Send + 'f>(mut self, l: &Limiter, f: F) -> JobHandle {
        self.limit = None;
        crate::handle::check_handles(self.system.reg().id(), self.deps, "JobBuilder::after");
        let (seat, before) = l.ask(self.system, self.deps, self.desc.priority);
        let run = move || {
            let seat = seat;
            seat.run(f)
        };
        match before.as_slice() {
            [] => self.schedule_now(run),
            b => self.after(b).schedule_now(run),
        }
    }

    /// `parallel_for(_chunked)` with `limit`: `schedule` gives the loop
    /// (`make`, with the seat its pieces read) the handles it runs after;
    /// a small job after the loop gives the seat back.
    #[track_caller]
    fn loop_limited(
        mut self,
        l: &Limiter,
        make: impl for<'e> FnOnce(JobBuilder<'a, 'f, 'e>, crate::limiter::SeatRef) -> JobHandle,
    ) -> JobHandle {
        self.limit = None;
        let js = self.system;
        crate::handle::check_handles(self.system.reg().id(), self.deps, "JobBuilder::after");
        let (seat, before) = l.ask(self.system, self.deps, self.desc.priority);
        let pieces = seat.seat();
        let h = match before.as_slice() {
            [] => make(self, pieces),
            b => make(self.after(b), pieces),
        };
        let desc = JobDesc::default().with_priority(Priority::High);
        js.job().desc(desc).after(&[h]).schedule(move || drop(seat));
        h
    }

    /// Schedule one job with every option.
    ///
    /// # Safety
    /// Everything `f` borrows outlives the job (the caller waits for it).
    #[inline(always)]
    #[track_caller]
    unsafe fn spawn<F: FnOnce() + Send>(&self, f: F) -> JobHandle {
        let js = self.system;
        if let Some(pin) = self.pin {
            // SAFETY: promised by the caller.
            return unsafe {
                js.schedule_pinned_unchecked(pin, &self.desc, self.deps, self.held, f)
            };
        }
        if self.batched {
            // SAFETY: promised by the caller.
            return unsafe { js.schedule_batched_unchecked(&self.desc, self.deps, f) };
        }
        // SAFETY: promised by the caller.
        unsafe { js.schedule_unchecked(&self.desc, self.deps, f) }
    }

    /// Schedule a per-index loop with every option.
    ///
    /// # Safety
    /// As `spawn`.
    #[inline(always)]
    #[track_caller]
    unsafe fn spawn_loop<F: Fn(usize) + Send + Sync>(
        &self,
        range: Range<usize>,
        batch: Batch,
        f: F,
        vts: LoopVTables,
    ) -> JobHandle {
        if self.pin.is_some() {
            let _ = batch.piece_len(range.len(), 1);
            // SAFETY: promised by the caller.
            return unsafe { self.spawn(move || range.for_each(f)) };
        }
        // SAFETY: promised by the caller.
        unsafe { self.pfor(range, batch, f, vts) }
    }

    /// Schedule a chunked loop with every option.
    ///
    /// # Safety
    /// As `spawn`.
    #[inline(always)]
    #[track_caller]
    unsafe fn spawn_chunks<F: Fn(Range<usize>) + Send + Sync>(
        &self,
        range: Range<usize>,
        batch: Batch,
        f: F,
        vts: LoopVTables,
    ) -> JobHandle {
        if self.pin.is_some() {
            let piece = batch.piece_len(range.len(), 1);
            let run = move || {
                let mut lo = range.start;
                while lo < range.end {
                    let hi = range.end.min(lo.saturating_add(piece));
                    f(lo..hi);
                    lo = hi;
                }
            };
            // SAFETY: promised by the caller.
            return unsafe { self.spawn(run) };
        }
        // SAFETY: promised by the caller.
        unsafe { self.pfor(range, batch, f, vts) }
    }

    /// # Safety
    /// As `spawn`; `vts` are `f`'s.
    #[inline(always)]
    #[track_caller]
    unsafe fn pfor<F: Send + Sync>(
        &self,
        range: Range<usize>,
        batch: Batch,
        f: F,
        vts: LoopVTables,
    ) -> JobHandle {
        // SAFETY: promised by the caller.
        unsafe {
            self.system
                .pfor_unchecked(&self.desc, self.deps, range, batch, self.batched, f, vts)
        }
    }
}

type LoopVTables = (
    &'static crate::slot::JobVTable,
    &'static crate::slot::JobVTable,
);

/// `vtables_per_index` of a closure whose type has no name.
fn per_index_vtables<F: Fn(usize)>(_: &F) -> LoopVTables {
    vtables_per_index::<F>()
}

/// `vtables_chunked` of a closure whose type has no name.
fn chunked_vtables<F: Fn(Range<usize>)>(_: &F) -> LoopVTables {
    vtables_chunked::<F>()
}

/// A [`JobBuilder`] with declared access (`JobBuilder::access`): its
/// closures get the resources' references. Ends in `schedule` (an
/// [`Access`]: reads and writes) or `parallel_for`/`parallel_for_chunked`
/// (a [`ParAccess`]: reads and `write_each`).
///
/// ```
/// use jobsys::{Batch, JobSystem, Resource};
/// let js = JobSystem::builder().workers(2).build().unwrap();
/// let input = Resource::new(3u32);
/// let out = Resource::new(0u32);
/// js.job().access((input.read(), out.write())).schedule(|(i, o)| *o = *i * 2);
/// let v = Resource::new(vec![1u32; 100]);
/// let h = js.job().access((out.read(), v.write_each())).parallel_for(0..100, Batch::Auto,
///     |_i, (s, x)| *x *= *s);
/// js.complete(h);
/// assert!(v.read_now(&js).iter().all(|&x| x == 6));
/// ```
///
/// # Panics
/// When scheduled: if one resource is declared twice and one declaration
/// writes; if a resource is in use by another live `JobSystem`; as
/// `JobBuilder`'s calls. An index past a `write_each` slice's end fails
/// the job.
#[must_use = "a job builder does nothing until `schedule` or `parallel_for`"]
pub struct AccessJobBuilder<'a, 'f, 'd, A> {
    job: JobBuilder<'a, 'f, 'd>,
    access: A,
}

impl<'a, 'f, 'd, A> AccessJobBuilder<'a, 'f, 'd, A> {
    /// As [`JobBuilder::name`].
    pub fn name(mut self, name: &'static str) -> Self {
        self.job = self.job.name(name);
        self
    }
    /// As [`JobBuilder::priority`].
    pub fn priority(mut self, priority: Priority) -> Self {
        self.job = self.job.priority(priority);
        self
    }
    /// As [`JobBuilder::desc`].
    pub fn desc(mut self, desc: impl Into<JobDesc>) -> Self {
        self.job = self.job.desc(desc);
        self
    }
    /// As [`JobBuilder::after`]: explicit edges besides the derived ones.
    pub fn after<'e>(self, deps: &'e [JobHandle]) -> AccessJobBuilder<'a, 'f, 'e, A> {
        AccessJobBuilder {
            job: self.job.after(deps),
            access: self.access,
        }
    }
    /// As [`JobBuilder::pin`].
    pub fn pin(mut self, pin: Pin) -> Self {
        self.job = self.job.pin(pin);
        self
    }
    /// As [`JobBuilder::batched`].
    pub fn batched(mut self) -> Self {
        self.job = self.job.batched();
        self
    }
    /// As [`JobBuilder::limit`].
    pub fn limit(mut self, limiter: &'a Limiter) -> Self {
        self.job = self.job.limit(limiter);
        self
    }
}

impl<'a, 'f, 'd, A: Access> AccessJobBuilder<'a, 'f, 'd, A> {
    /// Schedule `f`, which gets `&T` for each read and `&mut T` for each
    /// write, in the declaration's shape.
    #[track_caller]
    pub fn schedule<F>(self, f: F) -> JobHandle
    where
        F: for<'x> FnOnce(A::Guards<'x>) + Send + 'f,
    {
        let AccessJobBuilder { job, access } = self;
        // The job owns a copy of the declarations (inline in its closure:
        // no allocation); `access` keeps the resources alive while
        // `schedule_core` holds their locks, since the job may run, finish
        // and drop its copy before they are released.
        let acc = access.dup();
        let run = move || crate::access::run_single(&acc, f);
        job.submit_with_access(|v| access.visit(v), |j| j.schedule(run))
    }
}

impl<'a, 'f, 'd, A: ParAccess> AccessJobBuilder<'a, 'f, 'd, A> {
    /// Run `f(i, item)` for every `i` in `range`: `item` is `&T` for a
    /// read and `&mut v[i]` for a `write_each`, in the declaration's shape.
    #[track_caller]
    pub fn parallel_for<F>(self, range: Range<usize>, batch: Batch, f: F) -> JobHandle
    where
        F: for<'x> Fn(usize, A::Item<'x>) + Send + Sync + 'f,
    {
        let AccessJobBuilder { job, access } = self;
        // `Batch::Fixed(0)` panics here, before any resource is locked.
        let _ = batch.piece_len(range.len(), 1);
        // As in `schedule`: the loop owns a copy, inline.
        let par = crate::access::ParJob::new(access.dup());
        job.submit_with_access(
            |v| access.visit(v),
            |j| j.parallel_for(range, batch, move |i| par.run_index(i, &f)),
        )
    }

    /// Like [`parallel_for`](Self::parallel_for), but each call gets a
    /// whole piece: its `Range` and `&mut v[range]` for a `write_each`
    /// (`&T` for a read).
    #[track_caller]
    pub fn parallel_for_chunked<F>(self, range: Range<usize>, batch: Batch, f: F) -> JobHandle
    where
        F: for<'x> Fn(Range<usize>, A::Chunk<'x>) + Send + Sync + 'f,
    {
        let AccessJobBuilder { job, access } = self;
        let _ = batch.piece_len(range.len(), 1);
        let par = crate::access::ParJob::new(access.dup());
        job.submit_with_access(
            |v| access.visit(v),
            |j| j.parallel_for_chunked(range, batch, move |r| par.run_chunk(r, &f)),
        )
    }
}

impl<'a, 'f, 'd> JobBuilder<'a, 'f, 'd> {
    /// Derive the declared accesses' dependencies under the resources'
    /// locks and submit the job through `submit` with them added to
    /// `after`'s. A pinned job is held (not queued) until the locks are
    /// released: if its thread is gone it is cancelled there, and its
    /// closure (user code) dropped after the locks.
    #[track_caller]
    fn submit_with_access<'s>(
        self,
        visit: impl FnOnce(&mut dyn FnMut(&'s crate::access::Shared, crate::access::Mode)),
        submit: impl FnOnce(JobBuilder<'a, 'f, '_>) -> JobHandle,
    ) -> JobHandle {
        let js = self.system;
        let reg = js.reg();
        // Checked before any resource is locked (a bad pin panics here, not
        // under the locks); the ticket is dropped unused and the job takes
        // its own under the locks.
        let held = self.pin.is_some();
        if let Some(pin) = self.pin {
            drop(crate::pinned::pin_target(reg, pin));
        }
        let extra = self.deps;
        let h = crate::access::schedule_core(js, visit, extra, "JobBuilder::access", |all| {
            let mut j = self.after(all);
            j.held = held;
            submit(j)
        });
        if held {
            ThisThread::current_for(reg, || "JobBuilder::access").release_hold(h);
        }
        h
    }
}
