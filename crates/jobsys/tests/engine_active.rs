//! Engine integration, part 3: `set_active_workers` and
//! `Builder::follow_cpus`.
//!
//! Every scenario runs under `common::watchdog`. The follow_cpus tests
//! change the CPU affinity of every thread of this process (and restore it
//! with a guard, also on failure); they hold `AFFINITY` so that they do not
//! overlap each other. They poll `stats().active_workers` until it changes,
//! bounded by a generous deadline reported as a failure, never asserting a
//! time.

mod common;

use common::watchdog;
use jobsys::{ActiveWorkersError, JobSystem, Pin};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;

const SECS: u64 = 120;

fn system(workers: usize) -> JobSystem {
    JobSystem::builder().workers(workers).build().unwrap()
}

/// The active count, read both ways; they must agree.
fn active(js: &JobSystem) -> usize {
    let a = js.active_workers();
    let s = js.stats().active_workers;
    assert_eq!(a, s, "active_workers() and stats().active_workers disagree");
    a
}

/// While a producer thread schedules jobs continuously, the active count
/// goes 0..=workers and back, many times: every job runs exactly once,
/// every `complete` returns (also with 0 active: the waiting threads do
/// the work), and `stats().active_workers` follows each change.
#[test]
fn set_active_workers_up_and_down_under_load_loses_nothing() {
    watchdog(SECS, || {
        for workers in [1, 2, 4] {
            let js = system(workers);
            assert_eq!(active(&js), workers, "all workers active by default");
            const PER_BATCH: usize = 64;
            const SWITCHES: usize = 2000;
            let stop = Arc::new(AtomicBool::new(false));
            // Each batch's run counters; the producer returns them all.
            let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
            let producer = {
                let (js, stop) = (js.clone(), stop.clone());
                thread::spawn(move || {
                    let mut all: Vec<Arc<Vec<AtomicUsize>>> = Vec::new();
                    let mut prev = None;
                    // At least one batch, and on until told to stop.
                    while all.is_empty() || !stop.load(SeqCst) {
                        let ran: Arc<Vec<AtomicUsize>> =
                            Arc::new((0..PER_BATCH).map(|_| AtomicUsize::new(0)).collect());
                        let hs: Vec<_> = (0..PER_BATCH)
                            .map(|k| {
                                let ran = ran.clone();
                                js.schedule(move || {
                                    ran[k].fetch_add(1, SeqCst);
                                })
                            })
                            .collect();
                        all.push(ran);
                        let _ = started_tx.send(());
                        // Keep one batch in flight while the next is made.
                        if let Some(p) = prev.replace(js.combine(&hs)) {
                            js.complete(p);
                        }
                    }
                    js.complete(prev.unwrap());
                    all
                })
            };
            // Switch only while the producer is at work.
            started_rx.recv().unwrap();
            for switch in 0..SWITCHES {
                let n = switch % (workers + 1);
                js.set_active_workers(n).unwrap();
                assert_eq!(
                    active(&js),
                    n,
                    "{workers} workers: after set_active_workers({n})"
                );
                thread::yield_now();
            }
            stop.store(true, SeqCst);
            let batches = producer.join().unwrap();
            eprintln!(
                "{workers} workers: {} batches during {SWITCHES} switches",
                batches.len()
            );

            // With none active, a complete still returns (this thread runs all).
            js.set_active_workers(0).unwrap();
            let extra = Arc::new(AtomicUsize::new(0));
            let hs: Vec<_> = (0..1000)
                .map(|_| {
                    let e = extra.clone();
                    js.schedule(move || {
                        e.fetch_add(1, SeqCst);
                    })
                })
                .collect();
            js.complete(js.combine(&hs));
            assert_eq!(extra.load(SeqCst), 1000);
            js.set_active_workers(workers).unwrap();
            assert_eq!(active(&js), workers);

            let bad: Vec<_> = batches
                .iter()
                .flat_map(|b| b.iter())
                .enumerate()
                .filter(|(_, r)| r.load(SeqCst) != 1)
                .map(|(i, _)| i)
                .collect();
            assert!(
                bad.is_empty(),
                "{workers} workers: {} jobs not run exactly once, e.g. {:?}",
                bad.len(),
                &bad[..bad.len().min(10)]
            );
        }
    });
}

/// `set_active_workers(n)` with n above `workers()` is an error naming both
/// numbers, and leaves the active count as it was.
#[test]
fn set_active_workers_above_workers_is_an_error() {
    watchdog(SECS, || {
        let js = system(2);
        js.set_active_workers(1).unwrap();
        let err = js.set_active_workers(3).unwrap_err();
        assert_eq!(
            err,
            ActiveWorkersError {
                requested: 3,
                workers: 2
            }
        );
        let msg = err.to_string();
        assert!(
            msg.contains("set_active_workers(3)") && msg.contains("started 2 workers"),
            "unclear message: {msg}"
        );
        assert_eq!(active(&js), 1, "unchanged by the failed call");
        js.set_active_workers(2).unwrap();
        assert_eq!(active(&js), 2);
        let js0 = system(0);
        assert!(js0.set_active_workers(0).is_ok());
        assert_eq!(
            js0.set_active_workers(1),
            Err(ActiveWorkersError {
                requested: 1,
                workers: 0
            })
        );
    });
}

/// With 0 active workers, a benched worker still runs a job pinned to it
/// (on that worker), also many of them and after the bench has parked it.
#[test]
fn benched_worker_runs_jobs_pinned_to_it() {
    watchdog(SECS, || {
        let workers = 2;
        let js = system(workers);
        js.set_active_workers(0).unwrap();
        assert_eq!(active(&js), 0);
        for round in 0..50 {
            for i in 0..workers {
                let name = format!("jobsys-worker-{}", i + 1);
                let js2 = js.clone();
                let h = js.job().pin(Pin::Worker(i + 1)).schedule(move || {
                    assert_eq!(thread::current().name(), Some(name.as_str()));
                    assert_eq!(js2.thread_index(), Some(i + 1));
                });
                js.try_complete(h)
                    .unwrap_or_else(|e| panic!("round {round}, worker {i}: {e}"));
            }
        }
        assert_eq!(active(&js), 0, "running pinned jobs does not unbench");
    });
}

#[cfg(target_os = "linux")]
mod follow {
    use super::*;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    /// Serialises the tests that change every thread's CPU affinity.
    static AFFINITY: Mutex<()> = Mutex::new(());

    /// Generous bound for the active count to follow a mask change (the
    /// issue's target is 100 ms; nothing here asserts a time).
    const DEADLINE: Duration = Duration::from_secs(10);

    fn own_mask() -> libc::cpu_set_t {
        // SAFETY: a zeroed cpu_set_t is a valid empty set; the call writes
        // at most size_of::<cpu_set_t>() bytes into it.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            let rc = libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
            assert_eq!(
                rc,
                0,
                "sched_getaffinity: {}",
                std::io::Error::last_os_error()
            );
            set
        }
    }

    fn cpus_of(set: &libc::cpu_set_t) -> Vec<usize> {
        // SAFETY: CPU_ISSET reads the set only.
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, set) })
            .collect()
    }

    /// A mask with only `cpu` in it.
    fn only_cpu(cpu: usize) -> libc::cpu_set_t {
        // SAFETY: a zeroed cpu_set_t is a valid empty set, and CPU_SET
        // ignores a CPU number at or above CPU_SETSIZE.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            set
        }
    }

    /// Set `set` as the affinity of every thread of this process. Threads
    /// that exit meanwhile are skipped.
    fn set_all_threads(set: &libc::cpu_set_t) {
        for entry in std::fs::read_dir("/proc/self/task").expect("/proc/self/task") {
            let Some(tid) = entry
                .ok()
                .and_then(|e| e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()))
            else {
                continue;
            };
            // SAFETY: reads `set` only; a vanished tid gives ESRCH.
            let rc = unsafe {
                libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), set)
            };
            let err = std::io::Error::last_os_error();
            assert!(
                rc == 0 || err.raw_os_error() == Some(libc::ESRCH),
                "sched_setaffinity({tid}): {err}"
            );
        }
    }

    /// Restores the original mask on every thread when dropped (also when
    /// the test fails half-way).
    struct RestoreMask(libc::cpu_set_t);
    impl Drop for RestoreMask {
        fn drop(&mut self) {
            set_all_threads(&self.0);
        }
    }

    /// The original mask, if this process may use at least two CPUs (the
    /// scenario needs one for the worker and one for the caller).
    fn two_cpus_or_skip(test: &str) -> Option<libc::cpu_set_t> {
        let mask = own_mask();
        let usable = thread::available_parallelism().map_or(1, |n| n.get());
        if cpus_of(&mask).len() < 2 || usable < 2 {
            eprintln!("{test}: skipped: this process may use fewer than 2 CPUs");
            return None;
        }
        Some(mask)
    }

    /// A thread that schedules and completes small jobs until stopped: it
    /// keeps the workers awake and its own outermost `complete` polls the
    /// CPUs.
    fn busy(js: &JobSystem, stop: &Arc<AtomicBool>) -> thread::JoinHandle<usize> {
        let (js, stop) = (js.clone(), stop.clone());
        thread::spawn(move || {
            let mut n = 0;
            while !stop.load(SeqCst) {
                let hs: Vec<_> = (0..16).map(|_| js.schedule(|| {})).collect();
                js.complete(js.combine(&hs));
                n += 1;
            }
            n
        })
    }

    /// Polls until `stats().active_workers == want`, or fails after
    /// `DEADLINE` naming what it saw.
    fn wait_for_active(js: &JobSystem, want: usize, what: &str) {
        let start = Instant::now();
        loop {
            let now = js.stats().active_workers;
            if now == want {
                eprintln!(
                    "{what}: active_workers = {want} after {:?}",
                    start.elapsed()
                );
                return;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "{what}: active_workers stayed {now}, expected {want} within {DEADLINE:?}"
            );
            thread::yield_now();
        }
    }

    /// `follow_cpus(true)`, one worker, two usable CPUs: restricting every
    /// thread of the process to one CPU benches the worker (usable CPUs −
    /// 1 = 0 active), and restoring the mask brings it back (1 active).
    /// The target is to notice within about 100 ms; here only a
    /// generous deadline bounds the wait.
    #[test]
    fn follow_cpus_benches_and_restores_the_worker() {
        let _one = AFFINITY.lock().unwrap_or_else(|e| e.into_inner());
        let Some(orig) = two_cpus_or_skip("follow_cpus_benches_and_restores_the_worker") else {
            return;
        };
        watchdog(SECS, move || {
            let _restore = RestoreMask(orig);
            let js = JobSystem::builder()
                .workers(1)
                .follow_cpus(true)
                .build()
                .unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            let b = busy(&js, &stop);
            wait_for_active(&js, 1, "before the change");

            let one = only_cpu(cpus_of(&orig)[0]);
            set_all_threads(&one);
            wait_for_active(&js, 0, "one CPU");

            set_all_threads(&orig);
            wait_for_active(&js, 1, "mask restored");

            stop.store(true, SeqCst);
            assert!(b.join().unwrap() > 0);
            // Jobs still run after all that.
            let ran = Arc::new(AtomicUsize::new(0));
            let r = ran.clone();
            js.complete(js.schedule(move || {
                r.fetch_add(1, SeqCst);
            }));
            assert_eq!(ran.load(SeqCst), 1);
        });
    }

    /// Without `follow_cpus` (the default) the same mask change leaves the
    /// active count at `workers()`: checked once a system that does follow
    /// the CPUs (the control, equally busy) has seen the change.
    #[test]
    fn without_follow_cpus_the_active_count_ignores_the_mask() {
        let _one = AFFINITY.lock().unwrap_or_else(|e| e.into_inner());
        let Some(orig) = two_cpus_or_skip("without_follow_cpus_the_active_count_ignores_the_mask")
        else {
            return;
        };
        watchdog(SECS, move || {
            let _restore = RestoreMask(orig);
            let plain = system(1);
            let control = JobSystem::builder()
                .workers(1)
                .follow_cpus(true)
                .build()
                .unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            let busy_plain = busy(&plain, &stop);
            let busy_control = busy(&control, &stop);
            wait_for_active(&control, 1, "control, before the change");
            let one = only_cpu(cpus_of(&orig)[0]);
            set_all_threads(&one);
            wait_for_active(&control, 0, "control, one CPU");
            assert_eq!(active(&plain), 1, "follow_cpus is off: the mask is ignored");
            stop.store(true, SeqCst);
            busy_plain.join().unwrap();
            busy_control.join().unwrap();
            assert_eq!(active(&plain), 1);
        });
    }
}
