//! Per-thread work-stealing deques of `Entry`s (`job.rs`).
//!
//! Each context owns a crossbeam-deque `Worker` (the owner pushes and pops
//! LIFO at one end) and publishes a `Stealer` (others take FIFO from the
//! other end). An entry names a slot and the generation it was pushed for; a
//! popped entry whose job was already claimed elsewhere (by `complete`
//! helping directly through a handle) fails its claim and is dropped.
//!
//! Why crossbeam-deque and not our own Chase-Lev: it is the proven
//! implementation of the same algorithm with a growable buffer; the W1 figures
//! (docs/design-notes.md) show the deque is not what limits us.

/// Re-exported: the tracer names entries by this path.
pub(crate) use crate::job::Entry;
use crossbeam_deque::{Steal, Stealer as CbStealer, Worker as CbWorker};

/// The owner's end of a deque.
pub(crate) struct Local(CbWorker<Entry>);
/// Everyone else's end.
pub(crate) struct Stealer(CbStealer<Entry>);

pub(crate) fn new() -> (Local, Stealer) {
    let w = CbWorker::new_lifo();
    let s = w.stealer();
    (Local(w), Stealer(s))
}

impl Local {
    #[inline]
    pub(crate) fn push(&self, e: Entry) {
        self.0.push(e)
    }
    #[inline]
    pub(crate) fn pop(&self) -> Option<Entry> {
        self.0.pop()
    }
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Entries queued (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

impl Stealer {
    /// Take the oldest entry; retries on a lost race a few times. An empty
    /// deque costs two loads (checked before crossbeam pins an epoch).
    #[inline]
    pub(crate) fn steal(&self) -> Option<Entry> {
        if self.0.is_empty() {
            return None;
        }
        for _ in 0..4 {
            match self.0.steal() {
                Steal::Success(e) => return Some(e),
                Steal::Empty => return None,
                Steal::Retry => std::hint::spin_loop(),
            }
        }
        None
    }
    /// Take the oldest entry; from a long deque (at least `BATCH_FROM`
    /// entries) also move up to `BATCH` more into `dest` with the same CAS.
    /// Short deques (fork/join) are stolen from one entry at a time, so a
    /// thief running a stolen `join` job holds only that job's descendants.
    #[inline]
    pub(crate) fn steal_into(&self, dest: &Local) -> Option<Entry> {
        const BATCH_FROM: usize = 64;
        const BATCH: usize = 32;
        if self.0.len() < BATCH_FROM {
            return self.steal();
        }
        for _ in 0..4 {
            match self.0.steal_batch_with_limit_and_pop(&dest.0, BATCH) {
                Steal::Success(e) => return Some(e),
                Steal::Empty => return None,
                Steal::Retry => std::hint::spin_loop(),
            }
        }
        None
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
