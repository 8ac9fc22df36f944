//! `jobsys::Graph` (issue 33, first version): every node once per run in
//! dependency order, edges from declared access and build errors, runs in
//! flight (order across runs, the bound), failures and cancelling, the
//! critical-path arithmetic on a hand-made DAG, and no allocation per run
//! after the first (a counting allocator, as in `alloc_free.rs`).

mod common;

use jobsys::{Batch, Graph, GraphError, JobError, JobSystem, NodeId, Priority, Resource};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

// ---- counting allocator (this thread's allocations, when switched on) ----

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

fn note() {
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
        }
    });
}

// SAFETY: forwards every call to `System` unchanged; the counting touches
// only const-initialised thread-locals without destructors.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn allocations<R>(f: impl FnOnce() -> R) -> (R, u64) {
    COUNT.with(|c| c.set(0));
    COUNTING.with(|on| on.set(true));
    let r = f();
    COUNTING.with(|on| on.set(false));
    (r, COUNT.with(|c| c.get()))
}

/// Busy for at least `d` (a node's measured duration is then at least `d`).
fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {}
}

fn system(workers: usize) -> JobSystem {
    JobSystem::builder()
        .workers(workers)
        .follow_cpus(false)
        .build()
        .expect("build")
}

/// A graph whose node `i` runs after each `edges` pair `(p, i)`; every
/// call counts per node, and checks that each dependency has been called
/// at least as often as the node is now (its call of this run came first).
struct Counted {
    graph: Graph,
    ids: Vec<NodeId>,
    calls: Arc<Vec<AtomicUsize>>,
    bad_order: Arc<AtomicBool>,
}

fn counted(n: usize, edges: &[(usize, usize)], in_flight: usize) -> Counted {
    let calls: Arc<Vec<AtomicUsize>> = Arc::new((0..n).map(|_| AtomicUsize::new(0)).collect());
    let bad_order = Arc::new(AtomicBool::new(false));
    let mut b = Graph::builder();
    b.max_in_flight(in_flight);
    let mut ids = Vec::new();
    for i in 0..n {
        let preds: Vec<usize> = edges.iter().filter(|e| e.1 == i).map(|e| e.0).collect();
        let after: Vec<NodeId> = preds.iter().map(|&p| ids[p]).collect();
        let (c, bad) = (calls.clone(), bad_order.clone());
        let id = b.node().after(&after).call(move || {
            let mine = c[i].load(Ordering::SeqCst) + 1;
            if preds.iter().any(|&p| c[p].load(Ordering::SeqCst) < mine) {
                bad.store(true, Ordering::SeqCst);
            }
            c[i].fetch_add(1, Ordering::SeqCst);
        });
        ids.push(id);
    }
    Counted {
        graph: b.build().expect("acyclic"),
        ids,
        calls,
        bad_order,
    }
}

const EDGES: [(usize, usize); 9] = [
    (0, 1),
    (0, 2),
    (1, 3),
    (2, 3),
    (3, 4),
    (2, 5),
    (5, 6),
    (4, 7),
    (6, 7),
];

fn every_node_once_in_order(workers: usize, in_flight: usize, overlap: bool) {
    let js = system(workers);
    let c = counted(8, &EDGES, in_flight);
    // Fewer under Miri (an interpreter: about 1000x slower).
    let runs = if cfg!(miri) { 6 } else { 40 };
    let mut last = None;
    for _ in 0..runs {
        let h = c.graph.run(&js);
        if !overlap {
            js.complete(h);
        }
        last = Some(h);
    }
    js.complete(last.unwrap());
    // Runs older than the last completed before it (each waited for the
    // run before it through the overlap edges).
    for (i, n) in c.calls.iter().enumerate() {
        assert_eq!(n.load(Ordering::SeqCst), runs, "node {i}");
    }
    assert!(
        !c.bad_order.load(Ordering::SeqCst),
        "a node ran before a dependency's call of its run"
    );
    assert_eq!(c.graph.runs(), runs as u64);
}

#[test]
fn every_node_runs_once_per_run_after_its_dependencies() {
    common::watchdog(60, || {
        every_node_once_in_order(0, 1, false);
        every_node_once_in_order(2, 1, false);
    });
}

#[test]
fn overlapping_runs_keep_each_runs_order() {
    common::watchdog(60, || {
        every_node_once_in_order(2, 2, true);
        every_node_once_in_order(2, 3, true);
        every_node_once_in_order(0, 2, true);
    });
}

/// Node n of run k + 1 waits for node n of run k: with no workers,
/// waiting for the latest run's source runs the previous run's first.
#[test]
fn node_of_the_next_run_waits_for_its_previous_run() {
    common::watchdog(60, || {
        let js = system(0);
        let c = counted(2, &[(0, 1)], 2);
        let r1 = c.graph.run(&js);
        let r2 = c.graph.run(&js);
        assert_eq!(c.calls[0].load(Ordering::SeqCst), 0);
        c.graph.sync(&js, c.ids[0]).unwrap();
        // Both runs' source ran (run 1's first: the overlap edge), and no
        // node of either run that nobody needed.
        assert_eq!(c.calls[0].load(Ordering::SeqCst), 2);
        assert_eq!(c.calls[1].load(Ordering::SeqCst), 0);
        assert!(!js.is_complete(r1) && !js.is_complete(r2));
        js.complete(r2);
        // Run 1's nodes all ran (its node 1 before run 2's).
        assert_eq!(c.calls[1].load(Ordering::SeqCst), 2);
        js.complete(r1);
        assert!(!c.bad_order.load(Ordering::SeqCst));
    });
}

/// At most `max_in_flight` runs: starting one more completes the oldest
/// first (and only it: with no workers nothing else runs).
#[test]
fn runs_in_flight_never_exceed_the_bound() {
    common::watchdog(60, || {
        for bound in [1usize, 2, 3] {
            let js = system(0);
            let c = counted(3, &[(0, 1), (1, 2)], bound);
            assert_eq!(c.graph.max_in_flight(), bound);
            let mut handles = Vec::new();
            for k in 0..6 {
                handles.push(c.graph.run(&js));
                let in_flight = handles.iter().filter(|h| !js.is_complete(**h)).count();
                assert_eq!(in_flight, (k + 1).min(bound), "bound {bound}, run {k}");
                // The completed ones are exactly the oldest.
                for (j, h) in handles.iter().enumerate() {
                    assert_eq!(
                        js.is_complete(*h),
                        j + bound <= k,
                        "bound {bound}, run {k}, {j}"
                    );
                }
            }
            js.complete(*handles.last().unwrap());
            assert_eq!(c.calls[2].load(Ordering::SeqCst), 6);
        }
    });
}

#[test]
fn declared_access_becomes_edges_in_insertion_order() {
    let a = Resource::named("a", 0u32);
    let b = Resource::named("b", 0u32);
    let mut g = Graph::builder();
    let w1 = g.node().name("w1").access(a.write()).call(|x| *x += 1);
    let r1 = g.node().name("r1").access(a.read()).call(|_| {});
    let r2 = g
        .node()
        .name("r2")
        .access((a.read(), b.read()))
        .call(|_| {});
    let w2 = g
        .node()
        .name("w2")
        .access((a.write(), b.write()))
        .call(|(x, y)| *y = *x);
    let free = g.node().name("free").call(|| {});
    let graph = g.build().unwrap();
    let deps = |n| {
        let mut d: Vec<NodeId> = graph.dependencies(n).collect();
        d.sort();
        d
    };
    assert_eq!(deps(w1), vec![]);
    assert_eq!(deps(r1), vec![w1]);
    assert_eq!(deps(r2), vec![w1]);
    assert_eq!(deps(w2), vec![w1, r1, r2]);
    assert_eq!(deps(free), vec![]);
    // And the references are right at run time, run after run.
    let js = system(2);
    for k in 1..=5u32 {
        js.complete(graph.run(&js));
        assert_eq!(*a.read_now(&js), k);
        assert_eq!(*b.read_now(&js), k);
    }
}

#[test]
fn a_cycle_is_a_build_error() {
    // Through an edge against a derived one.
    let r = Resource::new(0u8);
    let mut g = Graph::builder();
    let w = g.node().access(r.write()).call(|_| {});
    let rd = g.node().access(r.read()).call(|_| {});
    g.edge(rd, w);
    match g.build() {
        Err(GraphError::Cycle(nodes)) => assert_eq!(nodes, vec![w, rd]),
        other => panic!("{other:?}"),
    }
    // Through explicit edges only, with a node after the cycle.
    let mut g = Graph::builder();
    let a = g.node().call(|| {});
    let b = g.node().after(&[a]).call(|| {});
    let c = g.node().after(&[b]).call(|| {});
    let _ok = g.node().call(|| {});
    g.edge(c, a);
    let err = g.build().unwrap_err();
    assert_eq!(err, GraphError::Cycle(vec![a, b, c]));
    assert!(err.to_string().contains("cycle"), "{err}");
    // A node after itself.
    let mut g = Graph::builder();
    let a = g.node().call(|| {});
    g.edge(a, a);
    assert!(matches!(g.build(), Err(GraphError::Cycle(_))));
}

#[test]
fn conflicting_declarations_are_build_errors_and_foreign_nodes_panic() {
    let r = Resource::named("r", 0u8);
    let mut g = Graph::builder();
    let n = g.node().access((r.read(), r.write())).call(|_| {});
    match g.build() {
        Err(GraphError::Access { node, message }) => {
            assert_eq!(node, n);
            assert!(message.contains("\"r\""), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let mut other = Graph::builder();
    let _ = other.node().call(|| {});
    let far = other.node().call(|| {});
    let mut g = Graph::builder();
    let a = g.node().call(|| {});
    // `far` has index 1, which `g` will have too: refused all the same.
    let b = g.node().call(|| {});
    assert_eq!(b.index(), far.index());
    let msg = common::expect_panic(|| {
        g.edge(a, far);
    });
    assert!(msg.contains("belongs to another graph"), "{msg}");
    let msg = common::expect_panic(|| g.node().after(&[far]).call(|| {}));
    assert!(msg.contains("belongs to another graph"), "{msg}");
    let graph = g.build().unwrap();
    let other = other.build().unwrap();
    let js = system(0);
    for m in [
        common::expect_panic(|| graph.handle(far)),
        common::expect_panic(|| graph.name(far)),
        common::expect_panic(|| graph.planned_priority(far)),
        common::expect_panic(|| graph.sync(&js, far)),
    ] {
        assert!(m.contains("belongs to another graph"), "{m}");
    }
    assert!(other.handle(far).is_none(), "its own graph takes it");
}

#[test]
fn a_panicking_node_fails_its_dependents_and_the_run_and_the_next_run_is_clean() {
    common::watchdog(60, || {
        let js = system(2);
        let calls: Arc<Vec<AtomicUsize>> = Arc::new((0..4).map(|_| AtomicUsize::new(0)).collect());
        let mut g = Graph::builder();
        let c = calls.clone();
        let a = g.node().name("a").call(move || {
            c[0].fetch_add(1, Ordering::SeqCst);
        });
        let c = calls.clone();
        let bad = g.node().name("bad").after(&[a]).call(move || {
            if c[1].fetch_add(1, Ordering::SeqCst) == 0 {
                panic!("boom in run 1");
            }
        });
        let c = calls.clone();
        let after = g.node().name("after").after(&[bad]).call(move || {
            c[2].fetch_add(1, Ordering::SeqCst);
        });
        let c = calls.clone();
        let _free = g.node().name("free").call(move || {
            c[3].fetch_add(1, Ordering::SeqCst);
        });
        let graph = g.build().unwrap();
        let run1 = graph.run(&js);
        match js.try_complete(run1) {
            Err(JobError::Panicked(p)) => {
                assert!(p.message().contains("boom in run 1"), "{p:?}");
                assert_eq!(p.job_name(), Some("bad"));
            }
            other => panic!("{other:?}"),
        }
        assert!(graph.sync(&js, after).is_err());
        assert!(graph.sync(&js, a).is_ok());
        let got: Vec<usize> = calls.iter().map(|c| c.load(Ordering::SeqCst)).collect();
        assert_eq!(got, vec![1, 1, 0, 1]);
        let run2 = graph.run(&js);
        assert!(js.try_complete(run2).is_ok());
        let got: Vec<usize> = calls.iter().map(|c| c.load(Ordering::SeqCst)).collect();
        assert_eq!(got, vec![2, 2, 1, 2]);
        // A failed run's report counts the nodes that did not run as 0.
        assert!(graph.report(&js).is_some());
    });
}

#[test]
fn cancelling_a_run_stops_its_nodes_and_the_next_run_is_clean() {
    common::watchdog(60, || {
        let js = system(0);
        let c = counted(4, &[(0, 1), (1, 2), (0, 3)], 2);
        let run1 = c.graph.run(&js);
        assert!(js.cancel(run1));
        assert!(matches!(js.try_complete(run1), Err(JobError::Cancelled(_))));
        assert!(c.calls.iter().all(|n| n.load(Ordering::SeqCst) == 0));
        let run2 = c.graph.run(&js);
        js.complete(run2);
        assert!(c.calls.iter().all(|n| n.load(Ordering::SeqCst) == 1));
    });
}

/// Run 1 is started while run 0's `a` is still running, and then `a`
/// panics in run 0: run 0 fails, run 1 (after run 0's `a` through the
/// overlap edge) runs clean, every node once.
fn a_failure_in_flight_stays_in_its_run(workers: usize) {
    let js = system(workers);
    let gate = Arc::new(common::Gate::default());
    let calls: Arc<Vec<AtomicUsize>> = Arc::new((0..2).map(|_| AtomicUsize::new(0)).collect());
    let mut b = Graph::builder();
    b.max_in_flight(2);
    let (c, g) = (calls.clone(), gate.clone());
    let a = b.node().name("a").call(move || {
        if c[0].fetch_add(1, Ordering::SeqCst) == 0 {
            g.wait();
            panic!("a fails in run 0");
        }
    });
    let c = calls.clone();
    let after_a = b.node().name("after a").after(&[a]).call(move || {
        c[1].fetch_add(1, Ordering::SeqCst);
    });
    let graph = b.build().unwrap();
    let run0 = graph.run(&js);
    let run1 = graph.run(&js);
    assert!(!js.is_complete(run0), "run 0's `a` waits for the gate");
    gate.open();
    // Waiting on run 1 first: at 0 workers it runs run 0's `a` through
    // the overlap edge.
    if let Err(e) = js.try_complete(run1) {
        panic!("{workers} workers: run 1 did not start clean: {e:?}");
    }
    assert!(graph.sync(&js, after_a).is_ok());
    match js.try_complete(run0) {
        Err(JobError::Panicked(p)) => assert_eq!(p.job_name(), Some("a")),
        other => panic!("run 0: {other:?}"),
    }
    let got: Vec<usize> = calls.iter().map(|c| c.load(Ordering::SeqCst)).collect();
    assert_eq!(got, vec![2, 1], "`a` in both runs, `after a` only in run 1");
}

#[test]
fn a_failure_in_a_run_in_flight_does_not_reach_the_next_run() {
    common::watchdog(60, || {
        a_failure_in_flight_stays_in_its_run(0);
        a_failure_in_flight_stays_in_its_run(1);
        a_failure_in_flight_stays_in_its_run(2);
    });
}

#[test]
fn cancelling_a_run_in_flight_does_not_cancel_the_next_run() {
    common::watchdog(60, || {
        for workers in [0, 1] {
            let js = system(workers);
            let gate = Arc::new(common::Gate::default());
            let g = gate.clone();
            let blocker = js.schedule(move || g.wait());
            let c = counted(4, &[(0, 1), (1, 2), (0, 3)], 2);
            // The only worker (if any) is held by `blocker`, scheduled
            // first, so the cancel finds run 0 unstarted; run 1 is after
            // run 0 node by node.
            let run0 = c.graph.run(&js);
            let run1 = c.graph.run(&js);
            assert!(js.cancel(run0));
            gate.open();
            js.complete(blocker);
            assert!(matches!(js.try_complete(run0), Err(JobError::Cancelled(_))));
            if let Err(e) = js.try_complete(run1) {
                panic!("{workers} workers: run 1 did not start clean: {e:?}");
            }
            assert!(c.calls.iter().all(|n| n.load(Ordering::SeqCst) == 1));
            assert!(!c.bad_order.load(Ordering::SeqCst));
        }
    });
}

#[test]
fn the_whole_run_handle_is_a_dependency() {
    common::watchdog(60, || {
        let js = system(1);
        let c = counted(3, &[(0, 1), (0, 2)], 2);
        let run = c.graph.run(&js);
        let calls = c.calls.clone();
        let seen = js.schedule_after(&[run], move || {
            assert!(calls.iter().all(|n| n.load(Ordering::SeqCst) == 1));
        });
        js.complete(seen);
    });
}

#[test]
fn loop_nodes_and_pinned_nodes() {
    common::watchdog(60, || {
        let js = system(2);
        let sum = Arc::new(AtomicUsize::new(0));
        let main = std::thread::current().id();
        let on_main = Arc::new(AtomicUsize::new(0));
        let mut g = Graph::builder();
        let s = sum.clone();
        let l = g
            .node()
            .name("loop")
            .parallel_for(0..1000, Batch::Fixed(7), move |i| {
                s.fetch_add(i, Ordering::Relaxed);
            });
        let m = on_main.clone();
        g.node()
            .name("main only")
            .pin(jobsys::Pin::Main)
            .after(&[l])
            .call(move || {
                assert_eq!(std::thread::current().id(), main);
                m.fetch_add(1, Ordering::SeqCst);
            });
        let graph = g.build().unwrap();
        for _ in 0..5 {
            js.complete(graph.run(&js));
        }
        assert_eq!(sum.load(Ordering::Relaxed), 5 * 499_500);
        assert_eq!(on_main.load(Ordering::SeqCst), 5);
    });
}

/// The arithmetic, on durations made up for the test (no timing):
/// a(1) -> b(5) -> d(1), a -> c(2) -> d, e(3) alone.
#[test]
fn critical_path_slack_and_what_if_on_a_hand_made_dag() {
    let mut g = Graph::builder();
    let a = g.node().name("a").call(|| {});
    let b = g.node().name("b").after(&[a]).call(|| {});
    let c = g.node().name("c").after(&[a]).call(|| {});
    let d = g.node().name("d").after(&[b, c]).call(|| {});
    let e = g.node().name("e").call(|| {});
    let graph = g.build().unwrap();
    let ms = Duration::from_millis;
    let r = graph.analyze(&[ms(1), ms(5), ms(2), ms(1), ms(3)]);
    assert_eq!(r.frame(), ms(7));
    assert_eq!(r.critical_path(), &[a, b, d]);
    assert_eq!(r.duration(b), ms(5));
    assert_eq!(r.name(b), Some("b"));
    for n in [a, b, d] {
        assert_eq!(r.slack(n), Duration::ZERO);
    }
    assert_eq!(r.slack(c), ms(3));
    assert_eq!(r.slack(e), ms(4));
    // b 50 % faster: a-b-d is 4.5 ms, a-c-d 4 ms.
    assert_eq!(r.what_if(b, 0.5), Duration::from_micros(4500));
    // b 90 % faster: a-c-d (4 ms) is critical now.
    assert_eq!(r.what_if(b, 0.1), ms(4));
    // c three times as long: a-c-d is 8 ms.
    assert_eq!(r.what_if(c, 3.0), ms(8));
    // Off the critical path and within its slack: no change.
    assert_eq!(r.what_if(e, 2.0), ms(7));
    assert_eq!(r.what_if(e, 3.0), ms(9));
    let text = r.to_string();
    assert!(text.contains("b") && text.contains("slack"), "{text}");
}

/// Before any run each node counts as one, so the longest path in nodes
/// (four trivial ones) is planned `High`. Measured: a node that spins for
/// 20 ms is on the critical path, and the next run gives it `High`, and so
/// the nodes after it, a `Low` one included, but for the one that keeps
/// its priority; the trivial ones go back to `Normal`. (Timing only as a lower bound: the spin lasts at least
/// 20 ms; a trivial node would have to be preempted for longer than that
/// between its two clock reads to take its place.)
#[test]
fn measured_critical_path_gets_high_priority() {
    common::watchdog(60, || {
        let js = system(1);
        let mut g = Graph::builder();
        let a = g.node().name("a").call(|| {});
        let slow = g
            .node()
            .name("slow")
            .after(&[a])
            .call(|| spin(Duration::from_millis(20)));
        let quick = g.node().name("quick").after(&[a]).call(|| {});
        let q2 = g.node().after(&[quick]).call(|| {});
        let q3 = g.node().after(&[q2]).call(|| {});
        g.node().after(&[q3]).call(|| {});
        let own = g
            .node()
            .name("own")
            .priority(Priority::Low)
            .after(&[slow])
            .call(|| {});
        let kept = g
            .node()
            .name("kept")
            .priority(Priority::Low)
            .keep_priority()
            .after(&[own])
            .call(|| {});
        let graph = g.build().unwrap();
        assert!(graph.report(&js).is_none());
        assert_eq!(graph.planned_priority(quick), Priority::High);
        assert_eq!(graph.planned_priority(slow), Priority::Normal);
        js.complete(graph.run(&js));
        let r = graph.report(&js).expect("a finished run");
        assert_eq!(r.critical_path(), &[a, slow, own, kept]);
        assert!(r.duration(slow) >= Duration::from_millis(20));
        assert!(r.slack(quick) > Duration::ZERO);
        graph.run(&js); // harvests the first run: priorities planned from it
        assert_eq!(graph.planned_priority(slow), Priority::High);
        assert_eq!(graph.planned_priority(a), Priority::High);
        assert_eq!(graph.planned_priority(quick), Priority::Normal);
        assert_eq!(graph.planned_priority(own), Priority::High);
        assert_eq!(graph.planned_priority(kept), Priority::Low);
        js.complete(graph.handle(kept).unwrap());
    });
}

/// The order one thread runs a frame in: a chain of 10 `Low` nodes on the
/// measured critical path, added after a chain of 11 trivial `Normal`
/// nodes beside it (so that neither the build's order, nor the nodes' own
/// priorities, nor the count of nodes on a path put the chain first).
/// With no worker the frame's thread runs everything, one node at
/// a time, the higher priority first. (Beside `High` nodes, a raised
/// chain ties with them: which runs first is the queues' order, not the
/// feedback's; `jobsys-bench critical-chain` times that case.) Each chain
/// node spins at least 1 ms; a trivial node would have to be preempted
/// for 10 ms between its two clock reads to take the chain's place as the
/// critical path.
fn chain_position_per_run(keep: bool) -> Vec<Vec<&'static str>> {
    let js = system(0);
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut g = Graph::builder();
    let mut prev: Option<NodeId> = None;
    for _ in 0..11 {
        let o = order.clone();
        let mut n = g.node().priority(Priority::Normal);
        if let Some(p) = prev {
            n = n.after(&[p]);
        }
        prev = Some(n.call(move || o.lock().unwrap().push("beside")));
    }
    let mut prev: Option<NodeId> = None;
    for _ in 0..10 {
        let o = order.clone();
        let mut n = g.node().name("chain").priority(Priority::Low);
        if keep {
            n = n.keep_priority();
        }
        if let Some(p) = prev {
            n = n.after(&[p]);
        }
        prev = Some(n.call(move || {
            spin(Duration::from_millis(1));
            o.lock().unwrap().push("chain");
        }));
    }
    let graph = g.build().unwrap();
    (0..3)
        .map(|_| {
            js.complete(graph.run(&js));
            std::mem::take(&mut *order.lock().unwrap())
        })
        .collect()
}

/// The feedback raises a `Low` chain that holds the frame back: from the
/// second run on (planned from the first's measurements) the whole chain
/// runs before the work beside it; the first run, with nothing measured,
/// and a chain that keeps its priority, run it last.
#[test]
fn a_low_critical_chain_runs_first_once_measured() {
    common::watchdog(60, || {
        let chain_first: Vec<&str> = [&["chain"; 10][..], &["beside"; 11]].concat();
        let chain_last: Vec<&str> = [&["beside"; 11][..], &["chain"; 10]].concat();
        let runs = chain_position_per_run(false);
        assert_eq!(runs[0], chain_last, "the first run has no measurement");
        assert_eq!(runs[1], chain_first);
        assert_eq!(runs[2], chain_first);
        for run in chain_position_per_run(true) {
            assert_eq!(run, chain_last, "a chain that keeps its priority");
        }
    });
}

/// After the first runs (one per ring entry), `run` allocates nothing on
/// the calling thread: single, loop, access and pinned nodes, runs in
/// flight, the wait for the oldest run included.
fn no_allocation_per_run(workers: usize, in_flight: usize) {
    let js = system(workers);
    let res = Resource::new(vec![0u64; 4]);
    let mut g = Graph::builder();
    g.max_in_flight(in_flight);
    let a = g.node().name("a").call(|| {});
    let l = g
        .node()
        .name("l")
        .after(&[a])
        .parallel_for(0..256, Batch::Auto, |_| {});
    let w = g
        .node()
        .name("w")
        .after(&[a])
        .access(res.write())
        .call(|v| v[0] += 1);
    let r = g
        .node()
        .name("r")
        .access(res.read())
        .call(|v| assert!(v[0] > 0));
    let p = g
        .node()
        .name("p")
        .pin(jobsys::Pin::Main)
        .after(&[l])
        .call(|| {});
    let _end = g.node().name("end").after(&[p, r, w, l]).call(|| {});
    let graph = g.build().unwrap();
    // The counter counts: the first run allocates (job names interned,
    // storage and deques grown, ...).
    let (first, n) = allocations(|| graph.run(&js));
    assert!(n > 0, "the counting allocator counted nothing");
    let mut last = Some(first);
    for _ in 0..8 {
        last = Some(graph.run(&js));
    }
    js.complete(last.unwrap());
    let counts: Vec<u64> = (0..16)
        .map(|_| {
            let (h, n) = allocations(|| graph.run(&js));
            last = Some(h);
            n
        })
        .collect();
    js.complete(last.unwrap());
    assert!(
        counts.iter().all(|&n| n == 0),
        "{workers} workers, {in_flight} in flight: allocations per run: {counts:?}"
    );
}

/// Wide: 40 nodes between a source and a sink that waits for all of them
/// (`after` with 40 dependencies, a `combine` of 42).
fn no_allocation_per_run_wide(workers: usize) {
    let js = system(workers);
    let mut g = Graph::builder();
    let src = g.node().name("src").call(|| {});
    let mid: Vec<NodeId> = (0..40)
        .map(|_| g.node().after(&[src]).call(|| {}))
        .collect();
    g.node().name("sink").after(&mid).call(|| {});
    let graph = g.build().unwrap();
    for _ in 0..8 {
        js.complete(graph.run(&js));
    }
    let counts: Vec<u64> = (0..16)
        .map(|_| {
            let (h, n) = allocations(|| graph.run(&js));
            js.complete(h);
            n
        })
        .collect();
    assert!(
        counts.iter().all(|&n| n == 0),
        "wide, {workers} workers: allocations per run: {counts:?}"
    );
}

#[test]
fn a_run_after_the_first_allocates_nothing() {
    common::watchdog(120, || {
        no_allocation_per_run(0, 1);
        no_allocation_per_run(0, 2);
        no_allocation_per_run(1, 2);
        // 40-wide: minutes under Miri, which the cases above cover.
        if !cfg!(miri) {
            no_allocation_per_run_wide(0);
            no_allocation_per_run_wide(1);
        }
    });
}

#[test]
fn an_empty_graph_runs_and_a_graph_is_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Graph>();
    send_sync::<jobsys::GraphReport>();
    let js = system(0);
    let graph = Graph::builder().build().unwrap();
    assert!(graph.is_empty());
    for _ in 0..3 {
        js.complete(graph.run(&js));
    }
    let r = graph.report(&js).unwrap();
    assert_eq!(r.frame(), Duration::ZERO);
    assert!(r.critical_path().is_empty());
}

#[test]
fn a_chunked_loop_node_covers_its_range_once_per_run_in_whole_pieces() {
    for workers in [0, 2] {
        let js = system(workers);
        let covered: Arc<Vec<AtomicUsize>> =
            Arc::new((0..1000).map(|_| AtomicUsize::new(0)).collect());
        let pieces = Arc::new(AtomicUsize::new(0));
        let mut b = Graph::builder();
        let (c, p) = (covered.clone(), pieces.clone());
        let first = b.node().call(|| {});
        b.node()
            .after(&[first])
            .parallel_for_chunked(0..1000, Batch::Fixed(100), move |r| {
                assert_eq!(r.len(), 100, "Batch::Fixed(100) pieces of a 1000 range");
                p.fetch_add(1, Ordering::Relaxed);
                for i in r {
                    c[i].fetch_add(1, Ordering::Relaxed);
                }
            });
        let g = b.build().unwrap();
        for run in 1..=3 {
            js.complete(g.run(&js));
            assert!(covered.iter().all(|n| n.load(Ordering::Relaxed) == run));
            assert_eq!(pieces.load(Ordering::Relaxed), 10 * run);
        }
    }
}

#[test]
fn access_loop_nodes_write_each_element_once_per_run_before_their_readers() {
    for workers in [0, 2] {
        let js = system(workers);
        let n = 1000;
        let v = Resource::named("velocities", vec![0u64; n]);
        let k = Resource::named("gravity", 1u64);
        let sums = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut b = Graph::builder();
        // Per index: every element + k; per piece: every element + 1.
        let per_index = b
            .node()
            .name("integrate")
            .access((k.read(), v.write_each()))
            .parallel_for(0..n, Batch::Fixed(64), |_i, (k, x)| *x += *k);
        let per_piece = b
            .node()
            .name("damp")
            .access(v.write_each())
            .parallel_for_chunked(0..n, Batch::Fixed(100), |r, xs| {
                assert_eq!(xs.len(), r.len());
                xs.iter_mut().for_each(|x| *x += 1);
            });
        let s = sums.clone();
        let reader = b
            .node()
            .name("sum")
            .access(v.read())
            .call(move |xs| s.lock().unwrap().push(xs.iter().sum::<u64>()));
        let g = b.build().unwrap();
        // The derived edges: integrate -> damp -> sum (the writers in the
        // order they were added, the reader after the last).
        assert_eq!(
            g.dependencies(per_piece).collect::<Vec<_>>(),
            vec![per_index]
        );
        assert_eq!(g.dependencies(reader).collect::<Vec<_>>(), vec![per_piece]);
        for _ in 0..3 {
            js.complete(g.run(&js));
        }
        let n = n as u64;
        assert_eq!(*sums.lock().unwrap(), vec![2 * n, 4 * n, 6 * n]);
    }
}

/// An access loop node's job is an access `parallel_for`, whose loop state
/// (the declarations' copy, the closure, the node's measurement) does not
/// fit in the loop's slot: one block per run (docs/graph.md says so).
#[test]
fn an_access_loop_node_allocates_one_block_per_run() {
    let js = system(0);
    let res = Resource::new(vec![0u64; 4]);
    let mut g = Graph::builder();
    g.node()
        .access(res.write_each())
        .parallel_for(0..4, Batch::Fixed(1), |_i, x| *x += 1);
    let graph = g.build().unwrap();
    for _ in 0..4 {
        js.complete(graph.run(&js));
    }
    for _ in 0..8 {
        let (h, n) = allocations(|| graph.run(&js));
        js.complete(h);
        assert_eq!(n, 1, "allocations per run of an access loop node");
    }
    assert_eq!(*res.read_now(&js), vec![12u64; 4]);
}
