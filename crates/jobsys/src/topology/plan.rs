//! Where each worker runs and how it is set up: [`plan`] decides once in
//! `JobSystem::new`, [`setup_worker_thread`] applies it at the start of
//! each worker thread.
//!
//! Owns: the placement rules. With `pin_workers`, worker `i` gets its own
//! CPU from the usable set (performance cores only with
//! `exclude_efficiency_cores`): one hardware thread per physical core
//! first, fastest first; the calling thread's CPU is left free of workers,
//! and its SMT siblings are used only after every other CPU has a worker; with only
//! `exclude_efficiency_cores`, every worker may run on any performance
//! CPU (the OS still balances them). Where information is absent the plan
//! degrades to "no placement" and says so in its reason — it never fails
//! for lack of information. It fails only for settings that cannot be
//! honoured: a nice value out of range, or nice on a non-Linux OS.

use super::affinity::{current_cpu, set_current_affinity, set_current_nice};
use super::cpulist::CpuSet;
use super::error::TopologyError;
use super::{topology, workers_phrase, Topology};
use std::fmt;
use std::io;

/// The topology-related part of the build configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopologyConfig {
    /// Worker count asked for (explicitly or via `JOBSYS_WORKERS`); `None`:
    /// the topology default (usable CPUs − 1).
    pub workers: Option<usize>,
    /// Keep workers off efficiency cores (and leave them out of the default
    /// count). Ignored, with a remark in the plan's reason, when the CPUs
    /// cannot be classified or no performance CPU is allowed.
    pub exclude_efficiency_cores: bool,
    /// Pin each worker to its own CPU, keeping the calling thread's CPU free.
    pub pin_workers: bool,
    /// Nice value for worker threads (Linux, −20..=19).
    pub worker_nice: Option<i32>,
}

/// Where one worker may run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Keep the affinity the thread inherits from its spawner.
    Inherit,
    /// Restrict the worker to these CPUs (one CPU: pinned).
    Cpus(CpuSet),
}

/// The result of [`plan`]: the worker count and each worker's placement.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerPlan {
    /// Workers to start.
    pub workers: usize,
    /// Placement of worker `i` (exactly `workers` entries).
    pub placements: Vec<Placement>,
    /// Nice value each worker sets on itself.
    pub nice: Option<i32>,
    /// The CPU kept free for the calling thread when pinning (`None` when
    /// not pinning or unknown).
    pub main_cpu: Option<usize>,
    /// Why: the worker-count reason and what the placement did.
    pub reason: String,
}

impl WorkerPlan {
    /// A plan that starts `workers` threads and changes nothing about them.
    pub fn unplaced(workers: usize) -> WorkerPlan {
        WorkerPlan {
            workers,
            placements: vec![Placement::Inherit; workers],
            nice: None,
            main_cpu: None,
            reason: format!("{workers} workers requested"),
        }
    }

    /// Whether [`setup_worker_thread`] has anything to do (if not, the
    /// spawner need not wait for the workers' setup results).
    pub fn needs_setup(&self) -> bool {
        self.nice.is_some() || self.placements.iter().any(|p| *p != Placement::Inherit)
    }

    /// The placement of worker `i` (`Inherit` past the end).
    pub fn placement(&self, i: usize) -> &Placement {
        self.placements.get(i).unwrap_or(&Placement::Inherit)
    }
}

impl fmt::Display for WorkerPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.reason)?;
        for (i, p) in self.placements.iter().enumerate() {
            if let Placement::Cpus(set) = p {
                write!(f, "\n  jobsys-worker-{}: CPUs {set}", i + 1)?;
            }
        }
        if let Some(n) = self.nice {
            write!(f, "\n  workers' nice: {n}")?;
        }
        Ok(())
    }
}

fn check_nice(nice: Option<i32>) -> Result<(), TopologyError> {
    match nice {
        Some(n) if !(-20..=19).contains(&n) => Err(TopologyError::InvalidNice { nice: n }),
        _ => Ok(()),
    }
}

/// Plan the workers for the running system: reads [`topology()`] (only
/// when the count is defaulted or a placement is asked for) and, when
/// pinning, the calling thread's current CPU (`sched_getcpu`).
pub fn plan(config: &TopologyConfig) -> Result<WorkerPlan, TopologyError> {
    check_nice(config.worker_nice)?;
    if config.worker_nice.is_some() && !cfg!(target_os = "linux") {
        return Err(TopologyError::Unsupported {
            what: "worker_nice (per-thread nice values)".to_string(),
        });
    }
    if let (Some(n), false, false) = (
        config.workers,
        config.pin_workers,
        config.exclude_efficiency_cores,
    ) {
        let mut p = WorkerPlan::unplaced(n);
        p.nice = config.worker_nice;
        return Ok(p);
    }
    let main_cpu = if config.pin_workers {
        current_cpu()
    } else {
        None
    };
    plan_for(&topology(), config, main_cpu)
}

/// The plan for a given topology (pure: tests pass fixture topologies).
///
/// `main_cpu` is the calling thread's CPU (from `sched_getcpu`); when it is
/// `None`, the first CPU of the affinity mask is kept free instead. jobsys
/// does not pin the calling thread — it is the application's — so it may
/// migrate; with workers pinned elsewhere the scheduler has no reason to
/// move it. An application that wants certainty pins it to
/// [`WorkerPlan::main_cpu`] with `set_current_affinity` (or its own
/// platform call).
pub fn plan_for(
    topo: &Topology,
    config: &TopologyConfig,
    main_cpu: Option<usize>,
) -> Result<WorkerPlan, TopologyError> {
    check_nice(config.worker_nice)?;
    let derived = topo.derive(config.exclude_efficiency_cores);
    let (workers, mut reason) = match config.workers {
        Some(n) => (n, format!("{} requested", workers_phrase(n))),
        None => (derived.workers, derived.reason),
    };
    let all = topo.usable_cpus();
    let mut placements = vec![Placement::Inherit; workers];
    let mut kept_free = None;
    if workers > 0 && config.pin_workers {
        match &derived.cpus {
            None => reason.push_str("; not pinned: the affinity mask is unknown here"),
            Some(set) => {
                let main = main_cpu
                    .or_else(|| topo.allowed.as_ref().and_then(CpuSet::first))
                    .or_else(|| set.first());
                let mut pool: Vec<usize> = set.iter().filter(|&c| Some(c) != main).collect();
                if pool.is_empty() {
                    pool = set.iter().collect();
                    reason.push_str(&format!(
                        "; only CPU {set} is usable: workers share it with the calling thread"
                    ));
                } else {
                    kept_free = main;
                }
                // Order: the calling thread's SMT siblings last; before them
                // one hardware thread per physical core first (rank = place
                // among its core's threads), fastest first, then by number.
                let main_core = main.map(|m| topo.siblings_of(m)).unwrap_or_default();
                pool.sort_by_key(|&c| {
                    let rank = topo.siblings_of(c).iter().take_while(|&s| s < c).count();
                    let capacity = topo.cores.as_ref().map_or(0, |k| k.value_of(c));
                    (main_core.contains(c), rank, std::cmp::Reverse(capacity), c)
                });
                for (i, p) in placements.iter_mut().enumerate() {
                    *p = Placement::Cpus(std::iter::once(pool[i % pool.len()]).collect());
                }
                let used: CpuSet = pool.iter().copied().take(workers).collect();
                reason.push_str(&format!("; pinned one per CPU on {used}"));
                if let Some(m) = kept_free {
                    reason.push_str(&format!(", CPU {m} kept for the calling thread"));
                }
                if workers > pool.len() {
                    reason.push_str(&format!(
                        " ({workers} workers on {}: CPUs shared round-robin)",
                        pool.len()
                    ));
                }
            }
        }
    } else if workers > 0 && config.exclude_efficiency_cores {
        if let (Some(set), Some(all)) = (&derived.cpus, &all) {
            if set != all {
                placements = vec![Placement::Cpus(set.clone()); workers];
                reason.push_str(&format!("; workers restricted to CPUs {set}"));
            }
        }
    }
    Ok(WorkerPlan {
        workers,
        placements,
        nice: config.worker_nice,
        main_cpu: kept_free,
        reason,
    })
}

/// Apply worker `index`'s part of `plan` to the calling thread: its CPU
/// placement (`sched_setaffinity`), then its nice value (`setpriority` on
/// its thread id). Call it first thing in the worker thread.
///
/// Errors are clear about the cause: [`TopologyError::NotPermitted`] with
/// the OS error and what would make it work (e.g. a negative nice without
/// `CAP_SYS_NICE`), [`TopologyError::Affinity`] if the kernel rejects the
/// CPUs (one went offline since the plan was made).
pub fn setup_worker_thread(index: usize, plan: &WorkerPlan) -> Result<(), TopologyError> {
    if let Placement::Cpus(set) = plan.placement(index) {
        set_current_affinity(set).map_err(|error| TopologyError::Affinity {
            worker: index,
            cpus: set.clone(),
            error,
        })?;
    }
    if let Some(nice) = plan.nice {
        set_current_nice(nice).map_err(|e| nice_error(index, nice, e))?;
    }
    Ok(())
}

/// The error for a failed `setpriority`.
pub(crate) fn nice_error(index: usize, nice: i32, error: io::Error) -> TopologyError {
    let what = format!("set nice {nice} on jobsys-worker-{}", index + 1);
    if error.kind() == io::ErrorKind::Unsupported {
        return TopologyError::Unsupported {
            what: "worker_nice (per-thread nice values)".to_string(),
        };
    }
    if error.kind() != io::ErrorKind::PermissionDenied {
        return TopologyError::Os { what, error };
    }
    let hint = format!(
        "lowering a thread's nice value needs CAP_SYS_NICE or an RLIMIT_NICE of at least {} \
         (`ulimit -e`, `nice` in /etc/security/limits.conf); raising it (0..=19) is always allowed",
        20 - nice
    );
    TopologyError::NotPermitted { what, error, hint }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_errors_name_the_cause() {
        let denied = io::Error::from(io::ErrorKind::PermissionDenied);
        match nice_error(2, -5, denied) {
            e @ TopologyError::NotPermitted { .. } => {
                let msg = e.to_string();
                assert!(
                    msg.contains("not permitted to set nice -5 on jobsys-worker-3"),
                    "{msg}"
                );
                assert!(msg.contains("CAP_SYS_NICE"), "{msg}");
                assert!(msg.contains("RLIMIT_NICE of at least 25"), "{msg}");
            }
            e => panic!("{e:?}"),
        }
        let other = io::Error::from(io::ErrorKind::InvalidInput);
        assert!(matches!(nice_error(0, 3, other), TopologyError::Os { .. }));
        let unsupported = io::Error::from(io::ErrorKind::Unsupported);
        assert!(matches!(
            nice_error(0, 3, unsupported),
            TopologyError::Unsupported { .. }
        ));
    }
}
