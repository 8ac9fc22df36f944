//! Progress bars on stderr (indicatif) and the stdout printing that must
//! not tear them.
//!
//! Bars are shown only when stdout is a terminal; otherwise each finished
//! step of a workload is one line on stderr (what ran, how long the
//! workload has taken so far), and stdout carries only the tables.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::sync::{Arc, Mutex};

/// Progress display for one command invocation.
pub struct Progress {
    multi: Option<MultiProgress>,
    overall: Option<ProgressBar>,
    /// No terminal: one stderr line per finished step instead of bars.
    lines: bool,
}

/// A bar for one workload: drawn, one line per step, or nothing.
pub struct Bar {
    bar: Option<ProgressBar>,
    lines: Option<Lines>,
    plan: Option<PlannedEta>,
}

/// A bar's ETA from planned work: each step's planned seconds, rescaled by
/// how long the finished steps took against their plan.
struct PlannedEta {
    steps: Vec<f64>,
    start: std::time::Instant,
    done: std::cell::Cell<usize>,
    /// Predicted end, seconds after `start` (read by the drawing thread).
    end: Arc<Mutex<f64>>,
}

/// Seconds from the start at which a run of `steps` (planned seconds
/// each) should end, when the first `done` took `elapsed` seconds: the
/// plan until a step has finished, then the rest of the plan scaled by
/// elapsed / planned-so-far (a cumulative ratio, so it moves little from
/// step to step).
pub fn planned_end(steps: &[f64], done: usize, elapsed: f64) -> f64 {
    let total: f64 = steps.iter().sum();
    let so_far: f64 = steps.iter().take(done).sum();
    if done == 0 || so_far <= 0.0 {
        return elapsed.max(0.0) + total;
    }
    elapsed + (total - so_far).max(0.0) * elapsed / so_far
}

/// The line mode's state: the workload's name and start, the current step.
struct Lines {
    name: String,
    start: std::time::Instant,
    len: u64,
    done: std::cell::Cell<u64>,
    msg: std::cell::RefCell<String>,
}

impl Progress {
    /// `enabled`: draw bars; `workloads`: how many workloads this run has
    /// (an overall bar is added when more than one).
    pub fn new(enabled: bool, workloads: u64) -> Progress {
        if !enabled {
            return Progress {
                multi: None,
                overall: None,
                lines: workloads > 0,
            };
        }
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
        let overall = (workloads > 1).then(|| {
            let b = multi.add(ProgressBar::new(workloads));
            b.set_style(
                ProgressStyle::with_template(
                    "{prefix:>14} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b.set_prefix("all");
            b
        });
        Progress {
            multi: Some(multi),
            overall,
            lines: false,
        }
    }

    /// Off: no bars, no lines, no notes.
    pub fn off() -> Progress {
        Progress::new(false, 0)
    }

    /// Whether bars and notes are shown.
    pub fn enabled(&self) -> bool {
        self.multi.is_some()
    }

    /// Start a bar for workload `name` with `len` steps.
    pub fn bar(&self, name: &str, len: u64) -> Bar {
        let Some(multi) = &self.multi else {
            return Bar {
                bar: None,
                lines: self.lines.then(|| Lines {
                    name: name.to_string(),
                    start: std::time::Instant::now(),
                    len,
                    done: std::cell::Cell::new(0),
                    msg: std::cell::RefCell::new(String::new()),
                }),
                plan: None,
            };
        };
        if let Some(o) = &self.overall {
            o.set_message(name.to_string());
        }
        let b = multi.add(ProgressBar::new(len));
        b.set_style(
            ProgressStyle::with_template(
                "{prefix:>14} [{elapsed_precise}] {wide_bar} {pos}/{len} eta {eta} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b.set_prefix(name.to_string());
        b.enable_steady_tick(std::time::Duration::from_millis(200));
        Bar {
            bar: Some(b),
            lines: None,
            plan: None,
        }
    }

    /// A bar for workload `name` with one step per entry of `planned` (its
    /// planned seconds); the ETA is [`planned_end`] minus the time so far,
    /// not indicatif's per-tick rate.
    pub fn bar_planned(&self, name: &str, planned: Vec<f64>) -> Bar {
        let mut bar = self.bar(name, planned.len() as u64);
        let end = Arc::new(Mutex::new(planned_end(&planned, 0, 0.0)));
        if let Some(b) = &bar.bar {
            let e = end.clone();
            b.set_style(
                ProgressStyle::with_template(
                    "{prefix:>14} [{elapsed_precise}] {wide_bar} {pos}/{len} eta {planned_eta} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .with_key(
                    "planned_eta",
                    move |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let end = e.lock().map(|g| *g).unwrap_or(0.0);
                        let left = (end - s.elapsed().as_secs_f64()).max(0.0);
                        let _ = write!(w, "~{left:.0}s");
                    },
                ),
            );
        }
        bar.plan = Some(PlannedEta {
            steps: planned,
            start: std::time::Instant::now(),
            done: std::cell::Cell::new(0),
            end,
        });
        bar
    }

    /// One workload of `all` finished.
    pub fn workload_done(&self) {
        if let Some(o) = &self.overall {
            o.inc(1);
        }
    }

    /// Finish the overall bar.
    pub fn finish(&self) {
        if let Some(o) = &self.overall {
            o.finish_and_clear();
        }
    }

    /// Print `text` to stdout without tearing the bars.
    pub fn print(&self, text: &str) {
        match &self.multi {
            Some(m) => m.suspend(|| println!("{text}")),
            None => println!("{text}"),
        }
    }

    /// A diagnostic line on stderr, only when bars are shown.
    pub fn note(&self, text: &str) {
        if let Some(m) = &self.multi {
            let _ = m.println(text);
        }
    }
}

impl Bar {
    /// One step done.
    pub fn inc(&self) {
        let mut eta = String::new();
        if let Some(p) = &self.plan {
            let done = p.done.get() + 1;
            p.done.set(done);
            let elapsed = p.start.elapsed().as_secs_f64();
            let end = planned_end(&p.steps, done, elapsed);
            if let Ok(mut g) = p.end.lock() {
                *g = end;
            }
            eta = format!(", about {:.0} s left", (end - elapsed).max(0.0));
        }
        if let Some(b) = &self.bar {
            b.inc(1);
        }
        if let Some(l) = &self.lines {
            let done = l.done.get() + 1;
            l.done.set(done);
            eprintln!(
                "{}: {}/{} {} done ({:.0} s{eta})",
                l.name,
                done,
                l.len,
                l.msg.borrow(),
                l.start.elapsed().as_secs_f64()
            );
        }
    }
    /// What is running now.
    pub fn message(&self, msg: String) {
        if let Some(b) = &self.bar {
            b.set_message(msg.clone());
        }
        if let Some(l) = &self.lines {
            *l.msg.borrow_mut() = msg;
        }
    }
    /// Remove the bar.
    pub fn finish(self) {
        if let Some(b) = self.bar {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::planned_end;

    #[test]
    fn planned_end_follows_the_plan_then_rescales_it() {
        // Before any step: the plan's total.
        assert_eq!(planned_end(&[1.0, 10.0, 1.0, 10.0], 0, 0.0), 22.0);
        // The first (cheap) step took twice its plan: the rest is doubled,
        // weighted by each step's planned cost, not by step count.
        assert_eq!(
            planned_end(&[1.0, 10.0, 1.0, 10.0], 1, 2.0),
            2.0 + 21.0 * 2.0
        );
        // On plan after two steps: the end stays where the plan put it.
        assert_eq!(planned_end(&[1.0, 10.0, 1.0, 10.0], 2, 11.0), 22.0);
        // All done: the end is now.
        assert_eq!(planned_end(&[1.0, 10.0], 2, 13.0), 13.0);
    }
}
