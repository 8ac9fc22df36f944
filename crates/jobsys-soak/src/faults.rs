//! Fault injection: the injected panics (their marker, messages and a quiet
//! panic hook) and the clone-drop race.
//!
//! **Injected panics** carry a `String` payload starting with [`MARKER`]; the
//! hook [`install_quiet_hook`] swallows exactly those and forwards every
//! other panic to the previous hook, so a real bug still prints its
//! message and location.
//!
//! **The drop race** ([`drop_race`]): 1–3 threads each get a clone of the
//! system being retired and schedule into it (single jobs, jobs after their
//! own earlier jobs, parallel_for, `job().batched()` without a `flush`,
//! occasional waits), while the main thread drops its own clone at a random
//! moment — usually while the others are still scheduling — and each thread
//! drops its clone when done. `JobSystem` is an `Arc`-shared handle, so
//! the system lives until the last clone goes, on whichever thread that is;
//! that drop sets `terminating`, helps run every job still outstanding,
//! and joins the workers.
//!
//! Documented outcome, checked every time: no crash and no panic; every job
//! scheduled through any clone before that clone was dropped runs exactly
//! once (the run counter equals the scheduled count once all threads have
//! been joined, i.e. after the last drop returned); the scheduling threads'
//! waits on their own jobs succeed; the workers are joined (the process
//! thread count at the end of the soak equals that at the start). Scheduling
//! after the last drop cannot be expressed (no clone is left to call).

use jobsys::{Batch, JobHandle, JobSystem};
use jobsys_bench::graph::SplitMix64;
use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Once};
use std::time::{Duration, Instant};

/// Start of every injected panic's message.
pub const MARKER: &str = "jobsys-soak injected panic";

/// The message graph node `i` panics with.
pub fn job_message(i: usize) -> String {
    format!("{MARKER}: job {i}")
}

/// The message scope job `j` panics with.
pub fn scope_message(j: usize) -> String {
    format!("{MARKER}: scope job {j}")
}

/// Panic with `message` (which must start with [`MARKER`]).
pub fn inject(message: String) -> ! {
    std::panic::panic_any(message)
}

/// Whether a panic payload is one of ours.
pub fn is_injected(payload: &(dyn Any + Send)) -> bool {
    payload
        .downcast_ref::<String>()
        .is_some_and(|s| s.starts_with(MARKER))
}

/// The text of a panic payload (`&str` or `String`), for reports.
pub fn payload_text(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "(a non-string payload)".into())
}

/// Install (once per process) a panic hook that is silent for injected
/// panics and forwards all others to the hook that was installed before.
pub fn install_quiet_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !is_injected(info.payload()) {
                previous(info);
            }
        }));
    });
}

/// What one drop race did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DropRace {
    /// Scheduling threads besides the main thread.
    pub threads: usize,
    /// Job runs expected (single jobs + loop indices).
    pub scheduled: u64,
    /// Job runs counted.
    pub ran: u64,
}

/// Retire `js` through a drop race (see the module docs). `ops`: the most
/// scheduling operations per thread. Errors describe a violated outcome.
pub fn drop_race(js: JobSystem, rng: &mut SplitMix64, ops: u64) -> Result<DropRace, String> {
    let threads = 1 + rng.below(3) as usize;
    let ran = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(Barrier::new(threads + 1));
    let mut joins = Vec::with_capacity(threads);
    for t in 0..threads {
        let (js, ran, barrier) = (js.clone(), ran.clone(), barrier.clone());
        let (seed, n) = (rng.next_u64(), 1 + rng.below(ops));
        let spawned = std::thread::Builder::new()
            .name(format!("soak-drop-race-{t}"))
            .spawn(move || schedule_then_drop(js, &ran, &barrier, seed, n));
        match spawned {
            Ok(j) => joins.push(j),
            Err(e) => return Err(format!("drop race: spawning a thread failed: {e}")),
        }
    }
    let main_delay = Duration::from_micros(rng.below(2_000));
    barrier.wait();
    let t = Instant::now();
    while t.elapsed() < main_delay {
        std::hint::spin_loop();
    }
    drop(js);
    let mut out = DropRace {
        threads,
        ..DropRace::default()
    };
    let mut errors = Vec::new();
    for j in joins {
        match j.join() {
            Ok(Ok(n)) => out.scheduled += n,
            Ok(Err(e)) => errors.push(e),
            Err(_) => errors.push("drop race: a scheduling thread panicked".into()),
        }
    }
    out.ran = ran.load(Ordering::SeqCst);
    if errors.is_empty() && out.ran != out.scheduled {
        errors.push(format!(
            "drop race ({threads} threads): {} job runs scheduled, {} ran after the last clone was dropped",
            out.scheduled, out.ran
        ));
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors.join("; "))
    }
}

/// One scheduling thread of the drop race: `n` random operations on its
/// clone, then drop it. Returns the job runs it scheduled.
fn schedule_then_drop(
    js: JobSystem,
    ran: &Arc<AtomicU64>,
    barrier: &Barrier,
    seed: u64,
    n: u64,
) -> Result<u64, String> {
    let mut rng = SplitMix64::new(seed);
    let mut scheduled = 0u64;
    let mut mine: Vec<JobHandle> = Vec::new();
    barrier.wait();
    for _ in 0..n {
        let r = ran.clone();
        let one = move || {
            r.fetch_add(1, Ordering::Relaxed);
        };
        match rng.below(8) {
            0 | 1 => {
                mine.push(js.schedule(one));
                scheduled += 1;
            }
            2 => {
                let deps: Vec<JobHandle> = mine.last().copied().into_iter().collect();
                mine.push(js.schedule_after(&deps, one));
                scheduled += 1;
            }
            3 => {
                let len = 1 + rng.below(16) as usize;
                let r = ran.clone();
                mine.push(js.parallel_for(0..len, Batch::Fixed(1), move |_| {
                    r.fetch_add(1, Ordering::Relaxed);
                }));
                scheduled += len as u64;
            }
            4 | 5 => {
                // Never flushed: published by shutdown or this thread's exit.
                js.job().batched().schedule(one);
                scheduled += 1;
            }
            6 => {
                if let Some(&h) = mine.get(rng.below(mine.len() as u64 + 1) as usize) {
                    if let Err(e) = js.try_complete(h) {
                        return Err(format!("drop race: waiting on an own job failed: {e}"));
                    }
                }
            }
            _ => std::thread::yield_now(),
        }
        if mine.len() > 64 {
            mine.drain(..32);
        }
    }
    drop(js);
    Ok(scheduled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn injected_payloads_are_recognised() {
        let p: Box<dyn Any + Send> = Box::new(job_message(3));
        assert!(is_injected(&*p));
        let q: Box<dyn Any + Send> = Box::new("some real bug");
        assert!(!is_injected(&*q));
        let r: Box<dyn Any + Send> = Box::new(String::from("index out of bounds"));
        assert!(!is_injected(&*r));
    }

    #[test]
    fn every_job_of_a_drop_race_runs() {
        install_quiet_hook();
        for seed in 0..6u64 {
            let mut rng = SplitMix64::new(seed);
            let js = JobSystem::builder()
                .workers(seed as usize % 3)
                .build()
                .unwrap();
            let r = drop_race(js, &mut rng, 300).unwrap();
            assert_eq!(r.ran, r.scheduled);
            assert!(r.threads >= 1);
        }
    }
}
