//! Handles: stale handles after slot reuse, handles of another system,
//! waiting on oneself, empty combines and loops, completion order.

mod common;

use common::{expect_panic, watchdog};
use jobsys::{Batch, JobError, JobHandle, JobSystem};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex, OnceLock};

const WORKER_COUNTS: [usize; 3] = [0, 1, 3];

fn slot_addr(h: JobHandle) -> u64 {
    h.to_bits()[0]
}

#[test]
fn handles_are_small_copy_send_sync_values() {
    fn assert_traits<T: Copy + Send + Sync + Eq + std::hash::Hash + std::fmt::Debug>() {}
    assert_traits::<JobHandle>();
    assert!(std::mem::size_of::<JobHandle>() <= 16);
    let js = JobSystem::builder().workers(0).build().unwrap();
    // Live handles are distinct.
    let hs: Vec<JobHandle> = (0..100).map(|_| js.schedule(|| {})).collect();
    let set: HashSet<JobHandle> = hs.iter().copied().collect();
    assert_eq!(set.len(), 100);
    for h in hs {
        js.complete(h);
    }
}

/// 150k jobs scheduled and completed one at a time reuse the same slots;
/// the very first handle still reads complete (generation check).
#[test]
fn stale_handle_reads_complete_after_150k_slot_reuses() {
    watchdog(60, || {
        let js = JobSystem::builder().workers(0).build().unwrap();
        let n = Arc::new(AtomicUsize::new(0));
        let n0 = n.clone();
        let first = js.schedule(move || {
            n0.fetch_add(1, SeqCst);
        });
        js.complete(first);
        let mut same_slot = 0usize;
        for _ in 0..150_000 {
            let n2 = n.clone();
            let h = js.schedule(move || {
                n2.fetch_add(1, SeqCst);
            });
            if slot_addr(h) == slot_addr(first) {
                same_slot += 1;
                assert_ne!(h, first, "a reused slot must carry a new generation");
            }
            js.complete(h);
        }
        assert_eq!(n.load(SeqCst), 150_001);
        assert!(
            same_slot >= 100_000,
            "the first job's slot was reused only {same_slot} times"
        );
        assert!(js.is_complete(first));
        assert!(js.try_complete(first).is_ok());
        js.complete(first);
        // A stale handle as a dependency counts as finished.
        let (set, seen) = {
            let f = Arc::new(AtomicBool::new(false));
            (f.clone(), f)
        };
        let after = js.schedule_after(&[first], move || set.store(true, SeqCst));
        js.complete(after);
        assert!(seen.load(SeqCst));
        // And in a combine.
        let c = js.combine(&[first, after]);
        js.complete(c);
    });
}

/// The same with workers finishing the jobs (slots come back through the
/// remote free list), and with loops and combines among the stale handles.
#[test]
fn stale_handles_of_all_kinds_read_complete_with_workers() {
    watchdog(60, || {
        let js = JobSystem::builder().workers(2).build().unwrap();
        let single = js.schedule(|| {});
        let lp = js.parallel_for(0..100, Batch::Fixed(10), |_| {});
        let comb = js.combine(&[single, lp]);
        js.complete(comb);
        let mut slots = HashSet::new();
        for i in 0..120_000 {
            let h = match i % 3 {
                0 => js.schedule(|| {}),
                1 => js.parallel_for(0..4, Batch::Fixed(1), |_| {}),
                _ => {
                    let a = js.schedule(|| {});
                    js.combine(&[a])
                }
            };
            slots.insert(slot_addr(h));
            js.complete(h);
        }
        // Slots are recycled, not allocated per job.
        assert!(
            slots.len() < 10_000,
            "{} distinct slots for 120k jobs",
            slots.len()
        );
        for h in [single, lp, comb] {
            assert!(js.is_complete(h));
            js.try_complete(h).unwrap();
        }
    });
}

#[test]
fn a_handle_from_another_system_is_rejected_clearly() {
    let a = JobSystem::builder().workers(1).build().unwrap();
    let b = JobSystem::builder().workers(1).build().unwrap();
    let h = a.schedule(|| {});
    assert!(matches!(b.try_complete(h), Err(JobError::ForeignHandle)));
    assert!(JobError::ForeignHandle
        .to_string()
        .contains("another JobSystem"));
    let msg = expect_panic(|| b.complete(h));
    assert!(msg.contains("another JobSystem"), "complete: {msg}");
    let msg = expect_panic(|| b.is_complete(h));
    assert!(msg.contains("another JobSystem"), "is_complete: {msg}");
    let msg = expect_panic(|| b.schedule_after(&[h], || {}));
    assert!(msg.contains("another JobSystem"), "schedule_after: {msg}");
    let msg = expect_panic(|| b.combine(&[h]));
    assert!(msg.contains("another JobSystem"), "combine: {msg}");
    let msg = expect_panic(|| b.job().after(&[h]).parallel_for(0..10, Batch::Auto, |_| {}));
    assert!(
        msg.contains("another JobSystem"),
        "parallel_for_after: {msg}"
    );
    let msg = expect_panic(|| b.job().after(&[h]).parallel_for(0..0, Batch::Auto, |_| {}));
    assert!(
        msg.contains("another JobSystem"),
        "empty parallel_for_after: {msg}"
    );
    let msg = expect_panic(|| {
        b.job()
            .after(&[h])
            .parallel_for_chunked(0..10, Batch::Auto, |_| {})
    });
    assert!(
        msg.contains("another JobSystem"),
        "parallel_for_chunked_after: {msg}"
    );
    let msg = expect_panic(|| b.scope(|s| s.schedule_after(&[h], || {})));
    assert!(
        msg.contains("another JobSystem"),
        "scope schedule_after: {msg}"
    );
    // Both systems are unharmed.
    a.complete(h);
    let hb = b.schedule(|| {});
    b.complete(hb);
    // A handle of a system that no longer exists is foreign too.
    drop(a);
    assert!(matches!(b.try_complete(h), Err(JobError::ForeignHandle)));
}

/// A clone of a system is the same system: its handles are not foreign.
#[test]
fn handles_work_across_clones_of_one_system() {
    let a = JobSystem::builder().workers(1).build().unwrap();
    let a2 = a.clone();
    let h = a.schedule(|| {});
    let d = a2.schedule_after(&[h], || {});
    a2.complete(d);
    assert!(a.is_complete(h));
}

/// A job that waits on its own handle gets WaitOnSelf (or a panic with a
/// message from complete) instead of a deadlock.
#[test]
fn a_job_waiting_on_itself_gets_wait_on_self() {
    for workers in WORKER_COUNTS {
        watchdog(30, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let me: Arc<OnceLock<JobHandle>> = Arc::new(OnceLock::new());
            let out = Arc::new(Mutex::new(Vec::<String>::new()));
            let (go_tx, go_rx) = mpsc::channel::<()>();
            let (js2, me2, out2) = (js.clone(), me.clone(), out.clone());
            let h = js.schedule(move || {
                go_rx.recv().unwrap();
                let me = *me2.get().unwrap();
                let mut out = out2.lock().unwrap();
                out.push(format!("{:?}", js2.try_complete(me)));
                out.push(format!("{}", js2.is_complete(me)));
                let msg = expect_panic(|| js2.complete(me));
                out.push(msg);
            });
            me.set(h).unwrap();
            go_tx.send(()).unwrap();
            js.complete(h);
            let out = out.lock().unwrap();
            assert_eq!(out[0], "Err(WaitOnSelf)", "workers {workers}");
            assert_eq!(out[1], "false");
            assert!(out[2].contains("waited on itself"), "{}", out[2]);
        });
    }
}

/// Run a job `x` that, while running, waits on the handles `build` makes
/// (jobs that depend on `x`); returns what each wait gave. `x` is gated so
/// it cannot start before `build`'s handles exist.
fn x_waits_on_its_dependents(
    js: &JobSystem,
    build: impl FnOnce(&JobSystem, JobHandle) -> Vec<JobHandle>,
) -> Vec<String> {
    let targets: Arc<OnceLock<Vec<JobHandle>>> = Arc::new(OnceLock::new());
    let out = Arc::new(Mutex::new(Vec::<String>::new()));
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (js2, t2, out2) = (js.clone(), targets.clone(), out.clone());
    let x = js.schedule(move || {
        go_rx.recv().unwrap();
        for &h in t2.get().unwrap() {
            let r = js2.try_complete(h);
            out2.lock().unwrap().push(format!("{r:?}"));
        }
    });
    let hs = build(js, x);
    targets.set(hs.clone()).unwrap();
    go_tx.send(()).unwrap();
    js.complete(x);
    // The dependents run normally once x is done.
    for h in hs {
        js.complete(h);
    }
    let out = out.lock().unwrap().clone();
    out
}

/// Waiting on a job that (directly or through others) depends on the
/// waiting job can never end either: WaitOnSelf.
#[test]
fn a_job_waiting_on_its_own_dependents_gets_wait_on_self() {
    type Build = fn(&JobSystem, JobHandle) -> Vec<JobHandle>;
    let cases: [(&str, Build); 5] = [
        ("direct dependent", |js, x| {
            vec![js.schedule_after(&[x], || {})]
        }),
        ("end of a chain", |js, x| {
            let a = js.schedule_after(&[x], || {});
            let b = js.schedule_after(&[a], || {});
            vec![js.schedule_after(&[b], || {})]
        }),
        ("combine", |js, x| {
            let other = js.schedule(|| {});
            vec![js.combine(&[other, x])]
        }),
        ("loop after", |js, x| {
            vec![js
                .job()
                .after(&[x])
                .parallel_for(0..10, Batch::Fixed(2), |_| {})]
        }),
        ("job after a loop after", |js, x| {
            let other = js.schedule(|| {});
            let lp = js
                .job()
                .after(&[x])
                .parallel_for(0..10, Batch::Fixed(2), |_| {});
            vec![js.schedule_after(&[lp, other], || {})]
        }),
    ];
    for workers in WORKER_COUNTS {
        for (name, build) in cases {
            watchdog(30, move || {
                let js = JobSystem::builder().workers(workers).build().unwrap();
                let out = x_waits_on_its_dependents(&js, build);
                assert_eq!(out, vec!["Err(WaitOnSelf)"], "workers {workers}, {name}");
            });
        }
    }
}

/// The same job asks twice: first about its direct dependent, then about
/// the end of the chain through that dependent. Both waits are on itself.
#[test]
fn wait_on_self_is_detected_again_after_an_earlier_wait_on_the_same_chain() {
    for workers in WORKER_COUNTS {
        watchdog(20, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let out = x_waits_on_its_dependents(&js, |js, x| {
                let direct = js.schedule_after(&[x], || {});
                let a = js.schedule_after(&[direct], || {});
                let end = js.schedule_after(&[a], || {});
                vec![direct, end]
            });
            assert_eq!(out, vec!["Err(WaitOnSelf)"; 2], "workers {workers}");
        });
    }
}

/// Another thread already waits on the end of the chain (and so marked it)
/// when the first job of the chain waits on that end too.
#[test]
fn wait_on_self_is_detected_while_another_thread_waits_on_the_same_chain() {
    watchdog(20, || {
        let js = JobSystem::builder().workers(1).build().unwrap();
        let out = x_waits_on_its_dependents(&js, |js, x| {
            let a = js.schedule_after(&[x], || {});
            let b = js.schedule_after(&[a], || {});
            let end = js.schedule_after(&[b], || {});
            let js2 = js.clone();
            std::thread::spawn(move || js2.complete(end));
            // Only to create the situation: the other waiter walks the
            // chain before x starts waiting.
            std::thread::sleep(std::time::Duration::from_millis(100));
            vec![end]
        });
        assert_eq!(out, vec!["Err(WaitOnSelf)"]);
    });
}

/// A piece of a parallel_for waiting on its own loop.
#[test]
fn a_loop_piece_waiting_on_its_own_loop_gets_wait_on_self() {
    for workers in WORKER_COUNTS {
        watchdog(30, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let me: Arc<OnceLock<JobHandle>> = Arc::new(OnceLock::new());
            let out = Arc::new(Mutex::new(Vec::<String>::new()));
            let (go_tx, go_rx) = mpsc::channel::<()>();
            let go_rx = Mutex::new(go_rx);
            let (js2, me2, out2) = (js.clone(), me.clone(), out.clone());
            let h = js.parallel_for(0..8, Batch::Fixed(1), move |i| {
                if i == 3 {
                    go_rx.lock().unwrap().recv().unwrap();
                    let r = js2.try_complete(*me2.get().unwrap());
                    out2.lock().unwrap().push(format!("{r:?}"));
                }
            });
            me.set(h).unwrap();
            go_tx.send(()).unwrap();
            js.complete(h);
            assert_eq!(*out.lock().unwrap(), vec!["Err(WaitOnSelf)".to_string()]);
        });
    }
}

/// A piece of a parallel_for waiting on a job that depends on its loop.
#[test]
fn a_loop_piece_waiting_on_a_dependent_of_its_loop_gets_wait_on_self() {
    for workers in WORKER_COUNTS {
        watchdog(20, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let dep: Arc<OnceLock<JobHandle>> = Arc::new(OnceLock::new());
            let out = Arc::new(Mutex::new(Vec::<String>::new()));
            let (go_tx, go_rx) = mpsc::channel::<()>();
            let go_rx = Mutex::new(go_rx);
            let (js2, dep2, out2) = (js.clone(), dep.clone(), out.clone());
            let h = js.parallel_for(0..4, Batch::Fixed(1), move |i| {
                if i == 0 {
                    go_rx.lock().unwrap().recv().unwrap();
                    let r = js2.try_complete(*dep2.get().unwrap());
                    out2.lock().unwrap().push(format!("{r:?}"));
                }
            });
            let after = js.schedule_after(&[h], || {});
            dep.set(after).unwrap();
            go_tx.send(()).unwrap();
            js.complete(h);
            js.complete(after);
            assert_eq!(*out.lock().unwrap(), vec!["Err(WaitOnSelf)".to_string()]);
        });
    }
}

#[test]
fn empty_combine_and_empty_loops_complete_at_once() {
    // No workers and nobody waiting: nothing could run a job, so anything
    // that reads complete here completed at creation.
    let js = JobSystem::builder().workers(0).build().unwrap();
    let c = js.combine(&[]);
    assert!(js.is_complete(c));
    let called = Arc::new(AtomicUsize::new(0));
    let c1 = called.clone();
    let p = js.parallel_for(5..5, Batch::Auto, move |_| {
        c1.fetch_add(1, SeqCst);
    });
    assert!(js.is_complete(p));
    let c2 = called.clone();
    let q = js
        .job()
        .parallel_for_chunked(0..0, Batch::Fixed(3), move |_| {
            c2.fetch_add(1, SeqCst);
        });
    assert!(js.is_complete(q));
    #[allow(clippy::reversed_empty_ranges)]
    let r = js.parallel_for(10..3, Batch::Fixed(1), |_| panic!("never called"));
    assert!(js.is_complete(r));
    for h in [c, p, q, r] {
        js.try_complete(h).unwrap();
    }
    assert_eq!(called.load(SeqCst), 0);
    // An empty loop after deps completes when they do, not before.
    let gate = js.schedule(|| {});
    let e = js
        .job()
        .after(&[gate])
        .parallel_for(0..0, Batch::Auto, |_| {});
    assert!(!js.is_complete(e));
    js.complete(e);
    assert!(js.is_complete(gate));
    // Empty combine as a dependency.
    let d = js.schedule_after(&[c], || {});
    js.complete(d);
}

/// With no workers, nothing runs until someone waits: is_complete never
/// blocks and never runs work.
#[test]
fn is_complete_does_not_run_or_block() {
    let js = JobSystem::builder().workers(0).build().unwrap();
    let ran = Arc::new(AtomicBool::new(false));
    let r = ran.clone();
    let h = js.schedule(move || r.store(true, SeqCst));
    for _ in 0..1000 {
        assert!(!js.is_complete(h));
    }
    assert!(!ran.load(SeqCst));
    js.complete(h);
    assert!(ran.load(SeqCst));
    assert!(js.is_complete(h));
}

/// Once a job that depends on `a` has completed, `a` itself must read
/// complete: a dependent never finishes before its dependency (also as seen
/// through the handles).
#[test]
fn a_dependency_reads_complete_once_a_dependent_has_completed() {
    watchdog(60, || {
        let js = JobSystem::builder().workers(1).build().unwrap();
        let mut not_complete = 0;
        for _ in 0..2000 {
            let started = Arc::new(AtomicBool::new(false));
            let s2 = started.clone();
            let a = js.schedule(move || {
                s2.store(true, SeqCst);
                for _ in 0..200 {
                    std::hint::spin_loop();
                }
            });
            // Many dependents: releasing them takes the finishing thread a
            // while, and the last one scheduled is released first.
            for _ in 0..50 {
                js.schedule_after(&[a], || {});
            }
            let b = js.schedule_after(&[a], || {});
            // Let the worker take `a` (only to create the situation).
            while !started.load(SeqCst) {
                std::hint::spin_loop();
            }
            js.complete(b);
            if !js.is_complete(a) {
                not_complete += 1;
            }
            js.complete(a);
        }
        assert_eq!(
            not_complete, 0,
            "a dependency read incomplete after its dependent completed"
        );
    });
}

/// A job's wait that fails with WaitOnSelf still marks (and offers) every
/// other job its target needs: a later wait from outside any job stops at
/// nodes already marked (wait/mod.rs, `mark_needed`), so with no workers at all
/// an unmarked runnable dependency below a marked node would never run.
#[test]
fn a_failed_wait_on_self_leaves_the_rest_of_the_graph_runnable_for_later_waits() {
    for d_first in [true, false] {
        watchdog(20, move || {
            let js = JobSystem::builder().workers(0).build().unwrap();
            let target: Arc<OnceLock<JobHandle>> = Arc::new(OnceLock::new());
            let ran_d = Arc::new(AtomicBool::new(false));
            let out = Arc::new(Mutex::new(Vec::new()));
            let d = {
                let ran_d = ran_d.clone();
                js.schedule(move || ran_d.store(true, SeqCst))
            };
            let a = {
                let (js2, target, out) = (js.clone(), target.clone(), out.clone());
                js.schedule(move || {
                    let b = *target.get().expect("b is set before anyone waits");
                    let r = js2.try_complete(b);
                    out.lock().unwrap().push(format!("{r:?}"));
                })
            };
            let deps = if d_first { [d, a] } else { [a, d] };
            let b = js.schedule_after(&deps, || {});
            target.set(b).unwrap();
            let c = js.schedule_after(&[b], || {});
            // a runs on this thread (its own wait fails), then c's wait
            // needs d, which only a's walk reached.
            js.try_complete(a).unwrap();
            assert_eq!(*out.lock().unwrap(), vec!["Err(WaitOnSelf)".to_string()]);
            js.try_complete(c).unwrap();
            assert!(ran_d.load(SeqCst), "d_first {d_first}");
        });
    }
}
