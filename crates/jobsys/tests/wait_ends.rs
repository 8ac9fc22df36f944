//! Every path that ends a wait keeps the job lifecycle's invariant: a wait
//! ends only when the job's closure has run or been dropped, and every
//! closure is dropped exactly once. One test per defect found when jobsys
//! was attacked adversarially (docs/testing.md, "Bad input"); each failed
//! (crash, hang, wrong count or wrong error) on e8bdd26. They also run
//! under AddressSanitizer (`scripts/asan.sh`).

mod common;

use common::{panic_message, watchdog};
use jobsys::{Batch, JobError, JobHandle, JobSystem};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};

fn system(workers: usize) -> JobSystem {
    JobSystem::builder().workers(workers).build().unwrap()
}

/// Writes through a borrow of its scope's stack when dropped.
struct Touch<'a>(&'a mut u64, Arc<AtomicBool>);
impl Drop for Touch<'_> {
    fn drop(&mut self) {
        *self.0 += 1;
        self.1.store(true, Ordering::SeqCst);
    }
}

/// Schedule `body(a)` as job `a`, which learns its own handle first.
fn job_knowing_its_handle(
    js: &JobSystem,
    body: impl FnOnce(JobHandle) + Send + 'static,
) -> JobHandle {
    let me: Arc<OnceLock<JobHandle>> = Arc::new(OnceLock::new());
    let (tx, rx) = mpsc::channel::<()>();
    let me2 = me.clone();
    let a = js.schedule(move || {
        rx.recv().unwrap();
        body(*me2.get().unwrap());
    });
    me.set(a).unwrap();
    tx.send(()).unwrap();
    a
}

/// Defect 1 (UB on e8bdd26: SIGSEGV, ASan stack-use-after-return): a scope
/// inside job A schedules a job after A itself. That job can never start
/// while the scope waits; the scope used to return with the job alive
/// (its closure borrowing A's dead frame). Now the job is cancelled — its
/// closure dropped before the scope panics — and never runs.
#[test]
fn a_scope_never_returns_while_its_job_waits_on_the_scopes_own_job() {
    for workers in [0, 1, 2] {
        watchdog(30, move || {
            let js = system(workers);
            let flag = Arc::new(AtomicBool::new(false));
            let (js2, f2) = (js.clone(), flag.clone());
            let a = job_knowing_its_handle(&js, move |a| {
                let mut v = 0u64;
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    js2.scope(|s| {
                        let t = Touch(&mut v, f2.clone());
                        s.schedule_after(&[a], move || {
                            let _t = &t;
                            panic!("a cancelled scope job ran");
                        });
                    })
                }));
                let msg = panic_message(&*r.expect_err("the scope reports the cycle"));
                assert!(msg.contains("waited on itself"), "{msg}");
                assert!(f2.load(Ordering::SeqCst), "dropped before the scope ended");
                assert_eq!(v, 1, "the closure's Drop ran exactly once");
            });
            js.try_complete(a).expect("A caught the scope's panic");
            assert!(flag.load(Ordering::SeqCst));
        });
    }
}

/// Defect 1, ring variant: A's scope waits on its job S while S waits on
/// A. Whichever thread parks last, S's wait is the one that ends
/// (`WaitOnSelf`); the scope waits for S and returns normally.
#[test]
fn a_scope_in_a_wait_ring_ends_the_other_wait_not_its_own() {
    for workers in [0, 1, 2] {
        watchdog(60, move || {
            for _ in 0..20 {
                let js = system(workers);
                let js2 = js.clone();
                let a = job_knowing_its_handle(&js, move |a| {
                    let data = vec![7u64; 16];
                    let mut got = None;
                    js2.scope(|s| {
                        let (js3, d, g) = (js2.clone(), &data, &mut got);
                        s.schedule(move || {
                            *g = Some(format!("{:?}", js3.try_complete(a)));
                            assert_eq!(d[3], 7, "A's frame is alive");
                        });
                    });
                    assert_eq!(got.as_deref(), Some("Err(WaitOnSelf)"));
                });
                js.try_complete(a).unwrap();
            }
        });
    }
}

/// Defect 1, ring variant with `complete`: the scoped job panics with the
/// cycle; the scope re-raises it only after the job ended.
#[test]
fn a_scope_in_a_wait_ring_reraises_its_jobs_panic_after_the_job_ended() {
    for workers in [0, 2] {
        watchdog(30, move || {
            let js = system(workers);
            let js2 = js.clone();
            let a = job_knowing_its_handle(&js, move |a| {
                let ended = AtomicBool::new(false);
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    js2.scope(|s| {
                        let (js3, e) = (js2.clone(), &ended);
                        s.schedule(move || {
                            struct End<'a>(&'a AtomicBool);
                            impl Drop for End<'_> {
                                fn drop(&mut self) {
                                    self.0.store(true, Ordering::SeqCst);
                                }
                            }
                            let _end = End(e);
                            js3.complete(a);
                        });
                    })
                }));
                let msg = panic_message(&*r.expect_err("re-raised"));
                assert!(msg.contains("waited on itself"), "{msg}");
                assert!(ended.load(Ordering::SeqCst));
            });
            js.try_complete(a).unwrap();
        });
    }
}

/// Uses the system it holds from its destructor.
struct LateUser(Option<(JobSystem, Arc<AtomicU64>)>);
impl Drop for LateUser {
    fn drop(&mut self) {
        if let Some((js, c)) = self.0.take() {
            work(&js, &c);
        }
    }
}
thread_local! {
    /// Set first in each thread, so its destructor is registered before
    /// jobsys's own thread-locals' and runs after they were destroyed.
    static LATE_USER: std::cell::RefCell<LateUser> =
        const { std::cell::RefCell::new(LateUser(None)) };
}

fn work(js: &JobSystem, c: &Arc<AtomicU64>) {
    let hs: Vec<_> = (0..2000)
        .map(|_| {
            let c = c.clone();
            js.schedule(move || {
                c.fetch_add(1, Ordering::Relaxed);
            })
        })
        .collect();
    for h in hs {
        if let Err(e) = js.try_complete(h) {
            eprintln!("a wait in thread-local teardown failed: {e}");
            std::process::abort();
        }
    }
}

/// Defect 2 (9 of 12 runs aborted with a spurious "a job waited on
/// itself", 2 lost jobs, an ASan SEGV on e8bdd26): a thread-local whose
/// destructor schedules and completes jobs after jobsys's own thread-local
/// released the thread's context. Every job runs exactly once.
#[test]
fn thread_local_destructors_that_use_the_system_lose_nothing() {
    watchdog(120, || {
        let js = system(2);
        let c = Arc::new(AtomicU64::new(0));
        let rounds = if cfg!(debug_assertions) { 10 } else { 50 };
        for _ in 0..rounds {
            let ts: Vec<_> = (0..8)
                .map(|_| {
                    let (js, c) = (js.clone(), c.clone());
                    std::thread::spawn(move || {
                        LATE_USER.with(|l| l.borrow_mut().0 = Some((js.clone(), c.clone())));
                        work(&js, &c);
                    })
                })
                .collect();
            for t in ts {
                t.join().unwrap();
            }
        }
        drop(js);
        assert_eq!(c.load(Ordering::Relaxed), rounds * 8 * 4000);
    });
}

/// Records what a wait on `handle` (set later) returned when dropped.
struct WaitOnDrop {
    js: JobSystem,
    handle: Arc<OnceLock<JobHandle>>,
    got: Arc<Mutex<Vec<String>>>,
    drops: Arc<AtomicUsize>,
}
impl Drop for WaitOnDrop {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
        if let Some(&h) = self.handle.get() {
            let r = self.js.try_complete(h);
            self.got.lock().unwrap().push(format!("{r:?}"));
        }
    }
}

type Probe = (
    Arc<OnceLock<JobHandle>>,
    Arc<Mutex<Vec<String>>>,
    Arc<AtomicUsize>,
);

fn probe(js: &JobSystem) -> (WaitOnDrop, Probe) {
    let p: Probe = Default::default();
    (
        WaitOnDrop {
            js: js.clone(),
            handle: p.0.clone(),
            got: p.1.clone(),
            drops: p.2.clone(),
        },
        p,
    )
}

/// Defect 3 (hang on e8bdd26): a job skipped because its dependency
/// panicked has its closure dropped; a `Drop` that waits on the job's own
/// handle now gets `WaitOnSelf` (the drop is part of the job).
#[test]
fn a_skipped_jobs_drop_waiting_on_itself_gets_wait_on_self() {
    for workers in [0, 2] {
        watchdog(30, move || {
            let js = system(workers);
            let (gate_tx, gate_rx) = mpsc::channel::<()>();
            let bad = js.schedule(move || {
                gate_rx.recv().unwrap();
                panic!("expected test panic");
            });
            let (guard, (h, got, drops)) = probe(&js);
            let d = js.schedule_after(&[bad], move || {
                let _g = &guard;
                unreachable!("skipped");
            });
            h.set(d).unwrap();
            gate_tx.send(()).unwrap();
            match js.try_complete(d) {
                Err(JobError::Panicked(p)) => assert!(p.via_dependency()),
                other => panic!("unexpected {other:?}"),
            }
            assert_eq!(*got.lock().unwrap(), vec!["Err(WaitOnSelf)"]);
            assert_eq!(drops.load(Ordering::SeqCst), 1);
        });
    }
}

/// Defect 3 for parallel_for (hang on e8bdd26): its closure is dropped
/// after the last piece, or unrun when a dependency failed; a `Drop` that
/// waits on the loop's own handle gets `WaitOnSelf` either way.
#[test]
fn a_parallel_for_closures_drop_waiting_on_its_loop_gets_wait_on_self() {
    for workers in [0, 2] {
        for skipped in [false, true] {
            watchdog(30, move || {
                let js = system(workers);
                let (gate_tx, gate_rx) = mpsc::channel::<()>();
                let dep = js.schedule(move || {
                    gate_rx.recv().unwrap();
                    if skipped {
                        panic!("expected test panic");
                    }
                });
                let (guard, (h, got, drops)) = probe(&js);
                let ran = Arc::new(AtomicUsize::new(0));
                let r2 = ran.clone();
                let p = js.parallel_for_after(&[dep], 0..64, Batch::Fixed(4), move |_| {
                    let _g = &guard;
                    r2.fetch_add(1, Ordering::Relaxed);
                });
                h.set(p).unwrap();
                gate_tx.send(()).unwrap();
                let r = js.try_complete(p);
                assert_eq!(r.is_err(), skipped, "{r:?}");
                assert_eq!(ran.load(Ordering::Relaxed), if skipped { 0 } else { 64 });
                assert_eq!(*got.lock().unwrap(), vec!["Err(WaitOnSelf)"]);
                assert_eq!(drops.load(Ordering::SeqCst), 1, "dropped exactly once");
            });
        }
    }
}

/// Defect 4 (`Ok(())` on e8bdd26): a panic in a parallel_for closure's
/// `Drop` is reported like a panic of the closure, as through `schedule`,
/// and a job after it is skipped.
#[test]
fn a_panic_in_a_parallel_for_closures_drop_fails_the_loop() {
    struct PanicOnDrop;
    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            panic!("expected test panic in drop");
        }
    }
    for workers in [0, 2] {
        watchdog(30, move || {
            let js = system(workers);
            let g = PanicOnDrop;
            let p = js.parallel_for(0..100, Batch::Auto, move |_| {
                let _g = &g;
            });
            let after = js.schedule_after(&[p], || unreachable!("skipped"));
            match js.try_complete(p) {
                Err(JobError::Panicked(e)) => {
                    assert_eq!(e.message(), "expected test panic in drop");
                    assert!(!e.via_dependency());
                }
                other => panic!("unexpected {other:?}"),
            }
            match js.try_complete(after) {
                Err(JobError::Panicked(e)) => assert!(e.via_dependency()),
                other => panic!("unexpected {other:?}"),
            }
            // The same closure through `schedule` fails the same way.
            let g = PanicOnDrop;
            let s = js.schedule(move || {
                let _g = &g;
            });
            match js.try_complete(s) {
                Err(JobError::Panicked(e)) => {
                    assert_eq!(e.message(), "expected test panic in drop")
                }
                other => panic!("unexpected {other:?}"),
            }
        });
    }
}

/// Counts drops of the closure that owns it.
struct CountDrop(Arc<AtomicUsize>);
impl Drop for CountDrop {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Every closure is dropped exactly once, on every path: run, skipped,
/// parallel_for run and skipped, and cancelled by a scope.
#[test]
fn every_closure_is_dropped_exactly_once_on_every_path() {
    for workers in [0, 2] {
        watchdog(30, move || {
            let js = system(workers);
            let n = Arc::new(AtomicUsize::new(0));
            let c = CountDrop(n.clone());
            js.complete(js.schedule(move || {
                let _c = &c;
            }));
            assert_eq!(n.swap(0, Ordering::SeqCst), 1, "run");

            let bad = js.schedule(|| panic!("expected test panic"));
            let c = CountDrop(n.clone());
            let d = js.schedule_after(&[bad], move || {
                let _c = &c;
            });
            assert!(js.try_complete(d).is_err());
            assert_eq!(n.swap(0, Ordering::SeqCst), 1, "skipped");

            let c = CountDrop(n.clone());
            js.complete(js.parallel_for(0..50, Batch::Fixed(3), move |_| {
                let _c = &c;
            }));
            assert_eq!(n.swap(0, Ordering::SeqCst), 1, "parallel_for");

            let c = CountDrop(n.clone());
            let p = js.parallel_for_after(&[bad], 0..50, Batch::Fixed(3), move |_| {
                let _c = &c;
            });
            assert!(js.try_complete(p).is_err());
            assert_eq!(n.swap(0, Ordering::SeqCst), 1, "parallel_for skipped");

            let (js2, n2) = (js.clone(), n.clone());
            let a = job_knowing_its_handle(&js, move |a| {
                let c = CountDrop(n2.clone());
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    js2.scope(|s| {
                        s.schedule_after(&[a], move || {
                            let _c = &c;
                        });
                    })
                }));
                assert!(r.is_err());
                assert_eq!(
                    n2.load(Ordering::SeqCst),
                    1,
                    "cancelled, before the scope ended"
                );
            });
            js.try_complete(a).unwrap();
            drop(js);
            assert_eq!(
                n.load(Ordering::SeqCst),
                1,
                "cancelled: never dropped again"
            );
        });
    }
}
