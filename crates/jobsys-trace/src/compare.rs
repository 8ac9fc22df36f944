//! Comparing two captures by job name (as one compares a capture at 2
//! workers with one at 5): count, total and mean time in A and in B, the
//! absolute and relative difference of the totals, sorted by absolute
//! difference, largest first. Per frame (`per_frame`), counts and totals
//! are averages per frame over the jobs that began inside a frame, and the
//! frame times of both are compared too.
//!
//! Invariant: comparing a capture with itself gives zero differences.

use crate::summary::{fit, fmt_ns, Distribution};
use crate::timeline::Capture;
use std::collections::BTreeMap;
use std::fmt;

/// How to compare.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompareOptions {
    /// Averages per frame instead of totals over the capture.
    pub per_frame: bool,
}

/// One job name in one capture.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Side {
    /// Complete spans (per frame: their average number per frame).
    pub count: f64,
    /// Their summed duration (per frame: its average per frame).
    pub total_ns: f64,
    /// Mean duration of one span.
    pub mean_ns: f64,
}

/// One job name in both captures.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CompareRow {
    pub name: String,
    pub a: Side,
    pub b: Side,
    /// `b.total_ns - a.total_ns`.
    pub abs_diff_ns: f64,
    /// `abs_diff_ns / a.total_ns` (`None` when A has none of this job).
    pub rel_diff: Option<f64>,
}

/// Frame times of both captures.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct FrameTimes {
    pub a: Distribution,
    pub b: Distribution,
}

/// The result of [`compare`].
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Comparison {
    pub per_frame: bool,
    pub frames: FrameTimes,
    /// Sorted by `|abs_diff_ns|`, largest first (then by name).
    pub rows: Vec<CompareRow>,
}

/// Per job name: (count, total ns) over the spans that count.
fn per_name(c: &Capture, per_frame: bool) -> BTreeMap<String, (u64, u64)> {
    let mut frames: Vec<(u64, u64)> = c.frames.iter().map(|f| (f.begin_ns, f.end_ns)).collect();
    frames.sort_unstable();
    let in_frame = |t: u64| {
        let i = frames.partition_point(|&(b, _)| b <= t);
        i > 0 && t <= frames[i - 1].1
    };
    let mut m: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for t in &c.threads {
        for j in t.jobs.iter().filter(|j| j.complete) {
            if per_frame && !in_frame(j.begin_ns) {
                continue;
            }
            let e = m.entry(c.name_of(j).to_owned()).or_default();
            e.0 += 1;
            e.1 += j.end_ns - j.begin_ns;
        }
    }
    m
}

fn side(v: Option<&(u64, u64)>, divisor: f64) -> Side {
    let (count, total) = v.copied().unwrap_or((0, 0));
    Side {
        count: count as f64 / divisor,
        total_ns: total as f64 / divisor,
        mean_ns: if count == 0 {
            0.0
        } else {
            total as f64 / count as f64
        },
    }
}

/// Compare capture `a` with capture `b` (see the module docs).
pub fn compare(a: &Capture, b: &Capture, opts: CompareOptions) -> Comparison {
    let (ma, mb) = (per_name(a, opts.per_frame), per_name(b, opts.per_frame));
    let div = |c: &Capture| {
        if opts.per_frame {
            c.frames.len().max(1) as f64
        } else {
            1.0
        }
    };
    let (da, db) = (div(a), div(b));
    let mut names: Vec<&String> = ma.keys().chain(mb.keys()).collect();
    names.sort();
    names.dedup();
    let mut rows: Vec<CompareRow> = names
        .into_iter()
        .map(|n| {
            let (sa, sb) = (side(ma.get(n), da), side(mb.get(n), db));
            let abs = sb.total_ns - sa.total_ns;
            CompareRow {
                name: n.clone(),
                a: sa,
                b: sb,
                abs_diff_ns: abs,
                rel_diff: (sa.total_ns > 0.0).then(|| abs / sa.total_ns),
            }
        })
        .collect();
    rows.sort_by(|x, y| {
        y.abs_diff_ns
            .abs()
            .total_cmp(&x.abs_diff_ns.abs())
            .then_with(|| x.name.cmp(&y.name))
    });
    let frame_times =
        |c: &Capture| Distribution::of(c.frames.iter().map(|f| f.end_ns - f.begin_ns).collect());
    Comparison {
        per_frame: opts.per_frame,
        frames: FrameTimes {
            a: frame_times(a),
            b: frame_times(b),
        },
        rows,
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (fa, fb) = (&self.frames.a, &self.frames.b);
        writeln!(
            f,
            "A: {} frames, B: {} frames{}",
            fa.count,
            fb.count,
            if self.per_frame {
                "; counts and totals per frame"
            } else {
                ""
            }
        )?;
        if fa.count > 0 || fb.count > 0 {
            writeln!(
                f,
                "{:<12} {:>12} {:>12} {:>12} {:>12}",
                "frame time", "mean", "p50", "p99", "max"
            )?;
            for (label, d) in [("A", fa), ("B", fb)] {
                writeln!(
                    f,
                    "{:<12} {:>12} {:>12} {:>12} {:>12}",
                    label,
                    fmt_ns(d.mean_ns as f64),
                    fmt_ns(d.p50_ns as f64),
                    fmt_ns(d.p99_ns as f64),
                    fmt_ns(d.max_ns as f64)
                )?;
            }
            writeln!(f)?;
        }
        writeln!(
            f,
            "{:<40} {:>9} {:>9} {:>12} {:>12} {:>12} {:>12} {:>12} {:>8}",
            "job", "count A", "count B", "total A", "total B", "mean A", "mean B", "diff", "rel"
        )?;
        let count = |c: f64| {
            if self.per_frame {
                format!("{c:.2}")
            } else {
                format!("{c:.0}")
            }
        };
        for r in &self.rows {
            let rel = match r.rel_diff {
                Some(x) => format!("{:+.1}%", 100.0 * x),
                None => "new".to_owned(),
            };
            let diff = if r.abs_diff_ns > 0.0 {
                format!("+{}", fmt_ns(r.abs_diff_ns))
            } else {
                fmt_ns(r.abs_diff_ns)
            };
            writeln!(
                f,
                "{:<40} {:>9} {:>9} {:>12} {:>12} {:>12} {:>12} {:>12} {:>8}",
                fit(&r.name, 40),
                count(r.a.count),
                count(r.b.count),
                fmt_ns(r.a.total_ns),
                fmt_ns(r.b.total_ns),
                fmt_ns(r.a.mean_ns),
                fmt_ns(r.b.mean_ns),
                diff,
                rel
            )?;
        }
        Ok(())
    }
}
