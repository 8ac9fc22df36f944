//! `jobsys-bench cpp-w1 --quick --workers 0,1`: every expected row is
//! printed (oneTBB's only where the run found it).

use std::process::Command;

#[test]
fn cpp_w1_quick_prints_every_row() {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let ok = Command::new(&cxx)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "cpp-w1 needs a C++ compiler: `{cxx} --version` failed (install g++ or clang++, or set CXX)"
    );
    let out_dir = std::env::temp_dir().join(format!("jobsys-cpp-w1-test-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_jobsys-bench"))
        .args(["cpp-w1", "--quick", "--workers", "0,1", "--out"])
        .arg(&out_dir)
        .output()
        .expect("run jobsys-bench");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "cpp-w1 failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tbb = !text.contains("skipped: oneTBB not found");
    let mut libs = vec!["jobsys-rust", "jobsys-cpp", "enkiTS", "taskflow"];
    if tbb {
        libs.push("oneTBB");
    }
    for case in ["single", "flat", "nested"] {
        let head = format!("cpp-w1 {case} (ns per job)");
        let start = text
            .find(&head)
            .unwrap_or_else(|| panic!("no {head}:\n{text}"));
        let table: Vec<&str> = text[start..]
            .lines()
            .skip(3)
            .take_while(|l| !l.trim().is_empty())
            .collect();
        for lib in &libs {
            for threads in ["1", "2"] {
                assert!(
                    table.iter().any(|l| {
                        let f: Vec<&str> = l.split_whitespace().collect();
                        f.len() == 6 && f[0] == *lib && f[1] == threads
                    }),
                    "{case}: no row for {lib} with {threads} threads:\n{text}"
                );
            }
        }
    }
    assert!(text.contains("load average at start"), "{text}");
    let _ = std::fs::remove_dir_all(&out_dir);
}
