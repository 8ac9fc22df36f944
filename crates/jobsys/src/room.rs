//! Room for jobs: the slots of new jobs (`alloc_job`: this thread's
//! store, a new page when it is empty), back-pressure before a new page
//! while `max_jobs` jobs are unfinished (`Config::max_jobs`: `make_room`
//! runs queued jobs or waits for other threads to finish some, and panics
//! when no job finishes anywhere for the stall limit), and giving storage
//! back when a thread is idle (`idle`, `trim`). Free functions of the
//! registry's shared state and the calling thread's context; recycling a
//! finished job's slot is lifecycle.rs's (`ThisThread::recycle`).

use crate::context::Context;
use crate::desc::JobDesc;
use crate::registry::Registry;
use crate::registry::ThisThread;
use crate::slot::{JobMeta, Slot};
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

#[inline]
pub(crate) fn alloc<'a>(reg: &'a Registry, ctx: &Context) -> (&'a Slot, u32) {
    // SAFETY: `ctx` is the calling thread's claimed context.
    let slot = match unsafe { ctx.store.alloc() } {
        Some(slot) => slot,
        None => alloc_slow(reg, ctx),
    };
    // SAFETY: the slot lives in a page owned by `reg`.
    let slot: &'a Slot = unsafe { slot.as_ref() };
    (slot, slot.gen_now())
}

/// `alloc` when this thread's free lists are empty: back-pressure
/// first (`make_room`, which may run jobs that allocate), then the rest
/// of the page an edge block took (`Store::bypass`), else a new page.
#[cold]
fn alloc_slow(reg: &Registry, ctx: &Context) -> NonNull<Slot> {
    make_room(reg, ctx);
    // SAFETY: `ctx` is the calling thread's claimed context; no other
    // store call is in progress on this thread.
    unsafe {
        if let Some(slot) = ctx.store.alloc() {
            return slot; // jobs run by make_room freed some
        }
        if !ctx.store.take_bypass() {
            ctx.store.add_page(|page| keep_page_static(reg, page));
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
pub(crate) fn alloc_edge_block<'a>(reg: &'a Registry, ctx: &Context) -> (&'a Slot, u32) {
    // SAFETY: `ctx` is the calling thread's claimed context; no other
    // store call is in progress on this thread.
    let slot = unsafe {
        match ctx.store.alloc_bypass() {
            Some(slot) => slot,
            None => {
                ctx.store
                    .add_bypass_page(|page| keep_page_static(reg, page));
                ctx.store.alloc_bypass().expect("a page was just added")
            }
        }
    };
    // SAFETY: the slot lives in a page owned by `reg`.
    let slot: &'a Slot = unsafe { slot.as_ref() };
    (slot, slot.gen_now())
}

/// `keep_page`, for `Store::add_page`.
fn keep_page_static(reg: &Registry, page: crate::store::Page) -> &'static [Slot] {
    let slots: *const [Slot] = reg.keep_page(page);
    // SAFETY: kept by the registry until it drops, and a store's slots
    // are used only while its registry lives.
    unsafe { &*slots }
}

/// A slot for a job described by `desc` (name and priority recorded).
#[inline]
pub(crate) fn alloc_job<'a>(reg: &'a Registry, ctx: &Context, desc: &JobDesc) -> (&'a Slot, u32) {
    alloc_pinned_job(reg, ctx, desc, None)
}

/// `alloc_job` for a job that only context `pin` may run.
#[inline]
pub(crate) fn alloc_pinned_job<'a>(
    reg: &'a Registry,
    ctx: &Context,
    desc: &JobDesc,
    pin: Option<u32>,
) -> (&'a Slot, u32) {
    let (slot, gen) = alloc(reg, ctx);
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

/// Give back the memory of `ctx`'s whole free pages above `keep_pages`
/// (`Store::trim`). `ctx` is the calling thread's own context, idle.
#[inline]
pub(crate) fn trim(reg: &Registry, ctx: &Context) -> usize {
    // SAFETY: `ctx` is the calling thread's claimed context.
    unsafe { ctx.store.trim(reg.keep_pages()) }
}

/// `ctx`'s thread is idle (a worker about to sleep, or another thread
/// whose outermost `complete` returns): note its demand since its last
/// idle moment, and give back storage that has been above `keep_pages`
/// for `TRIM_DELAY` and that its recent peak does not need
/// (`Store::trim_if_due`).
#[inline]
pub(crate) fn idle(reg: &Registry, ctx: &Context) {
    // SAFETY: `ctx` is the calling thread's claimed context.
    if unsafe { ctx.store.idle_tick(reg.keep_pages()) } {
        idle_slow(reg, ctx);
    }
}

#[cold]
fn idle_slow(reg: &Registry, ctx: &Context) {
    // SAFETY: `ctx` is the calling thread's claimed context.
    unsafe { ctx.store.trim_if_due(reg.keep_pages()) };
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
///   (`helping_forbidden`): the allocation goes through;
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
fn make_room(reg: &Registry, ctx: &Context) {
    if reg.outstanding() < reg.max_jobs() as u64 || helping_forbidden() {
        return;
    }
    match Doing::of(ctx) {
        Doing::TopLevel => make_room_by_running_jobs(reg, ctx),
        doing => wait_for_room(reg, ctx, doing),
    }
}

/// `make_room` at a thread's top level: run queued jobs.
fn make_room_by_running_jobs(reg: &Registry, ctx: &Context) {
    let mut stall = Stall::new(reg);
    let mut searching = false;
    let mut backoff = reg.backoff();
    while reg.outstanding() >= reg.max_jobs() as u64 {
        if ThisThread::new(reg, ctx).find_and_run_any(&mut searching) {
            continue;
        }
        stall.check(reg, Doing::TopLevel);
        backoff.snooze(backoff.elapsed());
    }
}

/// `make_room` inside a job, a wait or a guard: run nothing, wait for
/// other threads to finish jobs.
fn wait_for_room(reg: &Registry, ctx: &Context, doing: Doing) {
    let (running, guards) = ctx.own_unfinished();
    let own = (running + guards) as u64;
    let mut stall = Stall::new(reg);
    let mut backoff = reg.backoff();
    while reg.outstanding().saturating_sub(own) >= reg.max_jobs() as u64
        && other_workers_active(reg, ctx)
    {
        stall.check(reg, doing);
        backoff.snooze(backoff.elapsed());
    }
}

/// Is a worker other than the calling thread active (taking queued
/// jobs)? Workers `0..active_workers()` are.
fn other_workers_active(reg: &Registry, ctx: &Context) -> bool {
    let active = reg.sleep().active() as usize;
    let me = usize::from(ctx.is_worker && (ctx.index as usize) < active);
    active > me
}

/// Jobs finished so far, over all threads.
fn finished_total(reg: &Registry) -> u64 {
    (0..reg.num_contexts())
        .map(|i| reg.context(i).counters.finished.load(Ordering::Acquire))
        .sum()
}

/// Back-pressure for a declared-access job, before its resource locks
/// are taken (`access::schedule_core`): under them no job may run nor
/// a thread wait, so `make_room` lets the allocation through there.
/// Applied here when that allocation would need a new page, as
/// `alloc_slow` would apply it.
#[inline]
pub(crate) fn make_room_before_locks(reg: &Registry, ctx: &Context) {
    // SAFETY: `ctx` is the calling thread's claimed context; no other
    // store call is in progress on this thread.
    if !unsafe { ctx.store.has_free() } {
        make_room(reg, ctx);
    }
}

/// `MAX_JOBS_STALL`, or what a test set (`set_max_jobs_stall`).
fn max_jobs_stall(reg: &Registry) -> Duration {
    Duration::from_nanos(reg.max_jobs_stall_ns().load(Ordering::Relaxed))
}

/// Make back-pressure give up (panic) after `stall` without a finished
/// job instead of `MAX_JOBS_STALL`, so tests reach the stall quickly.
#[cfg(all(test, not(loom)))]
pub(crate) fn set_max_jobs_stall(reg: &Registry, stall: Duration) {
    reg.max_jobs_stall_ns()
        .store(stall.as_nanos() as u64, Ordering::Relaxed);
}

thread_local! {
    /// Depth of access scheduling on this thread: while non-zero, resource
    /// locks are held and no job may run here (one could lock them again).
    static NO_HELP: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Is this thread inside a locked access schedule? Back-pressure
/// (`make_room`) then lets the allocation through, neither running jobs
/// nor waiting: access's `schedule_core` applied it before taking the
/// locks.
pub(crate) fn helping_forbidden() -> bool {
    NO_HELP.with(|c| c.get() != 0)
}

/// Marks this thread inside a locked access schedule until dropped
/// (access's `schedule_core` and `now`, around their resource locks).
pub(crate) struct NoHelp;
impl NoHelp {
    pub(crate) fn enter() -> NoHelp {
        NO_HELP.with(|c| c.set(c.get() + 1));
        NoHelp
    }
}
impl Drop for NoHelp {
    fn drop(&mut self) {
        NO_HELP.with(|c| c.set(c.get() - 1));
    }
}

/// Where a thread under back-pressure is (`make_room`).
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
            last: finished_total(reg),
            since: Instant::now(),
            limit: max_jobs_stall(reg),
        }
    }

    /// Panic if no job finished for the limit (`make_room`, "Panics").
    fn check(&mut self, reg: &Registry, doing: Doing) {
        let now = finished_total(reg);
        if now != self.last {
            self.last = now;
            self.since = Instant::now();
        } else if self.since.elapsed() >= self.limit {
            panic!(
                "jobsys: {} jobs are unfinished (Config::max_jobs is {}) and none finished in \
                 {:?} while this thread, {}, waited for room to schedule another; they wait \
                 for something this thread has not done yet, or for threads that are blocked",
                reg.outstanding(),
                reg.max_jobs(),
                self.limit,
                doing.describe()
            );
        }
    }
}
