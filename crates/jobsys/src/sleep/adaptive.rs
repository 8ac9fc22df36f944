//! The `Adaptive` idle policy: a per-worker spin budget learned from how
//! long this worker recently waited for work.
//!
//! Rule (also in `README.md`): a worker keeps the last `GAPS` idle gaps
//! (time from running out of work to finding work again, whether it spun or
//! slept). If the 75th percentile of those gaps is at most `max_spin`, work
//! usually arrives within a spin, so it spins for twice that percentile
//! (capped at `max_spin`); otherwise it sleeps at once. Spinning is also
//! capped to `cpu_cap` of a core per `WINDOW`: once a worker has spun that
//! long in the current window, it sleeps at once until the window ends.
//! With no history yet it spins `max_spin / 4`.

use std::time::{Duration, Instant};

const GAPS: usize = 8;
const WINDOW: Duration = Duration::from_millis(10);

/// Owned by one worker (lives on its stack); no sharing.
pub(crate) struct AdaptiveSpin {
    max_spin: Duration,
    cpu_cap: f32,
    gaps: [Duration; GAPS],
    recorded: usize,
    idle_since: Option<Instant>,
    window_start: Instant,
    spun_in_window: Duration,
}

impl AdaptiveSpin {
    pub(crate) fn new(max_spin: Duration, cpu_cap: f32) -> AdaptiveSpin {
        AdaptiveSpin {
            max_spin,
            cpu_cap,
            gaps: [Duration::ZERO; GAPS],
            recorded: 0,
            idle_since: None,
            window_start: Instant::now(),
            spun_in_window: Duration::ZERO,
        }
    }

    /// In an idle gap (`went_idle` seen, no work found since)?
    #[inline]
    pub(crate) fn is_idle(&self) -> bool {
        self.idle_since.is_some()
    }

    /// The worker found nothing to run (start of an idle gap, once).
    pub(crate) fn went_idle(&mut self, now: Instant) {
        self.idle_since.get_or_insert(now);
    }

    /// The worker found work (`now`: when it looked): the idle gap (if any)
    /// ends.
    pub(crate) fn found_work(&mut self, now: Instant) {
        if let Some(t) = self.idle_since.take() {
            self.gaps[self.recorded % GAPS] = now - t;
            self.recorded += 1;
        }
    }

    /// The worker spun for `d`.
    pub(crate) fn spun(&mut self, d: Duration) {
        self.spun_in_window += d;
    }

    /// How long to spin now before sleeping.
    pub(crate) fn budget(&mut self, now: Instant) -> Duration {
        if now - self.window_start >= WINDOW {
            self.window_start = now;
            self.spun_in_window = Duration::ZERO;
        }
        let allowed = WINDOW.mul_f32(self.cpu_cap);
        if self.spun_in_window >= allowed {
            return Duration::ZERO;
        }
        let room = allowed - self.spun_in_window;
        let want = if self.recorded == 0 {
            self.max_spin / 4
        } else {
            let n = self.recorded.min(GAPS);
            let mut g = self.gaps;
            let recent = &mut g[..n];
            recent.sort_unstable();
            let p75 = recent[(n * 3).div_ceil(4) - 1];
            if p75 <= self.max_spin {
                (p75 * 2).min(self.max_spin)
            } else {
                Duration::ZERO
            }
        };
        want.min(room)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(a: &mut AdaptiveSpin, gaps_us: &[u64]) -> Instant {
        let mut t = Instant::now();
        for &g in gaps_us {
            a.went_idle(t);
            t += Duration::from_micros(g);
            a.found_work(t);
        }
        t
    }

    #[test]
    fn spins_when_work_comes_back_quickly() {
        let mut a = AdaptiveSpin::new(Duration::from_micros(50), 1.0);
        let t = feed(&mut a, &[5, 6, 4, 5, 7, 5, 6, 5]);
        let b = a.budget(t);
        assert!(
            b >= Duration::from_micros(10) && b <= Duration::from_micros(50),
            "{b:?}"
        );
    }

    #[test]
    fn sleeps_at_once_when_work_comes_back_slowly() {
        let mut a = AdaptiveSpin::new(Duration::from_micros(50), 1.0);
        let t = feed(&mut a, &[2000, 1500, 3000, 2500, 2000, 1800, 2200, 2100]);
        assert_eq!(a.budget(t), Duration::ZERO);
    }

    #[test]
    fn the_cpu_cap_stops_spinning_within_a_window() {
        let mut a = AdaptiveSpin::new(Duration::from_micros(50), 0.01); // 100 us per 10 ms
        let t = feed(&mut a, &[5; 8]);
        a.window_start = t;
        a.spun(Duration::from_micros(100));
        assert_eq!(a.budget(t), Duration::ZERO);
        // A new window restores the budget.
        assert!(a.budget(t + WINDOW) > Duration::ZERO);
    }

    #[test]
    fn starts_with_a_quarter_of_the_maximum() {
        let mut a = AdaptiveSpin::new(Duration::from_micros(40), 1.0);
        assert_eq!(a.budget(Instant::now()), Duration::from_micros(10));
    }
}
