//! Engine integration, part 2: `JobSystem::cancel` and `is_cancelled`.
//!
//! Every scenario runs under `common::watchdog`. "Running" is made certain
//! with channels and gates the test controls (a job signals that it
//! started, then blocks or loops until it sees the cancel), never with
//! sleeps.

mod common;

use common::{watchdog, DropCount, Gate, Tally};
use jobsys::{is_cancelled, Batch, JobError, JobHandle, JobSystem};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::thread;

const SECS: u64 = 60;

fn system(workers: usize) -> JobSystem {
    JobSystem::builder().workers(workers).build().unwrap()
}

/// Sets the flag and joins the threads when dropped (also on failure).
struct StopOnDrop(Arc<AtomicBool>, Vec<thread::JoinHandle<()>>);
impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, SeqCst);
        for t in self.1.drain(..) {
            let _ = t.join();
        }
    }
}

#[track_caller]
fn assert_cancelled(js: &JobSystem, h: JobHandle, what: &str) {
    match js.try_complete(h) {
        Err(JobError::Cancelled(_)) => {}
        other => panic!("{what}: expected Err(Cancelled), got {other:?}"),
    }
}

/// A queued job cancelled before it started (0 workers: nobody can take
/// it): `cancel` returns true, the closure is dropped at once, exactly
/// once, and never runs; it and its dependents (direct and transitive)
/// report `Cancelled`, and the dependents' closures are dropped unrun.
#[test]
fn cancel_before_start_never_runs_and_fails_dependents() {
    watchdog(SECS, || {
        let js = system(0);
        let t = Tally::default();
        let h = js.schedule(t.job());
        let d1 = js.schedule_after(&[h], t.job());
        let d2 = js.schedule_after(&[d1], t.job());
        assert!(js.cancel(h), "a queued job is cancelled before it starts");
        assert_eq!(t.drops(), 1, "the closure is dropped by cancel, right away");
        assert_cancelled(&js, h, "cancelled job");
        assert_cancelled(&js, d1, "dependent");
        assert_cancelled(&js, d2, "dependent of dependent");
        assert_eq!(t.runs(), 0);
        assert_eq!(t.drops(), 3, "every closure dropped exactly once");
        assert!(!js.cancel(h), "cancelling a finished job again: false");
    });
}

/// A job that waits for a dependency still running on a worker, cancelled:
/// true, it never runs (also after the dependency finishes), and its
/// dependent is cancelled; the dependency itself is left alone (Ok).
#[test]
fn cancel_while_waiting_for_deps() {
    watchdog(SECS, || {
        let js = system(2);
        let t = Tally::default();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let dep = js.schedule(move || {
            let _ = go_rx.recv();
        });
        let h = js.schedule_after(&[dep], t.job());
        let after = js.schedule_after(&[h], t.job());
        assert!(js.cancel(h));
        assert_eq!(t.drops(), 1);
        go_tx.send(()).unwrap();
        js.try_complete(dep).expect("the dependency is not touched");
        assert_cancelled(&js, h, "cancelled");
        assert_cancelled(&js, after, "dependent");
        assert_eq!((t.runs(), t.drops()), (0, 2));
    });
}

/// Cancelling a `combine` group cancels every member, through nested
/// groups: none runs, each is dropped once, each reports `Cancelled`.
#[test]
fn cancel_of_a_combine_group_cancels_all_members_nested() {
    watchdog(SECS, || {
        let js = system(0);
        let t = Tally::default();
        let a = js.schedule(t.job());
        let b = js.schedule(t.job());
        let c = js.schedule(t.job());
        let d = js.schedule(t.job());
        let inner = js.combine(&[a, b]);
        let mid = js.combine(&[inner, c]);
        let outer = js.combine(&[mid, d]);
        let after = js.schedule_after(&[outer], t.job());
        assert!(js.cancel(outer));
        assert_eq!(t.drops(), 4, "the four members dropped by cancel");
        for (what, h) in [("a", a), ("b", b), ("c", c), ("d", d), ("outer", outer)] {
            assert_cancelled(&js, h, what);
        }
        assert_cancelled(&js, inner, "inner group");
        assert_cancelled(&js, after, "dependent of the group");
        assert_eq!((t.runs(), t.drops()), (0, 5));
    });
}

/// Cancelling a running `parallel_for` (its first pieces provably running:
/// they block on a gate the test opens after the cancel): `cancel` returns
/// false (pieces were handed out), the remaining pieces are skipped
/// (ran < total; a runner still finishes the guided chunk of pieces it
/// grabbed, and `is_cancelled()` reads true in them), the loop reports
/// `Cancelled`, its dependent does not run, and the closure is dropped once.
#[test]
fn cancel_of_a_running_parallel_for_skips_the_rest() {
    watchdog(SECS, || {
        for workers in [1, 2] {
            let js = system(workers);
            const TOTAL: usize = 1000;
            let gate = Arc::new(Gate::default());
            let started = Arc::new(AtomicUsize::new(0));
            let ran = Arc::new(AtomicUsize::new(0));
            let saw_cancel = Arc::new(AtomicUsize::new(0));
            let drops = Arc::new(AtomicUsize::new(0));
            let (tx, rx) = mpsc::channel::<()>();
            let tx = Mutex::new(tx);
            let body = {
                let (gate, started, ran) = (gate.clone(), started.clone(), ran.clone());
                let saw = saw_cancel.clone();
                let guard = DropCount(drops.clone());
                move |_i: usize| {
                    let _ = &guard;
                    if started.fetch_add(1, SeqCst) == 0 {
                        tx.lock().unwrap().send(()).unwrap();
                    }
                    gate.wait();
                    // The gate opens after the cancel: every piece past it
                    // runs in a cancelled loop.
                    if is_cancelled() {
                        saw.fetch_add(1, SeqCst);
                    }
                    ran.fetch_add(1, SeqCst);
                }
            };
            let h = js.parallel_for(0..TOTAL, Batch::Fixed(1), body);
            let t = Tally::default();
            let after = js.schedule_after(&[h], t.job());
            rx.recv().unwrap(); // a piece is running (blocked on the gate)
            assert!(
                !js.cancel(h),
                "pieces were handed out: cancel returns false"
            );
            gate.open();
            assert_cancelled(&js, h, "cancelled loop");
            assert_cancelled(&js, after, "dependent of the loop");
            let (ran, started) = (ran.load(SeqCst), started.load(SeqCst));
            assert_eq!(ran, started, "every piece that started finished");
            assert_eq!(
                saw_cancel.load(SeqCst),
                ran,
                "is_cancelled() true in every piece after the cancel"
            );
            assert!(
                (1..TOTAL).contains(&ran),
                "{workers} workers: ran {ran} of {TOTAL}"
            );
            eprintln!(
                "{workers} workers: {ran} pieces ran, {} skipped",
                TOTAL - ran
            );
            assert_eq!(drops.load(SeqCst), 1, "the loop's closure dropped once");
            assert_eq!((t.runs(), t.drops()), (0, 1));
        }
    });
}

/// Cancelling a running single job: `cancel` returns false, the job sees
/// `is_cancelled()` turn true (it loops until it does; no timing), it
/// reports `Cancelled` although it returned normally, and its dependents
/// do not run.
#[test]
fn cancel_of_a_running_job_is_seen_inside_and_fails_it() {
    watchdog(SECS, || {
        for workers in [1, 2] {
            let js = system(workers);
            let (tx, rx) = mpsc::channel::<()>();
            let saw = Arc::new(AtomicBool::new(false));
            let s = saw.clone();
            let h = js.schedule(move || {
                assert!(!is_cancelled(), "not cancelled yet");
                tx.send(()).unwrap();
                while !is_cancelled() {
                    std::hint::spin_loop();
                    thread::yield_now();
                }
                s.store(true, SeqCst);
            });
            let t = Tally::default();
            let d1 = js.schedule_after(&[h], t.job());
            let d2 = js.schedule_after(&[d1], t.job());
            rx.recv().unwrap();
            assert!(!js.cancel(h), "a running job: false");
            assert_cancelled(&js, h, "running job cancelled");
            assert!(saw.load(SeqCst), "is_cancelled() read true inside the job");
            assert_cancelled(&js, d1, "dependent");
            assert_cancelled(&js, d2, "dependent of dependent");
            assert_eq!((t.runs(), t.drops()), (0, 2));
            assert!(!js.cancel(h), "finished: false");
        }
    });
}

/// `cancel` racing with the job starting, many times (a worker, the
/// waiting thread and a cancelling thread all race): each job has exactly
/// one outcome: cancel returned true and the closure never ran (result
/// `Cancelled`), or the closure ran exactly once (result Ok, or
/// `Cancelled` if the stop reached it while running). Dropped once always.
/// Two spinning threads keep the CPUs oversubscribed so that preemption
/// lands inside narrow windows of the race. It failed about 9 runs in 10
/// on 2 vCPUs while `cancel` of a started job recorded its failure itself,
/// which the runner, between claim and run, took for a failed dependency.
#[test]
fn cancel_racing_with_start_has_one_outcome_per_job() {
    watchdog(SECS * 3, || {
        // More runnable threads than CPUs, so that the racing threads get
        // preempted at every point of the race, windows a few instructions
        // wide included (they are only spinning, not timing anything).
        let stop_noise = Arc::new(AtomicBool::new(false));
        let noise: Vec<_> = (0..2)
            .map(|_| {
                let stop = stop_noise.clone();
                thread::spawn(move || {
                    while !stop.load(SeqCst) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        let _stop_noise = StopOnDrop(stop_noise, noise);
        for workers in [1, 2] {
            let js = system(workers);
            let (h_tx, h_rx) = mpsc::channel::<JobHandle>();
            let (r_tx, r_rx) = mpsc::channel::<bool>();
            let canceller = {
                let js = js.clone();
                thread::spawn(move || {
                    for h in h_rx {
                        r_tx.send(js.cancel(h)).unwrap();
                    }
                })
            };
            let (mut stopped, mut ran_ok, mut ran_cancelled) = (0, 0, 0);
            const ITERS: usize = 20_000;
            for i in 0..ITERS {
                let t = Tally::default();
                let h = js.schedule(t.job());
                h_tx.send(h).unwrap();
                let r = js.try_complete(h);
                let cancelled = r_rx.recv().unwrap();
                let r = r.map_err(|e| format!("{e:?}"));
                assert_eq!(t.drops(), 1, "iteration {i}: dropped once");
                match (cancelled, t.runs(), &r) {
                    (true, 0, Err(e)) if e.starts_with("Cancelled") => stopped += 1,
                    (false, 1, Ok(())) => ran_ok += 1,
                    (false, 1, Err(e)) if e.starts_with("Cancelled") => ran_cancelled += 1,
                    other => panic!(
                        "iteration {i}: inconsistent outcome (cancel, runs, result) = {other:?}"
                    ),
                }
            }
            drop(h_tx);
            canceller.join().unwrap();
            eprintln!(
                "{workers} workers: {stopped} stopped before start, {ran_ok} ran, {ran_cancelled} ran but stopped"
            );
            assert_eq!(stopped + ran_ok + ran_cancelled, ITERS);
        }
    });
}

/// Cancelling a job that already finished returns false, and its result
/// stays Ok.
#[test]
fn cancel_of_a_finished_job_changes_nothing() {
    watchdog(SECS, || {
        for workers in [0, 2] {
            let js = system(workers);
            let t = Tally::default();
            let h = js.schedule(t.job());
            js.complete(h);
            assert!(!js.cancel(h));
            js.try_complete(h).expect("still Ok after cancel");
            assert_eq!((t.runs(), t.drops()), (1, 1));
        }
    });
}

/// The closure of a cancelled job is dropped as part of the job: a `Drop`
/// that waits on the job's own handle gets `WaitOnSelf`, not a hang.
#[test]
fn drop_of_a_cancelled_closure_waiting_on_its_own_handle_gets_wait_on_self() {
    struct WaitOnOwnHandle {
        js: JobSystem,
        me: Arc<OnceLock<JobHandle>>,
        got: Arc<Mutex<Option<String>>>,
    }
    impl Drop for WaitOnOwnHandle {
        fn drop(&mut self) {
            let r = match self.me.get() {
                Some(&me) => format!("{:?}", self.js.try_complete(me)),
                None => "own handle not published".into(),
            };
            *self.got.lock().unwrap() = Some(r);
        }
    }
    watchdog(SECS, || {
        for workers in [0, 1] {
            let js = system(workers);
            let (go_tx, go_rx) = mpsc::channel::<()>();
            let dep = js.schedule(move || {
                let _ = go_rx.recv();
            });
            let me = Arc::new(OnceLock::new());
            let got = Arc::new(Mutex::new(None));
            let guard = WaitOnOwnHandle {
                js: js.clone(),
                me: me.clone(),
                got: got.clone(),
            };
            let h = js.schedule_after(&[dep], move || {
                let _g = guard;
                unreachable!("cancelled before it started");
            });
            me.set(h).unwrap();
            assert!(js.cancel(h));
            assert_eq!(
                got.lock().unwrap().as_deref(),
                Some("Err(WaitOnSelf)"),
                "{workers} workers, waiting for deps"
            );
            go_tx.send(()).unwrap();
            assert_cancelled(&js, h, "cancelled");
            js.complete(dep);
        }
        // A runnable job still queued (0 workers: nobody takes it).
        let js = system(0);
        let me = Arc::new(OnceLock::new());
        let got = Arc::new(Mutex::new(None));
        let guard = WaitOnOwnHandle {
            js: js.clone(),
            me: me.clone(),
            got: got.clone(),
        };
        let h = js.schedule(move || {
            let _g = guard;
            unreachable!("cancelled before it started");
        });
        me.set(h).unwrap();
        assert!(js.cancel(h));
        assert_eq!(
            got.lock().unwrap().as_deref(),
            Some("Err(WaitOnSelf)"),
            "queued"
        );
        assert_cancelled(&js, h, "cancelled");
    });
}

/// The same, when the job's last dependency finishes while its closure is
/// being dropped. The job must not become runnable (let alone finish)
/// before the drop ends: the wait in the `Drop` gets `WaitOnSelf`. Before
/// the `DROPPING` flag (slot/state.rs) a worker made the job runnable and
/// finished it during the drop, so this wait returned `Cancelled`, and a
/// scope could end while a closure borrowing its data was still being
/// dropped on another thread.
#[test]
fn drop_of_a_cancelled_closure_gets_wait_on_self_after_its_deps_finish() {
    struct ReleaseThenWait {
        js: JobSystem,
        go: mpsc::Sender<()>,
        dep: JobHandle,
        me: Arc<OnceLock<JobHandle>>,
        got: Arc<Mutex<Option<String>>>,
    }
    impl Drop for ReleaseThenWait {
        fn drop(&mut self) {
            self.go.send(()).unwrap();
            // The worker runs `dep`; its finish makes our job runnable.
            while !self.js.is_complete(self.dep) {
                std::hint::spin_loop();
            }
            let r = match self.me.get() {
                Some(&me) => format!("{:?}", self.js.try_complete(me)),
                None => "own handle not published".into(),
            };
            *self.got.lock().unwrap() = Some(r);
        }
    }
    watchdog(SECS, || {
        let js = system(1);
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let dep = js.schedule(move || {
            let _ = go_rx.recv();
        });
        let me = Arc::new(OnceLock::new());
        let got = Arc::new(Mutex::new(None));
        let guard = ReleaseThenWait {
            js: js.clone(),
            go: go_tx,
            dep,
            me: me.clone(),
            got: got.clone(),
        };
        let h = js.schedule_after(&[dep], move || {
            let _g = guard;
            unreachable!("cancelled before it started");
        });
        me.set(h).unwrap();
        assert!(js.cancel(h));
        assert_eq!(got.lock().unwrap().as_deref(), Some("Err(WaitOnSelf)"));
        assert_cancelled(&js, h, "cancelled");
    });
}

/// `is_cancelled()` is false outside jobs (the builder, an unrelated
/// thread) and inside a job nobody cancelled.
#[test]
fn is_cancelled_is_false_outside_jobs() {
    watchdog(SECS, || {
        assert!(!is_cancelled());
        let js = system(1);
        assert!(!is_cancelled());
        let inside = Arc::new(AtomicBool::new(true));
        let i = inside.clone();
        js.complete(js.schedule(move || i.store(is_cancelled(), SeqCst)));
        assert!(!inside.load(SeqCst), "in a job nobody cancelled");
        // After a cancelled job ran on this thread, too.
        let js0 = system(0);
        let h = js0.schedule(|| {});
        js0.cancel(h);
        assert!(!is_cancelled(), "after a cancel");
        thread::spawn(|| assert!(!is_cancelled())).join().unwrap();
    });
}
