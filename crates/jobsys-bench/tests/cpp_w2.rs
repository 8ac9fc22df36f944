//! `jobsys-bench cpp-w2 --quick --workers 1`: every expected row is printed
//! with a speedup (oneTBB's only where the run found it), and the serial
//! loops have rows of their own.

mod common;

#[test]
fn cpp_w2_quick_prints_every_row_with_its_speedup() {
    let text = common::run_cpp_bench(&["cpp-w2", "--quick", "--workers", "1"]);
    let tbb = !text.contains("skipped: oneTBB not found");
    let mut libs = vec!["jobsys-rust", "jobsys-cpp"];
    if tbb {
        libs.push("oneTBB");
    }
    for size in ["large", "small"] {
        let head = format!("cpp-w2 {size} (");
        let table = common::table_rows(&text, &head);
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
}
