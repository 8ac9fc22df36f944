//! `JobBuilder::schedule_blocking`: the closure runs on a blocking thread
//! (no worker held while it blocks), exactly once, after its dependencies;
//! its handle finishes when it returns and fails as a job does (its panic,
//! a dependency's failure, a cancel); it combines with `limit`, scopes and
//! batching; a pin is refused; shutdown waits for it.

mod common;

use common::{expect_panic, watchdog, Gate};
use jobsys::{limiter_slot, JobError, JobHandle, JobSystem, Limiter, Pin};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier};

fn system(workers: usize) -> JobSystem {
    JobSystem::builder().workers(workers).build().unwrap()
}

fn until(flag: &AtomicBool) {
    while !flag.load(SeqCst) {
        std::thread::yield_now();
    }
}

#[test]
fn a_blocked_closure_holds_no_worker() {
    watchdog(30, || {
        let js = system(1);
        let gate = Arc::new(Gate::default());
        let (g, started) = (gate.clone(), Arc::new(AtomicBool::new(false)));
        let s = started.clone();
        let io = js.job().name("read file").schedule_blocking(move || {
            assert_eq!(std::thread::current().name(), Some("jobsys-blocking"));
            s.store(true, SeqCst);
            g.wait();
        });
        until(&started);
        // The only worker runs this while the blocking closure still
        // blocks; the test thread runs nothing (it only watches a flag).
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        let other = js.schedule(move || r.store(true, SeqCst));
        until(&ran);
        assert!(!js.is_complete(io));
        gate.open();
        js.complete(io);
        js.complete(other);
    });
}

#[test]
fn many_block_at_once_without_waiting_for_each_other() {
    watchdog(60, || {
        let js = system(1);
        let n = 16;
        let all = Arc::new(Barrier::new(n));
        let hs: Vec<JobHandle> = (0..n)
            .map(|_| {
                let all = all.clone();
                js.job().schedule_blocking(move || {
                    all.wait();
                })
            })
            .collect();
        js.complete(js.combine(&hs));
    });
}

#[test]
fn runs_after_its_dependencies_and_its_dependents_after_it() {
    watchdog(30, || {
        let js = system(2);
        let step = Arc::new(AtomicUsize::new(0));
        let s1 = step.clone();
        let first = js.schedule(move || assert_eq!(s1.swap(1, SeqCst), 0));
        let s2 = step.clone();
        let io = js
            .job()
            .after(&[first])
            .schedule_blocking(move || assert_eq!(s2.swap(2, SeqCst), 1));
        let s3 = step.clone();
        let last = js
            .job()
            .after(&[io])
            .schedule(move || assert_eq!(s3.swap(3, SeqCst), 2));
        js.complete(last);
        assert_eq!(step.load(SeqCst), 3);
    });
}

#[test]
fn a_panic_fails_the_job_and_a_failed_dependency_skips_it() {
    watchdog(30, || {
        let js = system(1);
        let bad = js.job().schedule_blocking(|| panic!("disk on fire"));
        match js.try_complete(bad) {
            Err(JobError::Panicked(p)) => {
                assert!(format!("{p:?}").contains("disk on fire"), "{p:?}")
            }
            other => panic!("expected the closure's panic, got {other:?}"),
        }
        let tally = common::Tally::default();
        let skipped = js.job().after(&[bad]).schedule_blocking(tally.job());
        assert!(matches!(
            js.try_complete(skipped),
            Err(JobError::Panicked(_))
        ));
        assert_eq!(tally.counts(), (0, 1), "dropped unrun, once");
    });
}

#[test]
fn a_cancelled_job_ends_after_its_closure_returned() {
    watchdog(30, || {
        let js = system(1);
        let gate = Arc::new(Gate::default());
        let (g, started, done) = (
            gate.clone(),
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (s, d) = (started.clone(), done.clone());
        let io = js.job().schedule_blocking(move || {
            s.store(true, SeqCst);
            g.wait();
            d.store(true, SeqCst);
        });
        until(&started);
        js.cancel(io);
        let opener = {
            let gate = gate.clone();
            std::thread::spawn(move || gate.open())
        };
        let r = js.try_complete(io);
        assert!(
            done.load(SeqCst),
            "the handle finished before its closure returned"
        );
        assert!(matches!(r, Err(JobError::Cancelled(_))), "{r:?}");
        opener.join().unwrap();
    });
}

#[test]
fn limit_counts_blocking_jobs_while_they_block() {
    watchdog(60, || {
        let js = system(1);
        let lim = Limiter::new(2);
        let now = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let hs: Vec<JobHandle> = (0..12)
            .map(|_| {
                let (now, most) = (now.clone(), most.clone());
                js.job().limit(&lim).schedule_blocking(move || {
                    assert!(limiter_slot().unwrap() < 2);
                    let n = now.fetch_add(1, SeqCst) + 1;
                    most.fetch_max(n, SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(2));
                    now.fetch_sub(1, SeqCst);
                })
            })
            .collect();
        js.complete(js.combine(&hs));
        assert!(most.load(SeqCst) <= 2);
        assert_eq!(lim.free(), 2);
    });
}

#[test]
fn in_a_scope_and_batched() {
    watchdog(30, || {
        let js = system(1);
        let count = Arc::new(AtomicUsize::new(0));
        js.scope(|s| {
            for _ in 0..3 {
                let c = count.clone();
                s.job().schedule_blocking(move || {
                    c.fetch_add(1, SeqCst);
                });
            }
        });
        assert_eq!(count.load(SeqCst), 3, "the scope waited for them");
        let c = count.clone();
        let h = js.job().batched().schedule_blocking(move || {
            c.fetch_add(1, SeqCst);
        });
        js.flush();
        js.complete(h);
        assert_eq!(count.load(SeqCst), 4);
    });
}

#[test]
fn a_pin_is_refused_at_the_callers_line() {
    let js = system(1);
    let msg = expect_panic(|| js.job().pin(Pin::Main).schedule_blocking(|| {}));
    assert!(msg.contains("cannot be pinned"), "{msg}");
}

#[test]
fn shutdown_waits_for_a_blocking_closure() {
    watchdog(30, || {
        let runs = Arc::new(AtomicUsize::new(0));
        {
            let js = system(1);
            let r = runs.clone();
            js.job().schedule_blocking(move || {
                std::thread::sleep(std::time::Duration::from_millis(20));
                r.fetch_add(1, SeqCst);
            });
        }
        assert_eq!(runs.load(SeqCst), 1);
    });
}

#[test]
fn a_blocking_closure_may_hold_the_last_clone_of_its_system() {
    watchdog(30, || {
        // Workers run the starter (with none, nothing would run it here).
        for workers in [1, 2] {
            let done = Arc::new(AtomicBool::new(false));
            let js = system(workers);
            let (js2, d) = (js.clone(), done.clone());
            let gate = Arc::new(Gate::default());
            let g = gate.clone();
            js.job().schedule_blocking(move || {
                g.wait();
                drop(js2); // the last clone: the system shuts down on this thread
                d.store(true, SeqCst);
            });
            drop(js);
            gate.open();
            until(&done);
        }
    });
}
