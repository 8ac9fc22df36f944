//! Engine integration from C: pins (`jobsys_pin`, read here into a
//! `jobsys::Pin`), `jobsys_register_thread`, `jobsys_register_thread_pin`,
//! `jobsys_run_pinned`, `jobsys_thread_index`, `jobsys_set_active_workers`,
//! `jobsys_active_workers`. (Pinned jobs are scheduled with the other job
//! functions in `jobs`: `JOBSYS_JOB_PINNED` and the desc's pin.)
//!
//! Thread indices, as the library numbers them: 0 is the thread that
//! called `jobsys_create`, `1..=workers` the workers, then the threads
//! that called `jobsys_register_thread`, each the smallest index no live
//! registered thread holds (docs/engine.md, "Thread index"). A
//! `JOBSYS_PIN_THREAD` pin names a thread by that index: whichever thread
//! holds it when the job is scheduled. A `JOBSYS_PIN_REGISTERED` pin names
//! one registration (`jobsys_register_thread_pin`): the index and the
//! registration's number (`ThreadIndex::registration`), packed in 32 bits
//! (`token`). The library's `Pin::Thread` needs a `ThreadIndex`, which
//! `JobSystem::registered_thread` gives for those numbers.

use crate::errors::{ffi, non_null, Code, Error, Result};
use crate::system::{system, write_opt, System};

/// `jobsys_pin_kind` values.
pub const PIN_MAIN: i32 = 0;
pub const PIN_WORKER: i32 = 1;
pub const PIN_THREAD: i32 = 2;
pub const PIN_REGISTERED: i32 = 3;

/// A `JOBSYS_PIN_REGISTERED` pin's `index`: the thread index in its low
/// `INDEX_BITS` bits, the registration's number (mod 2^22) above.
const INDEX_BITS: u32 = 10;
const INDEX_MASK: u32 = (1 << INDEX_BITS) - 1;
// Every thread index fits: the workers, the creating thread and the 256
// other threads that may use a system at once.
const _: () = assert!(jobsys::MAX_WORKERS + 1 + 256 <= 1 << INDEX_BITS);

/// The `JOBSYS_PIN_REGISTERED` token of registration `t`.
fn token(t: jobsys::ThreadIndex) -> u32 {
    (t.get() as u32) | t.registration() << INDEX_BITS
}

/// The registration a token names: its index and full number, given the
/// number of the index's last registration (`last`; the token keeps only
/// the low 22 bits), or `None` for one never given out.
fn untoken(token: u32, last: u32) -> (usize, Option<u32>) {
    let index = (token & INDEX_MASK) as usize;
    let low = token >> INDEX_BITS;
    let span = 1u64 << (32 - INDEX_BITS);
    // The latest number at or below `last` with these low bits.
    let base = u64::from(last) & !(span - 1);
    let mut full = base | u64::from(low);
    if full > u64::from(last) {
        full = full.wrapping_sub(span);
    }
    let number = (full >= 1 && full <= u64::from(last)).then_some(full as u32);
    (index, number)
}

/// `jobsys_pin`: where a pinned job runs. All-zero is `JOBSYS_PIN_MAIN`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pin {
    /// A `jobsys_pin_kind`.
    pub kind: i32,
    /// `PIN_WORKER`: a worker's thread index (`1..=workers`); `PIN_THREAD`:
    /// a thread index; `PIN_MAIN`: 0.
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
            (PIN_WORKER, i) if (1..=workers).contains(&i) => Ok(jobsys::Pin::Worker(i)),
            (PIN_WORKER, i) => bad(format!(
                "pin {{JOBSYS_PIN_WORKER, {i}}}: not a worker's thread index; the system's \
                 {workers} workers are thread indices 1..={workers}"
            )),
            (PIN_THREAD, 0) => Ok(jobsys::Pin::Main),
            (PIN_THREAD, i) if i <= workers => Ok(jobsys::Pin::Worker(i)),
            // The index's last registration: the thread holding it now, or
            // (none does) one that exited, which cancels the job.
            (PIN_THREAD, i) => match self.js.registered_thread(i, None) {
                Some(t) => Ok(jobsys::Pin::Thread(t)),
                None => bad(format!(
                    "pin {{JOBSYS_PIN_THREAD, {i}}}: no thread registered with index {i} (jobsys_register_thread gives them out)"
                )),
            },
            (PIN_REGISTERED, _) => {
                let index = (p.index & INDEX_MASK) as usize;
                let found = self.js.registered_thread(index, None).and_then(|last| {
                    match untoken(p.index, last.registration()) {
                        (_, Some(n)) => self.js.registered_thread(index, Some(n)),
                        (_, None) => None,
                    }
                });
                match found {
                    Some(t) => Ok(jobsys::Pin::Thread(t)),
                    None => bad(format!(
                        "pin {{JOBSYS_PIN_REGISTERED, {}}}: not a registration this system gave out (jobsys_register_thread_pin gives them)",
                        p.index
                    )),
                }
            }
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
        let t = register(s)?;
        // SAFETY: NULL or writable, as promised.
        unsafe { write_opt(index, t.get() as u32) };
        Ok(())
    })
}

/// Register the calling thread (`JobSystem::register_thread`).
fn register(s: &System) -> Result<jobsys::ThreadIndex> {
    // The library panics on a worker; say so as an error instead.
    if let Some(i @ 1..) = s.js.thread_index() {
        if i <= s.js.workers() {
            return Err(Error::new(
                Code::BadState,
                format!(
                    "called on a worker (thread index {i}): workers run their pinned jobs already"
                ),
            ));
        }
    }
    Ok(s.js.register_thread())
}

/// `jobsys_register_thread`, and `*pin` = the pin that names this
/// registration only (`{JOBSYS_PIN_MAIN, 0}` on the creating thread).
///
/// # Safety
/// `sys` is NULL or live; `pin` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_register_thread_pin(sys: *const System, pin: *mut Pin) -> Code {
    ffi("jobsys_register_thread_pin", || {
        // SAFETY: as promised by the caller.
        let s = unsafe { system(sys) }?;
        non_null(pin, "pin")?;
        let t = register(s)?;
        let p = match t.get() {
            0 => Pin {
                kind: PIN_MAIN,
                index: 0,
            },
            _ => Pin {
                kind: PIN_REGISTERED,
                index: token(t),
            },
        };
        // SAFETY: non-NULL, writable as promised.
        unsafe { pin.write(p) };
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

#[cfg(test)]
mod tests {
    use super::{untoken, INDEX_BITS};

    /// A token gives back its index and the full registration number it
    /// was made from, as long as that is one of the last 2^22 of its index;
    /// numbers not given out yet are refused.
    #[test]
    fn a_token_names_the_registration_it_was_made_from() {
        let tok = |index: u32, n: u32| index | n << INDEX_BITS;
        assert_eq!(untoken(tok(5, 1), 1), (5, Some(1)));
        assert_eq!(untoken(tok(5, 1), 3), (5, Some(1)));
        assert_eq!(untoken(tok(5, 3), 3), (5, Some(3)));
        assert_eq!(untoken(tok(5, 4), 3), (5, None), "not given out yet");
        assert_eq!(untoken(tok(5, 0), 3), (5, None), "0 is never a number");
        let big = (1u32 << 22) + 7;
        assert_eq!(
            untoken(tok(9, big), big),
            (9, Some(big)),
            "only the low bits kept"
        );
        // The latest number with those low bits.
        assert_eq!(untoken(tok(9, 5), big), (9, Some((1 << 22) + 5)));
        assert_eq!(
            untoken(tok(9, 8), big),
            (9, Some(8)),
            "2^22 + 8 not given out yet"
        );
    }
}
