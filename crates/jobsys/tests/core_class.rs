//! `JobBuilder::core_class` on the topology fixtures (`tests/fixtures/
//! topology`): workers planned per CPU on a fake hybrid machine (classes
//! taken from the fixture, affinity not applied), each class job runs on
//! a worker of its class, whichever of them is free (a busy one holds
//! none back; one waiting in `complete` takes them); on one class, or with
//! no worker of a class, nothing changes.

mod common;

use jobsys::topology::CoreClass;
use jobsys::{Graph, JobSystem, Pin};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/topology")
        .join(name)
}

fn system_on(fixture_name: &str, workers: usize, exclude_efficiency: bool) -> JobSystem {
    JobSystem::builder()
        .workers(workers)
        .pin_workers(true)
        .exclude_efficiency_cores(exclude_efficiency)
        .topology_fixture(fixture(fixture_name))
        .follow_cpus(false)
        .build()
        .expect("build on a fixture")
}

/// The thread index every job of `class` ran on, `n` jobs.
fn ran_on(js: &JobSystem, class: CoreClass, n: usize) -> Vec<usize> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let hs: Vec<_> = (0..n)
        .map(|_| {
            let (s, j) = (seen.clone(), js.clone());
            js.job()
                .core_class(class)
                .schedule(move || s.lock().unwrap().push(j.thread_index().expect("a worker")))
        })
        .collect();
    for h in hs {
        js.complete(h);
    }
    let v = seen.lock().unwrap().clone();
    v
}

#[test]
fn class_jobs_run_on_workers_of_their_class_on_hybrid_fixtures() {
    common::watchdog(60, || {
        // (fixture, workers): biglittle 4 big + 4 LITTLE, CPU 0 kept for
        // the caller, so 7 workers: 3 big, 4 LITTLE; Intel hybrid with
        // SMT: one thread per P-core first; the phone's three tiers: the
        // A510s are efficiency, the rest performance.
        for (name, workers) in [
            ("biglittle_4x4", 7),
            ("intel_hybrid", 20),
            ("phone_3tier", 7),
        ] {
            let js = system_on(name, workers, false);
            let classes: Vec<CoreClass> = (1..=workers).map(|i| js.worker_core_class(i)).collect();
            for class in [CoreClass::Performance, CoreClass::Efficiency] {
                let of_class = classes.iter().filter(|&&c| c == class).count();
                assert!(of_class > 0, "{name}: no {class} worker among {classes:?}");
                let on = ran_on(&js, class, 4 * of_class);
                assert!(
                    on.iter().all(|&i| js.worker_core_class(i) == class),
                    "{name}: {class} jobs ran on {on:?}, classes {classes:?}"
                );
                assert_eq!(on.len(), 4 * of_class, "{name}: every {class} job ran once");
            }
            assert_eq!(
                js.worker_core_class(0),
                CoreClass::Any,
                "the main thread is no worker"
            );
            assert_eq!(js.worker_core_class(workers + 1), CoreClass::Any);
        }
    });
}

#[test]
fn the_big_cores_get_the_first_workers_and_any_runs_anywhere() {
    let js = system_on("biglittle_4x4", 7, false);
    let classes: Vec<CoreClass> = (1..=7).map(|i| js.worker_core_class(i)).collect();
    use CoreClass::{Efficiency as E, Performance as P};
    assert_eq!(classes, [P, P, P, E, E, E, E]);
    // `Any` is the default: no pin, so a pin set before it stays.
    let on = Arc::new(Mutex::new(None));
    let o = on.clone();
    let j = js.clone();
    let h = js
        .job()
        .pin(Pin::Worker(5))
        .core_class(CoreClass::Any)
        .schedule(move || *o.lock().unwrap() = j.thread_index());
    js.complete(h);
    assert_eq!(*on.lock().unwrap(), Some(5));
}

#[test]
fn one_class_or_a_class_without_workers_changes_nothing() {
    common::watchdog(60, || {
        // Efficiency cores excluded: every worker is a big core, so the
        // workers span one class and a class job is not pinned at all.
        let js = system_on("biglittle_4x4", 3, true);
        assert!((1..=3).all(|i| js.worker_core_class(i) == CoreClass::Performance));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let j = js.clone();
        let h = js
            .job()
            .core_class(CoreClass::Efficiency)
            .schedule(move || {
                s.lock().unwrap().push(j.thread_index());
            });
        js.complete(h);
        assert_eq!(seen.lock().unwrap().len(), 1);
        // No workers at all: a class job runs on the caller (a pin to a
        // worker would panic at schedule: there is none).
        let js = system_on("biglittle_4x4", 0, false);
        let h = js.job().core_class(CoreClass::Performance).schedule(|| {});
        js.complete(h);
        // Unclassified machine (no capacity files): every worker `Any`.
        let js = system_on("cgroup_v2_quota", 2, false);
        assert_eq!(js.worker_core_class(1), CoreClass::Any);
        let on = ran_on(&js, CoreClass::Performance, 4);
        assert_eq!(on.len(), 4);
    });
}

#[test]
fn graph_nodes_take_a_core_class() {
    common::watchdog(60, || {
        let js = system_on("biglittle_4x4", 7, false);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut b = Graph::builder();
        for class in [CoreClass::Performance, CoreClass::Efficiency] {
            let (s, j) = (seen.clone(), js.clone());
            b.node()
                .core_class(class)
                .call(move || s.lock().unwrap().push((class, j.thread_index().unwrap())));
        }
        let g = b.build().unwrap();
        for _ in 0..8 {
            js.complete(g.run(&js));
        }
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 16);
        assert!(
            seen.iter().all(|&(c, i)| js.worker_core_class(i) == c),
            "{seen:?}"
        );
    });
}

/// A job that holds its worker until `go` is set, and says when it runs.
fn hold_worker(js: &JobSystem, worker: usize, go: &Arc<AtomicBool>) -> jobsys::JobHandle {
    let started = Arc::new(AtomicBool::new(false));
    let (s, g) = (started.clone(), go.clone());
    let h = js.job().pin(Pin::Worker(worker)).schedule(move || {
        s.store(true, Ordering::SeqCst);
        while !g.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
    });
    while !started.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
    h
}

#[test]
fn a_busy_worker_of_the_class_holds_no_class_job_back() {
    common::watchdog(60, || {
        // biglittle: workers 1-3 performance, 4-7 efficiency. Worker 1 is
        // held for the whole test: each Performance job must run on 2 or
        // 3 (a job pinned round-robin to worker 1 would wait for it, and
        // the watchdog would fire).
        let js = system_on("biglittle_4x4", 7, false);
        let go = Arc::new(AtomicBool::new(false));
        let held = hold_worker(&js, 1, &go);
        let on = ran_on(&js, CoreClass::Performance, 24);
        assert_eq!(on.len(), 24);
        assert!(
            on.iter().all(|&i| i == 2 || i == 3),
            "Performance jobs ran on {on:?} while worker 1 was held"
        );
        go.store(true, Ordering::SeqCst);
        js.complete(held);
    });
}

#[test]
fn a_worker_of_the_class_waiting_in_complete_runs_its_class_jobs() {
    common::watchdog(60, || {
        // Workers 2 and 3 (performance) are held; worker 1 runs a job that
        // schedules a Performance job and waits for it: only worker 1, in
        // its wait, may run it (no other performance worker is free, and
        // no efficiency worker may).
        let js = system_on("biglittle_4x4", 7, false);
        let go = Arc::new(AtomicBool::new(false));
        let held = [hold_worker(&js, 2, &go), hold_worker(&js, 3, &go)];
        let ran = Arc::new(Mutex::new(None));
        let (r, j) = (ran.clone(), js.clone());
        let outer = js.job().pin(Pin::Worker(1)).schedule(move || {
            let (r2, j2) = (r.clone(), j.clone());
            let inner = j
                .job()
                .core_class(CoreClass::Performance)
                .schedule(move || *r2.lock().unwrap() = j2.thread_index());
            j.complete(inner);
        });
        js.complete(outer);
        assert_eq!(*ran.lock().unwrap(), Some(1));
        go.store(true, Ordering::SeqCst);
        for h in held {
            js.complete(h);
        }
    });
}

#[test]
fn efficiency_jobs_never_run_on_performance_workers_even_when_those_wait() {
    common::watchdog(60, || {
        // Every efficiency worker is held; a performance worker waits for
        // an Efficiency job: it must not run it (the wait ends when a
        // released efficiency worker does).
        let js = system_on("biglittle_4x4", 7, false);
        let go = Arc::new(AtomicBool::new(false));
        let held: Vec<_> = (4..=7).map(|w| hold_worker(&js, w, &go)).collect();
        let ran = Arc::new(Mutex::new(None));
        let waiting = Arc::new(AtomicBool::new(false));
        let (r, j, w) = (ran.clone(), js.clone(), waiting.clone());
        let outer = js.job().pin(Pin::Worker(1)).schedule(move || {
            let (r2, j2) = (r.clone(), j.clone());
            let inner = j
                .job()
                .core_class(CoreClass::Efficiency)
                .schedule(move || *r2.lock().unwrap() = j2.thread_index());
            w.store(true, Ordering::SeqCst);
            j.complete(inner);
        });
        while !waiting.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        assert!(!js.is_complete(outer), "no efficiency worker is free yet");
        go.store(true, Ordering::SeqCst);
        js.complete(outer);
        let on = ran.lock().unwrap().expect("the Efficiency job ran");
        assert_eq!(
            js.worker_core_class(on),
            CoreClass::Efficiency,
            "ran on {on}"
        );
        for h in held {
            js.complete(h);
        }
    });
}

/// Counts drops of what a job's closure holds.
struct Dropped(Arc<std::sync::atomic::AtomicUsize>);
impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_queued_class_job_cancels_once_and_never_runs() {
    common::watchdog(60, || {
        // Every performance worker held: the job waits in the queue when
        // it is cancelled; it must be dropped exactly once and never run,
        // also once the workers are free again.
        let js = system_on("biglittle_4x4", 7, false);
        let go = Arc::new(AtomicBool::new(false));
        let held: Vec<_> = (1..=3).map(|w| hold_worker(&js, w, &go)).collect();
        let (drops, ran) = (
            Arc::new(std::sync::atomic::AtomicUsize::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let (d, r) = (Dropped(drops.clone()), ran.clone());
        let h = js
            .job()
            .core_class(CoreClass::Performance)
            .schedule(move || {
                let _d = &d;
                r.store(true, Ordering::SeqCst);
            });
        assert!(js.cancel(h), "a queued job is cancellable");
        assert!(matches!(
            js.try_complete(h),
            Err(jobsys::JobError::Cancelled(_))
        ));
        assert_eq!(drops.load(Ordering::SeqCst), 1);
        go.store(true, Ordering::SeqCst);
        for h in held {
            js.complete(h);
        }
        // A later class job runs (the queue holds nothing stale that stops it).
        let on = ran_on(&js, CoreClass::Performance, 3);
        assert_eq!(on.len(), 3);
        assert!(!ran.load(Ordering::SeqCst), "the cancelled job ran");
        assert_eq!(drops.load(Ordering::SeqCst), 1, "dropped exactly once");
    });
}

#[test]
fn a_panicking_class_job_is_reported_and_the_class_goes_on() {
    common::watchdog(60, || {
        let js = system_on("biglittle_4x4", 7, false);
        let h = js
            .job()
            .name("boom")
            .core_class(CoreClass::Performance)
            .schedule(|| panic!("class job panics"));
        match js.try_complete(h) {
            Err(jobsys::JobError::Panicked(p)) => {
                assert_eq!(p.message(), "class job panics");
                assert_eq!(p.job_name(), Some("boom"));
            }
            other => panic!("expected a panic, got {other:?}"),
        }
        let on = ran_on(&js, CoreClass::Performance, 9);
        assert!(on
            .iter()
            .all(|&i| js.worker_core_class(i) == CoreClass::Performance));
    });
}

#[test]
fn a_class_job_with_dependencies_runs_after_them_on_its_class() {
    common::watchdog(60, || {
        let js = system_on("biglittle_4x4", 7, false);
        let order = Arc::new(Mutex::new(Vec::new()));
        let o = order.clone();
        let first = js
            .job()
            .core_class(CoreClass::Efficiency)
            .schedule(move || {
                o.lock().unwrap().push("first");
            });
        let (o, j) = (order.clone(), js.clone());
        let on = Arc::new(Mutex::new(None));
        let n = on.clone();
        let second = js
            .job()
            .after(&[first])
            .core_class(CoreClass::Performance)
            .schedule(move || {
                o.lock().unwrap().push("second");
                *n.lock().unwrap() = j.thread_index();
            });
        js.complete(second);
        assert_eq!(*order.lock().unwrap(), ["first", "second"]);
        let i = on.lock().unwrap().expect("ran on a worker");
        assert_eq!(js.worker_core_class(i), CoreClass::Performance);
    });
}

#[test]
fn class_jobs_queued_at_shutdown_all_run() {
    common::watchdog(60, || {
        // Dropped with class jobs queued and none waited for: every one
        // runs exactly once before the drop returns.
        let js = system_on("biglittle_4x4", 7, false);
        let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        for k in 0..200 {
            let r = runs.clone();
            let class = if k % 2 == 0 {
                CoreClass::Performance
            } else {
                CoreClass::Efficiency
            };
            let _ = js.job().core_class(class).schedule(move || {
                r.fetch_add(1, Ordering::SeqCst);
            });
        }
        drop(js);
        assert_eq!(runs.load(Ordering::SeqCst), 200);
    });
}
