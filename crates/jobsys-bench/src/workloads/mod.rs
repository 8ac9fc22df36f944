//! One module per workload of docs/workloads.md, and what they share: printing
//! the table, writing the JSON, drawing the plot.

pub mod access_graph;
pub mod contended;
pub mod cpp_tools;
pub mod cpp_w1;
pub mod cpp_w2;
pub mod cpp_w3;
pub mod critical_chain;
pub mod follow_cpus;
pub mod frame;
pub mod frame_graph;
pub mod frame_graph_background;
pub mod frame_graph_replay;
pub mod idle_cost;
pub mod parallel_for;
pub mod policies;
pub mod spawn_empty;
pub mod static_floor;
pub mod w1_floor;
pub mod w1_kernels;
pub mod w2_kernel;
pub mod wake_latency;
pub mod wake_primitives;

use crate::cli::Command;
use crate::error::{Error, Result};
use crate::json::{self, Row};
use crate::runner::Contestant;
use crate::stats;
use crate::table::{self, Extra};
use crate::{plot, Ctx};

/// Run workload `w`: measure, print its table, write its JSON (and plot).
pub fn run(ctx: &Ctx, w: Command) -> Result<()> {
    match w {
        Command::SpawnEmpty => spawn_empty::run(ctx),
        Command::ParallelFor => parallel_for::run(ctx),
        Command::FrameGraph => frame_graph::run(ctx),
        Command::FrameGraphBackground => frame_graph_background::run(ctx),
        Command::FrameGraphReplay => frame_graph_replay::run(ctx),
        Command::CriticalChain => critical_chain::run(ctx),
        Command::WakeLatency => wake_latency::run(ctx),
        Command::IdleCost => idle_cost::run(ctx),
        Command::WakePrimitives => wake_primitives::run(ctx),
        Command::Contended => contended::run(ctx),
        Command::CppW1 => cpp_w1::run(ctx),
        Command::CppW2 => cpp_w2::run(ctx),
        Command::CppW3 => cpp_w3::run(ctx),
        Command::FollowCpus => follow_cpus::run(ctx),
        Command::Policies => policies::run(ctx),
        Command::AccessGraph => access_graph::run(ctx),
        Command::All | Command::Plot => unreachable!("not a workload"),
    }
}

/// JSON file names (without `.json`) of the workloads.
pub const NAMES: [&str; 8] = [
    spawn_empty::NAME,
    parallel_for::NAME,
    frame_graph::NAME,
    frame_graph_background::NAME,
    wake_latency::NAME,
    idle_cost::NAME,
    wake_primitives::NAME,
    contended::NAME,
];

/// Print the table of `rows` and write them to `<out>/<name>.json`.
pub fn emit(
    ctx: &Ctx,
    name: &str,
    title: &str,
    notes: &[String],
    rows: &[Row],
    percentiles: bool,
    extras: &[Extra<'_>],
) -> Result<()> {
    if rows.is_empty() {
        return Err(Error::Verify(format!("{name}: no rows measured")));
    }
    let written = json::write(&ctx.out, name, rows)?;
    let mut text = table::render(title, notes, rows, percentiles, extras);
    text.push_str(&format!("   {}\n", written.describe()));
    ctx.progress.print(&text);
    Ok(())
}

/// Rows of measured contestants, in order.
pub fn rows_of(
    ctx: &Ctx,
    name: &str,
    case: &str,
    params: &serde_json::Map<String, serde_json::Value>,
    unit: &str,
    cs: &[Contestant<'_>],
) -> Vec<Row> {
    cs.iter()
        .map(|c| {
            Row::measured(
                name,
                case,
                &c.label,
                params.clone(),
                unit,
                &stats::summarize(&c.samples),
                None,
                &ctx.machine,
            )
        })
        .collect()
}

/// `plot` subcommand: redraw every plot whose JSON exists in `--out`.
pub fn replot(ctx: &Ctx) -> Result<()> {
    let mut drawn = 0;
    for (name, draw) in [
        (frame_graph::NAME, plot::frame_graph as plot::PlotFn),
        (wake_latency::NAME, plot::wake_latency),
        (wake_primitives::NAME, plot::wake_primitives),
    ] {
        let path = json::path_for(&ctx.out, name);
        if path.exists() {
            let rows = json::read(&path)?;
            let svg = draw(&rows, &ctx.out)?;
            ctx.progress.print(&format!("plot: {}", svg.display()));
            drawn += 1;
        }
    }
    if let Some((lat, idle)) = policies::read_rows(&ctx.out)? {
        let points = policies::combine(&lat, &idle);
        let svg = plot::latency_vs_cpu(&points, &lat, &ctx.out)?;
        ctx.progress.print(&format!("plot: {}", svg.display()));
        drawn += 1;
    }
    if drawn == 0 {
        return Err(Error::Plot(format!(
            "no frame-graph, wake-latency, idle-cost or wake-primitives JSON in {}",
            ctx.out.display()
        )));
    }
    Ok(())
}

/// The serial loop does not depend on the worker count, so its samples are
/// spread over the worker-count groups (each group measures a share,
/// interleaved with that group's pools) and pooled into one row: the
/// serial row sees the same drift as the others without being measured
/// once per worker count.
pub fn serial_share(total_blocks: usize, groups: usize) -> usize {
    total_blocks.div_ceil(groups.max(1)).max(1)
}
