//! `JobSystem::handle_from_bits` (the C API's way back from a handle's
//! bits): a real handle comes back whole; anything else is refused with
//! `ForeignHandle` before any slot is read, never UB and never a hang.

use jobsys::{HandleBits, JobError, JobSystem};

fn system(workers: usize) -> JobSystem {
    JobSystem::builder().workers(workers).build().unwrap()
}

/// Proves: the bits of a live handle give back the same handle (it can be
/// waited on, used as a dependency and cancelled); a finished one whose
/// slot was reused reads complete, or its failure.
#[test]
fn real_handles_come_back_whole_live_or_stale() {
    let js = system(1);
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let h = js.schedule(move || {
        let _ = rx.recv();
    });
    let back = js.handle_from_bits(h.to_bits()).expect("a live handle");
    assert_eq!(back, h);
    assert!(!js.is_complete(back));
    let after = js.schedule_after(&[back], || {});
    tx.send(()).unwrap();
    js.complete(after);
    assert!(js.is_complete(back));
    // Reuse its slot many times over: the old bits still read complete.
    for _ in 0..10_000 {
        js.complete(js.schedule(|| {}));
    }
    let stale = js.handle_from_bits(h.to_bits()).expect("a stale handle");
    assert!(js.is_complete(stale));
    assert!(js.try_complete(stale).is_ok());
    // A failed one keeps its failure.
    let bad = js.job().name("bad").schedule(|| panic!("boom"));
    let _ = js.try_complete(bad);
    let back = js.handle_from_bits(bad.to_bits()).unwrap();
    assert!(matches!(js.try_complete(back), Err(JobError::Panicked(_))));
}

/// Proves: zeroed, random, misaligned, out-of-page and future-generation
/// bits are refused as `Invalid`, other systems' as `Foreign`.
#[test]
fn forged_bits_are_refused() {
    let js = system(1);
    let other = system(0);
    let h = js.schedule(|| {});
    js.complete(h);
    let [addr, tail] = h.to_bits();
    let gen = tail as u32;
    let sys = tail >> 32;
    let refused_as = |bits: [u64; 2], why: HandleBits, what: &str| {
        assert_eq!(
            js.handle_from_bits(bits).err(),
            Some(why),
            "{what}: {bits:x?}"
        );
    };
    let refused = |bits: [u64; 2], what: &str| refused_as(bits, HandleBits::Invalid, what);
    refused_as([0, 0], HandleBits::Foreign, "zero (system 0)");
    refused([0, tail], "address zero");
    refused(
        [addr, (sys << 32) | u64::from(gen.wrapping_add(1000))],
        "a future generation",
    );
    refused([addr + 1, tail], "between slots");
    refused([addr + 8, tail], "inside a slot");
    refused([addr ^ (1 << 40), tail], "outside every page");
    refused_as(
        [addr, ((sys + 1) << 32) | u64::from(gen)],
        HandleBits::Foreign,
        "another system's id",
    );
    let oh = other.schedule(|| {});
    other.complete(oh);
    refused_as(oh.to_bits(), HandleBits::Foreign, "another system's handle");
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for _ in 0..100_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let bits = [x, (sys << 32) | (x >> 40)];
        if bits[0] != addr {
            refused(bits, "random");
        }
    }
    // Still fine.
    js.complete(js.schedule(|| {}));
}

/// Proves: a dropped system's handle is refused by the next system, even
/// one that reuses its memory.
#[test]
fn a_dropped_systems_handles_are_refused_by_the_next() {
    let bits = {
        let js = system(0);
        let h = js.schedule(|| {});
        js.complete(h);
        h.to_bits()
    };
    let js = system(0);
    js.complete(js.schedule(|| {}));
    assert_eq!(js.handle_from_bits(bits).err(), Some(HandleBits::Foreign));
}

/// Proves: the thread's last checked page (which spares the page-set probe)
/// never lets bad bits through: with the page of a live handle just checked
/// on this thread, bits between its slots, past its last slot, one page
/// further and of another system are still refused, by `handle_from_bits`
/// and by `try_complete_bits` (the C API's `jobsys_complete`); the same
/// bits from a thread whose cache holds nothing are refused the same way;
/// and 5,000 live handles (pages of slots) all come back.
#[test]
fn the_checked_page_cache_refuses_what_the_set_refuses() {
    let js = system(0);
    // Enough live jobs to fill several pages of slots.
    let hs: Vec<_> = (0..5_000).map(|_| js.schedule(|| {})).collect();
    for &h in &hs {
        assert_eq!(js.handle_from_bits(h.to_bits()), Ok(h));
    }
    let h = hs[hs.len() / 2];
    let [addr, tail] = h.to_bits();
    let sys = tail >> 32;
    let check = |js: &JobSystem| {
        // The page of `h` is the thread's checked page now.
        assert_eq!(js.handle_from_bits([addr, tail]), Ok(h));
        for (bits, what) in [
            ([addr + 1, tail], "between slots"),
            ([addr + 24, tail], "inside a slot"),
            ([addr + (1 << 24), tail], "far past the page"),
            (
                [addr, ((sys + 1) << 32) | (tail & 0xFFFF_FFFF)],
                "another system",
            ),
            (
                [addr, (sys << 32) | ((tail as u32).wrapping_add(7) as u64)],
                "a future generation",
            ),
        ] {
            let want = if what == "another system" {
                HandleBits::Foreign
            } else {
                HandleBits::Invalid
            };
            assert_eq!(js.handle_from_bits(bits).err(), Some(want), "{what}");
            assert_eq!(js.try_complete_bits(bits).err(), Some(want), "{what}");
        }
    };
    check(&js);
    std::thread::scope(|s| {
        s.spawn(|| check(&js));
    });
    for &h in hs.iter().rev() {
        assert!(matches!(js.try_complete_bits(h.to_bits()), Ok(Ok(()))));
    }
}
