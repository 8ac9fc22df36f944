//! The shared state of one job system: its contexts (which thread owns
//! which), the claim of outside threads' contexts (thread-locals,
//! teardown), counters (summed into `stats.rs`'s `Stats`), the idle spin
//! and hot-zone flags, and the pages of slots; `impl Registry` is here
//! alone. Beside it `ThisThread`, the calling thread's registry and context
//! (as rayon-core keeps `WorkerThread` beside its `Registry`): the work one
//! thread does is its methods, written with the concept they serve
//! (`lifecycle.rs`: a job from submit to recycle; `wait/`: `complete`;
//! `pinned.rs`: registered threads and pinned jobs; `search.rs`,
//! `shuffle.rs`, `worker.rs`, `parallel_for.rs`, `join.rs`).

use crate::builder::IdlePolicy;
use crate::context::Context;
use crate::current::CURRENT;
#[cfg(feature = "trace")]
use crate::current::{enter_hook, in_hook, leave_hook};
use crate::failures::FailureLog;
use crate::handle::JobHandle;
use crate::sleep::{Backoff, Futex, Sleep};
use crate::slot::{Slot, PAGE_SLOTS};
pub use crate::stats::Stats;
use crate::store::Page;
use crate::trace::{HookMark, JobId, Site, TraceHost};
use crate::waiters::Waiters;
use std::cell::RefCell;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

/// How long back-pressure (room.rs `make_room`) waits with no job
/// finishing anywhere before it panics (`Config::max_jobs`).
pub(crate) const MAX_JOBS_STALL: Duration = Duration::from_secs(10);

/// The panic of a thread that uses a job system from a thread-local
/// destructor that runs after both of jobsys's claim lists were destroyed.
const TLS_GONE: &str =
    "jobsys: a JobSystem was used from a thread-local destructor that runs after \
                        jobsys's own thread-locals were destroyed (see docs/design-notes.md, \
                        \"Thread-local teardown\")";

/// How many threads other than the workers may use one system at once.
pub(crate) const MAX_EXTERNAL: usize = 256;

static NEXT_ID: AtomicU32 = AtomicU32::new(1);

pub(crate) struct Registry {
    id: u32,
    self_weak: Weak<Registry>,
    contexts: Box<[OnceLock<Box<Context>>]>,
    /// Contexts initialised so far (a prefix of `contexts`).
    num_contexts: AtomicUsize,
    num_workers: usize,
    sleep: Sleep,
    waiters: Waiters,
    /// Failures of jobs whose slots were reused (`failures.rs`).
    failures: FailureLog,
    /// Unfinished jobs above which a thread that needs a new page of slots
    /// makes room first (`make_room`).
    max_jobs: usize,
    /// How long `make_room` waits with no job finishing before it panics,
    /// in nanoseconds: `MAX_JOBS_STALL`, shorter in tests
    /// (`set_max_jobs_stall`).
    max_jobs_stall_ns: AtomicU64,
    /// Pages of slots a thread keeps when idle (`Config::retained_slots`).
    keep_pages: usize,
    pages: Mutex<Vec<Page>>,
    /// The bases of `pages`, for checking an address without a lock
    /// (`JobSystem::handle_from_bits`).
    page_set: crate::store::pages::PageSet,
    claim_lock: Mutex<()>,
    terminating: AtomicBool,
    /// Bumped (and woken) by workers that see the system drained at shutdown.
    drained: Futex,
    policy: IdlePolicy,
    wait_spin: Duration,
    /// The tracer's state (on/off, one event buffer per context).
    #[cfg(feature = "trace")]
    trace: crate::trace::TraceState,
    /// Workers take jobs that waiters need first (`Config`).
    inheritance: bool,
    /// `Builder::shuffle`'s seed: choices among ready jobs come from it
    /// (`shuffle.rs`).
    shuffle: Option<u64>,
    /// More threads (workers + the caller) than CPUs this process may use:
    /// idle spins yield the CPU instead of holding it. Updated when
    /// following the CPUs (`active.rs`).
    oversubscribed: AtomicBool,
    /// The active-worker limits and the CPU watch (`active.rs`).
    active: crate::active::Active,
    /// Context of the thread that built the system (`Pin::Main`, set by
    /// `register_main`); `NO_THREAD` before.
    main_ctx: AtomicU32,
    /// Who holds which thread index (`pinned.rs`).
    threads: Mutex<crate::pinned_queue::ThreadTable>,
    /// Shared by every context (`context::Urgent`).
    urgent: std::sync::Arc<crate::context::Urgent>,
    /// Each worker's core class (`classes.rs`), set once at build.
    classes: std::sync::OnceLock<crate::classes::WorkerClasses>,
    /// Open `HotZone` guards; while non-zero, workers spin instead of sleeping.
    hot_zones: crossbeam_utils::CachePadded<AtomicU32>,
    /// Batched jobs published by their thread's exit or the system's
    /// shutdown instead of a flush or a wait (`note_unflushed`).
    unflushed: AtomicU64,
}

thread_local! {
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

/// What the tracer needs of a registry (`trace::TraceHost`: it names no
/// core type). Called on its recording paths only.
impl TraceHost for Registry {
    type Ctx = Context;

    #[inline(always)]
    fn ctx_index(ctx: &Context) -> u32 {
        ctx.index
    }

    #[cfg(feature = "trace")]
    #[inline]
    fn trace_state(&self) -> &crate::trace::TraceState {
        &self.trace
    }

    /// The number hooks and traces give the thread holding `ctx`: its
    /// thread index (as `ThisThread::thread_index_of`), or, for a thread
    /// that has none (it only schedules or waits),
    /// `UNINDEXED_THREAD_BASE + ctx.index` (`docs/engine.md`, "Thread
    /// index"). Any thread may ask, of any context.
    #[inline]
    fn thread_number(&self, ctx: &Context) -> u32 {
        // Not `thread_index_of`: the index stays the thread's after its
        // registration closed (its exit, the system's drop), until another
        // thread claims the context.
        match ctx.pinned.index.load(Ordering::Relaxed) {
            crate::pinned_queue::UNASSIGNED => crate::trace::UNINDEXED_THREAD_BASE + ctx.index,
            i => i,
        }
    }

    /// `thread_number` of context `index` (a steal's victim, a wakee).
    #[inline]
    fn thread_number_at(&self, index: u32) -> u32 {
        if (index as usize) < self.num_contexts() {
            self.thread_number(self.context(index as usize))
        } else {
            crate::trace::UNINDEXED_THREAD_BASE + index
        }
    }

    #[inline]
    fn current(&self) -> &Context {
        Registry::current(self)
    }

    #[cfg(feature = "trace")]
    fn enter_hook(method: &'static &'static str) -> HookMark {
        let (id, ctx) = enter_hook(method);
        (id, ctx.cast::<()>())
    }

    #[cfg(not(feature = "trace"))]
    fn enter_hook(_: &'static &'static str) -> HookMark {
        (0, ptr::null())
    }

    #[cfg(feature = "trace")]
    fn leave_hook(mark: HookMark) {
        leave_hook((mark.0, mark.1.cast::<Context>()));
    }

    #[cfg(not(feature = "trace"))]
    fn leave_hook(_: HookMark) {}

    #[cfg(feature = "trace")]
    #[inline]
    fn in_hook() -> Option<&'static str> {
        in_hook()
    }
}

/// The calling thread's registry and context (the context this thread
/// holds: `Registry::current_for` or a worker's own).
#[derive(Clone, Copy)]
pub(crate) struct ThisThread<'a> {
    pub(crate) reg: &'a Registry,
    pub(crate) ctx: &'a Context,
}

impl<'a> ThisThread<'a> {
    /// `ctx` must be the context the calling thread holds.
    #[inline(always)]
    pub(crate) fn new(reg: &'a Registry, ctx: &'a Context) -> Self {
        ThisThread { reg, ctx }
    }

    /// The calling thread's view of `reg`, its context claimed if need be
    /// (`Registry::current_for`; `call` names the API call in the panic
    /// that refuses it inside a profiler hook).
    #[inline(always)]
    pub(crate) fn current_for(reg: &'a Registry, call: impl Fn() -> &'static str) -> Self {
        ThisThread::new(reg, reg.current_for(call))
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
            crate::trace::thread_stop(reg.site(ctx));
            // Jobs this thread batched but never flushed must not wait for
            // a wake that nobody will issue.
            reg.note_unflushed(ctx);
            ThisThread::new(&reg, ctx).flush();
            // Jobs pinned to this thread can never run now: cancel them.
            ThisThread::new(&reg, ctx).close_pinned(ctx);
            // This thread no longer owns the context: forget it in the
            // cache too, or a later use (another thread-local's destructor)
            // would keep using it while another thread claims it.
            let _ = CURRENT.try_with(|c| {
                if c.get() == (self.id, self.ctx) {
                    c.set((0, ptr::null()));
                }
            });
            // A `read_now`/`write_now` guard kept in a thread-local that is
            // destroyed after this one still has its event in our `guards`:
            // the next owner would look "inside" it and read its waits on
            // that event's job as waits on itself. The guard's drop removes
            // the entry from whatever context it finds then (a fresh one),
            // so nothing else will.
            ctx.clear_running();
            // Last: let go of the context (unless jobs pinned to this
            // thread are still in flight: then the last of them does).
            ThisThread::new(&reg, ctx).release_claim();
            drop(reg);
        }
    }
}

impl Registry {
    /// Start an idle spin (`sleep/backoff.rs`: spin-loop hints with backoff,
    /// a `yield_now` every few microseconds, every step when the system has
    /// more threads than CPUs).
    #[inline]
    pub(crate) fn backoff(&self) -> Backoff {
        Backoff::new(self.oversubscribed.load(Ordering::Relaxed))
    }

    /// Is a hot zone open?
    #[inline]
    pub(crate) fn is_hot(&self) -> bool {
        self.hot_zones.load(Ordering::SeqCst) != 0
    }

    /// The calling thread's event site for the tracer: this registry and
    /// `ctx`, the thread's *own* context (its events go into that
    /// context's buffer). Two references, nothing read: the sites test the
    /// process-wide flag first.
    #[inline(always)]
    pub(crate) fn site<'a>(&'a self, ctx: &'a Context) -> Site<'a, Registry> {
        Site { host: self, ctx }
    }

    /// The tracer's id of the job in `slot` at generation `gen` (the same
    /// as `JobId::of_handle` of its handle).
    #[inline(always)]
    #[cfg_attr(not(feature = "trace"), allow(dead_code))]
    pub(crate) fn job_id(slot: &Slot, gen: u32) -> JobId {
        JobId::new(slot as *const Slot as usize, gen)
    }

    // One argument per setting the registry keeps; the loom models build
    // registries directly, so a settings struct would only move the list.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        num_workers: usize,
        policy: IdlePolicy,
        wait_spin: Duration,
        inheritance: bool,
        shuffle: Option<u64>,
        failure_history: usize,
        max_jobs: usize,
        keep_pages: usize,
        active: crate::active::Active,
    ) -> Arc<Registry> {
        // The building thread's context comes on top of the limit.
        let cap = num_workers + 1 + MAX_EXTERNAL;
        // A pinned job names its context in 14 bits (`JobMeta`); the top
        // three values are `NO_THREAD` and the two class queues.
        assert!(cap <= crate::classes::EFFICIENCY as usize);
        let reg = Arc::new_cyclic(|weak| {
            let contexts: Box<[OnceLock<Box<Context>>]> =
                (0..cap).map(|_| OnceLock::new()).collect();
            let urgent = std::sync::Arc::new(crate::context::Urgent::default());
            for (i, c) in contexts.iter().take(num_workers).enumerate() {
                let ctx = Context::new(i as u32, true, urgent.clone(), shuffle);
                ctx.claimed.store(true, Ordering::Relaxed);
                let _ = c.set(Box::new(ctx));
            }
            let max_contexts = contexts.len();
            Registry {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                self_weak: weak.clone(),
                contexts,
                num_contexts: AtomicUsize::new(num_workers),
                num_workers,
                sleep: Sleep::new(num_workers),
                waiters: Waiters::new(max_contexts),
                failures: FailureLog::new(failure_history),
                max_jobs,
                max_jobs_stall_ns: AtomicU64::new(MAX_JOBS_STALL.as_nanos() as u64),
                keep_pages,
                pages: Mutex::new(Vec::new()),
                page_set: crate::store::pages::PageSet::new(crate::store::PAGE_BYTES),
                claim_lock: Mutex::new(()),
                terminating: AtomicBool::new(false),
                drained: Futex::new(0),
                policy,
                wait_spin,
                #[cfg(feature = "trace")]
                trace: crate::trace::TraceState::new(cap),
                inheritance,
                shuffle,
                oversubscribed: AtomicBool::new(
                    num_workers + 1 > std::thread::available_parallelism().map_or(1, |n| n.get()),
                ),
                active,
                main_ctx: AtomicU32::new(crate::pinned_queue::NO_THREAD),
                threads: Mutex::new(crate::pinned_queue::ThreadTable::new(num_workers)),
                hot_zones: crossbeam_utils::CachePadded::new(AtomicU32::new(0)),
                classes: std::sync::OnceLock::new(),
                unflushed: AtomicU64::new(0),
                urgent,
            }
        });
        // Who may search (and spin) while idle: under SpinThenSleep every
        // idle worker, under the other policies one (sleep/README.md, "Who
        // may search").
        if matches!(reg.policy, IdlePolicy::SpinThenSleep { .. }) {
            reg.sleep.set_max_searching(num_workers as u32);
        }
        reg
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

    /// The calling thread's context in this registry if it has one, without
    /// claiming one (`JobSystem::is_complete`).
    #[inline]
    pub(crate) fn current_if_claimed(&self) -> Option<&Context> {
        let (id, ctx) = CURRENT.with(|c| c.get());
        if id == self.id {
            // SAFETY: as in `current_for`.
            return Some(unsafe { &*ctx });
        }
        self.claimed_slow()
    }

    #[cold]
    fn claimed_slow(&self) -> Option<&Context> {
        let found = self.own_claim()??;
        // SAFETY: a claim of this registry names one of its contexts, which
        // live as long as the registry; `self` is alive.
        Some(unsafe { &*found })
    }

    /// `ctx`'s thread (exiting, or dropping the system) still has batched
    /// jobs that no flush or wait published: count them, and say so once
    /// per system in a debug build (`Stats::batched_unflushed`).
    #[cold]
    pub(crate) fn note_unflushed(&self, ctx: &Context) {
        let n = ctx.batch_pending() as u64;
        if n == 0 {
            return;
        }
        let before = self.unflushed.fetch_add(n, Ordering::Relaxed);
        if cfg!(debug_assertions) && before == 0 {
            eprintln!(
                "jobsys: {n} batched job(s) were never published by JobSystem::flush or a wait \
                 of their thread; its exit or the system's shutdown did (debug builds say this \
                 once; Stats::batched_unflushed counts)"
            );
        }
    }

    /// The calling thread's context in this registry, claiming one on first use.
    #[inline]
    pub(crate) fn current(&self) -> &Context {
        self.current_for(|| "a JobSystem method")
    }

    /// `current` for a public call, named by `call` (e.g.
    /// `|| "JobSystem::schedule"`) in the panic when a profiler hook makes
    /// it (`current_named`).
    ///
    /// A closure, not a `&str`: each call site gets its own cold
    /// `current_named`, and the call on the cold branch passes no argument
    /// for the name. With a `&str` it passed two registers, which changed
    /// the register allocation around the hot paths' look-up (W1 `flat`
    /// with the tracer compiled in counted more instructions per job).
    #[inline]
    pub(crate) fn current_for(&self, call: impl Fn() -> &'static str) -> &Context {
        let (id, ctx) = CURRENT.with(|c| c.get());
        if id == self.id {
            // SAFETY: ids are unique per registry ever created, and a
            // registry's contexts live as long as it does; `self` is alive.
            return unsafe { &*ctx };
        }
        self.current_named(call)
    }

    /// This thread's context in this registry if the thread's cache holds
    /// it (the thread used the registry last); never claims one.
    #[inline]
    pub(crate) fn cached_context(&self) -> Option<&Context> {
        let (id, ctx) = CURRENT.with(|c| c.get());
        // SAFETY: as in `current_for`.
        (id == self.id).then(|| unsafe { &*ctx })
    }

    /// The cache missed: a thread's first call into this registry, a call
    /// after it used another one, or a call from a profiler hook (the
    /// cache holds the hook's mark then, `enter_hook`). The last is refused
    /// here, before it can wait for a lock the hook's caller holds.
    #[cold]
    #[inline(never)]
    fn current_named(&self, call: impl Fn() -> &'static str) -> &Context {
        #[cfg(feature = "trace")]
        if let Some(method) = in_hook() {
            crate::trace::refuse_in_hook(&call(), method);
        }
        #[cfg(not(feature = "trace"))]
        let _ = call;
        self.current_slow()
    }

    /// This thread's claim of a context of this registry, if any; `None`
    /// when its claim lists are already destroyed (thread-local teardown).
    fn own_claim(&self) -> Option<Option<*const Context>> {
        with_claims(|claims| {
            claims
                .borrow()
                .iter()
                .find(|c| c.id == self.id)
                .map(|c| c.ctx)
        })
    }

    #[cold]
    fn current_slow(&self) -> &Context {
        let found = self.own_claim().unwrap_or_else(|| panic!("{TLS_GONE}"));
        let mut claimed = false;
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
                claimed = true;
                ctx
            }
        };
        CURRENT.with(|c| c.set((self.id, ctx)));
        // SAFETY: `ctx` points into this live registry (see `current`).
        let ctx = unsafe { &*ctx };
        if claimed {
            crate::trace::thread_start(self.site(ctx));
        }
        ctx
    }

    pub(crate) fn claim_external(&self) -> *const Context {
        let _g = self.claim_lock.lock().unwrap_or_else(|e| e.into_inner());
        let n = self.num_contexts();
        for i in self.num_workers..n {
            let c = self.context(i);
            if !c.claimed.load(Ordering::Acquire) {
                c.claimed.store(true, Ordering::Relaxed);
                c.pinned.reopen_for_new_owner();
                return c;
            }
        }
        assert!(
            n < self.contexts.len(),
            "jobsys: more than {MAX_EXTERNAL} threads other than the workers (and the thread that built it) use this JobSystem at once"
        );
        let ctx = Context::new(n as u32, false, self.urgent.clone(), self.shuffle);
        ctx.claimed.store(true, Ordering::Relaxed);
        let _ = self.contexts[n].set(Box::new(ctx));
        self.num_contexts.store(n + 1, Ordering::Release);
        self.context(n)
    }

    /// Make `ctx` this thread's cached context (workers at start).
    pub(crate) fn set_current(&self, ctx: &Context) {
        CURRENT.with(|c| c.set((self.id, ctx as *const Context)));
    }

    /// Every page of slots (new pages are handed over by `Store::alloc`).
    pub(crate) fn keep_page(&self, page: Page) -> &[Slot] {
        let slots: *const [Slot] = page.slots();
        let mut pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        // Before any of its slots is handed out (so before any handle
        // names one); under the pages' lock, the set's one writer.
        self.page_set.insert(slots as *const Slot as usize);
        pages.push(page);
        drop(pages);
        // SAFETY: the slots are owned by the page in `self.pages` (moving
        // the `Page` neither moves nor retags them) until the registry
        // drops; callers never outlive the registry.
        unsafe { &*slots }
    }

    /// The pin target of a job that asks for core class `class`
    /// (`classes.rs`); `None`: run anywhere.
    #[inline]
    pub(crate) fn class_target(&self, class: crate::topology::CoreClass) -> Option<u32> {
        self.classes.get().and_then(|c| c.target_for(class))
    }

    /// The class queue `ctx`'s thread takes jobs from (workers of a class).
    #[inline]
    pub(crate) fn class_queue_of(&self, ctx: &Context) -> Option<&crate::classes::ClassQueue> {
        let c = self.classes.get().filter(|_| ctx.is_worker)?;
        Some(c.queue(c.target_of_worker(ctx.index as usize + 1)?).0)
    }

    /// Has `h` finished (successfully or not)? Never blocks.
    pub(crate) fn is_complete(&self, h: JobHandle) -> bool {
        assert!(
            h.system == self.id,
            "jobsys: is_complete: the handle belongs to another JobSystem ({h:?})"
        );
        let s = h.slot().state();
        s.is_complete_for(h.gen)
    }

    /// Is `addr` the address of a slot in one of this registry's pages?
    /// Reads no slot. `me`: the calling thread's context, whose last
    /// checked page answers without a probe of the set (pages are never
    /// freed while the registry lives, so a page once found stays valid).
    #[inline]
    pub(crate) fn is_slot_address(&self, addr: usize, me: Option<&Context>) -> bool {
        let base = addr & !(crate::store::PAGE_BYTES - 1);
        if base == 0 || (addr - base) % std::mem::size_of::<Slot>() != 0 {
            return false;
        }
        match me {
            Some(ctx) if ctx.checked_page() == base => true,
            _ if !self.page_set.contains_addr(addr) => false,
            Some(ctx) => {
                ctx.set_checked_page(base);
                true
            }
            None => true,
        }
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
            active_workers: self.sleep.active() as usize,
            failures_forgotten: self.failures.forgotten(),
            panics_unobserved: self.failures.unobserved(),
            batched_unflushed: self.unflushed.load(Ordering::Relaxed),
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
                    active_workers: usize::from(i < self.sleep.active() as usize),
                    ..Stats::default()
                };
                st.add_context(&self.context(i).counters);
                st
            })
            .collect()
    }
}

// Read access to the fields other modules use. The fields are private:
// only this file builds or replaces one; the atomics and locks among them
// change through their own methods.
macro_rules! read_access {
    (copy: $($c:ident: $ct:ty),* ; refs: $($r:ident: $rt:ty),* $(,)?) => {
        impl Registry {
            $(#[inline(always)] pub(crate) fn $c(&self) -> $ct { self.$c })*
            $(#[inline(always)] pub(crate) fn $r(&self) -> &$rt { &self.$r })*
        }
    };
}

read_access! {
    copy: id: u32, num_workers: usize, max_jobs: usize, keep_pages: usize, policy: IdlePolicy,
        wait_spin: Duration, inheritance: bool, shuffle: Option<u64>;
    refs: sleep: Sleep, waiters: Waiters, failures: FailureLog, max_jobs_stall_ns: AtomicU64,
        terminating: AtomicBool, drained: Futex, oversubscribed: AtomicBool,
        active: crate::active::Active, main_ctx: AtomicU32,
        threads: Mutex<crate::pinned_queue::ThreadTable>,
        urgent: std::sync::Arc<crate::context::Urgent>,
        hot_zones: crossbeam_utils::CachePadded<AtomicU32>,
        classes: std::sync::OnceLock<crate::classes::WorkerClasses>,
}
#[cfg(feature = "trace")]
read_access! { copy: ; refs: trace: crate::trace::TraceState }

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
                // SAFETY: the registry is being dropped: nobody uses slots.
                unsafe { s.drop_failure() };
            }
        }
    }
}
