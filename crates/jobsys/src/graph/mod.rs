//! A frame graph: built once, replayed every frame (issue 33, first
//! version; usage and costs in `docs/graph.md`).
//!
//! ```
//! use jobsys::{Batch, Graph, JobSystem, Priority};
//! use std::sync::atomic::{AtomicU64, Ordering};
//! use std::sync::Arc;
//!
//! let js = JobSystem::builder().workers(2).build().unwrap();
//! let hits = Arc::new(AtomicU64::new(0));
//! let mut b = Graph::builder();
//! let input = b.node().name("input").call(|| {});
//! let physics = b.node().name("physics").after(&[input]).call(|| {});
//! let h = hits.clone();
//! let particles = b.node().name("particles").after(&[input])
//!     .parallel_for(0..1000, Batch::Auto, move |_i| { h.fetch_add(1, Ordering::Relaxed); });
//! b.node().name("render").priority(Priority::High).after(&[physics, particles]).call(|| {});
//! let graph = b.build().unwrap();
//!
//! for _frame in 0..3 {
//!     let run = graph.run(&js);         // an ordinary JobHandle for the whole run
//!     graph.sync(&js, physics).unwrap(); // a mid-frame sync point
//!     js.complete(run);
//! }
//! assert_eq!(hits.load(Ordering::Relaxed), 3000);
//! let report = graph.report(&js).unwrap(); // the last finished run's critical path
//! assert!(report.critical_path().contains(&input));
//! ```
//!
//! Layout: `build.rs` (the builder, edges from `after` and declared access,
//! cycle and conflict errors), `body.rs` (what a node runs), `clock.rs`
//! (the timing around it), `run.rs` (replay, runs in flight), `critical.rs`
//! (durations, longest path, slack, what-if). The graph sits on top of the
//! public job API: nothing else in the crate imports it.

mod body;
mod build;
mod clock;
mod critical;
mod run;

pub use build::{AccessNodeBuilder, GraphBuilder, GraphError, NodeBuilder};
pub use critical::GraphReport;

use clock::Span;

use crate::desc::Priority;
use crate::pinned::Pin;
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// Names one node of a [`Graph`] (returned by the node builder). It
/// belongs to that graph: passing it to another graph's (or builder's)
/// methods panics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub(crate) u32, pub(crate) u32);

impl NodeId {
    /// The node's position in the order it was added (0, 1, ...).
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node #{}", self.0)
    }
}

/// The serial of a graph builder (and of the graph it builds): what a
/// `NodeId` is checked against.
pub(crate) fn new_graph_serial() -> u32 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// `node`'s index, after checking that it belongs to graph `serial`.
#[track_caller]
pub(crate) fn index_in(serial: u32, node: NodeId) -> usize {
    assert!(
        node.1 == serial,
        "jobsys: {node} belongs to another graph (a NodeId is only valid with the graph \
         or builder that returned it)"
    );
    node.0 as usize
}

/// The graph's shape, fixed at build: who runs after whom.
pub(crate) struct Topo {
    /// The builder's serial: the graph's `NodeId`s carry it.
    pub(crate) serial: u32,
    pub(crate) names: Vec<Option<&'static str>>,
    /// Every node's dependencies in the run (explicit and derived, no
    /// duplicates).
    pub(crate) preds: Vec<Vec<u32>>,
    /// The explicit ones (`after`, `edge`): what a run passes as `after`
    /// (declared access adds the derived ones at run time).
    pub(crate) explicit: Vec<Vec<u32>>,
    pub(crate) succs: Vec<Vec<u32>>,
    /// A topological order (Kahn's, ties in insertion order).
    pub(crate) order: Vec<u32>,
}

impl Topo {
    /// `node`'s index; panics if it belongs to another graph.
    #[track_caller]
    pub(crate) fn index(&self, node: NodeId) -> usize {
        index_in(self.serial, node)
    }

    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }
    pub(crate) fn label(&self, n: u32) -> String {
        match self.names[n as usize] {
            Some(s) => s.to_string(),
            None => format!("#{n}"),
        }
    }
}

/// A node's options that stay on the graph (its body is in `Shared`).
pub(crate) struct NodeOpts {
    pub(crate) priority: Option<Priority>,
    /// `NodeBuilder::keep_priority`: the critical path does not raise it.
    pub(crate) keep_priority: bool,
    pub(crate) pin: Option<Pin>,
    pub(crate) limit: Option<crate::limiter::Limiter>,
    pub(crate) class: Option<crate::topology::CoreClass>,
}

impl NodeOpts {
    /// The priority a run gives the node: `High` on the critical path
    /// (unless it keeps its own), else its own (`Normal` without one).
    pub(crate) fn planned(&self, critical: bool) -> Priority {
        if critical && !self.keep_priority {
            Priority::High
        } else {
            self.priority.unwrap_or(Priority::Normal)
        }
    }
}

/// What the nodes' jobs share with the graph (behind an `Arc`, so runs in
/// flight keep it alive).
pub(crate) struct Shared {
    pub(crate) topo: Arc<Topo>,
    bodies: Vec<Box<dyn body::Body>>,
    /// Per ring entry (run in flight), per node.
    ring: Vec<Vec<Span>>,
}

/// A frame graph: nodes with the options of a job, built once
/// ([`Graph::builder`]) and replayed with [`run`](Graph::run), which returns
/// an ordinary [`JobHandle`](crate::JobHandle) for the whole run.
///
/// Node `n` of run `k + 1` runs after node `n` of run `k`; at most
/// [`max_in_flight`](GraphBuilder::max_in_flight) runs are in flight. Each
/// run measures its nodes; the next runs submit ready nodes by longest
/// remaining path and give the critical path's nodes `Priority::High`
/// (whatever their own priority, unless a node
/// [keeps it](NodeBuilder::keep_priority)). [`report`](Graph::report) tells the last
/// finished run's critical path, slack and what-ifs.
///
/// Do not call the graph's own methods from inside its nodes.
pub struct Graph {
    shared: Arc<Shared>,
    opts: Vec<NodeOpts>,
    max_in_flight: usize,
    state: Mutex<run::State>,
}

impl Graph {
    /// A builder for a graph.
    pub fn builder() -> GraphBuilder {
        GraphBuilder::new()
    }

    /// How many nodes the graph has.
    pub fn len(&self) -> usize {
        self.shared.topo.len()
    }

    /// Has the graph no node?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The name given to `node`, if any.
    #[track_caller]
    pub fn name(&self, node: NodeId) -> Option<&'static str> {
        self.shared.topo.names[self.shared.topo.index(node)]
    }

    /// The node's dependencies inside a run: those of `after`, `edge` and
    /// those derived from declared access.
    #[track_caller]
    pub fn dependencies(&self, node: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        let topo = &self.shared.topo;
        topo.preds[topo.index(node)]
            .iter()
            .map(move |&p| NodeId(p, topo.serial))
    }

    /// The most runs in flight at once (`GraphBuilder::max_in_flight`).
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight
    }
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph")
            .field("nodes", &self.len())
            .field("max_in_flight", &self.max_in_flight)
            .finish_non_exhaustive()
    }
}
