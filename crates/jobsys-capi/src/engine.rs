//! Engine integration from C: pins (`jobsys_pin`, read here into a
//! `jobsys::Pin`), `jobsys_register_thread`, `jobsys_run_pinned`,
//! `jobsys_thread_index`, `jobsys_set_active_workers`,
//! `jobsys_active_workers`. (`jobsys_schedule_pinned*`, `jobsys_cancel` and
//! `jobsys_is_cancelled` are with the other job functions in `jobs`.)
//!
//! Thread indices, as the library numbers them: 0 is the thread that
//! called `jobsys_create`, `1..=workers` the workers, then the threads
//! that called `jobsys_register_thread`. A `JOBSYS_PIN_THREAD` pin names
//! a thread by that index; the library's `Pin::Thread` needs the
//! `ThreadIndex` value `register_thread` returned, which the system keeps
//! per index (`System::record_thread`).

use crate::errors::{ffi, non_null, Code, Error, Result};
use crate::system::{system, write_opt, System};

/// `jobsys_pin_kind` values.
pub const PIN_MAIN: i32 = 0;
pub const PIN_WORKER: i32 = 1;
pub const PIN_THREAD: i32 = 2;

/// `jobsys_pin`: where a pinned job runs. All-zero is `JOBSYS_PIN_MAIN`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pin {
    /// A `jobsys_pin_kind`.
    pub kind: i32,
    /// `PIN_WORKER`: the worker number (0-based); `PIN_THREAD`: a thread
    /// index; `PIN_MAIN`: 0.
    pub index: u32,
}

impl System {
    /// The library's pin for `p`, or `InvalidArgument` saying why there is
    /// none (no panic reaches the library's own checks).
    pub fn pin(&self, p: Pin) -> Result<jobsys::Pin> {
        let workers = self.js.workers();
        let bad = |m: String| Err(Error::new(Code::InvalidArgument, m));
        match (p.kind, p.index as usize) {
            (PIN_MAIN, 0) => Ok(jobsys::Pin::Main),
            (PIN_MAIN, i) => bad(format!("pin {{JOBSYS_PIN_MAIN, {i}}}: the index of a MAIN pin must be 0")),
            (PIN_WORKER, i) if i < workers => Ok(jobsys::Pin::Worker(i)),
            (PIN_WORKER, i) => bad(format!(
                "pin {{JOBSYS_PIN_WORKER, {i}}}: the system has {workers} workers (0..{workers})"
            )),
            (PIN_THREAD, 0) => Ok(jobsys::Pin::Main),
            (PIN_THREAD, i) if i <= workers => Ok(jobsys::Pin::Worker(i - 1)),
            (PIN_THREAD, i) => match self.registered_thread(p.index) {
                Some(t) => Ok(jobsys::Pin::Thread(t)),
                None => bad(format!(
                    "pin {{JOBSYS_PIN_THREAD, {i}}}: no thread registered with index {i} (jobsys_register_thread gives them out)"
                )),
            },
            (k, _) => bad(format!("pin kind {k} is not a jobsys_pin_kind")),
        }
    }
}

/// Make the calling thread one that runs jobs pinned to it; `*index` (if
/// not NULL) = its thread index.
///
/// # Safety
/// `sys` is NULL or live; `index` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_register_thread(sys: *const System, index: *mut u32) -> Code {
    ffi("jobsys_register_thread", || {
        // SAFETY: as promised by the caller.
        let s = unsafe { system(sys) }?;
        // The library panics on a worker; say so as an error instead.
        if let Some(i @ 1..) = s.js.thread_index() {
            if i <= s.js.workers() {
                return Err(Error::new(
                    Code::BadState,
                    format!("called on worker thread {} (thread index {i}): workers run their pinned jobs already", i - 1),
                ));
            }
        }
        let t = s.js.register_thread();
        s.record_thread(t);
        // SAFETY: NULL or writable, as promised.
        unsafe { write_opt(index, t.get() as u32) };
        Ok(())
    })
}

/// Run the calling thread's ready pinned jobs; `*ran` (if not NULL) = how
/// many ran.
///
/// # Safety
/// `sys` is NULL or live; `ran` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_run_pinned(sys: *const System, ran: *mut u32) -> Code {
    ffi("jobsys_run_pinned", || {
        // SAFETY: as promised by the caller.
        let s = unsafe { system(sys) }?;
        let n = s.js.run_pinned();
        // SAFETY: NULL or writable, as promised.
        unsafe { write_opt(ran, u32::try_from(n).unwrap_or(u32::MAX)) };
        Ok(())
    })
}

/// `*out` = the calling thread's index, or -1 for a thread the system
/// does not know.
///
/// # Safety
/// `sys` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_thread_index(sys: *const System, out: *mut i32) -> Code {
    ffi("jobsys_thread_index", || {
        // SAFETY: as promised by the caller.
        let s = unsafe { system(sys) }?;
        non_null(out, "out")?;
        let i = s.js.thread_index().map_or(-1, |i| i as i32);
        // SAFETY: non-NULL, writable as promised.
        unsafe { out.write(i) };
        Ok(())
    })
}

/// Let at most `n` workers take work.
///
/// # Safety
/// `sys` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn jobsys_set_active_workers(sys: *const System, n: u32) -> Code {
    ffi("jobsys_set_active_workers", || {
        // SAFETY: as promised by the caller.
        let s = unsafe { system(sys) }?;
        s.js.set_active_workers(n as usize).map_err(|e| {
            Error::new(
                Code::InvalidArgument,
                format!(
                    "n = {}: the system has {} workers, so at most {} can be active",
                    e.requested, e.workers, e.workers
                ),
            )
        })
    })
}

/// `*out` = the workers allowed to take work now.
///
/// # Safety
/// `sys` is NULL or live; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_active_workers(sys: *const System, out: *mut u32) -> Code {
    ffi("jobsys_active_workers", || {
        // SAFETY: as promised by the caller.
        let s = unsafe { system(sys) }?;
        non_null(out, "out")?;
        // SAFETY: non-NULL, writable as promised.
        unsafe { out.write(s.js.active_workers() as u32) };
        Ok(())
    })
}
