//! The threads of the `floor-static` rows (W2, W3): no job system, no
//! stealing, no queue. A fixed amount of work is split up front into
//! `shares` equal contiguous shares; the calling thread runs share 0 and
//! `shares - 1` persistent helper threads run the others.
//!
//! One [`StaticSplit::run`] is one frame: the caller bumps a start word
//! (waking the helpers that sleep on it), runs its share, then waits until
//! a counter says every helper has finished its own. Waiting, on either
//! side, spins [`SPIN`] (what jobsys's default idle policy spins) and then
//! sleeps on the word's futex, so that a thread with nothing to do gives
//! its core to one that still has work (or to the other rows of the run,
//! between blocks). The helpers are spawned once, by [`StaticSplit::start`],
//! and stopped and joined when the `StaticSplit` is dropped.

use crate::error::{Error, Result};
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a waiting thread spins before it sleeps on the futex.
pub const SPIN: Duration = Duration::from_micros(30);

/// Helper threads alive, over every `StaticSplit` of the process.
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// Helper threads ever spawned.
static SPAWNED: AtomicU64 = AtomicU64::new(0);

/// Helper threads of any `StaticSplit` still running (0 once every split
/// has been dropped: drop joins them).
pub fn live_threads() -> usize {
    LIVE.load(Ordering::Acquire)
}

/// Helper threads spawned so far by every `StaticSplit` of the process.
pub fn spawned_threads() -> u64 {
    SPAWNED.load(Ordering::Acquire)
}

/// Share `k` of `total` units split into `n` equal contiguous shares (the
/// first shares one unit shorter when `n` does not divide `total`).
pub fn share(k: usize, n: usize, total: usize) -> Range<usize> {
    let n = n.max(1);
    let at = |k: usize| (k as u128 * total as u128 / n as u128) as usize;
    at(k)..at(k + 1)
}

/// The work of one frame: `work(k, n)` runs share `k` of `n`.
type Work = dyn Fn(usize, usize) + Send + Sync;

struct Shared {
    /// Bumped once per frame (and once to stop): the helpers' futex word.
    start: AtomicU32,
    /// Helpers done with this frame's share: the caller's futex word.
    done: AtomicU32,
    /// Helpers asleep (or about to sleep) on `start`.
    sleepers: AtomicU32,
    /// The caller is asleep (or about to sleep) on `done`.
    caller_asleep: AtomicBool,
    /// A helper's share panicked.
    failed: AtomicBool,
    /// Set before the last bump of `start`: the helpers exit.
    stop: AtomicBool,
    shares: usize,
    work: Box<Work>,
}

/// Spin up to [`SPIN`] until `word` is not `old`; its new value, or `None`.
fn spin_until_changed(word: &AtomicU32, old: u32) -> Option<u32> {
    let t = Instant::now();
    loop {
        let v = word.load(Ordering::Acquire);
        if v != old {
            return Some(v);
        }
        if t.elapsed() >= SPIN {
            return None;
        }
        std::hint::spin_loop();
    }
}

impl Shared {
    /// A helper's loop: wait for a frame, run share `k`, count it done.
    fn helper(&self, k: usize) {
        let mut seen = 0;
        loop {
            seen = match spin_until_changed(&self.start, seen) {
                Some(g) => g,
                None => self.sleep_on_start(seen),
            };
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            if catch_unwind(AssertUnwindSafe(|| (self.work)(k, self.shares))).is_err() {
                self.failed.store(true, Ordering::Relaxed);
            }
            // SeqCst, with the load below: either the caller's recheck of
            // `done` sees this increment or we see it asleep (Dekker).
            self.done.fetch_add(1, Ordering::SeqCst);
            if self.caller_asleep.load(Ordering::SeqCst) {
                atomic_wait::wake_all(&self.done);
            }
        }
    }

    /// Sleep on `start` until it is not `seen`; its new value.
    fn sleep_on_start(&self, seen: u32) -> u32 {
        // SeqCst, with the caller's bump and load of `sleepers`: either we
        // see the bump or the caller sees us and wakes us.
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let g = loop {
            let g = self.start.load(Ordering::SeqCst);
            if g != seen {
                break g;
            }
            atomic_wait::wait(&self.start, seen);
        };
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
        g
    }

    /// The caller: wait until all `shares - 1` helpers are done.
    fn wait_done(&self) {
        let all = (self.shares - 1) as u32;
        let mut d = self.done.load(Ordering::Acquire);
        if d == all {
            return;
        }
        while let Some(v) = spin_until_changed(&self.done, d) {
            if v == all {
                return;
            }
            d = v;
        }
        self.caller_asleep.store(true, Ordering::SeqCst);
        loop {
            let d = self.done.load(Ordering::SeqCst);
            if d == all {
                break;
            }
            atomic_wait::wait(&self.done, d);
        }
        self.caller_asleep.store(false, Ordering::Relaxed);
    }
}

/// `shares - 1` helper threads and the caller, running one fixed split.
pub struct StaticSplit {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

impl StaticSplit {
    /// Start `shares - 1` helpers named `name-k` (k = 1..shares) for
    /// `work`; `work(k, n)` runs share `k` of `n` (use [`share`]).
    pub fn start(
        name: &str,
        shares: usize,
        work: impl Fn(usize, usize) + Send + Sync + 'static,
    ) -> Result<StaticSplit> {
        if shares == 0 {
            return Err(Error::Verify(format!("{name}: a split needs a share")));
        }
        // Built first, so that a failed spawn drops it: the helpers started
        // so far are stopped and joined.
        let mut s = StaticSplit {
            shared: Arc::new(Shared {
                start: AtomicU32::new(0),
                done: AtomicU32::new(0),
                sleepers: AtomicU32::new(0),
                caller_asleep: AtomicBool::new(false),
                failed: AtomicBool::new(false),
                stop: AtomicBool::new(false),
                shares,
                work: Box::new(work),
            }),
            threads: Vec::with_capacity(shares - 1),
        };
        for k in 1..shares {
            let sh = s.shared.clone();
            LIVE.fetch_add(1, Ordering::AcqRel);
            let spawned = std::thread::Builder::new()
                .name(format!("{name}-{k}"))
                .spawn(move || {
                    sh.helper(k);
                    LIVE.fetch_sub(1, Ordering::AcqRel);
                });
            match spawned {
                Ok(t) => {
                    SPAWNED.fetch_add(1, Ordering::AcqRel);
                    s.threads.push(t);
                }
                Err(e) => {
                    LIVE.fetch_sub(1, Ordering::AcqRel);
                    return Err(e.into());
                }
            }
        }
        Ok(s)
    }

    /// Threads taking part: the caller and the helpers.
    pub fn shares(&self) -> usize {
        self.shared.shares
    }

    /// Helpers asleep on the start word (or about to sleep): all of them,
    /// soon after a frame, when no next frame comes within [`SPIN`].
    pub fn asleep(&self) -> usize {
        self.shared.sleepers.load(Ordering::Acquire) as usize
    }

    /// One frame: start the helpers, run share 0, wait for every share.
    /// An error if a helper's share panicked (the helpers keep running).
    pub fn run(&self) -> Result<()> {
        let s = &*self.shared;
        // No helper touches `done` between frames: all counted the last one.
        s.done.store(0, Ordering::Relaxed);
        s.start.fetch_add(1, Ordering::SeqCst);
        if s.sleepers.load(Ordering::SeqCst) > 0 {
            atomic_wait::wake_all(&s.start);
        }
        (s.work)(0, s.shares);
        s.wait_done();
        if s.failed.swap(false, Ordering::Relaxed) {
            return Err(Error::Verify("a static-split share panicked".into()));
        }
        Ok(())
    }
}

impl Drop for StaticSplit {
    fn drop(&mut self) {
        let s = &*self.shared;
        s.stop.store(true, Ordering::Release);
        s.start.fetch_add(1, Ordering::SeqCst);
        atomic_wait::wake_all(&s.start);
        for t in self.threads.drain(..) {
            // A panic outside a share (none expected) has been reported.
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wait until `n` helpers of `split` sleep; fail after 10 s.
    fn wait_until_asleep(split: &StaticSplit, n: usize) {
        let t = Instant::now();
        while split.asleep() != n {
            assert!(t.elapsed() < Duration::from_secs(10), "helpers never slept");
            std::thread::yield_now();
        }
    }

    #[test]
    fn shares_partition_the_work() {
        for total in [0usize, 1, 7, 100, 10_301] {
            for n in 1..=6 {
                let mut next = 0;
                for k in 0..n {
                    let r = share(k, n, total);
                    assert_eq!(r.start, next, "total {total} n {n} k {k}");
                    assert!(r.len() <= total / n + 1 && r.len() >= total / n);
                    next = r.end;
                }
                assert_eq!(next, total);
            }
        }
    }

    /// Every unit runs exactly once per frame, on the share that owns it,
    /// frame after frame (helpers asleep between some of them).
    #[test]
    fn every_unit_once_per_frame() {
        const UNITS: usize = 1000;
        let hits: Arc<Vec<AtomicU32>> = Arc::new((0..UNITS).map(|_| AtomicU32::new(0)).collect());
        for n in [1, 2, 3, 5] {
            let h = hits.clone();
            let split = StaticSplit::start("test-split", n, move |k, n| {
                for u in share(k, n, UNITS) {
                    h[u].fetch_add(1, Ordering::Relaxed);
                }
            })
            .unwrap();
            assert_eq!(split.shares(), n);
            for frame in 1..=4u32 {
                if frame >= 3 {
                    // Every helper goes to sleep between frames (none
                    // spins forever), and the next frame wakes them.
                    wait_until_asleep(&split, n - 1);
                }
                split.run().unwrap();
                // `run` returned: every share's writes are visible.
                assert!(hits.iter().all(|c| c.swap(0, Ordering::Relaxed) == 1));
            }
        }
    }

    #[test]
    fn a_panicking_share_is_an_error_not_a_hang() {
        let split = StaticSplit::start("test-panic", 2, |k, _| {
            assert!(k != 1, "share 1 fails on purpose");
        })
        .unwrap();
        assert!(split.run().is_err());
        assert!(split.run().is_err(), "the helper still answers");
        assert!(StaticSplit::start("test-zero", 0, |_, _| {}).is_err());
    }
}
