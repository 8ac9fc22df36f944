//! [`TopologyError`]: everything that can go wrong while reading the
//! topology or setting up a worker thread.

use super::cpulist::CpuSet;
use std::fmt;
use std::path::PathBuf;

/// Why topology information could not be read, or a worker thread could not
/// be set up as configured.
///
/// Reading errors (`Unreadable`, `Malformed`) never fail
/// [`topology()`](crate::topology()); it reports the information as absent
/// and lists the error in [`Topology::notes`](super::Topology::notes).
#[derive(Debug)]
#[non_exhaustive]
pub enum TopologyError {
    /// A file exists but could not be read.
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file was read but its contents are not what the kernel writes.
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// `worker_nice` outside the range Linux accepts (−20..=19).
    InvalidNice {
        /// What was asked for.
        nice: i32,
    },
    /// The operating system refused a setting for lack of privilege, e.g. a
    /// negative nice value without `CAP_SYS_NICE`.
    NotPermitted {
        /// What was being done, e.g. `"set nice -5 on jobsys-worker-1"`.
        what: String,
        /// The OS error, e.g. "Permission denied (os error 13)".
        error: std::io::Error,
        /// What would make it work.
        hint: String,
    },
    /// `sched_setaffinity` failed for a worker.
    Affinity {
        /// The worker's place in the plan (`WorkerPlan`'s placements, from
        /// 0): the thread `jobsys-worker-{worker + 1}`, thread index
        /// `worker + 1` (`docs/engine.md`, "Thread index").
        worker: usize,
        /// The CPUs it was to run on.
        cpus: CpuSet,
        /// The OS error.
        error: std::io::Error,
    },
    /// Another OS error while applying a setting.
    Os {
        /// What was being done.
        what: String,
        /// The OS error.
        error: std::io::Error,
    },
    /// The setting does not exist on this operating system.
    Unsupported {
        /// The setting.
        what: String,
    },
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologyError::Unreadable { path, source } => {
                write!(f, "jobsys: cannot read {}: {source}", path.display())
            }
            TopologyError::Malformed { path, detail } => {
                write!(
                    f,
                    "jobsys: unexpected contents in {}: {detail}",
                    path.display()
                )
            }
            TopologyError::InvalidNice { nice } => write!(
                f,
                "jobsys: worker_nice({nice}) is out of range (Linux nice values are -20..=19)"
            ),
            TopologyError::NotPermitted { what, error, hint } => {
                write!(f, "jobsys: not permitted to {what}: {error}; {hint}")
            }
            TopologyError::Affinity {
                worker,
                cpus,
                error,
            } => write!(
                f,
                "jobsys: cannot restrict jobsys-worker-{} to CPUs {cpus}: {error}",
                worker + 1
            ),
            TopologyError::Os { what, error } => write!(f, "jobsys: cannot {what}: {error}"),
            TopologyError::Unsupported { what } => {
                write!(
                    f,
                    "jobsys: {what} is not supported on this operating system"
                )
            }
        }
    }
}

impl std::error::Error for TopologyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TopologyError::Unreadable { source, .. } => Some(source),
            TopologyError::NotPermitted { error, .. }
            | TopologyError::Affinity { error, .. }
            | TopologyError::Os { error, .. } => Some(error),
            _ => None,
        }
    }
}
