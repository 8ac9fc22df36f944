//! Analysis: a [`Trace`] (raw per-thread events) becomes a [`Capture`]:
//! per-thread state timelines, job and wait slices, steals, wakes (with the
//! moment the wakee woke) and dependency releases (with where the released
//! job started), frames. Export, import, summary and compare all work on a
//! `Capture`, so a capture read back from its JSON summarises the same.
//!
//! Thread states are derived with a small stack machine per thread:
//! - frames: `Job` (pushed by job begin, popped by job end) and `Wait`
//!   (wait begin/end; `parked` between sleep begin and end inside it);
//! - state = top frame: job → working, parked wait → blocked, wait →
//!   waiting; no frame → the top-level state: for a worker searching (after
//!   a job, a wake or search begin), spinning, sleeping; for any other
//!   thread outside (running its own code).
//! - The frames open when the capture started are inferred from ends
//!   without a begin (job end, wait end; a sleep end without a sleep begin
//!   at that level: asleep/parked); the state before a worker's first event
//!   is unknown otherwise, and outside for other threads.
//! - A worker with no events at all is drawn as sleeping for the whole
//!   capture, with [`IDLE_NOTE`]: an awake worker records something every
//!   few tens of microseconds (a spin ends in a park, a search in a job),
//!   so one that recorded nothing was parked — unless it ran one job
//!   longer than the capture, which the note says.
//! - A thread whose buffer overflowed is unknown from its last recorded
//!   event to the end of the capture.
//! - Run-queue samples (`RunQueueWait`, raw format 3: the time a thread
//!   was runnable but not running since its previous sample) become the
//!   preempted state, carved out of the searching and spinning spans of
//!   each sample's interval ([`attribute_preemption`]); the wait that
//!   does not fit there is [`ThreadTimeline::run_queue_other_ns`].
//!
//! Invariants of the result: each thread's `states` are sorted, do not
//! overlap, never hold two adjacent spans of one state, and cover
//! `[0, duration_ns)` exactly; all times are nanoseconds since the capture
//! started.

use jobsys::trace::{AccessMode, Event, JobId, ThreadEvents, Trace};
use std::collections::{BTreeMap, HashMap};

/// What a thread was doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ThreadState {
    /// Running a job.
    Working,
    /// A worker looking for work (own deque, stealing).
    Searching,
    /// A worker that was looking for work (searching or spinning) but was
    /// runnable and not running: waiting for a CPU, preempted by the OS.
    /// Measured per thread from the kernel's run-queue wait (`RunQueueWait`
    /// samples); see [`attribute_preemption`] for where it is drawn.
    Preempted,
    /// A worker spinning before it sleeps.
    Spinning,
    /// A worker asleep on its futex (idle).
    Sleeping,
    /// In `complete`/`join`, helping or spinning, for a job to finish.
    Waiting,
    /// In `complete`/`join`, asleep until the job finishes.
    Blocked,
    /// A non-worker thread outside the job system (its own code).
    Outside,
    /// Not known (before a worker's first event, after a buffer overflowed).
    Unknown,
}

impl ThreadState {
    /// Every state, in display order.
    pub const ALL: [ThreadState; 9] = [
        ThreadState::Working,
        ThreadState::Searching,
        ThreadState::Preempted,
        ThreadState::Spinning,
        ThreadState::Sleeping,
        ThreadState::Waiting,
        ThreadState::Blocked,
        ThreadState::Outside,
        ThreadState::Unknown,
    ];

    /// Lower-case name (also the slice name in the exported JSON).
    pub fn name(self) -> &'static str {
        match self {
            ThreadState::Working => "working",
            ThreadState::Searching => "searching",
            ThreadState::Preempted => "preempted",
            ThreadState::Spinning => "spinning",
            ThreadState::Sleeping => "sleeping",
            ThreadState::Waiting => "waiting",
            ThreadState::Blocked => "blocked",
            ThreadState::Outside => "outside",
            ThreadState::Unknown => "unknown",
        }
    }

    /// The state called `name`.
    pub fn from_name(name: &str) -> Option<ThreadState> {
        ThreadState::ALL.into_iter().find(|s| s.name() == name)
    }

    /// chrome://tracing reserved colour of the state's slices (Perfetto
    /// colours by name, which differs per state too).
    pub(crate) fn cname(self) -> &'static str {
        match self {
            ThreadState::Working => "thread_state_running",
            ThreadState::Searching => "thread_state_runnable",
            ThreadState::Preempted => "yellow",
            ThreadState::Spinning => "thread_state_iowait",
            ThreadState::Sleeping => "thread_state_sleeping",
            ThreadState::Waiting => "bad",
            ThreadState::Blocked => "terrible",
            ThreadState::Outside => "olive",
            ThreadState::Unknown => "thread_state_unknown",
        }
    }
}

/// A thread was in `state` during `[begin_ns, end_ns)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StateSpan {
    pub state: ThreadState,
    pub begin_ns: u64,
    pub end_ns: u64,
}

/// A thread ran a job (or some pieces of a `parallel_for`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobSpan {
    /// Index into [`Capture::names`].
    pub name: u32,
    pub job: JobId,
    pub begin_ns: u64,
    pub end_ns: u64,
    /// From becoming runnable (scheduled, or released by its last
    /// dependency) to this start; only on a job's first span.
    pub latency_ns: Option<u64>,
    /// Begin and end both lie inside the capture (statistics use only
    /// these).
    pub complete: bool,
}

/// A thread waited for a job (`complete`, or a `join` whose half was stolen).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitSpan {
    pub job: JobId,
    pub begin_ns: u64,
    pub end_ns: u64,
    pub complete: bool,
}

/// A thread took work from thread `victim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Steal {
    pub ts_ns: u64,
    pub victim: u32,
}

/// A thread woke thread `wakee`, which woke up at `target_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wake {
    pub ts_ns: u64,
    pub wakee: Option<u32>,
    /// When the wakee's sleep that this wake ended was over, never before
    /// `ts_ns` (`None`: it did not wake inside the capture, the wake landed
    /// on a thread that did not sleep — see [`WAKE_SLACK_NS`] — or the
    /// wakee is unknown).
    pub target_ns: Option<u64>,
}

/// A thread's finishing job released `job` (its last dependency).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Release {
    pub ts_ns: u64,
    pub job: JobId,
    /// (thread index, begin) of the released job's first span, if it
    /// started inside the capture.
    pub started: Option<(u32, u64)>,
}

/// A frame (`frame_begin` … `frame_end`) inside the capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameSpan {
    pub frame: u64,
    pub begin_ns: u64,
    pub end_ns: u64,
}

/// The count of workers allowed to take work changed to `count`
/// (`JobSystem::set_active_workers`, or `Builder::follow_cpus` following
/// the usable CPUs). Only changes are recorded: the count before the first
/// one is not in the capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ActiveWorkersChange {
    pub ts_ns: u64,
    pub count: u32,
}

/// One thread's analysed timeline.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadTimeline {
    pub index: u32,
    pub name: String,
    pub worker: bool,
    pub dropped: u64,
    pub states: Vec<StateSpan>,
    /// Sorted by begin (enclosing spans first).
    pub jobs: Vec<JobSpan>,
    pub waits: Vec<WaitSpan>,
    pub steals: Vec<Steal>,
    pub wakes: Vec<Wake>,
    pub releases: Vec<Release>,
    /// Why the thread's timeline is drawn the way it is, where the events
    /// alone do not say ([`IDLE_NOTE`]: a worker with no events).
    pub note: Option<String>,
    /// Run-queue wait measured on this thread in the capture (the sum of
    /// its `RunQueueWait` samples), `None` when it recorded none.
    pub run_queue_ns: Option<u64>,
    /// The part of `run_queue_ns` not drawn as preempted: it fell in
    /// samples' intervals with too little searching and spinning to hold
    /// it (the thread waited for a CPU while working, waiting, or just
    /// after a wake).
    pub run_queue_other_ns: u64,
    /// The thread recorded `RunQueueUnknown`: run-queue wait cannot be
    /// measured where it ran.
    pub run_queue_unknown: bool,
}

/// The note of a worker that recorded nothing in the capture, drawn as
/// sleeping for all of it.
pub const IDLE_NOTE: &str = "no events in the capture: drawn as sleeping (an idle worker \
    parked throughout; one job running for the whole capture would look the same)";

/// An analysed capture (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Capture {
    pub duration_ns: u64,
    /// Job names; [`JobSpan::name`] indexes this.
    pub names: Vec<String>,
    /// Sorted by thread index.
    pub threads: Vec<ThreadTimeline>,
    /// Complete frames, by frame number.
    pub frames: Vec<FrameSpan>,
    /// Changes of the active worker count, in time order (recorded by
    /// whichever thread made them; a counter track in the export).
    pub active_workers: Vec<ActiveWorkersChange>,
    /// Declared data access (`Accesses`/`Access` events, raw format 2):
    /// what each job declared, by job. Empty for captures without
    /// declared access, and for captures read from Chrome JSON.
    pub accesses: BTreeMap<JobId, JobAccesses>,
    /// Resource labels by resource id: its name, or `#id` if unnamed.
    pub resources: BTreeMap<u64, String>,
}

/// The declared accesses of one job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobAccesses {
    /// When it was scheduled (its accesses were recorded in the
    /// resources' histories), relative to the capture's start.
    pub scheduled_ns: u64,
    /// When its last dependency released it (a `released` event), if it
    /// was released by one inside the capture.
    pub released_ns: Option<u64>,
    /// In the order recorded: by resource address, not the order of the
    /// declaration.
    pub accesses: Vec<Access>,
}

/// One declared access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub resource: u64,
    pub mode: AccessMode,
}

impl Capture {
    /// The label of resource `id` (its name, or `#id`).
    pub fn resource_label(&self, id: u64) -> String {
        self.resources
            .get(&id)
            .cloned()
            .unwrap_or_else(|| format!("#{id}"))
    }

    /// The name of a job span.
    pub fn name_of(&self, span: &JobSpan) -> &str {
        &self.names[span.name as usize]
    }

    /// The thread with index `index`.
    pub fn thread(&self, index: u32) -> Option<&ThreadTimeline> {
        self.threads.iter().find(|t| t.index == index)
    }
}

/// Job names, each stored once.
#[derive(Default)]
pub(crate) struct Interner {
    map: HashMap<String, u32>,
    pub names: Vec<String>,
}

impl Interner {
    pub(crate) fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.map.get(s) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(s.to_owned());
        self.map.insert(s.to_owned(), i);
        i
    }
}

/// Name used for a job without a name (should not happen: the core passes
/// its `JobDesc` name or its closure's type name).
const UNNAMED: &str = "(job)";

enum Frame {
    Job {
        job: JobId,
        name: &'static str,
        begin: u64,
        known: bool,
    },
    Wait {
        job: JobId,
        begin: u64,
        known: bool,
        parked: bool,
    },
}

/// One thread's analysis, plus what the cross-thread passes need.
struct Pass {
    tl: ThreadTimeline,
    /// Per job span: was its begin recorded?
    begin_known: Vec<bool>,
    /// (ts, job, index into `tl.releases` when released by a dependency).
    readies: Vec<(u64, JobId, Option<usize>)>,
    /// Closed sleep intervals, in order.
    sleeps: Vec<(u64, u64)>,
    /// (frame, is begin, ts).
    frame_marks: Vec<(u64, bool, u64)>,
    active_workers: Vec<ActiveWorkersChange>,
    /// (scheduled ts, job, its accesses), from `accesses` groups.
    accesses: Vec<(u64, JobId, Vec<Access>)>,
    /// Resource names seen (id, name; empty if unnamed).
    resource_names: Vec<(u64, &'static str)>,
    /// Run-queue samples (ts, wait), in order.
    run_queue: Vec<(u64, u64)>,
}

fn push_span(states: &mut Vec<StateSpan>, state: ThreadState, begin: u64, end: u64) {
    if end <= begin {
        return;
    }
    if let Some(last) = states.last_mut() {
        if last.state == state && last.end_ns == begin {
            last.end_ns = end;
            return;
        }
    }
    states.push(StateSpan {
        state,
        begin_ns: begin,
        end_ns: end,
    });
}

fn current(stack: &[Frame], top: ThreadState) -> ThreadState {
    match stack.last() {
        Some(Frame::Job { .. }) => ThreadState::Working,
        Some(Frame::Wait { parked: true, .. }) => ThreadState::Blocked,
        Some(Frame::Wait { .. }) => ThreadState::Waiting,
        None => top,
    }
}

fn analyse_thread(t: &ThreadEvents, start: u64, dur: u64, names: &mut Interner) -> Pass {
    let rel = |ts: u64| ts.saturating_sub(start).min(dur);
    let mut events = t.events.clone();
    events.sort_by_key(|r| r.ts_ns);
    let thread_end = if t.dropped > 0 {
        events.last().map_or(0, |r| rel(r.ts_ns))
    } else {
        dur
    };
    let worker = t.worker;
    let mut name_of = |a: &'static str, b: &'static str| -> u32 {
        let n = if a.is_empty() { b } else { a };
        names.intern(if n.is_empty() { UNNAMED } else { n })
    };

    let mut p = Pass {
        tl: ThreadTimeline {
            index: t.index,
            name: t.name.clone(),
            worker,
            dropped: t.dropped,
            ..ThreadTimeline::default()
        },
        begin_known: Vec::new(),
        readies: Vec::new(),
        sleeps: Vec::new(),
        frame_marks: Vec::new(),
        active_workers: Vec::new(),
        accesses: Vec::new(),
        resource_names: Vec::new(),
        run_queue: Vec::new(),
    };
    // An `accesses` event opens a group that its `Access` events join.
    let mut group_open = false;
    let mut stack: Vec<Frame> = Vec::new();
    let mut top = if worker {
        ThreadState::Unknown
    } else {
        ThreadState::Outside
    };
    if worker && events.is_empty() && t.dropped == 0 {
        top = ThreadState::Sleeping;
        p.tl.note = Some(IDLE_NOTE.to_owned());
    }
    let mut sleep_open: Option<u64> = None;
    // What was the thread doing when the capture started? Frames whose end
    // (job end, wait end) comes without a begin were open; a sleep end
    // without a begin at that level means it was asleep.
    let mut open: Vec<bool> = Vec::new(); // frames opened in the capture: is job?
    let mut initial: Vec<Frame> = Vec::new(); // innermost first
    let mut level_sleep_seen = false;
    let mut parked_level: Option<usize> = None;
    for r in &events {
        match r.event {
            Event::JobBegin { .. } => open.push(true),
            Event::WaitBegin { .. } => open.push(false),
            Event::JobEnd { job, name } => match open.last() {
                Some(true) => {
                    open.pop();
                }
                Some(false) => {}
                None => {
                    initial.push(Frame::Job {
                        job,
                        name,
                        begin: 0,
                        known: false,
                    });
                    level_sleep_seen = false;
                }
            },
            Event::WaitEnd { job } => match open.last() {
                Some(false) => {
                    open.pop();
                }
                Some(true) => {}
                None => {
                    initial.push(Frame::Wait {
                        job,
                        begin: 0,
                        known: false,
                        parked: false,
                    });
                    level_sleep_seen = false;
                }
            },
            Event::SleepBegin if open.is_empty() => level_sleep_seen = true,
            Event::SleepEnd if open.is_empty() && !level_sleep_seen => {
                level_sleep_seen = true;
                parked_level.get_or_insert(initial.len());
            }
            _ => {}
        }
    }
    match parked_level {
        Some(k) if k < initial.len() => {
            if let Frame::Wait { parked, .. } = &mut initial[k] {
                *parked = true;
                sleep_open = Some(0);
            }
        }
        Some(_) if worker => {
            top = ThreadState::Sleeping;
            sleep_open = Some(0);
        }
        _ => {}
    }
    if worker && matches!(initial.last(), Some(Frame::Wait { .. })) {
        // Workers wait only inside a job.
        initial.push(Frame::Job {
            job: JobId(0),
            name: "",
            begin: 0,
            known: false,
        });
    }
    initial.reverse();
    stack.extend(initial);

    let mut cur = current(&stack, top);
    let mut span_start = 0;
    for r in &events {
        let ts = rel(r.ts_ns);
        match r.event {
            Event::Accesses { job } => {
                p.accesses.push((ts, job, Vec::new()));
                group_open = true;
                continue;
            }
            Event::Access {
                resource,
                name,
                mode,
            } => {
                if let (true, Some(g)) = (group_open, p.accesses.last_mut()) {
                    g.2.push(Access { resource, mode });
                    p.resource_names.push((resource, name));
                }
                continue;
            }
            _ => group_open = false,
        }
        match r.event {
            Event::JobBegin { job, name } => stack.push(Frame::Job {
                job,
                name,
                begin: ts,
                known: true,
            }),
            Event::JobEnd { job, name } => {
                if let Some(Frame::Job {
                    name: begin_name,
                    begin,
                    known,
                    ..
                }) = stack.last()
                {
                    p.tl.jobs.push(JobSpan {
                        name: name_of(name, begin_name),
                        job,
                        begin_ns: *begin,
                        end_ns: ts,
                        latency_ns: None,
                        complete: *known,
                    });
                    p.begin_known.push(*known);
                    stack.pop();
                    if stack.is_empty() && worker {
                        top = ThreadState::Searching;
                    }
                }
            }
            Event::WaitBegin { job } => stack.push(Frame::Wait {
                job,
                begin: ts,
                known: true,
                parked: false,
            }),
            Event::WaitEnd { job } => {
                if let Some(Frame::Wait { begin, known, .. }) = stack.last() {
                    p.tl.waits.push(WaitSpan {
                        job,
                        begin_ns: *begin,
                        end_ns: ts,
                        complete: *known,
                    });
                    stack.pop();
                }
            }
            Event::SleepBegin => match stack.last_mut() {
                Some(Frame::Wait { parked, .. }) => {
                    *parked = true;
                    sleep_open = Some(ts);
                }
                None => {
                    top = ThreadState::Sleeping;
                    sleep_open = Some(ts);
                }
                Some(Frame::Job { .. }) => {}
            },
            Event::SleepEnd => {
                match stack.last_mut() {
                    Some(Frame::Wait { parked, .. }) => *parked = false,
                    None => {
                        top = if worker {
                            ThreadState::Searching
                        } else {
                            ThreadState::Outside
                        }
                    }
                    Some(Frame::Job { .. }) => {}
                }
                if let Some(b) = sleep_open.take() {
                    p.sleeps.push((b, ts));
                }
            }
            Event::SearchBegin if stack.is_empty() => top = ThreadState::Searching,
            Event::SpinBegin if stack.is_empty() => top = ThreadState::Spinning,
            Event::Steal { victim } => p.tl.steals.push(Steal { ts_ns: ts, victim }),
            Event::Wake { wakee } => p.tl.wakes.push(Wake {
                ts_ns: ts,
                wakee,
                target_ns: None,
            }),
            Event::JobReady { job, by_dependency } => {
                let release = by_dependency.then(|| {
                    p.tl.releases.push(Release {
                        ts_ns: ts,
                        job,
                        started: None,
                    });
                    p.tl.releases.len() - 1
                });
                p.readies.push((ts, job, release));
            }
            Event::FrameBegin { frame } => p.frame_marks.push((frame, true, ts)),
            Event::FrameEnd { frame } => p.frame_marks.push((frame, false, ts)),
            Event::ActiveWorkers { count } => p
                .active_workers
                .push(ActiveWorkersChange { ts_ns: ts, count }),
            Event::RunQueueWait { wait_ns } => p.run_queue.push((ts, wait_ns)),
            Event::RunQueueUnknown => p.tl.run_queue_unknown = true,
            // CaptureStart, a search or spin inside a job or wait, and
            // kinds newer than this analysis: no change.
            _ => {}
        }
        let now = current(&stack, top);
        if now != cur {
            push_span(&mut p.tl.states, cur, span_start, ts);
            span_start = ts;
            cur = now;
        }
    }
    push_span(&mut p.tl.states, cur, span_start, thread_end);
    push_span(&mut p.tl.states, ThreadState::Unknown, thread_end, dur);
    if !p.run_queue.is_empty() {
        p.tl.run_queue_ns = Some(p.run_queue.iter().map(|s| s.1).sum());
        p.tl.run_queue_other_ns = attribute_preemption(&mut p.tl.states, &p.run_queue);
    }
    // Still open at the end: clipped.
    while let Some(f) = stack.pop() {
        match f {
            Frame::Job {
                job,
                name,
                begin,
                known,
            } => {
                p.tl.jobs.push(JobSpan {
                    name: name_of(name, ""),
                    job,
                    begin_ns: begin,
                    end_ns: thread_end,
                    latency_ns: None,
                    complete: false,
                });
                p.begin_known.push(known);
            }
            Frame::Wait { job, begin, .. } => p.tl.waits.push(WaitSpan {
                job,
                begin_ns: begin,
                end_ns: thread_end,
                complete: false,
            }),
        }
    }
    p
}

/// Draw a thread's run-queue wait as the preempted state: each sample
/// `(ts, wait)` (times relative to the capture, in order) covers the time
/// since the previous sample (the capture's start for the first); its
/// wait is carved out of the searching and spinning spans in that
/// interval, latest first, up to their length (where in the interval the
/// thread waited is not measured: the length is, the placement is a
/// choice). Searching and spinning are where run-queue wait misleads (a
/// worker waiting for a CPU looks like one looking for work); the rest of
/// the wait (while working or waiting) is returned, not drawn.
///
/// Invariant kept: `states` stay sorted, cover the same range, and hold no
/// two adjacent spans of one state.
pub fn attribute_preemption(states: &mut Vec<StateSpan>, samples: &[(u64, u64)]) -> u64 {
    let looking = |s: ThreadState| matches!(s, ThreadState::Searching | ThreadState::Spinning);
    // Per span, the cuts (begin, end) to draw as preempted.
    let mut cuts: Vec<Vec<(u64, u64)>> = vec![Vec::new(); states.len()];
    let mut other = 0;
    let mut prev = 0;
    for &(ts, wait) in samples {
        let (a, b) = (prev, ts.max(prev));
        prev = b;
        let mut left = wait;
        // Spans overlapping [a, b), latest first.
        let end = states.partition_point(|s| s.begin_ns < b);
        for k in (0..end).rev() {
            if left == 0 || states[k].end_ns <= a {
                break;
            }
            if !looking(states[k].state) {
                continue;
            }
            let lo = states[k].begin_ns.max(a);
            let hi = states[k].end_ns.min(b);
            let take = left.min(hi - lo);
            cuts[k].push((hi - take, hi));
            left -= take;
        }
        other += left;
    }
    if cuts.iter().all(Vec::is_empty) {
        return other;
    }
    let old = std::mem::take(states);
    for (s, mut c) in old.into_iter().zip(cuts) {
        c.sort_unstable();
        let mut at = s.begin_ns;
        for (lo, hi) in c {
            push_span(states, s.state, at, lo);
            push_span(states, ThreadState::Preempted, lo, hi);
            at = hi;
        }
        push_span(states, s.state, at, s.end_ns);
    }
    other
}

/// How long before a sleep's begin a wake may be stamped and still be the
/// one that ended it: a waker may take a worker off the sleepers list (and
/// record the wake) between the worker's `prepare_park` and its
/// `sleep_begin`, and either may be preempted. Wakes further ahead get no
/// arrow.
pub const WAKE_SLACK_NS: u64 = 200_000;

/// Pair one thread's closed sleeps (in order) with the wakes aimed at it
/// (their times, sorted): returns, per wake, when the sleep it ended was
/// over.
///
/// Relies on the order the core records in (`crates/jobsys/src/trace/
/// mod.rs`, `wake_issued`): a wake is stamped *before* the store that
/// ends the wakee's park, and the wakee stamps `sleep_end` after it sees
/// that store, so the wake that ended a sleep `(b, e)` lies at or before
/// `e`; and it is stamped after the wakee registered for that sleep, so
/// after the previous sleep's end. Only one store ends a sleep, so of the
/// wakes in `(previous end, e]` the *last* ended it; earlier ones landed
/// on a thread that did not sleep (a worker that cancelled its park, a
/// waiter that had just been woken). A wake is never paired with a sleep
/// that ended before it was issued.
fn match_wakes(sleeps: &[(u64, u64)], wakes: &[u64]) -> Vec<Option<u64>> {
    let mut out = vec![None; wakes.len()];
    let mut j = 0;
    for &(b, e) in sleeps {
        let mut last = None;
        while j < wakes.len() && wakes[j] <= e {
            last = Some(j);
            j += 1;
        }
        if let Some(k) = last {
            if wakes[k].saturating_add(WAKE_SLACK_NS) >= b {
                out[k] = Some(e);
            }
        }
    }
    out
}

/// Order of spans on one thread: by begin, enclosing (longer) first.
pub(crate) fn span_order(begin: u64, end: u64) -> (u64, std::cmp::Reverse<u64>) {
    (begin, std::cmp::Reverse(end))
}

impl Capture {
    /// Analyse a recorded trace (see the module docs); also
    /// [`TraceExt::analyse`](crate::TraceExt::analyse).
    pub fn from_trace(trace: &Trace) -> Capture {
        let start = trace.start_ns;
        let dur = trace.end_ns.saturating_sub(start);
        let mut names = Interner::default();
        let mut threads: Vec<&ThreadEvents> = trace.threads.iter().collect();
        threads.sort_by_key(|t| t.index);
        let mut passes: Vec<Pass> = threads
            .iter()
            .map(|t| analyse_thread(t, start, dur, &mut names))
            .collect();

        // Scheduling latency and release arrows: walk readies and job
        // starts of all threads in time order; a start consumes the
        // latest ready of its job.
        let mut items: Vec<(u64, u8, JobId, usize, usize)> = Vec::new();
        for (ti, p) in passes.iter().enumerate() {
            for (k, &(ts, job, _)) in p.readies.iter().enumerate() {
                items.push((ts, 0, job, ti, k));
            }
            for (k, s) in p.tl.jobs.iter().enumerate() {
                if p.begin_known[k] {
                    items.push((s.begin_ns, 1, s.job, ti, k));
                }
            }
        }
        items.sort_unstable_by_key(|&(ts, order, _, ti, k)| (ts, order, ti, k));
        let mut ready: HashMap<JobId, (u64, Option<(usize, usize)>)> = HashMap::new();
        for (ts, order, job, ti, k) in items {
            if order == 0 {
                let rel = passes[ti].readies[k].2.map(|r| (ti, r));
                ready.insert(job, (ts, rel));
            } else if let Some((rts, rel)) = ready.remove(&job) {
                passes[ti].tl.jobs[k].latency_ns = Some(ts - rts);
                if let Some((rti, r)) = rel {
                    let index = passes[ti].tl.index;
                    passes[rti].tl.releases[r].started = Some((index, ts));
                }
            }
        }

        // Wake arrows: from the waker to the end of the wakee's sleep that
        // the wake ended (`match_wakes`).
        let mut aimed: HashMap<u32, Vec<(u64, usize, usize)>> = HashMap::new();
        for (pi, p) in passes.iter().enumerate() {
            for (wi, w) in p.tl.wakes.iter().enumerate() {
                if let Some(i) = w.wakee {
                    aimed.entry(i).or_default().push((w.ts_ns, pi, wi));
                }
            }
        }
        let mut targets = Vec::new();
        for p in &passes {
            let Some(wakes) = aimed.get_mut(&p.tl.index) else {
                continue;
            };
            wakes.sort_unstable();
            let ts: Vec<u64> = wakes.iter().map(|w| w.0).collect();
            for (&(_, pi, wi), t) in wakes.iter().zip(match_wakes(&p.sleeps, &ts)) {
                targets.push((pi, wi, t));
            }
        }
        for (pi, wi, t) in targets {
            passes[pi].tl.wakes[wi].target_ns = t;
        }

        // Frames: a begin and an end with the same number.
        let mut begins: HashMap<u64, u64> = HashMap::new();
        let mut ends: HashMap<u64, u64> = HashMap::new();
        for p in &passes {
            for &(frame, is_begin, ts) in &p.frame_marks {
                let m = if is_begin { &mut begins } else { &mut ends };
                m.entry(frame).or_insert(ts);
            }
        }
        let mut frames: Vec<FrameSpan> = begins
            .iter()
            .filter_map(|(&frame, &b)| {
                let e = *ends.get(&frame)?;
                (e >= b).then_some(FrameSpan {
                    frame,
                    begin_ns: b,
                    end_ns: e,
                })
            })
            .collect();
        frames.sort_by_key(|f| f.frame);

        // Active worker changes of all threads, in time order (a stable
        // sort: one thread's changes keep their recorded order).
        let mut active_workers: Vec<ActiveWorkersChange> = passes
            .iter_mut()
            .flat_map(|p| std::mem::take(&mut p.active_workers))
            .collect();
        active_workers.sort_by_key(|c| c.ts_ns);

        // Declared accesses, with when each job was released.
        let mut accesses = BTreeMap::new();
        let mut resources = BTreeMap::new();
        for p in &mut passes {
            for (ts, job, list) in std::mem::take(&mut p.accesses) {
                accesses.insert(
                    job,
                    JobAccesses {
                        scheduled_ns: ts,
                        released_ns: None,
                        accesses: list,
                    },
                );
            }
            for &(id, name) in &p.resource_names {
                resources.entry(id).or_insert_with(|| {
                    if name.is_empty() {
                        format!("#{id}")
                    } else {
                        name.to_owned()
                    }
                });
            }
        }
        for p in &passes {
            for &(ts, job, release) in &p.readies {
                if let (Some(_), Some(a)) = (release, accesses.get_mut(&job)) {
                    a.released_ns = Some(a.released_ns.map_or(ts, |r: u64| r.max(ts)));
                }
            }
        }

        let threads = passes
            .into_iter()
            .map(|p| {
                let mut tl = p.tl;
                tl.jobs.sort_by_key(|s| span_order(s.begin_ns, s.end_ns));
                tl.waits.sort_by_key(|s| span_order(s.begin_ns, s.end_ns));
                tl
            })
            .collect();
        Capture {
            duration_ns: dur,
            names: names.names,
            threads,
            frames,
            active_workers,
            accesses,
            resources,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{match_wakes, WAKE_SLACK_NS};

    #[test]
    fn a_wake_ends_the_next_sleep_and_only_the_last_one_counts() {
        let s = [(10, 20), (30, 40), (100, 110)];
        // Inside a sleep, or just before it (taken off the list before
        // the wakee stamped its sleep begin).
        assert_eq!(match_wakes(&s, &[15]), vec![Some(20)]);
        assert_eq!(match_wakes(&s, &[5]), vec![Some(20)]);
        assert_eq!(match_wakes(&s, &[25]), vec![Some(40)]);
        // A wake at the very moment the wakee woke.
        assert_eq!(match_wakes(&s, &[20]), vec![Some(20)]);
        // Never a sleep that ended before the wake: after the last sleep,
        // no arrow.
        assert_eq!(match_wakes(&s, &[111]), vec![None]);
        assert_eq!(match_wakes(&[], &[5]), vec![None]);
        // Two wakes before one sleep's end: the last ended it, the first
        // landed on a worker that cancelled its park.
        assert_eq!(match_wakes(&s, &[21, 35]), vec![None, Some(40)]);
        // One arrow per sleep, each forward.
        assert_eq!(
            match_wakes(&s, &[12, 31, 105]),
            vec![Some(20), Some(40), Some(110)]
        );
        // Too far ahead of the sleep: the wakee was awake.
        assert_eq!(
            match_wakes(&[(WAKE_SLACK_NS + 10, WAKE_SLACK_NS + 20)], &[5]),
            vec![None]
        );
    }
}
