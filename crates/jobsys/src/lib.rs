//! jobsys: a work-stealing job system for frame-based real-time programs.
//!
//! A game frame is a few milliseconds; inside it hundreds of small jobs
//! (0.5–50 µs) with dependencies must run on every core. Every thread that
//! schedules owns a work-stealing deque and a store of job slots (no shared
//! queue, no allocation per job on the fast path); a job with unfinished
//! dependencies is queued only when its last dependency finishes; idle
//! workers sleep on their own futex word and wake each other, so the
//! scheduling thread rarely pays for a wake; and [`JobSystem::complete`]
//! helps only with the work the handle it waits on needs.
//!
//! # Jobs and dependencies
//!
//! A [`JobSystem`] owns the worker threads; the thread that builds it
//! helps too, whenever it waits. [`schedule`](JobSystem::schedule) returns
//! a [`JobHandle`], a small `Copy` value; [`complete`](JobSystem::complete)
//! waits for it and runs needed work meanwhile; [`combine`](JobSystem::combine)
//! makes one handle of many.
//!
//! ```
//! use jobsys::JobSystem;
//! let js = JobSystem::builder().workers(2).build().unwrap();
//! let physics = js.schedule(|| { /* step the world */ });
//! let animation = js.schedule_after(&[physics], || { /* after physics */ });
//! let audio = js.schedule(|| { /* independent */ });
//! js.complete(js.combine(&[animation, audio]));
//! ```
//!
//! Every other option goes through one builder, [`JobSystem::job`]: a
//! name (shown by the tracer, the profiler and errors), a [`Priority`],
//! dependencies, a pinned thread, batching, declared access.
//!
//! ```
//! use jobsys::{JobSystem, Priority};
//! let js = JobSystem::builder().workers(1).build().unwrap();
//! let input = js.schedule(|| {});
//! let ai = js.job().name("ai").priority(Priority::High).after(&[input]).schedule(|| {});
//! js.complete(ai);
//! ```
//!
//! # Loops, scopes and fork/join
//!
//! [`parallel_for`](JobSystem::parallel_for) is one job split into pieces
//! ([`Batch`]); [`scope`](JobSystem::scope) runs jobs that borrow from the
//! stack and returns when all of them finished;
//! [`join`](JobSystem::join) runs two closures, perhaps in parallel, and
//! returns both results.
//!
//! ```
//! use jobsys::{Batch, JobSystem};
//! use std::sync::atomic::{AtomicU64, Ordering};
//! let js = JobSystem::builder().workers(2).build().unwrap();
//!
//! let sum = std::sync::Arc::new(AtomicU64::new(0));
//! let s = sum.clone();
//! js.complete(js.parallel_for(0..1000, Batch::Auto, move |i| {
//!     s.fetch_add(i as u64, Ordering::Relaxed);
//! }));
//! assert_eq!(sum.load(Ordering::Relaxed), 499_500);
//!
//! let mut tiles = vec![0u32; 8];
//! js.scope(|s| {
//!     for (i, t) in tiles.iter_mut().enumerate() {
//!         s.schedule(move || *t = i as u32);
//!     }
//! });
//! assert_eq!(tiles[7], 7);
//!
//! fn fib(js: &JobSystem, n: u64) -> u64 {
//!     if n < 2 { return n; }
//!     let (a, b) = js.join(|| fib(js, n - 1), || fib(js, n - 2));
//!     a + b
//! }
//! assert_eq!(fib(&js, 12), 144);
//! ```
//!
//! # Failures and cancelling
//!
//! A job that panics fails; its dependents are skipped and fail too, and a
//! wait reports it ([`try_complete`](JobSystem::try_complete) returns a
//! [`JobError`] naming the job; [`complete`](JobSystem::complete) panics
//! with it). A panic that no wait ever reads is reported once nothing can
//! read it any more ([`Builder::on_unobserved_panic`],
//! [`Stats::panics_unobserved`]). [`cancel`](JobSystem::cancel) stops a
//! job that has not started (a running one sees
//! [`is_cancelled`] and may stop early).
//!
//! ```
//! use jobsys::{JobError, JobSystem};
//! let js = JobSystem::builder().workers(1).build().unwrap();
//! # std::panic::set_hook(Box::new(|_| {}));
//! let bad = js.job().name("loader").schedule(|| panic!("file missing"));
//! let after = js.schedule_after(&[bad], || unreachable!());
//! match js.try_complete(after) {
//!     Err(JobError::Panicked(p)) => assert_eq!(p.job_name(), Some("loader")),
//!     other => panic!("{other:?}"),
//! }
//! let (go, wait_for_go) = std::sync::mpsc::channel::<()>();
//! let gate = js.schedule(move || wait_for_go.recv().unwrap());
//! let dropped = js.schedule_after(&[gate], || unreachable!());
//! js.cancel(dropped); // `gate` is still waiting, so `dropped` has not started
//! go.send(()).unwrap();
//! assert!(matches!(js.try_complete(dropped), Err(JobError::Cancelled(_))));
//! ```
//!
//! # Engine threads: pinned jobs and thread indices
//!
//! A job pinned with [`Pin::Main`] runs only on the thread that built the
//! system (graphics APIs, main-thread-only engine code), when that thread
//! waits or calls [`run_pinned`](JobSystem::run_pinned);
//! [`thread_index`](JobSystem::thread_index) numbers the workers and the
//! registered threads densely, for per-thread scratch buffers.
//!
//! ```
//! use jobsys::{JobSystem, Pin};
//! let js = JobSystem::builder().workers(1).build().unwrap();
//! let upload = js.job().pin(Pin::Main).schedule(|| { /* main thread only */ });
//! js.complete(upload); // this thread runs it while it waits
//! assert_eq!(js.thread_index(), Some(0));
//! ```
//!
//! # Declared data access
//!
//! A [`Resource`] wraps data; jobs declare what they read and write, and
//! jobsys orders them (a writer after the previous readers and writer,
//! readers after the previous writer) and hands out exactly `&T` or
//! `&mut T`.
//!
//! ```
//! use jobsys::{JobSystem, Resource};
//! let js = JobSystem::builder().workers(1).build().unwrap();
//! let transforms = Resource::new(vec![0.0f32; 4]);
//! let bones = Resource::new(vec![0.0f32; 4]);
//! js.job().access(transforms.write()).schedule(|t| t.iter_mut().for_each(|x| *x += 1.0));
//! js.job().access((transforms.read(), bones.write())).schedule(|(t, b)| b.copy_from_slice(t));
//! assert_eq!(bones.read_now(&js)[0], 1.0);
//! ```
//!
//! # Seeing it run: the tracer and profiler hooks
//!
//! With the `trace` feature (the default), `JobSystem::trace_start` /
//! `trace_stop` capture every job, wait, steal, sleep and wake of the
//! system into a `jobsys::trace::Trace` (the `jobsys-trace` tool
//! turns it into a Perfetto timeline and a summary). [`ProfilerHooks`]
//! receive the same events live for an external profiler
//! ([`Builder::profiler`]); the `tracy` feature adds ready hooks for Tracy.
//!
//! ```
//! # #[cfg(feature = "trace")] {
//! use jobsys::JobSystem;
//! let js = JobSystem::builder().workers(1).build().unwrap();
//! js.trace_start();
//! js.complete(js.job().name("frame work").schedule(|| {}));
//! let trace = js.trace_stop();
//! assert!(trace.event_count() > 0);
//! # }
//! ```
//!
//! # Counters
//!
//! [`stats`](JobSystem::stats) and [`take_stats`](JobSystem::take_stats)
//! count jobs, wakes, sleeps, steals and storage, system-wide or per worker
//! ([`Stats`]).
//!
//! # Features
//!
//! - `trace` (default): the tracer and the profiler hooks. Off, every event
//!   site compiles to nothing.
//! - `tracy`: `Builder::tracy` and `jobsys::tracy`, hooks that show the
//!   system in the Tracy profiler (needs a C++ compiler; Rust 1.85 for
//!   `tracy-client`).

#![warn(missing_docs)]

pub mod access;
mod active;
mod async_wait;
mod blocking;
mod builder;
mod cancel;
mod classes;
mod context;
mod current;
mod deque;
mod desc;
mod error;
mod failures;
mod graph;
mod handle;
mod handoff;
mod held;
mod job;
mod join;
mod lifecycle;
mod limiter;
mod parallel_for;
mod pinned;
mod pinned_queue;
mod registry;
mod room;
mod running;
mod scope;
mod search;
mod shuffle;
mod sleep;
mod slot;
mod spawn;
mod start;
mod stats;
mod store;
mod sync;
mod system;
pub mod topology;
pub mod trace;
mod wait;
mod wait_any;
mod waiters;
mod worker;

#[cfg(all(test, not(loom)))]
mod tests;

pub use access::{AccessError, ReadNow, Resource, WriteNow};
pub use active::ActiveWorkersError;
pub use async_wait::JobFuture;
pub use builder::{
    BuildError, Builder, Config, IdlePolicy, DEFAULT_FAILURE_HISTORY, DEFAULT_MAX_JOBS,
    DEFAULT_RETAINED_SLOTS, MAX_WORKERS, MIN_STACK_SIZE,
};
pub use desc::{JobDesc, Priority};
pub use error::{JobError, JobPanic, PanicHandler};
pub use graph::{
    AccessNodeBuilder, Graph, GraphBuilder, GraphError, GraphReport, NodeBuilder, NodeId,
};
pub use handle::JobHandle;
pub use limiter::{limiter_slot, Limiter};
pub use parallel_for::Batch;
pub use pinned::{Pin, ThreadIndex};
pub use registry::Stats;
pub use running::is_cancelled;
pub use scope::Scope;
pub use spawn::{AccessJobBuilder, JobBuilder};
#[doc(hidden)]
pub use system::HandleBits;
pub use system::{HotZone, JobSystem};
pub use topology::{topology, Topology, TopologyError};
#[cfg(feature = "tracy")]
pub use trace::tracy;
pub use trace::ProfilerHooks;
