//! Through the C API, a failed or cancelled job never reads `JOBSYS_OK`,
//! however many failures come after it, on this thread (its table shard)
//! or on another (the library's failure log): past what jobsys remembers
//! it reads `JOBSYS_ERR_OUTCOME_UNKNOWN`, and a job scheduled after it never
//! runs and reads that code too. Called as a C program would, from Rust.

mod common;

use common::abi::{create, jobsys_schedule_after, watchdog};
use jobsys_capi::errors::Code;
use jobsys_capi::handles::Handle;
use jobsys_capi::jobs::{jobsys_cancel, jobsys_complete, jobsys_fail, jobsys_schedule};
use jobsys_capi::system::{jobsys_destroy, System};
use std::ffi::c_void;
use std::ptr::{null, null_mut};

unsafe extern "C" fn nothing(_: *mut c_void) {}

unsafe extern "C" fn fails(_: *mut c_void) {
    // SAFETY: a NUL-terminated message, called inside a job.
    unsafe { jobsys_fail(c"expected test failure".as_ptr()) };
}

/// A job cancelled before it starts (0 workers: nothing runs until this
/// thread waits), then finished.
fn cancelled(sys: *mut System) -> Handle {
    let (mut gate, mut j) = (Handle::default(), Handle::default());
    // SAFETY: a live system, writable out-pointers, a valid function.
    unsafe {
        assert_eq!(
            jobsys_schedule(sys, null(), Some(nothing), null_mut(), &mut gate),
            Code::Ok
        );
        assert_eq!(
            jobsys_schedule_after(sys, &gate, 1, Some(nothing), null_mut(), &mut j),
            Code::Ok
        );
        assert_eq!(jobsys_cancel(sys, j, null_mut()), Code::Ok);
        assert_eq!(jobsys_complete(sys, gate), Code::Ok);
        assert_eq!(jobsys_complete(sys, j), Code::Cancelled);
    }
    j
}

/// One thread: 5,000 cancels, more than its table shard and the library
/// keep. The newest still reads cancelled; none reads OK; the oldest read
/// unknown, and a job scheduled after one never runs.
#[test]
fn no_cancelled_handle_reads_ok_after_thousands_on_its_thread() {
    watchdog(120, || {
        let sys = create(0);
        let hs: Vec<Handle> = (0..5_000).map(|_| cancelled(sys)).collect();
        let mut unknown = 0;
        for (i, &h) in hs.iter().enumerate() {
            // SAFETY: a live system.
            match unsafe { jobsys_complete(sys, h) } {
                Code::Cancelled => {}
                Code::OutcomeUnknown => unknown += 1,
                other => panic!("cancelled job {i} read {other:?}"),
            }
        }
        assert!(
            unknown > 0,
            "more than jobsys keeps: some must read unknown"
        );
        // SAFETY: a live system.
        let newest = unsafe { jobsys_complete(sys, hs[hs.len() - 1]) };
        assert_eq!(newest, Code::Cancelled, "the newest cancel reads cancelled");
        let mut after = Handle::default();
        // SAFETY: a live system, a writable out-pointer.
        let code =
            unsafe { jobsys_schedule_after(sys, &hs[0], 1, Some(nothing), null_mut(), &mut after) };
        assert_eq!(code, Code::Ok, "scheduling after a forgotten failure");
        // SAFETY: a live system, a handle it gave.
        let code = unsafe { jobsys_complete(sys, after) };
        assert_eq!(
            code,
            Code::OutcomeUnknown,
            "a job after a forgotten failure must not run: it may have failed"
        );
        // SAFETY: a live system, destroyed once.
        assert_eq!(unsafe { jobsys_destroy(sys) }, Code::Ok);
    });
}

/// A job that failed on one thread, then 5,000 failures on another: the
/// first thread's handle must not read OK.
#[test]
fn a_failure_does_not_read_ok_after_another_thread_fails_thousands() {
    watchdog(120, || {
        let sys = create(1);
        let mut h = Handle::default();
        // SAFETY: a live system, a writable out-pointer.
        unsafe {
            assert_eq!(
                jobsys_schedule(sys, null(), Some(fails), null_mut(), &mut h),
                Code::Ok
            );
            assert_eq!(jobsys_complete(sys, h), Code::JobFailed);
        }
        let sys_addr = sys as usize;
        std::thread::spawn(move || {
            let sys = sys_addr as *mut System;
            for _ in 0..5_000 {
                let mut j = Handle::default();
                // SAFETY: the system outlives this thread (joined below).
                unsafe {
                    assert_eq!(
                        jobsys_schedule(sys, null(), Some(fails), null_mut(), &mut j),
                        Code::Ok
                    );
                    assert_eq!(jobsys_complete(sys, j), Code::JobFailed);
                }
            }
        })
        .join()
        .unwrap();
        // SAFETY: a live system.
        let code = unsafe { jobsys_complete(sys, h) };
        assert!(
            matches!(code, Code::JobFailed | Code::OutcomeUnknown),
            "a failed job read {code:?}"
        );
        // SAFETY: a live system, destroyed once.
        assert_eq!(unsafe { jobsys_destroy(sys) }, Code::Ok);
    });
}
