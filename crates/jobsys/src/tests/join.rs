//! `join`: both sides run, stolen or not, inline without workers, each closure and result dropped once.

use super::*;

#[test]
fn join_runs_both_sides_even_when_stolen() {
    let js = system(1);
    fn sum(js: &JobSystem, lo: u64, hi: u64) -> u64 {
        if hi - lo <= 2 {
            return (lo..hi).sum();
        }
        let mid = (lo + hi) / 2;
        let (a, b) = js.join(|| sum(js, lo, mid), || sum(js, mid, hi));
        a + b
    }
    let top = n(2000, 32) as u64;
    assert_eq!(sum(&js, 0, top), top * (top - 1) / 2);
}

/// With no workers, `join` runs `b` then `a` on the calling thread without
/// the deque (`join.rs`, `join_inline`): the order of the deque path when
/// it takes `a` back, and its panic rule: both run, and when both panic,
/// `a`'s payload comes out; when only `b` panics, `a` still ran.
#[test]
fn join_without_workers_runs_b_then_a_here() {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    let js = system(0);
    let me = std::thread::current().id();
    let order = std::sync::Mutex::new(Vec::new());
    let log = |side| {
        order
            .lock()
            .unwrap()
            .push((side, std::thread::current().id()))
    };
    let (x, y) = js.join(
        || {
            log('a');
            1
        },
        || {
            log('b');
            2
        },
    );
    assert_eq!((x, y), (1, 2));
    assert_eq!(*order.lock().unwrap(), [('b', me), ('a', me)]);
    let message = |r: std::thread::Result<_>| match r {
        Err(p) => p.downcast_ref::<&str>().copied().unwrap_or("?"),
        Ok(()) => "no panic",
    };
    let both = catch_unwind(AssertUnwindSafe(|| {
        js.join(|| panic!("a panics"), || -> () { panic!("b panics") })
    }));
    assert_eq!(message(both.map(|_: ((), ())| ())), "a panics");
    let a_ran = AtomicUsize::new(0);
    let only_b = catch_unwind(AssertUnwindSafe(|| {
        js.join(
            || {
                a_ran.fetch_add(1, Ordering::SeqCst);
            },
            || -> () { panic!("b panics") },
        )
    }));
    assert_eq!(message(only_b.map(|_| ())), "b panics");
    assert_eq!(
        a_ran.load(Ordering::SeqCst),
        1,
        "a ran once after b panicked"
    );
    let only_a = catch_unwind(AssertUnwindSafe(|| {
        js.join(|| -> () { panic!("a panics") }, || log('b'))
    }));
    assert_eq!(message(only_a.map(|_| ())), "a panics");
    assert_eq!(order.lock().unwrap().len(), 3, "b ran before a panicked");
}

/// Counts its drops (`join`'s closures and results carry no "taken" flag:
/// `join.rs`, `StackJob`).
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// `b`'s wait for `a` to start on the worker, bounded (Miri's scheduler
/// need not run the worker soon). Either way the assertions hold; the
/// bound only decides whether `a` was stolen.
fn wait_a_while_for(started: &std::sync::atomic::AtomicBool, stolen: bool) {
    for _ in 0..n(1_000_000, 2_000) {
        if !stolen || started.load(Ordering::SeqCst) {
            return;
        }
        std::thread::yield_now();
    }
}

/// Each closure of a `join` and each result is dropped exactly once,
/// whether the joiner takes `a` back (0 workers) or a worker runs it (1
/// worker, `b` waits until `a` started), and when `b` panics (then `a`'s
/// result is dropped by the unwinding join). Under Miri this also checks
/// that `a`'s result is read only after the thief wrote it.
#[test]
fn join_drops_each_closure_and_result_once() {
    for workers in [0, 1] {
        let js = system(workers);
        let stolen = workers == 1;
        let drops = Arc::new(AtomicUsize::new(0));
        let started = std::sync::atomic::AtomicBool::new(false);
        let (in_a, in_b) = (Counted(drops.clone()), Counted(drops.clone()));
        let (out_a, out_b) = (drops.clone(), drops.clone());
        let (ra, rb) = js.join(
            || {
                started.store(true, Ordering::SeqCst);
                drop(in_a);
                Counted(out_a)
            },
            || {
                wait_a_while_for(&started, stolen);
                drop(in_b);
                Counted(out_b)
            },
        );
        assert_eq!(
            drops.load(Ordering::SeqCst),
            2,
            "both closures' captures, once"
        );
        drop((ra, rb));
        assert_eq!(drops.load(Ordering::SeqCst), 4, "both results, once");

        // `b` panics: `a` still runs, and its result is dropped once.
        let drops = Arc::new(AtomicUsize::new(0));
        let started = std::sync::atomic::AtomicBool::new(false);
        let out_a = drops.clone();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            js.join(
                || {
                    started.store(true, Ordering::SeqCst);
                    Counted(out_a)
                },
                || {
                    wait_a_while_for(&started, stolen);
                    panic!("expected test panic")
                },
            )
        }));
        assert!(r.is_err());
        assert!(started.load(Ordering::SeqCst), "a ran");
        assert_eq!(drops.load(Ordering::SeqCst), 1, "a's result, once");
    }
}
