//! W1 spawn-empty: the scheduling overhead of empty jobs.
//!
//! - `single`: schedule one job, complete it, 65,000 times (the fast path).
//! - `flat`: schedule 65,536 jobs, then wait for all (newest first).
//! - `nested`: a binary fork/join tree of depth 16 (65,535 jobs) with `join`.
//! - `pfor-empty`: one parallel_for over 65,000 indices with batch 1.
//!
//! Every job bumps its thread's counter (see `count`); the total is checked
//! after every iteration. Figure: ns per job (wall / jobs).
//!
//! The jobsys side (cases, sizes, one iteration) is in `w1_kernels.rs`,
//! which `trace-cost`'s child program compiles too; rayon and serial are here.
//!
//! Floor rows (`floor-*`, `w1_floor.rs`): per job, the least a job system
//! does, on one thread. Like the serial row, each is measured in every
//! worker-count group (a share of its blocks, in turns with that group's
//! contestants) and pooled into one row per case, labelled 0 workers.
//! `floor-thief` runs on two threads (the caller and one helper): it is
//! measured in the groups with workers only, and labelled 1 worker.

use super::w1_floor::{self, Floor};
use super::w1_kernels::{self, Case, Sizes};
use super::{emit, rows_of, serial_share};
use crate::count;
use crate::error::{check, Result};
use crate::json::{Label, Row};
use crate::params;
use crate::pools::{rayon_label, semantics_note, Pools};
use crate::runner::{interleave, split, Contestant, Plan};
use crate::stats;
use crate::Ctx;
use jobsys::{JobHandle, JobSystem};
use rayon::prelude::*;
use std::hint::black_box;
use std::time::Instant;

/// Workload name (subcommand, JSON file).
pub const NAME: &str = "spawn-empty";

/// The empty job: counts itself, nothing else.
pub use super::w1_kernels::empty_job;

fn tree_rayon(depth: u32) {
    empty_job();
    if depth > 1 {
        rayon::join(|| tree_rayon(depth - 1), || tree_rayon(depth - 1));
    }
}

fn tree_serial(f: fn(), depth: u32) {
    f();
    if depth > 1 {
        tree_serial(f, depth - 1);
        tree_serial(f, depth - 1);
    }
}

/// Time `body`, check that it ran `jobs` jobs, return ns per job.
fn timed(what: &str, jobs: usize, body: impl FnOnce() -> Result<()>) -> Result<f64> {
    let before = count::total();
    let t = Instant::now();
    body()?;
    let ns = t.elapsed().as_nanos() as f64;
    let ran = count::total() - before;
    check(ran == jobs as u64, || {
        format!("{NAME} {what}: {ran} jobs ran, expected {jobs}")
    })?;
    Ok(ns / jobs as f64)
}

fn jobsys_iter(js: &JobSystem, c: Case, s: &Sizes, hs: &mut Vec<JobHandle>) -> Result<f64> {
    timed(c.name(), s.jobs(c), || {
        Ok(w1_kernels::iteration(js, c, s, hs)?)
    })
}

fn rayon_iter(pool: &rayon::ThreadPool, c: Case, s: &Sizes) -> Result<f64> {
    timed(c.name(), s.jobs(c), || {
        match c {
            Case::Single => pool.install(|| {
                for _ in 0..s.single {
                    rayon::scope(|sc| sc.spawn(|_| empty_job()));
                }
            }),
            // Not a W1 row (no rayon counterpart); spawn-empty runs `ALL`.
            Case::Flat | Case::GraphFlat => pool.install(|| {
                rayon::scope(|sc| {
                    for _ in 0..s.flat {
                        sc.spawn(|_| empty_job());
                    }
                })
            }),
            Case::Nested => pool.install(|| tree_rayon(s.depth)),
            Case::PforEmpty => pool.install(|| {
                (0..s.pfor)
                    .into_par_iter()
                    .with_max_len(1)
                    .for_each(|_| empty_job())
            }),
        }
        Ok(())
    })
}

/// The label of a floor's rows: its helper threads as workers (0 but for
/// `floor-thief`), and its threads.
pub fn floor_label(f: Floor) -> Label {
    Label {
        imp: f.imp().into(),
        policy: None,
        workers: Some(f.threads() - 1),
        threads: Some(f.threads()),
    }
}

fn floor_iter(f: Floor, s: &Sizes, b: &mut w1_floor::Buffers) -> Result<f64> {
    timed(&f.name(), s.jobs(f.case), || {
        w1_floor::iteration(f, s, b).map_err(crate::error::Error::Verify)
    })
}

fn serial_iter(c: Case, s: &Sizes) -> Result<f64> {
    // An opaque function pointer: the loop cannot be folded into one add.
    let f: fn() = black_box(empty_job as fn());
    timed(c.name(), s.jobs(c), || {
        match c {
            Case::Nested => tree_serial(f, s.depth),
            _ => {
                for _ in 0..s.jobs(c) {
                    f();
                }
            }
        }
        Ok(())
    })
}

/// Run W1 and report it.
pub fn run(ctx: &Ctx) -> Result<()> {
    // `floor-thief`'s counts are per process: this run's are the growth.
    let thief_before = w1_floor::thief_share();
    let sizes = ctx.size(Sizes::FULL, Sizes::QUICK);
    let samples = ctx.samples_or(30, 3);
    let (blocks, per_block) = split(samples, 3);
    let warmup = ctx.size(2, 1);
    let groups = ctx.workers.len();
    let bar = ctx.progress.bar(NAME, (groups * Case::ALL.len()) as u64);

    let mut rows = Vec::new();
    let mut serial: Vec<Vec<f64>> = vec![Vec::new(); Case::ALL.len()];
    let mut floors: Vec<Vec<f64>> = vec![Vec::new(); Floor::ALL.len()];
    for &w in &ctx.workers {
        let pools = Pools::new(&ctx.policies, w)?;
        for (ci, &c) in Case::ALL.iter().enumerate() {
            bar.message(format!("workers={w} {}", c.name()));
            let mut cs = Vec::new();
            for sys in &pools.jobsys {
                let mut hs = Vec::with_capacity(sizes.flat);
                let s = sys.clone();
                cs.push(
                    Contestant::new(sys.label(), warmup, blocks, per_block, move || {
                        jobsys_iter(&s.get()?, c, &sizes, &mut hs)
                    })
                    .around_block(sys.hook()),
                );
            }
            let pool = &pools.rayon;
            cs.push(Contestant::new(
                rayon_label(w),
                warmup,
                blocks,
                per_block,
                move || rayon_iter(pool, c, &sizes),
            ));
            // The references, pooled over the groups: floors, then serial.
            let measured = cs.len();
            // A floor with a helper thread only where jobsys has workers.
            let mine: Vec<usize> = (0..Floor::ALL.len())
                .filter(|&fi| Floor::ALL[fi].case == c && Floor::ALL[fi].threads() <= w + 1)
                .collect();
            for &fi in &mine {
                let f = Floor::ALL[fi];
                let mut bufs = w1_floor::Buffers::default();
                cs.push(Contestant::new(
                    floor_label(f),
                    warmup,
                    serial_share(blocks, groups),
                    per_block,
                    move || floor_iter(f, &sizes, &mut bufs),
                ));
            }
            cs.push(Contestant::new(
                Label::serial(),
                warmup,
                serial_share(blocks, groups),
                per_block,
                move || serial_iter(c, &sizes),
            ));
            interleave(&mut cs, Plan::throughput())?;
            let mut refs = cs.split_off(measured);
            let ser = refs.pop().expect("serial contestant");
            serial[ci].extend(ser.samples);
            for (&fi, f) in mine.iter().zip(refs) {
                floors[fi].extend(f.samples);
            }
            let params = params! {"jobs" => sizes.jobs(c)};
            rows.extend(rows_of(ctx, NAME, c.name(), &params, "ns/job", &cs));
            bar.inc();
        }
    }
    bar.finish();
    // Serial rows, then floor rows (pooled over the groups), then sort by
    // case (stable: within a case, the order they were pushed in).
    let pooled = |c: Case, label: &Label, samples: &[f64]| {
        let params = params! {"jobs" => sizes.jobs(c)};
        let s = stats::summarize(samples);
        Row::measured(
            NAME,
            c.name(),
            label,
            params,
            "ns/job",
            &s,
            None,
            &ctx.machine,
        )
    };
    for (ci, &c) in Case::ALL.iter().enumerate() {
        rows.push(pooled(c, &Label::serial(), &serial[ci]));
    }
    for (fi, &f) in Floor::ALL.iter().enumerate() {
        if !floors[fi].is_empty() {
            rows.push(pooled(f.case, &floor_label(f), &floors[fi]));
        }
    }
    let order = |case: &str| Case::ALL.iter().position(|c| c.name() == case);
    rows.sort_by_key(|r| order(&r.case));
    // Every floor's `Buffers` is dropped by now (its helper joined), so
    // the share is exact.
    let (jobs_now, moved_now) = w1_floor::thief_share();
    let (thief_jobs, thief_moved) = (jobs_now - thief_before.0, moved_now - thief_before.1);

    let mut notes = vec![
        format!(
            "ns per job (wall / jobs); single {} jobs, flat {}, nested depth {} ({} jobs), pfor-empty {} indices, batch 1",
            sizes.single,
            sizes.flat,
            sizes.depth,
            sizes.jobs(Case::Nested),
            sizes.pfor
        ),
        semantics_note(),
        "jobsys: single = schedule + complete; flat = schedule all, complete newest first; nested = join; pfor = parallel_for Batch::Fixed(1)".into(),
        "rayon (inside pool.install): single = rayon::scope + spawn per job; flat = one scope, spawn all; nested = join; pfor = par_iter().with_max_len(1)".into(),
        format!("{samples} samples per row, interleaved A B A B in blocks of {per_block}; every job counted and checked"),
        "floor-* rows: the least a job system does per job, on the calling thread alone (docs/workloads.md, W1); single-threaded, so printed once per case (workers 0), measured like serial: a share in every worker-count group, pooled".into(),
        "floor-cl = per job a 128-B slot from a thread-local free list, fn pointer written, Release publish, deque push + pop with the Chase-Lev pop's SeqCst fence, claim CAS, call, finish swap, slot freed (single: one job at a time; flat: all pushed, then newest first); floor-cl-nofence = the same without the fence (no thief: 0 workers)".into(),
        "floor-mem128 / floor-mem64 (flat) = write one whole 128 / 64-byte slot per job (all of flat's jobs), then newest first read it back and call its fn pointer: slot memory traffic alone; floor-fence (nested) = the serial tree + one SeqCst fence per join".into(),
        "floor-thief (flat, measured where workers >= 1; 2 threads) = flat with one helper thread taking the oldest jobs (one CAS on a shared index, claim CAS, call, finish swap) while the caller publishes them (fn pointer, Release state, Release end index; 128-B slots in one array) and then claims newest first or waits for the ones the helper took: the least two threads pay when jobs and slots move between cores".into(),
    ];
    if thief_jobs > 0 {
        notes.push(format!(
            "floor-thief: its helper ran {:.1} % of the floor's jobs in this run ({thief_moved} of {thief_jobs}, warm-up included): the share that moved between cores",
            100.0 * thief_moved as f64 / thief_jobs as f64
        ));
    }
    emit(ctx, NAME, "W1 spawn-empty", &notes, &rows, false, &[])
}
