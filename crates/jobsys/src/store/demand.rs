//! A store's recent demand: the most slots its owner allocated between two
//! of its idle moments, over at least the last `TRIM_DELAY`. The trim keeps
//! room for that many (`Store::trim_if_due_at`), so a peak that comes back
//! every frame keeps its pages, and one that stopped coming back is
//! forgotten within `2 * TRIM_DELAY` (plus the time to the next clock read).
//!
//! The clock is read only when a new peak is noted and on the idle moments
//! on which the caller checks for a trim; any other idle moment's count
//! waits in `unstamped` and is stamped with the next read (later than it
//! happened: it is kept longer, never shorter).
//!
//! Pure bookkeeping, owner-only (the store keeps it in its owner-only
//! `Pages`); the clock is passed in, so tests drive it with made-up times.

use super::TRIM_DELAY;
use std::time::Instant;

/// The largest count noted in a stretch of time, and the latest stamp in it.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    max: usize,
    /// The first stamp: the bucket takes stamps until `TRIM_DELAY` after it.
    start: Instant,
    /// The latest stamp: every count in the bucket happened no later.
    last: Instant,
}

impl Bucket {
    /// Every count in it is more than `TRIM_DELAY` old at `now`.
    fn expired(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.last) > TRIM_DELAY
    }
}

/// Owner-only; see the module comment.
#[derive(Default, Debug)]
pub(super) struct Demand {
    /// When the store was first seen above its mark (the first clock read
    /// since it was last at the mark), or when a trim last left it above:
    /// no trim within `TRIM_DELAY` of it.
    pub(super) since: Option<Instant>,
    /// The bucket taking stamps now.
    cur: Option<Bucket>,
    /// The bucket before it (its stamps are all no later than `cur.start`).
    prev: Option<Bucket>,
    /// The largest count noted since the last clock read, not yet stamped.
    unstamped: usize,
    /// `peak()`, kept up to date: `note`'s common case reads only this
    /// and `unstamped` (it runs on every idle moment above the mark, e.g.
    /// after each of 65,536 `complete`s of one frame).
    peak: usize,
}

impl Demand {
    /// The most slots allocated between two idle moments that the trim
    /// still has to keep room for.
    #[inline]
    pub(super) fn peak(&self) -> usize {
        self.peak
    }

    /// An idle moment: `n` slots were allocated since the last one. False
    /// when `n` is a new peak: then the caller reads the clock and calls
    /// `note_peak` (so a one-off burst is stamped with its own time and
    /// forgotten on time). A few instructions otherwise: it runs on every
    /// idle moment above the mark (W1 flat: after each of 65,536
    /// `complete`s).
    #[inline]
    pub(super) fn note(&mut self, n: usize) -> bool {
        if n > self.peak {
            return false;
        }
        if n > self.unstamped {
            // Not above `peak`, which stays.
            self.unstamped = n;
        }
        true
    }

    /// `n`, noted at `now`, is a new peak (`note` returned false).
    #[cold]
    pub(super) fn note_peak(&mut self, n: usize, now: Instant) {
        self.read(now, n);
    }

    /// A clock read at `now` (`n`: a count noted right now, or 0): stamp
    /// what waited, forget what is more than `TRIM_DELAY` old, and start
    /// a new bucket every `TRIM_DELAY`.
    pub(super) fn read(&mut self, now: Instant, n: usize) {
        self.since.get_or_insert(now);
        if self.prev.is_some_and(|b| b.expired(now)) {
            self.prev = None;
        }
        if self.cur.is_some_and(|b| b.expired(now)) {
            self.cur = None;
        }
        // `prev`'s stamps are no later than `cur.start`, which is more than
        // `TRIM_DELAY` old when `cur` is closed: the `prev` it replaces had
        // expired.
        if let Some(c) = self.cur {
            if now.saturating_duration_since(c.start) > TRIM_DELAY {
                self.prev = Some(c);
                self.cur = None;
            }
        }
        let n = n.max(std::mem::take(&mut self.unstamped));
        if n > 0 {
            let c = self.cur.get_or_insert(Bucket {
                max: 0,
                start: now,
                last: now,
            });
            c.max = c.max.max(n);
            c.last = now;
        }
        let max = |b: Option<Bucket>| b.map_or(0, |b| b.max);
        self.peak = max(self.cur).max(max(self.prev));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// An idle moment at `now` after `n` allocations, as the store notes it.
    fn note(d: &mut Demand, n: usize, now: Instant) {
        if !d.note(n) {
            d.note_peak(n, now);
        }
    }

    fn ms(t0: Instant, ms: u64) -> Instant {
        t0 + Duration::from_millis(ms)
    }

    /// A count is remembered for at least `TRIM_DELAY`, whether it was a
    /// new peak (stamped at once) or waited for the next read.
    #[test]
    fn a_count_is_kept_for_the_delay_then_forgotten() {
        let t0 = Instant::now();
        let mut d = Demand::default();
        note(&mut d, 1000, t0);
        assert_eq!(d.since, Some(t0));
        assert!(d.note(10), "not a new peak: no clock read");
        // The 10 is stamped at the first read (100 ms), in the bucket of
        // the 1000: both are kept while that stamp is under a second old.
        for t in (100..=1100).step_by(100) {
            d.read(ms(t0, t), 0);
            assert_eq!(d.peak(), 1000, "at {t} ms");
        }
        d.read(ms(t0, 1101), 0);
        assert_eq!(d.peak(), 0);
    }

    /// A peak seen every frame never drops out, across many buckets.
    #[test]
    fn a_recurring_peak_is_never_forgotten() {
        let t0 = Instant::now();
        let mut d = Demand::default();
        for frame in 0..600u64 {
            // 16 ms frames; a clock read on every 64th idle moment only.
            note(&mut d, 5000, ms(t0, frame * 16));
            if frame % 64 == 63 {
                d.read(ms(t0, frame * 16), 0);
            }
            assert_eq!(d.peak(), 5000, "frame {frame}");
        }
    }

    /// A burst followed by small frames: the small frames' peak survives
    /// the burst being forgotten (two buckets, not one).
    #[test]
    fn a_lower_peak_outlives_a_burst_before_it() {
        let t0 = Instant::now();
        let mut d = Demand::default();
        note(&mut d, 1_000_000, t0);
        for frame in 1..200u64 {
            assert!(d.note(300), "not a new peak: no clock read");
            if frame % 10 == 0 {
                d.read(ms(t0, frame * 16), 0);
            }
        }
        // 3.2 s after the burst.
        d.read(ms(t0, 3200), 0);
        assert_eq!(d.peak(), 300);
    }
}
