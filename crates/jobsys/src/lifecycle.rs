//! A job's life on the engine side: slot allocation (room.rs, with
//! back-pressure and trimming), submit → (dependencies) → release onto a deque → claim →
//! run (or skip, or cancel) → finish (release dependents, wake waiters) →
//! recycle. Every state change goes through `slot`'s transitions (`slot/mod.rs`); this
//! module decides which one and when.
//!
//! Scheduling is all or nothing: a `schedule*` call that panics leaves no
//! job behind, half published. Whatever may panic comes before the job's
//! slot is taken: the checks of the input (`check_handles`, `pin_target`,
//! `Batch::Fixed(0)`, a declared access's), and back-pressure's stall
//! (room.rs `make_room`, which runs before `Store::alloc` hands out the slot, and
//! for a declared-access job before its resource locks are taken); the
//! closure is then still the caller's, and the unwinding drops it, once.
//! From the slot's allocation to the job's release onto a deque (`submit`;
//! `submit_held`, then `release_hold`) nothing unwinds: edge blocks skip
//! back-pressure (`alloc_edge_block`: their job was admitted when its own
//! slot was allocated, and it is published already; a page one needs is
//! set aside, so the thread's next job still meets it), profiler hooks abort
//! the process rather than unwind (`trace/hooks.rs`), a closure dropped on
//! the way (a job pinned to a thread that is gone) is dropped under
//! `catch_unwind` (running.rs `drop_as_job`), and running out of memory aborts.

use crate::cancel::CANCELLED_BY_USER;
use crate::context::NORMAL;
use crate::context::{bump, bump_by};
use crate::error::Failure;
use crate::failures::{Outcome, Recorded};
use crate::handle::JobHandle;
use crate::handoff::{Hand, Next};
use crate::job::Entry;
use crate::registry::Registry;
use crate::registry::ThisThread;
use crate::running::{drop_as_job, failed_name, CurrentJob};
use crate::slot::{Edge, Ending, Slot, Snapshot, Unpinned, EDGES_PER_BLOCK, TRACED};

use crate::sync::fence;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The name a job is reported by: its `JobDesc` name, else its closure's
/// type name. Caller holds a pin or claim.
#[allow(dead_code)] // used by the tracer hooks
pub(crate) fn job_name(slot: &Slot) -> &'static str {
    crate::desc::name_of(slot.meta().name).unwrap_or_else(|| (slot.vtable().type_name)())
}

impl ThisThread<'_> {
    // ---- slots ------------------------------------------------------------

    /// Return a slot that its `finish`/`unpin` just freed (with its edge
    /// blocks) to its owner's free lists; a retired one is kept out.
    #[inline]
    pub(crate) fn recycle(self, slot: &Slot) {
        // SAFETY: the freeing CAS made this thread the slot's only user.
        let block = unsafe { slot.reset_for_reuse() };
        // The common case: no edge blocks, a slot of this thread's own
        // store, generations left.
        if block.is_none() && slot.owner() == self.ctx.index && !slot.retired() {
            // SAFETY: freed by this thread (above), and the caller's
            // context owns the store (same index).
            unsafe { self.ctx.store.push_free(slot, true) };
            return;
        }
        self.recycle_rest(slot, block);
    }

    /// `recycle` past its common case: edge blocks, another thread's slot,
    /// or a retired one.
    #[inline(never)]
    fn recycle_rest(self, slot: &Slot, mut block: Option<&Slot>) {
        while let Some(b) = block {
            // SAFETY: `b` is an edge block of the job just freed.
            block = unsafe { b.free_edge_block() };
            if !b.retired() {
                self.push_free(b);
            }
        }
        // A slot whose generation ran out is never reused (`RETIRED_GEN`).
        if !slot.retired() {
            self.push_free(slot);
        }
    }

    #[inline]
    fn push_free(self, slot: &Slot) {
        let owner = self.reg.context(slot.owner() as usize);
        // SAFETY: the slot was freed by this thread; `mine` is true only when
        // the caller's context owns the store.
        unsafe { owner.store.push_free(slot, owner.index == self.ctx.index) };
    }

    #[inline]
    pub(crate) fn unpin(self, slot: &Slot) {
        if let Unpinned::Freed = slot.unpin() {
            self.recycle(slot);
        }
    }

    // ---- submitting -------------------------------------------------------

    /// Publish a job written into `slot`: queue it now, or register it
    /// with its dependencies. `flags` are extra state bits (e.g. `PFOR`).
    /// Always inlined: with the tracer compiled in, its out-of-line traced
    /// branch otherwise kept it from being inlined into `schedule`, which
    /// W1 single's instruction count shows (`scripts/w1-budget.sh`).
    #[inline(always)]
    pub(crate) fn submit(self, slot: &Slot, gen: u32, deps: &[JobHandle], flags: u64) -> JobHandle {
        if !deps.is_empty() {
            return self.submit_after(slot, gen, deps, flags);
        }
        // The one tracer check of this job: a flag test here, the rest out
        // of line (`submit_traced`), so that the untraced path keeps its
        // arguments where they are.
        if crate::trace::flag_on() {
            return self.submit_traced(slot, gen, flags);
        }
        self.submit_runnable(slot, gen, flags)
    }

    /// `submit` of a job with no dependencies while the tracer's flag is
    /// on: the ready is stamped before the job can be seen (published,
    /// then pushed), and the check's outcome is kept in its state
    /// (`TRACED`) for the wait that may run it inline.
    #[cold]
    #[inline(never)]
    fn submit_traced(self, slot: &Slot, gen: u32, flags: u64) -> JobHandle {
        let traced = crate::trace::job_ready_flag(
            self.reg.site(self.ctx),
            slot as *const Slot as usize,
            gen,
        );
        let flags = flags | if traced { TRACED } else { 0 };
        self.submit_runnable(slot, gen, flags)
    }

    /// Publish a job with no dependencies as runnable and queue it.
    #[inline(always)]
    fn submit_runnable(self, slot: &Slot, gen: u32, flags: u64) -> JobHandle {
        bump(&self.ctx.counters.scheduled);
        let handle = JobHandle {
            slot: NonNull::from(slot),
            gen,
            system: self.reg.id(),
        };
        slot.publish_runnable(gen, flags);
        if let Some(target) = slot.meta().pinned_to() {
            let e = Entry {
                slot: handle.slot,
                gen,
            };
            self.push_pinned(e, target);
            return handle;
        }
        self.ctx.push(
            Entry {
                slot: handle.slot,
                gen,
            },
            slot.prio(),
        );
        self.notify_work();
        handle
    }

    /// `submit` of a job with dependencies.
    #[inline(never)]
    fn submit_after(self, slot: &Slot, gen: u32, deps: &[JobHandle], flags: u64) -> JobHandle {
        let handle = self.submit_held(slot, gen, deps, flags);
        self.release_hold(handle);
        handle
    }

    /// Register a job with its dependencies, keeping one pending count for
    /// the caller: the job cannot become runnable, nor be cancelled for a
    /// pinned thread that is gone (which drops its closure), until
    /// `release_hold`. `submit` releases at once; access scheduling
    /// releases after its resource locks, so that no closure is dropped
    /// while they are held (`access/mod.rs`).
    pub(crate) fn submit_held(
        self,
        slot: &Slot,
        gen: u32,
        deps: &[JobHandle],
        flags: u64,
    ) -> JobHandle {
        bump(&self.ctx.counters.scheduled);
        // TRACED if the tracer is on now: a wait on it then takes the
        // traced path, else the fast one (as `submit` decides for a job
        // without dependencies; its ready is stamped when it is released,
        // `release_hold` and `make_runnable`, if the tracer is on then).
        let traced = if crate::trace::flag_on() { TRACED } else { 0 };
        slot.publish_waiting(gen, flags | traced, deps.len());
        self.attach_deps(slot, deps);
        JobHandle {
            slot: NonNull::from(slot),
            gen,
            system: self.reg.id(),
        }
    }

    /// Drop the count `submit_held` kept: the job is queued now if its
    /// dependencies have finished.
    pub(crate) fn release_hold(self, h: JobHandle) {
        let slot = h.slot();
        if slot.dep_done() {
            crate::trace::job_ready(self.reg.site(self.ctx), Registry::job_id(slot, h.gen));
            self.make_runnable(slot);
        }
    }

    /// `submit` for a batched job (`JobBuilder::batched`; `flags` as
    /// `submit`'s): a job runnable at once is pushed without waking anyone
    /// and counted in this thread's batch.
    pub(crate) fn submit_batched(
        self,
        slot: &Slot,
        gen: u32,
        deps: &[JobHandle],
        flags: u64,
    ) -> JobHandle {
        if !deps.is_empty() {
            return self.submit(slot, gen, deps, flags);
        }
        bump(&self.ctx.counters.scheduled);
        // TRACED: no tracer check here, so a wait on it makes its own.
        slot.publish_runnable(gen, TRACED | flags);
        let handle = JobHandle {
            slot: NonNull::from(slot),
            gen,
            system: self.reg.id(),
        };
        self.ctx.push(
            Entry {
                slot: handle.slot,
                gen,
            },
            slot.prio(),
        );
        self.ctx.batch_add();
        handle
    }

    /// Publish `self.ctx`'s batch (see `JobSystem::flush`).
    pub(crate) fn flush(self) -> usize {
        let n = self.ctx.batch_take();
        if n == 0 || self.reg.num_workers() == 0 {
            return 0;
        }
        // SeqCst fence: the pushes before the sleepers' state, as in
        // `Sleep::notify_work`.
        fence(Ordering::SeqCst);
        let uncovered = n.saturating_sub(self.reg.sleep().searching() as usize);
        // Each wake is recorded before the store that ends that worker's
        // park (see `Sleep::notify_work`), so its arrow never points back.
        let traced = |w| crate::trace::wake_issued(self.reg.site(self.ctx), Some(w));
        let woken = self.reg.sleep().wake_many(
            uncovered.min(self.reg.num_workers()),
            self.ctx.index,
            traced,
        );
        let woken = if woken.is_empty() && uncovered > 0 {
            // Nobody asleep to wake, or a race with parking workers: the
            // usual single notify keeps the no-lost-wake-up guarantee.
            match self.reg.sleep().notify_work(self.ctx.index, traced) {
                Some(_) => 1,
                None => 0,
            }
        } else {
            woken.len()
        };
        bump_by(&self.ctx.counters.wakes, woken as u64);
        woken
    }

    /// Record `slot`'s unfinished dependencies in edge blocks and link each
    /// edge into its dependency's dependents list; a dependency that already
    /// finished (or whose slot moved on) counts as done at once, passing on
    /// its failure, and gets no edge: an edge serves only a dependency that
    /// has yet to walk its dependents (and the walks of `for_each_dep`,
    /// which skip finished jobs), so a chain whose links finish before the
    /// next is scheduled allocates no edge block at all.
    fn attach_deps(self, slot: &Slot, deps: &[JobHandle]) {
        let mut prev: Option<&Slot> = None;
        let mut block: Option<&Slot> = None;
        // The first edge in the job's own payload if its closure leaves room
        // and that saves a block (an odd count; `slot/edges.rs`).
        let has_own = deps.len() % EDGES_PER_BLOCK == 1 && slot.vtable().edge_room;
        let mut own_room = has_own;
        let mut edges = 0;
        for d in deps {
            let dep = d.slot();
            // A look without a pin: finished for `d.gen` (or moved on) is
            // for ever, so no edge is needed. Unfinished now: the edge is
            // written before the pin below, as the block's allocation may
            // wait for room (running jobs), which must not happen while
            // this thread holds a pin that keeps a finished slot from
            // being freed.
            let edge = if dep.state().is_complete_for(d.gen) {
                None
            } else if own_room {
                own_room = false;
                // SAFETY: `slot`'s publisher, no edge yet, `edge_room`.
                Some(unsafe { slot.write_own_edge(d.slot, d.gen) })
            } else {
                if edges % EDGES_PER_BLOCK == 0 {
                    let (b, bgen) = crate::room::alloc_edge_block(self.reg, self.ctx);
                    b.become_edge_block(bgen);
                    prev = block;
                    block = Some(b);
                }
                let b = block.expect("an edge block for every EDGES_PER_BLOCK edges");
                let own = has_own && !own_room;
                // SAFETY: we are `slot`'s publisher inside `submit`, `b` is
                // this edge's block, `own` tells if the own edge was written.
                let e = unsafe { slot.write_edge(edges, own, prev, b, d.slot, d.gen) };
                edges += 1;
                Some(e)
            };
            let Some(pinned) = dep.pin_for_attach(d.gen) else {
                // Recycled: finished long ago, maybe failed; a dependency
                // whose outcome is no longer known counts as failed (a job
                // after a failed one never runs).
                let failure = match self.reg.failures().lookup(d.slot.as_ptr() as usize, d.gen) {
                    Outcome::Succeeded => None,
                    Outcome::Failed(rec) => Some(rec.failure),
                    Outcome::Unknown => Some(Arc::new(Failure::dependency_unknown())),
                };
                if let Some(f) = failure.filter(|_| !crate::slot::is_event(slot)) {
                    slot.set_failure(f);
                }
                let last = slot.dep_done();
                debug_assert!(!last, "submit holds one count until it is done");
                continue;
            };
            // SAFETY: `e` is fresh from `write_edge`; we hold the attach pin.
            let linked = edge.is_some_and(|e| unsafe { dep.push_dependent(pinned, e) });
            if !linked {
                // Finished: its dependents were walked without us.
                if let Some(f) = dep.failure().filter(|_| !crate::slot::is_event(slot)) {
                    slot.set_failure(f);
                }
                let last = slot.dep_done();
                debug_assert!(!last, "submit holds one count until it is done");
            }
            self.unpin(dep);
        }
    }

    /// The last dependency of `slot` finished: queue it on this thread's
    /// deque. If a waiter needs it and this thread will not run it soon,
    /// wake parked waiters so one can take it.
    pub(crate) fn make_runnable(self, slot: &Slot) -> bool {
        self.make_runnable_to(slot, None)
    }

    /// `make_runnable`, or, with a `hand` (`finish_as::<true>`), keep a plain
    /// Normal job there instead of queueing it (`handoff.rs`).
    fn make_runnable_to(self, slot: &Slot, hand: Hand<'_>) -> bool {
        // Read before the release below: once RUNNABLE, another thread may
        // claim, run and free the job, and the slot may be reused (TSan
        // found the read after it).
        let meta = slot.meta();
        let prio = meta.priority as usize;
        let pinned = meta.pinned_to();
        if let Some(target) = pinned {
            if !crate::pinned::pinned_open(self.reg, target) {
                // Its thread is gone: cancel it while it still waits (no
                // recursion into `finish`), then queue it like any other
                // job; a cancelled job may finish on any thread.
                let h = JobHandle {
                    slot: NonNull::from(slot),
                    gen: slot.gen_now(),
                    system: self.reg.id(),
                };
                crate::cancel::cancel_with(
                    self.reg,
                    self.ctx,
                    h,
                    crate::pinned::PINNED_GONE,
                    false,
                );
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
                self.push_pinned(e, target);
                return waited;
            }
            // Cancelled: queued below like any job, never on `target`'s
            // pinned queue (a `release` that left it to the canceller
            // returned above, so this runs once per job).
            crate::pinned::resolve_pinned(self.reg, target);
        } else if let Some(kept) = hand {
            if prio == NORMAL && !s.is_cancelled() && !s.is_pfor() {
                self.hand_on(kept, e, waited);
                return waited;
            }
        }
        self.queue_released(e, prio, waited);
        waited
    }

    /// Queue a job its last dependency's finish released (`queue_runnable`);
    /// if a waiter needs it and this thread will not run it next, wake the
    /// parked waiters so one can take it. Also the way a job kept in hand
    /// that may not run next is queued (`handoff.rs`).
    #[inline]
    pub(crate) fn queue_released(self, e: Entry, prio: usize, waited: bool) {
        self.queue_runnable(e, prio, waited);
        if waited && !self.ctx.is_top_level_worker() {
            self.wake_parked_waiters();
        }
    }

    /// Put a runnable job (or the rest of a started loop) where threads
    /// look for it, and tell idle workers. A job some waiter needs
    /// (`waited`) also goes on the `needed` deque, which waiters search.
    #[inline]
    pub(crate) fn queue_runnable(self, e: Entry, prio: usize, waited: bool) {
        if waited && self.reg.inheritance() {
            // Only on the needed deque, which every thread searches right
            // after its own High work: one entry, no stale twin to pop later.
            self.ctx.push_needed(e, crate::wait::still_queued);
        } else {
            self.ctx.push(e, prio);
            if waited {
                self.ctx.push_needed(e, crate::wait::still_queued);
            }
        }
        self.notify_work();
    }

    // ---- running ----------------------------------------------------------

    /// Run what `e` names if it is still runnable. Returns whether a job (or
    /// some pieces of one) ran. `on_claim` runs after the claim, before the
    /// job: workers use it to stop searching and wake the next worker.
    #[inline]
    pub(crate) fn run_entry(self, e: Entry, on_claim: &mut dyn FnMut()) -> bool {
        if e.is_stack() {
            // Stack jobs are taken from deques exactly once: no claim.
            on_claim();
            let id = crate::trace::JobId::new(e.slot.as_ptr() as usize, e.gen);
            crate::trace::job_begin(self.reg.site(self.ctx), id, "join");
            // SAFETY: the joiner keeps the job alive until its latch is set,
            // which `run_stack_job` does last.
            unsafe { crate::join::run_stack_job(e.stack_header(), self.ctx.index) };
            crate::trace::job_end(self.reg.site(self.ctx), id, "join");
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
            if !self.may_run_pinned_to(target) && !s.is_cancelled() {
                return false;
            }
        }
        if s.is_pfor() {
            return self.run_pieces(slot, e.gen, on_claim);
        }
        let Some(claimed) = slot.claim(e.gen) else {
            return false;
        };
        on_claim();
        self.run_claimed(slot, e.gen, claimed);
        true
    }

    /// Run a claimed single job and finish it, then the successor its
    /// finish kept in hand, and so on (`handoff.rs`). `claimed` is the
    /// state `Slot::claim` returned. One copy, called from every site but
    /// the wait's fast path, which inlines `run_claimed_as::<false, false>`.
    #[inline(never)]
    pub(crate) fn run_claimed(self, slot: &Slot, gen: u32, claimed: Snapshot) {
        let mut next = self.run_claimed_as::<true, true>(slot, gen, claimed);
        let mut handed = 0;
        while let Some(n) = next.take() {
            let Some((e, claimed)) = self.claim_next(n, &mut handed) else {
                return;
            };
            next = self.run_claimed_as::<true, true>(e.slot(), e.gen, claimed);
        }
    }

    /// `run_claimed` of one job. `TRACE = true` checks the tracer at the
    /// job's begin, as every site does. `TRACE = false` has no event site
    /// at all, for `wait_with`'s fast path on a job published with the
    /// tracer off (no `TRACED` flag: `submit` checked, one check per job
    /// instead of one per event, trace/README.md "Cost"). `HAND`: a
    /// successful job's finish may keep one released dependent, returned
    /// for the caller to run or queue at once (`handoff.rs`); without it,
    /// `None`.
    #[inline(always)]
    pub(crate) fn run_claimed_as<const TRACE: bool, const HAND: bool>(
        self,
        slot: &Slot,
        gen: u32,
        claimed: Snapshot,
    ) -> Option<Next> {
        let vt = slot.vtable();
        // CANCELLED is only set while WAITING, so the claim fixed it.
        if claimed.is_cancelled() {
            // The canceller dropped the closure (`cancel_unstarted`).
            self.finish(slot, gen, Ending::FAILED);
            return None;
        }
        // Poisoning happens before the job became runnable (pending hit 0).
        let poisoned = slot.has_failure();
        if poisoned {
            // Skipped: the closure is dropped as part of the job (on the
            // `running` stack, so a `Drop` that waits on the job's own
            // handle gets WaitOnSelf instead of parking forever).
            // SAFETY: we hold the claim; the payload is initialised and
            // dropped exactly once, here. (The job fails either way.)
            let _ = unsafe { drop_as_job(self.ctx, slot, gen) };
            self.finish(slot, gen, Ending::POISONED);
            return None;
        }
        let traced = if TRACE {
            crate::trace::job_begin_slot(
                self.reg.site(self.ctx),
                slot as *const Slot as usize,
                gen,
                || job_name(slot),
            )
        } else {
            None
        };
        self.ctx.running_push(slot, gen);
        let outer = CurrentJob::enter(slot, gen);
        // SAFETY: we hold the claim; the payload is initialised and consumed
        // exactly once, here.
        let r = catch_unwind(AssertUnwindSafe(|| unsafe { (vt.run)(slot.payload_ptr()) }));
        drop(outer);
        self.ctx.running_pop(slot, gen);
        // The end is recorded before `finish`: whoever sees the job finished
        // (a waiter that then stops the capture) also sees its end event.
        if let Some(name) = traced {
            crate::trace::job_end(self.reg.site(self.ctx), Registry::job_id(slot, gen), name);
        }
        match r {
            Ok(()) => self.finish_as::<HAND>(slot, gen, Ending::SUCCEEDED),
            Err(p) => {
                slot.set_failure(Arc::new(Failure::from_panic(p, failed_name(slot))));
                self.finish(slot, gen, Ending::FAILED);
                None
            }
        }
    }

    /// The job in `slot` is done (ran, failed or was skipped); the caller
    /// holds one pin (its claim), which this drops.
    #[inline]
    pub(crate) fn finish(self, slot: &Slot, gen: u32, end: Ending) {
        let kept = self.finish_as::<false>(slot, gen, end);
        debug_assert!(kept.is_none());
    }

    /// `finish`; with `HAND`, one released dependent may be kept and
    /// returned instead of queued: the caller runs or queues it before it
    /// does anything else (`handoff.rs`).
    #[inline(always)]
    fn finish_as<const HAND: bool>(self, slot: &Slot, gen: u32, end: Ending) -> Option<Next> {
        // A job that succeeded with nobody waiting on it and nothing
        // depending on it (W1 single, most leaves of a frame): one CAS and
        // the slot back on a free list, without the walk below.
        if end == Ending::SUCCEEDED && slot.finish_alone() {
            bump(&self.ctx.counters.finished);
            self.recycle(slot);
            return None;
        }
        self.finish_shared(slot, gen, end, HAND)
    }

    /// `finish` of a job that failed, or that others pin or depend on.
    #[inline(never)]
    fn finish_shared(self, slot: &Slot, gen: u32, mut end: Ending, hand: bool) -> Option<Next> {
        if end.failed() {
            self.log_failure(slot, gen, end);
        }
        let (prev, claim_dropped, un) = loop {
            match slot.finish(end.bits()) {
                Some(r) => break r,
                None => {
                    // Cancelled while it ran (`STOP`): the canceller records
                    // the cause too; the first one recorded stays.
                    slot.set_failure(Arc::new(Failure::cancelled(
                        CANCELLED_BY_USER,
                        failed_name(slot),
                    )));
                    end = end.and_failed();
                    self.log_failure(slot, gen, end);
                }
            }
        };
        debug_assert_eq!(prev.generation(), gen);
        bump(&self.ctx.counters.finished);
        if claim_dropped {
            if let Unpinned::Freed = un {
                self.recycle(slot);
            }
            return None;
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
            self.reg.waiters().wake_target(slot, |w| {
                crate::trace::wake_issued(self.reg.site(self.ctx), Some(w))
            });
        }
        let mut e = slot.close_dependents();
        let failure = if end.failed() { slot.failure() } else { None };
        // A top-level worker runs the last job it pushes next; a needed
        // (WAITED) job released earlier in this loop is buried under it, so
        // parked waiters must be told (they could be the only ones able to
        // run it while the top job blocks).
        let mut top_is_waited = false;
        let mut waited_buried = false;
        // Shuffled runs take every job from a deque, in the shuffled order.
        let mut kept = None;
        let hand = hand && self.reg.shuffle().is_none();
        while !e.is_null() {
            // SAFETY: an edge of the list just closed, read before our
            // `dep_done` below lets its dependent run and free it.
            let (next, dependent) = unsafe { Edge::take(e) };
            if let Some(f) = &failure {
                // An event does not pass its waits' failures on (a guard's,
                // `access/now.rs`; an end event, `held::end_of`).
                if !crate::slot::is_event(dependent) {
                    dependent.set_failure(f.clone());
                }
            }
            if dependent.dep_done() {
                crate::trace::job_released(self.reg.site(self.ctx), || {
                    Registry::job_id(dependent, dependent.gen_now())
                });
                waited_buried |= top_is_waited;
                top_is_waited = self.make_runnable_to(dependent, hand.then_some(&mut kept));
            }
            e = next;
        }
        if waited_buried && self.ctx.is_top_level_worker() {
            self.wake_parked_waiters();
        }
        self.unpin(slot);
        kept
    }

    /// Record a failed job's failure in the failure log before `finish`'s
    /// CAS can free its slot: a wait or an attach that sees the next
    /// generation then finds it there.
    #[cold]
    fn log_failure(self, slot: &Slot, gen: u32, end: Ending) {
        if let Some(failure) = slot.failure() {
            let rec = Recorded {
                failure,
                ending: end,
            };
            self.reg
                .failures()
                .record(slot as *const Slot as usize, gen, rec);
        }
    }

    /// Wake every thread parked in `complete` (a needed job became runnable).
    pub(crate) fn wake_parked_waiters(self) {
        // Recorded before the store the waiter's park loop sees.
        self.reg
            .waiters()
            .wake_all_parked(|w| crate::trace::wake_issued(self.reg.site(self.ctx), Some(w)));
    }
}
