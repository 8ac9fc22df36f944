//! Configuration of a [`JobSystem`](crate::JobSystem): worker count and idle policy.

use std::fmt;
use std::time::Duration;

// Defined beside the worker-count rules that clamp to it (the topology's
// default); `build` refuses more.
pub use crate::topology::MAX_WORKERS;

/// Smallest worker stack [`Builder::stack_size`] accepts: 64 KiB. Smaller
/// stacks (std rounds 0 up to the platform's 16 KiB minimum) overflow in the
/// worker loop itself in a debug build, which kills the process with SIGSEGV
/// instead of reporting anything.
pub const MIN_STACK_SIZE: usize = 64 * 1024;

/// How idle workers wait for work. Every policy is measured on W4 (wake
/// latency) and W5 (CPU burned while idle) together: see `docs/benchmarks.md`.
///
/// `JOBSYS_IDLE_POLICY` (`spin-then-sleep`, `spin-then-sleep:50us`,
/// `whipping-boy`, `always-spin`, `adaptive`) sets the policy of systems
/// whose builder did not choose one.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum IdlePolicy {
    /// The default: search and spin for at most `spin` (a bound on time, not
    /// on loop iterations), then sleep on the worker's own futex word.
    SpinThenSleep {
        /// How long an idle worker keeps looking before it sleeps.
        spin: Duration,
    },
    /// Exactly one worker stays awake searching whenever not all workers are
    /// busy, so `schedule` never pays for a wake (it only touches memory).
    /// That worker wakes the next one when it finds work; when it takes a job
    /// itself, it wakes a sleeper to take over the role. Costs about one core
    /// while the system is idle.
    ///
    /// With more than one worker, consider [`Builder::pin_workers`]: the
    /// successor is woken before the boy runs its job, and an unpinned
    /// successor is often placed on the boy's own CPU and preempts it
    /// (`docs/design-notes.md`, "Whipping boy with several workers").
    WhippingBoy,
    /// Workers never sleep. The nuclear option: lowest latency, burns every
    /// worker's core all the time (consoles, benchmarks).
    AlwaysSpin,
    /// Each worker measures how long it recently waited for work and spins
    /// only when work usually arrives within its spin budget (at most
    /// `max_spin`), sleeping at once otherwise; spinning is further limited
    /// to `cpu_cap` (a share of one core, 0.0..=1.0) per worker. See
    /// `src/sleep/README.md` for the rule.
    Adaptive {
        /// The longest a worker ever spins before sleeping.
        max_spin: Duration,
        /// Share of a core a worker may spend spinning, per window.
        cpu_cap: f32,
    },
}

impl Default for IdlePolicy {
    fn default() -> Self {
        IdlePolicy::SpinThenSleep {
            spin: Duration::from_micros(30),
        }
    }
}

impl IdlePolicy {
    /// The default adaptive policy: spin at most 50 µs, at most 10% of a core.
    pub const ADAPTIVE: IdlePolicy = IdlePolicy::Adaptive {
        max_spin: Duration::from_micros(50),
        cpu_cap: 0.1,
    };

    /// A short name for tables and traces, e.g. `spin-then-sleep(30us)`.
    pub fn name(&self) -> String {
        match self {
            IdlePolicy::SpinThenSleep { spin } => {
                format!("spin-then-sleep({}us)", spin.as_micros())
            }
            IdlePolicy::WhippingBoy => "whipping-boy".to_string(),
            IdlePolicy::AlwaysSpin => "always-spin".to_string(),
            IdlePolicy::Adaptive { max_spin, cpu_cap } => {
                format!(
                    "adaptive({}us,{:.0}%)",
                    max_spin.as_micros(),
                    cpu_cap * 100.0
                )
            }
        }
    }

    /// The spin bound of the policy, used by threads waiting in `complete`.
    pub(crate) fn wait_spin(&self) -> Duration {
        match *self {
            IdlePolicy::SpinThenSleep { spin } => spin,
            IdlePolicy::Adaptive { max_spin, .. } => max_spin,
            IdlePolicy::WhippingBoy | IdlePolicy::AlwaysSpin => Duration::from_micros(30),
        }
    }

    fn validate(&self) -> Result<(), BuildError> {
        if let IdlePolicy::Adaptive { cpu_cap, .. } = *self {
            if !(0.0..=1.0).contains(&cpu_cap) {
                return Err(BuildError::BadPolicy {
                    reason: format!(
                        "Adaptive cpu_cap {cpu_cap} is not a share of a core in 0.0..=1.0"
                    ),
                });
            }
        }
        Ok(())
    }
}

impl std::str::FromStr for IdlePolicy {
    type Err = BuildError;

    /// `spin-then-sleep[:<n>us]`, `whipping-boy`, `always-spin`, `adaptive`.
    fn from_str(s: &str) -> Result<Self, BuildError> {
        let bad = || {
            BuildError::BadPolicy {
            reason: format!(
                "{s:?} is not an idle policy (spin-then-sleep[:<n>us], whipping-boy, always-spin, adaptive)"
            ),
        }
        };
        let s = s.trim();
        match s {
            "spin-then-sleep" => Ok(IdlePolicy::default()),
            "whipping-boy" => Ok(IdlePolicy::WhippingBoy),
            "always-spin" => Ok(IdlePolicy::AlwaysSpin),
            "adaptive" => Ok(IdlePolicy::ADAPTIVE),
            _ => {
                let us = s
                    .strip_prefix("spin-then-sleep:")
                    .and_then(|r| r.strip_suffix("us"))
                    .and_then(|n| n.parse::<u64>().ok())
                    .ok_or_else(bad)?;
                Ok(IdlePolicy::SpinThenSleep {
                    spin: Duration::from_micros(us),
                })
            }
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
    /// How idle workers wait. `None`: `JOBSYS_IDLE_POLICY` if set, else
    /// [`IdlePolicy::default`].
    pub idle_policy: Option<IdlePolicy>,
    /// How long a thread in `complete` keeps looking for work the handle
    /// needs before it sleeps on the handle. `None`: same as the spin of the
    /// idle policy.
    pub wait_spin: Option<Duration>,
    /// Stack size of worker threads in bytes; `None` is the std default.
    pub stack_size: Option<usize>,
    /// Priority inheritance (default on): workers take jobs that a thread
    /// in `complete` needs before any other work. Off only to measure what
    /// it buys (the waiter still helps with them itself).
    pub no_priority_inheritance: bool,
    /// Keep workers off efficiency cores (LITTLE / E-cores) and leave them
    /// out of the default count. See `docs/cores.md`.
    pub exclude_efficiency_cores: bool,
    /// Test mode: choices among ready jobs come from this seed (see
    /// [`Builder::shuffle`]). `None` (the default): `JOBSYS_SHUFFLE` if
    /// set (a seed, or `random`), else the usual order.
    pub shuffle: Option<u64>,
    /// Pin each worker to its own CPU, keeping the calling thread's CPU
    /// free of workers. See `docs/cores.md`.
    pub pin_workers: bool,
    /// Nice value (−20..=19) each worker sets on itself (Linux); `None`
    /// leaves them as spawned. Lowering it needs `CAP_SYS_NICE`.
    pub worker_nice: Option<i32>,
    /// How many failed jobs' failures stay observable through their handles
    /// after their slots are reused. `None`: [`DEFAULT_FAILURE_HISTORY`].
    /// See `docs/storage.md`.
    pub failure_history: Option<usize>,
    /// Bound on unfinished jobs before a thread that needs more job storage
    /// makes room first (back-pressure): at its top level it runs queued
    /// jobs, inside a job or a wait it waits for other threads to finish
    /// some. `None`: [`DEFAULT_MAX_JOBS`]. Must be at least 1. See
    /// `docs/storage.md`, "Back-pressure".
    pub max_jobs: Option<usize>,
    /// Job slots each thread keeps when it is idle; whole pages of free
    /// slots beyond that are given back to the OS (a worker before it
    /// sleeps, another thread when its outermost `complete` returns, or
    /// [`JobSystem::trim_storage`](crate::JobSystem::trim_storage)), but
    /// when idle, never those the thread's peak of the last second or two
    /// needs (a frame loop keeps its storage). `None`:
    /// [`DEFAULT_RETAINED_SLOTS`]. See `docs/storage.md`, "Trimming".
    pub retained_slots: Option<usize>,
    /// Follow the CPUs the process may use while it runs (affinity mask,
    /// cgroup quota, online CPUs, re-read every few milliseconds by a
    /// thread that is awake anyway): the active worker count becomes
    /// usable CPUs − 1, capped by `set_active_workers`. See
    /// `docs/engine.md`.
    pub follow_cpus: bool,
    /// Callbacks for an external profiler (Tracy, …), called from every
    /// thread of the system as it schedules, runs, waits and sleeps. See
    /// [`ProfilerHooks`](crate::ProfilerHooks) and `docs/profiling.md`.
    pub profiler: Option<std::sync::Arc<dyn crate::ProfilerHooks>>,
    /// What to do with a job's panic that no wait read, once nothing can
    /// read it any more (the failure log forgot it and its slot was reused,
    /// or the system dropped). `None`: print one line to stderr naming the
    /// job. Either way [`Stats::panics_unobserved`](crate::Stats) counts it.
    pub on_unobserved_panic: Option<crate::PanicHandler>,
    /// Tests only: plan the workers on the topology of this fake root
    /// (`tests/fixtures/topology`) instead of the machine's, without
    /// placing them (their core classes are the fixture's).
    #[doc(hidden)]
    pub topology_fixture: Option<std::path::PathBuf>,
}

/// Job slots a thread keeps when idle, by default (64 pages, 2 MiB).
pub const DEFAULT_RETAINED_SLOTS: usize = 1 << 14;

/// Failures remembered after their slots are reused, by default.
pub const DEFAULT_FAILURE_HISTORY: usize = 4096;
/// Unfinished jobs a system holds before new job storage waits, by default
/// (4 Mi jobs: about 512 MiB of slots).
pub const DEFAULT_MAX_JOBS: usize = 1 << 22;

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
        self.config.idle_policy = Some(policy);
        self
    }
    /// Bound on how long `complete` searches before it sleeps.
    pub fn wait_spin(mut self, spin: Duration) -> Self {
        self.config.wait_spin = Some(spin);
        self
    }
    /// Priority inheritance on (the default) or off (see
    /// [`Config::no_priority_inheritance`]).
    pub fn priority_inheritance(mut self, on: bool) -> Self {
        self.config.no_priority_inheritance = !on;
        self
    }
    /// Stack size for worker threads, at least [`MIN_STACK_SIZE`] (else
    /// `build` fails with [`BuildError::StackTooSmall`]).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.config.stack_size = Some(bytes);
        self
    }
    /// Test mode that shuffles the order of jobs that may run in any
    /// order, to find missing dependencies: wherever a thread chooses
    /// among ready jobs (which of its queued jobs it takes, whether it
    /// takes its own or steals first, which thread it steals from, which
    /// of the jobs a waiter needs it runs first), the choice comes from a
    /// random sequence started from `seed`. Dependencies, priorities
    /// (`High` before `Normal` before `Low`), pinning and access rules are
    /// kept: only what they leave open is shuffled.
    ///
    /// With `workers(0)` the whole order repeats: the same seed and the
    /// same program give the same order on every run, so a seed that
    /// breaks a test reproduces it. With workers, each thread's choices
    /// repeat but the moments threads look for work do not, so the order
    /// does not repeat. Off (the default) costs nothing: workers choose
    /// their loop once, at start. Without this call the `JOBSYS_SHUFFLE`
    /// environment variable turns it on (a seed, or `random`: a seed is
    /// drawn and printed to stderr), also for C and C++ programs. See
    /// `docs/engine.md`, "Shuffled order".
    pub fn shuffle(mut self, seed: u64) -> Self {
        self.config.shuffle = Some(seed);
        self
    }

    /// Keep workers off efficiency cores (see [`Config::exclude_efficiency_cores`]).
    pub fn exclude_efficiency_cores(mut self, on: bool) -> Self {
        self.config.exclude_efficiency_cores = on;
        self
    }
    /// Tests only: see [`Config::topology_fixture`].
    #[doc(hidden)]
    pub fn topology_fixture(mut self, root: impl Into<std::path::PathBuf>) -> Self {
        self.config.topology_fixture = Some(root.into());
        self
    }

    /// Pin workers one per CPU (see [`Config::pin_workers`]).
    pub fn pin_workers(mut self, on: bool) -> Self {
        self.config.pin_workers = on;
        self
    }
    /// Nice value for worker threads (see [`Config::worker_nice`]).
    pub fn worker_nice(mut self, nice: i32) -> Self {
        self.config.worker_nice = Some(nice);
        self
    }
    /// How many failures stay observable after their slots are reused
    /// (see [`Config::failure_history`]).
    pub fn failure_history(mut self, n: usize) -> Self {
        self.config.failure_history = Some(n);
        self
    }
    /// Call `f` with each job panic that no wait read, instead of printing
    /// it (see [`Config::on_unobserved_panic`]; e.g. log it, count it, or
    /// `std::process::abort()` in a debug build). `f` runs on whichever
    /// thread lets go of the failure last: it must not wait on this
    /// system's jobs nor hold a clone of the `JobSystem`.
    pub fn on_unobserved_panic(
        mut self,
        f: impl Fn(&crate::JobError) + Send + Sync + 'static,
    ) -> Self {
        self.config.on_unobserved_panic = Some(crate::PanicHandler(std::sync::Arc::new(f)));
        self
    }
    /// Bound on unfinished jobs before new job storage waits (see
    /// [`Config::max_jobs`]).
    pub fn max_jobs(mut self, n: usize) -> Self {
        self.config.max_jobs = Some(n);
        self
    }
    /// Job slots each thread keeps when idle (see [`Config::retained_slots`]).
    pub fn retained_slots(mut self, n: usize) -> Self {
        self.config.retained_slots = Some(n);
        self
    }
    /// Follow the CPUs the process may use (see [`Config::follow_cpus`]).
    pub fn follow_cpus(mut self, on: bool) -> Self {
        self.config.follow_cpus = on;
        self
    }
    /// Install profiler hooks (see [`ProfilerHooks`](crate::ProfilerHooks),
    /// `docs/profiling.md`): every thread of the system calls them as it
    /// starts, runs jobs, waits, sleeps, wakes others and marks frames.
    /// Called only when jobsys has its `trace` feature (the default). With
    /// the `tracy` feature, `Builder::tracy` installs ready ones.
    pub fn profiler(mut self, hooks: std::sync::Arc<dyn crate::ProfilerHooks>) -> Self {
        self.config.profiler = Some(hooks);
        self
    }
    /// Install [`tracy::TracyHooks`](crate::tracy::TracyHooks): the
    /// system's threads, jobs, waits, sleeps and frames in the Tracy
    /// profiler (feature `tracy`; `docs/profiling.md`).
    #[cfg(feature = "tracy")]
    pub fn tracy(self) -> Self {
        self.profiler(std::sync::Arc::new(crate::tracy::TracyHooks::new()))
    }
    /// The configuration built so far.
    pub fn config(&self) -> &Config {
        &self.config
    }
    /// The configuration, for `build` (`system.rs`, where `build` lives:
    /// this module sits below the system, which starts from a `Config`).
    pub(crate) fn into_config(self) -> Config {
        self.config
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
    /// An environment variable is set but its value is not one:
    /// `JOBSYS_WORKERS` not a worker count, `JOBSYS_SHUFFLE` not a seed.
    /// Its `Debug` (what `unwrap` prints) names the variable as `Display`
    /// does.
    BadEnvironment {
        /// The variable's name.
        variable: &'static str,
        /// The variable's value.
        value: String,
    },
    /// The idle policy is invalid (or `JOBSYS_IDLE_POLICY` names none).
    BadPolicy {
        /// What is wrong.
        reason: String,
    },
    /// A worker stack below [`MIN_STACK_SIZE`] was asked for.
    StackTooSmall {
        /// What was asked for, bytes.
        requested: usize,
        /// The minimum, bytes.
        min: usize,
    },
    /// The operating system refused to start a worker thread.
    Spawn(std::io::Error),
    /// A topology setting could not be honoured (nice not permitted or out
    /// of range, affinity rejected).
    Topology(crate::topology::TopologyError),
    /// `max_jobs` was 0: no job could ever be scheduled.
    ZeroMaxJobs,
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::TooManyWorkers { requested, max } => write!(
                f,
                "jobsys: {requested} workers requested, the limit is {max} (use at most the cores you have)"
            ),
            BuildError::BadEnvironment { variable, value } if *variable == "JOBSYS_SHUFFLE" => write!(
                f,
                "jobsys: {variable}={value:?} is not a shuffle seed (expected an integer 0..={} or `random`)",
                u64::MAX
            ),
            BuildError::BadEnvironment { variable, value } => write!(
                f,
                "jobsys: {variable}={value:?} is not a worker count (expected an integer 0..={MAX_WORKERS})"
            ),
            BuildError::BadPolicy { reason } => write!(f, "jobsys: {reason}"),
            BuildError::StackTooSmall { requested, min } => write!(
                f,
                "jobsys: a worker stack of {requested} bytes is too small (the minimum is {min} bytes)"
            ),
            BuildError::Spawn(e) => write!(f, "jobsys: could not start a worker thread: {e}"),
            BuildError::Topology(e) => write!(f, "{e}"),
            BuildError::ZeroMaxJobs => write!(
                f,
                "jobsys: max_jobs is 0; at least one unfinished job must fit"
            ),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Spawn(e) => Some(e),
            BuildError::Topology(e) => Some(e),
            _ => None,
        }
    }
}

/// The worker count asked for: `Config::workers`, else `JOBSYS_WORKERS`;
/// `None` leaves it to the topology (`topology::plan`: usable CPUs − 1).
pub(crate) fn resolve_workers(requested: Option<usize>) -> Result<Option<usize>, BuildError> {
    let n = match requested {
        Some(n) => n,
        None => match std::env::var("JOBSYS_WORKERS") {
            Ok(value) => value
                .trim()
                .parse::<usize>()
                .map_err(|_| BuildError::BadEnvironment {
                    variable: "JOBSYS_WORKERS",
                    value: value.clone(),
                })?,
            Err(_) => return Ok(None),
        },
    };
    if n > MAX_WORKERS {
        return Err(BuildError::TooManyWorkers {
            requested: n,
            max: MAX_WORKERS,
        });
    }
    Ok(Some(n))
}

/// The shuffle seed: `Config::shuffle`, else `JOBSYS_SHUFFLE` (a number,
/// or `random`: one seed per process from the clock, printed to stderr
/// once so a failing run can be repeated); `None`: the usual order.
pub(crate) fn resolve_shuffle(requested: Option<u64>) -> Result<Option<u64>, BuildError> {
    if requested.is_some() {
        return Ok(requested);
    }
    let Ok(value) = std::env::var("JOBSYS_SHUFFLE") else {
        return Ok(None);
    };
    let seed = if value.trim() == "random" {
        // One seed per process, printed once: every system of the run
        // shuffles from it, and `JOBSYS_SHUFFLE=<seed>` repeats the run.
        static DRAWN: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        *DRAWN.get_or_init(|| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            let seed = now.as_nanos() as u64 ^ u64::from(std::process::id()).rotate_left(32);
            eprintln!("jobsys: JOBSYS_SHUFFLE=random: shuffling with seed {seed} (JOBSYS_SHUFFLE={seed} repeats it)");
            seed
        })
    } else {
        value
            .trim()
            .parse::<u64>()
            .map_err(|_| BuildError::BadEnvironment {
                variable: "JOBSYS_SHUFFLE",
                value: value.clone(),
            })?
    };
    Ok(Some(seed))
}

/// The idle policy `Config::idle_policy == None` resolves to.
pub(crate) fn resolve_policy(requested: Option<IdlePolicy>) -> Result<IdlePolicy, BuildError> {
    let policy = match requested {
        Some(p) => p,
        None => match std::env::var("JOBSYS_IDLE_POLICY") {
            // Name the variable: the text alone does not say where it came from.
            Ok(v) => v.parse().map_err(|e| match e {
                BuildError::BadPolicy { reason } => BuildError::BadPolicy {
                    reason: format!("JOBSYS_IDLE_POLICY: {reason}"),
                },
                e => e,
            })?,
            Err(_) => IdlePolicy::default(),
        },
    };
    policy.validate()?;
    Ok(policy)
}
