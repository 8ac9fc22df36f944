//! Idle bookkeeping and the sleep/wake protocol of the workers.
//!
//! The protocol, its invariants and why no wake-up is lost are explained in
//! `README.md`
//! next to this file. In short:
//! - `state` packs how many workers are awake and how many of those are
//!   searching for work.
//! - A thread that made work visible calls [`Sleep::notify_work`]: it wakes
//!   one sleeping worker, and only when no worker is searching.
//! - A worker that goes to sleep first unregisters as awake (SeqCst), then
//!   looks at every deque once more; that re-check pairs with the SeqCst
//!   fence in `notify_work`.

mod adaptive;
mod backoff;
mod futex;

pub(crate) use adaptive::AdaptiveSpin;
pub(crate) use backoff::Backoff;
pub(crate) use futex::Futex;

use crate::sync::{fence, lock, Mutex, Ordering};
use crossbeam_utils::CachePadded;

const SEARCHING_ONE: u32 = 1;
const AWAKE_ONE: u32 = 1 << 16;
const SEARCHING_MASK: u32 = 0xFFFF;

/// What `prepare_park` decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Park {
    /// Registered as a sleeper: re-check, then `park` or `cancel_park`.
    Registered,
    /// Whipping boy: stay awake; the caller now counts as searching.
    StayAwakeSearching,
}

/// Values of a worker's sleep word: `PARKED`, or notified (low bit set),
/// with the index + 1 of the context whose push caused the wake in the
/// other bits (0: no particular one), so the woken worker looks there first.
const PARKED: u32 = 0;
const NOTIFIED: u32 = 1;

/// The notified word value naming context `from`.
#[inline]
fn notified_from(from: u32) -> u32 {
    NOTIFIED | (from.wrapping_add(1) << 1)
}

pub(crate) struct Sleep {
    /// searching workers (low 16 bits) | awake workers (high 16 bits)
    state: CachePadded<crate::sync::AtomicU32>,
    /// Parked workers, by why they sleep.
    idle: Mutex<Idle>,
    /// `idle.sleepers.len()`, written under the lock (SeqCst), so that
    /// `notify_work` skips the lock when only benched workers sleep.
    asleep: crate::sync::AtomicU32,
    /// One futex word per worker.
    words: Box<[CachePadded<Futex>]>,
    num_workers: u32,
    /// Workers allowed to take work (`set_active`): those with an index
    /// below it. The others are benched: parked outside `sleepers`, so no
    /// `notify_work` wakes them; only a job pinned to one of them
    /// (`wake_worker`), a raised count, or shutdown does.
    active: crate::sync::AtomicU32,
    /// How many idle workers may search (and spin) at once
    /// (`try_become_searching`); at least 1. `set_max_searching`.
    max_searching: crate::sync::AtomicU32,
}

struct Idle {
    /// Active workers that are parked (or about to park), most recent last.
    sleepers: Vec<u32>,
    /// Benched workers (index at or above `active`), parked.
    benched: Vec<u32>,
}

impl Sleep {
    pub(crate) fn new(num_workers: usize) -> Sleep {
        assert!(
            num_workers < (1 << 15),
            "worker count exceeds the idle state's 15 bits"
        );
        let n = num_workers as u32;
        Sleep {
            // Workers start awake and not searching.
            state: CachePadded::new(crate::sync::AtomicU32::new(n * AWAKE_ONE)),
            idle: Mutex::new(Idle {
                sleepers: Vec::with_capacity(num_workers),
                benched: Vec::with_capacity(num_workers),
            }),
            asleep: crate::sync::AtomicU32::new(0),
            words: (0..num_workers)
                .map(|_| CachePadded::new(Futex::new(NOTIFIED)))
                .collect(),
            num_workers: n,
            active: crate::sync::AtomicU32::new(n),
            max_searching: crate::sync::AtomicU32::new(1),
        }
    }

    /// Let up to `n` (at least 1) idle workers search at once. Any value
    /// keeps the no-lost-wake-up argument (sleep/README.md): a notifier
    /// skips the wake only when some searcher exists, and every searcher
    /// that parks re-checks the deques after leaving the count.
    pub(crate) fn set_max_searching(&self, n: u32) {
        self.max_searching.store(n.max(1), Ordering::Relaxed);
    }

    /// Work was made visible (pushed on a deque of context `from`). Wake
    /// one sleeping worker if no worker is searching; it will look at
    /// `from`'s deques first. Returns the worker woken.
    ///
    /// `on_wake(idx)` runs for the worker woken, under the sleepers lock
    /// and *before* the store of its notified word (the tracer's
    /// `wake_issued`): that store is what ends the worker's `park`, so
    /// anything `on_wake` stamps happens before the wakee's `sleep_end`.
    ///
    /// Cost when nothing needs waking: a fence and one load, no syscall.
    #[inline]
    pub(crate) fn notify_work(&self, from: u32, on_wake: impl FnOnce(u32)) -> Option<u32> {
        // SeqCst fence: orders the caller's push before the load of `state`.
        // Pairs with the SeqCst `fetch_sub` in `prepare_park` followed by
        // the sleeper's re-check of the deques.
        fence(Ordering::SeqCst);
        self.notify_work_unfenced(from, on_wake)
    }

    /// `notify_work` after its fence.
    #[inline]
    fn notify_work_unfenced(&self, from: u32, on_wake: impl FnOnce(u32)) -> Option<u32> {
        let s = self.state.load(Ordering::SeqCst);
        if s & SEARCHING_MASK != 0 || (s >> 16) >= self.num_workers {
            return None;
        }
        // Some worker is parked; if only benched ones are, nobody may be
        // woken for this work. A sleeper counts itself here (SeqCst, under
        // the lock) before the decrement and fence that precede its
        // re-check, so this load after our fence misses it only if that
        // re-check sees our push.
        if self.asleep.load(Ordering::SeqCst) == 0 {
            return None;
        }
        self.wake_one_slow(from, on_wake)
    }

    #[cold]
    fn wake_one_slow(&self, from: u32, on_wake: impl FnOnce(u32)) -> Option<u32> {
        let mut idle = lock(&self.idle);
        // Re-check under the lock: `awake` only grows under this lock.
        let s = self.state.load(Ordering::SeqCst);
        if s & SEARCHING_MASK != 0 {
            return None;
        }
        let idx = idle.sleepers.pop()?;
        self.count_asleep(&idle);
        // The woken worker counts as awake and searching from now on, so
        // the next notifier does not wake another one for the same work.
        self.state
            .fetch_add(AWAKE_ONE + SEARCHING_ONE, Ordering::SeqCst);
        let w = &self.words[idx as usize];
        // Before the store that ends the wakee's park (see `notify_work`).
        on_wake(idx);
        // Under the lock: a NOTIFIED stored after unlocking could land on
        // the worker's *next* park (found by the loom model). Release: the
        // worker's Acquire load in `park` sees it.
        w.store(notified_from(from), Ordering::Release);
        drop(idle);
        // A late futex wake is harmless: `park` re-checks the word.
        w.wake_one();
        Some(idx)
    }

    /// Try to become a searching worker. Fails when `max_searching`
    /// already search: 1 under every policy but SpinThenSleep, which lets
    /// every idle worker search (sleep/README.md, "Who may search").
    /// Searchers are what `notify_work` trusts to find new work, so any cap
    /// keeps the no-lost-wake-up argument.
    #[inline]
    pub(crate) fn try_become_searching(&self) -> bool {
        let max = self.max_searching.load(Ordering::Relaxed);
        let mut s = self.state.load(Ordering::SeqCst);
        loop {
            if s & SEARCHING_MASK >= max {
                return false;
            }
            match self.state.compare_exchange_weak(
                s,
                s + SEARCHING_ONE,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
    }

    /// A searching worker found work. Returns true when it was the last
    /// searcher (then it should wake another worker if more work is visible:
    /// the cascade).
    #[inline]
    pub(crate) fn stop_searching(&self) -> bool {
        let prev = self.state.fetch_sub(SEARCHING_ONE, Ordering::SeqCst);
        prev & SEARCHING_MASK == 1
    }

    /// First half of going to sleep: register as a sleeper and stop counting
    /// as awake (and as searching if `searching`). The caller must then
    /// re-check every deque and call `cancel_park` if it sees work, else
    /// `park`.
    ///
    /// With `whipping` (the whipping-boy policy) a worker does not park when
    /// that would leave no searcher: a searching worker that is the last
    /// searcher stays, and a non-searching one becomes the searcher. Both
    /// return `Park::StayAwakeSearching`. The check is made under the
    /// sleepers lock, under which every change of that policy's searcher
    /// count is made (`hand_over`, parks, wakes), so "no searcher while a
    /// worker sleeps" never holds.
    pub(crate) fn prepare_park(&self, idx: usize, searching: bool, whipping: bool) -> Park {
        let mut idle = lock(&self.idle);
        // Benched since the caller last looked (`set_active`, under this
        // lock): park on the bench, where no `notify_work` wakes it.
        let benched = idx as u32 >= self.active.load(Ordering::Relaxed);
        if whipping && !benched {
            let others =
                (self.state.load(Ordering::SeqCst) & SEARCHING_MASK) - u32::from(searching);
            if others == 0 {
                if !searching {
                    self.state.fetch_add(SEARCHING_ONE, Ordering::SeqCst);
                }
                return Park::StayAwakeSearching;
            }
        }
        self.words[idx].store(PARKED, Ordering::Relaxed);
        if benched {
            idle.benched.push(idx as u32);
        } else {
            idle.sleepers.push(idx as u32);
            self.count_asleep(&idle);
        }
        let dec = AWAKE_ONE + if searching { SEARCHING_ONE } else { 0 };
        // SeqCst: pairs with the fence + load in `notify_work`.
        self.state.fetch_sub(dec, Ordering::SeqCst);
        drop(idle);
        // Orders the decrement before the caller's re-check loads.
        fence(Ordering::SeqCst);
        Park::Registered
    }

    /// The whipping boy took a job: wake a sleeper to take over the role
    /// (counted as searching) and stop searching, in one step under the lock.
    /// `more`: a context with more visible work (the successor looks there
    /// first). Returns the successor woken; `on_wake` as in `notify_work`.
    pub(crate) fn hand_over(&self, more: Option<u32>, on_wake: impl FnOnce(u32)) -> Option<u32> {
        let mut idle = lock(&self.idle);
        let next = idle.sleepers.pop();
        self.count_asleep(&idle);
        if next.is_some() {
            self.state
                .fetch_add(AWAKE_ONE + SEARCHING_ONE, Ordering::SeqCst);
        }
        self.state.fetch_sub(SEARCHING_ONE, Ordering::SeqCst);
        if let Some(idx) = next {
            // Before the store that ends the wakee's park.
            on_wake(idx);
            let v = more.map_or(NOTIFIED, notified_from);
            self.words[idx as usize].store(v, Ordering::Release);
        }
        drop(idle);
        if let Some(idx) = next {
            self.words[idx as usize].wake_one();
        }
        next
    }

    /// For the loom model: under the whipping-boy policy, whenever a worker
    /// sleeps some worker searches.
    #[cfg(all(test, loom))]
    pub(crate) fn whipping_invariant_holds(&self) -> bool {
        let idle = lock(&self.idle);
        idle.sleepers.is_empty() || self.state.load(Ordering::SeqCst) & SEARCHING_MASK > 0
    }

    /// The re-check after `prepare_park` saw work: become awake and
    /// searching again. If a notifier already took us off the sleeper list,
    /// it has already counted us as awake and searching.
    pub(crate) fn cancel_park(&self, idx: usize) {
        let mut idle = lock(&self.idle);
        let idle = &mut *idle;
        for list in [&mut idle.sleepers, &mut idle.benched] {
            if let Some(pos) = list.iter().rposition(|&i| i as usize == idx) {
                list.swap_remove(pos);
                self.state
                    .fetch_add(AWAKE_ONE + SEARCHING_ONE, Ordering::SeqCst);
                self.words[idx].store(NOTIFIED, Ordering::Relaxed);
            }
        }
        self.count_asleep(idle);
        // Else a notifier took us off the list and already stored NOTIFIED
        // under this lock.
    }

    /// Sleep until notified. On return the worker counts as awake and
    /// searching (the notifier counted it). Returns the context whose push
    /// caused the wake, if the notifier named one.
    pub(crate) fn park(&self, idx: usize) -> Option<usize> {
        let w = &self.words[idx];
        loop {
            // Acquire pairs with the Release store of the notified value in
            // the waker. Only this worker changes its word from here until
            // its next `prepare_park` (it is off the sleepers list).
            let v = w.load(Ordering::Acquire);
            if v != PARKED {
                return ((v >> 1) as usize).checked_sub(1);
            }
            w.wait(PARKED);
        }
    }

    /// Wake up to `n` sleeping workers at once (a flushed batch of `n`
    /// jobs pushed by context `from`), counting each as awake and searching.
    /// Returns those woken; `on_wake` as in `notify_work`, for each.
    pub(crate) fn wake_many(&self, n: usize, from: u32, mut on_wake: impl FnMut(u32)) -> Vec<u32> {
        if n == 0 {
            return Vec::new();
        }
        let mut idle = lock(&self.idle);
        let k = n.min(idle.sleepers.len());
        let at = idle.sleepers.len() - k;
        let woken: Vec<u32> = idle.sleepers.drain(at..).collect();
        self.count_asleep(&idle);
        for &idx in &woken {
            self.state
                .fetch_add(AWAKE_ONE + SEARCHING_ONE, Ordering::SeqCst);
            // Before the store that ends the wakee's park.
            on_wake(idx);
            // Under the lock, as in `wake_one_slow`.
            self.words[idx as usize].store(notified_from(from), Ordering::Release);
        }
        drop(idle);
        for &idx in &woken {
            self.words[idx as usize].wake_one();
        }
        woken
    }

    /// Workers searching right now.
    #[inline]
    pub(crate) fn searching(&self) -> u32 {
        self.state.load(Ordering::SeqCst) & SEARCHING_MASK
    }

    /// Wake every sleeping worker (first hot zone; with `benched_too`,
    /// shutdown: benched workers must exit as well).
    pub(crate) fn wake_all(&self, benched_too: bool) {
        let mut idle = lock(&self.idle);
        let mut woken: Vec<u32> = idle.sleepers.drain(..).collect();
        self.count_asleep(&idle);
        if benched_too {
            woken.append(&mut idle.benched);
        }
        for &idx in &woken {
            self.state
                .fetch_add(AWAKE_ONE + SEARCHING_ONE, Ordering::SeqCst);
            // Under the lock, as in `wake_one_slow`.
            self.words[idx as usize].store(NOTIFIED, Ordering::Release);
        }
        drop(idle);
        for idx in woken {
            self.words[idx as usize].wake_one();
        }
    }

    /// Wake worker `idx` if it is parked (idle or benched): a job was
    /// pinned to it, which no other worker may take. The caller's push
    /// happens before this lock; the worker re-checks its pinned queue
    /// after `prepare_park` released the same lock, so one of them sees
    /// the other. Returns whether it was parked; `on_wake` as in
    /// `notify_work`.
    pub(crate) fn wake_worker(&self, idx: u32, on_wake: impl FnOnce(u32)) -> bool {
        let mut guard = lock(&self.idle);
        let idle = &mut *guard;
        let found = [&mut idle.sleepers, &mut idle.benched]
            .into_iter()
            .any(|list| match list.iter().rposition(|&i| i == idx) {
                Some(pos) => {
                    list.remove(pos);
                    true
                }
                None => false,
            });
        self.count_asleep(idle);
        if found {
            self.state
                .fetch_add(AWAKE_ONE + SEARCHING_ONE, Ordering::SeqCst);
            on_wake(idx);
            self.words[idx as usize].store(NOTIFIED, Ordering::Release);
        }
        drop(guard);
        if found {
            self.words[idx as usize].wake_one();
        }
        found
    }

    /// Publish `idle.sleepers.len()` (the caller holds the lock).
    #[inline]
    fn count_asleep(&self, idle: &Idle) {
        self.asleep
            .store(idle.sleepers.len() as u32, Ordering::SeqCst);
    }

    /// Workers allowed to take work.
    #[inline]
    pub(crate) fn active(&self) -> u32 {
        self.active.load(Ordering::Relaxed)
    }

    /// Let only workers `0..n` take work. Parked workers at or above `n`
    /// move to the bench (they stay asleep; no wake); benched ones below
    /// `n` are woken (`on_wake` as in `notify_work`, for each). Running
    /// workers at or above `n` bench themselves when they next look for
    /// work.
    pub(crate) fn set_active(&self, n: u32, mut on_wake: impl FnMut(u32)) {
        let n = n.min(self.num_workers);
        let mut guard = lock(&self.idle);
        // Under the lock: `prepare_park` reads it there.
        self.active.store(n, Ordering::SeqCst);
        let idle = &mut *guard;
        let (stay, bench): (Vec<u32>, Vec<u32>) = idle.sleepers.iter().partition(|&&i| i < n);
        idle.sleepers = stay;
        self.count_asleep(idle);
        idle.benched.extend(bench);
        let (wake, keep): (Vec<u32>, Vec<u32>) = idle.benched.iter().partition(|&&i| i < n);
        idle.benched = keep;
        for &idx in &wake {
            self.state
                .fetch_add(AWAKE_ONE + SEARCHING_ONE, Ordering::SeqCst);
            // Before the store that ends the wakee's park.
            on_wake(idx);
            self.words[idx as usize].store(NOTIFIED, Ordering::Release);
        }
        drop(guard);
        for &idx in &wake {
            self.words[idx as usize].wake_one();
        }
    }

    /// (awake, searching) right now; for tests and stats.
    #[allow(dead_code)]
    pub(crate) fn counts(&self) -> (u32, u32) {
        let s = self.state.load(Ordering::SeqCst);
        (s >> 16, s & SEARCHING_MASK)
    }
}

#[cfg(all(test, loom))]
mod loom_tests;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_woken_worker_learns_which_context_pushed() {
        let s = Sleep::new(1);
        assert_eq!(s.prepare_park(0, false, false), Park::Registered);
        assert_eq!(s.notify_work(5, |_| {}), Some(0));
        assert_eq!(s.park(0), Some(5));
        // Woken with no particular context (shutdown, first hot zone).
        assert_eq!(s.prepare_park(0, true, false), Park::Registered);
        s.wake_all(false);
        assert_eq!(s.park(0), None);
        // A flushed batch names the flusher.
        assert_eq!(s.prepare_park(0, true, false), Park::Registered);
        assert_eq!(s.wake_many(3, 7, |_| {}), vec![0]);
        assert_eq!(s.park(0), Some(7));
    }

    #[test]
    fn the_whipping_boys_successor_learns_where_more_work_is() {
        // Worker 0 searches, worker 1 sleeps; worker 0 takes a job while
        // context 4 still holds more.
        let s = Sleep::new(2);
        assert!(s.try_become_searching());
        assert_eq!(s.prepare_park(1, false, true), Park::Registered);
        assert_eq!(s.hand_over(Some(4), |_| {}), Some(1));
        assert_eq!(s.park(1), Some(4));
        assert_eq!(s.counts(), (2, 1));
    }
}
