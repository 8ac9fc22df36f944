//! Building a graph: nodes with a job's options, edges from `after`,
//! `edge` and declared access (derived once, here), and the errors a
//! build reports (a cycle, a conflicting declaration).

use super::body::{AccessChunks, AccessLoop, Body, Chunked, Loop, Single, WithAccess};
use super::{run, Graph, NodeId, NodeOpts, Shared, Span, Topo};
use crate::access::{Access, ParAccess};
use crate::desc::Priority;
use crate::parallel_for::Batch;
use crate::pinned::Pin;
use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex};

/// A node while the graph is built.
struct Proto {
    name: Option<&'static str>,
    opts: NodeOpts,
    after: Vec<u32>,
    /// Declared access: (resource identity, writes).
    access: Vec<(usize, bool)>,
    /// A declaration the job API would refuse (a resource twice, one a
    /// write): reported by `build`.
    bad_access: Option<String>,
    body: Box<dyn Body>,
}

/// Gathers a graph's nodes and edges; [`build`](Self::build) checks them
/// and derives the edges of declared access.
pub struct GraphBuilder {
    /// What this builder's `NodeId`s carry (`graph::index_in`).
    serial: u32,
    nodes: Vec<Proto>,
    edges: Vec<(u32, u32)>,
    max_in_flight: usize,
}

impl Default for GraphBuilder {
    fn default() -> Self {
        GraphBuilder::new()
    }
}

impl fmt::Debug for GraphBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphBuilder")
            .field("nodes", &self.nodes.len())
            .field("max_in_flight", &self.max_in_flight)
            .finish_non_exhaustive()
    }
}

/// Why [`GraphBuilder::build`] refused a graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GraphError {
    /// The edges (explicit and derived from access) form a cycle; the
    /// nodes on cycles or after one.
    Cycle(Vec<NodeId>),
    /// A node declares a resource twice and one declaration writes.
    Access {
        /// The node.
        node: NodeId,
        /// What is wrong.
        message: String,
    },
}

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphError::Cycle(nodes) => {
                write!(f, "jobsys: the graph has a cycle among")?;
                for n in nodes {
                    write!(f, " {n}")?;
                }
                Ok(())
            }
            GraphError::Access { node, message } => write!(f, "jobsys: {node}: {message}"),
        }
    }
}

impl std::error::Error for GraphError {}

impl GraphBuilder {
    /// An empty graph, 2 runs in flight at most.
    pub fn new() -> GraphBuilder {
        GraphBuilder {
            serial: super::new_graph_serial(),
            nodes: Vec::new(),
            edges: Vec::new(),
            max_in_flight: 2,
        }
    }

    /// At most `n` runs in flight (default 2): [`Graph::run`] waits for
    /// (and helps with) the oldest run before starting one past it.
    ///
    /// # Panics
    /// If `n` is 0.
    pub fn max_in_flight(&mut self, n: usize) -> &mut Self {
        assert!(
            n >= 1,
            "jobsys: GraphBuilder::max_in_flight must be at least 1"
        );
        self.max_in_flight = n;
        self
    }

    /// Add a node: set its options, then end with `call`,
    /// `parallel_for` or `access(..).call`.
    pub fn node(&mut self) -> NodeBuilder<'_> {
        NodeBuilder {
            graph: self,
            name: None,
            opts: NodeOpts {
                priority: None,
                keep_priority: false,
                pin: None,
                limit: None,
                class: None,
            },
            after: Vec::new(),
        }
    }

    /// `to` runs after `from` in every run (as `after`, but between nodes
    /// added in any order).
    ///
    /// # Panics
    /// If `from` or `to` belongs to another graph.
    #[track_caller]
    pub fn edge(&mut self, from: NodeId, to: NodeId) -> &mut Self {
        let (from, to) = (
            super::index_in(self.serial, from),
            super::index_in(self.serial, to),
        );
        self.edges.push((from as u32, to as u32));
        self
    }

    /// Check the graph, derive the edges of declared access (in the order
    /// the nodes were added, as for jobs: a reader after the last writer
    /// before it, a writer after that writer and every reader since) and
    /// build it.
    ///
    /// # Errors
    /// [`GraphError`]: a cycle, a node's conflicting declarations. (A node
    /// of another builder is refused where it is passed: `after`, `edge`.)
    pub fn build(self) -> Result<Graph, GraphError> {
        super::clock::start();
        let n = self.nodes.len();
        let serial = self.serial;
        let mut preds: Vec<Vec<u32>> = vec![Vec::new(); n];
        let add = |preds: &mut Vec<Vec<u32>>, from: u32, to: u32| -> Result<(), GraphError> {
            // Checked where they were passed (`index_in`): ours.
            debug_assert!((from as usize) < n && (to as usize) < n);
            if from == to {
                return Err(GraphError::Cycle(vec![NodeId(from, serial)]));
            }
            if !preds[to as usize].contains(&from) {
                preds[to as usize].push(from);
            }
            Ok(())
        };
        for (i, p) in self.nodes.iter().enumerate() {
            if let Some(m) = &p.bad_access {
                return Err(GraphError::Access {
                    node: NodeId(i as u32, serial),
                    message: m.clone(),
                });
            }
            for &a in &p.after {
                add(&mut preds, a, i as u32)?;
            }
        }
        for &(a, b) in &self.edges {
            add(&mut preds, a, b)?;
        }
        // What a run passes as `after`: the explicit edges. Derived ones
        // only join access nodes, whose runs the resources' histories
        // order the same way (the run submits in a topological order of
        // all edges), so passing them too would only double them.
        let explicit = preds.clone();
        // Declared access, in insertion order: (last writer, readers since).
        let mut hist: HashMap<usize, (Option<u32>, Vec<u32>)> = HashMap::new();
        for (i, p) in self.nodes.iter().enumerate() {
            let i = i as u32;
            for &(key, writes) in &p.access {
                let (w, readers) = hist.entry(key).or_default();
                if let Some(w) = *w {
                    add(&mut preds, w, i)?;
                }
                if writes {
                    for &r in readers.iter() {
                        add(&mut preds, r, i)?;
                    }
                    *w = Some(i);
                    readers.clear();
                } else {
                    readers.push(i);
                }
            }
        }
        let mut succs: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (to, ps) in preds.iter().enumerate() {
            for &from in ps {
                succs[from as usize].push(to as u32);
            }
        }
        // Kahn's algorithm, ties in insertion order.
        let mut left: Vec<usize> = preds.iter().map(Vec::len).collect();
        let mut ready: std::collections::BTreeSet<u32> =
            (0..n as u32).filter(|&i| left[i as usize] == 0).collect();
        let mut order = Vec::with_capacity(n);
        while let Some(i) = ready.pop_first() {
            order.push(i);
            for &s in &succs[i as usize] {
                left[s as usize] -= 1;
                if left[s as usize] == 0 {
                    ready.insert(s);
                }
            }
        }
        if order.len() < n {
            let stuck = (0..n as u32)
                .filter(|&i| left[i as usize] > 0)
                .map(|i| NodeId(i, serial))
                .collect();
            return Err(GraphError::Cycle(stuck));
        }
        let mut names = Vec::with_capacity(n);
        let mut opts = Vec::with_capacity(n);
        let mut bodies = Vec::with_capacity(n);
        for p in self.nodes {
            names.push(p.name);
            opts.push(p.opts);
            bodies.push(p.body);
        }
        let topo = Arc::new(Topo {
            serial,
            names,
            explicit,
            preds,
            succs,
            order,
        });
        let m = self.max_in_flight;
        let ring = (0..m)
            .map(|_| (0..n).map(|_| Span::new()).collect())
            .collect();
        let state = run::State::new(&topo, m);
        Ok(Graph {
            shared: Arc::new(Shared { topo, bodies, ring }),
            opts,
            max_in_flight: m,
            state: Mutex::new(state),
        })
    }
}

/// One node's options (a job's: `name`, `priority`, `pin`, `after`,
/// `access`), ended by what it runs. Returns its [`NodeId`].
#[must_use = "a node is added by `call`, `parallel_for` or `access(..).call`"]
pub struct NodeBuilder<'g> {
    graph: &'g mut GraphBuilder,
    name: Option<&'static str>,
    opts: NodeOpts,
    after: Vec<u32>,
}

impl fmt::Debug for NodeBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeBuilder")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<'g> NodeBuilder<'g> {
    /// The node's name (its jobs' name, and the report's).
    pub fn name(mut self, name: &'static str) -> Self {
        self.name = Some(name);
        self
    }

    /// The node's own priority (default `Normal`). A node on the critical
    /// path measured on earlier runs runs `High` whatever its own, unless
    /// it [keeps it](Self::keep_priority): a `Low` node that turns out to
    /// hold the frame back is raised.
    pub fn priority(mut self, priority: Priority) -> Self {
        self.opts.priority = Some(priority);
        self
    }

    /// The critical path does not raise this node: it runs at its own
    /// priority (or `Normal`) in every run (background work that may make
    /// the frame longer rather than take a thread from the frame's own).
    pub fn keep_priority(mut self) -> Self {
        self.opts.keep_priority = true;
        self
    }

    /// Run on one thread only, as [`JobBuilder::pin`](crate::JobBuilder::pin)
    /// (checked when a run schedules it).
    pub fn pin(mut self, pin: Pin) -> Self {
        self.opts.pin = Some(pin);
        self
    }

    /// Run on a worker of this class of core, as
    /// [`JobBuilder::core_class`](crate::JobBuilder::core_class) (each run's
    /// job asks for it).
    pub fn core_class(mut self, class: crate::topology::CoreClass) -> Self {
        self.opts.class = Some(class);
        self
    }

    /// Run only with a seat of `limiter`, as
    /// [`JobBuilder::limit`](crate::JobBuilder::limit): it counts the
    /// node's job among the limiter's others, in every run. (A limited
    /// node's seat costs a small allocation per run.)
    pub fn limit(mut self, limiter: &crate::Limiter) -> Self {
        self.opts.limit = Some(limiter.clone());
        self
    }

    /// Run after these nodes in every run (adding to earlier `after`s).
    ///
    /// # Panics
    /// If a node belongs to another graph.
    #[track_caller]
    pub fn after(mut self, deps: &[NodeId]) -> Self {
        let serial = self.graph.serial;
        self.after
            .extend(deps.iter().map(|&d| super::index_in(serial, d) as u32));
        self
    }

    /// Declared access (`res.read()`, `res.write()`, `res.write_each()`,
    /// tuples): edges to the graph's other nodes that declare the same
    /// resources are derived at build; at run time the node is ordered
    /// against every other job that declares them, and its closure gets
    /// the references. Ends in `call`, or for a loop `parallel_for` /
    /// `parallel_for_chunked`, as the job builder's `access`.
    pub fn access<A>(self, access: A) -> AccessNodeBuilder<'g, A> {
        AccessNodeBuilder { node: self, access }
    }

    /// The node calls `f` once per run.
    pub fn call<F: Fn() + Send + Sync + 'static>(self, f: F) -> NodeId {
        self.finish(Vec::new(), None, Box::new(Single(f)))
    }

    /// A loop node: each run calls `f(i)` for every `i` in `range`, in
    /// pieces of `batch` on all threads (on the pinned thread with `pin`).
    ///
    /// # Panics
    /// On `Batch::Fixed(0)` (here, not at run time).
    pub fn parallel_for<F>(self, range: Range<usize>, batch: Batch, f: F) -> NodeId
    where
        F: Fn(usize) + Send + Sync + 'static,
    {
        let _ = batch.piece_len(range.len(), 1);
        self.finish(Vec::new(), None, Box::new(Loop { range, batch, f }))
    }

    /// `parallel_for` whose `f` gets each piece whole (`f(start..end)`), as
    /// [`JobBuilder::parallel_for_chunked`](crate::JobBuilder::parallel_for_chunked).
    ///
    /// # Panics
    /// On `Batch::Fixed(0)` (here, not at run time).
    pub fn parallel_for_chunked<F>(self, range: Range<usize>, batch: Batch, f: F) -> NodeId
    where
        F: Fn(Range<usize>) + Send + Sync + 'static,
    {
        let _ = batch.piece_len(range.len(), 1);
        self.finish(Vec::new(), None, Box::new(Chunked { range, batch, f }))
    }

    /// Add the node.
    fn finish(
        self,
        access: Vec<(usize, bool)>,
        bad: Option<String>,
        body: Box<dyn Body>,
    ) -> NodeId {
        let NodeBuilder {
            graph,
            name,
            opts,
            after,
        } = self;
        let id = NodeId(graph.nodes.len() as u32, graph.serial);
        graph.nodes.push(Proto {
            name,
            opts,
            after,
            access,
            bad_access: bad,
            body,
        });
        id
    }
}

/// A [`NodeBuilder`] with declared access; ends in [`call`](Self::call),
/// [`parallel_for`](Self::parallel_for) or
/// [`parallel_for_chunked`](Self::parallel_for_chunked).
#[must_use = "a node is added by `call` or a loop"]
pub struct AccessNodeBuilder<'g, A> {
    node: NodeBuilder<'g>,
    access: A,
}

/// The declarations `visit` reports, merged per resource (one entry per
/// resource, writing if any declaration does), and the error of a
/// resource declared twice with a write.
fn decls_of(
    visit: impl FnOnce(&mut dyn FnMut(&crate::access::Shared, crate::access::Mode)),
) -> (Vec<(usize, bool)>, Option<String>) {
    let mut decls: Vec<(usize, bool)> = Vec::new();
    let mut bad = None;
    visit(&mut |s, m| {
        let key = s as *const crate::access::Shared as usize;
        let w = m.writes();
        if let Some(d) = decls.iter_mut().find(|d| d.0 == key) {
            if d.1 || w {
                bad = Some(format!(
                    "{} is declared twice in one node, and one of the declarations writes",
                    s.describe()
                ));
            }
            d.1 |= w;
        } else {
            decls.push((key, w));
        }
    });
    (decls, bad)
}

impl<'g, A: Access> AccessNodeBuilder<'g, A> {
    /// The node calls `f` once per run with `&T` for each read and
    /// `&mut T` for each write, in the declaration's shape.
    pub fn call<F>(self, f: F) -> NodeId
    where
        F: for<'x> Fn(A::Guards<'x>) + Send + Sync + 'static,
    {
        let (decls, bad) = decls_of(|v| self.access.visit(v));
        let body = WithAccess {
            access: self.access,
            f: Arc::new(f),
        };
        self.node.finish(decls, bad, Box::new(body))
    }
}

impl<'g, A: ParAccess> AccessNodeBuilder<'g, A> {
    /// A loop node with declared access: each run calls `f(i, item)` for
    /// every `i` in `range` (`item`: `&T` for a read, `&mut v[i]` for a
    /// `write_each`), as [`AccessJobBuilder::parallel_for`]. Each index is
    /// measured on its own (two clock reads): for short indices prefer
    /// [`parallel_for_chunked`](Self::parallel_for_chunked).
    ///
    /// # Panics
    /// On `Batch::Fixed(0)` (here, not at run time).
    ///
    /// [`AccessJobBuilder::parallel_for`]: crate::AccessJobBuilder::parallel_for
    pub fn parallel_for<F>(self, range: Range<usize>, batch: Batch, f: F) -> NodeId
    where
        F: for<'x> Fn(usize, A::Item<'x>) + Send + Sync + 'static,
    {
        let _ = batch.piece_len(range.len(), 1);
        let (decls, bad) = decls_of(|v| self.access.visit(v));
        let body = AccessLoop {
            access: self.access,
            range,
            batch,
            f: Arc::new(f),
        };
        self.node.finish(decls, bad, Box::new(body))
    }

    /// `parallel_for` whose `f` gets each piece whole: its `Range` and
    /// `&mut v[range]` for a `write_each` (`&T` for a read).
    ///
    /// # Panics
    /// On `Batch::Fixed(0)` (here, not at run time).
    pub fn parallel_for_chunked<F>(self, range: Range<usize>, batch: Batch, f: F) -> NodeId
    where
        F: for<'x> Fn(Range<usize>, A::Chunk<'x>) + Send + Sync + 'static,
    {
        let _ = batch.piece_len(range.len(), 1);
        let (decls, bad) = decls_of(|v| self.access.visit(v));
        let body = AccessChunks {
            access: self.access,
            range,
            batch,
            f: Arc::new(f),
        };
        self.node.finish(decls, bad, Box::new(body))
    }
}
