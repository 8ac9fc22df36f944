//! trace-cost: what jobsys's tracer costs, on W1's jobsys kernels.
//!
//! Three variants, measured in the same run:
//! - **out** (A): jobsys built without the `trace` feature: every event
//!   site compiled to nothing;
//! - **off** (B): the tracer compiled in, not recording: each event site is
//!   one relaxed load and a branch;
//! - **rec** (C): recording (`trace_start` before each iteration,
//!   `trace_stop` after it, both untimed);
//! - **hooks** (D): the tracer compiled in, not recording, and profiler
//!   hooks that do nothing installed on the measured system
//!   (`jobsys-w1 --hooks here`): what `ProfilerHooks` cost by themselves
//!   (with none installed a system runs B's code: docs/profiling.md).
//!
//! Cargo unifies features across one build, so A cannot live in this
//! binary (jobsys-lab, through jobsys-bench, depends on jobsys with its
//! default features). All
//! three run in the child program `jobsys-w1` (crates/jobsys-w1), built
//! twice by its own cargo invocations: `cargo build --release -p jobsys-w1`
//! for A and the same with `--features trace` for B and C. The child
//! compiles W1's kernel file and the job counter of jobsys-bench
//! (`w1_kernels.rs`, `count.rs`, the code `spawn-empty` runs), so both builds run the same source and
//! differ only in the feature; it reports `jobsys::trace::COMPILED`, which
//! is checked (A must say false, B and C true).
//!
//! Per worker count and case, the variants take turns in rounds, the order
//! rotated every round (A B C, B C A, C A B, ...), so drift hits all three
//! and none always runs right after another. Each block is one child
//! process: a fresh job system, 1 ms settle, warm-up iterations, then the
//! block's counted iterations (ns per job, every job counted and checked).

use crate::ChildBins;
use jobsys_bench::error::{check, Error, Result};
use jobsys_bench::json::{self, Label, Row};
use jobsys_bench::pools::PolicySpec;
use jobsys_bench::runner::split;
use jobsys_bench::stats::{self, Summary};
use jobsys_bench::table::{fmt_num, grid};
use jobsys_bench::workloads::w1_kernels::{Case, Sizes};
use jobsys_bench::{params, Ctx};
use serde::Deserialize;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Workload name (subcommand, JSON file).
pub const NAME: &str = "trace-cost";

/// The child's package (and binary) name.
const CHILD: &str = "jobsys-w1";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    Out,
    Off,
    Rec,
    Hooks,
}

impl Variant {
    const ALL: [Variant; 4] = [Variant::Out, Variant::Off, Variant::Rec, Variant::Hooks];

    /// `params.trace` in the JSON.
    fn name(self) -> &'static str {
        match self {
            Variant::Out => "compiled-out",
            Variant::Off => "off",
            Variant::Rec => "recording",
            Variant::Hooks => "hooks",
        }
    }

    /// `impl` in the JSON.
    fn imp(self) -> &'static str {
        match self {
            Variant::Out => "jobsys-notrace",
            Variant::Off => "jobsys-trace-off",
            Variant::Rec => "jobsys-trace-recording",
            Variant::Hooks => "jobsys-hooks-empty",
        }
    }
}

/// One block as the child prints it.
#[derive(Debug, Deserialize)]
struct Block {
    trace_compiled: bool,
    recording: bool,
    /// Where the child installed empty profiler hooks (none/elsewhere/here).
    hooks: String,
    case: String,
    workers: usize,
    jobs: usize,
    policy: String,
    events_per_sample: f64,
    samples: Vec<f64>,
}

/// Samples of one variant of one (workers, case) row.
#[derive(Default)]
struct Acc {
    samples: Vec<f64>,
    events: f64,
    blocks: usize,
    policy: String,
    /// What the child reported (`jobsys::trace::COMPILED`), checked per block.
    trace_compiled: bool,
    /// The samples of even and of odd rounds (a noise estimate for A).
    halves: [Vec<f64>; 2],
}

/// The workspace this binary was built from.
fn workspace_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::canonicalize(&root).unwrap_or(root)
}

/// A command line as one could paste it into a shell.
fn shown(program: &OsString, args: &[OsString]) -> String {
    std::iter::once(program)
        .chain(args)
        .map(|a| {
            let s = a.to_string_lossy();
            if s.is_empty() || s.contains(|c: char| c.is_whitespace() || c == '\'') {
                format!("'{}'", s.replace('\'', "'\\''"))
            } else {
                s.into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Build the child with cargo (`trace`: with `--features trace`); its path.
fn build_child(ctx: &Ctx, trace: bool) -> Result<PathBuf> {
    let root = workspace_root();
    let manifest = root.join("crates").join(CHILD).join("Cargo.toml");
    if !manifest.exists() {
        return Err(Error::Child(format!(
            "trace-cost: {} not found: the child program is built from the source tree \
             jobsys-bench was built from; build it yourself (`cargo build --release -p {CHILD}`, \
             once without and once with `--features trace`, in separate target directories) \
             and pass --notrace-bin and --trace-bin",
            manifest.display()
        )));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("trace-cost")
        .join(if trace { "trace" } else { "notrace" });
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut args: Vec<OsString> = [
        "build",
        "--release",
        "-p",
        CHILD,
        "--message-format=json-render-diagnostics",
    ]
    .map(OsString::from)
    .to_vec();
    if trace {
        args.extend(["--features", "trace"].map(OsString::from));
    }
    args.push("--manifest-path".into());
    args.push(manifest.into_os_string());
    args.push("--target-dir".into());
    args.push(target.into_os_string());
    ctx.progress.print(&format!(
        "trace-cost: building the {} child (a minute the first time): {}",
        if trace { "traced" } else { "untraced" },
        shown(&cargo, &args)
    ));
    let out = Command::new(&cargo).args(&args).output().map_err(|e| {
        Error::Child(format!(
            "trace-cost: cannot run cargo ({}; set CARGO or put cargo on PATH, \
             or pass prebuilt children with --notrace-bin and --trace-bin): {e}",
            cargo.to_string_lossy()
        ))
    })?;
    if !out.status.success() {
        return Err(Error::Child(format!(
            "trace-cost: `{}` failed ({}):\n{}",
            shown(&cargo, &args),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    // The JSON messages on stdout name the executable.
    let exe = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == CHILD)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from));
    exe.ok_or_else(|| {
        Error::Child(format!(
            "trace-cost: cargo built no `{CHILD}` executable: {}",
            shown(&cargo, &args)
        ))
    })
}

/// What every block of a run shares.
struct Plan<'a> {
    policy: &'a PolicySpec,
    per_block: usize,
    warmup: usize,
    quick: bool,
}

/// Run one block in `bin` and check what it says about itself.
fn run_block(
    bin: &Path,
    v: Variant,
    case: Case,
    workers: usize,
    jobs: usize,
    p: &Plan<'_>,
) -> Result<Block> {
    let Plan {
        policy,
        per_block,
        warmup,
        quick,
    } = *p;
    let mut cmd = Command::new(bin);
    cmd.args(["--case", case.name()])
        .args(["--workers", &workers.to_string()])
        .args(["--policy", policy.key])
        .args(["--samples", &per_block.to_string()])
        .args(["--warmup", &warmup.to_string()]);
    if quick {
        cmd.arg("--quick");
    }
    if v == Variant::Rec {
        cmd.arg("--record");
    }
    if v == Variant::Hooks {
        cmd.args(["--hooks", "here"]);
    }
    let what = || format!("{} ({}, {} workers)", bin.display(), case.name(), workers);
    let out = cmd
        .output()
        .map_err(|e| Error::Child(format!("trace-cost: cannot run {}: {e}", what())))?;
    if !out.status.success() {
        return Err(Error::Child(format!(
            "trace-cost: {} failed ({}): {}",
            what(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let b: Block = serde_json::from_str(text.trim()).map_err(|e| {
        Error::Child(format!(
            "trace-cost: {}: unreadable output ({e}): {text:?}",
            what()
        ))
    })?;
    check(b.trace_compiled == (v != Variant::Out), || {
        format!(
            "{NAME}: {} reports trace_compiled = {}, but the {} variant needs {}",
            bin.display(),
            b.trace_compiled,
            v.name(),
            v != Variant::Out
        )
    })?;
    check(b.recording == (v == Variant::Rec), || {
        format!("{NAME}: {}: recording = {}", what(), b.recording)
    })?;
    let hooks = if v == Variant::Hooks { "here" } else { "none" };
    check(b.hooks == hooks, || {
        format!("{NAME}: {}: hooks = {}, expected {hooks}", what(), b.hooks)
    })?;
    check(
        b.case == case.name()
            && b.workers == workers
            && b.policy == policy.name
            && b.jobs == jobs
            && b.samples.len() == per_block,
        || format!("{NAME}: {}: unexpected block {b:?}", what()),
    )?;
    // At least the capture's own start event (W1 nested and pfor-empty at
    // 0 workers record almost nothing: an unstolen `join` and the pieces of
    // one `parallel_for` have no event sites of their own).
    check(v != Variant::Rec || b.events_per_sample >= 1.0, || {
        format!("{NAME}: {}: no events recorded", what())
    })?;
    Ok(b)
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        f64::NAN
    }
}

fn fmt_ratio(r: f64) -> String {
    if r.is_finite() {
        format!("{r:.3}x")
    } else {
        "-".into()
    }
}

/// Run trace-cost and report it.
pub fn run(ctx: &Ctx, bins: &ChildBins) -> Result<()> {
    let notrace = match &bins.notrace {
        Some(p) => p.clone(),
        None => build_child(ctx, false)?,
    };
    let traced = match &bins.trace {
        Some(p) => p.clone(),
        None => build_child(ctx, true)?,
    };
    let bin = |v: Variant| if v == Variant::Out { &notrace } else { &traced };

    let sizes = ctx.size(Sizes::FULL, Sizes::QUICK);
    let workers = &ctx.workers;
    let samples = ctx.samples_or(100, 6);
    let (blocks, per_block) = split(samples, ctx.size(4, 2));
    let warmup = ctx.size(2, 1);
    let policy = ctx
        .policies
        .first()
        .ok_or_else(|| Error::Verify(format!("{NAME}: no idle policy selected")))?;
    let plan = Plan {
        policy,
        per_block,
        warmup,
        quick: ctx.quick,
    };
    let bar = ctx.progress.bar(
        NAME,
        (workers.len() * Case::ALL.len() * blocks * Variant::ALL.len()) as u64,
    );

    let mut rows = Vec::new();
    let mut table = Vec::new();
    let (mut log_off, mut log_rec, mut n_ratio) = (0.0, 0.0, 0usize);
    for &w in workers {
        for &c in &Case::ALL {
            bar.message(format!("workers={w} {}", c.name()));
            let jobs = sizes.jobs(c);
            let mut acc: [Acc; 4] = Default::default();
            for r in 0..blocks {
                for k in 0..Variant::ALL.len() {
                    let vi = (r + k) % Variant::ALL.len();
                    let v = Variant::ALL[vi];
                    let b = run_block(bin(v), v, c, w, jobs, &plan)?;
                    let a = &mut acc[vi];
                    a.samples.extend(&b.samples);
                    a.events += b.events_per_sample;
                    a.blocks += 1;
                    a.policy = b.policy;
                    a.trace_compiled = b.trace_compiled;
                    a.halves[r % 2].extend(&b.samples);
                    bar.inc();
                }
            }
            let sums: Vec<Summary> = acc.iter().map(|a| stats::summarize(&a.samples)).collect();
            let (out, off, rec, hooks) = (&sums[0], &sums[1], &sums[2], &sums[3]);
            let (x_off, x_rec) = (ratio(off.median, out.median), ratio(rec.median, out.median));
            if x_off.is_finite() && x_rec.is_finite() {
                log_off += x_off.ln();
                log_rec += x_rec.ln();
                n_ratio += 1;
            }
            table.push(vec![
                c.name().to_string(),
                w.to_string(),
                fmt_num(out.median),
                fmt_num(out.p99),
                fmt_num(off.median),
                fmt_num(off.p99),
                fmt_num(rec.median),
                fmt_num(rec.p99),
                fmt_ratio(x_off),
                fmt_ratio(ratio(off.min, out.min)),
                fmt_num(off.median - out.median),
                fmt_ratio(x_rec),
                fmt_num(hooks.median),
                fmt_ratio(ratio(hooks.median, out.median)),
                fmt_ratio(ratio(
                    stats::summarize(&acc[0].halves[1]).median,
                    stats::summarize(&acc[0].halves[0]).median,
                )),
            ]);
            for (vi, v) in Variant::ALL.into_iter().enumerate() {
                let a = &acc[vi];
                let s = &sums[vi];
                let mut params = params! {
                    "jobs" => jobs,
                    "trace" => v.name(),
                    "trace_compiled" => a.trace_compiled,
                    "recording" => v == Variant::Rec,
                    "x_notrace_median" => ratio(s.median, out.median),
                    "x_notrace_p99" => ratio(s.p99, out.p99),
                    "x_notrace_min" => ratio(s.min, out.min),
                    "binary" => bin(v).display().to_string(),
                };
                if v == Variant::Rec {
                    params.insert(
                        "events_per_job".into(),
                        (a.events / a.blocks.max(1) as f64 / jobs as f64).into(),
                    );
                }
                let label = Label {
                    imp: v.imp().into(),
                    policy: Some(a.policy.clone()),
                    workers: Some(w),
                    threads: Some(w + 1),
                };
                rows.push(Row::measured(
                    NAME,
                    c.name(),
                    &label,
                    params,
                    "ns/job",
                    s,
                    Some(a.samples.clone()),
                    &ctx.machine,
                ));
            }
        }
        table.push(Vec::new());
    }
    bar.finish();
    table.pop();

    let written = json::write(&ctx.out, NAME, &rows)?;
    let header: Vec<String> = [
        "case",
        "workers",
        "out med",
        "out p99",
        "off med",
        "off p99",
        "rec med",
        "rec p99",
        "off/out",
        "off/out min",
        "off-out ns",
        "rec/out",
        "hooks med",
        "hooks/out",
        "out odd/even",
    ]
    .map(String::from)
    .to_vec();
    let n = n_ratio.max(1) as f64;
    let mut text =
        format!("== {NAME}: W1 on jobsys without the tracer, with it off, recording, with empty profiler hooks ==\n");
    for note in [
        format!(
            "ns per job (wall / jobs); single {} jobs, flat {}, nested depth {} ({} jobs), pfor-empty {} indices, batch 1; threads = workers + 1; idle policy {} (the first --policy)",
            sizes.single,
            sizes.flat,
            sizes.depth,
            sizes.jobs(Case::Nested),
            sizes.pfor,
            policy.name
        ),
        format!("out = jobsys without the `trace` feature: {}", notrace.display()),
        format!(
            "off = the tracer compiled in, not recording; rec = recording (trace_start/trace_stop around each sample, untimed); hooks = off plus empty ProfilerHooks on the measured system: {}",
            traced.display()
        ),
        format!(
            "{samples} samples per variant and row: {blocks} rounds of one child process per variant ({warmup} warm-up + {per_block} counted iterations), order rotated each round"
        ),
        "off/out, rec/out: ratios of medians (off/out min: of minimums); off-out ns: median difference per job; \
         out odd/even: out's median in odd rounds / in even rounds (the noise between blocks of one binary)".into(),
    ] {
        text.push_str(&format!("   {note}\n"));
    }
    text.push_str(&grid(&header, &table, 1));
    text.push_str(&format!(
        "   geometric mean over the rows: off/out {}, rec/out {}\n",
        fmt_ratio((log_off / n).exp()),
        fmt_ratio((log_rec / n).exp())
    ));
    text.push_str(&format!("   {}\n", written.describe()));
    ctx.progress.print(&text);
    Ok(())
}
