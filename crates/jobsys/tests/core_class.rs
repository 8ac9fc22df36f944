//! `JobBuilder::core_class` on the topology fixtures (`tests/fixtures/
//! topology`): workers planned per CPU on a fake hybrid machine (classes
//! taken from the fixture, affinity not applied), each class job runs on
//! a worker of its class; on one class, or with no worker of a class,
//! nothing changes.

mod common;

use jobsys::topology::CoreClass;
use jobsys::{Graph, JobSystem, Pin};
use std::path::PathBuf;
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
                // Round-robin: every worker of the class got some.
                let mut used = on.clone();
                used.sort_unstable();
                used.dedup();
                assert_eq!(used.len(), of_class, "{name}: {class} jobs on {used:?}");
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
