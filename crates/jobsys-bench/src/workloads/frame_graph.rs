//! W3 frame-graph: the seed experiment. The generated frame of
//! [`crate::graph`] runs on jobsys, on rayon (dependencies by atomic
//! counters and continuations) and serially in schedule order; every job or
//! piece spins D µs with [`crate::spin::spin_ns`].
//!
//! Checks: every frame's executed piece count; and, once per contestant
//! before measuring, a checked frame in which every piece verifies that all
//! its dependencies had finished (the checks stay out of timed frames: they
//! would add shared atomics to every piece).
//!
//! The executors are public so W7 (contended) runs the same code.

use super::frame::Background;
pub use super::frame::{Exec, Frame};
use super::{emit, serial_share, static_floor};
use crate::count;
use crate::error::{check, Result};
use crate::graph::{FrameGraph, GraphParams, Kind};
use crate::graph_sim;
use crate::json::{Label, Row};
use crate::params;
use crate::pools::{semantics_note, Pools};
use crate::runner::{interleave, split, Contestant, Plan};
use crate::spin;
use crate::stats;
use crate::Ctx;
use jobsys::{Batch, JobHandle, JobSystem};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Workload name (subcommand, JSON file).
pub const NAME: &str = "frame-graph";

/// Job durations D of the workload, ns.
pub const DURATIONS_NS: [u64; 4] = [500, 1_000, 5_000, 20_000];

/// The case name of duration `d_ns`: "D=0.5us".
pub fn case_name(d_ns: u64) -> String {
    format!("D={}us", d_ns as f64 / 1000.0)
}

/// jobsys: schedule in order with `schedule_after` / `job().after(..).parallel_for`
/// (batch 1: every piece its own index), `complete` at sync points, then
/// complete every handle newest first.
pub fn jobsys_frame<const CHECK: bool>(
    js: &JobSystem,
    f: &'static Frame,
    hs: &mut Vec<JobHandle>,
    deps: &mut Vec<JobHandle>,
) -> Result<()> {
    hs.clear();
    for (i, node) in f.graph.nodes.iter().enumerate() {
        if let Some(s) = node.sync {
            js.try_complete(hs[s as usize])?;
        }
        deps.clear();
        deps.extend(node.deps.iter().map(|&d| hs[d as usize]));
        let i = i as u32;
        let h = match node.kind {
            Kind::Single => js.schedule_after(deps, move || f.piece::<CHECK>(i)),
            Kind::Parallel(p) => {
                js.job()
                    .after(deps)
                    .parallel_for(0..p as usize, Batch::Fixed(1), move |_| f.piece::<CHECK>(i))
            }
        };
        hs.push(h);
    }
    for h in hs.iter().rev() {
        js.try_complete(*h)?;
    }
    Ok(())
}

/// One checked jobsys frame of `f` (every piece verifies its dependencies
/// finished first; every job must finish): the check [`contestant`] runs
/// before measuring, for workloads with their own frame loop.
pub fn check_frame(js: &JobSystem, f: &'static Frame, who: &str) -> Result<()> {
    let (mut hs, mut deps) = (Vec::new(), Vec::new());
    f.reset_checks();
    jobsys_frame::<true>(js, f, &mut hs, &mut deps)?;
    f.verify_checks(who)
}

/// rayon's per-frame dependency state: a counter per job (unfinished
/// dependencies + 1 for "not scheduled yet") and a done word the main
/// thread can sleep on. Dependents lists are precomputed from the graph.
pub struct RayonFrame {
    remaining: Vec<AtomicU32>,
    /// 0: running or pending, 1: done, 2: pending and the main thread waits.
    done: Vec<AtomicU32>,
    dependents: Vec<Vec<u32>>,
}

impl RayonFrame {
    /// State for `graph`.
    pub fn new(graph: &FrameGraph) -> RayonFrame {
        let n = graph.nodes.len();
        RayonFrame {
            remaining: (0..n).map(|_| AtomicU32::new(0)).collect(),
            done: (0..n).map(|_| AtomicU32::new(0)).collect(),
            dependents: graph.dependents(),
        }
    }

    /// Main thread at a sync point: spin up to 30 µs (what jobsys's default
    /// policy spins), then sleep on the job's done word.
    fn wait(&self, j: u32) {
        let w = &self.done[j as usize];
        let t = Instant::now();
        while w.load(Ordering::Acquire) == 0 && t.elapsed() < Duration::from_micros(30) {
            std::hint::spin_loop();
        }
        loop {
            match w.load(Ordering::Acquire) {
                1 => return,
                0 => {
                    let _ = w.compare_exchange(0, 2, Ordering::Acquire, Ordering::Acquire);
                }
                _ => atomic_wait::wait(w, 2),
            }
        }
    }
}

fn rayon_release<'s, const CHECK: bool>(
    s: &rayon::Scope<'s>,
    f: &'s Frame,
    rf: &'s RayonFrame,
    i: u32,
) {
    if rf.remaining[i as usize].fetch_sub(1, Ordering::AcqRel) == 1 {
        s.spawn(move |s| rayon_run::<CHECK>(s, f, rf, i));
    }
}

fn rayon_run<'s, const CHECK: bool>(
    s: &rayon::Scope<'s>,
    f: &'s Frame,
    rf: &'s RayonFrame,
    i: u32,
) {
    match f.graph.nodes[i as usize].kind {
        Kind::Single => f.piece::<CHECK>(i),
        Kind::Parallel(p) => (0..p)
            .into_par_iter()
            .with_max_len(1)
            .for_each(|_| f.piece::<CHECK>(i)),
    }
    if rf.done[i as usize].swap(1, Ordering::AcqRel) == 2 {
        atomic_wait::wake_all(&rf.done[i as usize]);
    }
    for &d in &rf.dependents[i as usize] {
        rayon_release::<CHECK>(s, f, rf, d);
    }
}

/// rayon: the main thread "schedules" job i by dropping its +1; whoever
/// brings a counter to zero spawns the job (a continuation); a parallel job
/// is a `par_iter().with_max_len(1)` inside its task. Sync points wait on
/// the job's done word; `in_place_scope` waits for the rest.
pub fn rayon_frame<const CHECK: bool>(pool: &rayon::ThreadPool, f: &Frame, rf: &RayonFrame) {
    for (i, node) in f.graph.nodes.iter().enumerate() {
        rf.remaining[i].store(node.deps.len() as u32 + 1, Ordering::Relaxed);
        rf.done[i].store(0, Ordering::Relaxed);
    }
    pool.in_place_scope(|s| {
        for (i, node) in f.graph.nodes.iter().enumerate() {
            if let Some(j) = node.sync {
                rf.wait(j);
            }
            rayon_release::<CHECK>(s, f, rf, i as u32);
        }
    });
}

/// Serial: every job's pieces in schedule order on the calling thread.
pub fn serial_frame<const CHECK: bool>(f: &Frame) {
    for i in 0..f.graph.nodes.len() {
        for _ in 0..f.graph.pieces(i) {
            f.piece::<CHECK>(i as u32);
        }
    }
}

/// A contestant that runs frames of `f` on `exec`: its first iteration is
/// a checked frame; every iteration checks the piece count and returns the
/// frame time in ms.
pub fn contestant<'a>(
    label: Label,
    exec: Exec<'a>,
    f: &'static Frame,
    shape: (usize, usize, usize),
) -> Contestant<'a> {
    contestant_with(label, exec, f, shape, None)
}

/// [`contestant`], optionally with background jobs started at the start of
/// every timed frame and drained (untimed) after it (W3 background).
pub fn contestant_with<'a>(
    label: Label,
    exec: Exec<'a>,
    f: &'static Frame,
    (warmup, blocks, per_block): (usize, usize, usize),
    bg: Option<&'static Background>,
) -> Contestant<'a> {
    let n = f.graph.nodes.len();
    let pieces = f.graph.total_pieces();
    let mut hs = Vec::with_capacity(n);
    let mut deps = Vec::with_capacity(16);
    let rf = RayonFrame::new(f.graph);
    let mut checked = false;
    let mut bg_hs = Vec::new();
    let who = format!("{NAME} {} {}", label.imp, case_name(f.d_ns));
    let hook = match &exec {
        Exec::Jobsys(sys) => Some(sys.hook()),
        _ => None,
    };
    let c = Contestant::new(label, warmup.max(1), blocks, per_block, move || {
        let js = match &exec {
            Exec::Jobsys(sys) => Some(sys.get()?),
            _ => None,
        };
        if !checked {
            f.reset_checks();
            match (&exec, &js) {
                (Exec::Jobsys(_), Some(js)) => jobsys_frame::<true>(js, f, &mut hs, &mut deps)?,
                (Exec::Rayon(pool), _) => rayon_frame::<true>(pool, f, &rf),
                _ => serial_frame::<true>(f),
            }
            f.verify_checks(&who)?;
            checked = true;
        }
        let before_timed = count::total();
        let t = Instant::now();
        if let Some(bg) = bg {
            bg.start(&exec, js.as_ref(), &mut bg_hs);
        }
        match (&exec, &js) {
            (Exec::Jobsys(_), Some(js)) => jobsys_frame::<false>(js, f, &mut hs, &mut deps)?,
            (Exec::Rayon(pool), _) => rayon_frame::<false>(pool, f, &rf),
            _ => serial_frame::<false>(f),
        }
        let ms = t.elapsed().as_nanos() as f64 / 1e6;
        let ran = count::total() - before_timed;
        if let Some(bg) = bg {
            bg.drain(&exec, js.as_ref(), &mut bg_hs, &who)?;
        }
        check(ran == pieces, || {
            format!("{who}: {ran} pieces ran, expected {pieces}")
        })?;
        Ok(ms)
    });
    match hook {
        Some(h) => c.around_block(h),
        None => c,
    }
}

/// The graph of this run (leaked, shared by every frame).
pub fn graph(ctx: &Ctx) -> &'static FrameGraph {
    let p = if ctx.quick {
        GraphParams::quick()
    } else {
        GraphParams::seed_experiment()
    };
    Box::leak(Box::new(FrameGraph::generate(&p)))
}

/// Describe the graph in a table note.
pub fn graph_note(g: &FrameGraph) -> String {
    let p = &g.params;
    format!(
        "graph (seed {:#x}): {} jobs, {} parallel (1-{} pieces, batch 1), {} pieces in all, 0-{} deps each, {} sync points, critical path {} jobs",
        p.seed,
        g.nodes.len(),
        g.parallel_jobs(),
        p.max_pieces,
        g.total_pieces(),
        p.max_deps,
        g.sync_points(),
        g.critical_path()
    )
}

/// What a scheduler that costs nothing reaches on this graph with
/// jobsys's rules, at the thread counts the ideal rows use
/// (`graph_sim.rs`): the floor the graph and the rules set, without the
/// machine.
pub fn sim_note(g: &FrameGraph, workers: &[usize], cores: usize) -> String {
    let mut threads: Vec<usize> = workers.iter().map(|&w| (w + 1).min(cores)).collect();
    threads.sort_unstable();
    threads.dedup();
    let cells: Vec<String> = threads
        .iter()
        .map(|&t| {
            let needed = graph_sim::simulate(g, t, graph_sim::Rule::Needed);
            let any = graph_sim::simulate(g, t, graph_sim::Rule::Any);
            format!("{t} threads {:.3}x ({:.3}x)", needed.x_ideal, any.x_ideal)
        })
        .collect();
    format!(
        "a zero-cost scheduler with jobsys's rules (graph_sim.rs: pieces of one unit, a waiting main thread runs only what its target needs, loops handed out in chunks) finishes this graph in: {} the ideal (in brackets: a waiter that may run any job)",
        cells.join(", ")
    )
}

/// Graph parameters as row params.
pub fn graph_params(g: &FrameGraph, d_ns: u64) -> serde_json::Map<String, serde_json::Value> {
    params! {
        "D_us" => d_ns as f64 / 1000.0,
        "jobs" => g.nodes.len(),
        "pieces" => g.total_pieces(),
        "seed" => g.params.seed,
        "critical_path_jobs" => g.critical_path(),
        "spin_actual_ns" => spin::calibrate().spin_actual_ns(d_ns),
    }
}

/// The durations of the first look (no `--full`, no `--quick`).
pub const FIRST_LOOK_NS: [u64; 2] = [500, 5_000];

/// What one run of W3 covers: the whole sweep (`--full`, `all`,
/// `--quick`) or the first look, about two minutes on a 2-core machine.
struct Sweep {
    durations: Vec<u64>,
    workers: Vec<usize>,
    policies: Vec<crate::pools::PolicySpec>,
    frames: usize,
    first_look: bool,
}

fn sweep(ctx: &Ctx) -> Sweep {
    let first_look = !ctx.full && !ctx.quick;
    if !first_look {
        return Sweep {
            durations: DURATIONS_NS.to_vec(),
            workers: ctx.workers.clone(),
            policies: ctx.policies.clone(),
            frames: ctx.samples_or(200, 6),
            first_look,
        };
    }
    let mut workers = if ctx.workers_given {
        ctx.workers.clone()
    } else {
        first_look_workers(ctx.cores())
    };
    workers.dedup();
    Sweep {
        durations: FIRST_LOOK_NS.to_vec(),
        workers,
        policies: if ctx.policies_given {
            ctx.policies.clone()
        } else {
            ctx.policies.iter().take(1).cloned().collect()
        },
        frames: ctx.samples_or(100, 6),
        first_look,
    }
}

/// Run W3 and report it.
pub fn run(ctx: &Ctx) -> Result<()> {
    let g = graph(ctx);
    let started = std::time::Instant::now();
    let sw = sweep(ctx);
    let frames = sw.frames;
    let (blocks, per_block) = split(frames, ctx.size(10, 3));
    // One checked + one timed frame, then one uncounted frame per block:
    // 20 warm-up frames for the default 20 blocks.
    let warmup = 1;
    let groups = sw.workers.len();
    let load_before = crate::load_average();
    ctx.progress
        .print(&plan_line(&sw, blocks, per_block, groups));
    // The ETA comes from the planned work of every step (frames x an
    // estimated frame time), rescaled by how long the finished steps took:
    // steps of D = 5 us cost ten times those of 0.5 us, so a per-step rate
    // would swing.
    let cal = spin::calibrate();
    let mut planned = Vec::new();
    for &d in &sw.durations {
        let frame_s = g.total_pieces() as f64 * (cal.spin_actual_ns(d) + 50.0) / 1e9;
        for &w in &sw.workers {
            let threads = jobsys_threads(w).min(ctx.cores()) as f64;
            let parallel = sw.policies.len() + 1 + static_floor::configs(w, ctx.cores()).len();
            let counted = (warmup + 1 + blocks * (per_block + 1)) as f64;
            let serial = (warmup + 1 + serial_share(blocks, groups) * (per_block + 1)) as f64;
            planned.push(frame_s * (counted * parallel as f64 / threads + serial));
        }
    }
    let bar = ctx.progress.bar_planned(NAME, planned);
    let mut rows = Vec::new();
    for &d in &sw.durations {
        let case = case_name(d);
        let frame = Frame::leak(g, d);
        let work_ms = g.total_pieces() as f64 * spin::calibrate().spin_actual_ns(d) / 1e6;
        let mut serial = Vec::new();
        for &w in &sw.workers {
            bar.message(format!(
                "{case} threads={} (jobsys workers={w})",
                jobsys_threads(w)
            ));
            let mut pools = Pools::new(&sw.policies, w)?;
            // Equal thread counts: jobsys's caller runs jobs in `complete`,
            // rayon's caller only blocks in `in_place_scope`.
            pools.rayon = crate::pools::rayon(rayon_threads_equal(w))?;
            let shape = (warmup, blocks, per_block);
            let mut cs = Vec::new();
            for sys in &pools.jobsys {
                cs.push(contestant(
                    sys.label(),
                    Exec::Jobsys(sys.clone()),
                    frame,
                    shape,
                ));
            }
            cs.push(contestant(
                rayon_label_equal(w),
                Exec::Rayon(&pools.rayon),
                frame,
                shape,
            ));
            for fc in static_floor::configs(w, ctx.cores()) {
                cs.push(static_floor::frame_contestant(fc, w, frame, shape)?);
            }
            cs.push(contestant(
                Label::serial(),
                Exec::Serial,
                frame,
                (warmup, serial_share(blocks, groups), per_block),
            ));
            interleave(&mut cs, Plan::throughput())?;
            serial.extend(cs.pop().expect("serial").samples);
            for (k, c) in cs.iter().enumerate() {
                let mut params = graph_params(g, d);
                if let Some(sys) = pools.jobsys.get(k) {
                    sys.add_params(&mut params);
                }
                add_round_params(&mut params, &c.samples, per_block);
                rows.push(Row::measured(
                    NAME,
                    &case,
                    &c.label,
                    params,
                    "ms",
                    &stats::summarize(&c.samples),
                    None,
                    &ctx.machine,
                ));
            }
            rows.push(ideal_row(ctx, NAME, &case, w, graph_params(g, d), work_ms));
            bar.inc();
        }
        let mut params = graph_params(g, d);
        add_round_params(&mut params, &serial, per_block);
        rows.push(Row::measured(
            NAME,
            &case,
            &Label::serial(),
            params,
            "ms",
            &stats::summarize(&serial),
            None,
            &ctx.machine,
        ));
    }
    bar.finish();
    sort_rows(&mut rows);
    let load_after = crate::load_average();
    let notes = vec![
        graph_note(g),
        format!(
            "frame time in ms; {frames} frames per row in blocks of {per_block}, each block after one uncounted frame (jobsys: a fresh system per block), interleaved A B A B; pieces counted every frame, dependency order checked on one frame per row"
        ),
        semantics_note(),
        "here rayon's pool has workers+1 threads (the threads column): as many threads run jobs as with jobsys's workers + calling thread, since rayon's caller only waits in in_place_scope".into(),
        format!(
            "round_median_min/max (JSON params) = the smallest / largest per-round median ({blocks} rounds of {per_block} frames)"
        ),
        format!(
            "serial = same graph in schedule order on the main thread; ideal = work / min(workers+1, cores) with work = pieces x measured spin(D) ({}); xideal = median / ideal",
            sw.durations
                .iter()
                .map(|&d| format!("{}: {:.0} ns", case_name(d), cal.spin_actual_ns(d)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        "rayon: continuations spawned when a job's atomic dependency counter hits zero (dependents precomputed), parallel jobs as par_iter().with_max_len(1), sync points sleep on a futex word after a 30 us spin".into(),
        sim_note(g, &sw.workers, ctx.cores()),
        format!(
            "{} / {}: no job system; the frame's pieces (dependencies and sync points ignored: a lower bound) split up front into equal contiguous shares over min(workers+1, cores) / workers+1 threads (persistent helpers + the calling thread; waits spin 30 us, then sleep), measured like the others: the machine's own floor in this run",
            static_floor::CORES,
            static_floor::OVERSUB
        ),
    ];
    emit(
        ctx,
        NAME,
        "W3 frame-graph",
        &notes,
        &rows,
        false,
        &[("xideal", &xideal), ("xfloor", &static_floor::xfloor)],
    )?;
    let svg = crate::plot::frame_graph(&rows, &ctx.out)?;
    ctx.progress.print(&format!("   plot: {}\n", svg.display()));
    ctx.progress.print(&verdict(
        ctx,
        &sw,
        &rows,
        &svg,
        started.elapsed(),
        (&load_before, &load_after),
    ));
    if let Some(path) = &ctx.trace {
        trace_frames(ctx, g, path)?;
    }
    Ok(())
}

/// Threads running jobs when jobsys has `workers` workers: the workers and
/// the calling thread, which runs jobs while it waits in `complete`.
pub fn jobsys_threads(workers: usize) -> usize {
    workers + 1
}

/// The rayon pool size with as many threads running jobs as jobsys with
/// `workers` workers: rayon's caller only waits in `in_place_scope` (it is
/// not a pool thread and runs no jobs), so the pool gets workers + 1.
pub fn rayon_threads_equal(workers: usize) -> usize {
    jobsys_threads(workers)
}

/// The label of the rayon rows paired with jobsys at `workers` workers.
pub fn rayon_label_equal(workers: usize) -> Label {
    Label {
        imp: "rayon".into(),
        policy: None,
        workers: Some(workers),
        threads: Some(rayon_threads_equal(workers)),
    }
}

/// The first look's jobsys worker counts: 1, 2 and `cores` threads doing
/// the work (workers = threads - 1), without repeats.
pub fn first_look_workers(cores: usize) -> Vec<usize> {
    let mut threads = vec![1, 2, cores.max(1)];
    threads.sort_unstable();
    threads.dedup();
    threads.into_iter().map(|t| t - 1).collect()
}

/// The median of each round: `samples` in measuring order, `per_block`
/// per round (a shorter last round counts too).
pub fn round_medians(samples: &[f64], per_block: usize) -> Vec<f64> {
    samples
        .chunks(per_block.max(1))
        .map(|c| stats::summarize(c).median)
        .collect()
}

/// The spread the verdict prints: (min, max) of the per-round medians,
/// each divided by `base`. `None` without rounds.
pub fn ratio_spread(round_medians: &[f64], base: f64) -> Option<(f64, f64)> {
    let min = round_medians.iter().copied().reduce(f64::min)?;
    let max = round_medians.iter().copied().reduce(f64::max)?;
    Some((min / base, max / base))
}

fn add_round_params(
    params: &mut serde_json::Map<String, serde_json::Value>,
    samples: &[f64],
    per_block: usize,
) {
    let rm = round_medians(samples, per_block);
    if let Some((lo, hi)) = ratio_spread(&rm, 1.0) {
        params.insert("rounds".into(), rm.len().into());
        params.insert("round_median_min".into(), lo.into());
        params.insert("round_median_max".into(), hi.into());
    }
}

/// What this run measures, from its configuration.
fn plan_line(sw: &Sweep, blocks: usize, per_block: usize, groups: usize) -> String {
    let threads: Vec<String> = sw
        .workers
        .iter()
        .map(|&w| jobsys_threads(w).to_string())
        .collect();
    format!(
        "frame-graph{}: policy {}; threads {} (jobsys n workers + the calling thread, rayon a pool of n+1, serial 1); D = {} us; {} frames per row in {} rounds of {} (serial: {} rounds of {} per thread count), contestants alternating within each round",
        if sw.first_look { " first look" } else { "" },
        sw.policies
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        threads.join(", "),
        sw.durations
            .iter()
            .map(|&d| (d as f64 / 1000.0).to_string())
            .collect::<Vec<_>>()
            .join(", "),
        blocks * per_block,
        blocks,
        per_block,
        serial_share(blocks, groups),
        per_block,
    )
}

/// The closing lines a newcomer reads: jobsys and rayon as multiples of
/// serial per duration at equal thread counts (lower is better) with the
/// spread over rounds, the load, the plot, and how to run the whole sweep
/// with a rough duration for this machine.
fn verdict(
    ctx: &Ctx,
    sw: &Sweep,
    rows: &[Row],
    svg: &std::path::Path,
    took: std::time::Duration,
    (load_before, load_after): (&str, &str),
) -> String {
    let policy = sw.policies.first().map(|p| p.policy.name());
    let row = |case: &str, imp: &str, w: Option<usize>| {
        rows.iter().find(|r| {
            r.case == case
                && r.imp == imp
                && r.workers == w
                && (imp != "jobsys" || r.policy == policy)
        })
    };
    let spread = |r: &Row, base: f64| {
        Some((
            r.param_f64("round_median_min")? / base,
            r.param_f64("round_median_max")? / base,
        ))
    };
    let mut out = format!(
        "verdict: median frame time / serial median, lower is better, at equal threads running jobs (jobsys {}: n workers + the calling thread; rayon: a pool of n+1 threads, its caller only waits); spread = min-max of the per-round medians over the serial median; load average before {load_before}, after {load_after}:\n",
        sw.policies.first().map_or("", |p| p.key)
    );
    let fmt = |name: &str, r: &Row, serial: f64| -> String {
        let x = r.median / serial;
        match spread(r, serial) {
            Some((lo, hi)) => format!("{name} {x:.2}x serial (spread {lo:.2}-{hi:.2})"),
            None => format!("{name} {x:.2}x serial"),
        }
    };
    for &d in &sw.durations {
        let case = case_name(d);
        let Some(serial_row) = row(&case, "serial", None) else {
            continue;
        };
        let serial = serial_row.median;
        let serial_spread = spread(serial_row, 1.0)
            .map(|(lo, hi)| format!(", rounds {lo:.2}-{hi:.2} ms"))
            .unwrap_or_default();
        out.push_str(&format!(
            "  {case} (serial {serial:.2} ms{serial_spread}):\n"
        ));
        for &w in &sw.workers {
            let (Some(j), Some(r)) = (row(&case, "jobsys", Some(w)), row(&case, "rayon", Some(w)))
            else {
                continue;
            };
            let t = jobsys_threads(w);
            out.push_str(&format!(
                "    at {t} thread{}: {}, {}\n",
                if t == 1 { "" } else { "s" },
                fmt("jobsys", j, serial),
                fmt("rayon", r, serial)
            ));
        }
    }
    out.push_str(&format!("  plot: {}\n", svg.display()));
    if sw.first_look {
        // Frame time grows about linearly with D: the whole sweep's four
        // durations cost (0.5 + 1 + 5 + 20) / (0.5 + 5) of these two; it
        // also runs cores + 2 worker counts, every policy besides rayon and
        // serial, and twice the frames.
        let durations = DURATIONS_NS.iter().sum::<u64>() as f64
            / sw.durations.iter().sum::<u64>().max(1) as f64;
        let workers = (ctx.cores() + 2) as f64 / sw.workers.len().max(1) as f64;
        let policies = (crate::pools::policies().len() + 2) as f64 / (sw.policies.len() + 2) as f64;
        let mins = took.as_secs_f64() * durations * workers * policies * 2.0 / 60.0;
        out.push_str(&format!(
            "  the whole sweep (D = 0.5, 1, 5, 20 us; the --workers list, by default 0..={} and {} workers; every idle policy; same equal-thread rule): jobsys-bench frame-graph --full, roughly {:.0} minutes on this machine\n",
            ctx.cores(),
            2 * ctx.cores(),
            mins.max(1.0)
        ));
    }
    out
}

/// Frames `--trace` captures, after as many untraced warm-up frames.
pub const TRACE_FRAMES: usize = 5;

/// `--trace FILE`: on a fresh jobsys system with the highest worker count
/// and the first selected policy, run [`TRACE_FRAMES`] warm-up frames, then
/// trace as many frames of D = [`DURATIONS_NS`]\[0\], each inside a frame
/// marker (pieces counted), and write the Chrome trace JSON to `path`.
fn trace_frames(ctx: &Ctx, g: &'static FrameGraph, path: &std::path::Path) -> Result<()> {
    let w = ctx.workers.iter().copied().max().unwrap_or(0);
    let policy = ctx.policies.first().map(|p| p.policy).unwrap_or_default();
    let js = JobSystem::builder()
        .workers(w)
        .idle_policy(policy)
        .build()?;
    let f = Frame::leak(g, DURATIONS_NS[0]);
    let (mut hs, mut deps) = (Vec::new(), Vec::new());
    for _ in 0..TRACE_FRAMES {
        jobsys_frame::<false>(&js, f, &mut hs, &mut deps)?;
    }
    let before = count::total();
    check(js.trace_start(), || {
        format!("{NAME} --trace: a capture is already running")
    })?;
    for _ in 0..TRACE_FRAMES {
        let _frame = js.frame();
        jobsys_frame::<false>(&js, f, &mut hs, &mut deps)?;
    }
    let trace = js.trace_stop();
    let (ran, want) = (
        count::total() - before,
        TRACE_FRAMES as u64 * g.total_pieces(),
    );
    check(ran == want, || {
        format!("{NAME} --trace: {ran} pieces ran, expected {want}")
    })?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    jobsys_trace::TraceExt::write_chrome_json(
        &trace,
        std::io::BufWriter::new(std::fs::File::create(path)?),
    )?;
    ctx.progress.print(&format!(
        "   trace: {} ({TRACE_FRAMES} frames, {}, workers={w})\n",
        path.display(),
        case_name(f.d_ns)
    ));
    Ok(())
}

/// Table cell: the row's median over the ideal row of its case and workers.
pub fn xideal(r: &Row, all: &[Row]) -> String {
    let w = r.workers.unwrap_or(0);
    match all
        .iter()
        .find(|i| i.imp == "ideal" && i.case == r.case && i.workers == Some(w))
    {
        Some(i) if r.n > 0 => format!("{:.2}x", r.median / i.median),
        _ => "-".into(),
    }
}

/// The ideal reference row of `case` for `w` workers: `work_ms` over
/// min(w + 1, cores) threads.
pub fn ideal_row(
    ctx: &Ctx,
    workload: &str,
    case: &str,
    w: usize,
    mut params: serde_json::Map<String, serde_json::Value>,
    work_ms: f64,
) -> Row {
    let threads = (w + 1).min(ctx.cores());
    params.insert("ideal_threads".into(), threads.into());
    Row::reference(
        workload,
        case,
        "ideal",
        Some(w),
        params,
        "ms",
        work_ms / threads as f64,
        &ctx.machine,
    )
}

/// Order rows: by duration, serial first, then by worker count, jobsys
/// before rayon before the static-split floors before ideal.
pub fn sort_rows(rows: &mut [Row]) {
    let rank = |r: &Row| match r.imp.as_str() {
        "serial" => 0,
        "jobsys" => 1,
        "rayon" => 2,
        static_floor::CORES => 3,
        static_floor::OVERSUB => 4,
        _ => 5,
    };
    rows.sort_by(|a, b| {
        let d = |r: &Row| r.param_f64("D_us").unwrap_or(0.0);
        d(a).total_cmp(&d(b))
            .then(a.case.cmp(&b.case))
            .then((rank(a) != 0).cmp(&(rank(b) != 0)))
            .then(a.workers.cmp(&b.workers))
            .then(rank(a).cmp(&rank(b)))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rayon_gets_as_many_threads_as_jobsys_workers_plus_caller() {
        for w in 0..6 {
            assert_eq!(jobsys_threads(w), w + 1);
            assert_eq!(rayon_threads_equal(w), jobsys_threads(w));
            let l = rayon_label_equal(w);
            assert_eq!(l.workers, Some(w));
            assert_eq!(l.threads, Some(w + 1));
        }
        // First look: 1, 2 and all cores' threads, each once.
        assert_eq!(first_look_workers(2), vec![0, 1]);
        assert_eq!(first_look_workers(1), vec![0, 1]);
        assert_eq!(first_look_workers(8), vec![0, 1, 7]);
    }

    #[test]
    fn spread_is_min_max_of_round_medians_over_the_base() {
        // Three rounds of 3 frames; the outlier 100 only moves its round's
        // median a little, and the last, short round counts too.
        let samples = [1.0, 2.0, 3.0, 4.0, 100.0, 5.0, 9.0];
        let rm = round_medians(&samples, 3);
        assert_eq!(rm, vec![2.0, 5.0, 9.0]);
        assert_eq!(ratio_spread(&rm, 2.0), Some((1.0, 4.5)));
        assert_eq!(ratio_spread(&[], 2.0), None);
        let mut params = serde_json::Map::new();
        add_round_params(&mut params, &samples, 3);
        assert_eq!(params["rounds"], 3);
        assert_eq!(params["round_median_min"], 2.0);
        assert_eq!(params["round_median_max"], 9.0);
    }
}
