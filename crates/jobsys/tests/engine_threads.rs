//! Engine integration, part 4: thread indices, and pinned jobs whose
//! thread is gone (a registered thread that exits, a shutdown while a
//! registered thread never calls in).
//!
//! Every scenario runs under `common::watchdog`; ordering is done with
//! channels, never with sleeps.

mod common;

use common::{watchdog, DropCount};
use jobsys::{JobError, JobHandle, JobSystem, Pin};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::thread;

const SECS: u64 = 60;

fn system(workers: usize) -> JobSystem {
    JobSystem::builder().workers(workers).build().unwrap()
}

/// `thread_index`: 0 on the builder, i+1 on worker i, `workers()+1`, `+2`
/// on registered threads (register_thread returns the same), `None` on an
/// unregistered thread; stable across calls; the index of a registered
/// thread that exited is reused by the next one that registers.
#[test]
fn thread_index_on_every_kind_of_thread() {
    watchdog(SECS, || {
        let workers = 3;
        let js = system(workers);
        assert_eq!(js.thread_index(), Some(0));
        assert_eq!(js.thread_index(), Some(0), "stable");
        assert_eq!(js.register_thread().get(), 0, "the builder is index 0");
        for i in 0..workers {
            let js2 = js.clone();
            let h = js.job().pin(Pin::Worker(i + 1)).schedule(move || {
                assert_eq!(js2.thread_index(), Some(i + 1));
                assert_eq!(js2.thread_index(), Some(i + 1), "stable");
            });
            js.try_complete(h)
                .unwrap_or_else(|e| panic!("worker {i}: {e}"));
        }

        // A registers, B registers; A stays until told to exit.
        let spawn_registered = |expect: usize| {
            let js2 = js.clone();
            let (go_tx, go_rx) = mpsc::channel::<()>();
            let (ready_tx, ready_rx) = mpsc::channel();
            let t = thread::spawn(move || {
                let idx = js2.register_thread();
                assert_eq!(idx.get(), expect);
                assert_eq!(js2.register_thread(), idx, "registering again");
                assert_eq!(js2.thread_index(), Some(expect));
                assert_eq!(js2.thread_index(), Some(expect), "stable");
                ready_tx.send(()).unwrap();
                let _ = go_rx.recv();
                assert_eq!(js2.thread_index(), Some(expect), "still");
            });
            ready_rx.recv().unwrap();
            (go_tx, t)
        };
        let (a_go, a) = spawn_registered(workers + 1);
        let (b_go, b) = spawn_registered(workers + 2);
        drop(a_go);
        a.join().unwrap();
        // C takes A's place (and index) after A exited.
        let (c_go, c) = spawn_registered(workers + 1);
        drop((b_go, c_go));
        b.join().unwrap();
        c.join().unwrap();

        let js2 = js.clone();
        thread::spawn(move || {
            assert_eq!(js2.thread_index(), None, "unregistered thread");
            assert_eq!(js2.thread_index(), None, "still unregistered");
        })
        .join()
        .unwrap();
    });
}

/// A job pinned to a registered thread that is alive but never calls in,
/// then the last `JobSystem` dropped on the main thread: the drop returns,
/// and the closure was dropped exactly once, never run.
#[test]
fn shutdown_cancels_jobs_pinned_to_a_silent_registered_thread() {
    watchdog(SECS, || {
        let js = system(1);
        let (idx_tx, idx_rx) = mpsc::channel();
        let (exit_tx, exit_rx) = mpsc::channel::<()>();
        let silent = {
            let js = js.clone();
            thread::spawn(move || {
                let idx = js.register_thread();
                // Stays registered and alive, and never calls in. Its clone
                // goes before the index is sent, so that the main thread's
                // drop is the last one.
                drop(js);
                idx_tx.send(idx).unwrap();
                let _ = exit_rx.recv();
            })
        };
        let idx = idx_rx.recv().unwrap();
        let (runs, drops) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        for _ in 0..3 {
            let (r, guard) = (runs.clone(), DropCount(drops.clone()));
            js.job().pin(Pin::Thread(idx)).schedule(move || {
                let _g = guard;
                r.fetch_add(1, SeqCst);
            });
        }
        // One that becomes runnable only after a dependency.
        let dep = js.schedule(|| {});
        let (r, guard) = (runs.clone(), DropCount(drops.clone()));
        js.job()
            .pin(Pin::Thread(idx))
            .after(&[dep])
            .schedule(move || {
                let _g = guard;
                r.fetch_add(1, SeqCst);
            });
        drop(js); // must return
        assert_eq!(runs.load(SeqCst), 0, "a pinned job ran on the wrong thread");
        assert_eq!(drops.load(SeqCst), 4, "each closure dropped exactly once");
        exit_tx.send(()).unwrap();
        silent.join().unwrap();
        assert_eq!(drops.load(SeqCst), 4);
    });
}

/// A registered thread that exits with pinned jobs queued: those jobs (and
/// their dependents, and a job pinned there that becomes runnable later)
/// report `Cancelled`, and each closure is dropped once, never run.
#[test]
fn registered_thread_exit_cancels_its_queued_pinned_jobs() {
    watchdog(SECS, || {
        for workers in [0, 2] {
            let js = system(workers);
            let (idx_tx, idx_rx) = mpsc::channel();
            let (exit_tx, exit_rx) = mpsc::channel::<()>();
            let t = {
                let js = js.clone();
                thread::spawn(move || {
                    idx_tx.send(js.register_thread()).unwrap();
                    let _ = exit_rx.recv();
                })
            };
            let idx = idx_rx.recv().unwrap();
            let (runs, drops) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
            let job = |runs: &Arc<AtomicUsize>| {
                let (r, guard) = (runs.clone(), DropCount(drops.clone()));
                move || {
                    let _g = guard;
                    r.fetch_add(1, SeqCst);
                }
            };
            let queued: Vec<_> = (0..5)
                .map(|_| js.job().pin(Pin::Thread(idx)).schedule(job(&runs)))
                .collect();
            let dependent = js.schedule_after(&queued, job(&runs));
            // Waits for a gate that opens after the thread exited.
            let (gate_tx, gate_rx) = mpsc::channel::<()>();
            let gate = js.schedule(move || {
                let _ = gate_rx.recv();
            });
            let later = js
                .job()
                .pin(Pin::Thread(idx))
                .after(&[gate])
                .schedule(job(&runs));
            exit_tx.send(()).unwrap();
            t.join().unwrap();
            gate_tx.send(()).unwrap();
            for (what, h) in queued
                .iter()
                .map(|&h| ("queued", h))
                .chain([("dependent", dependent), ("later", later)])
            {
                match js.try_complete(h) {
                    Err(JobError::Cancelled(_)) => {}
                    other => panic!("{workers} workers, {what}: expected Cancelled, got {other:?}"),
                }
            }
            js.complete(gate);
            assert_eq!(runs.load(SeqCst), 0, "{workers} workers: a closure ran");
            assert_eq!(
                drops.load(SeqCst),
                7,
                "{workers} workers: each dropped once"
            );
        }
    });
}

/// A thread that registers, then waits (`try_complete`, which runs its
/// ready pinned jobs) on each handle sent to it; when the sender is
/// dropped it runs its ready pinned jobs once more and exits. Returns its
/// index once registered, the sender and its join handle; `ran` counts the
/// pinned jobs its `run_pinned` ran.
fn registered_until(
    js: &JobSystem,
    ran: &Arc<AtomicUsize>,
) -> (
    jobsys::ThreadIndex,
    mpsc::Sender<JobHandle>,
    thread::JoinHandle<()>,
) {
    let (js2, ran) = (js.clone(), ran.clone());
    let (idx_tx, idx_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<JobHandle>();
    let t = thread::spawn(move || {
        idx_tx.send(js2.register_thread()).unwrap();
        for h in go_rx {
            let _ = js2.try_complete(h);
        }
        ran.fetch_add(js2.run_pinned(), SeqCst);
    });
    (idx_rx.recv().unwrap(), go_tx, t)
}

/// Registered thread T1 exits; a thread that only schedules and waits
/// (never registers) stays alive; T2 registers. Only one thread is
/// registered at a time, so T2's index (and `thread_index` on it) is
/// `workers() + 1`: below `workers() + 1 + 1`, the size docs/engine.md
/// tells per-thread arrays to have. Repeated with the scheduling threads
/// piling up, to show the bound does not depend on how many threads only
/// schedule.
#[test]
fn a_thread_that_only_schedules_does_not_push_registered_indices_past_the_bound() {
    watchdog(SECS, || {
        for workers in [0, 2] {
            let js = system(workers);
            let ran = Arc::new(AtomicUsize::new(0));
            let mut schedulers = Vec::new();
            for round in 0..3 {
                let (idx, go, t) = registered_until(&js, &ran);
                assert_eq!(idx.get(), workers + 1, "round {round}: T1");
                drop(go);
                t.join().unwrap();
                // A thread that only schedules and waits, kept alive.
                let (js2, (up_tx, up_rx), (end_tx, end_rx)) =
                    (js.clone(), mpsc::channel(), mpsc::channel::<()>());
                schedulers.push((
                    end_tx,
                    thread::spawn(move || {
                        js2.complete(js2.schedule(|| {}));
                        assert_eq!(js2.thread_index(), None, "it never registered");
                        up_tx.send(()).unwrap();
                        let _ = end_rx.recv();
                    }),
                ));
                up_rx.recv().unwrap();
                let js2 = js.clone();
                let (idx2, seen) = thread::spawn(move || {
                    let idx = js2.register_thread();
                    (idx, js2.thread_index())
                })
                .join()
                .unwrap();
                let bound = js.workers() + 1 + 1;
                assert!(
                    idx2.get() < bound && seen == Some(idx2.get()),
                    "{workers} workers, round {round}: the only registered thread got index {} \
                     (thread_index {seen:?}); a per-thread array of workers() + 1 + 1 = {bound} \
                     entries must cover it",
                    idx2.get()
                );
            }
            for (end, t) in schedulers {
                drop(end);
                t.join().unwrap();
            }
        }
    });
}

/// Many threads register, exit, schedule and register again in a
/// shuffled order: every index handed out (and `thread_index` on that
/// thread) stays below `workers() + 1 + N`, N the most threads registered
/// at once, and no two live registered threads share an index.
#[test]
fn registered_indices_stay_dense_whatever_the_order_of_threads() {
    watchdog(SECS, || {
        let workers = 2;
        let js = system(workers);
        let mut rng = common::Rng::new(29);
        let ran = Arc::new(AtomicUsize::new(0));
        let mut live: Vec<(
            jobsys::ThreadIndex,
            mpsc::Sender<JobHandle>,
            thread::JoinHandle<()>,
        )> = Vec::new();
        let mut idle = Vec::new();
        let mut most = 0;
        for step in 0..200 {
            match rng.below(4) {
                0 | 1 if live.len() < 6 => {
                    let (idx, go, t) = registered_until(&js, &ran);
                    live.push((idx, go, t));
                    most = most.max(live.len());
                    let bound = workers + 1 + most;
                    assert!(
                        idx.get() > workers && idx.get() < bound,
                        "step {step}: index {} outside {}..{bound}",
                        idx.get(),
                        workers + 1
                    );
                    let mut seen: Vec<_> = live.iter().map(|l| l.0.get()).collect();
                    seen.sort_unstable();
                    seen.dedup();
                    assert_eq!(seen.len(), live.len(), "step {step}: an index held twice");
                }
                2 if !live.is_empty() => {
                    let (_, go, t) = live.swap_remove(rng.below(live.len()));
                    drop(go);
                    t.join().unwrap();
                }
                _ => {
                    // A thread that only schedules: kept alive a while.
                    let js2 = js.clone();
                    let (up_tx, up_rx) = mpsc::channel();
                    let (end_tx, end_rx) = mpsc::channel::<()>();
                    let t = thread::spawn(move || {
                        js2.complete(js2.schedule(|| {}));
                        up_tx.send(()).unwrap();
                        let _ = end_rx.recv();
                    });
                    up_rx.recv().unwrap();
                    idle.push((end_tx, t));
                    if idle.len() > 8 {
                        let (end, t) = idle.remove(0);
                        drop(end);
                        t.join().unwrap();
                    }
                }
            }
        }
        for (_, go, t) in live {
            drop(go);
            t.join().unwrap();
        }
        for (end, t) in idle {
            drop(end);
            t.join().unwrap();
        }
    });
}

/// T1 registers and exits; T2 registers (with no other outside thread
/// around, it takes over T1's context, and its index). A job pinned with
/// T1's `ThreadIndex` after that is cancelled: T2 never runs it, not when
/// it calls `run_pinned`, nor while it waits for it.
#[test]
fn a_stale_thread_index_never_sends_a_job_to_the_thread_that_took_its_index() {
    watchdog(SECS, || {
        for workers in [0, 2] {
            let js = system(workers);
            let ran = Arc::new(AtomicUsize::new(0));
            let (idx1, go1, t1) = registered_until(&js, &ran);
            drop(go1);
            t1.join().unwrap();
            let (idx2, go2, t2) = registered_until(&js, &ran);
            assert_eq!(idx2.get(), idx1.get(), "T2 reuses the free index");
            let (runs, drops) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
            let (r, guard) = (runs.clone(), DropCount(drops.clone()));
            let h = js.job().pin(Pin::Thread(idx1)).schedule(move || {
                let _g = guard;
                r.fetch_add(1, SeqCst);
            });
            // The same through declared access.
            let res = jobsys::Resource::new(0u32);
            let (r, guard) = (runs.clone(), DropCount(drops.clone()));
            let ha = js
                .job()
                .pin(Pin::Thread(idx1))
                .after(&[])
                .access(res.write())
                .schedule(move |v| {
                    let _g = guard;
                    *v += 1;
                    r.fetch_add(1, SeqCst);
                });
            // T2 waits for the jobs (running its own pinned jobs meanwhile),
            // then runs its ready pinned jobs and exits.
            go2.send(h).unwrap();
            go2.send(ha).unwrap();
            drop(go2);
            t2.join().unwrap();
            for (what, h) in [("schedule_pinned", h), ("schedule_access_pinned", ha)] {
                match js.try_complete(h) {
                    Err(JobError::Cancelled(_)) => {}
                    other => panic!(
                        "{workers} workers, {what}: a job pinned to exited T1 gave {other:?} \
                         (T2 ran {} pinned jobs): expected Cancelled",
                        ran.load(SeqCst)
                    ),
                }
            }
            assert_eq!(runs.load(SeqCst), 0, "{workers} workers: a closure ran");
            assert_eq!(
                ran.load(SeqCst),
                0,
                "{workers} workers: T2 ran a pinned job"
            );
            assert_eq!(
                drops.load(SeqCst),
                2,
                "{workers} workers: each dropped once"
            );
        }
    });
}

/// A job pinned to T1 waits for a dependency; T1 exits; T2 registers; the
/// dependency finishes. The job is cancelled (its thread is gone) and T2,
/// registered when the job became ready, never runs it.
#[test]
fn a_job_pinned_to_an_exited_thread_never_runs_on_the_next_registrant() {
    watchdog(SECS, || {
        for workers in [0, 2] {
            let js = system(workers);
            let ran = Arc::new(AtomicUsize::new(0));
            let (idx1, go1, t1) = registered_until(&js, &ran);
            let (gate_tx, gate_rx) = mpsc::channel::<()>();
            let gate = js.schedule(move || {
                let _ = gate_rx.recv();
            });
            let (runs, drops) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
            let (r, guard) = (runs.clone(), DropCount(drops.clone()));
            let h = js
                .job()
                .pin(Pin::Thread(idx1))
                .after(&[gate])
                .schedule(move || {
                    let _g = guard;
                    r.fetch_add(1, SeqCst);
                });
            drop(go1);
            t1.join().unwrap();
            let (idx2, go2, t2) = registered_until(&js, &ran);
            assert!(
                idx2.get() < workers + 2,
                "the only registered thread: {}",
                idx2.get()
            );
            drop(gate_tx);
            // T2 waits for the job (running its own pinned jobs meanwhile;
            // with 0 workers it runs `gate` too), then exits.
            go2.send(h).unwrap();
            drop(go2);
            t2.join().unwrap();
            let r = js.try_complete(h);
            assert!(
                matches!(r, Err(JobError::Cancelled(_))),
                "{workers} workers: a job pinned to exited T1 gave {r:?}: expected Cancelled"
            );
            assert_eq!(runs.load(SeqCst), 0, "{workers} workers: the closure ran");
            assert_eq!(
                ran.load(SeqCst),
                0,
                "{workers} workers: T2 ran a pinned job"
            );
            assert_eq!(drops.load(SeqCst), 1, "{workers} workers: dropped once");
        }
    });
}

/// The system is built on a thread that then exits; the test's thread
/// (which may take over the builder's context) registers. It gets an index
/// above the workers', not the builder's 0, and a job pinned to `Pin::Main`
/// is cancelled (the building thread is gone), never run by it.
#[test]
fn the_building_threads_exit_ends_pin_main_and_index_0() {
    watchdog(SECS, || {
        for workers in [0, 2] {
            let js = thread::spawn(move || system(workers)).join().unwrap();
            let me = js.register_thread();
            assert_eq!(me.get(), workers + 1, "{workers} workers");
            assert_eq!(js.thread_index(), Some(workers + 1), "{workers} workers");
            let (runs, drops) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
            let (r, guard) = (runs.clone(), DropCount(drops.clone()));
            let h = js.job().pin(Pin::Main).schedule(move || {
                let _g = guard;
                r.fetch_add(1, SeqCst);
            });
            let r = js.try_complete(h);
            assert!(
                matches!(r, Err(JobError::Cancelled(_))),
                "{workers} workers: {r:?}"
            );
            assert_eq!(runs.load(SeqCst), 0, "{workers} workers: the closure ran");
            assert_eq!(drops.load(SeqCst), 1, "{workers} workers: dropped once");
        }
    });
}

/// A registered thread exits while a job pinned to it waits for a
/// dependency, and after a `job().pin(..).after(..)` to it panicked (a
/// handle of another system). Its context is kept from other threads only
/// until that job is cancelled: over more rounds than the system has
/// contexts for outside threads (256), none is lost.
#[test]
fn contexts_kept_for_jobs_pinned_to_an_exited_thread_come_back() {
    watchdog(SECS, || {
        let js = system(1);
        let other = system(0);
        let foreign = other.schedule(|| {});
        let ran = Arc::new(AtomicUsize::new(0));
        for round in 0..300 {
            let (idx, go, t) = registered_until(&js, &ran);
            let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                js.job()
                    .pin(Pin::Thread(idx))
                    .after(&[foreign])
                    .schedule(|| {})
            }));
            assert!(
                panicked.is_err(),
                "round {round}: a foreign handle is refused"
            );
            let (gate_tx, gate_rx) = mpsc::channel::<()>();
            let gate = js.schedule(move || {
                let _ = gate_rx.recv();
            });
            let h = js
                .job()
                .pin(Pin::Thread(idx))
                .after(&[gate])
                .schedule(|| unreachable!("its thread exited"));
            drop(go);
            t.join().unwrap();
            drop(gate_tx);
            let r = js.try_complete(h);
            assert!(
                matches!(r, Err(JobError::Cancelled(_))),
                "round {round}: {r:?}"
            );
        }
        assert_eq!(ran.load(SeqCst), 0);
        other.complete(foreign);
    });
}
