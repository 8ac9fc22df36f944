//! `try_complete_timeout`: a wait that gives up at its deadline with
//! `JobError::Timeout`, leaves the job alone (it still runs, once), reports
//! a finished job's own outcome instead of a timeout, and leaves no trace
//! behind that could break a later wait (its waiter registration).
//!
//! The jobs that must outlast a wait are held by a `Gate` the test opens
//! after the wait returned, and are known to be running on a worker before
//! the wait starts (the job sets `started`; the test waits for it), so the
//! waiting thread cannot run them itself. Each scenario runs under
//! `watchdog`: a wait that never ends aborts with the scenario's name.

mod common;

use common::{watchdog, Gate};
use jobsys::{JobError, JobSystem};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn system(workers: usize) -> JobSystem {
    JobSystem::builder().workers(workers).build().unwrap()
}

/// A job that marks itself started, then waits for `gate`, then counts a run.
fn held_job(
    js: &JobSystem,
    gate: &Arc<Gate>,
    runs: &Arc<AtomicUsize>,
) -> (jobsys::JobHandle, Arc<AtomicBool>) {
    let started = Arc::new(AtomicBool::new(false));
    let (g, r, s) = (gate.clone(), runs.clone(), started.clone());
    let h = js.schedule(move || {
        s.store(true, SeqCst);
        g.wait();
        r.fetch_add(1, SeqCst);
    });
    (h, started)
}

fn until(flag: &AtomicBool) {
    while !flag.load(SeqCst) {
        std::thread::yield_now();
    }
}

#[test]
fn a_running_job_outlasts_the_timeout_and_still_finishes_once() {
    watchdog(60, || {
        let js = system(1);
        let (gate, runs) = (Arc::new(Gate::default()), Arc::new(AtomicUsize::new(0)));
        let (h, started) = held_job(&js, &gate, &runs);
        until(&started);
        let timeout = Duration::from_millis(30);
        let t0 = Instant::now();
        let r = js.try_complete_timeout(h, timeout);
        let waited = t0.elapsed();
        assert!(matches!(r, Err(JobError::Timeout)), "{r:?}");
        // It did not give up early (a spurious futex return is re-checked).
        assert!(waited >= timeout, "returned after {waited:?}");
        assert!(!js.is_complete(h), "the job was not cancelled or finished");
        assert_eq!(runs.load(SeqCst), 0);
        // A second timed wait on the same handle behaves the same.
        let r = js.try_complete_timeout(h, Duration::from_millis(1));
        assert!(matches!(r, Err(JobError::Timeout)), "{r:?}");
        gate.open();
        js.complete(h);
        assert_eq!(runs.load(SeqCst), 1);
        // Finished: Ok at once, even with no time at all.
        assert!(js.try_complete_timeout(h, Duration::ZERO).is_ok());
    });
}

#[test]
fn a_job_that_finishes_inside_the_timeout_is_ok_and_a_failed_one_reports_its_failure() {
    watchdog(60, || {
        let js = system(1);
        let (gate, runs) = (Arc::new(Gate::default()), Arc::new(AtomicUsize::new(0)));
        let (h, started) = held_job(&js, &gate, &runs);
        until(&started);
        // Opened by another thread while this one is parked in the wait.
        let opener = {
            let gate = gate.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(5));
                gate.open();
            })
        };
        let r = js.try_complete_timeout(h, Duration::from_secs(30));
        assert!(r.is_ok(), "{r:?}");
        assert_eq!(runs.load(SeqCst), 1);
        opener.join().unwrap();

        let failed = js.job().name("boom").schedule(|| panic!("boom"));
        match js.try_complete_timeout(failed, Duration::from_secs(30)) {
            Err(JobError::Panicked(p)) => assert_eq!(p.job_name(), Some("boom")),
            other => panic!("expected the job's panic, got {other:?}"),
        }
    });
}

#[test]
fn a_runnable_job_is_helped_with_at_zero_workers() {
    watchdog(60, || {
        // Nobody else can run it: the timed wait must run it itself.
        let js = system(0);
        let runs = Arc::new(AtomicUsize::new(0));
        let r2 = runs.clone();
        let a = js.schedule(move || {
            r2.fetch_add(1, SeqCst);
        });
        let r3 = runs.clone();
        let b = js.schedule_after(&[a], move || {
            r3.fetch_add(1, SeqCst);
        });
        assert!(js.try_complete_timeout(b, Duration::from_secs(30)).is_ok());
        assert_eq!(runs.load(SeqCst), 2);
    });
}

#[test]
fn a_zero_timeout_on_an_unfinished_job_times_out_at_once() {
    watchdog(60, || {
        let js = system(1);
        let (gate, runs) = (Arc::new(Gate::default()), Arc::new(AtomicUsize::new(0)));
        let (h, started) = held_job(&js, &gate, &runs);
        until(&started);
        assert!(matches!(
            js.try_complete_timeout(h, Duration::ZERO),
            Err(JobError::Timeout)
        ));
        gate.open();
        js.complete(h);
        assert_eq!(runs.load(SeqCst), 1);
    });
}

#[test]
fn a_huge_timeout_is_an_ordinary_wait() {
    watchdog(60, || {
        let js = system(1);
        let h = js.schedule(|| {});
        assert!(js.try_complete_timeout(h, Duration::MAX).is_ok());
    });
}

#[test]
fn a_timed_wait_on_its_own_job_is_wait_on_self_not_a_timeout() {
    watchdog(60, || {
        let js = system(1);
        let js2 = js.clone();
        let me = Arc::new(std::sync::Mutex::new(None));
        let m2 = me.clone();
        let gate = Arc::new(Gate::default());
        let g2 = gate.clone();
        let h = js.schedule(move || {
            g2.wait();
            let own = m2
                .lock()
                .unwrap()
                .expect("handle set before the gate opened");
            let r = js2.try_complete_timeout(own, Duration::from_secs(30));
            assert!(matches!(r, Err(JobError::WaitOnSelf)), "{r:?}");
        });
        *me.lock().unwrap() = Some(h);
        gate.open();
        js.complete(h);
    });
}

/// Timed waits racing the job's finish, many times: each ends Ok or
/// Timeout, a job is never lost or run twice, and after each race an
/// untimed wait still ends (a timed-out waiter left registered, or a wake
/// meant for it, would show as a hang or a wrong result here).
#[test]
fn timed_waits_racing_the_finish_never_lose_a_job_or_a_later_wait() {
    watchdog(120, || {
        let js = system(2);
        let runs = Arc::new(AtomicUsize::new(0));
        let rounds = if cfg!(miri) { 20 } else { 500 };
        let (mut ok, mut timed_out) = (0, 0);
        for i in 0..rounds {
            let (r, started) = (runs.clone(), Arc::new(AtomicBool::new(false)));
            let s = started.clone();
            let spin = (i % 7) * 30_000;
            let h = js.schedule(move || {
                s.store(true, SeqCst);
                for k in 0..spin {
                    std::hint::black_box(k);
                }
                r.fetch_add(1, SeqCst);
            });
            // On a worker, so this thread waits rather than runs it.
            until(&started);
            match js.try_complete_timeout(h, Duration::from_micros((i % 5) as u64 * 20)) {
                Ok(()) => ok += 1,
                Err(JobError::Timeout) => timed_out += 1,
                Err(e) => panic!("round {i}: {e}"),
            }
            js.complete(h);
            assert_eq!(runs.load(SeqCst), i + 1, "round {i}");
        }
        assert_eq!(ok + timed_out, rounds);
    });
}
