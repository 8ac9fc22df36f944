//! Deferred wakes (crates/jobsys/src/sleep/README.md, "Deferred wakes"):
//! with more workers than CPUs, a wake that would make more workers awake
//! than the CPUs can run is deferred. These tests attack that rule: the
//! awake worker is stuck in a job that waits for work still queued, so the
//! queued work must get another worker anyway.
//!
//! Each test body restricts its thread to one CPU before building the
//! system; the workers inherit that mask, so on any machine three workers
//! share one CPU and the rule bites (`set_cpu_cap(1)`). Linux only (the
//! timed sentinel exists only there).
#![cfg(target_os = "linux")]

mod common;

use common::{watchdog, Gate};
use jobsys::topology::{current_affinity, set_current_affinity, CpuSet};
use jobsys::{IdlePolicy, JobSystem};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A system of 3 workers once every one of them has gone to sleep (its
/// `sleeps` count moved: it is past its last re-check; waited for under
/// the watchdog), so the burst starts from sleeping workers, the case the
/// rule is about. A fresh system per round: a worker that slept through a
/// round never counts another sleep. (Under the policies whose workers
/// never all sleep, `JOBSYS_IDLE_POLICY` in CI, no wait: nothing is
/// deferred there, and the jobs must still all run.)
fn asleep_system() -> JobSystem {
    let js = JobSystem::builder().workers(3).build().unwrap();
    let sleepy = matches!(
        js.idle_policy(),
        IdlePolicy::SpinThenSleep { .. } | IdlePolicy::Adaptive { .. }
    );
    while sleepy && js.worker_stats().iter().any(|s| s.sleeps == 0) {
        std::thread::yield_now();
    }
    js
}

/// Restrict the calling thread (and the threads it starts) to one CPU.
fn one_cpu() {
    let mask = current_affinity().expect("read the affinity mask");
    let mut one = CpuSet::new();
    one.insert(mask.first().expect("a usable CPU"));
    set_current_affinity(&one).expect("set the affinity mask");
}

/// Two jobs wait on a gate that only a third, queued behind them, opens;
/// the scheduling thread waits outside the job system (it pays no
/// deferred wake). The stuck workers never look for work again, so only
/// the sentinel's timeout can get the opener a worker: without it this
/// hangs (the watchdog fails it).
#[test]
fn jobs_stuck_on_a_gate_do_not_starve_the_queued_job_that_opens_it() {
    watchdog(120, || {
        one_cpu();
        let ran = Arc::new(AtomicUsize::new(0));
        for _round in 0..20 {
            let js = asleep_system();
            let gate = Arc::new(Gate::default());
            let opened = Arc::new(Gate::default());
            let mut hs = Vec::new();
            for _ in 0..2 {
                let (gate, ran) = (gate.clone(), ran.clone());
                hs.push(js.schedule(move || {
                    gate.wait();
                    ran.fetch_add(1, Ordering::SeqCst);
                }));
            }
            {
                let (gate, opened, ran) = (gate.clone(), opened.clone(), ran.clone());
                hs.push(js.schedule(move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                    gate.open();
                    opened.open();
                }));
            }
            // Outside the job system: no `complete` to pay the wake.
            opened.wait();
            for h in hs {
                js.complete(h);
            }
        }
        assert_eq!(ran.load(Ordering::SeqCst), 60);
    });
}

/// The same with the scheduling thread waiting in `complete` for a stuck
/// job: the opener is not work that wait needs, so the waiter does not run
/// it; it frees its CPU to a worker instead (`pay_deferred_wake`), or the
/// sentinel does.
#[test]
fn a_waiter_whose_job_is_stuck_still_gets_the_queued_work_a_worker() {
    watchdog(120, || {
        one_cpu();
        let ran = Arc::new(AtomicUsize::new(0));
        for _round in 0..20 {
            let js = asleep_system();
            let gate = Arc::new(Gate::default());
            let stuck = {
                let (gate, ran) = (gate.clone(), ran.clone());
                js.schedule(move || {
                    gate.wait();
                    ran.fetch_add(1, Ordering::SeqCst);
                })
            };
            let opener = {
                let ran = ran.clone();
                js.schedule(move || {
                    ran.fetch_add(1, Ordering::SeqCst);
                    gate.open();
                })
            };
            js.complete(stuck);
            js.complete(opener);
        }
        assert_eq!(ran.load(Ordering::SeqCst), 40);
    });
}
