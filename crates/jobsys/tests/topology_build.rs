//! Builder options of the topology work, end to end (Linux).
#![cfg(target_os = "linux")]

use jobsys::topology::internals::{current_affinity, current_nice};
use jobsys::topology::CpuSet;
use jobsys::{BuildError, JobSystem, TopologyError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Run `f` on a worker (not on this thread) and return what it saw.
fn on_worker<T: Send + 'static>(js: &JobSystem, f: impl Fn() -> T + Send + Sync + 'static) -> T {
    let out = Arc::new(Mutex::new(None));
    let o = out.clone();
    let h = js.schedule(move || {
        let name = std::thread::current().name().map(str::to_string);
        *o.lock().unwrap() = Some((name, f()));
    });
    let t0 = Instant::now();
    while !js.is_complete(h) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the worker never ran the job"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let (name, v) = out.lock().unwrap().take().unwrap();
    assert_eq!(name.as_deref(), Some("jobsys-worker-1"));
    v
}

#[test]
fn pinned_worker_avoids_the_calling_threads_cpu() {
    let mask = current_affinity().unwrap();
    if mask.len() < 2 {
        return;
    }
    let js = JobSystem::builder()
        .workers(1)
        .pin_workers(true)
        .build()
        .unwrap();
    let seen: CpuSet = on_worker(&js, || current_affinity().unwrap());
    assert_eq!(seen.len(), 1, "pinned: {seen}");
    assert!(mask.contains(seen.first().unwrap()));
}

#[test]
fn worker_nice_is_applied_and_checked() {
    let js = JobSystem::builder()
        .workers(1)
        .worker_nice(7)
        .build()
        .unwrap();
    assert_eq!(on_worker(&js, || current_nice().unwrap()), 7);
    match JobSystem::builder().workers(1).worker_nice(40).build() {
        Err(BuildError::Topology(TopologyError::InvalidNice { nice: 40 })) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn default_count_comes_from_the_topology() {
    if std::env::var_os("JOBSYS_WORKERS").is_some() {
        return;
    }
    let js = JobSystem::builder()
        .exclude_efficiency_cores(true)
        .build()
        .unwrap();
    assert_eq!(js.workers(), jobsys::topology().default_workers_for(true).0);
    let js = JobSystem::builder().build().unwrap();
    assert_eq!(js.workers(), jobsys::topology().default_workers);
}
