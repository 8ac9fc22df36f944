//! The idle-policy trade-off: W4 (wake-latency) and W5 (idle-cost) side
//! by side, per idle policy and worker count, from their JSON rows in
//! `--out` (no measurement): one table, and the plot "latency against CPU burned"
//! ([`crate::plot::latency_vs_cpu`]).
//!
//! A point joins the W4 and W5 rows with the same implementation, policy
//! and worker count; a figure a workload did not measure is `-` (W4 skips
//! workers = 0, so those rows have no latency and no point). The
//! futex-floor rows (the least any design that sleeps its threads between
//! bursts achieves) are points of their own, and every point's W4 cold p50
//! and W5 extra CPU are also given as a multiple of the floor's at the same
//! worker count.

use super::{idle_cost, wake_latency};
use crate::error::{Error, Result};
use crate::json::{self, Row};
pub use crate::plot::Point;
use crate::pools::FLOOR;
use crate::table::{fmt_num, grid};
use crate::Ctx;
use std::path::Path;

/// Subcommand name.
pub const NAME: &str = "policies";

fn find<'a>(rows: &'a [Row], case: &str, name: &str, workers: usize) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.case == case && r.workers == Some(workers) && r.display_impl() == name)
}

/// `a / b` when both exist and `b > 0`.
fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// Join the W4 rows `lat` and the W5 rows `idle`: one point per
/// implementation and worker count found in either (serial and reference
/// rows left out); by worker count, then jobsys (first-seen order), rayon,
/// the futex floor.
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
    keys.sort_by_key(|k| (k.1, k.0 == FLOOR, k.0.starts_with("rayon")));
    let mut points: Vec<Point> = keys
        .into_iter()
        .map(|(name, w)| Point {
            cold_p50: find(lat, "cold", &name, w).map(|r| r.median),
            cold_p99: find(lat, "cold", &name, w).map(|r| r.p99),
            burst_p50: find(lat, "burst", &name, w).map(|r| r.median),
            extra_cpu: find(idle, "extra-cpu", &name, w).map(|r| r.median),
            frame_wall: find(idle, "frame-wall", &name, w).map(|r| r.median),
            cold_x_floor: None,
            extra_x_floor: None,
            name,
            workers: w,
        })
        .collect();
    let floors: Vec<Point> = points.iter().filter(|p| p.is_floor()).cloned().collect();
    for p in points.iter_mut().filter(|p| !p.is_floor()) {
        if let Some(f) = floors.iter().find(|f| f.workers == p.workers) {
            p.cold_x_floor = ratio(p.cold_p50, f.cold_p50);
            p.extra_x_floor = ratio(p.extra_cpu, f.extra_cpu);
        }
    }
    points
}

fn cell(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), fmt_num)
}

fn times(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.2}x"))
}

/// The combined table.
pub fn render(points: &[Point]) -> String {
    let header: Vec<String> = [
        "impl",
        "workers",
        "W4 cold p50 us",
        "W4 cold p99 us",
        "W4 cold x floor",
        "W4 burst p50 us",
        "W5 extra CPU cores",
        "W5 x floor",
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
                times(p.cold_x_floor),
                cell(p.burst_p50),
                cell(p.extra_cpu),
                times(p.extra_x_floor),
                cell(p.frame_wall),
            ]
        })
        .collect();
    let mut out = "== W4 + W5 per idle policy: latency against CPU burned ==\n".to_string();
    out.push_str("   medians of the W4 (wake-latency) and W5 (idle-cost) rows in --out; W4 skips workers = 0\n");
    out.push_str(&format!("   x floor = the figure / the {FLOOR} row's at the same worker count (the least any design that sleeps its threads between bursts achieves here); lower is better\n"));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{Label, Machine};
    use crate::stats;

    fn row(case: &str, imp: &str, policy: Option<&str>, workers: usize, v: f64) -> Row {
        let label = Label {
            imp: imp.into(),
            policy: policy.map(Into::into),
            workers: Some(workers),
            threads: Some(workers + 1),
        };
        let machine = Machine {
            cores: 2,
            cpu_model: "test".into(),
        };
        let s = stats::summarize(&[v]);
        Row::measured(
            "t",
            case,
            &label,
            Default::default(),
            "us",
            &s,
            None,
            &machine,
        )
    }

    /// W4 and W5 rows for 1 and 2 workers; the floor first in the input,
    /// W5 without a floor at 2 workers.
    fn rows() -> (Vec<Row>, Vec<Row>) {
        let lat = vec![
            row("cold", FLOOR, None, 1, 20.0),
            row("cold", "rayon", None, 1, 80.0),
            row("cold", "jobsys", Some("p"), 1, 50.0),
            row("burst", "jobsys", Some("p"), 1, 70.0),
            row("cold", FLOOR, None, 2, 25.0),
            row("cold", "jobsys", Some("p"), 2, 100.0),
        ];
        let idle = vec![
            row("extra-cpu", "serial", None, 0, 0.0),
            row("extra-cpu", FLOOR, None, 1, 0.04),
            row("extra-cpu", "jobsys", Some("p"), 1, 0.1),
            row("extra-cpu", "rayon", None, 1, 0.2),
            row("frame-wall", "jobsys", Some("p"), 1, 2.5),
            row("extra-cpu", "jobsys", Some("p"), 2, 0.3),
        ];
        (lat, idle)
    }

    #[test]
    fn floor_points_last_and_ratios() {
        let (lat, idle) = rows();
        let ps = combine(&lat, &idle);
        let order: Vec<(&str, usize)> = ps.iter().map(|p| (p.name.as_str(), p.workers)).collect();
        assert_eq!(
            order,
            [
                ("jobsys[p]", 1),
                ("rayon", 1),
                (FLOOR, 1),
                ("jobsys[p]", 2),
                (FLOOR, 2),
            ]
        );
        let x = |i: usize| (ps[i].cold_x_floor, ps[i].extra_x_floor);
        assert_eq!(x(0), (Some(2.5), Some(2.5)));
        assert_eq!(x(1), (Some(4.0), Some(5.0)));
        // The floor is not compared with itself; no W5 floor at 2 workers.
        assert_eq!(x(2), (None, None));
        assert_eq!(x(3), (Some(4.0), None));
        assert!(ps[2].is_floor() && !ps[0].is_floor());
        assert_eq!(ps[2].extra_cpu, Some(0.04));
        assert_eq!(ps[4].extra_cpu, None);
    }

    #[test]
    fn no_ratio_against_a_floor_at_or_below_zero() {
        let (lat, mut idle) = rows();
        idle[1].median = 0.0;
        let ps = combine(&lat, &idle);
        assert_eq!(ps[0].extra_x_floor, None);
        assert_eq!(ps[0].cold_x_floor, Some(2.5));
    }

    #[test]
    fn render_has_the_floor_columns() {
        let (lat, idle) = rows();
        let text = render(&combine(&lat, &idle));
        assert!(text.contains("W4 cold x floor") && text.contains("W5 x floor"));
        assert!(text.contains("x floor = the figure /") && text.contains("lower is better"));
        let line = |name: &str, w: &str| {
            text.lines()
                .find(|l| {
                    let c: Vec<&str> = l.split_whitespace().collect();
                    c.first() == Some(&name) && c.get(1) == Some(&w)
                })
                .unwrap_or_else(|| panic!("no line for {name} {w}:\n{text}"))
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(
            line("jobsys[p]", "1"),
            "jobsys[p] 1 50.00 50.00 2.50x 70.00 0.1000 2.50x 2.500"
        );
        assert_eq!(
            line("rayon", "1"),
            "rayon 1 80.00 80.00 4.00x - 0.2000 5.00x -"
        );
        assert_eq!(line(FLOOR, "1"), "futex-floor 1 20.00 20.00 - - 0.0400 - -");
        assert_eq!(
            line("jobsys[p]", "2"),
            "jobsys[p] 2 100.0 100.0 4.00x - 0.3000 - -"
        );
        let firsts: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|w| ["jobsys[p]", "rayon", FLOOR].contains(w))
            .collect();
        assert_eq!(firsts, ["jobsys[p]", "rayon", FLOOR, "jobsys[p]", FLOOR]);
    }
}
