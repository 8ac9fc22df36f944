//! The public face of the tracer on [`JobSystem`]: start/stop a capture
//! (feature `trace`) and frame markers (always there, so code that marks
//! frames builds without the tracer; no-ops then). Job names come from
//! `JobDesc` (`job().name(..)`, `job().desc(..)`).

#[cfg(feature = "trace")]
use super::event::{CAPTURE_START, FRAME_BEGIN, FRAME_END};
#[cfg(feature = "trace")]
use super::recorder::{Trace, TraceConfig};
#[cfg(feature = "trace")]
use super::TraceHost;
use crate::JobSystem;
#[cfg(feature = "trace")]
use crate::{BuildError, Builder};
#[cfg(feature = "trace")]
use std::sync::atomic::Ordering;

#[cfg(feature = "trace")]
impl JobSystem {
    /// Start recording what every thread of this system does (with the
    /// default [`TraceConfig`]). Returns false, and changes nothing, if a
    /// capture is already running.
    ///
    /// ```
    /// let js = jobsys::JobSystem::builder().workers(1).build().unwrap();
    /// js.trace_start();
    /// {
    ///     let _frame = js.frame();
    ///     let h = js.job().name("physics").schedule(|| {});
    ///     js.complete(h);
    /// }
    /// let trace = js.trace_stop();
    /// assert_eq!(trace.threads.len(), 2); // the worker and this thread
    /// let mut file = Vec::new();
    /// trace.write_raw(&mut file).unwrap(); // for `jobsys-trace summary|export|…`
    /// ```
    pub fn trace_start(&self) -> bool {
        self.trace_start_with(TraceConfig::default())
    }

    /// [`trace_start`](Self::trace_start) with an explicit configuration.
    pub fn trace_start_with(&self, config: TraceConfig) -> bool {
        let reg = self.reg();
        // Claim the caller's context first, so its buffer exists and the
        // starting thread gets a track.
        let ctx = reg.current_for(|| "JobSystem::trace_start");
        let st = reg.trace_state();
        if !st.start(config.events_per_thread) {
            return false;
        }
        st.record(ctx.index, CAPTURE_START, 0, "");
        true
    }

    /// Stop recording and collect every thread's events. Without a running
    /// capture, an empty [`Trace`].
    ///
    /// Threads that were inside a recording call when the capture stopped
    /// may append one more event; it is not part of the result (see the
    /// buffer protocol in `src/trace/README.md`).
    pub fn trace_stop(&self) -> Trace {
        let reg = self.reg();
        super::hooks::forbid(reg, "JobSystem::trace_stop");
        match reg.trace_state().stop() {
            Some(c) => Trace::from_collected(c, reg.num_workers(), &|i| reg.thread_number_at(i)),
            None => Trace::default(),
        }
    }

    /// Is a capture running?
    pub fn is_tracing(&self) -> bool {
        super::recorder::active() && self.reg().trace_state().is_recording()
    }
}

impl JobSystem {
    /// Mark the beginning of a frame (shown in the trace; `--frames` in
    /// `jobsys-trace compare` compares captures per frame; passed to
    /// [`ProfilerHooks::frame_begin`](crate::ProfilerHooks::frame_begin)).
    /// Costs one relaxed load when not tracing and no system has hooks.
    /// Prefer [`frame`](Self::frame).
    pub fn frame_begin(&self) {
        self.frame_begin_numbered();
    }

    #[cfg(not(feature = "trace"))]
    fn frame_begin_numbered(&self) -> Option<u64> {
        None
    }

    #[cfg(feature = "trace")]
    fn frame_begin_numbered(&self) -> Option<u64> {
        if !super::recorder::active() {
            return None;
        }
        let reg = self.reg();
        let st = reg.trace_state();
        if !st.is_recording() && st.hooks().is_none() {
            return None;
        }
        let n = st.frame.fetch_add(1, Ordering::Relaxed);
        super::record(
            reg.site(reg.current_for(|| "JobSystem::frame_begin")),
            FRAME_BEGIN,
            n,
            "",
        );
        Some(n)
    }

    /// Mark the end of the frame begun last.
    pub fn frame_end(&self) {
        #[cfg(feature = "trace")]
        if super::recorder::active() {
            if let Some(n) = self
                .reg()
                .trace_state()
                .frame
                .load(Ordering::Relaxed)
                .checked_sub(1)
            {
                self.frame_end_numbered(n);
            }
        }
    }

    #[cfg(not(feature = "trace"))]
    fn frame_end_numbered(&self, _n: u64) {}

    #[cfg(feature = "trace")]
    fn frame_end_numbered(&self, n: u64) {
        if !super::recorder::active() {
            return;
        }
        let reg = self.reg();
        super::record(
            reg.site(reg.current_for(|| "JobSystem::frame_end")),
            FRAME_END,
            n,
            "",
        );
    }

    /// A frame that ends when the guard drops.
    pub fn frame(&self) -> FrameGuard<'_> {
        FrameGuard {
            js: self,
            frame: self.frame_begin_numbered(),
        }
    }
}

/// Ends a frame when dropped (see [`JobSystem::frame`]).
#[must_use = "the frame ends when the guard is dropped"]
pub struct FrameGuard<'a> {
    js: &'a JobSystem,
    frame: Option<u64>,
}

impl Drop for FrameGuard<'_> {
    fn drop(&mut self) {
        if let Some(n) = self.frame {
            self.js.frame_end_numbered(n);
        }
    }
}

#[cfg(feature = "trace")]
impl Builder {
    /// Build, and start a capture at once (workers may run before the
    /// capture starts; nothing is scheduled yet then).
    pub fn build_traced(self, config: TraceConfig) -> Result<JobSystem, BuildError> {
        let js = self.build()?;
        js.trace_start_with(config);
        Ok(js)
    }
}
