//! Error codes, the thread-local last-error message, and [`ffi`]: the guard
//! every exported function runs its body in.
//!
//! Invariant: no Rust panic leaves an exported function. `ffi` catches it
//! and returns `JOBSYS_ERR_INTERNAL` (a bug in jobsys; the message says
//! where); every other failure is an [`Error`] value with its code.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// `jobsys_error` in the header. Returned by value, never read from C, so a
/// Rust enum is sound here (C's enums are `int`-sized, as is `repr(i32)`).
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    Ok = 0,
    NullArgument = 1,
    InvalidArgument = 2,
    Config = 3,
    InvalidHandle = 4,
    ForeignHandle = 5,
    JobFailed = 6,
    DependencyFailed = 7,
    WaitOnSelf = 8,
    BadState = 9,
    Internal = 10,
    Io = 11,
    /// The job, or a job it depends on, was cancelled (`jobsys_cancel`).
    Cancelled = 12,
    /// The job finished, but whether it failed is no longer known.
    OutcomeUnknown = 13,
    Timeout = 14,
}

/// Every code with its name in the header, for `jobsys_error_name`.
const NAMES: [(Code, &[u8]); 15] = [
    (Code::Ok, b"JOBSYS_OK\0"),
    (Code::NullArgument, b"JOBSYS_ERR_NULL_ARGUMENT\0"),
    (Code::InvalidArgument, b"JOBSYS_ERR_INVALID_ARGUMENT\0"),
    (Code::Config, b"JOBSYS_ERR_CONFIG\0"),
    (Code::InvalidHandle, b"JOBSYS_ERR_INVALID_HANDLE\0"),
    (Code::ForeignHandle, b"JOBSYS_ERR_FOREIGN_HANDLE\0"),
    (Code::JobFailed, b"JOBSYS_ERR_JOB_FAILED\0"),
    (Code::DependencyFailed, b"JOBSYS_ERR_DEPENDENCY_FAILED\0"),
    (Code::WaitOnSelf, b"JOBSYS_ERR_WAIT_ON_SELF\0"),
    (Code::BadState, b"JOBSYS_ERR_BAD_STATE\0"),
    (Code::Internal, b"JOBSYS_ERR_INTERNAL\0"),
    (Code::Io, b"JOBSYS_ERR_IO\0"),
    (Code::Cancelled, b"JOBSYS_ERR_CANCELLED\0"),
    (Code::OutcomeUnknown, b"JOBSYS_ERR_OUTCOME_UNKNOWN\0"),
    (Code::Timeout, b"JOBSYS_ERR_TIMEOUT\0"),
];

/// A failure of one call: its code and a message for
/// `jobsys_last_error_message`.
#[derive(Debug)]
pub struct Error {
    pub code: Code,
    pub message: String,
}

impl Error {
    pub fn new(code: Code, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// The C error of a failed wait (`jobsys_complete`): its code, and a
/// message that names the failed job when it has a name (`desc.name`),
/// which C++'s exceptions carry on (`jobsys.hpp`).
pub fn from_job_error(e: &jobsys::JobError) -> Error {
    use jobsys::JobError;
    let code = match e {
        JobError::Panicked(p) if p.via_dependency() => Code::DependencyFailed,
        JobError::Panicked(_) => Code::JobFailed,
        JobError::WaitOnSelf => Code::WaitOnSelf,
        JobError::ForeignHandle => Code::ForeignHandle,
        JobError::Cancelled(_) => Code::Cancelled,
        JobError::OutcomeUnknown => Code::OutcomeUnknown,
        JobError::Timeout => Code::Timeout,
        _ => Code::Internal,
    };
    let message = match e {
        JobError::Panicked(p) => match (p.via_dependency(), p.job_name()) {
            (true, Some(name)) => format!(
                "a job this one depends on, job \"{name}\", failed: {}",
                p.message()
            ),
            (true, None) => format!("a job this one depends on failed: {}", p.message()),
            (false, Some(name)) => format!("the job \"{name}\" failed: {}", p.message()),
            (false, None) => format!("the job failed: {}", p.message()),
        },
        // A named job's cancellation text ends with `(job "name")`.
        JobError::Cancelled(why) => {
            format!("the job, or a job it depends on, was cancelled: {why}")
        }
        e => e.to_string(),
    };
    Error::new(code, message)
}

/// `Err(NullArgument)` naming `what` if `p` is NULL.
pub fn non_null<T>(p: *const T, what: &str) -> Result<()> {
    if p.is_null() {
        Err(Error::new(Code::NullArgument, format!("{what} is NULL")))
    } else {
        Ok(())
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: String) {
    let c = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    // `try_with`: a failing call from a thread-local destructor (a release
    // callback the library runs at thread exit) may come after LAST_ERROR
    // is gone; `with` then panicked outside `catch_unwind`, out of an
    // `extern "C"` function: an abort. The message is lost then.
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = c);
}

/// Run the body of the exported function `name`: its error becomes the
/// return code and this thread's last-error message (prefixed with `name`),
/// a panic becomes `Internal`. Nothing unwinds out.
#[inline]
pub fn ffi(name: &str, body: impl FnOnce() -> Result<()>) -> Code {
    // Inlined into each entry point (the success path is a compare), with
    // the two ways of failing out of line.
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => Code::Ok,
        Ok(Err(e)) => failed(name, e),
        Err(payload) => panicked(name, payload),
    }
}

/// `ffi`'s error path: the message kept for `jobsys_last_error_message`.
#[cold]
#[inline(never)]
fn failed(name: &str, e: Error) -> Code {
    set_last_error(format!("{name}: {}", e.message));
    e.code
}

/// `ffi`'s panic path.
#[cold]
#[inline(never)]
fn panicked(name: &str, payload: Box<dyn std::any::Any + Send>) -> Code {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a non-string payload".into());
    drop(payload);
    set_last_error(format!(
        "{name}: internal error in jobsys (a Rust panic was caught): {what}"
    ));
    Code::Internal
}

/// The message of the most recent failing call on this thread, "" if none.
/// Valid until the next failing jobsys call on this thread.
#[no_mangle]
pub extern "C" fn jobsys_last_error_message() -> *const c_char {
    // Cannot panic: `with` on a live thread and a plain borrow.
    LAST_ERROR
        .try_with(|e| e.borrow().as_ptr())
        .unwrap_or(b"\0".as_ptr().cast())
}

/// The name of an error code ("JOBSYS_ERR_INVALID_HANDLE"), or
/// "JOBSYS_ERR_UNKNOWN" for a value that is not one. Static storage.
#[no_mangle]
pub extern "C" fn jobsys_error_name(code: i32) -> *const c_char {
    NAMES
        .iter()
        .find(|(c, _)| *c as i32 == code)
        .map_or(b"JOBSYS_ERR_UNKNOWN\0".as_slice(), |(_, n)| n)
        .as_ptr()
        .cast()
}
