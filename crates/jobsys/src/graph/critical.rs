//! Critical path: longest remaining path, earliest starts, slack and
//! what-ifs on the DAG with given durations (pure functions on `Topo`,
//! run with the measured durations by `run.rs` and tested with made-up
//! ones through [`Graph::analyze`](super::Graph::analyze)).

use super::{Graph, NodeId, Topo};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// `rest[n]` = `dur[n]` + the longest `rest` among `n`'s successors: the
/// length of the longest path from `n`'s start to the end of the run.
/// Returns the longest of all (the run's length on unlimited threads).
pub(super) fn longest_rest(topo: &Topo, dur: &[u64], rest: &mut [u64]) -> u64 {
    let mut best = 0;
    for &n in topo.order.iter().rev() {
        let n = n as usize;
        let tail = topo.succs[n]
            .iter()
            .map(|&s| rest[s as usize])
            .max()
            .unwrap_or(0);
        rest[n] = dur[n] + tail;
        best = best.max(rest[n]);
    }
    best
}

/// `early[n]`: the earliest start of `n` (the longest path to it).
pub(super) fn earliest(topo: &Topo, dur: &[u64], early: &mut [u64]) {
    for &n in &topo.order {
        let n = n as usize;
        early[n] = topo.preds[n]
            .iter()
            .map(|&p| early[p as usize] + dur[p as usize])
            .max()
            .unwrap_or(0);
    }
}

/// The critical path into `path` (cleared first): from the node whose
/// `rest` is the frame's length, each time the successor with the longest
/// `rest`.
pub(super) fn critical_path(topo: &Topo, rest: &[u64], frame: u64, path: &mut Vec<u32>) {
    path.clear();
    if topo.len() == 0 {
        return;
    }
    let mut at = topo
        .order
        .iter()
        .copied()
        .find(|&n| topo.preds[n as usize].is_empty() && rest[n as usize] == frame);
    while let Some(n) = at {
        path.push(n);
        at = topo.succs[n as usize]
            .iter()
            .copied()
            .max_by_key(|&s| (rest[s as usize], std::cmp::Reverse(s)));
    }
}

/// A run's critical path, each node's slack, and what-ifs, computed on the
/// graph's DAG from one duration per node (see [`Graph::report`] and
/// [`Graph::analyze`]). The durations are the nodes' own (first start to
/// last end of a loop's pieces); the frame is the DAG's longest path, i.e.
/// the run's length with as many threads as it could use, no scheduling
/// cost.
#[derive(Clone)]
pub struct GraphReport {
    topo: Arc<Topo>,
    dur: Vec<u64>,
    rest: Vec<u64>,
    early: Vec<u64>,
    frame: u64,
    path: Vec<NodeId>,
}

impl GraphReport {
    pub(super) fn new(topo: Arc<Topo>, dur: Vec<u64>) -> GraphReport {
        let n = topo.len();
        let mut rest = vec![0; n];
        let mut early = vec![0; n];
        let frame = longest_rest(&topo, &dur, &mut rest);
        earliest(&topo, &dur, &mut early);
        let mut path = Vec::new();
        critical_path(&topo, &rest, frame, &mut path);
        GraphReport {
            path: path.into_iter().map(|p| NodeId(p, topo.serial)).collect(),
            topo,
            dur,
            rest,
            early,
            frame,
        }
    }

    /// The DAG's longest path with these durations.
    pub fn frame(&self) -> Duration {
        Duration::from_nanos(self.frame)
    }

    /// The critical path, first node first.
    pub fn critical_path(&self) -> &[NodeId] {
        &self.path
    }

    /// The node's duration in this report.
    #[track_caller]
    pub fn duration(&self, node: NodeId) -> Duration {
        Duration::from_nanos(self.dur[self.topo.index(node)])
    }

    /// The node's name, if it has one.
    #[track_caller]
    pub fn name(&self, node: NodeId) -> Option<&'static str> {
        self.topo.names[self.topo.index(node)]
    }

    /// How much longer the node could take without making the frame
    /// longer (zero on the critical path).
    #[track_caller]
    pub fn slack(&self, node: NodeId) -> Duration {
        let n = self.topo.index(node);
        Duration::from_nanos(self.frame - (self.early[n] + self.rest[n]))
    }

    /// The frame's length if `node` took `factor` times as long (e.g. 0.8:
    /// 20 % faster), the others unchanged; computed on the DAG.
    ///
    /// # Panics
    /// If `factor` is negative or not finite.
    #[track_caller]
    pub fn what_if(&self, node: NodeId, factor: f64) -> Duration {
        assert!(
            factor.is_finite() && factor >= 0.0,
            "jobsys: GraphReport::what_if: factor must be finite and at least 0"
        );
        let mut dur = self.dur.clone();
        let n = self.topo.index(node);
        dur[n] = (dur[n] as f64 * factor).round() as u64;
        let mut rest = vec![0; dur.len()];
        Duration::from_nanos(longest_rest(&self.topo, &dur, &mut rest))
    }
}

impl fmt::Debug for GraphReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphReport")
            .field("frame", &self.frame())
            .field("critical_path", &self.path)
            .finish_non_exhaustive()
    }
}

/// One line per node: name, duration, slack, `*` on the critical path;
/// then the frame and, for each node of the critical path, the frame if it
/// were 20 % faster.
impl fmt::Display for GraphReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "frame {:?} (longest path)", self.frame())?;
        for n in 0..self.topo.len() {
            let id = NodeId(n as u32, self.topo.serial);
            let mark = if self.path.contains(&id) { '*' } else { ' ' };
            writeln!(
                f,
                "{mark} {:<20} {:>12?}  slack {:?}",
                self.topo.label(n as u32),
                self.duration(id),
                self.slack(id)
            )?;
        }
        for &id in &self.path {
            let faster = self.what_if(id, 0.8);
            writeln!(
                f,
                "{} 20 % faster -> frame {:?} shorter",
                self.topo.label(id.0),
                self.frame().saturating_sub(faster)
            )?;
        }
        Ok(())
    }
}

impl Graph {
    /// The report this graph would give for these node durations (one per
    /// node, in [`NodeId::index`] order): to plan with estimates, or to
    /// test.
    ///
    /// # Panics
    /// If `durations` has not one entry per node.
    pub fn analyze(&self, durations: &[Duration]) -> GraphReport {
        assert_eq!(
            durations.len(),
            self.len(),
            "jobsys: Graph::analyze: one duration per node"
        );
        let dur = durations.iter().map(|d| d.as_nanos() as u64).collect();
        GraphReport::new(self.shared.topo.clone(), dur)
    }
}
