//! What a node runs, type-erased, and the [`Tick`] that times each call
//! (`clock.rs`).
//!
//! A node's job closure captures one [`Tick`] (an `Arc` of the graph's
//! shared part, the node and the ring entry: 16 bytes), so it fits the
//! slot's inline payload, even a loop's (16 bytes beside the loop's
//! header): scheduling it allocates nothing.

use super::Shared;
use crate::access::{Access, ParAccess};
use crate::handle::JobHandle;
use crate::parallel_for::Batch;
use crate::spawn::JobBuilder;
use std::ops::Range;
use std::sync::Arc;

/// The body of one node: how to schedule it for one run, and the call.
pub(super) trait Body: Send + Sync + 'static {
    /// Schedule this node's job for one run through `job` (name, priority,
    /// pin and dependencies already set).
    fn submit(&self, job: JobBuilder<'_, 'static, '_>, tick: Tick) -> JobHandle;
    /// Run the node (a loop node: the indices `r`; a single node ignores
    /// it).
    fn call(&self, r: Range<usize>);
}

/// A single node: `f()` once per run.
pub(super) struct Single<F>(pub(super) F);

impl<F: Fn() + Send + Sync + 'static> Body for Single<F> {
    fn submit(&self, job: JobBuilder<'_, 'static, '_>, tick: Tick) -> JobHandle {
        job.schedule(move || tick.time(|b| b.call(0..0)))
    }
    fn call(&self, _: Range<usize>) {
        (self.0)()
    }
}

/// A loop node: `f(i)` for each `i` in `range`, per run.
pub(super) struct Loop<F> {
    pub(super) range: Range<usize>,
    pub(super) batch: Batch,
    pub(super) f: F,
}

impl<F: Fn(usize) + Send + Sync + 'static> Body for Loop<F> {
    fn submit(&self, job: JobBuilder<'_, 'static, '_>, tick: Tick) -> JobHandle {
        job.parallel_for_chunked(self.range.clone(), self.batch, move |r| {
            tick.time(|b| b.call(r))
        })
    }
    fn call(&self, r: Range<usize>) {
        r.for_each(&self.f)
    }
}

/// A loop node whose closure takes each piece whole.
pub(super) struct Chunked<F> {
    pub(super) range: Range<usize>,
    pub(super) batch: Batch,
    pub(super) f: F,
}

impl<F: Fn(Range<usize>) + Send + Sync + 'static> Body for Chunked<F> {
    fn submit(&self, job: JobBuilder<'_, 'static, '_>, tick: Tick) -> JobHandle {
        job.parallel_for_chunked(self.range.clone(), self.batch, move |r| {
            tick.time(|b| b.call(r))
        })
    }
    fn call(&self, r: Range<usize>) {
        (self.f)(r)
    }
}

/// A node with declared access: scheduled through `job().access(..)`, so
/// the resources' histories order it against every other job that
/// declares them (inside the graph the build's edges already do), and its
/// closure gets the guards.
pub(super) struct WithAccess<A, F> {
    pub(super) access: A,
    pub(super) f: Arc<F>,
}

impl<A, F> Body for WithAccess<A, F>
where
    A: Access,
    F: for<'x> Fn(A::Guards<'x>) + Send + Sync + 'static,
{
    fn submit(&self, job: JobBuilder<'_, 'static, '_>, tick: Tick) -> JobHandle {
        let f = self.f.clone();
        job.access(self.access.dup())
            .schedule(move |g| tick.time(move |_| f(g)))
    }
    fn call(&self, _: Range<usize>) {
        unreachable!("an access node is called through its own closure")
    }
}

/// A loop node with declared access, per index: its job is
/// `job().access(..).parallel_for(..)`, each index measured.
pub(super) struct AccessLoop<A, F> {
    pub(super) access: A,
    pub(super) range: Range<usize>,
    pub(super) batch: Batch,
    pub(super) f: Arc<F>,
}

impl<A, F> Body for AccessLoop<A, F>
where
    A: ParAccess,
    F: for<'x> Fn(usize, A::Item<'x>) + Send + Sync + 'static,
{
    fn submit(&self, job: JobBuilder<'_, 'static, '_>, tick: Tick) -> JobHandle {
        let f = self.f.clone();
        job.access(self.access.dup()).parallel_for(
            self.range.clone(),
            self.batch,
            move |i, item| tick.time(|_| f(i, item)),
        )
    }
    fn call(&self, _: Range<usize>) {
        unreachable!("an access node is called through its own closure")
    }
}

/// A loop node with declared access, per piece
/// (`job().access(..).parallel_for_chunked(..)`).
pub(super) struct AccessChunks<A, F> {
    pub(super) access: A,
    pub(super) range: Range<usize>,
    pub(super) batch: Batch,
    pub(super) f: Arc<F>,
}

impl<A, F> Body for AccessChunks<A, F>
where
    A: ParAccess,
    F: for<'x> Fn(Range<usize>, A::Chunk<'x>) + Send + Sync + 'static,
{
    fn submit(&self, job: JobBuilder<'_, 'static, '_>, tick: Tick) -> JobHandle {
        let f = self.f.clone();
        job.access(self.access.dup()).parallel_for_chunked(
            self.range.clone(),
            self.batch,
            move |r, chunk| tick.time(|_| f(r, chunk)),
        )
    }
    fn call(&self, _: Range<usize>) {
        unreachable!("an access node is called through its own closure")
    }
}

/// One node of one run, as its job sees it.
pub(super) struct Tick {
    pub(super) shared: Arc<Shared>,
    pub(super) node: u32,
    pub(super) ring: u32,
}

impl Tick {
    /// Run `f` with the node's body, widening the run's measured span of
    /// the node (first start, last end: a loop's pieces run on several
    /// threads; `clock.rs`).
    #[inline]
    fn time(&self, f: impl FnOnce(&dyn Body)) {
        let s = &*self.shared;
        let body = &*s.bodies[self.node as usize];
        s.ring[self.ring as usize][self.node as usize].time(|| f(body));
    }
}
