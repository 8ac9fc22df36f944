//! W3 as a `jobsys::Graph`: the frame graph built once and replayed every
//! frame, beside the same frame scheduled job by job (W3's jobsys
//! executor) and serially, at equal workers, D = 0.5 and 5 µs:
//!
//! - `jobsys` (per-frame jobs): `frame_graph::jobsys_frame`.
//! - `jobsys-graph`: one `Graph::run` per frame, completed before the next.
//! - `jobsys-graph-2`: two runs in flight: each frame starts run k + 1,
//!   then completes run k, so a frame's sync points and its tail overlap
//!   the next frame; a frame's time is then its share of the throughput.
//!
//! The graph has W3's nodes and edges. W3's sync points (the main thread
//! waits for a job before it schedules the rest) become a chain of no-op
//! barrier nodes: barrier k runs after the synced job and barrier k - 1,
//! and every node scheduled after sync point k runs after barrier k, so
//! each node waits for what it waits for in the per-frame version.
//!
//! Checks: every frame (every block, for `jobsys-graph-2`) runs exactly
//! the frame's pieces; one checked run per contestant verifies the
//! dependency order, as in W3.

use super::frame::{Exec, Frame};
use super::frame_graph::{self, graph_params, ideal_row, jobsys_frame, xideal};
use super::{emit, serial_share};
use crate::count;
use crate::error::{check, Error, Result};
use crate::graph::{FrameGraph, Kind};
use crate::json::{Label, Row};
use crate::pools::{semantics_note, BlockSystem};
use crate::runner::{interleave, split, Contestant, Plan};
use crate::spin;
use crate::stats;
use crate::Ctx;
use jobsys::{Batch, Graph, JobHandle};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Instant;

/// Workload name (subcommand, JSON file).
pub const NAME: &str = "frame-graph-replay";

/// Job durations D, ns.
pub const DURATIONS_NS: [u64; 2] = [500, 5_000];

/// `frame`'s graph as a `Graph` (`CHECK`: every piece verifies its
/// dependencies), with `in_flight` runs at most.
fn build<const CHECK: bool>(frame: &'static Frame, in_flight: usize) -> Result<Graph> {
    let g: &FrameGraph = frame.graph;
    let mut b = Graph::builder();
    b.max_in_flight(in_flight);
    let mut ids = Vec::with_capacity(g.nodes.len());
    let mut barrier = None;
    let mut after = Vec::new();
    for (i, node) in g.nodes.iter().enumerate() {
        if let Some(s) = node.sync {
            let mut on = vec![ids[s as usize]];
            on.extend(barrier);
            barrier = Some(b.node().name("sync").after(&on).call(|| {}));
        }
        after.clear();
        after.extend(node.deps.iter().map(|&d| ids[d as usize]));
        after.extend(barrier);
        let i = i as u32;
        let nb = b.node().after(&after);
        let id = match node.kind {
            Kind::Single => nb.call(move || frame.piece::<CHECK>(i)),
            Kind::Parallel(p) => nb.parallel_for(0..p as usize, Batch::Fixed(1), move |_| {
                frame.piece::<CHECK>(i)
            }),
        };
        ids.push(id);
    }
    b.build()
        .map_err(|e| Error::Verify(format!("{NAME}: the frame's graph: {e}")))
}

/// The graph contestant with `in_flight` runs (1 or 2): a graph built at
/// each block's start (the block's fresh system), a checked run first.
fn graph_contestant<'a>(
    label: Label,
    sys: &BlockSystem,
    frame: &'static Frame,
    in_flight: usize,
    (warmup, blocks, per_block): (usize, usize, usize),
) -> Contestant<'a> {
    let pieces = frame.graph.total_pieces();
    let who = format!(
        "{NAME} {} {}",
        label.imp,
        frame_graph::case_name(frame.d_ns)
    );
    let graph: Rc<RefCell<Option<Graph>>> = Rc::new(RefCell::new(None));
    let prev: Rc<Cell<Option<JobHandle>>> = Rc::new(Cell::new(None));
    // The piece count when this block's timed frames began, and the
    // frames started since (pieces run on workers between two frames are
    // in no frame's window: the block's total is checked at its end).
    let counted = Rc::new(Cell::new((0u64, 0u64)));
    let iter_sys = sys.clone();
    let (g, p, c) = (graph.clone(), prev.clone(), counted.clone());
    let w = who.clone();
    let iter = move || -> Result<f64> {
        let js = iter_sys.get()?;
        let guard = g.borrow();
        let graph = guard
            .as_ref()
            .ok_or_else(|| Error::Verify(format!("{w}: no graph")))?;
        let before = count::total();
        let t = Instant::now();
        let run = graph.run(&js);
        let finish = if in_flight == 1 {
            Some(run)
        } else {
            p.replace(Some(run))
        };
        if let Some(h) = finish {
            js.try_complete(h)?;
        }
        let ms = t.elapsed().as_nanos() as f64 / 1e6;
        let (base, started) = c.get();
        c.set((base, started + 1));
        if in_flight == 1 {
            let ran = count::total() - before;
            check(ran == pieces, || {
                format!("{w}: {ran} pieces ran, expected {pieces}")
            })?;
        }
        Ok(ms)
    };
    let hook_sys = sys.clone();
    let (g, p, c) = (graph, prev, counted);
    Contestant::new(label, warmup.max(1), blocks, per_block, iter)
        .around_block(sys.hook())
        .around_block(move |entering| {
            if entering {
                let js = hook_sys.get()?;
                frame.reset_checks();
                let checked = build::<true>(frame, 1)?;
                js.try_complete(checked.run(&js))?;
                frame.verify_checks(&who)?;
                *g.borrow_mut() = Some(build::<false>(frame, in_flight)?);
                c.set((count::total(), 0));
                return Ok(());
            }
            // The block's last run, then every piece of its frames.
            if let Some(h) = p.take() {
                hook_sys.get()?.try_complete(h)?;
            }
            *g.borrow_mut() = None;
            let (base, started) = c.get();
            let done = count::total() - base;
            check(done == started * pieces, || {
                format!(
                    "{who}: {done} pieces ran in {started} frames, expected {}",
                    started * pieces
                )
            })
        })
}

/// The per-frame jobs contestant (W3's executor, no check frame: the graph
/// contestants' checked runs cover the graph, W3 covers this).
fn jobs_contestant<'a>(
    sys: &BlockSystem,
    frame: &'static Frame,
    (warmup, blocks, per_block): (usize, usize, usize),
) -> Contestant<'a> {
    let pieces = frame.graph.total_pieces();
    let s = sys.clone();
    let (mut hs, mut deps) = (Vec::new(), Vec::new());
    let label = Label {
        imp: "jobsys-jobs".into(),
        ..sys.label()
    };
    Contestant::new(label, warmup.max(1), blocks, per_block, move || {
        let js = s.get()?;
        let before = count::total();
        let t = Instant::now();
        jobsys_frame::<false>(&js, frame, &mut hs, &mut deps)?;
        let ms = t.elapsed().as_nanos() as f64 / 1e6;
        let ran = count::total() - before;
        check(ran == pieces, || {
            format!("{NAME} jobs: {ran} pieces ran, expected {pieces}")
        })?;
        Ok(ms)
    })
    .around_block(sys.hook())
}

/// Run W3-as-a-graph and report it.
pub fn run(ctx: &Ctx) -> Result<()> {
    let g = frame_graph::graph(ctx);
    let frames = ctx.samples_or(200, 6);
    let (blocks, per_block) = split(frames, ctx.size(10, 3));
    let groups = ctx.workers.len();
    let policy = ctx
        .policies
        .first()
        .cloned()
        .ok_or_else(|| Error::Verify(format!("{NAME}: no idle policy selected")))?;
    let load_before = crate::load_average();
    let bar = ctx.progress.bar(NAME, (groups * DURATIONS_NS.len()) as u64);
    let mut rows = Vec::new();
    for d in DURATIONS_NS {
        let case = frame_graph::case_name(d);
        let frame = Frame::leak(g, d);
        let work_ms = g.total_pieces() as f64 * spin::calibrate().spin_actual_ns(d) / 1e6;
        let mut serial = Vec::new();
        for &w in &ctx.workers {
            bar.message(format!("{case} workers={w}"));
            let shape = (1, blocks, per_block);
            let sys = || BlockSystem::new(w, policy.clone());
            let label = |imp: &str| Label {
                imp: imp.into(),
                ..sys().label()
            };
            let mut cs = vec![
                jobs_contestant(&sys(), frame, shape),
                graph_contestant(label("jobsys-graph"), &sys(), frame, 1, shape),
                graph_contestant(label("jobsys-graph-2"), &sys(), frame, 2, shape),
                frame_graph::contestant(
                    Label::serial(),
                    Exec::Serial,
                    frame,
                    (1, serial_share(blocks, groups), per_block),
                ),
            ];
            interleave(&mut cs, Plan::throughput())?;
            serial.extend(cs.pop().expect("serial").samples);
            for c in &cs {
                let s = stats::summarize(&c.samples);
                let mut params = graph_params(g, d);
                params.insert("mean_ms".into(), mean(&c.samples).into());
                rows.push(Row::measured(
                    NAME,
                    &case,
                    &c.label,
                    params,
                    "ms",
                    &s,
                    None,
                    &ctx.machine,
                ));
            }
            rows.push(ideal_row(ctx, NAME, &case, w, graph_params(g, d), work_ms));
            bar.inc();
        }
        let s = stats::summarize(&serial);
        let mut params = graph_params(g, d);
        params.insert("mean_ms".into(), mean(&serial).into());
        rows.push(Row::measured(
            NAME,
            &case,
            &Label::serial(),
            params,
            "ms",
            &s,
            None,
            &ctx.machine,
        ));
    }
    bar.finish();
    frame_graph::sort_rows(&mut rows);
    let load_after = crate::load_average();
    let notes = vec![
        frame_graph::graph_note(g),
        format!(
            "frame time in ms; {frames} frames per row in blocks of {per_block} (a fresh system, and a freshly built graph, per block), interleaved; every piece counted; the graph's dependency order checked on one run per block"
        ),
        format!(
            "jobsys-jobs[{}]: W3's per-frame jobs; jobsys-graph: the same frame as a Graph built once, one run per frame; jobsys-graph-2: two runs in flight (each frame starts the next run, then completes the previous one): the mean column is its time per frame at that throughput (its samples alternate), compare means",
            policy.name
        ),
        "the graph: W3's edges, and its sync points as a chain of no-op barrier nodes (every node scheduled after a sync point runs after its barrier), so each node waits for what it waits for in the per-frame version".into(),
        semantics_note(),
        format!(
            "ideal = work / min(workers+1, cores); xideal = median / ideal; load average {load_before} before, {load_after} after"
        ),
    ];
    emit(
        ctx,
        NAME,
        "W3 as a replayed graph",
        &notes,
        &rows,
        false,
        &[("mean", &mean_cell), ("xideal", &xideal)],
    )
}

fn mean(samples: &[f64]) -> f64 {
    samples.iter().sum::<f64>() / samples.len().max(1) as f64
}

/// Table cell: the row's mean frame time (with two runs in flight, a
/// frame's samples alternate between one that waits for the previous run
/// and one that finds it done; the mean is the throughput).
fn mean_cell(r: &Row, _: &[Row]) -> String {
    match r.params.get("mean_ms").and_then(|v| v.as_f64()) {
        Some(m) => format!("{m:.4}"),
        None => "-".into(),
    }
}
