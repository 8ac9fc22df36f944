//! The failure log: what a failed job reports after its slot is reused.
//!
//! A failed job's slot is recycled like any other (so a program that fails
//! a job every frame does not grow). Before the slot can be freed, `finish`
//! records the failure here under the job's (slot address, generation);
//! a wait on a handle whose slot moved on, and a dependency attached to
//! such a handle, look it up. Generations are never reused (`store.rs`,
//! `RETIRED_GEN`), so a key names one job forever.
//!
//! The log keeps the most recent `capacity` failures (`Builder::
//! failure_history`); an older one is forgotten and its handle then reads
//! as finished without error. `Stats::failures_forgotten` counts them.

use crate::error::Failure;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// One recorded failure: the shared cause and the job's state flags
/// (`POISONED`, `CANCELLED`) that say how it failed.
#[derive(Clone)]
pub(crate) struct Recorded {
    pub failure: Arc<Failure>,
    pub flags: u64,
}

type Key = (usize, u32);

pub(crate) struct FailureLog {
    /// Entries in the log; read without the lock by `lookup`'s fast path.
    len: AtomicUsize,
    forgotten: AtomicU64,
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    map: HashMap<Key, Recorded>,
    order: VecDeque<Key>,
}

impl FailureLog {
    pub(crate) fn new(capacity: usize) -> FailureLog {
        FailureLog {
            len: AtomicUsize::new(0),
            forgotten: AtomicU64::new(0),
            capacity,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Record the failure of the job (slot, gen). Called by `finish` before
    /// the finishing CAS can free the slot; the lock release here happens
    /// before that CAS, so whoever sees the next generation (Acquire) and
    /// then locks sees this entry.
    pub(crate) fn record(&self, slot: usize, gen: u32, rec: Recorded) {
        if self.capacity == 0 {
            self.forgotten.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // Records pushed out are dropped after the lock is released: the
        // last reference to a panic payload runs the user's `Drop`, which
        // may wait on a job, and a wait that fails looks up this log (it
        // locked the mutex it held: a self-deadlock).
        let mut gone = Vec::new();
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match g.map.insert((slot, gen), rec) {
            None => g.order.push_back((slot, gen)),
            Some(old) => gone.push(old),
        }
        while g.order.len() > self.capacity {
            if let Some(old) = g.order.pop_front() {
                gone.extend(g.map.remove(&old));
                self.forgotten.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.len.store(g.order.len(), Ordering::Release);
        drop(g);
        drop(gone);
    }

    /// No failure is remembered (one load).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len.load(Ordering::Acquire) == 0
    }

    /// The failure of the finished job (slot, gen), if it failed and is
    /// still remembered. One load when no job ever failed.
    #[inline]
    pub(crate) fn lookup(&self, slot: usize, gen: u32) -> Option<Recorded> {
        if self.len.load(Ordering::Acquire) == 0 {
            return None;
        }
        self.lookup_locked(slot, gen)
    }

    #[cold]
    fn lookup_locked(&self, slot: usize, gen: u32) -> Option<Recorded> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map
            .get(&(slot, gen))
            .cloned()
    }

    /// Failures dropped from the log because it was full.
    pub(crate) fn forgotten(&self) -> u64 {
        self.forgotten.load(Ordering::Relaxed)
    }
}
