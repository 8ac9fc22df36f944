//! Progress bars on stderr (indicatif) and the stdout printing that must
//! not tear them.
//!
//! Bars are shown only when stdout is a terminal; otherwise each finished
//! step of a workload is one line on stderr (what ran, how long the
//! workload has taken so far), and stdout carries only the tables.

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

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
        }
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
        if let Some(b) = &self.bar {
            b.inc(1);
        }
        if let Some(l) = &self.lines {
            let done = l.done.get() + 1;
            l.done.set(done);
            eprintln!(
                "{}: {}/{} {} done ({:.0} s)",
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
