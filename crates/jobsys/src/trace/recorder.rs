//! Recording: the per-registry [`TraceState`] (on/off, capture number,
//! one [`ThreadBuffer`] per context), starting and stopping a capture, and
//! the [`Trace`] a capture gives.
//!
//! Invariants:
//! - `ACTIVE` (process-wide) is true while any job system records or has
//!   profiler hooks installed (`LISTENING` counts both); it is the only
//!   thing an event site reads when nothing listens (one relaxed load).
//! - A registry's hooks are installed before its threads run and counted
//!   in `LISTENING` until its `TraceState` drops.
//! - A registry's `enabled` is true between its `start` and `stop`; `epoch`
//!   is the number of the current (or last) capture, starting at 1, stored
//!   before `enabled` (Release) so a thread that sees `enabled` (Acquire)
//!   sees the epoch.
//! - `start`/`stop` hold `control`; collection happens under it, so a new
//!   capture's buffer resets never overlap the previous capture's reads.
//! - Buffer `i` belongs to context `i` (`Context::index`) and is written
//!   only by the thread that holds that context.

use super::buffer::{Snapshot, ThreadBuffer};
use super::clock;
use super::event::{Event, RawEvent, Record};
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// True while any job system in the process records or has hooks.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Running captures plus installed hook sets, over all job systems
/// (guards `ACTIVE`).
static LISTENING: Mutex<usize> = Mutex::new(0);

/// The event-site check: one relaxed load.
#[inline(always)]
pub(crate) fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// One more (`delta` 1) or one fewer (-1) capture or hook set.
fn set_listening(delta: isize) {
    let mut n = LISTENING.lock().unwrap_or_else(|e| e.into_inner());
    *n = n
        .checked_add_signed(delta)
        .expect("listening count underflow");
    ACTIVE.store(*n > 0, Ordering::Relaxed);
}

/// How a capture records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceConfig {
    /// Events each thread's buffer holds (32 bytes each, allocated once per
    /// thread when it records its first event of the capture). A full
    /// buffer drops further events and counts them; the `jobsys-trace`
    /// summary warns.
    pub events_per_thread: usize,
}

impl Default for TraceConfig {
    /// 262,144 events (8 MiB) per thread: a few seconds of a busy frame
    /// loop.
    fn default() -> Self {
        TraceConfig {
            events_per_thread: 1 << 18,
        }
    }
}

/// Tracer state of one job system.
pub(crate) struct TraceState {
    enabled: AtomicBool,
    epoch: AtomicU32,
    capacity: AtomicUsize,
    /// Next frame number (`frame_begin`), per job system.
    pub(crate) frame: AtomicU64,
    contexts: usize,
    buffers: OnceLock<Box<[CachePadded<ThreadBuffer>]>>,
    control: Mutex<Control>,
    /// The system's profiler hooks (`Builder::profiler`), if any.
    hooks: OnceLock<Arc<dyn super::ProfilerHooks>>,
}

struct Control {
    running: bool,
    start_ns: u64,
}

/// The raw result of one capture, before `Trace` adds thread identities.
pub(crate) struct Collected {
    pub start_ns: u64,
    pub end_ns: u64,
    /// Per context index, what its buffer held (`None`: nothing recorded).
    pub buffers: Vec<Option<Snapshot>>,
}

impl TraceState {
    /// State for a registry with `contexts` contexts at most (workers plus
    /// external threads). Allocates nothing until the first capture.
    pub(crate) fn new(contexts: usize) -> TraceState {
        TraceState {
            enabled: AtomicBool::new(false),
            epoch: AtomicU32::new(0),
            capacity: AtomicUsize::new(0),
            frame: AtomicU64::new(0),
            contexts,
            buffers: OnceLock::new(),
            control: Mutex::new(Control {
                running: false,
                start_ns: 0,
            }),
            hooks: OnceLock::new(),
        }
    }

    /// Install the system's profiler hooks (once, before its threads run)
    /// and count them in `LISTENING`, so every event site takes the
    /// recording path from now on.
    pub(crate) fn install_hooks(&self, hooks: Arc<dyn super::ProfilerHooks>) {
        if self.hooks.set(hooks).is_ok() {
            set_listening(1);
        }
    }

    /// The system's profiler hooks, if any.
    #[inline]
    pub(crate) fn hooks(&self) -> Option<&dyn super::ProfilerHooks> {
        self.hooks.get().map(|h| &**h)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Control> {
        self.control.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn is_recording(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Does this system record or have hooks (is an event of it wanted)?
    #[inline]
    pub(crate) fn listening(&self) -> bool {
        self.is_recording() || self.hooks.get().is_some()
    }

    /// Record an event on the buffer of context `index`.
    ///
    /// Must be called only by the thread that holds context `index` (the
    /// hooks pass `ctx.index` of the calling thread's own context).
    #[inline]
    pub(crate) fn record(&self, index: u32, kind: u8, id: u64, name: &'static str) {
        self.record_at(index, clock::now_ns(), kind, id, name);
    }

    /// The capture this state is in, for the run-queue sampler
    /// (`sched::sample`): its address and its epoch.
    pub(crate) fn sample_key(&self) -> (usize, u32) {
        (
            self as *const TraceState as usize,
            self.epoch.load(Ordering::Relaxed),
        )
    }

    /// `record`, stamped `ts` (the tracer clock, read by the caller).
    #[inline]
    pub(crate) fn record_at(&self, index: u32, ts: u64, kind: u8, id: u64, name: &'static str) {
        // Acquire: pairs with the Release store in `start`, so the epoch
        // and capacity loaded next are this capture's.
        if !self.enabled.load(Ordering::Acquire) {
            return;
        }
        let epoch = self.epoch.load(Ordering::Acquire);
        let cap = self.capacity.load(Ordering::Relaxed);
        let Some(b) = self.buffers.get().and_then(|b| b.get(index as usize)) else {
            return;
        };
        let ev = RawEvent::new(ts, kind, id, name);
        // SAFETY: the caller holds context `index` (documented contract of
        // this method), so it is the buffer's only writer; `epoch` was
        // loaded with Acquire after seeing `enabled`.
        unsafe { b.push(epoch, cap, ev) };
    }

    /// Start a capture. False if one is running already (it goes on).
    pub(crate) fn start(&self, events_per_thread: usize) -> bool {
        let mut c = self.lock();
        if c.running {
            return false;
        }
        self.buffers.get_or_init(|| {
            (0..self.contexts)
                .map(|_| CachePadded::new(ThreadBuffer::new()))
                .collect()
        });
        self.capacity.store(events_per_thread, Ordering::Relaxed);
        c.start_ns = clock::now_ns();
        // Release: a recorder that sees the new epoch sees the capacity.
        self.epoch.fetch_add(1, Ordering::Release);
        self.enabled.store(true, Ordering::Release);
        c.running = true;
        set_listening(1);
        true
    }

    /// Stop the capture and copy out every buffer; `None` if none ran.
    pub(crate) fn stop(&self) -> Option<Collected> {
        let mut c = self.lock();
        if !c.running {
            return None;
        }
        self.enabled.store(false, Ordering::SeqCst);
        set_listening(-1);
        let end_ns = clock::now_ns();
        let epoch = self.epoch.load(Ordering::Relaxed);
        let buffers = self
            .buffers
            .get()
            .map(|bufs| {
                bufs.iter()
                    // SAFETY: we hold the control lock and `epoch` is the
                    // current capture: no reset can free a buffer's storage
                    // before we release the lock.
                    .map(|b| unsafe { b.snapshot(epoch) })
                    .collect()
            })
            .unwrap_or_default();
        c.running = false;
        Some(Collected {
            start_ns: c.start_ns,
            end_ns,
            buffers,
        })
    }
}

impl Drop for TraceState {
    fn drop(&mut self) {
        if std::mem::replace(&mut self.lock().running, false) {
            set_listening(-1);
        }
        if self.hooks.get().is_some() {
            set_listening(-1);
        }
    }
}

/// One thread's part of a [`Trace`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadEvents {
    /// The thread's number, as `JobSystem::thread_index` numbers threads:
    /// 0 the thread that built the system, `1..=workers` the workers, then
    /// registered threads; a thread without an index (it only scheduled or
    /// waited) is `UNINDEXED_THREAD_BASE + k` (`docs/engine.md`, "Thread
    /// index"). The number the thread had when the capture stopped.
    pub index: u32,
    /// Display name ("worker 3": thread index 3, or the thread's own name
    /// with its number).
    pub name: String,
    /// A worker thread of the job system (else a thread that scheduled or
    /// waited: the main thread, …).
    pub worker: bool,
    /// Events that did not fit in the buffer (the last ones of the capture).
    pub dropped: u64,
    /// In recording order (monotonic timestamps).
    pub events: Vec<Record>,
}

/// What `JobSystem::trace_stop` returns: every thread's events of one
/// capture, as recorded. Write it to a file with [`Trace::write_raw`]; the
/// `jobsys-trace` crate analyses it (states, arrows, summary, Chrome trace
/// JSON for Perfetto), from the file or in process.
///
/// The fields are public so that tools and tests can build traces
/// themselves; timestamps are on one monotonic clock in nanoseconds, and
/// events outside `[start_ns, end_ns]` are clamped into it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// When the capture started (ns, the tracer's clock).
    pub start_ns: u64,
    /// When it stopped.
    pub end_ns: u64,
    /// By `index`: every worker, and the other threads that recorded.
    pub threads: Vec<ThreadEvents>,
}

impl Trace {
    /// Length of the capture.
    pub fn duration(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.end_ns.saturating_sub(self.start_ns))
    }

    /// Events recorded, over all threads.
    pub fn event_count(&self) -> usize {
        self.threads.iter().map(|t| t.events.len()).sum()
    }

    /// Events dropped because a buffer was full, over all threads.
    pub fn dropped(&self) -> u64 {
        self.threads.iter().map(|t| t.dropped).sum()
    }

    /// Build from a collection whose buffers are per context: contexts
    /// `0..workers` are the workers (all of them get a thread, recorded or
    /// not); `number(i)` is the thread number of context `i`
    /// (`pinned::thread_number_at`), which the threads, and the victims
    /// and wakees in their events, are labelled with.
    pub(crate) fn from_collected(
        c: Collected,
        workers: usize,
        number: &dyn Fn(u32) -> u32,
    ) -> Trace {
        let mut threads = Vec::new();
        for (i, snap) in c.buffers.into_iter().enumerate() {
            let worker = i < workers;
            if snap.is_none() && !worker {
                continue;
            }
            let snap = snap.unwrap_or(Snapshot {
                events: Vec::new(),
                dropped: 0,
                name: None,
            });
            let index = number(i as u32);
            let name = if worker {
                format!("worker {index}")
            } else {
                match snap.name {
                    Some(n) => format!("{n} (thread {index})"),
                    None => format!("thread {index}"),
                }
            };
            let events = snap
                .events
                .iter()
                // Stragglers that appended after `stop` read its clock are
                // outside the capture.
                .filter(|e| e.ts_ns() <= c.end_ns)
                .filter_map(RawEvent::decode)
                .map(|mut r| {
                    // An event site that read the clock (or left it 0: not
                    // recording yet) just before `start` and appended just
                    // after: clamped to the start, as documented on `Trace`.
                    r.ts_ns = r.ts_ns.max(c.start_ns);
                    match &mut r.event {
                        Event::Steal { victim } => *victim = number(*victim),
                        Event::Wake { wakee: Some(w) } => *w = number(*w),
                        _ => {}
                    }
                    r
                })
                .collect();
            threads.push((
                i as u32,
                ThreadEvents {
                    index,
                    name,
                    worker,
                    dropped: snap.dropped,
                    events,
                },
            ));
        }
        threads.sort_by_key(|t| t.1.index);
        // A registered thread that exited during the capture left its
        // index to a later thread: the exited one's track takes a number
        // of its own (`UNINDEXED_THREAD_BASE + context`), so tracks stay
        // unique. (Rare; its victims and wakees elsewhere keep the index.)
        let mut seen = std::collections::HashSet::new();
        for (context, t) in &mut threads {
            if !seen.insert(t.index) {
                t.index = super::UNINDEXED_THREAD_BASE + *context;
            }
        }
        let mut threads: Vec<ThreadEvents> = threads.into_iter().map(|t| t.1).collect();
        threads.sort_by_key(|t| t.index);
        Trace {
            start_ns: c.start_ns,
            end_ns: c.end_ns,
            threads,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::trace::event::FRAME_BEGIN;

    #[test]
    fn start_record_stop() {
        let st = TraceState::new(3);
        st.record(0, FRAME_BEGIN, 1, ""); // not recording: ignored
        assert!(st.stop().is_none());
        assert!(st.start(16));
        assert!(!st.start(16), "a second start keeps the running capture");
        st.record(0, FRAME_BEGIN, 7, "");
        st.record(2, FRAME_BEGIN, 8, "");
        st.record(9, FRAME_BEGIN, 9, ""); // no such context: ignored
        let c = st.stop().unwrap();
        assert!(c.end_ns >= c.start_ns);
        // Contexts 0 and 1 the workers (thread indices 1, 2), context 2 the
        // building thread (index 0).
        let number = |i: u32| if i < 2 { i + 1 } else { 0 };
        let t = Trace::from_collected(c, 2, &number);
        // Workers always; external context 2 because it recorded; by number.
        assert_eq!(t.threads.len(), 3);
        assert_eq!(t.threads[0].index, 0);
        assert!(!t.threads[0].worker);
        assert_eq!(t.threads[0].events[0].event, Event::FrameBegin { frame: 8 });
        assert_eq!((t.threads[1].index, &*t.threads[1].name), (1, "worker 1"));
        assert_eq!(t.threads[1].events[0].event, Event::FrameBegin { frame: 7 });
        assert!(t.threads[2].events.is_empty());
        // The next capture starts empty.
        st.record(0, FRAME_BEGIN, 1, "");
        assert!(st.start(16));
        let t = Trace::from_collected(st.stop().unwrap(), 2, &number);
        assert_eq!(t.event_count(), 0);
    }

    #[test]
    fn an_event_stamped_before_the_start_is_clamped_to_it() {
        // The site read the clock (or left it 0) while not recording, and
        // appended once the capture had started.
        let st = TraceState::new(1);
        assert!(st.start(16));
        st.record_at(0, 0, FRAME_BEGIN, 3, "");
        st.record(0, FRAME_BEGIN, 4, "");
        let c = st.stop().unwrap();
        let start = c.start_ns;
        let t = Trace::from_collected(c, 1, &|i| i + 1);
        let ts: Vec<u64> = t.threads[0].events.iter().map(|r| r.ts_ns).collect();
        assert_eq!(ts.len(), 2);
        assert_eq!(ts[0], start);
        assert!(ts[1] >= start);
    }
}
