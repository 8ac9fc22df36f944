//! Building, naming, cloning and shutting down a JobSystem; stats.
//!
//! Environment-variable cases live in `env_workers.rs` (env vars are
//! process-global) and the thread-leak check in `thread_leaks.rs` (it counts
//! the process's threads, so it needs a test binary of its own).

mod common;

use common::{watchdog, Rng};
use jobsys::{BuildError, Config, JobHandle, JobSystem, MAX_WORKERS};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::time::Duration;

#[test]
fn an_absurd_worker_count_is_a_build_error_with_a_message() {
    let err = JobSystem::builder().workers(1_000_000).build().unwrap_err();
    assert!(
        matches!(err, BuildError::TooManyWorkers { requested: 1_000_000, max } if max == MAX_WORKERS),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("1000000") && msg.contains(&MAX_WORKERS.to_string()),
        "{msg}"
    );
    // Just over the limit, through Config too.
    let err = JobSystem::new(Config {
        workers: Some(MAX_WORKERS + 1),
        ..Config::default()
    })
    .unwrap_err();
    assert!(matches!(err, BuildError::TooManyWorkers { .. }), "{err:?}");
    // The error is a std error.
    let _: &dyn std::error::Error = &err;
}

#[test]
fn the_largest_allowed_worker_count_builds_and_works() {
    watchdog(60, || {
        let js = JobSystem::builder()
            .workers(MAX_WORKERS)
            .stack_size(64 * 1024)
            .build()
            .unwrap();
        assert_eq!(js.workers(), MAX_WORKERS);
        let n = Arc::new(AtomicUsize::new(0));
        let n2 = n.clone();
        let h = js.parallel_for(0..10_000, jobsys::Batch::Auto, move |_| {
            n2.fetch_add(1, SeqCst);
        });
        js.complete(h);
        assert_eq!(n.load(SeqCst), 10_000);
    });
}

#[test]
fn builder_settings_reach_the_config() {
    let b = JobSystem::builder()
        .workers(3)
        .wait_spin(Duration::from_micros(5))
        .stack_size(1 << 20);
    assert_eq!(b.config().workers, Some(3));
    assert_eq!(b.config().wait_spin, Some(Duration::from_micros(5)));
    assert_eq!(b.config().stack_size, Some(1 << 20));
    let js = b.build().unwrap();
    assert_eq!(js.workers(), 3);
    assert_eq!(js.stats().workers, 3);
    // Zero spin: waiters and workers sleep at once; still correct.
    let js = JobSystem::builder()
        .workers(2)
        .wait_spin(Duration::ZERO)
        .idle_policy(jobsys::IdlePolicy::SpinThenSleep {
            spin: Duration::ZERO,
        })
        .build()
        .unwrap();
    let n = Arc::new(AtomicUsize::new(0));
    for _ in 0..2000 {
        let n2 = n.clone();
        let h = js.schedule(move || {
            n2.fetch_add(1, SeqCst);
        });
        js.complete(h);
    }
    assert_eq!(n.load(SeqCst), 2000);
}

#[test]
fn with_no_workers_the_calling_threads_do_all_the_work() {
    watchdog(60, || {
        let js = JobSystem::builder().workers(0).build().unwrap();
        assert_eq!(js.workers(), 0);
        let me = std::thread::current().id();
        let ids = Arc::new(Mutex::new(HashSet::new()));
        let mut hs = Vec::new();
        for _ in 0..200 {
            let ids = ids.clone();
            hs.push(js.schedule(move || {
                ids.lock().unwrap().insert(std::thread::current().id());
            }));
        }
        // Nothing runs until someone waits.
        assert!(hs.iter().all(|&h| !js.is_complete(h)));
        let all = js.combine(&hs);
        js.complete(all);
        assert_eq!(*ids.lock().unwrap(), HashSet::from([me]));
        // Another thread waiting on its own jobs runs them itself.
        let js2 = js.clone();
        let other = std::thread::spawn(move || {
            let ran_on = Arc::new(Mutex::new(None));
            let r = ran_on.clone();
            let h = js2.schedule(move || *r.lock().unwrap() = Some(std::thread::current().id()));
            js2.complete(h);
            let ran = *ran_on.lock().unwrap();
            ran == Some(std::thread::current().id())
        });
        assert!(other.join().unwrap());
    });
}

#[test]
fn worker_threads_are_named_jobsys_worker_n() {
    watchdog(60, || {
        let js = JobSystem::builder().workers(2).build().unwrap();
        // Two jobs that can only finish when both run at once: with the
        // main thread not helping, the two workers must run them.
        let barrier = Arc::new(Barrier::new(2));
        let (tx, rx) = mpsc::channel::<Option<String>>();
        for _ in 0..2 {
            let (b, tx) = (barrier.clone(), tx.clone());
            js.schedule(move || {
                b.wait();
                tx.send(std::thread::current().name().map(str::to_string))
                    .unwrap();
            });
        }
        let mut seen: Vec<Option<String>> = vec![rx.recv().unwrap(), rx.recv().unwrap()];
        seen.sort();
        assert_eq!(
            seen,
            vec![
                Some("jobsys-worker-1".to_string()),
                Some("jobsys-worker-2".to_string())
            ]
        );
        // With many jobs and the main thread helping, only the workers and
        // the main thread ever run jobs.
        let names = Arc::new(Mutex::new(HashSet::new()));
        let hs: Vec<JobHandle> = (0..5000)
            .map(|_| {
                let names = names.clone();
                js.schedule(move || {
                    names
                        .lock()
                        .unwrap()
                        .insert(std::thread::current().name().map(str::to_string));
                })
            })
            .collect();
        for h in hs {
            js.complete(h);
        }
        let me = std::thread::current().name().map(str::to_string);
        let allowed: HashSet<Option<String>> = [
            Some("jobsys-worker-1".to_string()),
            Some("jobsys-worker-2".to_string()),
            me,
        ]
        .into();
        let names = names.lock().unwrap();
        assert!(names.is_subset(&allowed), "{names:?}");
    });
}

/// Schedule 10k jobs (with dependencies, loops and slow ones), then drop
/// the system without waiting: every job runs before drop returns. (Jobs
/// that schedule more jobs would have to own a clone of the system, and
/// then this drop would not be the last one; see the test below.)
fn shutdown_runs_everything(workers: usize, seed: u64) {
    let js = JobSystem::builder().workers(workers).build().unwrap();
    let count = Arc::new(AtomicUsize::new(0));
    let mut rng = Rng::new(seed);
    let mut hs: Vec<JobHandle> = Vec::new();
    let mut expected = 0;
    while expected < 10_000 {
        let c = count.clone();
        let h = match rng.below(20) {
            0 | 1 => {
                // A slow one.
                js.schedule(move || {
                    std::thread::sleep(Duration::from_micros(200));
                    c.fetch_add(1, SeqCst);
                })
            }
            2 => {
                expected += 9; // 10 indices, counted below
                js.parallel_for(0..10, jobsys::Batch::Fixed(3), move |_| {
                    c.fetch_add(1, SeqCst);
                })
            }
            3..=9 if !hs.is_empty() => {
                let deps: Vec<JobHandle> = (0..1 + rng.below(3))
                    .map(|_| hs[rng.below(hs.len())])
                    .collect();
                js.schedule_after(&deps, move || {
                    c.fetch_add(1, SeqCst);
                })
            }
            _ => js.schedule(move || {
                c.fetch_add(1, SeqCst);
            }),
        };
        expected += 1;
        hs.push(h);
    }
    drop(js);
    assert_eq!(count.load(SeqCst), expected, "workers {workers}");
}

#[test]
fn shutdown_with_pending_jobs_runs_them_all_workers_0() {
    watchdog(60, || shutdown_runs_everything(0, 1));
}

#[test]
fn shutdown_with_pending_jobs_runs_them_all_workers_1() {
    watchdog(60, || shutdown_runs_everything(1, 2));
}

#[test]
fn shutdown_with_pending_jobs_runs_them_all_workers_3() {
    watchdog(60, || shutdown_runs_everything(3, 3));
}

/// Pending jobs scheduled by threads that have exited, and failing jobs
/// with dependents, do not stop shutdown from finishing.
#[test]
fn shutdown_with_failed_jobs_and_exited_schedulers_finishes() {
    for workers in [0, 2] {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let count = Arc::new(AtomicUsize::new(0));
            for t in 0..4 {
                let (js2, c) = (js.clone(), count.clone());
                std::thread::spawn(move || {
                    for k in 0..500 {
                        let c1 = c.clone();
                        let a = js2.schedule(move || {
                            assert!(k % 10 != t, "failing job {k}");
                            c1.fetch_add(1, SeqCst);
                        });
                        let c2 = c.clone();
                        js2.schedule_after(&[a], move || {
                            c2.fetch_add(1, SeqCst);
                        });
                    }
                })
                .join()
                .unwrap();
            }
            drop(js);
            // 4 threads x 500 pairs; 1 in 10 first jobs fails and skips its
            // dependent.
            assert_eq!(count.load(SeqCst), 4 * (450 * 2));
        });
    }
}

#[test]
fn dropping_a_clone_keeps_the_system_working() {
    watchdog(60, || {
        let js = JobSystem::builder().workers(2).build().unwrap();
        let keep = js.clone();
        let h = js.schedule(|| {});
        drop(js);
        keep.complete(h);
        // Clones dropped on other threads while this one keeps going.
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let c = keep.clone();
                std::thread::spawn(move || {
                    let h = c.schedule(|| {});
                    c.complete(h);
                    drop(c);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let n = Arc::new(AtomicUsize::new(0));
        let n2 = n.clone();
        let h = keep.parallel_for(0..1000, jobsys::Batch::Auto, move |_| {
            n2.fetch_add(1, SeqCst);
        });
        keep.complete(h);
        assert_eq!(n.load(SeqCst), 1000);
        assert_eq!(keep.workers(), 2);
    });
}

/// A job owns the last clone and drops it while running (on a worker):
/// no hang, no crash, and jobs still queued at that moment still run.
#[test]
fn dropping_the_last_clone_inside_a_job_does_not_hang() {
    watchdog(60, || {
        for explicit in [true, false] {
            let js = JobSystem::builder().workers(2).build().unwrap();
            let (tx, rx) = mpsc::channel::<&'static str>();
            let last = js.clone();
            let (go_tx, go_rx) = mpsc::channel::<()>();
            js.schedule(move || {
                go_rx.recv().unwrap();
                // Queue more work, then let the system go.
                for _ in 0..100 {
                    let tx = tx.clone();
                    last.schedule(move || tx.send("pending").unwrap());
                }
                let tx2 = tx.clone();
                if explicit {
                    drop(last);
                    tx2.send("dropped").unwrap();
                } else {
                    // `last` is dropped with the closure, after it returns.
                    let _keep = &last;
                    tx2.send("dropped").unwrap();
                }
            });
            // The job now holds the only clone.
            drop(js);
            go_tx.send(()).unwrap();
            let mut pending = 0;
            let mut dropped = 0;
            // The senders all go away once every job ran and was dropped.
            for m in rx.iter() {
                match m {
                    "pending" => pending += 1,
                    _ => dropped += 1,
                }
            }
            assert_eq!((pending, dropped), (100, 1), "explicit={explicit}");
        }
    });
}

#[test]
fn stats_count_scheduled_and_finished_jobs() {
    let js = JobSystem::builder().workers(0).build().unwrap();
    assert_eq!(js.stats().jobs_scheduled, 0);
    let a = js.schedule(|| {});
    let b = js.schedule_after(&[a], || {});
    let c = js.parallel_for(0..100, jobsys::Batch::Fixed(10), |_| {});
    let d = js.combine(&[b, c]);
    let st = js.stats();
    assert_eq!(st.jobs_scheduled, 4);
    assert_eq!(st.jobs_finished, 0);
    js.complete(d);
    let st = js.stats();
    assert_eq!(st.jobs_scheduled, 4);
    assert_eq!(st.jobs_finished, 4);
    assert_eq!(st.workers, 0);
    // Failed and skipped jobs count as finished too.
    let bad = js.schedule(|| panic!("counted"));
    let skipped = js.schedule_after(&[bad], || {});
    let _ = js.try_complete(skipped);
    let _ = js.try_complete(bad);
    let st = js.stats();
    assert_eq!((st.jobs_scheduled, st.jobs_finished), (6, 6));
}

/// With workers: after complete() of everything, the counts agree.
#[test]
fn stats_agree_after_complete_with_workers() {
    watchdog(60, || {
        let js = JobSystem::builder().workers(2).build().unwrap();
        let hs: Vec<JobHandle> = (0..1000)
            .map(|k| {
                if k % 2 == 0 {
                    js.schedule(|| {})
                } else {
                    js.parallel_for(0..50, jobsys::Batch::Fixed(5), |_| {})
                }
            })
            .collect();
        let all = js.combine(&hs);
        js.complete(all);
        let st = js.stats();
        assert_eq!(st.workers, 2);
        // Note: `finish` bumps jobs_finished just after publishing FINISHED,
        // so in theory a waiter could read the stats a moment early; if this
        // ever flakes, that ordering is why.
        assert_eq!((st.jobs_scheduled, st.jobs_finished), (1001, 1001));
    });
}
