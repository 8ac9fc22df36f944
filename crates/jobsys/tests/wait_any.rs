//! `JobSystem::wait_any`: returns the index of the first job to finish
//! (a failure counts as finished), the lowest finished index when several
//! are, leaves the others running, reports `WaitOnSelf` when no job can
//! finish while the caller waits, and refuses an empty or foreign list.

mod common;

use common::{expect_panic, watchdog, Gate};
use jobsys::{JobError, JobHandle, JobSystem};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

fn system(workers: usize) -> JobSystem {
    JobSystem::builder().workers(workers).build().unwrap()
}

/// A job that marks itself started, then waits for `gate`.
fn blocked(js: &JobSystem, gate: &Arc<Gate>) -> JobHandle {
    let started = Arc::new(AtomicBool::new(false));
    let (g, s) = (gate.clone(), started.clone());
    let h = js.schedule(move || {
        s.store(true, SeqCst);
        g.wait();
    });
    while !started.load(SeqCst) {
        std::thread::yield_now();
    }
    h
}

#[test]
fn returns_the_job_that_finishes_while_another_still_runs() {
    watchdog(30, || {
        let js = system(2);
        let gate = Arc::new(Gate::default());
        let slow = blocked(&js, &gate);
        let quick = js.schedule(|| {});
        assert_eq!(js.wait_any(&[slow, quick]).unwrap(), 1);
        assert!(js.is_complete(quick));
        assert!(!js.is_complete(slow), "the other job goes on");
        gate.open();
        js.complete(slow);
    });
}

#[test]
fn waits_for_a_job_that_finishes_later() {
    watchdog(30, || {
        // Both start blocked; the second is let go from another thread
        // while the caller waits.
        let js = system(2);
        let (ga, gb) = (Arc::new(Gate::default()), Arc::new(Gate::default()));
        let a = blocked(&js, &ga);
        let b = blocked(&js, &gb);
        let opener = {
            let gb = gb.clone();
            std::thread::spawn(move || gb.open())
        };
        assert_eq!(js.wait_any(&[a, b]).unwrap(), 1);
        opener.join().unwrap();
        assert!(!js.is_complete(a));
        ga.open();
        js.complete(a);
    });
}

#[test]
fn a_finished_job_answers_at_once_with_the_lowest_index() {
    let js = system(1);
    let hs: Vec<JobHandle> = (0..4).map(|_| js.schedule(|| {})).collect();
    js.complete(js.combine(&hs));
    let before = js.stats();
    assert_eq!(js.wait_any(&hs).unwrap(), 0);
    assert_eq!(js.wait_any(&hs[2..]).unwrap(), 0);
    // No gate and no continuation were scheduled for finished jobs.
    assert_eq!(js.stats().jobs_scheduled, before.jobs_scheduled);
}

#[test]
fn a_failed_job_counts_as_finished() {
    watchdog(30, || {
        let js = system(2);
        let gate = Arc::new(Gate::default());
        let slow = blocked(&js, &gate);
        let bad = js.schedule(|| panic!("wait_any boom"));
        assert_eq!(js.wait_any(&[slow, bad]).unwrap(), 1);
        assert!(matches!(js.try_complete(bad), Err(JobError::Panicked(_))));
        gate.open();
        js.complete(slow);
    });
}

#[test]
fn a_cancelled_job_counts_as_finished() {
    watchdog(30, || {
        let js = system(1);
        let gate = Arc::new(Gate::default());
        let slow = blocked(&js, &gate);
        // Queued behind `slow` on the only worker; cancelled before it ran
        // (a job cancelled while it waits for dependencies ends only when
        // they do, so this one has none).
        let never = js.schedule(|| unreachable!());
        assert!(js.cancel(never));
        assert_eq!(js.wait_any(&[slow, never]).unwrap(), 1);
        assert!(matches!(
            js.try_complete(never),
            Err(JobError::Cancelled(_))
        ));
        gate.open();
        js.complete(slow);
    });
}

#[test]
fn no_worker_the_caller_runs_the_jobs() {
    let js = system(0);
    let order = Arc::new(Mutex::new(Vec::new()));
    let hs: Vec<JobHandle> = (0..3)
        .map(|i| {
            let o = order.clone();
            js.schedule(move || o.lock().unwrap().push(i))
        })
        .collect();
    let first = js.wait_any(&hs).unwrap();
    assert!(order.lock().unwrap().contains(&first));
    js.complete(js.combine(&hs));
}

#[test]
fn a_job_waiting_on_itself_is_told_so() {
    watchdog(30, || {
        let js = system(1);
        let me: Arc<Mutex<Option<JobHandle>>> = Arc::default();
        let seen = Arc::new(AtomicUsize::new(0));
        let (js2, me2, seen2) = (js.clone(), me.clone(), seen.clone());
        let gate = Arc::new(Gate::default());
        let g = gate.clone();
        let h = js.schedule(move || {
            g.wait();
            let own = me2.lock().unwrap().expect("handle stored");
            // Only itself, and a job after itself: neither can finish now.
            let later = js2.job().after(&[own]).schedule(|| {});
            assert!(matches!(js2.wait_any(&[own]), Err(JobError::WaitOnSelf)));
            assert!(matches!(
                js2.wait_any(&[own, later]),
                Err(JobError::WaitOnSelf)
            ));
            // With one that can finish, that one is the answer.
            let other = js2.schedule(|| {});
            assert_eq!(js2.wait_any(&[own, other]).unwrap(), 1);
            seen2.fetch_add(1, SeqCst);
        });
        *me.lock().unwrap() = Some(h);
        gate.open();
        js.complete(h);
        assert_eq!(seen.load(SeqCst), 1);
    });
}

#[test]
fn bad_input_is_refused_at_the_callers_line() {
    let js = system(0);
    let msg = expect_panic(|| js.wait_any(&[]));
    assert!(msg.contains("at least one handle"), "{msg}");
    let other = system(0);
    let foreign = other.schedule(|| {});
    let msg = expect_panic(|| js.wait_any(&[foreign]));
    assert!(msg.contains("wait_any"), "{msg}");
    other.complete(foreign);
}

#[test]
fn many_rounds_leave_nothing_behind() {
    watchdog(60, || {
        let js = system(2);
        let mut rng = common::Rng::new(7);
        for _ in 0..300 {
            let n = 1 + rng.below(6);
            let spins: Vec<u32> = (0..n).map(|_| rng.below(2000) as u32).collect();
            let hs: Vec<JobHandle> = spins
                .iter()
                .map(|&k| {
                    js.schedule(move || {
                        for _ in 0..k {
                            std::hint::spin_loop();
                        }
                    })
                })
                .collect();
            let i = js.wait_any(&hs).unwrap();
            assert!(i < n);
            assert!(js.is_complete(hs[i]));
            js.complete(js.combine(&hs));
        }
        js.drain_outstanding().unwrap();
    });
}
