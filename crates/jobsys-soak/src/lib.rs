//! `jobsys-soak --minutes M --seed S` (`cargo run --release -p jobsys-soak
//! -- --minutes M --seed S`): random frames, frame after frame, each checked
//! against a serial replay, with injected faults, a watchdog and a memory
//! bound. A correctness test, not a benchmark: it lives apart from
//! `jobsys-bench` and borrows only its W3 generator ([`jobsys_bench::graph`]),
//! busy-wait, progress output and error type.
//!
//! # What runs
//! Until `M` minutes have passed (or `--frames N` frames ran): a random frame
//! ([`plan`]: the W3 generator of [`jobsys_bench::graph`] with random sizes; job
//! durations 0–50 µs of busy-wait; random priorities; single jobs through
//! `schedule_after`, `job().desc(..).after(..)`, `job().batched().after(..)` +
//! `flush`, jobs that schedule and complete child jobs, jobs that `join`;
//! loops through `job().desc(..).parallel_for` and `job().after(..).parallel_for_chunked`; sync
//! points; and now and then a borrowing `scope`, a nested main-thread `join`,
//! a hot zone closed on the main thread or by a job, a burst of 100k tiny
//! jobs, and an idle gap of 5–50 ms mid-graph so the workers fall asleep)
//! is run ([`frame`]) and checked ([`check`]). Every 1–16 frames the system
//! is retired — plainly, or through the clone-drop race of [`faults`] — and
//! a new one is built ([`system`]): 0..=2·cores workers, a random idle
//! policy (spin-then-sleep, whipping-boy, always-spin, adaptive, with
//! random parameters), priority inheritance on or off.
//!
//! # What is checked (any mismatch: exit non-zero)
//! - Per frame, against the serial replay ([`check`]): each job ran exactly
//!   once and started after all its dependencies ended; each parallel_for
//!   index ran exactly once; every computed value matches; exactly the jobs
//!   with an injected panic report `Panicked` (not via a dependency, with
//!   their own message), exactly their transitive dependents report it via a
//!   dependency and never ran, nothing else fails; the frame's combine fails
//!   iff something failed. The extra phases check themselves ([`phases`]).
//! - Per retirement by drop race: every job scheduled into any clone ran
//!   exactly once by the time the last clone was dropped ([`faults`]
//!   documents the outcome).
//! - A watchdog ([`watchdog`]): a frame, build or retirement that takes
//!   longer than `--frame-timeout` (30 s) prints the step, its phase, the
//!   system configuration and the seed, and exits with status 3.
//! - Memory ([`rss`]): `VmRSS` after the warm-up (the first 10 % of the run,
//!   at most 30 s or 10 % of `--frames`; the first frame always has a
//!   burst) and at the end, both read with no job system alive after
//!   `malloc_trim`, must not grow by more than `--rss-bound-mib` (64 MiB).
//!   Why 64 MiB: a system's memory (slot pages, kept failed slots, deques)
//!   is freed when it is dropped, so between two such points nothing of
//!   jobsys should remain; what legitimately differs is allocator caching
//!   (per-thread arenas that keep up to a few MiB each with up to 2·cores
//!   workers plus the drop-race threads; glibc's cache of the stacks of
//!   joined threads, at most 40 MiB of mappings of which only touched pages
//!   count) and fragmentation left by the largest transient (a 100k burst:
//!   100k 128-byte slots plus handles and counters, about 16 MiB). Measured
//!   here: 1–6 MiB of growth over 1–2 minute runs.
//!   64 MiB is well above that, yet a leak of one slot per job — the likely
//!   failure — is 128 B × millions of jobs per minute, far above it within
//!   a 2-minute run. The thread count must also be back where it was (every
//!   worker joined). Without `/proc`, both checks are skipped with a message.
//!
//! Everything random comes from `--seed` (SplitMix64), so a failing frame
//! comes back with `--seed S --frames N+1` (plus the same `--quick`,
//! `--workers`, `--policy`): same frames, same systems; thread timing
//! differs from run to run.
//!
//! # Documented outcomes
//! - A panicking job: failed, its dependents skipped and failed via the
//!   dependency with the same message; its worker survives; the first
//!   waiter gets the payload, later waits the message.
//! - A panic in one side of `join` comes out of `join` (here: the job
//!   calling it fails with that panic); a panic in a scope job is re-raised
//!   by `scope` after all the scope's jobs finished.
//! - Dropping a clone while other threads schedule into theirs: nothing
//!   happens until the last clone goes; the last drop runs every job still
//!   outstanding and joins the workers; no job is lost or run twice.

pub mod check;
pub mod faults;
pub mod frame;
pub mod phases;
pub mod plan;
pub mod rss;
pub mod system;
pub mod watchdog;

use check::Tally;
use clap::Parser;
use jobsys_bench::graph::SplitMix64;
use jobsys_bench::json::Machine;
use jobsys_bench::progress::Progress;
use jobsys_bench::stats;
pub use jobsys_bench::{Error, Result};
use plan::{FramePlan, Sizes};
use rss::ProcStatus;
use std::ffi::OsString;
use std::io::IsTerminal;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};
use system::{Choices, SystemConfig};
use watchdog::Watchdog;

/// A duration in minutes, fractions allowed (kept as milliseconds so the
/// command line stays `Eq`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Minutes(pub u64);

impl Minutes {
    /// As a `Duration`.
    pub fn duration(self) -> Duration {
        Duration::from_millis(self.0)
    }
}

fn parse_minutes(s: &str) -> std::result::Result<Minutes, String> {
    let m: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number of minutes"))?;
    if !(m.is_finite() && m > 0.0 && m <= 1e6) {
        return Err(format!("{s:?}: minutes must be > 0"));
    }
    Ok(Minutes((m * 60_000.0).round().max(1.0) as u64))
}

fn parse_seed(s: &str) -> std::result::Result<u64, String> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(&h.replace('_', ""), 16),
        None => s.replace('_', "").parse(),
    }
    .map_err(|_| format!("{s:?} is not a seed (decimal or 0x-hex u64)"))
}

/// Random frame graphs frame after frame, each checked against a serial
/// replay, with injected faults, a watchdog and a memory bound: a
/// correctness test of jobsys (not a benchmark).
#[derive(Parser, Debug, Clone, PartialEq, Eq)]
#[command(name = "jobsys-soak", version, long_about = None)]
pub struct SoakArgs {
    /// Run this many minutes (fractions allowed, e.g. 0.05). Default: 1,
    /// unless --frames is given.
    #[arg(long, value_name = "M", value_parser = parse_minutes)]
    pub minutes: Option<Minutes>,
    /// Stop after this many frames (with --minutes: whichever comes first).
    #[arg(long, value_name = "N")]
    pub frames: Option<u64>,
    /// Seed of everything random (decimal or 0x-hex). Default: from the
    /// clock, printed.
    #[arg(long, value_name = "S", value_parser = parse_seed)]
    pub seed: Option<u64>,
    /// Watchdog bound: a frame (or a system build or retirement) taking
    /// longer ends the process with exit status 3.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub frame_timeout: u64,
    /// Fail when RSS at the end exceeds RSS after the warm-up by more.
    #[arg(long, value_name = "MIB", default_value_t = 64)]
    pub rss_bound_mib: u64,
    /// Small frames (the random sizes of a quick run).
    #[arg(long)]
    pub quick: bool,
    /// Worker counts to pick from, comma-separated. Default: 0..=2 x cores.
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub workers: Option<Vec<usize>>,
    /// jobsys idle policies to pick from, comma-separated (spin-then-sleep,
    /// whipping-boy, always-spin, adaptive). Default: all, with random
    /// parameters.
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub policy: Option<Vec<String>>,
}

/// Everything a soak needs (the command builds it from [`SoakArgs`]).
#[derive(Clone, Debug)]
pub struct Options {
    /// Stop after this long (checked between frames).
    pub duration: Option<Duration>,
    /// Stop after this many frames.
    pub frames: Option<u64>,
    /// The seed.
    pub seed: u64,
    /// Frame sizes.
    pub sizes: Sizes,
    /// Worker counts and policies to pick from.
    pub choices: Choices,
    /// Watchdog bound per step.
    pub frame_timeout: Duration,
    /// RSS growth bound, KiB.
    pub rss_bound_kib: u64,
    /// The command line that reproduces this run (for reports).
    pub repro: String,
}

/// The outcome of a soak.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// The seed.
    pub seed: u64,
    /// Wall time.
    pub elapsed: Duration,
    /// Frames run and checked.
    pub frames: u64,
    /// Summed frame counts.
    pub tally: Tally,
    /// Job systems built.
    pub systems: u64,
    /// Systems retired by a drop race.
    pub drop_races: u64,
    /// Job runs scheduled into clones during drop races (all ran).
    pub drop_race_jobs: u64,
    /// Scopes run (with an injected panic).
    pub scopes: (u64, u64),
    /// Main-thread joins.
    pub joins: u64,
    /// Bursts (and their size).
    pub bursts: (u64, usize),
    /// Idle gaps.
    pub gaps: u64,
    /// Hot zones.
    pub hot_zones: u64,
    /// `/proc/self/status` after the warm-up (`None`: not measured).
    pub start: Option<ProcStatus>,
    /// At the end.
    pub end: Option<ProcStatus>,
    /// RSS growth bound, KiB.
    pub rss_bound_kib: u64,
    /// Frame times, ms.
    pub frame_ms: Vec<f64>,
    /// What went wrong (empty: the soak passed).
    pub failures: Vec<String>,
    /// Notes (skipped checks).
    pub notes: Vec<String>,
}

impl Report {
    /// The closing lines.
    pub fn render(&self) -> String {
        let t = &self.tally;
        let mut s = String::new();
        let mut line = |l: String| {
            s.push_str("soak: ");
            s.push_str(&l);
            s.push('\n');
        };
        line(format!(
            "seed {:#x}: {} frames in {:.1} s, {} job runs; {} systems built, {} retired by a drop race ({} jobs scheduled into clones while they were dropped, all ran)",
            self.seed,
            self.frames,
            self.elapsed.as_secs_f64(),
            t.jobs + self.drop_race_jobs,
            self.systems,
            self.drop_races,
            self.drop_race_jobs
        ));
        line(format!(
            "failures injected {} (+{} masked behind an earlier failure), reported {}; dependents failed {} (expected {})",
            t.injected, t.masked, t.reported, t.dependents_failed, t.dependents_expected
        ));
        line(format!(
            "extra phases: {} scopes ({} re-raised an injected panic), {} main-thread joins, {} bursts of {} jobs, {} idle gaps, {} hot zones",
            self.scopes.0, self.scopes.1, self.joins, self.bursts.0, self.bursts.1, self.gaps, self.hot_zones
        ));
        match (self.start, self.end) {
            (Some(a), Some(b)) => {
                line(format!(
                    "RSS after warm-up {} (max {}), at the end {} (max {}): growth {}, bound {}",
                    rss::mib(a.rss_kib),
                    rss::mib(a.hwm_kib),
                    rss::mib(b.rss_kib),
                    rss::mib(b.hwm_kib),
                    rss::mib(b.rss_kib.saturating_sub(a.rss_kib)),
                    rss::mib(self.rss_bound_kib)
                ));
                line(format!(
                    "threads after warm-up {}, at the end {}",
                    a.threads, b.threads
                ));
            }
            (None, Some(b)) => line(format!(
                "RSS at the end {} (max {}); not compared (no warm-up reading)",
                rss::mib(b.rss_kib),
                rss::mib(b.hwm_kib)
            )),
            _ => {}
        }
        if self.frame_ms.is_empty() {
            line("no frames".into());
        } else {
            let st = stats::summarize(&self.frame_ms);
            line(format!(
                "frame time p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
                st.median, st.p99, st.max
            ));
        }
        for n in &self.notes {
            line(format!("note: {n}"));
        }
        if self.failures.is_empty() {
            line("ok".into());
        } else {
            line(format!("FAILED ({} problems)", self.failures.len()));
        }
        s
    }
}

/// A seed from the clock and the process id.
fn seed_from_clock() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    check::mix(t, u64::from(std::process::id()))
}

/// Parse `args` (program name first) and run the soak.
pub fn run<I, T>(args: I) -> Result<()>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args = SoakArgs::try_parse_from(args).map_err(Error::Args)?;
    run_args(&args)
}

/// Run the soak of an already parsed command line.
pub fn run_args(args: &SoakArgs) -> Result<()> {
    let cli = args;
    let machine = Machine::detect();
    let seed = args.seed.unwrap_or_else(seed_from_clock);
    let choices = Choices::new(machine.cores, cli.workers.as_deref(), cli.policy.as_deref())
        .map_err(|m| {
            Error::Args(clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                format!("{m}\n"),
            ))
        })?;
    let duration = match (args.minutes, args.frames) {
        (Some(m), _) => Some(m.duration()),
        (None, Some(_)) => None,
        (None, None) => Some(Duration::from_secs(60)),
    };
    let mut repro = format!("jobsys-soak --seed {seed:#x}");
    if cli.quick {
        repro.push_str(" --quick");
    }
    if let Some(w) = &cli.workers {
        let w: Vec<String> = w.iter().map(usize::to_string).collect();
        repro.push_str(&format!(" --workers {}", w.join(",")));
    }
    if let Some(p) = &cli.policy {
        repro.push_str(&format!(" --policy {}", p.join(",")));
    }
    let opts = Options {
        duration,
        frames: args.frames,
        seed,
        sizes: if cli.quick {
            Sizes::quick()
        } else {
            Sizes::full()
        },
        choices,
        frame_timeout: Duration::from_secs(args.frame_timeout.max(1)),
        rss_bound_kib: args.rss_bound_mib * 1024,
        repro,
    };
    let progress = Progress::new(std::io::stdout().is_terminal(), 1);
    progress.print(&format!(
        "soak: seed {seed:#x} ({}), {} cores ({}), {} build, {}{}, worker counts {:?}, policies {}; watchdog {} s per frame",
        if args.seed.is_some() { "given" } else { "from the clock" },
        machine.cores,
        machine.cpu_model,
        if cfg!(debug_assertions) { "debug" } else { "release" },
        match (opts.duration, opts.frames) {
            (Some(d), Some(f)) => format!("{:.2} minutes or {f} frames", d.as_secs_f64() / 60.0),
            (Some(d), None) => format!("{:.2} minutes", d.as_secs_f64() / 60.0),
            (None, Some(f)) => format!("{f} frames"),
            (None, None) => unreachable!(),
        },
        if cli.quick { ", quick sizes" } else { "" },
        opts.choices.workers,
        opts.choices.policies.join(", "),
        opts.frame_timeout.as_secs(),
    ));
    let report = soak(&opts, &progress);
    progress.print(&report.render());
    if report.failures.is_empty() {
        Ok(())
    } else {
        Err(Error::Soak(format!(
            "soak failed:\n{}",
            report.failures.join("\n")
        )))
    }
}

/// Read `/proc/self/status` with no system alive, after trimming the heap;
/// waits up to 2 s for exiting threads to be gone (lowest count seen).
fn settled_status(threads_floor: Option<u64>) -> Option<ProcStatus> {
    rss::settle();
    let mut s = rss::read()?;
    let t = Instant::now();
    while threads_floor.is_some_and(|f| s.threads > f) && t.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
        rss::settle();
        s = rss::read()?;
    }
    Some(s)
}

/// The live system and how many more frames it runs.
struct Live {
    js: jobsys::JobSystem,
    config: SystemConfig,
    frames_left: u64,
}

/// Retire a system: plainly, or (one in three) through a drop race.
fn retire(live: Live, rng: &mut SplitMix64, o: &Options, wd: &Watchdog, r: &mut Report) {
    let race = rng.percent(33);
    wd.enter(format!(
        "retiring the system ({}){}",
        live.config.describe(),
        if race { " by a drop race" } else { "" }
    ));
    if race {
        match faults::drop_race(live.js, rng, o.sizes.drop_race_ops) {
            Ok(d) => {
                r.drop_races += 1;
                r.drop_race_jobs += d.ran;
            }
            Err(e) => r.failures.push(format!(
                "after frame {} on {}: {e} (reproduce: {} --frames {})",
                r.frames,
                live.config.describe(),
                o.repro,
                r.frames + 1
            )),
        }
    } else {
        drop(live.js);
    }
    wd.leave();
}

/// Run a soak with `o`, showing progress on `progress`.
pub fn soak(o: &Options, progress: &Progress) -> Report {
    faults::install_quiet_hook();
    let mut r = Report {
        seed: o.seed,
        rss_bound_kib: o.rss_bound_kib,
        bursts: (0, o.sizes.burst),
        ..Report::default()
    };
    let wd = Watchdog::start(
        o.frame_timeout,
        format!("reproduce: {}", o.repro),
        Watchdog::exit_on_hang(),
    );
    let by_time = o.duration.is_some() && o.frames.is_none();
    let bar = match (by_time, o.duration, o.frames) {
        (true, Some(d), _) => progress.bar("soak (s)", d.as_secs().max(1)),
        (_, _, Some(f)) => progress.bar("soak (frames)", f),
        _ => progress.bar("soak", 1),
    };
    let mut shown_secs = 0u64;
    let warm_time = o.duration.map(|d| (d / 10).min(Duration::from_secs(30)));
    let warm_frames = o.frames.map(|f| f / 10);
    let warmed = |elapsed: Duration, frames: u64| {
        warm_time.is_some_and(|w| elapsed >= w) || warm_frames.is_some_and(|w| frames >= w)
    };
    let mut rng = SplitMix64::new(o.seed);
    let start = Instant::now();
    let mut live: Option<Live> = None;
    let mut threads_at_start = None;
    loop {
        let elapsed = start.elapsed();
        if o.duration.is_some_and(|d| elapsed >= d) || o.frames.is_some_and(|f| r.frames >= f) {
            break;
        }
        if live.as_ref().is_none_or(|l| l.frames_left == 0) {
            if let Some(l) = live.take() {
                retire(l, &mut rng, o, &wd, &mut r);
                if !r.failures.is_empty() {
                    break;
                }
                if r.start.is_none() && warmed(start.elapsed(), r.frames) {
                    r.start = settled_status(None);
                    threads_at_start = r.start.map(|s| s.threads);
                }
            }
            let config = SystemConfig::random(&mut rng, &o.choices);
            wd.enter(format!("building a system ({})", config.describe()));
            let built = config.build();
            wd.leave();
            match built {
                Ok(js) => {
                    r.systems += 1;
                    live = Some(Live {
                        js,
                        config,
                        frames_left: 1 + rng.below(16),
                    });
                }
                Err(e) => {
                    r.failures
                        .push(format!("building a system ({}): {e}", config.describe()));
                    break;
                }
            }
        }
        let Some(l) = live.as_mut() else { break };
        let plan = Arc::new(FramePlan::generate(
            rng.next_u64(),
            r.frames,
            &o.sizes,
            r.frames == 0,
        ));
        let what = format!("{} on {}", plan.describe(), l.config.describe());
        wd.enter(what.clone());
        let t = Instant::now();
        let rec = catch_unwind(AssertUnwindSafe(|| frame::run(&l.js, &plan, &wd)));
        r.frame_ms.push(t.elapsed().as_secs_f64() * 1e3);
        wd.phase("checking");
        let problems = match rec {
            Ok(rec) => {
                let (tally, bad) = check::check_frame(&plan, &rec);
                r.tally += tally;
                bad
            }
            Err(p) => vec![format!(
                "the frame panicked on the main thread: {}",
                faults::payload_text(&*p)
            )],
        };
        wd.leave();
        if !problems.is_empty() {
            let shown = problems.len().min(20);
            r.failures.push(format!(
                "{what}: {} mismatches (reproduce: {} --frames {}):\n  {}{}",
                problems.len(),
                o.repro,
                r.frames + 1,
                problems[..shown].join("\n  "),
                if shown < problems.len() {
                    "\n  ..."
                } else {
                    ""
                }
            ));
            break;
        }
        r.frames += 1;
        l.frames_left -= 1;
        r.scopes.0 += u64::from(plan.scope.is_some());
        r.scopes.1 += u64::from(plan.scope.as_ref().is_some_and(|s| s.panic_job.is_some()));
        r.joins += u64::from(plan.join_at.is_some());
        r.bursts.0 += u64::from(plan.burst.is_some());
        r.gaps += u64::from(plan.gap.is_some());
        r.hot_zones += u64::from(plan.hot_zone.is_some());
        if by_time {
            let secs = start.elapsed().as_secs();
            while shown_secs < secs {
                bar.inc();
                shown_secs += 1;
            }
        } else {
            bar.inc();
        }
        if r.frames % 16 == 1 {
            bar.message(format!(
                "frame {}, {} jobs, {} faults, {} systems",
                r.frames, r.tally.jobs, r.tally.injected, r.systems
            ));
        }
    }
    if let Some(l) = live.take() {
        retire(l, &mut rng, o, &wd, &mut r);
    }
    r.elapsed = start.elapsed();
    // Read while the watchdog still runs, as at the warm-up reading.
    r.end = settled_status(threads_at_start);
    drop(wd);
    match (r.start, r.end) {
        (_, None) => r
            .notes
            .push("no /proc/self/status here: memory and thread checks skipped".into()),
        (None, Some(_)) => r
            .notes
            .push("the run ended before the warm-up did: memory growth not checked".into()),
        (Some(a), Some(b)) => {
            let growth = b.rss_kib.saturating_sub(a.rss_kib);
            if growth > o.rss_bound_kib {
                r.failures.push(format!(
                    "RSS grew by {} from the end of the warm-up to the end (bound {})",
                    rss::mib(growth),
                    rss::mib(o.rss_bound_kib)
                ));
            }
            if b.threads > a.threads {
                r.failures.push(format!(
                    "{} threads at the end, {} after the warm-up: workers were not joined",
                    b.threads, a.threads
                ));
            }
        }
    }
    bar.finish();
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minutes_and_seeds_parse() {
        assert_eq!(parse_minutes("0.05"), Ok(Minutes(3_000)));
        assert_eq!(parse_minutes("2"), Ok(Minutes(120_000)));
        assert!(parse_minutes("0").is_err() && parse_minutes("x").is_err());
        assert_eq!(parse_seed("0x1F"), Ok(31));
        assert_eq!(parse_seed("1_000"), Ok(1000));
        assert!(parse_seed("-1").is_err());
    }
}
