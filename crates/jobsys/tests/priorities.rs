//! Priorities and priority inheritance. Deterministic: one worker
//! held by a gate while jobs are queued, and results read from a channel so
//! the main thread never helps (helping could reorder).

mod common;

use common::watchdog;
use jobsys::{Batch, JobDesc, JobSystem, Priority};
use std::sync::mpsc;
use std::sync::{Arc, Barrier, Mutex};

/// A system with one worker, busy in a job until the returned gate opens.
fn gated() -> (JobSystem, Arc<Barrier>) {
    let js = JobSystem::builder().workers(1).build().unwrap();
    let gate = Arc::new(Barrier::new(2));
    let started = Arc::new(Barrier::new(2));
    let (g, s) = (gate.clone(), started.clone());
    js.schedule(move || {
        s.wait();
        g.wait();
    });
    started.wait(); // the worker is inside the gate job
    (js, gate)
}

#[test]
fn queued_high_runs_before_normal_before_low() {
    watchdog(60, || {
        let (js, gate) = gated();
        let (tx, rx) = mpsc::channel();
        let order = [
            Priority::Low,
            Priority::Normal,
            Priority::High,
            Priority::Low,
            Priority::High,
            Priority::Normal,
        ];
        for (i, &p) in order.iter().enumerate() {
            let tx = tx.clone();
            js.job().desc(p).schedule(move || tx.send((p, i)).unwrap());
        }
        gate.wait();
        assert_ran_by_priority(&rx, order.len());
    });
}

/// Read `n` (priority, index) messages: they came High first, then
/// Normal, then Low.
fn assert_ran_by_priority(rx: &mpsc::Receiver<(Priority, usize)>, n: usize) {
    let ran: Vec<(Priority, usize)> = (0..n).map(|_| rx.recv().unwrap()).collect();
    let prios: Vec<Priority> = ran.iter().map(|r| r.0).collect();
    let mut sorted = prios.clone();
    sorted.sort();
    assert_eq!(prios, sorted, "ran in order {ran:?}");
}

/// A worker's own deques: the jobs a job queues on its own thread run High,
/// then Normal, then Low, whatever order they were queued in (a busy
/// worker's search looks at its own High deque before every Normal job).
#[test]
fn jobs_a_worker_queues_on_itself_run_high_then_normal_then_low() {
    watchdog(60, || {
        let js = JobSystem::builder().workers(1).build().unwrap();
        let (tx, rx) = mpsc::channel();
        let js2 = js.clone();
        js.schedule(move || {
            let order = [
                Priority::Normal,
                Priority::Low,
                Priority::Normal,
                Priority::High,
                Priority::Low,
                Priority::High,
                Priority::Normal,
            ];
            // Queued on this worker's own deques; they run after this job
            // returns (the main thread only reads the channel: no helping).
            for (i, &p) in order.iter().enumerate() {
                let tx = tx.clone();
                js2.job().desc(p).schedule(move || tx.send((p, i)).unwrap());
            }
        });
        assert_ran_by_priority(&rx, 7);
    });
}

#[test]
fn priorities_apply_to_parallel_for_and_jobs_released_by_dependencies() {
    watchdog(60, || {
        let (js, gate) = gated();
        let (tx, rx) = mpsc::channel();
        let t = tx.clone();
        js.job()
            .desc(Priority::Low)
            .after(&[])
            .parallel_for(0..1, Batch::Fixed(1), move |_| t.send("low-loop").unwrap());
        let t = tx.clone();
        let na = js
            .job()
            .desc(Priority::Normal)
            .schedule(move || t.send("normal-a").unwrap());
        let t = tx.clone();
        // Released by normal-a's finish onto the worker's own High deque:
        // it must come before normal-b, which was queued before it.
        js.job()
            .desc(Priority::High)
            .after(&[na])
            .schedule(move || t.send("high-after-a").unwrap());
        let t = tx.clone();
        js.job()
            .desc(Priority::Normal)
            .schedule(move || t.send("normal-b").unwrap());
        gate.wait();
        let ran: Vec<&str> = (0..4).map(|_| rx.recv().unwrap()).collect();
        assert_eq!(ran, ["normal-a", "high-after-a", "normal-b", "low-loop"]);
    });
}

#[test]
fn a_waited_low_chain_runs_before_unrelated_normal_work() {
    watchdog(60, || {
        let (js, gate) = gated();
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut normals = Vec::new();
        for i in 0..5 {
            let l = log.clone();
            normals.push(
                js.job()
                    .desc(JobDesc::named("normal"))
                    .schedule(move || l.lock().unwrap().push(format!("normal{i}"))),
            );
        }
        let mut prev = Vec::new();
        for i in 0..3 {
            let l = log.clone();
            let h = js
                .job()
                .desc(JobDesc::named("stream").with_priority(Priority::Low))
                .after(&prev)
                .schedule(move || l.lock().unwrap().push(format!("low{i}")));
            prev = vec![h];
        }
        // Another thread waits on the end of the Low chain while the only
        // worker is busy: the chain is boosted and run by the waiter, and
        // the waiter touches none of the Normal jobs.
        let (js2, end) = (js.clone(), prev[0]);
        std::thread::spawn(move || js2.complete(end))
            .join()
            .unwrap();
        assert_eq!(*log.lock().unwrap(), ["low0", "low1", "low2"]);
        gate.wait();
        for h in normals {
            js.complete(h);
        }
        assert_eq!(log.lock().unwrap().len(), 8);
    });
}

#[test]
fn names_and_priorities_round_trip_through_job_descs() {
    const PHYSICS: JobDesc = JobDesc::named("physics").with_priority(Priority::High);
    assert_eq!(PHYSICS.priority, Priority::High);
    assert_eq!(JobDesc::from("audio").name, Some("audio"));
    assert_eq!(JobDesc::from(Priority::Low).priority, Priority::Low);
    assert_eq!(JobDesc::default().priority, Priority::Normal);
    let js = JobSystem::builder().workers(1).build().unwrap();
    let a = js.job().name("physics").schedule(|| {});
    let b = js.job().desc(PHYSICS).after(&[a]).schedule(|| {});
    js.complete(b);
}
