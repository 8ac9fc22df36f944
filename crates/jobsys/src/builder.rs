//! Configuration of a [`JobSystem`](crate::JobSystem): worker count and idle policy.

use std::fmt;
use std::time::Duration;

/// The largest worker count `build` accepts. Anything above is almost
/// certainly a bug (a job system with more threads than any machine has
/// cores only adds contention), so it is an error rather than a silent clamp.
pub const MAX_WORKERS: usize = 512;

/// How idle workers wait for work.
///
/// More policies arrive with the idle-policy work; the default is
/// [`IdlePolicy::SpinThenSleep`] with a 30 µs spin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdlePolicy {
    /// Search and spin for at most `spin` (a bound on time, not on loop
    /// iterations), then sleep on the worker's own futex word.
    SpinThenSleep {
        /// How long an idle worker keeps looking before it sleeps.
        spin: Duration,
    },
}

impl Default for IdlePolicy {
    fn default() -> Self {
        IdlePolicy::SpinThenSleep {
            spin: Duration::from_micros(30),
        }
    }
}

/// Everything `JobSystem::new` needs. `Config::default()` gives the
/// documented defaults; [`Builder`] is the fluent way to set them.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// Worker threads to start. `None`: the `JOBSYS_WORKERS` environment
    /// variable if set, else the CPUs this process may use minus one (the
    /// calling thread is the remaining one). `Some(0)` is valid: the threads
    /// that call `complete` do all the work.
    pub workers: Option<usize>,
    /// How idle workers wait.
    pub idle_policy: IdlePolicy,
    /// How long a thread in `complete` keeps looking for work the handle
    /// needs before it sleeps on the handle. `None`: same as the spin of the
    /// idle policy.
    pub wait_spin: Option<Duration>,
    /// Stack size of worker threads in bytes; `None` is the std default.
    pub stack_size: Option<usize>,
}

/// Fluent construction of a [`JobSystem`](crate::JobSystem).
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct Builder {
    config: Config,
}

impl Builder {
    /// Number of worker threads (see [`Config::workers`]).
    pub fn workers(mut self, n: usize) -> Self {
        self.config.workers = Some(n);
        self
    }
    /// The idle policy (see [`IdlePolicy`]).
    pub fn idle_policy(mut self, policy: IdlePolicy) -> Self {
        self.config.idle_policy = policy;
        self
    }
    /// Bound on how long `complete` searches before it sleeps.
    pub fn wait_spin(mut self, spin: Duration) -> Self {
        self.config.wait_spin = Some(spin);
        self
    }
    /// Stack size for worker threads.
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.config.stack_size = Some(bytes);
        self
    }
    /// The configuration built so far.
    pub fn config(&self) -> &Config {
        &self.config
    }
    /// Start the workers.
    pub fn build(self) -> Result<crate::JobSystem, BuildError> {
        crate::JobSystem::new(self.config)
    }
}

/// Why a [`JobSystem`](crate::JobSystem) could not be built.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// More workers than [`MAX_WORKERS`] were asked for.
    TooManyWorkers {
        /// What was asked for.
        requested: usize,
        /// The limit.
        max: usize,
    },
    /// `JOBSYS_WORKERS` is set but is not a worker count.
    BadEnvironment {
        /// The variable's value.
        value: String,
    },
    /// The operating system refused to start a worker thread.
    Spawn(std::io::Error),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::TooManyWorkers { requested, max } => write!(
                f,
                "jobsys: {requested} workers requested, the limit is {max} (use at most the cores you have)"
            ),
            BuildError::BadEnvironment { value } => write!(
                f,
                "jobsys: JOBSYS_WORKERS={value:?} is not a worker count (expected an integer 0..={MAX_WORKERS})"
            ),
            BuildError::Spawn(e) => write!(f, "jobsys: could not start a worker thread: {e}"),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Spawn(e) => Some(e),
            _ => None,
        }
    }
}

/// The worker count `Config::workers == None` resolves to.
pub(crate) fn resolve_workers(requested: Option<usize>) -> Result<usize, BuildError> {
    let n = match requested {
        Some(n) => n,
        None => match std::env::var("JOBSYS_WORKERS") {
            Ok(value) => value
                .trim()
                .parse::<usize>()
                .map_err(|_| BuildError::BadEnvironment {
                    value: value.clone(),
                })?,
            // available_parallelism honours the affinity mask and the cgroup
            // CPU quota on Linux; one CPU is left for the calling thread.
            Err(_) => std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
                .saturating_sub(1),
        },
    };
    if n > MAX_WORKERS {
        return Err(BuildError::TooManyWorkers {
            requested: n,
            max: MAX_WORKERS,
        });
    }
    Ok(n)
}
