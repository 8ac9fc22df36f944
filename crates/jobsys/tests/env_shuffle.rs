//! The JOBSYS_SHUFFLE environment variable (`Builder::shuffle` for
//! programs that do not call it, C and C++ ones included). Environment
//! variables are process-global, so this binary holds a single test that
//! goes through every case in order.

mod common;

use jobsys::{BuildError, JobSystem};

const VAR: &str = "JOBSYS_SHUFFLE";

/// The order 12 independent jobs ran in at `workers(0)`.
fn order(js: &JobSystem) -> Vec<usize> {
    common::run_order(js, 12)
}

fn with_env(value: Option<&str>) -> Result<JobSystem, BuildError> {
    match value {
        Some(v) => std::env::set_var(VAR, v),
        None => std::env::remove_var(VAR),
    }
    JobSystem::builder().workers(0).build()
}

#[test]
fn jobsys_shuffle_environment_variable() {
    let saved = std::env::var_os(VAR);
    let usual = order(&with_env(None).unwrap());
    // Find two seeds whose orders differ from each other (most do).
    let by_seed = |s: u64| order(&JobSystem::builder().workers(0).shuffle(s).build().unwrap());
    let (a, b) = (by_seed(1), by_seed(2));
    assert_ne!(a, b, "seeds 1 and 2 gave one order");

    // Set: the same order as Builder::shuffle with that seed.
    assert_eq!(order(&with_env(Some("1")).unwrap()), a);
    assert_eq!(order(&with_env(Some(" 2 ")).unwrap()), b);
    // Builder::shuffle wins over the variable.
    std::env::set_var(VAR, "1");
    let explicit = JobSystem::builder().workers(0).shuffle(2).build().unwrap();
    assert_eq!(order(&explicit), b);
    // `random` shuffles with one seed for the process: each job still
    // runs once, and every system built with it takes the same order.
    let r = order(&with_env(Some("random")).unwrap());
    assert_eq!(order(&with_env(Some("random")).unwrap()), r);
    let mut sorted = r.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..12).collect::<Vec<_>>());

    // Not a seed: a clear error naming the variable.
    for bad in ["", "-1", "seed", "18446744073709551616"] {
        match with_env(Some(bad)) {
            Err(e @ BuildError::BadEnvironment { variable: VAR, .. }) => {
                let text = e.to_string();
                assert!(
                    text.contains("JOBSYS_SHUFFLE") && text.contains("not a shuffle seed"),
                    "{text}"
                );
            }
            Err(other) => panic!("{bad:?}: {other}"),
            Ok(_) => panic!("{bad:?} was taken as a seed"),
        }
    }

    // Unset again: the usual order.
    assert_eq!(order(&with_env(None).unwrap()), usual);
    match saved {
        Some(v) => std::env::set_var(VAR, v),
        None => std::env::remove_var(VAR),
    }
}
