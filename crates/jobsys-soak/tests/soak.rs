//! A short soak, in-process: it must pass, and its counts must add up
//! (faults were injected and exactly those were reported, dependents failed
//! as the replay expected, systems were rebuilt and retired by drop races).
//! Also the command line: `soak --minutes 0.02 --quick` succeeds.

use jobsys_bench::progress::Progress;
use jobsys_soak::plan::Sizes;
use jobsys_soak::system::Choices;
use jobsys_soak::{soak, Options};
use std::sync::Mutex;
use std::time::Duration;

/// The soak compares the process's thread count at two points: one soak at
/// a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[test]
fn a_short_soak_passes_and_its_counts_add_up() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let o = Options {
        duration: Some(Duration::from_secs(60)), // a safety net; frames decide
        frames: Some(120),
        seed: 0x50A4_0001,
        sizes: Sizes::quick(),
        choices: Choices::new(cores, None, None).unwrap(),
        frame_timeout: Duration::from_secs(60),
        rss_bound_kib: 64 * 1024,
        repro: "test".into(),
    };
    let r = soak(&o, &Progress::off());
    println!("{}", r.render());
    assert!(r.failures.is_empty(), "{:#?}", r.failures);
    assert_eq!(
        r.frames, 120,
        "the frame bound, not the time bound, ended it"
    );
    let t = r.tally;
    assert!(t.injected > 0, "no faults injected: {t:?}");
    assert_eq!(t.reported, t.injected, "{t:?}");
    assert!(t.dependents_expected > 0, "{t:?}");
    assert_eq!(t.dependents_failed, t.dependents_expected, "{t:?}");
    assert!(t.jobs > 10_000, "{t:?}");
    assert!(r.systems >= 2 && r.drop_races >= 1, "{r:?}");
    assert!(r.bursts.0 >= 1 && r.scopes.0 >= 1 && r.joins >= 1, "{r:?}");
    assert_eq!(r.frame_ms.len(), 120);
    if cfg!(target_os = "linux") {
        let (a, b) = (
            r.start.expect("warm-up reading"),
            r.end.expect("end reading"),
        );
        assert!(b.threads <= a.threads, "{a:?} {b:?}");
    }
}

#[test]
fn the_soak_command_runs_for_fractional_minutes() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    jobsys_soak::run([
        "jobsys-soak",
        "--minutes",
        "0.02",
        "--seed",
        "0x5eed",
        "--quick",
    ])
    .unwrap_or_else(|e| panic!("soak failed: {e}"));
    let bad = jobsys_soak::run(["jobsys-soak", "--minutes", "0", "--quick"]);
    assert!(matches!(bad, Err(jobsys_soak::Error::Args(_))), "{bad:?}");
    // Flags of other commands are refused, not silently ignored.
    for flag in [["--trace", "x.json"], ["--notrace-bin", "x"]] {
        let bad = jobsys_bench::run([
            "jobsys-bench",
            "soak",
            "--minutes",
            "0.01",
            flag[0],
            flag[1],
        ]);
        assert!(
            matches!(bad, Err(jobsys_soak::Error::Args(_))),
            "{flag:?}: {bad:?}"
        );
    }
}
