//! Helpers shared by the integration tests: a watchdog against hangs, a
//! small seeded PRNG, and panic-payload formatting.
#![allow(dead_code)]

use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Run `body` on its own thread and fail the test if it has not finished
/// within `secs` seconds (a hang would otherwise stall the whole suite). A
/// panic in `body` is re-raised here with its original payload.
///
/// `JOBSYS_WATCHDOG_SCALE` multiplies `secs`: a sanitizer build runs the
/// same work 5-20x slower, on a machine other suites load too
/// (scripts/tsan.sh sets it; a hang still fails, later).
pub fn watchdog<F: FnOnce() + Send + 'static>(secs: u64, body: F) {
    let secs = secs * watchdog_scale();
    let (tx, rx) = mpsc::channel();
    let name = std::thread::current().name().unwrap_or("test").to_string();
    let t = std::thread::Builder::new()
        .name(format!("{name}-body"))
        .spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
            let _ = tx.send(r);
        })
        .expect("spawn test body thread");
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(Ok(())) => {
            t.join().expect("body thread");
        }
        Ok(Err(payload)) => {
            let _ = t.join();
            std::panic::resume_unwind(payload);
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("watchdog: test body did not finish within {secs} s (hang / deadlock)")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            panic!("watchdog: test body thread died without reporting")
        }
    }
}

/// `JOBSYS_WATCHDOG_SCALE` (default 1).
fn watchdog_scale() -> u64 {
    match std::env::var("JOBSYS_WATCHDOG_SCALE") {
        Ok(v) => v
            .parse::<u64>()
            .ok()
            .filter(|&n| n >= 1)
            .expect("JOBSYS_WATCHDOG_SCALE: a whole number, at least 1"),
        Err(_) => 1,
    }
}

/// The text of a panic payload (`&str` or `String`), or a placeholder.
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic payload>".to_string()
    }
}

/// Run `f`, expect it to panic, and return the panic message.
pub fn expect_panic<R>(f: impl FnOnce() -> R) -> String {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(_) => panic!("expected a panic, but the call returned normally"),
        Err(p) => panic_message(&*p),
    }
}

/// SplitMix64: a tiny, seeded, deterministic PRNG (no dev-dependency).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u32) -> bool {
        self.below(100) < percent as usize
    }
}

/// Mix two words (used by tests that compute a value per job).
pub fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.rotate_left(29) ^ 0xD6E8_FEB8_6659_FD93;
    z = (z ^ (z >> 32)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    z ^ (z >> 29)
}

/// Counts drops of the value a closure owns (a closure dropped without
/// running, or twice, shows in the count).
pub struct DropCount(pub Arc<AtomicUsize>);
impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A one-shot gate that closures (`Fn` ones too: loop bodies) can wait on.
#[derive(Default)]
pub struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}
impl Gate {
    pub fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }
    pub fn wait(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.cv.wait(open).unwrap();
        }
    }
}

/// Runs and drops of the closures made by `job`.
#[derive(Clone, Default)]
pub struct Tally {
    pub runs: Arc<AtomicUsize>,
    pub drops: Arc<AtomicUsize>,
}
impl Tally {
    /// A closure that counts its run, owning a guard that counts its drop.
    pub fn job(&self) -> impl FnOnce() + Send + 'static {
        let (r, g) = (self.runs.clone(), DropCount(self.drops.clone()));
        move || {
            let _g = g;
            r.fetch_add(1, SeqCst);
        }
    }
    pub fn runs(&self) -> usize {
        self.runs.load(SeqCst)
    }
    pub fn drops(&self) -> usize {
        self.drops.load(SeqCst)
    }
    /// `(runs, drops)`.
    pub fn counts(&self) -> (usize, usize) {
        (self.runs(), self.drops())
    }
}

/// The order in which `n` independent jobs, waited for as one group, ran
/// (each pushes its index).
pub fn run_order(js: &jobsys::JobSystem, n: usize) -> Vec<usize> {
    let ran = Arc::new(Mutex::new(Vec::new()));
    let hs: Vec<jobsys::JobHandle> = (0..n)
        .map(|i| {
            let ran = ran.clone();
            js.schedule(move || ran.lock().unwrap().push(i))
        })
        .collect();
    js.complete(js.combine(&hs));
    let order = ran.lock().unwrap().clone();
    order
}
