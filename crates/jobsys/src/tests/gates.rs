//! Gates under Miri (`held.rs`): a limiter's queue, `wait_any` and a
//! blocking job, each small: a gate opened by another thread, seats
//! handed over between jobs, a job skipped after a failed dependency
//! releasing what it held; an end event after a failed and a cancelled
//! job.

use super::system;
use crate::{limiter_slot, JobError, Limiter};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

#[test]
fn seats_pass_from_job_to_job_through_the_queue() {
    let js = system(1);
    let lim = Limiter::new(1);
    let inside = Arc::new(AtomicBool::new(false));
    let runs = Arc::new(AtomicUsize::new(0));
    let bad = js.schedule(|| panic!("gate test"));
    let mut hs = Vec::new();
    for i in 0..4 {
        let (inside, runs) = (inside.clone(), runs.clone());
        let deps = if i == 3 { vec![bad] } else { Vec::new() };
        hs.push(js.job().limit(&lim).after(&deps).schedule(move || {
            assert_eq!(limiter_slot(), Some(0));
            assert!(!inside.swap(true, SeqCst), "two jobs hold the one seat");
            inside.store(false, SeqCst);
            runs.fetch_add(1, SeqCst);
        }));
    }
    for &h in &hs[..3] {
        js.complete(h);
    }
    assert!(matches!(js.try_complete(hs[3]), Err(JobError::Panicked(_))));
    assert_eq!(runs.load(SeqCst), 3);
    assert_eq!((lim.free(), lim.waiting()), (1, 0));
}

// Under Miri this found a lost wake-up: `wait_any`'s opener job sat on
// this thread's deque, which the wait popped to look at and pushed back;
// the worker's last look before it slept fell in between, and nothing
// woke it (the wait now looks in place: `Local::pop_if`; the loom model is
// `wait::loom_tests::a_job_a_waiter_looked_at_reaches_a_worker_that_parks`).
#[test]
fn wait_any_returns_when_a_worker_finishes_the_job() {
    let js = system(1);
    let (go, started) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (g, s) = (go.clone(), started.clone());
    let slow = js.schedule(move || {
        s.store(true, SeqCst);
        while !g.load(SeqCst) {
            std::thread::yield_now();
        }
    });
    // On the worker: the wait below cannot run it (it would help with
    // what `quick` needs).
    while !started.load(SeqCst) {
        std::thread::yield_now();
    }
    let quick = js.job().after(&[slow]).schedule(|| {});
    // Let go from another thread while (most likely) this one waits on
    // the gate, which the worker opens when `quick` has run.
    let opener = std::thread::spawn(move || go.store(true, SeqCst));
    assert_eq!(js.wait_any(&[quick]).unwrap(), 0);
    assert!(js.is_complete(quick));
    opener.join().unwrap();
}

#[test]
fn a_blocking_job_finishes_after_its_closure() {
    let js = system(1);
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let h = js.job().schedule_blocking(move || d.store(true, SeqCst));
    js.complete(h);
    assert!(done.load(SeqCst));
    let bad = js.job().schedule_blocking(|| panic!("blocking under miri"));
    assert!(matches!(js.try_complete(bad), Err(JobError::Panicked(_))));
}

#[test]
fn an_end_event_finishes_clean_after_a_failed_or_cancelled_job() {
    for workers in [0, 1] {
        let js = system(workers);
        let ran = Arc::new(AtomicUsize::new(0));
        let bad = js.schedule(|| panic!("end event test"));
        // `gate` holds `cancelled` back until after the cancel.
        let (go, wait_for_go) = std::sync::mpsc::channel::<()>();
        let gate = js.schedule(move || wait_for_go.recv().unwrap());
        let cancelled = js.schedule_after(&[gate], || unreachable!());
        assert!(js.cancel(cancelled));
        go.send(()).unwrap();
        for before in [bad, cancelled] {
            let end = crate::held::end_of(&js, before);
            let r = ran.clone();
            let after = js.schedule_after(&[end], move || {
                r.fetch_add(1, SeqCst);
            });
            // At 0 workers the wait runs `before` through the event's edge.
            assert!(js.try_complete(after).is_ok(), "{workers} workers");
            assert!(js.try_complete(end).is_ok());
            assert!(js.try_complete(before).is_err());
        }
        assert_eq!(ran.load(SeqCst), 2);
    }
}
