//! Profiler hooks: [`ProfilerHooks`], the callbacks a system calls for an
//! external profiler (Tracy, Superluminal, Optick, an engine's own), and
//! their dispatch from the tracer's event sites.
//!
//! Hooks ride on the tracer's sites (`mod.rs`): the process-wide flag the
//! sites load means "some system records *or has hooks installed*"
//! (`recorder::set_listening`), and the out-of-line recording path hands
//! each event to the system's recorder and to its hooks. A system without
//! hooks pays nothing more than the tracer does when off; while another
//! system in the process has hooks, its sites take the cold path as they
//! do while another system records (`docs/profiling.md`, "Cost").
//!
//! A hook that calls back into a job system is refused with a panic naming
//! the call (`call`, `forbid`): it could wait for a lock its own caller
//! holds. The mark that says "inside a hook" is the thread's context cache
//! (`TraceHost::enter_hook`, for a `Registry` registry.rs `enter_hook`), so
//! the hot paths pay nothing for the check.
//!
//! Invariant: a system's hooks are installed before any of its threads
//! runs (`JobSystem::new`, before the first `current()` and before the
//! workers start) and stay until its registry drops, so every event of
//! that system reaches them, and every job it schedules carries the
//! `TRACED` flag (the flag was on at its submit).

use super::event::JobId;
#[cfg(feature = "trace")]
use super::TraceHost;
use std::fmt;

/// Callbacks from a job system to a profiler. Install with
/// [`Builder::profiler`](crate::Builder::profiler); every method has an
/// empty default, so implement only what your profiler shows.
///
/// Each call comes from the thread the event happened on, *inside* the
/// scheduler, and `thread` is that thread's
/// [`JobSystem::thread_index`](crate::JobSystem::thread_index): 0 the
/// thread that built the system, `1..=workers` the workers, then the
/// registered threads; a thread with no index (it only schedules or
/// waits) is [`UNINDEXED_THREAD_BASE`](crate::trace::UNINDEXED_THREAD_BASE)
/// `+ k`. A trace labels its tracks with the same numbers, and a steal's
/// `victim` and a wake's `wakee` use them too (`docs/engine.md`, "Thread
/// index"). On
/// one thread, begins and ends nest: a job's end comes before the end of
/// the wait it ran in, a sleep inside a wait ends before the wait does.
///
/// # What a hook may do
/// Record, timestamp, forward to a profiler, count, and read the system's
/// counters and state (`stats`, `worker_stats`, `take_stats`,
/// `is_complete`, `active_workers`, `workers`, `idle_policy`,
/// `is_tracing`). Some hooks run while the scheduler holds a lock (`wake`
/// under the sleepers' or the waiters' lock, `active_workers` under
/// `set_active_workers`' lock, `access` and an access job's `job_ready`
/// under the resources' locks), others half way through a job's start or
/// end. So a hook:
/// - **must not call into any `JobSystem`** (this one or another) beyond
///   those queries: such a call could wait for ever on a lock or a job its
///   own thread holds. jobsys refuses it: `schedule` and its variants,
///   `parallel_for`, `join`, `scope`, `combine`, `complete`, `cancel`,
///   `flush`, `hot_zone`, `set_active_workers`, `register_thread`,
///   `run_pinned`, `thread_index`, `trim_storage`, `trace_start`,
///   `trace_stop`, the frame calls, the
///   access calls, `Resource::read_now`, `write_now` (and `try_`),
///   `clear_poison`, building a system and dropping the last clone of one
///   panic, naming the call and the hook: "jobsys: JobSystem::schedule
///   called from a profiler hook (ProfilerHooks::job_begin); hooks must not
///   call back into the job system". The check costs the scheduler nothing
///   (the thread's context cache marks the hook; see `call` in
///   `src/trace/hooks.rs`);
/// - **must not block** (it runs on the job path of every thread; the
///   check cannot see a call it hands to another thread and waits for);
/// - **must not panic**: a panic unwinding out of a hook would leave the
///   scheduler half way through a step, so jobsys aborts the process
///   instead, after the panic message. A refused call is such a panic.
///
/// `thread_stop` of a thread other than a worker may run in a thread-local
/// destructor.
///
/// Hooks are called only when jobsys is built with its `trace` feature (a
/// default feature; `tracy` turns it on); without it the hook sites are
/// compiled out and nothing is called (`jobsys::trace::COMPILED` says
/// which).
///
/// ```
/// use jobsys::{JobSystem, ProfilerHooks, trace::JobId};
/// use std::sync::{atomic::{AtomicU64, Ordering}, Arc};
///
/// #[derive(Default)]
/// struct CountJobs(AtomicU64);
/// impl ProfilerHooks for CountJobs {
///     fn job_end(&self, _thread: u32, _job: JobId, _name: &'static str) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
/// }
///
/// let hooks = Arc::new(CountJobs::default());
/// let js = JobSystem::builder().workers(2).profiler(hooks.clone()).build().unwrap();
/// js.complete(js.job().name("physics").schedule(|| {}));
/// # if jobsys::trace::COMPILED {
/// assert_eq!(hooks.0.load(Ordering::Relaxed), 1);
/// # }
/// ```
#[allow(unused_variables)] // the default bodies ignore their arguments
pub trait ProfilerHooks: Send + Sync {
    /// Thread `thread` starts working for the system: every worker first
    /// thing (`name`: its thread name, `jobsys-worker-<thread>`), another thread
    /// when it first uses the system (`name`: its thread name, `""` when
    /// it has none). Called on that thread.
    fn thread_start(&self, thread: u32, name: &str) {}
    /// Thread `thread` is done with the system: a worker last thing before
    /// it exits (so every worker's stop has been called when the
    /// `JobSystem`'s last clone has been dropped, unless a job of the
    /// system dropped it); another thread when it exits while the system
    /// lives (possibly in a thread-local destructor; never, when the
    /// system goes first).
    fn thread_stop(&self, thread: u32) {}
    /// `job` became runnable: scheduled with no unfinished dependency, or
    /// released by the last of its dependencies finishing (on the thread
    /// that finished it).
    fn job_ready(&self, thread: u32, job: JobId) {}
    /// This thread starts running `job`. `name`: its `JobDesc` name, else
    /// the closure's type name; `"join"` for the half of a `join` that
    /// another thread took (a half the joining thread runs itself has no
    /// begin: it is part of the enclosing job). A
    /// `parallel_for` is one job whose pieces may run on several threads:
    /// each thread that runs pieces of it has its own begin and end.
    fn job_begin(&self, thread: u32, job: JobId, name: &'static str) {}
    /// This thread is done with `job` (the same `name` as its begin).
    fn job_end(&self, thread: u32, job: JobId, name: &'static str) {}
    /// This thread took work from thread `victim`'s queue.
    fn steal(&self, thread: u32, victim: u32) {}
    /// This thread starts waiting for `job` (`complete`, `join`). It may
    /// run other jobs while it waits (their begins and ends nest inside).
    fn wait_begin(&self, thread: u32, job: JobId) {}
    /// This thread's wait for `job` ended.
    fn wait_end(&self, thread: u32, job: JobId) {}
    /// This thread blocks on its futex (an idle worker, or a waiter with
    /// nothing to help with).
    fn sleep_begin(&self, thread: u32) {}
    /// This thread woke up.
    fn sleep_end(&self, thread: u32) {}
    /// This thread wakes thread `wakee` (called just before the store that
    /// ends `wakee`'s sleep, under the scheduler's lock).
    fn wake(&self, thread: u32, wakee: u32) {}
    /// A frame begins (`JobSystem::frame`, `frame_begin`); frames are
    /// numbered per system from 0.
    fn frame_begin(&self, thread: u32, frame: u64) {}
    /// Frame `frame` ends.
    fn frame_end(&self, thread: u32, frame: u64) {}
    /// This thread changed the number of workers that take work to `count`
    /// (`set_active_workers`, `follow_cpus`).
    fn active_workers(&self, thread: u32, count: u32) {}
    /// This thread scheduled `job` with a declared access (`docs/access.md`)
    /// to `resource` (an id unique per `Resource` in the process; `name`:
    /// its `Resource::named` name, `""` if unnamed): one call per declared
    /// resource, right after the job (or a `read_now`/`write_now` guard)
    /// was recorded in the resource's history. Called while the scheduling
    /// call holds the resources' locks (scheduling an access job from it,
    /// or `read_now`/`write_now`, would wait for them: refused, as every
    /// call into the system).
    fn access(
        &self,
        thread: u32,
        job: JobId,
        resource: u64,
        name: &'static str,
        mode: super::AccessMode,
    ) {
    }
    /// This thread was runnable but not running (waiting for a CPU:
    /// preempted by the OS, or not yet picked after a wake) for `wait_ns`
    /// in all since its previous run-queue sample (`docs/tracing.md`,
    /// "Preempted"). Called at one of the thread's state boundaries (a
    /// job's begin or end, a search, spin or sleep begin, a sleep end, a
    /// wait's begin or end), at most once per 50 µs per thread, and only
    /// with a nonzero wait; the wait lies somewhere between the previous
    /// sample and this call, which the hook does not learn (a profiler
    /// can plot it, or mark the span that just ended). Never called where
    /// run-queue wait cannot be read (not Linux, or a kernel without
    /// per-thread schedstat: [`run_queue_available`](crate::trace::run_queue_available)).
    fn preempted(&self, thread: u32, wait_ns: u64) {}
}

/// So that `Config` and `Builder` stay `Debug`.
impl fmt::Debug for dyn ProfilerHooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("dyn ProfilerHooks")
    }
}

/// Aborts the process if dropped: armed around a hook call and forgotten
/// after it returns, so only a hook that unwinds drops it.
#[cfg(feature = "trace")]
struct AbortOnUnwind;

#[cfg(feature = "trace")]
impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        eprintln!(
            "jobsys: a ProfilerHooks method panicked; a hook runs inside the \
             scheduler, so the process aborts (see ProfilerHooks, \"What a hook may do\")"
        );
        std::process::abort();
    }
}

/// Run `f` (the hook method `method`) on `hooks`, aborting if it unwinds.
///
/// While `f` runs, the thread's context cache says "inside `method`"
/// instead of naming a context (`TraceHost::enter_hook`; registry.rs
/// `enter_hook` for a `Registry`), so every call
/// into any job system that looks up the calling thread's context misses
/// the cache and takes `Registry::current_named`, which panics naming the
/// call and `method` (`refuse`) instead of running it: the call could wait
/// for a lock this thread holds around the hook (the sleepers' or the
/// waiters' lock around `wake`, `set_active_workers`' around
/// `active_workers`, the resources' around `access` and an access job's
/// `job_ready`), or for a job this thread is half way through. The hot
/// paths pay nothing: their look-up is the same load and compare, and only
/// this cold path writes the cache. The calls that take such a lock before
/// they look up the context check current.rs `forbid_in_hook` first.
#[cfg(feature = "trace")]
#[inline]
pub(crate) fn call<H: TraceHost>(
    hooks: &dyn ProfilerHooks,
    method: &'static &'static str,
    f: impl FnOnce(&dyn ProfilerHooks),
) {
    let guard = AbortOnUnwind;
    let cached = H::enter_hook(method);
    f(hooks);
    H::leave_hook(cached);
    std::mem::forget(guard);
}

/// Panic if this thread is inside a profiler hook: `call` (e.g.
/// `"JobSystem::trace_stop"`) is being made from it into the system of
/// `host` (current.rs `forbid_in_hook` is the core's own).
#[cfg(feature = "trace")]
#[inline]
pub(crate) fn forbid<H: TraceHost>(host: &H, call: impl fmt::Display) {
    let _ = host;
    if let Some(method) = H::in_hook() {
        refuse(&call, method);
    }
}

/// The panic of a call made from the hook method `method` (registry.rs
/// `current_named` and `forbid_in_hook`).
#[cfg(feature = "trace")]
#[cold]
#[inline(never)]
pub(crate) fn refuse(call: &dyn fmt::Display, method: &str) -> ! {
    panic!(
        "jobsys: {call} called from a profiler hook (ProfilerHooks::{method}); hooks must not \
         call back into the job system (see ProfilerHooks, \"What a hook may do\")"
    )
}

/// Hand one recorded event (`kind`, `id`, `name` as the recorder stores
/// them) of thread `thread` to `hooks`. Kinds without a hook (search and
/// spin states, capture start) are dropped.
#[cfg(feature = "trace")]
pub(crate) fn dispatch<H: TraceHost>(
    hooks: &dyn ProfilerHooks,
    thread: u32,
    kind: u8,
    id: u64,
    name: &'static str,
) {
    use super::event::*;
    let method: &'static &'static str = match kind {
        READY | RELEASED => &"job_ready",
        JOB_BEGIN => &"job_begin",
        JOB_END => &"job_end",
        STEAL => &"steal",
        WAIT_BEGIN => &"wait_begin",
        WAIT_END => &"wait_end",
        SLEEP_BEGIN => &"sleep_begin",
        SLEEP_END => &"sleep_end",
        WAKE => &"wake",
        FRAME_BEGIN => &"frame_begin",
        FRAME_END => &"frame_end",
        ACTIVE_WORKERS => &"active_workers",
        RUN_QUEUE_WAIT => &"preempted",
        _ => return,
    };
    call::<H>(hooks, method, |h| match kind {
        READY | RELEASED => h.job_ready(thread, JobId(id)),
        JOB_BEGIN => h.job_begin(thread, JobId(id), name),
        JOB_END => h.job_end(thread, JobId(id), name),
        STEAL => h.steal(thread, id as u32),
        WAIT_BEGIN => h.wait_begin(thread, JobId(id)),
        WAIT_END => h.wait_end(thread, JobId(id)),
        SLEEP_BEGIN => h.sleep_begin(thread),
        SLEEP_END => h.sleep_end(thread),
        WAKE => {
            if let Ok(wakee) = u32::try_from(id) {
                h.wake(thread, wakee);
            }
        }
        FRAME_BEGIN => h.frame_begin(thread, id),
        FRAME_END => h.frame_end(thread, id),
        ACTIVE_WORKERS => h.active_workers(thread, id as u32),
        RUN_QUEUE_WAIT => h.preempted(thread, id),
        _ => {}
    });
}
