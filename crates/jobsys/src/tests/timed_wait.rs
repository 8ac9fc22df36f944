//! A timed wait under Miri: the waiter registers, parks on its futex with
//! a deadline (`Futex::wait_for`), times out, unregisters; then the job
//! finishes and an untimed wait on it ends. Nothing may be left behind:
//! a later park of the same thread must still be woken.

use super::system;
use crate::JobError;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn a_timed_wait_parks_times_out_and_leaves_the_thread_able_to_wait_again() {
    let js = system(1);
    let (go, started) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (g, s) = (go.clone(), started.clone());
    let h = js.schedule(move || {
        s.store(true, SeqCst);
        while !g.load(SeqCst) {
            std::thread::yield_now();
        }
    });
    // Running on the worker: this thread can only wait for it.
    while !started.load(SeqCst) {
        std::thread::yield_now();
    }
    let r = js.try_complete_timeout(h, Duration::from_millis(2));
    assert!(matches!(r, Err(JobError::Timeout)), "{r:?}");
    assert!(!js.is_complete(h));
    go.store(true, SeqCst);
    // Parks again (or finds it finished): woken by the finish.
    assert!(js.try_complete(h).is_ok());
    assert!(js.try_complete_timeout(h, Duration::ZERO).is_ok());
}
