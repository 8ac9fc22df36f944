//! parallel_for: every index exactly once for many sizes, batches, forms and
//! worker counts; piece shapes; ranges not starting at 0; Batch::Fixed(0);
//! borrowing loops in a scope; closures dropped once.

mod common;

use common::{expect_panic, watchdog};
use jobsys::{Batch, JobSystem};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

const SIZES: [usize; 6] = [0, 1, 63, 64, 65, 100_003];
const BATCHES: [Batch; 5] = [
    Batch::Auto,
    Batch::Fixed(1),
    Batch::Fixed(7),
    Batch::Fixed(64),
    Batch::Fixed(1000),
];

/// Run one loop over `range` and check every index was visited exactly
/// once (and, for the chunked form, that chunks stay inside the range).
fn check_coverage(js: &JobSystem, range: Range<usize>, batch: Batch, chunked: bool) {
    let len = range.len();
    let start = range.start;
    let hits: Arc<Vec<AtomicU32>> = Arc::new((0..len).map(|_| AtomicU32::new(0)).collect());
    let bad = Arc::new(Mutex::new(Vec::<String>::new()));
    let (h2, b2) = (hits.clone(), bad.clone());
    let r2 = range.clone();
    let h = if chunked {
        js.job()
            .parallel_for_chunked(range.clone(), batch, move |r: Range<usize>| {
                if r.is_empty() || r.start < r2.start || r.end > r2.end {
                    b2.lock()
                        .unwrap()
                        .push(format!("chunk {r:?} outside {r2:?}"));
                    return;
                }
                for i in r {
                    h2[i - start].fetch_add(1, SeqCst);
                }
            })
    } else {
        js.parallel_for(range.clone(), batch, move |i| {
            if !r2.contains(&i) {
                b2.lock().unwrap().push(format!("index {i} outside {r2:?}"));
                return;
            }
            h2[i - start].fetch_add(1, SeqCst);
        })
    };
    js.complete(h);
    assert!(js.is_complete(h));
    let label = format!(
        "{range:?} {batch:?} chunked={chunked} workers={}",
        js.workers()
    );
    let bad = bad.lock().unwrap();
    assert!(bad.is_empty(), "{label}: {bad:?}");
    if let Some(i) = hits.iter().position(|c| c.load(SeqCst) != 1) {
        panic!(
            "{label}: index {} ran {} times",
            start + i,
            hits[i].load(SeqCst)
        );
    }
}

fn coverage_for_workers(workers: usize) {
    let js = JobSystem::builder().workers(workers).build().unwrap();
    for size in SIZES {
        for batch in BATCHES {
            for chunked in [false, true] {
                check_coverage(&js, 0..size, batch, chunked);
            }
        }
    }
}

#[test]
fn every_index_runs_exactly_once_workers_0() {
    watchdog(60, || coverage_for_workers(0));
}

#[test]
fn every_index_runs_exactly_once_workers_1() {
    watchdog(60, || coverage_for_workers(1));
}

#[test]
fn every_index_runs_exactly_once_workers_3() {
    watchdog(60, || coverage_for_workers(3));
}

#[test]
fn ranges_not_starting_at_zero_are_covered_exactly_once() {
    watchdog(60, || {
        for workers in [0, 1, 3] {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            for batch in BATCHES {
                for chunked in [false, true] {
                    check_coverage(&js, 10..1000, batch, chunked);
                    check_coverage(&js, 999..1000, batch, chunked);
                    check_coverage(&js, 1_000_000..1_000_065, batch, chunked);
                }
            }
        }
    });
}

/// A range ending at usize::MAX: computing the end of the last piece must
/// not overflow (debug: panic inside the library; release: indices lost).
#[test]
fn ranges_near_usize_max_are_covered_exactly_once() {
    watchdog(20, || {
        for workers in [0, 1] {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            for batch in [Batch::Fixed(64), Batch::Fixed(7), Batch::Auto] {
                for chunked in [false, true] {
                    check_coverage(&js, usize::MAX - 100..usize::MAX, batch, chunked);
                }
            }
        }
    });
}

/// Batch::Fixed(n): "pieces of exactly this many indices (the last may be
/// shorter)", and the chunked closure "gets each piece as a Range".
#[test]
fn chunked_pieces_have_the_fixed_batch_size() {
    for workers in [0, 1, 3] {
        let js = JobSystem::builder().workers(workers).build().unwrap();
        for (range, b) in [
            (0..1000, 7),
            (10..1000, 64),
            (0..100_003, 1000),
            (5..200, 1),
        ] {
            let chunks = Arc::new(Mutex::new(Vec::<Range<usize>>::new()));
            let c2 = chunks.clone();
            let h = js
                .job()
                .parallel_for_chunked(range.clone(), Batch::Fixed(b), move |r| {
                    c2.lock().unwrap().push(r);
                });
            js.complete(h);
            let mut chunks = chunks.lock().unwrap().clone();
            chunks.sort_by_key(|r| r.start);
            let expected: Vec<Range<usize>> = (range.start..range.end)
                .step_by(b)
                .map(|s| s..(s + b).min(range.end))
                .collect();
            assert_eq!(
                chunks.len(),
                expected.len(),
                "workers {workers}, {range:?} Fixed({b}): first chunks {:?}",
                &chunks[..chunks.len().min(5)]
            );
            assert_eq!(chunks, expected, "workers {workers}, {range:?} Fixed({b})");
        }
    }
}

/// Auto batches and the chunked form: chunks tile the range without gaps
/// or overlaps.
#[test]
fn auto_chunks_tile_the_range() {
    for workers in [0, 1, 3] {
        let js = JobSystem::builder().workers(workers).build().unwrap();
        for range in [0..1, 0..100, 3..100_003] {
            let chunks = Arc::new(Mutex::new(Vec::<Range<usize>>::new()));
            let c2 = chunks.clone();
            let h = js
                .job()
                .parallel_for_chunked(range.clone(), Batch::Auto, move |r| {
                    c2.lock().unwrap().push(r);
                });
            js.complete(h);
            let mut chunks = chunks.lock().unwrap().clone();
            chunks.sort_by_key(|r| r.start);
            assert_eq!(chunks.first().map(|r| r.start), Some(range.start));
            assert_eq!(chunks.last().map(|r| r.end), Some(range.end));
            for w in chunks.windows(2) {
                assert_eq!(w[0].end, w[1].start, "gap or overlap: {w:?}");
            }
            assert!(chunks.iter().all(|r| !r.is_empty()));
        }
    }
}

#[test]
fn batch_fixed_zero_panics_with_a_clear_message() {
    let js = JobSystem::builder().workers(1).build().unwrap();
    let check = |msg: String| {
        assert!(
            msg.contains("Fixed(0)") && msg.contains("batch"),
            "unclear message: {msg}"
        );
    };
    check(expect_panic(|| {
        js.parallel_for(0..10, Batch::Fixed(0), |_| {})
    }));
    check(expect_panic(|| {
        js.job()
            .parallel_for_chunked(0..10, Batch::Fixed(0), |_| {})
    }));
    let dep = js.schedule(|| {});
    check(expect_panic(|| {
        js.job()
            .after(&[dep])
            .parallel_for(0..10, Batch::Fixed(0), |_| {})
    }));
    check(expect_panic(|| {
        js.job()
            .after(&[dep])
            .parallel_for_chunked(0..10, Batch::Fixed(0), |_| {})
    }));
    check(expect_panic(|| {
        js.scope(|s| {
            s.parallel_for(0..10, Batch::Fixed(0), |_| {});
        })
    }));
    // The system is unharmed.
    let n = Arc::new(AtomicUsize::new(0));
    let n2 = n.clone();
    let h = js.parallel_for(0..10, Batch::Fixed(1), move |_| {
        n2.fetch_add(1, SeqCst);
    });
    js.complete(h);
    js.complete(dep);
    assert_eq!(n.load(SeqCst), 10);
}

#[test]
fn loops_after_dependencies_start_after_them() {
    for workers in [0, 1, 3] {
        let js = JobSystem::builder().workers(workers).build().unwrap();
        let ready = Arc::new(AtomicBool::new(false));
        let early = Arc::new(AtomicUsize::new(0));
        let r = ready.clone();
        let a = js.schedule(move || {
            std::thread::sleep(std::time::Duration::from_millis(2));
            r.store(true, SeqCst);
        });
        let (r1, e1) = (ready.clone(), early.clone());
        let p = js
            .job()
            .after(&[a])
            .parallel_for(0..1000, Batch::Fixed(10), move |_| {
                if !r1.load(SeqCst) {
                    e1.fetch_add(1, SeqCst);
                }
            });
        let (r2, e2) = (ready.clone(), early.clone());
        let q = js
            .job()
            .after(&[a, p])
            .parallel_for_chunked(0..1000, Batch::Auto, move |_| {
                if !r2.load(SeqCst) {
                    e2.fetch_add(1, SeqCst);
                }
            });
        js.complete(q);
        assert!(js.is_complete(p));
        assert_eq!(early.load(SeqCst), 0, "workers {workers}");
    }
}

/// Closures bigger than a slot are boxed; small ones are stored inline.
/// Both run every index once and are dropped exactly once.
#[test]
fn loop_closures_inline_and_boxed_run_and_drop_once() {
    struct Guard(Arc<AtomicUsize>);
    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.fetch_add(1, SeqCst);
        }
    }
    for workers in [0, 1, 3] {
        let js = JobSystem::builder().workers(workers).build().unwrap();
        let drops = Arc::new(AtomicUsize::new(0));
        let sum = Arc::new(AtomicU64::new(0));
        // Inline: a guard and an Arc.
        let (g, s) = (Guard(drops.clone()), sum.clone());
        let h = js.parallel_for(0..1000, Batch::Fixed(3), move |i| {
            let _ = &g;
            s.fetch_add(i as u64, SeqCst);
        });
        js.complete(h);
        // Boxed: a 512-byte table.
        let table = [3u64; 64];
        let (g, s) = (Guard(drops.clone()), sum.clone());
        let h = js
            .job()
            .parallel_for_chunked(0..1000, Batch::Fixed(3), move |r| {
                let _ = &g;
                for i in r {
                    s.fetch_add(table[i % 64], SeqCst);
                }
            });
        js.complete(h);
        assert_eq!(sum.load(SeqCst), 999 * 1000 / 2 + 3000);
        assert_eq!(drops.load(SeqCst), 2, "workers {workers}");
    }
}

/// A scope loop borrows an input slice and writes disjoint chunks of an
/// output slice in place through the chunked form.
#[test]
fn scope_chunked_loop_writes_disjoint_chunks_of_a_borrowed_slice() {
    for workers in [0, 1, 3] {
        watchdog(60, move || {
            let js = JobSystem::builder().workers(workers).build().unwrap();
            const B: usize = 97;
            let input: Vec<u64> = (0..100_003u64).collect();
            let mut output = vec![0u64; input.len()];
            {
                // One &mut chunk per piece, each handed out at most once.
                let chunks: Vec<Mutex<Option<&mut [u64]>>> =
                    output.chunks_mut(B).map(|c| Mutex::new(Some(c))).collect();
                let input = &input;
                js.scope(|s| {
                    s.job()
                        .parallel_for_chunked(0..input.len(), Batch::Fixed(B), |r| {
                            // Chunks may span several pieces; take each one.
                            assert_eq!(r.start % B, 0);
                            let mut i = r.start;
                            while i < r.end {
                                let c = chunks[i / B]
                                    .lock()
                                    .unwrap()
                                    .take()
                                    .expect("piece handed out twice");
                                for (k, x) in c.iter_mut().enumerate() {
                                    *x = input[i + k] * 3 + 1;
                                }
                                i += c.len();
                            }
                            assert_eq!(i, r.end);
                        });
                });
                assert!(chunks.iter().all(|c| c.lock().unwrap().is_none()));
            }
            assert!(output.iter().zip(&input).all(|(o, i)| *o == i * 3 + 1));
        });
    }
}

/// Scope loops (per index) over borrowed data, a nested loop depending on
/// the first through `job().after(..).parallel_for` inside the scope.
#[test]
fn scope_loops_borrow_the_callers_data() {
    for workers in [0, 1, 3] {
        let js = JobSystem::builder().workers(workers).build().unwrap();
        let data: Vec<u32> = (0..10_000).collect();
        let squares: Vec<AtomicU64> = (0..data.len()).map(|_| AtomicU64::new(0)).collect();
        let total = AtomicU64::new(0);
        js.scope(|s| {
            let a = s.parallel_for(0..data.len(), Batch::Auto, |i| {
                squares[i].store(u64::from(data[i]) * u64::from(data[i]), SeqCst);
            });
            s.job()
                .after(&[a])
                .parallel_for(0..data.len(), Batch::Fixed(100), |i| {
                    total.fetch_add(squares[i].load(SeqCst), SeqCst);
                });
        });
        let expected: u64 = data.iter().map(|&x| u64::from(x) * u64::from(x)).sum();
        assert_eq!(total.load(SeqCst), expected);
    }
}

/// Thousands of small loops in a row, completed one by one, while a worker
/// keeps stealing their (mostly already finished) entries.
#[test]
fn many_small_loops_in_a_row_do_not_overflow_a_worker_stack() {
    watchdog(60, || {
        // More workers than cores: workers keep stealing stale entries.
        let js = JobSystem::builder().workers(3).build().unwrap();
        let n = Arc::new(AtomicUsize::new(0));
        for _ in 0..100_000 {
            let n2 = n.clone();
            let h = js.parallel_for(0..64, Batch::Fixed(1), move |_| {
                n2.fetch_add(1, SeqCst);
            });
            js.complete(h);
        }
        assert_eq!(n.load(SeqCst), 6_400_000);
    });
}

/// Proves: a thread stuck inside one piece of a `Batch::Auto` loop holds
/// back no other piece (runners claim Auto pieces one at a time): the
/// thread that runs index 0 waits until every index outside index 0's
/// piece has run, and the other threads get there. With guided claims the
/// first runner would hold the next pieces of its chunk too, and they
/// could never run while it waits (the wait gives up after 20 s and the
/// test fails instead of hanging).
#[test]
fn a_stuck_runner_of_an_auto_loop_holds_back_no_other_piece() {
    for workers in [1, 3] {
        let js = JobSystem::builder()
            .workers(workers)
            .follow_cpus(false)
            .build()
            .unwrap();
        // 16 pieces per thread (Batch::Auto), 100 indices each.
        let n = 16 * (workers + 1) * 100;
        let piece = 100;
        let others = Arc::new(AtomicUsize::new(0));
        // The count the stuck runner gave up at (0: it did not).
        let gave_up_at = Arc::new(AtomicUsize::new(0));
        let (o, g) = (others.clone(), gave_up_at.clone());
        let h = js.parallel_for(0..n, Batch::Auto, move |i| {
            if i == 0 {
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
                while o.load(SeqCst) < n - piece {
                    if std::time::Instant::now() > deadline {
                        g.store(o.load(SeqCst) + 1, SeqCst);
                        return;
                    }
                    std::thread::yield_now();
                }
            } else if i >= piece {
                o.fetch_add(1, SeqCst);
            }
        });
        js.complete(h);
        let at = gave_up_at.load(SeqCst);
        assert!(
            at == 0,
            "workers({workers}): pieces of the stuck runner's claim never ran ({} of {} indices)",
            at.saturating_sub(1),
            n - piece
        );
        assert_eq!(others.load(SeqCst), n - piece);
    }
}
