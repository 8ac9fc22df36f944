//! One idle spin: bounded in time, backing off, and giving the CPU away now
//! and then.
//!
//! Every idle spin in the crate (a worker looking for work, a thread in
//! `complete` or `join` waiting for a job another thread runs) goes through
//! [`Backoff`], so they share one rule:
//!
//! - between two looks, `step` spin-loop hints, doubling up to
//!   [`MAX_PAUSES`]: a spinning thread notices work well within a
//!   microsecond;
//! - every [`YIELD_INTERVAL`] of spinning, one `yield_now`. When our threads
//!   share a CPU with other work (a loaded machine, a compile, a game's own
//!   threads), the thread that would *produce* the work we spin for may have
//!   been preempted by us on the same CPU. Without the yield, the spinner
//!   holds that CPU for its whole budget, sleeps, and is woken by the
//!   producer's very next `schedule`: one futex wake per job. The trace of
//!   W5 on a loaded 2-core machine showed exactly that (a wake every 38 µs =
//!   5 µs job + 30 µs spin + park). On an idle machine `sched_yield` returns
//!   at once (a fraction of a microsecond), so the spin loses nothing but a
//!   syscall per interval;
//! - with more threads than CPUs (`oversubscribed`), every step yields;
//! - a worker whose looks keep finding work that is gone before it can take
//!   it (an owner pushing and popping its own deque, as in fork/join or a
//!   `schedule` followed by `complete`) starts its next spins with longer
//!   steps ([`Backoff::contended`]): every look reads the owner's deque
//!   indices, so each one costs the owner a cache miss on its next push or
//!   pop (W1 single with 1 worker shows it).

use std::time::{Duration, Instant};

/// Most spin-loop hints between two looks. A `pause` costs ~140 cycles on
/// recent x86, so 8 keep a spinning thread's reaction time well under a
/// microsecond.
pub(crate) const MAX_PAUSES: u32 = 8;

/// Most spin-loop hints between two looks of a contended spin (~1 µs here).
pub(crate) const MAX_CONTENDED_PAUSES: u32 = 64;

/// Spinning time between two `yield_now`s (see the module docs). Short
/// enough that a producer preempted by its own spinner resumes within a
/// 5 µs job's time; long enough that the spin that usually ends within a few
/// microseconds (work arriving inside a burst) never pays a syscall.
pub(crate) const YIELD_INTERVAL: Duration = Duration::from_micros(8);

/// A time-bounded idle spin in progress.
pub(crate) struct Backoff {
    start: Instant,
    step: u32,
    max_step: u32,
    next_yield: Duration,
    oversubscribed: bool,
    /// Whether some step yielded the CPU.
    yielded: bool,
}

impl Backoff {
    /// Start spinning now. `oversubscribed`: more threads than CPUs.
    #[inline]
    pub(crate) fn new(oversubscribed: bool) -> Backoff {
        Backoff {
            start: Instant::now(),
            step: 1,
            max_step: MAX_PAUSES,
            next_yield: YIELD_INTERVAL,
            oversubscribed,
            yielded: false,
        }
    }

    /// The same, after `level` (0..=3) looks in a row that saw work and
    /// lost it: steps start at `MAX_PAUSES << level` (at most
    /// [`MAX_CONTENDED_PAUSES`]). Level 0 is [`Backoff::new`].
    #[inline]
    pub(crate) fn contended(oversubscribed: bool, level: u32) -> Backoff {
        let mut b = Backoff::new(oversubscribed);
        if level > 0 {
            b.max_step = (MAX_PAUSES << level.min(3)).min(MAX_CONTENDED_PAUSES);
            b.step = b.max_step;
        }
        b
    }

    /// Time spent since `new`.
    #[inline]
    pub(crate) fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Give the CPU to another runnable thread, if any.
    #[inline]
    pub(crate) fn yield_now(&mut self) {
        self.yielded = true;
        std::thread::yield_now();
    }

    /// Whether this spin has yielded the CPU yet. A spin shorter than
    /// [`YIELD_INTERVAL`] has not: before such a spinner parks it yields
    /// once, so that a producer it preempted on its own CPU gets to push
    /// the work it waits for (worker.rs, `spin_until_work`).
    #[inline]
    pub(crate) fn yielded(&self) -> bool {
        self.yielded
    }

    /// Wait one step before the next look. `spent` is a recent `elapsed()`
    /// (callers read the clock for their budget anyway).
    #[inline]
    pub(crate) fn snooze(&mut self, spent: Duration) {
        if self.oversubscribed {
            self.yield_now();
            return;
        }
        if spent >= self.next_yield {
            self.next_yield = spent + YIELD_INTERVAL;
            self.yield_now();
            return;
        }
        for _ in 0..self.step {
            std::hint::spin_loop();
        }
        self.step = (self.step * 2).min(self.max_step);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn snooze_backs_off_to_max_pauses() {
        let mut b = Backoff::new(false);
        assert_eq!(b.step, 1);
        for _ in 0..10 {
            b.snooze(Duration::ZERO);
        }
        assert_eq!(b.step, MAX_PAUSES);
    }

    #[test]
    fn contended_spins_start_with_longer_steps() {
        assert_eq!(Backoff::contended(false, 0).step, 1);
        assert_eq!(Backoff::contended(false, 1).step, 2 * MAX_PAUSES);
        assert_eq!(Backoff::contended(false, 3).step, MAX_CONTENDED_PAUSES);
        let mut b = Backoff::contended(false, 9);
        assert_eq!(b.step, MAX_CONTENDED_PAUSES);
        b.snooze(Duration::ZERO);
        assert_eq!(b.step, MAX_CONTENDED_PAUSES);
    }

    #[test]
    fn yields_once_per_interval_and_moves_the_deadline() {
        let mut b = Backoff::new(false);
        b.snooze(YIELD_INTERVAL);
        assert_eq!(b.next_yield, 2 * YIELD_INTERVAL);
        // Before the new deadline: spin hints only, deadline unchanged.
        b.snooze(YIELD_INTERVAL + Duration::from_micros(1));
        assert_eq!(b.next_yield, 2 * YIELD_INTERVAL);
        assert_eq!(b.step, 2);
    }
}
