//! Attacks on the job lifecycle at thread exit and shutdown: an outside
//! thread that registered, scheduled jobs and exits with jobs pending or
//! pinned to it (and what its thread-local teardown drops or leaves
//! behind), the last `JobSystem` clone dropped while jobs are queued,
//! waiting, running or pinned, and a panic payload dropped by the failure
//! log. The wait_and_drop_races.rs counterpart covers cancels, scopes and
//! handles; the same rules hold: interleavings forced with channels,
//! gates and barriers, every test under `common::watchdog`.
//!
//! Tests whose doc comment tells of a bug found them (2026-11-25): each
//! failed on the code of that day (by hanging until the watchdog fired, or
//! with a wrong result) and passes since its fix.

mod common;

use common::{watchdog, Gate, Tally};
use jobsys::{JobError, JobHandle, JobSystem, Pin};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::Duration;

const SECS: u64 = 120;
/// Rounds of the racing scenario, per worker count.
const ROUNDS: usize = 50;

fn system(workers: usize) -> JobSystem {
    JobSystem::builder().workers(workers).build().unwrap()
}

// ---- thread-local teardown -----------------------------------------------

/// An outside thread registers, schedules an unpinned job (onto its own
/// deque), a job pinned to itself, and a job pinned to itself that waits
/// for a gated dependency, then exits without running anything. Proves,
/// with 0 workers (only this thread can run the unpinned job: it must find
/// it on the dead thread's deque) and with 2: the unpinned job runs once;
/// both pinned jobs are cancelled (the waiting one when its dependency
/// finishes), their closures dropped once, unrun.
#[test]
fn an_exiting_registered_thread_leaves_its_jobs_run_or_cancelled() {
    watchdog(SECS, || {
        for workers in [0, 2] {
            let js = system(workers);
            let (free, pinned, waiting) = (Tally::default(), Tally::default(), Tally::default());
            let (go_tx, go_rx) = mpsc::channel::<()>();
            let gate = js.job().name("gate").schedule(move || {
                let _ = go_rx.recv();
            });
            let js2 = js.clone();
            let (f, p, w) = (free.job(), pinned.job(), waiting.job());
            let o = thread::spawn(move || {
                let me = Pin::Thread(js2.register_thread());
                let hf = js2.schedule(f);
                let hp = js2.job().pin(me).schedule(p);
                let hw = js2.job().pin(me).after(&[gate]).schedule(w);
                (hf, hp, hw)
            });
            let (hf, hp, hw) = o.join().unwrap();
            js.try_complete(hf).expect("the unpinned job runs");
            assert_eq!(free.counts(), (1, 1));
            assert!(matches!(js.try_complete(hp), Err(JobError::Cancelled(_))));
            assert_eq!(pinned.counts(), (0, 1));
            go_tx.send(()).unwrap();
            assert!(matches!(js.try_complete(hw), Err(JobError::Cancelled(_))));
            assert_eq!(waiting.counts(), (0, 1), "workers {workers}");
        }
    });
}

/// An outside thread registers and gets a job pinned to it whose closure's
/// `Drop` schedules a job and waits for it; the thread exits without
/// running it, so its thread-local teardown cancels the job and drops the
/// closure there. Proves, with 0 workers (the exiting thread must run the
/// new job itself) and with 1: no hang, the new job ran once, the pinned
/// one is cancelled and dropped once.
#[test]
fn a_pinned_closure_dropped_at_thread_exit_can_schedule_and_wait() {
    struct ScheduleOnDrop {
        js: JobSystem,
        ran: Arc<AtomicUsize>,
        result: Arc<Mutex<Option<String>>>,
    }
    impl Drop for ScheduleOnDrop {
        fn drop(&mut self) {
            let r = self.ran.clone();
            let h = self.js.schedule(move || {
                r.fetch_add(1, SeqCst);
            });
            *self.result.lock().unwrap() = Some(format!("{:?}", self.js.try_complete(h)));
        }
    }
    watchdog(SECS, || {
        for workers in [0, 1] {
            let js = system(workers);
            let ran = Arc::new(AtomicUsize::new(0));
            let result = Arc::new(Mutex::new(None));
            let (idx_tx, idx_rx) = mpsc::channel();
            let (exit_tx, exit_rx) = mpsc::channel::<()>();
            let js2 = js.clone();
            let o = thread::spawn(move || {
                idx_tx.send(js2.register_thread()).unwrap();
                let _ = exit_rx.recv();
            });
            let idx = idx_rx.recv().unwrap();
            let guard = ScheduleOnDrop {
                js: js.clone(),
                ran: ran.clone(),
                result: result.clone(),
            };
            let h = js.job().pin(Pin::Thread(idx)).schedule(move || {
                let _g = guard;
                unreachable!("its thread exits without running it");
            });
            exit_tx.send(()).unwrap();
            o.join().unwrap();
            assert!(matches!(js.try_complete(h), Err(JobError::Cancelled(_))));
            assert_eq!(result.lock().unwrap().as_deref(), Some("Ok(())"));
            assert_eq!(ran.load(SeqCst), 1, "workers {workers}");
        }
    });
}

/// Like the test above, but the pinned job's closure holds the last
/// `JobSystem` clone (the caller dropped its own), the everyday "a job
/// captures a clone of the system" pattern. Expected: the exiting thread
/// cancels the job, dropping the closure drops the last clone, the system
/// shuts down, and the thread exits.
///
/// Before its fix (2026-11-25): it hangs. The registry's `Claim::drop` (crates/jobsys/src/registry.rs)
/// calls `close_pinned` → `cancel_pinned_entry` → `cancel_with`
/// (cancel.rs), which claims the runnable job (`Cancel::Claimed`) and
/// drops its closure *before* finishing it. That drop runs `Owner::drop`
/// (system.rs) on the exiting thread, which is not a worker, so it calls
/// `drain` (worker.rs), which waits until no job is outstanding;
/// but the job being dropped is outstanding until `cancel_with` finishes
/// it, after the drop returns. The thread sleeps in `drained.wait` (with
/// workers; with 0 workers it spins) forever, the workers never exit, and
/// whoever joins the thread hangs. The same shape hangs wherever an
/// internal cancel (no caller holding a `JobSystem`) drops a closure owning
/// the last clone on a non-worker thread.
#[test]
fn a_thread_exit_that_drops_the_last_clone_with_a_pinned_closure_does_not_hang() {
    watchdog(30, || {
        let js = system(1);
        let t = Tally::default();
        let (idx_tx, idx_rx) = mpsc::channel();
        let (exit_tx, exit_rx) = mpsc::channel::<()>();
        let js2 = js.clone();
        let o = thread::spawn(move || {
            let idx = js2.register_thread();
            drop(js2);
            idx_tx.send(idx).unwrap();
            let _ = exit_rx.recv();
        });
        let idx = idx_rx.recv().unwrap();
        let (job, last) = (t.job(), js.clone());
        js.job().pin(Pin::Thread(idx)).schedule(move || {
            let _last = last;
            job();
        });
        drop(js); // the pinned closure holds the last clone now
        exit_tx.send(()).unwrap();
        let (done_tx, done_rx) = mpsc::channel();
        thread::spawn(move || {
            let _ = done_tx.send(o.join().is_ok());
        });
        match done_rx.recv_timeout(Duration::from_secs(20)) {
            Ok(ok) => assert!(ok, "the exiting thread panicked"),
            Err(_) => panic!(
                "the registered thread's exit hangs: its teardown cancelled a pinned job whose \
                 closure held the last JobSystem clone, and the shutdown in that drop waits \
                 for the job being dropped"
            ),
        }
        assert_eq!(t.counts(), (0, 1), "cancelled: dropped once, never run");
    });
}

// ---- shutdown --------------------------------------------------------------

/// The last `JobSystem` clone is dropped while a job runs (it waits on a
/// gate that a helper opens once the drop began… or just before: both
/// orders are fine), another waits for it, a third is queued behind, a job
/// is pinned to a registered outside thread that never calls in again, and
/// another such pinned job waits for the running one. Proves: the drop
/// returns only after every closure ran or was dropped, the pinned ones
/// cancelled (dropped unrun), the others run exactly once; the outside
/// thread then exits cleanly (its teardown finds the system gone).
#[test]
fn shutdown_leaves_every_closure_run_or_dropped() {
    watchdog(SECS, || {
        for workers in [0, 1, 3] {
            let js = system(workers);
            let (idx_tx, idx_rx) = mpsc::channel();
            let (exit_tx, exit_rx) = mpsc::channel::<()>();
            let js2 = js.clone();
            let o = thread::spawn(move || {
                let idx = js2.register_thread();
                drop(js2);
                idx_tx.send(idx).unwrap();
                let _ = exit_rx.recv();
            });
            let me = Pin::Thread(idx_rx.recv().unwrap());
            let (run, after, queued, pinned, pinned_after) = (
                Tally::default(),
                Tally::default(),
                Tally::default(),
                Tally::default(),
                Tally::default(),
            );
            let gate = Arc::new(Gate::default());
            let (g, job) = (gate.clone(), run.job());
            let r = js.schedule(move || {
                g.wait();
                job();
            });
            js.schedule_after(&[r], after.job());
            js.schedule(queued.job());
            js.job().pin(me).schedule(pinned.job());
            js.job().pin(me).after(&[r]).schedule(pinned_after.job());
            let opener = {
                let gate = gate.clone();
                thread::spawn(move || gate.open())
            };
            drop(js);
            opener.join().unwrap();
            for (what, t, want) in [
                ("running", &run, (1, 1)),
                ("after the running one", &after, (1, 1)),
                ("queued", &queued, (1, 1)),
                ("pinned to the outside thread", &pinned, (0, 1)),
                ("pinned, waiting", &pinned_after, (0, 1)),
            ] {
                assert_eq!(t.counts(), want, "workers {workers}: {what} (runs, drops)");
            }
            exit_tx.send(()).unwrap();
            o.join().unwrap();
        }
    });
}

thread_local! {
    /// Holds the last `JobSystem` clone of a thread that exits (see below).
    static LAST_CLONE: std::cell::RefCell<Option<JobSystem>> =
        const { std::cell::RefCell::new(None) };
}

/// An outside thread touches a thread-local of its own first (so its
/// destructor runs after jobsys's), registers, schedules a job queued on
/// its own deque and one pinned to itself, puts the last `JobSystem` clone
/// into that thread-local, and exits. Proves, with 0 and 2 workers: the
/// thread's teardown cancels the pinned job (dropped once, unrun), then the
/// shutdown in the later destructor (on a context claimed through
/// `LATE_CLAIMS`) runs the queued job before returning, and the thread
/// exits (no hang, no panic).
#[test]
fn the_last_clone_dropped_by_a_late_thread_local_destructor_shuts_down() {
    watchdog(SECS, || {
        for workers in [0, 2] {
            let js = system(workers);
            let (queued, pinned) = (Tally::default(), Tally::default());
            let (q, p) = (queued.job(), pinned.job());
            let (go_tx, go_rx) = mpsc::channel::<()>();
            let js2 = js.clone();
            let o = thread::spawn(move || {
                LAST_CLONE.with(|c| c.borrow_mut().take());
                let me = Pin::Thread(js2.register_thread());
                js2.schedule(q);
                js2.job().pin(me).schedule(p);
                LAST_CLONE.with(|c| *c.borrow_mut() = Some(js2));
                let _ = go_rx.recv();
            });
            drop(js);
            go_tx.send(()).unwrap();
            o.join().expect("the exiting thread");
            assert_eq!(queued.counts(), (1, 1), "workers {workers}: queued job");
            assert_eq!(pinned.counts(), (0, 1), "workers {workers}: pinned job");
        }
    });
}

// ---- a panic payload's Drop ----------------------------------------------

/// A panic payload whose `Drop` waits on a finished job's handle.
struct WaitingPayload {
    js: JobSystem,
    old: JobHandle,
    result: Arc<Mutex<Option<String>>>,
}
impl Drop for WaitingPayload {
    fn drop(&mut self) {
        let r = self.js.try_complete(self.old);
        *self.result.lock().unwrap() = Some(format!("{r:?}"));
    }
}

/// A job panics with a payload whose `Drop` waits on the handle of a job
/// that finished long ago. Nobody re-raises the payload (the wait is on a
/// dependent, which gets no payload), so it lives in the failure log until
/// a later failure evicts it (`failure_history(1)`); the eviction drops it.
/// Expected: the wait in that `Drop` returns `Ok` (the old job succeeded)
/// and the later failure is reported.
///
/// Before its fix (2026-11-25): self-deadlock. `FailureLog::record` (crates/jobsys/src/failures.rs)
/// evicts the oldest entry (`g.map.remove(&old)`, and `insert` replacing
/// an entry) while it holds the log's mutex; the evicted `Arc<Failure>` is
/// the last one, so the payload is dropped under that lock, and a wait on
/// any recycled handle in the `Drop` (`observe_recycled` →
/// `FailureLog::lookup` → `lookup_locked`) locks it again on the same
/// thread: it hangs for ever (and anything else that fails or looks up a
/// failure later blocks on the lock). Dropping the evicted entries after
/// the guard is released fixes it. (The same payload drop also runs user
/// code inside `Slot::reset_for_reuse`, in `recycle`.)
#[test]
fn a_panic_payload_dropped_by_the_failure_log_can_wait() {
    watchdog(30, || {
        let js = JobSystem::builder()
            .workers(0)
            .failure_history(1)
            .build()
            .unwrap();
        let old = js.schedule(|| {});
        js.complete(old);
        // Takes `old`'s slot back and keeps it until the end, so that no
        // failure below lands in that slot: a pushed-out failure of a later
        // job there would make `old` read `OutcomeUnknown` (docs/storage.md,
        // "The outcome guarantee"), and this test is about the wait.
        let filler = js.job().pin(jobsys::Pin::Main).schedule(|| {});
        let result = Arc::new(Mutex::new(None));
        let payload = WaitingPayload {
            js: js.clone(),
            old,
            result: result.clone(),
        };
        let h1 = js.schedule(move || std::panic::panic_any(payload));
        // A dependent's wait reports the failure without taking the
        // payload, which stays in the log.
        let g1 = js.combine(&[h1]);
        assert!(matches!(js.try_complete(g1), Err(JobError::Panicked(_))));
        assert!(
            result.lock().unwrap().is_none(),
            "the payload is still alive"
        );
        // Two later failures evict the entries that hold it.
        for msg in ["second", "third"] {
            let h = js.schedule(move || panic!("{msg}"));
            match js.try_complete(h) {
                Err(JobError::Panicked(p)) => assert_eq!(p.message(), msg),
                other => panic!("expected the panic {msg:?}, got {other:?}"),
            }
        }
        assert_eq!(result.lock().unwrap().as_deref(), Some("Ok(())"));
        js.complete(filler);
    });
}

/// A registered thread exits; its teardown cancels a job pinned to it,
/// whose closure's `Drop` calls `register_thread` (say, an engine helper
/// that "makes sure this thread is registered"). Then a job is pinned to
/// that thread's index. Expected: the thread is gone, so the new job is
/// cancelled (`Err(Cancelled)`), as for any job pinned to an exited thread.
///
/// Before its fix (2026-11-25): hang. `Claim::drop` (crates/jobsys/src/registry.rs) closes the
/// pinned queue (`close_pinned`), and the cancel inside it runs the drop,
/// whose `register_thread` (pinned.rs `ThisThread::register` → `set_open`)
/// reopens the queue of the context being released; `Claim::drop` then
/// releases the context with its queue open. Jobs pinned to the dead
/// thread are queued there and nobody runs them: a wait on one parks for
/// ever (until another thread happens to claim that context, which then
/// runs them although it never registered).
#[test]
fn a_register_during_thread_exit_does_not_reopen_the_dead_threads_queue() {
    struct RegisterOnDrop(JobSystem);
    impl Drop for RegisterOnDrop {
        fn drop(&mut self) {
            self.0.register_thread();
        }
    }
    watchdog(30, || {
        let js = system(1);
        let (idx_tx, idx_rx) = mpsc::channel();
        let (exit_tx, exit_rx) = mpsc::channel::<()>();
        let js2 = js.clone();
        let o = thread::spawn(move || {
            idx_tx.send(js2.register_thread()).unwrap();
            let _ = exit_rx.recv();
        });
        let idx = idx_rx.recv().unwrap();
        let g = RegisterOnDrop(js.clone());
        let p = js.job().pin(Pin::Thread(idx)).schedule(move || {
            let _g = g;
            unreachable!("its thread exits without running it");
        });
        exit_tx.send(()).unwrap();
        o.join().unwrap();
        assert!(matches!(js.try_complete(p), Err(JobError::Cancelled(_))));
        let t = Tally::default();
        let q = js.job().pin(Pin::Thread(idx)).schedule(t.job());
        let r = js.try_complete(q);
        assert!(matches!(r, Err(JobError::Cancelled(_))), "{r:?}");
        assert_eq!(t.counts(), (0, 1));
    });
}

/// A registered thread's exit races a user's `cancel` of the jobs pinned
/// to it: a queued one and one waiting for a dependency that finishes at
/// the same moment (a barrier lines the three threads up). Proves, over
/// many rounds with 0 and 2 workers: whoever wins, each closure is dropped
/// exactly once and never runs, each job reports `Cancelled`, and the
/// exiting thread does not hang.
#[test]
fn a_thread_exit_racing_a_cancel_of_its_pinned_jobs_drops_each_closure_once() {
    watchdog(SECS, || {
        for workers in [0, 2] {
            let js = system(workers);
            for round in 0..ROUNDS {
                let (queued, waiting) = (Tally::default(), Tally::default());
                let barrier = Arc::new(std::sync::Barrier::new(3));
                let (idx_tx, idx_rx) = mpsc::channel();
                let (js2, b2) = (js.clone(), barrier.clone());
                let o = thread::spawn(move || {
                    idx_tx.send(js2.register_thread()).unwrap();
                    b2.wait();
                });
                let me = Pin::Thread(idx_rx.recv().unwrap());
                let (go_tx, go_rx) = mpsc::channel::<()>();
                let dep = js.schedule(move || {
                    let _ = go_rx.recv();
                });
                let hq = js.job().pin(me).schedule(queued.job());
                let hw = js.job().pin(me).after(&[dep]).schedule(waiting.job());
                let b3 = barrier.clone();
                let opener = thread::spawn(move || {
                    b3.wait();
                    drop(go_tx);
                });
                barrier.wait();
                js.cancel(hq);
                js.cancel(hw);
                o.join().unwrap();
                opener.join().unwrap();
                if workers == 0 {
                    js.complete(dep);
                }
                for (what, h, t) in [("queued", hq, &queued), ("waiting", hw, &waiting)] {
                    let r = js.try_complete(h);
                    assert!(
                        matches!(r, Err(JobError::Cancelled(_))),
                        "workers {workers}, round {round}, {what}: {r:?}"
                    );
                    assert_eq!(
                        t.counts(),
                        (0, 1),
                        "workers {workers}, round {round}, {what}"
                    );
                }
            }
        }
    });
}

/// Keeps a `write_now` guard until after jobsys let go of the thread's
/// context (see the test below).
struct LateGuard {
    guard: Option<jobsys::WriteNow<'static, u32>>,
    in_teardown: mpsc::Sender<()>,
    go: mpsc::Receiver<()>,
}
impl Drop for LateGuard {
    fn drop(&mut self) {
        let _ = self.in_teardown.send(());
        let _ = self.go.recv();
        self.guard.take();
    }
}

thread_local! {
    static LATE_GUARD: std::cell::RefCell<Option<LateGuard>> =
        const { std::cell::RefCell::new(None) };
}

/// Thread T takes a `write_now` guard and keeps it in a thread-local whose
/// destructor runs after jobsys's (it touched it first); T exits, so
/// jobsys releases T's context while the guard, and its event on that
/// context's `running` stack, live on. A job J writing the resource waits
/// for the guard. Then thread X (which claims the released context) waits
/// on J. Expected: X's wait blocks until T's destructor drops the guard,
/// then returns `Ok`.
///
/// Before its fix (2026-11-25): X's wait fails at once with `WaitOnSelf` (`complete` would panic
/// "waits on itself"; a scope would cancel its job). The guard's event
/// stays on the released context's `running` stack
/// (access/now.rs: `Event::drop` removes it from the context `current()`
/// gives *then*, a fresh `LATE_CLAIMS` one; registry.rs `Claim::drop`
/// and `claim_external` leave `running` as it was), so X, the next owner
/// of that context, looks "inside" the event, and the walk
/// (wait/mod.rs `mark_needed`) reads the wait as a wait on itself.
#[test]
fn a_now_guard_outliving_its_threads_context_does_not_poison_the_next_owner() {
    watchdog(30, || {
        let js = system(1);
        let res: &'static jobsys::Resource<u32> = Box::leak(Box::new(jobsys::Resource::new(0)));
        let (taken_tx, taken_rx) = mpsc::channel::<()>();
        let (teardown_tx, teardown_rx) = mpsc::channel::<()>();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let js2 = js.clone();
        let t = thread::spawn(move || {
            LATE_GUARD.with(|g| g.borrow_mut().take());
            let guard = res.write_now(&js2);
            LATE_GUARD.with(|g| {
                *g.borrow_mut() = Some(LateGuard {
                    guard: Some(guard),
                    in_teardown: teardown_tx,
                    go: go_rx,
                })
            });
            taken_tx.send(()).unwrap();
        });
        taken_rx.recv().unwrap();
        let j = js.job().access(res.write()).schedule(|x| *x += 1);
        // T's jobsys context is released; its guard still lives.
        teardown_rx.recv().unwrap();
        let (ready_tx, ready_rx) = mpsc::channel::<()>();
        let (r_tx, r_rx) = mpsc::channel::<String>();
        let js3 = js.clone();
        let x = thread::spawn(move || {
            assert!(!js3.is_complete(j), "claims a context: T's old one");
            ready_tx.send(()).unwrap();
            r_tx.send(format!("{:?}", js3.try_complete(j))).unwrap();
        });
        ready_rx.recv().unwrap();
        // J cannot finish while the guard lives: a result now is wrong.
        if let Ok(r) = r_rx.recv_timeout(Duration::from_secs(2)) {
            go_tx.send(()).unwrap();
            t.join().unwrap();
            x.join().unwrap();
            panic!("the wait on J ended while the guard it needs lives: {r}");
        }
        go_tx.send(()).unwrap();
        t.join().unwrap();
        assert_eq!(r_rx.recv().unwrap(), "Ok(())");
        x.join().unwrap();
        assert_eq!(*res.read_now(&js), 1);
    });
}
