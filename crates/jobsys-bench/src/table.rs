//! Plain-text tables on stdout, one per workload, with every row's ratio to
//! the serial row and to the rayon row of the same run.
//!
//! Ratios are medians divided: `×serial` = row / serial (below 1: faster than
//! the serial loop), `×rayon` = row / rayon with the same `--workers` value.
//! A row is matched with the serial and rayon rows of the same `case`.

use crate::json::Row;

/// An extra column: header and a cell function (given the row and all rows).
pub type Extra<'a> = (&'a str, &'a dyn Fn(&Row, &[Row]) -> String);

/// Format a number with about 3 significant digits.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else if a == 0.0 {
        "0".into()
    } else {
        format!("{v:.4}")
    }
}

/// The serial row of `row`'s case, if any.
pub fn serial_of<'a>(row: &Row, rows: &'a [Row]) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.imp == "serial" && r.case == row.case && r.n > 0)
}

/// The rayon row of `row`'s case with the same worker count, if any.
pub fn rayon_of<'a>(row: &Row, rows: &'a [Row]) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.imp == "rayon" && r.case == row.case && r.workers == row.workers)
}

fn ratio(a: &Row, b: Option<&Row>) -> String {
    match b {
        Some(b) if b.median > 0.0 && a.median.is_finite() => format!("{:.2}x", a.median / b.median),
        _ => "-".into(),
    }
}

fn opt(v: Option<usize>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

/// The note line that defines the ratio columns among `header` (`xserial`,
/// `xrayon`, `xideal`, `xfloor`): what each divides by, and that lower is better
/// (every unit here is a cost: time, time per job, CPU cores). `None` when
/// `header` has none of them.
pub fn ratio_note(header: &[String]) -> Option<String> {
    const DEFS: [(&str, &str); 4] = [
        ("xserial", "xserial = median / the serial row's (same case)"),
        (
            "xrayon",
            "xrayon = median / the rayon row's (same case and workers)",
        ),
        ("xideal", "xideal = median / the ideal row's (same case)"),
        (
            "xfloor",
            "xfloor = median / the floor-static row's (same case and workers)",
        ),
    ];
    let defs: Vec<&str> = DEFS
        .iter()
        .filter(|(col, _)| header.iter().any(|h| h == col))
        .map(|(_, d)| *d)
        .collect();
    if defs.is_empty() {
        return None;
    }
    Some(format!(
        "{}; lower is better (below 1.00x: less than the reference)",
        defs.join("; ")
    ))
}

/// Render `rows` as a table; `notes` are printed under the title, then the
/// line defining the ratio columns ([`ratio_note`]).
/// `percentiles` adds p10/p90 columns.
pub fn render(
    title: &str,
    notes: &[String],
    rows: &[Row],
    percentiles: bool,
    extras: &[Extra<'_>],
) -> String {
    let mut header: Vec<String> = [
        "case", "impl", "workers", "threads", "median", "p99", "min", "max",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if percentiles {
        header.extend(["p10".into(), "p90".into()]);
    }
    header.extend(["unit".into(), "xserial".into(), "xrayon".into()]);
    header.extend(extras.iter().map(|(h, _)| h.to_string()));

    let mut body: Vec<Vec<String>> = Vec::new();
    let mut last_case: Option<&str> = None;
    for r in rows {
        if last_case.is_some_and(|c| c != r.case) {
            body.push(Vec::new()); // blank line between cases
        }
        last_case = Some(&r.case);
        let mut cells = vec![
            r.case.clone(),
            r.display_impl(),
            opt(r.workers),
            opt(r.threads),
            fmt_num(r.median),
            fmt_num(r.p99),
            fmt_num(r.min),
            fmt_num(r.max),
        ];
        if percentiles {
            cells.extend([fmt_num(r.p10), fmt_num(r.p90)]);
        }
        let is_ref = r.n == 0;
        cells.push(r.unit.clone());
        cells.push(if r.imp == "serial" || is_ref {
            "-".into()
        } else {
            ratio(r, serial_of(r, rows))
        });
        cells.push(if r.imp == "rayon" || is_ref {
            "-".into()
        } else {
            ratio(r, rayon_of(r, rows))
        });
        for (_, f) in extras {
            cells.push(f(r, rows));
        }
        body.push(cells);
    }

    let mut out = format!("== {title} ==\n");
    for n in notes {
        out.push_str(&format!("   {n}\n"));
    }
    if let Some(n) = ratio_note(&header) {
        out.push_str(&format!("   {n}\n"));
    }
    out.push_str(&grid(&header, &body, 2));
    out
}

/// Align `body` under `header`: the first `text_cols` columns left-aligned,
/// the others right-aligned; an empty row is a blank line.
pub fn grid(header: &[String], body: &[Vec<String>], text_cols: usize) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for cells in body {
        for (w, c) in widths.iter_mut().zip(cells) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            if i < text_cols {
                s.push_str(&format!("{c:<w$}"));
            } else {
                s.push_str(&format!("{c:>w$}"));
            }
        }
        s.trim_end().to_string()
    };
    let mut out = line(header);
    out.push('\n');
    out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1)));
    out.push('\n');
    for cells in body {
        if !cells.is_empty() {
            out.push_str(&line(cells));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(cols: &[&str]) -> Vec<String> {
        cols.iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn ratio_note_defines_the_columns_present() {
        let n = ratio_note(&h(&["case", "median", "xserial", "xrayon"])).unwrap();
        assert!(n.contains("xserial = median / the serial row's"), "{n}");
        assert!(n.contains("xrayon = median / the rayon row's"), "{n}");
        assert!(!n.contains("xideal"), "{n}");
        assert!(n.contains("lower is better"), "{n}");
        let n = ratio_note(&h(&["xserial", "xrayon", "xideal"])).unwrap();
        assert!(n.contains("xideal = median / the ideal row's"), "{n}");
        let n = ratio_note(&h(&["xserial", "xfloor"])).unwrap();
        assert!(
            n.contains("xfloor = median / the floor-static row's"),
            "{n}"
        );
        assert!(!n.contains("xideal"), "{n}");
        assert_eq!(ratio_note(&h(&["case", "median"])), None);
    }
}
