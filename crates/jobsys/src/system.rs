//! The public `JobSystem`: scheduling, waiting, cancelling, stats (starting
//! and stopping it: `start.rs`). Methods of `JobSystem` kept elsewhere:
//! `job` in `spawn.rs` and `scope` in `scope.rs` (modules above this one,
//! which it does not import), the tracer's in `trace/api.rs`.

use crate::active::ActiveWorkersError;
use crate::builder::{BuildError, Builder, Config, IdlePolicy};
use crate::desc::JobDesc;
use crate::error::JobError;
use crate::handle::JobHandle;
use crate::parallel_for::{vtables_per_index, write_pfor, Batch};
use crate::pinned::ThreadIndex;
use crate::registry::ThisThread;
use crate::registry::{Registry, Stats};
use crate::slot::{EMPTY_LOOP_VTABLE, NOOP_VTABLE, PFOR};
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A pool of worker threads running jobs with dependencies.
///
/// Cheap to clone (all clones share one system); the system shuts down when
/// the last clone is dropped: every job already scheduled runs (or fails),
/// then the workers stop and are joined. See the crate docs for an example.
#[derive(Clone)]
pub struct JobSystem {
    owner: Arc<crate::start::Owner>,
}

impl std::fmt::Debug for JobSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobSystem")
            .field("id", &self.reg().id())
            .field("workers", &self.reg().num_workers())
            .finish()
    }
}

impl JobSystem {
    /// Start configuring a job system.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Start a job system with `config`.
    pub fn new(config: Config) -> Result<JobSystem, BuildError> {
        Ok(JobSystem {
            owner: Arc::new(crate::start::start(config)?),
        })
    }

    /// Identity of the calling thread's context (for `Scope`).
    #[inline]
    pub(crate) fn current_context_id(&self) -> *const () {
        self.reg().current_for(|| "JobSystem::scope") as *const crate::context::Context as *const ()
    }

    #[inline]
    pub(crate) fn reg(&self) -> &Registry {
        &self.owner.registry
    }

    pub(crate) fn reg_arc(&self) -> &Arc<Registry> {
        &self.owner.registry
    }

    /// Number of worker threads (not counting threads that call `complete`).
    pub fn workers(&self) -> usize {
        self.reg().num_workers()
    }

    /// The idle policy the workers follow.
    pub fn idle_policy(&self) -> IdlePolicy {
        self.reg().policy()
    }

    /// Counters summed over all threads since the system started.
    pub fn stats(&self) -> Stats {
        self.reg().stats()
    }

    /// Counters of each worker since the system started: entry `k` is the
    /// worker with thread index `k + 1` (`jobsys-worker-{k + 1}`;
    /// `docs/engine.md`, "Thread index").
    pub fn worker_stats(&self) -> Vec<Stats> {
        self.reg().worker_stats()
    }

    /// Counters since the previous `take_stats` call (or the start): call it
    /// once per frame for per-frame figures.
    pub fn take_stats(&self) -> Stats {
        let now = self.stats();
        let mut last = self
            .owner
            .last_stats
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let delta = now - *last;
        *last = now;
        delta
    }

    /// Open a hot zone: sleeping workers are woken once, and while any
    /// `HotZone` guard lives, idle workers spin instead of sleeping. For the
    /// stretch of a frame where many tiny jobs arrive in bursts. Guards nest
    /// and may be dropped on any thread.
    pub fn hot_zone(&self) -> HotZone {
        // Before the wake below takes the sleepers' lock.
        crate::current::forbid_in_hook("JobSystem::hot_zone");
        let reg = self.reg();
        if reg.hot_zones().fetch_add(1, Ordering::SeqCst) == 0 {
            reg.sleep().wake_all(false);
        }
        HotZone {
            system: self.clone(),
        }
    }

    /// `schedule_unchecked` of a batched job (`JobBuilder::batched`).
    ///
    /// # Safety
    /// As `schedule_unchecked`.
    #[track_caller]
    pub(crate) unsafe fn schedule_batched_unchecked<F: FnOnce() + Send>(
        &self,
        desc: &JobDesc,
        deps: &[JobHandle],
        f: F,
    ) -> JobHandle {
        let reg = self.reg();
        crate::handle::check_handles(reg.id(), deps, "JobBuilder::after");
        let ctx = reg.current_for(|| "JobBuilder::schedule");
        let (slot, gen) = crate::room::alloc_job(reg, ctx, desc);
        // SAFETY: fresh slot; borrow lifetime promised by the caller.
        unsafe { crate::job::write_single(slot, f) };
        ThisThread::new(reg, ctx).submit_batched(slot, gen, deps, 0)
    }

    /// `schedule_unchecked` of a job only `pin`'s thread runs
    /// (`JobBuilder::pin`). `held`: submitted under declared access's
    /// locks; the caller calls `release_hold` after them.
    ///
    /// # Safety
    /// As `schedule_unchecked`.
    #[track_caller]
    pub(crate) unsafe fn schedule_pinned_unchecked<F: FnOnce() + Send>(
        &self,
        pin: crate::pinned::RunOn,
        desc: &JobDesc,
        deps: &[JobHandle],
        held: bool,
        f: F,
    ) -> JobHandle {
        let reg = self.reg();
        let ticket = crate::pinned::pin_target(reg, pin);
        crate::handle::check_handles(reg.id(), deps, "JobBuilder::after");
        let ctx = reg.current_for(|| "JobBuilder::schedule");
        let (slot, gen) = crate::room::alloc_pinned_job(reg, ctx, desc, Some(ticket.target()));
        // SAFETY: fresh slot; borrow lifetime promised by the caller.
        unsafe { crate::job::write_single(slot, f) };
        ticket.submitted();
        if held {
            // If `pin`'s thread is gone, the job is cancelled and its
            // closure (user code) dropped in `release_hold`, after the
            // resource locks are released.
            ThisThread::new(reg, ctx).submit_held(slot, gen, deps, 0)
        } else {
            ThisThread::new(reg, ctx).submit(slot, gen, deps, 0)
        }
    }

    /// Publish this thread's batch: wake as many sleeping workers as there
    /// are batched jobs not already covered by searching workers (never more
    /// than the jobs, never more than the workers). Returns how many woke.
    pub fn flush(&self) -> usize {
        let reg = self.reg();
        ThisThread::current_for(reg, || "JobSystem::flush").flush()
    }

    /// Schedule `f` to run on some thread.
    #[inline]
    pub fn schedule<F: FnOnce() + Send + 'static>(&self, f: F) -> JobHandle {
        // SAFETY: `F: 'static`, so nothing it borrows can end before it runs.
        unsafe { self.schedule_unchecked(&JobDesc::default(), &[], f) }
    }

    /// Schedule `f` to run after every job in `deps` has finished. If one of
    /// them fails, `f` does not run and this job fails with the same cause.
    ///
    /// # Panics
    /// If a handle in `deps` belongs to another `JobSystem`.
    #[inline]
    pub fn schedule_after<F: FnOnce() + Send + 'static>(
        &self,
        deps: &[JobHandle],
        f: F,
    ) -> JobHandle {
        // SAFETY: as in `schedule`.
        unsafe { self.schedule_unchecked(&JobDesc::default(), deps, f) }
    }

    /// # Safety
    /// Everything `f` borrows must outlive the job (the caller waits for it).
    // Always: a few calls of glue around `submit`. With a plain `#[inline]`
    // LLVM stopped inlining it into callers once `Store::alloc` grew a cold
    // branch (W1 single's instruction count rose by a tenth).
    #[inline(always)]
    #[track_caller]
    pub(crate) unsafe fn schedule_unchecked<F: FnOnce() + Send>(
        &self,
        desc: &JobDesc,
        deps: &[JobHandle],
        f: F,
    ) -> JobHandle {
        let reg = self.reg();
        crate::handle::check_handles(reg.id(), deps, "schedule_after");
        let ctx = reg.current_for(|| "JobSystem::schedule");
        let (slot, gen) = crate::room::alloc_job(reg, ctx, desc);
        // SAFETY: fresh slot; borrow lifetime promised by the caller.
        unsafe { crate::job::write_single(slot, f) };
        ThisThread::new(reg, ctx).submit(slot, gen, deps, 0)
    }

    /// One handle that completes when all of `handles` have. Fails if any of
    /// them fails.
    ///
    /// # Panics
    /// If a handle belongs to another `JobSystem`.
    pub fn combine(&self, handles: &[JobHandle]) -> JobHandle {
        let reg = self.reg();
        crate::handle::check_handles(reg.id(), handles, "combine");
        if handles.is_empty() {
            return self.completed_handle();
        }
        self.noop_after(handles, &NOOP_VTABLE)
    }

    /// A job with nothing to run after `deps` (`vt` says what it stands for).
    fn noop_after(&self, deps: &[JobHandle], vt: &'static crate::slot::JobVTable) -> JobHandle {
        let reg = self.reg();
        crate::handle::check_handles(reg.id(), deps, "parallel_for_after");
        if deps.is_empty() {
            return self.completed_handle();
        }
        let ctx = reg.current_for(|| "JobSystem::combine (or an empty parallel_for)");
        let (slot, gen) = crate::room::alloc_job(reg, ctx, &JobDesc::default());
        // SAFETY: fresh slot, unpublished.
        unsafe { slot.set_vtable(vt) };
        ThisThread::new(reg, ctx).submit(slot, gen, deps, 0)
    }

    /// A handle that is complete already (empty combine, empty range).
    fn completed_handle(&self) -> JobHandle {
        let reg = self.reg();
        let ctx = reg.current_for(|| "JobSystem::combine (or an empty parallel_for)");
        let (slot, gen) = crate::room::alloc(reg, ctx);
        let h = JobHandle {
            slot: std::ptr::NonNull::from(slot),
            gen,
            system: reg.id(),
        };
        slot.complete_unpublished(gen);
        ThisThread::new(reg, ctx).recycle(slot);
        h
    }

    /// Run `f(i)` for every `i` in `range`, in pieces of `batch` indices on
    /// all threads. An empty range gives a handle that is complete at once.
    ///
    /// # Panics
    /// On `Batch::Fixed(0)`.
    #[track_caller]
    pub fn parallel_for<F>(&self, range: Range<usize>, batch: Batch, f: F) -> JobHandle
    where
        F: Fn(usize) + Send + Sync + 'static,
    {
        // SAFETY: `F: 'static`.
        unsafe {
            self.pfor_unchecked(
                &JobDesc::default(),
                &[],
                range,
                batch,
                false,
                f,
                vtables_per_index::<F>(),
            )
        }
    }

    /// # Safety
    /// Everything `f` borrows must outlive the job.
    // Every option of a loop, from three callers (the shortcut, the scope's
    // and the builder); a struct for them would be built and taken apart
    // at each call.
    #[allow(clippy::too_many_arguments)]
    #[track_caller]
    pub(crate) unsafe fn pfor_unchecked<F: Send + Sync>(
        &self,
        desc: &JobDesc,
        deps: &[JobHandle],
        range: Range<usize>,
        batch: Batch,
        batched: bool,
        f: F,
        vts: (
            &'static crate::slot::JobVTable,
            &'static crate::slot::JobVTable,
        ),
    ) -> JobHandle {
        let reg = self.reg();
        let piece = batch.piece_len(range.len(), reg.num_workers() + 1);
        if range.is_empty() {
            // Not a `combine` (whose `cancel` would cancel `deps`): a job
            // with nothing to run.
            return self.noop_after(deps, &EMPTY_LOOP_VTABLE);
        }
        crate::handle::check_handles(reg.id(), deps, "parallel_for_after");
        let ctx = reg.current_for(|| "JobSystem::parallel_for");
        let (slot, gen) = crate::room::alloc_job(reg, ctx, desc);
        // SAFETY: fresh slot; borrow lifetime promised by the caller.
        unsafe { write_pfor(slot, range, piece, f, vts.0, vts.1) };
        if batched {
            return ThisThread::new(reg, ctx).submit_batched(slot, gen, deps, PFOR);
        }
        ThisThread::new(reg, ctx).submit(slot, gen, deps, PFOR)
    }

    /// Wait until `h` is complete, helping with the work it needs. Re-raises
    /// the panic of a job that failed (or of a dependency that made it fail).
    ///
    /// # Panics
    /// If the job panicked; if `h` belongs to another `JobSystem`; if a job
    /// waits on itself or on a job that needs it.
    pub fn complete(&self, h: JobHandle) {
        match ThisThread::current_for(self.reg(), || "JobSystem::complete").wait(h) {
            Ok(()) => {}
            Err(JobError::Panicked(p)) => p.resume(),
            Err(e) => panic!("{e}"),
        }
    }

    /// `complete`, returning failures as a value instead of panicking.
    pub fn try_complete(&self, h: JobHandle) -> Result<(), JobError> {
        ThisThread::current_for(self.reg(), || "JobSystem::complete").wait(h)
    }

    /// `try_complete` that gives up after `timeout`:
    /// `Err(JobError::Timeout)` if `h` has not finished by then (a frame
    /// that must present does not block for ever on streaming). The job
    /// is not cancelled; wait on it again or [`cancel`](Self::cancel) it.
    /// It helps with `h`'s work meanwhile, as `complete` does, and a job it
    /// runs is not interrupted, so it can return later than `timeout` by
    /// the length of the job it was running. A finished job is never
    /// reported as timed out, even with a zero `timeout`.
    ///
    /// ```
    /// # let js = jobsys::JobSystem::builder().workers(1).build().unwrap();
    /// use jobsys::JobError;
    /// use std::time::Duration;
    /// # fn stream_in_texture() {}
    /// let texture = js.job().name("stream").schedule(stream_in_texture);
    /// match js.try_complete_timeout(texture, Duration::from_millis(2)) {
    ///     Ok(()) => { /* draw with the new texture */ }
    ///     Err(JobError::Timeout) => { /* draw without it; wait again next frame */ }
    ///     Err(e) => panic!("{e}"),
    /// }
    /// ```
    pub fn try_complete_timeout(&self, h: JobHandle, timeout: Duration) -> Result<(), JobError> {
        match Instant::now().checked_add(timeout) {
            Some(deadline) => ThisThread::current_for(self.reg(), || "JobSystem::complete")
                .wait_until(h, deadline),
            None => ThisThread::current_for(self.reg(), || "JobSystem::complete").wait(h), // beyond any Instant: no deadline
        }
    }

    /// Has `h` finished (successfully or not)? Never blocks. When it has
    /// not, this thread's batched jobs are published as by
    /// [`flush`](Self::flush): polling is a way of waiting.
    ///
    /// # Panics
    /// If `h` belongs to another `JobSystem`.
    pub fn is_complete(&self, h: JobHandle) -> bool {
        let reg = self.reg();
        let done = reg.is_complete(h);
        if !done {
            // Polling is waiting: publish this thread's batch, or a job
            // batched with no flush would wait for a wake nobody issues.
            if let Some(ctx) = reg.current_if_claimed() {
                if ctx.batch_pending() != 0 {
                    ThisThread::new(reg, ctx).flush();
                }
            }
        }
        done
    }

    /// Give back to the OS the job storage of the calling thread above
    /// [`Config::retained_slots`](crate::Config::retained_slots): whole pages
    /// whose slots are all free, now, whatever the thread's recent frames
    /// needed. Happens by itself when a worker goes to sleep and when
    /// another thread's outermost `complete` returns, but then keeping the
    /// pages the thread's peak of the last second or two needs
    /// (`docs/storage.md`, "Trimming"); call it e.g. after a level load
    /// that queued millions of jobs, not every frame. Returns the pages (of
    /// 256 slots, 32 KiB) given back.
    pub fn trim_storage(&self) -> usize {
        let reg = self.reg();
        crate::room::trim(reg, reg.current_for(|| "JobSystem::trim_storage"))
    }

    /// Make the calling thread (a render or IO thread, say) one that runs
    /// pinned jobs, and give it a thread index: the smallest above the
    /// workers' that no live registered thread holds (see
    /// [`thread_index`](Self::thread_index)). Call it once per thread;
    /// again is harmless and returns the same value; on the thread that
    /// built the system it returns index 0 (`Pin::Main`). The registration
    /// lasts until the thread exits; then its queued pinned jobs are
    /// cancelled and its index is free for a thread that registers later.
    /// The `ThreadIndex` still names the exited thread: jobs pinned with
    /// it are cancelled, never run by the index's next holder.
    ///
    /// # Panics
    /// On a worker of this system (workers have their index already).
    #[track_caller]
    pub fn register_thread(&self) -> ThreadIndex {
        let reg = self.reg();
        ThisThread::current_for(reg, || "JobSystem::register_thread").register()
    }

    /// For the C API, whose handles are bits: the handle whose
    /// [`JobHandle::to_bits`] these are, checked against this system's own
    /// storage before any slot is read. `Err(ForeignHandle)` when the bits
    /// name another system ([`HandleBits::Foreign`]), `Err(Invalid)` when
    /// they name no slot of this one (an address outside its pages or
    /// between slots) or a job this system never handed out (a generation
    /// its slot has not reached, or a slot that holds no job under it). A
    /// handle whose slot was reused since reads complete (or its logged
    /// failure), as a Rust handle does. Not part of the Rust API. Inlined
    /// into the C API's calls (a call's frame cost as much as the check).
    #[inline]
    pub fn handle_from_bits(&self, bits: [u64; 2]) -> Result<JobHandle, HandleBits> {
        let reg = self.reg();
        from_bits(reg, bits, reg.cached_context())
    }

    /// For the C API's `jobsys_complete`: [`try_complete`](Self::try_complete)
    /// of the handle whose bits these are, checked as
    /// [`handle_from_bits`](Self::handle_from_bits) checks them (through
    /// the calling thread's last checked page first: one context lookup
    /// for both). Not part of the Rust API.
    #[doc(hidden)]
    #[inline]
    pub fn try_complete_bits(&self, bits: [u64; 2]) -> Result<Result<(), JobError>, HandleBits> {
        let me = ThisThread::current_for(self.reg(), || "jobsys_complete");
        let h = from_bits(self.reg(), bits, Some(me.ctx))?;
        Ok(me.wait(h))
    }

    /// For the C API's `jobsys_destroy`: run, on this thread, every job
    /// scheduled so far and every job those schedule, until none is left
    /// (the shutdown drain, without shutting down: the caller frees the
    /// system afterwards). `Err(WaitOnSelf)` when this thread is inside one
    /// of this system's jobs (that job could never finish meanwhile). Not
    /// part of the Rust API.
    #[doc(hidden)]
    pub fn drain_outstanding(&self) -> Result<(), JobError> {
        let reg = self.reg();
        if reg
            .current_for(|| "JobSystem::drain_outstanding")
            .inside_job()
        {
            return Err(JobError::WaitOnSelf);
        }
        crate::worker::drain_while_running(reg);
        Ok(())
    }

    /// For the C API, whose pins are numbers: the registration of thread
    /// index `index` numbered `registration` (`ThreadIndex::registration`;
    /// `None`: the last one), live or ended; `None` if there never was one
    /// (or `index` is a worker's). Not part of the Rust API.
    #[doc(hidden)]
    pub fn registered_thread(
        &self,
        index: usize,
        registration: Option<u32>,
    ) -> Option<ThreadIndex> {
        crate::pinned::registered_thread(self.reg(), index, registration)
    }

    /// Run the calling thread's pinned jobs that are ready now (at most as
    /// many as were queued when it was called); returns how many ran. An
    /// outside thread calls it from its own loop, e.g. once per frame.
    pub fn run_pinned(&self) -> usize {
        let reg = self.reg();
        ThisThread::current_for(reg, || "JobSystem::run_pinned").run_pinned()
    }

    /// For the C API's `jobsys_destroy`, which drains before it drops the
    /// system and during which no other thread may call in: cancel the jobs
    /// pinned to outside threads other than the calling one now, as the
    /// drop of the last clone does (they could never run; the drain waited
    /// for them for ever). Not part of the Rust API.
    #[doc(hidden)]
    pub fn shutdown_cancel_pinned_elsewhere(&self) {
        let reg = self.reg();
        ThisThread::current_for(reg, || "JobSystem::shutdown_cancel_pinned_elsewhere")
            .close_outside_pinned();
    }

    /// The calling thread's index: 0 for the thread that built the system,
    /// `1..=workers` for the workers (`jobsys-worker-{i}` is index `i`), then
    /// registered threads (`register_thread`); `None` for any other
    /// thread. Stable while the thread lives, and dense: a registered
    /// thread takes the smallest index above the workers' that no live
    /// registered thread holds, so a per-thread scratch array of
    /// `workers() + 1 + N` entries covers every index, N the most threads
    /// registered at the same time (a thread counts from `register_thread`
    /// until it has exited). Threads that only schedule or wait take no
    /// index. See `docs/engine.md`, "Thread index".
    pub fn thread_index(&self) -> Option<usize> {
        let reg = self.reg();
        ThisThread::current_for(reg, || "JobSystem::thread_index").thread_index_of()
    }

    /// The class of core the worker with thread index `index` runs on
    /// (`1..=workers`), as [`JobBuilder::core_class`](crate::JobBuilder::core_class)
    /// uses it: `Performance` or `Efficiency` for a worker placed on CPUs
    /// of one class ([`Builder::pin_workers`](crate::Builder::pin_workers)),
    /// `Any` for an unplaced worker, an unclassified machine, or an index
    /// that is no worker's.
    pub fn worker_core_class(&self, index: usize) -> crate::topology::CoreClass {
        match self.reg().classes().get() {
            Some(c) => c.class_of(index),
            None => crate::topology::CoreClass::Any,
        }
    }

    /// Cancel `h`: a job (single, `parallel_for`, or a whole `combine`d
    /// group, nested groups included) that has not started never runs; it
    /// and its dependents finish failed with `JobError::Cancelled`.
    /// Returns true when the job was stopped before it started (for a
    /// group: the group had not finished). A running job is asked to stop:
    /// [`is_cancelled`](crate::is_cancelled) reads true inside it, a
    /// `parallel_for` hands out no more pieces, and it finishes as
    /// cancelled when it returns. A finished job is left alone (false).
    ///
    /// Closures of cancelled jobs are dropped without running: a job that
    /// was queued or waiting, here on the calling thread, now; a loop's,
    /// by the thread that finishes its last running piece. A cancelled job
    /// that still waits on dependencies finishes, as cancelled, once they
    /// have: a wait on it returns then, not at once.
    ///
    /// ```
    /// use jobsys::{JobError, JobSystem};
    /// use std::sync::{atomic::{AtomicBool, Ordering}, Arc};
    /// let js = JobSystem::builder().workers(1).build().unwrap();
    /// let open = Arc::new(AtomicBool::new(false));
    /// let o = open.clone();
    /// let gate = js.schedule(move || while !o.load(Ordering::Acquire) {}); // still running...
    /// let level = js.schedule_after(&[gate], || unreachable!("cancelled"));
    /// let after = js.schedule_after(&[level], || unreachable!("cancelled too"));
    /// js.cancel(level); // ...when `level` is cancelled
    /// open.store(true, Ordering::Release);
    /// assert!(matches!(js.try_complete(after), Err(JobError::Cancelled(_))));
    /// ```
    ///
    /// # Panics
    /// If `h` belongs to another `JobSystem`.
    pub fn cancel(&self, h: JobHandle) -> bool {
        let reg = self.reg();
        crate::handle::check_handles(reg.id(), &[h], "cancel");
        crate::cancel::cancel(reg, reg.current_for(|| "JobSystem::cancel"), h)
    }

    /// Let at most `n` workers take work; the others park (no CPU, and no
    /// wake-up except for jobs pinned to them). Takes effect at once for
    /// parked workers and when a running worker finishes its current job.
    /// With [`Builder::follow_cpus`](crate::Builder::follow_cpus) the
    /// active count is the smaller of `n` and the usable CPUs − 1.
    ///
    /// # Errors
    /// If `n` is more than the workers started.
    pub fn set_active_workers(&self, n: usize) -> Result<(), ActiveWorkersError> {
        let reg = self.reg();
        let ctx = reg.current_for(|| "JobSystem::set_active_workers");
        reg.active()
            .set_active_workers(reg.site(ctx), reg.sleep(), n)
    }

    /// Workers allowed to take work now (also in [`stats`](Self::stats)).
    pub fn active_workers(&self) -> usize {
        self.reg().sleep().active() as usize
    }

    /// Run `a` and `b`, potentially in parallel, and return both results.
    /// `b` runs on the calling thread; `a` is scheduled and, unless another
    /// thread took it meanwhile, run here afterwards. A panic in either is
    /// re-raised after both are done (`a`'s if both panic). In a system
    /// built with no workers nothing is scheduled: `b`, then `a`, run here
    /// (nobody could have taken `a`).
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce() -> RA + Send,
        B: FnOnce() -> RB,
        RA: Send,
    {
        crate::join::join(self.reg(), a, b)
    }
}

// Here, not in `builder.rs`: the builder's module sits below this one
// (the system starts from its `Config`), and `build` hands out a system.
impl Builder {
    /// Start the workers.
    pub fn build(self) -> Result<JobSystem, BuildError> {
        JobSystem::new(self.into_config())
    }
}

/// An open hot zone (see [`JobSystem::hot_zone`]); closes when dropped, on
/// any thread.
#[must_use = "the hot zone closes when the guard is dropped"]
pub struct HotZone {
    system: JobSystem,
}

impl Drop for HotZone {
    fn drop(&mut self) {
        self.system.reg().hot_zones().fetch_sub(1, Ordering::SeqCst);
    }
}

impl std::fmt::Debug for HotZone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HotZone").finish_non_exhaustive()
    }
}

/// Why [`JobSystem::handle_from_bits`] refused some bits. Not part of the
/// Rust API.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandleBits {
    /// The bits name another system (or one since dropped).
    Foreign,
    /// The bits name no job this system handed out.
    Invalid,
}

/// The handle whose [`JobHandle::to_bits`] these are, checked against
/// `reg`'s own storage before any slot is read (the C API's handles;
/// `JobSystem::handle_from_bits` says what each refusal means). `me`: the
/// calling thread's context in `reg`, whose last checked page spares the
/// page-set probe.
#[inline]
fn from_bits(
    reg: &crate::registry::Registry,
    bits: [u64; 2],
    me: Option<&crate::context::Context>,
) -> Result<JobHandle, HandleBits> {
    let system = (bits[1] >> 32) as u32;
    let gen = bits[1] as u32;
    if system != reg.id() {
        return Err(HandleBits::Foreign);
    }
    let Ok(addr) = usize::try_from(bits[0]) else {
        return Err(HandleBits::Invalid);
    };
    if !reg.is_slot_address(addr, me) {
        return Err(HandleBits::Invalid);
    }
    let slot = addr as *const crate::slot::Slot;
    // SAFETY: `addr` is the address of a slot in one of this registry's
    // pages (checked above: the page is in its page set, or is the page
    // this thread found there before, and `addr` is at a slot boundary in
    // it), and pages live as long as the registry, which the caller holds.
    let s = unsafe { &*slot }.state();
    // A slot's generation only grows (`slot/state.rs`): a handed-out job's
    // generation is at most its slot's now, and equal only while the slot
    // still holds that job (never FREE or EDGES under it).
    if !s.has_issued(gen) {
        return Err(HandleBits::Invalid);
    }
    Ok(JobHandle {
        // SAFETY: `is_slot_address` refused page base 0, so `addr` is not 0.
        slot: unsafe { std::ptr::NonNull::new_unchecked(slot as *mut crate::slot::Slot) },
        gen,
        system,
    })
}
