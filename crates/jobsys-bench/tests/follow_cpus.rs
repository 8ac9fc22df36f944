//! `follow-cpus --quick`, in a test binary of its own: it restricts the
//! affinity of every thread of the process while a phase runs, which must
//! not leak into other tests' threads (a thread started meanwhile would
//! inherit the narrow mask). No timing is asserted.

use jobsys_bench::json::{self, Row};
use std::path::PathBuf;

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn follow_cpus_quick() {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("jobsys-bench-follow-cpus");
    let _ = std::fs::remove_dir_all(&out);
    let before = cores();
    jobsys_bench::run([
        "jobsys-bench",
        "follow-cpus",
        "--quick",
        "--out",
        out.to_str().expect("utf-8 temp dir"),
    ])
    .expect("follow-cpus --quick");
    assert_eq!(cores(), before, "the affinity mask is given back");
    let path = json::path_for(&out, "follow-cpus");
    if before < 2 || !cfg!(target_os = "linux") {
        assert!(!path.exists(), "skipped: no rows");
        return;
    }
    let rows: Vec<Row> = json::read(&path).expect("JSON rows");
    // 2 durations x 3 phases x (serial, fixed, follow_cpus).
    assert_eq!(rows.len(), 18);
    for r in &rows {
        assert_eq!(r.workload, "follow-cpus");
        assert!(r.n > 0 && r.median.is_finite(), "{r:?}");
        assert_eq!(r.unit, "us");
        let phase = r.params.get("phase").and_then(|p| p.as_str()).unwrap();
        assert!(r.case.ends_with(phase), "{r:?}");
        if r.imp == "serial" {
            continue;
        }
        let workers = r.workers.expect("jobsys rows have workers");
        assert_eq!(workers, before - 1);
        let seen = r.params["active_workers_frames"].as_object().unwrap();
        let frames: u64 = seen.values().map(|v| v.as_u64().unwrap()).sum();
        assert_eq!(frames as usize, r.n, "every frame's active count: {r:?}");
        let counts: Vec<usize> = seen.keys().map(|k| k.parse().unwrap()).collect();
        assert!(counts.iter().all(|&c| c <= workers), "{r:?}");
        if r.imp == "jobsys fixed" {
            assert_eq!(counts, vec![workers], "a fixed count never changes: {r:?}");
        }
    }
    for imp in ["serial", "jobsys fixed", "jobsys follow_cpus"] {
        assert_eq!(rows.iter().filter(|r| r.imp == imp).count(), 6, "{imp}");
    }
}
