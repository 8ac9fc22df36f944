//! Loom models of the deque, driving the real code with loom's atomics
//! (`crate::sync`); under loom a new deque holds 2 entries and `steal_into`
//! batches (up to 2 more) from 3 entries, so growth and batches fit.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p jobsys
//! --lib --release deque::loom_tests` (a few seconds for all nine). With
//! `DEQUE_MUTANT=<name>` set, the step of that name (`mutant`/`ord` in
//! deque.rs) is weakened, and these models fail (checked 2026-11-24;
//! take_back_without_the_empty_check 2026-11-25):
//!
//! | mutant | what it breaks | models that fail |
//! | --- | --- | --- |
//! | `pop-no-last-cas` | the owner takes the last entry without its CAS | all but steal_after_pops |
//! | `pop-no-fence` | no fence between the pop's `back` store and `front` load | pop_without_cas_vs_steal, two_thieves, both batch models |
//! | `steal-no-fence` | no fence between a steal's `front` and `back` loads | pop_without_cas_vs_steal, two_thieves, batch_steal_vs_steal_and_pop |
//! | `push-relaxed` | `back` stored Relaxed by a push | pop_without_cas_vs_steal, steal_after_pops, take_back (a thief takes an unwritten cell) |
//! | `grow-relaxed` | the new buffer published Relaxed | growth_while_a_thief_reads, steal_after_pops (loom: causality violation) |
//! | `steal-buffer-relaxed` | the thief loads the buffer pointer Relaxed | the same two |
//! | `batch-no-fence` | no fence before each further entry of a batch | both batch models |
//! | `batch-one-cas` | one CAS for the whole batch | both batch models (an entry taken twice) |
//!
//! Not caught: a pop's `back` stores weakened to Relaxed (as in Lê et al.).
//! `steal_after_pops_sees_the_pushes_before_them` passes with them; loom
//! does not produce the execution C++20 allows there (a thief's Acquire
//! load reading a pop's Relaxed store no longer synchronizes with the
//! pushes before it; deque.rs, `Local::pop`), so the argument is on paper.
//!
//! Every model checks the same thing: each pushed entry is taken exactly
//! once (by a pop, a steal, or a batch moved into a thief's deque and
//! popped there), and none is lost.

use super::*;
use loom::thread;

fn e(i: u32) -> Entry {
    Entry {
        slot: NonNull::dangling(),
        gen: i,
    }
}

fn drain(l: &Local) -> Vec<u32> {
    std::iter::from_fn(|| l.pop()).map(|e| e.gen).collect()
}

/// Every one of `0..n` exactly once.
fn check(mut taken: Vec<u32>, n: u32) {
    taken.sort_unstable();
    assert_eq!(taken, (0..n).collect::<Vec<_>>(), "each entry taken once");
}

fn thief(s: Stealer, tries: usize) -> thread::JoinHandle<Vec<u32>> {
    thread::spawn(move || {
        (0..tries)
            .filter_map(|_| s.steal())
            .map(|e| e.gen)
            .collect()
    })
}

/// The owner pops its only entry while a thief steals it: the owner's CAS
/// on `front` against the thief's.
#[test]
fn last_entry_race() {
    loom::model(|| {
        let (l, s) = new();
        l.push(e(0));
        let t = thief(s, 1);
        let mut taken: Vec<u32> = l.pop().map(|e| e.gen).into_iter().collect();
        taken.extend(t.join().unwrap());
        taken.extend(drain(&l));
        check(taken, 1);
    });
}

/// Push, pop and push again while a thief steals: the pop of a
/// non-last entry takes no CAS, so the fences must keep the thief off it.
#[test]
fn pop_without_cas_vs_steal() {
    loom::model(|| {
        let (l, s) = new();
        l.push(e(0));
        let t = thief(s, 2);
        l.push(e(1));
        let mut taken: Vec<u32> = l.pop().map(|e| e.gen).into_iter().collect();
        taken.extend(t.join().unwrap());
        taken.extend(drain(&l));
        check(taken, 2);
    });
}

/// The owner fills its 2-entry buffer and grows it while a thief reads
/// (a thief may hold the old buffer, or find the new one).
#[test]
fn growth_while_a_thief_reads() {
    loom::model(|| {
        let (l, s) = new();
        l.push(e(0));
        let t = thief(s, 1);
        l.push(e(1));
        l.push(e(2));
        let mut taken = drain(&l);
        taken.extend(t.join().unwrap());
        taken.extend(drain(&l));
        check(taken, 3);
    });
}

/// Two thieves and the owner's pops over two entries.
#[test]
fn two_thieves_and_the_owner() {
    loom::model(|| {
        let (l, s) = new();
        l.push(e(0));
        l.push(e(1));
        let t1 = thief(s.clone(), 1);
        let t2 = thief(s, 1);
        let mut taken: Vec<u32> = l.pop().map(|e| e.gen).into_iter().collect();
        taken.extend(t1.join().unwrap());
        taken.extend(t2.join().unwrap());
        taken.extend(drain(&l));
        check(taken, 2);
    });
}

/// A batch steal (`steal_into`: one entry plus up to two moved into the
/// thief's own deque, one CAS each) while the owner pops from the back
/// without a CAS.
#[test]
fn batch_steal_vs_pops() {
    loom::model(|| {
        let (l, s) = new();
        for i in 0..3 {
            l.push(e(i));
        }
        let t = thread::spawn(move || {
            let (dest, _ds) = new();
            let mut got: Vec<u32> = s.steal_into(&dest).map(|e| e.gen).into_iter().collect();
            got.extend(drain(&dest));
            got
        });
        let mut taken: Vec<u32> = l.pop().map(|e| e.gen).into_iter().collect();
        taken.extend(l.pop().map(|e| e.gen));
        taken.extend(t.join().unwrap());
        taken.extend(drain(&l));
        check(taken, 3);
    });
}

/// A batch steal and a plain steal race each other and a pop.
#[test]
fn batch_steal_vs_steal_and_pop() {
    loom::model(|| {
        let (l, s) = new();
        for i in 0..3 {
            l.push(e(i));
        }
        let s2 = s.clone();
        let t1 = thread::spawn(move || {
            let (dest, _ds) = new();
            let mut got: Vec<u32> = s.steal_into(&dest).map(|e| e.gen).into_iter().collect();
            got.extend(drain(&dest));
            got
        });
        let t2 = thief(s2, 1);
        let mut taken: Vec<u32> = l.pop().map(|e| e.gen).into_iter().collect();
        taken.extend(t1.join().unwrap());
        taken.extend(t2.join().unwrap());
        taken.extend(drain(&l));
        check(taken, 3);
    });
}

/// The thief starts on an empty deque; the owner pushes (growing the
/// buffer) and pops, so the `back` a thief reads may come from a pop's
/// store rather than a push's: that store must also publish the cells and
/// the buffer written before it (C++20 release sequences no longer carry
/// a thread's later plain stores).
#[test]
fn steal_after_pops_sees_the_pushes_before_them() {
    loom::model(|| {
        let (l, s) = new();
        let t = thief(s, 1);
        for i in 0..3 {
            l.push(e(i));
        }
        let mut taken: Vec<u32> = l.pop().map(|e| e.gen).into_iter().collect();
        taken.extend(t.join().unwrap());
        taken.extend(drain(&l));
        check(taken, 3);
    });
}

/// `join`'s take-back (`pop_fenced`, no empty check) against a thief: the
/// owner pushes, a thief steals, and the owner pops without first looking
/// whether the deque is empty. If the thief emptied it, the pop must give
/// nothing and restore `back`, so that later pushes and steals still take
/// each entry once.
#[test]
fn take_back_without_the_empty_check() {
    loom::model(|| {
        let (l, s) = new();
        l.push(e(0));
        let t = thief(s.clone(), 1);
        let mut taken: Vec<u32> = l.pop_fenced().map(|e| e.gen).into_iter().collect();
        taken.extend(l.pop_fenced().map(|e| e.gen));
        l.push(e(1));
        let t2 = thief(s, 1);
        taken.extend(l.pop_fenced().map(|e| e.gen));
        taken.extend(t.join().unwrap());
        taken.extend(t2.join().unwrap());
        taken.extend(drain(&l));
        check(taken, 2);
    });
}

/// The owner looks at its top (`pop_if`, as a waiter does) while a thief
/// steals from the front: the pop returns the entry it looked at or
/// nothing (never one below it, never one a thief took), and every entry
/// is taken once.
#[test]
fn pop_after_a_look_returns_the_entry_looked_at_or_nothing() {
    loom::model(|| {
        let (l, s) = new();
        l.push(e(0));
        l.push(e(1));
        let t = thief(s, 2);
        let mut taken = Vec::new();
        let mut seen = None;
        if let Some(got) = l.pop_if(|top| {
            seen = Some(top.gen);
            true
        }) {
            assert_eq!(Some(got.gen), seen, "a pop after a look took another entry");
            taken.push(got.gen);
        }
        // A refused look leaves the deque as it was.
        assert!(l.pop_if(|_| false).is_none());
        taken.extend(t.join().unwrap());
        taken.extend(drain(&l));
        check(taken, 2);
    });
}
