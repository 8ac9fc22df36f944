//! Ready profiler hooks for [Tracy](https://github.com/wolfpld/tracy)
//! (feature `tracy`), on the `tracy-client` crate: what a Tracy user sees
//! is in `docs/profiling.md`.
//!
//! Zones are Tracy's per-thread, strictly nested regions; a zone is opened
//! by a begin hook and closed by the matching end hook, which the core
//! calls on the same thread (see [`ProfilerHooks`]). Open zones live on a
//! per-thread stack (`ZONES`); an end closes its zone and, should anything
//! have been left open above it, those first, so Tracy's nesting is never
//! broken.

use super::event::JobId;
use super::ProfilerHooks;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use tracy_client::{plot_name, span_location, Client, Span};

/// What a zone on a thread's stack stands for (closed by the end with the
/// same kind and id).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Job,
    Wait,
    Sleep,
}

thread_local! {
    /// This thread's open zones, innermost last.
    static ZONES: RefCell<Vec<(Kind, u64, Span)>> = const { RefCell::new(Vec::new()) };
}

/// Open a zone (`span` starts it). False if this thread's `ZONES` is
/// gone: a hook may run in a thread-local destructor; the zone is then
/// not shown.
fn open(kind: Kind, id: u64, span: impl FnOnce() -> Span) -> bool {
    ZONES
        .try_with(|z| z.borrow_mut().push((kind, id, span())))
        .is_ok()
}

/// Close the innermost open zone of `kind` and `id` (and any left open
/// above it, innermost first). Returns whether one was open.
fn close(kind: Kind, id: u64) -> bool {
    ZONES
        .try_with(|z| {
            let mut z = z.borrow_mut();
            let Some(at) = z.iter().rposition(|&(k, i, _)| k == kind && i == id) else {
                return false;
            };
            while z.len() > at {
                // Dropping the span ends its zone; innermost first.
                drop(z.pop());
            }
            true
        })
        .unwrap_or(false)
}

/// [`ProfilerHooks`] for Tracy: install with
/// [`Builder::tracy`](crate::Builder::tracy) or
/// `Builder::profiler(Arc::new(TracyHooks::new()))` (to keep a handle on
/// its counts).
///
/// - every worker's thread is named (`jobsys-worker-<i>`, `i` its thread
///   index: `docs/engine.md`, "Thread index"), and every other
///   thread that has a name when it first uses the system;
/// - a zone per job, named after the job (`JobDesc` name, else the
///   closure's type name; `join` for `join`'s jobs), one per thread for a
///   `parallel_for`'s pieces;
/// - a `jobsys wait` zone around every wait (`complete`, `join`), with the
///   jobs run while waiting inside it, and a `jobsys sleep` zone while a
///   thread blocks;
/// - a frame mark at the end of every `JobSystem::frame` (`frame_end`);
/// - plots: `jobsys active workers`, `jobsys queued jobs` (runnable and
///   not started: see [`Queued`]), `jobsys running jobs` (job zones open
///   over all threads) and `jobsys jobs ready per frame` (jobs that became
///   runnable since the previous frame mark, plotted at each mark) and
///   `jobsys preempted us` (each `preempted` report: microseconds a thread
///   was runnable without a CPU since its previous report);
///
/// Wakes and steals are not shown (Tracy has no arrows between threads; a
/// wake shows as the end of the wakee's sleep zone).
///
/// With no Tracy profiler connected, the client keeps the events in memory
/// until one connects (Tracy's default) and never blocks; the
/// `tracy-client` feature `ondemand` (enable it in your own dependency on
/// `tracy-client`) keeps nothing until a profiler connects.
pub struct TracyHooks {
    client: Client,
    queued: Queued,
    running: AtomicI64,
    ready: AtomicU64,
    counts: [AtomicU64; 4],
}

/// How much a [`TracyHooks`] has sent to Tracy (for tests and checks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TracyCounts {
    /// Zones opened (jobs, waits, sleeps).
    pub zones: u64,
    /// Frame marks.
    pub frame_marks: u64,
    /// Threads named.
    pub threads_named: u64,
    /// Nanoseconds of run-queue wait reported by `preempted`, in all.
    pub preempted_ns: u64,
}

const ZONES_SENT: usize = 0;
const FRAMES_SENT: usize = 1;
const NAMES_SENT: usize = 2;
const PREEMPTED_NS: usize = 3;

impl Default for TracyHooks {
    fn default() -> Self {
        Self::new()
    }
}

impl TracyHooks {
    /// Hooks on the running Tracy client (started here if it is not).
    pub fn new() -> TracyHooks {
        TracyHooks {
            client: Client::start(),
            queued: Queued::default(),
            running: AtomicI64::new(0),
            ready: AtomicU64::new(0),
            counts: Default::default(),
        }
    }

    /// What these hooks have sent to Tracy so far.
    pub fn counts(&self) -> TracyCounts {
        let c = |i: usize| self.counts[i].load(Ordering::Relaxed);
        TracyCounts {
            zones: c(ZONES_SENT),
            frame_marks: c(FRAMES_SENT),
            threads_named: c(NAMES_SENT),
            preempted_ns: c(PREEMPTED_NS),
        }
    }

    /// Jobs that became runnable and have not started (the `jobsys queued
    /// jobs` plot's last value).
    pub fn queued(&self) -> i64 {
        self.queued.count.load(Ordering::Relaxed)
    }

    fn plot_queued(&self, n: i64) {
        self.client.plot(plot_name!("jobsys queued jobs"), n as f64);
    }

    fn sent(&self, what: usize) {
        self.counts[what].fetch_add(1, Ordering::Relaxed);
    }

    fn plot_running(&self, delta: i64) {
        let n = self.running.fetch_add(delta, Ordering::Relaxed) + delta;
        self.client
            .plot(plot_name!("jobsys running jobs"), n as f64);
    }
}

impl ProfilerHooks for TracyHooks {
    fn thread_start(&self, _thread: u32, name: &str) {
        // `set_thread_name` panics on an interior NUL; a hook must not.
        if !name.is_empty() && !name.contains('\0') {
            self.client.set_thread_name(name);
            self.sent(NAMES_SENT);
        }
    }

    fn job_ready(&self, _thread: u32, job: JobId) {
        self.ready.fetch_add(1, Ordering::Relaxed);
        let n = self.queued.ready(job.0);
        self.plot_queued(n);
    }

    fn job_begin(&self, _thread: u32, job: JobId, name: &'static str) {
        if let Some(n) = self.queued.begun(job.0) {
            self.plot_queued(n);
        }
        let name = if name.is_empty() { "job" } else { name };
        let client = self.client.clone();
        if open(Kind::Job, job.0, || {
            client.span_alloc(Some(name), "jobsys job", file!(), line!(), 0)
        }) {
            self.sent(ZONES_SENT);
            self.plot_running(1);
        }
    }

    fn job_end(&self, _thread: u32, job: JobId, _name: &'static str) {
        if close(Kind::Job, job.0) {
            self.plot_running(-1);
        }
    }

    fn wait_begin(&self, _thread: u32, job: JobId) {
        let client = self.client.clone();
        if open(Kind::Wait, job.0, || {
            client.span(span_location!("jobsys wait"), 0)
        }) {
            self.sent(ZONES_SENT);
        }
    }

    fn wait_end(&self, _thread: u32, job: JobId) {
        close(Kind::Wait, job.0);
    }

    fn sleep_begin(&self, _thread: u32) {
        let client = self.client.clone();
        if open(Kind::Sleep, 0, || {
            client.span(span_location!("jobsys sleep"), 0)
        }) {
            self.sent(ZONES_SENT);
        }
    }

    fn sleep_end(&self, _thread: u32) {
        close(Kind::Sleep, 0);
    }

    fn frame_end(&self, _thread: u32, _frame: u64) {
        self.client.frame_mark();
        self.sent(FRAMES_SENT);
        let ready = self.ready.swap(0, Ordering::Relaxed);
        self.client
            .plot(plot_name!("jobsys jobs ready per frame"), ready as f64);
    }

    fn preempted(&self, _thread: u32, wait_ns: u64) {
        self.counts[PREEMPTED_NS].fetch_add(wait_ns, Ordering::Relaxed);
        self.client
            .plot(plot_name!("jobsys preempted us"), wait_ns as f64 / 1000.0);
    }

    fn active_workers(&self, _thread: u32, count: u32) {
        self.client
            .plot(plot_name!("jobsys active workers"), f64::from(count));
    }
}

/// The jobs behind the `jobsys queued jobs` plot: made runnable (a ready
/// hook) and not begun yet. A `parallel_for` is ready once and begins on
/// several threads: its first begin removes it. A job cancelled after it
/// became runnable, or skipped because a dependency failed, never begins: an entry older than `MAX_AGE` readies is
/// dropped by the sweep every `SWEEP` readies, which bounds the map (and
/// the plot's error) in a program that cancels runnable jobs for ever.
/// Sharded by job id so that workers rarely meet on one lock.
#[derive(Default)]
struct Queued {
    shards: [Mutex<HashMap<u64, u64>>; SHARDS],
    count: AtomicI64,
    readies: AtomicU64,
}

const SHARDS: usize = 16;
const SWEEP: u64 = 4096;
const MAX_AGE: u64 = 65536;

impl Queued {
    fn shard(&self, id: u64) -> std::sync::MutexGuard<'_, HashMap<u64, u64>> {
        // Job ids are hashes already: their low bits spread.
        self.shards[id as usize % SHARDS]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// `id` became runnable; the new count.
    fn ready(&self, id: u64) -> i64 {
        let n = self.readies.fetch_add(1, Ordering::Relaxed);
        let fresh = self.shard(id).insert(id, n).is_none();
        if n % SWEEP == SWEEP - 1 {
            self.sweep(n);
        }
        if fresh {
            self.count.fetch_add(1, Ordering::Relaxed) + 1
        } else {
            self.count.load(Ordering::Relaxed)
        }
    }

    /// `id` began on some thread: the new count if it was queued.
    fn begun(&self, id: u64) -> Option<i64> {
        self.shard(id).remove(&id)?;
        Some(self.count.fetch_sub(1, Ordering::Relaxed) - 1)
    }

    /// Drop entries made runnable more than `MAX_AGE` readies before `now`.
    fn sweep(&self, now: u64) {
        for i in 0..SHARDS {
            let mut shard = self.shards[i].lock().unwrap_or_else(|e| e.into_inner());
            let before = shard.len();
            shard.retain(|_, &mut at| at + MAX_AGE > now);
            let dropped = (before - shard.len()) as i64;
            if dropped != 0 {
                self.count.fetch_sub(dropped, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Queued, TracyHooks, MAX_AGE, SWEEP};
    use crate::trace::ProfilerHooks;

    #[test]
    fn preempted_reports_add_up_in_the_counts() {
        let hooks = TracyHooks::new();
        let before = hooks.counts().preempted_ns;
        hooks.preempted(1, 5_000);
        hooks.preempted(2, 250);
        assert_eq!(hooks.counts().preempted_ns - before, 5_250);
    }

    #[test]
    fn queued_counts_ready_until_the_first_begin() {
        let q = Queued::default();
        assert_eq!(q.ready(1), 1);
        assert_eq!(q.ready(2), 2);
        assert_eq!(q.begun(1), Some(1));
        // A second begin of the same job (another piece of a loop).
        assert_eq!(q.begun(1), None);
        assert_eq!(q.begun(2), Some(0));
    }

    #[test]
    fn a_job_that_never_begins_is_dropped_after_max_age_readies() {
        let q = Queued::default();
        q.ready(u64::MAX); // cancelled: never begins
        for id in 0..MAX_AGE + SWEEP {
            q.ready(id);
            assert_eq!(
                q.begun(id),
                Some(q.count.load(std::sync::atomic::Ordering::Relaxed))
            );
        }
        assert_eq!(q.count.load(std::sync::atomic::Ordering::Relaxed), 0);
        assert!(q.shards.iter().all(|s| s.lock().unwrap().is_empty()));
    }
}
