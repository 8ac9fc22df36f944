//! Idle policies, hot zones and batching. The whole suite also runs
//! once per policy in CI through `JOBSYS_IDLE_POLICY`; these tests pin the
//! behaviour that distinguishes the policies. No timing assertions: counts
//! only, with a watchdog against hangs.

mod common;

use common::watchdog;
use jobsys::{IdlePolicy, JobSystem};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn all_policies() -> Vec<IdlePolicy> {
    vec![
        IdlePolicy::SpinThenSleep {
            spin: Duration::from_micros(30),
        },
        IdlePolicy::SpinThenSleep {
            spin: Duration::ZERO,
        },
        IdlePolicy::WhippingBoy,
        IdlePolicy::AlwaysSpin,
        IdlePolicy::ADAPTIVE,
    ]
}

/// Wait (bounded by the test's watchdog) until `cond` holds.
fn eventually(mut cond: impl FnMut() -> bool) {
    while !cond() {
        std::thread::yield_now();
    }
}

#[test]
fn every_policy_runs_every_job_from_many_threads() {
    watchdog(120, || {
        for policy in all_policies() {
            for workers in [0, 1, 3] {
                let js = JobSystem::builder()
                    .workers(workers)
                    .idle_policy(policy)
                    .build()
                    .unwrap();
                assert_eq!(js.idle_policy(), policy);
                let ran = Arc::new(AtomicUsize::new(0));
                std::thread::scope(|s| {
                    for _ in 0..3 {
                        let (js, ran) = (&js, &ran);
                        s.spawn(move || {
                            for _ in 0..300 {
                                let r = ran.clone();
                                let h = js.schedule(move || {
                                    r.fetch_add(1, Ordering::Relaxed);
                                });
                                js.complete(h);
                            }
                        });
                    }
                });
                assert_eq!(ran.load(Ordering::Relaxed), 900, "{}", policy.name());
            }
        }
    });
}

#[test]
fn always_spin_workers_never_sleep() {
    watchdog(60, || {
        let js = JobSystem::builder()
            .workers(2)
            .idle_policy(IdlePolicy::AlwaysSpin)
            .build()
            .unwrap();
        for _ in 0..200 {
            js.complete(js.schedule(|| {}));
        }
        assert_eq!(js.stats().sleeps, 0);
        assert_eq!(js.stats().wakes, 0);
    });
}

#[test]
fn whipping_boy_scheduling_thread_never_wakes_once_a_boy_searches() {
    watchdog(60, || {
        let js = JobSystem::builder()
            .workers(2)
            .idle_policy(IdlePolicy::WhippingBoy)
            .build()
            .unwrap();
        // One worker becomes the boy, the other goes to sleep.
        eventually(|| js.stats().sleeps >= 1);
        let main_wakes = |js: &JobSystem| {
            let total = js.stats().wakes;
            let by_workers: u64 = js.worker_stats().iter().map(|w| w.wakes).sum();
            total - by_workers
        };
        let before = main_wakes(&js);
        for _ in 0..500 {
            let h = js.schedule(|| {});
            js.complete(h);
        }
        assert_eq!(
            main_wakes(&js),
            before,
            "the scheduling thread issued a wake"
        );
    });
}

#[test]
fn hot_zones_nest_and_close_from_another_thread() {
    watchdog(60, || {
        // Pinned to the default policy: the test needs workers that sleep.
        let js = JobSystem::builder()
            .workers(2)
            .idle_policy(IdlePolicy::default())
            .build()
            .unwrap();
        eventually(|| js.stats().sleeps >= 2); // both workers asleep
        let outer = js.hot_zone();
        let inner = js.hot_zone();
        // While a zone is open nobody sleeps: the sleep count stops moving.
        let sleeps = js.stats().sleeps;
        for _ in 0..200 {
            js.complete(js.schedule(|| {}));
        }
        drop(inner);
        for _ in 0..200 {
            js.complete(js.schedule(|| {}));
        }
        assert_eq!(
            js.stats().sleeps,
            sleeps,
            "a worker slept inside a hot zone"
        );
        // Close the outer zone on another thread; workers may sleep again.
        std::thread::spawn(move || drop(outer)).join().unwrap();
        eventually(|| js.stats().sleeps > sleeps);
    });
}

#[test]
fn a_batch_runs_after_flush_and_wakes_no_more_workers_than_jobs() {
    watchdog(60, || {
        // Pinned to the default policy: the test needs workers that sleep.
        let js = JobSystem::builder()
            .workers(3)
            .idle_policy(IdlePolicy::default())
            .build()
            .unwrap();
        eventually(|| js.stats().sleeps >= 3);
        let ran = Arc::new(AtomicUsize::new(0));
        let mut hs = Vec::new();
        for _ in 0..2 {
            let r = ran.clone();
            hs.push(js.job().batched().schedule(move || {
                r.fetch_add(1, Ordering::Relaxed);
            }));
        }
        let woken = js.flush();
        assert!(woken <= 2, "woke {woken} workers for 2 jobs");
        assert_eq!(js.flush(), 0, "a second flush has nothing to publish");
        for h in hs {
            js.complete(h);
        }
        assert_eq!(ran.load(Ordering::Relaxed), 2);
    });
}

#[test]
fn complete_flushes_the_callers_batch() {
    watchdog(60, || {
        let js = JobSystem::builder()
            .workers(1)
            .idle_policy(IdlePolicy::SpinThenSleep {
                spin: Duration::ZERO,
            })
            .build()
            .unwrap();
        let a = js.job().batched().schedule(|| {});
        let b = js.job().batched().after(&[a]).schedule(|| {});
        js.complete(b); // must not wait for a flush that never comes
        assert!(js.is_complete(a));
    });
}

#[test]
fn a_batch_never_flushed_still_runs_at_shutdown_and_at_thread_exit() {
    watchdog(60, || {
        for workers in [0, 2] {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let ran = Arc::new(AtomicUsize::new(0));
            for _ in 0..50 {
                let r = ran.clone();
                js.job().batched().schedule(move || {
                    r.fetch_add(1, Ordering::Relaxed);
                });
            }
            // A thread that batches and exits without flushing.
            let (js2, r2) = (js.clone(), ran.clone());
            std::thread::spawn(move || {
                for _ in 0..50 {
                    let r = r2.clone();
                    js2.job().batched().schedule(move || {
                        r.fetch_add(1, Ordering::Relaxed);
                    });
                }
            })
            .join()
            .unwrap();
            // Its exit published them, and says so.
            assert_eq!(js.stats().batched_unflushed, 50, "workers {workers}");
            drop(js);
            assert_eq!(ran.load(Ordering::Relaxed), 100, "workers {workers}");
        }
    });
}

#[test]
fn polling_is_complete_publishes_the_callers_batch() {
    watchdog(60, || {
        let js = JobSystem::builder()
            .workers(1)
            .idle_policy(IdlePolicy::SpinThenSleep {
                spin: Duration::ZERO,
            })
            .build()
            .unwrap();
        // The worker asleep: only a wake (the flush) lets it run the job.
        while js.stats().sleeps == 0 {
            std::thread::yield_now();
        }
        let h = js.job().batched().schedule(|| {});
        // Without the flush this polls for ever (the watchdog fails it).
        while !js.is_complete(h) {
            std::thread::yield_now();
        }
        assert_eq!(js.stats().batched_unflushed, 0);
    });
}

#[test]
fn take_stats_gives_per_frame_counts() {
    let js = JobSystem::builder().workers(1).build().unwrap();
    let _ = js.take_stats();
    for _ in 0..10 {
        js.complete(js.schedule(|| {}));
    }
    let frame = js.take_stats();
    assert_eq!(frame.jobs_scheduled, 10);
    assert_eq!(frame.jobs_finished, 10);
    assert_eq!(js.take_stats().jobs_scheduled, 0);
    assert_eq!(js.worker_stats().len(), 1);
}

#[test]
fn policies_parse_from_their_names_and_bad_ones_are_errors() {
    for p in all_policies() {
        let parsed: IdlePolicy = match p {
            IdlePolicy::SpinThenSleep { spin } => format!("spin-then-sleep:{}us", spin.as_micros()),
            IdlePolicy::WhippingBoy => "whipping-boy".into(),
            IdlePolicy::AlwaysSpin => "always-spin".into(),
            _ => "adaptive".into(),
        }
        .parse()
        .unwrap();
        assert_eq!(parsed, p);
    }
    let e = "sometimes-spin".parse::<IdlePolicy>().unwrap_err();
    assert!(e.to_string().contains("sometimes-spin"), "{e}");
    let e = JobSystem::builder()
        .idle_policy(IdlePolicy::Adaptive {
            max_spin: Duration::from_micros(10),
            cpu_cap: 2.0,
        })
        .build()
        .unwrap_err();
    assert!(e.to_string().contains("cpu_cap"), "{e}");
}
