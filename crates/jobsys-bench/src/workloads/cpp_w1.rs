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

use super::w1_kernels::{self, Case, Sizes};
use crate::count;
use crate::error::{Error, Result};
use crate::stats;
use crate::table;
use crate::Ctx;
use jobsys::{JobHandle, JobSystem};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The subcommand's name.
pub const NAME: &str = "cpp-w1";

/// The cases run from C++ (pfor-empty has no peer counterpart here).
const CASES: [Case; 3] = [Case::Single, Case::Flat, Case::Nested];

/// The Rust row's library name.
pub const RUST: &str = "jobsys-rust";

/// A C++ program: its library name (as it prints it), its -D flag.
struct Prog {
    library: &'static str,
    define: &'static str,
    file: &'static str,
}

const JOBSYS_CPP: Prog = Prog {
    library: "jobsys-cpp",
    define: "JOBSYS_W1_JOBSYS",
    file: "w1-jobsys",
};
const ENKITS: Prog = Prog {
    library: "enkiTS",
    define: "JOBSYS_W1_ENKITS",
    file: "w1-enkits",
};
const TASKFLOW: Prog = Prog {
    library: "taskflow",
    define: "JOBSYS_W1_TASKFLOW",
    file: "w1-taskflow",
};
const TBB: Prog = Prog {
    library: "oneTBB",
    define: "JOBSYS_W1_TBB",
    file: "w1-tbb",
};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn workspace_root() -> PathBuf {
    let root = crate_dir().join("../..");
    std::fs::canonicalize(&root).unwrap_or(root)
}

fn cxx() -> String {
    std::env::var("CXX")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "c++".into())
}

/// 1-minute load average.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

fn run_checked(cmd: &mut Command, what: &str) -> Result<std::process::Output> {
    let out = cmd
        .output()
        .map_err(|e| Error::Child(format!("{NAME}: cannot run {what}: {e}")))?;
    if !out.status.success() {
        return Err(Error::Child(format!(
            "{NAME}: {what} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(out)
}

/// libjobsys_capi.a, built with cargo if missing.
fn capi_lib(ctx: &Ctx) -> Result<PathBuf> {
    let root = workspace_root();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let lib = target.join("release").join("libjobsys_capi.a");
    if !lib.exists() {
        ctx.progress.print(&format!(
            "{NAME}: building libjobsys_capi.a (cargo build --release -p jobsys-capi)"
        ));
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        run_checked(
            Command::new(cargo)
                .args(["build", "--release", "-p", "jobsys-capi", "--target-dir"])
                .arg(&target)
                .current_dir(&root),
            "cargo build --release -p jobsys-capi",
        )?;
    }
    Ok(lib)
}

fn newer(out: &Path, inputs: &[&Path]) -> bool {
    let m = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    match m(out) {
        Some(t) => inputs.iter().all(|p| m(p).is_some_and(|i| i <= t)),
        None => false,
    }
}

/// Compile `p` into `dir` unless an up-to-date binary is there.
fn compile(ctx: &Ctx, p: &Prog, dir: &Path, capi: &Path) -> Result<PathBuf> {
    let src = crate_dir().join("cpp").join("w1.cpp");
    let tp = crate_dir().join("third_party");
    let bin = dir.join(p.file);
    let mut args: Vec<String> = vec!["-O2".into(), "-pthread".into()];
    let mut inputs: Vec<PathBuf> = vec![src.clone()];
    let mut tail: Vec<String> = Vec::new();
    match p.define {
        "JOBSYS_W1_JOBSYS" => {
            args.push("-std=c++17".into());
            let inc = crate_dir().join("../jobsys-capi/include");
            args.push(format!("-I{}", inc.display()));
            inputs.push(inc.join("jobsys.hpp"));
            inputs.push(capi.to_path_buf());
            tail.push(capi.display().to_string());
            tail.extend(["-ldl".into(), "-lm".into()]);
        }
        "JOBSYS_W1_ENKITS" => {
            args.push("-std=c++17".into());
            let s = tp.join("enkiTS/src");
            args.push(format!("-I{}", s.display()));
            tail.push(s.join("TaskScheduler.cpp").display().to_string());
        }
        "JOBSYS_W1_TASKFLOW" => {
            // Taskflow 4 needs C++20.
            args.push("-std=c++20".into());
            args.push(format!("-I{}", tp.join("taskflow").display()));
        }
        _ => {
            args.push("-std=c++17".into());
            tail.push("-ltbb".into());
        }
    }
    args.push(format!("-D{}", p.define));
    let refs: Vec<&Path> = inputs.iter().map(|p| p.as_path()).collect();
    if newer(&bin, &refs) {
        return Ok(bin);
    }
    ctx.progress
        .print(&format!("{NAME}: compiling {} ({})", p.file, p.library));
    run_checked(
        Command::new(cxx())
            .args(&args)
            .arg(&src)
            .args(&tail)
            .arg("-o")
            .arg(&bin),
        &format!("{} compiling {}", cxx(), p.file),
    )?;
    Ok(bin)
}

/// Whether a program using oneTBB compiles and links here (`-ltbb`).
fn tbb_found(dir: &Path) -> bool {
    let src = dir.join("tbb-probe.cpp");
    let bin = dir.join("tbb-probe");
    let code = "#include <oneapi/tbb/task_group.h>\nint main(){tbb::task_group g; g.run([]{}); g.wait();}\n";
    if std::fs::write(&src, code).is_err() {
        return false;
    }
    Command::new(cxx())
        .args(["-O2", "-pthread", "-std=c++17"])
        .arg(&src)
        .arg("-ltbb")
        .arg("-o")
        .arg(&bin)
        .output()
        .is_ok_and(|o| o.status.success())
        && Command::new(&bin)
            .output()
            .is_ok_and(|o| o.status.success())
}

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
    let out = run_checked(
        Command::new(bin).args([
            w.to_string(),
            samples.to_string(),
            warmup.to_string(),
            s.single.to_string(),
            s.flat.to_string(),
            s.depth.to_string(),
        ]),
        &bin.display().to_string(),
    )?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Line>(l).map_err(Error::Json))
        .collect()
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

/// Samples of one (library, case, threads).
struct Series {
    library: String,
    case: String,
    threads: usize,
    samples: Vec<f64>,
}

fn add(all: &mut Vec<Series>, library: &str, case: &str, threads: usize, xs: &[f64]) {
    if let Some(s) = all
        .iter_mut()
        .find(|s| s.library == library && s.case == case && s.threads == threads)
    {
        s.samples.extend_from_slice(xs);
    } else {
        all.push(Series {
            library: library.into(),
            case: case.into(),
            threads,
            samples: xs.to_vec(),
        });
    }
}

/// Run `cpp-w1` and print its tables.
pub fn run(ctx: &Ctx) -> Result<()> {
    let load_start = load_average();
    let sizes = ctx.size(Sizes::FULL, Sizes::QUICK);
    let samples = ctx.samples_or(30, 4);
    let rounds = ctx.size(3, 2).min(samples.max(1));
    let per_round = samples.div_ceil(rounds);
    let warmup = ctx.size(2, 1);
    let workers: Vec<usize> = if ctx.workers_given {
        ctx.workers.clone()
    } else {
        vec![0, 1, 2]
    };

    let cxx = cxx();
    let found = Command::new(&cxx)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        return Err(Error::Child(format!(
            "{NAME}: no C++ compiler: `{cxx} --version` failed (install g++ or clang++, or set CXX)"
        )));
    }
    let dir = ctx.out.join(NAME);
    std::fs::create_dir_all(&dir)?;
    let capi = capi_lib(ctx)?;
    let mut progs = vec![JOBSYS_CPP, ENKITS, TASKFLOW];
    let tbb = tbb_found(&dir);
    if tbb {
        progs.push(TBB);
    }
    let mut bins = Vec::new();
    for p in &progs {
        bins.push((p.library, compile(ctx, p, &dir, &capi)?));
    }

    let mut all: Vec<Series> = Vec::new();
    for &w in &workers {
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
                add(&mut all, RUST, c.name(), w + 1, &xs);
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
                    add(&mut all, &l.library, &l.case, l.threads, &l.samples);
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
        per_round * rounds,
        sizes.single,
        sizes.flat,
        sizes.depth
    );
    if !tbb {
        text.push_str(
            "oneTBB: skipped: oneTBB not found (no program with -ltbb compiles and runs here)\n",
        );
    }
    let header: Vec<String> = ["library", "threads", "median", "p99", "min-max", "ratio"]
        .map(String::from)
        .to_vec();
    for c in CASES {
        let mut body = Vec::new();
        for &w in &workers {
            let base = all
                .iter()
                .find(|s| s.library == RUST && s.case == c.name() && s.threads == w + 1)
                .map(|s| stats::summarize(&s.samples).median);
            for s in all
                .iter()
                .filter(|s| s.case == c.name() && s.threads == w + 1)
            {
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
