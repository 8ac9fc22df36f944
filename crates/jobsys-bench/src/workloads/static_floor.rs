//! The static-split floor rows of W2 (`parallel-for`) and W3
//! (`frame-graph`): the workload's whole work, with no job system at all,
//! split up front into equal contiguous shares over a fixed set of threads
//! ([`crate::static_split`]: persistent helpers plus the calling thread,
//! started together each frame, finished on a counter).
//!
//! - W3: the frame's pieces (every piece of every job, each spinning D and
//!   counted, as in the other rows), in schedule order, dependencies and
//!   sync points ignored: no order any executor must keep, so no executor
//!   of that frame on those threads can be faster, whatever it does.
//! - W2: the loop's indices, each with the same per-element [`kernel`].
//!
//! Two rows per worker count `w` on a machine of `cores` CPUs:
//! `floor-static` over `min(w + 1, cores)` threads (the cores the jobsys
//! row may use), and, when `w + 1 > cores`, `floor-static-oversub` over
//! `w + 1` threads (as many threads as the jobsys row has). Its time is
//! what this machine gives those threads for that work in that run,
//! preemptions by other load included.

use super::frame::Frame;
use super::w2_kernel::kernel_slice;
use crate::count;
use crate::error::{check, Result};
use crate::json::{Label, Row};
use crate::runner::Contestant;
use crate::static_split::{share, StaticSplit};
use std::hint::black_box;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// `impl` of the floor over the cores the jobsys row may use.
pub const CORES: &str = "floor-static";
/// `impl` of the floor over as many threads as the jobsys row has.
pub const OVERSUB: &str = "floor-static-oversub";

/// The floor rows of worker count `w` on `cores` CPUs: `(impl, threads)`.
pub fn configs(w: usize, cores: usize) -> Vec<(&'static str, usize)> {
    let mut v = vec![(CORES, (w + 1).min(cores.max(1)))];
    if w + 1 > cores {
        v.push((OVERSUB, w + 1));
    }
    v
}

/// The label of a floor row.
pub fn label(imp: &str, workers: usize, threads: usize) -> Label {
    Label {
        imp: imp.into(),
        policy: None,
        workers: Some(workers),
        threads: Some(threads),
    }
}

/// Table cell `xfloor`: the row's median over the `floor-static` row's of
/// its case and worker count ("-" for the references themselves).
pub fn xfloor(r: &Row, all: &[Row]) -> String {
    if r.n == 0 || r.imp == "serial" || r.imp.starts_with(CORES) {
        return "-".into();
    }
    match all
        .iter()
        .find(|f| f.imp == CORES && f.case == r.case && f.workers == r.workers)
    {
        Some(f) if f.median > 0.0 => format!("{:.2}x", r.median / f.median),
        _ => "-".into(),
    }
}

// ---- W3 ---------------------------------------------------------------------

/// W3's frame as a static split: every piece, no dependencies.
pub struct FrameFloor {
    split: StaticSplit,
    pieces: u64,
}

impl FrameFloor {
    /// Start `threads - 1` helpers for the pieces of `frame`.
    pub fn start(frame: &'static Frame, threads: usize) -> Result<FrameFloor> {
        // The job of every piece, in schedule order.
        let jobs: Arc<[u32]> = (0..frame.graph.nodes.len())
            .flat_map(|i| (0..frame.graph.pieces(i)).map(move |_| i as u32))
            .collect();
        let pieces = jobs.len() as u64;
        let split = StaticSplit::start(CORES, threads, move |k, n| {
            for p in share(k, n, jobs.len()) {
                frame.piece::<false>(jobs[p]);
            }
        })?;
        Ok(FrameFloor { split, pieces })
    }

    /// Pieces per frame.
    pub fn pieces(&self) -> u64 {
        self.pieces
    }

    /// One frame, in ms; an error unless exactly the frame's pieces ran.
    pub fn frame(&self) -> Result<f64> {
        let before = count::total();
        let t = Instant::now();
        self.split.run()?;
        let ms = t.elapsed().as_nanos() as f64 / 1e6;
        let ran = count::total() - before;
        check(ran == self.pieces, || {
            format!(
                "{CORES} x{}: {ran} pieces ran, expected {}",
                self.split.shares(),
                self.pieces
            )
        })?;
        Ok(ms)
    }
}

/// A W3 contestant for floor `(imp, threads)`: its helpers live as long
/// as it does.
pub fn frame_contestant<'a>(
    (imp, threads): (&str, usize),
    workers: usize,
    frame: &'static Frame,
    (warmup, blocks, per_block): (usize, usize, usize),
) -> Result<Contestant<'a>> {
    let f = FrameFloor::start(frame, threads)?;
    Ok(Contestant::new(
        label(imp, workers, threads),
        warmup.max(1),
        blocks,
        per_block,
        move || f.frame(),
    ))
}

// ---- W2 ---------------------------------------------------------------------

/// The array of a W2 floor and the count of elements its shares ran.
struct LoopState {
    data: NonNull<u32>,
    len: usize,
    units: AtomicUsize,
}

// SAFETY: `data` is an owned allocation (see `Drop`). During a frame each
// share writes only its own `share(k, n, len)` range; between frames only
// the caller touches it, after `StaticSplit::run` has returned (every
// share's writes happen before that return) and before the next `run`
// (which publishes the caller's writes to the helpers).
unsafe impl Send for LoopState {}
// SAFETY: as for Send.
unsafe impl Sync for LoopState {}

impl Drop for LoopState {
    fn drop(&mut self) {
        let all = std::ptr::slice_from_raw_parts_mut(self.data.as_ptr(), self.len);
        // SAFETY: `data`/`len` came from `Box::into_raw` of a `Box<[u32]>`
        // in `LoopFloor::start` and are freed only here, once.
        drop(unsafe { Box::from_raw(all) });
    }
}

/// W2's loop as a static split: the indices, the same kernel.
pub struct LoopFloor {
    split: StaticSplit,
    state: Arc<LoopState>,
}

impl LoopFloor {
    /// Start `threads - 1` helpers for a loop over `len` elements.
    pub fn start(len: usize, threads: usize) -> Result<LoopFloor> {
        let boxed: Box<[u32]> = vec![0; len].into_boxed_slice();
        let data = NonNull::new(Box::into_raw(boxed).cast::<u32>()).expect("Box is non-null");
        let state = Arc::new(LoopState {
            data,
            len,
            units: AtomicUsize::new(0),
        });
        let s = state.clone();
        let split = StaticSplit::start(CORES, threads, move |k, n| {
            let m = black_box(3u32);
            let r = share(k, n, s.len);
            // SAFETY: `r` lies within 0..len and is this share's alone
            // during the frame (see `LoopState`).
            let xs =
                unsafe { std::slice::from_raw_parts_mut(s.data.as_ptr().add(r.start), r.len()) };
            kernel_slice(xs, m);
            s.units.fetch_add(r.len(), Ordering::Relaxed);
        })?;
        Ok(LoopFloor { split, state })
    }

    /// One call: the array set to `init` (untimed), the loop timed (µs),
    /// then checked: equal to `expected`, every element run once.
    pub fn call(&mut self, init: &[u32], expected: &[u32]) -> Result<f64> {
        let s = Arc::clone(&self.state);
        check(init.len() == s.len && expected.len() == s.len, || {
            format!(
                "{CORES}: arrays of {} and {} for a loop of {}",
                init.len(),
                expected.len(),
                s.len
            )
        })?;
        self.with_array(|a| a.copy_from_slice(init));
        s.units.store(0, Ordering::Relaxed);
        let t = Instant::now();
        self.split.run()?;
        let us = t.elapsed().as_nanos() as f64 / 1e3;
        let units = s.units.load(Ordering::Relaxed);
        check(units == s.len, || {
            format!(
                "{CORES} x{}: {units} elements ran, expected {}",
                self.split.shares(),
                s.len
            )
        })?;
        let same = self.with_array(|a| a == expected);
        check(same, || {
            format!(
                "{CORES} x{}: result differs from the serial loop",
                self.split.shares()
            )
        })?;
        Ok(us)
    }

    /// The array, between frames (`&mut self`: no frame is running).
    fn with_array<T>(&mut self, f: impl FnOnce(&mut [u32]) -> T) -> T {
        let s = &*self.state;
        // SAFETY: no frame runs while `&mut self` is held (`run` returned,
        // so every share's writes are done and visible); see `LoopState`.
        f(unsafe { std::slice::from_raw_parts_mut(s.data.as_ptr(), s.len) })
    }
}
