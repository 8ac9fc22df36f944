//! `cpp-w3`: W3 (the frame graph) called from C++ through jobsys.hpp, job
//! by job and as a `jobsys::Graph`, beside the C++ peers enkiTS, Taskflow
//! and (when installed) oneTBB running the same frame as their dependency
//! graphs, and beside W3 from Rust, in one run
//! (crates/jobsys-bench/cpp/README.md).
//!
//! The frame is W3's generated graph ([`FrameGraph`]), written once to
//! `<out>/cpp-w3/frame.txt` for the C++ programs (`cpp/w3.cpp`, one per
//! library, run as child processes); the Rust row is W3's own jobsys
//! executor ([`frame_graph::jobsys_frame`]) in this process. Per worker
//! count and D the contestants take turns (rounds), so that drift in the
//! machine's load spreads over all of them.
//!
//! Equal thread counts: jobsys with N workers runs on N + 1 threads (the
//! calling thread helps); every peer gets N + 1 threads in all.

use super::cpp_tools::{
    add, build_programs, median_of, run_lines, Lib, Prog, Rounds, Series, TBB_SKIPPED,
};
use super::frame::Frame;
use super::frame_graph::{self, jobsys_frame};
use crate::count;
use crate::error::{check, Error, Result};
use crate::graph::{FrameGraph, GraphParams, Kind};
use crate::load_average;
use crate::stats;
use crate::table;
use crate::Ctx;
use jobsys::JobSystem;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

/// The subcommand's name.
pub const NAME: &str = "cpp-w3";

/// Job durations D, ns.
pub const DURATIONS_NS: [u64; 2] = [500, 5_000];

/// The Rust row's library name.
const RUST: &str = "jobsys-rust";

/// The row every ratio divides by.
const BASE: &str = "jobsys-cpp";

/// The serial row's name (printed by the jobsys program).
const SERIAL: &str = "serial-cpp";

const JOBSYS_CPP: Prog = Prog {
    library: "jobsys-cpp",
    lib: Lib::Jobsys,
    define: "JOBSYS_W3_JOBSYS",
    file: "w3-jobsys",
};
const ENKITS: Prog = Prog {
    library: "enkiTS",
    lib: Lib::EnkiTS,
    define: "JOBSYS_W3_ENKITS",
    file: "w3-enkits",
};
const TASKFLOW: Prog = Prog {
    library: "taskflow",
    lib: Lib::Taskflow,
    define: "JOBSYS_W3_TASKFLOW",
    file: "w3-taskflow",
};
const TBB: Prog = Prog {
    library: "oneTBB",
    lib: Lib::OneTbb,
    define: "JOBSYS_W3_TBB",
    file: "w3-tbb",
};

/// One child line.
#[derive(serde::Deserialize)]
struct Line {
    library: String,
    threads: usize,
    samples: Vec<f64>,
}

/// The frame as `cpp/w3.cpp` reads it: the job count, then one line per
/// job in schedule order: pieces (0: a single job), the sync target (-1:
/// none), the dependency count, the dependencies.
pub fn frame_text(g: &FrameGraph) -> String {
    let mut s = format!("{}\n", g.nodes.len());
    for n in &g.nodes {
        let pieces = match n.kind {
            Kind::Single => 0,
            Kind::Parallel(p) => p,
        };
        let sync = n.sync.map_or(-1, i64::from);
        let _ = write!(s, "{pieces} {sync} {}", n.deps.len());
        for d in &n.deps {
            let _ = write!(s, " {d}");
        }
        s.push('\n');
    }
    s
}

/// `n` Rust frames after `warmup`, ms each, the piece count checked, after
/// one checked frame (dependency order).
fn rust_frames(js: &JobSystem, f: &'static Frame, n: usize, warmup: usize) -> Result<Vec<f64>> {
    frame_graph::check_frame(js, f, NAME)?;
    let pieces = f.graph.total_pieces();
    let (mut hs, mut deps) = (Vec::new(), Vec::new());
    let mut xs = Vec::with_capacity(n);
    for i in 0..warmup + n {
        let before = count::total();
        let t = Instant::now();
        jobsys_frame::<false>(js, f, &mut hs, &mut deps)?;
        let ms = t.elapsed().as_nanos() as f64 / 1e6;
        let ran = count::total() - before;
        check(ran == pieces, || {
            format!("{NAME} {RUST}: {ran} pieces ran in a frame, expected {pieces}")
        })?;
        if i >= warmup {
            xs.push(ms);
        }
    }
    Ok(xs)
}

/// Run a child: `samples` timed frames after `warmup`, D `d_ns`.
fn run_child(
    bin: &Path,
    w: usize,
    samples: usize,
    warmup: usize,
    graph: &Path,
    d_ns: u64,
) -> Result<Vec<Line>> {
    let args = [
        w.to_string(),
        samples.to_string(),
        warmup.to_string(),
        graph.display().to_string(),
        d_ns.to_string(),
    ];
    run_lines(NAME, bin, &args)
}

/// Run `cpp-w3` and print its tables.
pub fn run(ctx: &Ctx) -> Result<()> {
    let load_start = load_average();
    let params = if ctx.quick {
        GraphParams::quick()
    } else {
        GraphParams::seed_experiment()
    };
    let graph: &'static FrameGraph = Box::leak(Box::new(FrameGraph::generate(&params)));
    // Frames are short and the machine's load drifts: more, shorter
    // rounds than the other comparisons (60 samples in 6 rounds).
    let mut r = Rounds::new(ctx, 5, &[0, 1]);
    let samples = ctx.samples_or(60, 4);
    r.rounds = ctx.size(6, 2).min(samples);
    r.per_round = samples.div_ceil(r.rounds);
    let (rounds, per_round, warmup, workers) = (r.rounds, r.per_round, r.warmup, &r.workers);

    let (bins, tbb) = build_programs(ctx, NAME, "w3.cpp", vec![JOBSYS_CPP, ENKITS, TASKFLOW], TBB)?;
    let frame_file = ctx.out.join(NAME).join("frame.txt");
    std::fs::write(&frame_file, frame_text(graph))?;

    let mut all: Vec<Series<u64>> = Vec::new();
    for &w in workers {
        ctx.progress
            .print(&format!("{NAME}: {w} worker(s), {} threads", w + 1));
        for &d in &DURATIONS_NS {
            let frame = Frame::leak(graph, d);
            for _ in 0..rounds {
                let js = JobSystem::builder().workers(w).build()?;
                let xs = rust_frames(&js, frame, per_round, warmup)?;
                drop(js);
                add(&mut all, RUST, d, w, w + 1, &xs);
                for (lib, bin) in &bins {
                    for l in run_child(bin, w, per_round, warmup, &frame_file, d)? {
                        let threads = if l.library == SERIAL { 1 } else { w + 1 };
                        // The jobsys program prints its two forms and the serial frame.
                        let ours =
                            l.library.starts_with(lib) || (*lib == BASE && l.library == SERIAL);
                        if !ours || l.threads != threads {
                            return Err(Error::Child(format!(
                                "{NAME}: {} printed library {} threads {}, expected {lib} {}",
                                bin.display(),
                                l.library,
                                l.threads,
                                w + 1
                            )));
                        }
                        add(&mut all, &l.library, d, w, l.threads, &l.samples);
                    }
                }
            }
        }
    }

    let load_end = load_average();
    let mut text = format!(
        "\n{NAME}: W3 (the frame graph: {} jobs, {} pieces, a sync point every ~{} jobs) from C++ (jobsys.hpp)\n\
         beside the C++ peers and W3 from Rust; ms per frame. jobsys-cpp schedules the frame job by job every frame,\n\
         jobsys-cpp-graph replays a jobsys::Graph; enkiTS, oneTBB (flow graph) and Taskflow run their dependency graphs,\n\
         built once. threads = jobsys workers + the calling thread; every peer runs on as many threads in all\n\
         (enkiTS: Initialize(threads), the caller helps; Taskflow: Executor(threads), the caller only waits;\n\
         oneTBB: task_arena(threads, 1 reserved for the caller)). ratio = median / {BASE} median (same threads);\n\
         x serial = median / {SERIAL} median (the same frame on one thread, in schedule order, timed in the same run).\n\
         {} samples per row in {rounds} rounds; one checked frame per row first (dependency order); every frame's pieces counted.\n\
         load average at start: {load_start}; at end: {load_end}\n",
        graph.nodes.len(),
        graph.total_pieces(),
        params.sync_every,
        r.samples(),
    );
    if !tbb {
        text.push_str(TBB_SKIPPED);
    }
    let header: Vec<String> = [
        "library", "threads", "median", "p99", "min-max", "ratio", "x serial",
    ]
    .map(String::from)
    .to_vec();
    for &d in &DURATIONS_NS {
        let mut body = Vec::new();
        for &w in workers {
            let (base, serial) = (median_of(&all, BASE, &d, w), median_of(&all, SERIAL, &d, w));
            for s in all.iter().filter(|s| s.case == d && s.workers == w) {
                let m = stats::summarize(&s.samples);
                let ratio =
                    |b: Option<f64>| b.map_or("-".into(), |b| format!("{:.2}", m.median / b));
                body.push(vec![
                    s.library.clone(),
                    s.threads.to_string(),
                    table::fmt_num(m.median),
                    table::fmt_num(m.p99),
                    format!("{}-{}", table::fmt_num(m.min), table::fmt_num(m.max)),
                    ratio(base),
                    ratio(serial),
                ]);
            }
        }
        text.push_str(&format!(
            "\n{NAME} {} (ms per frame)\n",
            frame_graph::case_name(d)
        ));
        text.push_str(&table::grid(&header, &body, 1));
    }
    ctx.progress.print(&text);
    Ok(())
}
