//! `jobsys-bench cpp-w1 --quick --workers 0,1`: every expected row is
//! printed (oneTBB's only where the run found it).

mod common;

#[test]
fn cpp_w1_quick_prints_every_row() {
    let text = common::run_cpp_bench(&["cpp-w1", "--quick", "--workers", "0,1"]);
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
}
