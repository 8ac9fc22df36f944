//! Many threads scheduling into one system; jobs scheduling jobs; fork/join
//! recursion from inside jobs (with `join`, with `scope`, with plain
//! schedule + complete); jobs waiting on other jobs.

mod common;

use common::{watchdog, Rng};
use jobsys::{Batch, JobHandle, JobSystem};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Barrier, Mutex};

const WORKER_COUNTS: [usize; 3] = [0, 1, 3];

fn fib_serial(n: u64) -> u64 {
    if n < 2 {
        n
    } else {
        fib_serial(n - 1) + fib_serial(n - 2)
    }
}

/// 8 threads schedule singles, chains and loops into one system at once and
/// each completes only its own handles.
#[test]
fn eight_threads_schedule_concurrently_and_complete_their_own_handles() {
    for workers in WORKER_COUNTS {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let start = Barrier::new(8);
            std::thread::scope(|s| {
                for t in 0..8u64 {
                    let js = &js;
                    let start = &start;
                    s.spawn(move || {
                        let mut rng = Rng::new(t);
                        start.wait();
                        for round in 0..20 {
                            let ran: Arc<Vec<AtomicU32>> =
                                Arc::new((0..100).map(|_| AtomicU32::new(0)).collect());
                            let mut hs: Vec<JobHandle> = Vec::new();
                            for k in 0..100 {
                                let ran = ran.clone();
                                let job = move || {
                                    ran[k].fetch_add(1, SeqCst);
                                };
                                let h = if k > 0 && rng.chance(30) {
                                    let d = hs[rng.below(k)];
                                    js.schedule_after(&[d], job)
                                } else {
                                    js.schedule(job)
                                };
                                hs.push(h);
                            }
                            let sum = Arc::new(AtomicUsize::new(0));
                            let sum2 = sum.clone();
                            let pf = js.parallel_for(0..500, Batch::Fixed(7), move |i| {
                                sum2.fetch_add(i, SeqCst);
                            });
                            // Complete in an order unrelated to scheduling.
                            if round % 2 == 0 {
                                for &h in hs.iter().rev() {
                                    js.complete(h);
                                }
                            } else {
                                let all = js.combine(&hs);
                                js.complete(all);
                            }
                            js.complete(pf);
                            for (k, r) in ran.iter().enumerate() {
                                assert_eq!(r.load(SeqCst), 1, "thread {t} round {round} job {k}");
                            }
                            assert_eq!(sum.load(SeqCst), 499 * 500 / 2);
                        }
                    });
                }
            });
        });
    }
}

/// Threads schedule jobs that depend on jobs other threads scheduled; one
/// thread waits for all of it.
#[test]
fn threads_depend_on_each_others_jobs() {
    for workers in WORKER_COUNTS {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let order = Arc::new(Mutex::new(Vec::new()));
            let (tx, rx) = mpsc::channel::<JobHandle>();
            let producer = {
                let js = js.clone();
                let order = order.clone();
                std::thread::spawn(move || {
                    for k in 0..200u32 {
                        let order = order.clone();
                        tx.send(js.schedule(move || order.lock().unwrap().push(("a", k))))
                            .unwrap();
                    }
                })
            };
            let consumer = {
                let js = js.clone();
                let order = order.clone();
                std::thread::spawn(move || {
                    let mut hs = Vec::new();
                    for (k, dep) in rx.iter().enumerate() {
                        let order = order.clone();
                        let k = k as u32;
                        hs.push(
                            js.schedule_after(&[dep], move || order.lock().unwrap().push(("b", k))),
                        );
                    }
                    hs
                })
            };
            producer.join().unwrap();
            let hs = consumer.join().unwrap();
            let all = js.combine(&hs);
            js.complete(all);
            let order = order.lock().unwrap();
            assert_eq!(order.len(), 400);
            for k in 0..200u32 {
                let a = order.iter().position(|&x| x == ("a", k)).unwrap();
                let b = order.iter().position(|&x| x == ("b", k)).unwrap();
                assert!(a < b, "b{k} ran before a{k}");
            }
        });
    }
}

/// Threads that schedule and exit without waiting: their jobs stay
/// reachable (through their handles, and at shutdown), and hundreds of
/// short-lived threads over time reuse the per-thread contexts.
#[test]
fn short_lived_threads_leave_their_jobs_runnable() {
    for workers in [0, 2] {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let count = Arc::new(AtomicUsize::new(0));
            let mut handles = Vec::new();
            for wave in 0..40 {
                let spawned: Vec<_> = (0..10)
                    .map(|_| {
                        let js = js.clone();
                        let count = count.clone();
                        std::thread::spawn(move || {
                            let c = count.clone();
                            let a = js.schedule(move || {
                                c.fetch_add(1, SeqCst);
                            });
                            let c = count.clone();
                            js.schedule_after(&[a], move || {
                                c.fetch_add(1, SeqCst);
                            })
                        })
                    })
                    .collect();
                for t in spawned {
                    handles.push(t.join().unwrap());
                }
                if wave % 2 == 0 {
                    // Half the waves are waited for from here.
                    for h in handles.drain(..) {
                        js.complete(h);
                    }
                }
            }
            for h in handles.drain(..) {
                js.complete(h);
            }
            assert_eq!(count.load(SeqCst), 40 * 10 * 2);
        });
    }
}

/// Jobs that schedule jobs (without waiting for them), several levels deep;
/// every job of the tree runs exactly once.
#[test]
fn jobs_schedule_jobs_from_inside_jobs() {
    fn spawn_tree(
        js: &JobSystem,
        depth: u32,
        ran: &Arc<AtomicUsize>,
        hs: &Arc<Mutex<Vec<JobHandle>>>,
    ) {
        let js2 = js.clone();
        let ran2 = ran.clone();
        let hs2 = hs.clone();
        let h = js.schedule(move || {
            ran2.fetch_add(1, SeqCst);
            if depth > 0 {
                for _ in 0..3 {
                    spawn_tree(&js2, depth - 1, &ran2, &hs2);
                }
            }
        });
        hs.lock().unwrap().push(h);
    }
    for workers in WORKER_COUNTS {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let ran = Arc::new(AtomicUsize::new(0));
            let hs = Arc::new(Mutex::new(Vec::new()));
            spawn_tree(&js, 6, &ran, &hs);
            // A job pushes its children's handles before it finishes, so
            // waiting until the list stays empty waits for the whole tree.
            loop {
                let batch: Vec<JobHandle> = std::mem::take(&mut *hs.lock().unwrap());
                if batch.is_empty() {
                    break;
                }
                for h in batch {
                    js.complete(h);
                }
            }
            let expected = (0..=6).map(|d| 3usize.pow(d)).sum::<usize>();
            assert_eq!(ran.load(SeqCst), expected);
        });
    }
}

/// Jobs that schedule dependent work (schedule_after, job().after(..).parallel_for)
/// from inside and hand the handle back out.
#[test]
fn jobs_schedule_dependent_work_from_inside_jobs() {
    for workers in WORKER_COUNTS {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let (tx, rx) = mpsc::channel::<JobHandle>();
            let phase = Arc::new(AtomicUsize::new(0));
            let js2 = js.clone();
            let p = phase.clone();
            let outer = js.schedule(move || {
                let p1 = p.clone();
                let a = js2.schedule(move || {
                    p1.store(1, SeqCst);
                });
                let p2 = p.clone();
                let b = js2
                    .job()
                    .after(&[a])
                    .parallel_for(0..100, Batch::Fixed(3), move |_| {
                        assert!(p2.load(SeqCst) >= 1, "loop ran before its dependency");
                    });
                let p3 = p.clone();
                let c = js2.schedule_after(&[b], move || {
                    assert_eq!(p3.swap(2, SeqCst), 1);
                });
                tx.send(c).unwrap();
            });
            js.complete(outer);
            let c = rx.recv().unwrap();
            js.complete(c);
            assert_eq!(phase.load(SeqCst), 2);
        });
    }
}

fn fib_join(js: &JobSystem, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = js.join(|| fib_join(js, n - 1), || fib_join(js, n - 2));
    a + b
}

/// Recursive fork/join with `join`, started from inside a job.
#[test]
fn fork_join_fib_with_join_inside_a_job() {
    for workers in WORKER_COUNTS {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let out = Arc::new(AtomicU64::new(0));
            let (js2, out2) = (js.clone(), out.clone());
            let h = js.schedule(move || out2.store(fib_join(&js2, 18), SeqCst));
            js.complete(h);
            assert_eq!(out.load(SeqCst), fib_serial(18));
            // And directly from several threads at once.
            std::thread::scope(|s| {
                for n in [15u64, 16, 17] {
                    let js = &js;
                    s.spawn(move || assert_eq!(fib_join(js, n), fib_serial(n)));
                }
            });
        });
    }
}

fn tree_sum_scope(js: &JobSystem, data: &[u64]) -> u64 {
    if data.len() <= 64 {
        return data.iter().sum();
    }
    let (l, r) = data.split_at(data.len() / 2);
    let mut left = 0;
    let mut right = 0;
    js.scope(|s| {
        s.schedule(|| left = tree_sum_scope(js, l));
        s.schedule(|| right = tree_sum_scope(js, r));
    });
    left + right
}

/// Recursive tree sum with `scope` (borrowing jobs) inside jobs.
#[test]
fn fork_join_tree_sum_with_scope_inside_jobs() {
    for workers in WORKER_COUNTS {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let data: Arc<Vec<u64>> = Arc::new((0..50_000u64).map(|i| i * i % 1009).collect());
            let expected: u64 = data.iter().sum();
            let out = Arc::new(AtomicU64::new(0));
            let (js2, out2, d2) = (js.clone(), out.clone(), data.clone());
            let h = js.schedule(move || out2.store(tree_sum_scope(&js2, &d2), SeqCst));
            js.complete(h);
            assert_eq!(out.load(SeqCst), expected);
        });
    }
}

fn fib_handles(js: &JobSystem, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let out = Arc::new(AtomicU64::new(0));
    let (js2, out2) = (js.clone(), out.clone());
    let h = js.schedule(move || out2.store(fib_handles(&js2, n - 1), SeqCst));
    let b = fib_handles(js, n - 2);
    js.complete(h);
    out.load(SeqCst) + b
}

/// Recursive fork/join with plain schedule + complete from inside jobs.
#[test]
fn fork_join_fib_with_schedule_and_complete_inside_jobs() {
    for workers in WORKER_COUNTS {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let out = Arc::new(AtomicU64::new(0));
            let (js2, out2) = (js.clone(), out.clone());
            let h = js.schedule(move || out2.store(fib_handles(&js2, 17), SeqCst));
            js.complete(h);
            assert_eq!(out.load(SeqCst), fib_serial(17));
        });
    }
}

/// A parallel_for whose pieces run nested parallel_fors and wait for them.
#[test]
fn nested_parallel_for_inside_parallel_for_pieces() {
    for workers in WORKER_COUNTS {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let cells: Arc<Vec<AtomicU32>> =
                Arc::new((0..64 * 64).map(|_| AtomicU32::new(0)).collect());
            let (js2, c2) = (js.clone(), cells.clone());
            let outer = js.parallel_for(0..64, Batch::Fixed(1), move |i| {
                let c3 = c2.clone();
                let inner = js2.parallel_for(0..64, Batch::Fixed(5), move |j| {
                    c3[i * 64 + j].fetch_add(1, SeqCst);
                });
                js2.complete(inner);
            });
            js.complete(outer);
            assert!(cells.iter().all(|c| c.load(SeqCst) == 1));
        });
    }
}

/// Jobs wait (complete) on jobs scheduled before them, on loops, and on
/// jobs scheduled by other threads; results must be visible after the wait.
#[test]
fn jobs_wait_on_other_jobs_from_inside_jobs() {
    for workers in WORKER_COUNTS {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let mut outs = Vec::new();
            let mut waiters = Vec::new();
            for k in 0..50u64 {
                let v = Arc::new(AtomicU64::new(0));
                let v2 = v.clone();
                let producer = js.schedule(move || v2.store(k + 1, SeqCst));
                let sum = Arc::new(AtomicU64::new(0));
                let sum2 = sum.clone();
                let lp = js.parallel_for(0..100, Batch::Fixed(9), move |i| {
                    sum2.fetch_add(i as u64, SeqCst);
                });
                let (js2, v3, s3) = (js.clone(), v.clone(), sum.clone());
                let out = Arc::new(AtomicU64::new(0));
                let out2 = out.clone();
                waiters.push(js.schedule(move || {
                    js2.complete(producer);
                    js2.complete(lp);
                    out2.store(v3.load(SeqCst) * 10_000 + s3.load(SeqCst), SeqCst);
                }));
                outs.push((k, out));
            }
            for h in waiters {
                js.complete(h);
            }
            for (k, out) in outs {
                assert_eq!(out.load(SeqCst), (k + 1) * 10_000 + 4950);
            }
        });
    }
}

/// Many jobs and the main thread all wait on one job that is held back
/// until every waiter is in place; every one of them must be woken.
#[test]
fn many_waiters_on_one_job_are_all_woken() {
    for workers in [1, 3] {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let (go_tx, go_rx) = mpsc::channel::<()>();
            let gate = js.schedule(move || go_rx.recv().unwrap());
            let woke = Arc::new(AtomicUsize::new(0));
            let waiters: Vec<JobHandle> = (0..20)
                .map(|_| {
                    let (js2, w) = (js.clone(), woke.clone());
                    js.schedule(move || {
                        js2.complete(gate);
                        w.fetch_add(1, SeqCst);
                    })
                })
                .collect();
            // Other threads wait too.
            let threads: Vec<_> = (0..3)
                .map(|_| {
                    let (js2, w) = (js.clone(), woke.clone());
                    std::thread::spawn(move || {
                        js2.complete(gate);
                        w.fetch_add(1, SeqCst);
                    })
                })
                .collect();
            // Give the waiters time to reach their wait (only to create the
            // situation; the result does not depend on it).
            std::thread::sleep(std::time::Duration::from_millis(20));
            go_tx.send(()).unwrap();
            for h in waiters {
                js.complete(h);
            }
            for t in threads {
                t.join().unwrap();
            }
            assert_eq!(woke.load(SeqCst), 23);
        });
    }
}

/// Schedule-and-complete in a tight loop while a worker competes for the
/// same job: exercises the finish → wake-the-waiter path many times (a lost
/// wake-up would hang here, caught by the watchdog).
#[test]
fn tight_schedule_complete_loop_never_loses_a_wake_up() {
    for workers in [1, 3] {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let n = Arc::new(AtomicUsize::new(0));
            for i in 0..20_000 {
                let n2 = n.clone();
                let spin = i % 7 * 20;
                let h = js.schedule(move || {
                    for _ in 0..spin {
                        std::hint::spin_loop();
                    }
                    n2.fetch_add(1, SeqCst);
                });
                if i % 3 == 0 {
                    let d = js.schedule_after(&[h], || {});
                    js.complete(d);
                } else {
                    js.complete(h);
                }
            }
            assert_eq!(n.load(SeqCst), 20_000);
        });
    }
}

/// A thread waits on a job while the job it needs is released by a worker
/// that picks another, blocking, job first. The waiter must not sleep
/// while the job it needs sits runnable in a queue.
#[test]
fn waiter_is_woken_when_the_job_it_needs_is_released_behind_another() {
    watchdog(20, || {
        let js = JobSystem::builder().workers(1).build().unwrap();
        let (started_tx, started_rx) = mpsc::channel::<()>();
        let (x_tx, x_rx) = mpsc::channel::<()>();
        let (d2_tx, d2_rx) = mpsc::channel::<()>();
        let x = js.schedule(move || {
            started_tx.send(()).unwrap();
            x_rx.recv().unwrap();
        });
        // d2 blocks until the main thread has seen d1 complete.
        let d2 = js.schedule_after(&[x], move || d2_rx.recv().unwrap());
        let d1_ran = Arc::new(AtomicBool::new(false));
        let r = d1_ran.clone();
        let d1 = js.schedule_after(&[x], move || r.store(true, SeqCst));
        // x runs on the worker (the main thread is not helping yet).
        started_rx.recv().unwrap();
        let releaser = std::thread::spawn(move || {
            // Only to create the situation: let the main thread park first.
            std::thread::sleep(std::time::Duration::from_millis(100));
            x_tx.send(()).unwrap();
        });
        js.complete(d1);
        assert!(d1_ran.load(SeqCst));
        d2_tx.send(()).unwrap();
        js.complete(d2);
        releaser.join().unwrap();
    });
}

/// `b` leaves jobs queued above `a`'s entry; join must find its own entry
/// under them and leave them runnable.
#[test]
fn join_when_b_leaves_jobs_queued_above_a() {
    for workers in WORKER_COUNTS {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let ran: Arc<Vec<AtomicU32>> = Arc::new((0..100).map(|_| AtomicU32::new(0)).collect());
            for _ in 0..50 {
                let mut left = Vec::new();
                let (a, b) = js.join(
                    || 40,
                    || {
                        for k in 0..100 {
                            let ran = ran.clone();
                            left.push(js.schedule(move || {
                                ran[k].fetch_add(1, SeqCst);
                            }));
                        }
                        2
                    },
                );
                assert_eq!(a + b, 42);
                for h in left {
                    js.complete(h);
                }
            }
            assert!(ran.iter().all(|r| r.load(SeqCst) == 50));
        });
    }
}

/// `a` runs on a worker while `b` waits for it to start: join really runs
/// both sides at once, and the joiner then waits on `a`'s latch (sleeping
/// while `a` is slow) and gets its result or its panic.
#[test]
fn join_runs_a_on_another_thread_and_waits_for_it() {
    for workers in [1, 3] {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            for round in 0..50 {
                let a_started = AtomicBool::new(false);
                let (ra, rb) = js.join(
                    || {
                        a_started.store(true, SeqCst);
                        if round % 5 == 0 {
                            // Slow enough that the joiner goes to sleep.
                            std::thread::sleep(std::time::Duration::from_millis(5));
                        }
                        std::thread::current().name().map(str::to_string)
                    },
                    || {
                        while !a_started.load(SeqCst) {
                            std::hint::spin_loop();
                        }
                        round
                    },
                );
                assert_eq!(rb, round);
                assert!(
                    ra.as_deref()
                        .is_some_and(|n| n.starts_with("jobsys-worker-")),
                    "{ra:?}"
                );
            }
            // A stolen `a` that panics: the panic comes out of join.
            let a_started = AtomicBool::new(false);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                js.join(
                    || {
                        a_started.store(true, SeqCst);
                        panic!("stolen side failed")
                    },
                    || {
                        while !a_started.load(SeqCst) {
                            std::hint::spin_loop();
                        }
                    },
                )
            }));
            assert_eq!(
                common::panic_message(&*r.unwrap_err()),
                "stolen side failed"
            );
        });
    }
}

/// Deep recursive join from several threads at once, checked against the
/// serial value, with borrowed data on each side.
#[test]
fn recursive_join_from_several_threads_borrowing_data() {
    fn sum(js: &JobSystem, data: &[u64]) -> u64 {
        if data.len() <= 16 {
            return data.iter().sum();
        }
        let (l, r) = data.split_at(data.len() / 2);
        let (a, b) = js.join(|| sum(js, l), || sum(js, r));
        a + b
    }
    for workers in WORKER_COUNTS {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let data: Vec<u64> = (0..100_000).collect();
            let expected: u64 = data.iter().sum();
            std::thread::scope(|s| {
                for _ in 0..4 {
                    let (js, data) = (&js, &data);
                    s.spawn(move || assert_eq!(sum(js, data), expected));
                }
            });
        });
    }
}

/// Scope jobs that schedule more scope jobs (from whatever thread runs
/// them): the scope waits for all of them before returning, so they may
/// borrow the caller's data.
#[test]
fn scope_waits_for_jobs_scheduled_by_its_own_jobs() {
    fn spread<'scope>(
        s: &'scope jobsys::Scope<'scope, '_>,
        hits: &'scope [AtomicU32],
        lo: usize,
        hi: usize,
    ) {
        if hi - lo == 1 {
            hits[lo].fetch_add(1, SeqCst);
            return;
        }
        let mid = (lo + hi) / 2;
        s.schedule(move || spread(s, hits, lo, mid));
        s.schedule(move || spread(s, hits, mid, hi));
    }
    for workers in WORKER_COUNTS {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            for _ in 0..20 {
                let hits: Vec<AtomicU32> = (0..1000).map(|_| AtomicU32::new(0)).collect();
                js.scope(|s| spread(s, &hits, 0, hits.len()));
                // Checked right after the scope returned: nothing is late.
                assert!(hits.iter().all(|h| h.load(SeqCst) == 1));
            }
        });
    }
}
