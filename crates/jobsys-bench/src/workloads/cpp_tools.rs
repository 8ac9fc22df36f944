//! What the C++ comparisons (`cpp-w1`, `cpp-w2`) share: the compiler, the
//! C library they link, the oneTBB probe, the load average they report.

use crate::error::{Error, Result};
use crate::Ctx;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn workspace_root() -> PathBuf {
    let root = crate_dir().join("../..");
    std::fs::canonicalize(&root).unwrap_or(root)
}

pub fn cxx() -> String {
    std::env::var("CXX")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "c++".into())
}

/// An error unless a C++ compiler answers (`CXX`, else `c++`).
pub fn cxx_found(name: &str) -> Result<()> {
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

/// The load averages over 1, 5 and 15 minutes.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

pub fn run_checked(name: &str, cmd: &mut Command, what: &str) -> Result<std::process::Output> {
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
pub fn capi_lib(ctx: &Ctx, name: &str) -> Result<PathBuf> {
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

pub fn newer(out: &Path, inputs: &[&Path]) -> bool {
    let m = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    match m(out) {
        Some(t) => inputs.iter().all(|p| m(p).is_some_and(|i| i <= t)),
        None => false,
    }
}

/// Whether a program using oneTBB compiles and links here (`-ltbb`).
pub fn tbb_found(dir: &Path) -> bool {
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
