//! A small frame graph, captured: 3 frames of about 30 jobs (dependencies,
//! a `parallel_for`) on 2 workers and the main thread, with a short pause
//! between frames (as if waiting for vsync) so the workers sleep and get
//! woken. Writes the capture as Chrome trace JSON (the second argument,
//! if any, is the number of workers); the picture in
//! `docs/tracing.md` is this capture drawn by `jobsys-trace render`:
//!
//! ```text
//! cargo run --release -p jobsys-trace --example frame_graph -- capture.json
//! cargo run --release -p jobsys-trace --example frame_graph -- five.json 5
//! cargo run --release -p jobsys-trace -- render capture.json -o docs/img/trace-timeline.svg
//! ```

use jobsys::{Batch, JobHandle, JobSystem};
use jobsys_trace::TraceExt;
use std::fs::File;
use std::time::{Duration, Instant};

/// Stand-in for real work: spin for `us` microseconds.
fn work(us: u64) {
    let t = Instant::now();
    while t.elapsed() < Duration::from_micros(us) {
        std::hint::spin_loop();
    }
}

/// One frame: input → animation (8 jobs) → culling (a parallel_for);
/// input → physics → particles (6 jobs); AI (6 jobs) and audio on their
/// own; render after culling, particles and AI.
fn frame(js: &JobSystem) {
    let _frame = js.frame();
    let input = js.job().name("input").schedule(|| work(20));
    let anim: Vec<JobHandle> = (0..8)
        .map(|_| {
            js.job()
                .desc("animate")
                .after(&[input])
                .schedule(|| work(30))
        })
        .collect();
    let anim = js.combine(&anim);
    let cull = js
        .job()
        .desc("cull")
        .after(&[anim])
        .parallel_for(0..64, Batch::Fixed(4), |_| work(8));
    let physics = js
        .job()
        .desc("physics")
        .after(&[input])
        .schedule(|| work(90));
    let particles: Vec<JobHandle> = (0..6)
        .map(|_| {
            js.job()
                .desc("particles")
                .after(&[physics])
                .schedule(|| work(25))
        })
        .collect();
    let ai: Vec<JobHandle> = (0..6)
        .map(|_| js.job().name("ai").schedule(|| work(40)))
        .collect();
    let audio = js.job().name("audio").schedule(|| work(35));
    let mut deps = vec![cull];
    deps.extend(particles);
    deps.extend(ai);
    let render = js.job().desc("render").after(&deps).schedule(|| work(60));
    js.complete(render);
    js.complete(audio);
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "capture.json".into());
    let workers = match std::env::args().nth(2) {
        Some(n) => n.parse()?,
        None => 2,
    };
    let js = JobSystem::builder().workers(workers).build()?;
    frame(&js); // warm up (first-touch allocations) outside the capture
    std::thread::sleep(Duration::from_millis(2));
    js.trace_start();
    for _ in 0..3 {
        frame(&js);
        std::thread::sleep(Duration::from_micros(300)); // "vsync"
    }
    let trace = js.trace_stop();
    trace.write_chrome_json(File::create(&path)?)?;
    eprintln!(
        "wrote {path}: {} threads, {} events, {:?}",
        trace.threads.len(),
        trace.event_count(),
        trace.duration()
    );
    Ok(())
}
