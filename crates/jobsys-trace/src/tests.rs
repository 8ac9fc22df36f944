//! Tests of analysis, export/import, summary and compare on synthetic
//! traces with known timings (no job system, no clocks).

use crate::json::{parse, Json};
use crate::*;
use jobsys::trace::{Event, JobId, Record, ThreadEvents, Trace};
use std::collections::HashMap;

const A: JobId = JobId(0xA);
const B: JobId = JobId(0xB);
const C: JobId = JobId(0xC);
const START: u64 = 1_000_000;

fn rec(ts: u64, event: Event) -> Record {
    Record {
        ts_ns: START + ts,
        event,
    }
}

fn thread(index: u32, worker: bool, name: &str, events: Vec<Record>) -> ThreadEvents {
    ThreadEvents {
        index,
        name: name.to_owned(),
        worker,
        dropped: 0,
        events,
    }
}

/// Worker 0 sleeps, is woken, steals and runs "physics" (which releases
/// "render"), spins, sleeps, is woken by main, finds nothing (a futile
/// wake) and sleeps. Worker 1 records nothing. Main schedules, waits,
/// helps, blocks, runs "render", and wakes worker 0. 100 µs in all.
fn synthetic(physics_ns: u64) -> Trace {
    use Event::*;
    let p = physics_ns;
    let w0 = vec![
        rec(10_000, SleepEnd),
        rec(12_000, Steal { victim: 2 }),
        rec(
            12_000,
            JobBegin {
                job: A,
                name: "physics",
            },
        ),
        rec(
            11_000 + p,
            JobReady {
                job: C,
                by_dependency: true,
            },
        ),
        rec(
            12_000 + p,
            JobEnd {
                job: A,
                name: "physics",
            },
        ),
        rec(35_000, SpinBegin),
        rec(40_000, SleepBegin),
        rec(60_000, SleepEnd),
        rec(65_000, SleepBegin),
    ];
    let main = vec![
        rec(0, CaptureStart),
        rec(1_000, FrameBegin { frame: 0 }),
        rec(
            2_000,
            JobReady {
                job: A,
                by_dependency: false,
            },
        ),
        rec(
            3_000,
            JobReady {
                job: B,
                by_dependency: false,
            },
        ),
        rec(5_000, WaitBegin { job: C }),
        rec(
            6_000,
            JobBegin {
                job: B,
                name: "my::closure",
            },
        ),
        rec(
            16_000,
            JobEnd {
                job: B,
                name: "my::closure",
            },
        ),
        rec(20_000, SleepBegin),
        rec(45_000, SleepEnd),
        rec(
            46_000,
            JobBegin {
                job: C,
                name: "render",
            },
        ),
        rec(
            56_000,
            JobEnd {
                job: C,
                name: "render",
            },
        ),
        rec(57_000, WaitEnd { job: C }),
        rec(59_000, Wake { wakee: Some(0) }),
        rec(90_000, FrameEnd { frame: 0 }),
    ];
    Trace {
        start_ns: START,
        end_ns: START + 100_000,
        threads: vec![
            thread(0, true, "worker 0", w0),
            thread(1, true, "worker 1", vec![]),
            thread(2, false, "main", main),
        ],
    }
}

fn states(t: &ThreadTimeline) -> Vec<(ThreadState, u64, u64)> {
    t.states
        .iter()
        .map(|s| (s.state, s.begin_ns, s.end_ns))
        .collect()
}

#[test]
fn analysis_derives_states_latency_wakes_and_releases() {
    use ThreadState::*;
    let c = synthetic(20_000).analyse();
    assert_eq!(c.duration_ns, 100_000);
    assert_eq!(
        states(&c.threads[0]),
        vec![
            (Sleeping, 0, 10_000),
            (Searching, 10_000, 12_000),
            (Working, 12_000, 32_000),
            (Searching, 32_000, 35_000),
            (Spinning, 35_000, 40_000),
            (Sleeping, 40_000, 60_000),
            (Searching, 60_000, 65_000),
            (Sleeping, 65_000, 100_000),
        ]
    );
    // A worker with no events: parked all along (or inside one long job),
    // drawn as sleeping with a note, not unknown.
    assert_eq!(states(&c.threads[1]), vec![(Sleeping, 0, 100_000)]);
    assert_eq!(c.threads[1].note.as_deref(), Some(crate::IDLE_NOTE));
    assert_eq!(c.threads[0].note, None);
    assert_eq!(
        states(&c.threads[2]),
        vec![
            (Outside, 0, 5_000),
            (Waiting, 5_000, 6_000),
            (Working, 6_000, 16_000),
            (Waiting, 16_000, 20_000),
            (Blocked, 20_000, 45_000),
            (Waiting, 45_000, 46_000),
            (Working, 46_000, 56_000),
            (Waiting, 56_000, 57_000),
            (Outside, 57_000, 100_000),
        ]
    );
    let w0 = &c.threads[0];
    assert_eq!(c.name_of(&w0.jobs[0]), "physics");
    assert_eq!(w0.jobs[0].latency_ns, Some(10_000));
    let main = &c.threads[2];
    let lat: HashMap<&str, Option<u64>> = main
        .jobs
        .iter()
        .map(|j| (c.name_of(j), j.latency_ns))
        .collect();
    assert_eq!(lat["my::closure"], Some(3_000));
    assert_eq!(
        lat["render"],
        Some(15_000),
        "release at 31 µs, start at 46 µs"
    );
    assert_eq!(main.waits.len(), 1);
    assert_eq!(
        main.wakes,
        vec![Wake {
            ts_ns: 59_000,
            wakee: Some(0),
            target_ns: Some(60_000)
        }]
    );
    assert_eq!(
        w0.releases,
        vec![Release {
            ts_ns: 31_000,
            job: C,
            started: Some((2, 46_000))
        }]
    );
    assert_eq!(
        w0.steals,
        vec![Steal {
            ts_ns: 12_000,
            victim: 2
        }]
    );
    assert_eq!(
        c.frames,
        vec![FrameSpan {
            frame: 0,
            begin_ns: 1_000,
            end_ns: 90_000
        }]
    );
}

#[test]
fn summary_numbers_of_a_known_trace() {
    let s = synthetic(20_000).summary();
    for t in &s.threads {
        let total_ns: u64 = ThreadState::ALL.iter().map(|&x| t.state_ns.get(x)).sum();
        assert_eq!(total_ns, s.duration_ns, "{}", t.name);
        let pct: f64 = ThreadState::ALL
            .iter()
            .map(|&x| t.state_percent.get(x))
            .sum();
        assert!((pct - 100.0).abs() < 1e-9, "{}: {pct}", t.name);
    }
    let w0 = &s.threads[0];
    assert_eq!(w0.state_ns.sleeping, 65_000);
    assert_eq!(w0.state_ns.working, 20_000);
    assert_eq!(w0.state_ns.searching, 10_000);
    assert_eq!(w0.state_ns.spinning, 5_000);
    assert_eq!(w0.state_percent.working, 20.0);
    assert_eq!((w0.jobs_run, w0.steals, w0.wakes_issued), (1, 1, 0));
    assert_eq!(w0.futile_wakes, 1);
    assert_eq!(s.threads[1].state_ns.sleeping, 100_000);
    assert_eq!(s.threads[1].note.as_deref(), Some(crate::IDLE_NOTE));
    assert!(s.to_string().contains("note: worker 1: no events"), "{s}");
    let main = &s.threads[2];
    assert_eq!(main.state_ns.blocked, 25_000);
    assert_eq!(main.state_ns.waiting, 7_000);
    assert_eq!(main.state_ns.outside, 48_000);
    assert_eq!(
        (main.jobs_run, main.wakes_issued, main.futile_wakes),
        (2, 1, 0)
    );
    assert_eq!(main.latency.count, 2);
    assert_eq!(main.latency.max_ns, 15_000);
    let names: Vec<(&str, u64, u64)> = s
        .jobs
        .iter()
        .map(|j| (j.name.as_str(), j.count, j.total_ns))
        .collect();
    assert_eq!(
        names,
        vec![
            ("physics", 1, 20_000),
            ("my::closure", 1, 10_000),
            ("render", 1, 10_000)
        ]
    );
    assert_eq!(s.latency.count, 3);
    assert_eq!(s.latency.p50_ns, 10_000);
    assert_eq!(s.latency.max_ns, 15_000);
    assert_eq!(s.frames.count, 1);
    assert_eq!(s.frames.max_ns, 89_000);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    let text = s.to_string();
    assert!(text.contains("physics"), "{text}");
    assert!(text.contains("worker 0"), "{text}");
}

fn export(t: &Trace) -> (Vec<u8>, Json) {
    let mut buf = Vec::new();
    t.write_chrome_json(&mut buf).unwrap();
    validate_chrome_json(&buf[..]).unwrap();
    let v = parse(&buf).expect("valid JSON");
    (buf, v)
}

/// `v[k1][k2]…` as a string.
fn s<'a>(v: &'a Json, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_str()
}

#[test]
fn the_validator_catches_what_viewers_reject() {
    let bad = |events: &str| {
        let doc = format!(r#"{{"traceEvents":[{events}]}}"#);
        validate_chrome_json(doc.as_bytes()).unwrap_err()
    };
    let x = |ts: f64, dur: f64| {
        format!(r#"{{"name":"a","ph":"X","ts":{ts},"dur":{dur},"pid":1,"tid":1}}"#)
    };
    assert!(bad(&format!("{},{}", x(0.0, 2.0), x(1.0, 2.0))).contains("nesting"));
    assert!(validate_chrome_json(
        format!(r#"{{"traceEvents":[{},{}]}}"#, x(0.0, 2.0), x(0.5, 1.0)).as_bytes()
    )
    .is_ok());
    assert!(
        bad(r#"{"name":"w","cat":"c","ph":"s","ts":1,"id":3,"pid":1,"tid":1}"#).contains("flow")
    );
    assert!(bad(r#"{"name":"a","ph":"X","ts":1,"pid":1,"tid":1}"#).contains("dur"));
    assert!(bad(r#"{"name":"a","ph":"E","ts":1,"pid":1,"tid":1}"#).contains("E without B"));
}

#[test]
fn chrome_json_has_tracks_slices_flows_and_frames() {
    let t = synthetic(20_000);
    let (_, v) = export(&t);
    let Some(Json::Arr(evs)) = v.get("traceEvents") else {
        panic!("no traceEvents")
    };
    for e in evs {
        if s(e, &["ph"]) == Some("f") {
            assert_eq!(
                s(e, &["bp"]),
                Some("e"),
                "flow ends bind to the enclosing slice"
            );
        }
    }
    let named = |ph: &str, cat: &str| -> Vec<&Json> {
        evs.iter()
            .filter(|e| s(e, &["ph"]) == Some(ph) && s(e, &["cat"]) == Some(cat))
            .collect()
    };
    let thread_names: Vec<&str> = evs
        .iter()
        .filter(|e| s(e, &["name"]) == Some("thread_name"))
        .map(|e| s(e, &["args", "name"]).unwrap())
        .collect();
    for n in [
        "frames",
        "worker 0",
        "worker 0 state",
        "worker 1",
        "main",
        "main state",
    ] {
        assert!(thread_names.contains(&n), "{n} in {thread_names:?}");
    }
    let jobs: Vec<&str> = named("X", "job")
        .iter()
        .map(|e| s(e, &["name"]).unwrap())
        .collect();
    assert_eq!(jobs, vec!["physics", "my::closure", "render"]);
    let state = named("X", "state");
    assert!(state.iter().all(|e| s(e, &["cname"]).is_some()));
    let state_names: std::collections::HashSet<&str> =
        state.iter().map(|e| s(e, &["name"]).unwrap()).collect();
    for n in [
        "working",
        "searching",
        "spinning",
        "sleeping",
        "waiting",
        "blocked",
        "outside",
    ] {
        assert!(state_names.contains(n), "{n}");
    }
    // Worker 1 recorded nothing: its one state slice says why it is drawn
    // sleeping.
    assert!(state.iter().any(|e| s(e, &["name"]) == Some("sleeping")
        && s(e, &["args", "note"]) == Some(crate::IDLE_NOTE)));
    assert_eq!(named("s", "wake").len(), 1);
    assert_eq!(named("f", "wake").len(), 1);
    assert_eq!(named("s", "dep").len(), 1);
    let frame_marks = named("i", "frame");
    assert_eq!(frame_marks.len(), 1);
    assert_eq!(s(frame_marks[0], &["s"]), Some("g"));
    assert_eq!(named("X", "frame").len(), 1);
    assert_eq!(named("i", "steal").len(), 1);
    // Microseconds with nanosecond digits (and a 0.4 ns bias): physics
    // began at 12 µs and ran 20 µs.
    let physics = named("X", "job")[0];
    assert_eq!(physics.get("ts"), Some(&Json::Num("12.0004".into())));
    assert_eq!(physics.get("dur").and_then(Json::as_ns), Some(20_000));
    let latency = physics.get("args").and_then(|a| a.get("latency_ns"));
    assert_eq!(latency.and_then(Json::as_u64), Some(10_000));
    // Metadata after the events, under a key viewers know.
    let meta = v.get("metadata").and_then(|m| m.get("jobsys")).unwrap();
    assert_eq!(s(meta, &["format"]), Some("jobsys-trace"));
    assert!(matches!(meta.get("threads"), Some(Json::Arr(t)) if t.len() == 3));
    let Json::Obj(top) = &v else { panic!() };
    assert_eq!(
        top[0].0, "traceEvents",
        "events first: Perfetto stops at unknown keys"
    );
    assert!(top.iter().all(|(k, _)| k != "displayTimeUnit"));
}

#[test]
fn a_summary_read_back_from_json_equals_the_original() {
    // Odd nanoseconds to exercise the microsecond round trip.
    let mut t = synthetic(20_123);
    t.end_ns += 7;
    let c = t.analyse();
    let (buf, _) = export(&t);
    let back = Capture::read_chrome_json(&buf[..]).unwrap();
    assert_eq!(back.summary(), t.summary());
    for (x, y) in c.threads.iter().zip(&back.threads) {
        assert_eq!(x.states, y.states);
        assert_eq!(x.wakes, y.wakes);
        assert_eq!(x.releases, y.releases);
        assert_eq!(x.steals, y.steals);
        assert_eq!(x.waits, y.waits);
        let names = |cap: &Capture, t: &ThreadTimeline| -> Vec<(String, u64, u64, Option<u64>)> {
            t.jobs
                .iter()
                .map(|j| {
                    (
                        cap.name_of(j).to_owned(),
                        j.begin_ns,
                        j.end_ns,
                        j.latency_ns,
                    )
                })
                .collect()
        };
        assert_eq!(names(&c, x), names(&back, y));
    }
    assert_eq!(c.frames, back.frames);
}

#[test]
fn reading_refuses_foreign_json() {
    let r = Capture::read_chrome_json(&br#"{"traceEvents":[]}"#[..]);
    assert!(matches!(r, Err(ReadError::NotJobsys)), "{r:?}");
    let r = Capture::read_chrome_json(
        &br#"{"traceEvents":[],"metadata":{"jobsys":{"format":"x"}}}"#[..],
    );
    assert!(matches!(r, Err(ReadError::NotJobsys)), "{r:?}");
    let r = Capture::read_chrome_json(&b"[1,2"[..]);
    assert!(matches!(r, Err(ReadError::Json(_))), "{r:?}");
}

#[test]
fn compare_sorts_by_absolute_difference() {
    let a = synthetic(20_000).analyse();
    let b = synthetic(40_000).analyse();
    let cmp = compare(&a, &b, CompareOptions::default());
    let rows: Vec<(&str, f64)> = cmp
        .rows
        .iter()
        .map(|r| (r.name.as_str(), r.abs_diff_ns))
        .collect();
    assert_eq!(rows[0], ("physics", 20_000.0));
    assert_eq!(cmp.rows[0].rel_diff, Some(1.0));
    assert_eq!(cmp.rows[0].a.mean_ns, 20_000.0);
    assert_eq!(cmp.rows[0].b.mean_ns, 40_000.0);
    assert!(rows[1..].iter().all(|r| r.1 == 0.0));
    let text = cmp.to_string();
    assert!(text.contains("+100.0%"), "{text}");
    // The other way round the difference is negative but sorts the same.
    let back = compare(&b, &a, CompareOptions::default());
    assert_eq!(back.rows[0].abs_diff_ns, -20_000.0);
}

#[test]
fn compare_with_itself_shows_no_difference() {
    let a = synthetic(20_000).analyse();
    for per_frame in [false, true] {
        let cmp = compare(&a, &a, CompareOptions { per_frame });
        assert!(!cmp.rows.is_empty());
        for r in &cmp.rows {
            assert_eq!(r.abs_diff_ns, 0.0);
            assert_eq!(r.rel_diff, Some(0.0));
            assert_eq!(r.a, r.b);
        }
        assert_eq!(cmp.frames.a, cmp.frames.b);
    }
}

#[test]
fn compare_per_frame_averages_over_frames() {
    use Event::*;
    // Two frames, "x" runs twice in the first and once in the second; one
    // more "x" outside any frame does not count per frame.
    let ev = |ts: u64, e| rec(ts, e);
    let job = |id: u64, b: u64, e: u64| {
        [
            ev(
                b,
                JobBegin {
                    job: JobId(id),
                    name: "x",
                },
            ),
            ev(
                e,
                JobEnd {
                    job: JobId(id),
                    name: "x",
                },
            ),
        ]
    };
    let mut events = vec![ev(0, FrameBegin { frame: 0 })];
    events.extend(job(1, 10, 20));
    events.extend(job(2, 30, 40));
    events.push(ev(50, FrameEnd { frame: 0 }));
    events.push(ev(60, FrameBegin { frame: 1 }));
    events.extend(job(3, 70, 100));
    events.push(ev(110, FrameEnd { frame: 1 }));
    events.extend(job(4, 200, 300));
    let t = Trace {
        start_ns: START,
        end_ns: START + 400,
        threads: vec![thread(0, false, "main", events)],
    };
    let c = t.analyse();
    assert_eq!(c.frames.len(), 2);
    let cmp = compare(&c, &c, CompareOptions { per_frame: true });
    assert_eq!(cmp.rows[0].a.count, 1.5);
    assert_eq!(cmp.rows[0].a.total_ns, 25.0);
    assert_eq!(cmp.rows[0].a.mean_ns, 50.0 / 3.0);
    let all = compare(&c, &c, CompareOptions::default());
    assert_eq!(all.rows[0].a.count, 4.0);
    assert_eq!(all.rows[0].a.total_ns, 150.0);
}

/// `n` cycles of (work `work` ns, wait `wait` ns) on a non-worker thread.
fn switching(n: u64, work: u64, wait: u64) -> Trace {
    use Event::*;
    let mut events = Vec::new();
    let mut t = 0;
    for k in 0..n {
        events.push(rec(t, WaitBegin { job: JobId(k) }));
        events.push(rec(
            t,
            JobBegin {
                job: JobId(1000 + k),
                name: "small",
            },
        ));
        t += work;
        events.push(rec(
            t,
            JobEnd {
                job: JobId(1000 + k),
                name: "small",
            },
        ));
        events.push(rec(t, SleepBegin));
        t += wait;
        events.push(rec(t, SleepEnd));
        events.push(rec(t, WaitEnd { job: JobId(k) }));
    }
    Trace {
        start_ns: START,
        end_ns: START + t + 1,
        threads: vec![thread(0, false, "main", events)],
    }
}

#[test]
fn rapid_switching_is_flagged() {
    let s = switching(20, 20_000, 30_000).summary();
    let r = s.threads[0].rapid_switching.expect("flagged");
    assert_eq!(r.switches, RAPID_MIN_SWITCHES + 10);
    assert!(
        s.warnings.iter().any(|w| w.contains("rapid switching")),
        "{:?}",
        s.warnings
    );
    assert!(s.to_string().contains("warning: main: rapid switching"));
}

#[test]
fn long_runs_and_back_to_back_jobs_are_not_rapid_switching() {
    // Long cycles.
    let s = switching(20, 200_000, 300_000).summary();
    assert_eq!(s.threads[0].rapid_switching, None);
    // Fewer short cycles than the threshold within a window.
    let s = switching(RAPID_MIN_SWITCHES as u64 - 1, 20_000, 30_000).summary();
    assert_eq!(s.threads[0].rapid_switching, None);
    // A worker running many tiny jobs back to back, searching in between.
    use Event::*;
    let mut events = vec![rec(0, SearchBegin)];
    for k in 0..200u64 {
        events.push(rec(
            k * 1_000 + 100,
            JobBegin {
                job: JobId(k),
                name: "tiny",
            },
        ));
        events.push(rec(
            k * 1_000 + 900,
            JobEnd {
                job: JobId(k),
                name: "tiny",
            },
        ));
    }
    let t = Trace {
        start_ns: START,
        end_ns: START + 200_000,
        threads: vec![thread(0, true, "worker 0", events)],
    };
    assert_eq!(t.summary().threads[0].rapid_switching, None);
}

#[test]
fn dropped_events_make_the_rest_unknown_and_warn() {
    let mut t = synthetic(20_000);
    t.threads[0].events.truncate(3); // SleepEnd, Steal, JobBegin at 12 µs
    t.threads[0].dropped = 6;
    let c = t.analyse();
    let w0 = &c.threads[0];
    assert_eq!(
        w0.states.last().map(|s| (s.state, s.begin_ns)),
        Some((ThreadState::Unknown, 12_000))
    );
    // The job that began before the buffer filled is clipped, not counted.
    assert!(!w0.jobs[0].complete);
    let s = c.summary();
    assert_eq!(s.threads[0].jobs_run, 0);
    assert!(s.warnings.iter().any(|w| w.contains("6 events dropped")));
}

#[test]
fn a_job_running_when_the_capture_starts_is_partial() {
    use Event::*;
    let t = Trace {
        start_ns: START,
        end_ns: START + 100,
        threads: vec![thread(
            0,
            true,
            "worker 0",
            vec![
                rec(10, WaitBegin { job: B }),
                rec(20, WaitEnd { job: B }),
                rec(
                    30,
                    JobEnd {
                        job: A,
                        name: "long",
                    },
                ),
                rec(40, SleepBegin),
            ],
        )],
    };
    let c = t.analyse();
    let w = &c.threads[0];
    assert_eq!(
        states(w),
        vec![
            (ThreadState::Working, 0, 10),
            (ThreadState::Waiting, 10, 20),
            (ThreadState::Working, 20, 30),
            (ThreadState::Searching, 30, 40),
            (ThreadState::Sleeping, 40, 100),
        ]
    );
    assert_eq!(w.jobs.len(), 1);
    assert!(!w.jobs[0].complete);
    assert_eq!(c.name_of(&w.jobs[0]), "long");
    assert!(t.summary().jobs.is_empty());
}

fn raw(t: &Trace) -> Vec<u8> {
    let mut buf = Vec::new();
    t.write_raw(&mut buf).unwrap();
    buf
}

#[test]
fn a_raw_capture_reads_back_to_the_same_trace() {
    use Event::*;
    let mut t = synthetic(20_123);
    // The kinds `synthetic` lacks, and a name that needs escaping.
    t.threads[1].events = vec![
        rec(1, SearchBegin),
        rec(2, Wake { wakee: None }),
        rec(
            3,
            JobBegin {
                job: JobId(u64::MAX),
                name: "tab\t\"quote\" \u{1}",
            },
        ),
        rec(
            4,
            JobEnd {
                job: JobId(u64::MAX),
                name: "tab\t\"quote\" \u{1}",
            },
        ),
    ];
    t.threads[1].dropped = 3;
    let file = raw(&t);
    let back = read_raw(&file[..]).unwrap();
    assert_eq!(back, t);
    // `Capture::read` analyses it: the same capture as in process.
    assert_eq!(Capture::read(&file[..]).unwrap(), t.analyse());
    assert_eq!(Capture::read(&file[..]).unwrap().summary(), t.summary());
    // A raw capture is not Chrome JSON, and the other way round.
    assert!(matches!(
        Capture::read_chrome_json(&file[..]),
        Err(ReadError::Format(_))
    ));
    let plain = synthetic(20_123);
    let (chrome, _) = export(&plain);
    assert!(matches!(read_raw(&chrome[..]), Err(ReadError::Format(_))));
    assert_eq!(
        Capture::read(&chrome[..]).unwrap().summary(),
        Capture::read(&raw(&plain)[..]).unwrap().summary(),
        "either file gives the same summary"
    );
    // Only the raw file keeps control characters (Chrome JSON cannot have
    // them: Perfetto rejects `\u` escapes).
    let (chrome, _) = export(&t);
    let names = Capture::read(&chrome[..]).unwrap().names;
    assert!(
        names.contains(&"tab\t\"quote\" \u{FFFD}".to_owned()),
        "{names:?}"
    );
}

#[test]
fn reading_a_raw_capture_says_what_is_wrong() {
    let good = String::from_utf8(raw(&synthetic(20_000))).unwrap();
    let err = |doc: &str| match read_raw(doc.as_bytes()) {
        Err(ReadError::Format(m)) => m,
        other => panic!("{other:?}"),
    };
    assert!(err(&good.replace("\"version\":3", "\"version\":4")).contains("newer"));
    assert!(err(&good.replace("\"steal\",2", "\"steel\",2")).contains("unknown kind \"steel\""));
    assert!(err(&good.replace("\"steal\",2", "\"steal\"")).contains("no victim"));
    assert!(err(&good.replace("\"0x000000000000000a\"", "10")).contains("bad job id"));
    assert!(err(
        r#"{"threads":[],"format":"jobsys-raw-trace","version":1,"start_ns":0,"end_ns":0}"#
    )
    .contains("before \"format\""));
    let r = read_raw(good.replace("jobsys-raw-trace", "other").as_bytes());
    assert!(matches!(r, Err(ReadError::NotJobsys)), "{r:?}");
    let r = read_raw(&br#"{"format":"jobsys-raw-trace","version":1,"threads":[}"#[..]);
    assert!(matches!(r, Err(ReadError::Json(_))), "{r:?}");
    // Only whole documents: nothing after the end.
    let r = read_raw(format!("{good} 1").as_bytes());
    assert!(matches!(r, Err(ReadError::Json(_))), "{r:?}");
}

/// `synthetic` with the active worker count changed three times, by two
/// threads (main benches both workers, a worker following the CPUs brings
/// one back, main lets both run).
fn with_active_changes() -> Trace {
    let mut t = synthetic(20_000);
    let aw = |ts, count| rec(ts, Event::ActiveWorkers { count });
    t.threads[2].events.push(aw(30_000, 0));
    t.threads[2].events.push(aw(80_000, 2));
    t.threads[0].events.push(aw(50_000, 1));
    for th in &mut t.threads {
        th.events.sort_by_key(|r| r.ts_ns);
    }
    t
}

#[test]
fn active_worker_changes_are_a_counter_track_and_a_summary_line() {
    let t = with_active_changes();
    let c = t.analyse();
    let got: Vec<(u64, u32)> = c
        .active_workers
        .iter()
        .map(|a| (a.ts_ns, a.count))
        .collect();
    assert_eq!(got, vec![(30_000, 0), (50_000, 1), (80_000, 2)]);

    let (buf, v) = export(&t);
    let Some(Json::Arr(evs)) = v.get("traceEvents") else {
        panic!("no traceEvents")
    };
    let counters: Vec<(Option<u64>, Option<u64>)> = evs
        .iter()
        .filter(|e| s(e, &["ph"]) == Some("C"))
        .map(|e| {
            assert_eq!(s(e, &["name"]), Some("active workers"));
            (
                e.get("ts").and_then(Json::as_ns),
                e.get("args")
                    .and_then(|a| a.get("count"))
                    .and_then(Json::as_u64),
            )
        })
        .collect();
    assert_eq!(
        counters,
        vec![
            (Some(30_000), Some(0)),
            (Some(50_000), Some(1)),
            (Some(80_000), Some(2))
        ]
    );
    // Both files read back to the same changes and summary.
    let back = Capture::read_chrome_json(&buf[..]).unwrap();
    assert_eq!(back.active_workers, c.active_workers);
    assert_eq!(back.summary(), t.summary());
    let file = raw(&t);
    assert_eq!(read_raw(&file[..]).unwrap(), t);
    assert!(String::from_utf8_lossy(&file).contains(r#""active_workers",1]"#));

    let summary = t.summary();
    assert_eq!(summary.active_workers, vec![0, 1, 2]);
    let text = summary.to_string();
    assert!(
        text.contains("active workers: 0 -> 1 -> 2 (3 changes)\n"),
        "{text}"
    );
    // No change in the capture: no line.
    assert!(!synthetic(20_000)
        .summary()
        .to_string()
        .contains("active workers"));
}

#[test]
fn a_long_active_worker_history_is_shortened_to_its_ends_and_range() {
    let mut t = synthetic(20_000);
    for k in 0..20u64 {
        t.threads[2].events.push(rec(
            60_000 + k * 100,
            Event::ActiveWorkers {
                count: (k % 3) as u32,
            },
        ));
    }
    t.threads[2].events.sort_by_key(|r| r.ts_ns);
    let text = t.summary().to_string();
    assert!(
        text.contains(
            "active workers: 0 -> 1 -> 2 -> 0 -> … -> 0 -> 1 (20 changes, between 0 and 2)"
        ),
        "{text}"
    );
}

#[test]
fn the_validator_wants_numeric_counter_args() {
    let doc = |args: &str| {
        format!(r#"{{"traceEvents":[{{"name":"c","ph":"C","ts":1,"pid":1,"tid":0{args}}}]}}"#)
    };
    assert!(validate_chrome_json(doc(r#","args":{"count":2}"#).as_bytes()).is_ok());
    assert!(validate_chrome_json(doc("").as_bytes())
        .unwrap_err()
        .contains("counter without args"));
    assert!(
        validate_chrome_json(doc(r#","args":{"count":"2"}"#).as_bytes())
            .unwrap_err()
            .contains("numbers")
    );
}

/// Declared access, known answer. Main (thread 2) schedules, at 100-500 ns:
/// 1 writes "positions"; 2 reads "positions" and writes "velocities"; 3
/// reads "positions"; 4 writes "velocities"; 5 reads an unnamed resource.
/// Derived edges: 2 and 3 after 1 (positions), 4 after 2 (velocities).
/// Worker 0 runs 1 (1-5 µs), whose end releases 2 and 3; worker 1 runs 2
/// (5.1-6 µs), whose end releases 4, and 3 and 4; 5 runs at once.
fn access_capture() -> Trace {
    use jobsys::trace::AccessMode::*;
    use Event::*;
    let j = JobId;
    let job = |b: u64, e: u64, id: u64, name: &'static str| {
        [
            rec(b, JobBegin { job: j(id), name }),
            rec(e, JobEnd { job: j(id), name }),
        ]
    };
    let released = |ts: u64, id: u64| {
        rec(
            ts,
            JobReady {
                job: j(id),
                by_dependency: true,
            },
        )
    };
    let access = |ts, resource, name, mode| {
        rec(
            ts,
            Access {
                resource,
                name,
                mode,
            },
        )
    };
    let mut main = vec![rec(0, CaptureStart)];
    for (ts, id, list) in [
        (100, 1, vec![(1, "positions", Write)]),
        (
            200,
            2,
            vec![(1, "positions", Read), (2, "velocities", Write)],
        ),
        (300, 3, vec![(1, "positions", Read)]),
        (400, 4, vec![(2, "velocities", Write)]),
        (500, 5, vec![(9, "", Read)]),
    ] {
        main.push(rec(ts, Accesses { job: j(id) }));
        for (res, name, mode) in list {
            main.push(access(ts, res, name, mode));
        }
    }
    // A release is stamped after the releasing job's end (the core's
    // `job_end` comes just before `finish`).
    let mut w0 = job(1_000, 5_000, 1, "integrate").to_vec();
    w0.push(released(5_000, 2));
    w0.push(released(5_000, 3));
    w0.extend(job(5_600, 5_700, 5, "unnamed reader"));
    let mut w1 = job(5_100, 6_000, 2, "forces").to_vec();
    w1.push(released(6_000, 4));
    w1.extend(job(6_100, 6_200, 3, "draw"));
    w1.extend(job(6_300, 6_400, 4, "damp"));
    Trace {
        start_ns: START,
        end_ns: START + 10_000,
        threads: vec![
            thread(0, true, "worker 0", w0),
            thread(1, true, "worker 1", w1),
            thread(2, false, "main", main),
        ],
    }
}

/// The summary charges each released job's wait (scheduled -> released)
/// to the resource whose derived edge released it: positions 4800 + 4700
/// (jobs 2 and 3, released by 1), velocities 5600 (job 4, released by 2),
/// the unnamed one nothing (job 5 had no dependency).
#[test]
fn the_summary_lists_the_resources_that_serialised_the_frame() {
    let t = access_capture();
    let s = t.summary();
    let row = |name: &str| {
        s.resources
            .iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("{name} in {:?}", s.resources))
    };
    let (p, v, u) = (row("positions"), row("velocities"), row("#9"));
    assert_eq!(
        (p.accesses, p.writes, p.waits, p.wait_ns, p.max_wait_ns),
        (3, 1, 2, 4_800 + 4_700, 4_800)
    );
    assert_eq!(
        (v.accesses, v.writes, v.waits, v.wait_ns, v.max_wait_ns),
        (2, 2, 1, 5_600, 5_600)
    );
    assert_eq!((u.accesses, u.waits, u.wait_ns), (1, 0, 0));
    let order: Vec<&str> = s.resources.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(order, ["positions", "velocities", "#9"]);
    let text = s.to_string();
    assert!(
        text.contains("resources that serialised the frame most"),
        "{text}"
    );
    let line = text
        .lines()
        .find(|l| l.starts_with("positions "))
        .expect("a positions row");
    assert!(line.contains("9.50 µs"), "{line}");
    // Without access events there is no such section.
    assert!(!synthetic(20_000)
        .summary()
        .to_string()
        .contains("serialised"));
}

/// A job with derived edges through two resources is charged to the one
/// whose dependency finished last, the one that released it. Job 6 writes
/// positions (edges to 1, 2, 3) and velocities (edge to 4); 4 ends last
/// (6.4 µs) and releases it: velocities gets its 5.8 µs wait, positions
/// nothing more.
#[test]
fn a_wait_is_charged_to_the_resource_whose_edge_released_the_job() {
    use jobsys::trace::AccessMode::Write;
    let mut t = access_capture();
    let main = &mut t.threads[2].events;
    main.push(rec(600, Event::Accesses { job: JobId(6) }));
    for (resource, name) in [(1, "positions"), (2, "velocities")] {
        main.push(rec(
            600,
            Event::Access {
                resource,
                name,
                mode: Write,
            },
        ));
    }
    let w1 = &mut t.threads[1].events;
    w1.push(rec(
        6_400,
        Event::JobReady {
            job: JobId(6),
            by_dependency: true,
        },
    ));
    w1.push(rec(
        6_500,
        Event::JobBegin {
            job: JobId(6),
            name: "settle",
        },
    ));
    w1.push(rec(
        6_600,
        Event::JobEnd {
            job: JobId(6),
            name: "settle",
        },
    ));
    let s = t.summary();
    let row = |name: &str| s.resources.iter().find(|r| r.name == name).unwrap();
    let (p, v) = (row("positions"), row("velocities"));
    assert_eq!((p.accesses, p.writes), (4, 2));
    assert_eq!((p.waits, p.wait_ns), (2, 9_500), "not charged for job 6");
    assert_eq!(
        (v.waits, v.wait_ns, v.max_wait_ns),
        (2, 5_600 + 5_800, 5_800)
    );
    assert_eq!(s.resources[0].name, "velocities", "now the largest");
}

/// Accesses travel as arguments of the job slices, and through the raw
/// file (version 2); a version 1 file (no access kinds) still reads.
#[test]
fn accesses_are_args_of_the_job_slices_and_survive_the_raw_file() {
    let t = access_capture();
    let back = read_raw(&raw(&t)[..]).unwrap();
    assert_eq!(back, t);
    let (_, v) = export(&t);
    let Some(Json::Arr(events)) = v.get("traceEvents") else {
        panic!("no traceEvents");
    };
    let slice = |name: &str| {
        events
            .iter()
            .find(|e| s(e, &["name"]) == Some(name) && s(e, &["cat"]) == Some("job"))
            .unwrap_or_else(|| panic!("no slice {name}"))
    };
    let labels = |e: &Json, key: &str| -> Vec<String> {
        match e.get("args").and_then(|a| a.get(key)) {
            Some(Json::Arr(a)) => a.iter().map(|x| x.as_str().unwrap().to_owned()).collect(),
            None => Vec::new(),
            other => panic!("{key}: {other:?}"),
        }
    };
    let forces = slice("forces");
    assert_eq!(labels(forces, "reads"), ["positions"]);
    assert_eq!(labels(forces, "writes"), ["velocities"]);
    assert!(labels(forces, "write_each").is_empty());
    assert_eq!(labels(slice("unnamed reader"), "reads"), ["#9"]);
    assert!(labels(slice("integrate"), "reads").is_empty());

    let v1 = br#"{"format":"jobsys-raw-trace","version":1,"start_ns":0,"end_ns":10,"threads":[
{"index":0,"name":"w","worker":true,"dropped":0,"events":[[1,"job_begin","0x000000000000000a","a"],[2,"job_end","0x000000000000000a","a"]]}]}"#;
    let old = read_raw(&v1[..]).unwrap();
    assert_eq!(old.threads[0].events.len(), 2);
    assert!(old.analyse().accesses.is_empty());
}

/// A worker with run-queue samples (`RunQueueWait`): after job A it looks
/// for work for 880 µs, 800 µs of which it waited for a CPU; later 30 µs
/// of a 50 µs search-and-spin, then 60 µs while asleep (a wake-up that
/// waited for a CPU). 1.2 ms in all.
fn preempted_trace() -> Trace {
    use Event::*;
    let rq = |wait_ns| RunQueueWait { wait_ns };
    let w0 = vec![
        rec(0, SleepEnd),
        rec(0, rq(0)),
        rec(10_000, JobBegin { job: A, name: "a" }),
        rec(20_000, JobEnd { job: A, name: "a" }),
        rec(900_000, JobBegin { job: B, name: "b" }),
        rec(900_000, rq(800_000)),
        rec(950_000, JobEnd { job: B, name: "b" }),
        rec(960_000, SpinBegin),
        rec(1_000_000, SleepBegin),
        rec(1_000_000, rq(30_000)),
        rec(1_100_000, SleepEnd),
        rec(1_100_000, rq(60_000)),
    ];
    Trace {
        start_ns: START,
        end_ns: START + 1_200_000,
        threads: vec![thread(0, true, "worker 0", w0)],
    }
}

#[test]
fn run_queue_wait_is_drawn_as_preempted_inside_searching_and_spinning() {
    use ThreadState::*;
    let c = preempted_trace().analyse();
    let t = &c.threads[0];
    assert_eq!(
        states(t),
        vec![
            (Searching, 0, 10_000),
            (Working, 10_000, 20_000),
            (Searching, 20_000, 100_000),
            (Preempted, 100_000, 900_000),
            (Working, 900_000, 950_000),
            (Searching, 950_000, 960_000),
            (Spinning, 960_000, 970_000),
            (Preempted, 970_000, 1_000_000),
            (Sleeping, 1_000_000, 1_100_000),
            (Searching, 1_100_000, 1_200_000),
        ]
    );
    assert_eq!(t.run_queue_ns, Some(890_000));
    // The wait of the sleeping interval has no searching to go to.
    assert_eq!(t.run_queue_other_ns, 60_000);
    assert!(!t.run_queue_unknown);
}

#[test]
fn attribution_never_takes_more_than_the_searching_there_is() {
    use ThreadState::*;
    let span = |state, b, e| StateSpan {
        state,
        begin_ns: b,
        end_ns: e,
    };
    let mut st = vec![
        span(Working, 0, 100),
        span(Searching, 100, 130),
        span(Working, 130, 200),
        span(Searching, 200, 220),
    ];
    // 100 ns of wait in [0, 220): 20 + 30 of searching hold 50 of it.
    let other = attribute_preemption(&mut st, &[(220, 100)]);
    assert_eq!(other, 50);
    assert_eq!(
        st,
        vec![
            span(Working, 0, 100),
            span(Preempted, 100, 130),
            span(Working, 130, 200),
            span(Preempted, 200, 220),
        ]
    );
    // No samples, or zero waits: nothing changes.
    let before = st.clone();
    assert_eq!(attribute_preemption(&mut st, &[]), 0);
    assert_eq!(attribute_preemption(&mut st, &[(50, 0), (220, 0)]), 0);
    assert_eq!(st, before);
}

#[test]
fn the_summary_counts_preempted_time_and_blames_oversubscription() {
    let s = preempted_trace().summary();
    let t = &s.threads[0];
    assert_eq!(t.state_ns.preempted, 830_000);
    assert_eq!(t.preempted_spans, 2);
    assert_eq!(t.run_queue_ns, Some(890_000));
    assert!(t.mostly_preempted);
    let total: u64 = ThreadState::ALL.iter().map(|&st| t.state_ns.get(st)).sum();
    assert_eq!(total, s.duration_ns, "states still cover the capture");
    let w: Vec<&String> = s
        .warnings
        .iter()
        .filter(|w| w.contains("preempted"))
        .collect();
    assert_eq!(w.len(), 1, "{:?}", s.warnings);
    assert!(w[0].contains("oversubscribed"), "{}", w[0]);
    assert!(w[0].contains("not contention"), "{}", w[0]);
    assert!(!s.warnings.iter().any(|w| w.contains("not measured")));
    let text = s.to_string();
    assert!(text.contains("preempted"), "{text}");

    // Without samples nothing is preempted and nothing is said.
    let plain = synthetic(20_000).summary();
    assert!(plain
        .threads
        .iter()
        .all(|t| t.state_ns.preempted == 0 && t.run_queue_ns.is_none() && !t.mostly_preempted));
    assert!(!plain.warnings.iter().any(|w| w.contains("preempted")));
}

#[test]
fn a_thread_preempted_a_little_is_not_mostly_preempted() {
    use Event::*;
    // 600 µs of searching, 200 µs of it waiting for a CPU: counted and
    // warned about, but the searching is not blamed on the OS.
    let w0 = vec![
        rec(0, SleepEnd),
        rec(0, RunQueueWait { wait_ns: 0 }),
        rec(600_000, JobBegin { job: A, name: "a" }),
        rec(600_000, RunQueueWait { wait_ns: 200_000 }),
        rec(700_000, JobEnd { job: A, name: "a" }),
        rec(700_000, SleepBegin),
    ];
    let t = Trace {
        start_ns: START,
        end_ns: START + 800_000,
        threads: vec![thread(0, true, "worker 0", w0)],
    };
    let s = t.summary();
    assert_eq!(s.threads[0].state_ns.preempted, 200_000);
    assert_eq!(s.threads[0].state_ns.searching, 400_000);
    assert!(!s.threads[0].mostly_preempted);
    let w = s.warnings.iter().find(|w| w.contains("preempted")).unwrap();
    assert!(!w.contains("not contention"), "{w}");
}

#[test]
fn a_capture_without_schedstat_says_so_once() {
    use Event::*;
    let unknown = |i| {
        thread(
            i,
            true,
            &format!("worker {i}"),
            vec![
                rec(0, SleepEnd),
                rec(0, RunQueueUnknown),
                rec(10, SleepBegin),
            ],
        )
    };
    let t = Trace {
        start_ns: START,
        end_ns: START + 100_000,
        threads: vec![unknown(0), unknown(1)],
    };
    let c = t.analyse();
    assert!(c
        .threads
        .iter()
        .all(|t| t.run_queue_unknown && t.run_queue_ns.is_none()));
    let s = c.summary();
    let said: Vec<_> = s
        .warnings
        .iter()
        .filter(|w| w.contains("run-queue wait not measured"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", s.warnings);
    // It survives the Chrome JSON round trip.
    let (buf, _) = export(&t);
    let back = Capture::read_chrome_json(&buf[..]).unwrap();
    assert!(back.threads.iter().all(|t| t.run_queue_unknown));
    assert_eq!(back.summary(), s);
}

#[test]
fn preempted_spans_are_exported_as_state_slices_and_read_back() {
    let t = preempted_trace();
    let (buf, v) = export(&t);
    let Some(Json::Arr(events)) = v.get("traceEvents") else {
        panic!("no traceEvents");
    };
    let preempted: Vec<&Json> = events
        .iter()
        .filter(|e| s(e, &["name"]) == Some("preempted"))
        .collect();
    assert_eq!(preempted.len(), 2);
    for e in &preempted {
        assert_eq!(s(e, &["cat"]), Some("state"));
        assert_eq!(s(e, &["ph"]), Some("X"));
        assert_eq!(s(e, &["cname"]), Some("yellow"));
    }
    let meta = &v.get("metadata").unwrap().get("jobsys").unwrap();
    let Some(Json::Arr(threads)) = meta.get("threads") else {
        panic!("no threads");
    };
    assert_eq!(
        threads[0].get("run_queue_ns").and_then(Json::as_u64),
        Some(890_000)
    );
    let back = Capture::read_chrome_json(&buf[..]).unwrap();
    let c = t.analyse();
    assert_eq!(back.threads[0].states, c.threads[0].states);
    assert_eq!(back.threads[0].run_queue_ns, Some(890_000));
    assert_eq!(back.threads[0].run_queue_other_ns, 60_000);
    assert_eq!(back.summary(), t.summary());
    // And the raw file keeps the samples.
    let file = raw(&t);
    assert_eq!(read_raw(&file[..]).unwrap(), t);
    let text = String::from_utf8(file).unwrap();
    assert!(text.contains(r#"[1000000,"run_queue_wait",0]"#), "{text}");
}

#[test]
fn the_picture_draws_preempted_in_its_own_colour() {
    let c = preempted_trace().analyse();
    let svg = render::render(&c, &render::Options::whole(&c, 1200));
    let colour = render::state_colour(ThreadState::Preempted);
    for other in ThreadState::ALL {
        if other != ThreadState::Preempted {
            assert_ne!(render::state_colour(other), colour, "{other:?}");
        }
    }
    assert!(
        svg.contains(r#"class="state preempted""#),
        "no preempted slice"
    );
    assert!(svg.contains(&format!(r#"fill="{colour}""#)));
    assert!(svg.contains(">preempted</text>"), "legend");
}
