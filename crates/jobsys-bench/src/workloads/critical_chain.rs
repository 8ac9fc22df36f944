//! `critical-chain`: a `jobsys::Graph` whose critical path is a chain of
//! `Low` nodes beside independent `High` nodes, replayed frame after
//! frame: what the graph's critical-path feedback (each run ordered by the
//! previous runs' measured durations) does to the frame time.
//!
//! The chain has `LEN` nodes of D µs, one after the other: `Low` (which
//! the feedback raises to `High` once it measures them on the critical
//! path), `Low` kept (`keep_priority`: never raised) or with no priority
//! of their own; beside it,
//! `LEN` x workers independent `High` nodes of D µs, so that the other
//! threads have exactly the chain's length of work each: the frame's floor
//! is the chain's length (`workers + 1` threads, no more threads than
//! cores for the figure to mean that). The first run has no measurement to
//! go by (the build's order); every later run has. Reported: the first
//! run's frame, and the median and p99 of the runs after the feedback
//! has its first measurement, as multiples of the chain's length.

use crate::error::{check, Result};
use crate::spin;
use crate::stats;
use crate::table;
use crate::Ctx;
use jobsys::{Graph, JobSystem, Priority};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The subcommand's name.
pub const NAME: &str = "critical-chain";

/// Nodes in the chain.
const LEN: usize = 20;
/// Each node's work, ns.
const D_NS: u64 = 50_000;

/// The graph for `workers` workers, its chain's nodes at `chain` (`None`:
/// no priority of their own), kept there if `keep`; `ran` counts the
/// nodes run.
fn graph(workers: usize, chain: Option<Priority>, keep: bool, ran: &Arc<AtomicUsize>) -> Graph {
    let mut b = Graph::builder();
    let mut prev = None;
    for _ in 0..LEN {
        let r = ran.clone();
        let mut n = b.node().name("chain");
        if let Some(p) = chain {
            n = n.priority(p);
        }
        if keep {
            n = n.keep_priority();
        }
        if let Some(p) = prev {
            n = n.after(&[p]);
        }
        prev = Some(n.call(move || {
            spin::spin_ns(D_NS);
            r.fetch_add(1, Ordering::Relaxed);
        }));
    }
    for _ in 0..LEN * workers {
        let r = ran.clone();
        b.node()
            .name("beside")
            .priority(Priority::High)
            .call(move || {
                spin::spin_ns(D_NS);
                r.fetch_add(1, Ordering::Relaxed);
            });
    }
    b.build().expect("no cycle")
}

/// Run `critical-chain` and print its table.
pub fn run(ctx: &Ctx) -> Result<()> {
    let frames = ctx.samples_or(200, 20);
    let workers: Vec<usize> = if ctx.workers_given {
        ctx.workers.clone()
    } else {
        vec![1]
    };
    let chain_us = (LEN as u64 * D_NS) as f64 / 1e3;
    let load_start = crate::load_average();
    let mut body = Vec::new();
    for &w in &workers {
        for (label, chain, keep) in [
            ("Low", Some(Priority::Low), false),
            ("Low kept", Some(Priority::Low), true),
            ("unset", None, false),
        ] {
            ctx.progress.print(&format!(
                "{NAME}: chain {label}, {w} worker(s), {frames} frames"
            ));
            let js = JobSystem::builder().workers(w).build()?;
            let ran = Arc::new(AtomicUsize::new(0));
            let g = graph(w, chain, keep, &ran);
            let nodes = LEN * (w + 1);
            let mut times = Vec::with_capacity(frames);
            for f in 0..frames {
                let before = ran.load(Ordering::Relaxed);
                let t = Instant::now();
                js.try_complete(g.run(&js))?;
                times.push(t.elapsed().as_secs_f64() * 1e6);
                let n = ran.load(Ordering::Relaxed) - before;
                check(n == nodes, || {
                    format!("{NAME}: frame {f} ran {n} nodes, expected {nodes}")
                })?;
            }
            let first = times[0];
            // Run 0 has no measurement; run 1 is planned from run 0.
            let after = stats::summarize(&times[1..]);
            body.push(vec![
                label.to_string(),
                w.to_string(),
                (w + 1).to_string(),
                format!("{first:.0}"),
                format!("{:.2}x", first / chain_us),
                format!("{:.0}", after.median),
                format!("{:.2}x", after.median / chain_us),
                format!("{:.2}x", after.p99 / chain_us),
            ]);
        }
    }
    let load_end = crate::load_average();
    let header: Vec<String> = [
        "chain",
        "workers",
        "threads",
        "first us",
        "first",
        "after us",
        "after",
        "after p99",
    ]
    .map(String::from)
    .to_vec();
    let mut text = format!(
        "\n{NAME}: a chain of {LEN} nodes of {} us (Low; Low kept: never raised; unset: no priority of their own) beside\n\
         {LEN} x workers independent High nodes of {} us, as one jobsys::Graph replayed {frames} times; chain = {chain_us:.0} us (the frame's floor with\n\
         no more threads than cores). first = the first run (no measurement yet), after = the runs after it\n\
         (ordered by the measured durations), as multiples of the chain.\n\
         load average at start: {load_start}; at end: {load_end}\n",
        D_NS / 1000,
        D_NS / 1000,
    );
    text.push_str(&table::grid(&header, &body, 3));
    ctx.progress.print(&text);
    Ok(())
}
