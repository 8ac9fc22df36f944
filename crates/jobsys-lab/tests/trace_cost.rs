//! `jobsys-lab trace-cost --quick` end to end, as a contributor runs it: it builds its child
//! program `jobsys-w1` twice with cargo (without and with jobsys's `trace`
//! feature; about a minute the first time, cached after), runs the four
//! variants (out, off, recording, empty profiler hooks) and writes its
//! JSON rows. No timing is asserted; what is
//! asserted is that every variant measured, and that the untraced child
//! really had the tracer compiled out (it reports `jobsys::trace::COMPILED`,
//! and trace-cost refuses a binary that says otherwise).

use jobsys_bench::json::{self, Row};
use serde_json::Value;
use std::path::PathBuf;

fn run(args: &[&str]) -> jobsys_lab::Result<()> {
    let mut v = vec!["jobsys-lab"];
    v.extend_from_slice(args);
    jobsys_lab::run(v)
}

fn param<'a>(r: &'a Row, key: &str) -> &'a Value {
    r.params
        .get(key)
        .unwrap_or_else(|| panic!("no {key} in {r:?}"))
}

#[test]
fn trace_cost_quick_builds_and_measures_four_variants() {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("jobsys-lab-trace-cost");
    let _ = std::fs::remove_dir_all(&out);
    let o = out.to_str().expect("utf-8 temp dir");
    run(&["trace-cost", "--quick", "--workers", "0,1", "--out", o])
        .unwrap_or_else(|e| panic!("trace-cost --quick failed: {e}"));

    let rows = json::read(&json::path_for(&out, "trace-cost")).expect("JSON rows");
    let variants = [
        ("jobsys-notrace", "compiled-out", false, false),
        ("jobsys-trace-off", "off", true, false),
        ("jobsys-trace-recording", "recording", true, true),
        ("jobsys-hooks-empty", "hooks", true, false),
    ];
    assert_eq!(rows.len(), 2 * 4 * variants.len(), "{rows:#?}");
    for r in &rows {
        assert_eq!(r.workload, "trace-cost");
        assert_eq!(r.unit, "ns/job");
        assert_eq!(r.n, 6, "--quick: 6 samples per variant and row: {r:?}");
        assert_eq!(r.samples.as_ref().map(Vec::len), Some(r.n), "{r:?}");
        assert!(r.median.is_finite() && r.median > 0.0, "{r:?}");
        assert!(r.min <= r.median && r.median <= r.max, "{r:?}");
        let (_, trace, compiled, recording) = variants
            .iter()
            .find(|v| v.0 == r.imp)
            .unwrap_or_else(|| panic!("unknown impl {}", r.imp));
        assert_eq!(param(r, "trace"), trace);
        // What the child binary reported about itself: the untraced build
        // has the event sites compiled out.
        assert_eq!(param(r, "trace_compiled"), compiled, "{r:?}");
        assert_eq!(param(r, "recording"), recording, "{r:?}");
        if r.imp == "jobsys-notrace" {
            assert_eq!(param(r, "x_notrace_median").as_f64(), Some(1.0));
        }
    }
    for case in ["single", "flat", "nested", "pfor-empty"] {
        for w in [0, 1] {
            for v in &variants {
                assert!(
                    rows.iter()
                        .any(|r| r.case == case && r.workers == Some(w) && r.imp == v.0),
                    "no {} row for {case} at {w} workers",
                    v.0
                );
            }
        }
    }
    // Recording single jobs records events (ready, begin, end, wait).
    let rec_single = rows
        .iter()
        .find(|r| r.imp == "jobsys-trace-recording" && r.case == "single")
        .expect("recording single");
    assert!(rec_single
        .param_f64("events_per_job")
        .is_some_and(|e| e >= 3.0));

    // The traced child passed off as the untraced one is refused.
    let traced = param(rec_single, "binary").as_str().expect("binary path");
    let again = out.join("again");
    let err = run(&[
        "trace-cost",
        "--quick",
        "--workers",
        "0",
        "--samples",
        "1",
        "--notrace-bin",
        traced,
        "--trace-bin",
        traced,
        "--out",
        again.to_str().expect("utf-8"),
    ])
    .expect_err("a traced --notrace-bin must be refused");
    assert!(
        matches!(&err, jobsys_bench::Error::Verify(m) if m.contains("trace_compiled = true")),
        "{err}"
    );
    // The child options belong to trace-cost, which is the lab's: the
    // benchmark has no such option.
    assert!(matches!(
        jobsys_bench::run([
            "jobsys-bench",
            "spawn-empty",
            "--quick",
            "--notrace-bin",
            traced
        ]),
        Err(jobsys_bench::Error::Args(_))
    ));
}
