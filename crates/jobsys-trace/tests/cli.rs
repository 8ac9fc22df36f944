//! The `jobsys-trace` command on synthetic captures, written as raw
//! captures (`Trace::write_raw`) and as Chrome JSON (the library).

use jobsys::trace::{Event, JobId, Record, ThreadEvents, Trace};
use jobsys_trace::TraceExt;
use std::path::PathBuf;
use std::process::Command;

/// Main runs one `physics` job of `physics_ns` and one `audio` job of 5 µs
/// inside one frame; worker 0 sleeps throughout.
fn capture(physics_ns: u64) -> Trace {
    let r = |ts: u64, event| Record { ts_ns: ts, event };
    let (p, a) = (JobId(1), JobId(2));
    let main = vec![
        r(0, Event::FrameBegin { frame: 0 }),
        r(
            1_000,
            Event::JobReady {
                job: p,
                by_dependency: false,
            },
        ),
        r(2_000, Event::WaitBegin { job: p }),
        r(
            2_000,
            Event::JobBegin {
                job: p,
                name: "physics",
            },
        ),
        r(
            2_000 + physics_ns,
            Event::JobEnd {
                job: p,
                name: "physics",
            },
        ),
        r(
            2_000 + physics_ns,
            Event::JobBegin {
                job: a,
                name: "audio",
            },
        ),
        r(
            7_000 + physics_ns,
            Event::JobEnd {
                job: a,
                name: "audio",
            },
        ),
        r(7_000 + physics_ns, Event::WaitEnd { job: p }),
        r(8_000 + physics_ns, Event::FrameEnd { frame: 0 }),
    ];
    Trace {
        start_ns: 0,
        end_ns: 10_000 + physics_ns,
        threads: vec![
            ThreadEvents {
                index: 0,
                name: "worker 0".into(),
                worker: true,
                dropped: 0,
                events: vec![r(9_000 + physics_ns, Event::SleepEnd)],
            },
            ThreadEvents {
                index: 1,
                name: "main".into(),
                worker: false,
                dropped: 0,
                events: main,
            },
        ],
    }
}

fn write(name: &str, t: &Trace) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    t.write_chrome_json(std::fs::File::create(&path).unwrap())
        .unwrap();
    path
}

fn write_raw(name: &str, t: &Trace) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    t.write_raw(std::fs::File::create(&path).unwrap()).unwrap();
    path
}

fn run(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_jobsys-trace"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn summary_prints_threads_and_jobs() {
    let a = write("cli-summary.json", &capture(20_000));
    let (ok, out, err) = run(&["summary", a.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.contains("main"), "{out}");
    assert!(out.contains("physics"), "{out}");
    assert!(out.contains("1 frames"), "{out}");
    let (ok, out, err) = run(&["summary", "--json", a.to_str().unwrap()]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // The same numbers as the library's summary of the trace (both through
    // JSON text, whose floats serde_json reads back to within one ulp).
    let lib = serde_json::to_string(&capture(20_000).summary()).unwrap();
    assert_eq!(v, serde_json::from_str::<serde_json::Value>(&lib).unwrap());
    assert_eq!(v["jobs"][0]["name"], "physics");
    assert_eq!(v["jobs"][0]["total_ns"], 20_000);
}

#[test]
fn compare_sorts_by_absolute_difference() {
    let a = write("cli-a.json", &capture(20_000));
    let b = write("cli-b.json", &capture(50_000));
    let (ok, out, err) = run(&[
        "compare",
        "--json",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows[0]["name"], "physics");
    assert_eq!(rows[0]["abs_diff_ns"], 30_000.0);
    assert_eq!(rows[0]["rel_diff"], 1.5);
    assert_eq!(rows[1]["name"], "audio");
    assert_eq!(rows[1]["abs_diff_ns"], 0.0);
    let (ok, out, err) = run(&[
        "compare",
        "--frames",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("counts and totals per frame"), "{out}");
    let first = out.lines().find(|l| l.starts_with("physics")).unwrap();
    assert!(first.contains("+150.0%"), "{out}");
    // The same capture twice: no difference anywhere.
    let (ok, out, _) = run(&[
        "compare",
        "--json",
        a.to_str().unwrap(),
        a.to_str().unwrap(),
    ]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["abs_diff_ns"] == 0.0));
}

#[test]
fn bad_input_is_an_error_with_a_message() {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-foreign.json");
    std::fs::write(&path, r#"{"traceEvents":[]}"#).unwrap();
    let (ok, _, err) = run(&["summary", path.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("not a jobsys capture"), "{err}");
    let (ok, _, err) = run(&["summary", "/nonexistent/capture.json"]);
    assert!(!ok);
    assert!(err.contains("/nonexistent/capture.json"), "{err}");
    // --frames needs frames in both captures.
    let mut t = capture(1_000);
    t.threads[1]
        .events
        .retain(|r| !matches!(r.event, Event::FrameBegin { .. }));
    let nf = write("cli-noframes.json", &t);
    let (ok, _, err) = run(&[
        "compare",
        "--frames",
        nf.to_str().unwrap(),
        nf.to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(err.contains("no complete frames"), "{err}");
}

#[test]
fn every_command_reads_raw_captures_and_export_writes_chrome_json() {
    let t = capture(20_000);
    let raw = write_raw("cli-raw.raw.json", &t);
    let chrome = write("cli-raw-chrome.json", &t);
    let (raw, chrome) = (raw.to_str().unwrap(), chrome.to_str().unwrap());
    let (ok, from_raw, err) = run(&["summary", "--json", raw]);
    assert!(ok, "{err}");
    let (ok, from_chrome, err) = run(&["summary", "--json", chrome]);
    assert!(ok, "{err}");
    assert_eq!(from_raw, from_chrome, "the same summary from either file");
    let (ok, out, err) = run(&["compare", "--json", raw, chrome]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["abs_diff_ns"] == 0.0));
    let svg = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-raw.svg");
    let (ok, _, err) = run(&["render", raw, "-o", svg.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(std::fs::read_to_string(&svg).unwrap().contains(">physics<"));

    // export: Chrome JSON that viewers open, with the same summary.
    let json = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-exported.json");
    let (ok, _, err) = run(&["export", raw, "-o", json.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(err.contains("ui.perfetto.dev"), "{err}");
    let f = std::fs::File::open(&json).unwrap();
    jobsys_trace::validate_chrome_json(std::io::BufReader::new(f)).expect("valid Chrome JSON");
    let (ok, exported, err) = run(&["summary", "--json", json.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert_eq!(exported, from_raw);
    let (ok, _, err) = run(&["export", "/nonexistent/capture.json", "-o", "x.json"]);
    assert!(!ok);
    assert!(err.contains("/nonexistent/capture.json"), "{err}");
}

/// `jobsys-trace summary x.json | head -1`: the reader closes the pipe
/// early. The command stops quietly (status 0, nothing on stderr) instead
/// of panicking on the failed write.
#[test]
fn closed_stdout_is_not_a_panic() {
    use std::process::Stdio;
    let a = write("cli-pipe.json", &capture(20_000));
    for args in [
        vec!["summary", a.to_str().unwrap()],
        vec!["summary", "--json", a.to_str().unwrap()],
        vec!["compare", a.to_str().unwrap(), a.to_str().unwrap()],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_jobsys-trace"))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Close the read end at once: the command is still starting and
        // reading its capture, so its first write finds no reader.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
        assert!(out.status.success(), "{args:?}: {:?} {err}", out.status);
    }
}
