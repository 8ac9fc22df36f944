//! SVG plots (plotters, SVG backend only, no font files: text is written as
//! SVG `<text>` and sized by plotters' built-in estimate), drawn from JSON
//! rows so any saved run can be redrawn (`jobsys-bench plot`).
//!
//! - [`frame_graph`]: W3 frame time (median, p99 dashed) against worker count, one panel per
//!   job duration, a line per implementation, serial and ideal as references.
//! - [`wake_latency`]: W4 latency distribution (CDF) per policy and workers
//!   (colour = implementation, dash = workers; the legend under the chart).
//! - [`wake_primitives`]: W6 box plots (quartiles, p10-p90 whiskers, p99
//!   dot) of the cost against waiter count.
//! - [`latency_vs_cpu`]: W4 cold latency against W5 extra CPU, a point per
//!   policy and worker count, the futex floor as black triangles.
//!
//! [`Point`] (one policy at one worker count) is defined here, not in
//! `workloads::policies` which builds the points, so that the plots import
//! no workload (workloads import the plots).

use crate::error::{Error, Result};
use crate::json::Row;
use crate::pools::FLOOR;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::collections::BTreeMap;

/// One policy (or rayon, or the futex floor) at one worker count.
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
    /// `cold_p50` / the futex floor's (same worker count; not for the
    /// floor itself).
    pub cold_x_floor: Option<f64>,
    /// `extra_cpu` / the futex floor's (same worker count, floor above 0;
    /// not for the floor itself).
    pub extra_x_floor: Option<f64>,
}

impl Point {
    /// Whether this is the futex floor.
    pub fn is_floor(&self) -> bool {
        self.name == FLOOR
    }
}
use std::path::{Path, PathBuf};

/// A plot function: rows in, SVG path out.
pub type PlotFn = fn(&[Row], &Path) -> Result<PathBuf>;

fn perr<E: std::fmt::Display>(e: E) -> Error {
    Error::Plot(e.to_string())
}

fn color(i: usize) -> RGBColor {
    const C: [RGBColor; 8] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(148, 103, 189),
        RGBColor(255, 127, 14),
        RGBColor(23, 190, 207),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
    ];
    C[i % C.len()]
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn canvas<'a>(path: &'a Path, size: (u32, u32), title: &str) -> Result<Area<'a>> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(perr)?;
    root.titled(title, ("sans-serif", 22)).map_err(perr)
}

fn machine_note(rows: &[Row]) -> String {
    rows.first()
        .map(|r| format!(" ({} cores, {})", r.machine.cores, r.machine.cpu_model))
        .unwrap_or_default()
}

/// Cases in first-seen order.
fn cases(rows: &[Row]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in rows {
        if !v.contains(&r.case) {
            v.push(r.case.clone());
        }
    }
    v
}

/// W3: frame time (median, ms) against workers, one panel per duration.
pub fn frame_graph(rows: &[Row], out: &Path) -> Result<PathBuf> {
    let path = out.join("frame-graph.svg");
    let cs = cases(rows);
    let cols = 2usize.min(cs.len().max(1));
    let nrows = cs.len().div_ceil(cols).max(1);
    let root = canvas(
        &path,
        (640 * cols as u32, 420 * nrows as u32 + 40),
        &format!(
            "W3 frame-graph: frame time (median; dashed: p99) vs workers{}",
            machine_note(rows)
        ),
    )?;
    let panels = root.split_evenly((nrows, cols));
    for (case, area) in cs.iter().zip(panels.iter()) {
        let rs: Vec<&Row> = rows.iter().filter(|r| &r.case == case).collect();
        let max_w = rs
            .iter()
            .filter_map(|r| r.workers)
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        // Headroom at the top for the legend; the p99 lines count too.
        let max_y = rs
            .iter()
            .filter(|r| r.imp != "serial")
            .map(|r| r.median.max(r.p99))
            .chain(rs.iter().map(|r| r.median))
            .fold(0.0, f64::max)
            * 1.6;
        let mut chart = ChartBuilder::on(area)
            .caption(format!("{case} (jobs spin D)"), ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(55)
            .build_cartesian_2d(0.0..max_w, 0.0..max_y.max(1e-6))
            .map_err(perr)?;
        chart
            .configure_mesh()
            .x_desc("workers (jobsys: + calling thread)")
            .y_desc("frame ms (median; dashed: p99)")
            .x_labels(max_w as usize + 1)
            .x_label_formatter(&|v| format!("{v:.0}"))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(perr)?;
        // One line per implementation (jobsys per policy, rayon, ideal):
        // the median solid, the p99 (which can be several times the
        // median) as a lighter dashed line of the same colour.
        let mut series: BTreeMap<String, Vec<(f64, f64, f64)>> = BTreeMap::new();
        for r in rs.iter().filter(|r| r.imp != "serial") {
            if let Some(w) = r.workers {
                series
                    .entry(r.display_impl())
                    .or_default()
                    .push((w as f64, r.median, r.p99));
            }
        }
        let mut any_p99 = false;
        for (i, (name, mut pts3)) in series.into_iter().enumerate() {
            pts3.sort_by(|a, b| a.0.total_cmp(&b.0));
            let pts: Vec<(f64, f64)> = pts3.iter().map(|&(w, m, _)| (w, m)).collect();
            let ideal = name == "ideal";
            let c = if ideal {
                RGBColor(120, 120, 120)
            } else {
                color(i)
            };
            let style = ShapeStyle::from(c).stroke_width(2);
            if ideal {
                chart
                    .draw_series(DashedLineSeries::new(pts, 6, 4, style))
                    .map_err(perr)?
                    .label("ideal = work / min(workers+1, cores)")
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
            } else {
                let p99: Vec<(f64, f64)> = pts3
                    .iter()
                    .filter(|&&(_, _, p)| p.is_finite())
                    .map(|&(w, _, p)| (w, p))
                    .collect();
                if !p99.is_empty() {
                    any_p99 = true;
                    let light = ShapeStyle::from(c.mix(0.45)).stroke_width(2);
                    chart
                        .draw_series(DashedLineSeries::new(p99, 5, 4, light))
                        .map_err(perr)?;
                }
                chart
                    .draw_series(LineSeries::new(pts.clone(), style).point_size(3))
                    .map_err(perr)?
                    .label(name)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
            }
        }
        if any_p99 {
            // One legend entry for every p99 line (same colour, lighter).
            let light = ShapeStyle::from(RGBColor(120, 120, 120).mix(0.45)).stroke_width(2);
            chart
                .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())
                .map_err(perr)?
                .label("dashed, lighter: p99 (same colour)")
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 8, y), (x + 12, y), (x + 20, y)], light)
                });
        }
        if let Some(s) = rs.iter().find(|r| r.imp == "serial") {
            let style = ShapeStyle::from(BLACK).stroke_width(2);
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(0.0, s.median), (max_w, s.median)],
                    3,
                    3,
                    style,
                ))
                .map_err(perr)?
                .label("serial (main thread)")
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(perr)?;
    }
    root.present().map_err(perr)?;
    Ok(path.clone())
}

/// A dash pattern: (dash, gap) in pixels; `None`: solid.
type Dash = Option<(u32, u32)>;

/// Dash pattern of the `k`-th worker count.
fn dash(k: usize) -> Dash {
    [
        None,
        Some((8, 4)),
        Some((2, 3)),
        Some((12, 3)),
        Some((4, 6)),
    ][k % 5]
}

/// W4: latency CDF per implementation/policy and worker count, one panel
/// per case (cold, burst), log-scale latency. Colour = implementation,
/// dash = worker count (up to 15-18 curves, so a colour per curve would
/// repeat); the legend sits below the plotting area, not over the curves.
pub fn wake_latency(rows: &[Row], out: &Path) -> Result<PathBuf> {
    let path = out.join("wake-latency.svg");
    let cs = cases(rows);
    let plotted: Vec<&Row> = rows.iter().filter(|r| r.samples.is_some()).collect();
    let mut imps: Vec<String> = Vec::new();
    let mut workers: Vec<usize> = Vec::new();
    for r in &plotted {
        if !imps.contains(&r.display_impl()) {
            imps.push(r.display_impl());
        }
        let w = r.workers.unwrap_or(0);
        if !workers.contains(&w) {
            workers.push(w);
        }
    }
    workers.sort_unstable();
    let per_panel = cs
        .iter()
        .map(|c| plotted.iter().filter(|r| &r.case == c).count())
        .max()
        .unwrap_or(0);
    // The legend: two columns of 18 px lines under the chart.
    let legend_h = (per_panel.div_ceil(2) as u32) * 18 + 20;
    let chart_h = 440u32;
    let root = canvas(
        &path,
        (760 * cs.len().max(1) as u32, chart_h + legend_h + 40),
        &format!(
            "W4 wake-latency: distribution per policy{}",
            machine_note(rows)
        ),
    )?;
    let panels = root.split_evenly((1, cs.len().max(1)));
    for (case, area) in cs.iter().zip(panels.iter()) {
        let (top, legend) = area.split_vertically(chart_h);
        let rs: Vec<&Row> = plotted
            .iter()
            .copied()
            .filter(|r| &r.case == case)
            .collect();
        let all = rs.iter().flat_map(|r| r.samples.iter().flatten().copied());
        let (lo, hi) = all.fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let lo = lo.clamp(0.01, 1e9) * 0.8;
        let hi = (hi * 1.25).max(lo * 10.0);
        let mut chart = ChartBuilder::on(&top)
            .caption(format!("{case}: latency CDF"), ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(50)
            .build_cartesian_2d((lo..hi).log_scale(), 0.0..1.0)
            .map_err(perr)?;
        chart
            .configure_mesh()
            .x_desc("us from schedule to start (log)")
            .y_desc("fraction of samples")
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(perr)?;
        let mut entries: Vec<(String, RGBColor, Dash)> = Vec::new();
        for r in &rs {
            let mut v = r.samples.clone().unwrap_or_default();
            v.sort_by(f64::total_cmp);
            let n = v.len().max(1) as f64;
            let pts: Vec<(f64, f64)> = v
                .iter()
                .enumerate()
                .map(|(k, &x)| (x.max(lo), (k + 1) as f64 / n))
                .collect();
            let imp = r.display_impl();
            let w = r.workers.unwrap_or(0);
            let c = color(imps.iter().position(|i| *i == imp).unwrap_or(0));
            let d = dash(workers.iter().position(|&x| x == w).unwrap_or(0));
            let style = ShapeStyle::from(c).stroke_width(2);
            match d {
                None => {
                    chart
                        .draw_series(LineSeries::new(pts, style))
                        .map_err(perr)?;
                }
                Some((len, gap)) => {
                    chart
                        .draw_series(DashedLineSeries::new(pts, len, gap, style))
                        .map_err(perr)?;
                }
            }
            entries.push((
                format!("{imp} w={w} (p50 {:.1}, p99 {:.1})", r.median, r.p99),
                c,
                d,
            ));
        }
        // The legend below the chart, two columns.
        let (lw, _) = legend.dim_in_pixel();
        let col_w = (lw as i32 - 20) / 2;
        let rows_per_col = entries.len().div_ceil(2).max(1);
        for (k, (label, c, d)) in entries.iter().enumerate() {
            let x = 10 + (k / rows_per_col) as i32 * col_w;
            let y = 10 + (k % rows_per_col) as i32 * 18;
            let style = ShapeStyle::from(*c).stroke_width(2);
            // A 30 px sample of the line, dashed as the curve is.
            let (len, gap) = d.map_or((30, 0), |(l, g)| (l as i32, g as i32));
            let mut x0 = x;
            while x0 < x + 30 {
                let x1 = (x0 + len).min(x + 30);
                legend
                    .draw(&PathElement::new(vec![(x0, y + 6), (x1, y + 6)], style))
                    .map_err(perr)?;
                x0 = x1 + gap;
            }
            legend
                .draw(&Text::new(
                    label.clone(),
                    (x + 38, y),
                    ("sans-serif", 12).into_font(),
                ))
                .map_err(perr)?;
        }
    }
    root.present().map_err(perr)?;
    Ok(path.clone())
}

/// W6: box plots (quartiles, p10-p90 whiskers, a p99 dot) of release cost and
/// wake-to-run against waiter count, a box per primitive.
pub fn wake_primitives(rows: &[Row], out: &Path) -> Result<PathBuf> {
    let path = out.join("wake-primitives.svg");
    let s = |r: &Row, k: &str| {
        r.params
            .get(k)
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    let mut waiters: Vec<u64> = rows
        .iter()
        .filter_map(|r| r.params.get("waiters").and_then(|v| v.as_u64()))
        .collect();
    waiters.sort_unstable();
    waiters.dedup();
    let mut prims: Vec<String> = Vec::new();
    for r in rows {
        if !prims.contains(&r.imp) {
            prims.push(r.imp.clone());
        }
    }
    let root = canvas(
        &path,
        (1280, 900),
        &format!(
            "W6 wake-primitives: cost vs blocked waiters{}",
            machine_note(rows)
        ),
    )?;
    let panels = root.split_evenly((2, 2));
    let combos = [
        ("release", "wake-one"),
        ("release", "wake-all"),
        ("wake-to-run", "wake-one"),
        ("wake-to-run", "wake-all"),
    ];
    for ((metric, op), area) in combos.iter().zip(panels.iter()) {
        let rs: Vec<&Row> = rows
            .iter()
            .filter(|r| s(r, "metric") == *metric && s(r, "op") == *op && r.samples.is_some())
            .collect();
        if rs.is_empty() {
            continue;
        }
        let vals = rs.iter().flat_map(|r| r.samples.iter().flatten().copied());
        let (lo, hi) = vals.fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let lo = lo.clamp(0.005, 1e9) * 0.8;
        let hi = (hi * 1.25).max(lo * 10.0);
        let n = waiters.len().max(1);
        let mut chart = ChartBuilder::on(area)
            .caption(
                format!("{metric}, {op} (box: quartiles, whiskers: p10-p90, dot: p99)"),
                ("sans-serif", 16),
            )
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(55)
            .build_cartesian_2d(-0.5..n as f64 - 0.5, (lo..hi).log_scale())
            .map_err(perr)?;
        let labels = waiters.clone();
        chart
            .configure_mesh()
            .x_desc("blocked waiters N")
            .y_desc("us (log)")
            .light_line_style(TRANSPARENT)
            .disable_x_mesh()
            .x_labels(n)
            .y_label_formatter(&|v| format!("{v}"))
            .x_label_formatter(&|v| {
                let i = v.round();
                if (v - i).abs() < 1e-6 && i >= 0.0 {
                    labels
                        .get(i as usize)
                        .map_or(String::new(), |n| n.to_string())
                } else {
                    String::new()
                }
            })
            .draw()
            .map_err(perr)?;
        let np = prims.len().max(1) as f64;
        let hw = 0.3 / np; // half the width of one box
        for (pi, prim) in prims.iter().enumerate() {
            let style = ShapeStyle::from(color(pi)).stroke_width(2);
            // (x, p10, q1, median, q3, p90, p99) per waiter count.
            let boxes: Vec<[f64; 7]> = rs
                .iter()
                .filter(|r| &r.imp == prim)
                .filter_map(|r| {
                    let wi = waiters.iter().position(|&w| {
                        Some(w) == r.params.get("waiters").and_then(|v| v.as_u64())
                    })?;
                    let mut v: Vec<f64> = r.samples.iter().flatten().map(|&x| x.max(lo)).collect();
                    v.sort_by(f64::total_cmp);
                    let q = |p| crate::stats::percentile(&v, p);
                    let x = wi as f64 + (pi as f64 - (np - 1.0) / 2.0) * 2.6 * hw;
                    Some([x, q(10.0), q(25.0), q(50.0), q(75.0), q(90.0), q(99.0)])
                })
                .collect();
            chart
                .draw_series(
                    boxes
                        .iter()
                        .map(|b| Rectangle::new([(b[0] - hw, b[2]), (b[0] + hw, b[4])], style)),
                )
                .map_err(perr)?
                .label(prim.clone())
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], style));
            chart
                .draw_series(boxes.iter().flat_map(|b| {
                    [
                        PathElement::new(vec![(b[0] - hw, b[3]), (b[0] + hw, b[3])], style),
                        PathElement::new(vec![(b[0], b[1]), (b[0], b[2])], style),
                        PathElement::new(vec![(b[0], b[4]), (b[0], b[5])], style),
                        PathElement::new(
                            vec![(b[0] - hw / 2.0, b[1]), (b[0] + hw / 2.0, b[1])],
                            style,
                        ),
                        PathElement::new(
                            vec![(b[0] - hw / 2.0, b[5]), (b[0] + hw / 2.0, b[5])],
                            style,
                        ),
                    ]
                }))
                .map_err(perr)?;
            chart
                .draw_series(
                    boxes
                        .iter()
                        .map(|b| Circle::new((b[0], b[6]), 2, style.filled())),
                )
                .map_err(perr)?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(perr)?;
    }
    root.present().map_err(perr)?;
    Ok(path.clone())
}

/// Points of `points` with both figures: (name, workers, extra cores, us).
fn lat_cpu_xy(points: &[Point]) -> Vec<(String, usize, f64, f64)> {
    points
        .iter()
        .filter_map(|p| Some((p.name.clone(), p.workers, p.extra_cpu?, p.cold_p50?)))
        .collect()
}

/// The idle-policy trade-off: W4 cold p50 latency (log) against W5 extra
/// CPU, one labelled point per policy (and rayon) per worker count, the futex floor (the
/// least any design that sleeps between bursts achieves) as black
/// triangles; the good corner is low-left. `rows` only name the machine.
pub fn latency_vs_cpu(points: &[Point], rows: &[Row], out: &Path) -> Result<PathBuf> {
    let path = out.join("latency-vs-cpu.svg");
    let xy = lat_cpu_xy(points);
    if xy.is_empty() {
        return Err(Error::Plot(
            "latency-vs-cpu: no worker count with both W4 and W5 rows".into(),
        ));
    }
    let root = canvas(
        &path,
        (900, 620),
        &format!("W4 latency against W5 CPU burned{}", machine_note(rows)),
    )?;
    let (x0, x1) = xy
        .iter()
        .fold((0.0f64, 0.0f64), |(a, b), p| (a.min(p.2), b.max(p.2)));
    let pad = ((x1 - x0) * 0.15).max(0.02);
    let (y0, y1) = xy
        .iter()
        .fold((f64::MAX, 0.0f64), |(a, b), p| (a.min(p.3), b.max(p.3)));
    let (y0, y1) = (y0.max(0.01) * 0.6, (y1 * 2.5).max(y0 * 10.0));
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "good corner: low-left (fast wake-up, little CPU)",
            ("sans-serif", 16),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((x0 - pad)..(x1 + pad), (y0..y1).log_scale())
        .map_err(perr)?;
    chart
        .configure_mesh()
        .x_desc("W5 extra CPU, cores (median)")
        .y_desc("W4 cold p50 latency, us (log)")
        .light_line_style(TRANSPARENT)
        .draw()
        .map_err(perr)?;
    let mut names: Vec<&str> = Vec::new();
    for p in xy.iter().filter(|p| p.0 != FLOOR) {
        if !names.contains(&p.0.as_str()) {
            names.push(&p.0);
        }
    }
    for (i, name) in names.iter().enumerate() {
        let style = ShapeStyle::from(color(i)).filled();
        let pts: Vec<_> = xy.iter().filter(|p| p.0 == *name).collect();
        chart
            .draw_series(
                pts.iter()
                    .map(|p| EmptyElement::at((p.2, p.3)) + Circle::new((0, 0), 5, style)),
            )
            .map_err(perr)?
            .label(name.to_string())
            .legend(move |(x, y)| Circle::new((x + 10, y), 5, style));
    }
    let floor: Vec<_> = xy.iter().filter(|p| p.0 == FLOOR).collect();
    if !floor.is_empty() {
        let style = ShapeStyle::from(BLACK).filled();
        chart
            .draw_series(
                floor
                    .iter()
                    .map(|p| EmptyElement::at((p.2, p.3)) + TriangleMarker::new((0, 0), 7, style)),
            )
            .map_err(perr)?
            .label("futex floor")
            .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 7, style));
    }
    // The "w=N" labels: each at the first of a few offsets around its
    // point where it overlaps no label placed before it (nor a marker);
    // a label with no free spot is left out rather than drawn over another.
    let anchors: Vec<(f64, f64, (i32, i32))> = xy
        .iter()
        .map(|p| (p.2, p.3, chart.backend_coord(&(p.2, p.3))))
        .collect();
    let texts: Vec<String> = xy.iter().map(|p| format!("w={}", p.1)).collect();
    let offsets = label_spots(&anchors.iter().map(|a| a.2).collect::<Vec<_>>(), &texts);
    chart
        .draw_series(
            anchors
                .iter()
                .zip(&texts)
                .zip(&offsets)
                .filter_map(|((a, t), o)| o.map(|o| (a, t, o)))
                .map(|(a, t, o)| {
                    EmptyElement::at((a.0, a.1)) + Text::new(t.clone(), o, ("sans-serif", 13))
                }),
        )
        .map_err(perr)?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(perr)?;
    root.present().map_err(perr)?;
    Ok(path.clone())
}

/// Where to put each point's label (13 px text): an offset from the point
/// (the text's top-left corner), the first of a few around it whose box
/// overlaps no earlier label's box nor any point's marker, or `None` when
/// every spot is taken. `points` are pixel positions.
fn label_spots(points: &[(i32, i32)], texts: &[String]) -> Vec<Option<(i32, i32)>> {
    type Rect = (i32, i32, i32, i32); // x0, y0, x1, y1
    let overlaps = |a: &Rect, b: &Rect| a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3;
    let markers: Vec<Rect> = points
        .iter()
        .map(|&(x, y)| (x - 6, y - 6, x + 6, y + 6))
        .collect();
    let mut placed: Vec<Rect> = Vec::new();
    let mut out = Vec::new();
    for (&(x, y), t) in points.iter().zip(texts) {
        let w = 7 * t.chars().count() as i32 + 2;
        let h = 14;
        let spot = [
            (8, -16),
            (8, 3),
            (-w - 8, -16),
            (-w - 8, 3),
            (-w / 2, -24),
            (-w / 2, 9),
        ]
        .into_iter()
        .find(|&(dx, dy)| {
            let r = (x + dx, y + dy, x + dx + w, y + dy + h);
            !placed.iter().chain(&markers).any(|o| overlaps(&r, o))
        });
        if let Some((dx, dy)) = spot {
            placed.push((x + dx, y + dy, x + dx + w, y + dy + h));
        }
        out.push(spot);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two points at the same spot: the second label goes elsewhere, and
    /// no two placed labels overlap; a crowd loses labels, not legibility.
    #[test]
    fn labels_do_not_overlap() {
        let pts = vec![(100, 100); 8];
        let texts: Vec<String> = (0..8).map(|i| format!("w={i}")).collect();
        let spots = label_spots(&pts, &texts);
        assert!(spots[0].is_some() && spots[1].is_some());
        assert_ne!(spots[0], spots[1]);
        let placed: Vec<_> = spots.iter().flatten().collect();
        assert!(placed.len() < 8, "some labels dropped: {spots:?}");
        for (i, a) in placed.iter().enumerate() {
            for b in &placed[i + 1..] {
                assert_ne!(a, b);
            }
        }
        // Far-apart points keep the first spot.
        let spots = label_spots(&[(0, 0), (500, 500)], &texts[..2]);
        assert_eq!(spots, vec![Some((8, -16)), Some((8, -16))]);
    }
}
