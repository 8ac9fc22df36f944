//! Attacks on the job lifecycle where a wait ends or a closure is dropped:
//! cancels racing a dependency's finish, a loop's last pieces and a
//! scope's end; closures whose `Drop` acts on the system; waits, cancels
//! and `is_complete` on odd handles. Thread exit and shutdown are in
//! thread_exit_and_shutdown.rs.
//!
//! The invariant under attack: a wait on a job (a scope's wait above all,
//! whose jobs borrow the scope's frame) returns only after the job's closure
//! has run or been dropped, never while another thread still runs or drops
//! it; every job runs exactly once or is reported failed/cancelled; nothing
//! hangs. Each test forces its interleaving with channels, gates and
//! "wait until that handle is complete" loops (no sleeps), and runs under
//! `common::watchdog`. Guards record at the *end* of their `Drop` that it
//! finished, and the tests check that record right after the wait (or the
//! scope) returned; a borrowed frame that is gone by then is what ASan's
//! `detect_stack_use_after_return` reports (scripts/asan.sh).
//!
//! Tests whose doc comment tells of a bug found them (2026-11-25): each
//! failed on the code of that day (most by hanging until the watchdog
//! fired) and passes since its fix.

mod common;

use common::{expect_panic, panic_message, watchdog, DropCount, Gate};
use jobsys::{Batch, JobError, JobHandle, JobSystem};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::thread;
use std::time::Duration;

const SECS: u64 = 120;
/// Yields a slow `Drop` makes after its job's last dependency finished:
/// the window in which a broken release would let the job finish.
const WINDOW: usize = 200;
/// Rounds of each racing scenario per run.
const ROUNDS: usize = 10;

fn system(workers: usize) -> JobSystem {
    JobSystem::builder().workers(workers).build().unwrap()
}

/// A closure's guard with a slow `Drop` that ends with a write to a
/// borrowed frame: it runs `act`, releases `go` (the gate of a dependency
/// of its own job), waits until `dep` finished (so the job's last
/// dependency finishes *during* the drop), yields for a while, writes
/// `frame`, and only then sets `ended` (and panics, if asked to).
struct SlowDrop<'a> {
    js: JobSystem,
    act: Mutex<Option<Box<dyn FnOnce() + Send + 'a>>>,
    go: Option<mpsc::Sender<()>>,
    dep: Option<JobHandle>,
    frame: &'a AtomicUsize,
    ended: Arc<AtomicBool>,
    panic_at_end: bool,
}

impl<'a> SlowDrop<'a> {
    fn new(js: &JobSystem, frame: &'a AtomicUsize, ended: &Arc<AtomicBool>) -> SlowDrop<'a> {
        SlowDrop {
            js: js.clone(),
            act: Mutex::new(None),
            go: None,
            dep: None,
            frame,
            ended: ended.clone(),
            panic_at_end: false,
        }
    }
    /// Release `go` and wait for `dep` during the drop.
    fn releasing(mut self, go: mpsc::Sender<()>, dep: JobHandle) -> Self {
        self.go = Some(go);
        self.dep = Some(dep);
        self
    }
}

impl Drop for SlowDrop<'_> {
    fn drop(&mut self) {
        let act = self.act.get_mut().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(act) = act {
            act();
        }
        if let Some(go) = self.go.take() {
            let _ = go.send(());
        }
        if let Some(dep) = self.dep {
            while !self.js.is_complete(dep) {
                thread::yield_now();
            }
        }
        for _ in 0..WINDOW {
            thread::yield_now();
        }
        self.frame.fetch_add(1, SeqCst);
        self.ended.store(true, SeqCst);
        if self.panic_at_end {
            panic!("a cancelled closure's drop panics");
        }
    }
}

/// A job that finishes once `go`'s sender sends or is dropped.
fn gated<'scope>(s: &'scope jobsys::Scope<'scope, '_>, go: mpsc::Receiver<()>) -> JobHandle {
    s.schedule(move || {
        let _ = go.recv();
    })
}

/// A thread that cancels the handle it is sent, returning `cancel`'s
/// result.
fn canceller(js: &JobSystem) -> (mpsc::Sender<JobHandle>, thread::JoinHandle<bool>) {
    let (tx, rx) = mpsc::channel::<JobHandle>();
    let js = js.clone();
    let t = thread::spawn(move || match rx.recv() {
        Ok(h) => js.cancel(h),
        Err(_) => false,
    });
    (tx, t)
}

// ---- cancel racing the last dependency, inside a scope --------------------

#[derive(Clone, Copy, Debug)]
enum Target {
    /// A single job after the gated dependency.
    Single,
    /// A `parallel_for` after it.
    Loop,
    /// A single job, cancelled through a `combine` group holding it.
    GroupMember,
}

/// A scope job K waits for a gated dependency D; another thread cancels K
/// (or a group holding K) and drops K's closure, whose `Drop` opens D's
/// gate and waits until D finished: K's last dependency finishes while its
/// closure, which borrows the scope's frame, is still being dropped on the
/// cancelling thread. The scope must return only after that drop ended.
fn cancel_during_release_in_a_scope(workers: usize, target: Target) {
    let js = system(workers);
    for round in 0..ROUNDS {
        let (h_tx, cancel) = canceller(&js);
        let ended = Arc::new(AtomicBool::new(false));
        let frame = AtomicUsize::new(0);
        js.scope(|s| {
            let (go_tx, go_rx) = mpsc::channel::<()>();
            let d = gated(s, go_rx);
            let g = SlowDrop::new(&js, &frame, &ended).releasing(go_tx, d);
            let h = match target {
                Target::Single => s.schedule_after(&[d], move || {
                    let _g = g;
                    unreachable!("cancelled before its dependency finished");
                }),
                Target::Loop => {
                    s.job()
                        .after(&[d])
                        .parallel_for(0..64, Batch::Fixed(1), move |_| {
                            let _g = &g;
                            unreachable!("cancelled before its dependency finished");
                        })
                }
                Target::GroupMember => {
                    let k = s.schedule_after(&[d], move || {
                        let _g = g;
                        unreachable!("cancelled before its dependency finished");
                    });
                    js.combine(&[k])
                }
            };
            h_tx.send(h).unwrap();
        });
        assert!(
            ended.load(SeqCst),
            "workers {workers}, {target:?}, round {round}: the scope returned while its \
             cancelled job's closure (borrowing the scope's frame) was still being dropped"
        );
        assert_eq!(frame.load(SeqCst), 1, "dropped exactly once");
        let stopped = cancel.join().unwrap();
        // A group's `cancel` cancels its members first; their finish may
        // release the group and a worker may finish it before the group
        // itself is cancelled: then it reads false.
        assert!(
            stopped || matches!(target, Target::GroupMember),
            "{target:?}: a job waiting for its dependency is cancelled before it starts"
        );
    }
}

/// Proves: a scope never ends during the drop of a cancelled closure whose
/// job's last dependency finished meanwhile (the `DROPPING` hand-over,
/// slot/mod.rs), for a single job, a loop, and a job cancelled as a member of a
/// `combine` group; with 0 workers the scope's own thread is the one that
/// finishes the dependency and releases the job.
#[test]
fn a_scope_outlives_the_drop_of_a_job_cancelled_as_its_dependency_finishes() {
    watchdog(SECS, || {
        for workers in [0, 1, 2] {
            for target in [Target::Single, Target::Loop, Target::GroupMember] {
                cancel_during_release_in_a_scope(workers, target);
            }
        }
    });
}

// ---- cancel racing a loop's last pieces ------------------------------------

/// A scope loop of 8 one-index pieces whose closure has a slow `Drop`;
/// another thread cancels it while piece `at` runs (the piece waits for
/// the cancel to return). Whoever ends the last running piece (or the
/// canceller, if none runs) drops the closure; the scope must return only
/// after that drop ended, and the closure is dropped exactly once.
fn cancel_racing_the_last_pieces(workers: usize, at: usize) {
    const N: usize = 8;
    let js = system(workers);
    let (h_tx, cancel) = canceller(&js);
    let (piece_tx, piece_rx) = mpsc::channel::<()>();
    let (ack_tx, ack_rx) = mpsc::channel::<()>();
    // Forward the handle once piece `at` runs; ack once cancel returned.
    let (fwd_tx, fwd_rx) = mpsc::channel::<JobHandle>();
    let relay = thread::spawn(move || {
        let h = fwd_rx.recv().unwrap();
        let _ = piece_rx.recv();
        h_tx.send(h).unwrap();
        let r = cancel.join().unwrap();
        let _ = ack_tx.send(());
        r
    });
    let ended = Arc::new(AtomicBool::new(false));
    let frame = AtomicUsize::new(0);
    let ran = AtomicUsize::new(0);
    let (piece_tx, ack_rx) = (Mutex::new(piece_tx), Mutex::new(ack_rx));
    js.scope(|s| {
        let g = SlowDrop::new(&js, &frame, &ended);
        let (ran, piece_tx, ack_rx) = (&ran, &piece_tx, &ack_rx);
        let h = s.parallel_for(0..N, Batch::Fixed(1), move |i| {
            let _g = &g;
            ran.fetch_add(1, SeqCst);
            if i == at {
                piece_tx.lock().unwrap().send(()).unwrap();
                let _ = ack_rx.lock().unwrap().recv();
            }
        });
        fwd_tx.send(h).unwrap();
    });
    assert!(
        ended.load(SeqCst),
        "workers {workers}, at {at}: the scope returned while its loop's closure was still \
         being dropped"
    );
    assert_eq!(
        frame.load(SeqCst),
        1,
        "the loop's closure dropped exactly once"
    );
    assert!(ran.load(SeqCst) <= N);
    assert!(
        !relay.join().unwrap(),
        "a piece was running: cancel reports the loop as started"
    );
}

/// Proves: cancelling a loop while one of its pieces (the first, a middle
/// one or the last) runs never lets the scope end before the closure's
/// drop ended, whichever thread drops it, and the closure is dropped once.
#[test]
fn a_scope_outlives_the_drop_of_a_loop_cancelled_during_its_last_pieces() {
    watchdog(SECS, || {
        for workers in [0, 1, 3] {
            for round in 0..ROUNDS {
                cancel_racing_the_last_pieces(workers, [0, 3, 7][round % 3]);
            }
        }
    });
}

// ---- a cancelled closure's Drop that acts on the system --------------------

/// K (a scope job waiting for a gated dependency) is cancelled by another
/// thread; its closure's `Drop`, on that thread, then:
/// - cancels K again (false: it is cancelled already),
/// - waits on K's dependent K2 (`WaitOnSelf`: K2 needs K, whose drop this
///   thread is inside of; no hang),
/// - schedules a new job J into the scope from that other thread,
/// - cancels K2 (true: its closure is dropped there, nested),
/// - and panics at its very end.
///
/// Proves: the scope still waits for J (scheduled during the drain, from
/// another thread), for K's drop to end, and returns normally (the jobs
/// were cancelled on purpose, the drop's panic belongs to the canceller's
/// cancel, which swallows it); every closure is dropped exactly once and
/// no cancelled one runs.
#[test]
fn a_cancelled_closures_drop_that_cancels_waits_schedules_and_panics() {
    watchdog(SECS, || {
        for workers in [0, 1, 2] {
            let js = system(workers);
            let (h_tx, cancel) = canceller(&js);
            let ended = Arc::new(AtomicBool::new(false));
            let frame = AtomicUsize::new(0);
            let j_ran = AtomicUsize::new(0);
            let k2_drops = Arc::new(AtomicUsize::new(0));
            let seen: Mutex<Vec<String>> = Mutex::new(Vec::new());
            let me: OnceLock<JobHandle> = OnceLock::new();
            let k2: OnceLock<JobHandle> = OnceLock::new();
            js.scope(|s| {
                let (go_tx, go_rx) = mpsc::channel::<()>();
                let d = gated(s, go_rx);
                let mut g = SlowDrop::new(&js, &frame, &ended).releasing(go_tx, d);
                g.panic_at_end = true;
                let (js2, me, k2, seen, j_ran) = (js.clone(), &me, &k2, &seen, &j_ran);
                g.act = Mutex::new(Some(Box::new(move || {
                    let (me, k2) = (*me.get().unwrap(), *k2.get().unwrap());
                    let again = js2.cancel(me);
                    let wait = js2.try_complete(k2);
                    s.schedule(move || {
                        j_ran.fetch_add(1, SeqCst);
                    });
                    let k2_cancel = js2.cancel(k2);
                    seen.lock().unwrap().push(format!(
                        "cancel again {again}, wait on dependent {wait:?}, cancel dependent \
                         {k2_cancel}"
                    ));
                })));
                let k = s.schedule_after(&[d], move || {
                    let _g = g;
                    unreachable!("cancelled");
                });
                let guard = DropCount(k2_drops.clone());
                let dependent = s.schedule_after(&[k], move || {
                    let _g = guard;
                    unreachable!("its dependency was cancelled");
                });
                me.set(k).unwrap();
                k2.set(dependent).unwrap();
                h_tx.send(k).unwrap();
            });
            assert!(
                ended.load(SeqCst),
                "workers {workers}: scope ended during the drop"
            );
            assert_eq!(frame.load(SeqCst), 1);
            assert_eq!(j_ran.load(SeqCst), 1, "the job scheduled in the drop ran");
            assert_eq!(k2_drops.load(SeqCst), 1, "the dependent dropped once");
            assert_eq!(
                seen.lock().unwrap().as_slice(),
                ["cancel again false, wait on dependent Err(WaitOnSelf), cancel dependent true"],
                "workers {workers}"
            );
            assert!(
                cancel.join().unwrap(),
                "the drop's panic does not undo the cancel"
            );
            let (k, k2) = (*me.get().unwrap(), *k2.get().unwrap());
            assert!(matches!(js.try_complete(k), Err(JobError::Cancelled(_))));
            assert!(matches!(js.try_complete(k2), Err(JobError::Cancelled(_))));
        }
    });
}

/// The drop of a cancelled job K (waiting for a gated dependency D), on the
/// cancelling thread, waits on K's dependent K2 (`WaitOnSelf`: K2 needs K)
/// *before* the scope's thread begins its waits; only then does the drop
/// open D's gate and wait for D to finish. Proves: that failed wait leaves
/// D findable. The scope's thread waits on K2, and its walk stops at K,
/// which the drop's walk marked: with 0 workers it must still find and run
/// D. Found by TSan's slower timing (2026-11-28): the drop's walk marked K
/// without walking on to D, the scope's thread parked, and the drop waited
/// for D for ever.
#[test]
fn a_failed_wait_inside_a_cancelled_closures_drop_leaves_its_dependencies_findable() {
    watchdog(SECS, || {
        for workers in [0, 1, 2] {
            let js = system(workers);
            let (h_tx, cancel) = canceller(&js);
            let ended = Arc::new(AtomicBool::new(false));
            let frame = AtomicUsize::new(0);
            let k2: OnceLock<JobHandle> = OnceLock::new();
            let (walked_tx, walked_rx) = mpsc::channel::<Result<(), JobError>>();
            js.scope(|s| {
                let (go_tx, go_rx) = mpsc::channel::<()>();
                let d = gated(s, go_rx);
                let mut g = SlowDrop::new(&js, &frame, &ended).releasing(go_tx, d);
                let (js2, k2) = (js.clone(), &k2);
                g.act = Mutex::new(Some(Box::new(move || {
                    let wait = js2.try_complete(*k2.get().unwrap());
                    walked_tx.send(wait).unwrap();
                })));
                let k = s.schedule_after(&[d], move || {
                    let _g = g;
                    unreachable!("cancelled");
                });
                let dependent = s.schedule_after(&[k], || unreachable!("after a cancelled job"));
                k2.set(dependent).unwrap();
                h_tx.send(k).unwrap();
                // The scope's waits begin only after the drop's walk.
                let wait = walked_rx.recv().unwrap();
                assert!(
                    matches!(wait, Err(JobError::WaitOnSelf)),
                    "workers {workers}: the drop's wait on K2 is a wait on itself: {wait:?}"
                );
            });
            assert!(
                ended.load(SeqCst),
                "workers {workers}: the scope outlived the drop"
            );
            assert_eq!(frame.load(SeqCst), 1);
            assert!(cancel.join().unwrap(), "K was cancelled before it started");
            assert!(matches!(
                js.try_complete(*k2.get().unwrap()),
                Err(JobError::Cancelled(_))
            ));
        }
    });
}

// ---- a scope whose job panics while another is cancelled -----------------

/// One scope job panics while another, waiting for a gated dependency, is
/// cancelled from another thread with a slow drop. Proves: the scope
/// re-raises the panic (not the cancellation), and only after the
/// cancelled closure's drop ended.
#[test]
fn a_scope_with_a_panicking_job_and_a_cancelled_one_reraises_after_the_drop() {
    watchdog(SECS, || {
        for workers in [0, 1, 2] {
            let js = system(workers);
            let (h_tx, cancel) = canceller(&js);
            let ended = Arc::new(AtomicBool::new(false));
            let frame = AtomicUsize::new(0);
            let r = catch_unwind(AssertUnwindSafe(|| {
                js.scope(|s| {
                    let (go_tx, go_rx) = mpsc::channel::<()>();
                    let d = gated(s, go_rx);
                    let g = SlowDrop::new(&js, &frame, &ended).releasing(go_tx, d);
                    s.schedule(|| panic!("scope job panics"));
                    let k = s.schedule_after(&[d], move || {
                        let _g = g;
                        unreachable!("cancelled");
                    });
                    h_tx.send(k).unwrap();
                })
            }));
            let ended_at_catch = ended.load(SeqCst);
            let msg = panic_message(&*r.expect_err("the scope re-raises its job's panic"));
            assert_eq!(msg, "scope job panics", "workers {workers}");
            assert!(ended_at_catch, "workers {workers}: unwound during the drop");
            assert_eq!(frame.load(SeqCst), 1);
            assert!(cancel.join().unwrap());
        }
    });
}

// ---- a user-cancelled scope job in a wait cycle ---------------------------

/// Job A opens a scope and schedules in it a job K after A itself, then
/// cancels K (`JobSystem::cancel`: K's closure is dropped at once; K stays
/// waiting for A). K can finish only after A, and A only after its scope:
/// the scope's final wait on K meets the cycle, and K's closure is gone
/// already, so nothing borrows the frame any more: the scope should end
/// (with the wait-on-self panic, or quietly, as a cancelled job).
///
/// Before its fix (2026-11-25): `Registry::wait_scoped` (crates/jobsys/src/wait/mod.rs, the loop at the
/// top) answers the cycle's `WaitOnSelf` by cancelling K itself; that
/// cancel finds K cancelled already (`Cancel::No`) and returns false, which
/// the loop reads as "runnable, running or finished: wait again". The next
/// wait meets the same cycle at once, so the scope spins forever (100% of
/// a CPU) inside A, and A, its scope and every wait on A hang. The same
/// happens when another thread's cancel of K comes first (it may even
/// still be dropping K's closure). The loop must tell "K's closure is
/// gone" (CANCELLED) from "K started".
#[test]
fn a_scope_ends_when_its_user_cancelled_job_waits_on_the_scope_owner() {
    watchdog(30, || {
        let js = system(1);
        let a_cell: Arc<OnceLock<JobHandle>> = Arc::new(OnceLock::new());
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let (report_tx, report_rx) = mpsc::channel::<(Option<String>, usize)>();
        let drops = Arc::new(AtomicUsize::new(0));
        let (js2, a_cell2, drops2) = (js.clone(), a_cell.clone(), drops.clone());
        let a = js.schedule(move || {
            go_rx.recv().unwrap();
            let a = *a_cell2.get().unwrap();
            let r = catch_unwind(AssertUnwindSafe(|| {
                js2.scope(|s| {
                    let g = DropCount(drops2.clone());
                    let k = s.schedule_after(&[a], move || {
                        let _g = g;
                        unreachable!("cancelled");
                    });
                    assert!(js2.cancel(k), "K waits for A: cancelled before it started");
                })
            }));
            let msg = r.err().map(|p| panic_message(&*p));
            report_tx.send((msg, drops2.load(SeqCst))).unwrap();
        });
        a_cell.set(a).unwrap();
        go_tx.send(()).unwrap();
        let (msg, drops_at_end) = report_rx.recv().unwrap();
        assert_eq!(
            drops_at_end, 1,
            "K's closure dropped once when the scope ended"
        );
        if let Some(m) = msg {
            assert!(
                m.contains("waited on itself"),
                "unexpected scope panic: {m}"
            );
        }
        js.try_complete(a).expect("A caught its scope's panic");
        assert_eq!(drops.load(SeqCst), 1);
    });
}

/// The scope of the test above, but K is cancelled by another thread whose
/// drop of K's closure (a slow `Drop` that writes the scope's frame at its
/// end) is still going on when the scope's final wait meets the cycle.
/// Expected: the scope ends, but only after that drop ended: a fix of the
/// bug above that returns as soon as it sees K cancelled would free the
/// frame under the other thread's drop (this test then fails on `ended`).
///
/// Before its fix (2026-11-25): hangs, as the test above (same loop in `wait_scoped`).
#[test]
fn a_scope_in_a_wait_cycle_outlives_another_threads_drop_of_its_cancelled_job() {
    watchdog(30, || {
        let js = system(1);
        let (h_tx, cancel) = canceller(&js);
        let a_cell: Arc<OnceLock<JobHandle>> = Arc::new(OnceLock::new());
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let (report_tx, report_rx) = mpsc::channel::<(bool, usize)>();
        let (js2, a_cell2) = (js.clone(), a_cell.clone());
        let a = js.schedule(move || {
            go_rx.recv().unwrap();
            let a = *a_cell2.get().unwrap();
            let ended = Arc::new(AtomicBool::new(false));
            let frame = AtomicUsize::new(0);
            let (returned_tx, returned_rx) = mpsc::channel::<()>();
            let _ = catch_unwind(AssertUnwindSafe(|| {
                js2.scope(|s| {
                    let (started_tx, started_rx) = mpsc::channel::<()>();
                    let mut g = SlowDrop::new(&js2, &frame, &ended);
                    g.act = Mutex::new(Some(Box::new(move || {
                        started_tx.send(()).unwrap();
                        // The drop goes on until the scope returned (the
                        // bug) or, if the scope rightly waits for it, for
                        // a bounded while.
                        let _ = returned_rx.recv_timeout(Duration::from_secs(2));
                    })));
                    let k = s.schedule_after(&[a], move || {
                        let _g = g;
                        unreachable!("cancelled");
                    });
                    h_tx.send(k).unwrap();
                    // The other thread's cancel began its drop.
                    started_rx.recv().unwrap();
                })
            }));
            let report = (ended.load(SeqCst), frame.load(SeqCst));
            let _ = returned_tx.send(());
            report_tx.send(report).unwrap();
        });
        a_cell.set(a).unwrap();
        go_tx.send(()).unwrap();
        let (ended, frame) = report_rx.recv().unwrap();
        assert!(
            ended,
            "the scope ended while another thread still dropped its job's closure"
        );
        assert_eq!(frame, 1);
        assert!(cancel.join().unwrap());
        js.try_complete(a)
            .expect("A caught its scope's panic, if any");
    });
}

/// `cancel` of a `combine` group whose one member waits for a gated
/// dependency: nothing has finished when `cancel` is called, so (docs of
/// `JobSystem::cancel`: true "for a group: the group had not finished") it
/// should return true. The member's closure opens the dependency's gate in
/// its `Drop`, so the member can finish right after its cancel.
///
/// Before its fix (2026-11-25; minor, contract, timing-dependent): `cancel`
/// (crates/jobsys/src/cancel.rs) cancels the members first; the
/// member's release is left to the canceller after its drop, which queues
/// it; a worker runs it (cancelled), which releases the group, and runs
/// the group (a no-op job) before the canceller's `cancel_with` reaches
/// the group itself, which then reads "finished": `false`. Here the
/// cancelling thread races this one, which waits for the member and helps
/// run it; seen in 2 to 13 of 300 rounds per run on a loaded 2-CPU
/// machine (not seen with `always-spin`).
#[test]
fn cancel_of_an_unfinished_group_returns_true() {
    struct OpenOnDrop(JobSystem, Option<mpsc::Sender<()>>, JobHandle);
    impl Drop for OpenOnDrop {
        fn drop(&mut self) {
            drop(self.1.take());
            while !self.0.is_complete(self.2) {
                thread::yield_now();
            }
        }
    }
    watchdog(SECS, || {
        let js = system(2);
        let mut false_rounds = Vec::new();
        for round in 0..300 {
            let (go_tx, go_rx) = mpsc::channel::<()>();
            let d = js.schedule(move || {
                let _ = go_rx.recv();
            });
            let g = OpenOnDrop(js.clone(), Some(go_tx), d);
            let k = js.schedule_after(&[d], move || {
                let _g = g;
                unreachable!("cancelled");
            });
            let group = js.combine(&[k]);
            // Another thread cancels while this one waits for the member
            // (and helps with it, as a waiter does).
            let (h_tx, cancel) = canceller(&js);
            h_tx.send(group).unwrap();
            assert!(matches!(js.try_complete(k), Err(JobError::Cancelled(_))));
            if !cancel.join().unwrap() {
                false_rounds.push(round);
            }
            assert!(matches!(
                js.try_complete(group),
                Err(JobError::Cancelled(_))
            ));
        }
        assert!(
            false_rounds.is_empty(),
            "cancel of a group that had not finished returned false in rounds {false_rounds:?}"
        );
    });
}

// ---- waits, is_complete and cancel on odd handles --------------------------

/// Proves, with 0 workers (nothing runs unless this thread runs it):
/// - another system's handle: `try_complete` is `Err(ForeignHandle)`,
///   `is_complete` and `cancel` panic with a clear message; also for the
///   handle of a system already dropped (its memory is gone: ASan would
///   see a read);
/// - a handle whose slot now holds a later job that cannot run yet (it
///   blocks on a closed gate): `is_complete` is true, `try_complete`
///   returns the old job's panic at once without running the new tenant
///   (that would block this thread: the watchdog), and `cancel` returns
///   false and leaves the new tenant alone (it runs later).
#[test]
fn waits_and_cancels_on_recycled_foreign_and_dead_handles() {
    watchdog(SECS, || {
        let a = system(0);
        let b = system(0);
        let ha = a.schedule(|| {});
        assert!(matches!(b.try_complete(ha), Err(JobError::ForeignHandle)));
        let msg = expect_panic(|| b.is_complete(ha));
        assert!(msg.contains("another JobSystem"), "{msg}");
        let msg = expect_panic(|| b.cancel(ha));
        assert!(msg.contains("another JobSystem"), "{msg}");
        a.complete(ha);

        let old = a.schedule(|| panic!("first tenant"));
        assert!(matches!(a.try_complete(old), Err(JobError::Panicked(_))));
        let gate = Arc::new(Gate::default());
        let ran = Arc::new(AtomicUsize::new(0));
        let mut later = Vec::new();
        let tenant = loop {
            let (g, r) = (gate.clone(), ran.clone());
            let h = a.schedule(move || {
                g.wait();
                r.fetch_add(1, SeqCst);
            });
            later.push(h);
            if h.to_bits()[0] == old.to_bits()[0] {
                break h;
            }
            assert!(later.len() < 100_000, "the old job's slot was never reused");
        };
        assert!(!a.is_complete(tenant));
        assert!(a.is_complete(old), "the old handle reads complete");
        match a.try_complete(old) {
            Err(JobError::Panicked(p)) => assert_eq!(p.message(), "first tenant"),
            other => panic!("the old job's failure, from the log: got {other:?}"),
        }
        assert!(!a.cancel(old), "cancel of a finished job's handle");
        assert!(!a.is_complete(tenant), "the new tenant was not touched");
        gate.open();
        for h in &later {
            a.complete(*h);
        }
        assert_eq!(ran.load(SeqCst), later.len(), "every later job ran once");

        let dead = a.schedule(|| {});
        drop(a);
        assert!(matches!(b.try_complete(dead), Err(JobError::ForeignHandle)));
        let msg = expect_panic(|| b.is_complete(dead));
        assert!(msg.contains("another JobSystem"), "{msg}");
        let c = system(0);
        assert!(matches!(c.try_complete(dead), Err(JobError::ForeignHandle)));
    });
}

/// Handles of jobs whose page of slots was given back to the OS
/// (`trim_storage`) and then reused: 0 workers, retained_slots 0. Proves:
/// the old handles (a success, a panic, a cancelled job) read complete
/// before and after the reuse, report their own outcome (the failures from
/// the log), `cancel` on them is false and leaves the page's new jobs
/// alone, and the new jobs (blocked on a gate until the end) are untouched
/// by every call on the old handles.
#[test]
fn handles_of_a_trimmed_and_reused_page_keep_their_own_outcome() {
    watchdog(SECS, || {
        let js = JobSystem::builder()
            .workers(0)
            .retained_slots(0)
            .build()
            .unwrap();
        let ok = js.schedule(|| {});
        let failed = js.schedule(|| panic!("old failure"));
        let cancelled = js.schedule(|| unreachable!("cancelled"));
        assert!(js.cancel(cancelled));
        let many: Vec<JobHandle> = (0..600).map(|_| js.schedule(|| {})).collect();
        for h in &many {
            js.complete(*h);
        }
        js.complete(ok);
        let _ = js.try_complete(failed);
        assert!(js.trim_storage() > 0, "whole free pages to give back");
        let check = |when: &str| {
            for h in [ok, failed, cancelled] {
                assert!(js.is_complete(h), "{when}: an old handle reads complete");
                assert!(!js.cancel(h), "{when}: cancel of an old handle");
            }
            assert!(js.try_complete(ok).is_ok(), "{when}");
            match js.try_complete(failed) {
                Err(JobError::Panicked(p)) => assert_eq!(p.message(), "old failure", "{when}"),
                other => panic!("{when}: the old failure, got {other:?}"),
            }
            assert!(
                matches!(js.try_complete(cancelled), Err(JobError::Cancelled(_))),
                "{when}"
            );
        };
        check("after the trim");
        let gate = Arc::new(Gate::default());
        let ran = Arc::new(AtomicUsize::new(0));
        let new: Vec<JobHandle> = (0..600)
            .map(|_| {
                let (g, r) = (gate.clone(), ran.clone());
                js.schedule(move || {
                    g.wait();
                    r.fetch_add(1, SeqCst);
                })
            })
            .collect();
        check("after the reuse");
        assert!(
            new.iter().all(|h| !js.is_complete(*h)),
            "new jobs untouched"
        );
        gate.open();
        for h in &new {
            js.complete(*h);
        }
        assert_eq!(ran.load(SeqCst), new.len());
    });
}

/// A job K waits for a gated dependency D and is cancelled by another
/// thread; its closure's drop opens D's gate and, once D finished, tells
/// this thread. Proves: while the drop still runs, K reads incomplete
/// (`is_complete` false although its last dependency finished), and
/// `try_complete(K)` returns (`Cancelled`) only after the drop ended.
#[test]
fn is_complete_and_try_complete_agree_during_a_cancelled_closures_drop() {
    watchdog(SECS, || {
        for workers in [0, 1, 2] {
            for _ in 0..ROUNDS {
                let js = system(workers);
                let (h_tx, cancel) = canceller(&js);
                let ended = Arc::new(AtomicBool::new(false));
                let (go_tx, go_rx) = mpsc::channel::<()>();
                let d = js.schedule(move || {
                    let _ = go_rx.recv();
                });
                let (seen_tx, seen_rx) = mpsc::channel::<()>();
                let (more_tx, more_rx) = mpsc::channel::<()>();
                struct Tell {
                    js: JobSystem,
                    go: mpsc::Sender<()>,
                    d: JobHandle,
                    seen: mpsc::Sender<()>,
                    more: mpsc::Receiver<()>,
                    ended: Arc<AtomicBool>,
                }
                impl Drop for Tell {
                    fn drop(&mut self) {
                        self.go.send(()).unwrap();
                        while !self.js.is_complete(self.d) {
                            thread::yield_now();
                        }
                        self.seen.send(()).unwrap();
                        let _ = self.more.recv();
                        for _ in 0..WINDOW {
                            thread::yield_now();
                        }
                        self.ended.store(true, SeqCst);
                    }
                }
                let t = Tell {
                    js: js.clone(),
                    go: go_tx,
                    d,
                    seen: seen_tx,
                    more: more_rx,
                    ended: ended.clone(),
                };
                let k = js.schedule_after(&[d], move || {
                    let _t = t;
                    unreachable!("cancelled");
                });
                h_tx.send(k).unwrap();
                if workers == 0 {
                    // Nobody else runs D: this thread does, in a wait on it.
                    js.try_complete(d).unwrap();
                }
                seen_rx.recv().unwrap();
                assert!(js.is_complete(d));
                assert!(
                    !js.is_complete(k),
                    "workers {workers}: complete while its closure is being dropped"
                );
                more_tx.send(()).unwrap();
                let r = js.try_complete(k);
                assert!(ended.load(SeqCst), "the wait returned during the drop");
                assert!(matches!(r, Err(JobError::Cancelled(_))), "{r:?}");
                assert!(js.is_complete(k));
                assert!(cancel.join().unwrap());
            }
        }
    });
}
