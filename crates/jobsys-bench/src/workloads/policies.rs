//! Issue 4: W4 (wake-latency) and W5 (idle-cost) side by side, per idle
//! policy and worker count, from their JSON rows in `--out` (no
//! measurement): one table, and the plot "latency against CPU burned"
//! ([`crate::plot::latency_vs_cpu`]).
//!
//! A point joins the W4 and W5 rows with the same implementation, policy
//! and worker count; a figure a workload did not measure is `-` (W4 skips
//! workers = 0, so those rows have no latency and no point).

use super::{idle_cost, wake_latency};
use crate::error::{Error, Result};
use crate::json::{self, Row};
use crate::table::{fmt_num, grid};
use crate::Ctx;
use std::path::Path;

/// Subcommand name.
pub const NAME: &str = "policies";

/// One policy (or rayon) at one worker count.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// `impl[policy]`, as tables show it.
    pub name: String,
    /// The `--workers` value.
    pub workers: usize,
    /// W4 cold p50 and p99, µs.
    pub cold_p50: Option<f64>,
    /// W4 cold p99, µs.
    pub cold_p99: Option<f64>,
    /// W4 burst p50, µs.
    pub burst_p50: Option<f64>,
    /// W5 extra CPU (median), cores.
    pub extra_cpu: Option<f64>,
    /// W5 frame wall time (median), ms.
    pub frame_wall: Option<f64>,
}

fn find<'a>(rows: &'a [Row], case: &str, name: &str, workers: usize) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.case == case && r.workers == Some(workers) && r.display_impl() == name)
}

/// Join the W4 rows `lat` and the W5 rows `idle`: one point per
/// implementation and worker count found in either, in first-seen order
/// (serial and reference rows left out).
pub fn combine(lat: &[Row], idle: &[Row]) -> Vec<Point> {
    let mut keys: Vec<(String, usize)> = Vec::new();
    for r in lat.iter().chain(idle) {
        let Some(w) = r.workers.filter(|_| r.n > 0 && r.imp != "serial") else {
            continue;
        };
        let k = (r.display_impl(), w);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.sort_by_key(|k| (k.1, k.0.starts_with("rayon")));
    keys.into_iter()
        .map(|(name, w)| Point {
            cold_p50: find(lat, "cold", &name, w).map(|r| r.median),
            cold_p99: find(lat, "cold", &name, w).map(|r| r.p99),
            burst_p50: find(lat, "burst", &name, w).map(|r| r.median),
            extra_cpu: find(idle, "extra-cpu", &name, w).map(|r| r.median),
            frame_wall: find(idle, "frame-wall", &name, w).map(|r| r.median),
            name,
            workers: w,
        })
        .collect()
}

fn cell(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), fmt_num)
}

/// The combined table.
pub fn render(points: &[Point]) -> String {
    let header: Vec<String> = [
        "impl",
        "workers",
        "W4 cold p50 us",
        "W4 cold p99 us",
        "W4 burst p50 us",
        "W5 extra CPU cores",
        "W5 frame ms",
    ]
    .map(String::from)
    .into();
    let body: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            vec![
                p.name.clone(),
                p.workers.to_string(),
                cell(p.cold_p50),
                cell(p.cold_p99),
                cell(p.burst_p50),
                cell(p.extra_cpu),
                cell(p.frame_wall),
            ]
        })
        .collect();
    let mut out = "== W4 + W5 per idle policy: latency against CPU burned ==\n".to_string();
    out.push_str("   medians of the W4 (wake-latency) and W5 (idle-cost) rows in --out; W4 skips workers = 0\n");
    out.push_str(&grid(&header, &body, 1));
    out
}

/// The W4 and W5 rows in `out`, if both files exist.
pub fn read_rows(out: &Path) -> Result<Option<(Vec<Row>, Vec<Row>)>> {
    let (l, i) = (
        json::path_for(out, wake_latency::NAME),
        json::path_for(out, idle_cost::NAME),
    );
    if !(l.exists() && i.exists()) {
        return Ok(None);
    }
    Ok(Some((json::read(&l)?, json::read(&i)?)))
}

/// `policies` subcommand (and the end of `all`): print the table and draw
/// the plot from the JSON in `--out`.
pub fn run(ctx: &Ctx) -> Result<()> {
    let Some((lat, idle)) = read_rows(&ctx.out)? else {
        return Err(Error::Plot(format!(
            "{NAME}: needs {}.json and {}.json in {} (run wake-latency and idle-cost first)",
            wake_latency::NAME,
            idle_cost::NAME,
            ctx.out.display()
        )));
    };
    let points = combine(&lat, &idle);
    ctx.progress.print(&render(&points));
    let svg = crate::plot::latency_vs_cpu(&points, &lat, &ctx.out)?;
    ctx.progress.print(&format!("   plot: {}\n", svg.display()));
    Ok(())
}
