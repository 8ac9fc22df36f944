//! W3 with background load (priorities and inheritance): the W3 frame
//! graph at D = 5 µs, and at the start of every timed frame [`BG_JOBS`] background jobs of
//! [`BG_NS`] that belong to no frame: no frame job depends on them and the
//! frame does not wait for them.
//!
//! - jobsys: the background jobs are `Priority::Low` (`job().desc(..)`), the
//!   frame's jobs `Normal`; one row with priority inheritance on (the
//!   default), one with it off (`priority_inheritance(false)`), both with
//!   the first selected idle policy.
//! - rayon: the background jobs are `pool.spawn`ed into the same pool
//!   (rayon has no priorities).
//! - serial: the background jobs run inline after the frame, outside the
//!   timed frame, so the serial row is the frame without interference.
//!
//! After each timed frame the background jobs are drained (untimed): jobsys
//! completes their handles, rayon waits for their counter, so every frame
//! starts with no background work left over. Every background job is
//! counted and the count checked after each frame; the frame's pieces are
//! counted as in W3 (background jobs do not bump that counter).

use super::emit;
pub use super::frame::{Background, BG_JOBS, BG_NS};
use super::frame::{Exec, Frame};
use super::frame_graph::{self, contestant_with, graph_params, ideal_row, xideal};
use super::serial_share;
use crate::error::{Error, Result};
use crate::json::{Label, Row};
use crate::pools::{rayon_label, semantics_note, BlockSystem, Pools};
use crate::runner::{interleave, split, Contestant, Plan};
use crate::spin;
use crate::stats;
use crate::Ctx;

/// Workload name (subcommand, JSON file).
pub const NAME: &str = "frame-graph-background";

/// Job duration D of the frame's jobs, ns.
pub const D_NS: u64 = 5_000;

/// The rows' params: W3's graph params, the background load, inheritance.
fn params(
    g: &crate::graph::FrameGraph,
    inheritance: Option<bool>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut p = graph_params(g, D_NS);
    p.insert("background_jobs_per_frame".into(), BG_JOBS.into());
    p.insert("background_job_us".into(), (BG_NS as f64 / 1e3).into());
    if let Some(on) = inheritance {
        p.insert("priority_inheritance".into(), on.into());
    }
    p
}

/// The contestants of one worker count: jobsys with inheritance on and
/// off, rayon, and serial with `serial_blocks` blocks (last).
fn contestants<'a>(
    systems: &[BlockSystem],
    pools: &'a Pools,
    frame: &'static Frame,
    shape: (usize, usize, usize),
    serial_blocks: usize,
) -> Vec<Contestant<'a>> {
    let mut cs: Vec<Contestant<'a>> = systems
        .iter()
        .map(|sys| {
            let bg = Some(Background::leak());
            contestant_with(sys.label(), Exec::Jobsys(sys.clone()), frame, shape, bg)
        })
        .collect();
    let bg = Some(Background::leak());
    let rayon = Exec::Rayon(&pools.rayon);
    cs.push(contestant_with(
        rayon_label(pools.workers),
        rayon,
        frame,
        shape,
        bg,
    ));
    let serial_shape = (shape.0, serial_blocks, shape.2);
    let bg = Some(Background::leak());
    cs.push(contestant_with(
        Label::serial(),
        Exec::Serial,
        frame,
        serial_shape,
        bg,
    ));
    cs
}

/// Table cell: inheritance on/off for jobsys rows.
fn inherit_cell(r: &Row, _: &[Row]) -> String {
    match r
        .params
        .get("priority_inheritance")
        .and_then(|v| v.as_bool())
    {
        Some(true) => "on".into(),
        Some(false) => "off".into(),
        None => "-".into(),
    }
}

/// Run the background-load variant of W3 and report it.
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
    let case = frame_graph::case_name(D_NS);
    let frame = Frame::leak(g, D_NS);
    let work_ms = g.total_pieces() as f64 * spin::calibrate().spin_actual_ns(D_NS) / 1e6;
    let bar = ctx.progress.bar(NAME, groups as u64);
    let mut rows = Vec::new();
    let mut serial = Vec::new();
    for &w in &ctx.workers {
        bar.message(format!("workers={w}"));
        let pools = Pools::new(&[], w)?;
        let systems: Vec<BlockSystem> = [true, false]
            .map(|on| BlockSystem::new(w, policy.clone()).with_inheritance(on))
            .into();
        let serial_blocks = serial_share(blocks, groups);
        let mut cs = contestants(
            &systems,
            &pools,
            frame,
            (1, blocks, per_block),
            serial_blocks,
        );
        interleave(&mut cs, Plan::throughput())?;
        serial.extend(cs.pop().expect("serial").samples);
        for (k, c) in cs.iter().enumerate() {
            let sys = systems.get(k);
            let mut p = params(g, sys.map(|s| s.inheritance));
            if let Some(sys) = sys {
                sys.add_params(&mut p);
            }
            rows.push(measured(ctx, &case, &c.label, p, &c.samples));
        }
        rows.push(ideal_row(ctx, NAME, &case, w, params(g, None), work_ms));
        bar.inc();
    }
    bar.finish();
    rows.push(measured(
        ctx,
        &case,
        &Label::serial(),
        params(g, None),
        &serial,
    ));
    frame_graph::sort_rows(&mut rows);
    let notes = notes(g, frames, per_block, &policy.name);
    emit(
        ctx,
        NAME,
        "W3 frame-graph with background load",
        &notes,
        &rows,
        false,
        &[("inherit", &inherit_cell), ("xideal", &xideal)],
    )
}

fn measured(
    ctx: &Ctx,
    case: &str,
    label: &Label,
    params: serde_json::Map<String, serde_json::Value>,
    samples: &[f64],
) -> Row {
    let s = stats::summarize(samples);
    Row::measured(NAME, case, label, params, "ms", &s, None, &ctx.machine)
}

fn notes(
    g: &crate::graph::FrameGraph,
    frames: usize,
    per_block: usize,
    policy: &str,
) -> Vec<String> {
    vec![
        frame_graph::graph_note(g),
        format!(
            "frame time in ms (median, p99); {frames} frames per row in blocks of {per_block}, interleaved; at the start of every frame {BG_JOBS} background jobs of {} us that the frame does not wait for, drained after the frame (untimed); every piece and background job counted",
            BG_NS / 1000
        ),
        format!(
            "jobsys[{policy}]: background jobs Priority::Low, frame jobs Normal; inherit = priority_inheritance(on/off); rayon: background jobs pool.spawn into the same pool (no priorities); serial: background jobs inline after the frame, untimed"
        ),
        semantics_note(),
        "ideal = frame work only / min(workers+1, cores) (the background work may run after the frame)".into(),
    ]
}
