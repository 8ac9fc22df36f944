//! What the C++ comparisons (`cpp-w1`, `cpp-w2`, `cpp-w3`) share: the compiler, the
//! C library they link, the oneTBB probe, the rounds they sample in.

use crate::error::{Error, Result};
use crate::Ctx;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How a comparison samples: `rounds` rounds of `per_round` samples each
/// (the rows of every library alternate round by round), after `warmup`
/// untimed calls, at each worker count of `workers`.
pub struct Rounds {
    pub rounds: usize,
    pub per_round: usize,
    pub warmup: usize,
    pub workers: Vec<usize>,
}

impl Rounds {
    /// 30 samples (4 with `--quick`, or `--samples`) in 3 rounds (2), after
    /// `warmup` calls (1 with `--quick`), at `--workers` or `workers`.
    pub fn new(ctx: &Ctx, warmup: usize, workers: &[usize]) -> Rounds {
        let samples = ctx.samples_or(30, 4);
        let rounds = ctx.size(3, 2).min(samples.max(1));
        Rounds {
            rounds,
            per_round: samples.div_ceil(rounds),
            warmup: ctx.size(warmup, 1),
            workers: if ctx.workers_given {
                ctx.workers.clone()
            } else {
                workers.to_vec()
            },
        }
    }

    /// Samples per row in all.
    pub fn samples(&self) -> usize {
        self.rounds * self.per_round
    }
}

/// Samples of one row of a comparison's table: a library at one case
/// (`K`: a case name, an input size, a duration) and worker count, and the
/// threads it ran on.
pub struct Series<K> {
    pub library: String,
    pub case: K,
    pub workers: usize,
    pub threads: usize,
    pub samples: Vec<f64>,
}

/// Add `xs` to the row of (`library`, `case`, `workers`); a new row runs on
/// `threads`. Rows keep the order they were first added in.
pub fn add<K: PartialEq>(
    all: &mut Vec<Series<K>>,
    library: &str,
    case: K,
    workers: usize,
    threads: usize,
    xs: &[f64],
) {
    match all
        .iter_mut()
        .find(|s| s.library == library && s.case == case && s.workers == workers)
    {
        Some(s) => s.samples.extend_from_slice(xs),
        None => all.push(Series {
            library: library.into(),
            case,
            workers,
            threads,
            samples: xs.to_vec(),
        }),
    }
}

/// The median of the row of (`library`, `case`, `workers`), if there is one.
pub fn median_of<K: PartialEq>(
    all: &[Series<K>],
    library: &str,
    case: &K,
    workers: usize,
) -> Option<f64> {
    all.iter()
        .find(|s| s.library == library && s.case == *case && s.workers == workers)
        .map(|s| crate::stats::summarize(&s.samples).median)
}

/// The line a table gives when oneTBB was not found.
pub const TBB_SKIPPED: &str =
    "oneTBB: skipped: oneTBB not found (no program with -ltbb compiles and runs here)\n";

/// Which library a C++ program is built against (how it compiles).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Lib {
    /// jobsys through jobsys.hpp and libjobsys_capi.a.
    Jobsys,
    /// enkiTS, vendored: its TaskScheduler.cpp compiled in.
    EnkiTS,
    /// Taskflow, vendored, header-only (C++20).
    Taskflow,
    /// oneTBB, installed (`-ltbb`).
    OneTbb,
}

/// A C++ program: its library name (as it prints it), how it builds, its
/// -D flag, its binary's name.
pub struct Prog {
    pub library: &'static str,
    pub lib: Lib,
    pub define: &'static str,
    pub file: &'static str,
}

/// Compile `cpp/<source>` for `p` into `dir` (linking `capi` for jobsys)
/// unless an up-to-date binary is there; `name` is the subcommand's, for
/// messages.
pub fn compile(
    ctx: &Ctx,
    name: &str,
    source: &str,
    p: &Prog,
    dir: &Path,
    capi: &Path,
) -> Result<PathBuf> {
    let src = crate_dir().join("cpp").join(source);
    let tp = crate_dir().join("third_party");
    let bin = dir.join(p.file);
    let mut args: Vec<String> = vec!["-O2".into(), "-pthread".into()];
    let mut inputs: Vec<PathBuf> = vec![src.clone(), crate_dir().join("cpp/count.hpp")];
    let mut tail: Vec<String> = Vec::new();
    match p.lib {
        Lib::Jobsys => {
            args.push("-std=c++17".into());
            let inc = crate_dir().join("../jobsys-capi/include");
            args.push(format!("-I{}", inc.display()));
            inputs.push(inc.join("jobsys.hpp"));
            inputs.push(capi.to_path_buf());
            tail.push(capi.display().to_string());
            tail.extend(["-ldl".into(), "-lm".into()]);
        }
        Lib::EnkiTS => {
            args.push("-std=c++17".into());
            let s = tp.join("enkiTS/src");
            args.push(format!("-I{}", s.display()));
            tail.push(s.join("TaskScheduler.cpp").display().to_string());
        }
        Lib::Taskflow => {
            // Taskflow 4 needs C++20.
            args.push("-std=c++20".into());
            args.push(format!("-I{}", tp.join("taskflow").display()));
        }
        Lib::OneTbb => {
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
        .print(&format!("{name}: compiling {} ({})", p.file, p.library));
    run_checked(
        name,
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

/// Check for a C++ compiler, build the C library if it is missing, and
/// compile `progs` (and `tbb`, when oneTBB is found here) from
/// `cpp/<source>` into `<out>/<name>/`: each program's library name and
/// binary, and whether oneTBB was found.
pub fn build_programs(
    ctx: &Ctx,
    name: &str,
    source: &str,
    mut progs: Vec<Prog>,
    tbb: Prog,
) -> Result<(Vec<(&'static str, PathBuf)>, bool)> {
    cxx_found(name)?;
    let dir = ctx.out.join(name);
    std::fs::create_dir_all(&dir)?;
    let capi = capi_lib(ctx, name)?;
    let tbb_here = tbb_found(&dir);
    if tbb_here {
        progs.push(tbb);
    }
    let mut bins = Vec::new();
    for p in &progs {
        bins.push((p.library, compile(ctx, name, source, p, &dir, &capi)?));
    }
    Ok((bins, tbb_here))
}

/// Run a C++ program with `args` and parse each line of its output as
/// one `T` (JSON).
pub fn run_lines<T: DeserializeOwned>(name: &str, bin: &Path, args: &[String]) -> Result<Vec<T>> {
    let out = run_checked(
        name,
        Command::new(bin).args(args),
        &bin.display().to_string(),
    )?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<T>(l).map_err(Error::Json))
        .collect()
}

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

/// An error unless a C++ compiler answers (`CXX`, else `c++`).
fn cxx_found(name: &str) -> Result<()> {
    let cxx = cxx();
    let found = Command::new(&cxx)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Ok(());
    }
    Err(Error::Child(format!(
        "{name}: no C++ compiler: `{cxx} --version` failed (install g++ or clang++, or set CXX)"
    )))
}

fn run_checked(name: &str, cmd: &mut Command, what: &str) -> Result<std::process::Output> {
    let out = cmd
        .output()
        .map_err(|e| Error::Child(format!("{name}: cannot run {what}: {e}")))?;
    if !out.status.success() {
        return Err(Error::Child(format!(
            "{name}: {what} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(out)
}

/// libjobsys_capi.a, built with cargo if missing.
fn capi_lib(ctx: &Ctx, name: &str) -> Result<PathBuf> {
    let root = workspace_root();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let lib = target.join("release").join("libjobsys_capi.a");
    if !lib.exists() {
        ctx.progress.print(&format!(
            "{name}: building libjobsys_capi.a (cargo build --release -p jobsys-capi)"
        ));
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        run_checked(
            name,
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
