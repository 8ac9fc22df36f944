//! follow-cpus: the W3 frame graph with `Builder::follow_cpus` off and on
//! while a core is taken away for the middle half of the frames (the
//! big.LITTLE seed's scenario in miniature: the CPUs a game may use shrink
//! while it runs, and a job system that keeps every worker active shares the
//! remaining cores between more threads than there are).
//!
//! Per duration D and per round, each configuration (serial, jobsys with a
//! fixed worker count, jobsys following the CPUs) runs its frames in three
//! phases: `before`, `core taken` (every thread of this process restricted
//! to all of its CPUs but one, and a separate busy process, `sh -c 'while
//! :; do :; done'`, pinned to that CPU), `after` (masks restored, the busy
//! process killed). The rows give frame time per configuration and phase,
//! and the active worker counts (`JobSystem::active_workers` after each
//! frame) that the phase saw.
//!
//! Linux only (`sched_setaffinity` on every thread of the process); skipped
//! with a message where the process may use fewer than 2 CPUs.
#![cfg_attr(not(target_os = "linux"), allow(unused_imports, dead_code))]

use super::emit;
use super::frame_graph::{self, case_name, graph_params, jobsys_frame, serial_frame, Frame};
use crate::count;
use crate::error::{check, Result};
use crate::json::{Label, Row};
use crate::pools::semantics_note;
use crate::stats;
use crate::Ctx;
use std::collections::BTreeMap;
use std::time::Instant;

/// Workload name (subcommand, JSON file).
pub const NAME: &str = "follow-cpus";

/// Job durations D, ns: W3's shortest two (its frames are the shortest, so
/// following the CPUs has the most frames to react in).
pub const DURATIONS_NS: [u64; 2] = [500, 1_000];

/// The phases of a round, in order.
pub const PHASES: [&str; 3] = ["before", "core taken", "after"];

/// Frames per configuration and D by default (`--samples` overrides),
/// spread over [`ROUNDS`] rounds; each round's middle half has the core
/// taken.
pub const FRAMES: usize = 600;

/// Rounds per D: the configurations alternate round by round, so drift on
/// the machine falls on all of them.
pub const ROUNDS: usize = 2;

/// The configurations, in the order each round runs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Config {
    Serial,
    Fixed,
    Follow,
}

impl Config {
    const ALL: [Config; 3] = [Config::Serial, Config::Fixed, Config::Follow];

    fn imp(self) -> &'static str {
        match self {
            Config::Serial => "serial",
            Config::Fixed => "jobsys fixed",
            Config::Follow => "jobsys follow_cpus",
        }
    }
}

/// The case name of duration `d_ns` in `phase`: "D=0.5us core taken".
fn case(d_ns: u64, phase: &str) -> String {
    format!("{} {phase}", case_name(d_ns))
}

/// What one configuration measured in one phase.
#[derive(Default)]
struct PhaseSamples {
    /// Frame times, µs.
    us: Vec<f64>,
    /// Frames seen with each active worker count (jobsys only).
    active: BTreeMap<usize, usize>,
}

/// "0x298 1x2": frames per active worker count.
fn active_cell(seen: &serde_json::Value) -> String {
    let Some(m) = seen.as_object() else {
        return "-".into();
    };
    m.iter()
        .map(|(k, v)| format!("{k}x{}", v.as_u64().unwrap_or(0)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Run follow-cpus and report it.
pub fn run(ctx: &Ctx) -> Result<()> {
    #[cfg(not(target_os = "linux"))]
    {
        ctx.progress.print(&format!(
            "{NAME}: skipped: Linux only (it restricts every thread of the process with \
             sched_setaffinity and pins a busy process to the CPU it takes away)\n"
        ));
        Ok(())
    }
    #[cfg(target_os = "linux")]
    run_linux(ctx)
}

#[cfg(target_os = "linux")]
fn run_linux(ctx: &Ctx) -> Result<()> {
    let mask = affinity::current()?;
    let cpus = affinity::cpus(&mask);
    let usable = ctx.cores().min(cpus.len());
    if usable < 2 {
        ctx.progress.print(&format!(
            "{NAME}: skipped: this process may use {usable} CPU{} (affinity mask {cpus:?}, \
             available_parallelism {}); taking one away needs at least 2\n",
            if usable == 1 { "" } else { "s" },
            ctx.cores()
        ));
        return Ok(());
    }
    // The CPU taken away: the last one the process may use.
    let taken = *cpus.last().expect("at least 2 CPUs");
    let mut kept = mask;
    affinity::clear(&mut kept, taken);
    let workers = if ctx.workers_given {
        ctx.workers.first().copied().unwrap_or(usable - 1)
    } else {
        usable - 1
    };
    let policy = ctx.policies.first().cloned().unwrap_or_else(|| {
        crate::pools::policies()
            .into_iter()
            .next()
            .expect("a policy")
    });
    let frames = ctx.samples_or(FRAMES, 24);
    let rounds = ctx.size(ROUNDS, 1).min(frames).max(1);
    // Per round: a quarter before, half with the core taken, a quarter after.
    let per_round = frames.div_ceil(rounds).max(4);
    let quarter = per_round / 4;
    let phase_frames = [quarter, per_round - 2 * quarter, quarter];
    let g = frame_graph::graph(ctx);
    let started = Instant::now();
    let bar = ctx.progress.bar(
        NAME,
        (DURATIONS_NS.len() * rounds * Config::ALL.len()) as u64,
    );
    let mut rows = Vec::new();
    for &d in &DURATIONS_NS {
        let f = Frame::leak(g, d);
        let mut samples: Vec<[PhaseSamples; 3]> =
            Config::ALL.iter().map(|_| Default::default()).collect();
        // One system per configuration for the whole D, built (and warmed
        // with a checked frame) before the first round.
        let fixed = jobsys::JobSystem::builder()
            .workers(workers)
            .idle_policy(policy.policy)
            .follow_cpus(false)
            .build()?;
        let follow = jobsys::JobSystem::builder()
            .workers(workers)
            .idle_policy(policy.policy)
            .follow_cpus(true)
            .build()?;
        for js in [&fixed, &follow] {
            frame_graph::check_frame(js, f, &format!("{NAME} {}", case_name(d)))?;
        }
        let (mut hs, mut deps) = (Vec::new(), Vec::new());
        for round in 0..rounds {
            for (ci, &config) in Config::ALL.iter().enumerate() {
                bar.message(format!(
                    "{} round {}/{rounds} {}",
                    case_name(d),
                    round + 1,
                    config.imp()
                ));
                let js = match config {
                    Config::Serial => None,
                    Config::Fixed => Some(&fixed),
                    Config::Follow => Some(&follow),
                };
                for (pi, &n) in phase_frames.iter().enumerate() {
                    let _taken = if pi == 1 {
                        Some(affinity::CoreTaken::take(&kept, taken)?)
                    } else {
                        None
                    };
                    let out = &mut samples[ci][pi];
                    for _ in 0..n {
                        let before = count::total();
                        let t = Instant::now();
                        match js {
                            Some(js) => jobsys_frame::<false>(js, f, &mut hs, &mut deps)?,
                            None => serial_frame::<false>(f),
                        }
                        let us = t.elapsed().as_nanos() as f64 / 1e3;
                        let ran = count::total() - before;
                        check(ran == g.total_pieces(), || {
                            format!(
                                "{NAME} {} {}: {ran} pieces ran, expected {}",
                                config.imp(),
                                case(d, PHASES[pi]),
                                g.total_pieces()
                            )
                        })?;
                        out.us.push(us);
                        if let Some(js) = js {
                            *out.active.entry(js.stats().active_workers).or_default() += 1;
                        }
                    }
                    // `_taken` dropped here: masks restored, hog killed.
                }
                bar.inc();
            }
        }
        drop((fixed, follow));
        for (ci, &config) in Config::ALL.iter().enumerate() {
            for (pi, phase) in PHASES.iter().enumerate() {
                let s = &samples[ci][pi];
                let label = match config {
                    Config::Serial => Label::serial(),
                    _ => Label {
                        imp: config.imp().into(),
                        policy: Some(policy.name.clone()),
                        workers: Some(workers),
                        threads: Some(workers + 1),
                    },
                };
                let mut params = graph_params(g, d);
                params.insert("phase".into(), (*phase).into());
                params.insert("follow_cpus".into(), (config == Config::Follow).into());
                params.insert("cpu_taken".into(), taken.into());
                params.insert("usable_cpus".into(), usable.into());
                if config != Config::Serial {
                    let seen: serde_json::Map<String, serde_json::Value> = s
                        .active
                        .iter()
                        .map(|(k, v)| (k.to_string(), (*v).into()))
                        .collect();
                    params.insert("active_workers_frames".into(), seen.into());
                }
                rows.push(Row::measured(
                    NAME,
                    &case(d, phase),
                    &label,
                    params,
                    "us",
                    &stats::summarize(&s.us),
                    // In the order run: round after round, so the first
                    // frame of each round's phase (where a transition
                    // shows) can be found.
                    Some(s.us.clone()),
                    &ctx.machine,
                ));
            }
        }
    }
    bar.finish();
    // By D, then phase, then configuration.
    let phase_rank = |r: &Row| {
        let p = r.params.get("phase").and_then(|p| p.as_str()).unwrap_or("");
        PHASES.iter().position(|q| *q == p).unwrap_or(0)
    };
    let config_rank = |r: &Row| {
        Config::ALL
            .iter()
            .position(|c| c.imp() == r.imp)
            .unwrap_or(0)
    };
    rows.sort_by(|a, b| {
        let d = |r: &Row| r.param_f64("D_us").unwrap_or(0.0);
        d(a).total_cmp(&d(b))
            .then(phase_rank(a).cmp(&phase_rank(b)))
            .then(config_rank(a).cmp(&config_rank(b)))
    });
    let serial_p99 =
        |r: &Row, all: &[Row]| match all.iter().find(|s| s.imp == "serial" && s.case == r.case) {
            Some(s) if r.imp != "serial" && s.p99 > 0.0 => format!("{:.2}x", r.p99 / s.p99),
            _ => "-".into(),
        };
    let p99_vs_fixed = |r: &Row, all: &[Row]| match all
        .iter()
        .find(|s| s.imp == Config::Fixed.imp() && s.case == r.case)
    {
        Some(s) if r.imp == Config::Follow.imp() && s.p99 > 0.0 => {
            format!("{:.2}x", r.p99 / s.p99)
        }
        _ => "-".into(),
    };
    let active = |r: &Row, _: &[Row]| {
        r.params
            .get("active_workers_frames")
            .map_or_else(|| "-".into(), active_cell)
    };
    let notes = vec![
        frame_graph::graph_note(g),
        format!(
            "frame time in us; per D {frames} frames per configuration in {rounds} round(s), configurations alternating (serial, fixed, follow_cpus); per round {} frames before, {} with the core taken, {} after",
            phase_frames[0], phase_frames[1], phase_frames[2]
        ),
        format!(
            "core taken = every thread of this process restricted to CPUs {:?} (sched_setaffinity) and a busy process (sh -c 'while :; do :; done') pinned to CPU {taken}; {usable} usable CPUs, {workers} worker(s), policy {}",
            affinity::cpus(&kept),
            policy.name
        ),
        semantics_note(),
        "p99 xserial = p99 / serial p99 of the same phase; p99/fixed = follow_cpus p99 / fixed p99 of the same phase; active = frames seen with each active worker count (JobSystem::stats().active_workers after each frame)".into(),
    ];
    emit(
        ctx,
        NAME,
        "follow-cpus: W3 with a core taken away, follow_cpus off and on",
        &notes,
        &rows,
        false,
        &[
            ("p99 xserial", &serial_p99),
            ("p99/fixed", &p99_vs_fixed),
            ("active", &active),
        ],
    )?;
    ctx.progress.print(&verdict(&rows, started.elapsed()));
    Ok(())
}

/// The closing lines: p99 with the core taken, fixed against following.
fn verdict(rows: &[Row], took: std::time::Duration) -> String {
    let mut out = String::from("verdict: p99 frame time with the core taken (lower is better):\n");
    for &d in &DURATIONS_NS {
        let c = case(d, PHASES[1]);
        let find = |imp: &str| rows.iter().find(|r| r.case == c && r.imp == imp);
        if let (Some(s), Some(fx), Some(fo)) = (
            find("serial"),
            find(Config::Fixed.imp()),
            find(Config::Follow.imp()),
        ) {
            out.push_str(&format!(
                "  {}: fixed {:.0} us ({:.2}x serial p99), follow_cpus {:.0} us ({:.2}x), follow/fixed {:.2}x; medians {:.0} / {:.0} us, serial {:.0} us\n",
                case_name(d),
                fx.p99,
                fx.p99 / s.p99,
                fo.p99,
                fo.p99 / s.p99,
                fo.p99 / fx.p99,
                fx.median,
                fo.median,
                s.median
            ));
        }
    }
    out.push_str(&format!("  took {:.0} s\n", took.as_secs_f64()));
    out
}

/// Affinity masks of this process's threads and the busy process.
#[cfg(target_os = "linux")]
mod affinity {
    use crate::error::{Error, Result};
    use std::io;
    use std::mem::{size_of, zeroed};
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command, Stdio};

    /// The calling thread's affinity mask.
    pub fn current() -> Result<libc::cpu_set_t> {
        get(0).map_err(|e| Error::Verify(format!("sched_getaffinity: {e}")))
    }

    fn get(tid: libc::pid_t) -> io::Result<libc::cpu_set_t> {
        // SAFETY: cpu_set_t is plain bits; all zeroes is the empty set.
        let mut set: libc::cpu_set_t = unsafe { zeroed() };
        // SAFETY: `set` is a writable cpu_set_t of the size passed.
        let rc = unsafe { libc::sched_getaffinity(tid, size_of::<libc::cpu_set_t>(), &mut set) };
        if rc == 0 {
            Ok(set)
        } else {
            Err(io::Error::last_os_error())
        }
    }

    fn set(tid: libc::pid_t, mask: &libc::cpu_set_t) -> io::Result<()> {
        // SAFETY: `mask` is a valid cpu_set_t of the size passed; the
        // kernel only reads it.
        let rc = unsafe { libc::sched_setaffinity(tid, size_of::<libc::cpu_set_t>(), mask) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// The CPUs in `mask`, ascending.
    pub fn cpus(mask: &libc::cpu_set_t) -> Vec<usize> {
        (0..libc::CPU_SETSIZE as usize)
            // SAFETY: `c` < CPU_SETSIZE, inside the set.
            .filter(|&c| unsafe { libc::CPU_ISSET(c, mask) })
            .collect()
    }

    /// Remove `cpu` from `mask`.
    pub fn clear(mask: &mut libc::cpu_set_t, cpu: usize) {
        // SAFETY: callers pass a CPU from `cpus`, < CPU_SETSIZE.
        unsafe { libc::CPU_CLR(cpu, mask) }
    }

    /// This process's thread ids (`/proc/self/task`).
    fn tasks() -> Result<Vec<libc::pid_t>> {
        let mut v = Vec::new();
        for e in std::fs::read_dir("/proc/self/task")? {
            if let Some(tid) = e?.file_name().to_str().and_then(|s| s.parse().ok()) {
                v.push(tid);
            }
        }
        Ok(v)
    }

    /// A core taken away until dropped: every thread of the process
    /// restricted to `kept`, and a busy process pinned to the taken CPU.
    /// Dropping it (also on an error or a panic) kills and reaps the busy
    /// process and gives every thread its mask back; the busy process also
    /// dies with the thread that started it (`PR_SET_PDEATHSIG`), should
    /// this process be killed.
    pub struct CoreTaken {
        saved: Vec<(libc::pid_t, libc::cpu_set_t)>,
        hog: Option<Child>,
    }

    impl CoreTaken {
        /// Restrict every thread to `kept` and start the busy process on `cpu`.
        pub fn take(kept: &libc::cpu_set_t, cpu: usize) -> Result<CoreTaken> {
            let mut me = CoreTaken {
                saved: Vec::new(),
                hog: None,
            };
            for tid in tasks()? {
                // A thread that exited since the listing: nothing to do.
                let Ok(old) = get(tid) else { continue };
                match set(tid, kept) {
                    Ok(()) => me.saved.push((tid, old)),
                    Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                    Err(e) => {
                        return Err(Error::Verify(format!(
                            "sched_setaffinity of thread {tid}: {e}"
                        )))
                    }
                }
            }
            // SAFETY: cpu_set_t is plain bits; all zeroes is the empty set.
            let mut hog_mask: libc::cpu_set_t = unsafe { zeroed() };
            // SAFETY: `cpu` < CPU_SETSIZE (it came from `cpus`).
            unsafe { libc::CPU_SET(cpu, &mut hog_mask) };
            // SAFETY: getpid takes no arguments and cannot fail.
            let parent = unsafe { libc::getpid() };
            let mut cmd = Command::new("sh");
            cmd.args(["-c", "while :; do :; done"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            // SAFETY: the closure runs in the forked child before exec and
            // makes only async-signal-safe system calls (prctl, getppid,
            // sched_setaffinity, _exit); it allocates nothing.
            unsafe {
                cmd.pre_exec(move || {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    if libc::getppid() != parent {
                        libc::_exit(0); // the parent is gone already
                    }
                    if libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &hog_mask) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    Ok(())
                })
            };
            me.hog = Some(
                cmd.spawn()
                    .map_err(|e| Error::Child(format!("the busy process (sh): {e}")))?,
            );
            Ok(me)
        }
    }

    impl Drop for CoreTaken {
        fn drop(&mut self) {
            if let Some(mut hog) = self.hog.take() {
                let _ = hog.kill();
                let _ = hog.wait();
            }
            for (tid, mask) in self.saved.drain(..) {
                let _ = set(tid, &mask);
            }
        }
    }
}
