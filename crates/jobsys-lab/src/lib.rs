//! `jobsys-lab`: the contributors' measurement tools, kept apart from the
//! benchmark users run (`jobsys-bench`, the workloads of docs/workloads.md).
//!
//! What lives here measures how a figure of the product came about, not the
//! figure itself: [`trace_cost`] (what the tracer costs on W1, built twice
//! at run time from the source tree; the standing check of that cost is
//! `scripts/w1-budget.sh`), and the callgrind kernel
//! `examples/access_instructions.rs` that `scripts/access-instructions.sh`
//! counts. The lab reuses the benchmark's harness (its `Ctx`, pools,
//! interleaving, tables and JSON rows) through the `jobsys-bench` library;
//! the benchmark does not depend on the lab. docs/history/README.md says
//! what the lab holds and how to run it.
//!
//! `main.rs` is a thin wrapper over [`run`], so the tests run the commands
//! in process.

pub mod trace_cost;

use clap::{Parser, Subcommand};
use jobsys_bench::json::Machine;
use jobsys_bench::progress::Progress;
use jobsys_bench::{cli::default_out, default_workers, load_average, pools, Ctx};
pub use jobsys_bench::{Error, Result};
use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;

/// Contributor measurements of jobsys (not the benchmark: that is
/// `jobsys-bench`). Output goes where jobsys-bench writes its own.
#[derive(Parser, Debug, Clone)]
#[command(name = "jobsys-lab", version, long_about = None)]
pub struct Cli {
    /// Which measurement to run.
    #[command(subcommand)]
    pub command: Command,

    /// Worker counts, comma-separated (jobsys: worker threads besides the
    /// calling thread). Default: 0..=cores and 2 x cores (with --quick:
    /// 0, 1, cores, 2 x cores).
    #[arg(long, global = true, value_delimiter = ',', num_args = 1..)]
    pub workers: Option<Vec<usize>>,

    /// Counted samples per row. Default: per measurement.
    #[arg(long, global = true)]
    pub samples: Option<usize>,

    /// Small sizes and few samples: runs in seconds (the tests).
    #[arg(long, global = true)]
    pub quick: bool,

    /// jobsys idle policies, comma-separated (spin-then-sleep,
    /// whipping-boy, always-spin, adaptive). Default: all.
    #[arg(long, global = true, value_delimiter = ',', num_args = 1..)]
    pub policy: Option<Vec<String>>,

    /// trace-cost: a prebuilt `jobsys-w1` without jobsys's `trace`
    /// feature, instead of building one with cargo.
    #[arg(long, global = true, value_name = "PATH")]
    pub notrace_bin: Option<PathBuf>,

    /// trace-cost: a prebuilt `jobsys-w1` built with `--features trace`,
    /// instead of building one with cargo.
    #[arg(long, global = true, value_name = "PATH")]
    pub trace_bin: Option<PathBuf>,

    /// Directory for the JSON files (as jobsys-bench's `--out`): by default
    /// `$CARGO_TARGET_DIR/jobsys-bench` when CARGO_TARGET_DIR is set, else
    /// `target/jobsys-bench`.
    #[arg(long, global = true, default_value_os_t = default_out())]
    pub out: PathBuf,
}

/// The lab's measurements.
#[derive(Subcommand, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// W1 (jobsys) built without the tracer, with it compiled in but off,
    /// recording, and with empty profiler hooks, in turns: what the tracer
    /// costs. Builds its child program `jobsys-w1` twice with cargo.
    TraceCost,
}

/// `trace-cost`'s child programs, when given prebuilt (`--notrace-bin`,
/// `--trace-bin`); `None`: built with cargo.
#[derive(Clone, Debug, Default)]
pub struct ChildBins {
    /// `jobsys-w1` without jobsys's `trace` feature.
    pub notrace: Option<PathBuf>,
    /// `jobsys-w1` with it.
    pub trace: Option<PathBuf>,
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
    let machine = Machine::detect();
    let ctx = Ctx {
        workers: cli
            .workers
            .clone()
            .unwrap_or_else(|| default_workers(machine.cores, cli.quick)),
        workers_given: cli.workers.is_some(),
        samples: cli.samples,
        quick: cli.quick,
        full: false,
        policies_given: cli.policy.is_some(),
        out: cli.out.clone(),
        trace: None,
        policies: pools::select_policies(cli.policy.as_deref())?,
        machine,
        progress: Progress::new(std::io::stdout().is_terminal(), 1),
    };
    ctx.progress.print(&format!(
        "jobsys-lab: {} cores ({}), load average {}, {} build, worker counts {:?}, policies {}{}",
        ctx.machine.cores,
        ctx.machine.cpu_model,
        load_average(),
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        ctx.workers,
        ctx.policies
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        if ctx.quick { ", --quick" } else { "" },
    ));
    match cli.command {
        Command::TraceCost => {
            let bins = ChildBins {
                notrace: cli.notrace_bin.clone(),
                trace: cli.trace_bin.clone(),
            };
            trace_cost::run(&ctx, &bins)?;
        }
    }
    ctx.progress.workload_done();
    ctx.progress.finish();
    ctx.progress.print(&format!(
        "jobsys-lab: done, load average {}",
        load_average()
    ));
    Ok(())
}
