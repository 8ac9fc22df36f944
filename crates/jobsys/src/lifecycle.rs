//! A job's life on the engine side: slot allocation (with back-pressure
//! and trimming), submit → (dependencies) → release onto a deque → claim →
//! run (or skip, or cancel) → finish (release dependents, wake waiters) →
//! recycle. Every state change goes through `slot`'s transitions (`slot/mod.rs`); this
//! module decides which one and when.
//!
//! Scheduling is all or nothing: a `schedule*` call that panics leaves no
//! job behind, half published. Whatever may panic comes before the job's
//! slot is taken: the checks of the input (`check_handles`, `pin_target`,
//! `Batch::Fixed(0)`, a declared access's), and back-pressure's stall
//! (`make_room`, which runs before `Store::alloc` hands out the slot, and
//! for a declared-access job before its resource locks are taken); the
//! closure is then still the caller's, and the unwinding drops it, once.
//! From the slot's allocation to the job's release onto a deque (`submit`;
//! `submit_held`, then `release_hold`) nothing unwinds: edge blocks skip
//! back-pressure (`alloc_edge_block`: their job was admitted when its own
//! slot was allocated, and it is published already; a page one needs is
//! set aside, so the thread's next job still meets it), profiler hooks abort
//! the process rather than unwind (`trace/hooks.rs`), a closure dropped on
//! the way (a job pinned to a thread that is gone) is dropped under
//! `catch_unwind` (`drop_as_job`), and running out of memory aborts.

use crate::context::{bump, bump_by, Context};
use crate::desc::JobDesc;
use crate::error::Failure;
use crate::failures::{Outcome, Recorded};
use crate::handle::JobHandle;
use crate::job::Entry;
use crate::registry::Registry;
use crate::slot::*;
use crate::sync::fence;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

impl Registry {
    // ---- slots ------------------------------------------------------------

    #[inline]
    pub(crate) fn alloc<'a>(&'a self, ctx: &Context) -> (&'a Slot, u32) {
        // SAFETY: `ctx` is the calling thread's claimed context.
        let slot = match unsafe { ctx.store.alloc() } {
            Some(slot) => slot,
            None => self.alloc_slow(ctx),
        };
        // SAFETY: the slot lives in a page owned by `self`.
        let slot: &'a Slot = unsafe { slot.as_ref() };
        (slot, slot.gen_now())
    }

    /// `alloc` when this thread's free lists are empty: back-pressure
    /// first (`make_room`, which may run jobs that allocate), then the rest
    /// of the page an edge block took (`Store::bypass`), else a new page.
    #[cold]
    fn alloc_slow(&self, ctx: &Context) -> NonNull<Slot> {
        self.make_room(ctx);
        // SAFETY: `ctx` is the calling thread's claimed context; no other
        // store call is in progress on this thread.
        unsafe {
            if let Some(slot) = ctx.store.alloc() {
                return slot; // jobs run by make_room freed some
            }
            if !ctx.store.take_bypass() {
                ctx.store.add_page(|page| self.keep_page_static(page));
            }
            ctx.store.alloc().expect("a page's worth of free slots")
        }
    }

    /// An edge block for a job being attached (`attach_deps`), without
    /// back-pressure: the job was admitted when its own slot was allocated,
    /// and it is published already, so a stall panic here would leave it
    /// half attached (module docs). A page it needs goes on the bypass
    /// list (`Store::bypass`): the next job this thread schedules still
    /// finds its free lists empty and applies back-pressure. Edge blocks add
    /// to job storage about one slot per two dependencies of the jobs
    /// `max_jobs` lets in.
    fn alloc_edge_block<'a>(&'a self, ctx: &Context) -> (&'a Slot, u32) {
        // SAFETY: `ctx` is the calling thread's claimed context; no other
        // store call is in progress on this thread.
        let slot = unsafe {
            match ctx.store.alloc_bypass() {
                Some(slot) => slot,
                None => {
                    ctx.store
                        .add_bypass_page(|page| self.keep_page_static(page));
                    ctx.store.alloc_bypass().expect("a page was just added")
                }
            }
        };
        // SAFETY: the slot lives in a page owned by `self`.
        let slot: &'a Slot = unsafe { slot.as_ref() };
        (slot, slot.gen_now())
    }

    /// `keep_page`, for `Store::add_page`.
    fn keep_page_static(&self, page: crate::store::Page) -> &'static [Slot] {
        let slots: *const [Slot] = self.keep_page(page);
        // SAFETY: kept by the registry until it drops, and a store's slots
        // are used only while its registry lives.
        unsafe { &*slots }
    }

    /// Back-pressure (`Config::max_jobs`): this thread needs a new page of
    /// slots for a job while `max_jobs` jobs are unfinished, so storage
    /// stays bounded by about `max_jobs` slots per thread. Called before
    /// `Store::alloc`, never inside it (a job run here may schedule, i.e.
    /// allocate, itself). What the thread does meanwhile depends on where
    /// it is (`Doing`):
    ///
    /// - At its top level (a thread that is not a worker, in no job and no
    ///   wait, holding no `read_now`/`write_now` guard): it runs queued
    ///   jobs, any of them, until fewer than `max_jobs` are unfinished.
    /// - Inside a job (a worker always is), a wait, or holding a guard: it
    ///   runs nothing (`complete` helps only with work its handle needs,
    ///   and an unrelated job run here could block this one, or wait on a
    ///   job that needs it) and waits for other threads to finish jobs. The
    ///   jobs it is inside of, and its guards' events, are not counted:
    ///   they cannot finish before it returns to them (with `max_jobs(1)` a
    ///   job may still schedule a child). With no other worker active
    ///   (`workers(0)`, all benched, or this one the only one), nobody runs
    ///   queued jobs while it waits, so the allocation goes through.
    /// - Scheduling a declared-access job, with its resource locks held
    ///   (`access::helping_forbidden`): the allocation goes through;
    ///   `access::schedule_core` applied back-pressure before the locks
    ///   (`make_room_before_locks`).
    ///
    /// # Panics
    /// If no job finishes anywhere for `MAX_JOBS_STALL` while the system is
    /// full, read between two jobs run at top level and on every look while
    /// waiting: the unfinished jobs wait for something this thread has not
    /// done yet (or for threads that are blocked), so waiting longer would
    /// hang. The message says where the thread was. The slot is not taken
    /// yet: nothing of the job being scheduled exists.
    #[cold]
    fn make_room(&self, ctx: &Context) {
        if self.outstanding() < self.max_jobs as u64 || crate::access::helping_forbidden() {
            return;
        }
        match Doing::of(ctx) {
            Doing::TopLevel => self.make_room_by_running_jobs(ctx),
            doing => self.wait_for_room(ctx, doing),
        }
    }

    /// `make_room` at a thread's top level: run queued jobs.
    fn make_room_by_running_jobs(&self, ctx: &Context) {
        let mut stall = Stall::new(self);
        let mut searching = false;
        let mut backoff = self.backoff();
        while self.outstanding() >= self.max_jobs as u64 {
            if self.find_and_run(ctx, &mut searching) {
                continue;
            }
            stall.check(self, Doing::TopLevel);
            backoff.snooze(backoff.elapsed());
        }
    }

    /// `make_room` inside a job, a wait or a guard: run nothing, wait for
    /// other threads to finish jobs.
    fn wait_for_room(&self, ctx: &Context, doing: Doing) {
        let (running, guards) = ctx.own_unfinished();
        let own = (running + guards) as u64;
        let mut stall = Stall::new(self);
        let mut backoff = self.backoff();
        while self.outstanding().saturating_sub(own) >= self.max_jobs as u64
            && self.other_workers_active(ctx)
        {
            stall.check(self, doing);
            backoff.snooze(backoff.elapsed());
        }
    }

    /// Is a worker other than the calling thread active (taking queued
    /// jobs)? Workers `0..active_workers()` are.
    fn other_workers_active(&self, ctx: &Context) -> bool {
        let active = self.sleep.active() as usize;
        let me = usize::from(ctx.is_worker && (ctx.index as usize) < active);
        active > me
    }

    /// Jobs finished so far, over all threads.
    fn finished_total(&self) -> u64 {
        (0..self.num_contexts())
            .map(|i| self.context(i).counters.finished.load(Ordering::Acquire))
            .sum()
    }

    /// Back-pressure for a declared-access job, before its resource locks
    /// are taken (`access::schedule_core`): under them no job may run nor
    /// a thread wait, so `make_room` lets the allocation through there.
    /// Applied here when that allocation would need a new page, as
    /// `alloc_slow` would apply it.
    #[inline]
    pub(crate) fn make_room_before_locks(&self, ctx: &Context) {
        // SAFETY: `ctx` is the calling thread's claimed context; no other
        // store call is in progress on this thread.
        if !unsafe { ctx.store.has_free() } {
            self.make_room(ctx);
        }
    }

    /// `MAX_JOBS_STALL`, or what a test set (`set_max_jobs_stall`).
    fn max_jobs_stall(&self) -> Duration {
        Duration::from_nanos(self.max_jobs_stall_ns.load(Ordering::Relaxed))
    }

    /// Make back-pressure give up (panic) after `stall` without a finished
    /// job instead of `MAX_JOBS_STALL`, so tests reach the stall quickly.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn set_max_jobs_stall(&self, stall: Duration) {
        self.max_jobs_stall_ns
            .store(stall.as_nanos() as u64, Ordering::Relaxed);
    }

    /// A slot for a job described by `desc` (name and priority recorded).
    #[inline]
    pub(crate) fn alloc_job<'a>(&'a self, ctx: &Context, desc: &JobDesc) -> (&'a Slot, u32) {
        self.alloc_pinned_job(ctx, desc, None)
    }

    /// `alloc_job` for a job that only context `pin` may run.
    #[inline]
    pub(crate) fn alloc_pinned_job<'a>(
        &'a self,
        ctx: &Context,
        desc: &JobDesc,
        pin: Option<u32>,
    ) -> (&'a Slot, u32) {
        let (slot, gen) = self.alloc(ctx);
        let meta = JobMeta {
            name: desc.name.map_or(0, crate::desc::intern),
            priority: desc.priority as u8,
            // Context indices, and `NO_THREAD` above them, stay below
            // MAX_PIN_CONTEXTS (`Registry::new`).
            pin: pin.map_or(0, |c| c as u16 + 1),
        };
        // The slot is fresh and unpublished: ours to write.
        slot.set_meta(meta);
        (slot, gen)
    }

    /// The name a job is reported by: its `JobDesc` name, else its closure's
    /// type name. Caller holds a pin or claim.
    #[allow(dead_code)] // used by the tracer hooks
    pub(crate) fn job_name(slot: &Slot) -> &'static str {
        crate::desc::name_of(slot.meta().name).unwrap_or_else(|| (slot.vtable().type_name)())
    }

    /// Give back the memory of `ctx`'s whole free pages above `keep_pages`
    /// (`Store::trim`). `ctx` is the calling thread's own context, idle.
    #[inline]
    pub(crate) fn trim(&self, ctx: &Context) -> usize {
        // SAFETY: `ctx` is the calling thread's claimed context.
        unsafe { ctx.store.trim(self.keep_pages) }
    }

    /// `ctx`'s thread is idle (a worker about to sleep, or another thread
    /// whose outermost `complete` returns): note its demand since its last
    /// idle moment, and give back storage that has been above `keep_pages`
    /// for `TRIM_DELAY` and that its recent peak does not need
    /// (`Store::trim_if_due`).
    #[inline]
    pub(crate) fn idle(&self, ctx: &Context) {
        // SAFETY: `ctx` is the calling thread's claimed context.
        if unsafe { ctx.store.idle_tick(self.keep_pages) } {
            self.idle_slow(ctx);
        }
    }

    #[cold]
    fn idle_slow(&self, ctx: &Context) {
        // SAFETY: `ctx` is the calling thread's claimed context.
        unsafe { ctx.store.trim_if_due(self.keep_pages) };
    }

    /// Return a slot that its `finish`/`unpin` just freed (with its edge
    /// blocks) to its owner's free lists; a retired one is kept out.
    #[inline]
    pub(crate) fn recycle(&self, ctx: &Context, slot: &Slot) {
        // SAFETY: the freeing CAS made this thread the slot's only user.
        let block = unsafe { slot.reset_for_reuse() };
        // The common case: no edge blocks, a slot of this thread's own
        // store, generations left.
        if block.is_none() && slot.owner() == ctx.index && !slot.retired() {
            // SAFETY: freed by this thread (above), and the caller's
            // context owns the store (same index).
            unsafe { ctx.store.push_free(slot, true) };
            return;
        }
        self.recycle_rest(ctx, slot, block);
    }

    /// `recycle` past its common case: edge blocks, another thread's slot,
    /// or a retired one.
    #[inline(never)]
    fn recycle_rest(&self, ctx: &Context, slot: &Slot, mut block: Option<&Slot>) {
        while let Some(b) = block {
            // SAFETY: `b` is an edge block of the job just freed.
            block = unsafe { b.free_edge_block() };
            if !b.retired() {
                self.push_free(ctx, b);
            }
        }
        // A slot whose generation ran out is never reused (`RETIRED_GEN`).
        if !slot.retired() {
            self.push_free(ctx, slot);
        }
    }

    #[inline]
    fn push_free(&self, ctx: &Context, slot: &Slot) {
        let owner = self.context(slot.owner() as usize);
        // SAFETY: the slot was freed by this thread; `mine` is true only when
        // the caller's context owns the store.
        unsafe { owner.store.push_free(slot, owner.index == ctx.index) };
    }

    #[inline]
    pub(crate) fn unpin(&self, ctx: &Context, slot: &Slot) {
        if let Unpinned::Freed = slot.unpin() {
            self.recycle(ctx, slot);
        }
    }

    // ---- submitting -------------------------------------------------------

    /// Check that every handle in `deps` is ours.
    #[track_caller]
    pub(crate) fn check_handles(&self, deps: &[JobHandle], what: &str) {
        for d in deps {
            assert!(
                d.system == self.id,
                "jobsys: {what}: a dependency handle belongs to another JobSystem ({d:?})"
            );
        }
    }

    /// Publish a job written into `slot`: queue it now, or register it
    /// with its dependencies. `flags` are extra state bits (e.g. `PFOR`).
    /// Always inlined: with the tracer compiled in, its out-of-line traced
    /// branch otherwise kept it from being inlined into `schedule` (W1
    /// single counted 20 instructions more per job than without the tracer).
    #[inline(always)]
    pub(crate) fn submit(
        &self,
        ctx: &Context,
        slot: &Slot,
        gen: u32,
        deps: &[JobHandle],
        flags: u64,
    ) -> JobHandle {
        if !deps.is_empty() {
            return self.submit_after(ctx, slot, gen, deps, flags);
        }
        // The one tracer check of this job: a flag test here, the rest out
        // of line (`submit_traced`), so that the untraced path keeps its
        // arguments where they are.
        if crate::trace::flag_on() {
            return self.submit_traced(ctx, slot, gen, flags);
        }
        self.submit_runnable(ctx, slot, gen, flags)
    }

    /// `submit` of a job with no dependencies while the tracer's flag is
    /// on: the ready is stamped before the job can be seen (published,
    /// then pushed), and the check's outcome is kept in its state
    /// (`TRACED`) for the wait that may run it inline.
    #[cold]
    #[inline(never)]
    fn submit_traced(&self, ctx: &Context, slot: &Slot, gen: u32, flags: u64) -> JobHandle {
        let traced =
            crate::trace::job_ready_flag(self.site(ctx), slot as *const Slot as usize, gen);
        let flags = flags | if traced { TRACED } else { 0 };
        self.submit_runnable(ctx, slot, gen, flags)
    }

    /// Publish a job with no dependencies as runnable and queue it.
    #[inline(always)]
    fn submit_runnable(&self, ctx: &Context, slot: &Slot, gen: u32, flags: u64) -> JobHandle {
        bump(&ctx.counters.scheduled);
        let handle = JobHandle {
            slot: NonNull::from(slot),
            gen,
            system: self.id,
        };
        slot.publish_runnable(gen, flags);
        if let Some(target) = slot.meta().pinned_to() {
            let e = Entry {
                slot: handle.slot,
                gen,
            };
            self.push_pinned(ctx, e, target);
            return handle;
        }
        ctx.push(
            Entry {
                slot: handle.slot,
                gen,
            },
            slot.prio(),
        );
        self.notify_work(ctx);
        handle
    }

    /// `submit` of a job with dependencies.
    #[inline(never)]
    fn submit_after(
        &self,
        ctx: &Context,
        slot: &Slot,
        gen: u32,
        deps: &[JobHandle],
        flags: u64,
    ) -> JobHandle {
        let handle = self.submit_held(ctx, slot, gen, deps, flags);
        self.release_hold(ctx, handle);
        handle
    }

    /// Register a job with its dependencies, keeping one pending count for
    /// the caller: the job cannot become runnable, nor be cancelled for a
    /// pinned thread that is gone (which drops its closure), until
    /// `release_hold`. `submit` releases at once; access scheduling
    /// releases after its resource locks, so that no closure is dropped
    /// while they are held (`access/mod.rs`).
    pub(crate) fn submit_held(
        &self,
        ctx: &Context,
        slot: &Slot,
        gen: u32,
        deps: &[JobHandle],
        flags: u64,
    ) -> JobHandle {
        bump(&ctx.counters.scheduled);
        // TRACED: no check here, so a wait on it makes its own.
        slot.publish_waiting(gen, flags | TRACED, deps.len());
        self.attach_deps(ctx, slot, deps);
        JobHandle {
            slot: NonNull::from(slot),
            gen,
            system: self.id,
        }
    }

    /// Drop the count `submit_held` kept: the job is queued now if its
    /// dependencies have finished.
    pub(crate) fn release_hold(&self, ctx: &Context, h: JobHandle) {
        let slot = h.slot();
        if slot.dep_done() {
            crate::trace::job_ready(self.site(ctx), Registry::job_id(slot, h.gen));
            self.make_runnable(ctx, slot);
        }
    }

    /// `submit` for a batched job (`JobBuilder::batched`; `flags` as
    /// `submit`'s): a job runnable at once is pushed without waking anyone
    /// and counted in this thread's batch.
    pub(crate) fn submit_batched(
        &self,
        ctx: &Context,
        slot: &Slot,
        gen: u32,
        deps: &[JobHandle],
        flags: u64,
    ) -> JobHandle {
        if !deps.is_empty() {
            return self.submit(ctx, slot, gen, deps, flags);
        }
        bump(&ctx.counters.scheduled);
        // TRACED: no tracer check here, so a wait on it makes its own.
        slot.publish_runnable(gen, TRACED | flags);
        let handle = JobHandle {
            slot: NonNull::from(slot),
            gen,
            system: self.id,
        };
        ctx.push(
            Entry {
                slot: handle.slot,
                gen,
            },
            slot.prio(),
        );
        ctx.batch_add();
        handle
    }

    /// Publish `ctx`'s batch (see `JobSystem::flush`).
    pub(crate) fn flush(&self, ctx: &Context) -> usize {
        let n = ctx.batch_take();
        if n == 0 || self.num_workers == 0 {
            return 0;
        }
        // SeqCst fence: the pushes before the sleepers' state, as in
        // `Sleep::notify_work`.
        fence(Ordering::SeqCst);
        let uncovered = n.saturating_sub(self.sleep.searching() as usize);
        // Each wake is recorded before the store that ends that worker's
        // park (see `Sleep::notify_work`), so its arrow never points back.
        let traced = |w| crate::trace::wake_issued(self.site(ctx), Some(w));
        let woken = self
            .sleep
            .wake_many(uncovered.min(self.num_workers), ctx.index, traced);
        let woken = if woken.is_empty() && uncovered > 0 {
            // Nobody asleep to wake, or a race with parking workers: the
            // usual single notify keeps the no-lost-wake-up guarantee.
            match self.sleep.notify_work(ctx.index, traced) {
                Some(_) => 1,
                None => 0,
            }
        } else {
            woken.len()
        };
        bump_by(&ctx.counters.wakes, woken as u64);
        woken
    }

    /// Record `slot`'s dependencies in edge blocks and link each edge into
    /// its dependency's dependents list; a dependency that already finished
    /// (or whose slot moved on) counts as done at once, passing on its
    /// failure.
    fn attach_deps(&self, ctx: &Context, slot: &Slot, deps: &[JobHandle]) {
        let mut prev: Option<&Slot> = None;
        let mut block: Option<&Slot> = None;
        for (i, d) in deps.iter().enumerate() {
            if i % EDGES_PER_BLOCK == 0 {
                let (b, bgen) = self.alloc_edge_block(ctx);
                b.become_edge_block(bgen);
                prev = block;
                block = Some(b);
            }
            let b = block.expect("an edge block for every EDGES_PER_BLOCK edges");
            // SAFETY: we are `slot`'s publisher inside `submit`, and `b` is
            // the edge block allocated for this edge.
            let e = unsafe { slot.write_edge(i, prev, b, d.slot, d.gen) };
            let dep = d.slot();
            let Some(pinned) = dep.pin_for_attach(d.gen) else {
                // Recycled: finished long ago, maybe failed; a dependency
                // whose outcome is no longer known counts as failed (a job
                // after a failed one never runs).
                let failure = match self.failures.lookup(d.slot.as_ptr() as usize, d.gen) {
                    Outcome::Succeeded => None,
                    Outcome::Failed(rec) => Some(rec.failure),
                    Outcome::Unknown => Some(Arc::new(Failure::dependency_unknown())),
                };
                if let Some(f) = failure.filter(|_| !crate::access::is_event(slot)) {
                    slot.set_failure(f);
                }
                let last = slot.dep_done();
                debug_assert!(!last, "submit holds one count until it is done");
                continue;
            };
            // SAFETY: `e` is fresh from `write_edge`; we hold the attach pin.
            if !unsafe { dep.push_dependent(pinned, e) } {
                // Finished: its dependents were walked without us.
                if let Some(f) = dep.failure().filter(|_| !crate::access::is_event(slot)) {
                    slot.set_failure(f);
                }
                let last = slot.dep_done();
                debug_assert!(!last, "submit holds one count until it is done");
            }
            self.unpin(ctx, dep);
        }
    }

    /// The last dependency of `slot` finished: queue it on this thread's
    /// deque. If a waiter needs it and this thread will not run it soon,
    /// wake parked waiters so one can take it.
    pub(crate) fn make_runnable(&self, ctx: &Context, slot: &Slot) -> bool {
        // Read before the release below: once RUNNABLE, another thread may
        // claim, run and free the job, and the slot may be reused (TSan
        // found the read after it).
        let meta = slot.meta();
        let prio = meta.priority as usize;
        let pinned = meta.pinned_to();
        if let Some(target) = pinned {
            if !self.pinned_open(target) {
                // Its thread is gone: cancel it while it still waits (no
                // recursion into `finish`), then queue it like any other
                // job; a cancelled job may finish on any thread.
                let h = JobHandle {
                    slot: NonNull::from(slot),
                    gen: slot.gen_now(),
                    system: self.id,
                };
                self.cancel_with(ctx, h, crate::pinned::PINNED_GONE, false);
            }
        }
        let Some(s) = slot.release() else {
            // A canceller is dropping the closure: it queues the job after
            // the drop (`Slot::end_cancel_drop`, in `cancel_with`).
            return false;
        };
        let e = Entry {
            slot: NonNull::from(slot),
            gen: s.generation(),
        };
        let waited = s.is_waited();
        if let Some(target) = pinned {
            if !s.is_cancelled() {
                // Only its own thread may run it; the push wakes that thread.
                self.push_pinned(ctx, e, target);
                return waited;
            }
            // Cancelled: queued below like any job, never on `target`'s
            // pinned queue (a `release` that left it to the canceller
            // returned above, so this runs once per job).
            self.resolve_pinned(target);
        }
        self.queue_runnable(ctx, e, prio, waited);
        if waited && !ctx.is_top_level_worker() {
            self.wake_parked_waiters(ctx);
        }
        waited
    }

    /// Put a runnable job (or the rest of a started loop) where threads
    /// look for it, and tell idle workers. A job some waiter needs
    /// (`waited`) also goes on the `needed` deque, which waiters search.
    #[inline]
    pub(crate) fn queue_runnable(&self, ctx: &Context, e: Entry, prio: usize, waited: bool) {
        if waited && self.inheritance {
            // Only on the needed deque, which every thread searches right
            // after its own High work: one entry, no stale twin to pop later.
            ctx.push_needed(e, crate::wait::still_queued);
        } else {
            ctx.push(e, prio);
            if waited {
                ctx.push_needed(e, crate::wait::still_queued);
            }
        }
        self.notify_work(ctx);
    }

    // ---- running ----------------------------------------------------------

    /// Run what `e` names if it is still runnable. Returns whether a job (or
    /// some pieces of one) ran. `on_claim` runs after the claim, before the
    /// job: workers use it to stop searching and wake the next worker.
    #[inline]
    pub(crate) fn run_entry(&self, ctx: &Context, e: Entry, on_claim: &mut dyn FnMut()) -> bool {
        if e.is_stack() {
            // Stack jobs are taken from deques exactly once: no claim.
            on_claim();
            let id = crate::trace::JobId::new(e.slot.as_ptr() as usize, e.gen);
            crate::trace::job_begin(self.site(ctx), id, "join");
            // SAFETY: the joiner keeps the job alive until its latch is set,
            // which `run_stack_job` does last.
            unsafe { crate::join::run_stack_job(e.stack_header(), ctx.index) };
            crate::trace::job_end(self.site(ctx), id, "join");
            return true;
        }
        let slot = e.slot();
        let s = slot.state();
        if !s.is_runnable_for(e.gen) {
            return false;
        }
        // A pinned job runs on its own thread only (a cancelled one, whose
        // closure is gone, anywhere). If the slot moved on since the load
        // above, the meta read is another job's, and the claim below fails
        // on the generation anyway.
        if let Some(target) = slot.meta().pinned_to() {
            if target != ctx.index && !s.is_cancelled() {
                return false;
            }
        }
        if s.is_pfor() {
            return self.run_pieces(ctx, slot, e.gen, on_claim);
        }
        let Some(claimed) = slot.claim(e.gen) else {
            return false;
        };
        on_claim();
        self.run_claimed(ctx, slot, e.gen, claimed);
        true
    }

    /// Run a claimed single job and finish it. `claimed` is the state
    /// `Slot::claim` returned. One copy, called from every site but the
    /// wait's fast path, which inlines `run_claimed_as::<false>`.
    #[inline(never)]
    pub(crate) fn run_claimed(&self, ctx: &Context, slot: &Slot, gen: u32, claimed: Snapshot) {
        self.run_claimed_as::<true>(ctx, slot, gen, claimed);
    }

    /// `run_claimed`. `TRACE = true` checks the tracer at the job's begin,
    /// as every site does. `TRACE = false` has no event site at all, for
    /// `wait_with`'s fast path on a job published with the tracer off (no
    /// `TRACED` flag: `submit` checked, one check per job instead of one
    /// per event, trace/README.md "Cost").
    #[inline(always)]
    pub(crate) fn run_claimed_as<const TRACE: bool>(
        &self,
        ctx: &Context,
        slot: &Slot,
        gen: u32,
        claimed: Snapshot,
    ) {
        let vt = slot.vtable();
        // CANCELLED is only set while WAITING, so the claim fixed it.
        if claimed.is_cancelled() {
            // The canceller dropped the closure (`cancel_unstarted`).
            self.finish(ctx, slot, gen, FAILED);
            return;
        }
        // Poisoning happens before the job became runnable (pending hit 0).
        let poisoned = slot.has_failure();
        if poisoned {
            // Skipped: the closure is dropped as part of the job (on the
            // `running` stack, so a `Drop` that waits on the job's own
            // handle gets WaitOnSelf instead of parking forever).
            // SAFETY: we hold the claim; the payload is initialised and
            // dropped exactly once, here. (The job fails either way.)
            let _ = unsafe { drop_as_job(ctx, slot, gen) };
            self.finish(ctx, slot, gen, FAILED | POISONED);
            return;
        }
        let traced = if TRACE {
            crate::trace::job_begin_slot(self.site(ctx), slot as *const Slot as usize, gen, || {
                Registry::job_name(slot)
            })
        } else {
            None
        };
        ctx.running_push(slot, gen);
        let outer = CurrentJob::enter(slot, gen);
        // SAFETY: we hold the claim; the payload is initialised and consumed
        // exactly once, here.
        let r = catch_unwind(AssertUnwindSafe(|| unsafe { (vt.run)(slot.payload_ptr()) }));
        drop(outer);
        ctx.running_pop(slot, gen);
        // The end is recorded before `finish`: whoever sees the job finished
        // (a waiter that then stops the capture) also sees its end event.
        if let Some(name) = traced {
            crate::trace::job_end(self.site(ctx), Registry::job_id(slot, gen), name);
        }
        match r {
            Ok(()) => self.finish(ctx, slot, gen, 0),
            Err(p) => {
                slot.set_failure(Arc::new(Failure::from_panic(p, failed_name(slot))));
                self.finish(ctx, slot, gen, FAILED);
            }
        }
    }

    /// `JobSystem::cancel`: cancel `h`, and if it is a `combine`, every job
    /// of the group first (nested groups included; the dependencies of a
    /// single job are not touched). Returns whether `h` itself was stopped
    /// before it started.
    pub(crate) fn cancel(&self, ctx: &Context, h: JobHandle) -> bool {
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
                            system: self.id,
                        };
                        todo.push(d);
                        members.push(d);
                    })
                };
            }
            self.unpin(ctx, slot);
        }
        for m in members {
            self.cancel_with(ctx, m, CANCELLED_BY_USER, true);
        }
        self.cancel_with(ctx, h, CANCELLED_BY_USER, true) || unfinished_group
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
        &self,
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
                    self.finish(ctx, slot, h.gen, FAILED);
                } else {
                    // Until here the job could not become runnable, so
                    // nobody saw it finish while its closure was being
                    // dropped. If its last dependency finished meanwhile,
                    // its release was left to us (our pin keeps the slot).
                    if slot.end_cancel_drop()
                        && self.make_runnable(ctx, slot)
                        && ctx.is_top_level_worker()
                    {
                        // `make_runnable` leaves waking parked waiters to a
                        // top-level worker's next job; this worker goes on
                        // with its own.
                        self.wake_parked_waiters(ctx);
                    }
                    self.unpin(ctx, slot);
                }
                true
            }
            // Started: no failure recorded here. The runner already holds
            // its claim and may be about to read `has_failure` as "a
            // dependency failed, skip the closure" (`run_claimed`); the
            // finishing CAS refuses while STOP is set and `finish` records
            // the cancellation then.
            Cancel::Started if slot.state().is_pfor() => self.cancel_pieces(ctx, slot, h.gen),
            Cancel::Started => {
                self.unpin(ctx, slot);
                false
            }
        }
    }

    /// The job in `slot` is done (ran, failed or was skipped); the caller
    /// holds one pin (its claim), which this drops.
    #[inline]
    pub(crate) fn finish(&self, ctx: &Context, slot: &Slot, gen: u32, flags: u64) {
        // A job that succeeded with nobody waiting on it and nothing
        // depending on it (W1 single, most leaves of a frame): one CAS and
        // the slot back on a free list, without the walk below.
        if flags == 0 && slot.finish_alone() {
            bump(&ctx.counters.finished);
            self.recycle(ctx, slot);
            return;
        }
        self.finish_shared(ctx, slot, gen, flags);
    }

    /// `finish` of a job that failed, or that others pin or depend on.
    #[inline(never)]
    fn finish_shared(&self, ctx: &Context, slot: &Slot, gen: u32, mut flags: u64) {
        if flags & FAILED != 0 {
            self.log_failure(slot, gen, flags);
        }
        let (prev, claim_dropped, un) = loop {
            match slot.finish(flags) {
                Some(r) => break r,
                None => {
                    // Cancelled while it ran (`STOP`): the canceller records
                    // the cause too; the first one recorded stays.
                    slot.set_failure(Arc::new(Failure::cancelled(
                        CANCELLED_BY_USER,
                        failed_name(slot),
                    )));
                    flags |= FAILED;
                    self.log_failure(slot, gen, flags);
                }
            }
        };
        debug_assert_eq!(prev.generation(), gen);
        bump(&ctx.counters.finished);
        if claim_dropped {
            if let Unpinned::Freed = un {
                self.recycle(ctx, slot);
            }
            return;
        }
        if prev.pins() > 1 {
            // Someone else holds a pin: maybe a waiter about to park. The
            // fence orders our FINISHED (the CAS above) before the load of
            // the parked count in `wake_target`; it pairs with the fence in
            // `park_on` between registering and re-reading the state
            // (store-load on both sides: one of us sees the other). The
            // SeqCst CAS and load alone suffice in C++20's model; the fence
            // makes that explicit and lets loom check it (loom weakens
            // SeqCst accesses, not fences).
            fence(Ordering::SeqCst);
            // Recorded before the store the waiter's park loop sees.
            self.waiters
                .wake_target(slot, |w| crate::trace::wake_issued(self.site(ctx), Some(w)));
        }
        let mut e = slot.close_dependents();
        let failure = if flags & FAILED != 0 {
            slot.failure()
        } else {
            None
        };
        // A top-level worker runs the last job it pushes next; a needed
        // (WAITED) job released earlier in this loop is buried under it, so
        // parked waiters must be told (they could be the only ones able to
        // run it while the top job blocks).
        let mut top_is_waited = false;
        let mut waited_buried = false;
        while !e.is_null() {
            // SAFETY: an edge of the list just closed, read before our
            // `dep_done` below lets its dependent run and free it.
            let (next, dependent) = unsafe { Edge::take(e) };
            if let Some(f) = &failure {
                // A guard's event does not pass its waits' failures on
                // (`access/now.rs`).
                if !crate::access::is_event(dependent) {
                    dependent.set_failure(f.clone());
                }
            }
            if dependent.dep_done() {
                crate::trace::job_released(self.site(ctx), || {
                    Registry::job_id(dependent, dependent.gen_now())
                });
                waited_buried |= top_is_waited;
                top_is_waited = self.make_runnable(ctx, dependent);
            }
            e = next;
        }
        if waited_buried && ctx.is_top_level_worker() {
            self.wake_parked_waiters(ctx);
        }
        self.unpin(ctx, slot);
    }

    /// Record a failed job's failure in the failure log before `finish`'s
    /// CAS can free its slot: a wait or an attach that sees the next
    /// generation then finds it there.
    #[cold]
    fn log_failure(&self, slot: &Slot, gen: u32, flags: u64) {
        if let Some(failure) = slot.failure() {
            let rec = Recorded {
                failure,
                flags: flags
                    | if slot.state().is_cancelled() {
                        CANCELLED
                    } else {
                        0
                    },
            };
            self.failures.record(slot as *const Slot as usize, gen, rec);
        }
    }

    /// Wake every thread parked in `complete` (a needed job became runnable).
    pub(crate) fn wake_parked_waiters(&self, ctx: &Context) {
        // Recorded before the store the waiter's park loop sees.
        self.waiters
            .wake_all_parked(|w| crate::trace::wake_issued(self.site(ctx), Some(w)));
    }
}

/// Where a thread under back-pressure is (`Registry::make_room`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Doing {
    /// Not a worker, in no job and no wait, holding no guard.
    TopLevel,
    /// Inside a job (its closure, or its closure's drop), or a worker.
    Job,
    /// Holding a `read_now`/`write_now` guard.
    Guard,
    /// Inside a wait: `complete`, a `join`'s or a scope's.
    Wait,
}

impl Doing {
    fn of(ctx: &Context) -> Doing {
        let (running, guards) = ctx.own_unfinished();
        if running > 0 || ctx.is_worker {
            Doing::Job
        } else if guards > 0 {
            Doing::Guard
        } else if ctx.wait_depth() > 0 {
            Doing::Wait
        } else {
            Doing::TopLevel
        }
    }

    /// Where the thread was and what it did meanwhile, for the stall panic.
    fn describe(self) -> &'static str {
        match self {
            Doing::TopLevel => "at its top level, running queued jobs meanwhile",
            Doing::Job => "inside a job, running none meanwhile",
            Doing::Guard => "holding a read_now/write_now guard, running no job meanwhile",
            Doing::Wait => "inside a wait (complete, join, scope), running no job meanwhile",
        }
    }
}

/// Back-pressure's stall limit: since when no job finished anywhere.
struct Stall {
    last: u64,
    since: Instant,
    limit: Duration,
}

impl Stall {
    fn new(reg: &Registry) -> Stall {
        Stall {
            last: reg.finished_total(),
            since: Instant::now(),
            limit: reg.max_jobs_stall(),
        }
    }

    /// Panic if no job finished for the limit (`make_room`, "Panics").
    fn check(&mut self, reg: &Registry, doing: Doing) {
        let now = reg.finished_total();
        if now != self.last {
            self.last = now;
            self.since = Instant::now();
        } else if self.since.elapsed() >= self.limit {
            panic!(
                "jobsys: {} jobs are unfinished (Config::max_jobs is {}) and none finished in \
                 {:?} while this thread, {}, waited for room to schedule another; they wait \
                 for something this thread has not done yet, or for threads that are blocked",
                reg.outstanding(),
                reg.max_jobs,
                self.limit,
                doing.describe()
            );
        }
    }
}

/// Why `JobSystem::cancel` cancelled a job (its dependents report it too).
/// The `JobDesc` name of the failing job in `slot`, for its failure
/// record; read only when a failure is recorded (the caller holds a pin or
/// claim, so the meta is this job's). Out of line: the success path never
/// calls it.
#[cold]
#[inline(never)]
pub(crate) fn failed_name(slot: &Slot) -> Option<&'static str> {
    crate::desc::name_of(slot.meta().name)
}

pub(crate) const CANCELLED_BY_USER: &str = "cancelled by JobSystem::cancel";

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
