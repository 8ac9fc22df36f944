//! `cpp-w2`: W2 (parallel-for) with the batch chosen by the library, from
//! Rust, from C++ through jobsys.hpp, and with oneTBB's `parallel_for` and
//! auto partitioner when it is installed, in one run
//! (crates/jobsys-bench/cpp/README.md).
//!
//! Each library is timed in alternation with a serial loop compiled the
//! same way (Rust's in this process, C++'s in the child, `cpp/w2.cpp`),
//! and reported as its speedup over that serial loop: the two compilers
//! need not make the kernel equally fast for the ratios to compare. Per
//! worker count the contestants take turns (rounds), so that drift in the
//! machine's load spreads over all of them.
//!
//! Equal thread counts: jobsys with N workers runs on N + 1 threads (the
//! calling thread helps); oneTBB gets a `task_arena` of N + 1 threads with
//! one reserved for the caller.

use super::cpp_tools::{
    add, build_programs, median_of, run_lines, Lib, Prog, Rounds, Series, TBB_SKIPPED,
};
use super::parallel_for::{jobsys_loop, kernel_slice};
use crate::error::{Error, Result};
use crate::load_average;
use crate::stats;
use crate::table;
use crate::Ctx;
use jobsys::{Batch, JobSystem};
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

/// The subcommand's name.
pub const NAME: &str = "cpp-w2";

/// The Rust rows' library names.
const RUST: &str = "jobsys-rust";
const SERIAL_RUST: &str = "serial-rust";
const SERIAL_CPP: &str = "serial-cpp";

/// The multiplier: 3, black-boxed in Rust, read from the command line in
/// C++, so that neither compiler folds the 20 steps.
const MULT: u32 = 3;

const JOBSYS_CPP: Prog = Prog {
    library: "jobsys-cpp",
    lib: Lib::Jobsys,
    define: "JOBSYS_W2_JOBSYS",
    file: "w2-jobsys",
};
const TBB: Prog = Prog {
    library: "oneTBB",
    lib: Lib::OneTbb,
    define: "JOBSYS_W2_TBB",
    file: "w2-tbb",
};

/// One child line.
#[derive(serde::Deserialize)]
struct Line {
    library: String,
    size: usize,
    threads: usize,
    samples: Vec<f64>,
}

/// `n` samples of jobsys's loop and of the serial one, alternated, in µs
/// per call; every result checked against `expect`.
fn rust_samples(
    js: &JobSystem,
    expect: &[u32],
    n: usize,
    warmup: usize,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let mut xs: Vec<u32> = (0..expect.len() as u32).collect();
    let (mut mine, mut serial) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..warmup + n {
        xs.iter_mut().enumerate().for_each(|(j, x)| *x = j as u32);
        let t = Instant::now();
        jobsys_loop(js, &mut xs, Batch::Auto, black_box(MULT));
        let us = t.elapsed().as_secs_f64() * 1e6;
        crate::error::check(xs == expect, || {
            format!("{NAME}: jobsys's loop differs from the serial one")
        })?;
        xs.iter_mut().enumerate().for_each(|(j, x)| *x = j as u32);
        let t = Instant::now();
        kernel_slice(&mut xs, black_box(MULT));
        let sus = t.elapsed().as_secs_f64() * 1e6;
        if i >= warmup {
            mine.push(us);
            serial.push(sus);
        }
    }
    Ok((mine, serial))
}

/// Run a child for one size: `samples` timed calls after `warmup`.
fn run_child(
    bin: &Path,
    w: usize,
    size: usize,
    samples: usize,
    warmup: usize,
) -> Result<Vec<Line>> {
    let args = [w, size, samples, warmup, MULT as usize].map(|v| v.to_string());
    run_lines(NAME, bin, &args)
}

/// Run `cpp-w2` and print its tables.
pub fn run(ctx: &Ctx) -> Result<()> {
    let load_start = load_average();
    let sizes = [
        ("large", ctx.size(1usize << 20, 1 << 16)),
        ("small", 10_000usize),
    ];
    let r = Rounds::new(ctx, 3, &[1, 2, 4]);
    let (rounds, per_round, warmup, workers) = (r.rounds, r.per_round, r.warmup, &r.workers);

    let (bins, tbb) = build_programs(ctx, NAME, "w2.cpp", vec![JOBSYS_CPP], TBB)?;

    // The serial rows have threads 1, kept per worker count beside the rows
    // they divide.
    let mut all: Vec<Series<usize>> = Vec::new();
    for &w in workers {
        ctx.progress
            .print(&format!("{NAME}: {w} worker(s), {} threads", w + 1));
        for _ in 0..rounds {
            for &(_, n) in &sizes {
                let mut expect: Vec<u32> = (0..n as u32).collect();
                kernel_slice(&mut expect, black_box(MULT));
                let js = JobSystem::builder().workers(w).build()?;
                let (mine, serial) = rust_samples(&js, &expect, per_round, warmup)?;
                drop(js);
                add(&mut all, RUST, n, w, w + 1, &mine);
                add(&mut all, SERIAL_RUST, n, w, 1, &serial);
                for (lib, bin) in &bins {
                    for l in run_child(bin, w, n, per_round, warmup)? {
                        let threads = if l.library == SERIAL_CPP { 1 } else { w + 1 };
                        if (l.library != *lib && l.library != SERIAL_CPP)
                            || l.threads != threads
                            || l.size != n
                        {
                            return Err(Error::Child(format!(
                                "{NAME}: {} printed library {} size {} threads {}, expected {lib} {n} {}",
                                bin.display(),
                                l.library,
                                l.size,
                                l.threads,
                                w + 1
                            )));
                        }
                        // Each child's serial loop divides that child's row.
                        let library = if l.library == SERIAL_CPP {
                            format!("{SERIAL_CPP}:{lib}")
                        } else {
                            l.library
                        };
                        add(&mut all, &library, n, w, l.threads, &l.samples);
                    }
                }
            }
        }
    }

    let load_end = load_average();
    let mut text = format!(
        "\n{NAME}: W2 (parallel-for, batch chosen by the library) from Rust, from C++ through jobsys.hpp\n\
         and with oneTBB's auto partitioner; us per call. threads = jobsys workers + the calling thread\n\
         (oneTBB: task_arena(threads, 1 reserved for the caller)). speedup = the median of the serial loop\n\
         timed in alternation with the row, in the same language (serial-rust for jobsys-rust, the child's own\n\
         serial-cpp for each C++ row), / the row's median.\n\
         {} samples per row in {rounds} rounds; 20 x (x*3+1) per element; results checked against the serial loop.\n\
         load average at start: {load_start}; at end: {load_end}\n",
        r.samples(),
    );
    if !tbb {
        text.push_str(TBB_SKIPPED);
    }
    let header: Vec<String> = ["library", "threads", "median", "p99", "min-max", "speedup"]
        .map(String::from)
        .to_vec();
    for &(size_name, n) in &sizes {
        let mut body = Vec::new();
        for &w in workers {
            let serial_of = |name: &str| median_of(&all, name, &n, w);
            for s in all.iter().filter(|s| s.case == n && s.workers == w) {
                let m = stats::summarize(&s.samples);
                let serial = match s.library.as_str() {
                    RUST => serial_of(SERIAL_RUST),
                    l if l.starts_with("serial") => None,
                    l => serial_of(&format!("{SERIAL_CPP}:{l}")),
                };
                body.push(vec![
                    s.library.clone(),
                    s.threads.to_string(),
                    table::fmt_num(m.median),
                    table::fmt_num(m.p99),
                    format!("{}-{}", table::fmt_num(m.min), table::fmt_num(m.max)),
                    serial.map_or("-".into(), |b| format!("{:.2}x", b / m.median)),
                ]);
            }
        }
        text.push_str(&format!("\n{NAME} {size_name} ({n} u32, us per call)\n"));
        text.push_str(&table::grid(&header, &body, 1));
    }
    ctx.progress.print(&text);
    Ok(())
}
