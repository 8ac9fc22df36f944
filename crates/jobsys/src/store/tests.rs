//! Unit tests of the store's trim, driven by a made-up clock: frames of
//! allocations and frees with an idle moment after each, as a frame loop
//! does, over several `TRIM_DELAY`s of simulated time (no wall-clock wait).
//! Also run under Miri, with smaller sizes.

use super::*;
use std::ptr::NonNull;

/// A store and the pages it was given (the registry's part).
struct Harness {
    store: Store,
    pages: Vec<Page>,
    t0: Instant,
    /// Simulated time, in milliseconds after `t0`.
    now_ms: u64,
    /// Pages given back by trims, in all.
    given_back: usize,
}

/// Pages kept when idle, as `Config::retained_slots` / 256.
const KEEP: usize = 2;

/// Sizes in pages: smaller under Miri.
fn pages(n: usize, miri: usize) -> usize {
    if cfg!(miri) {
        miri
    } else {
        n
    }
}

/// Milliseconds per frame: fewer frames under Miri (still several per
/// `TRIM_DELAY`).
const MS: u64 = if cfg!(miri) { 200 } else { 50 };

/// `TRIM_DELAY` in milliseconds.
fn delay() -> u64 {
    TRIM_DELAY.as_millis() as u64
}

impl Harness {
    fn new() -> Harness {
        Harness {
            store: Store::new(0),
            pages: Vec::new(),
            t0: Instant::now(),
            now_ms: 0,
            given_back: 0,
        }
    }

    fn now(&self) -> Instant {
        self.t0 + Duration::from_millis(self.now_ms)
    }

    /// Allocate `n` slots, adding pages as room.rs `alloc` does.
    fn alloc(&mut self, n: usize) -> Vec<NonNull<Slot>> {
        (0..n)
            .map(|_| {
                // SAFETY: this thread owns the store (the test's only thread).
                if let Some(s) = unsafe { self.store.alloc() } {
                    return s;
                }
                let pages = &mut self.pages;
                // SAFETY: as above.
                unsafe {
                    self.store.add_page(|page| {
                        let slots: *const [Slot] = page.slots();
                        pages.push(page);
                        // SAFETY: the page is owned by `self.pages`, dropped
                        // after `self.store` (field order) and never moved
                        // out; moving the `Page` does not move its slots.
                        &*slots
                    });
                    self.store.alloc().expect("a page was just added")
                }
            })
            .collect()
    }

    /// Free `slots`: on the owner's list, or through the remote stack as a
    /// worker that ran the jobs would. Each moves to its next generation,
    /// as the freeing CAS does.
    fn free(&self, slots: Vec<NonNull<Slot>>, remote: bool) {
        for s in slots {
            // SAFETY: allocated by this store and freed once, here; `mine`
            // is true only when freed by the owner (this thread).
            unsafe {
                let slot = s.as_ref();
                slot.set_free_gen_for_test(slot.gen_now() + 1);
                self.store.push_free(slot, !remote);
            }
        }
    }

    /// An idle moment: note the demand; check for a trim on every idle
    /// moment (`every`), or on every `TRIM_CHECK_EVERY`th as
    /// room.rs `idle` does.
    fn idle(&mut self, every: bool) {
        let now = self.now();
        // SAFETY: owner-only (the test's only thread).
        let due = unsafe { self.store.idle_tick_with(KEEP, || now) };
        if every || due {
            // SAFETY: as above.
            self.given_back += unsafe { self.store.trim_if_due_at(KEEP, now) };
        }
    }

    /// One frame of `n` slots, freed before its idle moment; then `ms`
    /// milliseconds pass.
    fn frame(&mut self, n: usize, remote: bool, every: bool, ms: u64) {
        let slots = self.alloc(n);
        self.free(slots, remote);
        self.idle(every);
        self.now_ms += ms;
    }

    fn active(&self) -> usize {
        self.store.active_pages()
    }
}

/// Issue: a thread whose per-frame peak is above `retained_slots` had all
/// its pages above the mark given back about once a second, and faulted
/// them back in the next frame. Frames of 6 pages' worth (kept at 2), some
/// slots live across frames, over 10 simulated seconds (4 under Miri): no page is ever
/// given back, whether the trim is checked on every idle moment or on every
/// 64th, and frees are the owner's or remote.
#[test]
fn a_peak_that_recurs_every_frame_keeps_its_pages() {
    let frame = pages(6, 3) * PAGE_SLOTS;
    let seconds = if cfg!(miri) { 4 } else { 10 };
    for (every, ms) in [(true, MS), (false, 16)] {
        if cfg!(miri) && !every {
            continue; // 600 frames: too slow under Miri
        }
        for remote in [false, true] {
            let mut h = Harness::new();
            let live = h.alloc(100);
            h.frame(frame, remote, every, ms);
            let peak = h.active();
            assert!(peak > KEEP, "{peak}");
            while h.now_ms < seconds * delay() {
                h.frame(frame, remote, every, ms);
                assert_eq!(h.given_back, 0, "at {} ms (every {every})", h.now_ms);
                assert_eq!(h.active(), peak, "at {} ms", h.now_ms);
            }
            assert_eq!(h.pages.len(), peak, "pages were added back");
            h.free(live, remote);
        }
    }
}

/// A one-off burst (a level load) above the mark, then small frames that
/// still need more than the mark and whose slots are freed by other
/// threads: the burst's pages are kept for `TRIM_DELAY`, then given back
/// down to what the small frames need (their peak plus an eighth, in
/// pages), which they then never add again.
#[test]
fn a_one_off_burst_is_given_back_after_the_delay() {
    let (burst, small) = (pages(40, 8), 3 * PAGE_SLOTS);
    let mut h = Harness::new();
    h.frame(burst * PAGE_SLOTS, false, true, MS);
    assert_eq!(h.active(), burst);
    let mut trimmed_at = None;
    while h.now_ms < 4 * delay() {
        let t = h.now_ms;
        h.frame(small, true, true, MS);
        if t <= delay() {
            assert_eq!(h.active(), burst, "given back at {t} ms");
        }
        if trimmed_at.is_none() && h.given_back > 0 {
            trimmed_at = Some(h.now_ms);
        }
    }
    let at = trimmed_at.expect("the burst was never given back");
    // Its demand forgotten within two delays (its bucket, then the one
    // after); then one more: the first look after that finds its pages
    // whole free, the next one finds them still unused.
    assert!(at <= 3 * delay() + 3 * MS, "{at} ms");
    let want = (small + small / 8).div_ceil(PAGE_SLOTS);
    assert_eq!(h.active(), want);
    assert_eq!(h.given_back, burst - want);
    assert_eq!(h.pages.len(), burst, "no page was added after the trim");
}

/// A peak that falls for good: frames of 12 pages' worth for 3 s, then of
/// 3 (5 and 1 under Miri). The big frames' pages stay for `TRIM_DELAY` after the last of them,
/// then all but what the small frames need go back, and stay back.
#[test]
fn the_excess_of_a_peak_that_fell_goes_back_after_the_window() {
    let (big, small) = (pages(12, 5) * PAGE_SLOTS, pages(3, 1) * PAGE_SLOTS);
    let mut h = Harness::new();
    while h.now_ms < 3000 {
        h.frame(big, true, true, MS);
    }
    let peak = h.active();
    assert_eq!(h.given_back, 0);
    let last_big = h.now_ms - MS;
    while h.now_ms < last_big + 5 * delay() {
        let t = h.now_ms;
        h.frame(small, false, true, MS);
        if t <= last_big + delay() {
            assert_eq!(h.given_back, 0, "given back at {t} ms");
        }
    }
    let want = KEEP.max((small + small / 8).div_ceil(PAGE_SLOTS));
    assert_eq!(h.active(), want);
    assert_eq!(h.given_back, peak - want);
}

/// `JobSystem::trim_storage` keeps its meaning: down to the mark now,
/// whatever the recent peak (and the demand is then forgotten).
#[test]
fn an_explicit_trim_ignores_the_recent_peak() {
    let mut h = Harness::new();
    for _ in 0..3 {
        h.frame(6 * PAGE_SLOTS, false, true, MS);
    }
    assert_eq!(h.active(), 6);
    // SAFETY: owner-only (the test's only thread).
    assert_eq!(unsafe { h.store.trim(KEEP) }, 6 - KEEP);
    assert_eq!(h.active(), KEEP);
    // SAFETY: as above.
    assert_eq!(unsafe { &(*h.store.pages.get()).demand }.peak(), 0);
}

/// Live slots count on top of the peak: a trim never takes the room the
/// next frame needs because some of the pages hold long-lived jobs.
#[test]
fn live_slots_are_kept_on_top_of_the_peak() {
    let mut h = Harness::new();
    let live = h.alloc(4 * PAGE_SLOTS);
    // A burst, forgotten later; frames of 3 pages' worth meanwhile.
    h.frame(pages(20, 8) * PAGE_SLOTS, false, true, MS);
    let added = h.pages.len();
    while h.now_ms < 4 * delay() {
        h.frame(3 * PAGE_SLOTS, false, true, MS);
    }
    assert!(h.given_back > 0);
    // 4 live pages, and room for 3 pages and an eighth.
    assert_eq!(h.active(), 4 + 4);
    h.frame(3 * PAGE_SLOTS, false, true, MS);
    assert_eq!(h.pages.len(), added, "a page was added back");
    h.free(live, false);
}

/// A frame that allocates in waves and completes part of each wave before
/// the next (each such `complete` is an idle moment) while the rest stays
/// queued until the frame's end: only one wave's allocations lie between
/// two idle moments, but the frame's peak is all of the waves' queued
/// halves plus one wave. Before the trim looked at which pages were used,
/// the pages above that one-wave demand were given back about once a
/// second and faulted back by the next frame. Waves of 2 pages' worth (1
/// under Miri), 4 of them: no page is ever given back.
#[test]
fn a_frame_that_allocates_in_waves_keeps_its_pages() {
    let wave = pages(2, 1) * PAGE_SLOTS;
    let seconds = if cfg!(miri) { 4 } else { 10 };
    for remote in [false, true] {
        let mut h = Harness::new();
        let frame = |h: &mut Harness| {
            let mut queued = Vec::new();
            for _ in 0..4 {
                let mut slots = h.alloc(wave);
                queued.extend(slots.split_off(wave / 2));
                h.free(slots, remote);
                h.idle(true);
            }
            h.free(queued, remote);
            h.idle(true);
            h.now_ms += MS;
        };
        frame(&mut h);
        let peak = h.active();
        assert!(peak > KEEP, "{peak}");
        while h.now_ms < seconds * delay() {
            frame(&mut h);
            assert_eq!(
                h.given_back,
                0,
                "at {} ms (remote {remote}), active {} of {peak}, pages {}",
                h.now_ms,
                h.active(),
                h.pages.len()
            );
            assert_eq!(h.active(), peak, "at {} ms", h.now_ms);
        }
        assert_eq!(h.pages.len(), peak, "pages were added back");
    }
}

/// A page added for an allocation that skips back-pressure (an edge block)
/// stays off the free lists, so the next allocation that applies
/// back-pressure finds them empty, until `take_bypass` moves it there; its
/// free slots count as free for the trim, which gives the page back.
#[test]
fn a_bypass_page_stays_off_the_free_lists_until_taken_and_is_trimmed_when_free() {
    for take in [true, false] {
        let mut h = Harness::new();
        let pages = &mut h.pages;
        // SAFETY: this thread owns the store (the test's only thread); the
        // page is kept as in `Harness::alloc`.
        let edge = unsafe {
            assert!(h.store.alloc_bypass().is_none(), "a new store has no slot");
            h.store.add_bypass_page(|page| {
                let slots: *const [Slot] = page.slots();
                pages.push(page);
                // SAFETY: as in `Harness::alloc`.
                &*slots
            });
            let edge = h.store.alloc_bypass().expect("a slot of the bypass page");
            assert!(
                h.store.alloc().is_none(),
                "the bypass page is off the free lists"
            );
            assert!(!h.store.has_free());
            edge
        };
        let mut live = vec![edge];
        if take {
            // SAFETY: as above; the local list is empty.
            assert!(unsafe { h.store.take_bypass() });
            live.extend(h.alloc(PAGE_SLOTS - 1));
            assert_eq!(h.active(), 1, "the bypass page's slots were enough");
        }
        h.free(live, false);
        // SAFETY: as above.
        assert_eq!(unsafe { h.store.trim(0) }, 1, "the whole page is free");
        assert_eq!(h.active(), 0);
    }
}
