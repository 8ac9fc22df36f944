//! Data of the pinned jobs and thread indices (`pinned.rs` holds the
//! protocol, as `Registry` methods): each context's queue of pinned jobs
//! (`PinnedQueue`, a field of `Context`) and the table of who holds which
//! thread index (`ThreadTable`, a field of `Registry`). A leaf: it names
//! neither the registry nor the context, so both can hold these types.

use crate::job::Entry;
use crate::sync::{lock, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

/// The pin target of a job whose thread was gone when it was scheduled
/// (`pinned::pin_target`): no context has this index (`Registry::new`
/// keeps them below it), so the job is cancelled where it would be queued.
pub(crate) const NO_THREAD: u32 = (crate::slot::MAX_PIN_CONTEXTS - 1) as u32;

/// Who holds which thread index (`Registry::threads`): one entry per index,
/// 0 the building thread's, `1..=workers` unused (workers are never
/// registered), then the registered threads'.
pub(crate) struct ThreadTable {
    pub(crate) entries: Vec<IndexEntry>,
    pub(crate) workers: usize,
}

#[derive(Clone, Copy, Default)]
pub(crate) struct IndexEntry {
    /// How many registrations took this index: the number of the last one
    /// (0: never taken).
    pub(crate) registrations: u32,
    /// The context of the live registration, if one holds the index now.
    pub(crate) holder: Option<u32>,
}

impl ThreadTable {
    pub(crate) fn new(workers: usize) -> ThreadTable {
        ThreadTable {
            entries: vec![IndexEntry::default(); workers + 1],
            workers,
        }
    }

    /// Take the smallest index above the workers that no live registration
    /// holds, for a new registration; its number. `live`: the registration
    /// holds it from now on (else it is over before it began: a thread
    /// registering during its own exit).
    pub(crate) fn take(&mut self, ctx: u32, live: bool) -> (u32, u32) {
        let i = (self.workers + 1..self.entries.len())
            .find(|&i| self.entries[i].holder.is_none())
            .unwrap_or_else(|| {
                self.entries.push(IndexEntry::default());
                self.entries.len() - 1
            });
        let e = &mut self.entries[i];
        // Never 0 (0 is "never taken"); a wrap after 2^32 registrations of
        // one index could only confuse a `ThreadIndex` that old.
        e.registrations = e.registrations.wrapping_add(1).max(1);
        if live {
            e.holder = Some(ctx);
        }
        (i as u32, e.registrations)
    }

    /// The registration `(index, registration)` ended (its thread exits).
    pub(crate) fn free(&mut self, index: u32, registration: u32) {
        if let Some(e) = self.entries.get_mut(index as usize) {
            if e.registrations == registration {
                e.holder = None;
            }
        }
    }
}

/// No thread index assigned to a context yet.
pub(crate) const UNASSIGNED: u32 = u32::MAX;

/// A context's pinned jobs and its thread index.
pub(crate) struct PinnedQueue {
    pub(crate) inner: Mutex<Inner>,
    /// Entries queued: a lock-free emptiness check for the owner's loops.
    pub(crate) len: AtomicUsize,
    /// The thread index of the registration this context carries (workers:
    /// their index + 1), `Inner::index` readable without the lock. Its
    /// owner reads it (`thread_index`), after writing it; other threads
    /// read it only to number this context's thread for hooks and traces
    /// (`pinned::thread_number`; a stale value there mislabels, nothing
    /// more). Kept when the registration ends (so the thread's last events,
    /// at its exit or the system's drop, keep its number); `UNASSIGNED`
    /// again when another thread claims the context.
    pub(crate) index: AtomicU32,
    /// `Inner::open`, readable without the lock (`thread_index` is called
    /// per job to pick a scratch buffer); written under it.
    pub(crate) open: AtomicBool,
}

pub(crate) struct Inner {
    pub(crate) entries: VecDeque<Entry>,
    /// A thread that runs pinned jobs holds this context (always for a
    /// worker; for an outside thread, from `register` to its exit).
    pub(crate) open: bool,
    /// Closed because its thread exits (or the system shut down): a
    /// `register` during that exit (a `Drop` of a job cancelled by the
    /// close, say) must not open it again, or jobs pinned to the dead
    /// thread would wait for ever. Cleared for the context's next owner
    /// (`reopen_for_new_owner`).
    pub(crate) closed_for_good: bool,
    /// The registration the context carries (while `open`) or carried
    /// last: its thread index and number (`ThreadIndex`).
    pub(crate) index: u32,
    pub(crate) registration: u32,
    /// Pinned jobs accepted for this context (`pinned::pin_target`) and
    /// not yet queued here or found cancelled (`resolve`). While any are,
    /// the context is not handed to another thread.
    pub(crate) in_flight: u32,
    /// The owner let go of the context while jobs were in flight: the last
    /// of them releases the claim (`ThisThread::release_claim`).
    pub(crate) claim_held: bool,
}

impl PinnedQueue {
    pub(crate) fn new(worker: Option<u32>) -> PinnedQueue {
        PinnedQueue {
            inner: Mutex::new(Inner {
                entries: VecDeque::new(),
                open: worker.is_some(),
                closed_for_good: false,
                index: worker.map_or(UNASSIGNED, |i| i + 1),
                registration: 0,
                in_flight: 0,
                claim_held: false,
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
    /// `accepted`: `e` was counted in flight by `pin_target` (jobs pinned
    /// to an outside thread); once queued it is resolved, under the same
    /// lock. Not queued, the caller resolves it after cancelling it: until
    /// then it is runnable, and a thread that claimed the context could
    /// take it.
    pub(crate) fn push(&self, claimed: &AtomicBool, e: Entry, accepted: bool) -> bool {
        let mut q = lock(&self.inner);
        if !q.open {
            return false;
        }
        q.entries.push_back(e);
        self.len.store(q.entries.len(), Ordering::Release);
        if accepted {
            resolve(claimed, &mut q);
        }
        true
    }

    pub(crate) fn pop(&self) -> Option<Entry> {
        if !self.has_any() {
            return None;
        }
        let mut q = lock(&self.inner);
        let e = q.entries.pop_front();
        self.len.store(q.entries.len(), Ordering::Release);
        e
    }

    /// Close the queue (its thread is gone) and take what it held, and the
    /// registration that ended here (`(index, number)`; `None` if the
    /// queue was not open).
    pub(crate) fn close(&self) -> (Vec<Entry>, Option<(u32, u32)>) {
        let mut q = lock(&self.inner);
        let ended = q.open.then_some((q.index, q.registration));
        q.open = false;
        q.closed_for_good = true;
        self.open.store(false, Ordering::Release);
        self.len.store(0, Ordering::Release);
        (q.entries.drain(..).collect(), ended)
    }

    /// Is a thread holding the context for pinned jobs? Exact for the
    /// owner itself; for another thread a hint (`push` decides under the
    /// lock).
    pub(crate) fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }

    /// A new thread claims the context (`Registry::claim_external`): it may
    /// register again.
    pub(crate) fn reopen_for_new_owner(&self) {
        let mut q = lock(&self.inner);
        debug_assert!(q.in_flight == 0 && !q.claim_held, "claimed while held");
        q.closed_for_good = false;
        // The new owner has no thread index until it registers.
        self.index.store(UNASSIGNED, Ordering::Relaxed);
    }
}

/// One job counted in flight on `ctx` (`pinned::pin_target`) was queued
/// there or found cancelled: uncount it; the last one releases a claim its
/// exited owner left held (`ThisThread::release_claim`). `q` is `ctx`'s
/// locked queue.
pub(crate) fn resolve(claimed: &AtomicBool, q: &mut Inner) {
    debug_assert!(q.in_flight > 0, "a pinned job resolved twice");
    q.in_flight -= 1;
    if q.in_flight == 0 && q.claim_held {
        q.claim_held = false;
        // Release: as `Claim::drop`'s own release, which this stands for
        // (the exited owner's writes reach us through this lock).
        claimed.store(false, Ordering::Release);
    }
}
