//! `jobsys-trace render` on a synthetic capture with known content, and the
//! renderer on a small real capture. The SVG is checked as text: balanced
//! tags, one row per thread, the legend, arrows. No timing assertions.

use jobsys::trace::{Event, JobId, Record, ThreadEvents, Trace};
use jobsys::JobSystem;
use jobsys_trace::render::{render, Options};
use jobsys_trace::{ThreadState, TraceExt};
use std::path::PathBuf;
use std::process::Command;

const A: JobId = JobId(0xA);
const B: JobId = JobId(0xB);
const C: JobId = JobId(0xC);

fn rec(ts_ns: u64, event: Event) -> Record {
    Record { ts_ns, event }
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
/// "render"), spins and sleeps, is woken by main at 59 µs. Worker 1 records
/// nothing. Main schedules, waits, helps with a job, blocks, runs "render"
/// and wakes worker 0; one frame. 100 µs in all.
fn synthetic() -> Trace {
    use Event::*;
    let job = |job, name| (JobBegin { job, name }, JobEnd { job, name });
    let (pb, pe) = job(A, "physics");
    let (cb, ce) = job(B, "my::closure <&'static str>");
    let (rb, re) = job(C, "render");
    let ready = |job, by_dependency| JobReady { job, by_dependency };
    let w0 = vec![
        rec(10_000, SleepEnd),
        rec(12_000, Steal { victim: 2 }),
        rec(12_000, pb),
        rec(31_000, ready(C, true)),
        rec(32_000, pe),
        rec(35_000, SpinBegin),
        rec(40_000, SleepBegin),
        rec(60_000, SleepEnd),
        rec(65_000, SleepBegin),
    ];
    let main = vec![
        rec(0, CaptureStart),
        rec(1_000, FrameBegin { frame: 0 }),
        rec(2_000, ready(A, false)),
        rec(3_000, ready(B, false)),
        rec(5_000, WaitBegin { job: C }),
        rec(6_000, cb),
        rec(16_000, ce),
        rec(20_000, SleepBegin),
        rec(45_000, SleepEnd),
        rec(46_000, rb),
        rec(56_000, re),
        rec(57_000, WaitEnd { job: C }),
        rec(59_000, Wake { wakee: Some(0) }),
        rec(90_000, FrameEnd { frame: 0 }),
    ];
    Trace {
        start_ns: 0,
        end_ns: 100_000,
        threads: vec![
            thread(0, true, "worker 0", w0),
            thread(1, true, "worker 1", vec![]),
            thread(2, false, "main", main),
        ],
    }
}

/// Check that the text is one `<svg>` element with properly nested tags
/// (no `<` or `&` outside tags and entities), and return the tag names in
/// document order.
fn check_xmlish(svg: &str) -> Vec<String> {
    assert!(svg.starts_with("<?xml"), "{svg}");
    let mut rest = svg[svg.find("?>").unwrap() + 2..].trim();
    assert!(rest.starts_with("<svg") && rest.ends_with("</svg>"));
    let mut stack: Vec<String> = Vec::new();
    let mut tags = Vec::new();
    while let Some(open) = rest.find('<') {
        let text = &rest[..open];
        for (i, _) in text.match_indices('&') {
            let ent = &text[i..text[i..].find(';').map_or(text.len(), |e| i + e + 1)];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;", "&apos;"].contains(&ent),
                "bad entity {ent:?}"
            );
        }
        let close = open + rest[open..].find('>').expect("unclosed tag");
        let tag = &rest[open + 1..close];
        assert!(!tag.contains('<'), "'<' inside a tag: {tag}");
        assert_eq!(tag.matches('"').count() % 2, 0, "unbalanced quotes: {tag}");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name), "mismatched </{name}>");
        } else {
            let name: String = tag
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            assert!(!name.is_empty(), "bad tag <{tag}>");
            if !tag.ends_with('/') {
                stack.push(name.clone());
            }
            tags.push(name);
        }
        rest = &rest[close + 1..];
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
    assert!(rest.trim().is_empty());
    tags
}

fn tmp(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name)
}

fn run(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_jobsys-trace"))
        .args(args)
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn render_draws_rows_states_jobs_arrows_frames_and_a_legend() {
    let json = tmp("render-synthetic.json");
    synthetic()
        .write_chrome_json(std::fs::File::create(&json).unwrap())
        .unwrap();
    let svg_path = tmp("render-synthetic.svg");
    let (ok, err) = run(&[
        "render",
        json.to_str().unwrap(),
        "-o",
        svg_path.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    check_xmlish(&svg);

    // One row per thread, in thread order, named.
    assert_eq!(svg.matches(r#"<g class="row""#).count(), 3);
    let a = svg.find(r#"data-name="worker 0""#).unwrap();
    let b = svg.find(r#"data-name="worker 1""#).unwrap();
    let c = svg.find(r#"data-name="main""#).unwrap();
    assert!(a < b && b < c);
    // The legend names every state; states drawn are the derived ones.
    let legend = &svg[svg.find(r#"<g class="legend">"#).unwrap()..];
    let legend = &legend[..legend.find("</g>").unwrap()];
    for s in ThreadState::ALL {
        assert!(legend.contains(&format!(">{}<", s.name())), "{legend}");
    }
    for s in ["working", "sleeping", "spinning", "waiting", "blocked"] {
        assert!(svg.contains(&format!(r#"class="state {s}""#)), "{s}");
    }
    // Jobs labelled by name (escaped), one wake and one release arrow, the
    // frame, and the axis in microseconds.
    assert!(svg.contains(">physics<"));
    assert!(svg.contains("my::closure &lt;&amp;&apos;static str&gt;"));
    assert_eq!(svg.matches(r#"class="arrow wake""#).count(), 1);
    assert_eq!(svg.matches(r#"class="arrow release""#).count(), 1);
    assert!(svg.contains(">frame 0<"));
    assert!(svg.contains(">µs<"));

    // A window: 70 µs to 100 µs holds no arrow and no job.
    let (ok, err) = run(&[
        "render",
        json.to_str().unwrap(),
        "-o",
        svg_path.to_str().unwrap(),
        "--from-ms",
        "0.07",
        "--to-ms",
        "0.1",
    ]);
    assert!(ok, "{err}");
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    check_xmlish(&svg);
    assert_eq!(svg.matches(r#"<g class="row""#).count(), 3);
    assert!(!svg.contains("class=\"arrow"));
    assert!(!svg.contains(r#"<g class="job">"#));

    // An empty window is an error with a message.
    let (ok, err) = run(&[
        "render",
        json.to_str().unwrap(),
        "-o",
        svg_path.to_str().unwrap(),
        "--from-ms",
        "5",
    ]);
    assert!(!ok);
    assert!(err.contains("empty window"), "{err}");
}

#[test]
fn render_a_real_capture() {
    let js = JobSystem::builder().workers(2).build().unwrap();
    js.trace_start();
    for _ in 0..2 {
        let _frame = js.frame();
        let a = js.job().name("a").schedule(|| {});
        let b = js.job().desc("b").after(&[a]).schedule(|| {});
        let c = js
            .job()
            .desc("c")
            .after(&[b])
            .parallel_for(0..64, jobsys::Batch::Fixed(8), |_| {});
        js.complete(c);
    }
    let capture = js.trace_stop().analyse();
    let svg = render(&capture, &Options::whole(&capture, 1200));
    check_xmlish(&svg);
    assert!(!capture.threads.is_empty());
    assert_eq!(
        svg.matches(r#"<g class="row""#).count(),
        capture.threads.len()
    );
    assert!(svg.contains(r#"<g class="legend">"#));
    assert!(svg.contains(r#"class="frame""#));
    let json = capture.write_chrome_json(Vec::new());
    assert!(json.is_ok());
}
