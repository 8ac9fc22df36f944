//! Calls from a job's `release` callback end (`tests/c/wait_ends.c`):
//! `jobsys_destroy` on the job's own system returns `JOBSYS_ERR_BAD_STATE`
//! (it would wait for the job whose callback is running), and
//! `jobsys_complete` on the job's own handle returns
//! `JOBSYS_ERR_WAIT_ON_SELF`, for a job that ran, one skipped because its
//! dependency failed, one cancelled before it started (the callback runs
//! inside `jobsys_cancel`), and a parallel_for, run, skipped or
//! cancelled. Each scenario is one run of the C program, with 0 and with 2
//! workers; the program ends a call that never returns with an alarm
//! (naming the scenario), and `run` kills it if even that fails.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The C program, compiled once for all the tests here (they run in
/// parallel and would otherwise write the same executable at once).
fn exe() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| common::build_c("tests/c/wait_ends.c"))
}

/// Run `scenario` with 0 and with 2 workers; each must print its "ok".
fn scenario(name: &str) {
    for workers in ["0", "2"] {
        let mut cmd = Command::new(exe());
        cmd.args([name, workers]);
        let out = common::run(cmd, 60);
        assert!(
            out.ends_with(&format!("wait_ends {name} workers={workers}: ok\n")),
            "{out}"
        );
    }
}

/// The job ran; its release callback (called as the job ends) destroys
/// the job's own system.
#[test]
fn destroy_in_the_release_of_a_job_that_ran_is_bad_state() {
    scenario("destroy_in_release");
}

/// The job was skipped (its dependency failed); its release callback
/// destroys the job's own system.
#[test]
fn destroy_in_the_release_of_a_skipped_job_is_bad_state() {
    scenario("destroy_in_release_skipped");
}

/// A parallel_for's release callback destroys the loop's own system.
#[test]
fn destroy_in_the_release_of_a_loop_is_bad_state() {
    scenario("destroy_in_release_loop");
}

/// The job ran; its release callback waits on the job's own handle.
#[test]
fn waiting_on_its_own_job_in_the_release_of_a_job_that_ran_is_wait_on_self() {
    scenario("wait_in_release");
}

/// The job was skipped; its release callback waits on the job's own handle.
#[test]
fn waiting_on_its_own_job_in_the_release_of_a_skipped_job_is_wait_on_self() {
    scenario("wait_in_release_skipped");
}

/// A parallel_for that ran; its release callback waits on the loop.
#[test]
fn waiting_on_its_own_loop_in_the_release_of_a_loop_is_wait_on_self() {
    scenario("wait_in_release_loop");
}

/// A parallel_for skipped because its dependency failed; its release
/// callback waits on the loop.
#[test]
fn waiting_on_its_own_loop_in_the_release_of_a_skipped_loop_is_wait_on_self() {
    scenario("wait_in_release_loop_skipped");
}

/// The job was cancelled before it started; its release callback, run
/// inside `jobsys_cancel`, destroys the job's own system.
#[test]
fn destroy_in_the_release_of_a_cancelled_job_is_bad_state() {
    scenario("destroy_in_release_cancelled");
}

/// A parallel_for cancelled before it started; its release callback
/// destroys the loop's own system.
#[test]
fn destroy_in_the_release_of_a_cancelled_loop_is_bad_state() {
    scenario("destroy_in_release_loop_cancelled");
}

/// The job was cancelled before it started; its release callback waits on
/// the job's own handle.
#[test]
fn waiting_on_its_own_job_in_the_release_of_a_cancelled_job_is_wait_on_self() {
    scenario("wait_in_release_cancelled");
}

/// A parallel_for cancelled before it started; its release callback waits
/// on the loop.
#[test]
fn waiting_on_its_own_loop_in_the_release_of_a_cancelled_loop_is_wait_on_self() {
    scenario("wait_in_release_loop_cancelled");
}
