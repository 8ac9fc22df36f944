//! `jobsys-trace render`: a capture's timeline drawn as SVG, written by
//! hand (no plotting dependency).
//!
//! It draws the [`Capture`] the library computed — nothing is re-derived:
//! one row per thread (sorted by thread index) with the thread's name, a
//! strip of state slices coloured per [`ThreadState`], below it the job
//! slices (nested ones, run while waiting inside a job, a little lower and
//! shorter), labelled with the job name where wide enough; wake arrows
//! from the waker (when it issued the wake) to the wakee (when it woke);
//! release arrows from the thread whose finishing job released a job to
//! where that job started; frames as vertical lines; a time axis in
//! microseconds since the capture started; a legend.
//!
//! Everything is clipped to the time window (`from_ns..to_ns`); an arrow
//! is drawn when its time range meets the window. Elements carry classes
//! (`row`, `state`, `job`, `arrow wake`, `arrow release`, `frame`,
//! `legend`) so tests and style sheets can find them.

use crate::{Capture, ThreadState, ThreadTimeline};
use std::collections::HashMap;
use std::fmt::Write as _;

/// What to draw.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Window start, nanoseconds since the capture started.
    pub from_ns: u64,
    /// Window end (exclusive); clamped to the capture's duration.
    pub to_ns: u64,
    /// Picture width in pixels (the plot is this less the name column).
    pub width: u32,
}

impl Options {
    /// The whole capture, `width` pixels wide.
    pub fn whole(c: &Capture, width: u32) -> Options {
        Options {
            from_ns: 0,
            to_ns: c.duration_ns,
            width,
        }
    }
}

/// Fill colour of a state's slices (close to the reserved colours the
/// exported JSON asks chrome://tracing for).
pub fn state_colour(s: ThreadState) -> &'static str {
    match s {
        ThreadState::Working => "#4caf62",
        ThreadState::Searching => "#85a0d2",
        ThreadState::Preempted => "#8e44ad",
        ThreadState::Spinning => "#ff9f1c",
        ThreadState::Sleeping => "#dcdcdc",
        ThreadState::Waiting => "#b47d00",
        ThreadState::Blocked => "#c0001a",
        ThreadState::Outside => "#a8a860",
        ThreadState::Unknown => "#ffffff",
    }
}

const WAKE_COLOUR: &str = "#1f3fbf";
const RELEASE_COLOUR: &str = "#8e24aa";
const FRAME_COLOUR: &str = "#333333";

/// Job slice colours, one per job name (by its index in
/// [`Capture::names`], so the names of one capture get distinct colours
/// as far as the palette goes).
const JOB_PALETTE: [&str; 12] = [
    "#a6cee3", "#fb9a99", "#b2df8a", "#fdbf6f", "#cab2d6", "#ffff99", "#8dd3c7", "#fccde5",
    "#bebada", "#80b1d3", "#ccebc5", "#d9d9d9",
];

fn job_colour(name_index: u32) -> &'static str {
    JOB_PALETTE[name_index as usize % JOB_PALETTE.len()]
}

const LEFT: f64 = 150.0; // name column
const RIGHT: f64 = 20.0;
const LEGEND_Y: f64 = 38.0;
const AXIS_Y: f64 = 84.0; // the axis line; rows start below it
const ROWS_Y: f64 = 90.0;
const ROW_H: f64 = 46.0;
const STATE_H: f64 = 10.0; // state strip, at the top of a row
const JOB_Y: f64 = 15.0; // job band, below the strip
const JOB_H: f64 = 24.0;
const CHAR_W: f64 = 6.0; // width of a 10 px sans-serif character, roughly

/// Escape text for SVG content and attribute values.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\t' => o.push('\u{fffd}'),
            c => o.push(c),
        }
    }
    o
}

/// `ns` as microseconds, with up to 3 decimals and no trailing zeros.
fn us(ns: u64) -> String {
    let s = format!("{}.{:03}", ns / 1000, ns % 1000);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A tick step of 1, 2 or 5 × 10^k nanoseconds near `raw`.
fn nice_step(raw: f64) -> u64 {
    let mut step = 1u64;
    loop {
        for m in [1, 2, 5] {
            if (step * m) as f64 >= raw {
                return step * m;
            }
        }
        step *= 10;
    }
}

struct Geometry {
    from: u64,
    to: u64,
    scale: f64, // pixels per nanosecond
    rows: HashMap<u32, usize>,
}

impl Geometry {
    fn x(&self, t: u64) -> f64 {
        LEFT + (t as f64 - self.from as f64) * self.scale
    }

    /// The pixel range of `[b, e)` inside the window, if it meets it.
    fn span(&self, b: u64, e: u64) -> Option<(f64, f64)> {
        if e < self.from || b > self.to || (e == b && (b < self.from || b >= self.to)) {
            return None;
        }
        let (b, e) = (b.max(self.from), e.min(self.to));
        Some((self.x(b), self.x(e)))
    }

    fn row_y(&self, index: u32) -> Option<f64> {
        self.rows.get(&index).map(|&r| ROWS_Y + r as f64 * ROW_H)
    }

    fn meets(&self, a: u64, b: u64) -> bool {
        a.min(b) <= self.to && a.max(b) >= self.from
    }
}

/// The SVG picture of `c` (see the module docs).
pub fn render(c: &Capture, opt: &Options) -> String {
    let to = opt.to_ns.min(c.duration_ns).max(opt.from_ns + 1);
    let from = opt.from_ns.min(to - 1);
    let width = f64::from(opt.width.max(400));
    let plot_w = width - LEFT - RIGHT;
    let g = Geometry {
        from,
        to,
        scale: plot_w / (to - from) as f64,
        rows: c
            .threads
            .iter()
            .enumerate()
            .map(|(r, t)| (t.index, r))
            .collect(),
    };
    let rows_h = c.threads.len() as f64 * ROW_H;
    let height = ROWS_Y + rows_h + 28.0;
    let mut s = String::new();
    let w = &mut s;

    let _ = writeln!(
        w,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="10">"#
    );
    let _ = writeln!(
        w,
        r#"<defs>
<clipPath id="plot"><rect x="{LEFT}" y="0" width="{plot_w}" height="{height}"/></clipPath>
<marker id="head-wake" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="{WAKE_COLOUR}"/></marker>
<marker id="head-release" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="{RELEASE_COLOUR}"/></marker>
</defs>
<rect width="100%" height="100%" fill="white"/>"#
    );
    let jobs: usize = c.threads.iter().map(|t| t.jobs.len()).sum();
    let _ = writeln!(
        w,
        r#"<text x="10" y="18" font-size="13" font-weight="bold">jobsys timeline: {} threads, {} µs to {} µs of {} µs, {} job slices, {} frames</text>"#,
        c.threads.len(),
        us(from),
        us(to),
        us(c.duration_ns),
        jobs,
        c.frames.len()
    );
    legend(w);
    axis(w, &g, plot_w, rows_h);

    // Rows: background, name, states, jobs.
    for t in &c.threads {
        row(w, c, &g, t, plot_w);
    }

    // Frames, then arrows on top of everything else.
    let _ = writeln!(w, r#"<g clip-path="url(#plot)">"#);
    for f in &c.frames {
        for (ts, label) in [(f.begin_ns, true), (f.end_ns, false)] {
            if ts < from || ts > to {
                continue;
            }
            let x = g.x(ts);
            let _ = writeln!(
                w,
                r#"<line class="frame" x1="{x:.2}" y1="{}" x2="{x:.2}" y2="{}" stroke="{FRAME_COLOUR}" stroke-width="1" stroke-dasharray="{}"/>"#,
                AXIS_Y - 18.0,
                ROWS_Y + rows_h,
                if label { "5,3" } else { "1,3" }
            );
            if label {
                let _ = writeln!(
                    w,
                    r#"<text x="{:.2}" y="{}" fill="{FRAME_COLOUR}" font-weight="bold">frame {}</text>"#,
                    x + 3.0,
                    AXIS_Y - 7.0,
                    f.frame
                );
            }
        }
    }
    arrows(w, c, &g);
    let _ = writeln!(w, "</g>");
    let _ = writeln!(
        w,
        r##"<text x="10" y="{}" fill="#555">Drawn by jobsys-trace render. Rows: thread states (strip) and job slices; arrows: wakes (waker → wakee) and dependency releases (finishing job → released job's start).</text>"##,
        ROWS_Y + rows_h + 20.0
    );
    let _ = writeln!(w, "</svg>");
    s
}

fn legend(w: &mut String) {
    let _ = writeln!(w, r#"<g class="legend">"#);
    let mut x = 10.0;
    for st in ThreadState::ALL {
        let name = st.name();
        let _ = writeln!(
            w,
            r##"<rect x="{x}" y="{}" width="14" height="10" fill="{}" stroke="#888" stroke-width="0.5"/><text x="{}" y="{}">{name}</text>"##,
            LEGEND_Y - 9.0,
            state_colour(st),
            x + 18.0,
            LEGEND_Y
        );
        x += 18.0 + name.len() as f64 * CHAR_W + 14.0;
    }
    for (class, colour, label) in [
        ("wake", WAKE_COLOUR, "wake (waker → wakee)"),
        ("release", RELEASE_COLOUR, "dependency release"),
    ] {
        let _ = writeln!(
            w,
            r#"<line x1="{x}" y1="{y}" x2="{}" y2="{y}" stroke="{colour}" stroke-width="1.5" marker-end="url(#head-{class})"/><text x="{}" y="{}">{label}</text>"#,
            x + 24.0,
            x + 30.0,
            LEGEND_Y,
            y = LEGEND_Y - 4.0
        );
        x += 30.0 + label.chars().count() as f64 * CHAR_W + 14.0;
    }
    let _ = writeln!(
        w,
        r#"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="{FRAME_COLOUR}" stroke-dasharray="5,3"/><text x="{}" y="{}">frame begin</text>"#,
        LEGEND_Y - 11.0,
        LEGEND_Y + 2.0,
        x + 6.0,
        LEGEND_Y
    );
    let _ = writeln!(w, "</g>");
}

fn axis(w: &mut String, g: &Geometry, plot_w: f64, rows_h: f64) {
    let span = (g.to - g.from) as f64;
    let step = nice_step(span / (plot_w / 110.0).max(1.0));
    let _ = writeln!(
        w,
        r##"<g class="axis"><line x1="{LEFT}" y1="{AXIS_Y}" x2="{}" y2="{AXIS_Y}" stroke="#444"/>"##,
        LEFT + plot_w
    );
    let _ = writeln!(
        w,
        r#"<text x="{}" y="{}" text-anchor="end">µs</text>"#,
        LEFT - 6.0,
        AXIS_Y - 2.0
    );
    let mut t = g.from.div_ceil(step) * step;
    while t <= g.to {
        let x = g.x(t);
        let _ = writeln!(
            w,
            r##"<line x1="{x:.2}" y1="{}" x2="{x:.2}" y2="{}" stroke="#e4e4e4"/><line x1="{x:.2}" y1="{}" x2="{x:.2}" y2="{AXIS_Y}" stroke="#444"/><text x="{x:.2}" y="{}" text-anchor="middle">{}</text>"##,
            AXIS_Y,
            ROWS_Y + rows_h,
            AXIS_Y - 4.0,
            AXIS_Y - 22.0,
            us(t)
        );
        t += step;
    }
    let _ = writeln!(w, "</g>");
}

fn row(w: &mut String, c: &Capture, g: &Geometry, t: &ThreadTimeline, plot_w: f64) {
    let Some(y) = g.row_y(t.index) else { return };
    let _ = writeln!(
        w,
        r#"<g class="row" data-thread="{}" data-name="{}">"#,
        t.index,
        esc(&t.name)
    );
    let _ = writeln!(
        w,
        r##"<rect x="0" y="{y}" width="{}" height="{ROW_H}" fill="{}"/>"##,
        LEFT + plot_w,
        if g.rows[&t.index] % 2 == 0 {
            "#fafafa"
        } else {
            "#f0f0f0"
        }
    );
    let _ = writeln!(
        w,
        r#"<text x="8" y="{}" font-size="11" font-weight="bold">{}</text>"#,
        y + 18.0,
        esc(&t.name)
    );
    let note = if t.dropped > 0 {
        format!("{} dropped events", t.dropped)
    } else if t.worker {
        "worker".to_string()
    } else {
        "external thread".to_string()
    };
    let _ = writeln!(
        w,
        r##"<text x="8" y="{}" fill="{}">{note}</text>"##,
        y + 32.0,
        if t.dropped > 0 { "#c0001a" } else { "#777" }
    );

    let _ = writeln!(w, r#"<g clip-path="url(#plot)">"#);
    for sp in &t.states {
        let Some((x1, x2)) = g.span(sp.begin_ns, sp.end_ns) else {
            continue;
        };
        if x2 - x1 < 0.02 {
            continue;
        }
        let _ = writeln!(
            w,
            r#"<rect class="state {}" x="{x1:.2}" y="{:.1}" width="{:.2}" height="{STATE_H}" fill="{}"/>"#,
            sp.state.name(),
            y + 2.0,
            x2 - x1,
            state_colour(sp.state)
        );
    }
    // Jobs: depth from the nesting (sorted by begin, enclosing first).
    let mut open: Vec<u64> = Vec::new();
    for j in &t.jobs {
        while open.last().is_some_and(|&e| e <= j.begin_ns) {
            open.pop();
        }
        let depth = open.len() as f64;
        open.push(j.end_ns);
        let Some((x1, x2)) = g.span(j.begin_ns, j.end_ns) else {
            continue;
        };
        let wpx = x2 - x1;
        if wpx < 0.02 {
            continue;
        }
        let name = c.name_of(j);
        let (jy, jh) = (y + JOB_Y + depth * 5.0, (JOB_H - depth * 5.0).max(6.0));
        let _ = writeln!(
            w,
            r##"<g class="job"><title>{} ({} µs)</title><rect x="{x1:.2}" y="{jy:.1}" width="{wpx:.2}" height="{jh:.1}" fill="{}" stroke="#555" stroke-width="0.4"/>"##,
            esc(name),
            us(j.end_ns - j.begin_ns),
            job_colour(j.name)
        );
        // Label where at least three characters fit.
        let fit = ((wpx - 4.0) / CHAR_W).floor();
        if fit >= 3.0 && jh >= 11.0 {
            let n = name.chars().count();
            let label: String = if (n as f64) <= fit {
                name.to_string()
            } else {
                let mut l: String = name.chars().take(fit as usize - 1).collect();
                l.push('…');
                l
            };
            let _ = write!(
                w,
                r#"<text x="{:.2}" y="{:.1}">{}</text>"#,
                x1 + 2.0,
                jy + jh / 2.0 + 3.5,
                esc(&label)
            );
        }
        let _ = writeln!(w, "</g>");
    }
    let _ = writeln!(w, "</g></g>");
}

fn arrows(w: &mut String, c: &Capture, g: &Geometry) {
    for t in &c.threads {
        let Some(y0) = g.row_y(t.index) else { continue };
        for wk in &t.wakes {
            let (Some(wakee), Some(target)) = (wk.wakee, wk.target_ns) else {
                continue;
            };
            let Some(y1) = g.row_y(wakee) else { continue };
            if !g.meets(wk.ts_ns, target) {
                continue;
            }
            arrow(
                w,
                "wake",
                WAKE_COLOUR,
                (g.x(wk.ts_ns), y0 + 2.0 + STATE_H / 2.0),
                (g.x(target), y1 + 2.0 + STATE_H / 2.0),
                &format!("wake: {} → thread {wakee}", esc(&t.name)),
            );
        }
        for r in &t.releases {
            let Some((thread, begin)) = r.started else {
                continue;
            };
            let Some(y1) = g.row_y(thread) else { continue };
            if !g.meets(r.ts_ns, begin) {
                continue;
            }
            arrow(
                w,
                "release",
                RELEASE_COLOUR,
                (g.x(r.ts_ns), y0 + JOB_Y + JOB_H / 2.0),
                (g.x(begin), y1 + JOB_Y + 1.0),
                "dependency release",
            );
        }
    }
}

fn arrow(w: &mut String, class: &str, colour: &str, a: (f64, f64), b: (f64, f64), title: &str) {
    // A gentle curve, so arrows within one row (or nearly vertical ones)
    // stay visible.
    let (mx, my) = ((a.0 + b.0) / 2.0, (a.1 + b.1) / 2.0 - 10.0);
    let _ = writeln!(
        w,
        r#"<path class="arrow {class}" d="M{:.2},{:.1} Q{mx:.2},{my:.1} {:.2},{:.1}" fill="none" stroke="{colour}" stroke-width="1.2" opacity="0.85" marker-end="url(#head-{class})"><title>{title}</title></path>"#,
        a.0, a.1, b.0, b.1
    );
}

#[cfg(test)]
mod tests {
    use super::{nice_step, us};

    #[test]
    fn ticks_and_times() {
        assert_eq!(nice_step(0.3), 1);
        assert_eq!(nice_step(13.0), 20);
        assert_eq!(nice_step(4_100.0), 5_000);
        assert_eq!(nice_step(50_000.0), 50_000);
        assert_eq!(us(0), "0");
        assert_eq!(us(1_500), "1.5");
        assert_eq!(us(12_345), "12.345");
        assert_eq!(us(20_000), "20");
    }
}
