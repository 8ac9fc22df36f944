//! `complete` makes no heap allocation in steady state.
//!
//! A counting global allocator counts the allocations (and reallocations)
//! made on the test's own thread between two points; each case warms the
//! system up with a few rounds, then checks that the waits of the measured
//! rounds allocated nothing. Only the waits are measured: scheduling may
//! allocate (job storage, deque growth), and so may other threads.
//!
//! Cases: a wait on a job with unfinished dependencies (the dependency walk,
//! the `needed` offers, a park), a burst of 64 jobs waited on one by one and
//! through `combine`, and a wait inside a job (the walk's visited set, the
//! park's copy of the running stack).

mod common;

use jobsys::JobSystem;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

fn note() {
    // `try_with`: allocations during thread-local teardown are not counted.
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
        }
    });
}

// SAFETY: forwards every call to `System` unchanged; the counting touches
// only const-initialised thread-locals without destructors (no allocation).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Run `f`, returning the allocations it made on this thread.
fn allocations(f: impl FnOnce()) -> u64 {
    COUNT.with(|c| c.set(0));
    COUNTING.with(|on| on.set(true));
    f();
    COUNTING.with(|on| on.set(false));
    COUNT.with(|c| c.get())
}

const WARMUP: usize = 4;
const ROUNDS: usize = 16;

/// Warm up with `WARMUP` rounds, then return the allocations of the
/// measured parts of `ROUNDS` rounds, per round.
fn measure(mut round: impl FnMut() -> u64) -> Vec<u64> {
    for _ in 0..WARMUP {
        round();
    }
    (0..ROUNDS).map(|_| round()).collect()
}

fn assert_none(case: &str, counts: &[u64]) {
    assert!(
        counts.iter().all(|&n| n == 0),
        "{case}: allocations in the measured waits, per round: {counts:?}"
    );
}

fn system(workers: usize) -> JobSystem {
    JobSystem::builder()
        .workers(workers)
        .follow_cpus(false)
        .build()
        .expect("build")
}

/// A job that first tells it started, then takes a few milliseconds: with
/// a worker, the waiter finds it running and must park (timing only helps
/// coverage; the assertions do not depend on it).
fn slow_job(started: &Arc<AtomicBool>) -> impl FnOnce() + Send + 'static {
    let started = started.clone();
    move || {
        started.store(true, Ordering::Release);
        std::thread::sleep(Duration::from_millis(3));
    }
}

/// Schedule `slow_job` and, with workers, wait until one runs it.
fn start_slow(js: &JobSystem) -> jobsys::JobHandle {
    let started = Arc::new(AtomicBool::new(false));
    let a = js.schedule(slow_job(&started));
    if js.workers() > 0 {
        while !started.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
    }
    a
}

/// (a) `complete` on the end of a chain of 3 unfinished jobs.
fn chain(workers: usize) {
    let js = system(workers);
    let counts = measure(|| {
        let a = start_slow(&js);
        let b = js.schedule_after(&[a], || {});
        let c = js.schedule_after(&[b], || {});
        let n = allocations(|| js.complete(c));
        assert!(js.is_complete(a) && js.is_complete(b));
        n
    });
    assert_none(&format!("chain of 3, {workers} workers"), &counts);
}

#[test]
fn chain_0_workers() {
    common::watchdog(60, || chain(0));
}

#[test]
fn chain_1_worker() {
    common::watchdog(60, || chain(1));
}

/// (b) 64 jobs, then `complete` on each (newest first, as a scope waits)
/// or on their `combine`. With a worker taking some of them, the waiter
/// runs others through their handles, leaves their entries behind and
/// later compacts its deque: the deques never shrink and the wait's
/// buffers start with room for 64 entries, so none of it allocates.
fn burst(workers: usize, combined: bool) {
    burst_of(64, workers, combined)
}

/// `burst` with `n` jobs.
fn burst_of(n: usize, workers: usize, combined: bool) {
    let js = system(workers);
    let counts = measure(|| {
        let hs: Vec<_> = (0..n)
            .map(|i| {
                js.schedule(move || {
                    std::hint::black_box(i);
                })
            })
            .collect();
        if combined {
            let all = js.combine(&hs);
            allocations(|| js.complete(all))
        } else {
            allocations(|| {
                for &h in hs.iter().rev() {
                    js.complete(h);
                }
            })
        }
    });
    assert_none(
        &format!("burst of {n}, {workers} workers, combined: {combined}"),
        &counts,
    );
}

#[test]
fn burst_each_0_workers() {
    common::watchdog(60, || burst(0, false));
}

#[test]
fn burst_each_1_worker() {
    common::watchdog(60, || burst(1, false));
}

#[test]
fn burst_combined_0_workers() {
    common::watchdog(60, || burst(0, true));
}

/// With a worker taking some jobs, how many of the 64 the waiter finds
/// runnable and offers on its `needed` deque varies from round to round;
/// that deque grows once, in the warm-up, and never shrinks.
#[test]
fn burst_combined_1_worker() {
    common::watchdog(60, || burst(1, true));
}

/// (c) A job that waits on another: the walk inside a job, and (with a
/// worker running the dependency) a park inside a job.
fn inside_job(workers: usize) {
    let js = system(workers);
    let counts = measure(|| {
        let a = start_slow(&js);
        let b = js.schedule_after(&[a], || {});
        let c = js.schedule_after(&[b], || {});
        let js2 = js.clone();
        let outer = js.schedule(move || js2.complete(c));
        let n = allocations(|| js.complete(outer));
        assert!(js.is_complete(c));
        n
    });
    assert_none(&format!("wait inside a job, {workers} workers"), &counts);
}

#[test]
fn inside_job_0_workers() {
    common::watchdog(60, || inside_job(0));
}

#[test]
fn inside_job_1_worker() {
    common::watchdog(60, || inside_job(1));
}
