//! W1's jobsys kernels: the cases, their sizes, and one iteration of each
//! on a `JobSystem` (untimed).
//!
//! This file is compiled twice: into jobsys-bench (`workloads::w1_kernels`,
//! used by `spawn-empty`, and by `jobsys-lab trace-cost` through this
//! library) and, through `#[path]`, into the `jobsys-w1` child program
//! (crates/jobsys-w1), which `trace-cost` builds
//! with and without jobsys's `trace` feature. So it may use only `jobsys`,
//! `std` and `crate::count` (both crates include the same `count.rs`): the
//! code measured with and without the tracer is the code W1 measures.

use crate::count;
use jobsys::{Batch, Graph, JobError, JobHandle, JobSystem};
use std::sync::OnceLock;

/// The empty job: counts itself, nothing else.
#[inline(never)]
pub fn empty_job() {
    count::bump();
}

/// The four W1 variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// Schedule one job, complete it; repeated.
    Single,
    /// Schedule all jobs, then complete them newest first.
    Flat,
    /// A binary fork/join tree with `join`.
    Nested,
    /// One `parallel_for` with batch 1.
    PforEmpty,
    /// `flat`'s jobs as the nodes of a `Graph` built once (no edges), one
    /// run per iteration: a node's cost per run against a job's. Not in
    /// `ALL` (not a W1 table row): `jobsys-w1 --case graph-flat` and
    /// `W1_CASES=graph-flat scripts/w1-instructions.sh` count it.
    GraphFlat,
}

impl Case {
    /// Every case, in table order.
    pub const ALL: [Case; 4] = [Case::Single, Case::Flat, Case::Nested, Case::PforEmpty];

    /// The case's name in tables, JSON and on the child's command line.
    pub fn name(self) -> &'static str {
        match self {
            Case::Single => "single",
            Case::Flat => "flat",
            Case::Nested => "nested",
            Case::PforEmpty => "pfor-empty",
            Case::GraphFlat => "graph-flat",
        }
    }

    /// The case called `name`.
    pub fn parse(name: &str) -> Option<Case> {
        Case::ALL
            .into_iter()
            .chain([Case::GraphFlat])
            .find(|c| c.name() == name)
    }
}

/// How many jobs each case runs per iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// `single`: schedule + complete this many times.
    pub single: usize,
    /// `flat`: jobs scheduled before completing them.
    pub flat: usize,
    /// `nested`: tree depth (2^depth - 1 jobs).
    pub depth: u32,
    /// `pfor-empty`: indices.
    pub pfor: usize,
}

impl Sizes {
    /// The full sizes (docs/workloads.md, W1).
    pub const FULL: Sizes = Sizes {
        single: 65_000,
        flat: 65_536,
        depth: 16,
        pfor: 65_000,
    };

    /// `--quick`.
    pub const QUICK: Sizes = Sizes {
        single: 2_000,
        flat: 2_048,
        depth: 11,
        pfor: 2_000,
    };

    /// Jobs one iteration of `c` runs.
    pub fn jobs(&self, c: Case) -> usize {
        match c {
            Case::Single => self.single,
            Case::Flat | Case::GraphFlat => self.flat,
            Case::Nested => (1usize << self.depth) - 1,
            Case::PforEmpty => self.pfor,
        }
    }
}

fn tree(js: &JobSystem, depth: u32) {
    empty_job();
    if depth > 1 {
        js.join(|| tree(js, depth - 1), || tree(js, depth - 1));
    }
}

/// One iteration of case `c` on `js` (untimed, unchecked: the caller
/// times it and checks `count::total`). `hs` is `flat`'s handle buffer,
/// kept between iterations so that no iteration allocates it.
///
/// Never inlined: one call per iteration costs nothing measurable, and the
/// symbol lets a profiler count exactly one iteration
/// (`valgrind --tool=callgrind --toggle-collect='*w1_kernels::iteration*'`).
#[inline(never)]
pub fn iteration(
    js: &JobSystem,
    c: Case,
    s: &Sizes,
    hs: &mut Vec<JobHandle>,
) -> Result<(), JobError> {
    match c {
        Case::Single => {
            for _ in 0..s.single {
                let h = js.schedule(empty_job);
                js.try_complete(h)?;
            }
        }
        Case::Flat => {
            hs.clear();
            for _ in 0..s.flat {
                hs.push(js.schedule(empty_job));
            }
            // Newest first: those are on top of our own deque.
            for h in hs.iter().rev() {
                js.try_complete(*h)?;
            }
        }
        Case::Nested => tree(js, s.depth),
        Case::PforEmpty => {
            let h = js.parallel_for(0..s.pfor, Batch::Fixed(1), |_| empty_job());
            js.try_complete(h)?;
        }
        Case::GraphFlat => graph_iteration(js, s.flat)?,
    }
    Ok(())
}

/// One run of `graph-flat`'s graph, out of line: inlined into `iteration`
/// it changed how the other cases compile (W1 single counted 2 more
/// instructions per job).
#[inline(never)]
fn graph_iteration(js: &JobSystem, n: usize) -> Result<(), JobError> {
    let run = flat_graph(n).run(js);
    js.try_complete(run)
}

/// `graph-flat`'s graph of `n` empty nodes, built on first use (the
/// warm-up iteration) and kept for the process.
fn flat_graph(n: usize) -> &'static Graph {
    static GRAPH: OnceLock<(usize, Graph)> = OnceLock::new();
    let (size, g) = GRAPH.get_or_init(|| {
        let mut b = Graph::builder();
        for _ in 0..n {
            b.node().call(empty_job);
        }
        (n, b.build().expect("no edges, no cycle"))
    });
    assert_eq!(*size, n, "graph-flat runs one size per process");
    g
}
