//! Limiters from C: `jobsys_limiter_create`, `jobsys_limiter_destroy`,
//! `jobsys_limiter_slot`. A `jobsys_limiter` is the library's `Limiter`
//! boxed; `jobsys_job_desc.limiter` points at one for the call that
//! schedules (jobs keep what they need of it themselves, so it may be
//! destroyed while its jobs still wait or run).

use crate::errors::{ffi, non_null, Code, Error};

/// `jobsys_limiter`.
pub struct Limiter(pub(crate) jobsys::Limiter);

/// `*out` = a limiter of `max` seats.
///
/// # Safety
/// `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_limiter_create(max: usize, out: *mut *mut Limiter) -> Code {
    ffi("jobsys_limiter_create", || {
        non_null(out, "out")?;
        if max == 0 {
            return Err(Error::new(
                Code::InvalidArgument,
                "max is 0: a limiter needs at least one seat",
            ));
        }
        let l = Box::into_raw(Box::new(Limiter(jobsys::Limiter::new(max))));
        // SAFETY: non-NULL (checked) and writable, as the caller promises.
        unsafe { out.write(l) };
        Ok(())
    })
}

/// Free a limiter (NULL: nothing).
///
/// # Safety
/// `l` NULL or from `jobsys_limiter_create`, not destroyed yet, and not
/// used by a call that is scheduling meanwhile.
#[no_mangle]
pub unsafe extern "C" fn jobsys_limiter_destroy(l: *mut Limiter) -> Code {
    ffi("jobsys_limiter_destroy", || {
        if !l.is_null() {
            // SAFETY: from `Box::into_raw` in `jobsys_limiter_create`, freed
            // once, as the caller promises.
            drop(unsafe { Box::from_raw(l) });
        }
        Ok(())
    })
}

/// The seat of the limited job running on this thread; `usize::MAX`
/// (`JOBSYS_NO_SEAT`) outside one.
#[no_mangle]
pub extern "C" fn jobsys_limiter_slot() -> usize {
    jobsys::limiter_slot().unwrap_or(usize::MAX)
}
