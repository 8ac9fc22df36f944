//! Runs the examples in `examples/`, so that they cannot rot: each one
//! asserts its own results (the game loop against a serial replay) and must
//! exit successfully within a time limit.
//!
//! Cargo gives integration tests no `CARGO_BIN_EXE_*` for examples, so the
//! test asks cargo to build them (a no-op after `cargo test`, which builds
//! every example already) into this test's own target directory and profile,
//! and takes each executable's path from cargo's JSON messages.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const EXAMPLES: [&str; 3] = ["game_loop", "scope_borrow", "graph"];

/// The examples' executables, built once for both tests.
fn executables() -> &'static Vec<(String, PathBuf)> {
    static EXES: OnceLock<Vec<(String, PathBuf)>> = OnceLock::new();
    EXES.get_or_init(|| {
        // <target-dir>/<profile>/deps/examples_run-<hash>
        let exe = std::env::current_exe().expect("test binary path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("test binary in <target>/<profile>/deps");
        let target_dir = profile_dir.parent().expect("<target>/<profile>");
        let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cargo
            .args(["build", "--quiet", "--message-format=json", "-p", "jobsys"])
            .arg("--target-dir")
            .arg(target_dir)
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        for name in EXAMPLES {
            cargo.args(["--example", name]);
        }
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            cargo.arg("--release");
        }
        let out = cargo.output().expect("run cargo build --example");
        assert!(
            out.status.success(),
            "cargo build --example failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // One JSON object per line; take `"executable":"<path>"` of the
        // artifacts whose target is an example we asked for.
        let stdout = String::from_utf8(out.stdout).expect("utf-8 cargo output");
        let mut found = Vec::new();
        for line in stdout.lines() {
            if !line.contains(r#""reason":"compiler-artifact""#)
                || !line.contains(r#""kind":["example"]"#)
            {
                continue;
            }
            let Some(name) = EXAMPLES
                .iter()
                .find(|n| line.contains(&format!(r#""name":"{n}""#)))
            else {
                continue;
            };
            let key = r#""executable":""#;
            let start = line.find(key).expect("example artifact has an executable") + key.len();
            let len = line[start..].find('"').expect("closing quote");
            found.push((name.to_string(), PathBuf::from(&line[start..start + len])));
        }
        for name in EXAMPLES {
            assert!(
                found.iter().any(|(n, _)| n == name),
                "cargo did not report an executable for example {name}:\n{stdout}"
            );
        }
        found
    })
}

fn drain<R: Read + Send + 'static>(mut r: R) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = r.read_to_string(&mut s);
        s
    })
}

/// Run example `name` with a time limit; its stdout.
fn run(name: &str, limit: Duration) -> String {
    let exe = &executables()
        .iter()
        .find(|(n, _)| n == name)
        .expect("known example")
        .1;
    let mut child = Command::new(exe)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", exe.display()));
    // Read both pipes on threads so a chatty child cannot block on them.
    let stdout = drain(child.stdout.take().expect("piped"));
    let stderr = drain(child.stderr.take().expect("piped"));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the example") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "example {name} did not finish within {limit:?}; stdout so far:\n{}",
                stdout.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    assert!(
        status.success(),
        "example {name} failed ({status}):\n{stdout}\n{stderr}"
    );
    stdout
}

#[test]
fn game_loop_matches_its_serial_replay() {
    let out = run("game_loop", Duration::from_secs(60));
    assert!(out.contains("= serial replay"), "{out}");
    // A stats line every 20 frames and the last frame, then the summary.
    assert_eq!(out.lines().filter(|l| l.starts_with("frame ")).count(), 7);
}

#[test]
fn scope_borrow_matches_the_serial_computation() {
    let out = run("scope_borrow", Duration::from_secs(60));
    assert!(
        out.contains("all results equal the serial computation"),
        "{out}"
    );
}

#[test]
fn graph_matches_its_serial_replay() {
    let out = run("graph", Duration::from_secs(60));
    assert!(out.contains("graph = serial replay"), "{out}");
    assert!(out.contains("slack"), "{out}");
}
