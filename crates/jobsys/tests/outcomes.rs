//! A handle's outcome is never wrong: a wait on a failed or cancelled job
//! never returns `Ok`, however many failures came after it. The failure
//! log is bounded (`Builder::failure_history`); what it pushes out reads
//! `JobError::OutcomeUnknown`, and a `scope` keeps its own jobs' first
//! panic whatever the log forgets.

mod common;

use common::{expect_panic, watchdog};
use jobsys::{JobError, JobHandle, JobSystem, Pin};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

/// A job cancelled before it could start (it waits for a gate that only
/// this thread, the system's creator, runs: after the cancel), and
/// finished: a failure in the log once its slot moves on.
fn cancelled_job(js: &JobSystem) -> JobHandle {
    let gate = js.job().pin(Pin::Main).schedule(|| {});
    let j = js.schedule_after(&[gate], || unreachable!("cancelled"));
    assert!(js.cancel(j));
    js.complete(gate);
    assert!(matches!(js.try_complete(j), Err(JobError::Cancelled(_))));
    j
}

/// With the default settings, a cancel right after thousands of others
/// still reads cancelled; and no handle of the thousands reads `Ok`.
#[test]
fn no_failed_handle_reads_ok_after_thousands_of_failures() {
    watchdog(120, || {
        for workers in [0, 2] {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let old: Vec<JobHandle> = (0..5_000).map(|_| cancelled_job(&js)).collect();
            let j = cancelled_job(&js);
            assert!(
                matches!(js.try_complete(j), Err(JobError::Cancelled(_))),
                "{workers} workers: the newest cancel must read cancelled"
            );
            let mut unknown = 0;
            for (i, &h) in old.iter().enumerate() {
                match js.try_complete(h) {
                    Err(JobError::Cancelled(_)) => {}
                    Err(JobError::OutcomeUnknown) => unknown += 1,
                    other => panic!("{workers} workers: handle {i} read {other:?}"),
                }
            }
            assert!(unknown > 0, "the log must have pushed some out");
            assert!(js.stats().failures_forgotten > 0);
        }
    });
}

/// Panicked jobs past `failure_history`: the newest still report their
/// panic, the older ones `OutcomeUnknown`; none reads `Ok`. With
/// `failure_history(0)` every failure reads unknown once its slot moved on.
#[test]
fn pushed_out_panics_read_unknown_never_ok() {
    watchdog(60, || {
        for history in [0, 4] {
            let js = JobSystem::builder()
                .workers(0)
                .failure_history(history)
                .build()
                .unwrap();
            let hs: Vec<JobHandle> = (0..12)
                .map(|i| {
                    let h = js.schedule(move || panic!("expected test panic {i}"));
                    let _ = js.try_complete(h);
                    js.complete(js.schedule(|| {})); // moves the slot on
                    h
                })
                .collect();
            for (i, &h) in hs.iter().enumerate() {
                match js.try_complete(h) {
                    Err(JobError::Panicked(p)) => {
                        assert!(i >= hs.len() - history, "history {history}: {i} remembered");
                        assert_eq!(p.message(), format!("expected test panic {i}"));
                    }
                    Err(JobError::OutcomeUnknown) => {
                        assert!(i < hs.len() - history, "history {history}: {i} forgotten")
                    }
                    other => panic!("history {history}: handle {i} read {other:?}"),
                }
            }
            let msg = JobError::OutcomeUnknown.to_string();
            assert!(msg.contains("no longer known"), "{msg}");
        }
    });
}

/// A job scheduled after a handle whose outcome is no longer known does
/// not run (it might be after a failed job): it fails with
/// `OutcomeUnknown` and its closure is dropped unrun, once.
#[test]
fn a_job_after_a_forgotten_failure_does_not_run() {
    watchdog(60, || {
        let js = JobSystem::builder()
            .workers(1)
            .failure_history(1)
            .build()
            .unwrap();
        let first = cancelled_job(&js);
        let _second = cancelled_job(&js); // pushes `first` out
        js.complete(js.schedule(|| {}));
        assert!(matches!(
            js.try_complete(first),
            Err(JobError::OutcomeUnknown)
        ));
        let ran = Arc::new(AtomicUsize::new(0));
        let dropped = Arc::new(AtomicUsize::new(0));
        struct CountDrop(Arc<AtomicUsize>);
        impl Drop for CountDrop {
            fn drop(&mut self) {
                self.0.fetch_add(1, SeqCst);
            }
        }
        let (r, d) = (ran.clone(), CountDrop(dropped.clone()));
        let after = js.schedule_after(&[first], move || {
            let _d = d;
            r.fetch_add(1, SeqCst);
        });
        assert!(matches!(
            js.try_complete(after),
            Err(JobError::OutcomeUnknown)
        ));
        assert_eq!(
            ran.load(SeqCst),
            0,
            "ran after a job whose outcome is unknown"
        );
        assert_eq!(
            dropped.load(SeqCst),
            1,
            "the closure is dropped exactly once"
        );
    });
}

/// A scope whose job panicked does not return normally, even when
/// thousands of other failures push that panic out of the log before the
/// scope ends: it re-raises the job's message.
#[test]
fn a_scope_reports_its_panic_after_thousands_of_other_failures() {
    watchdog(120, || {
        for workers in [0, 2] {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            let msg = expect_panic(|| {
                js.scope(|s| {
                    let h = s.schedule(|| panic!("expected test panic: the scope's job"));
                    let _ = s.system().try_complete(h);
                    for _ in 0..5_000 {
                        cancelled_job(s.system());
                    }
                });
            });
            assert!(
                msg.contains("expected test panic: the scope's job"),
                "{workers} workers: {msg}"
            );
            // And a loop's piece, the same way.
            let msg = expect_panic(|| {
                js.scope(|s| {
                    let h = s.parallel_for(0..4, jobsys::Batch::Fixed(1), |i| {
                        assert_ne!(i, 2, "expected test panic: piece {i}");
                    });
                    let _ = s.system().try_complete(h);
                    for _ in 0..5_000 {
                        cancelled_job(s.system());
                    }
                });
            });
            assert!(msg.contains("piece 2"), "{workers} workers: {msg}");
        }
    });
}
