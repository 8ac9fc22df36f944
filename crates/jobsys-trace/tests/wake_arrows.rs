//! Flow arrows never point back in time, over many real captures.
//!
//! Each capture runs a few bursts that leave the workers idle long enough
//! to park (the default spin is 30 µs) and then wakes them again, with
//! dependencies (release arrows) and a long job the main thread parks on
//! in `complete` (wakes of a waiter). No test here asserts on timings: only
//! on the order of the two ends of each arrow, which the core's recording
//! guarantees (`crates/jobsys/src/trace/mod.rs`, "wake_issued").

use jobsys::JobSystem;
use jobsys_trace::{Capture, ThreadState, TraceExt};
use std::time::{Duration, Instant};

fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Bursts that make the workers sleep and be woken.
fn bursts(js: &JobSystem, rounds: usize) {
    for r in 0..rounds {
        let a = js
            .job()
            .name("a")
            .schedule(|| spin(Duration::from_micros(5)));
        let b = js
            .job()
            .name("b")
            .schedule(|| spin(Duration::from_micros(10)));
        let c = js
            .job()
            .desc("c")
            .after(&[a, b])
            .schedule(|| spin(Duration::from_micros(5)));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                js.job()
                    .name("small")
                    .schedule(|| spin(Duration::from_micros(3)))
            })
            .collect();
        // A job long enough that main parks in `complete` on it.
        let long = js
            .job()
            .name("long")
            .schedule(|| spin(Duration::from_micros(300)));
        js.complete(c);
        for h in hs {
            js.complete(h);
        }
        js.complete(long);
        // Idle: every worker spins out its budget and parks.
        std::thread::sleep(Duration::from_micros(200 + 100 * (r as u64 % 3)));
    }
}

/// The arrows of `c` that end before they start, as text.
fn backward_arrows(c: &Capture) -> Vec<String> {
    let mut bad = Vec::new();
    for th in &c.threads {
        for w in &th.wakes {
            if let Some(end) = w.target_ns {
                if end < w.ts_ns {
                    bad.push(format!(
                        "wake {} -> {:?}: issued at {} ns, wakee woke at {} ns",
                        th.index, w.wakee, w.ts_ns, end
                    ));
                }
            }
        }
        for r in &th.releases {
            if let Some((to, begin)) = r.started {
                if begin < r.ts_ns {
                    bad.push(format!(
                        "release {} -> {}: released at {} ns, started at {} ns",
                        th.index, to, r.ts_ns, begin
                    ));
                }
            }
        }
    }
    bad
}

/// Worker sleeps that began and ended inside the capture and are not the
/// target of exactly one wake. Inside a capture (no shutdown, no hot zone)
/// only a recorded wake (`notify_work`, the cascade, `flush`) ends a
/// worker's sleep, so each such sleep must have its arrow.
fn unexplained_sleeps(c: &Capture) -> Vec<String> {
    let mut bad = Vec::new();
    for th in c.threads.iter().filter(|t| t.worker) {
        for s in &th.states {
            if s.state != ThreadState::Sleeping || s.begin_ns == 0 || s.end_ns >= c.duration_ns {
                continue;
            }
            let n = c
                .threads
                .iter()
                .flat_map(|t| &t.wakes)
                .filter(|w| w.wakee == Some(th.index) && w.target_ns == Some(s.end_ns))
                .count();
            if n != 1 {
                bad.push(format!(
                    "worker {} sleep [{}, {}) ns is the target of {n} wakes",
                    th.index, s.begin_ns, s.end_ns
                ));
            }
        }
    }
    bad
}

#[test]
fn flow_arrows_never_end_before_they_start() {
    let mut captures = 0;
    let mut wakes = 0;
    let mut targeted = 0;
    let mut backward = Vec::new();
    let mut unexplained = Vec::new();
    for workers in 1..=3 {
        let js = JobSystem::builder().workers(workers).build().unwrap();
        for _ in 0..30 {
            js.trace_start();
            bursts(&js, 4);
            let t = js.trace_stop();
            assert_eq!(t.dropped(), 0);
            let c = t.analyse();
            captures += 1;
            for th in &c.threads {
                wakes += th.wakes.len();
                targeted += th.wakes.iter().filter(|w| w.target_ns.is_some()).count();
            }
            let b = backward_arrows(&c);
            if !b.is_empty() {
                backward.push(format!("{workers} workers: {}", b.join("; ")));
            }
            let u = unexplained_sleeps(&c);
            if !u.is_empty() {
                unexplained.push(format!("{workers} workers: {}", u.join("; ")));
            }
        }
    }
    eprintln!(
        "{captures} captures, {wakes} wakes ({targeted} with an arrow); \
         {} captures with backward arrows, {} with worker sleeps not ended by exactly one wake",
        backward.len(),
        unexplained.len()
    );
    assert!(
        targeted > 0,
        "no wake arrows at all: the bursts did not make workers sleep"
    );
    assert!(
        backward.is_empty(),
        "{} of {captures} captures have arrows that end before they start:\n{}",
        backward.len(),
        backward.join("\n")
    );
    assert!(
        unexplained.is_empty(),
        "{} of {captures} captures have worker sleeps without their wake:\n{}",
        unexplained.len(),
        unexplained.join("\n")
    );
}
