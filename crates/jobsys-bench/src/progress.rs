//! Progress bars on stderr (indicatif) and the stdout printing that must
//! not tear them.
//!
//! Bars are shown only when stdout is a terminal; otherwise the command
//! prints nothing but its tables (and errors).

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Progress display for one command invocation.
pub struct Progress {
    multi: Option<MultiProgress>,
    overall: Option<ProgressBar>,
}

/// A bar for one workload (does nothing when progress is off).
pub struct Bar(Option<ProgressBar>);

impl Progress {
    /// `enabled`: draw bars; `workloads`: how many workloads this run has
    /// (an overall bar is added when more than one).
    pub fn new(enabled: bool, workloads: u64) -> Progress {
        if !enabled {
            return Progress {
                multi: None,
                overall: None,
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
        }
    }

    /// Off: no bars, no notes.
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
            return Bar(None);
        };
        if let Some(o) = &self.overall {
            o.set_message(name.to_string());
        }
        let b = multi.add(ProgressBar::new(len));
        b.set_style(
            ProgressStyle::with_template(
                "{prefix:>14} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b.set_prefix(name.to_string());
        b.enable_steady_tick(std::time::Duration::from_millis(200));
        Bar(Some(b))
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
        if let Some(b) = &self.0 {
            b.inc(1);
        }
    }
    /// What is running now.
    pub fn message(&self, msg: String) {
        if let Some(b) = &self.0 {
            b.set_message(msg);
        }
    }
    /// Remove the bar.
    pub fn finish(self) {
        if let Some(b) = self.0 {
            b.finish_and_clear();
        }
    }
}
