//! Attacks on the C API, calling the `extern "C"` functions directly from
//! Rust (as a C program would, keeping the header's rules): handles used
//! twice, on the wrong system, NULL arguments, destroy while jobs are
//! queued, pinned to a thread that never calls in, or from callbacks.
//!
//! The promises under attack (include/jobsys.h): bad input is an error
//! code, never a hang or UB; `jobsys_destroy` runs every scheduled job and
//! returns; nothing hangs. Tests whose doc comment tells of a
//! bug found it (2026-11-25): each failed on the code of that day and passes
//! since its fix.

mod common;

use common::abi::{create, jobsys_schedule_after, watchdog};
use jobsys_capi::engine::{jobsys_register_thread, jobsys_run_pinned, Pin, PIN_THREAD};
use jobsys_capi::errors::Code;
use jobsys_capi::handles::Handle;
use jobsys_capi::jobs::{
    jobsys_cancel, jobsys_combine, jobsys_complete, jobsys_fail, jobsys_is_complete,
    jobsys_schedule, JobDesc, JOB_BATCHED, JOB_PINNED,
};
use jobsys_capi::system::{jobsys_destroy, jobsys_hot_zone_end, System};
use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc;

/// The `data` of `count`: an `&'static AtomicUsize` it increments.
unsafe extern "C" fn count(data: *mut c_void) {
    // SAFETY: every caller passes a leaked `AtomicUsize`.
    unsafe { &*(data as *const AtomicUsize) }.fetch_add(1, SeqCst);
}

fn counter() -> &'static AtomicUsize {
    Box::leak(Box::new(AtomicUsize::new(0)))
}

fn data(c: &'static AtomicUsize) -> *mut c_void {
    c as *const AtomicUsize as *mut c_void
}

/// `jobsys_schedule` with `desc` (NULL: the defaults) pinned to `pin`.
///
/// # Safety
/// As `jobsys_schedule`.
unsafe fn jobsys_schedule_pinned(
    sys: *mut System,
    pin: Pin,
    desc: *const JobDesc,
    f: Option<unsafe extern "C" fn(*mut c_void)>,
    data: *mut c_void,
    out: *mut Handle,
) -> Code {
    let mut d = if desc.is_null() {
        JobDesc::default()
    } else {
        // SAFETY: a valid desc, as the caller promises.
        unsafe { desc.read() }
    };
    d.flags |= JOB_PINNED;
    d.pin = pin;
    // SAFETY: the caller's promises.
    unsafe { jobsys_schedule(sys, &d, f, data, out) }
}

/// Schedule `count(c)` on `sys`; its handle.
fn schedule(sys: *mut System, c: &'static AtomicUsize) -> Handle {
    let mut h = Handle::default();
    // SAFETY: live system; `count` may run on any thread.
    let code = unsafe { jobsys_schedule(sys, null(), Some(count), data(c), &mut h) };
    assert_eq!(code, Code::Ok);
    h
}

/// A handle completed twice, on several threads at once, checked with
/// `is_complete`, cancelled after it finished: all OK, the job ran once.
/// A handle of another live system, a zeroed one, and one with a forged
/// generation are clear errors on every call that takes one, including
/// `combine` and `schedule_after`, and schedule nothing.
#[test]
fn handles_completed_twice_or_on_the_wrong_system_are_clear() {
    watchdog(60, || {
        let a = create(2);
        let b = create(1);
        let c = counter();
        let h = schedule(a, c);
        // SAFETY: every call below gets live systems (until their
        // destroy, last) and valid or NULL pointers, as the header asks.
        unsafe {
            assert_eq!(jobsys_complete(a, h), Code::Ok);
            assert_eq!(jobsys_complete(a, h), Code::Ok);
            let sa = a as usize;
            let ts: Vec<_> = (0..4)
                .map(|_| std::thread::spawn(move || jobsys_complete(sa as *mut System, h)))
                .collect();
            for t in ts {
                assert_eq!(t.join().unwrap(), Code::Ok);
            }
            let mut done = false;
            assert_eq!(jobsys_is_complete(a, h, &mut done), Code::Ok);
            assert!(done);
            let mut stopped = true;
            assert_eq!(jobsys_cancel(a, h, &mut stopped), Code::Ok);
            assert!(!stopped);
            assert_eq!(c.load(SeqCst), 1);

            // Another live system's handle.
            assert_eq!(jobsys_complete(b, h), Code::ForeignHandle);
            assert_eq!(jobsys_is_complete(b, h, &mut done), Code::ForeignHandle);
            assert_eq!(jobsys_cancel(b, h, &mut stopped), Code::ForeignHandle);
            let mut out = Handle::default();
            assert_eq!(jobsys_combine(b, &h, 1, &mut out), Code::ForeignHandle);
            assert_eq!(
                out,
                Handle::default(),
                "an out-parameter written on failure"
            );
            let c2 = counter();
            assert_eq!(
                jobsys_schedule_after(b, &h, 1, Some(count), data(c2), &mut out),
                Code::ForeignHandle
            );
            // The zeroed handle names no job: complete at once.
            let zero = Handle::default();
            assert_eq!(jobsys_complete(a, zero), Code::Ok);
            // Forged handles: a generation the slot never reached, an
            // address inside a slot, one in no page of the system, and a
            // system id no system has.
            for forged in [
                Handle {
                    id: h.id,
                    gen: h.gen + 1_000_000,
                },
                Handle {
                    id: h.id + 8,
                    gen: h.gen,
                },
                Handle {
                    id: 0x1000,
                    gen: h.gen,
                },
                Handle {
                    id: u64::MAX,
                    gen: h.gen,
                },
            ] {
                assert_eq!(
                    jobsys_complete(a, forged),
                    Code::InvalidHandle,
                    "{forged:?}"
                );
                assert_eq!(jobsys_cancel(a, forged, &mut stopped), Code::InvalidHandle);
            }
            let forged = Handle {
                id: h.id,
                gen: (h.gen & 0xFFFF_FFFF) | (0xFFFF_FFFF << 32),
            };
            assert_eq!(jobsys_complete(a, forged), Code::ForeignHandle);
            // NULL arguments.
            assert_eq!(jobsys_complete(null(), h), Code::NullArgument);
            assert_eq!(jobsys_is_complete(a, h, null_mut()), Code::NullArgument);
            assert_eq!(
                jobsys_schedule(a, null(), None, null_mut(), &mut out),
                Code::NullArgument
            );
            assert_eq!(jobsys_combine(a, null(), 1, &mut out), Code::NullArgument);
            assert_eq!(jobsys_destroy(b), Code::Ok);
            assert_eq!(jobsys_destroy(a), Code::Ok);
            assert_eq!(c2.load(SeqCst), 0, "a rejected schedule_after ran its job");
        }
    });
}

/// `jobsys_destroy` with many jobs still queued (plain, batched and never
/// flushed, and after dependencies) runs every one of them before it
/// returns, with 0 and with 2 workers.
#[test]
fn destroy_with_queued_jobs_runs_them_all_first() {
    for workers in [0, 2] {
        watchdog(60, move || {
            let sys = create(workers);
            let c = counter();
            let mut last = Handle::default();
            for i in 0..300 {
                // SAFETY: live system, valid pointers.
                unsafe {
                    let code = match i % 3 {
                        0 => jobsys_schedule(sys, null(), Some(count), data(c), &mut last),
                        1 => {
                            let d = JobDesc {
                                flags: JOB_BATCHED,
                                ..JobDesc::default()
                            };
                            jobsys_schedule(sys, &d, Some(count), data(c), null_mut())
                        }
                        _ => {
                            let dep = last;
                            jobsys_schedule_after(sys, &dep, 1, Some(count), data(c), &mut last)
                        }
                    };
                    assert_eq!(code, Code::Ok);
                }
            }
            // SAFETY: live system, no other thread uses it.
            assert_eq!(unsafe { jobsys_destroy(sys) }, Code::Ok);
            assert_eq!(c.load(SeqCst), 300);
        });
    }
}

/// Before its fix (2026-11-25): `jobsys_destroy` hangs when a job is pinned to a registered thread
/// that is alive but does not call in. The header forbids that thread to
/// use the system during `jobsys_destroy`, so the job can never run; the
/// library's own shutdown cancels such jobs ("At shutdown, jobs pinned to
/// outside threads other than the one dropping the last `JobSystem` are
/// cancelled", docs/engine.md), but `System::drain`
/// (crates/jobsys-capi/src/system.rs) runs first and calls
/// `try_complete` on the pinned job, which waits for its thread for ever.
/// The same program in Rust (drop the last `JobSystem`) returns and
/// reports the job cancelled.
#[test]
fn destroy_with_a_job_pinned_to_an_idle_registered_thread_returns() {
    watchdog(20, || {
        let sys = create(1);
        let (idx_tx, idx_rx) = mpsc::channel();
        let (end_tx, end_rx) = mpsc::channel::<()>();
        let s = sys as usize;
        // A render thread: registers, then waits (alive) until told to end.
        let render = std::thread::spawn(move || {
            let mut idx = 0u32;
            // SAFETY: live system (destroy has not started yet).
            let code = unsafe { jobsys_register_thread(s as *const System, &mut idx) };
            assert_eq!(code, Code::Ok);
            idx_tx.send(idx).unwrap();
            let _ = end_rx.recv();
        });
        let idx = idx_rx.recv().unwrap();
        let c = counter();
        let pin = Pin {
            kind: PIN_THREAD,
            index: idx,
        };
        let mut h = Handle::default();
        let desc = JobDesc {
            release: None,
            ..JobDesc::default()
        };
        // SAFETY: live system, valid pointers.
        unsafe {
            assert_eq!(
                jobsys_schedule_pinned(sys, pin, &desc, Some(count), data(c), &mut h),
                Code::Ok
            );
            // The render thread no longer uses the system.
            let code = jobsys_destroy(sys);
            assert!(
                matches!(code, Code::Ok | Code::BadState),
                "destroy: {code:?}"
            );
        }
        end_tx.send(()).unwrap();
        render.join().unwrap();
    });
}

/// What a job of `destroy_runs_jobs_scheduled_by_release_callbacks` gets.
struct Chain {
    sys: usize,
    ran: &'static AtomicUsize,
    released: &'static AtomicUsize,
    generation: u32,
}

unsafe extern "C" fn chain_run(data: *mut c_void) {
    // SAFETY: `data` is a live `Chain` until its release.
    let c = unsafe { &*(data as *const Chain) };
    c.ran.fetch_add(1, SeqCst);
}

/// The release callback: schedules the next generation (a callback that
/// calls back into the API, during `jobsys_destroy`'s drain too), then
/// frees its own data.
unsafe extern "C" fn chain_release(data: *mut c_void) {
    // SAFETY: `data` came from `Box::into_raw` in `schedule_chain`; this is
    // its one release.
    let c = unsafe { Box::from_raw(data as *mut Chain) };
    c.released.fetch_add(1, SeqCst);
    if c.generation < 3 {
        // SAFETY: the system is alive: this job is one of its jobs, and
        // destroy waits for it.
        let code = unsafe { schedule_chain(c.sys, c.ran, c.released, c.generation + 1) };
        assert_eq!(code, Code::Ok);
    }
}

/// # Safety
/// `sys` is a live system.
unsafe fn schedule_chain(
    sys: usize,
    ran: &'static AtomicUsize,
    released: &'static AtomicUsize,
    generation: u32,
) -> Code {
    let data = Box::into_raw(Box::new(Chain {
        sys,
        ran,
        released,
        generation,
    }));
    let desc = JobDesc {
        release: Some(chain_release),
        ..JobDesc::default()
    };
    // SAFETY: live system (the caller's promise), valid desc and data.
    unsafe {
        jobsys_schedule(
            sys as *mut System,
            &desc,
            Some(chain_run),
            data as *mut c_void,
            null_mut(),
        )
    }
}

/// `jobsys_destroy` right after scheduling jobs whose release callbacks
/// schedule the next generation (three deep): every generation runs and
/// is released before destroy returns, with 0 and with 2 workers.
#[test]
fn destroy_runs_jobs_scheduled_by_release_callbacks() {
    for workers in [0, 2] {
        watchdog(60, move || {
            let sys = create(workers);
            let (ran, released) = (counter(), counter());
            for _ in 0..50 {
                // SAFETY: live system.
                let code = unsafe { schedule_chain(sys as usize, ran, released, 1) };
                assert_eq!(code, Code::Ok);
            }
            // SAFETY: live system; only its own jobs use it meanwhile.
            assert_eq!(unsafe { jobsys_destroy(sys) }, Code::Ok);
            assert_eq!(ran.load(SeqCst), 150);
            assert_eq!(released.load(SeqCst), 150);
        });
    }
}

/// The `release` of `a_pinned_job_cancelled_at_its_thread_exit_is_released`.
unsafe extern "C" fn count_release(data: *mut c_void) {
    // SAFETY: a leaked `AtomicUsize`.
    unsafe { &*(data as *const AtomicUsize) }.fetch_add(1, SeqCst);
}

/// A job pinned to a registered thread that exits without running it is
/// cancelled at the exit, and its `release` callback is still called
/// (exactly once), also when the thread had run C jobs before: the
/// header's "called with `data` when the job is done with it".
///
/// Before its fix (2026-11-25; the `ran_before` case): the cancel happens in the library's
/// `Claim::drop`, a thread-local destructor of the exiting thread.
/// `Release::drop` (crates/jobsys-capi/src/jobs.rs) starts with
/// `FRAMES.with(...)`; once the thread has run a C job, `FRAMES` was
/// registered after the library's claim, so it is destroyed before it, and
/// `with` panics ("cannot access a Thread Local Storage value during or
/// after destruction") before the C `release` is called. `drop_as_job`
/// catches the panic: the job reads cancelled, but `release(data)` never
/// runs (the C program leaks or never unlocks whatever `data` holds) and a
/// Rust panic message lands on stderr. Without a C job run on the thread
/// before (`ran_before` false) `FRAMES` is registered late and it works.
#[test]
fn a_pinned_job_cancelled_at_its_thread_exit_is_released() {
    for ran_before in [false, true] {
        watchdog(60, move || {
            let sys = create(1);
            let s = sys as usize;
            let (idx_tx, idx_rx) = mpsc::channel();
            let (end_tx, end_rx) = mpsc::channel::<()>();
            let render = std::thread::spawn(move || {
                let sys = s as *mut System;
                let mut idx = 0u32;
                // SAFETY: live system, valid pointers; the job pinned here
                // runs `count` on this thread.
                unsafe {
                    assert_eq!(jobsys_register_thread(sys, &mut idx), Code::Ok);
                    if ran_before {
                        let c = counter();
                        let pin = Pin {
                            kind: PIN_THREAD,
                            index: idx,
                        };
                        let code = jobsys_schedule_pinned(
                            sys,
                            pin,
                            null(),
                            Some(count),
                            data(c),
                            null_mut(),
                        );
                        assert_eq!(code, Code::Ok);
                        let mut ran = 0;
                        assert_eq!(jobsys_run_pinned(sys, &mut ran), Code::Ok);
                        assert_eq!((ran, c.load(SeqCst)), (1, 1));
                    }
                }
                idx_tx.send(idx).unwrap();
                let _ = end_rx.recv();
                // Exits with a job pinned to it, never run.
            });
            let idx = idx_rx.recv().unwrap();
            let (c, released) = (counter(), counter());
            let desc = JobDesc {
                release: Some(count_release),
                ..JobDesc::default()
            };
            let pin = Pin {
                kind: PIN_THREAD,
                index: idx,
            };
            let mut h = Handle::default();
            // SAFETY: live system, valid pointers. `released` is passed as
            // the job's data, so `release` counts it.
            unsafe {
                let code =
                    jobsys_schedule_pinned(sys, pin, &desc, Some(count), data(released), &mut h);
                assert_eq!(code, Code::Ok);
            }
            end_tx.send(()).unwrap();
            render.join().unwrap();
            // SAFETY: live system.
            unsafe {
                assert_eq!(jobsys_complete(sys, h), Code::Cancelled);
                assert_eq!(jobsys_destroy(sys), Code::Ok);
            }
            assert_eq!(c.load(SeqCst), 0);
            let n = released.load(SeqCst);
            assert_eq!(n, 1, "release called {n} times (ran_before {ran_before})");
        });
    }
}

/// What `fail_in_release` saw: its calls, and `jobsys_fail`'s code.
static FAIL_IN_RELEASE: AtomicUsize = AtomicUsize::new(0);
static FAIL_CODE: AtomicUsize = AtomicUsize::new(usize::MAX);

/// A release callback that calls `jobsys_fail`, which must return
/// `JOBSYS_ERR_BAD_STATE` there ("the job is already done").
unsafe extern "C" fn fail_in_release(_data: *mut c_void) {
    // SAFETY: NULL is allowed (a default message).
    let code = unsafe { jobsys_fail(null()) };
    FAIL_CODE.store(code as usize, SeqCst);
    FAIL_IN_RELEASE.fetch_add(1, SeqCst);
}

/// The child half of
/// `an_api_error_in_a_release_at_thread_exit_does_not_abort`: a thread
/// registers, makes one failing call (so its last-error message exists),
/// and exits with a job pinned to it whose release callback calls
/// `jobsys_fail` (an error there: the job is done).
fn release_error_at_thread_exit_child() {
    let sys = create(1);
    let s = sys as usize;
    let (idx_tx, idx_rx) = mpsc::channel();
    let (end_tx, end_rx) = mpsc::channel::<()>();
    let render = std::thread::spawn(move || {
        let sys = s as *mut System;
        let mut idx = 0u32;
        // SAFETY: live system, valid pointers.
        unsafe {
            assert_eq!(jobsys_register_thread(sys, &mut idx), Code::Ok);
            // No hot zone is open: an error, recorded in this thread's
            // last-error message.
            assert_eq!(jobsys_hot_zone_end(sys), Code::BadState);
        }
        idx_tx.send(idx).unwrap();
        let _ = end_rx.recv();
    });
    let idx = idx_rx.recv().unwrap();
    let desc = JobDesc {
        release: Some(fail_in_release),
        ..JobDesc::default()
    };
    let pin = Pin {
        kind: PIN_THREAD,
        index: idx,
    };
    let c = counter();
    // SAFETY: live system, valid pointers.
    unsafe {
        let code = jobsys_schedule_pinned(sys, pin, &desc, Some(count), data(c), null_mut());
        assert_eq!(code, Code::Ok);
    }
    end_tx.send(()).unwrap();
    render.join().unwrap();
    // SAFETY: live system.
    assert_eq!(unsafe { jobsys_destroy(sys) }, Code::Ok);
    assert_eq!(FAIL_IN_RELEASE.load(SeqCst), 1);
    assert_eq!(FAIL_CODE.load(SeqCst), Code::BadState as usize);
    println!("child: ok");
}

/// Before its fix (2026-11-25): a C API call that fails inside a release callback run by a thread
/// exit aborts the process. The exiting thread's pinned job is cancelled
/// in the library's `Claim::drop` (a thread-local destructor) and its
/// release callback runs there. `jobsys_fail` returns an error from a
/// release callback, and `ffi` (crates/jobsys-capi/src/errors.rs) records
/// it with `set_last_error`, whose `LAST_ERROR.with` panics when that
/// thread-local was destroyed already (it was, if the thread had an error
/// before: registered after the claim, destroyed before it). That call
/// is outside `ffi`'s `catch_unwind`, so the panic leaves an
/// `extern "C"` function and the process aborts ("panic in a function
/// that cannot unwind"). The scenario runs in a child process (this test
/// binary again); the parent checks that it exits normally.
#[test]
fn an_api_error_in_a_release_at_thread_exit_does_not_abort() {
    if std::env::var_os("JOBSYS_CAPI_ATTACK_CHILD").is_some() {
        release_error_at_thread_exit_child();
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "an_api_error_in_a_release_at_thread_exit_does_not_abort",
            "--nocapture",
        ])
        .env("JOBSYS_CAPI_ATTACK_CHILD", "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("child: ok"),
        "{:?}\n{text}",
        out.status
    );
}

/// What `destroy_from_job` gets: its own system, another one to destroy,
/// and where to put the codes.
struct DestroyFromJob {
    own: usize,
    other: usize,
    own_code: AtomicUsize,
    other_code: AtomicUsize,
}

unsafe extern "C" fn destroy_from_job(data: *mut c_void) {
    // SAFETY: a live `DestroyFromJob` (the test waits for this job).
    let d = unsafe { &*(data as *const DestroyFromJob) };
    // SAFETY: both systems are live; the other one is used by nobody else.
    unsafe {
        d.own_code
            .store(jobsys_destroy(d.own as *mut System) as usize, SeqCst);
        d.other_code
            .store(jobsys_destroy(d.other as *mut System) as usize, SeqCst);
    }
}

/// A job that destroys its own system gets `JOBSYS_ERR_BAD_STATE` (and the
/// system goes on working); destroying *another* system from inside a job
/// is allowed and runs that system's queued jobs first.
#[test]
fn destroy_from_inside_a_job_own_and_other_system() {
    for workers in [0, 2] {
        watchdog(60, move || {
            let own = create(workers);
            let other = create(1);
            let c = counter();
            for _ in 0..20 {
                schedule(other, c);
            }
            let d = DestroyFromJob {
                own: own as usize,
                other: other as usize,
                own_code: AtomicUsize::new(usize::MAX),
                other_code: AtomicUsize::new(usize::MAX),
            };
            let mut h = Handle::default();
            // SAFETY: live system; `d` outlives the job (waited for below).
            unsafe {
                let p = &d as *const DestroyFromJob as *mut c_void;
                let code = jobsys_schedule(own, null(), Some(destroy_from_job), p, &mut h);
                assert_eq!(code, Code::Ok);
                assert_eq!(jobsys_complete(own, h), Code::Ok);
            }
            assert_eq!(d.own_code.load(SeqCst), Code::BadState as usize);
            assert_eq!(d.other_code.load(SeqCst), Code::Ok as usize);
            assert_eq!(c.load(SeqCst), 20);
            let c2 = counter();
            let h = schedule(own, c2);
            // SAFETY: `own` is still live (its destroy was refused).
            unsafe {
                assert_eq!(jobsys_complete(own, h), Code::Ok);
                assert_eq!(jobsys_destroy(own), Code::Ok);
            }
            assert_eq!(c2.load(SeqCst), 1);
        });
    }
}
