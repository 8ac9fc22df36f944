//! The failure log: what a failed job reports after its slot is reused.
//!
//! A failed job's slot is recycled like any other (so a program that fails
//! a job every frame does not grow). Before the slot can be freed, `finish`
//! records the failure here under the job's (slot address, generation);
//! a wait on a handle whose slot moved on, and a dependency attached to
//! such a handle, look it up. Generations are never reused (`store.rs`,
//! `RETIRED_GEN`) and only grow per slot, so a key names one job forever.
//!
//! The log keeps the most recent `capacity` failures (`Builder::
//! failure_history`). A failure pushed out is not forgotten silently: the
//! slot's *unknown mark* rises to its generation, and a handle of that
//! slot with a generation at or below the mark, not in the log, reads
//! `Outcome::Unknown` (`JobError::OutcomeUnknown`), never success. So an
//! outcome is never wrong; at worst it is unknown (for a job that
//! succeeded in a slot where a later failure was pushed out, too).
//!
//! Memory: the log holds at most `capacity` failures; the marks hold one
//! (address, generation) pair per slot that ever had a failure pushed out
//! (about 20 bytes), so they are bounded by the slots the system ever had
//! (its peak storage: pages are kept until the system drops), at most
//! about a sixth of the slots' own 128 bytes, and nothing in a program
//! whose failures fit the log. `Stats::failures_forgotten` counts the
//! failures pushed out.
//!
//! Unobserved panics: a job's panic that no wait ever read (on the job or
//! on a job that inherited it) is reported when its last reference goes,
//! which is when nothing can read it any more: the log pushed it out and
//! its slot was reused, or the system dropped. `record` attaches the
//! log's [`Unobserved`] to the failure; the failure's `Drop` reports to
//! it. The default prints one line naming the job; `Builder::
//! on_unobserved_panic` replaces that; `Stats::panics_unobserved` counts.

use crate::error::{Failure, PanicHandler, Unobserved};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// One recorded failure: the shared cause and how the job ended (failed,
/// or skipped because a dependency failed).
#[derive(Clone)]
pub(crate) struct Recorded {
    pub failure: Arc<Failure>,
    pub ending: crate::slot::Ending,
}

type Key = (usize, u32);

pub(crate) struct FailureLog {
    /// Entries in the log; read without the lock by `lookup`'s fast path.
    len: AtomicUsize,
    forgotten: AtomicU64,
    capacity: usize,
    inner: Mutex<Inner>,
    /// Where the panics recorded here go if no wait reads them.
    unobserved: Arc<Unobserved>,
}

#[derive(Default)]
struct Inner {
    map: HashMap<Key, Recorded>,
    order: VecDeque<Key>,
    /// Slot address → the highest generation whose failure was pushed out.
    unknown: HashMap<usize, u32>,
}

impl Inner {
    /// `len`: entries plus marks (both make `lookup` look).
    fn len(&self) -> usize {
        self.order.len() + self.unknown.len()
    }

    /// The failure of (slot, gen) was pushed out: raise the slot's mark.
    fn forget(&mut self, (slot, gen): Key) {
        let mark = self.unknown.entry(slot).or_insert(gen);
        *mark = (*mark).max(gen);
    }
}

/// What the log says of a finished job whose slot moved on.
pub(crate) enum Outcome {
    /// It failed, as recorded.
    Failed(Recorded),
    /// It may have failed: a failure of its slot at or after its
    /// generation was pushed out of the log.
    Unknown,
    /// It succeeded.
    Succeeded,
}

impl FailureLog {
    pub(crate) fn new(capacity: usize) -> FailureLog {
        FailureLog {
            len: AtomicUsize::new(0),
            forgotten: AtomicU64::new(0),
            capacity,
            inner: Mutex::new(Inner::default()),
            unobserved: Arc::default(),
        }
    }

    /// Record the failure of the job (slot, gen). Called by `finish` before
    /// the finishing CAS can free the slot; the lock release here happens
    /// before that CAS, so whoever sees the next generation (Acquire) and
    /// then locks sees this entry.
    pub(crate) fn record(&self, slot: usize, gen: u32, rec: Recorded) {
        // Records pushed out are dropped after the lock is released: the
        // last reference to a panic payload runs the user's `Drop`, which
        // may wait on a job, and a wait that fails looks up this log (it
        // locked the mutex it held: a self-deadlock).
        rec.failure.report_to(&self.unobserved);
        let mut gone = Vec::new();
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if self.capacity == 0 {
            g.forget((slot, gen));
            self.forgotten.fetch_add(1, Ordering::Relaxed);
        } else {
            match g.map.insert((slot, gen), rec) {
                None => g.order.push_back((slot, gen)),
                Some(old) => gone.push(old),
            }
        }
        while g.order.len() > self.capacity {
            if let Some(old) = g.order.pop_front() {
                gone.extend(g.map.remove(&old));
                g.forget(old);
                self.forgotten.fetch_add(1, Ordering::Relaxed);
            }
        }
        // Release: pairs with the Acquire load in `lookup`; the lock
        // orders the entries themselves.
        self.len.store(g.len(), Ordering::Release);
        drop(g);
        drop(gone);
    }

    /// Nothing is recorded, neither a failure nor a mark (one load).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.len.load(Ordering::Acquire) == 0
    }

    /// What became of the finished job (slot, gen) whose slot moved on.
    /// One load when nothing was ever recorded.
    #[inline]
    pub(crate) fn lookup(&self, slot: usize, gen: u32) -> Outcome {
        if self.len.load(Ordering::Acquire) == 0 {
            return Outcome::Succeeded;
        }
        self.lookup_locked(slot, gen)
    }

    #[cold]
    fn lookup_locked(&self, slot: usize, gen: u32) -> Outcome {
        let g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        // Under the lock that `record` pushes out and marks under: an entry
        // missing here was either never recorded or is covered by a mark.
        if let Some(rec) = g.map.get(&(slot, gen)) {
            return Outcome::Failed(rec.clone());
        }
        match g.unknown.get(&slot) {
            Some(&mark) if gen <= mark => Outcome::Unknown,
            _ => Outcome::Succeeded,
        }
    }

    /// Slots with an unknown mark (tests: the marks stay bounded; the loom
    /// build has no such test).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn marks(&self) -> usize {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .unknown
            .len()
    }

    /// Report unobserved panics to `h` instead of printing them (set once,
    /// as the system is built).
    pub(crate) fn on_unobserved(&self, h: PanicHandler) {
        self.unobserved.set_handler(h);
    }

    /// Panics reported unobserved so far.
    pub(crate) fn unobserved(&self) -> u64 {
        self.unobserved.count()
    }

    /// Failures dropped from the log because it was full.
    pub(crate) fn forgotten(&self) -> u64 {
        self.forgotten.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::error::Failure;

    fn rec() -> Recorded {
        Recorded {
            failure: Arc::new(Failure::cancelled("test", None)),
            ending: crate::slot::Ending::FAILED,
        }
    }

    /// 200,000 failures over 64 slots: the log keeps its capacity, the
    /// marks one per slot; every pushed-out key reads unknown, the newest
    /// read failed, a later generation of a marked slot reads succeeded.
    #[test]
    fn pushed_out_failures_read_unknown_and_memory_stays_bounded() {
        let log = FailureLog::new(16);
        let n: u32 = if cfg!(miri) { 2_000 } else { 200_000 };
        for g in 1..=n {
            log.record(((g % 64) as usize) * 128, g, rec());
        }
        assert_eq!(log.inner.lock().unwrap().order.len(), 16);
        assert_eq!(log.marks(), 64);
        assert_eq!(log.forgotten(), u64::from(n) - 16);
        assert!(matches!(log.lookup(128, 1), Outcome::Unknown));
        assert!(matches!(
            log.lookup((n % 64) as usize * 128, n),
            Outcome::Failed(_)
        ));
        assert!(matches!(log.lookup(128, n + 64), Outcome::Succeeded));
        // Capacity 0: nothing kept, every failure is a mark.
        let none = FailureLog::new(0);
        none.record(256, 7, rec());
        assert!(!none.is_empty());
        assert!(matches!(none.lookup(256, 7), Outcome::Unknown));
        assert!(matches!(none.lookup(256, 8), Outcome::Succeeded));
        assert!(matches!(none.lookup(384, 7), Outcome::Succeeded));
    }
}
