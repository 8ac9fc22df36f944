//! Core topology: which CPUs this process may use, how fast each one is,
//! and how many workers to start where.
//!
//! Owns: the default worker count and its explanation ([`Topology`]), the
//! placement of workers on CPUs (`WorkerPlan`), and per-worker thread
//! setup (affinity, nice). Does not own spawning threads or naming them
//! (`start.rs`), nor resolving `JOBSYS_WORKERS` (`builder.rs`).
//!
//! Public: [`topology()`] and the types of its report. The parsers and OS
//! calls are the crate's own (re-exported, hidden, for its tests).
//!
//! Submodules, each small:
//! - `cpulist`: [`CpuSet`] and the kernel's list syntax `"0-3,8-11"`;
//! - `sysfs`: online CPUs, per-CPU capacity classes and SMT siblings from
//!   `/sys/devices/system/cpu`;
//! - `cgroup`: the cgroup v2 / v1 CPU quota;
//! - `affinity`: the Linux syscalls (`sched_*affinity`, `sched_getcpu`,
//!   `setpriority`) — the only `unsafe` code here;
//! - `plan`: the worker plan and `setup_worker_thread`;
//! - `watch`: `CpuWatch`, the usable-CPU count re-read cheaply while
//!   running (paths resolved once, files re-read on every poll).
//!
//! Every reader takes the filesystem root as a parameter so the tests run
//! on fixture trees; `detect` takes the affinity mask as a value for the
//! same reason. Missing files mean "absent", never an error: on machines
//! without the files (VMs, containers, other OSes) everything still works
//! and [`Topology`] says what it could not find.
//!
//! The rules (also in `docs/cores.md`):
//! - usable CPUs = the affinity mask ∩ online CPUs (optionally without
//!   efficiency cores), capped by the cgroup quota rounded **down** (at
//!   least 1);
//! - default workers = usable − 1 (the calling thread is the remaining one).

mod affinity;
mod cgroup;
mod cpulist;
mod error;
mod plan;
mod sysfs;
mod watch;
pub(crate) use affinity::MaskSource;
pub(crate) use watch::CpuWatch;

// The report `topology()` returns and the types of its fields: the public
// API. Everything else is the crate's own; `internals` re-exports the
// parsers and OS calls for jobsys's own integration tests only.
pub use cgroup::{CgroupQuota, CgroupVersion};
pub use cpulist::{CpuListError, CpuSet, MAX_CPU};
pub use error::TopologyError;
pub use sysfs::{CapacitySource, CoreClass, CoreClasses, CpuCapacity};

pub(crate) use affinity::current_affinity;
pub(crate) use cgroup::read_cgroup_quota;
pub(crate) use plan::{plan, setup_worker_thread, TopologyConfig};
pub(crate) use sysfs::{present_cpus, read_core_classes, read_online, read_smt_siblings, CPU_DIR};

/// Not part of the API: the parsers, readers and OS calls behind
/// [`topology()`], exported for jobsys's own integration tests (which run
/// them on fixture trees and check worker placement). They may change in
/// any release; use [`topology()`] and the builder's options instead.
#[doc(hidden)]
pub mod internals {
    pub use super::affinity::{
        current_affinity, current_cpu, current_nice, set_current_affinity, set_current_nice,
    };
    pub use super::cgroup::{
        parse_cfs, parse_cpu_max, parse_mountinfo, parse_proc_cgroup, read_cgroup_quota,
        CgroupMount, ProcCgroup,
    };
    pub use super::cpulist::parse_cpu_list;
    pub use super::plan::{
        plan, plan_for, setup_worker_thread, Placement, TopologyConfig, WorkerPlan,
    };
    pub use super::sysfs::{
        classify, present_cpus, read_core_classes, read_online, read_smt_siblings, CPU_DIR,
        EFFICIENCY_THRESHOLD_PERCENT, TIER_TOLERANCE_PERCENT,
    };

    /// The usable CPUs that the running system's watch (`follow_cpus`)
    /// counts under `root` with the given affinity mask: it must agree
    /// with `detect` (its default workers + 1).
    pub fn watched_usable(root: &std::path::Path, mask: Option<&super::CpuSet>) -> usize {
        super::CpuWatch::new(root, super::MaskSource::CallingThread).poll_with_mask(mask)
    }

    /// The topology as seen under `root` (a fixture tree) with the given
    /// affinity mask (`None`: unknown).
    pub fn detect(root: &std::path::Path, affinity: Option<super::CpuSet>) -> super::Topology {
        super::detect(root, affinity)
    }
}

/// The largest worker count `build` accepts (and the most the default
/// worker count becomes). Anything above is almost certainly a bug (a job
/// system with more threads than any machine has cores only adds
/// contention), so asking for more is an error rather than a silent clamp.
pub const MAX_WORKERS: usize = 512;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// What jobsys found out about the CPUs this process may use, and the
/// worker count it derives from that. Get it with
/// [`topology()`](crate::topology()); print it with `{}`.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Topology {
    /// The affinity mask: logical CPUs this thread may run on (`None`:
    /// unknown, e.g. not Linux).
    pub allowed: Option<CpuSet>,
    /// `/sys/devices/system/cpu/online` (`None`: absent).
    pub online: Option<CpuSet>,
    /// The cgroup CPU quota.
    pub quota: CgroupQuota,
    /// Capacity and performance/efficiency class of each online CPU
    /// (`None`: neither `cpu_capacity` nor `cpuinfo_max_freq` exists).
    pub cores: Option<CoreClasses>,
    /// For each online CPU, the hardware threads of its physical core
    /// (itself included); `None`: absent (each CPU is then its own core).
    pub smt_siblings: Option<BTreeMap<usize, CpuSet>>,
    /// Workers `JobSystem::builder().build()` starts by default (without
    /// `JOBSYS_WORKERS` and without `exclude_efficiency_cores`).
    pub default_workers: usize,
    /// Why `default_workers` is what it is, in words.
    pub reason: String,
    /// Files that were absent or unreadable, and other remarks.
    pub notes: Vec<String>,
    /// `std::thread::available_parallelism()`, only consulted when neither
    /// the affinity mask nor the online list is known.
    fallback_parallelism: Option<usize>,
}

/// Read the topology of the running system: `/sys`, `/proc/self` and the
/// calling thread's affinity mask. Cheap enough to call at start-up (a few
/// dozen small file reads); not meant for a frame loop.
pub fn topology() -> Topology {
    let affinity = current_affinity();
    let mut topo = detect(Path::new("/"), affinity.as_ref().ok().cloned());
    if let Err(e) = affinity {
        topo.notes.push(format!("affinity mask: {e}"));
    }
    if let Ok(v) = std::env::var("JOBSYS_WORKERS") {
        topo.notes.push(format!(
            "JOBSYS_WORKERS={v:?} is set: JobSystem::builder() uses it instead of the default"
        ));
    }
    topo
}

/// The topology as seen under `root` (a fixture tree in tests, `/` for the
/// real system) with the given affinity mask (`None`: unknown). Pure apart
/// from reading files, and from `available_parallelism()` when neither the
/// mask nor `online` is known.
pub(crate) fn detect(root: &Path, affinity: Option<CpuSet>) -> Topology {
    let mut notes = Vec::new();
    let online = read_online(root).unwrap_or_else(|e| {
        notes.push(format!("online CPUs: {e}"));
        None
    });
    if online.is_none() && notes.is_empty() {
        notes.push(format!("online CPUs: {CPU_DIR}/online is absent"));
    }
    let quota = read_cgroup_quota(root).unwrap_or_else(|e| {
        notes.push(format!("cgroup quota: {e}"));
        CgroupQuota::Absent
    });
    let examine = match (&online, &affinity) {
        (Some(o), _) => o.clone(),
        (None, Some(a)) => a.clone(),
        (None, None) => present_cpus(root),
    };
    let cores = read_core_classes(root, &examine).unwrap_or_else(|e| {
        notes.push(format!("core classes: {e}"));
        None
    });
    let smt_siblings = read_smt_siblings(root, &examine).unwrap_or_else(|e| {
        notes.push(format!("SMT siblings: {e}"));
        None
    });
    let fallback_parallelism = match (&affinity, &online) {
        (None, None) => Some(std::thread::available_parallelism().map_or(1, |n| n.get())),
        _ => None,
    };
    let mut topo = Topology {
        allowed: affinity,
        online,
        quota,
        cores,
        smt_siblings,
        default_workers: 0,
        reason: String::new(),
        notes,
        fallback_parallelism,
    };
    let d = topo.derive(false);
    topo.default_workers = d.workers;
    topo.reason = d.reason;
    topo
}

/// The outcome of the worker-count rule.
pub(crate) struct Derived {
    /// CPUs workers may run on (`None`: unknown).
    pub(crate) cpus: Option<CpuSet>,
    /// Default worker count.
    pub(crate) workers: usize,
    /// The explanation.
    pub(crate) reason: String,
}

fn n_cpus(n: usize) -> String {
    if n == 1 {
        "1 CPU".to_string()
    } else {
        format!("{n} CPUs")
    }
}

/// "0 workers: …", "1 worker + the calling thread", "N workers + …".
pub(crate) fn workers_phrase(n: usize) -> String {
    match n {
        0 => "0 workers: the calling thread runs every job".to_string(),
        1 => "1 worker + the calling thread".to_string(),
        n => format!("{n} workers + the calling thread"),
    }
}

impl Topology {
    /// The CPUs this process may run on: affinity ∩ online (the affinity
    /// mask alone if they do not overlap, which only a race with hot-plug
    /// produces). `None` when neither is known.
    pub fn usable_cpus(&self) -> Option<CpuSet> {
        match (&self.allowed, &self.online) {
            (Some(a), Some(o)) => {
                let both = a.intersection(o);
                Some(if both.is_empty() { a.clone() } else { both })
            }
            (Some(a), None) => Some(a.clone()),
            (None, Some(o)) => Some(o.clone()),
            (None, None) => None,
        }
    }

    /// The hardware threads sharing `cpu`'s physical core, itself included
    /// (just `cpu` when unknown).
    pub fn siblings_of(&self, cpu: usize) -> CpuSet {
        self.smt_siblings
            .as_ref()
            .and_then(|m| m.get(&cpu).cloned())
            .unwrap_or_else(|| std::iter::once(cpu).collect())
    }

    /// The cgroup quota in CPUs (`None`: no quota, or unknown).
    pub fn quota_cpus(&self) -> Option<f64> {
        self.quota.cpus()
    }

    /// The default worker count and its reason when efficiency cores are
    /// (or are not) excluded.
    pub fn default_workers_for(&self, exclude_efficiency_cores: bool) -> (usize, String) {
        let d = self.derive(exclude_efficiency_cores);
        (d.workers, d.reason)
    }

    /// The worker-count rule, with its explanation.
    pub(crate) fn derive(&self, exclude_efficiency_cores: bool) -> Derived {
        let mut parts: Vec<String> = Vec::new();
        let mut cpus = self.usable_cpus();
        match (&self.allowed, &self.online) {
            (Some(a), Some(o)) => {
                let on = a.intersection(o);
                if on.len() == a.len() {
                    parts.push(format!(
                        "{} in the affinity mask ({a}), {} online",
                        n_cpus(a.len()),
                        n_cpus(o.len())
                    ));
                } else if on.is_empty() {
                    parts.push(format!(
                        "{} in the affinity mask ({a}), none of them listed online ({o}): using the mask",
                        n_cpus(a.len())
                    ));
                } else {
                    parts.push(format!(
                        "{} in the affinity mask ({a}), {} of them online ({on})",
                        n_cpus(a.len()),
                        on.len()
                    ));
                }
            }
            (Some(a), None) => parts.push(format!(
                "{} in the affinity mask ({a}), online CPUs unknown",
                n_cpus(a.len())
            )),
            (None, Some(o)) => parts.push(format!(
                "affinity mask unknown, {} online ({o})",
                n_cpus(o.len())
            )),
            (None, None) => parts.push(format!(
                "affinity mask and online CPUs unknown, the OS reports {} available",
                n_cpus(self.fallback_parallelism.unwrap_or(1))
            )),
        }
        if exclude_efficiency_cores {
            match (&self.cores, &cpus) {
                (None, _) => parts.push(
                    "efficiency cores cannot be told apart (capacity information absent): all CPUs kept"
                        .to_string(),
                ),
                (Some(_), None) => parts.push(
                    "the CPU set is unknown: efficiency cores cannot be excluded".to_string(),
                ),
                (Some(cores), Some(set)) => {
                    let perf = set.intersection(&cores.performance());
                    if perf.is_empty() {
                        parts.push(
                            "no performance core among them: efficiency cores kept".to_string(),
                        );
                    } else if perf.len() < set.len() {
                        parts.push(format!(
                            "without efficiency cores ({}) {} remain ({perf})",
                            set.difference(&perf),
                            n_cpus(perf.len())
                        ));
                        cpus = Some(perf);
                    } else {
                        parts.push("no efficiency cores among them".to_string());
                    }
                }
            }
        }
        let n = cpus
            .as_ref()
            .map_or(self.fallback_parallelism.unwrap_or(1), CpuSet::len)
            .max(1);
        let usable = match &self.quota {
            CgroupQuota::Limited { version, .. } => {
                let whole = self.quota.whole_cpus().unwrap_or(1);
                let q = cgroup::fmt_cpus(self.quota.cpus().unwrap_or(0.0));
                parts.push(format!("{version} quota {q} CPUs (rounded down: {whole})"));
                n.min(whole)
            }
            CgroupQuota::Unlimited { .. } => {
                parts.push("no cgroup CPU quota".to_string());
                n
            }
            CgroupQuota::Absent => {
                parts.push("cgroup CPU quota unknown".to_string());
                n
            }
        };
        let mut workers = usable - 1;
        let mut tail = format!("{usable} usable → {}", workers_phrase(workers));
        if workers > MAX_WORKERS {
            workers = MAX_WORKERS;
            tail = format!("{usable} usable → {MAX_WORKERS} workers (the MAX_WORKERS limit)");
        }
        Derived {
            cpus,
            workers,
            reason: format!("{} → {tail}", parts.join(", ")),
        }
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set = |s: &Option<CpuSet>| match s {
            Some(s) => format!("{s} ({})", n_cpus(s.len())),
            None => "absent".to_string(),
        };
        writeln!(f, "jobsys topology")?;
        writeln!(f, "  CPUs allowed (affinity mask): {}", set(&self.allowed))?;
        writeln!(f, "  CPUs online:                  {}", set(&self.online))?;
        writeln!(f, "  cgroup CPU quota:             {}", self.quota)?;
        match &self.cores {
            Some(c) => writeln!(f, "  core classes:                 {c}")?,
            None => writeln!(
                f,
                "  core classes:                 absent (no cpu_capacity or cpufreq/cpuinfo_max_freq)"
            )?,
        }
        match &self.smt_siblings {
            Some(m) => match m.values().map(CpuSet::len).max().unwrap_or(1) {
                1 => writeln!(
                    f,
                    "  SMT:                          none (1 hardware thread per core)"
                )?,
                n => writeln!(
                    f,
                    "  SMT:                          up to {n} hardware threads per core"
                )?,
            },
            None => writeln!(
                f,
                "  SMT:                          absent (no topology/core_cpus_list)"
            )?,
        }
        write!(
            f,
            "  default workers:              {} ({})",
            self.default_workers, self.reason
        )?;
        for note in &self.notes {
            write!(f, "\n  note: {note}")?;
        }
        Ok(())
    }
}
