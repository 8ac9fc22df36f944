//! Random dependency graphs: singles, parallel_fors (per-index and chunked)
//! and combines, 0–5 dependencies each, checked against a serial replay.
//!
//! Every job computes a value from the values of its dependencies (a
//! dataflow), records that it ran exactly once, and checks at its start that
//! every dependency had finished. The values and the coverage of every
//! parallel_for index are then compared with a serial replay of the graph.

mod common;

use common::{mix, watchdog, Rng};
use jobsys::{Batch, JobHandle, JobSystem};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

#[derive(Clone, Debug)]
enum Kind {
    Single,
    For {
        range: Range<usize>,
        batch: Batch,
        chunked: bool,
    },
    Combine,
}

#[derive(Clone, Debug)]
struct Node {
    kind: Kind,
    /// Direct dependencies (indices of earlier nodes; repeats allowed).
    deps: Vec<usize>,
    /// Dependencies with combines replaced by what they combine: the nodes
    /// whose results this node reads. Sorted, deduplicated.
    inputs: Vec<usize>,
}

struct Graph {
    nodes: Vec<Node>,
}

fn gen_graph(rng: &mut Rng, max_nodes: usize) -> Graph {
    let n = 1 + rng.below(max_nodes);
    let mut nodes: Vec<Node> = Vec::with_capacity(n);
    for i in 0..n {
        let kind = match rng.below(10) {
            0..=5 => Kind::Single,
            6..=8 => {
                let len = match rng.below(4) {
                    0 => rng.below(3),
                    1 => rng.below(70),
                    _ => rng.below(300),
                };
                let start = if rng.chance(50) { 0 } else { rng.below(1000) };
                let batch = match rng.below(4) {
                    0 => Batch::Auto,
                    1 => Batch::Fixed(1),
                    _ => Batch::Fixed(1 + rng.below(40)),
                };
                Kind::For {
                    range: start..start + len,
                    batch,
                    chunked: rng.chance(50),
                }
            }
            _ => Kind::Combine,
        };
        let ndeps = if i == 0 { 0 } else { rng.below(6) };
        let deps: Vec<usize> = (0..ndeps).map(|_| rng.below(i)).collect();
        let mut inputs = Vec::new();
        for &d in &deps {
            match nodes[d].kind {
                Kind::Combine => inputs.extend_from_slice(&nodes[d].inputs),
                _ => inputs.push(d),
            }
        }
        inputs.sort_unstable();
        inputs.dedup();
        nodes.push(Node { kind, deps, inputs });
    }
    Graph { nodes }
}

/// What the jobs write while they run.
struct Record {
    nodes: Vec<Node>,
    /// Single: times it ran.
    runs: Vec<AtomicU32>,
    /// Single: set when it finished.
    done: Vec<AtomicBool>,
    /// Single: its value.
    value: Vec<AtomicU64>,
    /// For: value per index (relative to the range start).
    elems: Vec<Vec<AtomicU64>>,
    /// For: times each index ran.
    elem_runs: Vec<Vec<AtomicU32>>,
    /// For: indices finished.
    elems_done: Vec<AtomicUsize>,
    errors: Mutex<Vec<String>>,
}

impl Record {
    fn new(g: &Graph) -> Record {
        Record {
            nodes: g.nodes.clone(),
            runs: g.nodes.iter().map(|_| AtomicU32::new(0)).collect(),
            done: g.nodes.iter().map(|_| AtomicBool::new(false)).collect(),
            value: g.nodes.iter().map(|_| AtomicU64::new(0)).collect(),
            elems: g
                .nodes
                .iter()
                .map(|n| match &n.kind {
                    Kind::For { range, .. } => range.clone().map(|_| AtomicU64::new(0)).collect(),
                    _ => Vec::new(),
                })
                .collect(),
            elem_runs: g
                .nodes
                .iter()
                .map(|n| match &n.kind {
                    Kind::For { range, .. } => range.clone().map(|_| AtomicU32::new(0)).collect(),
                    _ => Vec::new(),
                })
                .collect(),
            elems_done: g.nodes.iter().map(|_| AtomicUsize::new(0)).collect(),
            errors: Mutex::new(Vec::new()),
        }
    }

    fn error(&self, e: String) {
        self.errors.lock().unwrap().push(e);
    }

    fn finished(&self, d: usize) -> bool {
        match &self.nodes[d].kind {
            Kind::Single => self.done[d].load(SeqCst),
            Kind::For { range, .. } => self.elems_done[d].load(SeqCst) == range.len(),
            Kind::Combine => unreachable!("inputs never name a combine"),
        }
    }

    fn result(&self, d: usize) -> u64 {
        match &self.nodes[d].kind {
            Kind::Single => self.value[d].load(SeqCst),
            Kind::For { .. } => self.elems[d]
                .iter()
                .fold(0u64, |acc, e| acc.wrapping_add(e.load(SeqCst))),
            Kind::Combine => unreachable!("inputs never name a combine"),
        }
    }

    /// Called at the start of node `i` (or of each of its pieces): all
    /// inputs must have finished. Returns the node's input value.
    fn start(&self, i: usize, what: &str) -> u64 {
        let mut acc = i as u64;
        for &d in &self.nodes[i].inputs {
            if !self.finished(d) {
                self.error(format!(
                    "{what} of node {i} started before node {d} finished"
                ));
            }
            acc = mix(acc, self.result(d));
        }
        acc
    }

    fn run_single(&self, i: usize) {
        let input = self.start(i, "job");
        self.value[i].store(mix(input, 0xABCD), SeqCst);
        if self.runs[i].fetch_add(1, SeqCst) != 0 {
            self.error(format!("job {i} ran more than once"));
        }
        self.done[i].store(true, SeqCst);
    }

    fn run_index(&self, i: usize, k: usize) {
        let Kind::For { range, .. } = &self.nodes[i].kind else {
            unreachable!()
        };
        if !range.contains(&k) {
            self.error(format!("loop {i} got index {k} outside {range:?}"));
            return;
        }
        let input = self.start(i, "piece");
        let rel = k - range.start;
        self.elems[i][rel].store(mix(input, rel as u64 + 1), SeqCst);
        if self.elem_runs[i][rel].fetch_add(1, SeqCst) != 0 {
            self.error(format!("loop {i} ran index {k} more than once"));
        }
        self.elems_done[i].fetch_add(1, SeqCst);
    }

    fn run_chunk(&self, i: usize, r: Range<usize>) {
        let Kind::For { range, batch, .. } = &self.nodes[i].kind else {
            unreachable!()
        };
        if r.is_empty() || r.start < range.start || r.end > range.end {
            self.error(format!("loop {i} got chunk {r:?} outside {range:?}"));
            return;
        }
        // Chunks start on a piece boundary and end on one (or at the end).
        // Whether a chunk may span several pieces is checked in
        // parallel_for.rs; here only the graph semantics matter.
        if let Batch::Fixed(b) = *batch {
            let aligned = (r.start - range.start) % b == 0;
            let whole = r.len() % b == 0 || r.end == range.end;
            if !aligned || !whole {
                self.error(format!("loop {i} ({range:?}, {batch:?}): bad chunk {r:?}"));
            }
        }
        for k in r {
            self.run_index(i, k);
        }
    }
}

/// The values every node must end with: the graph run serially, in order.
struct Expected {
    value: Vec<u64>,
    elems: Vec<Vec<u64>>,
}

fn serial_replay(g: &Graph) -> Expected {
    let n = g.nodes.len();
    let mut value = vec![0u64; n];
    let mut elems: Vec<Vec<u64>> = vec![Vec::new(); n];
    for (i, node) in g.nodes.iter().enumerate() {
        let result = |d: usize, value: &[u64], elems: &[Vec<u64>]| match &g.nodes[d].kind {
            Kind::Single => value[d],
            Kind::For { .. } => elems[d].iter().fold(0u64, |a, e| a.wrapping_add(*e)),
            Kind::Combine => unreachable!(),
        };
        let mut input = i as u64;
        for &d in &node.inputs {
            input = mix(input, result(d, &value, &elems));
        }
        match &node.kind {
            Kind::Single => value[i] = mix(input, 0xABCD),
            Kind::For { range, .. } => {
                elems[i] = (0..range.len()).map(|k| mix(input, k as u64 + 1)).collect()
            }
            Kind::Combine => {}
        }
    }
    Expected { value, elems }
}

fn schedule_graph(js: &JobSystem, g: &Graph, rec: &Arc<Record>) -> Vec<JobHandle> {
    let mut handles: Vec<JobHandle> = Vec::with_capacity(g.nodes.len());
    for (i, node) in g.nodes.iter().enumerate() {
        let deps: Vec<JobHandle> = node.deps.iter().map(|&d| handles[d]).collect();
        let r = rec.clone();
        let h = match &node.kind {
            Kind::Single => {
                if deps.is_empty() {
                    js.schedule(move || r.run_single(i))
                } else {
                    js.schedule_after(&deps, move || r.run_single(i))
                }
            }
            Kind::For {
                range,
                batch,
                chunked: false,
            } => {
                if deps.is_empty() {
                    js.parallel_for(range.clone(), *batch, move |k| r.run_index(i, k))
                } else {
                    js.job()
                        .after(&deps)
                        .parallel_for(range.clone(), *batch, move |k| r.run_index(i, k))
                }
            }
            Kind::For {
                range,
                batch,
                chunked: true,
            } => {
                if deps.is_empty() {
                    js.job()
                        .parallel_for_chunked(range.clone(), *batch, move |c| r.run_chunk(i, c))
                } else {
                    js.job()
                        .after(&deps)
                        .parallel_for_chunked(range.clone(), *batch, move |c| r.run_chunk(i, c))
                }
            }
            Kind::Combine => js.combine(&deps),
        };
        handles.push(h);
    }
    handles
}

fn check(g: &Graph, rec: &Record, exp: &Expected, label: &str) {
    let errors = rec.errors.lock().unwrap();
    assert!(errors.is_empty(), "{label}: {errors:#?}");
    for (i, node) in g.nodes.iter().enumerate() {
        match &node.kind {
            Kind::Single => {
                assert_eq!(rec.runs[i].load(SeqCst), 1, "{label}: job {i} run count");
                assert_eq!(
                    rec.value[i].load(SeqCst),
                    exp.value[i],
                    "{label}: job {i} value"
                );
            }
            Kind::For { range, .. } => {
                for k in 0..range.len() {
                    assert_eq!(
                        rec.elem_runs[i][k].load(SeqCst),
                        1,
                        "{label}: loop {i} index {} run count",
                        range.start + k
                    );
                    assert_eq!(
                        rec.elems[i][k].load(SeqCst),
                        exp.elems[i][k],
                        "{label}: loop {i} index {} value",
                        range.start + k
                    );
                }
            }
            Kind::Combine => {}
        }
    }
}

/// How a graph is waited for.
#[derive(Clone, Copy, Debug)]
enum Finish {
    /// `complete(combine(all))`.
    CombineAll,
    /// `try_complete` on every handle, in random order.
    EachInRandomOrder,
    /// Only the nodes nothing depends on, then every handle must read complete.
    SinksOnly,
    /// No waiting at all: drop a system of its own (shutdown runs everything).
    DropSystem,
}

fn run_graphs(workers: usize, graphs: usize, seed: u64) {
    let mut rng = Rng::new(seed);
    let shared = JobSystem::builder().workers(workers).build().unwrap();
    for gi in 0..graphs {
        let g = gen_graph(&mut rng, 60);
        let exp = serial_replay(&g);
        let rec = Arc::new(Record::new(&g));
        let finish = match rng.below(4) {
            0 => Finish::CombineAll,
            1 => Finish::EachInRandomOrder,
            2 => Finish::SinksOnly,
            _ => Finish::DropSystem,
        };
        let label = format!("workers {workers}, seed {seed}, graph {gi}, {finish:?}");
        match finish {
            Finish::CombineAll => {
                let hs = schedule_graph(&shared, &g, &rec);
                let all = shared.combine(&hs);
                shared.complete(all);
                assert!(hs.iter().all(|&h| shared.is_complete(h)), "{label}");
            }
            Finish::EachInRandomOrder => {
                let hs = schedule_graph(&shared, &g, &rec);
                let mut order: Vec<usize> = (0..hs.len()).collect();
                for k in (1..order.len()).rev() {
                    order.swap(k, rng.below(k + 1));
                }
                for i in order {
                    shared.try_complete(hs[i]).unwrap();
                    assert!(shared.is_complete(hs[i]), "{label}: node {i}");
                }
            }
            Finish::SinksOnly => {
                let hs = schedule_graph(&shared, &g, &rec);
                let mut has_dependent = vec![false; hs.len()];
                for n in &g.nodes {
                    for &d in &n.deps {
                        has_dependent[d] = true;
                    }
                }
                for (i, &h) in hs.iter().enumerate() {
                    if !has_dependent[i] {
                        shared.complete(h);
                    }
                }
                // Every node is needed by some sink, so all of them have
                // run; their handles must report success. (Whether
                // `is_complete` already reads true for a dependency at this
                // point is checked in handles.rs.)
                for (i, &h) in hs.iter().enumerate() {
                    assert!(shared.try_complete(h).is_ok(), "{label}: node {i}");
                }
            }
            Finish::DropSystem => {
                let own = JobSystem::builder().workers(workers).build().unwrap();
                let _ = schedule_graph(&own, &g, &rec);
                drop(own);
            }
        }
        check(&g, &rec, &exp, &label);
    }
    let st = shared.stats();
    assert_eq!(st.workers, workers);
}

#[test]
fn random_graphs_run_each_job_once_after_its_dependencies_workers_0() {
    watchdog(120, || run_graphs(0, 400, 0x5EED_0000));
}

#[test]
fn random_graphs_run_each_job_once_after_its_dependencies_workers_1() {
    watchdog(120, || run_graphs(1, 400, 0x5EED_0001));
}

#[test]
fn random_graphs_run_each_job_once_after_its_dependencies_workers_3() {
    watchdog(120, || run_graphs(3, 400, 0x5EED_0003));
}

#[test]
fn random_graphs_run_each_job_once_after_its_dependencies_workers_5() {
    watchdog(120, || run_graphs(5, 400, 0x5EED_0005));
}

/// The serial replay itself is the reference; make sure it is not vacuous:
/// different graphs give different values, and loops have indices.
#[test]
fn serial_replay_is_not_trivial() {
    let mut rng = Rng::new(7);
    let mut loops = 0;
    let mut with_deps = 0;
    for _ in 0..100 {
        let g = gen_graph(&mut rng, 60);
        let exp = serial_replay(&g);
        for (i, n) in g.nodes.iter().enumerate() {
            if let Kind::For { range, .. } = &n.kind {
                loops += usize::from(!range.is_empty());
                assert_eq!(exp.elems[i].len(), range.len());
            }
            with_deps += usize::from(!n.deps.is_empty());
        }
    }
    assert!(loops > 100 && with_deps > 1000, "{loops} {with_deps}");
}

/// Several threads build graphs into one system at once (each thread its
/// own graphs), so releases and helping cross threads.
#[test]
fn random_graphs_from_several_threads_into_one_system() {
    watchdog(120, || {
        let js = JobSystem::builder().workers(2).build().unwrap();
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let js = &js;
                s.spawn(move || {
                    let mut rng = Rng::new(0xC0FFEE + t);
                    for gi in 0..30 {
                        let g = gen_graph(&mut rng, 40);
                        let exp = serial_replay(&g);
                        let rec = Arc::new(Record::new(&g));
                        let hs = schedule_graph(js, &g, &rec);
                        let all = js.combine(&hs);
                        js.complete(all);
                        check(&g, &rec, &exp, &format!("thread {t} graph {gi}"));
                    }
                });
            }
        });
    });
}

/// Large graphs with no workers: the calling thread must find and run all
/// of the graph while it waits, however wide or deep the graph is.
fn wide_combine(workers: usize) {
    let js = JobSystem::builder().workers(workers).build().unwrap();
    let n = Arc::new(AtomicUsize::new(0));
    let hs: Vec<JobHandle> = (0..5000)
        .map(|_| {
            let n = n.clone();
            js.schedule(move || {
                n.fetch_add(1, SeqCst);
            })
        })
        .collect();
    let all = js.combine(&hs);
    js.complete(all);
    assert_eq!(n.load(SeqCst), 5000);
}

fn long_chain(workers: usize) {
    let js = JobSystem::builder().workers(workers).build().unwrap();
    let n = Arc::new(AtomicUsize::new(0));
    let step = |expect: usize| {
        let n = n.clone();
        move || {
            assert_eq!(n.fetch_add(1, SeqCst), expect, "chain ran out of order");
        }
    };
    let mut h = js.schedule(step(0));
    for k in 1..5000 {
        h = js.schedule_after(&[h], step(k));
    }
    js.complete(h);
    assert_eq!(n.load(SeqCst), 5000);
}

#[test]
fn wide_combine_of_5000_jobs_completes_with_workers() {
    watchdog(60, || wide_combine(2));
}

#[test]
fn long_chain_of_5000_jobs_completes_with_workers() {
    watchdog(60, || long_chain(2));
}

#[test]
fn wide_combine_of_5000_jobs_completes_with_no_workers() {
    watchdog(20, || wide_combine(0));
}

#[test]
fn long_chain_of_5000_jobs_completes_with_no_workers() {
    watchdog(20, || long_chain(0));
}
