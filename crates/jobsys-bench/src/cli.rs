//! The command line (clap derive).

use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// Run the workloads W1..W7 (docs/workloads.md) on jobsys, rayon and a serial loop, in
/// one run; print a table per workload, write JSON rows and SVG plots.
#[derive(Parser, Debug, Clone)]
#[command(name = "jobsys-bench", version, about, long_about = None)]
pub struct Cli {
    /// Which workload to run.
    #[command(subcommand)]
    pub command: Command,

    /// Worker counts, comma-separated (jobsys: worker threads besides the
    /// calling thread). Default: 0..=cores and 2 x cores (with --quick:
    /// 0, 1, cores, 2 x cores).
    #[arg(long, global = true, value_delimiter = ',', num_args = 1..)]
    pub workers: Option<Vec<usize>>,

    /// Counted samples per row (frames for frame-graph and contended,
    /// 300-frame runs for idle-cost). Default: per workload.
    #[arg(long, global = true)]
    pub samples: Option<usize>,

    /// Small sizes and few samples: every workload runs in seconds (CI).
    #[arg(long, global = true)]
    pub quick: bool,

    /// jobsys idle policies to run, comma-separated (spin-then-sleep,
    /// whipping-boy, always-spin, adaptive). Default: all.
    #[arg(long, global = true, value_delimiter = ',', num_args = 1..)]
    pub policy: Option<Vec<String>>,

    /// frame-graph only: after measuring, run 5 more frames (D = 0.5 us) on
    /// jobsys with the highest worker count and the first selected idle
    /// policy, traced with frame markers; write the Chrome trace JSON to
    /// FILE (open it in ui.perfetto.dev or with jobsys-trace).
    #[arg(long, global = true, value_name = "FILE")]
    pub trace: Option<PathBuf>,

    /// frame-graph: the whole sweep (D = 0.5, 1, 5 and 20 us; worker counts
    /// 0..=cores and 2 x cores; every idle policy; 200 frames per row),
    /// tens of minutes on a 2-core machine, instead of the first look
    /// (D = 0.5 and 5 us; 0, 1 and cores workers; the default policy; 100
    /// frames: about 2 minutes). `all` always runs the whole sweep.
    #[arg(long, global = true)]
    pub full: bool,

    /// Directory for the JSON and SVG files: by default
    /// `$CARGO_TARGET_DIR/jobsys-bench` when CARGO_TARGET_DIR is set, else
    /// `target/jobsys-bench`. A workload's earlier JSON there is kept as
    /// `<workload>.prev.json`.
    #[arg(long, global = true, default_value_os_t = default_out())]
    pub out: PathBuf,
}

/// The default `--out`: `$CARGO_TARGET_DIR/jobsys-bench` when that is set
/// (and not empty), else `target/jobsys-bench`.
pub fn default_out() -> PathBuf {
    default_out_for(std::env::var_os("CARGO_TARGET_DIR"))
}

/// [`default_out`] for a given value of CARGO_TARGET_DIR.
pub fn default_out_for(target_dir: Option<std::ffi::OsString>) -> PathBuf {
    match target_dir {
        Some(d) if !d.is_empty() => PathBuf::from(d).join("jobsys-bench"),
        _ => PathBuf::from("target/jobsys-bench"),
    }
}

/// The workloads (W1..W7), `all`, and re-plotting.
#[derive(Subcommand, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// W1: scheduling overhead of empty jobs (single, flat, nested, pfor-empty).
    SpawnEmpty,
    /// W2: a data-parallel loop over a large and a small array.
    ParallelFor,
    /// W3: the generated engine frame graph (the seed experiment).
    FrameGraph,
    /// W3 at D = 5 us with Low-priority background jobs in every frame,
    /// jobsys with priority inheritance on and off.
    FrameGraphBackground,
    /// W3 as a `jobsys::Graph` built once: one run per frame, and two runs
    /// in flight, beside the same frame as per-frame jobs and serial, at
    /// D = 0.5 and 5 us, equal workers (first idle policy). Not part of
    /// `all`.
    FrameGraphReplay,
    /// A graph whose critical path is a chain of Low nodes beside
    /// independent High work, replayed: the first run's frame and the
    /// later runs' (ordered by measured durations), as multiples of the
    /// chain's length. Default workers: 1. Not part of `all`.
    CriticalChain,
    /// W4: latency from schedule to start, cold and burst.
    WakeLatency,
    /// W5: CPU burned by idle workers in a mostly-serial frame.
    IdleCost,
    /// W6: cost of waking threads with a semaphore, a futex and a condvar.
    WakePrimitives,
    /// W7: the frame graph against a CPU hog, and oversubscribed.
    Contended,
    /// W1 (single, flat, nested) called from C++ through jobsys.hpp, beside
    /// W1 from Rust and the C++ peers enkiTS, Taskflow and (when installed)
    /// oneTBB, at equal thread counts (jobsys N workers + the calling thread
    /// = a peer with N + 1 threads): median, p99, min-max and the ratio to
    /// jobsys from Rust. Compiles cpp/w1.cpp with `c++` (and builds
    /// libjobsys_capi.a with cargo if missing). Default workers: 0,1,2.
    /// Not part of `all`. See crates/jobsys-bench/cpp/README.md.
    CppW1,
    /// W2 (parallel-for, `large` and `small`) with the batch chosen by the
    /// library, from Rust, from C++ through jobsys.hpp and with oneTBB's
    /// auto partitioner (when installed), at equal thread counts: each
    /// one's speedup over its own language's serial loop, timed in
    /// alternation with it. Compiles cpp/w2.cpp with `c++`. Default
    /// workers: 1,2,4. Not part of `all`. See crates/jobsys-bench/cpp/README.md.
    CppW2,
    /// W3 (the frame graph, D = 0.5 and 5 us) called from C++ through
    /// jobsys.hpp, job by job every frame and as a replayed jobsys::Graph,
    /// beside enkiTS, oneTBB (when installed) and Taskflow running the same
    /// frame as their dependency graphs, and W3 from Rust, at equal thread
    /// counts: median, p99, min-max, the ratio to jobsys-cpp and to the
    /// serial frame. Compiles cpp/w3.cpp with `c++`. Default workers: 0,1.
    /// Not part of `all`. See crates/jobsys-bench/cpp/README.md.
    CppW3,
    /// W3 (D = 0.5 and 1 us) with `follow_cpus` off and on while a core is
    /// taken away for the middle half of the frames (every thread of the
    /// process restricted to the other CPUs, a busy process pinned to the
    /// taken one): frame median and p99 per phase, the active worker
    /// counts seen. Linux only; skipped with fewer than 2 usable CPUs.
    /// --workers: its first value (default: usable CPUs - 1); --samples:
    /// frames per configuration and D (default 600). About a minute on
    /// 2 cores. Not part of `all`.
    FollowCpus,
    /// W3-access: the W3 frame graph with declared data access instead of
    /// edges, against the explicit edges: the cost of deriving dependencies
    /// per declared access (min and median). Not part of `all`.
    AccessGraph,
    /// W4 + W5 per idle policy from the JSON in --out: one table and the
    /// plot latency-vs-cpu.svg (no measurement; `all` ends with it).
    Policies,
    /// Every workload, in order, then `policies`.
    All,
    /// Redraw the SVG plots from the JSON files in --out.
    Plot,
}

impl Command {
    /// The workloads `self` runs.
    pub fn workloads(self) -> Vec<Command> {
        use Command::*;
        match self {
            All => vec![
                SpawnEmpty,
                ParallelFor,
                FrameGraph,
                FrameGraphBackground,
                WakeLatency,
                IdleCost,
                WakePrimitives,
                Contended,
                Policies,
            ],
            Plot => vec![],
            w => vec![w],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_out_follows_cargo_target_dir() {
        assert_eq!(
            default_out_for(Some("/tmp/tgt".into())),
            PathBuf::from("/tmp/tgt/jobsys-bench")
        );
        assert_eq!(default_out_for(None), PathBuf::from("target/jobsys-bench"));
        assert_eq!(
            default_out_for(Some("".into())),
            PathBuf::from("target/jobsys-bench")
        );
        // --out still wins.
        let cli = Cli::try_parse_from(["jobsys-bench", "spawn-empty", "--out", "x"]).unwrap();
        assert_eq!(cli.out, PathBuf::from("x"));
    }
}
