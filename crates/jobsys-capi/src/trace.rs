//! The tracer from C: start a capture, stop it (the system keeps the last
//! stopped capture), write that capture to a file as a raw capture
//! (`Trace::write_raw`; `jobsys-trace` summarises, compares and renders
//! such files, and `jobsys-trace export` turns them into Chrome trace JSON
//! for ui.perfetto.dev). `jobsys_config.trace` starts a capture in
//! `jobsys_create`. `jobsys_frame_begin`/`jobsys_frame_end` mark frames in
//! the capture (`JobSystem::frame_begin`/`frame_end`; the C++ wrapper's
//! `System::frame()` guard pairs them).

use crate::errors::{ffi, non_null, Code, Error};
use crate::system::{system, System};
use std::ffi::{c_char, CStr};
use std::path::PathBuf;

/// Start recording what every thread of the system does.
///
/// # Safety
/// `sys` is NULL or a live system.
#[no_mangle]
pub unsafe extern "C" fn jobsys_trace_start(sys: *const System) -> Code {
    ffi("jobsys_trace_start", || {
        // SAFETY: `sys` is NULL or a live system, as the caller promises.
        let s = unsafe { system(sys) }?;
        if s.js.trace_start() {
            Ok(())
        } else {
            Err(Error::new(Code::BadState, "a capture is already running"))
        }
    })
}

/// Stop recording; the system keeps the capture for `jobsys_trace_write`.
///
/// # Safety
/// `sys` is NULL or a live system.
#[no_mangle]
pub unsafe extern "C" fn jobsys_trace_stop(sys: *const System) -> Code {
    ffi("jobsys_trace_stop", || {
        // SAFETY: `sys` is NULL or a live system, as the caller promises.
        let s = unsafe { system(sys) }?;
        if !s.js.is_tracing() {
            return Err(Error::new(Code::BadState, "no capture is running"));
        }
        let trace = s.js.trace_stop();
        *s.last_trace() = Some(trace);
        Ok(())
    })
}

/// Write the last stopped capture to the file `path` as a raw capture.
///
/// # Safety
/// `sys` is NULL or a live system; `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn jobsys_trace_write(sys: *const System, path: *const c_char) -> Code {
    ffi("jobsys_trace_write", || {
        // SAFETY: `sys` is NULL or a live system, as the caller promises.
        let s = unsafe { system(sys) }?;
        non_null(path, "path")?;
        // SAFETY: non-NULL and NUL-terminated, as the caller promises.
        let path = path_from_c(unsafe { CStr::from_ptr(path) });
        let last = s.last_trace();
        let trace = last.as_ref().ok_or_else(|| {
            Error::new(
                Code::BadState,
                "no capture to write: call jobsys_trace_start and jobsys_trace_stop first",
            )
        })?;
        let io = |e: std::io::Error| Error::new(Code::Io, format!("{}: {e}", path.display()));
        let file = std::fs::File::create(&path).map_err(io)?;
        trace.write_raw(file).map_err(io)
    })
}

/// Mark the beginning of a frame in the running capture (nothing when not
/// tracing).
///
/// # Safety
/// `sys` is NULL or a live system.
#[no_mangle]
pub unsafe extern "C" fn jobsys_frame_begin(sys: *const System) -> Code {
    ffi("jobsys_frame_begin", || {
        // SAFETY: `sys` is NULL or a live system, as the caller promises.
        let s = unsafe { system(sys) }?;
        s.js.frame_begin();
        Ok(())
    })
}

/// Mark the end of the frame begun last (nothing when not tracing).
///
/// # Safety
/// `sys` is NULL or a live system.
#[no_mangle]
pub unsafe extern "C" fn jobsys_frame_end(sys: *const System) -> Code {
    ffi("jobsys_frame_end", || {
        // SAFETY: `sys` is NULL or a live system, as the caller promises.
        let s = unsafe { system(sys) }?;
        s.js.frame_end();
        Ok(())
    })
}

#[cfg(unix)]
fn path_from_c(p: &CStr) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::OsStr::from_bytes(p.to_bytes()).into()
}

#[cfg(not(unix))]
fn path_from_c(p: &CStr) -> PathBuf {
    p.to_string_lossy().into_owned().into()
}
