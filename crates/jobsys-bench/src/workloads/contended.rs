//! W7 contended: the frame graph (D = 5 µs) while a background CPU hog (one
//! busy thread per core, normal priority) competes for the cores, and with
//! more workers than cores. Figure: p99 frame time against the uncontended
//! run of the same implementation and worker count.
//!
//! The hog runs only during the blocks of the `hog` contestants (started
//! before the block's warm-up frame, stopped after its last frame), so
//! contended and uncontended blocks interleave.

use super::frame_graph::{self, contestant, graph_params, Exec, Frame};
use super::{emit, serial_share};
use crate::error::Result;
use crate::json::{Label, Row};
use crate::pools::{rayon_label, semantics_note, BlockSystem, Pools};
use crate::runner::{interleave, split, Contestant, Plan};
use crate::stats;
use crate::Ctx;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Workload name (subcommand, JSON file).
pub const NAME: &str = "contended";

const D_NS: u64 = 5_000;

/// Busy threads, one per core, until dropped.
pub struct Hog {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Hog {
    /// Start `n` busy threads.
    pub fn start(n: usize) -> Hog {
        let stop = Arc::new(AtomicBool::new(false));
        let threads = (0..n)
            .filter_map(|i| {
                let stop = stop.clone();
                std::thread::Builder::new()
                    .name(format!("hog-{i}"))
                    .spawn(move || {
                        while !stop.load(Ordering::Relaxed) {
                            std::hint::spin_loop();
                        }
                    })
                    .ok()
            })
            .collect();
        Hog { stop, threads }
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Make `c` run under a hog of `cores` threads.
fn with_hog(c: Contestant<'_>, cores: usize) -> Contestant<'_> {
    let mut hog: Option<Hog> = None;
    c.around_block(move |entering| {
        if entering {
            hog = Some(Hog::start(cores));
        } else {
            drop(hog.take());
        }
        Ok(())
    })
}

/// Run W7 and report it.
pub fn run(ctx: &Ctx) -> Result<()> {
    let cores = ctx.cores();
    let workers = if ctx.workers_given {
        ctx.workers.clone()
    } else {
        let mut v = vec![cores.saturating_sub(1), 2 * cores];
        v.dedup();
        v
    };
    let g = frame_graph::graph(ctx);
    let frame = Frame::leak(g, D_NS);
    let frames = ctx.samples_or(100, 6);
    let (blocks, per_block) = split(frames, ctx.size(10, 3));
    let warmup = 1; // + one uncounted frame per block
    let groups = workers.len();
    let bar = ctx.progress.bar(NAME, groups as u64);
    let conditions = ["uncontended", "hog"];
    let case = |cond: &str| format!("D=5us {cond}");
    let mut rows = Vec::new();
    let mut serial: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for &w in &workers {
        bar.message(format!("workers={w}"));
        let pools = Pools::new(&ctx.policies, w)?;
        let shape = (warmup, blocks, per_block);
        let mut cs = Vec::new();
        for hog in [false, true] {
            for sys in &pools.jobsys {
                // Its own system per condition, so its counters stay apart.
                let sys = BlockSystem::new(w, sys.policy.clone());
                let c = contestant(sys.label(), Exec::Jobsys(sys), frame, shape);
                cs.push(if hog { with_hog(c, cores) } else { c });
            }
            let c = contestant(rayon_label(w), Exec::Rayon(&pools.rayon), frame, shape);
            cs.push(if hog { with_hog(c, cores) } else { c });
            let c = contestant(
                Label::serial(),
                Exec::Serial,
                frame,
                (warmup, serial_share(blocks, groups), per_block),
            );
            cs.push(if hog { with_hog(c, cores) } else { c });
        }
        interleave(&mut cs, Plan::throughput())?;
        let per_cond = cs.len() / 2;
        for (k, c) in cs.into_iter().enumerate() {
            let cond = k / per_cond;
            if c.label.imp == "serial" {
                serial[cond].extend(c.samples);
                continue;
            }
            rows.push(Row::measured(
                NAME,
                &case(conditions[cond]),
                &c.label,
                graph_params(g, D_NS),
                "ms",
                &stats::summarize(&c.samples),
                None,
                &ctx.machine,
            ));
        }
        bar.inc();
    }
    bar.finish();
    for (cond, s) in serial.iter().enumerate() {
        rows.push(Row::measured(
            NAME,
            &case(conditions[cond]),
            &Label::serial(),
            graph_params(g, D_NS),
            "ms",
            &stats::summarize(s),
            None,
            &ctx.machine,
        ));
    }
    frame_graph::sort_rows(&mut rows);
    rows.sort_by_key(|r| r.case.ends_with("hog")); // stable: uncontended first
    let calm_of = |r: &Row, all: &[Row]| -> Option<Row> {
        let calm = case("uncontended");
        all.iter()
            .find(|o| {
                o.case == calm && o.imp == r.imp && o.policy == r.policy && o.workers == r.workers
            })
            .cloned()
    };
    let p99_ratio = |r: &Row, all: &[Row]| match calm_of(r, all) {
        Some(c) if r.case != c.case => format!("{:.2}x", r.p99 / c.p99),
        _ => "-".into(),
    };
    let med_ratio = |r: &Row, all: &[Row]| match calm_of(r, all) {
        Some(c) if r.case != c.case => format!("{:.2}x", r.median / c.median),
        _ => "-".into(),
    };
    let notes = vec![
        frame_graph::graph_note(g),
        format!(
            "frame time in ms, D = 5 us; {frames} frames per row after {warmup} warm-up, interleaved; hog = {cores} busy threads (normal priority) during the block"
        ),
        semantics_note(),
        "p99/calm, median/calm = hog row against the uncontended row of the same implementation and workers".into(),
    ];
    emit(
        ctx,
        NAME,
        "W7 contended",
        &notes,
        &rows,
        false,
        &[("p99/calm", &p99_ratio), ("median/calm", &med_ratio)],
    )
}
