//! `jobsys-bench cpp-w2 --quick --workers 1`: every expected row is printed
//! with a speedup (oneTBB's only where the run found it), and the serial
//! loops have rows of their own.

use std::process::Command;

#[test]
fn cpp_w2_quick_prints_every_row_with_its_speedup() {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let ok = Command::new(&cxx)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "cpp-w2 needs a C++ compiler: `{cxx} --version` failed (install g++ or clang++, or set CXX)"
    );
    let out_dir = std::env::temp_dir().join(format!("jobsys-cpp-w2-test-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_jobsys-bench"))
        .args(["cpp-w2", "--quick", "--workers", "1", "--out"])
        .arg(&out_dir)
        .output()
        .expect("run jobsys-bench");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "cpp-w2 failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tbb = !text.contains("skipped: oneTBB not found");
    let mut libs = vec!["jobsys-rust", "jobsys-cpp"];
    if tbb {
        libs.push("oneTBB");
    }
    for size in ["large", "small"] {
        let head = format!("cpp-w2 {size} (");
        let start = text
            .find(&head)
            .unwrap_or_else(|| panic!("no {head}:\n{text}"));
        let table: Vec<Vec<&str>> = text[start..]
            .lines()
            .skip(3)
            .take_while(|l| !l.trim().is_empty())
            .map(|l| l.split_whitespace().collect())
            .collect();
        for lib in &libs {
            let row = table
                .iter()
                .find(|f| f.len() == 6 && f[0] == *lib && f[1] == "2")
                .unwrap_or_else(|| panic!("{size}: no row for {lib} with 2 threads:\n{text}"));
            let speedup: f64 = row[5]
                .trim_end_matches('x')
                .parse()
                .unwrap_or_else(|_| panic!("{size}: {lib}'s speedup {:?}:\n{text}", row[5]));
            assert!(speedup > 0.0, "{size}: {lib}: {speedup}\n{text}");
        }
        assert!(
            table.iter().any(|f| f.first() == Some(&"serial-rust")),
            "{size}: no serial-rust row:\n{text}"
        );
        assert!(
            table
                .iter()
                .any(|f| f.first() == Some(&"serial-cpp:jobsys-cpp")),
            "{size}: no serial-cpp row for jobsys-cpp:\n{text}"
        );
    }
    assert!(text.contains("load average at start"), "{text}");
    let _ = std::fs::remove_dir_all(&out_dir);
}
