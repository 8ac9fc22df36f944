//! Attacks on the features wait_and_drop_races.rs leaves alone: declared
//! access guards (`read_now` / `write_now`) used in odd ways, `join`,
//! `parallel_for` edge cases and batched scheduling.
//!
//! The promises under attack: no UB from safe code; every job runs exactly
//! once or is reported failed/cancelled; a wait never ends before its
//! job's closure ran; a self-deadlock is a clear error, never a hang;
//! dropping the last `JobSystem` clone runs every scheduled job before it
//! returns (`JobSystem` docs) unless a job of the system dropped it.
//! Interleavings are forced with channels and gates; anything that could
//! hang runs under `common::watchdog`.
//!
//! Tests whose doc comment tells of a bug found it (2026-11-25): each
//! failed on the code of that day and passes since its fix.

mod common;

use common::{expect_panic, panic_message, watchdog, Gate};
use jobsys::{Batch, JobError, JobSystem, ReadNow, Resource, WriteNow};
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::thread;

const SECS: u64 = 60;

fn system(workers: usize) -> JobSystem {
    JobSystem::builder().workers(workers).build().unwrap()
}

/// A `'static` resource (leaked: a guard kept in a thread-local needs one).
fn leaked<T: Send + Sync + 'static>(v: T) -> &'static Resource<T> {
    Box::leak(Box::new(Resource::new(v)))
}

thread_local! {
    /// Where a job parks a guard past its own end (safe code can).
    static KEPT_READ: RefCell<Option<ReadNow<'static, u32>>> = const { RefCell::new(None) };
    static KEPT_WRITE: RefCell<Option<WriteNow<'static, u32>>> = const { RefCell::new(None) };
}

// ---- declared access: guards ------------------------------------------------

/// Before its fix (2026-11-25): a `read_now` guard kept past the job that made it (in a
/// thread-local: safe code, with a leaked `Resource`) corrupts the thread's
/// `running` stack. The job pushed itself, the guard pushed its event on
/// top; when the job returns, `run_claimed` (lifecycle.rs, `running_pop`)
/// pops the *top* entry, the guard's event, and the finished job stays on
/// the stack for good. From then on `Context::inside_job` reads true on a
/// thread that is inside no job, so `Owner::drop` (system.rs, the
/// `on_own_worker || me.inside_job()` branch) takes the "dropped inside one
/// of its own jobs" path: with `workers(0)` it hands the queued jobs to a
/// `jobsys-drain` thread and returns at once, instead of running them on
/// the dropping thread before it returns as the `JobSystem` docs promise.
/// (docs/access.md "Limits" says only that wait-on-self detection may see a
/// cycle that is not there.)
#[test]
fn a_guard_kept_past_its_job_does_not_stop_the_last_drop_from_draining() {
    watchdog(SECS, || {
        let js = system(0);
        let res = leaked(7u32);
        let js2 = js.clone();
        let keep = js.schedule(move || {
            let g = res.read_now(&js2);
            KEPT_READ.with(|k| *k.borrow_mut() = Some(g));
        });
        // workers(0): this thread runs the job.
        js.complete(keep);
        // The guard ends here, on the thread that made it.
        let g = KEPT_READ
            .with(|k| k.borrow_mut().take())
            .expect("job kept its guard");
        assert_eq!(*g, 7);
        drop(g);
        // A queued job, then the last clone: the drop must run it here.
        let (tx, rx) = mpsc::channel();
        js.schedule(move || {
            let name = thread::current().name().unwrap_or("").to_string();
            let _ = tx.send(name);
        });
        let me = thread::current().name().unwrap_or("").to_string();
        drop(js);
        let ran_on = rx
            .try_recv()
            .expect("the last drop returned before the queued job ran");
        assert_eq!(ran_on, me, "the queued job ran on another thread");
    });
}

/// Before its fix (2026-11-25): a `write_now` guard kept past its job (thread-local, as above)
/// has its event popped off the `running` stack when the job returns (see
/// the test above), so the thread that holds the guard no longer counts as
/// inside it. A `complete` there of a later job that reads the resource
/// (and so waits for the guard) parks for ever instead of reporting
/// `WaitOnSelf`, which the same wait reports when the guard was made
/// outside a job (access.rs,
/// `jobs_scheduled_while_a_write_now_guard_lives_wait_for_its_drop`).
#[test]
fn waiting_on_a_guard_kept_past_its_job_is_wait_on_self_not_a_hang() {
    watchdog(20, || {
        let js = system(0);
        let res = leaked(1u32);
        let js2 = js.clone();
        let keep = js.schedule(move || {
            let g = res.write_now(&js2);
            KEPT_WRITE.with(|k| *k.borrow_mut() = Some(g));
        });
        js.complete(keep);
        assert!(KEPT_WRITE.with(|k| k.borrow().is_some()));
        // This thread holds the write guard; the reader waits for its drop.
        let reader = js.job().access(res.read()).schedule(|v| assert_eq!(*v, 1));
        let r = js.try_complete(reader);
        assert!(matches!(r, Err(JobError::WaitOnSelf)), "{r:?}");
        drop(KEPT_WRITE.with(|k| k.borrow_mut().take()));
        js.complete(reader);
    });
}

/// Guards of two resources dropped in the order they were made (not
/// reversed), with a job scheduled between that declares both: it runs
/// only after both drops, sees both writes, and the thread's later waits
/// are not mistaken for waits on itself.
#[test]
fn guards_dropped_out_of_order_release_their_jobs() {
    for workers in [0, 1, 3] {
        watchdog(SECS, move || {
            let js = system(workers);
            let a = Resource::named("a", 0u32);
            let b = Resource::named("b", 0u32);
            let mut ga = a.write_now(&js);
            let mut gb = b.write_now(&js);
            *ga = 1;
            *gb = 2;
            let both = js.job().access((a.read(), b.read())).schedule(|(a, b)| {
                assert_eq!((*a, *b), (1, 2));
            });
            // Not reversed: `a` first.
            drop(ga);
            assert!(!js.is_complete(both), "ran before the second guard dropped");
            drop(gb);
            js.complete(both);
            // A later wait on a fresh job is not a wait on a stale guard.
            let w = js.job().access(a.write()).schedule(|a| *a += 1);
            js.try_complete(w).expect("the job runs");
            assert_eq!(*a.read_now(&js), 2);
        });
    }
}

/// A `write_now` then a `read_now` of the same resource on one thread
/// cannot ever end (the reader waits for the writer's guard): a clear
/// panic, and the first guard and the resource still work afterwards.
/// The same inside a job on a worker.
#[test]
fn nested_guards_on_one_resource_are_a_clear_error() {
    for workers in [0, 2] {
        watchdog(SECS, move || {
            let js = system(workers);
            let r = Arc::new(Resource::named("nested", 5u32));
            let mut w = r.write_now(&js);
            let msg = expect_panic(|| r.read_now(&js));
            assert!(msg.contains("would wait forever"), "{msg}");
            let msg = expect_panic(|| r.write_now(&js));
            assert!(msg.contains("would wait forever"), "{msg}");
            *w += 1;
            drop(w);
            assert_eq!(*r.read_now(&js), 6);
            // Two readers on one thread do not conflict.
            let r1 = r.read_now(&js);
            let r2 = r.read_now(&js);
            assert_eq!(*r1 + *r2, 12);
            drop((r1, r2));
            // Inside a job.
            let (r2, js2) = (r.clone(), js.clone());
            let h = js.schedule(move || {
                let _w = r2.write_now(&js2);
                let msg = expect_panic(|| r2.read_now(&js2));
                assert!(msg.contains("would wait forever"), "{msg}");
            });
            js.try_complete(h).expect("the job runs");
            assert_eq!(*r.read_now(&js), 6);
        });
    }
}

/// A job that holds a `write_now` guard and panics: the unwind drops the
/// guard, the jobs waiting for it run, and nothing is poisoned (the guard
/// is not a declared writer job).
#[test]
fn a_job_panicking_while_it_holds_a_guard_releases_it() {
    for workers in [0, 1, 3] {
        watchdog(SECS, move || {
            let js = system(workers);
            let r = Arc::new(Resource::named("held", 0u32));
            let (r2, js2) = (r.clone(), js.clone());
            let (holding_tx, holding_rx) = mpsc::channel::<()>();
            let go = Arc::new(Gate::default());
            let go2 = go.clone();
            let h = js.schedule(move || {
                let mut g = r2.write_now(&js2);
                *g = 9;
                let _ = holding_tx.send(());
                if workers > 0 {
                    go2.wait();
                }
                panic!("holder panics");
            });
            let later = if workers > 0 {
                holding_rx.recv().unwrap();
                // Scheduled while the guard lives: it waits for the drop.
                let later = js.job().access(r.read()).schedule(|v| assert_eq!(*v, 9));
                assert!(!js.is_complete(later));
                go.open();
                later
            } else {
                // workers(0): the holder runs in this `try_complete`.
                let e = js.try_complete(h).unwrap_err();
                assert!(e.to_string().contains("holder panics"), "{e}");
                js.job().access(r.read()).schedule(|v| assert_eq!(*v, 9))
            };
            let e = js.try_complete(h).unwrap_err();
            assert!(e.to_string().contains("holder panics"), "{e}");
            js.try_complete(later).expect("the job runs");
            assert!(!r.is_poisoned());
            assert_eq!(*r.write_now(&js), 9);
        });
    }
}

// ---- parallel_for ----------------------------------------------------------

/// Before its fix (2026-11-25): a loop of more than `usize::MAX / 2` pieces (`0..usize::MAX` with
/// `Batch::Fixed(1)`: valid input) in which two threads' pieces panic
/// panics *inside jobsys* in a debug build. parallel_for.rs marks a failed
/// loop by swapping `next` to `ABANDONED` (`usize::MAX / 2`) and counts the
/// pieces from the old `next` to `pieces` as done. Here `ABANDONED` is
/// below `pieces`, so every later swap (the second panicking piece's, and
/// the `has_failure` branch each thread reaches on its next turn of the
/// loop) reads `ABANDONED` back as a real position and counts
/// `pieces - ABANDONED` (2^63) again. `done.fetch_add(n) + n`
/// (parallel_for.rs:262, and :313) then overflows: in a debug build that is
/// an arithmetic-overflow panic outside any job, either on the worker (the
/// thread dies holding its pin; a job pinned to it never runs, so this
/// test hangs there) or on the thread in `complete` (the unwind panics
/// again in a destructor and the process aborts; seen both). In a release
/// build the extra 2^63s happen to come in pairs and cancel modulo 2^64,
/// so it passes there; the count is still wrong by construction. Forced:
/// the thread with the first chunk waits until the other thread is inside
/// its own chunk; then both panic.
#[test]
fn a_huge_loop_with_two_panicking_pieces_finishes_failed() {
    watchdog(20, || {
        let js = system(1);
        let (a_tx, a_rx) = mpsc::sync_channel::<()>(1);
        let (b_tx, b_rx) = mpsc::sync_channel::<()>(1);
        let a_rx = std::sync::Mutex::new(a_rx);
        let b_rx = std::sync::Mutex::new(b_rx);
        let h = js
            .job()
            .parallel_for_chunked(0..usize::MAX, Batch::Fixed(1), move |r| {
                if r.start == 0 {
                    // The first chunk: wait for the other thread's chunk.
                    b_rx.lock().unwrap().recv().unwrap();
                    let _ = a_tx.send(());
                    panic!("piece A");
                } else {
                    let _ = b_tx.send(());
                    a_rx.lock().unwrap().recv().unwrap();
                    panic!("piece B at {}", r.start);
                }
            });
        let e = js.try_complete(h).unwrap_err();
        assert!(matches!(e, JobError::Panicked(_)), "{e:?}");
        // The worker is still there (a debug build's overflow panic in
        // `run_pieces` killed it, and this pinned job then waited for ever).
        let on_worker = js.job().pin(jobsys::Pin::Worker(1)).schedule(|| {});
        js.try_complete(on_worker)
            .expect("the worker runs its pinned job");
    });
}

/// Edge inputs that must work at once: empty ranges (at 0 and at
/// `usize::MAX`), a batch larger than the range, `Batch::Fixed(usize::MAX)`
/// on ranges that end at `usize::MAX`, and a one-index range at the very
/// top. Every index runs exactly once.
#[test]
fn loop_edge_ranges_and_batches_cover_each_index_once() {
    for workers in [0, 2] {
        watchdog(SECS, move || {
            let js = system(workers);
            let m = usize::MAX;
            let cases = [
                (0..0, Batch::Fixed(1)),
                (m..m, Batch::Auto),
                (m - 1..m, Batch::Fixed(m)),
                (m - 100..m, Batch::Fixed(m)),
                (m - 100..m, Batch::Fixed(m / 2)),
                (m - 100..m, Batch::Fixed(7)),
                (m - 100..m, Batch::Auto),
                (5..6, Batch::Fixed(1000)),
            ];
            for (range, batch) in cases {
                let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
                let s2 = seen.clone();
                let h = js.parallel_for(range.clone(), batch, move |i| s2.lock().unwrap().push(i));
                js.complete(h);
                let mut v = seen.lock().unwrap().clone();
                v.sort_unstable();
                assert_eq!(v, range.clone().collect::<Vec<_>>(), "{range:?} {batch:?}");
                let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
                let s2 = seen.clone();
                let h = js
                    .job()
                    .parallel_for_chunked(range.clone(), batch, move |r| {
                        assert!(r.start < r.end, "an empty chunk {r:?}");
                        s2.lock().unwrap().extend(r)
                    });
                js.complete(h);
                let mut v = seen.lock().unwrap().clone();
                v.sort_unstable();
                assert_eq!(v, range.clone().collect::<Vec<_>>(), "{range:?} {batch:?}");
            }
        });
    }
}

/// A piece that waits on its own loop's handle cannot ever be answered:
/// `WaitOnSelf`, on whichever thread runs the piece, and the loop still
/// finishes with every index run once.
#[test]
fn a_piece_waiting_on_its_own_loop_is_wait_on_self() {
    for workers in [0, 1, 3] {
        watchdog(SECS, move || {
            let js = system(workers);
            let me = Arc::new(std::sync::OnceLock::new());
            let (me2, js2) = (me.clone(), js.clone());
            let ran = Arc::new(AtomicUsize::new(0));
            let self_waits = Arc::new(AtomicUsize::new(0));
            let (r2, w2) = (ran.clone(), self_waits.clone());
            let gate = Arc::new(Gate::default());
            let g2 = gate.clone();
            let h = js.parallel_for(0..64, Batch::Fixed(1), move |_| {
                g2.wait();
                let h: &jobsys::JobHandle = me2.get().expect("handle set before the gate");
                if matches!(js2.try_complete(*h), Err(JobError::WaitOnSelf)) {
                    w2.fetch_add(1, SeqCst);
                }
                r2.fetch_add(1, SeqCst);
            });
            me.set(h).unwrap();
            gate.open();
            js.complete(h);
            assert_eq!(ran.load(SeqCst), 64);
            assert_eq!(self_waits.load(SeqCst), 64);
        });
    }
}

/// The library side of capi_misuse.rs's
/// `destroy_with_a_job_pinned_to_an_idle_registered_thread_returns`: a
/// job pinned to a registered thread that is alive but never calls in
/// again is cancelled when the last clone is dropped elsewhere; the drop
/// returns and the closure is dropped unrun.
#[test]
fn shutdown_cancels_a_job_pinned_to_an_idle_registered_thread() {
    watchdog(SECS, || {
        let js = system(1);
        let (idx_tx, idx_rx) = mpsc::channel();
        let (end_tx, end_rx) = mpsc::channel::<()>();
        let js2 = js.clone();
        let render = thread::spawn(move || {
            let idx = js2.register_thread();
            // Its clone goes first: the main thread's drop is the last.
            drop(js2);
            idx_tx.send(idx).unwrap();
            let _ = end_rx.recv();
        });
        let idx = idx_rx.recv().unwrap();
        let ran = Arc::new(AtomicBool::new(false));
        let dropped = Arc::new(AtomicUsize::new(0));
        let (r2, d) = (ran.clone(), common::DropCount(dropped.clone()));
        js.job().pin(jobsys::Pin::Thread(idx)).schedule(move || {
            let _d = &d;
            r2.store(true, SeqCst);
        });
        drop(js);
        assert!(!ran.load(SeqCst));
        assert_eq!(dropped.load(SeqCst), 1);
        end_tx.send(()).unwrap();
        render.join().unwrap();
    });
}

// ---- join -------------------------------------------------------------------

/// `join` on a thread that is not the system's creator, with `a` taken by
/// the worker (forced: `b` waits until `a` started elsewhere) and both
/// sides panicking: the join unwinds only after `a` finished writing the
/// joiner's frame, with one of the two payloads, on every round.
#[test]
fn join_from_an_outside_thread_with_both_sides_panicking_waits_for_a() {
    watchdog(SECS, || {
        let js = system(1);
        let outside = thread::spawn(move || {
            for round in 0..50 {
                let mut frame = 0usize;
                let ended = AtomicBool::new(false);
                let me = thread::current().id();
                let (started_tx, started_rx) = mpsc::channel();
                let gate = Gate::default();
                let r = catch_unwind(AssertUnwindSafe(|| {
                    js.join(
                        || {
                            let _ = started_tx.send(thread::current().id());
                            gate.wait();
                            for _ in 0..100 {
                                thread::yield_now();
                            }
                            frame = round + 1;
                            ended.store(true, SeqCst);
                            panic!("a panics");
                        },
                        || {
                            // `a` can only start on the worker while we
                            // are in `b`.
                            let ran_on = started_rx.recv().unwrap();
                            gate.open();
                            assert_ne!(ran_on, me, "a ran on the joiner inside b");
                            panic!("b panics");
                        },
                    )
                }));
                let msg = panic_message(&*r.unwrap_err());
                assert!(msg == "a panics" || msg == "b panics", "{msg}");
                assert!(ended.load(SeqCst), "join unwound before a finished");
                assert_eq!(frame, round + 1);
            }
            js
        });
        let js = outside.join().unwrap();
        assert_eq!(js.join(|| 1, || 2), (1, 2));
    });
}

/// `join` inside scope jobs that borrow the scope's data, with a sibling
/// scope job cancelled and another panicking: every join's halves ran
/// exactly once, the scope reports the panic, and nothing borrowed is
/// touched after the scope returns.
#[test]
fn joins_inside_a_scope_with_cancelled_and_panicking_siblings() {
    for workers in [0, 1, 3] {
        watchdog(SECS, move || {
            let js = system(workers);
            let halves = AtomicUsize::new(0);
            let hold = Gate::default();
            let r = catch_unwind(AssertUnwindSafe(|| {
                js.scope(|s| {
                    let blocker = s.schedule(|| hold.wait());
                    let victim = s.schedule_after(&[blocker], || unreachable!("cancelled"));
                    for _ in 0..8 {
                        s.schedule(|| {
                            let (x, y) = s.system().join(
                                || halves.fetch_add(1, SeqCst),
                                || halves.fetch_add(1, SeqCst),
                            );
                            assert_ne!(x, y);
                        });
                    }
                    s.schedule(|| panic!("sibling panics"));
                    assert!(s.system().cancel(victim));
                    hold.open();
                })
            }));
            assert_eq!(panic_message(&*r.unwrap_err()), "sibling panics");
            assert_eq!(halves.load(SeqCst), 16);
        });
    }
}

// ---- active workers -------------------------------------------------------

/// With 0 active workers, jobs pinned to each (benched) worker run when
/// waited on, and so do the jobs those pinned jobs schedule into their
/// benched worker's own deque, waited on from the main thread; then the
/// active count toggles on another thread while the main thread completes
/// a chain of 2000 jobs that alternate pinned and free. Every job runs
/// exactly once; nothing hangs.
#[test]
fn benched_workers_run_their_pinned_jobs_and_own_deques_while_the_count_toggles() {
    watchdog(SECS, || {
        let js = system(3);
        js.set_active_workers(0).unwrap();
        assert_eq!(js.active_workers(), 0);
        let ran = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        let mut pinned = Vec::new();
        for w in 0..3 {
            let (js2, ran2, tx) = (js.clone(), ran.clone(), tx.clone());
            pinned.push(js.job().pin(jobsys::Pin::Worker(w + 1)).schedule(move || {
                // Children land in the benched worker's own deque.
                for _ in 0..10 {
                    let r = ran2.clone();
                    tx.send(js2.schedule(move || {
                        r.fetch_add(1, SeqCst);
                    }))
                    .unwrap();
                }
            }));
        }
        drop(tx);
        for h in pinned {
            js.complete(h);
        }
        for h in rx {
            js.complete(h);
        }
        assert_eq!(ran.load(SeqCst), 30);

        let stop = Arc::new(AtomicBool::new(false));
        let (js2, stop2) = (js.clone(), stop.clone());
        let toggler = thread::spawn(move || {
            let mut n = 0;
            while !stop2.load(SeqCst) {
                js2.set_active_workers(n % 4).unwrap();
                n += 1;
                thread::yield_now();
            }
            js2.set_active_workers(0).unwrap();
        });
        let count = Arc::new(AtomicUsize::new(0));
        let mut prev = js.schedule(|| {});
        for i in 0..2000 {
            let c = count.clone();
            let body = move || {
                c.fetch_add(1, SeqCst);
            };
            prev = if i % 3 == 0 {
                js.job()
                    .pin(jobsys::Pin::Worker(i % 3 + 1))
                    .after(&[prev])
                    .schedule(body)
            } else {
                js.schedule_after(&[prev], body)
            };
        }
        js.complete(prev);
        assert_eq!(count.load(SeqCst), 2000);
        stop.store(true, SeqCst);
        toggler.join().unwrap();
        // All benched: a pinned job still runs, and a free one runs here.
        let p = js.job().pin(jobsys::Pin::Worker(3)).schedule(|| {});
        js.complete(p);
        let f = js.schedule(|| {});
        js.complete(f);
    });
}

// ---- batched scheduling ---------------------------------------------------

/// Batches never flushed: by an outside thread that exits (with 0 workers,
/// and with every worker benched), waited on from the main thread or left
/// to shutdown; and a batched job that waits on a later batched job of the
/// same unflushed batch. Each job runs exactly once, nothing hangs.
#[test]
fn unflushed_batches_of_exited_threads_and_waits_inside_batches_run_once() {
    for (workers, active) in [(0, 0), (2, 0), (2, 2)] {
        watchdog(SECS, move || {
            let js = system(workers);
            js.set_active_workers(active).unwrap();
            let ran = Arc::new(AtomicUsize::new(0));
            // Waited on by the main thread after the batching thread exited.
            let (js2, ran2) = (js.clone(), ran.clone());
            let hs = thread::spawn(move || {
                (0..50)
                    .map(|_| {
                        let r = ran2.clone();
                        js2.job().batched().schedule(move || {
                            r.fetch_add(1, SeqCst);
                        })
                    })
                    .collect::<Vec<_>>()
            })
            .join()
            .unwrap();
            for h in hs {
                js.complete(h);
            }
            assert_eq!(ran.load(SeqCst), 50);
            // A batched job that waits on a later job of the same batch.
            let later = Arc::new(std::sync::OnceLock::new());
            let (js2, later2, ran2) = (js.clone(), later.clone(), ran.clone());
            let first = js.job().batched().schedule(move || {
                // A spinning worker may steal this job before the next
                // line of the test has scheduled `later`: wait for its
                // handle (set right after, on the test's thread).
                let h = loop {
                    if let Some(&h) = later2.get() {
                        break h;
                    }
                    std::hint::spin_loop();
                };
                js2.complete(h);
                ran2.fetch_add(1, SeqCst);
            });
            let r = ran.clone();
            later
                .set(js.job().batched().schedule(move || {
                    r.fetch_add(1, SeqCst);
                }))
                .unwrap();
            js.complete(first);
            assert_eq!(ran.load(SeqCst), 52);
            // Left to shutdown: batched by a thread that exited, never
            // waited on.
            let (js2, ran2) = (js.clone(), ran.clone());
            thread::spawn(move || {
                for _ in 0..20 {
                    let r = ran2.clone();
                    js2.job().batched().schedule(move || {
                        r.fetch_add(1, SeqCst);
                    });
                }
            })
            .join()
            .unwrap();
            drop(js);
            assert_eq!(ran.load(SeqCst), 72);
        });
    }
}

/// Captures started and stopped over and over on another thread (with a
/// buffer size that changes every time, so the owners re-allocate their
/// buffers at the next event) while the workers, the main thread and
/// short-lived outside threads run jobs, loops and joins: no crash, every
/// job runs once (memory errors here are for scripts/asan.sh to see).
#[cfg(feature = "trace")]
#[test]
fn captures_toggled_while_jobs_run_and_threads_come_and_go() {
    watchdog(SECS, || {
        let js = system(3);
        let stop = Arc::new(AtomicBool::new(false));
        let (js2, stop2) = (js.clone(), stop.clone());
        let toggler = thread::spawn(move || {
            let mut n = 0usize;
            while !stop2.load(SeqCst) {
                let cap = if n % 2 == 0 { 16 } else { 4096 };
                assert!(js2.trace_start_with(jobsys::trace::TraceConfig {
                    events_per_thread: cap,
                }));
                thread::yield_now();
                let t = js2.trace_stop();
                let _ = t.dropped();
                n += 1;
            }
            n
        });
        let ran = Arc::new(AtomicUsize::new(0));
        for round in 0..40 {
            let r = ran.clone();
            let l = js.parallel_for(0..256, Batch::Fixed(4), move |_| {
                r.fetch_add(1, SeqCst);
            });
            let outs: Vec<_> = (0..2)
                .map(|_| {
                    let (js3, r) = (js.clone(), ran.clone());
                    thread::spawn(move || {
                        let hs: Vec<_> = (0..16)
                            .map(|_| {
                                let r = r.clone();
                                js3.schedule(move || {
                                    r.fetch_add(1, SeqCst);
                                })
                            })
                            .collect();
                        for h in hs {
                            js3.complete(h);
                        }
                    })
                })
                .collect();
            let (a, b) = js.join(|| round * 2, || round * 3);
            assert_eq!(a + b, round * 5);
            js.complete(l);
            for t in outs {
                t.join().unwrap();
            }
        }
        stop.store(true, SeqCst);
        assert!(toggler.join().unwrap() > 0);
        assert_eq!(ran.load(SeqCst), 40 * (256 + 32));
    });
}

/// A `read_now` waiting (or about to wait) on a writer that is then cancelled (before it
/// started) returns with the value as it was and no poison; one blocked on
/// a writer that then panics panics itself with the poison's message.
/// The blocked thread is a worker's waiter or the main thread's.
#[test]
fn read_now_blocked_on_a_writer_that_is_cancelled_or_panics() {
    for workers in [1, 3] {
        watchdog(SECS, move || {
            let js = system(workers);
            for panics in [false, true] {
                let r = Arc::new(Resource::named("blocked", 1u32));
                let gate = Arc::new(Gate::default());
                let g2 = gate.clone();
                let blocker = js.schedule(move || g2.wait());
                let writer = js
                    .job()
                    .after(&[blocker])
                    .access(r.write())
                    .schedule(move |v| {
                        *v = 2;
                        if panics {
                            panic!("writer panics");
                        }
                    });
                let (r2, js2) = (r.clone(), js.clone());
                let (tx, rx) = mpsc::channel();
                let reader = thread::spawn(move || {
                    tx.send(()).unwrap();
                    catch_unwind(AssertUnwindSafe(|| *r2.read_now(&js2)))
                        .map_err(|p| panic_message(&*p))
                });
                rx.recv().unwrap();
                if panics {
                    gate.open();
                } else {
                    // Not started: its dependency is held by the gate.
                    assert!(js.cancel(writer));
                    gate.open();
                }
                let got = reader.join().unwrap();
                if panics {
                    let msg = got.unwrap_err();
                    assert!(
                        msg.contains("poisoned") && msg.contains("writer panics"),
                        "{msg}"
                    );
                    assert!(r.is_poisoned());
                } else {
                    assert_eq!(got.unwrap(), 1);
                    assert!(!r.is_poisoned());
                    assert!(matches!(
                        js.try_complete(writer),
                        Err(JobError::Cancelled(_))
                    ));
                }
                js.complete(blocker);
            }
        });
    }
}

fn join_chain(js: &JobSystem, depth: usize) -> usize {
    if depth == 0 {
        return 0;
    }
    let (a, b) = js.join(|| join_chain(js, depth - 1), || 1);
    a + b
}

/// A chain of 1000 nested `join`s (each `a` recursing), from the main
/// thread and from inside a job on a worker, with 0 and 3 workers: no
/// stack overflow at that depth, the right sum.
#[test]
fn deep_join_recursion() {
    for workers in [0, 3] {
        watchdog(SECS, move || {
            let js = system(workers);
            assert_eq!(join_chain(&js, 1000), 1000);
            let js2 = js.clone();
            let (tx, rx) = mpsc::channel();
            let h = js.schedule(move || tx.send(join_chain(&js2, 1000)).unwrap());
            js.complete(h);
            assert_eq!(rx.recv().unwrap(), 1000);
        });
    }
}

/// A loop cancelled while two of its pieces run (held at a gate), one of
/// which then panics: the wait returns only after every started piece
/// ended and the closure was dropped (once); the error is the cancel or
/// the panic.
#[test]
fn a_loop_cancelled_while_a_piece_panics() {
    for workers in [1, 3] {
        watchdog(SECS, move || {
            let js = system(workers);
            for _ in 0..20 {
                let started = Arc::new(AtomicUsize::new(0));
                let ended = Arc::new(AtomicUsize::new(0));
                let dropped = Arc::new(AtomicUsize::new(0));
                let gate = Arc::new(Gate::default());
                let (tx, rx) = mpsc::channel::<()>();
                let tx = std::sync::Mutex::new(tx);
                let d = common::DropCount(dropped.clone());
                let (s2, e2, g2) = (started.clone(), ended.clone(), gate.clone());
                let h = js.parallel_for(0..1000, Batch::Fixed(1), move |i| {
                    let _d = &d;
                    if s2.fetch_add(1, SeqCst) < 2 {
                        let _ = tx.lock().unwrap().send(());
                        g2.wait();
                    }
                    e2.fetch_add(1, SeqCst);
                    if i % 2 == 1 && jobsys::is_cancelled() {
                        panic!("piece {i} panics after the cancel");
                    }
                });
                // Two pieces are running (a worker and this thread's
                // helper are not needed: with 1 worker, the second piece
                // starts only on a second thread, so wait for just one).
                rx.recv().unwrap();
                if workers > 1 {
                    rx.recv().unwrap();
                }
                assert!(!js.cancel(h), "the loop had started");
                gate.open();
                let e = js.try_complete(h).unwrap_err();
                assert!(
                    matches!(e, JobError::Cancelled(_) | JobError::Panicked(_)),
                    "{e:?}"
                );
                assert_eq!(started.load(SeqCst), ended.load(SeqCst));
                assert_eq!(
                    dropped.load(SeqCst),
                    1,
                    "closure dropped once, before the wait ended"
                );
            }
        });
    }
}

/// Before its fix (2026-11-25; a broken promise, not a safety one): "A running `parallel_for`
/// hands out no more pieces; the pieces running finish" (docs/engine.md,
/// cancellation). But a thread grabs pieces in guided chunks (up to
/// `remaining / (2 * threads)` pieces: parallel_for.rs `run_pieces`,
/// `take`) and `run_per_index` / `run_chunked` call the closure for every
/// piece of its chunk without looking at the cancel. So after `cancel`
/// returned, the thread that was in the loop's first piece goes on to
/// *start* the rest of its chunk: here 249 of 1000 `Batch::Fixed(1)`
/// pieces with one worker, a quarter of the loop, unless the closure
/// polls `is_cancelled` itself. Forced: the first piece waits at a gate
/// that opens only after `cancel` returned.
#[test]
fn a_cancelled_loop_starts_no_more_pieces() {
    watchdog(SECS, || {
        let js = system(1);
        let after = Arc::new(AtomicUsize::new(0));
        let cancelled = Arc::new(AtomicBool::new(false));
        let gate = Arc::new(Gate::default());
        let (tx, rx) = mpsc::channel::<()>();
        let tx = std::sync::Mutex::new(tx);
        let (a2, c2, g2) = (after.clone(), cancelled.clone(), gate.clone());
        let h = js.parallel_for(0..1000, Batch::Fixed(1), move |i| {
            if c2.load(SeqCst) {
                a2.fetch_add(1, SeqCst);
            }
            if i == 0 {
                let _ = tx.lock().unwrap().send(());
                g2.wait();
            }
        });
        rx.recv().unwrap();
        assert!(!js.cancel(h), "the loop had started");
        cancelled.store(true, SeqCst);
        gate.open();
        assert!(matches!(js.try_complete(h), Err(JobError::Cancelled(_))));
        let n = after.load(SeqCst);
        assert_eq!(n, 0, "{n} pieces started after cancel returned");
    });
}

/// Long chains a frame loop builds without thinking: 100,000 jobs each
/// after the previous one, the first cancelled; and a group grown one
/// job at a time (`all = combine(&[all, h])`), 100,000 deep, then
/// cancelled and waited on. The failure travels the whole chain and the
/// nested group without running out of stack (no recursion per link).
#[test]
fn long_chains_and_deeply_nested_groups_fail_and_cancel_without_recursion() {
    for workers in [0, 2] {
        watchdog(SECS, move || {
            let js = system(workers);
            let ran = Arc::new(AtomicUsize::new(0));
            let gate = Arc::new(Gate::default());
            let g2 = gate.clone();
            let blocker = js.schedule(move || g2.wait());
            let first = js.schedule_after(&[blocker], || {});
            let mut prev = first;
            for _ in 0..100_000 {
                let r = ran.clone();
                prev = js.schedule_after(&[prev], move || {
                    r.fetch_add(1, SeqCst);
                });
            }
            assert!(js.cancel(first));
            gate.open();
            assert!(matches!(js.try_complete(prev), Err(JobError::Cancelled(_))));
            assert_eq!(ran.load(SeqCst), 0);

            let gate = Arc::new(Gate::default());
            let g2 = gate.clone();
            let blocker = js.schedule(move || g2.wait());
            let mut all = js.combine(&[]);
            for _ in 0..100_000 {
                let r = ran.clone();
                let h = js.schedule_after(&[blocker], move || {
                    r.fetch_add(1, SeqCst);
                });
                all = js.combine(&[all, h]);
            }
            assert!(js.cancel(all));
            gate.open();
            assert!(js.try_complete(all).is_err());
            assert_eq!(ran.load(SeqCst), 0);
            js.complete(blocker);
        });
    }
}
