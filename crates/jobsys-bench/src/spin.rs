//! The busy-wait that stands for "a job of D µs" in every workload.
//!
//! One function, [`spin_ns`], shared by jobsys, rayon and the serial loop: it
//! reads the monotonic clock in a loop until `ns` nanoseconds have passed
//! since its first read. Reading the clock (not counting loop iterations)
//! keeps the duration right when a thread is preempted or the core changes
//! frequency. [`calibrate`] measures, once per run, what a clock read costs
//! and how long `spin_ns(D)` really takes; the frame-graph ideal and the
//! idle-cost "useful work" use those measured durations.

use crate::stats;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Spin on the clock for `ns` nanoseconds.
#[inline(never)]
pub fn spin_ns(ns: u64) {
    let start = Instant::now();
    let d = Duration::from_nanos(ns);
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Nanoseconds since a process-wide origin (never 0, so 0 can mean "not yet").
#[inline]
pub fn now_ns() -> u64 {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    let origin = *ORIGIN.get_or_init(Instant::now);
    origin.elapsed().as_nanos() as u64 + 1
}

/// What one clock read and one `spin_ns` call cost on this machine.
#[derive(Clone, Debug)]
pub struct Calibration {
    /// Median cost of one `Instant::now()`, ns.
    pub clock_read_ns: f64,
}

impl Calibration {
    /// Mean measured duration of `spin_ns(ns)` in nanoseconds.
    pub fn spin_actual_ns(&self, ns: u64) -> f64 {
        measured_spin(ns)
    }
}

/// Measure the clock read (once per process).
pub fn calibrate() -> &'static Calibration {
    static CAL: OnceLock<Calibration> = OnceLock::new();
    CAL.get_or_init(|| {
        let mut v = Vec::with_capacity(101);
        for _ in 0..101 {
            let t = Instant::now();
            for _ in 0..100 {
                std::hint::black_box(Instant::now());
            }
            v.push(t.elapsed().as_nanos() as f64 / 100.0);
        }
        Calibration {
            clock_read_ns: stats::summarize(&v).median,
        }
    })
}

/// Duration of `spin_ns(ns)`, measured once per distinct `ns`: the median
/// over 15 batches (each about 0.2 ms) of the mean per call, so that a
/// preemption during one batch does not skew it.
fn measured_spin(ns: u64) -> f64 {
    use std::collections::HashMap;
    use std::sync::Mutex;
    static CACHE: OnceLock<Mutex<HashMap<u64, f64>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(v) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&ns) {
        return *v;
    }
    let reps = (200_000 / ns.max(1)).clamp(1, 1000);
    spin_ns(ns); // warm
    let batches: Vec<f64> = (0..15)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..reps {
                spin_ns(ns);
            }
            t.elapsed().as_nanos() as f64 / reps as f64
        })
        .collect();
    let v = stats::summarize(&batches).median;
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(ns, v);
    v
}
