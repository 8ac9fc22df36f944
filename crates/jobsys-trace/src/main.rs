//! `jobsys-trace`: read captures that a jobsys program wrote (raw
//! captures from `Trace::write_raw` or the C API's `jobsys_trace_write`,
//! or Chrome trace JSON from `export` / `TraceExt::write_chrome_json`;
//! every command takes either) and
//!
//! - `summary CAPTURE.json`: per thread the share of time in each state,
//!   jobs, steals, wakes, futile wakes, scheduling latency; per job name
//!   count, total, mean, p99; warnings (dropped events, rapid switching);
//! - `compare A.json B.json [--frames]`: per job name count, total and mean
//!   in A and in B, absolute and relative difference, sorted by absolute
//!   difference (with `--frames`: averages per frame, and frame times);
//! - `render CAPTURE.json -o timeline.svg [--from-ms A --to-ms B]`: the
//!   timeline as an SVG picture (see `jobsys_trace::render`);
//! - `export CAPTURE -o CAPTURE.json`: Chrome trace JSON, which
//!   ui.perfetto.dev and chrome://tracing open.
//!
//! `--json` prints the summary or comparison as JSON.

use clap::{Parser, Subcommand};
use jobsys_trace::{compare, render, Capture, CompareOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "jobsys-trace",
    version,
    about = "Summarise, compare, render and export jobsys trace captures"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Per-thread states, wakes, latency and per-job statistics of a capture.
    Summary {
        /// A capture: raw (`Trace::write_raw`) or Chrome JSON (`export`).
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
    /// Draw the timeline as SVG: thread states, job slices, wake and
    /// release arrows, frames.
    Render {
        /// A capture: raw (`Trace::write_raw`) or Chrome JSON (`export`).
        capture: PathBuf,
        /// The SVG file to write.
        #[arg(short, long, value_name = "SVG")]
        out: PathBuf,
        /// Start of the window, in milliseconds since the capture started.
        #[arg(long, value_name = "MS")]
        from_ms: Option<f64>,
        /// End of the window, in milliseconds since the capture started.
        #[arg(long, value_name = "MS")]
        to_ms: Option<f64>,
        /// Picture width in pixels.
        #[arg(long, default_value_t = 1600)]
        width: u32,
    },
    /// Write a capture as Chrome trace event JSON, which ui.perfetto.dev
    /// and chrome://tracing open (and every command here reads).
    Export {
        /// A capture: raw (`Trace::write_raw`) or Chrome JSON.
        capture: PathBuf,
        /// The JSON file to write.
        #[arg(short, long, value_name = "JSON")]
        out: PathBuf,
    },
}

/// Milliseconds (from the command line) as nanoseconds.
fn ms_to_ns(ms: f64, what: &str) -> Result<u64, String> {
    if !(ms.is_finite() && ms >= 0.0) {
        return Err(format!("{what}: {ms} is not a time (milliseconds >= 0)"));
    }
    Ok((ms * 1e6).round() as u64)
}

fn load(path: &Path) -> Result<Capture, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Capture::read(f).map_err(|e| format!("{}: {e}", path.display()))
}

/// Writes `text` to stdout. When the reader has gone (`jobsys-trace
/// summary x.json | head -1`), stop quietly with status 0, as `cat` and
/// `grep` in effect do: the rest of the output is not wanted. (`print!`
/// would panic here, since Rust ignores SIGPIPE and the write fails with
/// `BrokenPipe`.)
fn emit(text: &str) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(format!("writing to stdout: {e}")),
    }
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.cmd {
        Cmd::Summary { capture, json } => {
            let s = load(&capture)?.summary();
            if json {
                let text = serde_json::to_string_pretty(&s).map_err(|e| e.to_string())?;
                emit(&format!("{text}\n"))?;
            } else {
                emit(&s.to_string())?;
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
                let text = serde_json::to_string_pretty(&cmp).map_err(|e| e.to_string())?;
                emit(&format!("{text}\n"))?;
            } else {
                emit(&format!("A: {}\nB: {}\n{cmp}", a.display(), b.display()))?;
            }
        }
        Cmd::Render {
            capture,
            out,
            from_ms,
            to_ms,
            width,
        } => {
            let c = load(&capture)?;
            let mut opt = render::Options::whole(&c, width);
            if let Some(ms) = from_ms {
                opt.from_ns = ms_to_ns(ms, "--from-ms")?;
            }
            if let Some(ms) = to_ms {
                opt.to_ns = ms_to_ns(ms, "--to-ms")?;
            }
            if opt.from_ns >= opt.to_ns.min(c.duration_ns) {
                return Err(format!(
                    "empty window: the capture lasts {:.3} ms (--from-ms must be below \
                     --to-ms and the capture's end)",
                    c.duration_ns as f64 / 1e6
                ));
            }
            let svg = render::render(&c, &opt);
            std::fs::write(&out, svg).map_err(|e| format!("{}: {e}", out.display()))?;
            eprintln!(
                "wrote {} ({} threads, {:.3} ms to {:.3} ms)",
                out.display(),
                c.threads.len(),
                opt.from_ns as f64 / 1e6,
                opt.to_ns.min(c.duration_ns) as f64 / 1e6
            );
        }
        Cmd::Export { capture, out } => {
            let c = load(&capture)?;
            let f = std::fs::File::create(&out).map_err(|e| format!("{}: {e}", out.display()))?;
            c.write_chrome_json(f)
                .map_err(|e| format!("{}: {e}", out.display()))?;
            eprintln!(
                "wrote {} ({} threads, {} frames, {:.3} ms): open it in ui.perfetto.dev",
                out.display(),
                c.threads.len(),
                c.frames.len(),
                c.duration_ns as f64 / 1e6
            );
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
