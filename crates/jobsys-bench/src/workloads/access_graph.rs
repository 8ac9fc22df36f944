//! W3-access: the W3 frame graph with its edges replaced by declared data
//! access (`docs/access.md`), against the explicit-edge version in the
//! same run.
//!
//! Node `i` owns resource `R_i` (a `Vec<u64>` of one element per piece):
//! it writes it (`write()` for a single job, `write_each()` for a parallel
//! one, each piece its element) and reads `R_d` for every dependency `d`.
//! The derived dependencies are then exactly the graph's edges (the last
//! writer of `R_d` is `d`; `R_i` has no earlier access in the frame, and
//! last frame's are finished). A checked frame verifies the order.
//!
//! Cases:
//! - `derive`: 0 workers, D = 0 (no spin): the frame is all scheduling and
//!   running of empty jobs on the calling thread, so the difference between
//!   the two rows is the cost of deriving the dependencies. The overhead
//!   per declared access is reported from the *minimum* frame time of each
//!   row over all frames (robust to load from other processes: a
//!   preempted frame is only slower) and from the medians.
//! - `D=0.5us`: the frame as W3 runs it, on `cores` workers.

use super::emit;
use super::frame_graph::{graph, graph_note, jobsys_frame, Frame};
use crate::error::{check, Result};
use crate::graph::{FrameGraph, Kind};
use crate::json::{Label, Row};
use crate::params;
use crate::runner::{interleave, split, Contestant, Plan};
use crate::stats;
use crate::Ctx;
use jobsys::access::{Access, ParAccess, Read};
use jobsys::{Batch, JobHandle, JobSystem, Resource};

/// Workload name (subcommand, JSON file).
pub const NAME: &str = "access-graph";

type Res = Resource<Vec<u64>>;

/// One resource per node, sized for its pieces (a `Vec` of one element per piece).
pub fn resources(g: &FrameGraph) -> Vec<Res> {
    (0..g.nodes.len())
        .map(|i| Resource::new(vec![0u64; g.pieces(i) as usize]))
        .collect()
}

/// Declared accesses of one frame (reads + one write per node).
pub fn accesses(g: &FrameGraph) -> usize {
    g.nodes.iter().map(|n| n.deps.len() + 1).sum()
}

fn r(rs: &[Res], deps: &[u32], k: usize) -> Read<Vec<u64>> {
    rs[deps[k] as usize].read()
}

/// Call `$go!(access)` with the reads of `$deps` as a (nested) tuple.
macro_rules! with_reads {
    ($rs:expr, $deps:expr, $go:ident) => {{
        let (rs, d) = ($rs, $deps);
        match d.len() {
            0 => $go!(()),
            1 => $go!((r(rs, d, 0),)),
            2 => $go!((r(rs, d, 0), r(rs, d, 1))),
            3 => $go!((r(rs, d, 0), r(rs, d, 1), r(rs, d, 2))),
            4 => $go!((r(rs, d, 0), r(rs, d, 1), r(rs, d, 2), r(rs, d, 3))),
            5 => $go!((
                r(rs, d, 0),
                r(rs, d, 1),
                r(rs, d, 2),
                r(rs, d, 3),
                r(rs, d, 4)
            )),
            6 => $go!((
                r(rs, d, 0),
                r(rs, d, 1),
                r(rs, d, 2),
                r(rs, d, 3),
                r(rs, d, 4),
                r(rs, d, 5)
            )),
            7 => $go!((
                r(rs, d, 0),
                r(rs, d, 1),
                r(rs, d, 2),
                r(rs, d, 3),
                r(rs, d, 4),
                r(rs, d, 5),
                r(rs, d, 6)
            )),
            8 => $go!((
                r(rs, d, 0),
                r(rs, d, 1),
                r(rs, d, 2),
                r(rs, d, 3),
                r(rs, d, 4),
                r(rs, d, 5),
                r(rs, d, 6),
                r(rs, d, 7)
            )),
            9 => $go!((
                (
                    r(rs, d, 0),
                    r(rs, d, 1),
                    r(rs, d, 2),
                    r(rs, d, 3),
                    r(rs, d, 4),
                    r(rs, d, 5),
                    r(rs, d, 6),
                    r(rs, d, 7)
                ),
                (r(rs, d, 8),)
            )),
            10 => $go!((
                (
                    r(rs, d, 0),
                    r(rs, d, 1),
                    r(rs, d, 2),
                    r(rs, d, 3),
                    r(rs, d, 4),
                    r(rs, d, 5),
                    r(rs, d, 6),
                    r(rs, d, 7)
                ),
                (r(rs, d, 8), r(rs, d, 9))
            )),
            n => unreachable!("W3 graphs have at most 10 dependencies, not {n}"),
        }
    }};
}

fn single<A: Access, const CHECK: bool>(
    js: &JobSystem,
    f: &'static Frame,
    i: u32,
    a: A,
) -> JobHandle {
    js.job().access(a).schedule(move |_| f.piece::<CHECK>(i))
}

fn parallel<A: ParAccess, const CHECK: bool>(
    js: &JobSystem,
    f: &'static Frame,
    i: u32,
    p: u32,
    a: A,
) -> JobHandle {
    js.job()
        .access(a)
        .parallel_for(0..p as usize, Batch::Fixed(1), move |_, _| {
            f.piece::<CHECK>(i)
        })
}

/// The W3 frame with declared access instead of edges (same order, same
/// sync points, same final wait as `frame_graph::jobsys_frame`).
pub fn access_frame<const CHECK: bool>(
    js: &JobSystem,
    f: &'static Frame,
    rs: &[Res],
    hs: &mut Vec<JobHandle>,
) -> Result<()> {
    hs.clear();
    for (i, node) in f.graph.nodes.iter().enumerate() {
        if let Some(s) = node.sync {
            js.try_complete(hs[s as usize])?;
        }
        let own = &rs[i];
        let i = i as u32;
        let h = match node.kind {
            Kind::Single => {
                macro_rules! go {
                    ($reads:expr) => {
                        single::<_, CHECK>(js, f, i, (own.write(), $reads))
                    };
                }
                with_reads!(rs, &node.deps[..], go)
            }
            Kind::Parallel(p) => {
                macro_rules! go {
                    ($reads:expr) => {
                        parallel::<_, CHECK>(js, f, i, p, (own.write_each(), $reads))
                    };
                }
                with_reads!(rs, &node.deps[..], go)
            }
        };
        hs.push(h);
    }
    for h in hs.iter().rev() {
        js.try_complete(*h)?;
    }
    Ok(())
}

fn label(imp: &str, workers: usize) -> Label {
    Label {
        imp: imp.into(),
        policy: None,
        workers: Some(workers),
        threads: Some(workers + 1),
    }
}

fn contestant(
    imp: &'static str,
    workers: usize,
    f: &'static Frame,
    rs: &'static [Res],
    shape: (usize, usize, usize),
) -> Result<Contestant<'static>> {
    let js = JobSystem::builder()
        .workers(workers)
        .build()
        .map_err(|e| crate::error::Error::Verify(format!("{NAME}: {e}")))?;
    let (mut hs, mut deps) = (Vec::new(), Vec::new());
    let mut checked = false;
    let who = format!("{NAME} {imp} workers={workers}");
    let explicit = imp == "jobsys-explicit";
    let (warmup, blocks, per_block) = shape;
    Ok(Contestant::new(
        label(imp, workers),
        warmup.max(1),
        blocks,
        per_block,
        move || {
            if !checked {
                f.reset_checks();
                if explicit {
                    jobsys_frame::<true>(&js, f, &mut hs, &mut deps)?;
                } else {
                    access_frame::<true>(&js, f, rs, &mut hs)?;
                }
                f.verify_checks(&who)?;
                checked = true;
            }
            let t = std::time::Instant::now();
            if explicit {
                jobsys_frame::<false>(&js, f, &mut hs, &mut deps)?;
            } else {
                access_frame::<false>(&js, f, rs, &mut hs)?;
            }
            Ok(t.elapsed().as_nanos() as f64 / 1e3)
        },
    ))
}

/// Run W3-access and report it.
pub fn run(ctx: &Ctx) -> Result<()> {
    let g = graph(ctx);
    let rs: &'static [Res] = Box::leak(resources(g).into_boxed_slice());
    let n_access = accesses(g);
    let frames = ctx.samples_or(400, 10);
    let (blocks, per_block) = split(frames, ctx.size(20, 5));
    let mut rows = Vec::new();
    let mut notes = vec![
        graph_note(g),
        format!(
            "{n_access} declared accesses per frame ({} reads + {} writes); the derived graph equals the explicit one (checked on one frame per row)",
            n_access - g.nodes.len(),
            g.nodes.len()
        ),
        format!("frame time in us; {frames} frames per row in blocks of {per_block}, interleaved A B A B"),
    ];
    let workers_full = ctx.cores();
    for (case, d_ns, w) in [("derive", 0u64, 0usize), ("D=0.5us", 500, workers_full)] {
        let f = Frame::leak(g, d_ns);
        let shape = (2, blocks, per_block);
        let mut cs = vec![
            contestant("jobsys-explicit", w, f, rs, shape)?,
            contestant("jobsys-access", w, f, rs, shape)?,
        ];
        interleave(&mut cs, Plan::throughput())?;
        let min = |c: &Contestant<'_>| c.samples.iter().cloned().fold(f64::INFINITY, f64::min);
        let (se, sa) = (
            stats::summarize(&cs[0].samples),
            stats::summarize(&cs[1].samples),
        );
        let per_min = (min(&cs[1]) - min(&cs[0])) * 1e3 / n_access as f64;
        let per_med = (sa.median - se.median) * 1e3 / n_access as f64;
        notes.push(format!(
            "{case} (workers={w}): deriving costs {per_min:.1} ns per declared access from the minimum frame times ({:.1} vs {:.1} us), {per_med:.1} ns from the medians",
            min(&cs[1]),
            min(&cs[0])
        ));
        for c in &cs {
            let params = params! {
                "D_us" => d_ns as f64 / 1000.0,
                "jobs" => g.nodes.len(),
                "accesses" => n_access,
                "min_us" => min(c),
                "overhead_ns_per_access_min" => per_min,
                "overhead_ns_per_access_median" => per_med,
            };
            rows.push(Row::measured(
                NAME,
                case,
                &c.label,
                params,
                "us",
                &stats::summarize(&c.samples),
                None,
                &ctx.machine,
            ));
        }
        check(per_min.is_finite(), || format!("{NAME}: no samples"))?;
    }
    emit(
        ctx,
        NAME,
        "W3-access: derived vs explicit dependencies",
        &notes,
        &rows,
        false,
        &[],
    )
}
