//! The tracer: what every thread did, when, and who woke whom.
//!
//! Each thread appends fixed-size events (32 bytes) to its own buffer
//! (`buffer.rs`; the protocol is in `README.md` next to this file): no
//! locks, no allocation per event, a full buffer drops and counts. A
//! capture (`JobSystem::trace_start` … `trace_stop`) gives a `Trace`:
//! every thread's raw events and names, which `Trace::write_raw` writes
//! to a file (the raw capture format, specified in the README).
//!
//! The same sites feed a system's profiler hooks ([`ProfilerHooks`],
//! `hooks.rs`; `Builder::profiler`): the out-of-line recording path hands
//! each event to the system's recorder (if it records) and to its hooks
//! (if it has any). `tracy.rs` (feature `tracy`) is a ready implementation
//! for the Tracy profiler. Usage: `docs/profiling.md`.
//!
//! Everything offline (deriving per-thread state timelines, wake and
//! dependency arrows and latency from the events, the summary, comparing
//! captures, Chrome trace JSON for Perfetto out and back in, the format
//! checker) is the `jobsys-trace` crate, library and command, which reads
//! raw captures.
//!
//! | file | owns |
//! | --- | --- |
//! | `mod.rs` | the hooks the core calls (table below), `TraceHost`, `Site` |
//! | `event.rs` | `JobId`, the public `Event` and `Record`, the 32-byte `RawEvent` |
//! | `clock.rs` | the one monotonic clock (ns since a process-wide epoch) |
//! | `buffer.rs` | one thread's buffer and its publication protocol |
//! | `recorder.rs` | per-system `TraceState`, start/stop, `Trace`, `ThreadEvents`, `TraceConfig` |
//! | `api.rs` | `JobSystem::trace_start/stop`, frames, `Builder::build_traced` |
//! | `raw.rs` | `Trace::write_raw`: the raw capture file (streamed) |
//! | `hooks.rs` | `ProfilerHooks`, dispatching an event to them, abort on a panicking hook, refusing calls back into a system from a hook |
//! | `sched.rs` | run-queue wait: the per-thread schedstat reader and parser, and the rate-limited sampler `record` calls at state boundaries |
//! | `tracy.rs` | `TracyHooks` (feature `tracy`): zones, frame marks, plots, thread names |
//!
//! # Cost
//! With the `trace` feature off every hook below is an empty inline
//! function. With it on, while no system in the process records or has
//! profiler hooks, a hook is one relaxed load of a process-wide
//! `AtomicBool` (`recorder::active()`: running captures plus installed
//! hook sets, counted) and a branch; the recording path (recorder and
//! hooks) is out of line (`#[cold]`). Installing hooks on one system turns
//! the flag on for all of them: a system without hooks then pays the
//! out-of-line path at each site, as while another system records. A job scheduled and then waited on by the same
//! thread (which runs it inline) passes one such check in all, not five:
//! `submit` keeps its check's outcome in the job's state (the `TRACED`
//! flag), and `wait_with`'s fast path for a job without it has no event
//! site (wait/mod.rs; the README's "Cost" has the figures).
//!
//! # Hooks the core calls
//! This module names none of the core's types (dependency inversion): it
//! defines what it needs of a system, the `TraceHost` trait (its tracer
//! state, thread numbers, the calling thread's context, the hook marks of
//! its thread-local context cache), which registry.rs implements for
//! `Registry`. The sites take a `Site` (`site` below): the host and the
//! *calling thread's own* context, because an event goes into that
//! context's buffer; `Registry::site(ctx)` builds it (two references,
//! nothing read), so a site costs what it did with `(reg, ctx)`. Generic
//! over the host, monomorphised for `Registry`: no dynamic call. Job ids
//! are `JobId::new(address, generation)` from plain addresses, the same
//! hash as [`JobId::of_handle`]: `Registry::job_id(slot, gen)` for a slot,
//! `JobId::new(e.slot.as_ptr() as usize, e.gen)` for a deque entry, and a
//! stack job's header address tagged with 1 at generation 0. Names:
//! `job_name(slot)` (lifecycle.rs) (the `JobDesc` name, else the closure's type
//! name), passed as a closure where it is resolved only while recording;
//! `"join"` for stack jobs.
//!
//! | hook | file, function: where |
//! | --- | --- |
//! | `job_ready_flag(site, slot_addr, gen) -> bool` | lifecycle.rs `submit` (`submit_traced`): in the no-dependency branch *before* `publish_runnable` (the caller gives it the `TRACED` flag when this returns true: the flag is on and this system records or has hooks; the ready is recorded only then, out of line in `ready_flag`) and `ctx.push` |
//! | `job_ready(site, Registry::job_id(slot, gen))` | lifecycle.rs `submit`: before `make_runnable` when the last `pending` decrement is `submit`'s own (a ready must be stamped before any thread can start the job) |
//! | `job_released(site, \|\| Registry::job_id(dependent, dependent.gen_now()))` | lifecycle.rs `finish`: when `dependent.dep_done()` reports the last dependency, before `make_runnable(ctx, dependent)` (the closure, id and generation, runs only while recording) |
//! | `job_begin_slot(site, slot_addr, gen, \|\| job_name(slot))` / `job_begin(site, id, name)` | lifecycle.rs `run_claimed` (`run_claimed_as::<true>`; `job_begin_slot` resolves the name and records only if this system records or has hooks, else returns `None` and no end follows; `::<false>`, wait/mod.rs's fast path on a job without `TRACED`, has no site): after the cancelled and poisoned branches, before `running_push`; parallel_for.rs `run_pieces`: after the first chunk's `on_claim()`; lifecycle.rs `run_entry`, stack-job branch: before `run_stack_job` (id `JobId::new(e.slot.as_ptr() as usize, e.gen)`) |
//! | `job_end(site, id, name)` | the same places, just *before* `finish` / `finish_pieces` (and on every other exit of `run_pieces` that ran a piece): whoever sees the job finished — a waiter that then stops the capture — also sees its end, so a capture stopped after `complete` holds no clipped job of that graph (the releases and wakes `finish` causes follow the slice; their arrows start on the state track) |
//! | `steal(site, v as u32)` | search.rs `steal_from`: after each successful `steal_into` |
//! | `spin_begin(site)` | worker.rs `worker_main`: before `spin_until_work` |
//! | `search_begin(site)` | worker.rs `worker_main`: when `spin_until_work` found work, and after `cancel_park` |
//! | `sleep_begin(site)` / `sleep_end(site)` | around `sleep.park(idx)` in `worker_main`; around the futex loop in wait/mod.rs `park_on` and in join.rs `wait_latch` |
//! | `wake_issued(site, Some(idx))` | *inside* the wake, before the store that ends the wakee's park: `Sleep::notify_work`/`wake_one_slow`/`hand_over`/`wake_many` call their `on_wake(idx)` under the sleepers lock just before storing the notified word (search.rs `notify_work_from`/`found_work`, lifecycle.rs `flush` pass the hook); waiters.rs `wake_waiter` (from `wake_target`/`wake_all_parked`) calls it under the `parked` lock before the `WOKEN` CAS, and only when the word is still 0 (the wake that ends the wait). Order relied on: waker stamps → Release store → the wakee's Acquire load sees it → the wakee stamps `sleep_end`, so a wake is never later than the wake-up it caused (`jobsys-trace`'s `match_wakes` pairs each sleep with the last wake before its end). Not recorded: `Sleep::wake_all` (shutdown, first hot zone) and `BROKEN` |
//! | `accesses(reg, h, list)` (`Accesses`, then one `Access` per resource; the list's modes already mapped to `AccessMode` by access/mod.rs `Shared::traced`) | access/mod.rs `schedule_core`: after the job is recorded in each resource's history, before the locks are released (so one resource's accesses are stamped in history order); access/now.rs `now`: the same, for a guard's event. Walks the list only while recording; the context is looked up then (`TraceHost::current`) |
//! | `thread_start(site)` / `thread_stop(site)` (hooks only, nothing recorded) | worker.rs `worker_main`: first thing after `set_current` / last thing; registry.rs `current_slow`: after an outside thread claimed a new context / `Claim::drop`: when the thread's claim is released while the registry lives (thread exit, possibly in a thread-local destructor) |
//! | frame begin/end (`api.rs`, not a hook here) | `JobSystem::frame_begin` / `frame_end` / `FrameGuard::drop`: one `active()` check, then `record` when the system records or has hooks |
//! | `let _t = WaitTrace::of_handle(site, h)` | wait/mod.rs `ThisThread::wait_slow`: first thing (the caller, `wait_with`, made the `DepthGuard`; it calls `wait_slow` for a `TRACED` job before its fast path, for another one only if its fast path, which has no site, did not finish the job: a capture that starts between such a job's submit and that path holds neither the wait nor the job's begin and end, as it holds no ready of it); join.rs `wait_latch`: after `DepthGuard::new`, as `WaitTrace::of_stack(site, job as *const StackHeader as usize)` (records wait end on every return and on unwinding) |
//!
//! Run-queue samples are no site of their own: `record` (the cold path)
//! calls `sched::sample` after a state-boundary event (job begin and end,
//! search, spin and sleep begin, sleep end, wait begin and end), which
//! reads the thread's schedstat at most once per 50 µs and has a
//! `RunQueueWait` (or, once, `RunQueueUnknown`) recorded with the same
//! stamp, and a nonzero wait handed to the hooks' `preempted`. Nothing
//! changes at the sites, so tracing off costs what it did.
//!
//! Thread states are *derived* from these events (by `jobsys-trace`,
//! `crates/jobsys-trace/src/timeline.rs`):
//! inside a job: working; in a wait: waiting, or blocked while parked in
//! it; at a worker's top level: searching (after a job, a wake, or
//! `search_begin`), spinning, sleeping; at an external thread's top level:
//! outside (running its own code).

mod event;
pub use event::JobId;

mod api;
#[cfg(feature = "trace")]
mod buffer;
#[cfg(feature = "trace")]
mod clock;
mod hooks;
#[cfg(feature = "trace")]
mod raw;
#[cfg(feature = "trace")]
mod recorder;
#[cfg(feature = "trace")]
mod sched;
#[cfg(feature = "tracy")]
pub mod tracy;

pub use api::FrameGuard;
pub use event::AccessMode;
#[cfg(feature = "trace")]
pub use event::{Event, Record};
#[cfg(feature = "trace")]
pub(crate) use hooks::refuse as refuse_in_hook;
pub use hooks::ProfilerHooks;
#[cfg(feature = "trace")]
pub use raw::{RAW_FORMAT, RAW_VERSION};
#[cfg(feature = "trace")]
pub use recorder::{ThreadEvents, Trace, TraceConfig};
#[cfg(feature = "trace")]
pub use sched::{run_queue_available, SAMPLE_INTERVAL_NS};

/// Whether this build of jobsys has the `trace` feature (the recorder and
/// its event sites). A dependent cannot see another crate's features with
/// `cfg!`; `jobsys-bench trace-cost` reads this to prove that its
/// no-tracer build really compiled the event sites out.
pub const COMPILED: bool = cfg!(feature = "trace");

/// Where the thread numbers of threads without a thread index begin: a
/// thread that only schedules or waits (it never built the system, is no
/// worker, never called `register_thread`) is `UNINDEXED_THREAD_BASE + k`
/// in profiler hooks and traces, `k` the jobsys-internal slot it uses.
/// Every other thread is its [`JobSystem::thread_index`](crate::JobSystem::thread_index)
/// (`docs/engine.md`, "Thread index"), always below this.
pub const UNINDEXED_THREAD_BASE: u32 = 1 << 16;

#[cfg(feature = "trace")]
pub(crate) use recorder::TraceState;

/// What the tracer needs from the system it traces (dependency
/// inversion: the core implements it, for `Registry` in registry.rs, so
/// this module names none of the core's types). Each method is only
/// called on the recording paths, out of line; the hot paths only build a
/// [`Site`] (two references) and test the process-wide flag.
#[cfg_attr(not(feature = "trace"), allow(dead_code))]
pub(crate) trait TraceHost {
    /// A thread's context: which buffer its events go into, its thread
    /// number.
    type Ctx;

    /// The buffer index of `ctx` (its context index).
    fn ctx_index(ctx: &Self::Ctx) -> u32;

    /// The tracer state of this system (one buffer per context, on/off).
    #[cfg(feature = "trace")]
    fn trace_state(&self) -> &TraceState;

    /// The thread number hooks see for the thread of `ctx`
    /// (`docs/engine.md`, "Thread index").
    fn thread_number(&self, ctx: &Self::Ctx) -> u32;

    /// `thread_number` of context `index` (a steal's victim, a wakee).
    fn thread_number_at(&self, index: u32) -> u32;

    /// The calling thread's own context (for `accesses`, whose callers do
    /// not have it at hand).
    fn current(&self) -> &Self::Ctx;

    /// Mark the calling thread as inside the hook method `method` (see
    /// `hooks::call`); returns what `leave_hook` restores.
    fn enter_hook(method: &'static &'static str) -> HookMark;

    /// Undo `enter_hook` after the hook returned.
    fn leave_hook(mark: HookMark);

    /// The hook method the calling thread is inside of, if any (the mark
    /// of `enter_hook`).
    #[cfg(feature = "trace")]
    fn in_hook() -> Option<&'static str>;
}

/// What `TraceHost::enter_hook` saved (the host's thread-local context
/// cache, opaque here).
#[allow(dead_code)]
pub(crate) type HookMark = (u32, *const ());

/// An event site's view of the calling thread: the system it works for
/// (`host`) and its *own* context (`ctx`), into whose buffer an event
/// goes. Built by `Registry::site(ctx)` (two references, nothing read);
/// `Copy`.
#[cfg_attr(not(feature = "trace"), allow(dead_code))]
pub(crate) struct Site<'a, H: TraceHost> {
    pub(crate) host: &'a H,
    pub(crate) ctx: &'a H::Ctx,
}

impl<H: TraceHost> Clone for Site<'_, H> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<H: TraceHost> Copy for Site<'_, H> {}

/// Record one event for the calling thread and hand it to the system's
/// profiler hooks (out of line: only runs while some job system records
/// or has hooks).
#[cfg(feature = "trace")]
#[cold]
#[inline(never)]
fn record<H: TraceHost>(site: Site<'_, H>, kind: u8, id: u64, name: &'static str) {
    let (host, ctx) = (site.host, site.ctx);
    let st = host.trace_state();
    // The clock: for the record, and at a state boundary for the
    // run-queue sampler's rate limit (a hooks-only system reads it only
    // there).
    let boundary = sched_boundary(kind);
    let ts = if boundary || st.is_recording() {
        clock::now_ns()
    } else {
        0
    };
    st.record_at(H::ctx_index(ctx), ts, kind, id, name);
    if let Some(h) = st.hooks() {
        // Hooks get thread numbers (`docs/engine.md`, "Thread index"), the
        // buffers keep context indices (`Trace::from_collected` maps them).
        let id = match kind {
            event::STEAL => u64::from(host.thread_number_at(id as u32)),
            event::WAKE => match u32::try_from(id) {
                Ok(wakee) => u64::from(host.thread_number_at(wakee)),
                Err(_) => id,
            },
            _ => id,
        };
        hooks::dispatch::<H>(h, host.thread_number(ctx), kind, id, name);
    }
    if boundary {
        run_queue_sample(site, ts);
    }
}

/// Kinds at which a thread's state changes: where the run-queue wait is
/// sampled (`sched.rs`; rate-limited there to one reading per thread per
/// 50 µs).
#[cfg(feature = "trace")]
#[inline]
fn sched_boundary(kind: u8) -> bool {
    matches!(
        kind,
        event::JOB_BEGIN
            | event::JOB_END
            | event::SEARCH_BEGIN
            | event::SPIN_BEGIN
            | event::SLEEP_BEGIN
            | event::SLEEP_END
            | event::WAIT_BEGIN
            | event::WAIT_END
    )
}

/// Sample the calling thread's run-queue wait at `ts` if due, and record
/// the sample (`RunQueueWait`, or `RunQueueUnknown` once) with the same
/// stamp as the boundary that caused it; a nonzero wait goes to the
/// hooks' `preempted`.
#[cfg(feature = "trace")]
fn run_queue_sample<H: TraceHost>(site: Site<'_, H>, ts: u64) {
    let st = site.host.trace_state();
    let Some(s) = sched::sample(st.sample_key(), ts) else {
        return;
    };
    let (kind, wait) = match s {
        sched::Sample::Wait(w) => (event::RUN_QUEUE_WAIT, w),
        sched::Sample::Unknown => (event::RUN_QUEUE_UNKNOWN, 0),
    };
    st.record_at(H::ctx_index(site.ctx), ts, kind, wait, "");
    if let (Some(h), true) = (st.hooks(), wait > 0) {
        hooks::dispatch::<H>(h, site.host.thread_number(site.ctx), kind, wait, "");
    }
}

macro_rules! hook {
    ($(#[$m:meta])* $name:ident($($arg:ident: $ty:ty),*) => $kind:ident, $id:expr, $label:expr) => {
        $(#[$m])*
        #[inline(always)]
        #[allow(dead_code)] // called by the core
        pub(crate) fn $name<H: TraceHost>(site: Site<'_, H> $(, $arg: $ty)*) {
            #[cfg(feature = "trace")]
            if recorder::active() {
                record(site, event::$kind, $id, $label);
            }
            #[cfg(not(feature = "trace"))]
            let _ = (site $(, $arg)*);
        }
    };
}

hook!(
    /// A job was scheduled and is runnable at once (pushed on a deque).
    job_ready(job: JobId) => READY, job.0, ""
);
hook!(
    /// This thread starts running `job` (`name`: `job_name(slot)` (lifecycle.rs),
    /// its `JobDesc` name or closure type name; `"join"` for stack jobs).
    job_begin(job: JobId, name: &'static str) => JOB_BEGIN, job.0, name
);
hook!(
    /// This thread is done with `job` (just before `finish` releases it).
    job_end(job: JobId, name: &'static str) => JOB_END, job.0, name
);
hook!(
    /// This thread took an entry from context `victim`'s deque.
    steal(victim: u32) => STEAL, u64::from(victim), ""
);
hook!(
    /// A worker starts searching for work.
    search_begin() => SEARCH_BEGIN, 0, ""
);
hook!(
    /// A worker starts its idle spin.
    spin_begin() => SPIN_BEGIN, 0, ""
);
hook!(
    /// This thread is about to block on its futex word.
    sleep_begin() => SLEEP_BEGIN, 0, ""
);
hook!(
    /// This thread woke up from its futex word.
    sleep_end() => SLEEP_END, 0, ""
);
hook!(
    /// This thread is waking context `wakee` (`None`: some thread).
    wake_issued(wakee: Option<u32>) => WAKE, event::wakee_word(wakee), ""
);
hook!(
    /// This thread starts waiting for the job at `addr`, generation `gen`
    /// (use [`WaitTrace`]). The id is hashed only while recording.
    wait_begin(addr: usize, gen: u32) => WAIT_BEGIN, JobId::new(addr, gen).0, ""
);
hook!(
    /// This thread set the count of active workers to `count`.
    active_workers(count: u32) => ACTIVE_WORKERS, u64::from(count), ""
);
hook!(
    /// This thread's wait for the job at `addr`, generation `gen` ended.
    wait_end(addr: usize, gen: u32) => WAIT_END, JobId::new(addr, gen).0, ""
);

/// One traced access: (resource id, name or "", mode).
pub(crate) type TracedAccess = (u64, &'static str, AccessMode);

/// The declared accesses of the job `h`, just recorded in the resources'
/// histories (access/mod.rs `schedule_core` and now.rs `now`, under the
/// resource locks): an `Accesses` event, then one `Access` per resource.
/// One check per job; the list is walked only while recording, and the
/// calling thread's context (`TraceHost::current`) looked up then.
#[inline(always)]
pub(crate) fn accesses<H: TraceHost>(
    host: &H,
    h: crate::JobHandle,
    list: &mut dyn Iterator<Item = TracedAccess>,
) {
    #[cfg(feature = "trace")]
    if recorder::active() {
        record_accesses(host, h, list);
    }
    let _ = (host, h, list);
}

#[cfg(feature = "trace")]
#[cold]
#[inline(never)]
fn record_accesses<H: TraceHost>(
    host: &H,
    h: crate::JobHandle,
    list: &mut dyn Iterator<Item = TracedAccess>,
) {
    let st = host.trace_state();
    if !st.listening() {
        return;
    }
    let ctx = host.current();
    let index = H::ctx_index(ctx);
    let job = JobId::of_handle(h);
    st.record(index, event::ACCESSES, job.0, "");
    for (id, name, mode) in list {
        let kind = match mode {
            AccessMode::Read => event::ACCESS_READ,
            AccessMode::Write => event::ACCESS_WRITE,
            AccessMode::WriteEach => event::ACCESS_WRITE_EACH,
        };
        st.record(index, kind, id, name);
        // The hooks get the job with each access (`dispatch` sees one
        // event at a time and skips these kinds).
        if let Some(hk) = st.hooks() {
            let thread = host.thread_number(ctx);
            hooks::call::<H>(hk, &"access", |hk| hk.access(thread, job, id, name, mode));
        }
    }
}

/// Is the tracer's process-wide flag on (a capture or hooks somewhere)?
/// Always false without the `trace` feature. `submit` tests it before
/// `job_ready_flag`, out of line.
#[inline(always)]
pub(crate) fn flag_on() -> bool {
    #[cfg(feature = "trace")]
    return recorder::active();
    #[cfg(not(feature = "trace"))]
    false
}

/// `job_ready` for `submit`'s no-dependency branch (the job at `slot`, an
/// address, generation `gen`), which publishes the job after it: the
/// check's outcome is kept in the job's state, as the `TRACED` flag the
/// caller sets when this returns true (the flag is on and this system
/// records or has hooks; false otherwise), so a wait that runs the job
/// inline needs no check of its own (`wait_with`).
#[inline(always)]
#[allow(dead_code)] // called by the core
pub(crate) fn job_ready_flag<H: TraceHost>(site: Site<'_, H>, slot: usize, gen: u32) -> bool {
    #[cfg(feature = "trace")]
    if recorder::active() {
        return ready_flag(site, slot, gen);
    }
    let _ = (site, slot, gen);
    false
}

/// The flag is on: record the ready and have the job marked `TRACED` only
/// if *this* system records or has hooks. A job of a system that does
/// neither (another one does) keeps the untraced wait fast path, as when
/// the flag is off; a capture of this system that starts before its wait
/// holds neither the wait nor the job, the price stated above.
#[cfg(feature = "trace")]
#[cold]
#[inline(never)]
fn ready_flag<H: TraceHost>(site: Site<'_, H>, slot: usize, gen: u32) -> bool {
    if !site.host.trace_state().listening() {
        return false;
    }
    record(site, event::READY, JobId::new(slot, gen).0, "");
    true
}

/// This thread's finishing job released a job (its last dependency),
/// whose id `id` gives. The id (for a slot: its generation, a load, and
/// the hash) is computed out of line, only while recording: inline, it
/// kept values alive through `finish` that its common path (no
/// dependents) paid for.
#[inline(always)]
#[allow(dead_code)] // called by the core
pub(crate) fn job_released<H: TraceHost>(site: Site<'_, H>, id: impl FnOnce() -> JobId) {
    #[cfg(feature = "trace")]
    if recorder::active() {
        record_released(site, id);
    }
    #[cfg(not(feature = "trace"))]
    let _ = (site, id);
}

#[cfg(feature = "trace")]
#[cold]
#[inline(never)]
fn record_released<H: TraceHost>(site: Site<'_, H>, id: impl FnOnce() -> JobId) {
    record(site, event::RELEASED, id().0, "");
}

/// The thread of `site` starts working for its system (worker.rs
/// `worker_main` first thing; registry.rs `current_slow` when an outside
/// thread claims a context). Hooks only: the recorder names threads
/// itself.
#[inline]
pub(crate) fn thread_start<H: TraceHost>(site: Site<'_, H>) {
    #[cfg(feature = "trace")]
    if recorder::active() {
        thread_event(site, true);
    }
    let _ = site;
}

/// The thread of `site` is done with its system (worker.rs `worker_main`
/// last thing; registry.rs `Claim::drop`, when an outside thread exits).
/// Hooks only.
#[inline]
pub(crate) fn thread_stop<H: TraceHost>(site: Site<'_, H>) {
    #[cfg(feature = "trace")]
    if recorder::active() {
        thread_event(site, false);
    }
    let _ = site;
}

#[cfg(feature = "trace")]
#[cold]
#[inline(never)]
fn thread_event<H: TraceHost>(site: Site<'_, H>, start: bool) {
    if let Some(h) = site.host.trace_state().hooks() {
        let index = site.host.thread_number(site.ctx);
        if start {
            let t = std::thread::current();
            hooks::call::<H>(h, &"thread_start", |h| {
                h.thread_start(index, t.name().unwrap_or(""))
            });
        } else {
            hooks::call::<H>(h, &"thread_stop", |h| h.thread_stop(index));
        }
    }
}

/// `job_begin` for the job at `slot` (an address), generation `gen`: its
/// name (`name`, for a slot `lifecycle::job_name`, an interned-name lookup)
/// is only resolved while recording. Returns the name it recorded, to
/// pass to [`job_end`] (the slot's name may change once the job
/// finishes); `None` when not recording.
#[inline(always)]
#[allow(dead_code)] // called by the core
pub(crate) fn job_begin_slot<H: TraceHost>(
    site: Site<'_, H>,
    slot: usize,
    gen: u32,
    name: impl FnOnce() -> &'static str,
) -> Option<&'static str> {
    #[cfg(feature = "trace")]
    if recorder::active() {
        return begin_slot(site, slot, gen, name);
    }
    let _ = (site, slot, gen, name);
    None
}

/// The flag is on: resolve the name and record the begin only if this
/// system records or has hooks (`None` otherwise, so no end follows).
#[cfg(feature = "trace")]
#[cold]
#[inline(never)]
fn begin_slot<H: TraceHost>(
    site: Site<'_, H>,
    slot: usize,
    gen: u32,
    name: impl FnOnce() -> &'static str,
) -> Option<&'static str> {
    if !site.host.trace_state().listening() {
        return None;
    }
    let name = name();
    record(site, event::JOB_BEGIN, JobId::new(slot, gen).0, name);
    Some(name)
}

/// Records a wait's begin when made and its end when dropped, so every
/// return path (and unwinding) closes the wait.
#[allow(dead_code)] // used by the core
pub(crate) struct WaitTrace<'a, H: TraceHost> {
    #[cfg(feature = "trace")]
    site: Site<'a, H>,
    /// The waited job's address and generation, hashed into a `JobId` only
    /// while recording (hashing up front showed in the W1 counts with
    /// tracing off).
    #[cfg(feature = "trace")]
    key: (usize, u32),
    #[cfg(not(feature = "trace"))]
    _p: std::marker::PhantomData<Site<'a, H>>,
}

impl<'a, H: TraceHost> WaitTrace<'a, H> {
    /// A wait for the job `h` names.
    #[inline(always)]
    #[allow(dead_code)] // used by the core
    pub(crate) fn of_handle(site: Site<'a, H>, h: crate::JobHandle) -> Self {
        Self::new(site, h.slot.as_ptr() as usize, h.gen)
    }

    /// A wait for a `join` stack job at address `job` (tagged here: the
    /// id of a stack job's deque entry, `JobId::new(job | 1, 0)`).
    #[inline(always)]
    #[allow(dead_code)] // used by the core
    pub(crate) fn of_stack(site: Site<'a, H>, job: usize) -> Self {
        Self::new(site, job | 1, 0)
    }

    #[inline(always)]
    fn new(site: Site<'a, H>, addr: usize, gen: u32) -> WaitTrace<'a, H> {
        wait_begin(site, addr, gen);
        #[cfg(feature = "trace")]
        return WaitTrace {
            site,
            key: (addr, gen),
        };
        #[cfg(not(feature = "trace"))]
        {
            let _ = (site, addr, gen);
            WaitTrace {
                _p: std::marker::PhantomData,
            }
        }
    }
}

impl<H: TraceHost> Drop for WaitTrace<'_, H> {
    #[inline(always)]
    fn drop(&mut self) {
        #[cfg(feature = "trace")]
        wait_end(self.site, self.key.0, self.key.1);
    }
}
