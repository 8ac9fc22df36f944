//! Replaying a graph: one job per node per run, the runs in flight (a ring
//! of `max_in_flight` entries, each with its handles preallocated at
//! build), the overlap edges, sync points, and harvesting each finished
//! run's durations into the history that orders the next runs.

use super::body::Tick;
use super::critical::{critical_path, longest_rest, GraphReport};
use super::{Graph, NodeId, Topo};
use crate::desc::{JobDesc, Priority};
use crate::error::JobError;
use crate::handle::JobHandle;
use crate::system::JobSystem;
use std::cmp::Reverse;
use std::sync::{Arc, MutexGuard};

/// Runs kept per node to estimate its duration (the median of them).
const HISTORY: usize = 4;

/// The graph's run state: everything `run` touches, sized at build so
/// that a run after the first allocates nothing.
pub(super) struct State {
    /// Runs started.
    runs: u64,
    /// Per ring entry: each node's job in the run it holds.
    handles: Vec<Vec<JobHandle>>,
    /// Per ring entry: the run's whole-run handle (`None`: never used).
    whole: Vec<Option<JobHandle>>,
    /// Per ring entry: its run's number, and whether its durations were
    /// taken into the history.
    seq: Vec<u64>,
    harvested: Vec<bool>,
    /// Per node: the last `HISTORY` measured durations (ns), a ring.
    history: Vec<[u64; HISTORY]>,
    hist_len: Vec<u8>,
    hist_pos: Vec<u8>,
    /// The last harvested run: its number and durations (ns; 0 for a
    /// node that did not run).
    last_seq: Option<u64>,
    last_dur: Vec<u64>,
    /// Estimates from the history and what they give: the longest
    /// remaining path, the submission order, the critical path.
    est: Vec<u64>,
    rest: Vec<u64>,
    order: Vec<u32>,
    topo_pos: Vec<u32>,
    path: Vec<u32>,
    critical: Vec<bool>,
    /// A node's dependencies for one submission.
    deps: Vec<JobHandle>,
}

impl State {
    pub(super) fn new(topo: &Topo, ring: usize) -> State {
        let n = topo.len();
        let mut topo_pos = vec![0; n];
        for (i, &x) in topo.order.iter().enumerate() {
            topo_pos[x as usize] = i as u32;
        }
        let max_preds = topo.explicit.iter().map(Vec::len).max().unwrap_or(0);
        State {
            runs: 0,
            handles: vec![vec![JobHandle::DANGLING; n]; ring],
            whole: vec![None; ring],
            seq: vec![0; ring],
            harvested: vec![true; ring],
            history: vec![[0; HISTORY]; n],
            hist_len: vec![0; n],
            hist_pos: vec![0; n],
            last_seq: None,
            last_dur: vec![0; n],
            est: vec![0; n],
            rest: vec![0; n],
            order: topo.order.clone(),
            topo_pos,
            path: Vec::with_capacity(n),
            critical: vec![false; n],
            deps: Vec::with_capacity(max_preds + 1),
        }
    }
}

impl Graph {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while scheduling (a bad pin) leaves the state usable: a
        // run either finished its bookkeeping or never became current.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Start a run: one job per node, each after its dependencies in this
    /// run and after its own job of the previous run (if that is still in
    /// flight). Returns a handle for the whole run (a `combine` of every
    /// node's job): a dependency for other jobs, and `complete`,
    /// `try_complete` (a failed node fails its dependents in the run and
    /// the run) and `cancel` (every node of the run that has not started)
    /// work on it as on any job.
    ///
    /// With [`max_in_flight`](Graph::max_in_flight) runs in flight, this
    /// first waits for the oldest (helping with its work). Its own
    /// bookkeeping allocates nothing (sized at build); the first runs may
    /// allocate in the job system as any scheduling does (slot pages,
    /// deque growth, a name's first use), later ones do not
    /// (`tests/graph.rs`), except an access node with more than 16
    /// dependencies at once (docs/graph.md).
    ///
    /// # Panics
    /// If `js` is not the system of the runs still in flight; on a bad
    /// [`pin`](super::NodeBuilder::pin).
    #[track_caller]
    pub fn run(&self, js: &JobSystem) -> JobHandle {
        let m = self.max_in_flight;
        let mut guard = loop {
            let (runs, oldest) = {
                let st = self.lock();
                (st.runs, st.whole[(st.runs % m as u64) as usize])
            };
            // Waiting without the lock: the wait may run this graph's
            // jobs, and another thread may ask for a sync point meanwhile.
            if let Some(h) = oldest {
                let _ = js.try_complete(h);
            }
            let st = self.lock();
            if st.runs == runs {
                break st;
            }
        };
        let st = &mut *guard;
        harvest(js, st, &self.shared.topo, &self.shared);
        let i = (st.runs % m as u64) as usize;
        for s in &self.shared.ring[i] {
            s.reset();
        }
        let prev = (m > 1 && st.runs > 0).then(|| ((st.runs - 1) % m as u64) as usize);
        let topo = &*self.shared.topo;
        let mut deps = std::mem::take(&mut st.deps);
        for k in 0..st.order.len() {
            let n = st.order[k] as usize;
            deps.clear();
            deps.extend(topo.explicit[n].iter().map(|&p| st.handles[i][p as usize]));
            if let Some(p) = prev {
                let before = st.handles[p][n];
                if !js.is_complete(before) {
                    // The overlap edge goes through an end event: run
                    // k + 1 waits for `before` to end however it ends and
                    // starts clean (a plain edge would fail it with run k).
                    deps.push(crate::held::end_of(js, before));
                }
            }
            let opts = &self.opts[n];
            let prio = opts.priority.unwrap_or(if st.critical[n] {
                Priority::High
            } else {
                Priority::Normal
            });
            let desc = match topo.names[n] {
                Some(name) => JobDesc::named(name),
                None => JobDesc::default(),
            }
            .with_priority(prio);
            let mut job = js.job().desc(desc).after(&deps);
            if let Some(pin) = opts.pin {
                job = job.pin(pin);
            }
            if let Some(l) = &opts.limit {
                job = job.limit(l);
            }
            let tick = Tick {
                shared: self.shared.clone(),
                node: n as u32,
                ring: i as u32,
            };
            st.handles[i][n] = self.shared.bodies[n].submit(job, tick);
        }
        st.deps = deps;
        let whole = js.combine(&st.handles[i]);
        st.whole[i] = Some(whole);
        st.seq[i] = st.runs;
        st.harvested[i] = false;
        st.runs += 1;
        whole
    }

    /// A sync point: wait (helping) until `node` of the latest run has
    /// finished. `Ok` at once before the first run.
    ///
    /// # Errors
    /// As [`JobSystem::try_complete`] on the node's job: it failed (or a
    /// dependency did), or was cancelled.
    #[track_caller]
    pub fn sync(&self, js: &JobSystem, node: NodeId) -> Result<(), JobError> {
        match self.handle(node) {
            Some(h) => js.try_complete(h),
            None => Ok(()),
        }
    }

    /// The job of `node` in the latest run (`None` before the first run):
    /// a dependency for jobs outside the graph.
    #[track_caller]
    pub fn handle(&self, node: NodeId) -> Option<JobHandle> {
        let n = self.shared.topo.index(node);
        let st = self.lock();
        let m = self.max_in_flight as u64;
        (st.runs > 0).then(|| st.handles[((st.runs - 1) % m) as usize][n])
    }

    /// The report of the latest finished run (`None` if no run finished
    /// yet): critical path, durations, slack, what-ifs. Runs finish for
    /// the graph when a later `run`, a `report` or a wait sees their
    /// handle complete.
    pub fn report(&self, js: &JobSystem) -> Option<GraphReport> {
        let mut guard = self.lock();
        let st = &mut *guard;
        harvest(js, st, &self.shared.topo, &self.shared);
        st.last_seq?;
        Some(GraphReport::new(
            self.shared.topo.clone(),
            st.last_dur.clone(),
        ))
    }

    /// The priority the next run gives `node`: its own, else `High` on the
    /// critical path estimated from the finished runs, else `Normal`.
    #[track_caller]
    pub fn planned_priority(&self, node: NodeId) -> Priority {
        let n = self.shared.topo.index(node);
        let st = self.lock();
        self.opts[n].priority.unwrap_or(if st.critical[n] {
            Priority::High
        } else {
            Priority::Normal
        })
    }

    /// Runs started so far.
    pub fn runs(&self) -> u64 {
        self.lock().runs
    }
}

/// Take every finished, not yet harvested run's durations into the
/// history, then re-estimate: longest remaining paths, submission order,
/// critical path. Allocates nothing.
fn harvest(js: &JobSystem, st: &mut State, topo: &Topo, shared: &Arc<super::Shared>) {
    let mut any = false;
    for i in 0..st.whole.len() {
        let Some(h) = st.whole[i] else { continue };
        if st.harvested[i] || !js.is_complete(h) {
            continue;
        }
        st.harvested[i] = true;
        any = true;
        let newest = st.last_seq.map_or(true, |s| st.seq[i] > s);
        for (n, span) in shared.ring[i].iter().enumerate() {
            let d = span.duration_ns();
            if newest {
                st.last_dur[n] = d.unwrap_or(0);
            }
            if let Some(d) = d {
                let p = st.hist_pos[n] as usize;
                st.history[n][p] = d;
                st.hist_pos[n] = ((p + 1) % HISTORY) as u8;
                st.hist_len[n] = (st.hist_len[n] + 1).min(HISTORY as u8);
            }
        }
        if newest {
            st.last_seq = Some(st.seq[i]);
        }
    }
    if !any {
        return;
    }
    for n in 0..topo.len() {
        let len = st.hist_len[n] as usize;
        let mut h = st.history[n];
        h[..len].sort_unstable();
        st.est[n] = if len == 0 { 0 } else { h[len / 2] };
    }
    let frame = longest_rest(topo, &st.est, &mut st.rest);
    // Longest remaining path first. A valid topological order: a node's
    // `rest` is at least each successor's, and ties keep the build's
    // topological order.
    let (rest, pos) = (&st.rest, &st.topo_pos);
    st.order
        .sort_unstable_by_key(|&n| (Reverse(rest[n as usize]), pos[n as usize]));
    critical_path(topo, &st.rest, frame, &mut st.path);
    st.critical.iter_mut().for_each(|c| *c = false);
    for &n in &st.path {
        st.critical[n as usize] = true;
    }
}
