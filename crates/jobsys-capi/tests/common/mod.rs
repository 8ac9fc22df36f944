//! Building and running the C and C++ programs of the tests: find the
//! static library cargo built for these tests, compile with strict warning
//! flags (docs/c-api.md), run with a timeout.
#![allow(dead_code)]

pub mod abi;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// This crate's directory (the paths below are relative to it).
pub fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `libjobsys_capi.a` of the profile these tests were built with, brought up
/// to date first. `cargo test` builds the `rlib` the tests link, but not
/// always the `staticlib` beside it: a `.a` left by an earlier build would
/// otherwise give the C programs old code (it happened: a C test ran the
/// library of a previous commit). The nested `cargo build` is a no-op when
/// the library is fresh.
pub fn static_lib() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let exe = std::env::current_exe().expect("test binary path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("test binary in <target>/<profile>/deps");
        let lib = profile_dir.join("libjobsys_capi.a");
        let release = profile_dir.file_name().is_some_and(|n| n == "release");
        let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cargo.args(["build", "-q", "-p", "jobsys-capi"]);
        if release {
            cargo.arg("--release");
        }
        // The tests' own target directory (`<target>/<profile>/deps/test`).
        if let Some(target) = profile_dir.parent() {
            cargo.env("CARGO_TARGET_DIR", target);
        }
        let status = cargo.status().expect("run cargo build");
        assert!(status.success(), "cargo build -p jobsys-capi failed");
        assert!(lib.exists(), "{} not found", lib.display());
        lib
    })
}

/// Compile `source` (relative to the crate) with `compiler` and `std`, warnings
/// as errors, against `include/` and the static library; the executable's path.
pub fn build(source: &str, compiler: &str, std: &str) -> PathBuf {
    let src = crate_dir().join(source);
    let name = source.replace(['/', '.'], "_");
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let out = Command::new(compiler)
        .arg(format!("-std={std}"))
        .args(["-Wall", "-Wextra", "-Werror", "-pedantic", "-g", "-I"])
        .arg(crate_dir().join("include"))
        .arg(&src)
        .arg(static_lib())
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| panic!("could not run {compiler}: {e}"));
    assert!(
        out.status.success(),
        "{compiler} {source} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// `build` a C11 program.
pub fn build_c(source: &str) -> PathBuf {
    build(source, "cc", "c11")
}

/// `build` a C++17 program.
pub fn build_cpp(source: &str) -> PathBuf {
    build(source, "c++", "c++17")
}

/// Run `cmd`, failing the test if it takes longer than `secs` or exits
/// unsuccessfully; its stdout.
pub fn run(mut cmd: Command, secs: u64) -> String {
    let what = format!("{cmd:?}");
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("could not start {what}: {e}"));
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "{what} did not finish within {secs} s (hang?)\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&stdout).into_owned();
    assert!(
        status.success(),
        "{what} failed ({status})\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&stderr)
    );
    stdout
}
