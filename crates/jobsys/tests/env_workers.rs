//! The JOBSYS_WORKERS environment variable. Environment variables are
//! process-global, so this binary holds a single test that goes through
//! every case in order.

use jobsys::{BuildError, Config, JobSystem, MAX_WORKERS};

const VAR: &str = "JOBSYS_WORKERS";

fn workers_from_env(value: Option<&str>) -> Result<usize, BuildError> {
    match value {
        Some(v) => std::env::set_var(VAR, v),
        None => std::env::remove_var(VAR),
    }
    JobSystem::builder().build().map(|js| js.workers())
}

#[test]
fn jobsys_workers_environment_variable() {
    let saved = std::env::var_os(VAR);

    // Unset: the CPUs this process may use (affinity mask and cgroup quota,
    // as `topology()` reports them), minus one for the caller.
    assert_eq!(
        workers_from_env(None).unwrap(),
        jobsys::topology().default_workers
    );

    // Set: overrides the default.
    assert_eq!(workers_from_env(Some("3")).unwrap(), 3);
    assert_eq!(workers_from_env(Some("0")).unwrap(), 0);
    assert_eq!(workers_from_env(Some(" 2 ")).unwrap(), 2);
    // Config::default() (workers: None) reads it as well.
    std::env::set_var(VAR, "1");
    assert_eq!(JobSystem::new(Config::default()).unwrap().workers(), 1);

    // Not a worker count: a BadEnvironment error naming the variable and
    // the value, in Display and in Debug (what `unwrap` prints).
    for bad in ["abc", "", "-1", "2.5", "4 workers"] {
        match workers_from_env(Some(bad)) {
            Err(e @ BuildError::BadEnvironment { .. }) => {
                let BuildError::BadEnvironment { variable, value } = &e else {
                    unreachable!()
                };
                assert_eq!(*variable, VAR);
                assert_eq!(value, bad);
                let msg = e.to_string();
                assert!(msg.contains(VAR), "{msg}");
                let debug = format!("{e:?}");
                assert!(debug.contains(VAR), "{debug}");
                assert!(debug.contains(&format!("{bad:?}")), "{debug}");
            }
            other => panic!("{VAR}={bad:?}: expected BadEnvironment, got {other:?}"),
        }
    }

    // Too many: the same limit as the builder.
    match workers_from_env(Some("1000000")) {
        Err(BuildError::TooManyWorkers { requested, max }) => {
            assert_eq!((requested, max), (1_000_000, MAX_WORKERS));
        }
        other => panic!("expected TooManyWorkers, got {other:?}"),
    }

    // An explicit worker count wins over the variable, even a bad one.
    std::env::set_var(VAR, "abc");
    let js = JobSystem::builder().workers(1).build().unwrap();
    assert_eq!(js.workers(), 1);
    let h = js.schedule(|| {});
    js.complete(h);
    drop(js);

    match saved {
        Some(v) => std::env::set_var(VAR, v),
        None => std::env::remove_var(VAR),
    }

    // A bad JOBSYS_IDLE_POLICY: the error names the variable and the value
    // in Display and in Debug. (Here, not in a test of its own: tests of
    // one binary run at once, and every build reads both variables.)
    const POLICY: &str = "JOBSYS_IDLE_POLICY";
    let saved = std::env::var(POLICY).ok();
    std::env::set_var(POLICY, "sleepy");
    match JobSystem::builder().workers(0).build() {
        Err(e @ BuildError::BadPolicy { .. }) => {
            for text in [e.to_string(), format!("{e:?}")] {
                assert!(text.contains(POLICY), "{text}");
                assert!(text.contains("sleepy"), "{text}");
            }
        }
        other => panic!("{POLICY}=sleepy: expected BadPolicy, got {:?}", other.err()),
    }
    match saved {
        Some(v) => std::env::set_var(POLICY, v),
        None => std::env::remove_var(POLICY),
    }
}
