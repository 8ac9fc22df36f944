//! The C and C++ programs, compiled with `-Wall -Wextra -Werror` against
//! `include/` and linked with the static library: the two frame-graph
//! examples and the two pinned (render thread) examples print the checksums
//! computed here, the C API test (bad input of every kind) and the C++
//! wrapper test pass, the profiler callback tests (C and C++) pass and the
//! two profiler-bridge examples print a balanced summary.

mod common;

use common::{build_c, build_cpp, run};
use jobsys_capi::config::Config;
use jobsys_capi::engine::Pin;
use jobsys_capi::graph::NodeReport;
use jobsys_capi::handles::Handle;
use jobsys_capi::jobs::JobDesc;
use jobsys_capi::profiler::Callbacks;
use jobsys_capi::system::Stats;
use std::mem::size_of;
use std::process::Command;

/// The checksum of `examples/c/frame.c`, computed serially.
fn expected_frame_checksum() -> u64 {
    const PARTICLES: u64 = 10_000;
    const FRAMES: u64 = 10;
    let mut pos: Vec<u64> = (0..PARTICLES).collect();
    let mut vel: Vec<u64> = (0..PARTICLES).map(|i| i * i).collect();
    let (mut ai, mut checksum) = (1u64, 0xcbf2_9ce4_8422_2325u64);
    for frame in 0..FRAMES {
        let seed = checksum ^ (frame + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        for (i, v) in vel.iter_mut().enumerate() {
            *v = v
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(seed ^ i as u64);
        }
        for _ in 0..256 {
            ai = ai
                .wrapping_mul(2_862_933_555_777_941_757)
                .wrapping_add(3_037_000_493)
                .wrapping_add(seed);
        }
        for (i, p) in pos.iter_mut().enumerate() {
            *p = p.wrapping_add((vel[i] >> 17) + i as u64);
        }
        let mut h = checksum;
        for &p in &pos {
            h = (h ^ p).wrapping_mul(0x0100_0000_01b3);
        }
        checksum = h ^ ai;
    }
    checksum
}

/// The checksum a frame example printed.
fn checksum_of(stdout: &str) -> u64 {
    let hex = stdout
        .split("checksum ")
        .nth(1)
        .map(str::trim)
        .unwrap_or_else(|| panic!("no checksum in {stdout:?}"));
    u64::from_str_radix(hex, 16).unwrap_or_else(|_| panic!("bad checksum in {stdout:?}"))
}

fn run_with_workers(exe: &std::path::Path, workers: &str) -> String {
    let mut cmd = Command::new(exe);
    cmd.env("JOBSYS_WORKERS", workers);
    run(cmd, 60)
}

#[test]
fn c_frame_example_prints_the_checksum() {
    let exe = build_c("examples/c/frame.c");
    let want = expected_frame_checksum();
    for workers in ["0", "2"] {
        let out = run_with_workers(&exe, workers);
        assert!(out.starts_with("frame graph (C): 10 frames"), "{out}");
        assert_eq!(checksum_of(&out), want, "JOBSYS_WORKERS={workers}: {out}");
    }
}

#[test]
fn cpp_frame_example_prints_the_same_checksum() {
    let exe = build_cpp("examples/cpp/frame.cpp");
    let want = expected_frame_checksum();
    for workers in ["0", "2"] {
        let out = run_with_workers(&exe, workers);
        assert!(out.starts_with("frame graph (C++): 10 frames"), "{out}");
        assert_eq!(checksum_of(&out), want, "JOBSYS_WORKERS={workers}: {out}");
    }
}

/// What `examples/c/pinned.c` prints after "pinned (C)", computed serially:
/// frame 5's render jobs are cancelled, the others drawn and presented.
fn expected_pinned_line() -> String {
    const OBJECTS: u64 = 4096;
    const FRAMES: u64 = 8;
    const CANCELLED: u64 = 5;
    const P: u64 = 0x0100_0000_01b3;
    let mut checksum = 0u64;
    for n in (0..FRAMES).filter(|&n| n != CANCELLED) {
        let mut h = n * 3 + 1;
        for i in 0..OBJECTS {
            let o = (n + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i * i);
            h = (h ^ o).wrapping_mul(P);
        }
        checksum = (checksum ^ h).wrapping_mul(P);
    }
    format!(
        ": 8 frames, 7 drawn, 1 cancelled, 21 pinned jobs on the render thread, 0 elsewhere, checksum {checksum:016x}\n"
    )
}

#[test]
fn c_pinned_example_runs_its_render_jobs_on_the_render_thread() {
    let exe = build_c("examples/c/pinned.c");
    let want = format!("pinned (C){}", expected_pinned_line());
    for workers in ["0", "2"] {
        let out = run_with_workers(&exe, workers);
        assert_eq!(out, want, "JOBSYS_WORKERS={workers}");
    }
}

#[test]
fn cpp_pinned_example_prints_the_same_line() {
    let exe = build_cpp("examples/cpp/pinned.cpp");
    let want = format!("pinned (C++){}", expected_pinned_line());
    for workers in ["0", "2"] {
        let out = run_with_workers(&exe, workers);
        assert_eq!(out, want, "JOBSYS_WORKERS={workers}");
    }
}

#[test]
fn c_api_test_passes_and_its_structs_match_the_rust_side() {
    let exe = build_c("tests/c/api_test.c");
    let trace = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("api_test_trace.json");
    let _ = std::fs::remove_file(&trace);
    let mut cmd = Command::new(exe);
    cmd.env("JOBSYS_TEST_TRACE", &trace);
    let out = run(cmd, 60);
    assert!(out.ends_with("api_test: ok\n"), "{out}");
    // jobsys_trace_write wrote a raw capture with the named job in it.
    let json = std::fs::read_to_string(&trace).expect("the trace file");
    assert!(
        json.starts_with(r#"{"format":"jobsys-raw-trace","version":3,"#),
        "{json}"
    );
    let trace = jobsys_trace::read_raw(json.as_bytes()).expect("a raw capture");
    let capture = jobsys_trace::TraceExt::analyse(&trace);
    assert!(
        capture.names.iter().any(|n| n == "traced job"),
        "the job's name is in the trace: {:?}",
        capture.names
    );
    assert_eq!(
        capture.frames.len(),
        2,
        "jobsys_frame_begin/end marked the two frames"
    );
    // ... and jobsys-trace makes valid Chrome JSON of it.
    let mut chrome = Vec::new();
    capture.write_chrome_json(&mut chrome).unwrap();
    jobsys_trace::validate_chrome_json(&chrome[..]).expect("a valid Chrome trace");
    let sizes = format!(
        "sizes: config={} handle={} job_desc={} stats={} pin={} profiler={} node_report={}",
        size_of::<Config>(),
        size_of::<Handle>(),
        size_of::<JobDesc>(),
        size_of::<Stats>(),
        size_of::<Pin>(),
        size_of::<Callbacks>(),
        size_of::<NodeReport>()
    );
    assert!(
        out.starts_with(&sizes),
        "struct sizes differ between jobsys.h and the Rust side:\n  C:    {}\n  Rust: {sizes}",
        out.lines().next().unwrap_or("")
    );
}

#[test]
fn cpp_wrapper_test_passes() {
    let exe = build_cpp("tests/cpp/wrapper_test.cpp");
    let trace = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("wrapper_test_trace.json");
    let _ = std::fs::remove_file(&trace);
    let mut cmd = Command::new(exe);
    cmd.env("JOBSYS_TEST_TRACE", &trace);
    let out = run(cmd, 60);
    assert!(out.ends_with("wrapper_test: ok\n"), "{out}");
    // Three `System::frame()` guards: three frames, each holding its job.
    let json = std::fs::read_to_string(&trace).expect("the trace file");
    let trace = jobsys_trace::read_raw(json.as_bytes()).expect("a raw capture");
    let capture = jobsys_trace::TraceExt::analyse(&trace);
    assert_eq!(capture.frames.len(), 3, "three frame guards");
    assert!(capture.frames.iter().all(|f| f.begin_ns <= f.end_ns));
}

/// `jobsys.hpp` stores small trivially copyable lambdas in the job itself:
/// no `operator new` across schedules, `after(...)`, `parallel_for`,
/// `join` and a `Scope`; a big lambda is boxed, one allocation per job,
/// each freed (`tests/cpp/alloc_test.cpp`).
#[test]
fn cpp_small_lambdas_allocate_nothing() {
    let exe = build_cpp("tests/cpp/alloc_test.cpp");
    assert_eq!(run(Command::new(&exe), 60), "alloc_test: ok\n");
}

/// Handles from C threads (`tests/c/handles_test.c`): 8 threads scheduling
/// and completing at once (20 000 jobs each, every one run exactly once),
/// handles completed on other threads and after their thread exited,
/// failures reported from any thread, 300 short-lived threads and the
/// drain of `jobsys_destroy`; handles of another or a destroyed system
/// (FOREIGN_HANDLE), forged ones (random bits, flipped bits, addresses
/// inside a slot: INVALID_HANDLE or FOREIGN_HANDLE), stale ones (slots
/// reused many times: complete, or the job's failure) and the zeroed one.
#[test]
fn c_handles_test_passes() {
    let exe = build_c("tests/c/handles_test.c");
    let out = run(Command::new(exe), 120);
    assert_eq!(out, "handles_test: ok\n");
}

/// `jobsys_schedule` with inline data and `jobsys_join` allocate nothing,
/// counted from C (`tests/c/zero_alloc_test.c` defines malloc and friends
/// and counts every allocation of the process), after a warm-up, at 0, 1
/// and 2 workers; a copy past `JOBSYS_INLINE_DATA` allocates (the control).
/// glibc only: the counting allocator forwards to its `__libc_*` functions.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn c_zero_alloc_test_passes() {
    let exe = build_c("tests/c/zero_alloc_test.c");
    assert_eq!(run(Command::new(exe), 60), "zero_alloc_test: ok\n");
}

/// `jobsys_profiler_callbacks` from C (`tests/c/profiler_test.c`): every
/// named job's begin/end once, paired, on the thread that ran it; waits
/// and sleeps nest per thread; worker start/stop; frames; active workers;
/// NULL, all-NULL, partial and unsized tables.
#[test]
fn c_profiler_test_passes() {
    let exe = build_c("tests/c/profiler_test.c");
    for workers_env in ["0", "2"] {
        // The test sets its own worker count; JOBSYS_WORKERS must not matter.
        let mut cmd = Command::new(&exe);
        cmd.env("JOBSYS_WORKERS", workers_env);
        assert_eq!(run(cmd, 120), "profiler_test: ok\n");
    }
}

/// `jobsys::ProfilerHooks` from C++ (`tests/cpp/profiler_test.cpp`): only
/// overridden methods installed, the C test's pairing and nesting checks
/// through the class, frames from `System::frame()`.
#[test]
fn cpp_profiler_test_passes() {
    let exe = build_cpp("tests/cpp/profiler_test.cpp");
    assert_eq!(run(Command::new(&exe), 120), "profiler_test (C++): ok\n");
}

/// A C++ hook that throws aborts the process with a message (the exception
/// must not unwind through jobsys), as a panicking Rust hook does.
#[test]
fn cpp_hook_that_throws_aborts_with_a_message() {
    let exe = build_cpp("tests/cpp/profiler_test.cpp");
    let out = Command::new(&exe).arg("throw").output().expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{out:?}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(6), "SIGABRT: {out:?}");
    }
    assert!(
        stderr.contains("jobsys: a ProfilerHooks method threw (boom)"),
        "{stderr}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("not aborted"));
}

/// What both profiler examples must print: the totals line, then a row for
/// the main thread (thread index 0) and each worker (thread indices 1 and
/// 2, named with them), whose job counts add up to at least the 48
/// named jobs (jobsys's own combine groups come on top).
fn check_profiler_example(out: &str, lang: &str) {
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some(format!("profiler ({lang}): 3 frames, 48 jobs, every begin ended").as_str()),
        "{out}"
    );
    let rows: Vec<&str> = lines.collect();
    for prefix in [
        "thread 0 ",
        "thread 1 jobsys-worker-1: ",
        "thread 2 jobsys-worker-2: ",
    ] {
        assert!(
            rows.iter().any(|r| r.starts_with(prefix)),
            "no {prefix:?} row: {out}"
        );
    }
    let jobs: u64 = rows
        .iter()
        .map(|r| {
            let after = r.split(": ").nth(1).unwrap_or_else(|| panic!("{r}"));
            after.split(' ').next().unwrap().parse::<u64>().unwrap()
        })
        .sum();
    assert!(jobs >= 48, "{out}");
}

#[test]
fn c_profiler_example_prints_a_balanced_timeline() {
    let exe = build_c("examples/c/profiler.c");
    check_profiler_example(&run(Command::new(&exe), 60), "C");
}

#[test]
fn cpp_profiler_example_prints_the_same_summary() {
    let exe = build_cpp("examples/cpp/profiler.cpp");
    check_profiler_example(&run(Command::new(&exe), 60), "C++");
}
