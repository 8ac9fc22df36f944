//! One random frame of the soak, as plain data: what to schedule, through
//! which API, in which order, and where to inject faults.
//!
//! A [`FramePlan`] is a pure function of `(seed, frame number, sizes)`: the
//! W3 generator ([`jobsys_bench::graph`]) with random parameters gives the job
//! graph, and this module decorates each job with an API, a priority, a
//! duration (0–50 µs of busy-wait), maybe an injected panic, and adds the
//! frame's extra phases (a scope, a main-thread `join`, a burst of tiny jobs,
//! an idle gap, a hot zone). Nothing here touches a scheduler, so the serial
//! replay ([`super::check`]) and the real run ([`super::frame`]) read the
//! same plan.
//!
//! Invariants: every dependency (of a job or of a child) names an earlier
//! one, so plan order is a valid serial order; a child's dependencies are
//! siblings (same parent); an injected parallel_for panic names an index
//! inside its range; the extra phases name node positions `< nodes.len()`.

use jobsys::{Batch, Priority};
use jobsys_bench::graph::{FrameGraph, GraphParams, Kind, SplitMix64};
use std::ops::Range;

/// How big frames get. `full` for the command, `quick` (`--quick`) for
/// tests and short runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// Largest W3 job count of a frame (the smallest is 5).
    pub max_jobs: u64,
    /// Largest piece count of a W3 parallel job.
    pub max_pieces: u64,
    /// Indices per parallel piece, at most.
    pub max_index_mult: u64,
    /// Children of a job that schedules jobs, at most.
    pub max_children: u64,
    /// Jobs of a scope, at most.
    pub max_scope_jobs: u64,
    /// Jobs of a burst.
    pub burst: usize,
    /// Idle gap length, ms (inclusive range).
    pub gap_ms: (u64, u64),
    /// Scheduling operations per thread of a drop race, at most.
    pub drop_race_ops: u64,
}

impl Sizes {
    /// The command's sizes: W3-like frames of up to 300 jobs, bursts of 100k.
    pub const fn full() -> Sizes {
        Sizes {
            max_jobs: 300,
            max_pieces: 64,
            max_index_mult: 4,
            max_children: 8,
            max_scope_jobs: 16,
            burst: 100_000,
            gap_ms: (5, 50),
            drop_race_ops: 2_000,
        }
    }

    /// Small frames (tests, `--quick`): up to 60 jobs, bursts of 10k.
    pub const fn quick() -> Sizes {
        Sizes {
            max_jobs: 60,
            max_pieces: 16,
            max_index_mult: 3,
            max_children: 4,
            max_scope_jobs: 6,
            burst: 10_000,
            gap_ms: (5, 15),
            drop_race_ops: 300,
        }
    }
}

/// The API a single (non-parallel) job is scheduled through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SingleApi {
    /// `schedule_after` (no priority).
    Schedule,
    /// `job().desc(..).after(..)` with the node's priority.
    ScheduleWith,
    /// `job().batched().after(..)`, published by a later `flush`.
    Batched,
    /// A job holding a `JobSystem` clone that schedules its children (with
    /// sibling dependencies and priorities) and completes them.
    Spawner,
    /// A job that calls `join` (nested once); an injected panic fires in the
    /// scheduled side of the join.
    Join,
}

/// What one node runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// One job.
    Single(SingleApi),
    /// `job().desc(..).parallel_for` over `0..len` (one call per index).
    PerIndex {
        /// Indices.
        len: usize,
        /// Piece size.
        batch: Batch,
    },
    /// `job().after(..).parallel_for_chunked` over `0..len` (one call per piece).
    Chunked {
        /// Indices.
        len: usize,
        /// Piece size.
        batch: Batch,
    },
}

impl Work {
    /// Run counters of the node: 1 for a single job, `len` for a loop.
    pub fn slots(&self) -> usize {
        match *self {
            Work::Single(_) => 1,
            Work::PerIndex { len, .. } | Work::Chunked { len, .. } => len,
        }
    }
}

/// An injected fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inject {
    /// None.
    None,
    /// The (single) job panics after it started.
    Panic,
    /// Index `k` of the parallel_for panics.
    PanicAt(usize),
}

/// One job of the graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanNode {
    /// Earlier nodes this one runs after (distinct, ascending).
    pub deps: Vec<u32>,
    /// Before scheduling this node, the main thread waits for this earlier
    /// node (`try_complete`, outcome checked like the final one).
    pub sync: Option<u32>,
    /// API and shape.
    pub work: Work,
    /// Priority (ignored by APIs without one).
    pub priority: Priority,
    /// Busy-wait per run (per index for a loop), ns.
    pub dur_ns: u64,
    /// Injected fault.
    pub inject: Inject,
    /// Input of the computed value.
    pub seed: u64,
    /// Its children in [`FramePlan::children`] (empty unless a spawner).
    pub children: Range<u32>,
}

/// A job scheduled by a spawner job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildPlan {
    /// The spawner node.
    pub parent: u32,
    /// Earlier siblings (global child ids) this child runs after.
    pub deps: Vec<u32>,
    /// Priority.
    pub priority: Priority,
    /// Busy-wait, ns.
    pub dur_ns: u64,
    /// Input of the computed value.
    pub seed: u64,
}

/// A `scope` with borrowing jobs, opened on the main thread mid-frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopePlan {
    /// Opened before scheduling this node.
    pub at: usize,
    /// Independent borrowing jobs (job 0 also schedules a nested one).
    pub jobs: usize,
    /// Length of the borrowed slice the scope's loops walk.
    pub len: usize,
    /// Piece size of the scope's loops.
    pub batch: Batch,
    /// A job in `1..jobs` that panics (the scope must re-raise it).
    pub panic_job: Option<usize>,
    /// Busy-wait per job, ns.
    pub dur_ns: u64,
    /// Data seed.
    pub seed: u64,
}

/// A burst of tiny jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BurstPlan {
    /// Scheduled before this node (runs alongside the rest of the frame).
    pub at: usize,
    /// Jobs.
    pub jobs: usize,
    /// Through `job().batched()` + one `flush` instead of `schedule`.
    pub batched: bool,
}

/// A hot zone over part of the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HotZonePlan {
    /// Opened before scheduling this node.
    pub from: usize,
    /// Closed before scheduling this node (or at the end of scheduling).
    pub to: usize,
    /// Closed by a job (the guard moves into it) rather than the main thread.
    pub drop_in_job: bool,
}

/// One frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FramePlan {
    /// Frame number in the soak.
    pub frame: u64,
    /// The frame's own seed (from the soak's generator).
    pub seed: u64,
    /// The W3 parameters its graph came from.
    pub graph: GraphParams,
    /// Jobs in schedule order.
    pub nodes: Vec<PlanNode>,
    /// Children of spawner nodes, grouped by parent in node order.
    pub children: Vec<ChildPlan>,
    /// An idle gap: before scheduling node `.0`, wait for everything so far,
    /// then sleep `.1` ms so the workers fall asleep.
    pub gap: Option<(usize, u64)>,
    /// A hot zone.
    pub hot_zone: Option<HotZonePlan>,
    /// A scope.
    pub scope: Option<ScopePlan>,
    /// A nested `join` on the main thread before this node.
    pub join_at: Option<usize>,
    /// A burst.
    pub burst: Option<BurstPlan>,
    /// Chance (percent) of a `flush` right after a batched node.
    pub flush_percent: u64,
    /// The order in which the main thread waits on the nodes at the end.
    pub wait_order: Vec<u32>,
}

/// Uniform in `lo..=hi`.
pub fn between(rng: &mut SplitMix64, lo: u64, hi: u64) -> u64 {
    lo + rng.below(hi - lo + 1)
}

/// A random priority.
pub fn priority(rng: &mut SplitMix64) -> Priority {
    match rng.below(3) {
        0 => Priority::High,
        1 => Priority::Normal,
        _ => Priority::Low,
    }
}

fn batch(rng: &mut SplitMix64) -> Batch {
    if rng.percent(50) {
        Batch::Auto
    } else {
        Batch::Fixed(between(rng, 1, 8) as usize)
    }
}

impl FramePlan {
    /// The plan of frame `frame` from `seed`. `force_burst`: the frame gets
    /// a burst regardless of chance (the soak's first frame, so the warm-up
    /// has seen one).
    pub fn generate(seed: u64, frame: u64, sizes: &Sizes, force_burst: bool) -> FramePlan {
        let mut rng = SplitMix64::new(seed);
        let graph = GraphParams {
            jobs: between(&mut rng, 5, sizes.max_jobs) as usize,
            parallel_percent: rng.below(61),
            max_pieces: between(&mut rng, 1, sizes.max_pieces) as u32,
            max_deps: rng.below(11) as usize,
            sync_every: between(&mut rng, 5, 100) as usize,
            seed: rng.next_u64(),
        };
        let g = FrameGraph::generate(&graph);
        let max_dur = [0u64, 1_000, 5_000, 20_000, 50_000][rng.below(5) as usize];
        let faulty = rng.percent(50);
        let mut nodes = Vec::with_capacity(g.nodes.len());
        let mut children = Vec::new();
        for (i, n) in g.nodes.iter().enumerate() {
            let work = match n.kind {
                Kind::Single => Work::Single(match rng.below(100) {
                    0..=24 => SingleApi::Schedule,
                    25..=54 => SingleApi::ScheduleWith,
                    55..=69 => SingleApi::Batched,
                    70..=84 => SingleApi::Spawner,
                    _ => SingleApi::Join,
                }),
                Kind::Parallel(p) => {
                    let len = p as usize * between(&mut rng, 1, sizes.max_index_mult) as usize;
                    if rng.percent(60) {
                        Work::PerIndex {
                            len,
                            batch: batch(&mut rng),
                        }
                    } else {
                        Work::Chunked {
                            len,
                            batch: batch(&mut rng),
                        }
                    }
                }
            };
            let dur = rng.below(max_dur + 1);
            // A loop's pieces together take about one piece count of `dur`.
            let dur_ns = match work {
                Work::Single(_) => dur,
                Work::PerIndex { len, .. } | Work::Chunked { len, .. } => {
                    dur * u64::from(g.pieces(i)) / len as u64
                }
            };
            let inject = if faulty && rng.percent(3) {
                match work {
                    Work::Single(_) => Inject::Panic,
                    Work::PerIndex { len, .. } | Work::Chunked { len, .. } => {
                        Inject::PanicAt(rng.below(len as u64) as usize)
                    }
                }
            } else {
                Inject::None
            };
            let first_child = children.len() as u32;
            if work == Work::Single(SingleApi::Spawner) {
                let count = between(&mut rng, 1, sizes.max_children) as u32;
                for c in 0..count {
                    let mut deps = Vec::new();
                    for s in 0..c {
                        if rng.percent(30) {
                            deps.push(first_child + s);
                        }
                    }
                    children.push(ChildPlan {
                        parent: i as u32,
                        deps,
                        priority: priority(&mut rng),
                        dur_ns: rng.below(max_dur / 2 + 1),
                        seed: rng.next_u64(),
                    });
                }
            }
            nodes.push(PlanNode {
                deps: n.deps.clone(),
                sync: n.sync,
                work,
                priority: priority(&mut rng),
                dur_ns,
                inject,
                seed: rng.next_u64(),
                children: first_child..children.len() as u32,
            });
        }
        // A faulty frame has at least one fault.
        if faulty && nodes.iter().all(|n| n.inject == Inject::None) {
            let i = rng.below(nodes.len() as u64) as usize;
            nodes[i].inject = match nodes[i].work {
                Work::Single(_) => Inject::Panic,
                w => Inject::PanicAt(rng.below(w.slots() as u64) as usize),
            };
        }
        let n = nodes.len() as u64;
        let at = |rng: &mut SplitMix64| rng.below(n) as usize;
        let gap = rng.percent(10).then(|| {
            (
                at(&mut rng),
                between(&mut rng, sizes.gap_ms.0, sizes.gap_ms.1),
            )
        });
        let hot_zone = rng.percent(20).then(|| {
            let a = at(&mut rng);
            let b = at(&mut rng);
            HotZonePlan {
                from: a.min(b),
                to: a.max(b),
                drop_in_job: rng.percent(50),
            }
        });
        let scope = rng.percent(30).then(|| {
            let jobs = between(&mut rng, 2, sizes.max_scope_jobs) as usize;
            ScopePlan {
                at: at(&mut rng),
                jobs,
                len: between(&mut rng, 1, 256) as usize,
                batch: batch(&mut rng),
                panic_job: (faulty && rng.percent(30))
                    .then(|| between(&mut rng, 1, jobs as u64 - 1) as usize),
                dur_ns: rng.below(max_dur + 1),
                seed: rng.next_u64(),
            }
        });
        let join_at = rng.percent(30).then(|| at(&mut rng));
        let burst = (force_burst || rng.percent(2)).then(|| BurstPlan {
            at: at(&mut rng),
            jobs: sizes.burst,
            batched: rng.percent(50),
        });
        let flush_percent = rng.below(101);
        // Fisher-Yates over the nodes: the final waits in random order.
        let mut wait_order: Vec<u32> = (0..n as u32).collect();
        for k in (1..wait_order.len()).rev() {
            let j = rng.below(k as u64 + 1) as usize;
            wait_order.swap(k, j);
        }
        FramePlan {
            frame,
            seed,
            graph,
            nodes,
            children,
            gap,
            hot_zone,
            scope,
            join_at,
            burst,
            flush_percent,
            wait_order,
        }
    }

    /// Injected faults planned in the graph (some may be masked: a node
    /// downstream of another failure does not run, so it cannot panic).
    pub fn planned_faults(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| n.inject != Inject::None)
            .count()
    }

    /// A one-line description for progress and hang reports.
    pub fn describe(&self) -> String {
        format!(
            "frame {} (frame seed {:#x}): {} jobs, {} children, {} faults{}{}{}{}{}",
            self.frame,
            self.seed,
            self.nodes.len(),
            self.children.len(),
            self.planned_faults(),
            if self.burst.is_some() { ", burst" } else { "" },
            if self.gap.is_some() { ", idle gap" } else { "" },
            if self.scope.is_some() { ", scope" } else { "" },
            if self.join_at.is_some() { ", join" } else { "" },
            if self.hot_zone.is_some() {
                ", hot zone"
            } else {
                ""
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_are_deterministic_and_well_formed() {
        let mut faults = 0;
        for s in 0..200u64 {
            let p = FramePlan::generate(s, s, &Sizes::quick(), s == 0);
            assert_eq!(p, FramePlan::generate(s, s, &Sizes::quick(), s == 0));
            if s == 0 {
                assert!(p.burst.is_some());
            }
            faults += p.planned_faults();
            for (i, n) in p.nodes.iter().enumerate() {
                assert!(n.deps.iter().all(|&d| (d as usize) < i));
                assert!(n.sync.is_none_or(|d| (d as usize) < i));
                assert!(n.dur_ns <= 50_000);
                if let Inject::PanicAt(k) = n.inject {
                    assert!(k < n.work.slots());
                }
                for c in n.children.clone() {
                    let c = &p.children[c as usize];
                    assert_eq!(c.parent as usize, i);
                    assert!(c.deps.iter().all(|&d| n.children.contains(&d)));
                }
            }
            let mut order = p.wait_order.clone();
            order.sort_unstable();
            assert!(order.iter().enumerate().all(|(k, &v)| k as u32 == v));
            if let Some(sc) = &p.scope {
                assert!(sc.panic_job.is_none_or(|j| j >= 1 && j < sc.jobs));
            }
        }
        assert!(faults > 0);
    }
}
