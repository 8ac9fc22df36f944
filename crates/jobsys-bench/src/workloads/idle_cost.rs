//! W5 idle-cost: CPU burned for nothing.
//!
//! 300 frames; each frame the main thread spins 2 ms (serial work), then
//! schedules 64 jobs of 5 µs and waits for them. Figure: process CPU time
//! (user + sys from `getrusage(RUSAGE_SELF)`) minus the useful work, as a
//! share of one core over the wall time ("extra cores"), and the wall time
//! per frame. Useful work uses the measured durations of the two spins.
//!
//! `getrusage` counts every thread of the process, so nothing else may run
//! meanwhile: the other pools of the group are idle (asleep: each run starts
//! after a 5 ms settle, longer than any policy's spin).
//!
//! For every worker count w >= 1 a `futex-floor` row, interleaved with the
//! others: no job system, w helper threads blocked on one futex word that
//! holds the frame generation. Each frame the main thread resets a shared
//! job index, bumps the generation and wakes exactly one helper (one wake
//! per frame: the least any design that sleeps between frames pays); both
//! take jobs by `fetch_add` on the index, then the main thread spins until
//! all 64 are done, and the helper blocks again.
//!
//! For w >= 2 also a `futex-floor-all` row: the same, but every helper is
//! woken each frame (w wakes per frame), as a design that runs the burst on
//! all its threads must; the gap between the two floors is what spreading
//! a short burst over more threads costs in wakes.

use super::emit;
use crate::count;
use crate::error::{check, Error, Result};
use crate::futex_floor::Helpers;
use crate::json::{Label, Row};
use crate::params;
use crate::pools::{floor_label, rayon_label, semantics_note, Pools, FLOOR, FLOOR_ALL};
use crate::runner::{interleave, Contestant, Plan};
use crate::spin::{self, spin_ns};
use crate::stats;
use crate::Ctx;
use jobsys::JobSystem;
use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Workload name (subcommand, JSON file).
pub const NAME: &str = "idle-cost";

const MAIN_WORK_NS: u64 = 2_000_000;
const JOBS: usize = 64;
const JOB_NS: u64 = 5_000;
const WARMUP_FRAMES: usize = 5;

fn job() {
    spin_ns(JOB_NS);
    count::bump();
}

/// User + system CPU time of the whole process, ns.
pub fn process_cpu_ns() -> Result<u64> {
    // SAFETY: `rusage` is plain old data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid, writable `rusage`.
    let r = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if r != 0 {
        return Err(Error::Io(std::io::Error::last_os_error()));
    }
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    Ok(ns(ru.ru_utime) + ns(ru.ru_stime))
}

/// The floor: `w` helpers blocked on one futex word, one woken per frame
/// (or all of them: `wake_all`).
struct FloorPool {
    jobs: Arc<FloorJobs>,
    helpers: Helpers,
    wake_all: bool,
}

#[derive(Default)]
struct FloorJobs {
    /// The next job to take; `JOBS` and above: none left.
    next: AtomicUsize,
    /// Jobs of this frame finished.
    done: AtomicUsize,
}

impl FloorJobs {
    /// Take and run jobs until none is left.
    fn take(&self) {
        while self.next.fetch_add(1, Ordering::AcqRel) < JOBS {
            job();
            self.done.fetch_add(1, Ordering::Release);
        }
    }
}

impl FloorPool {
    fn start(helpers: usize, wake_all: bool) -> Result<FloorPool> {
        let jobs = Arc::new(FloorJobs {
            // Nothing to take before the first frame.
            next: AtomicUsize::new(JOBS),
            done: AtomicUsize::new(0),
        });
        let j = jobs.clone();
        let helpers = Helpers::start("w5-futex-floor", helpers, move || j.take())?;
        Ok(FloorPool {
            jobs,
            helpers,
            wake_all,
        })
    }

    /// The jobs of one frame: wake one helper (or all), share the jobs,
    /// spin until all are done.
    fn run_jobs(&self) {
        let j = &*self.jobs;
        // `done` first: a helper late from the last frame that takes a job
        // of this one counts it after the reset.
        j.done.store(0, Ordering::Relaxed);
        j.next.store(0, Ordering::Release);
        if self.wake_all {
            self.helpers.wake_all();
        } else {
            self.helpers.wake_one();
        }
        j.take();
        while j.done.load(Ordering::Acquire) < JOBS {
            std::hint::spin_loop();
        }
    }
}

#[derive(Clone, Copy)]
enum Exec<'a> {
    Jobsys(&'a JobSystem),
    Rayon(&'a rayon::ThreadPool),
    Floor(&'a FloorPool),
    Serial,
}

fn frame(exec: Exec<'_>, hs: &mut Vec<jobsys::JobHandle>) -> Result<()> {
    spin_ns(MAIN_WORK_NS);
    match exec {
        Exec::Jobsys(js) => {
            hs.clear();
            for _ in 0..JOBS {
                hs.push(js.schedule(job));
            }
            for h in hs.iter().rev() {
                js.try_complete(*h)?;
            }
        }
        Exec::Rayon(pool) => pool.in_place_scope(|s| {
            for _ in 0..JOBS {
                s.spawn(|_| job());
            }
        }),
        Exec::Floor(pool) => pool.run_jobs(),
        Exec::Serial => {
            for _ in 0..JOBS {
                job();
            }
        }
    }
    Ok(())
}

/// One run of `frames` frames: extra cores; pushes the wall ms per frame.
fn one_run(exec: Exec<'_>, frames: usize, walls: &RefCell<Vec<f64>>, who: &str) -> Result<f64> {
    let mut hs = Vec::with_capacity(JOBS);
    let before = count::total();
    for _ in 0..WARMUP_FRAMES {
        frame(exec, &mut hs)?;
    }
    let cpu0 = process_cpu_ns()?;
    let t = Instant::now();
    for _ in 0..frames {
        frame(exec, &mut hs)?;
    }
    let wall = t.elapsed().as_nanos() as f64;
    let cpu = (process_cpu_ns()? - cpu0) as f64;
    let ran = count::total() - before;
    let want = ((frames + WARMUP_FRAMES) * JOBS) as u64;
    check(ran == want, || {
        format!("{who}: {ran} jobs ran, expected {want}")
    })?;
    let cal = spin::calibrate();
    let useful = frames as f64
        * (cal.spin_actual_ns(MAIN_WORK_NS) + JOBS as f64 * cal.spin_actual_ns(JOB_NS));
    walls.borrow_mut().push(wall / frames as f64 / 1e6);
    Ok((cpu - useful) / wall)
}

/// Run W5 and report it.
pub fn run(ctx: &Ctx) -> Result<()> {
    let frames = ctx.size(300, 20);
    let runs = ctx.samples_or(3, 1);
    let bar = ctx.progress.bar(NAME, ctx.workers.len() as u64);
    let mut rows = Vec::new();
    let serial_walls = RefCell::new(Vec::new());
    let mut serial_extra = Vec::new();
    for &w in &ctx.workers {
        bar.message(format!("workers={w}"));
        let pools = Pools::new(&ctx.policies, w)?;
        // jobsys per policy, rayon, the floor, the wake-all floor.
        let walls: Vec<RefCell<Vec<f64>>> = (0..pools.jobsys.len() + 3)
            .map(|_| RefCell::new(Vec::new()))
            .collect();
        let floor = if w >= 1 {
            Some(FloorPool::start(w, false)?)
        } else {
            None
        };
        // With one helper, waking all is waking one.
        let floor_all = if w >= 2 {
            Some(FloorPool::start(w, true)?)
        } else {
            None
        };
        let mut cs = Vec::new();
        for (sys, walls) in pools.jobsys.iter().zip(&walls) {
            let who = format!("{NAME} jobsys[{}] workers={w}", sys.policy.name);
            let s = sys.clone();
            cs.push(
                Contestant::new(sys.label(), 0, runs, 1, move || {
                    one_run(Exec::Jobsys(&s.get()?), frames, walls, &who)
                })
                .around_block(sys.hook()),
            );
        }
        let (pool, rw) = (&pools.rayon, &walls[pools.jobsys.len()]);
        let who = format!("{NAME} rayon workers={w}");
        cs.push(Contestant::new(rayon_label(w), 0, runs, 1, move || {
            one_run(Exec::Rayon(pool), frames, rw, &who)
        }));
        if let Some(f) = &floor {
            let fw = &walls[pools.jobsys.len() + 1];
            let who = format!("{NAME} {FLOOR} workers={w}");
            cs.push(Contestant::new(
                floor_label(w, w + 1),
                0,
                runs,
                1,
                move || one_run(Exec::Floor(f), frames, fw, &who),
            ));
        }
        if let Some(f) = &floor_all {
            let fw = &walls[pools.jobsys.len() + 2];
            let who = format!("{NAME} {FLOOR_ALL} workers={w}");
            let mut label = floor_label(w, w + 1);
            label.imp = FLOOR_ALL.into();
            cs.push(Contestant::new(label, 0, runs, 1, move || {
                one_run(Exec::Floor(f), frames, fw, &who)
            }));
        }
        let sw = &serial_walls;
        cs.push(Contestant::new(
            Label::serial(),
            0,
            runs.div_ceil(ctx.workers.len()),
            1,
            move || one_run(Exec::Serial, frames, sw, "idle-cost serial"),
        ));
        interleave(
            &mut cs,
            Plan {
                settle: Duration::from_millis(5),
                block_warmup: 0,
            },
        )?;
        serial_extra.extend(cs.pop().expect("serial").samples);
        for (i, c) in cs.iter().enumerate() {
            let mut params =
                params! {"frames" => frames, "main_work_ms" => 2, "jobs" => JOBS, "job_us" => 5};
            if let Some(sys) = pools.jobsys.get(i) {
                let c = sys.counters();
                let n = (c.iterations as usize * (frames + WARMUP_FRAMES)).max(1) as f64;
                for (k, v) in [
                    ("sleeps_per_frame", c.sleeps),
                    ("wakes_per_frame", c.wakes),
                    ("futile_wakes_per_frame", c.futile_wakes),
                ] {
                    params.insert(k.into(), (v as f64 / n).into());
                }
            }
            rows.push(Row::measured(
                NAME,
                "extra-cpu",
                &c.label,
                params.clone(),
                "cores",
                &stats::summarize(&c.samples),
                None,
                &ctx.machine,
            ));
            rows.push(Row::measured(
                NAME,
                "frame-wall",
                &c.label,
                params,
                "ms",
                &stats::summarize(&walls[i].borrow()),
                None,
                &ctx.machine,
            ));
        }
        bar.inc();
    }
    bar.finish();
    let params = params! {"frames" => frames, "main_work_ms" => 2, "jobs" => JOBS, "job_us" => 5};
    for (case, unit, s) in [
        ("extra-cpu", "cores", &serial_extra),
        ("frame-wall", "ms", &serial_walls.borrow()),
    ] {
        rows.push(Row::measured(
            NAME,
            case,
            &Label::serial(),
            params.clone(),
            unit,
            &stats::summarize(s),
            None,
            &ctx.machine,
        ));
    }
    let rank = |r: &Row| {
        (
            r.case != "extra-cpu",
            r.imp != "serial",
            r.workers,
            r.imp != "jobsys",
            r.imp == FLOOR,
            r.imp == FLOOR_ALL,
        )
    };
    rows.sort_by_key(rank);
    let minus_serial = |r: &Row, all: &[Row]| match crate::table::serial_of(r, all) {
        Some(s) if r.imp != "serial" && r.case == "extra-cpu" => {
            format!("{:+.3}", r.median - s.median)
        }
        _ => "-".into(),
    };
    let notes = vec![
        format!(
            "{frames} frames per run: 2 ms serial spin on the main thread, then 64 jobs of 5 us, wait; {runs} runs per row, interleaved, 5 ms settle before each"
        ),
        "extra-cpu = (user+sys CPU of the process - useful work) / wall, in cores; -serial = minus the serial row (xserial of a near-zero baseline means little)".into(),
        semantics_note(),
        format!("{FLOOR} (workers >= 1; threads = w helpers + main): the least a design that sleeps between frames burns here: one futex wake per frame, jobs shared by one atomic index"),
        format!("{FLOOR_ALL} (workers >= 2): the same with every helper woken each frame (w wakes): the least a design pays that runs the burst on all its threads"),
    ];
    emit(
        ctx,
        NAME,
        "W5 idle-cost",
        &notes,
        &rows,
        false,
        &[("-serial", &minus_serial)],
    )
}
