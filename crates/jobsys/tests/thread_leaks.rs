//! No leaked threads: creating and dropping job systems leaves the process
//! with the threads it had. A test binary of its own with a single test, so
//! no other test's threads come and go while it counts.

#![cfg(target_os = "linux")]

mod common;

use common::watchdog;
use jobsys::{Batch, JobSystem};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .count()
}

/// The thread count once it settles at `expected`, or what it is after
/// 10 s. A joined thread can linger in /proc/self/task for a moment after
/// `join` returns (the kernel wakes the joiner before it releases the task),
/// so a count one too high right after a join is not yet a leak; a leaked
/// thread never goes away, so waiting it out cannot hide one.
fn settled_thread_count(expected: usize) -> usize {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let n = thread_count();
        if n == expected || std::time::Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Threads named like our workers (for the failure message; a new thread
/// names itself, so the name may lag its start).
fn worker_threads() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
        .map(|c| c.trim().to_string())
        .filter(|c| c.starts_with("jobsys-worker"))
        .collect()
}

#[test]
fn creating_and_dropping_systems_leaks_no_threads() {
    // The watchdog's own thread exists during both counts.
    watchdog(60, || {
        let before = thread_count();
        for round in 0..30 {
            let workers = round % 5;
            let js = JobSystem::builder().workers(workers).build().unwrap();
            assert_eq!(
                thread_count(),
                before + workers,
                "round {round}: workers started"
            );
            let n = Arc::new(AtomicUsize::new(0));
            for _ in 0..100 {
                let n2 = n.clone();
                js.schedule(move || {
                    n2.fetch_add(1, SeqCst);
                });
            }
            let n2 = n.clone();
            let h = js.parallel_for(0..1000, Batch::Auto, move |_| {
                n2.fetch_add(1, SeqCst);
            });
            js.complete(h);
            // Clones on other threads, dropped there.
            let c = js.clone();
            std::thread::spawn(move || {
                let h = c.schedule(|| {});
                c.complete(h);
            })
            .join()
            .unwrap();
            drop(js);
            assert_eq!(n.load(SeqCst), 1100);
            assert_eq!(
                settled_thread_count(before),
                before,
                "round {round}: threads left behind: {:?}",
                worker_threads()
            );
        }

        // The last clone dropped by a job on one of its own workers: the
        // workers cannot be joined there, so they finish the queued work
        // and exit on their own; they must still go away.
        for round in 0..5 {
            let js = JobSystem::builder().workers(2).build().unwrap();
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            let last = js.clone();
            let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
            js.schedule(move || {
                go_rx.recv().unwrap();
                for _ in 0..50 {
                    let tx = tx.clone();
                    last.schedule(move || tx.send(()).unwrap());
                }
                drop(last);
            });
            drop(js);
            go_tx.send(()).unwrap();
            assert_eq!(rx.iter().count(), 50);
            assert_eq!(
                settled_thread_count(before),
                before,
                "drop inside a job, round {round}: threads left behind: {:?}",
                worker_threads()
            );
        }
    });
}
