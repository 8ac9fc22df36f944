//! The offline half of jobsys's tracer: what a recorded [`Trace`]
//! (`jobsys::trace`, from `JobSystem::trace_stop`) means. The core records
//! and writes captures; this crate analyses them, and the `jobsys-trace`
//! command (`src/main.rs`) wires it up.
//!
//! - [`Capture`] (`timeline.rs`): the analysed capture: per-thread state
//!   timelines, job and wait slices, steals, wake and dependency arrows,
//!   scheduling latency, frames ([`Capture::from_trace`], or
//!   [`TraceExt::analyse`]).
//! - Chrome trace JSON for Perfetto and chrome://tracing, out
//!   ([`Capture::write_chrome_json`], `export.rs`) and back in
//!   ([`Capture::read_chrome_json`], `import.rs`), and a check of such files
//!   against what viewers need ([`validate_chrome_json`], `validate.rs`).
//! - [`read_raw`] (`raw.rs`): the raw capture file the core writes
//!   (`Trace::write_raw`) back into the same `Trace`; [`Capture::read`]
//!   reads either kind of file (`import.rs`).
//! - [`Summary`] (`summary.rs`) and [`compare`] (`compare.rs`): the numbers
//!   of a capture, and two captures side by side; both `Display` as text
//!   and `Serialize` as JSON.
//! - [`render`]: the timeline as an SVG picture.
//! - `json.rs`: the JSON writer and streaming pull parser the files use.
//!
//! ```
//! use jobsys_trace::TraceExt;
//! let js = jobsys::JobSystem::builder().workers(1).build().unwrap();
//! js.trace_start();
//! js.complete(js.job().name("physics").schedule(|| {}));
//! let trace = js.trace_stop();
//! let mut json = Vec::new();
//! trace.write_chrome_json(&mut json).unwrap(); // open in ui.perfetto.dev
//! let summary = trace.summary();
//! assert_eq!(summary.jobs[0].name, "physics");
//! ```
//!
//! `docs/tracing.md` (how to capture, view, render, summarise and compare)
//! is compiled here as a doctest, so its Rust snippet cannot rot.

mod compare;
mod export;
mod import;
mod json;
mod raw;
pub mod render;
mod summary;
#[cfg(test)]
mod tests;
mod timeline;
mod validate;

pub use compare::{compare, CompareOptions, CompareRow, Comparison, FrameTimes, Side};
pub use import::ReadError;
pub use raw::read_raw;
pub use summary::{
    Distribution, JobStats, RapidSwitching, ResourceStats, StateTimes, Summary, ThreadSummary,
    PREEMPTED_MOSTLY, PREEMPTED_WARN_NS, RAPID_MIN_SWITCHES, RAPID_SHORT_NS, RAPID_WINDOW_NS,
};
pub use timeline::{
    attribute_preemption, Access, ActiveWorkersChange, Capture, FrameSpan, JobAccesses, JobSpan,
    Release, StateSpan, Steal, ThreadState, ThreadTimeline, WaitSpan, Wake, IDLE_NOTE,
    WAKE_SLACK_NS,
};
pub use validate::validate_chrome_json;

use jobsys::trace::Trace;

/// The analysis as methods of the core's [`Trace`] (what
/// `JobSystem::trace_stop` returns), for code that has one in hand.
pub trait TraceExt {
    /// The analysed capture (see [`Capture`]).
    fn analyse(&self) -> Capture;

    /// The numbers of the capture: `self.analyse().summary()`.
    fn summary(&self) -> Summary {
        self.analyse().summary()
    }

    /// The capture as Chrome trace event JSON, for Perfetto and
    /// chrome://tracing: `self.analyse().write_chrome_json(w)`.
    fn write_chrome_json<W: std::io::Write>(&self, w: W) -> std::io::Result<()> {
        self.analyse().write_chrome_json(w)
    }
}

impl TraceExt for Trace {
    fn analyse(&self) -> Capture {
        Capture::from_trace(self)
    }
}

/// The Rust code of `docs/tracing.md`, built by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/tracing.md")]
pub struct TracingDoc;
