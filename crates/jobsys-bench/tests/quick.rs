//! Every workload's `--quick` mode, run in-process as CI would run it: it
//! must succeed (every implementation's result checked by the workload
//! itself) and write its JSON rows (and plots). No timing is asserted.

use jobsys_bench::json::{self, Row};
use std::path::PathBuf;
use std::sync::Mutex;

/// Workloads measure the whole process (CPU time, thread counters): run
/// one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn out_dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("jobsys-bench-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn run(args: &[&str]) -> jobsys_bench::Result<()> {
    let mut v = vec!["jobsys-bench"];
    v.extend_from_slice(args);
    jobsys_bench::run(v)
}

/// Run `cmd --quick`, check its JSON (and the listed plots); the rows.
fn quick(cmd: &str, extra: &[&str], plots: &[&str]) -> Vec<Row> {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    quick_held(cmd, extra, plots)
}

/// [`quick`], the caller holding `ONE_AT_A_TIME`.
fn quick_held(cmd: &str, extra: &[&str], plots: &[&str]) -> Vec<Row> {
    let out = out_dir(cmd);
    let out_s = out.to_str().expect("utf-8 temp dir");
    let mut args = vec![cmd, "--quick", "--out", out_s];
    args.extend_from_slice(extra);
    run(&args).unwrap_or_else(|e| panic!("{cmd} --quick failed: {e}"));
    let rows = json::read(&json::path_for(&out, cmd)).expect("JSON rows");
    assert!(!rows.is_empty(), "{cmd}: no rows");
    for r in &rows {
        assert_eq!(r.workload, cmd);
        assert!(r.machine.cores >= 1);
        assert!(r.median.is_finite(), "{cmd}: {r:?}");
        assert!(r.min <= r.median && r.median <= r.max, "{cmd}: {r:?}");
        assert!(r.n > 0 || r.imp == "ideal", "{cmd}: empty row {r:?}");
    }
    for p in plots {
        let svg = std::fs::read_to_string(out.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
        assert!(
            svg.starts_with("<svg") && svg.contains("</svg>"),
            "{p} is not an SVG"
        );
    }
    rows
}

fn impls(rows: &[Row]) -> Vec<&str> {
    let mut v: Vec<&str> = rows.iter().map(|r| r.imp.as_str()).collect();
    v.sort_unstable();
    v.dedup();
    v
}

#[test]
fn spawn_empty_quick() {
    let rows = quick("spawn-empty", &[], &[]);
    assert_eq!(
        impls(&rows),
        [
            "floor-cl",
            "floor-cl-nofence",
            "floor-fence",
            "floor-mem128",
            "floor-mem64",
            "floor-thief",
            "jobsys",
            "rayon",
            "serial"
        ]
    );
    for case in ["single", "flat", "nested", "pfor-empty"] {
        assert!(rows.iter().any(|r| r.case == case), "missing {case}");
    }
    assert!(rows.iter().all(|r| r.imp != "jobsys" || r.policy.is_some()));
    // Every idle policy has its rows.
    for p in jobsys_bench::pools::policies() {
        assert!(
            rows.iter()
                .any(|r| r.policy.as_deref() == Some(p.name.as_str())),
            "no rows for {}",
            p.name
        );
    }
    // One row per floor, in its case, at its helper count (0, and 1 for
    // the two-thread `floor-thief`; not one row per worker count), and
    // printed with its ratio to the serial row.
    let table = jobsys_bench::table::render("W1", &[], &rows, false, &[]);
    for f in jobsys_bench::workloads::w1_floor::Floor::ALL {
        let mine: Vec<&Row> = rows
            .iter()
            .filter(|r| r.imp == f.imp() && r.case == f.case.name())
            .collect();
        assert_eq!(mine.len(), 1, "{}", f.name());
        assert_eq!(mine[0].workers, Some(f.threads() - 1), "{}", f.name());
        assert_eq!(mine[0].threads, Some(f.threads()), "{}", f.name());
        let line = table
            .lines()
            .find(|l| l.starts_with(f.case.name()) && l.split_whitespace().nth(1) == Some(f.imp()))
            .unwrap_or_else(|| panic!("no table line for {}:\n{table}", f.name()));
        assert!(
            line.contains("ns/job") && line.split_whitespace().any(|c| c.ends_with('x')),
            "{line}"
        );
    }
}

#[test]
fn policy_selection() {
    let rows = quick(
        "wake-latency",
        &["--policy", "always-spin", "--workers", "1"],
        &[],
    );
    let policies: Vec<_> = rows.iter().filter_map(|r| r.policy.clone()).collect();
    assert!(!policies.is_empty());
    assert!(policies.iter().all(|p| p == "always-spin"), "{policies:?}");
}

/// Run `cmd --quick` (W2 or W3) and check its static-split floor rows:
/// for every case and worker count (one rayon row each), one row per
/// `static_floor::configs` entry, measured; its helper threads spawned once
/// per row, not per frame, and all stopped once the run is over.
fn quick_with_floors(cmd: &str, plots: &[&str]) -> Vec<Row> {
    use jobsys_bench::static_split::{live_threads, spawned_threads};
    use jobsys_bench::workloads::static_floor::configs;
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let spawned = spawned_threads();
    let rows = quick_held(cmd, &[], plots);
    assert_eq!(
        live_threads(),
        0,
        "{cmd}: floor threads outlived their rows"
    );
    let floors: Vec<&Row> = rows
        .iter()
        .filter(|r| r.imp.starts_with("floor-static"))
        .collect();
    let helpers: u64 = floors.iter().map(|r| r.threads.unwrap() as u64 - 1).sum();
    assert!(helpers > 0, "{cmd}: no floor ran helpers");
    assert_eq!(
        spawned_threads() - spawned,
        helpers,
        "{cmd}: spawned per row"
    );
    let mut want = 0;
    for r in rows.iter().filter(|r| r.imp == "rayon") {
        let w = r.workers.unwrap();
        for (imp, threads) in configs(w, r.machine.cores) {
            let mine: Vec<&&Row> = floors
                .iter()
                .filter(|f| f.case == r.case && f.imp == imp && f.workers == Some(w))
                .collect();
            assert_eq!(mine.len(), 1, "{cmd} {} {imp} w={w}", r.case);
            assert_eq!(mine[0].threads, Some(threads));
            assert!(mine[0].n > 0 && mine[0].policy.is_none());
            want += 1;
        }
    }
    assert_eq!(floors.len(), want, "{cmd}: stray floor rows");
    // The xfloor column: jobsys and rayon over the same group's floor.
    use jobsys_bench::workloads::static_floor::xfloor;
    for r in &rows {
        let cell = xfloor(r, &rows);
        let measured = r.imp == "jobsys" || r.imp == "rayon";
        assert_eq!(cell.ends_with('x'), measured, "{cmd}: {cell} for {r:?}");
    }
    rows
}

#[test]
fn parallel_for_quick() {
    let rows = quick_with_floors("parallel-for", &[]);
    assert_eq!(
        impls(&rows),
        [
            "floor-static",
            "floor-static-oversub",
            "jobsys",
            "rayon",
            "serial"
        ]
    );
    assert_eq!(rows.iter().filter(|r| r.imp == "serial").count(), 4);
}

#[test]
fn frame_graph_quick_and_replot() {
    let rows = quick_with_floors("frame-graph", &["frame-graph.svg"]);
    assert_eq!(
        impls(&rows),
        [
            "floor-static",
            "floor-static-oversub",
            "ideal",
            "jobsys",
            "rayon",
            "serial"
        ]
    );
    assert_eq!(rows.iter().filter(|r| r.imp == "serial").count(), 4);
    // The floor rows are printed with their ratio to the ideal row.
    let table = jobsys_bench::table::render(
        "W3",
        &[],
        &rows,
        false,
        &[("xideal", &jobsys_bench::workloads::frame_graph::xideal)],
    );
    let floor_lines = table
        .lines()
        .filter(|l| l.split_whitespace().nth(1) == Some("floor-static"))
        .collect::<Vec<_>>();
    assert!(!floor_lines.is_empty(), "{table}");
    for l in floor_lines {
        assert!(l.trim_end().ends_with('x'), "no xideal: {l}");
    }
    // The plot is drawn from the JSON alone.
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("jobsys-bench-frame-graph");
    std::fs::remove_file(out.join("frame-graph.svg")).expect("svg written");
    run(&["plot", "--out", out.to_str().expect("utf-8")]).expect("plot");
    assert!(out.join("frame-graph.svg").exists());
}

#[test]
fn frame_graph_trace() {
    let dir = out_dir("frame-graph-trace");
    let file = dir.join("trace").join("frames.json");
    let file_s = file.to_str().expect("utf-8 temp dir");
    let rows = quick("frame-graph", &["--workers", "0,1", "--trace", file_s], &[]);
    assert!(rows.iter().any(|r| r.imp == "jobsys"));
    let f = std::fs::File::open(&file).expect("trace written");
    jobsys_trace::validate_chrome_json(std::io::BufReader::new(f)).expect("valid Chrome JSON");
    let text = std::fs::read_to_string(&file).expect("trace text");
    assert!(text.contains("\"frame 4\""), "5 frame markers");
    // --trace belongs to frame-graph.
    assert!(matches!(
        run(&["spawn-empty", "--quick", "--trace", file_s]),
        Err(jobsys_bench::Error::Args(_))
    ));
}

#[test]
fn access_graph_quick() {
    let rows = quick("access-graph", &[], &[]);
    assert_eq!(impls(&rows), ["jobsys-access", "jobsys-explicit"]);
    for case in ["derive", "D=0.5us"] {
        assert_eq!(rows.iter().filter(|r| r.case == case).count(), 2, "{case}");
    }
    assert!(rows.iter().all(|r| r
        .param_f64("overhead_ns_per_access_min")
        .is_some_and(f64::is_finite)));
}

#[test]
fn frame_graph_background_quick() {
    let rows = quick("frame-graph-background", &["--workers", "0,1"], &[]);
    assert_eq!(impls(&rows), ["ideal", "jobsys", "rayon", "serial"]);
    for on in [true, false] {
        let n = rows
            .iter()
            .filter(|r| r.params.get("priority_inheritance") == Some(&on.into()))
            .count();
        assert_eq!(n, 2, "jobsys rows with priority_inheritance = {on}");
    }
    assert!(rows
        .iter()
        .all(|r| r.param_f64("background_jobs_per_frame") == Some(4.0)));
}

#[test]
fn wake_latency_quick() {
    let rows = quick("wake-latency", &[], &["wake-latency.svg"]);
    assert!(rows
        .iter()
        .all(|r| r.samples.as_ref().is_some_and(|s| s.len() == r.n)));
    assert!(rows.iter().all(|r| r.workers != Some(0)));
    // A futex-floor row per worker count, cold only, one helper thread.
    for r in rows.iter().filter(|r| r.imp == "rayon" && r.case == "cold") {
        let floors = rows
            .iter()
            .filter(|f| f.case == "cold" && f.imp == "futex-floor" && f.workers == r.workers)
            .count();
        assert_eq!(floors, 1, "{r:?}");
    }
    assert!(rows
        .iter()
        .filter(|r| r.imp == "futex-floor")
        .all(|r| r.case == "cold" && r.threads == Some(1) && r.policy.is_none()));
}

#[test]
fn idle_cost_quick() {
    let rows = quick("idle-cost", &["--workers", "0,1,2"], &[]);
    for case in ["extra-cpu", "frame-wall"] {
        assert!(rows.iter().any(|r| r.case == case && r.imp == "serial"));
        // A futex-floor row for every worker count >= 1: w helpers + main.
        let floor: Vec<_> = rows
            .iter()
            .filter(|r| r.case == case && r.imp == "futex-floor")
            .map(|r| (r.workers, r.threads))
            .collect();
        assert_eq!(floor, [(Some(1), Some(2)), (Some(2), Some(3))], "{case}");
        // The wake-all floor only where it differs: 2 helpers and more.
        let all: Vec<_> = rows
            .iter()
            .filter(|r| r.case == case && r.imp == "futex-floor-all")
            .map(|r| (r.workers, r.threads, r.n > 0))
            .collect();
        assert_eq!(all, [(Some(2), Some(3), true)], "{case}");
    }
}

#[test]
fn wake_primitives_quick() {
    let rows = quick("wake-primitives", &[], &["wake-primitives.svg"]);
    assert_eq!(impls(&rows), ["condvar", "futex", "posix-sem"]);
    assert_eq!(rows.len(), 3 * 2 * 2 * 6);
}

#[test]
fn contended_quick() {
    let rows = quick("contended", &[], &[]);
    assert!(rows.iter().any(|r| r.case.ends_with("hog")));
    assert!(rows.iter().any(|r| r.case.ends_with("uncontended")));
}

#[test]
fn bad_arguments_are_an_error() {
    assert!(matches!(
        run(&["no-such-workload"]),
        Err(jobsys_bench::Error::Args(_))
    ));
    assert!(matches!(
        run(&["frame-graph", "--workers", "x"]),
        Err(jobsys_bench::Error::Args(_))
    ));
    assert!(matches!(
        run(&["spawn-empty", "--quick", "--policy", "no-such-policy"]),
        Err(jobsys_bench::Error::Args(_))
    ));
}

#[test]
fn policies_table_and_plot() {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out = out_dir("policies");
    let o = out.to_str().expect("utf-8 temp dir");
    // Without the W4 and W5 JSON there is nothing to combine.
    assert!(run(&["policies", "--out", o]).is_err());
    let quick = ["--quick", "--samples", "2", "--out", o];
    run(&[&["wake-latency", "--workers", "1"], &quick[..]].concat()).expect("wake-latency");
    run(&[&["idle-cost", "--workers", "0,1"], &quick[..]].concat()).expect("idle-cost");
    run(&["policies", "--out", o]).expect("policies");
    let svg = std::fs::read_to_string(out.join("latency-vs-cpu.svg")).expect("svg");
    assert!(
        svg.starts_with("<svg") && svg.contains("w=1"),
        "labelled points"
    );
    let lat = json::read(&json::path_for(&out, "wake-latency")).expect("W4 rows");
    let idle = json::read(&json::path_for(&out, "idle-cost")).expect("W5 rows");
    let points = jobsys_bench::workloads::policies::combine(&lat, &idle);
    let policies = jobsys_bench::pools::policies().len();
    assert_eq!(
        points.len(),
        2 * (policies + 1) + 1,
        "jobsys per policy + rayon, 2 worker counts; the futex floor at 1"
    );
    assert!(points
        .iter()
        .filter(|p| p.workers == 1)
        .all(|p| p.cold_p50.is_some() && p.extra_cpu.is_some()));
    let last = points.last().expect("points");
    assert!(last.is_floor() && last.workers == 1, "{last:?}");
    assert!(points
        .iter()
        .filter(|p| p.workers == 1 && !p.is_floor())
        .all(|p| p.cold_x_floor.is_some()));
    assert!(svg.contains("futex floor"), "floor legend");
    std::fs::remove_file(out.join("latency-vs-cpu.svg")).expect("svg");
    run(&["plot", "--out", o]).expect("plot");
    assert!(out.join("latency-vs-cpu.svg").exists());
}
