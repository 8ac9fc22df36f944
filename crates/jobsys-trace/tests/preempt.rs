//! A worker that shares its CPU with a busy thread is runnable but not
//! running much of the time: the capture must say *preempted* (measured
//! run-queue wait), not searching, and the summary must count it; the
//! profiler hook `preempted` must hear of it too.
//!
//! Deterministic enough: the worker (pinned from its `thread_start` hook)
//! and a thread of this test that never stops spinning are pinned to the
//! same single CPU, so whenever both are runnable one of them waits on
//! that CPU's run queue. The worker never sleeps (`IdlePolicy::AlwaysSpin`),
//! so it is always runnable. No assertion depends on how long anything
//! took: captures are repeated until the condition holds, and a watchdog
//! fails the test (loudly, with the last summary) if it never does.
//! Skipped, saying why, where run-queue wait cannot be read.

use jobsys::trace::{run_queue_available, TraceConfig};
use jobsys::{IdlePolicy, JobSystem, ProfilerHooks};
use jobsys_trace::TraceExt;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The CPUs this thread may run on.
#[cfg(target_os = "linux")]
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `cpu_set_t` is plain data; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: pid 0 is the calling thread; `set` is a valid, writable
    // `cpu_set_t` of the size passed.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    assert_eq!(
        rc,
        0,
        "sched_getaffinity: {}",
        std::io::Error::last_os_error()
    );
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: `i` is below CPU_SETSIZE, the set's capacity.
        .filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })
        .collect()
}

/// Pin the calling thread to `cpu`; false if the kernel refused.
#[cfg(target_os = "linux")]
fn pin_current(cpu: usize) -> bool {
    // SAFETY: `cpu_set_t` is plain data; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` comes from `allowed_cpus`, below CPU_SETSIZE.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: pid 0 is the calling thread; `set` is a valid `cpu_set_t` of
    // the size passed, only read.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) == 0 }
}

/// Hooks that pin every worker to `cpu` as it starts, and add up what
/// `preempted` reports.
struct PinWorkers {
    cpu: usize,
    /// 1 pinned, -1 refused, 0 no worker started yet.
    pinned: AtomicI64,
    preempted_ns: AtomicU64,
    preempted_calls: AtomicU64,
}

impl ProfilerHooks for PinWorkers {
    fn thread_start(&self, _thread: u32, name: &str) {
        if name.starts_with("jobsys-worker") {
            #[cfg(target_os = "linux")]
            let ok = pin_current(self.cpu);
            #[cfg(not(target_os = "linux"))]
            let ok = false;
            self.pinned.store(if ok { 1 } else { -1 }, Ordering::SeqCst);
        }
    }
    fn preempted(&self, _thread: u32, wait_ns: u64) {
        self.preempted_ns.fetch_add(wait_ns, Ordering::Relaxed);
        self.preempted_calls.fetch_add(1, Ordering::Relaxed);
    }
}

/// Stops and joins the busy thread however the test ends.
struct Busy {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_worker_sharing_its_cpu_with_a_busy_thread_is_preempted_not_searching() {
    if !run_queue_available() {
        println!(
            "skipped: run-queue wait cannot be read here (no /proc/thread-self/schedstat: \
             a kernel without per-thread schedstat); nothing to test"
        );
        return;
    }
    let cpus = allowed_cpus();
    let cpu = cpus[0];
    let hooks = Arc::new(PinWorkers {
        cpu,
        pinned: AtomicI64::new(0),
        preempted_ns: AtomicU64::new(0),
        preempted_calls: AtomicU64::new(0),
    });
    let js = JobSystem::builder()
        .workers(1)
        .idle_policy(IdlePolicy::AlwaysSpin)
        .profiler(hooks.clone())
        .build()
        .unwrap();
    // This thread schedules from another CPU where there is one.
    if let Some(&other) = cpus.get(1) {
        assert!(pin_current(other), "pin the test thread to CPU {other}");
    }
    // The busy thread: always runnable on the worker's CPU.
    let stop = Arc::new(AtomicBool::new(false));
    let busy_pinned = Arc::new(AtomicI64::new(0));
    let _busy = Busy {
        stop: stop.clone(),
        thread: Some({
            let (stop, pinned) = (stop.clone(), busy_pinned.clone());
            std::thread::spawn(move || {
                pinned.store(if pin_current(cpu) { 1 } else { -1 }, Ordering::SeqCst);
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        }),
    };
    let watchdog = Instant::now() + Duration::from_secs(60);
    while hooks.pinned.load(Ordering::SeqCst) == 0 || busy_pinned.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < watchdog, "watchdog: threads never pinned");
        std::thread::yield_now();
    }
    assert_eq!(
        hooks.pinned.load(Ordering::SeqCst),
        1,
        "worker pinned to CPU {cpu}"
    );
    assert_eq!(
        busy_pinned.load(Ordering::SeqCst),
        1,
        "busy thread pinned to CPU {cpu}"
    );

    // Capture rounds of a few sparse jobs until the worker shows preempted
    // time; each round's jobs run on the worker (this thread only checks
    // `is_complete`, it never helps).
    let mut rounds = 0;
    loop {
        rounds += 1;
        js.trace_start_with(TraceConfig {
            events_per_thread: 1 << 16,
        });
        let mut ran = 0;
        for _ in 0..20 {
            let h = js.job().name("small").schedule(|| {
                std::hint::black_box((0..1000u64).sum::<u64>());
            });
            while !js.is_complete(h) {
                assert!(
                    Instant::now() < watchdog,
                    "watchdog: 60 s passed in capture round {rounds} (its job {ran} not done) \
                     and no capture had shown the worker preempted"
                );
                std::hint::spin_loop();
            }
            ran += 1;
        }
        let trace = js.trace_stop();
        let c = trace.analyse();
        let s = c.summary();
        let w = s
            .threads
            .iter()
            .find(|t| t.worker)
            .expect("the worker's track");
        let tl = c.threads.iter().find(|t| t.worker).unwrap();
        assert!(!tl.run_queue_unknown, "schedstat is available, yet unknown");
        // The summary's warning has thresholds of its own (enough preempted
        // time, most of the time spent looking for work): a round can show
        // preempted time without them, so the warning is part of what the
        // rounds wait for, not asserted of the first such round.
        let warned = s
            .warnings
            .iter()
            .any(|m| m.contains("preempted") && m.contains("oversubscribed"));
        if w.state_ns.preempted > 0 && hooks.preempted_ns.load(Ordering::Relaxed) > 0 && warned {
            // The capture's numbers agree with themselves.
            let rq = w.run_queue_ns.expect("samples recorded");
            assert!(
                rq >= w.state_ns.preempted,
                "{rq} < {}",
                w.state_ns.preempted
            );
            assert!(w.preempted_spans > 0);
            println!(
                "round {rounds}: {ran} jobs; worker preempted {} ns in {} spans (run-queue wait \
                 {rq} ns), hooks heard {} ns in {} calls\n{s}",
                w.state_ns.preempted,
                w.preempted_spans,
                hooks.preempted_ns.load(Ordering::Relaxed),
                hooks.preempted_calls.load(Ordering::Relaxed),
            );
            break;
        }
        assert!(
            Instant::now() < watchdog,
            "watchdog: after {rounds} captures in 60 s the worker, sharing CPU {cpu} with a \
             busy thread, never showed preempted time with the summary's oversubscribed \
             warning; last summary:\n{s}"
        );
    }
}

#[cfg(not(target_os = "linux"))]
#[test]
fn a_worker_sharing_its_cpu_with_a_busy_thread_is_preempted_not_searching() {
    assert!(!run_queue_available());
    println!("skipped: run-queue wait is measured on Linux only");
}
