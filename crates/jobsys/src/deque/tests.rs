//! Unit tests of the deque (also run under Miri: small sizes, few threads).

use super::*;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};

/// Entries told apart by generation; the pointer is never dereferenced.
fn e(i: u32) -> Entry {
    Entry {
        slot: NonNull::dangling(),
        gen: i,
    }
}

fn gens(v: impl IntoIterator<Item = Entry>) -> Vec<u32> {
    v.into_iter().map(|e| e.gen).collect()
}

#[test]
fn owner_is_lifo_thieves_are_fifo() {
    let (l, s) = new();
    assert!(l.is_empty() && s.is_empty());
    for i in 0..5 {
        l.push(e(i));
    }
    assert_eq!(l.len(), 5);
    assert!(!s.is_empty());
    assert_eq!(gens(s.steal()), [0]);
    assert_eq!(gens(s.steal()), [1]);
    assert_eq!(gens(std::iter::from_fn(|| l.pop())), [4, 3, 2]);
    assert!(l.pop().is_none() && s.steal().is_none());
    assert!(l.is_empty() && s.is_empty());
}

/// `pop_fenced` (no empty check) on an empty or emptied deque gives nothing
/// and leaves it usable: the next push is popped and stolen normally.
#[test]
fn pop_fenced_on_an_empty_deque() {
    let (l, s) = new();
    assert!(l.pop_fenced().is_none());
    l.push(e(0));
    assert_eq!(gens(s.steal()), [0]);
    assert!(l.pop_fenced().is_none() && l.is_empty());
    l.push(e(1));
    l.push(e(2));
    assert_eq!(gens(l.pop_fenced()), [2]);
    assert_eq!(gens(s.steal()), [1]);
    assert!(l.pop_fenced().is_none() && s.steal().is_none());
    assert!(l.is_empty() && s.is_empty());
}

#[test]
fn pointers_and_generations_round_trip() {
    let words = [0u64; 3];
    let (l, s) = new();
    let es: Vec<Entry> = (0..3)
        .map(|i| Entry {
            slot: NonNull::from(&words[i]).cast::<Slot>(),
            gen: u32::MAX - i as u32,
        })
        .collect();
    for &x in &es {
        l.push(x);
    }
    assert_eq!(s.steal(), Some(es[0]));
    assert_eq!(l.pop(), Some(es[2]));
    assert_eq!(l.pop(), Some(es[1]));
}

#[test]
fn grows_and_keeps_order() {
    let (l, s) = with_capacity(4);
    for i in 0..40 {
        l.push(e(i));
    }
    assert_eq!(l.len(), 40);
    assert_eq!(gens(s.steal()), [0]);
    assert_eq!(
        gens(std::iter::from_fn(|| l.pop())),
        (1..40).rev().collect::<Vec<_>>()
    );
    // 4 -> 8 -> 16 -> 32 -> 64: the old buffers stay linked from the new.
    let mut caps = Vec::new();
    let mut p = l.buf.get();
    while !p.is_null() {
        // SAFETY: buffers live as long as the deque (`Inner::drop`).
        let b = unsafe { &*p };
        caps.push(b.cap());
        p = b.prev;
    }
    assert_eq!(caps, [64, 32, 16, 8, 4]);
}

/// Draining and refilling never shrinks the buffer, and a wrap-around
/// (indices past the capacity, thieves moving `front`) needs no growth.
#[test]
fn wraps_without_growing() {
    let (l, s) = with_capacity(4);
    for round in 0..10u32 {
        for i in 0..4 {
            l.push(e(round * 4 + i));
        }
        assert_eq!(gens(s.steal()), [round * 4]);
        assert_eq!(gens(std::iter::from_fn(|| l.pop())).len(), 3);
    }
    // SAFETY: the current buffer, alive with the deque.
    let buf = unsafe { &*l.buf.get() };
    assert_eq!(buf.cap(), 4);
    assert!(buf.prev.is_null());
}

#[test]
fn steal_into_batches_only_from_long_deques() {
    let (l, s) = new();
    let (dest, _dest_s) = new();
    for i in 0..(BATCH_FROM as u32 - 1) {
        l.push(e(i));
    }
    assert_eq!(gens(s.steal_into(&dest)), [0]);
    assert!(dest.is_empty(), "a short deque gives one entry");
    for i in 100..110 {
        l.push(e(i));
    }
    let before = l.len();
    assert!(before as isize >= BATCH_FROM);
    assert_eq!(gens(s.steal_into(&dest)), [1]);
    assert_eq!(dest.len(), BATCH);
    assert_eq!(l.len(), before - 1 - BATCH);
    // Moved oldest first, so the thief pops the newest of the batch first.
    assert_eq!(gens(dest.pop()), [1 + BATCH as u32]);
}

/// The owner pushes and pops while two thieves steal (one by batches):
/// every entry is taken exactly once, none is lost.
#[test]
fn concurrent_owner_and_two_thieves_take_each_entry_once() {
    let n: u32 = if cfg!(miri) { 300 } else { 100_000 };
    let (l, s) = with_capacity(4);
    let done = AtomicBool::new(false);
    let stolen = AtomicUsize::new(0);
    let mut seen: Vec<u32> = Vec::new();
    let thief = |batch: bool| {
        let (dest, _ds) = new();
        let mut got = Vec::new();
        loop {
            let finished = done.load(SeqCst);
            let hit = if batch {
                s.steal_into(&dest)
            } else {
                s.steal()
            };
            match hit {
                Some(x) => got.push(x.gen),
                None if finished => break,
                None => std::hint::spin_loop(),
            }
            got.extend(gens(std::iter::from_fn(|| dest.pop())));
        }
        stolen.fetch_add(got.len(), SeqCst);
        got
    };
    std::thread::scope(|sc| {
        let t1 = sc.spawn(|| thief(false));
        let t2 = sc.spawn(|| thief(true));
        for i in 0..n {
            l.push(e(i));
            // Pop one in three, and pop down to empty now and then, so the
            // last-entry race and growth both happen.
            if i % 3 == 0 {
                seen.extend(gens(l.pop()));
            }
            if i % 97 == 0 {
                seen.extend(gens(std::iter::from_fn(|| l.pop())));
            }
        }
        seen.extend(gens(std::iter::from_fn(|| l.pop())));
        done.store(true, SeqCst);
        seen.extend(t1.join().unwrap());
        seen.extend(t2.join().unwrap());
    });
    assert_eq!(
        seen.len(),
        n as usize,
        "each entry taken once ({} stolen)",
        stolen.load(SeqCst)
    );
    let unique: HashSet<u32> = seen.iter().copied().collect();
    assert_eq!(unique.len(), n as usize, "no entry taken twice");
}

/// A thief keeps its end after the owner's end is dropped (a context's
/// `Local` and `Stealer` are dropped separately); the buffers live on.
#[test]
fn stealer_outlives_local() {
    let (l, s) = with_capacity(2);
    for i in 0..5 {
        l.push(e(i));
    }
    drop(l);
    let s2 = s.clone();
    drop(s);
    assert_eq!(gens(std::iter::from_fn(|| s2.steal())), [0, 1, 2, 3, 4]);
}
