//! jobsys: a work-stealing job system for frame-based real-time programs.
//!
//! Every thread that schedules owns a work-stealing deque; jobs live in
//! per-thread slot stores (no allocation per job on the fast path); a job
//! with unfinished dependencies is not queued until its last dependency
//! finishes; idle workers sleep on their own futex word and wake each other.
//!
//! ```
//! use jobsys::{Batch, JobSystem};
//! let js = JobSystem::builder().workers(2).build().unwrap();
//! let a = js.schedule(|| { /* physics */ });
//! let b = js.schedule_after(&[a], || { /* animation, after physics */ });
//! let c = js.parallel_for(0..1000, Batch::Auto, |i| { let _ = i * 2; });
//! let frame = js.combine(&[b, c]);
//! js.complete(frame);
//! assert!(js.is_complete(frame));
//! ```
//!
//! Design notes live in `docs/` of the repository; the sleep/wake protocol
//! is explained in `src/sleep/README.md`.

pub mod access;
mod active;
mod builder;
mod context;
mod deque;
mod desc;
mod error;
mod failures;
mod handle;
mod job;
mod join;
mod lifecycle;
mod parallel_for;
mod pinned;
mod registry;
mod scope;
mod search;
mod sleep;
mod slot;
mod spawn;
mod start;
mod store;
mod sync;
mod system;
pub mod topology;
pub mod trace;
mod wait;
mod worker;

#[cfg(all(test, not(loom)))]
mod tests;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// docs/engine.md's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/engine.md")]
pub struct EngineDoctests;

/// docs/profiling.md's examples, compiled and run as doctests (the Tracy
/// one is `ignore`: it needs the `tracy` feature and loops forever).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/profiling.md")]
pub struct ProfilingDoctests;

pub use access::{AccessError, ReadNow, Resource, WriteNow};
/// docs/access.md's examples (and its compile_fail checks) as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/access.md")]
pub struct AccessDoctests;

pub use active::ActiveWorkersError;
pub use builder::{
    BuildError, Builder, Config, IdlePolicy, DEFAULT_FAILURE_HISTORY, DEFAULT_MAX_JOBS,
    DEFAULT_RETAINED_SLOTS, MAX_WORKERS, MIN_STACK_SIZE,
};
pub use desc::{JobDesc, Priority};
pub use error::{JobError, JobPanic, PanicHandler};
pub use handle::JobHandle;
pub use lifecycle::is_cancelled;
pub use parallel_for::Batch;
pub use pinned::{Pin, ThreadIndex};
pub use registry::Stats;
pub use scope::Scope;
pub use spawn::{AccessJobBuilder, JobBuilder};
#[doc(hidden)]
pub use system::HandleBits;
pub use system::{HotZone, JobSystem};
pub use topology::{topology, Topology, TopologyError};
#[cfg(feature = "tracy")]
pub use trace::tracy;
pub use trace::ProfilerHooks;
