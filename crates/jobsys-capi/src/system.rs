//! `jobsys_system`: create/destroy, hot zones, flush, worker count, stats.
//!
//! A `jobsys_system*` is a `Box<System>` handed to C. `jobsys_destroy`
//! first runs every job still outstanding *while the system is still
//! whole* (jobs may call back into it: `JobSystem::drain_outstanding`),
//! then drops the `JobSystem`, whose own shutdown finds nothing left to
//! run and joins the workers.

use crate::config::Config;
use crate::errors::{ffi, non_null, Code, Error, Result};
use crate::jobs::running_in;
use jobsys::trace::Trace;
use jobsys::{HotZone, JobSystem};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};

/// What a `jobsys_system*` points to.
pub struct System {
    pub js: JobSystem,
    /// Identifies this system's C jobs (`jobs::running_in`).
    pub serial: u32,
    /// Open hot zones; `jobsys_hot_zone_end` drops the newest.
    hot_zones: Mutex<Vec<HotZone>>,
    /// The last capture `jobsys_trace_stop` took.
    last_trace: Mutex<Option<Trace>>,
}

// C may use one system from any number of threads at once.
const _: () = {
    const fn shared_across_threads<T: Send + Sync>() {}
    shared_across_threads::<System>()
};

/// Lock `m`, ignoring poisoning (no code that holds these locks can panic
/// halfway through an update that matters).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Serials of systems created so far (0 is never used).
static NEXT_SERIAL: AtomicU32 = AtomicU32::new(1);

impl System {
    /// The last stopped capture (see `trace`).
    pub fn last_trace(&self) -> MutexGuard<'_, Option<Trace>> {
        lock(&self.last_trace)
    }
}

/// The system behind `sys`, or `NullArgument`.
///
/// # Safety
/// `sys` is NULL or a pointer from `jobsys_create` not yet destroyed.
pub unsafe fn system<'a>(sys: *const System) -> Result<&'a System> {
    non_null(sys, "system")?;
    // SAFETY: non-NULL; the caller promises it is a live system.
    Ok(unsafe { &*sys })
}

/// Write `v` through `out` if `out` is not NULL.
///
/// # Safety
/// `out` is NULL or valid for a write of `T`.
pub unsafe fn write_opt<T>(out: *mut T, v: T) {
    if !out.is_null() {
        // SAFETY: non-NULL and writable, as the caller promises.
        unsafe { out.write(v) };
    }
}

/// Start a job system configured by `*config` (NULL: the defaults).
///
/// # Safety
/// `config` is NULL or points to a `jobsys_config` whose `profiler` is
/// NULL or a valid `jobsys_profiler_callbacks` (see `profiler::from_c`);
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_create(config: *const Config, out: *mut *mut System) -> Code {
    ffi("jobsys_create", || {
        non_null(out, "out")?;
        let config = if config.is_null() {
            Config::default()
        } else {
            // SAFETY: non-NULL; the caller promises it points to a config.
            unsafe { config.read() }
        };
        let mut builder = config.builder()?;
        // SAFETY: `config.profiler` is NULL or points to a table whose
        // callbacks keep the header's contract, as the caller promises.
        if let Some(hooks) = unsafe { crate::profiler::from_c(config.profiler) }? {
            builder = builder.profiler(hooks);
        }
        let js = builder
            .build()
            .map_err(|e| Error::new(Code::Config, e.to_string()))?;
        let serial = NEXT_SERIAL.fetch_add(1, Ordering::Relaxed).max(1);
        let sys = Box::new(System {
            js,
            serial,
            hot_zones: Mutex::new(Vec::new()),
            last_trace: Mutex::new(None),
        });
        if config.trace != 0 {
            sys.js.trace_start();
        }
        // SAFETY: checked non-NULL; the caller promises it is writable.
        unsafe { out.write(Box::into_raw(sys)) };
        Ok(())
    })
}

/// Run every scheduled job, stop the workers, free the system.
///
/// # Safety
/// `sys` is NULL or a live system; no thread other than this system's own
/// jobs uses it during or after this call.
#[no_mangle]
pub unsafe extern "C" fn jobsys_destroy(sys: *mut System) -> Code {
    ffi("jobsys_destroy", || {
        // SAFETY: as promised by the caller.
        let s = unsafe { system(sys) }?;
        if running_in(s.serial) {
            return Err(Error::new(
                Code::BadState,
                "called from inside one of this system's own jobs (it would wait for itself); destroy it from outside",
            ));
        }
        // No other thread may call in from here on: jobs pinned to the
        // other outside threads can never run, and the drain waited for
        // them for ever. Cancelled as the Rust system's shutdown does.
        s.js.shutdown_cancel_pinned_elsewhere();
        s.js.drain_outstanding().map_err(|_| {
            Error::new(
                Code::BadState,
                "a job of this system cannot finish while this thread waits (called from inside one of its jobs); destroy it from outside",
            )
        })?;
        // SAFETY: `sys` came from `Box::into_raw` in `jobsys_create` and is
        // destroyed once; no job of this system is left to use it (drained)
        // and the caller promises nobody else does.
        drop(unsafe { Box::from_raw(sys) });
        Ok(())
    })
}

/// `*out` = the number of worker threads.
///
/// # Safety
/// `sys` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_workers(sys: *const System, out: *mut u32) -> Code {
    ffi("jobsys_workers", || {
        // SAFETY: as promised by the caller.
        let s = unsafe { system(sys) }?;
        non_null(out, "out")?;
        // SAFETY: non-NULL, writable as promised.
        unsafe { out.write(s.js.workers() as u32) };
        Ok(())
    })
}

/// Publish this thread's batched jobs; `*woken` (if not NULL) = workers woken.
///
/// # Safety
/// `sys` is NULL or live; `woken` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_flush(sys: *const System, woken: *mut u32) -> Code {
    ffi("jobsys_flush", || {
        // SAFETY: as promised by the caller.
        let s = unsafe { system(sys) }?;
        let n = s.js.flush();
        // SAFETY: NULL or writable, as promised.
        unsafe { write_opt(woken, n as u32) };
        Ok(())
    })
}

/// Open a hot zone (idle workers spin instead of sleeping until it ends).
///
/// # Safety
/// `sys` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn jobsys_hot_zone_begin(sys: *const System) -> Code {
    ffi("jobsys_hot_zone_begin", || {
        // SAFETY: as promised by the caller.
        let s = unsafe { system(sys) }?;
        let zone = s.js.hot_zone();
        lock(&s.hot_zones).push(zone);
        Ok(())
    })
}

/// Close one open hot zone.
///
/// # Safety
/// `sys` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn jobsys_hot_zone_end(sys: *const System) -> Code {
    ffi("jobsys_hot_zone_end", || {
        // SAFETY: as promised by the caller.
        let s = unsafe { system(sys) }?;
        let zone = lock(&s.hot_zones).pop();
        match zone {
            Some(z) => {
                drop(z);
                Ok(())
            }
            None => Err(Error::new(Code::BadState, "no hot zone is open")),
        }
    })
}

/// `jobsys_stats` (the header's field order).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub workers: u64,
    pub jobs_scheduled: u64,
    pub jobs_finished: u64,
    pub wakes: u64,
    pub futile_wakes: u64,
    pub sleeps: u64,
    pub spin_time_ns: u64,
    pub steals: u64,
    pub failed_steals: u64,
    pub active_workers: u64,
    pub handoffs: u64,
}

impl From<jobsys::Stats> for Stats {
    fn from(s: jobsys::Stats) -> Stats {
        Stats {
            workers: s.workers as u64,
            jobs_scheduled: s.jobs_scheduled,
            jobs_finished: s.jobs_finished,
            wakes: s.wakes,
            futile_wakes: s.futile_wakes,
            sleeps: s.sleeps,
            spin_time_ns: u64::try_from(s.spin_time.as_nanos()).unwrap_or(u64::MAX),
            steals: s.steals,
            failed_steals: s.failed_steals,
            active_workers: s.active_workers as u64,
            handoffs: s.handoffs,
        }
    }
}

/// The body of the three stats functions.
///
/// # Safety
/// As for `jobsys_stats`.
unsafe fn stats_into(
    name: &str,
    sys: *const System,
    out: *mut Stats,
    get: impl FnOnce(&JobSystem) -> Result<jobsys::Stats>,
) -> Code {
    ffi(name, || {
        // SAFETY: as promised by the caller.
        let s = unsafe { system(sys) }?;
        non_null(out, "out")?;
        let st = Stats::from(get(&s.js)?);
        // SAFETY: non-NULL, writable as promised.
        unsafe { out.write(st) };
        Ok(())
    })
}

/// `*out` = counters summed over all threads since the system started.
///
/// # Safety
/// `sys` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_get_stats(sys: *const System, out: *mut Stats) -> Code {
    // SAFETY: the caller's promises are `stats_into`'s.
    unsafe { stats_into("jobsys_get_stats", sys, out, |js| Ok(js.stats())) }
}

/// `*out` = counters since the previous `jobsys_take_stats` (per frame).
///
/// # Safety
/// `sys` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_take_stats(sys: *const System, out: *mut Stats) -> Code {
    // SAFETY: the caller's promises are `stats_into`'s.
    unsafe { stats_into("jobsys_take_stats", sys, out, |js| Ok(js.take_stats())) }
}

/// `*out` = counters of the worker with thread index `thread_index`
/// (`1..=workers`; docs/engine.md, "Thread index").
///
/// # Safety
/// `sys` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_get_worker_stats(
    sys: *const System,
    thread_index: u32,
    out: *mut Stats,
) -> Code {
    // SAFETY: the caller's promises are `stats_into`'s.
    unsafe {
        stats_into("jobsys_get_worker_stats", sys, out, |js| {
            // `worker_stats()[k]` is thread index k + 1.
            (thread_index as usize)
                .checked_sub(1)
                .and_then(|k| js.worker_stats().get(k).copied())
                .ok_or_else(|| {
                    let n = js.workers();
                    Error::new(
                        Code::InvalidArgument,
                        format!(
                            "thread index {thread_index}: not a worker's; the system's {n} \
                             workers are thread indices 1..={n}"
                        ),
                    )
                })
        })
    }
}
