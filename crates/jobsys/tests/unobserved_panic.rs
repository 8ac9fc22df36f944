//! A job's panic that no wait reads is reported once nothing can read it
//! (`Builder::on_unobserved_panic`, `Stats::panics_unobserved`); one that a
//! wait read, directly or through a dependent, and a cancellation, are not.

use jobsys::{JobError, JobSystem};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Reports = Arc<Mutex<Vec<String>>>;

fn system(workers: usize, history: usize) -> (JobSystem, Reports) {
    let reports: Reports = Arc::default();
    let r = reports.clone();
    let js = JobSystem::builder()
        .workers(workers)
        .failure_history(history)
        .on_unobserved_panic(move |e: &JobError| {
            assert!(matches!(e, JobError::Panicked(_)), "{e:?}");
            r.lock().unwrap().push(e.to_string());
        })
        .build()
        .unwrap();
    (js, reports)
}

/// Spin (yielding) until `cond` holds; fail after 20 s rather than hang.
fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < Duration::from_secs(20), "never: {what}");
        std::thread::yield_now();
    }
}

fn quiet_panics() {
    std::panic::set_hook(Box::new(|_| {}));
}

#[test]
fn a_panic_nobody_waits_on_is_reported_when_the_system_drops() {
    quiet_panics();
    let (js, reports) = system(1, 64);
    let h = js.job().name("orphan").schedule(|| panic!("boom"));
    until("the job finished", || js.is_complete(h));
    // Still readable (the log keeps it): not reported yet.
    assert!(reports.lock().unwrap().is_empty());
    drop(js);
    let got = reports.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].contains("\"orphan\"") && got[0].contains("boom"),
        "{got:?}"
    );
}

#[test]
fn a_panic_forgotten_by_the_log_is_reported_at_once_and_counted() {
    quiet_panics();
    // History 0: the log keeps no failure, so once the job's slot is
    // reused (at its finish, nobody pinning it) nothing can read it.
    let (js, reports) = system(1, 0);
    let h = js.job().name("lost").schedule(|| panic!("gone"));
    until("the report", || !reports.lock().unwrap().is_empty());
    assert!(js.is_complete(h));
    assert_eq!(js.stats().panics_unobserved, 1);
    let got = reports.lock().unwrap().clone();
    assert!(
        got[0].contains("\"lost\"") && got[0].contains("gone"),
        "{got:?}"
    );
    // A wait now reads "unknown", never success.
    assert!(matches!(js.try_complete(h), Err(JobError::OutcomeUnknown)));
    drop(js);
    assert_eq!(reports.lock().unwrap().len(), 1);
}

#[test]
fn a_panic_a_wait_read_is_not_reported() {
    quiet_panics();
    let (js, reports) = system(1, 64);
    let h = js.schedule(|| panic!("seen"));
    assert!(matches!(js.try_complete(h), Err(JobError::Panicked(_))));
    assert_eq!(js.stats().panics_unobserved, 0);
    drop(js);
    assert!(reports.lock().unwrap().is_empty());
}

#[test]
fn a_panic_read_through_a_dependent_is_not_reported() {
    quiet_panics();
    let (js, reports) = system(1, 64);
    let a = js.job().name("cause").schedule(|| panic!("root"));
    let b = js.schedule_after(&[a], || {});
    match js.try_complete(b) {
        Err(JobError::Panicked(p)) => assert!(p.via_dependency()),
        other => panic!("expected the dependency's panic, got {other:?}"),
    }
    drop(js);
    assert!(reports.lock().unwrap().is_empty());
}

#[test]
fn a_cancelled_job_is_not_reported_as_a_panic() {
    quiet_panics();
    let (js, reports) = system(0, 64);
    let gate = js.schedule(|| {});
    let h = js.schedule_after(&[gate], || {});
    assert!(js.cancel(h));
    js.complete(gate);
    drop(js);
    assert!(reports.lock().unwrap().is_empty());
}

#[test]
fn a_panicking_handler_is_contained() {
    quiet_panics();
    let js = JobSystem::builder()
        .workers(1)
        .failure_history(0)
        .on_unobserved_panic(|_| panic!("handler"))
        .build()
        .unwrap();
    let h = js.schedule(|| panic!("job"));
    until("the report", || js.stats().panics_unobserved == 1);
    // The system still works after the handler's panic.
    let ok = js.schedule(|| {});
    js.complete(ok);
    assert!(js.is_complete(h));
}
