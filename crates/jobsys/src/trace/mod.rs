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
//! | `mod.rs` | the hooks the core calls (table below) |
//! | `event.rs` | `JobId`, the public `Event` and `Record`, the 32-byte `RawEvent` |
//! | `clock.rs` | the one monotonic clock (ns since a process-wide epoch) |
//! | `buffer.rs` | one thread's buffer and its publication protocol |
//! | `recorder.rs` | per-system `TraceState`, start/stop, `Trace`, `ThreadEvents`, `TraceConfig` |
//! | `api.rs` | `JobSystem::trace_start/stop`, frames, `Builder::build_traced` |
//! | `raw.rs` | `Trace::write_raw`: the raw capture file (streamed) |
//! | `hooks.rs` | `ProfilerHooks`, dispatching an event to them, abort on a panicking hook, refusing calls back into a system from a hook |
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
//! site (wait.rs; the README's "Cost" has the figures).
//!
//! # Hooks the core calls
//! All take the registry and the *calling thread's own* context (`ctx`),
//! because an event goes into that context's buffer. Job ids come from
//! `JobId::of_slot` / `of_entry` / `of_stack` (crate-private), the same
//! (address, generation) hash as [`JobId::of_handle`]. Names:
//! `Registry::job_name(slot)` (the `JobDesc` name, else the closure's type
//! name); `"join"` for stack jobs.
//!
//! | hook | file, function: where |
//! | --- | --- |
//! | `job_ready_flag(reg, ctx, slot, gen)` | lifecycle.rs `submit`: in the no-dependency branch *before* `publish_runnable` (which it gives the `TRACED` flag when the flag is on and this system records or has hooks; the ready is recorded only then, out of line in `ready_flag`) and `ctx.push` |
//! | `job_ready(reg, ctx, JobId::of_slot(slot, gen))` | lifecycle.rs `submit`: before `make_runnable` when the last `pending` decrement is `submit`'s own (a ready must be stamped before any thread can start the job) |
//! | `job_released_slot(reg, ctx, dependent)` | lifecycle.rs `finish`: when `dependent.dep_done()` reports the last dependency, before `make_runnable(ctx, dependent)` (id and generation computed only while recording) |
//! | `job_begin_slot(reg, ctx, slot, gen)` / `job_begin(reg, ctx, id, name)` | lifecycle.rs `run_claimed` (`run_claimed_as::<true>`; `job_begin_slot` resolves the name and records only if this system records or has hooks, else returns `None` and no end follows; `::<false>`, wait.rs's fast path on a job without `TRACED`, has no site): after the cancelled and poisoned branches, before `running_push`; parallel_for.rs `run_pieces`: after the first chunk's `on_claim()`; lifecycle.rs `run_entry`, stack-job branch: before `run_stack_job` (id `JobId::of_entry(e)`) |
//! | `job_end(reg, ctx, id, name)` | the same places, just *before* `finish` / `finish_pieces` (and on every other exit of `run_pieces` that ran a piece): whoever sees the job finished — a waiter that then stops the capture — also sees its end, so a capture stopped after `complete` holds no clipped job of that graph (the releases and wakes `finish` causes follow the slice; their arrows start on the state track) |
//! | `steal(reg, ctx, v as u32)` | search.rs `steal_from`: after each successful `steal_into` |
//! | `spin_begin(reg, ctx)` | worker.rs `worker_main`: before `spin_until_work` |
//! | `search_begin(reg, ctx)` | worker.rs `worker_main`: when `spin_until_work` found work, and after `cancel_park` |
//! | `sleep_begin(reg, ctx)` / `sleep_end(reg, ctx)` | around `sleep.park(idx)` in `worker_main`; around the futex loop in wait.rs `park_on` and in join.rs `wait_latch` |
//! | `wake_issued(reg, ctx, Some(idx))` | *inside* the wake, before the store that ends the wakee's park: `Sleep::notify_work`/`wake_one_slow`/`hand_over`/`wake_many` call their `on_wake(idx)` under the sleepers lock just before storing the notified word (search.rs `notify_work_from`/`found_work`, lifecycle.rs `flush` pass the hook); wait.rs `wake_waiter` (from `wake_target`/`wake_all_parked`) calls it under the `parked` lock before the `WOKEN` CAS, and only when the word is still 0 (the wake that ends the wait). Order relied on: waker stamps → Release store → the wakee's Acquire load sees it → the wakee stamps `sleep_end`, so a wake is never later than the wake-up it caused (`jobsys-trace`'s `match_wakes` pairs each sleep with the last wake before its end). Not recorded: `Sleep::wake_all` (shutdown, first hot zone) and `BROKEN` |
//! | `accesses(reg, h, list)` (`Accesses`, then one `Access` per resource) | access/mod.rs `schedule_core`: after the job is recorded in each resource's history, before the locks are released (so one resource's accesses are stamped in history order); access/now.rs `now`: the same, for a guard's event. Walks the list only while recording; the context is looked up then |
//! | `thread_start(reg, ctx)` / `thread_stop(reg, ctx)` (hooks only, nothing recorded) | worker.rs `worker_main`: first thing after `set_current` / last thing; registry.rs `current_slow`: after an outside thread claimed a new context / `Claim::drop`: when the thread's claim is released while the registry lives (thread exit, possibly in a thread-local destructor) |
//! | frame begin/end (`api.rs`, not a hook here) | `JobSystem::frame_begin` / `frame_end` / `FrameGuard::drop`: one `active()` check, then `record` when the system records or has hooks |
//! | `let _t = WaitTrace::of_handle(reg, ctx, h)` | wait.rs `Registry::wait_slow`: first thing (the caller, `wait_with`, made the `DepthGuard`; it calls `wait_slow` for a `TRACED` job before its fast path, for another one only if its fast path, which has no site, did not finish the job: a capture that starts between such a job's submit and that path holds neither the wait nor the job's begin and end, as it holds no ready of it); join.rs `wait_latch`: after `DepthGuard::new`, as `WaitTrace::of_stack(reg, ctx, job)` (records wait end on every return and on unwinding) |
//!
//! Thread states are *derived* from these events (by `jobsys-trace`,
//! `crates/jobsys-trace/src/timeline.rs`):
//! inside a job: working; in a wait: waiting, or blocked while parked in
//! it; at a worker's top level: searching (after a job, a wake, or
//! `search_begin`), spinning, sleeping; at an external thread's top level:
//! outside (running its own code).

use crate::context::Context;
use crate::registry::Registry;

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
#[cfg(feature = "tracy")]
pub mod tracy;

pub use api::FrameGuard;
pub use event::AccessMode;
#[cfg(feature = "trace")]
pub use event::{Event, Record};
pub(crate) use hooks::forbid as forbid_in_hook;
#[cfg(feature = "trace")]
pub(crate) use hooks::refuse as refuse_in_hook;
pub use hooks::ProfilerHooks;
#[cfg(feature = "trace")]
pub use raw::{RAW_FORMAT, RAW_VERSION};
#[cfg(feature = "trace")]
pub use recorder::{ThreadEvents, Trace, TraceConfig};

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

// Every thread index is below the base: at most the workers, the building
// thread and one registered thread per context.
const _: () = assert!(
    crate::MAX_WORKERS + 1 + crate::slot::MAX_PIN_CONTEXTS < UNINDEXED_THREAD_BASE as usize
);

#[cfg(feature = "trace")]
pub(crate) use recorder::TraceState;

/// The tracer state of `reg` (one buffer per context, on/off).
#[cfg(feature = "trace")]
#[inline]
pub(crate) fn state(reg: &Registry) -> &TraceState {
    registry_state(reg)
}

/// Record one event for the calling thread and hand it to the system's
/// profiler hooks (out of line: only runs while some job system records
/// or has hooks).
#[cfg(feature = "trace")]
#[cold]
#[inline(never)]
fn record(reg: &Registry, ctx: &Context, kind: u8, id: u64, name: &'static str) {
    let st = state(reg);
    st.record(ctx.index, kind, id, name);
    if let Some(h) = st.hooks() {
        // Hooks get thread numbers (`docs/engine.md`, "Thread index"), the
        // buffers keep context indices (`Trace::from_collected` maps them).
        let id = match kind {
            event::STEAL => u64::from(reg.thread_number_at(id as u32)),
            event::WAKE => match u32::try_from(id) {
                Ok(wakee) => u64::from(reg.thread_number_at(wakee)),
                Err(_) => id,
            },
            _ => id,
        };
        hooks::dispatch(h, reg.thread_number(ctx), kind, id, name);
    }
}

/// The tracer state of `reg` lives in the registry.
#[cfg(feature = "trace")]
#[inline]
fn registry_state(reg: &Registry) -> &TraceState {
    &reg.trace
}

macro_rules! hook {
    ($(#[$m:meta])* $name:ident($($arg:ident: $ty:ty),*) => $kind:ident, $id:expr, $label:expr) => {
        $(#[$m])*
        #[inline(always)]
        #[allow(dead_code)] // called by the core
        pub(crate) fn $name(reg: &Registry, ctx: &Context $(, $arg: $ty)*) {
            #[cfg(feature = "trace")]
            if recorder::active() {
                record(reg, ctx, event::$kind, $id, $label);
            }
            #[cfg(not(feature = "trace"))]
            let _ = (reg, ctx $(, $arg)*);
        }
    };
}

hook!(
    /// A job was scheduled and is runnable at once (pushed on a deque).
    job_ready(job: JobId) => READY, job.0, ""
);
hook!(
    /// This thread starts running `job` (`name`: `Registry::job_name(slot)`,
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
pub(crate) type TracedAccess = (u64, &'static str, crate::access::Mode);

/// The declared accesses of the job `h`, just recorded in the resources'
/// histories (access/mod.rs `schedule_core` and now.rs `now`, under the
/// resource locks): an `Accesses` event, then one `Access` per resource.
/// One check per job; the list is walked only while recording.
#[inline(always)]
pub(crate) fn accesses(
    reg: &Registry,
    h: crate::JobHandle,
    list: &mut dyn Iterator<Item = TracedAccess>,
) {
    #[cfg(feature = "trace")]
    if recorder::active() {
        record_accesses(reg, h, list);
    }
    let _ = (reg, h, list);
}

#[cfg(feature = "trace")]
#[cold]
#[inline(never)]
fn record_accesses(
    reg: &Registry,
    h: crate::JobHandle,
    list: &mut dyn Iterator<Item = TracedAccess>,
) {
    if !state(reg).listening() {
        return;
    }
    let ctx = reg.current();
    let st = state(reg);
    let job = JobId::of_handle(h);
    st.record(ctx.index, event::ACCESSES, job.0, "");
    for (id, name, mode) in list {
        let (kind, mode) = match mode {
            crate::access::Mode::Read => (event::ACCESS_READ, AccessMode::Read),
            crate::access::Mode::Write => (event::ACCESS_WRITE, AccessMode::Write),
            crate::access::Mode::WriteEach => (event::ACCESS_WRITE_EACH, AccessMode::WriteEach),
        };
        st.record(ctx.index, kind, id, name);
        // The hooks get the job with each access (`dispatch` sees one
        // event at a time and skips these kinds).
        if let Some(hk) = st.hooks() {
            let thread = reg.thread_number(ctx);
            hooks::call(hk, &"access", |hk| hk.access(thread, job, id, name, mode));
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

/// `job_ready` for `submit`'s no-dependency branch, which publishes the
/// job after it: the check's outcome is kept in the job's state, as the
/// `TRACED` flag returned here when the flag is on and this system
/// records or has hooks (0 otherwise),
/// so a wait that runs the job inline needs no check of its own
/// (`wait_with`).
#[inline(always)]
#[allow(dead_code)] // called by the core
pub(crate) fn job_ready_flag(
    reg: &Registry,
    ctx: &Context,
    slot: &crate::store::Slot,
    gen: u32,
) -> u64 {
    #[cfg(feature = "trace")]
    if recorder::active() {
        return ready_flag(reg, ctx, slot, gen);
    }
    let _ = (reg, ctx, slot, gen);
    0
}

/// The flag is on: record the ready and mark the job `TRACED` only if
/// *this* system records or has hooks. A job of a system that does
/// neither (another one does) keeps the untraced wait fast path, as when
/// the flag is off; a capture of this system that starts before its wait
/// holds neither the wait nor the job, the price stated above.
#[cfg(feature = "trace")]
#[cold]
#[inline(never)]
fn ready_flag(reg: &Registry, ctx: &Context, slot: &crate::store::Slot, gen: u32) -> u64 {
    if !state(reg).listening() {
        return 0;
    }
    record(reg, ctx, event::READY, JobId::of_slot(slot, gen).0, "");
    crate::slot::TRACED
}

/// This thread's finishing job released the job in `slot` (its last
/// dependency). The id (the slot's generation, a load, and the hash) is
/// computed out of line, only while recording: inline, it kept values
/// alive through `finish` that its common path (no dependents) paid for.
#[inline(always)]
#[allow(dead_code)] // called by the core
pub(crate) fn job_released_slot(reg: &Registry, ctx: &Context, slot: &crate::store::Slot) {
    #[cfg(feature = "trace")]
    if recorder::active() {
        record_released(reg, ctx, slot);
    }
    let _ = (reg, ctx, slot);
}

#[cfg(feature = "trace")]
#[cold]
#[inline(never)]
fn record_released(reg: &Registry, ctx: &Context, slot: &crate::store::Slot) {
    let id = JobId::of_slot(slot, slot.gen_now());
    record(reg, ctx, event::RELEASED, id.0, "");
}

/// Thread `ctx` starts working for `reg` (worker.rs `worker_main` first
/// thing; registry.rs `current_slow` when an outside thread claims a
/// context). Hooks only: the recorder names threads itself.
#[inline]
pub(crate) fn thread_start(reg: &Registry, ctx: &Context) {
    #[cfg(feature = "trace")]
    if recorder::active() {
        thread_event(reg, ctx, true);
    }
    let _ = (reg, ctx);
}

/// Thread `ctx` is done with `reg` (worker.rs `worker_main` last thing;
/// registry.rs `Claim::drop`, when an outside thread exits). Hooks only.
#[inline]
pub(crate) fn thread_stop(reg: &Registry, ctx: &Context) {
    #[cfg(feature = "trace")]
    if recorder::active() {
        thread_event(reg, ctx, false);
    }
    let _ = (reg, ctx);
}

#[cfg(feature = "trace")]
#[cold]
#[inline(never)]
fn thread_event(reg: &Registry, ctx: &Context, start: bool) {
    if let Some(h) = state(reg).hooks() {
        let index = reg.thread_number(ctx);
        if start {
            let t = std::thread::current();
            hooks::call(h, &"thread_start", |h| {
                h.thread_start(index, t.name().unwrap_or(""))
            });
        } else {
            hooks::call(h, &"thread_stop", |h| h.thread_stop(index));
        }
    }
}

/// `job_begin` for the job in `slot`: the name (`Registry::job_name`, an
/// interned-name lookup) is only resolved while recording. Returns the name
/// it recorded, to pass to [`job_end`] (the slot's name may change once
/// the job finishes); `None` when not recording.
#[inline(always)]
#[allow(dead_code)] // called by the core
pub(crate) fn job_begin_slot(
    reg: &Registry,
    ctx: &Context,
    slot: &crate::store::Slot,
    gen: u32,
) -> Option<&'static str> {
    #[cfg(feature = "trace")]
    if recorder::active() {
        return begin_slot(reg, ctx, slot, gen);
    }
    let _ = (reg, ctx, slot, gen);
    None
}

/// The flag is on: resolve the name and record the begin only if this
/// system records or has hooks (`None` otherwise, so no end follows).
#[cfg(feature = "trace")]
#[cold]
#[inline(never)]
fn begin_slot(
    reg: &Registry,
    ctx: &Context,
    slot: &crate::store::Slot,
    gen: u32,
) -> Option<&'static str> {
    if !state(reg).listening() {
        return None;
    }
    let name = Registry::job_name(slot);
    record(
        reg,
        ctx,
        event::JOB_BEGIN,
        JobId::of_slot(slot, gen).0,
        name,
    );
    Some(name)
}

/// Records a wait's begin when made and its end when dropped, so every
/// return path (and unwinding) closes the wait.
#[allow(dead_code)] // used by the core
pub(crate) struct WaitTrace<'a> {
    #[cfg(feature = "trace")]
    reg: &'a Registry,
    #[cfg(feature = "trace")]
    ctx: &'a Context,
    /// The waited job's address and generation, hashed into a `JobId` only
    /// while recording (hashing up front showed in the W1 counts with
    /// tracing off).
    #[cfg(feature = "trace")]
    key: (usize, u32),
    #[cfg(not(feature = "trace"))]
    _p: std::marker::PhantomData<&'a ()>,
}

impl<'a> WaitTrace<'a> {
    /// A wait for the job `h` names.
    #[inline(always)]
    #[allow(dead_code)] // used by the core
    pub(crate) fn of_handle(reg: &'a Registry, ctx: &'a Context, h: crate::JobHandle) -> Self {
        Self::new(reg, ctx, h.slot.as_ptr() as usize, h.gen)
    }

    /// A wait for a `join` stack job (the id of `JobId::of_stack`).
    #[inline(always)]
    #[allow(dead_code)] // used by the core
    pub(crate) fn of_stack(
        reg: &'a Registry,
        ctx: &'a Context,
        job: *const crate::join::StackHeader,
    ) -> Self {
        Self::new(reg, ctx, job as usize | 1, 0)
    }

    #[inline(always)]
    fn new(reg: &'a Registry, ctx: &'a Context, addr: usize, gen: u32) -> WaitTrace<'a> {
        wait_begin(reg, ctx, addr, gen);
        #[cfg(feature = "trace")]
        return WaitTrace {
            reg,
            ctx,
            key: (addr, gen),
        };
        #[cfg(not(feature = "trace"))]
        {
            let _ = (addr, gen);
            WaitTrace {
                _p: std::marker::PhantomData,
            }
        }
    }
}

impl Drop for WaitTrace<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        #[cfg(feature = "trace")]
        wait_end(self.reg, self.ctx, self.key.0, self.key.1);
    }
}
