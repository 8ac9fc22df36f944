//! The implementations under test, built for one worker count.
//!
//! Worker-count semantics (printed in every table header):
//! - jobsys `--workers n`: `n` worker threads plus the calling thread, which
//!   helps while it waits: `n + 1` threads run jobs.
//! - rayon `--workers n`: a dedicated `ThreadPool` of `n` threads (1 for
//!   n = 0, as rayon cannot have an empty pool); the calling thread only
//!   schedules and blocks.
//! - serial: everything inline on the calling thread.
//!
//! Idle policies: [`policies`] is the list every workload runs jobsys with;
//! a new policy is one more entry there.

use crate::error::Result;
use crate::json::Label;
use jobsys::{IdlePolicy, JobSystem};
use std::time::Duration;

/// A jobsys idle policy under test, with the name its rows carry.
#[derive(Clone, Debug)]
pub struct PolicySpec {
    /// Row name, e.g. "spin-then-sleep(30us)".
    pub name: &'static str,
    /// The policy.
    pub policy: IdlePolicy,
}

/// Every idle policy the benchmark runs jobsys with.
pub fn policies() -> Vec<PolicySpec> {
    vec![PolicySpec {
        name: "spin-then-sleep(30us)",
        policy: IdlePolicy::SpinThenSleep {
            spin: Duration::from_micros(30),
        },
    }]
}

/// One line for table headers: what `workers` and `threads` mean.
pub fn semantics_note() -> String {
    "workers = --workers value; threads = threads running jobs: jobsys n workers + the calling thread (n+1), \
     rayon a pool of n threads (1 when n = 0; the caller blocks), serial 1"
        .to_string()
}

/// A jobsys system with `workers` workers and `policy`.
pub fn jobsys(workers: usize, policy: &PolicySpec) -> Result<JobSystem> {
    Ok(JobSystem::builder()
        .workers(workers)
        .idle_policy(policy.policy)
        .build()?)
}

/// The label of jobsys rows.
pub fn jobsys_label(workers: usize, policy: &PolicySpec) -> Label {
    Label {
        imp: "jobsys".into(),
        policy: Some(policy.name.into()),
        workers: Some(workers),
        threads: Some(workers + 1),
    }
}

/// Threads in the rayon pool for `--workers n`.
pub fn rayon_threads(workers: usize) -> usize {
    workers.max(1)
}

/// A dedicated rayon pool for `--workers n`.
pub fn rayon(workers: usize) -> Result<rayon::ThreadPool> {
    Ok(rayon::ThreadPoolBuilder::new()
        .num_threads(rayon_threads(workers))
        .thread_name(|i| format!("rayon-bench-{i}"))
        .build()?)
}

/// The label of rayon rows.
pub fn rayon_label(workers: usize) -> Label {
    Label {
        imp: "rayon".into(),
        policy: None,
        workers: Some(workers),
        threads: Some(rayon_threads(workers)),
    }
}

/// All systems of one worker count: one jobsys per policy, one rayon pool.
pub struct Pools {
    /// jobsys per policy, in [`policies`] order.
    pub jobsys: Vec<(PolicySpec, JobSystem)>,
    /// The rayon pool.
    pub rayon: rayon::ThreadPool,
    /// The worker count.
    pub workers: usize,
}

impl Pools {
    /// Start everything for `workers`.
    pub fn new(workers: usize) -> Result<Pools> {
        let mut js = Vec::new();
        for p in policies() {
            let s = jobsys(workers, &p)?;
            js.push((p, s));
        }
        Ok(Pools {
            jobsys: js,
            rayon: rayon(workers)?,
            workers,
        })
    }
}
