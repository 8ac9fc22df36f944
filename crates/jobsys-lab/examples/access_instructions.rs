//! The kernel `scripts/access-instructions.sh` counts with callgrind: the
//! W3 frame (500 jobs, D = 0) at 0 workers, `FRAMES` times with explicit
//! edges (`explicit_frames`) and `FRAMES` times with declared access
//! (`access_frames`). Instruction counts do not depend on machine load, so
//! (access - explicit) / (FRAMES x accesses per frame) is the cost of
//! deriving dependencies per declared access, in instructions.

use jobsys::{JobHandle, JobSystem, Resource};
use jobsys_bench::graph::{FrameGraph, GraphParams};
use jobsys_bench::workloads::{access_graph, frame_graph};

const FRAMES: usize = 20;

#[inline(never)]
fn explicit_frames(js: &JobSystem, f: &'static frame_graph::Frame) {
    let (mut hs, mut deps) = (Vec::<JobHandle>::new(), Vec::new());
    for _ in 0..FRAMES {
        frame_graph::jobsys_frame::<false>(js, f, &mut hs, &mut deps).expect("frame");
    }
}

#[inline(never)]
fn access_frames(js: &JobSystem, f: &'static frame_graph::Frame, rs: &[Resource<Vec<u64>>]) {
    let mut hs = Vec::new();
    for _ in 0..FRAMES {
        access_graph::access_frame::<false>(js, f, rs, &mut hs).expect("frame");
    }
}

fn main() {
    let g: &'static FrameGraph = Box::leak(Box::new(FrameGraph::generate(
        &GraphParams::seed_experiment(),
    )));
    let f = frame_graph::Frame::leak(g, 0);
    let rs = access_graph::resources(g);
    let js = JobSystem::builder().workers(0).build().expect("system");
    // Warm both (slot pages, history vectors) before the counted calls.
    explicit_frames(&js, f);
    access_frames(&js, f, &rs);
    explicit_frames(&js, f);
    access_frames(&js, f, &rs);
    println!(
        "frames {FRAMES} accesses_per_frame {}",
        access_graph::accesses(g)
    );
}
