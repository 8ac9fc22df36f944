//! Running one [`FramePlan`] on a job system and recording what happened.
//!
//! The main thread schedules the nodes in plan order through the API each
//! node names (waiting at sync points, running the extra phases where the
//! plan puts them), then waits on every node in the plan's random order
//! (`try_complete`, or `complete` for some that must succeed) and on the
//! combine of all of them (before or after the nodes).
//!
//! Every job records into the frame's shared cells: a global sequence
//! number at its start and end (`SeqCst` counter: a job that starts after
//! another ended gets a larger number), a run counter per index, and the
//! value it computed from its dependencies' values. [`run`] snapshots that into a
//! [`FrameRecord`] for [`super::check`].
//!
//! Jobs hold an `Arc<Shared>` (they must be `'static`); spawner and join jobs
//! also hold a `JobSystem` clone, which they drop before they finish (the
//! closure is consumed by its call), so the main thread's clone stays the
//! last one.

use super::check::{self, ChildRecord, FrameRecord, NodeRecord, Outcome};
use super::faults;
use super::phases::{self, Extras};
use super::plan::{FramePlan, Inject, SingleApi, Work};
use super::watchdog::Watchdog;
use jobsys::{HotZone, JobDesc, JobHandle, JobSystem};
use jobsys_bench::spin::spin_ns;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const NAME: &str = "soak-job";

struct NodeCell {
    /// Smallest start sequence number (`u64::MAX`: never started).
    start: AtomicU64,
    /// Largest end sequence number (0: never ended).
    end: AtomicU64,
    value: AtomicU64,
    runs: Vec<AtomicU32>,
    values: Vec<AtomicU64>,
}

struct ChildCell {
    start: AtomicU64,
    end: AtomicU64,
    runs: AtomicU32,
    value: AtomicU64,
}

/// What the jobs of one frame write into.
struct Shared {
    plan: Arc<FramePlan>,
    seq: AtomicU64,
    nodes: Vec<NodeCell>,
    children: Vec<ChildCell>,
    errors: Mutex<Vec<String>>,
}

impl Shared {
    fn new(plan: Arc<FramePlan>) -> Shared {
        let nodes = plan
            .nodes
            .iter()
            .map(|n| NodeCell {
                start: AtomicU64::new(u64::MAX),
                end: AtomicU64::new(0),
                value: AtomicU64::new(0),
                runs: (0..n.work.slots()).map(|_| AtomicU32::new(0)).collect(),
                values: (0..n.work.slots()).map(|_| AtomicU64::new(0)).collect(),
            })
            .collect();
        let children = plan
            .children
            .iter()
            .map(|_| ChildCell {
                start: AtomicU64::new(u64::MAX),
                end: AtomicU64::new(0),
                runs: AtomicU32::new(0),
                value: AtomicU64::new(0),
            })
            .collect();
        Shared {
            plan,
            seq: AtomicU64::new(0),
            nodes,
            children,
            errors: Mutex::new(Vec::new()),
        }
    }

    fn tick(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Node `i` (index `k`) starts.
    fn begin(&self, i: usize, k: usize) {
        let c = &self.nodes[i];
        c.start.fetch_min(self.tick(), Ordering::SeqCst);
        c.runs[k].fetch_add(1, Ordering::SeqCst);
    }

    /// Node `i` (one of its indices) ends.
    fn finish(&self, i: usize) {
        self.nodes[i].end.fetch_max(self.tick(), Ordering::SeqCst);
    }

    /// Node `i`'s input from its dependencies' values.
    fn input(&self, i: usize) -> u64 {
        let n = &self.plan.nodes[i];
        check::node_input(
            n.seed,
            n.deps
                .iter()
                .map(|&d| self.nodes[d as usize].value.load(Ordering::Acquire)),
        )
    }

    fn error(&self, m: String) {
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(m);
    }
}

/// The body of single node `i`; `js` for spawner and join nodes.
fn single(sh: &Arc<Shared>, js: Option<&JobSystem>, i: usize) {
    let node = &sh.plan.nodes[i];
    let Work::Single(api) = node.work else {
        unreachable!("single() on a loop")
    };
    sh.begin(i, 0);
    let inject = node.inject == Inject::Panic;
    if inject && api != SingleApi::Join {
        spin_ns(node.dur_ns / 2);
        faults::inject(faults::job_message(i));
    }
    spin_ns(node.dur_ns);
    let input = sh.input(i);
    let v = match (api, js) {
        (SingleApi::Spawner, Some(js)) => spawn_children(sh, js, i, input),
        (SingleApi::Join, Some(js)) => join_node(js, i, input, inject, node.dur_ns),
        _ => input,
    };
    let c = &sh.nodes[i];
    c.values[0].store(v, Ordering::Release);
    c.value.store(v, Ordering::Release);
    sh.finish(i);
}

/// A spawner: schedule the children (sibling dependencies, priorities),
/// wait for them newest first, combine their values.
fn spawn_children(sh: &Arc<Shared>, js: &JobSystem, i: usize, input: u64) -> u64 {
    let node = &sh.plan.nodes[i];
    let base = node.children.start;
    let mut hs: Vec<JobHandle> = Vec::with_capacity(node.children.len());
    for c in node.children.clone() {
        let cp = &sh.plan.children[c as usize];
        let deps: Vec<JobHandle> = cp.deps.iter().map(|&d| hs[(d - base) as usize]).collect();
        let s = sh.clone();
        hs.push(
            js.job()
                .desc(cp.priority)
                .after(&deps)
                .schedule(move || child(&s, c as usize, input)),
        );
    }
    for (k, &h) in hs.iter().enumerate().rev() {
        if let Err(e) = js.try_complete(h) {
            sh.error(format!(
                "job {i}: waiting on its child {} failed: {e}",
                base as usize + k
            ));
        }
    }
    check::spawner_value(
        input,
        node.children
            .clone()
            .map(|c| sh.children[c as usize].value.load(Ordering::Acquire)),
    )
}

fn child(sh: &Shared, c: usize, parent_input: u64) {
    let cp = &sh.plan.children[c];
    let cell = &sh.children[c];
    cell.start.fetch_min(sh.tick(), Ordering::SeqCst);
    cell.runs.fetch_add(1, Ordering::SeqCst);
    spin_ns(cp.dur_ns);
    let v = check::child_value(
        cp.seed,
        parent_input,
        cp.deps
            .iter()
            .map(|&d| sh.children[d as usize].value.load(Ordering::Acquire)),
    );
    cell.value.store(v, Ordering::Release);
    cell.end.fetch_max(sh.tick(), Ordering::SeqCst);
}

/// A join node: `join(a, join(c, d))`; an injected panic fires in `a`, the
/// side that may run on another thread, and must come back out of `join`.
fn join_node(js: &JobSystem, i: usize, input: u64, inject: bool, dur_ns: u64) -> u64 {
    let (a, b) = js.join(
        move || {
            spin_ns(dur_ns / 2);
            if inject {
                faults::inject(faults::job_message(i));
            }
            check::join_side(input, 1)
        },
        || {
            js.join(
                move || check::join_side(input, 3),
                move || {
                    spin_ns(dur_ns / 2);
                    check::join_side(input, 4)
                },
            )
        },
    );
    check::join_value(a, b)
}

/// Index `k` of loop node `i`.
fn index(sh: &Shared, i: usize, k: usize) {
    sh.begin(i, k);
    let node = &sh.plan.nodes[i];
    spin_ns(node.dur_ns);
    if node.inject == Inject::PanicAt(k) {
        faults::inject(faults::job_message(i));
    }
    let input = sh.input(i);
    let c = &sh.nodes[i];
    c.values[k].store(check::index_value(input, k), Ordering::Release);
    c.value.store(input, Ordering::Release);
    sh.finish(i);
}

/// Schedule node `i` after `deps` through its API.
fn schedule_node(js: &JobSystem, sh: &Arc<Shared>, i: usize, deps: &[JobHandle]) -> JobHandle {
    let node = &sh.plan.nodes[i];
    let desc = JobDesc::named(NAME).with_priority(node.priority);
    let s = sh.clone();
    match node.work {
        Work::Single(SingleApi::Schedule) => js.schedule_after(deps, move || single(&s, None, i)),
        Work::Single(SingleApi::ScheduleWith) => js
            .job()
            .desc(desc)
            .after(deps)
            .schedule(move || single(&s, None, i)),
        Work::Single(SingleApi::Batched) => js
            .job()
            .batched()
            .after(deps)
            .schedule(move || single(&s, None, i)),
        Work::Single(SingleApi::Spawner | SingleApi::Join) => {
            let j = js.clone();
            js.job()
                .desc(desc)
                .after(deps)
                .schedule(move || single(&s, Some(&j), i))
        }
        Work::PerIndex { len, batch } => {
            js.job()
                .desc(desc)
                .after(deps)
                .parallel_for(0..len, batch, move |k| index(&s, i, k))
        }
        Work::Chunked { len, batch } => {
            js.job()
                .after(deps)
                .parallel_for_chunked(0..len, batch, move |r| {
                    for k in r {
                        index(&s, i, k);
                    }
                })
        }
    }
}

/// Close a hot zone on this thread or, `in_job`, from a job.
fn close_zone(js: &JobSystem, zone: HotZone, in_job: bool, x: &mut Extras) {
    if in_job {
        x.handles.push(js.schedule(move || drop(zone)));
        x.jobs += 1;
    } else {
        drop(zone);
    }
}

/// Run `plan` on `js` and record it. `wd` gets the phases.
pub fn run(js: &JobSystem, plan: &Arc<FramePlan>, wd: &Watchdog) -> FrameRecord {
    let sh = Arc::new(Shared::new(plan.clone()));
    let n = plan.nodes.len();
    let mut hs: Vec<JobHandle> = Vec::with_capacity(n);
    let mut sync: Vec<Vec<Outcome>> = vec![Vec::new(); n];
    let mut x = Extras::default();
    let mut zone: Option<HotZone> = None;
    let mut burst = None;
    wd.phase("scheduling");
    for (i, node) in plan.nodes.iter().enumerate() {
        if let Some((at, ms)) = plan.gap {
            if at == i {
                wd.phase("idle gap");
                js.flush();
                let so_far = js.combine(&hs);
                let _ = js.try_complete(so_far); // failures are checked per node
                std::thread::sleep(Duration::from_millis(ms));
                wd.phase("scheduling");
            }
        }
        if let Some(z) = plan.hot_zone {
            if z.from == i {
                zone = Some(js.hot_zone());
            }
            if z.to == i {
                if let Some(g) = zone.take() {
                    close_zone(js, g, z.drop_in_job, &mut x);
                }
            }
        }
        if let Some(sp) = plan.scope.as_ref().filter(|s| s.at == i) {
            wd.phase("scope");
            phases::scope(js, sp, &mut x);
            wd.phase("scheduling");
        }
        if plan.join_at == Some(i) {
            wd.phase("main-thread join");
            phases::main_join(js, check::mix(plan.seed, i as u64), node.dur_ns, &mut x);
            wd.phase("scheduling");
        }
        if let Some(b) = plan.burst.filter(|b| b.at == i) {
            wd.phase("burst");
            burst = Some(phases::Burst::start(js, &b));
            wd.phase("scheduling");
        }
        if let Some(s) = node.sync {
            wd.phase("sync point");
            sync[s as usize].push(Outcome::of(js.try_complete(hs[s as usize])));
            wd.phase("scheduling");
        }
        let deps: Vec<JobHandle> = node.deps.iter().map(|&d| hs[d as usize]).collect();
        hs.push(schedule_node(js, &sh, i, &deps));
        if node.work == Work::Single(SingleApi::Batched)
            && check::mix(plan.seed, i as u64) % 100 < plan.flush_percent
        {
            js.flush();
        }
    }
    if let (Some(g), Some(z)) = (zone.take(), plan.hot_zone) {
        close_zone(js, g, z.drop_in_job, &mut x);
    }
    js.flush();
    wd.phase("final waits");
    let frame_h = js.combine(&hs);
    let combined_first = plan.seed & 1 == 1;
    let mut combined = combined_first.then(|| Outcome::of(js.try_complete(frame_h)));
    // A quarter of the jobs the replay says succeed are waited on with
    // `complete` (which would panic on a failure), the rest with
    // `try_complete`.
    let expect = check::replay(plan);
    let mut outcomes = vec![Outcome::Ok; n];
    for &i in &plan.wait_order {
        let i = i as usize;
        let h = hs[i];
        outcomes[i] = if expect.status[i] == check::Status::Ran
            && check::mix(plan.seed ^ 0xC0, i as u64) % 4 == 0
        {
            match catch_unwind(AssertUnwindSafe(|| js.complete(h))) {
                Ok(()) => Outcome::Ok,
                Err(p) => {
                    Outcome::Other(format!("complete panicked: {}", faults::payload_text(&*p)))
                }
            }
        } else {
            Outcome::of(js.try_complete(h))
        };
    }
    if combined.is_none() {
        combined = Some(Outcome::of(js.try_complete(frame_h)));
    }
    if let Some(b) = burst {
        wd.phase("burst wait");
        b.finish(js, &mut x);
    }
    wd.phase("extra waits");
    for h in std::mem::take(&mut x.handles) {
        if let Err(e) = js.try_complete(h) {
            x.errors.push(format!("hot-zone job failed: {e}"));
        }
    }
    let all_complete = js.is_complete(frame_h) && hs.iter().all(|&h| js.is_complete(h));
    wd.phase("snapshot");
    let never = |s: u64| if s == u64::MAX { 0 } else { s };
    let nodes = sh
        .nodes
        .iter()
        .zip(outcomes)
        .zip(sync)
        .map(|((c, outcome), sync_outcomes)| NodeRecord {
            runs: c.runs.iter().map(|r| r.load(Ordering::SeqCst)).collect(),
            start: never(c.start.load(Ordering::SeqCst)),
            end: c.end.load(Ordering::SeqCst),
            value: c.value.load(Ordering::SeqCst),
            values: c.values.iter().map(|v| v.load(Ordering::SeqCst)).collect(),
            outcome,
            sync_outcomes,
        })
        .collect();
    let children = sh
        .children
        .iter()
        .map(|c| ChildRecord {
            runs: c.runs.load(Ordering::SeqCst),
            start: never(c.start.load(Ordering::SeqCst)),
            end: c.end.load(Ordering::SeqCst),
            value: c.value.load(Ordering::SeqCst),
        })
        .collect();
    let mut errors = std::mem::take(&mut *sh.errors.lock().unwrap_or_else(|e| e.into_inner()));
    errors.append(&mut x.errors);
    FrameRecord {
        nodes,
        children,
        combined: combined.unwrap_or(Outcome::Ok),
        all_complete,
        errors,
        extra_jobs: x.jobs,
    }
}
