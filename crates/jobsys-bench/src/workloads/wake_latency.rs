//! W4 wake-latency: from schedule to start.
//!
//! - `cold`: every worker idle for at least 5 ms (asleep); the main thread
//!   schedules one job that records when it starts. Latency = start -
//!   schedule (the clock read just before the schedule call).
//! - `burst`: the same, but one job per worker (each spinning 50 µs);
//!   latency = until the last one has started.
//!
//! The main thread does not wait on the jobs while they start (a waiting
//! jobsys main thread would run the job itself): it polls the start flags
//! with `yield_now` in between, so it neither runs the jobs nor keeps a core
//! from a worker that the OS placed next to it (a spinning main thread on a
//! 2-core machine measures the scheduler's time slice, not the wake-up);
//! then it completes the jobs. Worker count 0 has no worker to wake and is
//! skipped. One row per idle policy; rayon for comparison; no serial form.
//!
//! `cold` also has a `futex-floor` row per worker count, interleaved with
//! the others: no job system, one helper thread blocked on a futex word;
//! the "schedule" is a change of the word and a futex `wake_one`, the job
//! the same. It is the least any design that sleeps its threads between
//! bursts pays for a wake-up after the same idle time (W6 measures wakes
//! after only 200 µs idle, which on a VM is not the same condition).

use super::emit;
use crate::count;
use crate::error::{check, Error, Result};
use crate::futex_floor::Helpers;
use crate::json::Row;
use crate::params;
use crate::pools::{floor_label, rayon_label, semantics_note, Pools, FLOOR};
use crate::runner::{interleave, split, Contestant, Plan};
use crate::spin::{now_ns, spin_ns};
use crate::stats;
use crate::Ctx;
use jobsys::JobSystem;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Workload name (subcommand, JSON file).
pub const NAME: &str = "wake-latency";

/// Idle time before every sample.
pub const IDLE: Duration = Duration::from_millis(5);

/// Uncounted samples at the start of every block. Each block starts a fresh
/// jobsys system, and on the 2-vCPU development VM the kernel leaves a new
/// spinning worker on the main thread's CPU for its first ~20 ms: in a
/// harness that records both threads' CPUs, samples 1-4 after a new system
/// ran the job on the scheduling thread's CPU 70-95 % of the time (cold p50
/// ~1.6 us), samples 5-10 almost never (~0.85 us, as a long-lived system).
/// A game keeps one system, so those first samples are not counted.
pub const BLOCK_WARMUP: usize = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Case {
    Cold,
    Burst,
}

impl Case {
    fn name(self) -> &'static str {
        match self {
            Case::Cold => "cold",
            Case::Burst => "burst",
        }
    }
    fn jobs(self, workers: usize) -> usize {
        match self {
            Case::Cold => 1,
            Case::Burst => workers,
        }
    }
}

/// The job: record the start time, then (burst) spin 50 µs.
#[inline(always)]
fn job(slot: &AtomicU64, case: Case) {
    slot.store(now_ns(), Ordering::Release);
    if case == Case::Burst {
        spin_ns(50_000);
    }
    count::bump();
}

/// Poll (yielding) until every slot holds a start time; the latest start.
fn wait_started(slots: &[AtomicU64], who: &str) -> Result<u64> {
    let t = Instant::now();
    loop {
        let mut last = 0;
        let mut all = true;
        for s in slots {
            let v = s.load(Ordering::Acquire);
            all &= v != 0;
            last = last.max(v);
        }
        if all {
            return Ok(last);
        }
        if t.elapsed() > Duration::from_secs(10) {
            return Err(Error::Verify(format!(
                "{who}: a job did not start within 10 s"
            )));
        }
        std::thread::yield_now();
    }
}

/// Poll (yielding) until `done` reaches `target`: the jobs have finished.
fn wait_done(done: &AtomicU64, target: u64, who: &str) -> Result<()> {
    let t = Instant::now();
    while done.load(Ordering::Acquire) < target {
        if t.elapsed() > Duration::from_secs(10) {
            return Err(Error::Verify(format!(
                "{who}: jobs did not finish within 10 s"
            )));
        }
        std::thread::yield_now();
    }
    Ok(())
}

fn reset(slots: &[AtomicU64]) {
    for s in slots {
        s.store(0, Ordering::Relaxed);
    }
}

/// Check the job count; the latency in µs.
fn finish(before: u64, slots: &[AtomicU64], t0: u64, last: u64, who: &str) -> Result<f64> {
    let ran = count::total() - before;
    check(ran == slots.len() as u64, || {
        format!("{who}: {ran} jobs ran, expected {}", slots.len())
    })?;
    Ok(last.saturating_sub(t0) as f64 / 1e3)
}

fn jobsys_sample(
    js: &JobSystem,
    case: Case,
    slots: &'static [AtomicU64],
    who: &str,
) -> Result<f64> {
    let mut hs = Vec::with_capacity(slots.len());
    reset(slots);
    let before = count::total();
    let t0 = now_ns();
    for s in slots {
        hs.push(js.schedule(move || job(s, case)));
    }
    let last = wait_started(slots, who)?;
    for h in hs.iter().rev() {
        js.try_complete(*h)?;
    }
    finish(before, slots, t0, last, who)
}

fn rayon_sample(
    pool: &rayon::ThreadPool,
    case: Case,
    slots: &'static [AtomicU64],
    who: &str,
) -> Result<f64> {
    static DONE: AtomicU64 = AtomicU64::new(0);
    let target = DONE.load(Ordering::Acquire) + slots.len() as u64;
    reset(slots);
    let before = count::total();
    let t0 = now_ns();
    for s in slots {
        pool.spawn(move || {
            job(s, case);
            DONE.fetch_add(1, Ordering::Release);
        });
    }
    let last = wait_started(slots, who)?;
    wait_done(&DONE, target, who)?;
    finish(before, slots, t0, last, who)
}

/// The `cold` floor: one helper thread blocked on a futex word.
struct Floor {
    sample: Arc<FloorSample>,
    helper: Helpers,
}

#[derive(Default)]
struct FloorSample {
    /// The job's start time (ns, `now_ns`); 0 = not yet.
    slot: [AtomicU64; 1],
    /// Jobs the helper has finished.
    done: AtomicU64,
}

impl Floor {
    fn start() -> Result<Floor> {
        let sample = Arc::new(FloorSample::default());
        let s = sample.clone();
        let helper = Helpers::start("w4-futex-floor", 1, move || {
            job(&s.slot[0], Case::Cold);
            s.done.fetch_add(1, Ordering::Release);
        })?;
        Ok(Floor { sample, helper })
    }

    /// One sample: bump the word and wake the helper; the latency in µs.
    fn sample(&self, who: &str) -> Result<f64> {
        let s = &*self.sample;
        reset(&s.slot);
        let before = count::total();
        let target = s.done.load(Ordering::Acquire) + 1;
        let t0 = now_ns();
        self.helper.wake_one();
        let last = wait_started(&s.slot, who)?;
        wait_done(&s.done, target, who)?;
        finish(before, &s.slot, t0, last, who)
    }
}

fn leak_slots(n: usize) -> &'static [AtomicU64] {
    Box::leak(
        (0..n)
            .map(|_| AtomicU64::new(0))
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    )
}

/// Run W4 and report it.
pub fn run(ctx: &Ctx) -> Result<()> {
    let samples = ctx.samples_or(1000, 20);
    // Blocks of 10 samples, each sample after IDLE; BLOCK_WARMUP uncounted
    // samples start each block (jobsys: a fresh system per block).
    let (blocks, per_block) = split(samples, 10);
    let mut workers: Vec<usize> = ctx.workers.iter().copied().filter(|&w| w > 0).collect();
    if workers.is_empty() {
        workers.push(1);
    }
    let bar = ctx.progress.bar(NAME, (workers.len() * 2) as u64);
    let mut rows = Vec::new();
    for case in [Case::Cold, Case::Burst] {
        for &w in &workers {
            bar.message(format!("{} workers={w}", case.name()));
            let pools = Pools::new(&ctx.policies, w)?;
            let k = case.jobs(w);
            let floor = match case {
                Case::Cold => Some(Floor::start()?),
                Case::Burst => None,
            };
            let mut cs = Vec::new();
            for sys in &pools.jobsys {
                let slots = leak_slots(k);
                let who = format!(
                    "{NAME} {} jobsys[{}] workers={w}",
                    case.name(),
                    sys.policy.name
                );
                let s = sys.clone();
                cs.push(
                    Contestant::new(sys.label(), 1, blocks, per_block, move || {
                        std::thread::sleep(IDLE);
                        jobsys_sample(&s.get()?, case, slots, &who)
                    })
                    .around_block(sys.hook()),
                );
            }
            let pool = &pools.rayon;
            let slots = leak_slots(k);
            let who = format!("{NAME} {} rayon workers={w}", case.name());
            cs.push(Contestant::new(
                rayon_label(w),
                1,
                blocks,
                per_block,
                move || {
                    std::thread::sleep(IDLE);
                    rayon_sample(pool, case, slots, &who)
                },
            ));
            if let Some(f) = &floor {
                let who = format!("{NAME} {} {FLOOR} workers={w}", case.name());
                cs.push(Contestant::new(
                    floor_label(w, 1),
                    1,
                    blocks,
                    per_block,
                    move || {
                        std::thread::sleep(IDLE);
                        f.sample(&who)
                    },
                ));
            }
            interleave(
                &mut cs,
                Plan {
                    block_warmup: BLOCK_WARMUP,
                    ..Plan::throughput()
                },
            )?;
            for (i, c) in cs.iter().enumerate() {
                let mut params = params! {"jobs" => k, "idle_ms" => IDLE.as_secs_f64() * 1e3};
                if let Some(sys) = pools.jobsys.get(i) {
                    sys.add_params(&mut params);
                }
                rows.push(Row::measured(
                    NAME,
                    case.name(),
                    &c.label,
                    params,
                    "us",
                    &stats::summarize(&c.samples),
                    Some(c.samples.clone()),
                    &ctx.machine,
                ));
            }
            bar.inc();
        }
    }
    bar.finish();
    let notes = vec![
        format!(
            "us from just before schedule to job start (burst: to the last of `workers` jobs of 50 us); {samples} samples per row, each after >= {} ms idle, interleaved in blocks of {per_block} after {BLOCK_WARMUP} uncounted (a fresh jobsys system per block)",
            IDLE.as_millis()
        ),
        semantics_note(),
        "the main thread polls the start flags with yield_now (it does not help); workers = 0 skipped; rayon jobs via pool.spawn".into(),
        format!("{FLOOR} (cold only): one helper thread blocked on a futex, the schedule = change the word + futex wake_one; the least any design that sleeps its threads between bursts pays here"),
    ];
    emit(ctx, NAME, "W4 wake-latency", &notes, &rows, true, &[])?;
    let svg = crate::plot::wake_latency(&rows, &ctx.out)?;
    ctx.progress.print(&format!("   plot: {}\n", svg.display()));
    Ok(())
}
