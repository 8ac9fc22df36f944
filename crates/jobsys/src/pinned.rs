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
//! A registered thread's queue is open from `register_thread` until the
//! thread exits (its claim on the context is released); then its queued
//! pinned jobs are cancelled, and so is every job pinned to that index
//! that becomes runnable while no thread holds it. At shutdown, jobs pinned
//! to outside threads other than the one dropping the system are cancelled
//! (no outside thread can call in any more). See docs/engine.md.

use crate::context::Context;
use crate::job::Entry;
use crate::registry::Registry;
use crate::sync::{lock, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

/// Where a pinned job runs (`JobSystem::schedule_pinned`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pin {
    /// The thread that built the system (thread index 0).
    Main,
    /// The worker thread named `jobsys-worker-{i}` (thread index `i + 1`).
    Worker(usize),
    /// An outside thread that called `JobSystem::register_thread`.
    Thread(ThreadIndex),
}

/// A registered thread's index (`JobSystem::register_thread`): dense,
/// stable while the thread lives; reused by a thread that registers after
/// it exits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ThreadIndex {
    pub(crate) system: u32,
    pub(crate) ctx: u32,
    pub(crate) index: u32,
}

impl ThreadIndex {
    /// The index (`JobSystem::thread_index` on that thread).
    pub fn get(self) -> usize {
        self.index as usize
    }
}

/// No thread index assigned to a context yet.
const UNASSIGNED: u32 = u32::MAX;

/// A context's pinned jobs and its thread index.
pub(crate) struct PinnedQueue {
    inner: Mutex<Inner>,
    /// Entries queued: a lock-free emptiness check for the owner's loops.
    len: AtomicUsize,
    /// The thread index this context carries when registered (workers:
    /// their index + 1; kept when the thread exits, for the next one).
    index: AtomicU32,
    /// `Inner::open`, readable without the lock (`thread_index` is called
    /// per job to pick a scratch buffer); written under it.
    open: AtomicBool,
}

struct Inner {
    entries: VecDeque<Entry>,
    /// A thread that runs pinned jobs holds this context (always for a
    /// worker; for an outside thread, from `register` to its exit).
    open: bool,
    /// Closed because its thread exits (or the system shut down): a
    /// `register` during that exit (a `Drop` of a job cancelled by the
    /// close, say) must not open it again, or jobs pinned to the dead
    /// thread would wait for ever. Cleared for the context's next owner
    /// (`reopen_for_new_owner`).
    closed_for_good: bool,
}

impl PinnedQueue {
    pub(crate) fn new(worker: Option<u32>) -> PinnedQueue {
        PinnedQueue {
            inner: Mutex::new(Inner {
                entries: VecDeque::new(),
                open: worker.is_some(),
                closed_for_good: false,
            }),
            len: AtomicUsize::new(0),
            index: AtomicU32::new(worker.map_or(UNASSIGNED, |i| i + 1)),
            open: AtomicBool::new(worker.is_some()),
        }
    }

    /// Anything queued? One relaxed load (the owner re-checks under the
    /// lock when it pops; a waker's ordering comes from the wake itself).
    #[inline]
    pub(crate) fn has_any(&self) -> bool {
        self.len.load(Ordering::Acquire) != 0
    }

    /// Queue `e` unless no thread holds the context (then `false`).
    fn push(&self, e: Entry) -> bool {
        let mut q = lock(&self.inner);
        if !q.open {
            return false;
        }
        q.entries.push_back(e);
        self.len.store(q.entries.len(), Ordering::Release);
        true
    }

    fn pop(&self) -> Option<Entry> {
        if !self.has_any() {
            return None;
        }
        let mut q = lock(&self.inner);
        let e = q.entries.pop_front();
        self.len.store(q.entries.len(), Ordering::Release);
        e
    }

    /// Close the queue (its thread is gone) and take what it held.
    fn close(&self) -> Vec<Entry> {
        let mut q = lock(&self.inner);
        q.open = false;
        q.closed_for_good = true;
        self.open.store(false, Ordering::Release);
        self.len.store(0, Ordering::Release);
        q.entries.drain(..).collect()
    }

    /// Is a thread holding the context for pinned jobs? Exact for the
    /// owner itself; for another thread a hint (`push` decides under the
    /// lock).
    fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }

    /// Open the queue for its thread, unless it was closed for good.
    fn set_open(&self) {
        let mut q = lock(&self.inner);
        if q.closed_for_good {
            return;
        }
        q.open = true;
        self.open.store(true, Ordering::Release);
    }

    /// A new thread claims the context (`Registry::claim_external`): it may
    /// register again.
    pub(crate) fn reopen_for_new_owner(&self) {
        lock(&self.inner).closed_for_good = false;
    }
}

impl Registry {
    /// Register `ctx` (the caller's own) as a thread that runs pinned
    /// jobs; `fixed` gives the index (0 for the building thread), else it
    /// keeps the context's earlier index or takes the next free one.
    pub(crate) fn register(&self, ctx: &Context, fixed: Option<u32>) -> ThreadIndex {
        assert!(
            !ctx.is_worker,
            "jobsys: register_thread on a worker thread (workers have their index already)"
        );
        let q = &ctx.pinned;
        let index = match (fixed, q.index.load(Ordering::Relaxed)) {
            (Some(i), _) => i,
            (None, UNASSIGNED) => self.next_thread_index.fetch_add(1, Ordering::Relaxed),
            (None, i) => i,
        };
        q.index.store(index, Ordering::Relaxed);
        q.set_open();
        ThreadIndex {
            system: self.id,
            ctx: ctx.index,
            index,
        }
    }

    /// The calling thread's index, if the system knows it (`ctx` is its own).
    pub(crate) fn thread_index_of(&self, ctx: &Context) -> Option<usize> {
        if ctx.is_worker || ctx.pinned.is_open() {
            Some(ctx.pinned.index.load(Ordering::Relaxed) as usize)
        } else {
            None
        }
    }

    /// The context a job pinned to `pin` runs on.
    ///
    /// # Panics
    /// On a worker index out of range, a `ThreadIndex` of another system,
    /// and `Pin::Main` when the building thread could not register.
    pub(crate) fn pin_target(&self, pin: crate::Pin) -> u32 {
        match pin {
            crate::Pin::Main => self.main_ctx.load(Ordering::Relaxed),
            crate::Pin::Worker(i) => {
                assert!(
                    i < self.num_workers,
                    "jobsys: Pin::Worker({i}): this system has {} workers",
                    self.num_workers
                );
                i as u32
            }
            crate::Pin::Thread(t) => {
                assert!(
                    t.system == self.id,
                    "jobsys: Pin::Thread: the ThreadIndex belongs to another JobSystem"
                );
                t.ctx
            }
        }
    }

    /// Queue the runnable pinned job `e` for context `target` and wake that
    /// thread. If no thread holds the context any more, the job is
    /// cancelled instead (it finishes failed, `JobError::Cancelled`).
    pub(crate) fn push_pinned(&self, ctx: &Context, e: Entry, target: u32) {
        let t = self.context(target as usize);
        if t.pinned.push(e) {
            self.wake_pinned_owner(ctx, t);
            return;
        }
        // Rare: the thread exited between the caller's check and the push
        // (`make_runnable` cancels before releasing when it sees that).
        self.cancel_pinned_entry(ctx, e);
    }

    /// Is context `target` held by a thread that runs pinned jobs?
    pub(crate) fn pinned_open(&self, target: u32) -> bool {
        self.context(target as usize).pinned.is_open()
    }

    /// Wake `t`'s thread wherever it sleeps, so it sees its pinned queue:
    /// a worker parked idle or benched, or any thread parked in `complete`.
    /// Pairs with the owner's re-check of `has_any` after registering as
    /// asleep (both sides order through the sleepers / waiters lock).
    fn wake_pinned_owner(&self, ctx: &Context, t: &Context) {
        let traced = |w| crate::trace::wake_issued(self, ctx, Some(w));
        if t.is_worker && self.sleep.wake_worker(t.index, traced) {
            crate::context::bump(&ctx.counters.wakes);
        }
        self.waiters
            .wake_ctx(t, |w| crate::trace::wake_issued(self, ctx, Some(w)));
    }

    /// Run the calling thread's ready pinned jobs: at most as many as were
    /// queued on entry (a pinned job that pins another to this thread does
    /// not keep the call going). Returns how many ran.
    pub(crate) fn run_pinned(&self, ctx: &Context) -> usize {
        let n = ctx.pinned.len.load(Ordering::Acquire);
        let mut ran = 0;
        for _ in 0..n {
            let Some(e) = ctx.pinned.pop() else { break };
            if self.run_entry(ctx, e, &mut || {}) {
                ran += 1;
            }
        }
        ran
    }

    /// Run one of the calling thread's pinned jobs; `on_claim` as in
    /// `run_entry`. Returns whether one ran.
    #[inline]
    pub(crate) fn run_one_pinned(&self, ctx: &Context, on_claim: &mut dyn FnMut()) -> bool {
        while let Some(e) = ctx.pinned.pop() {
            if self.run_entry(ctx, e, on_claim) {
                return true;
            }
        }
        false
    }

    /// The thread holding `ctx` is gone (its claim is released, or the
    /// system shuts down without it): close its pinned queue and cancel
    /// what it held. `by` is the calling thread's context.
    pub(crate) fn close_pinned(&self, by: &Context, ctx: &Context) {
        if ctx.is_worker {
            return;
        }
        for e in ctx.pinned.close() {
            self.cancel_pinned_entry(by, e);
        }
    }

    /// Shutdown (`me`: the thread that shuts the system down): no outside
    /// thread can call in any more, so the jobs pinned to those other than
    /// `me` can never run: cancel them.
    pub(crate) fn close_outside_pinned(&self, me: &Context) {
        for i in self.num_workers..self.num_contexts() {
            if i != me.index as usize {
                self.close_pinned(me, self.context(i));
            }
        }
    }

    /// Cancel a runnable pinned job whose thread is gone.
    fn cancel_pinned_entry(&self, ctx: &Context, e: Entry) {
        let h = crate::JobHandle {
            slot: e.slot,
            gen: e.gen,
            system: self.id,
        };
        self.cancel_with(ctx, h, PINNED_GONE, true);
    }
}

/// Why a pinned job was cancelled when its thread was gone.
pub(crate) const PINNED_GONE: &str =
    "it was pinned to a thread that exited (or never ran pinned jobs before the system shut down)";
