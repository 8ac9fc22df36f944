//! A frame graph built once and replayed 200 times, two runs in flight:
//! input → physics → animation, an AI loop beside them, render after both.
//! The state lives in `Resource`s, so the graph's edges (and the order
//! between overlapping runs) come from declared access. At the end it
//! prints the last run's critical path, slack and a what-if, and checks
//! the result against a serial replay.
//!
//! `cargo run --example graph -p jobsys`

use jobsys::{Batch, Graph, JobSystem, Resource};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const FRAMES: u64 = 200;
const ENTITIES: usize = 2048;

fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {}
}

fn main() {
    let js = JobSystem::builder().build().expect("workers");
    let frame_no = Resource::named("frame", 0u64);
    let pos = Resource::named("positions", vec![0.0f64; ENTITIES]);
    let bones = Resource::named("bones", vec![0.0f64; ENTITIES]);
    let hash = Resource::named("hash", 0u64);
    let thoughts = Arc::new(AtomicU64::new(0));

    let mut b = Graph::builder();
    b.node()
        .name("input")
        .access(frame_no.write())
        .call(|f| *f += 1);
    let physics = b
        .node()
        .name("physics")
        .access((frame_no.read(), pos.write()))
        .call(|(f, p)| {
            for (i, x) in p.iter_mut().enumerate() {
                *x += (*f as f64) * 0.001 + i as f64 * 1e-6;
            }
            spin(Duration::from_micros(300));
        });
    b.node()
        .name("animation")
        .access((pos.read(), bones.write()))
        .call(|(p, bn)| {
            for (b, x) in bn.iter_mut().zip(p) {
                *b = x * 2.0;
            }
        });
    let t = thoughts.clone();
    let ai = b
        .node()
        .name("ai")
        .parallel_for(0..256, Batch::Auto, move |i| {
            t.fetch_add(i as u64, Ordering::Relaxed);
        });
    b.node()
        .name("render")
        .after(&[ai])
        .access((bones.read(), hash.write()))
        .call(|(bn, h)| {
            let s: f64 = bn.iter().sum();
            *h = h.wrapping_mul(31).wrapping_add(s.to_bits());
        });
    let graph = b.build().expect("no cycle");

    let start = Instant::now();
    let mut last = None;
    for _ in 0..FRAMES {
        last = Some(graph.run(&js)); // waits for the run before last
    }
    js.complete(last.expect("ran"));
    let took = start.elapsed();

    // The same frames, one after another on this thread.
    let (mut sf, mut sp, mut sb, mut sh) =
        (0u64, vec![0.0f64; ENTITIES], vec![0.0; ENTITIES], 0u64);
    for _ in 0..FRAMES {
        sf += 1;
        for (i, x) in sp.iter_mut().enumerate() {
            *x += (sf as f64) * 0.001 + i as f64 * 1e-6;
        }
        for (b, x) in sb.iter_mut().zip(&sp) {
            *b = x * 2.0;
        }
        let s: f64 = sb.iter().sum();
        sh = sh.wrapping_mul(31).wrapping_add(s.to_bits());
    }
    assert_eq!(*frame_no.read_now(&js), sf);
    assert_eq!(*pos.read_now(&js), sp);
    assert_eq!(*hash.read_now(&js), sh);
    assert_eq!(
        thoughts.load(Ordering::Relaxed),
        FRAMES * (0..256u64).sum::<u64>()
    );

    let report = graph.report(&js).expect("a finished run");
    println!(
        "{FRAMES} frames in {took:?} ({:?} per frame, {} workers, {} runs in flight)",
        took / FRAMES as u32,
        js.workers(),
        graph.max_in_flight()
    );
    print!("last run:\n{report}");
    println!(
        "physics twice as fast: frame {:?} instead of {:?}",
        report.what_if(physics, 0.5),
        report.frame()
    );
    println!("graph = serial replay");
}
