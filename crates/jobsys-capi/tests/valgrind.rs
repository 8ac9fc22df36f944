//! The C API tests (`tests/c/api_test.c`, `handles_test.c`,
//! `profiler_test.c`) under valgrind memcheck: no invalid reads or writes,
//! no leaks. Allocations that live as long as the process and that
//! memcheck misclassifies are suppressed in `tests/valgrind.supp`, each
//! with the reason.
//!
//! Without valgrind installed each test is skipped with a note, unless
//! `JOBSYS_REQUIRE_VALGRIND=1` (CI sets it), which makes that a failure.

mod common;

use std::process::Command;

/// Build the C program `source` and run it under memcheck with `args`;
/// its output, or `None` when valgrind is missing (and not required).
fn memcheck(source: &str, args: &[&str]) -> Option<String> {
    if Command::new("valgrind").arg("--version").output().is_err() {
        assert!(
            std::env::var("JOBSYS_REQUIRE_VALGRIND").as_deref() != Ok("1"),
            "valgrind is not installed, and JOBSYS_REQUIRE_VALGRIND=1"
        );
        eprintln!("SKIPPED: valgrind is not installed");
        return None;
    }
    let exe = common::build_c(source);
    let mut cmd = Command::new("valgrind");
    cmd.args([
        "--error-exitcode=1",
        "--leak-check=full",
        "--errors-for-leak-kinds=definite,possible",
        "--num-callers=40",
        "-q",
    ])
    .arg(format!(
        "--suppressions={}",
        common::crate_dir().join("tests/valgrind.supp").display()
    ))
    .arg(exe)
    .args(args);
    Some(common::run(cmd, 300))
}

#[test]
fn c_api_test_is_clean_under_valgrind() {
    if let Some(out) = memcheck("tests/c/api_test.c", &[]) {
        assert!(out.ends_with("api_test: ok\n"), "{out}");
    }
}

/// `tests/c/handles_test.c` (8 threads at once, handles across threads and
/// thread exits, the drain, foreign, forged and stale handles) under
/// memcheck, with 500 jobs per thread.
#[test]
fn c_handles_test_is_clean_under_valgrind() {
    if let Some(out) = memcheck("tests/c/handles_test.c", &["500"]) {
        assert!(out.ends_with("handles_test: ok\n"), "{out}");
    }
}

/// `tests/c/profiler_test.c` (the C profiler callbacks, called from the
/// workers while they run, sleep and exit) under memcheck, with 40 jobs.
#[test]
fn c_profiler_test_is_clean_under_valgrind() {
    if let Some(out) = memcheck("tests/c/profiler_test.c", &["40"]) {
        assert!(out.ends_with("profiler_test: ok\n"), "{out}");
    }
}
