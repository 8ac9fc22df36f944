//! Bad input that no other test file covered (docs/testing.md has the whole
//! table, with the tests in the other files): idle-policy strings and the
//! JOBSYS_IDLE_POLICY variable, out-of-range policy parameters, absurd spin
//! and stack sizes, pinning more workers than CPUs, duplicate dependencies,
//! absurd batch sizes, too many outside threads at once, and two jobs that
//! wait on each other.
//!
//! Environment variables are process-global, so the JOBSYS_IDLE_POLICY case
//! runs in a child process (this test binary, one test, the variable set)
//! instead of changing this process's environment under the other tests.

mod common;

use common::watchdog;
use jobsys::{Batch, BuildError, IdlePolicy, JobHandle, JobSystem};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, OnceLock};
use std::time::Duration;

/// Schedule a few jobs and a loop, wait for them, check they all ran.
fn check_works(js: &JobSystem) {
    let n = Arc::new(AtomicUsize::new(0));
    let mut hs = Vec::new();
    for _ in 0..20 {
        let n = n.clone();
        hs.push(js.schedule(move || {
            n.fetch_add(1, SeqCst);
        }));
    }
    let n2 = n.clone();
    hs.push(js.parallel_for(0..100, Batch::Auto, move |_| {
        n2.fetch_add(1, SeqCst);
    }));
    js.complete(js.combine(&hs));
    assert_eq!(n.load(SeqCst), 120);
}

#[test]
fn bad_idle_policy_strings_are_errors_naming_the_value() {
    for bad in [
        "",
        "   ",
        "sometimes-spin",
        "Whipping-Boy",
        "spin-then-sleep:",
        "spin-then-sleep:us",
        "spin-then-sleep:10",
        "spin-then-sleep:10ms",
        "spin-then-sleep:-5us",
        "spin-then-sleep:1.5us",
        "spin-then-sleep:99999999999999999999999us",
        "adaptive:10us",
    ] {
        match bad.parse::<IdlePolicy>() {
            Err(e @ BuildError::BadPolicy { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains(&format!("{bad:?}")), "{bad:?}: {msg}");
                assert!(msg.contains("spin-then-sleep[:<n>us]"), "{bad:?}: {msg}");
            }
            other => panic!("{bad:?}: expected BadPolicy, got {other:?}"),
        }
    }
    // Surrounding whitespace is trimmed; the largest u64 of microseconds is
    // a (silly but valid) spin.
    assert_eq!(
        " always-spin\n".parse::<IdlePolicy>().unwrap(),
        IdlePolicy::AlwaysSpin
    );
    assert_eq!(
        format!("spin-then-sleep:{}us", u64::MAX)
            .parse::<IdlePolicy>()
            .unwrap(),
        IdlePolicy::SpinThenSleep {
            spin: Duration::from_micros(u64::MAX)
        }
    );
}

/// The child half of `bad_jobsys_idle_policy_values_fail_build`: does
/// nothing unless the parent started this binary for it.
#[test]
fn idle_policy_from_environment_child() {
    if std::env::var_os("JOBSYS_BAD_INPUT_CHILD").is_none() {
        return;
    }
    let r = JobSystem::builder().workers(1).build();
    println!("CHILD build: {:?}", r.as_ref().map(|js| js.idle_policy()));
    if let Err(e) = &r {
        println!("CHILD message: {e}");
    }
    // An explicit policy wins over the variable, even a bad one.
    let js = JobSystem::builder()
        .workers(1)
        .idle_policy(IdlePolicy::WhippingBoy)
        .build()
        .unwrap();
    check_works(&js);
    println!("CHILD explicit policy: ok");
}

/// Run the child test with `JOBSYS_IDLE_POLICY=value`; its stdout.
fn child_with_policy(value: &str) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "idle_policy_from_environment_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("JOBSYS_BAD_INPUT_CHILD", "1")
        .env("JOBSYS_IDLE_POLICY", value)
        .env_remove("JOBSYS_WORKERS")
        .output()
        .expect("run the child test");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "child failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("CHILD explicit policy: ok"), "{stdout}");
    stdout
}

#[test]
fn bad_jobsys_idle_policy_values_fail_build() {
    for bad in ["sometimes-spin", "", "spin-then-sleep:5ms", "ALWAYS-SPIN"] {
        let out = child_with_policy(bad);
        assert!(
            out.contains("CHILD build: Err(BadPolicy"),
            "JOBSYS_IDLE_POLICY={bad:?}: {out}"
        );
        assert!(
            out.contains(&format!("{bad:?} is not an idle policy")),
            "JOBSYS_IDLE_POLICY={bad:?}: {out}"
        );
    }
    // A good value is used when the builder names no policy.
    let out = child_with_policy(" whipping-boy ");
    assert!(out.contains("CHILD build: Ok(WhippingBoy)"), "{out}");
}

#[test]
fn adaptive_cpu_cap_outside_zero_to_one_or_nan_is_a_build_error() {
    for cap in [f32::NAN, -0.1, 1.01, 2.0, f32::INFINITY, f32::NEG_INFINITY] {
        let r = JobSystem::builder()
            .workers(1)
            .idle_policy(IdlePolicy::Adaptive {
                max_spin: Duration::from_micros(50),
                cpu_cap: cap,
            })
            .build();
        match r {
            Err(e @ BuildError::BadPolicy { .. }) => {
                let msg = e.to_string();
                assert!(
                    msg.contains("cpu_cap") && msg.contains("0.0..=1.0"),
                    "{msg}"
                );
            }
            other => panic!("cpu_cap {cap}: expected BadPolicy, got {other:?}"),
        }
    }
    // The bounds themselves are fine.
    for cap in [0.0, 1.0] {
        let js = JobSystem::builder()
            .workers(1)
            .idle_policy(IdlePolicy::Adaptive {
                max_spin: Duration::from_micros(50),
                cpu_cap: cap,
            })
            .build()
            .unwrap();
        check_works(&js);
    }
}

/// Spin bounds of zero or of `Duration::MAX` are accepted: zero sleeps at
/// once, MAX spins until work comes (like AlwaysSpin). Both still run every
/// job and shut down (a spinning worker sees the shutdown flag).
#[test]
fn zero_and_absurd_spin_values_build_work_and_shut_down() {
    let policies = [
        IdlePolicy::SpinThenSleep {
            spin: Duration::ZERO,
        },
        IdlePolicy::SpinThenSleep {
            spin: Duration::MAX,
        },
        IdlePolicy::Adaptive {
            max_spin: Duration::ZERO,
            cpu_cap: 0.5,
        },
        IdlePolicy::Adaptive {
            max_spin: Duration::MAX,
            cpu_cap: 1.0,
        },
    ];
    for policy in policies {
        for wait_spin in [Duration::ZERO, Duration::MAX] {
            watchdog(60, move || {
                let js = JobSystem::builder()
                    .workers(1)
                    .idle_policy(policy)
                    .wait_spin(wait_spin)
                    .build()
                    .unwrap();
                check_works(&js);
                // An idle gap, then work again.
                std::thread::sleep(Duration::from_millis(5));
                check_works(&js);
                drop(js);
            });
        }
    }
}

/// A stack size no OS can give is a `Spawn` error from `build`, not a
/// panic; one below `MIN_STACK_SIZE` (0 included: std would round it up to
/// 16 KiB, on which a debug-build worker overflowed and the process died of
/// SIGSEGV) is `StackTooSmall`; the minimum itself runs nested work.
#[test]
fn an_absurd_stack_size_is_a_spawn_error() {
    match JobSystem::builder()
        .workers(2)
        .stack_size(usize::MAX / 2)
        .build()
    {
        Err(e @ BuildError::Spawn(_)) => {
            assert!(
                e.to_string().contains("could not start a worker thread"),
                "{e}"
            );
        }
        other => panic!("expected BuildError::Spawn, got {other:?}"),
    }
    for small in [0, 16 * 1024, jobsys::MIN_STACK_SIZE - 1] {
        match JobSystem::builder().workers(1).stack_size(small).build() {
            Err(e @ BuildError::StackTooSmall { requested, min }) => {
                assert_eq!((requested, min), (small, jobsys::MIN_STACK_SIZE));
                assert!(e.to_string().contains("too small"), "{e}");
            }
            other => panic!("stack {small}: expected StackTooSmall, got {other:?}"),
        }
    }
    let js = JobSystem::builder()
        .workers(2)
        .stack_size(jobsys::MIN_STACK_SIZE)
        .build()
        .unwrap();
    check_works(&js);
    // Nested waits and joins on the workers' small stacks.
    let js2 = js.clone();
    let h = js.schedule(move || {
        let (a, b) = js2.join(|| 1, || 2);
        let inner = js2.parallel_for(0..1000, jobsys::Batch::Fixed(7), |_| {});
        js2.complete(inner);
        assert_eq!(a + b, 3);
    });
    js.complete(h);
}

/// More pinned workers than CPUs: the plan shares CPUs round-robin (see
/// tests/topology.rs `more_workers_than_cpus_share_round_robin`); live, the
/// build succeeds and the system works.
#[test]
fn pinning_more_workers_than_cpus_builds_and_works() {
    let cpus = jobsys::topology().default_workers + 1;
    let js = JobSystem::builder()
        .workers(cpus * 2 + 1)
        .pin_workers(true)
        .exclude_efficiency_cores(true)
        .build()
        .unwrap();
    assert_eq!(js.workers(), cpus * 2 + 1);
    check_works(&js);
}

/// The same handle twice in one dependency list (or in a combine) is
/// allowed: the job runs once, after it.
#[test]
fn a_dependency_listed_twice_is_fine() {
    for workers in [0, 2] {
        let js = JobSystem::builder().workers(workers).build().unwrap();
        let n = Arc::new(AtomicUsize::new(0));
        let n1 = n.clone();
        let a = js.schedule(move || {
            n1.fetch_add(1, SeqCst);
        });
        let n2 = n.clone();
        let b = js.schedule_after(&[a, a, a], move || {
            assert_eq!(n2.fetch_add(1, SeqCst), 1, "ran before its dependency");
        });
        let c = js.combine(&[b, b, a]);
        js.complete(c);
        assert_eq!(n.load(SeqCst), 2);
        let p = js
            .job()
            .after(&[c, c])
            .parallel_for(0..4, Batch::Fixed(1), |_| {});
        js.complete(p);
    }
}

/// `Batch::Fixed` larger than the range is one piece; `usize::MAX` does not
/// overflow.
#[test]
fn a_batch_larger_than_the_range_is_one_piece() {
    let js = JobSystem::builder().workers(1).build().unwrap();
    for batch in [11, 1 << 40, usize::MAX] {
        let pieces = Arc::new(std::sync::Mutex::new(Vec::new()));
        let p2 = pieces.clone();
        let h = js
            .job()
            .parallel_for_chunked(0..10, Batch::Fixed(batch), move |r| {
                p2.lock().unwrap().push(r);
            });
        js.complete(h);
        assert_eq!(*pieces.lock().unwrap(), vec![0..10], "batch {batch}");
    }
}

/// At most 256 threads other than the workers may use one system at the
/// same time (docs/design-notes.md, "Worker count, limits"): the 257th
/// panics with a message when it first touches the system, the others are
/// unharmed, and once threads exit their places are reused.
#[test]
fn the_257th_concurrent_outside_thread_panics_with_a_message() {
    const LIMIT: usize = 256;
    watchdog(120, || {
        let js = JobSystem::builder().workers(1).build().unwrap();
        let barrier = Arc::new(std::sync::Barrier::new(LIMIT + 1));
        let threads: Vec<_> = (0..=LIMIT)
            .map(|_| {
                let (js, barrier) = (js.clone(), barrier.clone());
                std::thread::Builder::new()
                    .stack_size(256 * 1024)
                    .spawn(move || {
                        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            js.schedule(|| {})
                        }));
                        // Everyone holds its place until all have tried.
                        barrier.wait();
                        match r {
                            Ok(h) => {
                                js.complete(h);
                                None
                            }
                            Err(p) => Some(common::panic_message(&*p)),
                        }
                    })
                    .unwrap()
            })
            .collect();
        let panics: Vec<String> = threads
            .into_iter()
            .filter_map(|t| t.join().unwrap())
            .collect();
        assert_eq!(panics.len(), 1, "{panics:?}");
        assert!(
            panics[0].contains("more than 256 threads other than the workers"),
            "{}",
            panics[0]
        );
        // The threads are gone: a new one gets a place again.
        let js2 = js.clone();
        std::thread::spawn(move || check_works(&js2))
            .join()
            .unwrap();
        check_works(&js);
    });
}

/// Jobs running at the same time on different threads, each waiting on the
/// next in a ring (through `try_complete`, with no dependency edge between
/// them): A waits on B, B on C, …, the last on A. No thread waits on a job
/// it is inside of, so the walk cannot see it; the parked-waiter registry
/// does (waiters.rs, `Waiters::register`): the thread that closes the ring
/// gets `WaitOnSelf`, its job ends, and the others' waits end with Ok.
#[test]
fn a_ring_of_jobs_waiting_on_each_other_across_threads_is_reported() {
    for n in [2usize, 3] {
        watchdog(20, move || {
            let js = JobSystem::builder().workers(n).build().unwrap();
            let ring: Arc<OnceLock<Vec<JobHandle>>> = Arc::new(OnceLock::new());
            let results = Arc::new(std::sync::Mutex::new(Vec::new()));
            let (started_tx, started_rx) = mpsc::channel::<()>();
            let mut gos = Vec::new();
            let mut hs = Vec::new();
            for i in 0..n {
                let (go_tx, go_rx) = mpsc::channel::<()>();
                gos.push(go_tx);
                let (js2, ring, results, started) = (
                    js.clone(),
                    ring.clone(),
                    results.clone(),
                    started_tx.clone(),
                );
                hs.push(js.schedule(move || {
                    started.send(()).unwrap();
                    go_rx.recv().unwrap();
                    let next = ring.get().unwrap()[(i + 1) % n];
                    let r = js2.try_complete(next);
                    results.lock().unwrap().push(format!("{r:?}"));
                }));
            }
            ring.set(hs.clone()).unwrap();
            // All are running, one on each worker, before any waits.
            for _ in 0..n {
                started_rx.recv().unwrap();
            }
            for g in &gos {
                g.send(()).unwrap();
            }
            for h in &hs {
                let _ = js.try_complete(*h);
            }
            let mut got = results.lock().unwrap().clone();
            got.sort();
            let mut want = vec!["Ok(())".to_string(); n - 1];
            want.push("Err(WaitOnSelf)".to_string());
            want.sort();
            assert_eq!(got, want, "ring of {n}");
        });
    }
}
