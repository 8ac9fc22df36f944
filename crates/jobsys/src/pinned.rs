//! Pinned jobs and thread indices: work that must run on one thread (the
//! thread that built the system, a worker, or an outside thread such as a
//! render or IO thread that registered itself), and the dense index of each
//! thread the system knows.
//!
//! Each context has a `PinnedQueue`: a short FIFO behind a mutex that any
//! thread pushes a runnable pinned job onto and only the owning thread
//! pops. Pinned jobs never enter the work-stealing deques, so nobody else
//! can take them; `run_entry` also refuses a pinned job on any other
//! thread (a waiter helping through a handle). A push wakes the target
//! thread wherever it sleeps: a worker's idle park or bench, or a wait in
//! `complete`.
//!
//! Who runs them: a worker, before anything else it looks for; a thread in
//! `complete` or a scope's wait, all of its ready pinned jobs (it is idle
//! anyway, as in enkiTS); any thread in `run_pinned`.
//!
//! Thread indices (the rule docs/engine.md states): 0 is the building
//! thread, `1..=workers` the workers, and a thread that registers takes the
//! smallest index above the workers that no live registration holds
//! (`ThreadTable`); its exit frees it. So every index is below
//! `workers + 1 + N`, N the most threads registered at once, whatever the
//! order in which threads register, merely schedule and exit. Contexts are
//! not indices: any thread that uses the system claims one, registered or
//! not.
//!
//! A registration is one thread's, never its index's next holder's: a
//! `ThreadIndex` names the context and the registration number (per index,
//! counted up each time the index is taken), and `pin_target` accepts a pin
//! only while that registration is live on that context; a stale one is
//! given `NO_THREAD`, which no context is, so the job is cancelled as
//! pinned to a thread that is gone. An accepted job counts as in flight on
//! its context until it is queued there or found cancelled; a thread that
//! exits while any are in flight leaves its context claimed, and the last
//! of them releases it (`release_claim`). So no job accepted for one
//! registration can reach a thread that claims the context later.
//!
//! A registered thread's queue is open from `register_thread` until the
//! thread exits (its claim on the context is released); then its queued
//! pinned jobs are cancelled, and so is every job pinned to it that
//! becomes runnable after. At shutdown, jobs pinned to outside threads
//! other than the one dropping the system are cancelled (no outside thread
//! can call in any more). See docs/engine.md.

use crate::context::Context;
use crate::job::Entry;
use crate::pinned_queue::{resolve, ThreadTable, NO_THREAD};
use crate::registry::Registry;
use crate::registry::ThisThread;
use crate::sync::lock;
use std::sync::atomic::Ordering;

// Every thread index is below the tracer's base of unindexed threads: at
// most the workers, the building thread and one registered thread per
// context.
const _: () = assert!(
    crate::MAX_WORKERS + 1 + crate::slot::MAX_PIN_CONTEXTS
        < crate::trace::UNINDEXED_THREAD_BASE as usize
);

/// The registration number of the building thread's (index 0), the first
/// and only one that index ever has (`ThisThread::register_main`).
const MAIN_REGISTRATION: u32 = 1;

/// Where a pinned job runs (`JobBuilder::pin`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pin {
    /// The thread that built the system (thread index 0).
    Main,
    /// The worker with thread index `i`, `1..=workers` (the thread named
    /// `jobsys-worker-{i}`; `docs/engine.md`, "Thread index"). Any other
    /// `i` panics where the job is scheduled.
    Worker(usize),
    /// An outside thread that called `JobSystem::register_thread`.
    Thread(ThreadIndex),
}

/// One registration of a thread (`JobSystem::register_thread`): its index
/// (`get`), dense and stable while the thread lives, and which thread holds
/// it. After the thread exits, its index is free for a thread that
/// registers later, but this value still names the exited thread: a job
/// pinned with it is cancelled, never run by the index's next holder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ThreadIndex {
    pub(crate) system: u32,
    /// The registered thread's context, or `NO_THREAD` for a registration
    /// known to have ended (`JobSystem::registered_thread`).
    pub(crate) ctx: u32,
    pub(crate) index: u32,
    /// Which registration of `index` (counted from 1, `ThreadTable`).
    pub(crate) registration: u32,
}

impl ThreadIndex {
    /// The index (`JobSystem::thread_index` on that thread).
    pub fn get(self) -> usize {
        self.index as usize
    }

    /// Which registration of this index it is (1 for its first holder,
    /// then counted up each time the index is taken). For the C API's
    /// pins; not part of the Rust API.
    #[doc(hidden)]
    pub fn registration(self) -> u32 {
        self.registration
    }
}

/// A pinned job's target (`pinned::pin_target`), counted in flight there
/// until the job is submitted with it; dropped before (a panic between
/// `pin_target` and the submit), it gives the count back.
pub(crate) struct PinTicket<'r> {
    reg: &'r Registry,
    target: u32,
}

impl PinTicket<'_> {
    /// The context the job is pinned to (`alloc_pinned_job`).
    pub(crate) fn target(&self) -> u32 {
        self.target
    }

    /// The job was submitted with `target`: where it is queued (or found
    /// cancelled) resolves the count now.
    pub(crate) fn submitted(self) {
        std::mem::forget(self);
    }
}

impl Drop for PinTicket<'_> {
    fn drop(&mut self) {
        crate::pinned::resolve_pinned(self.reg, self.target);
    }
}

impl ThisThread<'_> {
    /// Register the building thread (`self.ctx`, its own) as index 0, at build.
    pub(crate) fn register_main(self) -> ThreadIndex {
        let mut table = thread_table(self.reg);
        let e = &mut table.entries[0];
        debug_assert_eq!(e.registrations, 0, "the building thread registers once");
        e.registrations = MAIN_REGISTRATION;
        e.holder = Some(self.ctx.index);
        self.reg.main_ctx().store(self.ctx.index, Ordering::Relaxed);
        self.open_registration(0, MAIN_REGISTRATION)
    }

    /// Register `self.ctx` (the caller's own) as a thread that runs pinned jobs:
    /// its registration if it has one, else a new one with the smallest
    /// free index (`ThreadTable::take`).
    #[track_caller]
    pub(crate) fn register(self) -> ThreadIndex {
        assert!(
            !self.ctx.is_worker,
            "jobsys: register_thread on a worker thread (workers have their index already)"
        );
        // Lock order: the table, then a context's queue (`pin_target`
        // takes only the queue; `close_pinned` takes them one at a time).
        let mut table = thread_table(self.reg);
        {
            let q = lock(&self.ctx.pinned.inner);
            if q.open {
                return ThreadIndex {
                    system: self.reg.id(),
                    ctx: self.ctx.index,
                    index: q.index,
                    registration: q.registration,
                };
            }
            if q.closed_for_good {
                // The thread is exiting (a `Drop` of a job its exit
                // cancelled registers): a registration that is over before
                // it began, so jobs pinned with it are cancelled.
                drop(q);
                let (index, registration) = table.take(self.ctx.index, false);
                return ThreadIndex {
                    system: self.reg.id(),
                    ctx: NO_THREAD,
                    index,
                    registration,
                };
            }
        }
        let (index, registration) = table.take(self.ctx.index, true);
        self.open_registration(index, registration)
    }

    /// Open `self.ctx`'s queue for the registration `(index, registration)`,
    /// which the caller just entered in the table (and holds its lock).
    fn open_registration(self, index: u32, registration: u32) -> ThreadIndex {
        let mut q = lock(&self.ctx.pinned.inner);
        q.index = index;
        q.registration = registration;
        q.open = true;
        self.ctx.pinned.index.store(index, Ordering::Relaxed);
        self.ctx.pinned.open.store(true, Ordering::Release);
        ThreadIndex {
            system: self.reg.id(),
            ctx: self.ctx.index,
            index,
            registration,
        }
    }

    /// The calling thread's index, if the system knows it (`self.ctx` is its own).
    pub(crate) fn thread_index_of(self) -> Option<usize> {
        if self.ctx.is_worker || self.ctx.pinned.is_open() {
            Some(self.ctx.pinned.index.load(Ordering::Relaxed) as usize)
        } else {
            None
        }
    }

    /// The thread holding `self.ctx` (its own, not a worker's) lets go of it
    /// (`Claim::drop`, last): release the claim, or, while jobs accepted
    /// for it are in flight, leave that to the last of them (`resolve`).
    pub(crate) fn release_claim(self) {
        let mut q = lock(&self.ctx.pinned.inner);
        if q.in_flight > 0 {
            q.claim_held = true;
        } else {
            // Release: the next claimer (Acquire under claim_lock) sees all
            // our owner-only writes (free list, deque).
            self.ctx.claimed.store(false, Ordering::Release);
        }
    }

    /// Queue the runnable pinned job `e` for context `target` and wake that
    /// thread. If no thread holds the context any more, the job is
    /// cancelled instead (it finishes failed, `JobError::Cancelled`).
    /// Resolves the in-flight count `pin_target` took for it.
    pub(crate) fn push_pinned(self, e: Entry, target: u32) {
        if crate::classes::is_class(target) {
            return self.push_class(e, target);
        }
        if target != NO_THREAD {
            let t = self.reg.context(target as usize);
            if t.pinned.push(&t.claimed, e, !t.is_worker) {
                self.wake_pinned_owner(t);
                return;
            }
        }
        // The thread was gone when the job was scheduled (`NO_THREAD`), or
        // (rare) exited between the caller's check and the push
        // (`make_runnable` cancels before releasing when it sees that).
        self.cancel_pinned_entry(e);
        crate::pinned::resolve_pinned(self.reg, target);
    }

    /// Wake `t`'s thread wherever it sleeps, so it sees its pinned queue:
    /// a worker parked idle or benched, or any thread parked in `complete`.
    /// Pairs with the owner's re-check of `has_any` after registering as
    /// asleep (both sides order through the sleepers / waiters lock).
    fn wake_pinned_owner(self, t: &Context) {
        let traced = |w| crate::trace::wake_issued(self.reg.site(self.ctx), Some(w));
        if t.is_worker && self.reg.sleep().wake_worker(t.index, traced) {
            crate::context::bump(&self.ctx.counters.wakes);
        }
        self.reg.waiters().wake_ctx(t, |w| {
            crate::trace::wake_issued(self.reg.site(self.ctx), Some(w))
        });
    }

    /// Queue the runnable class job `e` (`classes.rs`) and wake one worker
    /// of its class: a sleeping one (idle or benched), round-robin; if
    /// none sleeps, every one parked in a wait (a class worker in
    /// `complete` takes its class's jobs). Awake workers of the class see
    /// the queue before they sleep: each re-checks it after registering as
    /// asleep or as parked (pairs with `wake_worker`'s sleepers lock and
    /// `wake_ctx`'s fence). A class target exists only while the classes
    /// are set, and the workers never close: the push cannot fail.
    fn push_class(self, e: Entry, target: u32) {
        let Some(classes) = self.reg.classes().get() else {
            unreachable!("a class target without classes");
        };
        let (queue, workers) = classes.queue(target);
        queue.push(e);
        let n = workers.len();
        let start = queue.wake_start(n);
        let traced = |w| crate::trace::wake_issued(self.reg.site(self.ctx), Some(w));
        // Thread index `w` is context `w - 1`.
        for k in 0..n {
            let w = workers[(start + k) % n] as u32 - 1;
            if w != self.ctx.index && self.reg.sleep().wake_worker(w, traced) {
                crate::context::bump(&self.ctx.counters.wakes);
                return;
            }
        }
        for &w in workers {
            let t = self.reg.context(w - 1);
            if !std::ptr::eq(t, self.ctx) {
                self.reg.waiters().wake_ctx(t, traced);
            }
        }
    }

    /// Run one job from the calling worker's class queue, if it has one;
    /// `on_claim` as in `run_entry`. Returns whether one ran.
    pub(crate) fn run_one_class(self, on_claim: &mut dyn FnMut()) -> bool {
        let Some(q) = self.reg.class_queue_of(self.ctx) else {
            return false;
        };
        while let Some(e) = q.pop() {
            if self.run_entry(e, on_claim) {
                return true;
            }
        }
        false
    }

    /// Is a job waiting in the calling worker's class queue?
    #[inline]
    pub(crate) fn class_work_visible(self) -> bool {
        self.reg
            .class_queue_of(self.ctx)
            .is_some_and(|q| q.has_any())
    }

    /// May the calling thread run a job pinned to `target`? Its own
    /// context's, or its class's when it is a worker of that class.
    #[inline]
    pub(crate) fn may_run_pinned_to(self, target: u32) -> bool {
        target == self.ctx.index
            || (crate::classes::is_class(target)
                && self.reg.classes().get().is_some_and(|c| {
                    self.ctx.is_worker
                        && c.target_of_worker(self.ctx.index as usize + 1) == Some(target)
                }))
    }

    /// Run the calling thread's ready pinned jobs: at most as many as were
    /// queued on entry (a pinned job that pins another to this thread does
    /// not keep the call going). Returns how many ran.
    pub(crate) fn run_pinned(self) -> usize {
        let n = self.ctx.pinned.len.load(Ordering::Acquire);
        let mut ran = 0;
        for _ in 0..n {
            let Some(e) = self.ctx.pinned.pop() else {
                break;
            };
            if self.run_entry(e, &mut || {}) {
                ran += 1;
            }
        }
        ran
    }

    /// Run one of the calling thread's pinned jobs; `on_claim` as in
    /// `run_entry`. Returns whether one ran.
    #[inline]
    pub(crate) fn run_one_pinned(self, on_claim: &mut dyn FnMut()) -> bool {
        while let Some(e) = self.ctx.pinned.pop() {
            if self.run_entry(e, on_claim) {
                return true;
            }
        }
        false
    }

    /// The thread holding `of` is gone (its claim is released, or the
    /// system shuts down without it): close its pinned queue and cancel
    /// what it held. `self.ctx` is the calling thread's context.
    pub(crate) fn close_pinned(self, of: &Context) {
        if of.is_worker {
            return;
        }
        let (entries, ended) = of.pinned.close();
        // Its index is free for the next thread that registers (after the
        // queue's lock: lock order in `register`).
        if let Some((index, registration)) = ended {
            thread_table(self.reg).free(index, registration);
        }
        for e in entries {
            self.cancel_pinned_entry(e);
        }
    }

    /// Shutdown (`self`: the thread that shuts the system down): no outside
    /// thread can call in any more, so the jobs pinned to those other than
    /// `self.ctx` can never run: cancel them.
    pub(crate) fn close_outside_pinned(self) {
        for i in self.reg.num_workers()..self.reg.num_contexts() {
            if i != self.ctx.index as usize {
                self.close_pinned(self.reg.context(i));
            }
        }
    }

    /// Cancel a runnable pinned job whose thread is gone.
    fn cancel_pinned_entry(self, e: Entry) {
        let h = crate::JobHandle {
            slot: e.slot,
            gen: e.gen,
            system: self.reg.id(),
        };
        crate::cancel::cancel_with(self.reg, self.ctx, h, PINNED_GONE, true);
    }
}

/// Who holds which thread index (poisoning ignored: every critical
/// section is one small update that cannot panic halfway).
fn thread_table(reg: &Registry) -> std::sync::MutexGuard<'_, ThreadTable> {
    reg.threads().lock().unwrap_or_else(|e| e.into_inner())
}

/// The registration of thread index `index` numbered `registration`
/// (`None`: the last one), or `None` if there never was one. For the C
/// API, whose pins carry numbers.
pub(crate) fn registered_thread(
    reg: &Registry,
    index: usize,
    registration: Option<u32>,
) -> Option<ThreadIndex> {
    let table = thread_table(reg);
    if (1..=table.workers).contains(&index) {
        return None;
    }
    let e = table.entries.get(index)?;
    let registration = registration.unwrap_or(e.registrations);
    if registration == 0 || registration > e.registrations {
        return None;
    }
    let ctx = match e.holder {
        Some(c) if registration == e.registrations => c,
        _ => NO_THREAD,
    };
    Some(ThreadIndex {
        system: reg.id(),
        ctx,
        index: index as u32,
        registration,
    })
}

/// The context a job pinned to `pin` runs on, or `NO_THREAD` if the
/// thread `pin` names is gone (its registration ended): then the job
/// is cancelled where it would be queued. A job pinned to an outside
/// thread counts as in flight on its context from here until
/// `push_pinned` or `make_runnable` resolves it: the caller submits
/// the job with the ticket's target, then calls `submitted`.
///
/// # Panics
/// On a worker index out of range and a `ThreadIndex` of another
/// system.
#[track_caller]
pub(crate) fn pin_target(reg: &Registry, on: RunOn) -> PinTicket<'_> {
    let target = match on {
        RunOn::Thread(pin) => accept_pin(reg, pin),
        RunOn::Class(target) => target,
    };
    PinTicket { reg, target }
}

/// Where a pinned job runs: on one thread (`JobBuilder::pin`), or on any
/// worker of a core class (`JobBuilder::core_class`: the class's target,
/// `classes.rs`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum RunOn {
    Thread(crate::Pin),
    Class(u32),
}

#[track_caller]
fn accept_pin(reg: &Registry, pin: crate::Pin) -> u32 {
    let t = match pin {
        crate::Pin::Main => ThreadIndex {
            system: reg.id(),
            ctx: reg.main_ctx().load(Ordering::Relaxed),
            index: 0,
            registration: MAIN_REGISTRATION,
        },
        crate::Pin::Worker(i) => {
            assert!(
                (1..=reg.num_workers()).contains(&i),
                "jobsys: Pin::Worker({i}): not a worker's thread index; this system's \
                 workers are thread indices 1..={} (docs/engine.md, \"Thread index\")",
                reg.num_workers()
            );
            // Worker thread index `i` holds context `i - 1`.
            return (i - 1) as u32;
        }
        crate::Pin::Thread(t) => {
            assert!(
                t.system == reg.id(),
                "jobsys: Pin::Thread: the ThreadIndex belongs to another JobSystem"
            );
            t
        }
    };
    if t.ctx as usize >= reg.num_contexts() {
        return NO_THREAD;
    }
    let c = reg.context(t.ctx as usize);
    // Under the queue's lock, against `close_pinned`: either the
    // registration is still open and the job counts in flight before
    // the thread's exit looks (`release_claim`), or it is over.
    let mut q = lock(&c.pinned.inner);
    if !(q.open && q.index == t.index && q.registration == t.registration) {
        return NO_THREAD;
    }
    q.in_flight += 1;
    t.ctx
}

/// A job `pin_target` counted in flight on `target` was found cancelled
/// (or never scheduled): uncount it. No-op for targets that count
/// nothing (workers, `NO_THREAD`).
pub(crate) fn resolve_pinned(reg: &Registry, target: u32) {
    if let Some(t) = outside_target(reg, target) {
        resolve(&t.claimed, &mut lock(&t.pinned.inner));
    }
}

/// The outside thread's context `target` names: `None` for a worker
/// and for `NO_THREAD`.
fn outside_target(reg: &Registry, target: u32) -> Option<&Context> {
    if target == NO_THREAD
        || crate::classes::is_class(target)
        || (target as usize) < reg.num_workers()
    {
        return None;
    }
    Some(reg.context(target as usize))
}

/// Is context `target` held by a thread that runs pinned jobs? A class
/// queue always is (its workers live as long as the system).
pub(crate) fn pinned_open(reg: &Registry, target: u32) -> bool {
    crate::classes::is_class(target)
        || (target != NO_THREAD && reg.context(target as usize).pinned.is_open())
}
/// Why a pinned job was cancelled when its thread was gone.
pub(crate) const PINNED_GONE: &str =
    "it was pinned to a thread that exited (or never ran pinned jobs before the system shut down)";
