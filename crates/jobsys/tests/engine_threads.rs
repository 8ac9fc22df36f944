//! Engine integration, part 4: thread indices, and pinned jobs whose
//! thread is gone (a registered thread that exits, a shutdown while a
//! registered thread never calls in).
//!
//! Every scenario runs under `common::watchdog`; ordering is done with
//! channels, never with sleeps.

mod common;

use common::{watchdog, DropCount};
use jobsys::{JobError, JobSystem, Pin};
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
            let h = js.schedule_pinned(Pin::Worker(i), move || {
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
            js.schedule_pinned(Pin::Thread(idx), move || {
                let _g = guard;
                r.fetch_add(1, SeqCst);
            });
        }
        // One that becomes runnable only after a dependency.
        let dep = js.schedule(|| {});
        let (r, guard) = (runs.clone(), DropCount(drops.clone()));
        js.schedule_pinned_after(Pin::Thread(idx), &[dep], move || {
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
                .map(|_| js.schedule_pinned(Pin::Thread(idx), job(&runs)))
                .collect();
            let dependent = js.schedule_after(&queued, job(&runs));
            // Waits for a gate that opens after the thread exited.
            let (gate_tx, gate_rx) = mpsc::channel::<()>();
            let gate = js.schedule(move || {
                let _ = gate_rx.recv();
            });
            let later = js.schedule_pinned_after(Pin::Thread(idx), &[gate], job(&runs));
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
