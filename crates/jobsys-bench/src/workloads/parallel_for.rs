//! W2 parallel-for: a data-parallel loop over `u32`s, each element doing
//! `x = x * 3 + 1` (wrapping) 20 times.
//!
//! `large` has 1,048,576 elements, `small` 10,000 (overhead dominated);
//! batch chosen by the system (`auto`) and fixed at 64 (`fixed-64`). The
//! multiplier goes through `black_box` once per call, so the 20 steps cannot
//! be folded into one multiply-add, and every implementation calls the same
//! [`kernel`]. Every call's array is compared with the serial result.

use super::{emit, rows_of, serial_share, static_floor};
use crate::error::{check, Result};
use crate::json::{Label, Row};
use crate::params;
use crate::pools::{rayon_label, semantics_note, Pools};
use crate::runner::{interleave, split, Contestant, Plan};
use crate::stats;
use crate::Ctx;
use jobsys::{Batch, JobSystem};
use rayon::prelude::*;
use std::hint::black_box;
use std::time::Instant;

/// Workload name (subcommand, JSON file).
pub const NAME: &str = "parallel-for";

pub use super::w2_kernel::{kernel, kernel_slice};

/// A pointer to the array, shared by the pieces of one parallel_for.
#[derive(Clone, Copy)]
struct SharedArray(*mut u32);
// SAFETY: the pieces of one parallel_for write disjoint index ranges of the
// array, and the caller waits for the loop before touching the array again.
unsafe impl Send for SharedArray {}
// SAFETY: as for Send: shared only to hand out disjoint ranges.
unsafe impl Sync for SharedArray {}
impl SharedArray {
    /// The pointer (a method, so closures capture the whole wrapper).
    fn get(self) -> *mut u32 {
        self.0
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Impl {
    Jobsys,
    Rayon,
    Serial,
}

fn call(imp: Impl, js: Option<&JobSystem>, pool: &rayon::ThreadPool, arr: &mut [u32], fixed: bool) {
    let m = black_box(3u32);
    match imp {
        Impl::Serial => kernel_slice(arr, m),
        Impl::Rayon => pool.install(|| {
            if fixed {
                arr.par_chunks_mut(64)
                    .with_max_len(1)
                    .for_each(|c| kernel_slice(c, m));
            } else {
                arr.par_iter_mut().for_each(|x| kernel(x, m));
            }
        }),
        Impl::Jobsys => {
            let batch = if fixed { Batch::Fixed(64) } else { Batch::Auto };
            jobsys_loop(js.expect("jobsys system"), arr, batch, m);
        }
    }
}

/// W2's loop on jobsys: [`kernel`] over `arr` with multiplier `m`, in
/// pieces of `batch`, inside a scope (so the pieces may borrow `arr`).
pub fn jobsys_loop(js: &JobSystem, arr: &mut [u32], batch: Batch, m: u32) {
    let len = arr.len();
    let p = SharedArray(arr.as_mut_ptr());
    js.scope(|s| {
        s.job().parallel_for_chunked(0..len, batch, move |r| {
            // SAFETY: `r` lies within 0..len, pieces never overlap, and
            // `scope` returns only after every piece ran, while `arr` is
            // still mutably borrowed by this call.
            let xs = unsafe { std::slice::from_raw_parts_mut(p.get().add(r.start), r.len()) };
            kernel_slice(xs, m);
        });
    });
}

/// Run W2 and report it.
pub fn run(ctx: &Ctx) -> Result<()> {
    let sizes = [
        ("large", ctx.size(1usize << 20, 1 << 16)),
        ("small", 10_000usize),
    ];
    let groups = ctx.workers.len();
    let bar = ctx.progress.bar(NAME, (groups * 4) as u64);
    let mut rows = Vec::new();
    let mut serial_rows = Vec::new();
    for (size_name, len) in sizes {
        let init: Vec<u32> = (0..len as u32).collect();
        let mut expected = init.clone();
        kernel_slice(&mut expected, 3);
        let samples = if size_name == "large" {
            ctx.samples_or(30, 3)
        } else {
            ctx.samples_or(300, 10)
        };
        let (blocks, per_block) = split(samples, if size_name == "large" { 3 } else { 30 });
        for fixed in [false, true] {
            let case = format!("{size_name} {}", if fixed { "fixed-64" } else { "auto" });
            let mut serial = Vec::new();
            for &w in &ctx.workers {
                bar.message(format!("workers={w} {case}"));
                let pools = Pools::new(&ctx.policies, w)?;
                let pool = &pools.rayon;
                let (init, expected, case) = (&init, &expected, &case);
                let iter =
                    move |imp: Impl, js: Option<&JobSystem>, arr: &mut Vec<u32>| -> Result<f64> {
                        arr.copy_from_slice(init);
                        let t = Instant::now();
                        call(imp, js, pool, arr, fixed);
                        let us = t.elapsed().as_nanos() as f64 / 1e3;
                        check(arr == expected, || {
                            format!("{NAME} {case}: {imp:?} result differs from the serial loop")
                        })?;
                        Ok(us)
                    };
                let mut cs = Vec::new();
                for sys in &pools.jobsys {
                    let mut arr = init.clone();
                    let s = sys.clone();
                    cs.push(
                        Contestant::new(sys.label(), 2, blocks, per_block, move || {
                            iter(Impl::Jobsys, Some(&s.get()?), &mut arr)
                        })
                        .around_block(sys.hook()),
                    );
                }
                let mut arr = init.clone();
                cs.push(Contestant::new(
                    rayon_label(w),
                    2,
                    blocks,
                    per_block,
                    move || iter(Impl::Rayon, None, &mut arr),
                ));
                for (imp, threads) in static_floor::configs(w, ctx.cores()) {
                    let mut floor = static_floor::LoopFloor::start(len, threads)?;
                    cs.push(Contestant::new(
                        static_floor::label(imp, w, threads),
                        2,
                        blocks,
                        per_block,
                        move || floor.call(init, expected),
                    ));
                }
                let mut arr = init.clone();
                cs.push(Contestant::new(
                    Label::serial(),
                    2,
                    serial_share(blocks, groups),
                    per_block,
                    move || iter(Impl::Serial, None, &mut arr),
                ));
                interleave(&mut cs, Plan::throughput())?;
                serial.extend(cs.pop().expect("serial").samples);
                let params =
                    params! {"elements" => len, "batch" => if fixed { "fixed-64" } else { "auto" }};
                rows.extend(rows_of(ctx, NAME, case, &params, "us", &cs));
                bar.inc();
            }
            let params =
                params! {"elements" => len, "batch" => if fixed { "fixed-64" } else { "auto" }};
            serial_rows.push(Row::measured(
                NAME,
                &case,
                &Label::serial(),
                params,
                "us",
                &stats::summarize(&serial),
                None,
                &ctx.machine,
            ));
        }
    }
    bar.finish();
    rows.extend(serial_rows);
    let order = [
        "large auto",
        "large fixed-64",
        "small auto",
        "small fixed-64",
    ];
    rows.sort_by_key(|r| order.iter().position(|c| *c == r.case));
    let speedup = |r: &Row, all: &[Row]| match crate::table::serial_of(r, all) {
        Some(s) if r.imp != "serial" => format!("{:.2}x", s.median / r.median),
        _ => "-".into(),
    };
    let notes = vec![
        format!(
            "us per call; large = {} u32, small = 10000 u32; 20 x (x*3+1) per element, multiplier black_boxed; results checked against the serial loop",
            sizes[0].1
        ),
        semantics_note(),
        "jobsys: scope + parallel_for_chunked (Batch::Auto | Batch::Fixed(64)); rayon: par_iter_mut (auto), par_chunks_mut(64).with_max_len(1) (fixed-64)".into(),
        format!(
            "{} / {}: no job system; the loop's indices split up front into equal contiguous shares over min(workers+1, cores) / workers+1 threads (persistent helpers + the calling thread; waits spin 30 us, then sleep), same kernel, checked the same: the machine's own floor in this run",
            static_floor::CORES,
            static_floor::OVERSUB
        ),
        "speedup = serial median / row median".into(),
    ];
    emit(
        ctx,
        NAME,
        "W2 parallel-for",
        &notes,
        &rows,
        false,
        &[("speedup", &speedup), ("xfloor", &static_floor::xfloor)],
    )
}
