//! The shared state of one job system and the paths every job takes:
//! submit → (wait for dependencies) → release onto a deque → claim → run →
//! finish (release dependents, wake waiters) → recycle the slot.

use crate::builder::IdlePolicy;
use crate::context::{bump, bump_by, Context, HIGH, PRIORITIES};
use crate::deque::Entry;
use crate::desc::JobDesc;
use crate::error::Failure;
use crate::failures::{FailureLog, Recorded};
use crate::handle::JobHandle;
use crate::sleep::{AdaptiveSpin, Backoff, Futex, Park, Sleep};
use crate::store::*;
use crate::wait::Waiters;
use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

/// The panic of a thread that uses a job system from a thread-local
/// destructor that runs after both of jobsys's claim lists were destroyed.
const TLS_GONE: &str =
    "jobsys: a JobSystem was used from a thread-local destructor that runs after \
                        jobsys's own thread-locals were destroyed (see docs/design-notes.md, \
                        \"Thread-local teardown\")";

/// How many threads other than the workers may use one system at once.
pub(crate) const MAX_EXTERNAL: usize = 256;

static NEXT_ID: AtomicU32 = AtomicU32::new(1);

/// Counters of a job system (`JobSystem::stats`, summed over all threads)
/// or of one worker (`JobSystem::worker_stats`). `a - b` gives the counts
/// between two snapshots, e.g. per frame (`JobSystem::take_stats` does it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Worker threads (of the system; 1 in a per-worker view).
    pub workers: usize,
    /// Jobs scheduled (each `schedule*`, `parallel_for*` and `combine` is one).
    pub jobs_scheduled: u64,
    /// Jobs finished (run, or failed because a dependency failed).
    pub jobs_finished: u64,
    /// Sleeping workers woken (one futex wake each), by whoever woke them.
    pub wakes: u64,
    /// Woken workers that found nothing and slept again.
    pub futile_wakes: u64,
    /// Times a worker went to sleep.
    pub sleeps: u64,
    /// Time workers spent spinning idle.
    pub spin_time: Duration,
    /// Entries taken from another thread's deque.
    pub steals: u64,
    /// Steal sweeps over all other deques that found nothing.
    pub failed_steals: u64,
    /// Failures dropped from the failure log (`Config::failure_history`):
    /// waits on those handles read success. A counter; system-wide only.
    pub failures_forgotten: u64,
    /// Job slots reserved now (128 bytes each; a gauge, not a counter:
    /// `a - b` keeps `a`'s value). System-wide only.
    pub job_slots: u64,
}

impl std::ops::Sub for Stats {
    type Output = Stats;
    fn sub(self, b: Stats) -> Stats {
        Stats {
            workers: self.workers,
            jobs_scheduled: self.jobs_scheduled - b.jobs_scheduled,
            jobs_finished: self.jobs_finished - b.jobs_finished,
            wakes: self.wakes - b.wakes,
            futile_wakes: self.futile_wakes - b.futile_wakes,
            sleeps: self.sleeps - b.sleeps,
            spin_time: self.spin_time.saturating_sub(b.spin_time),
            steals: self.steals - b.steals,
            failed_steals: self.failed_steals - b.failed_steals,
            failures_forgotten: self.failures_forgotten - b.failures_forgotten,
            job_slots: self.job_slots,
        }
    }
}

impl Stats {
    fn add_context(&mut self, c: &crate::context::Counters) {
        let l = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Acquire);
        self.jobs_scheduled += l(&c.scheduled);
        self.jobs_finished += l(&c.finished);
        self.wakes += l(&c.wakes);
        self.futile_wakes += l(&c.futile_wakes);
        self.sleeps += l(&c.sleeps);
        self.spin_time += Duration::from_nanos(l(&c.spin_ns));
        self.steals += l(&c.steals);
        self.failed_steals += l(&c.failed_steals);
    }
}

pub(crate) struct Registry {
    pub id: u32,
    self_weak: Weak<Registry>,
    contexts: Box<[OnceLock<Box<Context>>]>,
    /// Contexts initialised so far (a prefix of `contexts`).
    num_contexts: AtomicUsize,
    pub num_workers: usize,
    pub sleep: Sleep,
    pub waiters: Waiters,
    /// Failures of jobs whose slots were reused (`failures.rs`).
    pub failures: FailureLog,
    /// Unfinished jobs above which a thread that needs a new page of slots
    /// helps run jobs first (`make_room`).
    pub max_jobs: usize,
    /// Pages of slots a thread keeps when idle (`Config::retained_slots`).
    pub keep_pages: usize,
    pages: Mutex<Vec<Page>>,
    claim_lock: Mutex<()>,
    pub terminating: AtomicBool,
    /// Bumped (and woken) by workers that see the system drained at shutdown.
    pub drained: Futex,
    pub policy: IdlePolicy,
    pub wait_spin: Duration,
    /// The tracer's state (on/off, one event buffer per context).
    #[cfg(feature = "trace")]
    pub(crate) trace: crate::trace::TraceState,
    /// Workers take jobs that waiters need first (`Config`).
    pub inheritance: bool,
    /// More threads (workers + the caller) than CPUs this process may use:
    /// idle spins yield the CPU instead of holding it.
    pub oversubscribed: bool,
    /// Open `HotZone` guards; while non-zero, workers spin instead of sleeping.
    pub hot_zones: crossbeam_utils::CachePadded<AtomicU32>,
}

/// How long a never-sleeping worker spins between full searches.
const NEVER_SLEEP_ROUND: Duration = Duration::from_micros(50);
/// How long the whipping boy spins before it tries (and, as the last
/// searcher, refuses) to park; then it searches again.
const WHIPPING_BOY_ROUND: Duration = Duration::from_micros(30);

thread_local! {
    /// Cache of the last (registry id, context) this thread used.
    static CURRENT: Cell<(u32, *const Context)> = const { Cell::new((0, ptr::null())) };
    /// Every external context this thread holds, released at thread exit.
    static CLAIMS: RefCell<Vec<Claim>> = const { RefCell::new(Vec::new()) };
    /// Contexts claimed after `CLAIMS` was destroyed, by another
    /// thread-local's destructor that uses a job system: this one is first
    /// touched then, so its own destructor is registered (and runs) after.
    static LATE_CLAIMS: RefCell<Vec<Claim>> = const { RefCell::new(Vec::new()) };
}

/// Run `f` on this thread's claim list: `CLAIMS`, or `LATE_CLAIMS` once
/// `CLAIMS` is destroyed (thread-local teardown). `None` when both are.
fn with_claims<R>(f: impl FnOnce(&RefCell<Vec<Claim>>) -> R) -> Option<R> {
    let mut f = Some(f);
    let first = CLAIMS.try_with(|c| (f.take().expect("called once"))(c));
    match first {
        Ok(r) => Some(r),
        Err(_) => LATE_CLAIMS
            .try_with(|c| (f.take().expect("called once"))(c))
            .ok(),
    }
}

struct Claim {
    id: u32,
    registry: Weak<Registry>,
    ctx: *const Context,
}

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(reg) = self.registry.upgrade() {
            // SAFETY: the registry is alive, so its contexts are too.
            let ctx = unsafe { &*self.ctx };
            // Jobs this thread batched but never flushed must not wait for
            // a wake that nobody will issue.
            reg.flush(ctx);
            // This thread no longer owns the context: forget it in the
            // cache too, or a later use (another thread-local's destructor)
            // would keep using it while another thread claims it.
            let _ = CURRENT.try_with(|c| {
                if c.get() == (self.id, self.ctx) {
                    c.set((0, ptr::null()));
                }
            });
            // Release: the next claimer (Acquire under claim_lock) sees all
            // our owner-only writes (free list, deque).
            ctx.claimed.store(false, Ordering::Release);
            drop(reg);
        }
    }
}

impl Registry {
    pub(crate) fn new(
        num_workers: usize,
        policy: IdlePolicy,
        wait_spin: Duration,
        inheritance: bool,
        failure_history: usize,
        max_jobs: usize,
        keep_pages: usize,
    ) -> Arc<Registry> {
        let cap = num_workers + MAX_EXTERNAL;
        Arc::new_cyclic(|weak| {
            let contexts: Box<[OnceLock<Box<Context>>]> =
                (0..cap).map(|_| OnceLock::new()).collect();
            for (i, c) in contexts.iter().take(num_workers).enumerate() {
                let ctx = Context::new(i as u32, true);
                ctx.claimed.store(true, Ordering::Relaxed);
                let _ = c.set(Box::new(ctx));
            }
            Registry {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                self_weak: weak.clone(),
                contexts,
                num_contexts: AtomicUsize::new(num_workers),
                num_workers,
                sleep: Sleep::new(num_workers),
                waiters: Waiters::new(),
                failures: FailureLog::new(failure_history),
                max_jobs,
                keep_pages,
                pages: Mutex::new(Vec::new()),
                claim_lock: Mutex::new(()),
                terminating: AtomicBool::new(false),
                drained: Futex::new(0),
                policy,
                wait_spin,
                #[cfg(feature = "trace")]
                trace: crate::trace::TraceState::new(cap),
                inheritance,
                oversubscribed: num_workers + 1
                    > std::thread::available_parallelism().map_or(1, |n| n.get()),
                hot_zones: crossbeam_utils::CachePadded::new(AtomicU32::new(0)),
            }
        })
    }

    #[inline]
    pub(crate) fn context(&self, i: usize) -> &Context {
        self.contexts[i]
            .get()
            .expect("context index below num_contexts is initialised")
    }

    #[inline]
    pub(crate) fn num_contexts(&self) -> usize {
        self.num_contexts.load(Ordering::Acquire)
    }

    // ---- which context is this thread? ----------------------------------

    /// The calling thread's context in this registry, claiming one on first use.
    #[inline]
    pub(crate) fn current(&self) -> &Context {
        let (id, ctx) = CURRENT.with(|c| c.get());
        if id == self.id {
            // SAFETY: ids are unique per registry ever created, and a
            // registry's contexts live as long as it does; `self` is alive.
            return unsafe { &*ctx };
        }
        self.current_slow()
    }

    #[cold]
    fn current_slow(&self) -> &Context {
        let found = with_claims(|claims| {
            claims
                .borrow()
                .iter()
                .find(|c| c.id == self.id)
                .map(|c| c.ctx)
        })
        .unwrap_or_else(|| panic!("{TLS_GONE}"));
        let ctx = match found {
            Some(ctx) => ctx,
            None => {
                let ctx = self.claim_external();
                let claim = Claim {
                    id: self.id,
                    registry: self.self_weak.clone(),
                    ctx,
                };
                let kept = with_claims(move |claims| {
                    let mut claims = claims.borrow_mut();
                    claims.retain(|c| c.registry.strong_count() > 0);
                    claims.push(claim);
                });
                if kept.is_none() {
                    // The claim was dropped (released) with the closure.
                    panic!("{TLS_GONE}");
                }
                ctx
            }
        };
        CURRENT.with(|c| c.set((self.id, ctx)));
        // SAFETY: `ctx` points into this live registry (see `current`).
        unsafe { &*ctx }
    }

    fn claim_external(&self) -> *const Context {
        let _g = self.claim_lock.lock().unwrap_or_else(|e| e.into_inner());
        let n = self.num_contexts();
        for i in self.num_workers..n {
            let c = self.context(i);
            if !c.claimed.load(Ordering::Acquire) {
                c.claimed.store(true, Ordering::Relaxed);
                return c;
            }
        }
        assert!(
            n < self.contexts.len(),
            "jobsys: more than {MAX_EXTERNAL} threads other than the workers use this JobSystem at once"
        );
        let ctx = Context::new(n as u32, false);
        ctx.claimed.store(true, Ordering::Relaxed);
        let _ = self.contexts[n].set(Box::new(ctx));
        self.num_contexts.store(n + 1, Ordering::Release);
        self.context(n)
    }

    /// Make `ctx` this thread's cached context (workers at start).
    pub(crate) fn set_current(&self, ctx: &Context) {
        CURRENT.with(|c| c.set((self.id, ctx as *const Context)));
    }

    // ---- slots ------------------------------------------------------------

    #[inline]
    pub(crate) fn alloc<'a>(&'a self, ctx: &Context) -> (&'a Slot, u32) {
        // SAFETY: `ctx` is the calling thread's claimed context.
        if unsafe { ctx.store.needs_page() } {
            self.make_room(ctx);
        }
        // SAFETY: `ctx` is the calling thread's claimed context.
        let slot = unsafe {
            ctx.store.alloc(|page| {
                let slots: *const [Slot] = page.slots();
                self.pages
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(page);
                // SAFETY: the slots are owned by the page in `self.pages`
                // (moving the `Page` neither moves nor retags them) until the
                // registry drops; callers never outlive the registry.
                &*slots
            })
        };
        // SAFETY: the slot lives in a page owned by `self`.
        let slot: &'a Slot = unsafe { slot.as_ref() };
        let gen = gen_of(slot.state.load(Ordering::Relaxed));
        (slot, gen)
    }

    /// Back-pressure (`Config::max_jobs`): this thread needs a new page of
    /// slots; while `max_jobs` jobs are unfinished it runs queued jobs
    /// instead, so job storage stays bounded by about `max_jobs` slots per
    /// thread. Called before `Store::alloc`, never inside it (a job run
    /// here may schedule, i.e. allocate, itself).
    ///
    /// # Panics
    /// If no job finishes anywhere for `STALL` while the system is full:
    /// every unfinished job waits for something this thread has not done
    /// yet, so waiting longer would hang.
    #[cold]
    fn make_room(&self, ctx: &Context) {
        const STALL: Duration = Duration::from_secs(10);
        if self.outstanding() < self.max_jobs as u64 {
            return;
        }
        let finished = || -> u64 {
            (0..self.num_contexts())
                .map(|i| self.context(i).counters.finished.load(Ordering::Acquire))
                .sum()
        };
        let mut last = finished();
        let mut since = Instant::now();
        let mut searching = false;
        let mut backoff = self.backoff();
        while self.outstanding() >= self.max_jobs as u64 {
            if self.find_and_run(ctx, &mut searching) {
                continue;
            }
            let now = finished();
            if now != last {
                last = now;
                since = Instant::now();
            } else if since.elapsed() >= STALL {
                panic!(
                    "jobsys: {} jobs are unfinished (Config::max_jobs) and none finished in {:?} \
                     while this thread waited for room to schedule another; they wait for \
                     something this thread has not done yet",
                    self.outstanding(),
                    STALL
                );
            }
            backoff.snooze(backoff.elapsed());
        }
    }

    /// A slot for a job described by `desc` (name and priority recorded).
    #[inline]
    pub(crate) fn alloc_job<'a>(&'a self, ctx: &Context, desc: &JobDesc) -> (&'a Slot, u32) {
        let (slot, gen) = self.alloc(ctx);
        let meta = JobMeta {
            name: desc.name.map_or(0, crate::desc::intern),
            priority: desc.priority as u8,
            _spare: 0,
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
        if ctx.store.active_pages() <= self.keep_pages {
            return 0;
        }
        self.trim_slow(ctx)
    }

    #[cold]
    fn trim_slow(&self, ctx: &Context) -> usize {
        // SAFETY: `ctx` is the calling thread's claimed context.
        unsafe { ctx.store.trim(self.keep_pages) }
    }

    /// Return a slot that `update_and_maybe_free` just freed.
    pub(crate) fn recycle(&self, ctx: &Context, slot: &Slot) {
        // Plain load first: the common case (no failure) needs no RMW.
        let f = slot.failure.load(Ordering::Acquire);
        if !f.is_null() {
            slot.failure.store(ptr::null_mut(), Ordering::Relaxed);
            // SAFETY: the slot's own reference, from `Arc::into_raw`.
            unsafe { drop(Arc::from_raw(f)) };
        }
        // SAFETY: the freeing CAS made this thread the slot's only user.
        let mut block = unsafe { std::mem::replace(&mut *slot.edges.get(), ptr::null_mut()) };
        slot.dependents.store(ptr::null_mut(), Ordering::Relaxed);
        while !block.is_null() {
            // SAFETY: edge blocks belong to the freed job and are reachable
            // only through it.
            let b = unsafe { &*block };
            // SAFETY: as above.
            let next = unsafe { std::mem::replace(&mut *b.edges.get(), ptr::null_mut()) };
            let s = next_free_state(b.state.load(Ordering::Relaxed));
            b.state.store(s, Ordering::Relaxed);
            if !is_retired(s) {
                self.push_free(ctx, b);
            }
            block = next;
        }
        // A slot whose generation ran out is never reused (`RETIRED_GEN`).
        if !is_retired(slot.state.load(Ordering::Relaxed)) {
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
        if let Unpinned::Freed = unpin(slot) {
            self.recycle(ctx, slot);
        }
    }

    // ---- submitting -------------------------------------------------------

    /// Check that every handle in `deps` is ours.
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
    pub(crate) fn submit(
        &self,
        ctx: &Context,
        slot: &Slot,
        gen: u32,
        deps: &[JobHandle],
        flags: u64,
    ) -> JobHandle {
        bump(&ctx.counters.scheduled);
        let handle = JobHandle {
            slot: NonNull::from(slot),
            gen,
            system: self.id,
        };
        if deps.is_empty() {
            slot.state
                .store(u64::from(gen) | RUNNABLE | flags, Ordering::Release);
            crate::trace::job_ready(self, ctx, crate::trace::JobId::of_slot(slot, gen));
            ctx.push(
                Entry {
                    slot: handle.slot,
                    gen,
                },
                slot.prio(),
            );
            self.notify_work(ctx);
            return handle;
        }
        slot.pending.store(deps.len() as u32 + 1, Ordering::Relaxed);
        slot.state
            .store(u64::from(gen) | WAITING | flags, Ordering::Release);
        self.attach_deps(ctx, slot, deps);
        if slot.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            crate::trace::job_ready(self, ctx, crate::trace::JobId::of_slot(slot, gen));
            self.make_runnable(ctx, slot);
        }
        handle
    }

    /// `submit` for `schedule_batched`: a job runnable at once is pushed
    /// without waking anyone and counted in this thread's batch.
    pub(crate) fn submit_batched(
        &self,
        ctx: &Context,
        slot: &Slot,
        gen: u32,
        deps: &[JobHandle],
    ) -> JobHandle {
        if !deps.is_empty() {
            return self.submit(ctx, slot, gen, deps, 0);
        }
        bump(&ctx.counters.scheduled);
        slot.state
            .store(u64::from(gen) | RUNNABLE, Ordering::Release);
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
        std::sync::atomic::fence(Ordering::SeqCst);
        let uncovered = n.saturating_sub(self.sleep.searching() as usize);
        let woken = self
            .sleep
            .wake_many(uncovered.min(self.num_workers), ctx.index);
        for &w in &woken {
            crate::trace::wake_issued(self, ctx, Some(w));
        }
        let woken = if woken.is_empty() && uncovered > 0 {
            // Nobody asleep to wake, or a race with parking workers: the
            // usual single notify keeps the no-lost-wake-up guarantee.
            match self.sleep.notify_work(ctx.index) {
                Some(w) => {
                    crate::trace::wake_issued(self, ctx, Some(w));
                    1
                }
                None => 0,
            }
        } else {
            woken.len()
        };
        bump_by(&ctx.counters.wakes, woken as u64);
        woken
    }

    fn attach_deps(&self, ctx: &Context, slot: &Slot, deps: &[JobHandle]) {
        let mut prev_block: *const Slot = ptr::null();
        let mut edges: *mut Edge = ptr::null_mut();
        for (i, d) in deps.iter().enumerate() {
            if i % EDGES_PER_BLOCK == 0 {
                let (block, bgen) = self.alloc(ctx);
                block
                    .state
                    .store(u64::from(bgen) | EDGES, Ordering::Relaxed);
                // SAFETY: `slot` and `prev_block` are unpublished or only
                // reachable by us (edge blocks are private to the job).
                unsafe {
                    if prev_block.is_null() {
                        *slot.edges.get() = block as *const Slot as *mut Slot;
                    } else {
                        *(*prev_block).edges.get() = block as *const Slot as *mut Slot;
                    }
                }
                prev_block = block;
                edges = block.payload_ptr().cast::<Edge>();
            }
            // SAFETY: `edges` points at EDGES_PER_BLOCK edge records in a
            // private block; index i % EDGES_PER_BLOCK is in bounds.
            let e = unsafe { edges.add(i % EDGES_PER_BLOCK) };
            // SAFETY: `e` is private until the CAS below publishes it.
            unsafe {
                ptr::write(
                    e,
                    Edge {
                        next: std::cell::UnsafeCell::new(ptr::null_mut()),
                        dependent: slot,
                        dep: d.slot.as_ptr(),
                        dep_gen: d.gen,
                    },
                );
                *slot.ndeps.get() = i as u32 + 1;
            }
            let dep = d.slot();
            let Some(st) = dep.pin_for_attach(d.gen) else {
                // Recycled: finished long ago, maybe failed.
                if let Some(rec) = self.failures.lookup(d.slot.as_ptr() as usize, d.gen) {
                    slot.set_failure(rec.failure);
                }
                slot.pending.fetch_sub(1, Ordering::AcqRel);
                continue;
            };
            // Finished before our pin: its dependents were (or are being)
            // walked without us. Else Acquire pairs with the AcqRel swap to
            // CLOSED in `finish`.
            let mut head = if phase_of(st) == FINISHED {
                CLOSED
            } else {
                dep.dependents.load(Ordering::Acquire)
            };
            loop {
                if head == CLOSED {
                    if let Some(f) = dep.failure() {
                        slot.set_failure(f);
                    }
                    slot.pending.fetch_sub(1, Ordering::AcqRel);
                    break;
                }
                // SAFETY: `e` is still private to us until the CAS succeeds.
                unsafe { *(*e).next.get() = head };
                // Release publishes the edge to the finisher's swap.
                match dep.dependents.compare_exchange_weak(
                    head,
                    e,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => break,
                    Err(now) => head = now,
                }
            }
            self.unpin(ctx, dep);
        }
    }

    /// The last dependency of `slot` finished: queue it on this thread's
    /// deque. If a waiter needs it and this thread will not run it soon,
    /// wake parked waiters so one can take it.
    pub(crate) fn make_runnable(&self, ctx: &Context, slot: &Slot) -> bool {
        // Read before the CAS below: once RUNNABLE, another thread may claim,
        // run and free the job, and the slot may be reused (TSan found the
        // read after it).
        let prio = slot.prio();
        let s = slot.release();
        let e = Entry {
            slot: NonNull::from(slot),
            gen: gen_of(s),
        };
        let waited = s & WAITED != 0;
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
        if waited && !ctx.is_top_level_worker() {
            self.wake_parked_waiters(ctx);
        }
        waited
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
            let id = crate::trace::JobId::of_entry(e);
            crate::trace::job_begin(self, ctx, id, "join");
            // SAFETY: the joiner keeps the job alive until its latch is set,
            // which `run_stack_job` does last.
            unsafe { crate::join::run_stack_job(e.stack_header(), ctx.index) };
            crate::trace::job_end(self, ctx, id, "join");
            return true;
        }
        let slot = e.slot();
        let s = slot.state.load(Ordering::Acquire);
        if gen_of(s) != e.gen || phase_of(s) != RUNNABLE {
            return false;
        }
        if s & PFOR != 0 {
            return self.run_pieces(ctx, slot, e.gen, on_claim);
        }
        if !slot.claim(e.gen) {
            return false;
        }
        on_claim();
        self.run_claimed(ctx, slot, e.gen);
        true
    }

    /// Run a claimed single job and finish it.
    pub(crate) fn run_claimed(&self, ctx: &Context, slot: &Slot, gen: u32) {
        let vt = slot.vtable();
        // CANCELLED is only set while WAITING, so the claim fixed it.
        if slot.state.load(Ordering::Acquire) & CANCELLED != 0 {
            // The canceller dropped the closure (`cancel_unstarted`).
            self.finish(ctx, slot, gen, FAILED);
            return;
        }
        // Poisoning happens before the job became runnable (pending hit 0).
        let poisoned = !slot.failure.load(Ordering::Acquire).is_null();
        if poisoned {
            // Skipped: the closure is dropped as part of the job (on the
            // `running` stack, so a `Drop` that waits on the job's own
            // handle gets WaitOnSelf instead of parking forever).
            ctx.running_push(slot, gen);
            // SAFETY: we hold the claim; the payload is initialised and
            // dropped exactly once, here.
            let _ = catch_unwind(AssertUnwindSafe(|| unsafe {
                (vt.drop)(slot.payload_ptr())
            }));
            ctx.running_pop();
            self.finish(ctx, slot, gen, FAILED | POISONED);
            return;
        }
        let traced = crate::trace::job_begin_slot(self, ctx, slot, gen);
        ctx.running_push(slot, gen);
        // SAFETY: we hold the claim; the payload is initialised and consumed
        // exactly once, here.
        let r = catch_unwind(AssertUnwindSafe(|| unsafe { (vt.run)(slot.payload_ptr()) }));
        ctx.running_pop();
        // The end is recorded before `finish`: whoever sees the job finished
        // (a waiter that then stops the capture) also sees its end event.
        if let Some(name) = traced {
            crate::trace::job_end(self, ctx, crate::trace::JobId::of_slot(slot, gen), name);
        }
        match r {
            Ok(()) => self.finish(ctx, slot, gen, 0),
            Err(p) => {
                slot.set_failure(Arc::new(Failure::from_panic(p)));
                self.finish(ctx, slot, gen, FAILED);
            }
        }
    }

    /// Cancel the job `h` if it has not started (it waits for a
    /// dependency): its closure is dropped here, now, on this thread, as
    /// part of the job (a `Drop` that waits on `h` gets `WaitOnSelf`); the
    /// job finishes as failed ("cancelled") when its dependencies are done,
    /// and its dependents fail. Returns false (and changes nothing) if the
    /// job is runnable, running or finished.
    pub(crate) fn cancel_unstarted(&self, ctx: &Context, h: JobHandle) -> bool {
        let slot = h.slot();
        if !slot.cancel(h.gen) {
            return false;
        }
        slot.set_failure(Arc::new(Failure::cancelled()));
        let vt = slot.vtable();
        ctx.running_push(slot, h.gen);
        // SAFETY: the cancelling CAS gave us the payload: nobody runs or
        // drops a CANCELLED job's closure, and our pin keeps the slot from
        // being recycled until we unpin below.
        let _ = catch_unwind(AssertUnwindSafe(|| unsafe {
            (vt.drop)(slot.payload_ptr())
        }));
        ctx.running_pop();
        self.unpin(ctx, slot);
        true
    }

    /// The job in `slot` is done (ran, failed or was skipped); the caller
    /// holds one pin (its claim), which this drops.
    pub(crate) fn finish(&self, ctx: &Context, slot: &Slot, gen: u32, flags: u64) {
        // Fast path: nobody attached and nobody else holds a pin, so no
        // edge can be in flight (an attacher pins with HAS_DEPS first, and
        // one that pins after this CAS sees FINISHED): finish, unpin and
        // maybe free in one CAS. Otherwise keep our pin for the walk below.
        if flags & FAILED != 0 {
            // Before the CAS below can free the slot: a wait or an attach
            // that sees the next generation finds the failure in the log.
            if let Some(failure) = slot.failure() {
                let st = slot.state.load(Ordering::Acquire);
                let rec = Recorded {
                    failure,
                    flags: flags | (st & CANCELLED),
                };
                self.failures.record(slot as *const Slot as usize, gen, rec);
            }
        }
        let alone = |s: u64| s & HAS_DEPS == 0 && pins_of(s) == 1;
        let (prev, un) = update_and_maybe_free(slot, |s| {
            let done = (s & !PHASE_MASK) | FINISHED | flags;
            if alone(s) {
                done - PIN_ONE
            } else {
                done
            }
        });
        debug_assert_eq!(gen_of(prev), gen);
        bump(&ctx.counters.finished);
        if alone(prev) {
            if let Unpinned::Freed = un {
                self.recycle(ctx, slot);
            }
            return;
        }
        if pins_of(prev) > 1 {
            for w in self.waiters.wake_target(slot) {
                crate::trace::wake_issued(self, ctx, Some(w));
            }
        }
        // Release dependents. AcqRel: Acquire pairs with the edges' CAS in
        // `attach_deps`; Release publishes our failure to later attachers.
        let mut e = slot.dependents.swap(CLOSED, Ordering::AcqRel);
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
            // SAFETY: an edge stays valid until its dependent runs, which
            // needs our decrement below; read `next` before it.
            let (next, dependent) = unsafe { (*(*e).next.get(), &*(*e).dependent) };
            if let Some(f) = &failure {
                dependent.set_failure(f.clone());
            }
            if dependent.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
                let dgen = gen_of(dependent.state.load(Ordering::Relaxed));
                crate::trace::job_released(
                    self,
                    ctx,
                    crate::trace::JobId::of_slot(dependent, dgen),
                );
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

    /// Wake every thread parked in `complete` (a needed job became runnable).
    pub(crate) fn wake_parked_waiters(&self, ctx: &Context) {
        for w in self.waiters.wake_all_parked() {
            crate::trace::wake_issued(self, ctx, Some(w));
        }
    }

    /// Work was pushed on a deque: wake a worker if needed (nothing to do
    /// without workers).
    #[inline]
    pub(crate) fn notify_work(&self, ctx: &Context) {
        self.notify_work_from(ctx, ctx.index);
    }

    /// `notify_work` for work visible in context `from`'s deques (a
    /// woken worker looks there first).
    #[inline]
    fn notify_work_from(&self, ctx: &Context, from: u32) {
        if self.num_workers != 0 {
            if let Some(w) = self.sleep.notify_work(from) {
                crate::trace::wake_issued(self, ctx, Some(w));
                bump(&ctx.counters.wakes);
            }
        }
    }

    // ---- finding work -----------------------------------------------------

    /// Find one runnable job and run it. Order: our own High deque, then
    /// jobs some waiter needs (the `needed` deques: priority inheritance),
    /// then High from others, then Normal (own, others), then Low. Other
    /// deques are visited from a random victim. Returns whether anything ran.
    pub(crate) fn find_and_run(&self, ctx: &Context, searching: &mut bool) -> bool {
        if self.pop_and_run(ctx, HIGH, searching)
            || (self.inheritance
                && self.run_needed(ctx, &mut || {
                    self.found_work(ctx, searching, || Some(ctx.index))
                }))
        {
            return true;
        }
        for prio in HIGH..PRIORITIES {
            if prio != HIGH && self.pop_and_run(ctx, prio, searching) {
                return true;
            }
            if self.steal_and_run(ctx, prio, searching) {
                return true;
            }
        }
        bump(&ctx.counters.failed_steals);
        false
    }

    /// Run a job from a `needed` deque (ours first).
    /// `on_claim` as in `run_entry`. Shared by workers (priority
    /// inheritance) and threads in `complete` (helping).
    pub(crate) fn run_needed(&self, ctx: &Context, on_claim: &mut dyn FnMut()) -> bool {
        while let Some(e) = ctx.pop_needed() {
            if self.run_entry(ctx, e, on_claim) {
                return true;
            }
        }
        let n = self.num_contexts();
        let start = (ctx.next_random() % n as u64) as usize;
        for k in 0..n {
            let v = (start + k) % n;
            if v == ctx.index as usize {
                continue;
            }
            while let Some(e) = self.context(v).needed.steal() {
                if self.run_entry(ctx, e, on_claim) {
                    return true;
                }
            }
        }
        false
    }

    /// Steal from the `prio` deques of other threads, from a random victim.
    fn steal_and_run(&self, ctx: &Context, prio: usize, searching: &mut bool) -> bool {
        let n = self.num_contexts();
        if n <= 1 {
            return false;
        }
        let start = (ctx.next_random() % n as u64) as usize;
        (0..n)
            .map(|k| (start + k) % n)
            .filter(|&v| v != ctx.index as usize)
            .any(|v| self.steal_from(ctx, v, prio, searching))
    }

    /// Steal from context `v`'s `prio` deque until an entry runs.
    fn steal_from(&self, ctx: &Context, v: usize, prio: usize, searching: &mut bool) -> bool {
        let victim = self.context(v).stealer(prio);
        // Short deques are stolen one entry at a time (see steal_into).
        while let Some(e) = victim.steal_into(ctx.local(prio)) {
            bump(&ctx.counters.steals);
            crate::trace::steal(self, ctx, v as u32);
            // Where more work is visible, for the cascade's wake.
            let more = || {
                if !victim.is_empty() {
                    Some(v as u32)
                } else {
                    (!ctx.local(prio).is_empty()).then_some(ctx.index)
                }
            };
            if self.run_entry(ctx, e, &mut || self.found_work(ctx, searching, more)) {
                return true;
            }
            // A stale entry: what a batch moved into our deque is next.
            if self.pop_and_run(ctx, prio, searching) {
                return true;
            }
        }
        false
    }

    /// A worker just woken because context `from` pushed work: look at
    /// `from`'s deques first (High to Low), then search as usual. Saves the
    /// woken worker a sweep over every other context's deques, whose lines
    /// are cold after a sleep (0.1-0.2 us with 2-4 workers here).
    fn find_and_run_from(&self, ctx: &Context, from: usize, searching: &mut bool) -> bool {
        if from != ctx.index as usize && from < self.num_contexts() {
            for prio in HIGH..PRIORITIES {
                if self.steal_from(ctx, from, prio, searching) {
                    return true;
                }
            }
        }
        self.find_and_run(ctx, searching)
    }

    /// Pop our own `prio` deque until an entry runs (stale ones are dropped).
    fn pop_and_run(&self, ctx: &Context, prio: usize, searching: &mut bool) -> bool {
        let local = ctx.local(prio);
        while let Some(e) = local.pop() {
            let more = || (!local.is_empty()).then_some(ctx.index);
            if self.run_entry(ctx, e, &mut || self.found_work(ctx, searching, more)) {
                return true;
            }
        }
        false
    }

    /// A searching worker claimed a job: stop searching; the last searcher
    /// wakes another worker when more work is visible (the cascade), in
    /// the deques of the context `more` names (the woken worker looks there
    /// first). `more` is only asked while searching: a busy thread's pops
    /// and steals read no extra deque indices.
    ///
    /// Under `WhippingBoy` the last searcher always wakes a sleeper (if any)
    /// to take over the role, work visible or not: the worker pays for that
    /// wake, never the scheduling thread.
    #[inline]
    fn found_work(&self, ctx: &Context, searching: &mut bool, more: impl FnOnce() -> Option<u32>) {
        if *searching {
            *searching = false;
            if matches!(self.policy, IdlePolicy::WhippingBoy) {
                if let Some(w) = self.sleep.hand_over(more()) {
                    crate::trace::wake_issued(self, ctx, Some(w));
                    bump(&ctx.counters.wakes);
                }
            } else if self.sleep.stop_searching() {
                if let Some(from) = more() {
                    self.notify_work_from(ctx, from);
                }
            }
        }
    }

    /// Is any deque non-empty? (Cheap: two loads per deque, no CAS.)
    pub(crate) fn work_visible(&self) -> bool {
        let n = self.num_contexts();
        (0..n).any(|i| self.context(i).has_work())
    }

    /// Jobs scheduled and not yet finished, over all threads. Exact when no
    /// thread is scheduling concurrently (shutdown); see `docs/design-notes.md`.
    pub(crate) fn outstanding(&self) -> u64 {
        let n = self.num_contexts();
        let finished: u64 = (0..n)
            .map(|i| self.context(i).counters.finished.load(Ordering::Acquire))
            .sum();
        let scheduled: u64 = (0..n)
            .map(|i| self.context(i).counters.scheduled.load(Ordering::Acquire))
            .sum();
        scheduled.saturating_sub(finished)
    }

    pub(crate) fn stats(&self) -> Stats {
        let pages: usize = (0..self.num_contexts())
            .map(|i| self.context(i).store.active_pages())
            .sum();
        let mut st = Stats {
            workers: self.num_workers,
            failures_forgotten: self.failures.forgotten(),
            job_slots: (pages * PAGE_SLOTS) as u64,
            ..Stats::default()
        };
        for i in 0..self.num_contexts() {
            st.add_context(&self.context(i).counters);
        }
        st
    }

    pub(crate) fn worker_stats(&self) -> Vec<Stats> {
        (0..self.num_workers)
            .map(|i| {
                let mut st = Stats {
                    workers: 1,
                    ..Stats::default()
                };
                st.add_context(&self.context(i).counters);
                st
            })
            .collect()
    }

    // ---- workers ----------------------------------------------------------

    pub(crate) fn worker_main(self: Arc<Registry>, idx: usize) {
        let ctx = self.context(idx);
        self.set_current(ctx);
        let mut adaptive = match self.policy {
            IdlePolicy::Adaptive { max_spin, cpu_cap } => {
                Some(AdaptiveSpin::new(max_spin, cpu_cap))
            }
            _ => None,
        };
        let mut searching = false;
        let mut woken = false;
        // The context whose push woke this worker (see `Sleep::park`).
        let mut woken_by: Option<usize> = None;
        // Looks in a row that saw work and lost it to its owner or another
        // thief (sleep/backoff.rs: the next spin backs off harder).
        let mut contention = 0u32;
        let mut saw_work = false;
        loop {
            // An idle adaptive worker's gap ends when it looks and finds
            // work, not after that work ran (the clock is read only then).
            let looked = adaptive
                .as_ref()
                .filter(|a| a.is_idle())
                .map(|_| Instant::now());
            let found = match woken_by.take() {
                Some(from) => self.find_and_run_from(ctx, from, &mut searching),
                None => self.find_and_run(ctx, &mut searching),
            };
            if found {
                if let (Some(a), Some(t)) = (&mut adaptive, looked) {
                    a.found_work(t);
                }
                woken = false;
                contention = 0;
                saw_work = false;
                continue;
            }
            if std::mem::take(&mut saw_work) {
                contention = (contention + 1).min(3);
            }
            if self.terminating.load(Ordering::SeqCst) && self.outstanding() == 0 {
                break;
            }
            if let Some(a) = &mut adaptive {
                a.went_idle(Instant::now());
            }
            if !searching {
                searching = self.sleep.try_become_searching();
            }
            let hot = self.is_hot();
            let never_sleep = hot || matches!(self.policy, IdlePolicy::AlwaysSpin);
            let budget = match self.policy {
                _ if never_sleep => NEVER_SLEEP_ROUND,
                _ if !searching => Duration::ZERO,
                IdlePolicy::SpinThenSleep { spin } => spin,
                IdlePolicy::WhippingBoy => WHIPPING_BOY_ROUND,
                IdlePolicy::Adaptive { .. } => match &mut adaptive {
                    Some(a) => a.budget(Instant::now()),
                    None => Duration::ZERO,
                },
                IdlePolicy::AlwaysSpin => NEVER_SLEEP_ROUND,
            };
            if !budget.is_zero() {
                crate::trace::spin_begin(&self, ctx);
            }
            let (found, spun) = self.spin_until_work(budget, contention);
            saw_work = found;
            bump_by(&ctx.counters.spin_ns, spun.as_nanos() as u64);
            if let Some(a) = &mut adaptive {
                a.spun(spun);
            }
            if found || never_sleep {
                crate::trace::search_begin(&self, ctx);
                continue;
            }
            // The whipping boy (the last searcher) does not park; it goes
            // round again.
            let whipping = matches!(self.policy, IdlePolicy::WhippingBoy);
            if self.sleep.prepare_park(idx, searching, whipping) == Park::StayAwakeSearching {
                searching = true;
                continue;
            }
            if woken {
                bump(&ctx.counters.futile_wakes);
            }
            // Re-check after unregistering as awake (see sleep/README.md).
            if self.work_visible() || self.terminating.load(Ordering::SeqCst) || self.is_hot() {
                self.sleep.cancel_park(idx);
                crate::trace::search_begin(&self, ctx);
                searching = true;
                woken = false;
                continue;
            }
            bump(&ctx.counters.sleeps);
            // Idle: give back storage a burst left behind.
            self.trim(ctx);
            crate::trace::sleep_begin(&self, ctx);
            woken_by = self.sleep.park(idx);
            crate::trace::sleep_end(&self, ctx);
            searching = true;
            woken = true;
        }
        if searching {
            self.sleep.stop_searching();
        }
        // Tell a thread waiting in shutdown that the system drained.
        self.drained.store(
            self.drained.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::SeqCst,
        );
        self.drained.wake_all();
        self.sleep.wake_all();
    }

    /// Spin (with backoff, no CAS) until work is visible, shutdown begins or
    /// `budget` has passed; `contention` (0..=3) lengthens the steps after
    /// looks that lost the work they saw. Returns (work visible, time spent
    /// spinning).
    fn spin_until_work(&self, budget: Duration, contention: u32) -> (bool, Duration) {
        if budget.is_zero() {
            return (false, Duration::ZERO);
        }
        let mut backoff = Backoff::contended(self.oversubscribed, contention);
        loop {
            if self.work_visible() {
                return (true, backoff.elapsed());
            }
            let spent = backoff.elapsed();
            if spent >= budget || self.terminating.load(Ordering::Relaxed) {
                return (false, spent);
            }
            backoff.snooze(spent);
        }
    }

    /// Start an idle spin (`sleep/backoff.rs`: spin-loop hints with backoff,
    /// a `yield_now` every few microseconds, every step when the system has
    /// more threads than CPUs).
    #[inline]
    pub(crate) fn backoff(&self) -> Backoff {
        Backoff::new(self.oversubscribed)
    }

    /// Is a hot zone open?
    #[inline]
    pub(crate) fn is_hot(&self) -> bool {
        self.hot_zones.load(Ordering::SeqCst) != 0
    }

    /// Run everything scheduled, then return (shutdown, on a non-worker).
    pub(crate) fn drain(&self) {
        let ctx = self.current();
        let mut searching = false;
        loop {
            if self.find_and_run(ctx, &mut searching) {
                continue;
            }
            let seen = self.drained.load(Ordering::SeqCst);
            if self.outstanding() == 0 {
                return;
            }
            if self.work_visible() {
                continue;
            }
            if self.num_workers == 0 {
                // Nothing visible and nothing runs elsewhere: every
                // outstanding job waits on one that is queued somewhere we
                // just searched, so look again.
                continue;
            }
            self.drained.wait(seen);
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        // Every job finished (shutdown drained the system), so no slot holds
        // a live payload; failures retained for late waiters are dropped here.
        for page in self
            .pages
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            for s in page.slots().iter() {
                let f = s.failure.swap(ptr::null_mut(), Ordering::Relaxed);
                if !f.is_null() {
                    // SAFETY: the slot's own reference from `Arc::into_raw`.
                    unsafe { drop(Arc::from_raw(f)) };
                }
            }
        }
    }
}
