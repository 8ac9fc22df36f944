//! The implementations under test, built for one worker count.
//!
//! Worker-count semantics (printed in every table header):
//! - jobsys `--workers n`: `n` worker threads plus the calling thread, which
//!   helps while it waits: `n + 1` threads run jobs.
//! - rayon `--workers n`: a dedicated `ThreadPool` of `n` threads (1 for
//!   n = 0, as rayon cannot have an empty pool); the calling thread only
//!   schedules and blocks.
//! - serial: everything inline on the calling thread.
//! - futex-floor (W4, W5 only): not a job system but the least any design
//!   that sleeps its threads between bursts pays: bare futex wakes of
//!   helper threads (`--workers n`: W4 one helper, W5 n helpers besides the
//!   calling thread).
//!
//! Idle policies: [`policies`] is the list every workload runs jobsys with
//! (`--policy` picks some); a new policy is one more entry there.

use crate::error::{Error, Result};
use crate::json::Label;
use jobsys::{IdlePolicy, JobSystem};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

/// A jobsys idle policy under test, with the names its rows carry.
#[derive(Clone, Debug)]
pub struct PolicySpec {
    /// What `--policy` selects it by, e.g. "spin-then-sleep".
    pub key: &'static str,
    /// Row name, with parameters (`IdlePolicy::name`).
    pub name: String,
    /// The policy.
    pub policy: IdlePolicy,
}

impl PolicySpec {
    fn new(key: &'static str, policy: IdlePolicy) -> Self {
        PolicySpec {
            key,
            name: policy.name(),
            policy,
        }
    }
}

/// Every idle policy the benchmark runs jobsys with, default first.
pub fn policies() -> Vec<PolicySpec> {
    vec![
        PolicySpec::new(
            "spin-then-sleep",
            IdlePolicy::SpinThenSleep {
                spin: Duration::from_micros(30),
            },
        ),
        PolicySpec::new("whipping-boy", IdlePolicy::WhippingBoy),
        PolicySpec::new("always-spin", IdlePolicy::AlwaysSpin),
        PolicySpec::new("adaptive", IdlePolicy::ADAPTIVE),
    ]
}

/// The policies named in `keys` (all when `None`), in [`policies`] order.
pub fn select_policies(keys: Option<&[String]>) -> Result<Vec<PolicySpec>> {
    let all = policies();
    let Some(keys) = keys else {
        return Ok(all);
    };
    for k in keys {
        if !all.iter().any(|p| p.key == k) {
            let known: Vec<&str> = all.iter().map(|p| p.key).collect();
            return Err(Error::Args(clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                format!("unknown --policy {k:?}; known: {}\n", known.join(", ")),
            )));
        }
    }
    Ok(all
        .into_iter()
        .filter(|p| keys.iter().any(|k| k == p.key))
        .collect())
}

/// One line for table headers: what `workers` and `threads` mean.
pub fn semantics_note() -> String {
    "workers = --workers value; threads = threads running jobs: jobsys n workers + the calling thread (n+1), \
     rayon a pool of n threads (1 when n = 0; the caller blocks), serial 1"
        .to_string()
}

/// The label of jobsys rows.
pub fn jobsys_label(workers: usize, policy: &PolicySpec) -> Label {
    Label {
        imp: "jobsys".into(),
        policy: Some(policy.name.clone()),
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

/// Implementation name of the futex-floor reference rows.
pub const FLOOR: &str = "futex-floor";

/// W5's second floor: every helper woken each frame.
pub const FLOOR_ALL: &str = "futex-floor-all";

/// The label of futex-floor rows: `threads` threads run its jobs.
pub fn floor_label(workers: usize, threads: usize) -> Label {
    Label {
        imp: FLOOR.into(),
        policy: None,
        workers: Some(workers),
        threads: Some(threads),
    }
}

/// jobsys counters summed over the systems of one contestant.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    /// Iterations run (calls of [`BlockSystem::get`]).
    pub iterations: u64,
    /// Sleeping workers woken.
    pub wakes: u64,
    /// Wakes that found nothing to do.
    pub futile_wakes: u64,
    /// Times a worker went to sleep.
    pub sleeps: u64,
    /// Successful steals.
    pub steals: u64,
}

struct BlockInner {
    sys: RefCell<Option<JobSystem>>,
    totals: Cell<Counters>,
}

/// A jobsys system that exists only while its contestant's block runs:
/// started by the block hook, stopped (workers joined) after the block.
/// Policies that spin while idle (always-spin, whipping-boy) would otherwise
/// burn CPU during the other contestants' blocks, and W5's process CPU time
/// would charge it to them. Each block starts with an uncounted iteration,
/// which warms the fresh system.
#[derive(Clone)]
pub struct BlockSystem {
    /// The policy.
    pub policy: PolicySpec,
    /// Worker threads.
    pub workers: usize,
    /// Priority inheritance (the library's default: on).
    pub inheritance: bool,
    inner: Rc<BlockInner>,
}

impl BlockSystem {
    /// Not started yet.
    pub fn new(workers: usize, policy: PolicySpec) -> Self {
        BlockSystem {
            policy,
            workers,
            inheritance: true,
            inner: Rc::new(BlockInner {
                sys: RefCell::new(None),
                totals: Cell::new(Counters::default()),
            }),
        }
    }

    /// The same, with priority inheritance `on` or off (not started yet).
    pub fn with_inheritance(mut self, on: bool) -> Self {
        self.inheritance = on;
        self
    }

    /// The rows' label.
    pub fn label(&self) -> Label {
        jobsys_label(self.workers, &self.policy)
    }

    /// The running system, for one iteration (counted).
    pub fn get(&self) -> Result<JobSystem> {
        let mut t = self.inner.totals.get();
        t.iterations += 1;
        self.inner.totals.set(t);
        self.inner
            .sys
            .borrow()
            .clone()
            .ok_or_else(|| Error::Verify("jobsys system used outside its block".into()))
    }

    /// The block hook that starts and stops the system.
    pub fn hook(&self) -> impl FnMut(bool) -> Result<()> + 'static {
        let (inner, workers, policy) = (self.inner.clone(), self.workers, self.policy.policy);
        let inheritance = self.inheritance;
        move |entering| {
            if entering {
                let js = JobSystem::builder()
                    .workers(workers)
                    .idle_policy(policy)
                    .priority_inheritance(inheritance)
                    .build()?;
                *inner.sys.borrow_mut() = Some(js);
            } else if let Some(js) = inner.sys.borrow_mut().take() {
                let s = js.stats();
                let mut t = inner.totals.get();
                t.wakes += s.wakes;
                t.futile_wakes += s.futile_wakes;
                t.sleeps += s.sleeps;
                t.steals += s.steals;
                inner.totals.set(t);
                drop(js); // joins the workers
            }
            Ok(())
        }
    }

    /// Counters so far.
    pub fn counters(&self) -> Counters {
        self.inner.totals.get()
    }

    /// Counters per iteration, as row params.
    pub fn add_params(&self, params: &mut serde_json::Map<String, serde_json::Value>) {
        let c = self.counters();
        let n = c.iterations.max(1) as f64;
        for (k, v) in [
            ("wakes_per_iter", c.wakes),
            ("futile_wakes_per_iter", c.futile_wakes),
            ("sleeps_per_iter", c.sleeps),
            ("steals_per_iter", c.steals),
        ] {
            params.insert(k.into(), (v as f64 / n).into());
        }
    }
}

/// Everything for one worker count: a block system per policy, one rayon
/// pool (its idle threads sleep; it lives for the whole group).
pub struct Pools {
    /// jobsys per policy, in [`policies`] order.
    pub jobsys: Vec<BlockSystem>,
    /// The rayon pool.
    pub rayon: rayon::ThreadPool,
    /// The worker count.
    pub workers: usize,
}

impl Pools {
    /// Prepare everything for `workers` with `policies`.
    pub fn new(policies: &[PolicySpec], workers: usize) -> Result<Pools> {
        Ok(Pools {
            jobsys: policies
                .iter()
                .map(|p| BlockSystem::new(workers, p.clone()))
                .collect(),
            rayon: rayon(workers)?,
            workers,
        })
    }
}
