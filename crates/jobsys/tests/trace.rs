//! The tracer through the public API: what a capture records (tracks,
//! capture start, frames, job names, the core's event sites, buffer limits)
//! and the raw capture file. What the events mean (states, arrows, the
//! summary, Chrome JSON) is tested in `crates/jobsys-trace`, on these same
//! kinds of captures (`tests/capture.rs` there). No test asserts on timings.

#![cfg(feature = "trace")]

use jobsys::trace::{Event, JobId, Trace, TraceConfig};
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

/// Per thread, job and wait begins and ends nest like brackets, and every
/// one that begins inside the capture ends in it (nothing runs when a
/// capture is stopped after `complete`). Returns the job begins per name.
fn assert_nested_and_closed(t: &Trace) -> HashMap<&'static str, u64> {
    let mut begins: HashMap<&'static str, u64> = HashMap::new();
    for th in &t.threads {
        let mut open: Vec<(bool, JobId)> = Vec::new();
        for r in &th.events {
            match r.event {
                Event::JobBegin { job, name } => {
                    *begins.entry(name).or_default() += 1;
                    open.push((true, job));
                }
                Event::WaitBegin { job } => open.push((false, job)),
                Event::JobEnd { job, .. } => {
                    assert_eq!(open.pop(), Some((true, job)), "{}: {r:?}", th.name)
                }
                Event::WaitEnd { job } => {
                    assert_eq!(open.pop(), Some((false, job)), "{}: {r:?}", th.name)
                }
                _ => {}
            }
        }
        assert!(open.is_empty(), "{}: still open: {open:?}", th.name);
    }
    begins
}

/// The raw capture file: the format's header, and every thread by name.
fn assert_writes_raw(t: &Trace) {
    let mut file = Vec::new();
    t.write_raw(&mut file).unwrap();
    let text = String::from_utf8(file).expect("UTF-8");
    let header = format!(
        r#"{{"format":"jobsys-raw-trace","version":{},"#,
        jobsys::trace::RAW_VERSION
    );
    assert!(text.starts_with(&header), "{text}");
    assert!(text.ends_with("]}\n"));
    for th in &t.threads {
        assert!(text.contains(&format!(r#""name":"{}""#, th.name)), "{text}");
    }
    let lines = text.lines().filter(|l| l.starts_with('[')).count();
    assert_eq!(lines, t.event_count(), "one line per event");
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
        let h = js.job().name("physics").schedule(|| {});
        js.complete(h);
    }
    let t = js.trace_stop();
    assert!(!js.is_tracing());
    assert_monotonic(&t);
    // N workers + the calling thread, by thread index: the building
    // thread 0, then workers 1 and 2.
    assert_eq!(t.threads.len(), 3);
    assert!(!t.threads[0].worker && t.threads[1].worker && t.threads[2].worker);
    let tracks: Vec<_> = t
        .threads
        .iter()
        .map(|t| (t.index, t.name.as_str()))
        .collect();
    assert_eq!(&tracks[1..], [(1, "worker 1"), (2, "worker 2")]);
    assert_eq!(tracks[0].0, 0);
    assert!(tracks[0].1.ends_with("(thread 0)"), "{}", tracks[0].1);
    let main = &t.threads[0];
    assert_eq!(main.events[0].event, Event::CaptureStart);
    let frames = main
        .events
        .iter()
        .filter(|r| matches!(r.event, Event::FrameBegin { .. } | Event::FrameEnd { .. }))
        .count();
    assert_eq!(frames, 6);
    assert_eq!(assert_nested_and_closed(&t).get("physics"), Some(&3));
    assert_writes_raw(&t);
    // A new capture starts empty.
    assert!(js.trace_start());
    let t2 = js.trace_stop();
    assert_eq!(t2.threads[0].events.len(), 1);
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
    assert_eq!(t.dropped(), 193);
    assert!(t.event_count() >= 8);
    assert_writes_raw(&t);
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
fn a_frame_graph_records_jobs_states_wakes_and_releases() {
    let js = system(2);
    js.trace_start();
    frame_graph(&js, 20);
    let t = js.trace_stop();
    assert_eq!(t.dropped(), 0);
    assert_monotonic(&t);
    assert_eq!(t.threads.len(), 3, "2 workers + main");
    let begins = assert_nested_and_closed(&t);
    assert_eq!(begins.get("physics"), Some(&20));
    assert_eq!(begins.get("animation"), Some(&20));
    assert_eq!(begins.get("render"), Some(&20));
    // The parallel_for is unnamed: it shows its closure's type name.
    assert!(
        begins.keys().any(|n| n.contains("frame_graph")),
        "{begins:?}"
    );
    // Each of the 80 jobs (4 per frame) became ready once (scheduled, or
    // released by a dependency).
    let readies = t
        .threads
        .iter()
        .flat_map(|t| &t.events)
        .filter(|r| matches!(r.event, Event::JobReady { .. }))
        .count();
    assert_eq!(readies, 80);
    // Only workers search and spin.
    for th in t.threads.iter().filter(|th| !th.worker) {
        assert!(
            th.events
                .iter()
                .all(|r| !matches!(r.event, Event::SearchBegin | Event::SpinBegin)),
            "{}",
            th.name
        );
    }
    assert_writes_raw(&t);
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
    assert_writes_raw(&t);
}

/// Declared accesses are recorded when the job is scheduled: an
/// `accesses` event naming the job, then one `read` / `write` /
/// `write_each` per resource, with its name ("" if unnamed) and an id
/// that tells resources apart; a `read_now` guard is recorded too. The
/// accesses of one resource come in its history (scheduling) order. Jobs
/// scheduled while nothing records leave nothing behind.
#[test]
fn declared_accesses_are_recorded_with_their_jobs() {
    use jobsys::trace::AccessMode::{Read, Write, WriteEach};
    use jobsys::Resource;
    let js = system(1);
    let pos = Resource::named("positions", vec![0u32; 64]);
    let vel = Resource::named("velocities", 1u32);
    let anon = Resource::new(0u8);
    js.complete(js.job().access(vel.write()).schedule(|v| *v = 2));
    js.trace_start();
    let a = js
        .job()
        .access((vel.read(), anon.write()))
        .schedule(|(v, x)| *x = *v as u8);
    let b = js
        .job()
        .access((vel.read(), pos.write_each()))
        .parallel_for(0..64, Batch::Fixed(8), |i, (v, p)| *p = i as u32 * *v);
    let guard = pos.read_now(&js);
    assert_eq!(guard[3], 6);
    drop(guard);
    js.complete(a);
    js.complete(b);
    let t = js.trace_stop();
    assert_writes_raw(&t);
    // (job, [(resource, name, mode)]) in recording order, all threads.
    type Group = (JobId, Vec<(u64, &'static str, jobsys::trace::AccessMode)>);
    let mut groups: Vec<Group> = Vec::new();
    for th in &t.threads {
        let mut open = false;
        for r in &th.events {
            match r.event {
                Event::Accesses { job } => {
                    groups.push((job, Vec::new()));
                    open = true;
                }
                Event::Access {
                    resource,
                    name,
                    mode,
                } => {
                    assert!(open, "an access outside a group: {r:?}");
                    groups.last_mut().unwrap().1.push((resource, name, mode));
                }
                _ => open = false,
            }
        }
    }
    assert_eq!(groups.len(), 3, "a, b and the guard: {groups:?}");
    let find = |job| &groups.iter().find(|g| g.0 == job).expect("recorded").1;
    let ga = find(JobId::of_handle(a));
    let gb = find(JobId::of_handle(b));
    let mut modes_a: Vec<_> = ga.iter().map(|&(_, n, m)| (n, m)).collect();
    modes_a.sort_by_key(|x| x.0);
    assert_eq!(modes_a, [("", Write), ("velocities", Read)]);
    let mut modes_b: Vec<_> = gb.iter().map(|&(_, n, m)| (n, m)).collect();
    modes_b.sort_by_key(|x| x.0);
    assert_eq!(modes_b, [("positions", WriteEach), ("velocities", Read)]);
    let id = |g: &Vec<(u64, &str, _)>, name| g.iter().find(|x| x.1 == name).unwrap().0;
    assert_eq!(
        id(ga, "velocities"),
        id(gb, "velocities"),
        "one resource, one id"
    );
    assert_ne!(id(ga, ""), id(gb, "velocities"));
    // The guard's group: a read of positions, after b's write_each.
    let guard = groups
        .iter()
        .find(|g| g.0 != JobId::of_handle(a) && g.0 != JobId::of_handle(b));
    assert_eq!(
        guard
            .unwrap()
            .1
            .iter()
            .map(|&(_, n, m)| (n, m))
            .collect::<Vec<_>>(),
        [("positions", Read)]
    );
    // Nothing while not recording: the write before trace_start left no
    // group (it would be a fourth).
}
