//! Jobs from C: `jobsys_schedule*` (`jobsys_schedule_pinned*` included),
//! `jobsys_parallel_for*`, `jobsys_combine`, `jobsys_complete`,
//! `jobsys_is_complete`, `jobsys_fail`, `jobsys_cancel`,
//! `jobsys_is_cancelled`.
//!
//! A C job is a closure holding the function pointer, `data`, the optional
//! `release` callback and the system's serial: 40 bytes, which the library
//! stores inline in the job's slot (no allocation). A `parallel_for`'s
//! closure also holds its range and piece size (56 bytes), more than the 16
//! the library keeps inline there, so each C parallel_for allocates one
//! block. Invariants:
//! - The C function runs inside [`run_c`], which keeps a per-thread stack of
//!   the C jobs running on this thread: `jobsys_fail` marks the innermost
//!   one, and `jobsys_destroy` refuses to run inside a job of its system.
//! - A job marked failed ends with `resume_unwind` *after* its C function
//!   returned, so the unwind only crosses Rust frames, up to the library's
//!   `catch_unwind`, which fails the job and its dependents. A Rust panic in
//!   the wrapper itself would be a jobsys bug; it aborts with a message
//!   rather than unwind anywhere near C frames.
//! - `release(data)` is called exactly once, when the library drops the
//!   closure: after the last call of the function, or without any call if
//!   the job never runs (a dependency failed, or it was cancelled: then
//!   the thread that cancels it, or that finishes a cancelled loop's last
//!   running piece, drops it). Not called when scheduling itself returns
//!   an error: then `data` stays the caller's.

use crate::engine::Pin;
use crate::errors::{ffi, non_null, Code, Error, Result};
use crate::handles::{Handle, Lookup};
use crate::system::{system, write_opt, System};
use jobsys::{Batch, Priority};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Mutex;

/// `jobsys_job_fn`.
pub type JobFn = unsafe extern "C" fn(data: *mut c_void);
/// `jobsys_range_fn`.
pub type RangeFn = unsafe extern "C" fn(data: *mut c_void, begin: u32, end: u32);
/// `jobsys_release_fn`.
pub type ReleaseFn = unsafe extern "C" fn(data: *mut c_void);

/// `jobsys_priority` values (Normal is 0 so a zeroed desc is the default).
pub const PRIORITY_NORMAL: i32 = 0;
pub const PRIORITY_HIGH: i32 = 1;
pub const PRIORITY_LOW: i32 = 2;

/// `jobsys_job_desc`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct JobDesc {
    /// NUL-terminated name for the tracer, or NULL. Copied.
    pub name: *const c_char,
    /// A `jobsys_priority`.
    pub priority: i32,
    /// Called with `data` when the job is done with it, or NULL.
    pub release: Option<ReleaseFn>,
}

/// The caller's `data` pointer.
#[derive(Clone, Copy)]
struct UserData(*mut c_void);
// SAFETY: the header makes the caller promise that `data` may be used from
// any thread (jobs run on workers); jobsys itself never dereferences it.
unsafe impl Send for UserData {}
// SAFETY: as for Send; a parallel_for passes it to several threads at once,
// which the header also states.
unsafe impl Sync for UserData {}

impl UserData {
    /// The pointer (a method, so closures capture the whole `UserData`).
    fn ptr(self) -> *mut c_void {
        self.0
    }
}

/// Calls `release(data)` when dropped, i.e. when the library drops the job
/// (after it ran, or unrun when it was skipped). The call counts as part of
/// the job of system `serial`: a `jobsys_destroy` of that system from the
/// callback gets `JOBSYS_ERR_BAD_STATE`, as from the job itself.
struct Release {
    f: Option<ReleaseFn>,
    data: UserData,
    serial: u32,
}

impl Drop for Release {
    fn drop(&mut self) {
        if let Some(f) = self.f {
            // `try_with`: at thread exit the library cancels the thread's
            // pinned jobs from a thread-local destructor, maybe after
            // FRAMES is gone; `with` then panicked and `release` never ran.
            // Without the frame, the callback just does not count as part
            // of the job.
            let pushed = FRAMES
                .try_with(|fr| {
                    fr.borrow_mut().push(Frame {
                        system: self.serial,
                        failure: None,
                        release: true,
                    })
                })
                .is_ok();
            // SAFETY: the caller of `jobsys_schedule*` passed `f` and `data`
            // for exactly this call, made once. A C function does not
            // unwind, so the frame is always popped below.
            unsafe { f(self.data.ptr()) };
            if pushed {
                let _ = FRAMES.try_with(|fr| fr.borrow_mut().pop());
            }
        }
    }
}

/// A C job running on this thread, or the release callback of one
/// (`release`: part of the job for `running_in`, too late to fail it).
struct Frame {
    system: u32,
    failure: Option<String>,
    release: bool,
}

thread_local! {
    /// The C jobs running on this thread, innermost last (a job that waits
    /// in `jobsys_complete` may run others on top of itself).
    static FRAMES: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
}

/// Is a job of system `serial` running on this thread (below us)?
pub fn running_in(serial: u32) -> bool {
    FRAMES
        .try_with(|f| f.borrow().iter().any(|fr| fr.system == serial))
        .unwrap_or(false)
}

/// Run the C function `call` as a job of system `serial` (see the module
/// comment).
fn run_c(serial: u32, call: impl FnOnce()) {
    let failure = catch_unwind(AssertUnwindSafe(|| {
        // `try_with`, as in `Release::drop`: without FRAMES (a job run from
        // a thread-local destructor) the job cannot be failed by message.
        let pushed = FRAMES
            .try_with(|f| {
                f.borrow_mut().push(Frame {
                    system: serial,
                    failure: None,
                    release: false,
                })
            })
            .is_ok();
        call();
        if !pushed {
            return None;
        }
        FRAMES
            .try_with(|f| f.borrow_mut().pop())
            .ok()
            .flatten()
            .and_then(|f| f.failure)
    }));
    match failure {
        Ok(None) => {}
        // No panic hook runs for `resume_unwind`: nothing is printed.
        Ok(Some(message)) => resume_unwind(Box::new(message)),
        Err(_) => {
            eprintln!(
                "jobsys: fatal: a Rust panic in the wrapper of a C job; aborting, because it must not unwind into C code"
            );
            std::process::abort();
        }
    }
}

/// Mark the C job running on this thread as failed.
///
/// # Safety
/// `message` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn jobsys_fail(message: *const c_char) -> Code {
    ffi("jobsys_fail", || {
        let message = if message.is_null() {
            "the job failed (no message given)".to_string()
        } else {
            // SAFETY: non-NULL and NUL-terminated, as the caller promises.
            unsafe { CStr::from_ptr(message) }
                .to_string_lossy()
                .into_owned()
        };
        let frames = FRAMES.try_with(|f| match f.borrow_mut().last_mut() {
            Some(frame) if frame.release => Err(Error::new(
                Code::BadState,
                "called from a release callback: the job is already done (fail it from its function)",
            )),
            Some(frame) => {
                frame.failure.get_or_insert(message);
                Ok(())
            }
            None => Err(Error::new(
                Code::BadState,
                "not called from inside a jobsys job",
            )),
        });
        frames.unwrap_or_else(|_| {
            Err(Error::new(
                Code::BadState,
                "called while this thread exits (no job can be failed from here)",
            ))
        })
    })
}

/// The `&'static str` the library needs for a job name: each distinct name
/// is copied once and kept for the life of the process (the library keeps
/// names for the tracer too). A BTreeMap, not a HashMap: valgrind reports
/// a static hashbrown table as "possibly lost" (it points into the middle
/// of its allocation).
fn intern(name: &CStr) -> &'static str {
    static NAMES: Mutex<BTreeMap<Box<[u8]>, &'static str>> = Mutex::new(BTreeMap::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let bytes = name.to_bytes();
    if let Some(&s) = names.get(bytes) {
        return s;
    }
    let s: &'static str = Box::leak(String::from_utf8_lossy(bytes).into_owned().into_boxed_str());
    names.insert(bytes.into(), s);
    s
}

/// The library's description and the release callback of `*desc` (NULL:
/// unnamed, normal priority, no release).
///
/// # Safety
/// `desc` is NULL or points to a `jobsys_job_desc` whose `name` is NULL or
/// NUL-terminated.
unsafe fn read_desc(desc: *const JobDesc) -> Result<(jobsys::JobDesc, Option<ReleaseFn>)> {
    if desc.is_null() {
        return Ok((jobsys::JobDesc::default(), None));
    }
    // SAFETY: non-NULL, points to a desc as the caller promises.
    let d = unsafe { desc.read() };
    let priority = match d.priority {
        PRIORITY_NORMAL => Priority::Normal,
        PRIORITY_HIGH => Priority::High,
        PRIORITY_LOW => Priority::Low,
        p => {
            return Err(Error::new(
                Code::InvalidArgument,
                format!("desc->priority = {p} is not a jobsys_priority"),
            ))
        }
    };
    let out = if d.name.is_null() {
        jobsys::JobDesc::default().with_priority(priority)
    } else {
        // SAFETY: NUL-terminated, as the caller promises.
        jobsys::JobDesc::named(intern(unsafe { CStr::from_ptr(d.name) })).with_priority(priority)
    };
    Ok((out, d.release))
}

/// `deps[..n]`; NULL is fine when `n` is 0.
///
/// # Safety
/// `deps` is NULL or points to `n` handles.
unsafe fn handle_slice<'a>(deps: *const Handle, n: usize) -> Result<&'a [Handle]> {
    if n == 0 {
        return Ok(&[]);
    }
    non_null(deps, "the handle array (with a count > 0)")?;
    // SAFETY: non-NULL, `n` readable handles as the caller promises.
    Ok(unsafe { std::slice::from_raw_parts(deps, n) })
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Normal,
    Batched,
    Pinned(Pin),
}

/// The body of the six `jobsys_schedule*` functions.
///
/// # Safety
/// The promises of `jobsys_schedule_after`.
#[allow(clippy::too_many_arguments)]
unsafe fn schedule(
    name: &str,
    mode: Mode,
    sys: *const System,
    desc: *const JobDesc,
    deps: *const Handle,
    ndeps: usize,
    f: Option<JobFn>,
    data: *mut c_void,
    out: *mut Handle,
) -> Code {
    ffi(name, || {
        // SAFETY: `sys` is NULL or a live system, as the caller promises.
        let s = unsafe { system(sys) }?;
        let f = f.ok_or_else(|| Error::new(Code::NullArgument, "fn is NULL"))?;
        // SAFETY: `desc` is NULL or a valid desc, as the caller promises.
        let (jdesc, release) = unsafe { read_desc(desc) }?;
        if mode == Mode::Batched && jdesc != jobsys::JobDesc::default() {
            return Err(Error::new(
                Code::InvalidArgument,
                "batched jobs cannot have a name or a priority (the library has no such form yet): pass a desc with name NULL and priority NORMAL",
            ));
        }
        let pin = match mode {
            Mode::Pinned(p) => Some(s.pin(p)?),
            _ => None,
        };
        // SAFETY: the array holds `n` handles (or `n` is 0), as the caller promises.
        let deps = s.resolve(unsafe { handle_slice(deps, ndeps) }?)?;
        let serial = s.serial;
        let data = UserData(data);
        let release = Release {
            f: release,
            data,
            serial,
        };
        let job = move || {
            // Dropped when the job is done: calls `release`.
            let _release = release;
            // SAFETY: the caller of `jobsys_schedule*` promised `f(data)`
            // may be called once, from any thread.
            run_c(serial, || unsafe { f(data.ptr()) });
        };
        let h = match (mode, pin) {
            (Mode::Batched, _) => s.js.job().batched().after(&deps).schedule(job),
            (_, Some(pin)) => s.js.job().pin(pin).desc(jdesc).after(&deps).schedule(job),
            _ => s.js.job().desc(jdesc).after(&deps).schedule(job),
        };
        let h = s.record(h);
        // SAFETY: the out-parameter is NULL or writable, as the caller promises.
        unsafe { write_opt(out, h) };
        Ok(())
    })
}

/// Schedule `fn(data)`.
///
/// # Safety
/// See the header: `sys` live or NULL, `desc` NULL or valid, `out` NULL or
/// writable, `fn(data)` callable once from any thread.
#[no_mangle]
pub unsafe extern "C" fn jobsys_schedule(
    sys: *const System,
    desc: *const JobDesc,
    f: Option<JobFn>,
    data: *mut c_void,
    out: *mut Handle,
) -> Code {
    // SAFETY: the caller's promises.
    unsafe {
        schedule(
            "jobsys_schedule",
            Mode::Normal,
            sys,
            desc,
            std::ptr::null(),
            0,
            f,
            data,
            out,
        )
    }
}

/// Schedule `fn(data)` to run after `deps[..ndeps]`.
///
/// # Safety
/// As `jobsys_schedule`; `deps` NULL (with `ndeps` 0) or `ndeps` handles.
#[no_mangle]
pub unsafe extern "C" fn jobsys_schedule_after(
    sys: *const System,
    desc: *const JobDesc,
    deps: *const Handle,
    ndeps: usize,
    f: Option<JobFn>,
    data: *mut c_void,
    out: *mut Handle,
) -> Code {
    // SAFETY: the caller's promises.
    unsafe {
        schedule(
            "jobsys_schedule_after",
            Mode::Normal,
            sys,
            desc,
            deps,
            ndeps,
            f,
            data,
            out,
        )
    }
}

/// `jobsys_schedule` without waking a worker until `jobsys_flush`.
///
/// # Safety
/// As `jobsys_schedule`.
#[no_mangle]
pub unsafe extern "C" fn jobsys_schedule_batched(
    sys: *const System,
    desc: *const JobDesc,
    f: Option<JobFn>,
    data: *mut c_void,
    out: *mut Handle,
) -> Code {
    // SAFETY: the caller's promises.
    unsafe {
        schedule(
            "jobsys_schedule_batched",
            Mode::Batched,
            sys,
            desc,
            std::ptr::null(),
            0,
            f,
            data,
            out,
        )
    }
}

/// `jobsys_schedule_after` without waking a worker until `jobsys_flush`.
///
/// # Safety
/// As `jobsys_schedule_after`.
#[no_mangle]
pub unsafe extern "C" fn jobsys_schedule_batched_after(
    sys: *const System,
    desc: *const JobDesc,
    deps: *const Handle,
    ndeps: usize,
    f: Option<JobFn>,
    data: *mut c_void,
    out: *mut Handle,
) -> Code {
    // SAFETY: the caller's promises.
    unsafe {
        schedule(
            "jobsys_schedule_batched_after",
            Mode::Batched,
            sys,
            desc,
            deps,
            ndeps,
            f,
            data,
            out,
        )
    }
}

/// Schedule `fn(data)` to run on the thread `pin` names only.
///
/// # Safety
/// As `jobsys_schedule`.
#[no_mangle]
pub unsafe extern "C" fn jobsys_schedule_pinned(
    sys: *const System,
    pin: Pin,
    desc: *const JobDesc,
    f: Option<JobFn>,
    data: *mut c_void,
    out: *mut Handle,
) -> Code {
    // SAFETY: the caller's promises.
    unsafe {
        schedule(
            "jobsys_schedule_pinned",
            Mode::Pinned(pin),
            sys,
            desc,
            std::ptr::null(),
            0,
            f,
            data,
            out,
        )
    }
}

/// `jobsys_schedule_pinned` after `deps[..ndeps]`.
///
/// # Safety
/// As `jobsys_schedule_after`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn jobsys_schedule_pinned_after(
    sys: *const System,
    pin: Pin,
    desc: *const JobDesc,
    deps: *const Handle,
    ndeps: usize,
    f: Option<JobFn>,
    data: *mut c_void,
    out: *mut Handle,
) -> Code {
    // SAFETY: the caller's promises.
    unsafe {
        schedule(
            "jobsys_schedule_pinned_after",
            Mode::Pinned(pin),
            sys,
            desc,
            deps,
            ndeps,
            f,
            data,
            out,
        )
    }
}

/// The body of both `jobsys_parallel_for*` functions.
///
/// # Safety
/// The promises of `jobsys_parallel_for_after`.
#[allow(clippy::too_many_arguments)]
unsafe fn parallel_for(
    name: &str,
    sys: *const System,
    desc: *const JobDesc,
    deps: *const Handle,
    ndeps: usize,
    begin: u32,
    end: u32,
    batch: u32,
    f: Option<RangeFn>,
    data: *mut c_void,
    out: *mut Handle,
) -> Code {
    ffi(name, || {
        // SAFETY: `sys` is NULL or a live system, as the caller promises.
        let s = unsafe { system(sys) }?;
        let f = f.ok_or_else(|| Error::new(Code::NullArgument, "fn is NULL"))?;
        if begin > end {
            return Err(Error::new(
                Code::InvalidArgument,
                format!("begin {begin} > end {end}"),
            ));
        }
        // SAFETY: `desc` is NULL or a valid desc, as the caller promises.
        let (jdesc, release) = unsafe { read_desc(desc) }?;
        // SAFETY: the array holds `n` handles (or `n` is 0), as the caller promises.
        let deps = s.resolve(unsafe { handle_slice(deps, ndeps) }?)?;
        // Cut the range into pieces here and let the library hand out piece
        // numbers one by one, so `f` sees whole pieces and the job still
        // carries its name and priority. Auto: the library's own rule,
        // about 16 pieces per thread.
        let len = (end - begin) as usize;
        let piece = match batch {
            0 => len.div_ceil(16 * (s.js.workers() + 1)).max(1),
            n => n as usize,
        };
        let pieces = len.div_ceil(piece);
        let serial = s.serial;
        let data = UserData(data);
        let release = Release {
            f: release,
            data,
            serial,
        };
        let body = move |p: usize| {
            let _ = &release;
            let b = begin as usize + p * piece;
            let e = (b + piece).min(end as usize);
            // SAFETY: the caller promised `f` may be called on disjoint
            // pieces of the range from several threads at once.
            run_c(serial, || unsafe { f(data.ptr(), b as u32, e as u32) });
        };
        let h =
            s.js.job()
                .desc(jdesc)
                .after(&deps)
                .parallel_for(0..pieces, Batch::Fixed(1), body);
        let h = s.record(h);
        // SAFETY: the out-parameter is NULL or writable, as the caller promises.
        unsafe { write_opt(out, h) };
        Ok(())
    })
}

/// Run `fn(data, b, e)` over pieces covering `[begin, end)`.
///
/// # Safety
/// As `jobsys_schedule`, and `fn` callable from several threads at once.
#[no_mangle]
pub unsafe extern "C" fn jobsys_parallel_for(
    sys: *const System,
    desc: *const JobDesc,
    begin: u32,
    end: u32,
    batch: u32,
    f: Option<RangeFn>,
    data: *mut c_void,
    out: *mut Handle,
) -> Code {
    // SAFETY: the caller's promises.
    unsafe {
        parallel_for(
            "jobsys_parallel_for",
            sys,
            desc,
            std::ptr::null(),
            0,
            begin,
            end,
            batch,
            f,
            data,
            out,
        )
    }
}

/// `jobsys_parallel_for` after `deps[..ndeps]`.
///
/// # Safety
/// As `jobsys_parallel_for`; `deps` NULL (with `ndeps` 0) or `ndeps` handles.
#[no_mangle]
pub unsafe extern "C" fn jobsys_parallel_for_after(
    sys: *const System,
    desc: *const JobDesc,
    deps: *const Handle,
    ndeps: usize,
    begin: u32,
    end: u32,
    batch: u32,
    f: Option<RangeFn>,
    data: *mut c_void,
    out: *mut Handle,
) -> Code {
    // SAFETY: the caller's promises.
    unsafe {
        parallel_for(
            "jobsys_parallel_for_after",
            sys,
            desc,
            deps,
            ndeps,
            begin,
            end,
            batch,
            f,
            data,
            out,
        )
    }
}

/// One handle for all of `handles[..n]`.
///
/// # Safety
/// `sys` live or NULL; `handles` NULL (with `n` 0) or `n` handles; `out`
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_combine(
    sys: *const System,
    handles: *const Handle,
    n: usize,
    out: *mut Handle,
) -> Code {
    ffi("jobsys_combine", || {
        // SAFETY: `sys` is NULL or a live system, as the caller promises.
        let s = unsafe { system(sys) }?;
        non_null(out, "out")?;
        // SAFETY: the array holds `n` handles (or `n` is 0), as the caller promises.
        let jobs = s.resolve(unsafe { handle_slice(handles, n) }?)?;
        let h = s.record(s.js.combine(&jobs));
        // SAFETY: checked non-NULL above, and writable as the caller promises.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// Wait for `h`, helping with its work.
///
/// # Safety
/// `sys` live or NULL.
#[no_mangle]
pub unsafe extern "C" fn jobsys_complete(sys: *const System, h: Handle) -> Code {
    ffi("jobsys_complete", || {
        // SAFETY: as promised by the caller.
        let s = unsafe { system(sys) }?;
        let job = match s.lookup(h)? {
            Lookup::Live(job) => job,
            Lookup::Done => return Ok(()),
            Lookup::Unknown => return Err(outcome_unknown()),
        };
        s.js.try_complete(job)
            .map_err(|e| crate::errors::from_job_error(&e))
    })
}

/// `jobsys_complete` of a handle whose failed entry was recycled.
fn outcome_unknown() -> Error {
    Error::new(
        Code::OutcomeUnknown,
        "the job finished, but whether it failed is no longer known: its failure was \
         recycled after newer ones (see jobsys_handle in jobsys.h)",
    )
}

/// `*done` = has `h` finished (successfully or not)? Never blocks.
///
/// # Safety
/// `sys` live or NULL; `done` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_is_complete(
    sys: *const System,
    h: Handle,
    done: *mut bool,
) -> Code {
    ffi("jobsys_is_complete", || {
        // SAFETY: `sys` is NULL or a live system, as the caller promises.
        let s = unsafe { system(sys) }?;
        non_null(done, "done")?;
        let d = match s.lookup(h)? {
            Lookup::Live(job) => s.js.is_complete(job),
            Lookup::Done | Lookup::Unknown => true,
        };
        // SAFETY: checked non-NULL above, and writable as the caller promises.
        unsafe { done.write(d) };
        Ok(())
    })
}

/// Cancel `h` (a job, a parallel_for or a combined group); `*stopped` (if
/// not NULL) = whether it was stopped before it started.
///
/// # Safety
/// `sys` live or NULL; `stopped` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_cancel(sys: *const System, h: Handle, stopped: *mut bool) -> Code {
    ffi("jobsys_cancel", || {
        // SAFETY: `sys` is NULL or a live system, as the caller promises.
        let s = unsafe { system(sys) }?;
        // The table's lock is not held here: the closures of the cancelled
        // jobs are dropped in this call, and their release callbacks may
        // schedule jobs.
        let st = match s.lookup(h)? {
            Lookup::Live(job) => s.js.cancel(job),
            Lookup::Done | Lookup::Unknown => false,
        };
        // SAFETY: NULL or writable, as the caller promises.
        unsafe { write_opt(stopped, st) };
        Ok(())
    })
}

/// Has the job running on this thread been cancelled after it started?
/// False outside a job.
#[no_mangle]
pub extern "C" fn jobsys_is_cancelled() -> bool {
    // Cannot panic: a thread-local read (and `try_with` in the library).
    jobsys::is_cancelled()
}
