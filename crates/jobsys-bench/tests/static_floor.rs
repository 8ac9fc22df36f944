//! The static-split floors of W2 and W3 (`workloads::static_floor`): they
//! run exactly the workload's work, frame after frame, at every thread
//! count, and their helper threads stop when the floor is dropped.

use jobsys_bench::count;
use jobsys_bench::graph::{FrameGraph, GraphParams};
use jobsys_bench::static_split::{live_threads, spawned_threads};
use jobsys_bench::workloads::frame_graph::Frame;
use jobsys_bench::workloads::parallel_for::kernel_slice;
use jobsys_bench::workloads::static_floor::{configs, FrameFloor, LoopFloor, CORES, OVERSUB};
use std::sync::Mutex;

/// `count` and the thread counters are process-wide: one test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const THREADS: [usize; 4] = [1, 2, 3, 5];

#[test]
fn w3_floor_runs_every_piece_of_the_frame_once() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let g: &'static FrameGraph = Box::leak(Box::new(FrameGraph::generate(&GraphParams::quick())));
    let frame = Frame::leak(g, 500);
    for t in THREADS {
        let f = FrameFloor::start(frame, t).unwrap();
        assert_eq!(f.pieces(), g.total_pieces());
        for _ in 0..3 {
            // Counted here, independently of the floor's own check.
            let before = count::total();
            let ms = f.frame().unwrap();
            assert_eq!(count::total() - before, g.total_pieces(), "{t} threads");
            assert!(ms > 0.0);
        }
    }
}

#[test]
fn w2_floor_runs_every_element_once() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for len in [0usize, 1, 10_000, 65_537] {
        let init: Vec<u32> = (0..len as u32).collect();
        let mut expected = init.clone();
        kernel_slice(&mut expected, 3);
        for t in THREADS {
            let mut f = LoopFloor::start(len, t).unwrap();
            for _ in 0..3 {
                f.call(&init, &expected).unwrap();
            }
            if len > 0 {
                // The check is real: the untouched array is not the result,
                // and neither is the result run twice.
                assert!(f.call(&init, &init).is_err(), "{len} x{t}");
                assert!(f.call(&expected, &expected).is_err(), "{len} x{t}");
            }
            assert!(f.call(&init[..len / 2], &expected).is_err() || len == 0);
        }
    }
}

#[test]
fn helpers_stop_when_the_floor_is_dropped() {
    let _g = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!(live_threads(), 0);
    let spawned = spawned_threads();
    let mut f = LoopFloor::start(1000, 4).unwrap();
    assert_eq!(live_threads(), 3);
    let init = vec![1u32; 1000];
    let mut expected = init.clone();
    kernel_slice(&mut expected, 3);
    for _ in 0..5 {
        f.call(&init, &expected).unwrap();
    }
    // Spawned once, not once per frame.
    assert_eq!(spawned_threads() - spawned, 3);
    drop(f);
    assert_eq!(live_threads(), 0);
}

#[test]
fn rows_per_worker_count() {
    assert_eq!(configs(0, 2), [(CORES, 1)]);
    assert_eq!(configs(1, 2), [(CORES, 2)]);
    assert_eq!(configs(2, 2), [(CORES, 2), (OVERSUB, 3)]);
    assert_eq!(configs(4, 2), [(CORES, 2), (OVERSUB, 5)]);
    assert_eq!(configs(4, 8), [(CORES, 5)]);
}
