//! Per-thread job counters, to check that every implementation ran exactly
//! the jobs it was given.
//!
//! Every benchmark job calls [`bump`]: a plain load and store on a counter
//! that only the calling thread writes, on its own cache line (no shared
//! atomic, so counting adds no contention). [`total`] sums all counters,
//! including those of threads that have exited. Read it only when no job is
//! running: before a run and after the run has been waited for (the wait
//! orders the jobs' stores before the read).

use std::cell::OnceCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

#[repr(align(128))]
#[derive(Default)]
struct Padded(AtomicU64);

struct Registry {
    live: Vec<Arc<Padded>>,
    /// Counts of threads that have exited.
    retired: u64,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    live: Vec::new(),
    retired: 0,
});

thread_local! {
    static MINE: OnceCell<Arc<Padded>> = const { OnceCell::new() };
}

fn register() -> Arc<Padded> {
    let c = Arc::new(Padded::default());
    REGISTRY
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .live
        .push(c.clone());
    c
}

/// Count one executed job on the calling thread.
#[inline]
pub fn bump() {
    MINE.with(|c| {
        let c = &c.get_or_init(register).0;
        // Only this thread writes its counter: no read-modify-write needed.
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    });
}

/// Jobs counted so far by all threads, alive or exited.
pub fn total() -> u64 {
    let mut r = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    let mut retired = 0;
    r.live.retain(|c| {
        if Arc::strong_count(c) == 1 {
            retired += c.0.load(Ordering::Acquire);
            false
        } else {
            true
        }
    });
    r.retired += retired;
    r.retired
        + r.live
            .iter()
            .map(|c| c.0.load(Ordering::Acquire))
            .sum::<u64>()
}
