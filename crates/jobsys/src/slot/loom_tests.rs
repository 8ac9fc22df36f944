//! loom models of the slot state word's transitions (`--cfg loom`).

use super::*;
use loom::thread;

/// A slot of generation 5 in `phase` with `pins` pins, on the heap
/// for the model's threads.
fn slot_in(phase: u64, pins: u64) -> &'static Slot {
    let s: &'static Slot = Box::leak(Box::new(Slot::new(0)));
    s.state
        .store(5 | phase | (pins * PIN_ONE), Ordering::Relaxed);
    s
}

// Pin vs recycle: the runner drops the last pin of a finished job while
// a waiter tries to pin it. Either the waiter pins generation 5 (and
// the slot is freed only by its own unpin), or it finds the slot freed
// (generation 6); exactly one thread frees it, once.
#[test]
fn pin_races_the_freeing_unpin() {
    loom::model(|| {
        let s = slot_in(FINISHED, 1);
        let t = thread::spawn(move || matches!(s.unpin(), Unpinned::Freed) as u32);
        let mut freed = 0;
        if let Some(st) = s.pin(5) {
            assert_eq!(st.generation(), 5, "a pin holds the generation");
            freed += matches!(s.unpin(), Unpinned::Freed) as u32;
        }
        freed += t.join().unwrap();
        assert_eq!(freed, 1, "freed exactly once");
        let st = s.state();
        assert_eq!((st.generation(), st.is_free(), st.pins()), (6, true, 0));
    });
}

// Claim vs claim (a pop racing a steal, or a waiter claiming through
// the handle): exactly one thread gets to run the job.
#[test]
fn one_claim_wins() {
    loom::model(|| {
        let s = slot_in(RUNNABLE, 0);
        let t = thread::spawn(move || s.claim(5).is_some() as u32);
        let won = s.claim(5).is_some() as u32 + t.join().unwrap();
        assert_eq!(won, 1);
        let st = s.state();
        assert_eq!((st.is_running(), st.pins()), (true, 1));
    });
}

// The runner's one-CAS finish (`finish_alone`) vs a waiter pinning the
// job and a cancel that stops it: the fast finish happens only while
// the runner's claim is the one pin and the job was not stopped; else
// the runner takes `finish` as `ThisThread::finish` does. Either way the
// slot is freed exactly once, never while the waiter holds its pin,
// and the job fails exactly when the cancel stopped it first.
#[test]
fn finish_alone_races_a_pin_and_a_cancel() {
    loom::model(|| {
        let s = slot_in(RUNNING, 1);
        let waiter = thread::spawn(move || {
            if s.pin(5).is_none() {
                return 0;
            }
            let st = s.state();
            assert_eq!(st.generation(), 5, "a pin holds the generation");
            matches!(s.unpin(), Unpinned::Freed) as u32
        });
        let canceller = thread::spawn(move || {
            let out = s.cancel(5, true);
            let freed = out == Cancel::Started && matches!(s.unpin(), Unpinned::Freed);
            (out, freed as u32)
        });
        // A scheduling point, so that the waiter and the canceller
        // also get to act before the runner's first load (loom does not
        // switch threads between a spawn and the spawner's next
        // atomic access).
        thread::yield_now();
        let (failed, mut freed) = if s.finish_alone() {
            (false, 1)
        } else {
            let (flags, (_, dropped, un)) = match s.finish(0) {
                Some(r) => (0, r),
                None => (FAILED, s.finish(FAILED).expect("FAILED is never refused")),
            };
            let un = if dropped { un } else { s.unpin() };
            (flags != 0, matches!(un, Unpinned::Freed) as u32)
        };
        freed += waiter.join().unwrap();
        let (out, f) = canceller.join().unwrap();
        freed += f;
        assert_eq!(freed, 1, "freed exactly once");
        assert_eq!(failed, out == Cancel::Started, "fails iff stopped first");
        let st = s.state();
        assert_eq!((st.generation(), st.is_free(), st.pins()), (6, true, 0));
    });
}

// Cancel vs release + claim + finish: a thread cancels a waiting job
// while its last dependency finishes and a worker claims and runs it.
// Whatever the interleaving, exactly one party owns the closure (the
// worker runs it, or the canceller drops it), a job cancelled after it
// started cannot finish as a success, a cancelled job finishes only
// after the canceller's drop (a scope's borrowed data must outlive
// it), and the slot is freed once.
#[test]
fn cancel_races_release_claim_and_finish() {
    use loom::sync::atomic::AtomicBool;
    use loom::sync::Arc;
    // Release (if not deferred), claim and finish as a worker does;
    // `None` when there was nothing to run.
    fn release_and_run(s: &Slot, dropped: &AtomicBool) -> Option<(bool, u64)> {
        s.release()?;
        let claimed = s.claim(5)?;
        // A CANCELLED claim skips the closure and fails (run_claimed).
        let ran = !claimed.is_cancelled();
        if !ran {
            assert!(
                dropped.load(Ordering::Acquire),
                "a cancelled job is claimed only after the canceller's drop"
            );
        }
        let first = if ran { 0 } else { FAILED };
        let (flags, (_, claim_dropped, _)) = match s.finish(first) {
            Some(r) => (first, r),
            // STOP: cancelled while it ran; it must fail instead.
            None => (FAILED, s.finish(FAILED).expect("FAILED is never refused")),
        };
        if !claim_dropped {
            s.unpin();
        }
        Some((ran, flags))
    }
    loom::model(|| {
        let s = slot_in(WAITING, 0);
        let dropped = Arc::new(AtomicBool::new(false));
        let d = dropped.clone();
        let t = thread::spawn(move || release_and_run(s, &d));
        let outcome = s.cancel(5, true);
        let mut mine = None;
        match outcome {
            Cancel::Claimed => {
                // We own the closure and the claim: finish it, failed.
                dropped.store(true, Ordering::Release);
                let (_, claim_dropped, _) = s.finish(FAILED).expect("FAILED is never refused");
                if !claim_dropped {
                    s.unpin();
                }
            }
            Cancel::Waiting => {
                assert!(s.state().is_waiting());
                // The drop of the closure; then the release, if the
                // worker's was left to us.
                dropped.store(true, Ordering::Release);
                if s.end_cancel_drop() {
                    mine = release_and_run(s, &dropped);
                    assert!(mine.is_some(), "the release left to us runs it");
                }
            }
            _ => {}
        }
        let worker = t.join().unwrap().or(mine);
        match (outcome, worker) {
            (Cancel::Waiting, Some((ran, flags))) => {
                assert!(!ran, "the worker saw the cancel and did not run it");
                assert_eq!(flags, FAILED);
            }
            (Cancel::Claimed, None) => {}
            (Cancel::Started, Some((ran, flags))) => {
                assert!(ran);
                assert_eq!(flags, FAILED, "cancelled after it started: fails");
            }
            (Cancel::No, Some((ran, flags))) => {
                assert!(ran);
                assert_eq!(flags, 0, "finished before the cancel: a success");
            }
            other => panic!("impossible outcome {other:?}"),
        }
        if matches!(outcome, Cancel::Waiting | Cancel::Started) {
            s.unpin();
        }
        let st = s.state();
        assert!(st.is_free(), "freed exactly once: {st:?}");
        assert_eq!((st.generation(), st.pins()), (6, 0));
    });
}
