//! W6 wake-primitives: what waking costs (a diagnostic).
//!
//! N threads (1, 2, 4, 8, 16, 32) block on a primitive; the main thread
//! releases one token ("wake-one") or N tokens ("wake-all") and measures
//! the release call itself, and the wake-to-run time: from just before the
//! release to the moment the woken thread (wake-all: the last one) runs.
//! Primitives: a POSIX semaphore (`sem_t`), a futex (via `atomic-wait`, the
//! primitive jobsys sleeps on) used as a token counter, and
//! `std::sync::Condvar` with a mutex-protected token count. A release is
//! the whole operation a program would do: `sem_post` (N times for
//! wake-all: POSIX has no broadcast); add tokens + futex wake; lock, add
//! tokens, unlock, notify.
//!
//! Before each sample every waiter has announced it is about to block and
//! the main thread slept 200 µs, so all N sit in the kernel.

use super::emit;
use crate::error::{Error, Result};
use crate::json::{Label, Row};
use crate::params;
use crate::spin::now_ns;
use crate::stats;
use crate::Ctx;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Workload name (subcommand, JSON file).
pub const NAME: &str = "wake-primitives";

/// Waiter counts.
pub const WAITERS: [usize; 6] = [1, 2, 4, 8, 16, 32];

/// A blocking token counter.
pub trait Prim: Send + Sync {
    /// Block until a token is available, take it.
    fn wait(&self);
    /// Add one token, waking one waiter.
    fn release_one(&self);
    /// Add `n` tokens, waking every waiter.
    fn release_all(&self, n: u32);
}

/// POSIX unnamed semaphore.
pub struct PosixSem(Box<UnsafeCell<libc::sem_t>>);

// SAFETY: a `sem_t` is made to be used from many threads at once; it never
// moves (boxed) and is destroyed only in `drop`, when no thread uses it.
unsafe impl Send for PosixSem {}
// SAFETY: as for Send.
unsafe impl Sync for PosixSem {}

impl PosixSem {
    /// A semaphore with no tokens.
    pub fn new() -> Result<PosixSem> {
        // SAFETY: `sem_t` is plain data; `sem_init` initialises it below.
        let s = PosixSem(Box::new(UnsafeCell::new(unsafe { std::mem::zeroed() })));
        // SAFETY: valid, boxed (address-stable) `sem_t`, process-private.
        if unsafe { libc::sem_init(s.0.get(), 0, 0) } != 0 {
            return Err(Error::Io(std::io::Error::last_os_error()));
        }
        Ok(s)
    }
}

impl Drop for PosixSem {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`; no waiter is left (joined).
        unsafe { libc::sem_destroy(self.0.get()) };
    }
}

impl Prim for PosixSem {
    fn wait(&self) {
        // SAFETY: initialised semaphore; EINTR is retried.
        while unsafe { libc::sem_wait(self.0.get()) } != 0 {
            let e = std::io::Error::last_os_error();
            assert_eq!(e.raw_os_error(), Some(libc::EINTR), "sem_wait: {e}");
        }
    }
    fn release_one(&self) {
        // SAFETY: initialised semaphore.
        unsafe { libc::sem_post(self.0.get()) };
    }
    fn release_all(&self, n: u32) {
        for _ in 0..n {
            // SAFETY: initialised semaphore.
            unsafe { libc::sem_post(self.0.get()) };
        }
    }
}

/// A token count on a futex word.
#[derive(Default)]
pub struct Futex(AtomicU32);

impl Prim for Futex {
    fn wait(&self) {
        loop {
            let t = self.0.load(Ordering::Acquire);
            if t == 0 {
                atomic_wait::wait(&self.0, 0);
            } else if self
                .0
                .compare_exchange_weak(t, t - 1, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }
    fn release_one(&self) {
        self.0.fetch_add(1, Ordering::Release);
        atomic_wait::wake_one(&self.0);
    }
    fn release_all(&self, n: u32) {
        self.0.fetch_add(n, Ordering::Release);
        atomic_wait::wake_all(&self.0);
    }
}

/// A token count under a mutex, with a condition variable.
#[derive(Default)]
pub struct CondvarPrim {
    tokens: Mutex<u32>,
    cv: Condvar,
}

impl Prim for CondvarPrim {
    fn wait(&self) {
        let mut t = self.tokens.lock().unwrap_or_else(|e| e.into_inner());
        while *t == 0 {
            t = self.cv.wait(t).unwrap_or_else(|e| e.into_inner());
        }
        *t -= 1;
    }
    fn release_one(&self) {
        *self.tokens.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.cv.notify_one();
    }
    fn release_all(&self, n: u32) {
        *self.tokens.lock().unwrap_or_else(|e| e.into_inner()) += n;
        self.cv.notify_all();
    }
}

/// N waiter threads on one primitive, with the counters the main thread
/// reads.
struct Waiters {
    name: &'static str,
    prim: Arc<dyn Prim>,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    /// `ready` value once every waiter blocks again.
    expect_ready: u64,
}

#[derive(Default)]
struct Shared {
    /// Incremented by a waiter just before it blocks.
    ready: AtomicU64,
    /// Incremented by a waiter once it runs after a wake.
    woken: AtomicU64,
    /// Latest wake time (ns, `now_ns`).
    last_run: AtomicU64,
    stop: AtomicBool,
}

impl Waiters {
    fn start(name: &'static str, prim: Arc<dyn Prim>, n: usize) -> Result<Waiters> {
        let shared = Arc::new(Shared::default());
        let mut threads = Vec::with_capacity(n);
        for i in 0..n {
            let (prim, sh) = (prim.clone(), shared.clone());
            let t = std::thread::Builder::new()
                .name(format!("w6-{name}-{i}"))
                .stack_size(64 * 1024)
                .spawn(move || loop {
                    sh.ready.fetch_add(1, Ordering::Release);
                    prim.wait();
                    if sh.stop.load(Ordering::Acquire) {
                        break;
                    }
                    sh.last_run.fetch_max(now_ns(), Ordering::AcqRel);
                    sh.woken.fetch_add(1, Ordering::Release);
                })?;
            threads.push(t);
        }
        Ok(Waiters {
            name,
            prim,
            shared,
            threads,
            expect_ready: n as u64,
        })
    }

    fn wait_until(&self, what: &str, cond: impl Fn() -> bool) -> Result<()> {
        let t = Instant::now();
        while !cond() {
            if t.elapsed() > Duration::from_secs(10) {
                return Err(Error::Verify(format!(
                    "{NAME} {}: {what} did not happen within 10 s",
                    self.name
                )));
            }
            std::thread::yield_now();
        }
        Ok(())
    }

    /// One sample: (release µs, wake-to-run µs).
    fn sample(&mut self, all: bool) -> Result<(f64, f64)> {
        let sh = self.shared.clone();
        let expect = self.expect_ready;
        self.wait_until("all waiters blocking", || {
            sh.ready.load(Ordering::Acquire) >= expect
        })?;
        std::thread::sleep(Duration::from_micros(200));
        let n = self.threads.len() as u64;
        let k = if all { n } else { 1 };
        sh.last_run.store(0, Ordering::Relaxed);
        let w0 = sh.woken.load(Ordering::Acquire);
        let t0 = now_ns();
        if all {
            self.prim.release_all(n as u32);
        } else {
            self.prim.release_one();
        }
        let t1 = now_ns();
        self.wait_until("the wake", || sh.woken.load(Ordering::Acquire) >= w0 + k)?;
        let run = sh.last_run.load(Ordering::Acquire);
        self.expect_ready += k;
        Ok(((t1 - t0) as f64 / 1e3, run.saturating_sub(t0) as f64 / 1e3))
    }

    fn stop(self) {
        self.shared.stop.store(true, Ordering::Release);
        self.prim.release_all(self.threads.len() as u32);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// Run W6 and report it.
pub fn run(ctx: &Ctx) -> Result<()> {
    let samples = ctx.samples_or(1000, 10);
    let bar = ctx.progress.bar(NAME, WAITERS.len() as u64);
    let mut rows = Vec::new();
    for n in WAITERS {
        bar.message(format!("N={n}"));
        let mut ws = vec![
            Waiters::start("posix-sem", Arc::new(PosixSem::new()?), n)?,
            Waiters::start("futex", Arc::new(Futex::default()), n)?,
            Waiters::start("condvar", Arc::new(CondvarPrim::default()), n)?,
        ];
        // [prim][op][metric] samples; op 0 = wake-one, 1 = wake-all.
        let mut data = vec![[[Vec::new(), Vec::new()], [Vec::new(), Vec::new()]]; ws.len()];
        // One uncounted round, then interleaved: every primitive, every op.
        for s in 0..=samples {
            for (pi, w) in ws.iter_mut().enumerate() {
                for (op, all) in [false, true].into_iter().enumerate() {
                    let (rel, run) = w.sample(all)?;
                    if s > 0 {
                        data[pi][op][0].push(rel);
                        data[pi][op][1].push(run);
                    }
                }
            }
        }
        for (pi, w) in ws.iter().enumerate() {
            for (op, op_name) in ["wake-one", "wake-all"].into_iter().enumerate() {
                for (m, metric) in ["release", "wake-to-run"].into_iter().enumerate() {
                    let v = &data[pi][op][m];
                    let label = Label {
                        imp: w.name.into(),
                        policy: None,
                        workers: None,
                        threads: Some(n),
                    };
                    rows.push(Row::measured(
                        NAME,
                        &format!("{metric} {op_name} N={n}"),
                        &label,
                        params! {"waiters" => n, "op" => op_name, "metric" => metric},
                        "us",
                        &stats::summarize(v),
                        Some(v.clone()),
                        &ctx.machine,
                    ));
                }
            }
        }
        for w in ws {
            w.stop();
        }
        bar.inc();
    }
    bar.finish();
    let key = |r: &Row| {
        (
            r.params
                .get("metric")
                .and_then(|v| v.as_str())
                .map(str::to_owned),
            r.params
                .get("op")
                .and_then(|v| v.as_str())
                .map(|s| s != "wake-one"),
            r.threads,
        )
    };
    rows.sort_by_key(key);
    let notes = vec![
        format!("us; {samples} samples per row, primitives and ops interleaved; threads = N blocked waiters"),
        "release = duration of the release call (sem_post x k | fetch_add + futex wake | lock, add, unlock, notify); wake-to-run = from just before the release to the woken thread running (wake-all: the last one)".into(),
    ];
    emit(ctx, NAME, "W6 wake-primitives", &notes, &rows, true, &[])?;
    let svg = crate::plot::wake_primitives(&rows, &ctx.out)?;
    ctx.progress.print(&format!("   plot: {}\n", svg.display()));
    Ok(())
}
