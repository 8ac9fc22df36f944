//! Calling the C API from Rust as a C program would: a system made with
//! `jobsys_create`, and a watchdog that turns a hang into a failure.

use jobsys_capi::config::{jobsys_config_init, Config};
use jobsys_capi::errors::Code;
use jobsys_capi::handles::Handle;
use jobsys_capi::jobs::{jobsys_schedule, JobDesc};
use jobsys_capi::system::{jobsys_create, System};
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::mpsc;
use std::time::Duration;

/// Run `body` on its own thread; fail if it has not finished in `secs`.
pub fn watchdog<F: FnOnce() + Send + 'static>(secs: u64, body: F) {
    let (tx, rx) = mpsc::channel();
    let t = std::thread::spawn(move || {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(())) => t.join().unwrap(),
        Ok(Err(p)) => std::panic::resume_unwind(p),
        Err(_) => panic!("watchdog: test body did not finish within {secs} s (hang / deadlock)"),
    }
}

/// A system with `workers` workers (a raw pointer, as C holds it).
pub fn create(workers: i32) -> *mut System {
    let mut c = std::mem::MaybeUninit::<Config>::uninit();
    // SAFETY: `c` is writable; init fills every field.
    let mut c = unsafe {
        assert_eq!(jobsys_config_init(c.as_mut_ptr()), Code::Ok);
        c.assume_init()
    };
    c.workers = workers;
    let mut sys = null_mut();
    // SAFETY: valid config and out-pointer.
    assert_eq!(unsafe { jobsys_create(&c, &mut sys) }, Code::Ok);
    sys
}

/// `jobsys_schedule` of a job that runs after `deps[..n]`.
///
/// # Safety
/// As `jobsys_schedule`; `deps` holds `n` handles.
pub unsafe fn jobsys_schedule_after(
    sys: *mut System,
    deps: *const Handle,
    n: usize,
    f: Option<unsafe extern "C" fn(*mut c_void)>,
    data: *mut c_void,
    out: *mut Handle,
) -> Code {
    let d = JobDesc {
        deps,
        ndeps: n,
        ..JobDesc::default()
    };
    // SAFETY: the caller's promises.
    unsafe { jobsys_schedule(sys, &d, f, data, out) }
}
