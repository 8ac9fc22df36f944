//! The successor kept in hand: a job that a finishing job releases is run
//! next by the same thread, without a deque, when a pop would have taken
//! it next anyway (`Stats::handoffs` counts those). These tests attack the
//! rules of when it may: order against High work, waits, cancels, panics,
//! shutdown, shuffled runs.

mod common;

use common::watchdog;
use jobsys::{JobError, JobSystem, Priority};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

fn system(workers: usize) -> JobSystem {
    JobSystem::builder()
        .workers(workers)
        .build()
        .expect("build")
}

/// A job that blocks its worker until `open` is sent: jobs scheduled after
/// it are all attached before any of them can be released.
fn gate(js: &JobSystem) -> (jobsys::JobHandle, mpsc::Sender<()>) {
    let (open, rx) = mpsc::channel::<()>();
    let rx = Mutex::new(rx);
    let h = js.schedule(move || {
        rx.lock().unwrap().recv().expect("the test opens the gate");
    });
    (h, open)
}

/// A chain released on the one worker, with nobody else looking (the main
/// thread waits on a channel, not in `complete`), runs on that worker in
/// order, every job handed on by the one before, but one in 65: after 64
/// handoffs in a row the next job goes through the worker's queue (its
/// loop looks at the bench, the CPUs and shutdown between jobs). 200 jobs
/// after the gate: runs of 64 + 1 queued, so 197 handoffs.
#[test]
fn a_chain_runs_on_the_worker_that_released_it_each_job_handed_on() {
    watchdog(30, || {
        let js = system(1);
        let (g, open) = gate(&js);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (done, finished) = mpsc::channel();
        let mut prev = g;
        for i in 0..200usize {
            let (seen, done, j) = (seen.clone(), done.clone(), js.clone());
            prev = js.schedule_after(&[prev], move || {
                seen.lock().unwrap().push((i, j.thread_index()));
                if i == 199 {
                    done.send(()).unwrap();
                }
            });
        }
        let before = js.stats();
        open.send(()).unwrap();
        finished.recv().unwrap();
        js.complete(prev);
        let seen = seen.lock().unwrap().clone();
        let want: Vec<_> = (0..200).map(|i| (i, Some(1))).collect();
        assert_eq!(seen, want, "in order, all on worker 1");
        assert_eq!((js.stats() - before).handoffs, 197);
    });
}

/// A High job that the running job schedules runs before the successor
/// that job's finish releases: the successor is kept only when a pop of
/// the worker's own queues would take it next, and the High queue comes
/// first.
#[test]
fn a_high_job_queued_by_the_running_job_runs_before_its_successor() {
    watchdog(30, || {
        for _ in 0..50 {
            let js = system(1);
            let (g, open) = gate(&js);
            let order = Arc::new(Mutex::new(Vec::new()));
            let (o, j) = (order.clone(), js.clone());
            let a = js.schedule_after(&[g], move || {
                o.lock().unwrap().push("a");
                let o = o.clone();
                j.job()
                    .priority(Priority::High)
                    .schedule(move || o.lock().unwrap().push("high"));
            });
            let (o, (done, finished)) = (order.clone(), mpsc::channel());
            let b = js.schedule_after(&[a], move || {
                o.lock().unwrap().push("b");
                done.send(()).unwrap();
            });
            open.send(()).unwrap();
            finished.recv().unwrap();
            js.complete(b);
            assert_eq!(*order.lock().unwrap(), ["a", "high", "b"]);
        }
    });
}

/// Threads waiting in `complete` for jobs of chains that workers hand on
/// get them: the job a waiter needs may be in a worker's hand (seen by
/// nobody) or taken by the waiter through its handle; each job runs once
/// and every wait returns.
#[test]
fn waits_on_handed_on_jobs_return_and_each_job_runs_once() {
    watchdog(60, || {
        let js = system(2);
        for round in 0..100 {
            let ran = Arc::new(AtomicUsize::new(0));
            let (g, open) = gate(&js);
            let mut chain = vec![g];
            for _ in 0..64 {
                let r = ran.clone();
                let prev = *chain.last().unwrap();
                chain.push(js.schedule_after(&[prev], move || {
                    r.fetch_add(1, SeqCst);
                }));
            }
            open.send(()).unwrap();
            // Wait from the middle first, then the end; on odd rounds from
            // another thread too.
            let mid = chain[32];
            let other = (round % 2 == 1).then(|| {
                let j = js.clone();
                std::thread::spawn(move || j.try_complete(mid))
            });
            js.complete(mid);
            js.complete(*chain.last().unwrap());
            if let Some(t) = other {
                t.join().unwrap().unwrap();
            }
            assert_eq!(ran.load(SeqCst), 64);
        }
    });
}

struct DropCount(Arc<AtomicUsize>);
impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A successor cancelled while the job before it runs is never run, its
/// closure dropped once, its wait reports the cancel, and the job after it
/// is skipped: a cancelled job is queued to be finished, never kept.
#[test]
fn a_successor_cancelled_while_its_dependency_runs_is_dropped_once_never_run() {
    watchdog(30, || {
        let js = system(1);
        let (g, open) = gate(&js);
        let a = js.schedule_after(&[g], || {});
        let (ran, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (r, d) = (ran.clone(), DropCount(dropped.clone()));
        let b = js.schedule_after(&[a], move || {
            let _keep = &d;
            r.fetch_add(1, SeqCst);
        });
        let r = ran.clone();
        let c = js.schedule_after(&[b], move || {
            r.fetch_add(1, SeqCst);
        });
        assert!(js.cancel(b));
        open.send(()).unwrap();
        assert!(matches!(js.try_complete(b), Err(JobError::Cancelled(_))));
        assert!(js.try_complete(c).is_err(), "the job after it is skipped");
        assert_eq!(ran.load(SeqCst), 0);
        assert_eq!(dropped.load(SeqCst), 1);
    });
}

/// A job that panics hands nothing on: its successors are skipped (their
/// closures dropped unrun, once) and their waits report the panic.
#[test]
fn a_panicking_job_s_successors_are_skipped_not_handed_on() {
    watchdog(30, || {
        let js = system(1);
        let (g, open) = gate(&js);
        let a = js
            .job()
            .name("boom")
            .after(&[g])
            .schedule(|| panic!("boom"));
        let (ran, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let hs: Vec<_> = (0..3)
            .map(|_| {
                let (r, d) = (ran.clone(), DropCount(dropped.clone()));
                js.schedule_after(&[a], move || {
                    let _keep = &d;
                    r.fetch_add(1, SeqCst);
                })
            })
            .collect();
        let before = js.stats();
        open.send(()).unwrap();
        for h in hs {
            let e = js.try_complete(h).unwrap_err();
            assert!(e.to_string().contains("boom"), "{e}");
        }
        assert_eq!(ran.load(SeqCst), 0);
        assert_eq!(dropped.load(SeqCst), 3);
        // The gate hands `boom` on; `boom` hands nothing on.
        assert_eq!((js.stats() - before).handoffs, 1);
    });
}

/// Chains still running when the system is dropped run to their end: a
/// job in a worker's hand is run or queued before that worker looks
/// anywhere else, so shutdown's drain finds every one.
#[test]
fn chains_in_flight_at_the_drop_all_run() {
    watchdog(60, || {
        for _ in 0..20 {
            let ran = Arc::new(AtomicUsize::new(0));
            let js = system(2);
            for _ in 0..20 {
                let mut prev: Option<jobsys::JobHandle> = None;
                for _ in 0..50 {
                    let r = ran.clone();
                    let deps: Vec<_> = prev.into_iter().collect();
                    prev = Some(js.schedule_after(&deps, move || {
                        r.fetch_add(1, SeqCst);
                    }));
                }
            }
            drop(js);
            assert_eq!(ran.load(SeqCst), 1000);
        }
    });
}

/// Shuffled runs (`Builder::shuffle`) take every job from a queue in the
/// shuffled order: nothing is handed on.
#[test]
fn shuffled_runs_hand_nothing_on() {
    watchdog(30, || {
        let js = JobSystem::builder()
            .workers(1)
            .shuffle(7)
            .build()
            .expect("build");
        let (g, open) = gate(&js);
        let mut prev = g;
        for _ in 0..50 {
            prev = js.schedule_after(&[prev], || {});
        }
        open.send(()).unwrap();
        js.complete(prev);
        assert_eq!(js.stats().handoffs, 0);
    });
}

/// Jobs handed on that fork and wait themselves: each job of a chain runs a
/// `join`, a scope with two jobs, and a nested job it completes, while the
/// main thread waits on random links of the chains. Every closure runs
/// exactly once, in chain order.
#[test]
fn handed_on_jobs_that_join_scope_and_wait_inside_run_once_in_order() {
    watchdog(60, || {
        let js = system(2);
        let mut rng = common::Rng::new(11);
        for _ in 0..20 {
            let ran = Arc::new(AtomicUsize::new(0));
            let links: Vec<Arc<AtomicUsize>> =
                (0..4).map(|_| Arc::new(AtomicUsize::new(0))).collect();
            let mut chains = Vec::new();
            for link in &links {
                let mut prev: Vec<jobsys::JobHandle> = Vec::new();
                let mut hs = Vec::new();
                for i in 0..30usize {
                    let (r, l, j) = (ran.clone(), link.clone(), js.clone());
                    let h = js.schedule_after(&prev, move || {
                        assert_eq!(l.fetch_add(1, SeqCst), i, "chain order");
                        j.join(|| r.fetch_add(1, SeqCst), || r.fetch_add(1, SeqCst));
                        j.scope(|s| {
                            s.schedule(|| {
                                r.fetch_add(1, SeqCst);
                            });
                            s.schedule(|| {
                                r.fetch_add(1, SeqCst);
                            });
                        });
                        let r2 = r.clone();
                        let child = j.schedule(move || {
                            r2.fetch_add(1, SeqCst);
                        });
                        j.complete(child);
                    });
                    prev = vec![h];
                    hs.push(h);
                }
                chains.push(hs);
            }
            for _ in 0..8 {
                let c = &chains[rng.below(chains.len())];
                js.complete(c[rng.below(c.len())]);
            }
            for c in &chains {
                js.complete(*c.last().unwrap());
            }
            assert_eq!(ran.load(SeqCst), 4 * 30 * 5);
            for l in &links {
                assert_eq!(l.load(SeqCst), 30);
            }
        }
    });
}
