//! `jobsys-bench`: the workloads of docs/workloads.md (W1..W7) on jobsys, on a
//! dedicated rayon pool and as a serial loop, measured in the same run.
//!
//! `main.rs` is a thin wrapper over [`run`], so the test suite runs every
//! workload's `--quick` mode in-process.
//!
//! Module map: [`cli`] (arguments), [`pools`] (the implementations and
//! worker-count semantics), [`runner`] (interleaved sampling), [`spin`] (the
//! one busy-wait), [`count`] (result checks), [`graph`] (the W3 frame-graph
//! generator), [`futex_floor`] and [`static_split`] (the threads of the
//! floor rows), [`stats`], [`table`], [`json`], [`plot`], [`progress`],
//! and one module per workload under [`workloads`]. The soak (a correctness
//! test) is the crate `jobsys-soak`; contributor measurements of past
//! rounds (`trace-cost`, callgrind kernels) are the crate `jobsys-lab`,
//! which uses this library as its harness.

pub mod cli;
pub mod count;
pub mod error;
pub mod futex_floor;
pub mod graph;
pub mod graph_sim;
pub mod json;
pub mod plot;
pub mod pools;
pub mod progress;
pub mod runner;
pub mod spin;
pub mod static_split;
pub mod stats;
pub mod table;
pub mod workloads;

pub use error::{Error, Result};

use clap::Parser;
use cli::{Cli, Command};
use json::Machine;
use progress::Progress;
use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;

/// Settings every workload reads.
pub struct Ctx {
    /// Worker counts to run.
    pub workers: Vec<usize>,
    /// Whether `--workers` was given (some workloads pick their own default).
    pub workers_given: bool,
    /// `--samples`.
    pub samples: Option<usize>,
    /// `--quick`.
    pub quick: bool,
    /// `--full`, or `all`: frame-graph runs its whole sweep.
    pub full: bool,
    /// Whether `--policy` was given.
    pub policies_given: bool,
    /// `--out`.
    pub out: PathBuf,
    /// `--trace FILE` (frame-graph).
    pub trace: Option<PathBuf>,
    /// The jobsys idle policies to run (`--policy`).
    pub policies: Vec<pools::PolicySpec>,
    /// This machine.
    pub machine: Machine,
    /// Bars and stdout.
    pub progress: Progress,
}

impl Ctx {
    /// Counted samples: `--samples`, else `full` or `quick`.
    pub fn samples_or(&self, full: usize, quick: usize) -> usize {
        self.samples
            .unwrap_or(if self.quick { quick } else { full })
            .max(1)
    }

    /// `full` or, with `--quick`, `quick`.
    pub fn size<T>(&self, full: T, quick: T) -> T {
        if self.quick {
            quick
        } else {
            full
        }
    }

    /// CPUs this process may use.
    pub fn cores(&self) -> usize {
        self.machine.cores
    }
}

/// Default worker counts: 0..=cores and 2 x cores; with `quick`, only 0, 1,
/// cores and 2 x cores.
pub fn default_workers(cores: usize, quick: bool) -> Vec<usize> {
    let mut v: Vec<usize> = if quick {
        vec![0, 1, cores, 2 * cores]
    } else {
        (0..=cores).chain([2 * cores]).collect()
    };
    v.sort_unstable();
    v.dedup();
    v
}

/// The load averages over 1, 5 and 15 minutes (other work on the machine
/// skews every figure).
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

/// Parse `args` (program name first) and run the command.
pub fn run<I, T>(args: I) -> Result<()>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = Cli::try_parse_from(args).map_err(Error::Args)?;
    run_cli(&cli)
}

/// Run an already parsed command line.
pub fn run_cli(cli: &Cli) -> Result<()> {
    let workloads = cli.command.workloads();
    if cli.trace.is_some() && !workloads.contains(&Command::FrameGraph) {
        return Err(Error::Args(clap::Error::raw(
            clap::error::ErrorKind::ArgumentConflict,
            "--trace applies to frame-graph (or all) only\n",
        )));
    }
    let machine = Machine::detect();
    let progress = Progress::new(std::io::stdout().is_terminal(), workloads.len() as u64);
    let ctx = Ctx {
        workers: cli
            .workers
            .clone()
            .unwrap_or_else(|| default_workers(machine.cores, cli.quick)),
        workers_given: cli.workers.is_some(),
        samples: cli.samples,
        quick: cli.quick,
        full: cli.full || cli.command == Command::All,
        policies_given: cli.policy.is_some(),
        out: cli.out.clone(),
        trace: cli.trace.clone(),
        policies: pools::select_policies(cli.policy.as_deref())?,
        machine,
        progress,
    };
    match cli.command {
        Command::Plot => return workloads::replot(&ctx),
        Command::Policies => return workloads::policies::run(&ctx),
        _ => {}
    }
    let cal = spin::calibrate();
    // The frame-graph first look measures its own thread counts and one
    // policy; it prints them in its plan line, so the header leaves out the
    // --workers / --policy lists it does not use.
    let own_plan = workloads == [Command::FrameGraph] && !ctx.full && !ctx.quick;
    let selection = if own_plan {
        String::new()
    } else {
        format!(
            ", worker counts {:?}, policies {}",
            ctx.workers,
            ctx.policies
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    ctx.progress.print(&format!(
        "jobsys-bench: {} cores ({}), load average {}, {} build{}, clock read {:.0} ns{}{}",
        ctx.machine.cores,
        ctx.machine.cpu_model,
        load_average(),
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        if cfg!(debug_assertions) {
            " (timings of a debug build mean nothing)"
        } else {
            ""
        },
        cal.clock_read_ns,
        selection,
        if ctx.quick { ", --quick" } else { "" },
    ));
    for w in workloads {
        workloads::run(&ctx, w)?;
        ctx.progress.workload_done();
    }
    ctx.progress.finish();
    ctx.progress.print(&format!(
        "jobsys-bench: done, load average {}",
        load_average()
    ));
    Ok(())
}
