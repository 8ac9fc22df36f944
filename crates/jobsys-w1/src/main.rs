//! `jobsys-w1`: one measurement block of W1 (spawn-empty) on jobsys, for
//! `jobsys-lab trace-cost`, which builds this program twice, once without
//! jobsys's `trace` feature and once with it (`--features trace`), and runs
//! the two builds in turns.
//!
//! A block: build a job system (`--workers`, `--policy` as
//! `JOBSYS_IDLE_POLICY` spells it, default spin-then-sleep), wait
//! 1 ms for its workers to start, run `--warmup` uncounted iterations, then
//! `--samples` counted ones; print one JSON line on stdout:
//!
//! ```text
//! {"trace_compiled":false,"recording":false,"case":"single","workers":0,"jobs":65000,
//!  "policy":"spin-then-sleep(30us)","events_per_sample":0,"samples":[54.9,55.1]}
//! ```
//!
//! `trace_compiled` is `jobsys::trace::COMPILED`: whether the jobsys linked
//! into this binary has its event sites. With `--record` (a `trace` build
//! only) every iteration is recorded: `trace_start` before it, `trace_stop`
//! after it, both outside the timed region; a capture that drops events
//! is an error, since the figure would then time the drop path.
//!
//! `--hooks elsewhere` (a `trace` build) keeps a second job system with
//! profiler hooks that do nothing alive during the run, so the measured
//! system (without hooks) runs with the process-wide event flag on, as
//! while another system records; `--hooks here` installs those hooks on
//! the measured system itself (docs/profiling.md, "Cost").
//!
//! The kernels and the job counter are jobsys-bench's own source files
//! (`#[path]` below), so this measures exactly what W1 measures.
//!
//! `--active N` calls `set_active_workers(N)` after the build: with
//! `--workers 1 --active 0` the one worker is benched (parked, no thief),
//! so `join` takes its deque path (it runs inline only in a system built
//! with no workers) and the count is as deterministic as at 0 workers
//! (`scripts/w1-budget.sh`, `nested-deque`).
//!
//! `--worker-jobs` adds `"worker_jobs":[N0,N1,..]` to the line: the jobs
//! each worker finished in the whole run, warm-up included (`worker_stats`;
//! for `flat:floor-thief`, the jobs its helper ran), so a
//! per-thread instruction count (`valgrind --tool=callgrind
//! --separate-threads=yes`) can be divided by the jobs that thread ran; the
//! main thread ran the rest.
//!
//! `--case CASE:FLOOR` (e.g. `single:floor-cl`) runs one of W1's floor
//! kernels instead (`w1_floor.rs`: no job system; one thread, and one
//! helper for `flat:floor-thief`, reported as its `workers`), so that
//! `scripts/w1-instructions.sh` counts them next to jobsys's; they take no
//! `--workers`, `--record` or `--hooks`.

#[path = "../../jobsys-bench/src/count.rs"]
mod count;
#[path = "../../jobsys-bench/src/workloads/w1_floor.rs"]
mod w1_floor;
#[path = "../../jobsys-bench/src/workloads/w1_kernels.rs"]
mod w1_kernels;

use jobsys::{IdlePolicy, JobSystem};
use std::time::{Duration, Instant};
use w1_floor::Floor;
use w1_kernels::{Case, Sizes};

const USAGE: &str =
    "usage: jobsys-w1 --case single|flat|nested|pfor-empty|CASE:FLOOR [--workers N] \
[--active N] [--policy P] [--samples N] [--warmup N] [--quick] [--record] \
[--hooks none|elsewhere|here] [--worker-jobs]\n\
floors (no job system): single:floor-cl single:floor-cl-nofence flat:floor-cl \
flat:floor-cl-nofence flat:floor-mem128 flat:floor-mem64 flat:floor-thief nested:floor-fence";

/// The command line.
struct Args {
    case: Case,
    /// `--case CASE:FLOOR`: this floor kernel instead of jobsys.
    floor: Option<Floor>,
    workers: usize,
    /// `--active N`: `set_active_workers(N)` after the build.
    active: Option<usize>,
    policy: IdlePolicy,
    samples: usize,
    warmup: usize,
    quick: bool,
    record: bool,
    hooks: Hooks,
    /// `--worker-jobs`: print each worker's finished jobs.
    worker_jobs: bool,
}

/// Where profiler hooks (that do nothing) are installed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hooks {
    None,
    Elsewhere,
    Here,
}

impl Hooks {
    fn name(self) -> &'static str {
        match self {
            Hooks::None => "none",
            Hooks::Elsewhere => "elsewhere",
            Hooks::Here => "here",
        }
    }
}

/// Profiler hooks with every method left empty.
struct NoopHooks;
impl jobsys::ProfilerHooks for NoopHooks {}

fn parse(mut it: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut a = Args {
        case: Case::Single,
        floor: None,
        workers: 0,
        active: None,
        policy: IdlePolicy::default(),
        samples: 10,
        warmup: 1,
        quick: false,
        record: false,
        hooks: Hooks::None,
        worker_jobs: false,
    };
    let mut case = None;
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        let number = |name: &str, v: String| {
            v.parse::<usize>()
                .map_err(|_| format!("{name}: not a number: {v:?}"))
        };
        match arg.as_str() {
            "--case" => {
                let v = value("--case")?;
                a.floor = Floor::parse(&v);
                let c = a.floor.map(|f| f.case).or_else(|| Case::parse(&v));
                case = Some(c.ok_or_else(|| format!("unknown case {v:?}\n{USAGE}"))?);
            }
            "--workers" => a.workers = number("--workers", value("--workers")?)?,
            "--active" => a.active = Some(number("--active", value("--active")?)?),
            "--policy" => {
                let v = value("--policy")?;
                a.policy = v.parse().map_err(|e| format!("--policy: {e}"))?;
            }
            "--samples" => a.samples = number("--samples", value("--samples")?)?,
            "--warmup" => a.warmup = number("--warmup", value("--warmup")?)?,
            "--quick" => a.quick = true,
            "--record" => a.record = true,
            "--worker-jobs" => a.worker_jobs = true,
            "--hooks" => {
                a.hooks = match value("--hooks")?.as_str() {
                    "none" => Hooks::None,
                    "elsewhere" => Hooks::Elsewhere,
                    "here" => Hooks::Here,
                    v => return Err(format!("--hooks: {v:?} is not none, elsewhere or here")),
                }
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    a.case = case.ok_or_else(|| format!("--case is required\n{USAGE}"))?;
    if a.floor.is_some()
        && (a.workers != 0 || a.active.is_some() || a.record || a.hooks != Hooks::None)
    {
        return Err(
            "a floor case runs no job system: no --workers, --active, --record or --hooks".into(),
        );
    }
    Ok(a)
}

/// Records each iteration when `--record` was given (a `trace` build;
/// without the feature, `start` and `stop` do nothing).
#[cfg_attr(not(feature = "trace"), allow(dead_code))]
struct Recorder {
    on: bool,
    /// Buffer size per thread for one iteration's events.
    events_per_thread: usize,
}

impl Recorder {
    /// Start a capture (before the timed region).
    fn start(&self, js: &JobSystem) -> Result<(), String> {
        #[cfg(feature = "trace")]
        if self.on
            && !js.trace_start_with(jobsys::trace::TraceConfig {
                events_per_thread: self.events_per_thread,
            })
        {
            return Err("trace_start: a capture is already running".into());
        }
        let _ = js;
        Ok(())
    }

    /// Stop the capture (after the timed region): (events, dropped).
    fn stop(&self, js: &JobSystem) -> (u64, u64) {
        #[cfg(feature = "trace")]
        if self.on {
            let t = js.trace_stop();
            return (t.event_count() as u64, t.dropped());
        }
        let _ = js;
        (0, 0)
    }
}

/// A JSON string literal (the policy name).
fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push('?'),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn run(a: &Args) -> Result<String, String> {
    if a.record && !cfg!(feature = "trace") {
        return Err("--record needs the `trace` build (cargo build --features trace)".into());
    }
    let sizes = if a.quick { Sizes::QUICK } else { Sizes::FULL };
    let jobs = sizes.jobs(a.case);
    // About 5 events per job on the calling thread (ready, begin, end, wait
    // begin/end); 8 per job leaves room, and a drop is caught below.
    let rec = Recorder {
        on: a.record,
        events_per_thread: (jobs * 8).next_power_of_two().max(1 << 12),
    };
    let hooked = || jobsys::JobSystem::builder().profiler(std::sync::Arc::new(NoopHooks));
    let _other = match a.hooks {
        Hooks::Elsewhere => Some(hooked().workers(0).build().map_err(|e| e.to_string())?),
        _ => None,
    };
    let builder = match a.hooks {
        Hooks::Here => hooked(),
        _ => JobSystem::builder(),
    };
    let js = builder
        .workers(a.workers)
        .idle_policy(a.policy)
        .build()
        .map_err(|e| e.to_string())?;
    if let Some(n) = a.active {
        js.set_active_workers(n)
            .map_err(|e| format!("--active: {e}"))?;
    }
    let mut hs = Vec::with_capacity(sizes.flat);
    std::thread::sleep(Duration::from_millis(1));

    let mut samples = Vec::with_capacity(a.samples);
    let mut events = 0u64;
    for i in 0..a.warmup + a.samples {
        rec.start(&js)?;
        let before = count::total();
        let t = Instant::now();
        w1_kernels::iteration(&js, a.case, &sizes, &mut hs).map_err(|e| e.to_string())?;
        let ns = t.elapsed().as_nanos() as f64;
        let ran = count::total() - before;
        let (ev, dr) = rec.stop(&js);
        if ran != jobs as u64 {
            return Err(format!(
                "{}: {ran} jobs ran, expected {jobs}",
                a.case.name()
            ));
        }
        if dr > 0 {
            return Err(format!(
                "the capture dropped {dr} of {} events ({} per thread): \
                 the figure would time the drop path",
                ev + dr,
                rec.events_per_thread
            ));
        }
        if i >= a.warmup {
            samples.push(ns / jobs as f64);
            events += ev;
        }
    }
    let worker_jobs: Vec<u64> = js.worker_stats().iter().map(|s| s.jobs_finished).collect();
    drop(js); // joins the workers
    let events = events as f64 / samples.len().max(1) as f64;
    let line = json_line(a, a.case.name(), a.workers, jobs, events, &samples);
    Ok(if a.worker_jobs {
        with_worker_jobs(line, &worker_jobs)
    } else {
        line
    })
}

/// `--case CASE:FLOOR`: the floor kernel's samples, in the same line
/// (no job system, so no events).
fn run_floor(a: &Args, f: Floor) -> Result<String, String> {
    let sizes = if a.quick { Sizes::QUICK } else { Sizes::FULL };
    let jobs = sizes.jobs(f.case);
    let mut bufs = w1_floor::Buffers::default();
    let mut samples = Vec::with_capacity(a.samples);
    for i in 0..a.warmup + a.samples {
        let before = count::total();
        let t = Instant::now();
        w1_floor::iteration(f, &sizes, &mut bufs)?;
        let ns = t.elapsed().as_nanos() as f64;
        let ran = count::total() - before;
        if ran != jobs as u64 {
            return Err(format!("{}: {ran} jobs ran, expected {jobs}", f.name()));
        }
        if i >= a.warmup {
            samples.push(ns / jobs as f64);
        }
    }
    let line = json_line(a, &f.name(), f.threads() - 1, jobs, 0.0, &samples);
    if a.worker_jobs && f.threads() > 1 {
        drop(bufs); // joins the helper: its count is final
        return Ok(with_worker_jobs(line, &[w1_floor::thief_share().1]));
    }
    Ok(line)
}

/// `line` with `"worker_jobs":[..]` added before its closing brace.
fn with_worker_jobs(mut line: String, jobs: &[u64]) -> String {
    let list: Vec<String> = jobs.iter().map(|n| n.to_string()).collect();
    line.pop(); // the closing brace
    line.push_str(&format!(",\"worker_jobs\":[{}]}}", list.join(",")));
    line
}

/// The one JSON line on stdout.
fn json_line(
    a: &Args,
    case: &str,
    workers: usize,
    jobs: usize,
    events: f64,
    samples: &[f64],
) -> String {
    let list: Vec<String> = samples.iter().map(|v| v.to_string()).collect();
    format!(
        "{{\"trace_compiled\":{},\"recording\":{},\"hooks\":\"{}\",\"case\":{},\"workers\":{},\"jobs\":{jobs},\
         \"policy\":{},\"events_per_sample\":{events},\"samples\":[{}]}}",
        jobsys::trace::COMPILED,
        a.record,
        a.hooks.name(),
        json_str(case),
        workers,
        json_str(&a.policy.name()),
        list.join(",")
    )
}

fn main() {
    let line = parse(std::env::args().skip(1)).and_then(|a| match a.floor {
        Some(f) => run_floor(&a, f),
        None => run(&a),
    });
    match line {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("jobsys-w1: {e}");
            std::process::exit(2);
        }
    }
}
