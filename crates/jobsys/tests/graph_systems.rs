//! One `Graph` run on several job systems in turn (a level's system
//! replaced, a test harness building a system per case): a run on a new
//! system is allowed once every run on the old one has ended (completed, or
//! that system dropped), and refused with a panic while one is in flight;
//! after a switch every node still runs once per run, in order, and the
//! durations measured on the old system still feed the report.

use jobsys::{Graph, JobSystem, NodeId};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};

fn system(workers: usize) -> JobSystem {
    JobSystem::builder()
        .workers(workers)
        .follow_cpus(false)
        .build()
        .expect("build")
}

/// A chain a -> b -> c whose nodes count their calls; `b` checks that `a`
/// ran as often as it is about to (its call of this run came first).
struct Chain {
    graph: Graph,
    ids: [NodeId; 3],
    calls: Arc<[AtomicUsize; 3]>,
    bad_order: Arc<AtomicBool>,
}

fn chain(in_flight: usize) -> Chain {
    let calls = Arc::new([0, 0, 0].map(AtomicUsize::new));
    let bad_order = Arc::new(AtomicBool::new(false));
    let mut b = Graph::builder();
    b.max_in_flight(in_flight);
    let mut ids = Vec::new();
    for i in 0..3 {
        let (c, bad) = (calls.clone(), bad_order.clone());
        let after: Vec<NodeId> = ids.last().copied().into_iter().collect();
        ids.push(
            b.node()
                .name(["a", "b", "c"][i])
                .after(&after)
                .call(move || {
                    let mine = c[i].load(Ordering::SeqCst) + 1;
                    if i > 0 && c[i - 1].load(Ordering::SeqCst) < mine {
                        bad.store(true, Ordering::SeqCst);
                    }
                    c[i].fetch_add(1, Ordering::SeqCst);
                }),
        );
    }
    Chain {
        graph: b.build().expect("acyclic"),
        ids: [ids[0], ids[1], ids[2]],
        calls,
        bad_order,
    }
}

impl Chain {
    fn assert_calls(&self, runs: usize) {
        for (i, n) in self.calls.iter().enumerate() {
            assert_eq!(n.load(Ordering::SeqCst), runs, "node {i}");
        }
        assert!(
            !self.bad_order.load(Ordering::SeqCst),
            "a node ran before its dependency"
        );
    }
}

/// Proves: runs on a system that is then dropped, then on a new one (with
/// 2 runs in flight, so the new run would wait for the old run's node if
/// the graph still looked there), then on a third while the second lives:
/// every node runs once per run, in order; the report covers the runs.
#[test]
fn a_graph_moves_to_another_system_once_its_runs_ended() {
    for workers in [0, 1, 2] {
        let c = chain(2);
        {
            let a = system(workers);
            let h = c.graph.run(&a);
            let last = c.graph.run(&a);
            a.complete(h);
            a.complete(last);
        }
        c.assert_calls(2);
        let b = system(workers);
        let mut last = None;
        for _ in 0..5 {
            last = Some(c.graph.run(&b));
        }
        b.complete(last.unwrap());
        c.assert_calls(7);
        assert!(c.graph.report(&b).is_some());
        let third = system(workers);
        let h = c.graph.run(&third);
        third.complete(h);
        c.graph
            .sync(&third, c.ids[2])
            .expect("the latest run's node");
        c.assert_calls(8);
        assert_eq!(c.graph.runs(), 8);
        let report = c.graph.report(&third).expect("a finished run");
        assert_eq!(report.critical_path().len(), 3, "the chain is the path");
    }
}

/// Proves: a run on another system while one on the first is in flight
/// (node `b` blocked on a channel) panics with a message that says so, and
/// changes nothing: once the first run completes, the graph runs on the
/// second system.
#[test]
fn a_run_on_another_system_while_one_is_in_flight_panics() {
    let (tx, rx) = mpsc::channel::<()>();
    let rx = Arc::new(Mutex::new(rx));
    let mut b = Graph::builder();
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let gate = b.node().call(move || {
        let _ = rx.lock().unwrap().recv();
    });
    b.node().after(&[gate]).call(move || {
        r.fetch_add(1, Ordering::SeqCst);
    });
    let g = b.build().expect("acyclic");
    let first = system(1);
    let other = system(1);
    let h = g.run(&first);
    let refused = catch_unwind(AssertUnwindSafe(|| g.run(&other)));
    let message = refused.expect_err("refused while in flight");
    let message = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        message.contains("on another JobSystem is still in flight"),
        "{message}"
    );
    assert_eq!(g.runs(), 1);
    tx.send(()).unwrap();
    first.complete(h);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    tx.send(()).unwrap();
    let h = g.run(&other);
    other.complete(h);
    assert_eq!(ran.load(Ordering::SeqCst), 2);
    assert_eq!(g.runs(), 2);
}
