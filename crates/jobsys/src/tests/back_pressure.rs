//! `max_jobs` back-pressure: storage bounded, stalls that panic in time, no unrelated job run inside a job or wait.

use super::*;

/// Defect: a burst of queued jobs reserved storage without bound. With
/// `max_jobs`, a thread that needs a new page while that many jobs are
/// unfinished runs jobs first: storage stays near `max_jobs` slots.
#[test]
fn max_jobs_bounds_storage_by_back_pressure() {
    let js = JobSystem::builder()
        .workers(0)
        .max_jobs(300)
        .build()
        .unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let total = n(20_000, 600);
    let mut last = None;
    for _ in 0..total {
        let r = ran.clone();
        last = Some(js.schedule(move || {
            r.fetch_add(1, Ordering::Relaxed);
        }));
    }
    // With no workers only back-pressure ran jobs so far.
    assert!(ran.load(Ordering::Relaxed) >= total - 300 - 256);
    assert!(js.stats().job_slots <= 3 * 256, "{:?}", js.stats());
    js.complete(last.unwrap());
    drop(js);
    assert_eq!(ran.load(Ordering::Relaxed), total);
}

#[test]
fn max_jobs_zero_is_rejected() {
    let err = JobSystem::builder()
        .workers(0)
        .max_jobs(0)
        .build()
        .unwrap_err();
    assert!(matches!(err, crate::BuildError::ZeroMaxJobs), "{err}");
}

/// Run `body` on a thread of its own and fail if it has not returned
/// within `secs` (a hang becomes a failure, not a stuck suite); a panic
/// in `body` is raised again here.
fn watchdog(secs: u64, body: impl FnOnce() + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(std::time::Duration::from_secs(secs)) {
        Ok(Ok(())) => t.join().expect("test body thread"),
        Ok(Err(p)) => std::panic::resume_unwind(p),
        Err(_) => panic!("watchdog: the test body did not return within {secs} s (a hang)"),
    }
}

/// A job closure's captures: counts the closure's runs and its drops
/// (a run drops it too).
struct RunsAndDrops {
    ran: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
}

impl RunsAndDrops {
    fn new(ran: &Arc<AtomicUsize>, dropped: &Arc<AtomicUsize>) -> RunsAndDrops {
        RunsAndDrops {
            ran: ran.clone(),
            dropped: dropped.clone(),
        }
    }
    fn run(&self) {
        self.ran.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for RunsAndDrops {
    fn drop(&mut self) {
        self.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

/// Defect: a job with dependencies was published (counted, visible to
/// shutdown) before its edge blocks were allocated, and a back-pressure
/// stall panic in that allocation left it half attached: it never ran,
/// its closure was never dropped, and dropping the `JobSystem` waited for
/// it for ever. Now edge blocks never wait (their job was admitted by its
/// own slot's allocation), so a stall panics only before the job's slot
/// is taken: the job never existed and its closure is dropped once, by the
/// unwinding call.
#[test]
#[cfg_attr(miri, ignore)] // waits for back-pressure stalls
fn a_stall_panic_while_scheduling_with_dependencies_leaves_no_job_half_published() {
    use crate::slot::{EDGES_PER_BLOCK, PAGE_SLOTS};
    watchdog(60, || {
        let js = JobSystem::builder().workers(1).max_jobs(1).build().unwrap();
        crate::room::set_max_jobs_stall(js.reg(), std::time::Duration::from_millis(200));
        let (started_tx, started) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        // Runs on the only worker until released: nothing finishes, and
        // the system is full (max_jobs 1).
        let blocker = js.schedule(move || {
            started_tx.send(()).unwrap();
            released.recv().unwrap();
        });
        started.recv().unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicUsize::new(0));
        // The blocker took the first slot of this thread's first page. Jobs
        // of one dependency whose closure leaves no room for its edge in
        // its own slot (over 32 bytes: a slot and an edge block each,
        // `slot/edges.rs`) fill it up to
        // its last slot, which the next one's own slot takes: its edge
        // block is the first allocation that needs a page (where the stall
        // struck, the job half attached). Now that block takes a page past
        // the bound, and the job after it stalls before its slot is taken.
        assert_eq!(EDGES_PER_BLOCK, 2, "the plan below counts slots");
        let plan = std::iter::repeat_n(1, PAGE_SLOTS);
        let (mut made, mut scheduled, mut refused) = (0, 0, None);
        for ndeps in plan {
            let deps = vec![blocker; ndeps];
            let c = RunsAndDrops::new(&ran, &dropped);
            let pad = [0u64; 4];
            made += 1;
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                js.schedule_after(&deps, move || {
                    std::hint::black_box(&pad);
                    c.run()
                })
            }));
            match r {
                Ok(_) => scheduled += 1,
                Err(p) => {
                    refused = Some(crate::error::panic_message(&*p));
                    break;
                }
            }
        }
        let refused = refused.expect("back-pressure stalls while the blocker holds the worker");
        assert!(refused.contains("Config::max_jobs"), "{refused}");
        assert!(refused.contains("at its top level"), "{refused}");
        assert_eq!(
            scheduled,
            PAGE_SLOTS / 2,
            "the job after the first edge block's page"
        );
        release.send(()).unwrap();
        drop(js); // waited for ever for the half-attached job
        assert_eq!(ran.load(Ordering::SeqCst), scheduled);
        assert_eq!(
            dropped.load(Ordering::SeqCst),
            made,
            "every closure dropped exactly once, the refused one too"
        );
    });
}

/// A job with more dependencies than one page of edge blocks holds, all
/// attached while the system is over `max_jobs`: the edge blocks take
/// pages as needed, and the job runs after every one of them.
#[test]
#[cfg_attr(miri, ignore)] // thousands of edges
fn edge_blocks_of_an_admitted_job_are_allocated_past_max_jobs() {
    watchdog(60, || {
        let js = JobSystem::builder().workers(0).max_jobs(1).build().unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let deps: Vec<_> = (0..1000)
            .map(|_| {
                let r = ran.clone();
                js.schedule(move || {
                    r.fetch_add(1, Ordering::SeqCst);
                })
            })
            .collect();
        let r = ran.clone();
        let last = js.schedule_after(&deps, move || {
            assert_eq!(r.load(Ordering::SeqCst), 1000);
        });
        js.complete(last);
        assert_eq!(ran.load(Ordering::SeqCst), 1000);
    });
}

/// Defect: back-pressure ran any queued job, also inside `complete`: a job
/// the waiter only had to run itself scheduled past `max_jobs`, and an
/// unrelated job (one that blocks until the test releases it) ran inside
/// that wait. Inside a job or a wait, back-pressure runs no job.
#[test]
#[cfg_attr(miri, ignore)] // pages of jobs
fn back_pressure_inside_complete_does_not_run_an_unrelated_job() {
    use crate::slot::PAGE_SLOTS;
    watchdog(60, || {
        let js = JobSystem::builder().workers(0).max_jobs(4).build().unwrap();
        // The children's dependency: Low, so a search takes the unrelated
        // job before it.
        let gate = js
            .job()
            .desc(crate::JobDesc::default().with_priority(crate::Priority::Low))
            .schedule(|| {});
        let in_parent = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let ran_inside = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (release, released) = std::sync::mpsc::channel::<()>();
        let unrelated = {
            let (in_parent, ran_inside) = (in_parent.clone(), ran_inside.clone());
            js.schedule(move || {
                if in_parent.load(Ordering::SeqCst) {
                    // Blocking here would hang the test: record it instead.
                    ran_inside.store(true, Ordering::SeqCst);
                } else {
                    released.recv().unwrap();
                }
            })
        };
        let parent = {
            let (js2, in_parent) = (js.clone(), in_parent.clone());
            js.schedule(move || {
                in_parent.store(true, Ordering::SeqCst);
                // More than a page: the last ones need back-pressure.
                for _ in 0..2 * PAGE_SLOTS {
                    js2.schedule_after(&[gate], || {});
                }
                in_parent.store(false, Ordering::SeqCst);
            })
        };
        js.complete(parent);
        assert!(
            !ran_inside.load(Ordering::SeqCst),
            "an unrelated job ran inside complete (back-pressure of the job it ran)"
        );
        release.send(()).unwrap();
        js.complete(unrelated);
        js.complete(gate);
    });
}

/// Defect: a job that only waits on another failed with `WaitOnSelf` when
/// back-pressure ran it inside a job that the other one depends on.
#[test]
#[cfg_attr(miri, ignore)] // pages of jobs
fn a_job_run_under_back_pressure_is_not_failed_with_wait_on_self() {
    use crate::slot::PAGE_SLOTS;
    watchdog(60, || {
        let js = JobSystem::builder().workers(0).max_jobs(4).build().unwrap();
        let gate = js
            .job()
            .desc(crate::JobDesc::default().with_priority(crate::Priority::Low))
            .schedule(|| {});
        let parent = {
            let js2 = js.clone();
            js.schedule(move || {
                for _ in 0..2 * PAGE_SLOTS {
                    js2.schedule_after(&[gate], || {});
                }
            })
        };
        let after_parent = js.schedule_after(&[parent], || {});
        let result = Arc::new(std::sync::Mutex::new(None));
        let waiter = {
            let (js2, result) = (js.clone(), result.clone());
            // Waits on a job that needs `parent`: fine from anywhere but
            // inside `parent`.
            js.schedule(move || {
                *result.lock().unwrap() = Some(js2.try_complete(after_parent));
            })
        };
        js.complete(parent);
        js.complete(waiter);
        let r = result.lock().unwrap().take().expect("the waiter ran");
        assert!(r.is_ok(), "{r:?}");
        js.complete(gate);
    });
}

/// Defect: with `max_jobs(1)` a job that scheduled one child (on a thread
/// with no free slot yet) stalled for 10 s and panicked with a misleading
/// message: the job itself counted as unfinished. The jobs on the
/// scheduling thread's own running stack are not counted (they cannot
/// finish before it returns: 2 workers), and with no other worker to run
/// queued jobs the child is let in (1 worker).
#[test]
#[cfg_attr(miri, ignore)] // would take seconds under Miri
fn max_jobs_1_lets_a_job_schedule_and_complete_a_child() {
    watchdog(60, || {
        for workers in [1, 2] {
            let js = JobSystem::builder()
                .workers(workers)
                .max_jobs(1)
                .build()
                .unwrap();
            for _ in 0..20 {
                let js2 = js.clone();
                // On worker 0, whose store is empty at first: the child
                // needs a page.
                let h = js.job().pin(crate::Pin::Worker(1)).schedule(move || {
                    let child = js2.schedule(|| {});
                    js2.complete(child);
                });
                if let Err(e) = js.try_complete(h) {
                    panic!("{workers} workers: {e}");
                }
            }
        }
    });
}

/// Jobs with dependencies are bounded by `max_jobs` like the others:
/// their edge blocks skip back-pressure, and a page one of them needs is
/// kept aside (`Store::bypass`), so the next job still applies it, however
/// the slots per job divide a page.
#[test]
#[cfg_attr(miri, ignore)] // thousands of jobs
fn max_jobs_bounds_jobs_with_dependencies() {
    use crate::slot::PAGE_SLOTS;
    watchdog(60, || {
        let max = 300;
        for ndeps in [1, 2, 3, 5] {
            let js = JobSystem::builder()
                .workers(0)
                .max_jobs(max)
                .build()
                .unwrap();
            let ran = Arc::new(AtomicUsize::new(0));
            let mut recent = vec![js.schedule(|| {})];
            let mut most = 0;
            let total = 5000;
            for _ in 0..total {
                let r = ran.clone();
                let from = recent.len().saturating_sub(ndeps);
                let h = js.schedule_after(&recent[from..], move || {
                    r.fetch_add(1, Ordering::Relaxed);
                });
                recent.push(h);
                let st = js.stats();
                most = most.max(st.jobs_scheduled - st.jobs_finished);
            }
            assert!(
                most <= (max + 2 * PAGE_SLOTS) as u64,
                "{most} unfinished jobs of {ndeps} dependencies with max_jobs {max}"
            );
            drop(js);
            assert_eq!(ran.load(Ordering::Relaxed), total);
        }
    });
}

/// Defect: declared-access jobs skipped back-pressure (their allocation is
/// under resource locks, where no job may run), so `max_jobs` did not bound
/// them. Back-pressure now comes before the locks.
#[test]
#[cfg_attr(miri, ignore)] // thousands of jobs
fn max_jobs_bounds_declared_access_jobs() {
    use crate::slot::PAGE_SLOTS;
    watchdog(60, || {
        let max = 300;
        let js = JobSystem::builder()
            .workers(0)
            .max_jobs(max)
            .build()
            .unwrap();
        let res = crate::Resource::new(0usize);
        let total = 5000;
        let mut most = 0;
        for i in 0..total {
            if i % 100 == 0 {
                // A job that schedules on the same resource: if
                // back-pressure ran it under the locks, it would lock them
                // again (and hang).
                let (js2, res2) = (js.clone(), res.clone());
                js.job().access(res.write()).schedule(move |v| {
                    *v += 1;
                    js2.job().access(res2.read()).schedule(|_| {});
                });
            } else {
                js.job().access(res.write()).schedule(|v| *v += 1);
            }
            let st = js.stats();
            most = most.max(st.jobs_scheduled - st.jobs_finished);
        }
        assert!(
            most <= (max + 2 * PAGE_SLOTS) as u64,
            "{most} unfinished jobs with max_jobs {max}"
        );
        assert_eq!(*res.read_now(&js), total);
    });
}

/// Defect: back-pressure inside a job ran any queued job, and checked its
/// stall limit only between runs: a job that blocks (until the test
/// releases it, after the wait below) ran inside the scheduling job, which
/// then never returned. Inside a job, back-pressure runs no job and waits
/// for other threads, checking the clock as it waits; when none finishes
/// a job, it panics in time, saying where it was.
#[test]
#[cfg_attr(miri, ignore)] // waits for a back-pressure stall
fn a_back_pressure_stall_inside_a_job_panics_in_time_and_says_so() {
    watchdog(60, || {
        let js = JobSystem::builder().workers(2).max_jobs(1).build().unwrap();
        crate::room::set_max_jobs_stall(js.reg(), std::time::Duration::from_millis(200));
        // Worker 1 is busy until released, so nothing finishes.
        let (busy_tx, busy) = std::sync::mpsc::channel();
        let (release_busy, busy_released) = std::sync::mpsc::channel::<()>();
        let busy_job = js.job().pin(crate::Pin::Worker(2)).schedule(move || {
            busy_tx.send(()).unwrap();
            busy_released.recv().unwrap();
        });
        busy.recv().unwrap();
        let (go, wait_go) = std::sync::mpsc::channel::<()>();
        let ran = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicUsize::new(0));
        let scheduled = Arc::new(AtomicUsize::new(0));
        let parent = {
            let (js2, ran, dropped, scheduled) =
                (js.clone(), ran.clone(), dropped.clone(), scheduled.clone());
            js.job().pin(crate::Pin::Worker(1)).schedule(move || {
                wait_go.recv().unwrap();
                // Worker 0's store is empty: the first child needs a page.
                loop {
                    let c = RunsAndDrops::new(&ran, &dropped);
                    js2.schedule(move || c.run());
                    scheduled.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        // Queued on this thread, High: the first thing a search takes.
        let (release, released) = std::sync::mpsc::channel::<()>();
        let unrelated = js
            .job()
            .desc(crate::JobDesc::default().with_priority(crate::Priority::High))
            .schedule(move || released.recv().unwrap());
        go.send(()).unwrap();
        let msg = match js.try_complete(parent) {
            Err(JobError::Panicked(p)) => p.message().to_string(),
            other => panic!("expected the stall panic, got {other:?}"),
        };
        assert!(msg.contains("Config::max_jobs"), "{msg}");
        assert!(msg.contains("inside a job"), "{msg}");
        release.send(()).unwrap();
        release_busy.send(()).unwrap();
        js.complete(unrelated);
        js.complete(busy_job);
        drop(js);
        let n = scheduled.load(Ordering::SeqCst);
        assert_eq!(ran.load(Ordering::SeqCst), n);
        // The closure of the schedule that panicked was dropped too.
        assert_eq!(dropped.load(Ordering::SeqCst), n + 1);
    });
}
