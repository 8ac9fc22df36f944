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
use crate::registry::Registry;
use crate::system::JobSystem;
use std::sync::{Arc, MutexGuard, Weak};

/// Runs kept per node to estimate its duration (the median of them).
const HISTORY: usize = 4;

/// The submission order's key, a node's longest remaining path, is
/// bucketed: 16 buckets per octave (nodes whose paths are within 1/16 of
/// an octave, about 4 %, keep the build's topological order), so that the
/// order is a counting sort, linear in the nodes, not a comparison sort
/// (which cost most of a node's bookkeeping per run in a large graph).
const PER_OCTAVE: u32 = 16;
const BUCKETS: usize = 64 * PER_OCTAVE as usize + 1;

/// The bucket of a path of `rest` ns: 0 for 0, else the octave and the
/// four bits below the leading one (a float with a 4-bit mantissa).
/// Monotonic: a longer path never gets a lower bucket.
fn bucket(rest: u64) -> usize {
    if rest == 0 {
        return 0;
    }
    let octave = 63 - rest.leading_zeros();
    let frac = if octave >= 4 {
        (rest >> (octave - 4)) & 15
    } else {
        (rest << (4 - octave)) & 15
    };
    1 + (octave * PER_OCTAVE) as usize + frac as usize
}

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
    /// The counting sort's per-bucket counts, then start positions.
    buckets: Vec<u32>,
    path: Vec<u32>,
    critical: Vec<bool>,
    /// A node's dependencies for one submission.
    deps: Vec<JobHandle>,
    /// The system of the latest run (its id and registry, weakly: the graph does
    /// not keep a dropped system alive), to tell whether runs left on it
    /// have ended when a run starts on another (`switch_system`).
    system: Option<(u32, Weak<Registry>)>,
}

impl State {
    pub(super) fn new(topo: &Topo, ring: usize) -> State {
        let n = topo.len();
        let max_preds = topo.explicit.iter().map(Vec::len).max().unwrap_or(0);
        let mut st = State {
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
            buckets: vec![0; BUCKETS],
            path: Vec::with_capacity(n),
            critical: vec![false; n],
            deps: Vec::with_capacity(max_preds + 1),
            system: None,
        };
        // Before any measurement every node counts as one: the first runs
        // submit the longest path in nodes first and raise it (a chain of
        // many short nodes beside long single ones is then wrong for a
        // run, until one has finished).
        st.est.fill(1);
        plan(&mut st, topo);
        st
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
    /// A graph may run on one system, then on another (a level's system
    /// replaced): the runs on the first must have ended by then (completed,
    /// or that system dropped).
    ///
    /// # Panics
    /// If runs of this graph on another system are still in flight; on a
    /// bad [`pin`](super::NodeBuilder::pin).
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
        let switched = switch_system(js, st, &self.shared.topo, &self.shared);
        harvest(js, st, &self.shared.topo, &self.shared);
        let i = (st.runs % m as u64) as usize;
        let epoch = super::clock::next_epoch();
        for s in &self.shared.ring[i] {
            s.reset(epoch);
        }
        // The previous run, if still in flight: once its whole handle is
        // complete every node of it is (a `combine` finishes after all of
        // them), and no node needs the per-node look below.
        let prev = (m > 1 && st.runs > 0 && !switched)
            .then(|| ((st.runs - 1) % m as u64) as usize)
            .filter(|&p| st.whole[p].is_some_and(|h| !js.is_complete(h)));
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
            let prio = opts.planned(st.critical[n]);
            let desc = match topo.names[n] {
                Some(name) => JobDesc::named(name),
                None => JobDesc::default(),
            }
            .with_priority(prio);
            let mut job = js.job().desc(desc).after(&deps);
            if let Some(pin) = opts.pin {
                job = job.pin(pin);
            }
            if let Some(class) = opts.class {
                job = job.core_class(class);
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

    /// The priority the next run gives `node`: `High` on the critical path
    /// estimated from the finished runs (unless the node
    /// [keeps its own](super::NodeBuilder::keep_priority)), else its own,
    /// else `Normal`.
    #[track_caller]
    pub fn planned_priority(&self, node: NodeId) -> Priority {
        let n = self.shared.topo.index(node);
        let st = self.lock();
        self.opts[n].planned(st.critical[n])
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
    // Another system's runs (a `report` or `sync` through the wrong
    // system) are left for `switch_system`: `js` cannot tell.
    let id = js.reg().id();
    harvest_if(st, topo, shared, |st, i| {
        st.whole[i].is_some_and(|h| h.system == id && js.is_complete(h))
    });
}

/// `harvest`, with `ended(st, i)` telling whether the run in ring entry `i`
/// has ended.
fn harvest_if(
    st: &mut State,
    topo: &Topo,
    shared: &Arc<super::Shared>,
    ended: impl Fn(&State, usize) -> bool,
) {
    let mut any = false;
    for i in 0..st.whole.len() {
        if st.whole[i].is_none() || st.harvested[i] || !ended(st, i) {
            continue;
        }
        st.harvested[i] = true;
        any = true;
        let newest = st.last_seq.map_or(true, |s| st.seq[i] > s);
        let scale = super::clock::Scale::now();
        for (n, span) in shared.ring[i].iter().enumerate() {
            let d = span.ticks().map(|t| scale.ns(t));
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
    plan(st, topo);
}

/// From the estimates `st.est`: each node's longest remaining path, the
/// submission order and the critical path. Allocates nothing.
fn plan(st: &mut State, topo: &Topo) {
    let frame = longest_rest(topo, &st.est, &mut st.rest);
    // Longest remaining path first (by bucket), ties in the build's
    // topological order: a counting sort over the topological order. A
    // valid topological order: a node's `rest` is at least each
    // successor's, so its bucket is too, and within a bucket it comes
    // first in the topological order.
    let (rest, counts) = (&st.rest, &mut st.buckets);
    let (mut lo, mut hi) = (BUCKETS, 0);
    for &n in &topo.order {
        let b = bucket(rest[n as usize]);
        counts[b] += 1;
        (lo, hi) = (lo.min(b), hi.max(b));
    }
    let mut at = 0;
    for b in (lo..=hi).rev() {
        let c = counts[b];
        counts[b] = at;
        at += c;
    }
    for &n in &topo.order {
        let b = bucket(rest[n as usize]);
        st.order[counts[b] as usize] = n;
        counts[b] += 1;
    }
    if lo <= hi {
        counts[lo..=hi].fill(0);
    }
    critical_path(topo, &st.rest, frame, &mut st.path);
    st.critical.iter_mut().for_each(|c| *c = false);
    for &n in &st.path {
        st.critical[n as usize] = true;
    }
}

/// Before a run on `js`: if the latest run was on another system, every
/// run there must have ended (each node's job complete on that system, or
/// the system gone: dropping a system ends all its jobs; the run's whole
/// handle is not asked, its no-op may still wait for a thread to take it).
/// They are harvested, then forgotten, so that nothing asks `js` about
/// another system's handles. Panics if one has not ended. True if the
/// system changed (the new run then has no previous run to wait for).
fn switch_system(js: &JobSystem, st: &mut State, topo: &Topo, shared: &Arc<super::Shared>) -> bool {
    let reg = js.reg_arc();
    // By id, not by address: a dropped registry's memory may hold the next.
    let switched = st.system.as_ref().is_some_and(|(id, _)| *id != reg.id());
    if switched {
        let old = st.system.as_ref().and_then(|(_, w)| w.upgrade());
        let ended = |st: &State, i: usize| {
            old.as_ref()
                .map_or(true, |r| st.handles[i].iter().all(|&h| r.is_complete(h)))
        };
        for i in 0..st.whole.len() {
            if let Some(h) = st.whole[i] {
                if !ended(st, i) {
                    panic!(
                        "jobsys: Graph::run: a run of this graph on another JobSystem is still in flight ({h:?}); complete it first"
                    );
                }
            }
        }
        harvest_if(st, topo, shared, ended);
        st.whole.iter_mut().for_each(|w| *w = None);
    }
    if switched || st.system.is_none() {
        st.system = Some((reg.id(), Arc::downgrade(reg)));
    }
    switched
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn buckets_never_put_a_longer_path_below_a_shorter_one() {
        let mut prev = 0;
        let mut x = 0u64;
        // Every value up to 2^12, then a geometric walk to u64::MAX.
        while x < u64::MAX {
            let b = bucket(x);
            assert!(b >= prev && b < BUCKETS, "bucket({x}) = {b} after {prev}");
            prev = b;
            x = if x < 4096 {
                x + 1
            } else {
                x.saturating_add(x / 97 + 1)
            };
        }
        assert!(bucket(u64::MAX) < BUCKETS);
        // Paths within 1/16 of an octave share a bucket; twice as long never does.
        assert_eq!(bucket(1 << 20), bucket((1 << 20) + (1 << 15)));
        assert!(bucket(2 << 20) > bucket(1 << 20));
    }
}
