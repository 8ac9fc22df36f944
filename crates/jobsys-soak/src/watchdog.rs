//! The soak's watchdog: one thread per soak that makes sure no step hangs.
//!
//! The driver announces each step ([`Watchdog::enter`]: a frame, a system
//! build, a drop race) and its phase inside the step ([`Watchdog::phase`]);
//! the watchdog thread wakes every 100 ms and, if the current step has run
//! longer than the bound, calls its hang action with a report naming the
//! step, its phase, the seed and the system configuration. The soak's action
//! prints that report to stderr and ends the process with exit status
//! [`HANG_EXIT`] (`std::process::exit`: a hung job system cannot be unwound
//! from another thread), so a soak never hangs — CI sees a non-zero exit and
//! the line to reproduce it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Exit status of a soak the watchdog stopped.
pub const HANG_EXIT: i32 = 3;

/// What runs when a step overruns: gets the report.
pub type HangAction = Box<dyn Fn(String) + Send + 'static>;

struct Step {
    what: String,
    phase: &'static str,
    since: Instant,
}

struct Shared {
    step: Mutex<Option<Step>>,
    stop: AtomicBool,
}

/// A running watchdog; stops (and joins its thread) when dropped.
pub struct Watchdog {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Start watching with `bound` per step; `context` (seed and how to
    /// reproduce) is added to every report.
    pub fn start(bound: Duration, context: String, on_hang: HangAction) -> Watchdog {
        let shared = Arc::new(Shared {
            step: Mutex::new(None),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("soak-watchdog".into())
            .spawn(move || {
                while !s.stop.load(Ordering::SeqCst) {
                    std::thread::park_timeout(Duration::from_millis(100));
                    let report = {
                        let step = s.step.lock().unwrap_or_else(|e| e.into_inner());
                        step.as_ref()
                            .filter(|st| st.since.elapsed() > bound)
                            .map(|st| {
                                format!(
                                    "jobsys-soak: HANG: {} did not finish within {:.1} s (phase: {}); {context}",
                                    st.what,
                                    bound.as_secs_f64(),
                                    st.phase
                                )
                            })
                    };
                    if let Some(r) = report {
                        on_hang(r);
                        // An action that returns (tests): report once per step.
                        *s.step.lock().unwrap_or_else(|e| e.into_inner()) = None;
                    }
                }
            })
            .ok();
        Watchdog { shared, thread }
    }

    /// The action of the command: print the report and exit non-zero.
    pub fn exit_on_hang() -> HangAction {
        Box::new(|report| {
            eprintln!("{report}");
            std::process::exit(HANG_EXIT);
        })
    }

    /// A new step starts now.
    pub fn enter(&self, what: String) {
        *self.shared.step.lock().unwrap_or_else(|e| e.into_inner()) = Some(Step {
            what,
            phase: "start",
            since: Instant::now(),
        });
    }

    /// The current step moved on to `phase` (its clock keeps running).
    pub fn phase(&self, phase: &'static str) {
        if let Some(st) = self
            .shared
            .step
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
        {
            st.phase = phase;
        }
    }

    /// The current step finished.
    pub fn leave(&self) {
        *self.shared.step.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn reports_a_step_that_overruns_and_not_one_that_finishes() {
        let (tx, rx) = mpsc::channel();
        let tx = Mutex::new(tx);
        let wd = Watchdog::start(
            Duration::from_millis(150),
            "seed 0x7".into(),
            Box::new(move |r| {
                let _ = tx.lock().unwrap().send(r);
            }),
        );
        wd.enter("frame 1".into());
        wd.leave();
        std::thread::sleep(Duration::from_millis(350));
        assert!(rx.try_recv().is_err(), "a finished step was reported");
        wd.enter("frame 2 on 3 workers".into());
        wd.phase("final waits");
        let r = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("no hang report");
        assert!(r.contains("frame 2 on 3 workers"), "{r}");
        assert!(r.contains("final waits") && r.contains("seed 0x7"), "{r}");
        drop(wd);
    }
}
