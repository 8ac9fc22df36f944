//! `cpp-w1`: W1 (spawn-empty) called from C++ through jobsys.hpp, beside W1
//! called from Rust and beside the C++ peers enkiTS, Taskflow and (when
//! installed) oneTBB, in one run (crates/jobsys-bench/cpp/README.md).
//!
//! The C++ kernels are `cpp/w1.cpp`, compiled once per library with `c++`
//! into `<out>/cpp-w1/` and run as child processes; the Rust kernels are
//! [`w1_kernels::iteration`], run in this process. Per worker count the
//! contestants take turns (rounds), so that drift in the machine's load
//! spreads over all of them.
//!
//! Equal thread counts: jobsys with N workers runs on N + 1 threads (the
//! calling thread helps); every peer gets N + 1 threads in all.

use super::cpp_tools::{
    add, build_programs, median_of, run_lines, Lib, Prog, Rounds, Series, TBB_SKIPPED,
};
use super::w1_kernels::{self, Case, Sizes};
use crate::count;
use crate::error::{Error, Result};
use crate::load_average;
use crate::stats;
use crate::table;
use crate::Ctx;
use jobsys::{JobHandle, JobSystem};
use std::path::Path;
use std::time::Instant;

/// The subcommand's name.
pub const NAME: &str = "cpp-w1";

/// The cases run from C++ (pfor-empty has no peer counterpart here).
const CASES: [Case; 3] = [Case::Single, Case::Flat, Case::Nested];

/// The Rust row's library name.
pub const RUST: &str = "jobsys-rust";

const JOBSYS_CPP: Prog = Prog {
    library: "jobsys-cpp",
    lib: Lib::Jobsys,
    define: "JOBSYS_W1_JOBSYS",
    file: "w1-jobsys",
};
const ENKITS: Prog = Prog {
    library: "enkiTS",
    lib: Lib::EnkiTS,
    define: "JOBSYS_W1_ENKITS",
    file: "w1-enkits",
};
const TASKFLOW: Prog = Prog {
    library: "taskflow",
    lib: Lib::Taskflow,
    define: "JOBSYS_W1_TASKFLOW",
    file: "w1-taskflow",
};
const TBB: Prog = Prog {
    library: "oneTBB",
    lib: Lib::OneTbb,
    define: "JOBSYS_W1_TBB",
    file: "w1-tbb",
};

/// One child line.
#[derive(serde::Deserialize)]
struct Line {
    library: String,
    case: String,
    threads: usize,
    samples: Vec<f64>,
}

/// Run a child: `samples` counted iterations per case after `warmup`.
fn run_child(bin: &Path, w: usize, samples: usize, warmup: usize, s: &Sizes) -> Result<Vec<Line>> {
    let args = [w, samples, warmup, s.single, s.flat, s.depth as usize].map(|v| v.to_string());
    run_lines(NAME, bin, &args)
}

/// One Rust iteration of `c`: ns per job, the count checked.
fn rust_iter(js: &JobSystem, c: Case, s: &Sizes, hs: &mut Vec<JobHandle>) -> Result<f64> {
    let jobs = s.jobs(c);
    let before = count::total();
    let t = Instant::now();
    w1_kernels::iteration(js, c, s, hs)?;
    let ns = t.elapsed().as_nanos() as f64;
    let ran = count::total() - before;
    crate::error::check(ran == jobs as u64, || {
        format!("{NAME} {}: {ran} jobs ran, expected {jobs}", c.name())
    })?;
    Ok(ns / jobs as f64)
}

/// Run `cpp-w1` and print its tables.
pub fn run(ctx: &Ctx) -> Result<()> {
    let load_start = load_average();
    let sizes = ctx.size(Sizes::FULL, Sizes::QUICK);
    let r = Rounds::new(ctx, 2, &[0, 1, 2]);
    let (rounds, per_round, warmup, workers) = (r.rounds, r.per_round, r.warmup, &r.workers);

    let (bins, tbb) = build_programs(ctx, NAME, "w1.cpp", vec![JOBSYS_CPP, ENKITS, TASKFLOW], TBB)?;

    let mut all: Vec<Series<String>> = Vec::new();
    for &w in workers {
        ctx.progress
            .print(&format!("{NAME}: {w} worker(s), {} threads", w + 1));
        for _ in 0..rounds {
            // Rust, in this process.
            let js = JobSystem::builder().workers(w).build()?;
            let mut hs = Vec::with_capacity(sizes.flat);
            for c in CASES {
                for _ in 0..warmup {
                    rust_iter(&js, c, &sizes, &mut hs)?;
                }
                let mut xs = Vec::with_capacity(per_round);
                for _ in 0..per_round {
                    xs.push(rust_iter(&js, c, &sizes, &mut hs)?);
                }
                add(&mut all, RUST, c.name().to_string(), w, w + 1, &xs);
            }
            drop(js);
            // The C++ programs, as children.
            for (lib, bin) in &bins {
                for l in run_child(bin, w, per_round, warmup, &sizes)? {
                    if l.library != *lib || l.threads != w + 1 {
                        return Err(Error::Child(format!(
                            "{NAME}: {} printed library {} threads {}, expected {lib} {}",
                            bin.display(),
                            l.library,
                            l.threads,
                            w + 1
                        )));
                    }
                    add(&mut all, &l.library, l.case, w, l.threads, &l.samples);
                }
            }
        }
    }

    let load_end = load_average();
    let mut text = format!(
        "\n{NAME}: W1 from C++ (jobsys.hpp) beside W1 from Rust and the C++ peers, ns per job.\n\
         threads = jobsys workers + the calling thread; every peer runs on as many threads in all\n\
         (enkiTS: Initialize(threads), the caller helps; Taskflow: Executor(threads), the caller only waits;\n\
         oneTBB: task_arena(threads, 1 reserved for the caller)). ratio = median / jobsys-rust median (same threads).\n\
         {} samples per row in {rounds} rounds, sizes: single {}, flat {}, nested depth {}.\n\
         load average at start: {load_start}; at end: {load_end}\n",
        r.samples(),
        sizes.single,
        sizes.flat,
        sizes.depth
    );
    if !tbb {
        text.push_str(TBB_SKIPPED);
    }
    let header: Vec<String> = ["library", "threads", "median", "p99", "min-max", "ratio"]
        .map(String::from)
        .to_vec();
    for c in CASES {
        let mut body = Vec::new();
        for &w in workers {
            let base = median_of(&all, RUST, &c.name().to_string(), w);
            for s in all.iter().filter(|s| s.case == c.name() && s.workers == w) {
                let m = stats::summarize(&s.samples);
                body.push(vec![
                    s.library.clone(),
                    s.threads.to_string(),
                    table::fmt_num(m.median),
                    table::fmt_num(m.p99),
                    format!("{}-{}", table::fmt_num(m.min), table::fmt_num(m.max)),
                    base.map_or("-".into(), |b| format!("{:.2}", m.median / b)),
                ]);
            }
        }
        text.push_str(&format!("\n{NAME} {} (ns per job)\n", c.name()));
        text.push_str(&table::grid(&header, &body, 1));
    }
    ctx.progress.print(&text);
    Ok(())
}
