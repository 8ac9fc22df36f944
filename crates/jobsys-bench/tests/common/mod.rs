//! What the bench's tests share: a run of `jobsys-bench <subcommand> ...`
//! (`run_bench`), and one that needs a C++ compiler (`run_cpp_bench`).

use std::process::Command;

/// `run_bench` of a C++ subcommand: first checks for a C++ compiler.
#[allow(dead_code)] // not every test file calls it
pub fn run_cpp_bench(args: &[&str]) -> String {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let ok = Command::new(&cxx)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "{} needs a C++ compiler: `{cxx} --version` failed (install g++ or clang++, or set CXX)",
        args[0]
    );
    run_bench(args)
}

/// Run `jobsys-bench` with `args` and `--out` a fresh directory; fail
/// with its output unless it succeeds; its standard output.
pub fn run_bench(args: &[&str]) -> String {
    let out_dir =
        std::env::temp_dir().join(format!("jobsys-{}-test-{}", args[0], std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_jobsys-bench"))
        .args(args)
        .arg("--out")
        .arg(&out_dir)
        .output()
        .expect("run jobsys-bench");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{} failed:\n{text}\n{}",
        args[0],
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&out_dir);
    text
}

/// The rows of the table printed under the line `head` in `text` (its
/// header and rule skipped), each split on whitespace; fails if `head` is
/// not there.
#[allow(dead_code)] // not every test file calls it
pub fn table_rows<'a>(text: &'a str, head: &str) -> Vec<Vec<&'a str>> {
    let start = text
        .find(head)
        .unwrap_or_else(|| panic!("no {head}:\n{text}"));
    text[start..]
        .lines()
        .skip(3)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect()
}
