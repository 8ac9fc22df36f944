//! `Limiter` and `JobBuilder::limit`: at most `max` of a limiter's jobs run
//! at once, each with a seat in `0..max` no other running one holds; a job
//! asks for its seat only once its dependencies have finished, waits for
//! it without holding a thread, and gives it back however its closure
//! ends (ran, panicked, skipped, cancelled); waiting jobs get seats by
//! priority, then in order.

mod common;

use common::{watchdog, Gate, Rng};
use jobsys::{limiter_slot, Batch, JobError, JobHandle, JobSystem, Limiter, Pin, Priority};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

fn system(workers: usize) -> JobSystem {
    JobSystem::builder().workers(workers).build().unwrap()
}

/// Counts the limiter's jobs running now and the most seen at once, and
/// checks that no seat is held twice.
struct Occupancy {
    now: AtomicUsize,
    most: AtomicUsize,
    seats: Vec<AtomicBool>,
}

impl Occupancy {
    fn new(max: usize) -> Arc<Occupancy> {
        Arc::new(Occupancy {
            now: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
            seats: (0..max).map(|_| AtomicBool::new(false)).collect(),
        })
    }

    /// The body of a limited job: enter, spin a little, leave.
    fn visit(&self) {
        let seat = limiter_slot().expect("a limited job has a seat");
        assert!(seat < self.seats.len(), "seat {seat} out of range");
        assert!(
            !self.seats[seat].swap(true, SeqCst),
            "seat {seat} held twice"
        );
        let n = self.now.fetch_add(1, SeqCst) + 1;
        self.most.fetch_max(n, SeqCst);
        for _ in 0..200 {
            std::hint::spin_loop();
        }
        self.now.fetch_sub(1, SeqCst);
        self.seats[seat].store(false, SeqCst);
    }
}

/// A job of `lim` that is running on a worker and keeps its seat until
/// the returned gate opens.
fn hold_seat(js: &JobSystem, lim: &Limiter) -> (JobHandle, Arc<Gate>) {
    let gate = Arc::new(Gate::default());
    let started = Arc::new(AtomicBool::new(false));
    let (g, s) = (gate.clone(), started.clone());
    let holder = js.job().limit(lim).schedule(move || {
        s.store(true, SeqCst);
        g.wait();
    });
    until(&started);
    (holder, gate)
}

fn until(flag: &AtomicBool) {
    while !flag.load(SeqCst) {
        std::thread::yield_now();
    }
}

#[test]
fn never_more_than_max_at_once_and_seats_are_exclusive() {
    watchdog(60, || {
        for workers in [0, 1, 3] {
            let js = system(workers);
            let lim = Limiter::new(2);
            let occ = Occupancy::new(2);
            let runs = Arc::new(AtomicUsize::new(0));
            let hs: Vec<JobHandle> = (0..300)
                .map(|_| {
                    let (occ, runs) = (occ.clone(), runs.clone());
                    js.job().limit(&lim).schedule(move || {
                        occ.visit();
                        runs.fetch_add(1, SeqCst);
                    })
                })
                .collect();
            js.complete(js.combine(&hs));
            assert_eq!(runs.load(SeqCst), 300, "{workers} workers");
            assert!(occ.most.load(SeqCst) <= 2, "{workers} workers");
            assert_eq!(lim.free(), 2);
            assert_eq!(lim.waiting(), 0);
        }
    });
}

#[test]
fn no_seat_outside_a_limited_job() {
    let js = system(1);
    assert_eq!(limiter_slot(), None);
    let h = js.schedule(|| assert_eq!(limiter_slot(), None));
    js.complete(h);
}

#[test]
fn zero_seats_is_refused() {
    let msg = common::expect_panic(|| Limiter::new(0));
    assert!(msg.contains("Limiter::new(0)"), "{msg}");
}

#[test]
fn a_job_takes_its_seat_only_after_its_dependencies() {
    watchdog(30, || {
        let js = system(2);
        let lim = Limiter::new(1);
        let gate = Arc::new(Gate::default());
        let started = Arc::new(AtomicBool::new(false));
        let (g, s) = (gate.clone(), started.clone());
        let dep = js.schedule(move || {
            s.store(true, SeqCst);
            g.wait();
        });
        until(&started);
        let after = js.job().limit(&lim).after(&[dep]).schedule(|| {});
        // The one seat is not taken by a job whose dependency still runs:
        // an unrelated limited job gets it and finishes.
        assert_eq!(lim.free(), 1);
        let other = js.job().limit(&lim).schedule(|| {});
        js.complete(other);
        assert!(!js.is_complete(after));
        gate.open();
        js.complete(after);
        assert_eq!(lim.free(), 1);
    });
}

#[test]
fn a_job_waiting_for_a_seat_holds_no_thread() {
    watchdog(30, || {
        // Two workers: the first holds the seat in a job that waits for
        // the gate; the second must still run an ordinary job (a waiting
        // limited job does not occupy it), which the test observes without
        // running anything itself.
        let js = system(2);
        let lim = Limiter::new(1);
        let (holder, gate) = hold_seat(&js, &lim);
        let waiting: Vec<JobHandle> = (0..3)
            .map(|_| js.job().limit(&lim).schedule(|| {}))
            .collect();
        assert_eq!(lim.waiting(), 3);
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        let free = js.schedule(move || r.store(true, SeqCst));
        until(&ran);
        assert!(waiting.iter().all(|&h| !js.is_complete(h)));
        gate.open();
        js.complete(js.combine(&waiting));
        js.complete(holder);
        js.complete(free);
        assert_eq!((lim.free(), lim.waiting()), (1, 0));
    });
}

#[test]
fn a_panicking_job_gives_its_seat_back() {
    watchdog(30, || {
        let js = system(1);
        let lim = Limiter::new(1);
        let bad = js.job().limit(&lim).schedule(|| panic!("limited boom"));
        let good = js.job().limit(&lim).schedule(|| {});
        assert!(matches!(js.try_complete(bad), Err(JobError::Panicked(_))));
        js.complete(good);
        assert_eq!(lim.free(), 1);
    });
}

#[test]
fn a_job_after_a_failed_one_is_skipped_and_takes_no_seat() {
    watchdog(30, || {
        let js = system(1);
        let lim = Limiter::new(1);
        let ran = Arc::new(AtomicBool::new(false));
        let bad = js.schedule(|| panic!("dependency boom"));
        let r = ran.clone();
        let skipped = js
            .job()
            .limit(&lim)
            .after(&[bad])
            .schedule(move || r.store(true, SeqCst));
        match js.try_complete(skipped) {
            Err(JobError::Panicked(p)) => {
                assert!(format!("{p:?}").contains("dependency boom"), "{p:?}")
            }
            other => panic!("expected the dependency's panic, got {other:?}"),
        }
        assert!(!ran.load(SeqCst));
        assert_eq!((lim.free(), lim.waiting()), (1, 0));
    });
}

#[test]
fn cancelling_a_job_that_waits_for_a_seat_ends_it_now() {
    watchdog(30, || {
        let js = system(1);
        let lim = Limiter::new(1);
        let (holder, gate) = hold_seat(&js, &lim);
        let tally = common::Tally::default();
        let waiting = js.job().limit(&lim).schedule(tally.job());
        assert_eq!(lim.waiting(), 1);
        assert!(js.cancel(waiting));
        // Ends while the seat is still taken: it left the queue.
        assert!(matches!(
            js.try_complete(waiting),
            Err(JobError::Cancelled(_))
        ));
        assert_eq!(tally.counts(), (0, 1));
        assert_eq!(lim.waiting(), 0);
        gate.open();
        js.complete(holder);
        assert_eq!(lim.free(), 1);
    });
}

#[test]
fn waiting_jobs_get_seats_by_priority_then_in_order() {
    watchdog(30, || {
        let js = system(1);
        let lim = Limiter::new(1);
        let (holder, gate) = hold_seat(&js, &lim);
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut hs = vec![holder];
        for (name, p) in [
            ("low", Priority::Low),
            ("normal-1", Priority::Normal),
            ("high", Priority::High),
            ("normal-2", Priority::Normal),
        ] {
            let o = order.clone();
            hs.push(
                js.job()
                    .limit(&lim)
                    .priority(p)
                    .schedule(move || o.lock().unwrap().push(name)),
            );
        }
        gate.open();
        js.complete(js.combine(&hs));
        assert_eq!(
            *order.lock().unwrap(),
            ["high", "normal-1", "normal-2", "low"]
        );
    });
}

#[test]
fn a_limited_loop_holds_one_seat_for_all_its_pieces() {
    watchdog(60, || {
        let js = system(3);
        let lim = Limiter::new(1);
        let active = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let pieces = Arc::new(AtomicUsize::new(0));
        let hs: Vec<JobHandle> = (0..2)
            .map(|me| {
                let (active, pieces) = (active.clone(), pieces.clone());
                let body = move |_i: usize| {
                    assert_eq!(limiter_slot(), Some(0));
                    active[me].fetch_add(1, SeqCst);
                    assert_eq!(active[1 - me].load(SeqCst), 0, "two limited loops overlap");
                    for _ in 0..500 {
                        std::hint::spin_loop();
                    }
                    active[me].fetch_sub(1, SeqCst);
                    pieces.fetch_add(1, SeqCst);
                };
                if me == 0 {
                    js.job()
                        .limit(&lim)
                        .parallel_for(0..400, Batch::Fixed(4), body)
                } else {
                    js.job()
                        .limit(&lim)
                        .parallel_for_chunked(0..400, Batch::Fixed(4), move |r| r.for_each(&body))
                }
            })
            .collect();
        js.complete(js.combine(&hs));
        assert_eq!(pieces.load(SeqCst), 800);
        // The seat comes back just after the loop: a job after it.
        let last = js.job().limit(&lim).schedule(|| {});
        js.complete(last);
        assert_eq!(lim.free(), 1);
    });
}

#[test]
fn random_graphs_of_limited_jobs_respect_the_limit_and_run_once() {
    watchdog(120, || {
        let mut rng = Rng::new(0x11_3175);
        for round in 0..20 {
            let workers = rng.below(4);
            let max = 1 + rng.below(3);
            let js = system(workers);
            let lim = Limiter::new(max);
            let occ = Occupancy::new(max);
            let runs = Arc::new(AtomicUsize::new(0));
            let mut hs: Vec<JobHandle> = Vec::new();
            for _ in 0..150 {
                let mut deps = Vec::new();
                for _ in 0..rng.below(3) {
                    if !hs.is_empty() {
                        deps.push(hs[rng.below(hs.len())]);
                    }
                }
                let (occ, runs) = (occ.clone(), runs.clone());
                let h = if rng.chance(50) {
                    js.job().limit(&lim).after(&deps).schedule(move || {
                        occ.visit();
                        runs.fetch_add(1, SeqCst);
                    })
                } else {
                    js.job().after(&deps).schedule(move || {
                        runs.fetch_add(1, SeqCst);
                    })
                };
                hs.push(h);
            }
            js.complete(js.combine(&hs));
            assert_eq!(runs.load(SeqCst), 150, "round {round}");
            assert!(occ.most.load(SeqCst) <= max, "round {round}");
            assert_eq!((lim.free(), lim.waiting()), (max, 0), "round {round}");
        }
    });
}

#[test]
fn limit_combines_with_scope_access_pin_and_batching() {
    watchdog(30, || {
        let js = system(2);
        let lim = Limiter::new(1);
        let mut local = 0u32;
        js.scope(|s| {
            let l = &mut local;
            s.job().limit(&lim).schedule(move || {
                assert_eq!(limiter_slot(), Some(0));
                *l += 1;
            });
        });
        assert_eq!(local, 1);
        let res = jobsys::Resource::new(0u32);
        let w = js
            .job()
            .limit(&lim)
            .access(res.write())
            .schedule(|v| *v += 2);
        let pinned = js
            .job()
            .limit(&lim)
            .pin(jobsys::Pin::Main)
            .after(&[w])
            .schedule(|| assert_eq!(limiter_slot(), Some(0)));
        let batched = js
            .job()
            .limit(&lim)
            .batched()
            .schedule(|| assert!(limiter_slot().is_some()));
        js.flush();
        js.complete(js.combine(&[pinned, batched]));
        assert_eq!(*res.read_now(&js), 2);
        assert_eq!(lim.free(), 1);
    });
}

#[test]
fn a_graph_node_takes_the_limit_in_every_run() {
    watchdog(60, || {
        let js = system(3);
        let lim = Limiter::new(1);
        let occ = Occupancy::new(1);
        let runs = Arc::new(AtomicUsize::new(0));
        let mut g = jobsys::GraphBuilder::new();
        for _ in 0..4 {
            let (occ, runs) = (occ.clone(), runs.clone());
            let _ = g.node().limit(&lim).call(move || {
                occ.visit();
                runs.fetch_add(1, SeqCst);
            });
        }
        let graph = g.build().unwrap();
        for _ in 0..10 {
            let h = graph.run(&js);
            js.complete(h);
        }
        assert_eq!(runs.load(SeqCst), 40);
        assert_eq!(occ.most.load(SeqCst), 1);
        assert_eq!((lim.free(), lim.waiting()), (1, 0));
    });
}

#[test]
fn a_seat_held_by_a_job_cancelled_at_its_threads_exit_passes_on() {
    watchdog(30, || {
        // A limited job pinned to a registered thread that exits without
        // running it: its closure is dropped as that thread exits (during
        // its thread-local teardown), and its seat must go to the job
        // waiting for it.
        let js = system(1);
        let lim = Arc::new(Limiter::new(1));
        let (tx, rx) = std::sync::mpsc::channel();
        let (js2, lim2) = (js.clone(), lim.clone());
        let t = std::thread::spawn(move || {
            let me = js2.register_thread();
            let pinned = js2.job().limit(&lim2).pin(Pin::Thread(me)).schedule(|| {});
            let waiting = js2.job().limit(&lim2).schedule(|| {});
            tx.send((pinned, waiting)).unwrap();
            // Exits without running its pinned job.
        });
        let (pinned, waiting) = rx.recv().unwrap();
        t.join().unwrap();
        assert!(matches!(
            js.try_complete(pinned),
            Err(JobError::Cancelled(_))
        ));
        js.complete(waiting);
        assert_eq!((lim.free(), lim.waiting()), (1, 0));
    });
}

#[test]
fn a_flood_from_four_threads_never_exceeds_the_limit() {
    watchdog(120, || {
        let js = system(4);
        let lim = Arc::new(Limiter::new(3));
        let occ = Occupancy::new(3);
        let runs = Arc::new(AtomicUsize::new(0));
        let floods: Vec<_> = (0..4)
            .map(|t| {
                let (js, lim, occ, runs) = (js.clone(), lim.clone(), occ.clone(), runs.clone());
                std::thread::spawn(move || {
                    let mut rng = Rng::new(t);
                    let mut hs: Vec<JobHandle> = Vec::new();
                    for _ in 0..250 {
                        let deps: Vec<JobHandle> = match hs.len() {
                            0 => Vec::new(),
                            n => vec![hs[rng.below(n)]; rng.below(2)],
                        };
                        let (occ, runs) = (occ.clone(), runs.clone());
                        let prio = [Priority::Low, Priority::Normal, Priority::High][rng.below(3)];
                        hs.push(js.job().limit(&lim).priority(prio).after(&deps).schedule(
                            move || {
                                occ.visit();
                                runs.fetch_add(1, SeqCst);
                            },
                        ));
                    }
                    js.complete(js.combine(&hs));
                })
            })
            .collect();
        for f in floods {
            f.join().unwrap();
        }
        assert_eq!(runs.load(SeqCst), 1000);
        assert!(occ.most.load(SeqCst) <= 3);
        assert_eq!((lim.free(), lim.waiting()), (3, 0));
    });
}

#[test]
fn cancelling_a_job_before_its_dependencies_finish_takes_no_seat() {
    watchdog(30, || {
        let js = system(1);
        let lim = Limiter::new(1);
        let gate = Arc::new(Gate::default());
        let started = Arc::new(AtomicBool::new(false));
        let (g, s) = (gate.clone(), started.clone());
        let dep = js.schedule(move || {
            s.store(true, SeqCst);
            g.wait();
        });
        until(&started);
        let tally = common::Tally::default();
        let x = js.job().limit(&lim).after(&[dep]).schedule(tally.job());
        assert!(js.cancel(x));
        assert_eq!(tally.counts(), (0, 1), "dropped at the cancel");
        gate.open();
        // Ends when its dependency has (its starter then finds it gone).
        assert!(matches!(js.try_complete(x), Err(JobError::Cancelled(_))));
        assert_eq!((lim.free(), lim.waiting()), (1, 0));
        let next = js
            .job()
            .limit(&lim)
            .schedule(|| assert_eq!(limiter_slot(), Some(0)));
        js.complete(next);
    });
}
