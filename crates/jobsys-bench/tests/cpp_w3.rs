//! `jobsys-bench cpp-w3 --quick --workers 1`: every expected row is printed
//! for both durations, with its ratios (oneTBB's only where the run found
//! it); each program has already checked one frame's dependency order and
//! every frame's piece count, or the run would have failed.

mod common;

#[test]
fn cpp_w3_quick_prints_every_row_with_its_ratios() {
    let text = common::run_cpp_bench(&["cpp-w3", "--quick", "--workers", "1"]);
    let tbb = !text.contains("skipped: oneTBB not found");
    let mut libs = vec![
        ("jobsys-rust", "2"),
        ("serial-cpp", "1"),
        ("jobsys-cpp", "2"),
        ("jobsys-cpp-graph", "2"),
        ("enkiTS", "2"),
        ("taskflow", "2"),
    ];
    if tbb {
        libs.push(("oneTBB", "2"));
    }
    for d in ["D=0.5us", "D=5us"] {
        let head = format!("cpp-w3 {d} (ms per frame)");
        let table = common::table_rows(&text, &head);
        for (lib, threads) in &libs {
            let row = table
                .iter()
                .find(|f| f.len() == 7 && f[0] == *lib && f[1] == *threads)
                .unwrap_or_else(|| panic!("{d}: no row for {lib} with {threads} threads:\n{text}"));
            for (col, v) in [("ratio", row[5]), ("x serial", row[6])] {
                let x: f64 = v
                    .parse()
                    .unwrap_or_else(|_| panic!("{d}: {lib}'s {col} {v:?}:\n{text}"));
                assert!(x > 0.0, "{d}: {lib}'s {col} {x}:\n{text}");
            }
        }
        let base = table
            .iter()
            .find(|f| f.first() == Some(&"jobsys-cpp"))
            .unwrap();
        assert_eq!(
            base[5], "1.00",
            "{d}: jobsys-cpp is the ratio's base:\n{text}"
        );
    }
    assert!(text.contains("load average at start"), "{text}");
}
