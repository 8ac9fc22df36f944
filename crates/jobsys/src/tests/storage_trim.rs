//! Storage above `retained_slots` given back (on `trim_storage` or when idle) and kept by frame loops.

use super::*;

/// Defect: a burst of queued jobs left its storage reserved for the life of
/// the system. Whole free pages above `retained_slots` are given back
/// (here on `trim_storage`), and a page reused later never lets an old
/// handle alias a new job.
#[test]
fn storage_above_the_high_water_mark_is_given_back_and_reused_safely() {
    let js = JobSystem::builder()
        .workers(0)
        .retained_slots(256)
        .build()
        .unwrap();
    let burst = n(20_000, 600);
    let old: Vec<_> = (0..burst).map(|_| js.schedule(|| {})).collect();
    assert!(js.stats().job_slots >= burst as u64);
    js.complete(js.combine(&old)); // (its edges take more pages)
    let peak = js.stats().job_slots;
    // Not at once: a burst that comes back next frame keeps its pages.
    js.complete(js.schedule(|| {}));
    assert_eq!(js.stats().job_slots, peak);
    assert!(js.trim_storage() > 0);
    let after = js.stats().job_slots;
    assert!(after <= 256, "kept {after} slots of {peak}");
    // Reuse (revived pages start above every old generation).
    let gate = Arc::new(AtomicUsize::new(0));
    let new: Vec<_> = (0..burst)
        .map(|_| {
            let g = gate.clone();
            js.schedule(move || {
                g.fetch_add(1, Ordering::Relaxed);
            })
        })
        .collect();
    assert!(old.iter().all(|&h| js.is_complete(h)));
    assert!(new.iter().all(|&h| !js.is_complete(h)));
    let new_set: std::collections::HashSet<_> = new.iter().copied().collect();
    assert!(
        old.iter().all(|h| !new_set.contains(h)),
        "a handle was handed out twice"
    );
    js.complete(js.combine(&new));
    assert_eq!(gate.load(Ordering::Relaxed), burst);
}

/// The automatic path: a thread whose storage stayed above the mark for
/// `TRIM_DELAY` looks at its whole free pages at an idle moment (its
/// outermost `complete` returning; the clock is read every 64th such
/// moment), and gives back at the first idle moment `TRIM_DELAY` later
/// those it did not use in between.
#[test]
#[cfg_attr(miri, ignore)] // a real two-second wait
fn storage_above_the_mark_for_a_while_is_given_back_when_idle() {
    let js = JobSystem::builder()
        .workers(0)
        .retained_slots(256)
        .build()
        .unwrap();
    let old: Vec<_> = (0..5000).map(|_| js.schedule(|| {})).collect();
    js.complete(js.combine(&old));
    let peak = js.stats().job_slots;
    assert!(peak > 256 * 8, "{peak}");
    let idle_moments = || {
        std::thread::sleep(crate::store::TRIM_DELAY + std::time::Duration::from_millis(50));
        for _ in 0..128 {
            js.complete(js.schedule(|| {}));
        }
    };
    // The first look: nothing given back yet.
    idle_moments();
    assert_eq!(js.stats().job_slots, peak);
    idle_moments();
    let after = js.stats().job_slots;
    assert!(after <= 256, "kept {after} of {peak}");
    assert!(old.iter().all(|&h| js.is_complete(h)));
}

/// Run `frame` on a system of 0 workers with 256 slots retained until
/// `trim_delays` × `TRIM_DELAY` of wall time (and 100 frames) have passed,
/// after a first frame that needs at least `peak` slots: the job slots
/// must never change after that first frame. (Not a wait on the clock: it
/// runs frames until enough time has passed.)
fn frames_keep_their_storage(trim_delays: f64, peak: u64, frame: impl Fn(&JobSystem)) {
    let js = JobSystem::builder()
        .workers(0)
        .retained_slots(256)
        .build()
        .unwrap();
    frame(&js);
    let slots = js.stats().job_slots;
    assert!(slots >= peak, "{slots}");
    let start = std::time::Instant::now();
    let mut frames = 0;
    while start.elapsed() < crate::store::TRIM_DELAY.mul_f64(trim_delays) || frames < 100 {
        frame(&js);
        frames += 1;
        assert_eq!(js.stats().job_slots, slots, "frame {frames}");
    }
}

/// Defect: a frame loop whose per-frame peak is above `retained_slots` had
/// the pages above the mark given back about once a second, and faulted
/// back in the next frame. Frames of 2,048 jobs, each completed on its own
/// (an idle moment each), for 2.5 × `TRIM_DELAY` (the old rule trimmed
/// after one).
#[test]
#[cfg_attr(miri, ignore)] // seconds of frames
fn a_frame_loop_above_the_mark_keeps_its_storage() {
    frames_keep_their_storage(2.5, 2048, |js| {
        let hs: Vec<_> = (0..2048).map(|_| js.schedule(|| {})).collect();
        for h in hs {
            js.complete(h);
        }
    });
}

/// Defect: a frame that schedules in waves and waits on part of each wave
/// before the next (an idle moment each time) has a demand count of one
/// wave, below its peak; the pages above one wave were given back about
/// once a second and faulted back by the next frame. Frames of 4 waves of
/// 1,024 jobs, each wave's first half completed before the next wave and
/// the rest at the frame's end, for 5.5 × `TRIM_DELAY`. Whether a trim
/// check lands on a moment with few live jobs depends on timing, so the
/// old rule failed this at 1.2 s and 2.2 s in two runs and passed a 3.5 s
/// one; the store unit test with a simulated clock is the exact check
/// (`store::tests::a_frame_that_allocates_in_waves_keeps_its_pages`).
#[test]
#[cfg_attr(miri, ignore)] // seconds of frames
fn a_frame_loop_that_schedules_in_waves_keeps_its_storage() {
    frames_keep_their_storage(5.5, 2560, |js| {
        let mut queued = Vec::new();
        for _ in 0..4 {
            let mut hs: Vec<_> = (0..1024).map(|_| js.schedule(|| {})).collect();
            queued.extend(hs.split_off(512));
            for h in hs {
                js.complete(h);
            }
        }
        for h in queued {
            js.complete(h);
        }
    });
}
