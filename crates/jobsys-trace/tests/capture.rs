//! The analysis of real captures (a job system recording, through the
//! public API): states, arrows, latency, the summary, and the Chrome JSON
//! round trip. What the core records is tested in
//! `crates/jobsys/tests/trace.rs`. No test asserts on timings.

use jobsys::trace::{Event, Trace, TraceConfig};
use jobsys::{Batch, JobSystem};
use jobsys_trace::{validate_chrome_json, Capture, ThreadState, TraceExt};
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

/// The raw file reads back to the same trace; Chrome JSON that viewers
/// open reads back to the same summary.
fn roundtrip(t: &Trace) -> Capture {
    let mut raw = Vec::new();
    t.write_raw(&mut raw).unwrap();
    assert_eq!(&jobsys_trace::read_raw(&raw[..]).unwrap(), t);

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
fn frames_and_tracks_of_a_small_capture() {
    let js = system(2);
    js.trace_start();
    for _ in 0..3 {
        let _frame = js.frame();
        let h = js.job().name("physics").schedule(|| {});
        js.complete(h);
    }
    let t = js.trace_stop();
    let c = roundtrip(&t);
    assert_eq!(c.frames.len(), 3);
    assert_eq!(c.threads.len(), 3);
    assert_eq!(t.summary().jobs[0].name, "physics");
    assert_eq!(t.summary().jobs[0].count, 3);
}

#[test]
fn a_full_buffer_warns_in_the_summary() {
    let js = system(1);
    js.trace_start_with(TraceConfig {
        events_per_thread: 8,
    });
    for _ in 0..100 {
        js.frame_begin();
        js.frame_end();
    }
    let s = js.trace_stop().summary();
    assert!(
        s.warnings.iter().any(|w| w.contains("193 events dropped")),
        "{s}"
    );
}

/// A few frames of a small frame graph.
fn frame_graph(js: &JobSystem, frames: usize) {
    for _ in 0..frames {
        let _frame = js.frame();
        let physics = js
            .job()
            .name("physics")
            .schedule(|| spin(Duration::from_micros(50)));
        let anim = js
            .job()
            .desc("animation")
            .after(&[physics])
            .schedule(|| spin(Duration::from_micros(20)));
        let pf = js.parallel_for(0..64, Batch::Fixed(4), |_| spin(Duration::from_micros(2)));
        let render = js
            .job()
            .desc("render")
            .after(&[anim, pf])
            .schedule(|| spin(Duration::from_micros(30)));
        js.complete(render);
    }
}

#[test]
fn a_frame_graph_has_jobs_states_wakes_and_releases() {
    let js = system(2);
    js.trace_start();
    frame_graph(&js, 20);
    let t = js.trace_stop();
    assert_eq!(t.dropped(), 0);
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
    // Each of the 80 jobs (4 per frame) became ready once and started
    // after that: 80 latencies.
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
fn overflow_under_load_round_trips() {
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
    roundtrip(&t);
}

#[test]
fn an_idle_worker_without_events_is_drawn_sleeping_with_a_note() {
    let js = system(2);
    // Let both workers spin out their budget and park before the capture.
    std::thread::sleep(Duration::from_millis(20));
    js.trace_start();
    for _ in 0..3 {
        js.frame_begin();
        js.frame_end();
    }
    let t = js.trace_stop();
    let c = t.analyse();
    let idle: Vec<_> = c.threads.iter().filter(|t| t.worker).collect();
    assert_eq!(idle.len(), 2);
    for th in idle {
        assert_eq!(
            th.states,
            vec![jobsys_trace::StateSpan {
                state: ThreadState::Sleeping,
                begin_ns: 0,
                end_ns: c.duration_ns,
            }],
            "{}",
            th.name
        );
        assert_eq!(th.note.as_deref(), Some(jobsys_trace::IDLE_NOTE));
    }
    // The main thread recorded events: no note.
    assert!(c.threads.iter().any(|t| !t.worker && t.note.is_none()));
    let s = c.summary();
    assert!(s.threads.iter().all(|t| t.state_ns.unknown == 0), "{s}");
    assert!(
        s.to_string().contains("note: ") && s.to_string().contains("drawn as sleeping"),
        "{s}"
    );
    // The note survives the Chrome JSON (the `note` arg of the state
    // slices and the thread metadata).
    let back = roundtrip(&t);
    assert_eq!(back.threads, c.threads);
    let mut json = Vec::new();
    t.write_chrome_json(&mut json).unwrap();
    assert!(String::from_utf8(json).unwrap().contains("\"note\":"));
}

#[test]
fn set_active_workers_shows_as_a_counter_and_in_the_summary() {
    let js = system(2);
    js.trace_start();
    js.set_active_workers(0).unwrap();
    js.complete(js.job().name("alone").schedule(|| {}));
    js.set_active_workers(2).unwrap();
    js.complete(js.job().name("together").schedule(|| {}));
    let t = js.trace_stop();
    let c = roundtrip(&t);
    let counts: Vec<u32> = c.active_workers.iter().map(|a| a.count).collect();
    assert_eq!(counts, vec![0, 2]);
    assert!(c.active_workers[0].ts_ns <= c.active_workers[1].ts_ns);
    let text = t.summary().to_string();
    assert!(
        text.contains("active workers: 0 -> 2 (2 changes)"),
        "{text}"
    );
    let mut json = Vec::new();
    t.write_chrome_json(&mut json).unwrap();
    let json = String::from_utf8(json).unwrap();
    assert_eq!(json.matches("\"ph\":\"C\"").count(), 2, "{json}");
    // Setting the count it already has records nothing.
    js.trace_start();
    js.set_active_workers(2).unwrap();
    assert!(js.trace_stop().analyse().active_workers.is_empty());
}
