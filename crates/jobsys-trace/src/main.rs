//! `jobsys-trace`: read captures that a jobsys program wrote with
//! `Trace::write_chrome_json` (the same files open in Perfetto) and
//!
//! - `summary CAPTURE.json`: per thread the share of time in each state,
//!   jobs, steals, wakes, futile wakes, scheduling latency; per job name
//!   count, total, mean, p99; warnings (dropped events, rapid switching);
//! - `compare A.json B.json [--frames]`: per job name count, total and mean
//!   in A and in B, absolute and relative difference, sorted by absolute
//!   difference (with `--frames`: averages per frame, and frame times).
//!
//! `--json` prints the same as JSON.

use clap::{Parser, Subcommand};
use jobsys::trace::{compare, Capture, CompareOptions};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "jobsys-trace",
    version,
    about = "Summarise and compare jobsys trace captures"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Per-thread states, wakes, latency and per-job statistics of a capture.
    Summary {
        /// A capture written by `Trace::write_chrome_json`.
        capture: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Compare two captures per job name, sorted by absolute difference.
    Compare {
        /// The baseline capture.
        a: PathBuf,
        /// The capture compared with it.
        b: PathBuf,
        /// Compare averages per frame (needs frame markers in both).
        #[arg(long)]
        frames: bool,
        /// Show only the first N rows.
        #[arg(long, value_name = "N")]
        top: Option<usize>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn load(path: &Path) -> Result<Capture, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Capture::read_chrome_json(f).map_err(|e| format!("{}: {e}", path.display()))
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.cmd {
        Cmd::Summary { capture, json } => {
            let s = load(&capture)?.summary();
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&s).map_err(|e| e.to_string())?
                );
            } else {
                print!("{s}");
            }
        }
        Cmd::Compare {
            a,
            b,
            frames,
            top,
            json,
        } => {
            let (ca, cb) = (load(&a)?, load(&b)?);
            if frames {
                for (c, p) in [(&ca, &a), (&cb, &b)] {
                    if c.frames.is_empty() {
                        return Err(format!(
                            "{}: no complete frames (mark them with JobSystem::frame); \
                             compare without --frames",
                            p.display()
                        ));
                    }
                }
            }
            let mut cmp = compare(&ca, &cb, CompareOptions { per_frame: frames });
            if let Some(n) = top {
                cmp.rows.truncate(n);
            }
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&cmp).map_err(|e| e.to_string())?
                );
            } else {
                println!("A: {}\nB: {}", a.display(), b.display());
                print!("{cmp}");
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("jobsys-trace: {e}");
            ExitCode::FAILURE
        }
    }
}
