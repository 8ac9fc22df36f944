//! The tracer through the public API.
//!
//! Tests marked `needs core hooks` need the event sites that the core adds
//! (job begin/end, ready/release, steal, search, spin, sleep, wake, wait;
//! the table is at the top of `src/trace/mod.rs`); the others exercise what
//! the tracer records by itself (capture start, frames, job names, buffer
//! limits) and the export/import round trip. No test asserts on timings.

#![cfg(feature = "trace")]

use jobsys::trace::{validate_chrome_json, Capture, Event, ThreadState, Trace, TraceConfig};
use jobsys::{Batch, JobSystem};
use std::collections::HashMap;
use std::time::{Duration, Instant};

fn system(workers: usize) -> JobSystem {
    JobSystem::builder().workers(workers).build().unwrap()
}

fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Every thread's timestamps only go forward.
fn assert_monotonic(t: &Trace) {
    for th in &t.threads {
        for w in th.events.windows(2) {
            assert!(w[0].ts_ns <= w[1].ts_ns, "{}: {:?}", th.name, w);
        }
        for r in &th.events {
            assert!(
                r.ts_ns >= t.start_ns && r.ts_ns <= t.end_ns,
                "{}: {r:?}",
                th.name
            );
        }
    }
}

fn roundtrip(t: &Trace) -> Capture {
    let mut json = Vec::new();
    t.write_chrome_json(&mut json).unwrap();
    validate_chrome_json(&json[..]).expect("Perfetto/chrome://tracing can open it");
    let back = Capture::read_chrome_json(&json[..]).unwrap();
    assert_eq!(
        back.summary(),
        t.summary(),
        "summary of the file = summary of the trace"
    );
    back
}

#[test]
fn stop_without_a_capture_gives_an_empty_trace() {
    let js = system(1);
    assert!(!js.is_tracing());
    let t = js.trace_stop();
    assert!(t.threads.is_empty());
    js.frame_begin(); // not tracing: nothing happens
    js.frame_end();
}

#[test]
fn a_capture_has_a_track_per_worker_and_one_for_the_caller() {
    let js = system(2);
    assert!(js.trace_start());
    assert!(
        !js.trace_start(),
        "a second start keeps the running capture"
    );
    assert!(js.is_tracing());
    for _ in 0..3 {
        let _frame = js.frame();
        let h = js.schedule_named("physics", || {});
        js.complete(h);
    }
    let t = js.trace_stop();
    assert!(!js.is_tracing());
    assert_monotonic(&t);
    // N workers + the calling thread.
    assert_eq!(t.threads.len(), 3);
    assert!(t.threads[0].worker && t.threads[1].worker && !t.threads[2].worker);
    let main = &t.threads[2];
    assert_eq!(main.events[0].event, Event::CaptureStart);
    let frames = main
        .events
        .iter()
        .filter(|r| matches!(r.event, Event::FrameBegin { .. } | Event::FrameEnd { .. }))
        .count();
    assert_eq!(frames, 6);
    let c = roundtrip(&t);
    assert_eq!(c.frames.len(), 3);
    assert_eq!(c.threads.len(), 3);
    // A new capture starts empty.
    assert!(js.trace_start());
    let t2 = js.trace_stop();
    assert_eq!(t2.threads[2].events.len(), 1);
}

#[test]
fn a_full_buffer_drops_and_counts_and_never_blocks() {
    let js = system(1);
    js.trace_start_with(TraceConfig {
        events_per_thread: 8,
    });
    for _ in 0..100 {
        js.frame_begin();
        js.frame_end();
    }
    let t = js.trace_stop();
    let main = t.threads.iter().find(|th| !th.worker).unwrap();
    assert_eq!(main.events.len(), 8);
    assert_eq!(main.dropped, 1 + 200 - 8);
    let s = t.summary();
    assert!(
        s.warnings.iter().any(|w| w.contains("193 events dropped")),
        "{s}"
    );
}

#[test]
fn the_builder_can_start_a_capture() {
    let js = JobSystem::builder()
        .workers(1)
        .build_traced(TraceConfig::default())
        .unwrap();
    assert!(js.is_tracing());
    assert_eq!(js.trace_stop().threads.len(), 2);
}

/// A few frames of a small frame graph with 2 workers.
fn frame_graph(js: &JobSystem, frames: usize) {
    for _ in 0..frames {
        let _frame = js.frame();
        let physics = js.schedule_named("physics", || spin(Duration::from_micros(50)));
        let anim =
            js.schedule_with_after("animation", &[physics], || spin(Duration::from_micros(20)));
        let pf = js.parallel_for(0..64, Batch::Fixed(4), |_| spin(Duration::from_micros(2)));
        let render =
            js.schedule_with_after("render", &[anim, pf], || spin(Duration::from_micros(30)));
        js.complete(render);
    }
}

#[test]

fn a_frame_graph_records_jobs_states_wakes_and_releases() {
    let js = system(2);
    js.trace_start();
    frame_graph(&js, 20);
    let t = js.trace_stop();
    assert_eq!(t.dropped(), 0);
    assert_monotonic(&t);
    assert_eq!(t.threads.len(), 3, "2 workers + main");
    let c = t.analyse();
    // Every job begin has its end (nothing runs when the capture stops).
    for th in &c.threads {
        for j in &th.jobs {
            assert!(j.complete, "{}: {} clipped", th.name, c.name_of(j));
        }
        for w in &th.waits {
            assert!(w.complete, "{}: wait clipped", th.name);
        }
    }
    let s = c.summary();
    let count: HashMap<&str, u64> = s.jobs.iter().map(|j| (j.name.as_str(), j.count)).collect();
    assert_eq!(count.get("physics"), Some(&20));
    assert_eq!(count.get("animation"), Some(&20));
    assert_eq!(count.get("render"), Some(&20));
    // The parallel_for is unnamed: it shows its closure's type name.
    assert!(
        s.jobs.iter().any(|j| j.name.contains("frame_graph")),
        "{:?}",
        s.jobs.iter().map(|j| &j.name).collect::<Vec<_>>()
    );
    // Jobs released by a dependency (animation, render: unless their
    // dependencies finished before they were scheduled) get an arrow to
    // where they started.
    for th in &c.threads {
        for r in &th.releases {
            assert!(
                r.started.is_some(),
                "{}: release of {:?} unpaired",
                th.name,
                r.job
            );
        }
    }
    // Wake arrows pair up: every wake of a known thread that woke inside
    // the capture has a target on that thread.
    for th in &c.threads {
        for w in &th.wakes {
            if let (Some(i), Some(_)) = (w.wakee, w.target_ns) {
                assert!(c.thread(i).is_some());
            }
        }
    }
    // Each of the 80 jobs (4 per frame) became ready once (scheduled, or
    // released by a dependency) and started after that.
    let readies = t
        .threads
        .iter()
        .flat_map(|t| &t.events)
        .filter(|r| matches!(r.event, Event::JobReady { .. }))
        .count();
    assert_eq!(readies, 80);
    assert_eq!(s.latency.count, 80);
    for th in &s.threads {
        let pct: f64 = ThreadState::ALL
            .iter()
            .map(|&x| th.state_percent.get(x))
            .sum();
        assert!((pct - 100.0).abs() < 1e-6);
    }
    // Someone worked.
    assert!(s.threads.iter().any(|t| t.state_ns.working > 0));
    roundtrip(&t);
}

#[test]

fn overflow_under_load_drops_and_counts() {
    let js = system(2);
    js.trace_start_with(TraceConfig {
        events_per_thread: 64,
    });
    let hs: Vec<_> = (0..2000).map(|_| js.schedule(|| {})).collect();
    for h in hs {
        js.complete(h);
    }
    let t = js.trace_stop();
    assert!(t.dropped() > 0);
    assert!(t.threads.iter().all(|th| th.events.len() <= 64));
    roundtrip(&t);
}
