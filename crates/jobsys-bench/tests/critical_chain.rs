//! `jobsys-bench critical-chain --quick --workers 0,1`: a row per chain
//! priority and worker count, each frame having run every node (the workload checks the count
//! and fails otherwise), with the first and the later frames as multiples
//! of the chain's length.

mod common;

#[test]
fn critical_chain_quick_prints_a_row_per_worker_count() {
    let text = common::run_bench(&["critical-chain", "--quick", "--workers", "0,1"]);
    for chain in ["Low", "unset"] {
        for (workers, threads) in [("0", "1"), ("1", "2")] {
            let row: Vec<&str> = text
                .lines()
                .map(|l| l.split_whitespace().collect::<Vec<_>>())
                .find(|f| f.len() == 8 && f[0] == chain && f[1] == workers && f[2] == threads)
                .unwrap_or_else(|| {
                    panic!("no row for a {chain} chain at {workers} workers:\n{text}")
                });
            for cell in [row[4], row[6], row[7]] {
                let x: f64 = cell
                    .trim_end_matches('x')
                    .parse()
                    .unwrap_or_else(|_| panic!("{cell:?} is not a multiple:\n{text}"));
                // Never below the chain: its nodes run one after the other.
                assert!(
                    x >= 0.99,
                    "{chain}, {workers} workers: {x} of the chain:\n{text}"
                );
            }
        }
    }
}
