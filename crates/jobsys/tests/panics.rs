//! Panicking jobs: the worker survives, `complete` re-raises, `try_complete`
//! reports, dependents do not run and report `via_dependency`, combines and
//! loops fail, scopes and `join` propagate after everything finished.

mod common;

use common::{expect_panic, panic_message, watchdog, DropCount};
use jobsys::{Batch, JobError, JobHandle, JobSystem};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

const WORKER_COUNTS: [usize; 3] = [0, 1, 3];

fn flag() -> (Arc<AtomicBool>, Arc<AtomicBool>) {
    let f = Arc::new(AtomicBool::new(false));
    (f.clone(), f)
}

/// The `JobPanic` of a failed wait, or a test failure naming what came back.
fn panicked(r: Result<(), JobError>) -> jobsys::JobPanic {
    match r {
        Err(JobError::Panicked(p)) => p,
        other => panic!("expected JobError::Panicked, got {other:?}"),
    }
}

#[test]
fn a_panicking_job_does_not_kill_its_worker() {
    watchdog(60, || {
        let js = JobSystem::builder().workers(1).build().unwrap();
        // The main thread never helps here (it only waits on channels), so
        // every job below runs on the one worker.
        let (tx, rx) = mpsc::channel::<Option<String>>();
        let mut failed = Vec::new();
        for k in 0..20 {
            let tx1 = tx.clone();
            failed.push(js.schedule(move || {
                tx1.send(std::thread::current().name().map(str::to_string))
                    .unwrap();
                panic!("worker panic {k}");
            }));
            let tx = tx.clone();
            js.schedule(move || {
                tx.send(std::thread::current().name().map(str::to_string))
                    .unwrap();
            });
        }
        for _ in 0..40 {
            let name = rx
                .recv_timeout(Duration::from_secs(30))
                .expect("worker died");
            assert_eq!(name.as_deref(), Some("jobsys-worker-1"));
        }
        for (k, h) in failed.into_iter().enumerate() {
            let p = panicked(js.try_complete(h));
            assert_eq!(p.message(), format!("worker panic {k}"));
        }
        assert_eq!(js.workers(), 1);
        // Still fully working afterwards.
        let n = Arc::new(AtomicUsize::new(0));
        let n2 = n.clone();
        let h = js.parallel_for(0..1000, Batch::Fixed(10), move |_| {
            n2.fetch_add(1, SeqCst);
        });
        js.complete(h);
        assert_eq!(n.load(SeqCst), 1000);
    });
}

#[test]
fn complete_reraises_the_original_panic_payload() {
    for workers in WORKER_COUNTS {
        let js = JobSystem::builder().workers(workers).build().unwrap();
        // &'static str payload.
        let h = js.schedule(|| panic!("boom str"));
        let p = catch_unwind(AssertUnwindSafe(|| js.complete(h))).unwrap_err();
        assert_eq!(p.downcast_ref::<&str>(), Some(&"boom str"));
        // String payload.
        let h = js.schedule(move || panic!("boom {}", workers));
        let p = catch_unwind(AssertUnwindSafe(|| js.complete(h))).unwrap_err();
        assert_eq!(panic_message(&*p), format!("boom {workers}"));
        // Non-string payload comes back unchanged too.
        let h = js.schedule(|| std::panic::panic_any(42i32));
        let p = catch_unwind(AssertUnwindSafe(|| js.complete(h))).unwrap_err();
        assert_eq!(p.downcast_ref::<i32>(), Some(&42));
        // And the system still works.
        let (set, seen) = flag();
        let h = js.schedule(move || set.store(true, SeqCst));
        js.complete(h);
        assert!(seen.load(SeqCst));
    }
}

#[test]
fn try_complete_returns_panicked_with_the_message() {
    for workers in WORKER_COUNTS {
        let js = JobSystem::builder().workers(workers).build().unwrap();
        let h = js.schedule(|| panic!("boom try"));
        let err = js.try_complete(h).unwrap_err();
        assert!(err.to_string().contains("boom try"), "{err}");
        let mut p = panicked(Err(err));
        assert_eq!(p.message(), "boom try");
        assert!(!p.via_dependency());
        assert!(js.is_complete(h));
        // The first waiter gets the original payload.
        let payload = p.take_payload().expect("first waiter gets the payload");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom try"));
        // Non-string payloads get a placeholder message.
        let h = js.schedule(|| std::panic::panic_any(7u8));
        let p = panicked(js.try_complete(h));
        assert!(!p.message().is_empty());
    }
}

#[test]
fn dependents_of_a_failed_job_do_not_run_and_report_via_dependency() {
    for workers in WORKER_COUNTS {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let ran = Arc::new(AtomicUsize::new(0));
            let job = |ran: &Arc<AtomicUsize>| {
                let ran = ran.clone();
                move || {
                    ran.fetch_add(1, SeqCst);
                }
            };
            let ok = js.schedule(job(&ran));
            let (go_tx, go_rx) = mpsc::channel::<()>();
            let bad = js.schedule(move || {
                let _ = go_rx.recv();
                panic!("root cause");
            });
            // Scheduled while the failing job has not failed yet.
            let b = js.schedule_after(&[bad], job(&ran));
            let c = js.schedule_after(&[b], job(&ran));
            let d = js.schedule_after(&[ok, bad], job(&ran));
            let ran2 = ran.clone();
            let e = js
                .job()
                .after(&[b])
                .parallel_for(0..100, Batch::Fixed(3), move |_| {
                    ran2.fetch_add(1, SeqCst);
                });
            let f = js.schedule_after(&[ok, c, e], job(&ran));
            go_tx.send(()).unwrap();
            for (name, h) in [("b", b), ("c", c), ("d", d), ("e", e), ("f", f)] {
                let p = panicked(js.try_complete(h));
                assert!(p.via_dependency(), "{name}");
                assert_eq!(p.message(), "root cause", "{name}");
            }
            // Scheduled after the failure, before anyone observed it.
            let g = js.schedule_after(&[bad], job(&ran));
            let p = panicked(js.try_complete(g));
            assert!(p.via_dependency());
            // The failing job itself reports it directly.
            let p = panicked(js.try_complete(bad));
            assert!(!p.via_dependency());
            assert_eq!(p.message(), "root cause");
            js.complete(ok);
            // Only `ok` ran.
            assert_eq!(ran.load(SeqCst), 1);
        });
    }
}

#[test]
fn complete_on_a_dependent_panics_naming_the_cause() {
    let js = JobSystem::builder().workers(1).build().unwrap();
    let bad = js.schedule(|| panic!("deep cause"));
    let dep = js.schedule_after(&[bad], || {});
    let msg = expect_panic(|| js.complete(dep));
    assert!(msg.contains("deep cause"), "{msg}");
}

/// Jobs that never run because a dependency failed still drop what they
/// captured, exactly once; jobs that run drop it exactly once too.
#[test]
fn closures_are_dropped_exactly_once_when_run_failed_or_skipped() {
    for workers in WORKER_COUNTS {
        let js = JobSystem::builder().workers(workers).build().unwrap();
        let drops = Arc::new(AtomicUsize::new(0));
        let mut hs = Vec::new();
        for k in 0..100 {
            let big = [k as u64; 32]; // larger than a slot: boxed closure
            let guard = DropCount(drops.clone());
            let bad = js.schedule(move || {
                let _g = &guard;
                if k % 2 == 0 {
                    panic!("even");
                }
            });
            let guard = DropCount(drops.clone());
            hs.push(js.schedule_after(&[bad], move || {
                let _g = &guard;
                assert!(big[0] < 1000);
            }));
            let guard = DropCount(drops.clone());
            hs.push(
                js.job()
                    .after(&[bad])
                    .parallel_for(0..10, Batch::Fixed(2), move |_| {
                        let _g = &guard;
                    }),
            );
            hs.push(bad);
        }
        for h in hs {
            let _ = js.try_complete(h);
        }
        drop(js);
        assert_eq!(drops.load(SeqCst), 300, "workers {workers}");
    }
}

#[test]
fn combine_of_a_failed_job_fails() {
    for workers in WORKER_COUNTS {
        let js = JobSystem::builder().workers(workers).build().unwrap();
        let ok = js.schedule(|| {});
        let bad = js.schedule(|| panic!("combined boom"));
        let both = js.combine(&[ok, bad]);
        let p = panicked(js.try_complete(both));
        assert!(p.via_dependency());
        assert_eq!(p.message(), "combined boom");
        // complete() on the combine re-raises with the cause in the message.
        let bad2 = js.schedule(|| panic!("combined boom 2"));
        let both2 = js.combine(&[ok, bad2]);
        let msg = expect_panic(|| js.complete(both2));
        assert!(msg.contains("combined boom 2"), "{msg}");
        // A combine of combines fails too.
        let bad3 = js.schedule(|| panic!("nested boom"));
        let inner = js.combine(&[bad3]);
        let outer = js.combine(&[ok, inner]);
        let p = panicked(js.try_complete(outer));
        assert_eq!(p.message(), "nested boom");
        js.try_complete(ok).unwrap();
    }
}

#[test]
fn panic_in_a_parallel_for_piece_fails_the_loop() {
    for workers in WORKER_COUNTS {
        for chunked in [false, true] {
            watchdog(60, move || {
                let js = JobSystem::builder().workers(workers).build().unwrap();
                let hits: Arc<Vec<AtomicU32>> =
                    Arc::new((0..1000).map(|_| AtomicU32::new(0)).collect());
                let h2 = hits.clone();
                let body = move |i: usize| {
                    h2[i].fetch_add(1, SeqCst);
                    if i == 537 {
                        panic!("piece {i} failed");
                    }
                };
                let h = if chunked {
                    js.job()
                        .parallel_for_chunked(0..1000, Batch::Fixed(10), move |r| r.for_each(&body))
                } else {
                    js.parallel_for(0..1000, Batch::Fixed(10), body)
                };
                let (set, seen) = flag();
                let after = js.schedule_after(&[h], move || set.store(true, SeqCst));
                let p = panicked(js.try_complete(h));
                assert_eq!(p.message(), "piece 537 failed");
                assert!(!p.via_dependency());
                let p = panicked(js.try_complete(after));
                assert!(p.via_dependency());
                assert!(!seen.load(SeqCst), "dependent of a failed loop ran");
                // No index ran twice; the failing one ran.
                assert!(hits.iter().all(|c| c.load(SeqCst) <= 1));
                assert_eq!(hits[537].load(SeqCst), 1);
                // complete() re-raises the piece's payload.
                let h = js.parallel_for(0..100, Batch::Fixed(1), |i| {
                    if i == 50 {
                        panic!("again");
                    }
                });
                let payload = catch_unwind(AssertUnwindSafe(|| js.complete(h))).unwrap_err();
                assert_eq!(panic_message(&*payload), "again");
                // The system keeps working.
                let n = Arc::new(AtomicUsize::new(0));
                let n2 = n.clone();
                let h = js.parallel_for(0..1000, Batch::Auto, move |_| {
                    n2.fetch_add(1, SeqCst);
                });
                js.complete(h);
                assert_eq!(n.load(SeqCst), 1000);
            });
        }
    }
}

#[test]
fn every_piece_panicking_reports_one_of_the_panics() {
    for workers in WORKER_COUNTS {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let drops = Arc::new(AtomicUsize::new(0));
            let guard = DropCount(drops.clone());
            let h = js.parallel_for(0..500, Batch::Fixed(1), move |i| {
                let _g = &guard;
                panic!("piece {i}");
            });
            let p = panicked(js.try_complete(h));
            assert!(p.message().starts_with("piece "), "{}", p.message());
            drop(js);
            assert_eq!(drops.load(SeqCst), 1, "loop closure dropped once");
        });
    }
}

#[test]
fn panic_in_a_scope_job_propagates_after_all_scope_jobs_finished() {
    for workers in WORKER_COUNTS {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let done: Vec<AtomicBool> = (0..50).map(|_| AtomicBool::new(false)).collect();
            let r = catch_unwind(AssertUnwindSafe(|| {
                js.scope(|s| {
                    for (k, d) in done.iter().enumerate() {
                        s.schedule(move || {
                            if k == 10 {
                                panic!("scope job failed");
                            }
                            if k % 7 == 0 {
                                // Some jobs are still running when the
                                // panic happens.
                                std::thread::sleep(Duration::from_millis(5));
                            }
                            d.store(true, SeqCst);
                        });
                    }
                });
            }));
            let payload = r.unwrap_err();
            assert_eq!(panic_message(&*payload), "scope job failed");
            for (k, d) in done.iter().enumerate() {
                assert_eq!(d.load(SeqCst), k != 10, "job {k}");
            }
        });
    }
}

#[test]
fn panic_in_the_scope_body_waits_for_its_jobs_then_propagates() {
    for workers in WORKER_COUNTS {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let done: Vec<AtomicBool> = (0..20).map(|_| AtomicBool::new(false)).collect();
            let r = catch_unwind(AssertUnwindSafe(|| {
                js.scope(|s| {
                    for d in &done {
                        s.schedule(move || {
                            std::thread::sleep(Duration::from_millis(1));
                            d.store(true, SeqCst);
                        });
                    }
                    panic!("scope body failed");
                })
            }));
            assert_eq!(panic_message(&*r.unwrap_err()), "scope body failed");
            assert!(done.iter().all(|d| d.load(SeqCst)));
        });
    }
}

#[test]
fn panic_in_a_scope_parallel_for_propagates() {
    for workers in WORKER_COUNTS {
        let js = JobSystem::builder().workers(workers).build().unwrap();
        let data = vec![1u32; 1000];
        let r = catch_unwind(AssertUnwindSafe(|| {
            js.scope(|s| {
                s.parallel_for(0..data.len(), Batch::Fixed(16), |i| {
                    assert!(i != 999, "last index {}", data[i]);
                });
            })
        }));
        assert_eq!(panic_message(&*r.unwrap_err()), "last index 1");
    }
}

#[test]
fn join_with_a_panicking_side_propagates_after_both_finished() {
    for workers in WORKER_COUNTS {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            // The scheduled side panics; the inline side completes.
            let (set, seen) = flag();
            let r = catch_unwind(AssertUnwindSafe(|| {
                js.join(
                    || -> u32 { panic!("left side") },
                    || set.store(true, SeqCst),
                )
            }));
            assert_eq!(panic_message(&*r.unwrap_err()), "left side");
            assert!(seen.load(SeqCst));
            // The inline side panics; the scheduled side still ran.
            let (set, seen) = flag();
            let r = catch_unwind(AssertUnwindSafe(|| {
                js.join(
                    || {
                        std::thread::sleep(Duration::from_millis(2));
                        set.store(true, SeqCst)
                    },
                    || -> u32 { panic!("right side") },
                )
            }));
            assert_eq!(panic_message(&*r.unwrap_err()), "right side");
            assert!(
                seen.load(SeqCst),
                "join returned before its other side finished"
            );
            // Both panic: one of the two payloads comes out.
            let r = catch_unwind(AssertUnwindSafe(|| {
                js.join(
                    || -> u32 { panic!("both A") },
                    || -> u32 { panic!("both B") },
                )
            }));
            let msg = panic_message(&*r.unwrap_err());
            assert!(msg == "both A" || msg == "both B", "{msg}");
            // And join still works.
            assert_eq!(js.join(|| 1, || 2), (1, 2));
        });
    }
}

#[test]
fn a_job_can_handle_a_panic_of_a_job_it_waits_on() {
    for workers in WORKER_COUNTS {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let seen = Arc::new(Mutex::new(None));
            let (js2, seen2) = (js.clone(), seen.clone());
            let outer = js.schedule(move || {
                let inner = js2.schedule(|| panic!("inner failed"));
                let r = js2.try_complete(inner);
                *seen2.lock().unwrap() = Some(panicked(r).message().to_string());
            });
            js.complete(outer);
            assert_eq!(seen.lock().unwrap().as_deref(), Some("inner failed"));
            // With complete() inside, the panic propagates through the outer
            // job to its waiter, payload intact.
            let js2 = js.clone();
            let outer = js.schedule(move || {
                let inner = js2.schedule(|| panic!("inner failed again"));
                js2.complete(inner);
            });
            let p = catch_unwind(AssertUnwindSafe(|| js.complete(outer))).unwrap_err();
            assert_eq!(panic_message(&*p), "inner failed again");
        });
    }
}

#[test]
fn many_failed_jobs_do_not_exhaust_the_system() {
    for workers in [0, 2] {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            for round in 0..20 {
                let hs: Vec<JobHandle> = (0..1000)
                    .map(|k| js.schedule(move || assert!(k % 2 == 1, "even {k}")))
                    .collect();
                let failures = hs.iter().filter(|&&h| js.try_complete(h).is_err()).count();
                assert_eq!(failures, 500, "round {round}");
            }
            let st = js.stats();
            assert_eq!(st.jobs_scheduled, 20_000);
        });
    }
}

/// DESIGN: "the waiter gets the panic". Every wait on a failed handle must
/// report the failure, not only the first one (`JobPanic::take_payload`
/// documents that later waiters get the message without the payload).
#[test]
fn every_wait_on_a_failed_job_reports_the_failure() {
    for workers in WORKER_COUNTS {
        let js = JobSystem::builder().workers(workers).build().unwrap();
        let bad = js.schedule(|| panic!("seen twice"));
        let first = panicked(js.try_complete(bad));
        assert_eq!(first.message(), "seen twice");
        let second = js.try_complete(bad);
        assert!(
            matches!(&second, Err(JobError::Panicked(p)) if p.message() == "seen twice"),
            "workers {workers}: second try_complete on a failed job returned {second:?}"
        );
    }
}

/// Two threads waiting on the same failing job at once both see it fail.
#[test]
fn concurrent_waiters_on_a_failed_job_both_see_the_failure() {
    watchdog(60, || {
        let js = JobSystem::builder().workers(2).build().unwrap();
        let mut ok_seen = 0;
        for _ in 0..200 {
            let (tx, rx) = mpsc::channel::<()>();
            let h = js.schedule(move || {
                let _ = rx.recv();
                panic!("shared failure");
            });
            let js2 = js.clone();
            let t = std::thread::spawn(move || js2.try_complete(h).is_ok());
            tx.send(()).unwrap();
            let here = js.try_complete(h).is_ok();
            let there = t.join().unwrap();
            ok_seen += usize::from(here) + usize::from(there);
        }
        assert_eq!(ok_seen, 0, "waits on a failed job that returned Ok");
    });
}

/// DESIGN: "the jobs that depend on it do not run". That must hold for a
/// job scheduled after the failure was observed, too.
#[test]
fn a_job_scheduled_after_an_observed_failure_does_not_run() {
    for workers in WORKER_COUNTS {
        let js = JobSystem::builder().workers(workers).build().unwrap();
        let bad = js.schedule(|| panic!("observed"));
        assert!(js.try_complete(bad).is_err());
        let (set, seen) = flag();
        let dep = js.schedule_after(&[bad], move || set.store(true, SeqCst));
        let r = js.try_complete(dep);
        assert!(
            r.is_err() && !seen.load(SeqCst),
            "workers {workers}: dependent of a failed job ran ({r:?})"
        );
    }
}

/// Dependents attached while their dependency is failing on another thread
/// (before, during and after its finish) never run, and all report the
/// failure.
#[test]
fn dependents_attached_while_the_dependency_fails_never_run() {
    for workers in [1, 3] {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let ran = Arc::new(AtomicUsize::new(0));
            for i in 0..3000 {
                let spin = (i % 13) * 15;
                let bad = js.schedule(move || {
                    for _ in 0..spin {
                        std::hint::spin_loop();
                    }
                    panic!("racing failure");
                });
                let mut deps = Vec::new();
                for k in 0..(i % 4) {
                    let r = ran.clone();
                    deps.push(if k % 2 == 0 {
                        js.schedule_after(&[bad], move || {
                            r.fetch_add(1, SeqCst);
                        })
                    } else {
                        js.job()
                            .after(&[bad])
                            .parallel_for(0..4, Batch::Fixed(1), move |_| {
                                r.fetch_add(1, SeqCst);
                            })
                    });
                }
                for d in deps {
                    let p = panicked(js.try_complete(d));
                    assert!(p.via_dependency(), "iteration {i}");
                    assert_eq!(p.message(), "racing failure");
                }
                assert_eq!(panicked(js.try_complete(bad)).message(), "racing failure");
            }
            assert_eq!(ran.load(SeqCst), 0);
        });
    }
}

/// A named job's failure names it: its own panic ("job \"physics\"
/// panicked"), a dependent's inherited panic ("a dependency, job
/// \"physics\", panicked"), a named loop's panic, and a named job's
/// cancellation (`… (job "audio")`); `JobError::job_name` and
/// `JobPanic::job_name` say the name. An unnamed job's error names none.
#[test]
fn a_named_jobs_failure_names_the_job() {
    watchdog(60, || {
        for workers in WORKER_COUNTS {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let a = js.job().name("physics").schedule(|| panic!("boom"));
            let b = js
                .job()
                .desc(jobsys::JobDesc::named("render"))
                .after(&[a])
                .schedule(|| {});
            let e = js.try_complete(a).unwrap_err();
            assert_eq!(e.job_name(), Some("physics"));
            assert_eq!(e.to_string(), "jobsys: job \"physics\" panicked: boom");
            let e = js.try_complete(b).unwrap_err();
            assert_eq!(e.job_name(), Some("physics"));
            assert_eq!(
                e.to_string(),
                "jobsys: a dependency, job \"physics\", panicked: boom"
            );
            let p = panicked(Err(e));
            assert!(p.via_dependency());
            assert_eq!(p.job_name(), Some("physics"));
            // `resume` of a panic without its payload says the name too.
            let msg = expect_panic(|| p.resume());
            assert!(msg.contains("job \"physics\""), "{msg}");

            let l = js
                .job()
                .desc(jobsys::JobDesc::named("cull"))
                .after(&[])
                .parallel_for(0..4, Batch::Fixed(1), |i| assert!(i != 2, "piece 2"));
            let e = js.try_complete(l).unwrap_err();
            assert_eq!(e.job_name(), Some("cull"));
            assert!(
                e.to_string().starts_with("jobsys: job \"cull\" panicked: "),
                "{e}"
            );

            let unnamed = js.schedule(|| panic!("anon"));
            let e = js.try_complete(unnamed).unwrap_err();
            assert_eq!(e.job_name(), None);
            assert_eq!(e.to_string(), "jobsys: job panicked: anon");

            // Cancelled before it starts: a dependency that never finishes
            // until the cancel is done.
            let (tx, rx) = mpsc::channel::<()>();
            let rx = Mutex::new(rx);
            let gate = js.schedule(move || {
                let _ = rx.lock().unwrap().recv();
            });
            let c = js
                .job()
                .desc(jobsys::JobDesc::named("audio"))
                .after(&[gate])
                .schedule(|| {});
            assert!(js.cancel(c));
            drop(tx);
            let e = js.try_complete(c).unwrap_err();
            match &e {
                JobError::Cancelled(why) => assert!(why.ends_with("(job \"audio\")"), "{why}"),
                other => panic!("expected Cancelled, got {other:?}"),
            }
            assert!(e.to_string().contains("job \"audio\""), "{e}");
            js.complete(gate);
        }
    });
}
