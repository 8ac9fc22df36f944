//! The clock a graph times its nodes with, and each node's measured span
//! in one run.
//!
//! A loop node is timed piece by piece (its pieces run on several threads),
//! so the clock is read thousands of times per frame: W3's 10,280 pieces
//! spent about 0.5 ms of a 3.9 ms frame (1 worker) in `clock_gettime`
//! (23 ns a read on the 2-vCPU VM). Two things make it cheap:
//!
//! - **Ticks, not nanoseconds.** On x86-64 the clock is the time-stamp
//!   counter (`rdtsc`, about 10 ns there; constant-rate on every x86-64
//!   CPU of the last fifteen years), converted to nanoseconds only when a
//!   run's durations are harvested, by the rate measured since the first
//!   graph was built (`Scale`). Elsewhere (and under Miri) ticks are
//!   nanoseconds of the monotonic clock.
//! - **One read per piece.** A piece reads the clock at its end; at its
//!   start only when it is the first piece of this node in this run on its
//!   thread (a thread-local key: the span's address and the run's epoch, a
//!   number no other run of any graph has). A later piece on the same
//!   thread starts after that one did, so it cannot move the span's start.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// One node's measured span in one run, in ticks: the first piece's start
/// (`u64::MAX` while none started) and the last piece's end (0 while none
/// ended), for the run numbered `epoch`.
pub(crate) struct Span {
    start: AtomicU64,
    end: AtomicU64,
    epoch: AtomicU64,
}

impl Span {
    pub(crate) fn new() -> Span {
        Span {
            start: AtomicU64::new(u64::MAX),
            end: AtomicU64::new(0),
            epoch: AtomicU64::new(0),
        }
    }

    /// Empty the span for the run numbered `epoch` (from [`next_epoch`]).
    /// Done before the run's jobs are scheduled, so scheduling orders these
    /// stores before every piece's reads.
    pub(crate) fn reset(&self, epoch: u64) {
        self.start.store(u64::MAX, Ordering::Relaxed);
        self.end.store(0, Ordering::Relaxed);
        self.epoch.store(epoch, Ordering::Relaxed);
    }

    /// Time one piece (a single node's only one) around `f`.
    #[inline]
    pub(crate) fn time(&self, f: impl FnOnce()) {
        let key = (
            self as *const Span as usize,
            self.epoch.load(Ordering::Relaxed),
        );
        // `try_with`: a piece run from a thread-local destructor reads its
        // start as a first piece does.
        let first = TIMED.try_with(|t| t.replace(key) != key).unwrap_or(true);
        if first {
            self.start.fetch_min(now(), Ordering::Relaxed);
        }
        f();
        self.end.fetch_max(now(), Ordering::Relaxed);
    }

    /// The measured duration in ticks, `None` if the node did not run to
    /// its end in this run. Saturating: a start and an end read on two
    /// cores whose counters differ by a few ticks never read negative.
    pub(crate) fn ticks(&self) -> Option<u64> {
        let s = self.start.load(Ordering::Relaxed);
        let e = self.end.load(Ordering::Relaxed);
        (s != u64::MAX && e != 0).then(|| e.saturating_sub(s))
    }
}

thread_local! {
    /// The span (address, epoch) this thread last timed a piece of.
    static TIMED: Cell<(usize, u64)> = const { Cell::new((0, 0)) };
}

/// A number for a new run, never given out before (epoch 0 is no run's).
pub(crate) fn next_epoch() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Where ticks were when the first graph was built, to measure their rate.
struct Base {
    at: Instant,
    ticks: u64,
}

static BASE: OnceLock<Base> = OnceLock::new();

/// Fix the base of the tick rate (once per process; every graph build
/// calls it, before any of its nodes can run).
pub(crate) fn start() {
    BASE.get_or_init(|| Base {
        at: Instant::now(),
        ticks: now(),
    });
}

/// Nanoseconds per tick, measured from the base to now: taken once per
/// harvest, so the measurement grows more precise as the program runs.
pub(crate) struct Scale(f64);

impl Scale {
    pub(crate) fn now() -> Scale {
        if !TICKS_ARE_NS {
            if let Some(b) = BASE.get() {
                let ns = b.at.elapsed().as_nanos() as f64;
                let ticks = now().wrapping_sub(b.ticks) as f64;
                if ns > 0.0 && ticks > 0.0 {
                    return Scale(ns / ticks);
                }
            }
        }
        Scale(1.0)
    }

    pub(crate) fn ns(&self, ticks: u64) -> u64 {
        (ticks as f64 * self.0) as u64
    }
}

const TICKS_ARE_NS: bool = !cfg!(all(target_arch = "x86_64", not(miri)));

/// The clock, in ticks.
#[inline]
pub(crate) fn now() -> u64 {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        // SAFETY: `rdtsc` exists on every x86-64 CPU and only reads the
        // counter.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        mono_ns()
    }
}

/// Nanoseconds of a monotonic clock with an arbitrary start.
#[cfg(not(all(target_arch = "x86_64", not(miri))))]
fn mono_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_later_piece_on_the_same_thread_keeps_the_first_start() {
        start();
        let s = Span::new();
        s.reset(next_epoch());
        s.time(|| {});
        let first = s.start.load(Ordering::Relaxed);
        assert_ne!(first, u64::MAX);
        s.time(|| {});
        assert_eq!(s.start.load(Ordering::Relaxed), first);
        assert!(s.ticks().is_some());
        // A new run of the same span: its first piece reads the start again.
        s.reset(next_epoch());
        assert_eq!(s.ticks(), None);
        s.time(|| {});
        assert_ne!(s.start.load(Ordering::Relaxed), u64::MAX);
        assert!(s.ticks().is_some());
    }

    #[test]
    fn a_piece_that_panics_leaves_no_end() {
        let s = Span::new();
        s.reset(next_epoch());
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.time(|| panic!("x"))));
        assert!(r.is_err());
        assert_eq!(s.ticks(), None);
    }

    #[test]
    #[cfg_attr(miri, ignore)] // a real sleep
    fn ticks_convert_to_about_the_wall_time() {
        start();
        let t0 = now();
        let w0 = Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let (t1, w1) = (now(), Instant::now());
        let ns = Scale::now().ns(t1 - t0) as f64;
        let wall = (w1 - w0).as_nanos() as f64;
        assert!(
            (ns / wall - 1.0).abs() < 0.05,
            "{ns} ns from ticks, {wall} ns wall"
        );
    }
}
