//! The numbers of a capture: per thread the share of time in each state,
//! jobs run, steals, wakes issued, futile wakes, scheduling latency; per job
//! name count, total, mean, p99; frame times; warnings (dropped events,
//! rapid switching). As text (`Display`) and JSON (`Serialize`).
//!
//! Invariants: a thread's state times add up to the capture's duration (the
//! timeline covers it exactly), so its shares add up to 100 % up to
//! rounding; statistics of jobs use only spans with both ends inside the
//! capture; percentiles are nearest-rank.
//!
//! Rapid switching (the contention signature: a thread that looks busy but
//! alternates between working and waiting): a thread's timeline is cut into
//! *busy* runs (working) and *stalled* runs (waiting, blocked, sleeping);
//! searching, spinning and preempted belong to the run around them; outside and
//! unknown break the sequence. A *switch* is a busy run followed by a
//! stalled run, both shorter than [`RAPID_SHORT_NS`]. A thread gets a
//! warning when some window of [`RAPID_WINDOW_NS`] holds at least
//! [`RAPID_MIN_SWITCHES`] switches. Back-to-back small jobs (working,
//! searching, working) are not switches.
//!
//! Preempted (the timeline's state for run-queue wait while looking for
//! work): each thread's time, spans and measured run-queue wait; a
//! warning when a thread was preempted for [`PREEMPTED_WARN_NS`] or more,
//! which blames oversubscription, not contention, when preempted time is
//! most ([`PREEMPTED_MOSTLY`]) of its time looking for work (searching,
//! spinning, preempted), and so does a rapid-switching warning for such a
//! thread. A capture where run-queue wait could not be read says so once.

use crate::timeline::{Capture, StateSpan, ThreadState, ThreadTimeline};
use jobsys::trace::{AccessMode, JobId};
use std::collections::{BTreeMap, HashMap};
use std::fmt;

/// Busy and stalled runs shorter than this count as a rapid switch (100 µs).
pub const RAPID_SHORT_NS: u64 = 100_000;
/// The window in which switches are counted (1 ms).
pub const RAPID_WINDOW_NS: u64 = 1_000_000;
/// Switches within one window that make a warning.
pub const RAPID_MIN_SWITCHES: usize = 10;
/// A thread whose preempted time is more than this share of its
/// looking-for-work time (searching + spinning + preempted) was mostly
/// waiting for a CPU: the summary blames oversubscription, not contention.
pub const PREEMPTED_MOSTLY: f64 = 0.5;
/// Preempted time under this (100 µs) gets no warning of its own.
pub const PREEMPTED_WARN_NS: u64 = 100_000;

/// One value per thread state.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct StateTimes<T> {
    pub working: T,
    pub searching: T,
    pub preempted: T,
    pub spinning: T,
    pub sleeping: T,
    pub waiting: T,
    pub blocked: T,
    pub outside: T,
    pub unknown: T,
}

impl<T: Copy> StateTimes<T> {
    /// The value for `s`.
    pub fn get(&self, s: ThreadState) -> T {
        *self.field(s)
    }

    fn field(&self, s: ThreadState) -> &T {
        match s {
            ThreadState::Working => &self.working,
            ThreadState::Searching => &self.searching,
            ThreadState::Preempted => &self.preempted,
            ThreadState::Spinning => &self.spinning,
            ThreadState::Sleeping => &self.sleeping,
            ThreadState::Waiting => &self.waiting,
            ThreadState::Blocked => &self.blocked,
            ThreadState::Outside => &self.outside,
            ThreadState::Unknown => &self.unknown,
        }
    }

    fn field_mut(&mut self, s: ThreadState) -> &mut T {
        match s {
            ThreadState::Working => &mut self.working,
            ThreadState::Searching => &mut self.searching,
            ThreadState::Preempted => &mut self.preempted,
            ThreadState::Spinning => &mut self.spinning,
            ThreadState::Sleeping => &mut self.sleeping,
            ThreadState::Waiting => &mut self.waiting,
            ThreadState::Blocked => &mut self.blocked,
            ThreadState::Outside => &mut self.outside,
            ThreadState::Unknown => &mut self.unknown,
        }
    }
}

/// A distribution of durations (nearest-rank percentiles).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Distribution {
    pub count: u64,
    pub mean_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

/// Nearest-rank percentile `p` (0 < p ≤ 100) of sorted `v`.
pub(crate) fn percentile(v: &[u64], p: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

impl Distribution {
    pub(crate) fn of(mut v: Vec<u64>) -> Distribution {
        if v.is_empty() {
            return Distribution::default();
        }
        v.sort_unstable();
        let total: u128 = v.iter().map(|&x| u128::from(x)).sum();
        Distribution {
            count: v.len() as u64,
            mean_ns: (total / v.len() as u128) as u64,
            p50_ns: percentile(&v, 50.0),
            p99_ns: percentile(&v, 99.0),
            max_ns: *v.last().unwrap(),
        }
    }
}

/// Where a thread switched rapidly between working and waiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RapidSwitching {
    /// Switches in the densest window.
    pub switches: usize,
    /// Where that window starts.
    pub window_begin_ns: u64,
}

/// One thread's numbers.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ThreadSummary {
    pub index: u32,
    pub name: String,
    pub worker: bool,
    pub dropped_events: u64,
    /// Nanoseconds in each state (they add up to the capture's duration).
    pub state_ns: StateTimes<u64>,
    /// The same as percentages of the capture.
    pub state_percent: StateTimes<f64>,
    /// Complete job spans run on this thread.
    pub jobs_run: u64,
    pub steals: u64,
    pub wakes_issued: u64,
    /// Times this thread was woken and went back to sleep without running a
    /// job.
    pub futile_wakes: u64,
    /// Ready → start of the jobs that started on this thread.
    pub latency: Distribution,
    pub rapid_switching: Option<RapidSwitching>,
    /// Run-queue wait measured on the thread (runnable, not running), in
    /// all; `None`: not measured (no samples in the capture).
    pub run_queue_ns: Option<u64>,
    /// Spans drawn as preempted (`ThreadState::Preempted`; their time is
    /// `state_ns.preempted`).
    pub preempted_spans: u64,
    /// The thread's looking-for-work time (searching, spinning and
    /// preempted) was mostly preempted (over [`PREEMPTED_MOSTLY`]): it
    /// waited for a CPU rather than for work.
    pub mostly_preempted: bool,
    /// The timeline's note (`ThreadTimeline::note`), e.g. a worker with no
    /// events drawn as sleeping.
    pub note: Option<String>,
}

/// One job name's numbers (complete spans only; a `parallel_for` counts
/// once per thread that ran pieces of it).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct JobStats {
    pub name: String,
    pub count: u64,
    pub total_ns: u64,
    pub mean_ns: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

/// One resource's part in serialising the capture (declared data access;
/// the definition is in the crate README, "Resources that serialised the
/// frame most").
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ResourceStats {
    /// The id the core gave the resource (unique in its process).
    pub resource: u64,
    /// Its name, or `#id`.
    pub name: String,
    /// Declared accesses recorded, and how many of them wrote.
    pub accesses: u64,
    pub writes: u64,
    /// Jobs whose wait is attributed to this resource: released by a
    /// dependency derived from it.
    pub waits: u64,
    /// Their waits (scheduled → released), summed, and the longest.
    pub wait_ns: u64,
    pub max_wait_ns: u64,
}

/// The summary of a capture.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Summary {
    pub duration_ns: u64,
    pub threads: Vec<ThreadSummary>,
    /// By total time, largest first.
    pub jobs: Vec<JobStats>,
    /// Scheduling latency (ready → start) over all threads.
    pub latency: Distribution,
    /// Durations of complete frames.
    pub frames: Distribution,
    /// The active worker count after each change, in time order (empty:
    /// it did not change during the capture).
    pub active_workers: Vec<u32>,
    /// Declared data access: resources by the wait they caused, largest
    /// first (empty without access events).
    pub resources: Vec<ResourceStats>,
    pub warnings: Vec<String>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Run {
    Busy,
    Stalled,
    Break,
}

/// The densest window of rapid switches (see the module docs).
pub(crate) fn rapid_switching(states: &[StateSpan]) -> Option<RapidSwitching> {
    let mut runs: Vec<(Run, u64, u64)> = Vec::new();
    for s in states {
        let class = match s.state {
            ThreadState::Working => Run::Busy,
            ThreadState::Waiting | ThreadState::Blocked | ThreadState::Sleeping => Run::Stalled,
            ThreadState::Searching | ThreadState::Spinning | ThreadState::Preempted => continue,
            ThreadState::Outside | ThreadState::Unknown => Run::Break,
        };
        match runs.last_mut() {
            Some(last) if last.0 == class => last.2 = s.end_ns,
            _ => runs.push((class, s.begin_ns, s.end_ns)),
        }
    }
    let switches: Vec<u64> = runs
        .windows(2)
        .filter(|w| {
            w[0].0 == Run::Busy
                && w[1].0 == Run::Stalled
                && w[0].2 - w[0].1 < RAPID_SHORT_NS
                && w[1].2 - w[1].1 < RAPID_SHORT_NS
        })
        .map(|w| w[1].1)
        .collect();
    let mut best: Option<RapidSwitching> = None;
    let mut i = 0;
    for j in 0..switches.len() {
        while switches[j] - switches[i] >= RAPID_WINDOW_NS {
            i += 1;
        }
        let n = j - i + 1;
        if n >= RAPID_MIN_SWITCHES && best.is_none_or(|b| n > b.switches) {
            best = Some(RapidSwitching {
                switches: n,
                window_begin_ns: switches[i],
            });
        }
    }
    best
}

/// Woken from an idle sleep, then asleep again without working.
fn futile_wakes(states: &[StateSpan]) -> u64 {
    let mut n = 0;
    let mut after_sleep = false;
    for s in states {
        match s.state {
            ThreadState::Sleeping => {
                if after_sleep {
                    n += 1;
                }
                after_sleep = true;
            }
            ThreadState::Working | ThreadState::Unknown | ThreadState::Outside => {
                after_sleep = false
            }
            _ => {}
        }
    }
    n
}

fn thread_summary(t: &ThreadTimeline, duration: u64) -> ThreadSummary {
    let mut ns = StateTimes::<u64>::default();
    for s in &t.states {
        *ns.field_mut(s.state) += s.end_ns - s.begin_ns;
    }
    let mut pct = StateTimes::<f64>::default();
    for s in ThreadState::ALL {
        *pct.field_mut(s) = if duration == 0 {
            0.0
        } else {
            100.0 * ns.get(s) as f64 / duration as f64
        };
    }
    let looking = ns.searching + ns.spinning + ns.preempted;
    ThreadSummary {
        run_queue_ns: t.run_queue_ns,
        preempted_spans: t
            .states
            .iter()
            .filter(|s| s.state == ThreadState::Preempted)
            .count() as u64,
        mostly_preempted: looking > 0 && ns.preempted as f64 > PREEMPTED_MOSTLY * looking as f64,
        index: t.index,
        name: t.name.clone(),
        worker: t.worker,
        dropped_events: t.dropped,
        state_ns: ns,
        state_percent: pct,
        jobs_run: t.jobs.iter().filter(|j| j.complete).count() as u64,
        steals: t.steals.len() as u64,
        wakes_issued: t.wakes.len() as u64,
        futile_wakes: futile_wakes(&t.states),
        latency: Distribution::of(t.jobs.iter().filter_map(|j| j.latency_ns).collect()),
        rapid_switching: rapid_switching(&t.states),
        note: t.note.clone(),
    }
}

impl Capture {
    /// The numbers of this capture.
    pub fn summary(&self) -> Summary {
        let threads: Vec<ThreadSummary> = self
            .threads
            .iter()
            .map(|t| thread_summary(t, self.duration_ns))
            .collect();
        let mut by_name: HashMap<&str, Vec<u64>> = HashMap::new();
        for t in &self.threads {
            for j in t.jobs.iter().filter(|j| j.complete) {
                by_name
                    .entry(self.name_of(j))
                    .or_default()
                    .push(j.end_ns - j.begin_ns);
            }
        }
        let mut jobs: Vec<JobStats> = by_name
            .into_iter()
            .map(|(name, v)| {
                let total: u64 = v.iter().sum();
                let d = Distribution::of(v);
                JobStats {
                    name: name.to_owned(),
                    count: d.count,
                    total_ns: total,
                    mean_ns: d.mean_ns,
                    p50_ns: d.p50_ns,
                    p99_ns: d.p99_ns,
                    max_ns: d.max_ns,
                }
            })
            .collect();
        jobs.sort_by(|a, b| {
            b.total_ns
                .cmp(&a.total_ns)
                .then_with(|| a.name.cmp(&b.name))
        });
        let latency = Distribution::of(
            self.threads
                .iter()
                .flat_map(|t| t.jobs.iter().filter_map(|j| j.latency_ns))
                .collect(),
        );
        let frames = Distribution::of(self.frames.iter().map(|f| f.end_ns - f.begin_ns).collect());
        let mut warnings = Vec::new();
        for t in &threads {
            if t.dropped_events > 0 {
                warnings.push(format!(
                    "{}: {} events dropped (buffer full); its timeline is unknown after its last \
                     event. Raise TraceConfig::events_per_thread or capture less.",
                    t.name, t.dropped_events
                ));
            }
            if let Some(r) = t.rapid_switching {
                let why = if t.mostly_preempted {
                    format!(
                        "not contention: the OS kept it off a CPU for {} while it looked \
                         for work (preempted; more runnable threads than CPUs).",
                        fmt_ns(t.state_ns.preempted as f64)
                    )
                } else {
                    "contention, or too little work per wake.".to_owned()
                };
                warnings.push(format!(
                    "{}: rapid switching between working and waiting/sleeping: {} switches \
                     (each run < {}) within {} from {} — {why}",
                    t.name,
                    r.switches,
                    fmt_ns(RAPID_SHORT_NS as f64),
                    fmt_ns(RAPID_WINDOW_NS as f64),
                    fmt_ns(r.window_begin_ns as f64)
                ));
            }
            if t.state_ns.preempted >= PREEMPTED_WARN_NS {
                let looking = t.state_ns.searching + t.state_ns.spinning + t.state_ns.preempted;
                warnings.push(format!(
                    "{}: preempted (runnable, waiting for a CPU) for {} in {} spans, {:.0} % of \
                     its time looking for work{} — the machine is oversubscribed (more runnable \
                     threads than CPUs){}.",
                    t.name,
                    fmt_ns(t.state_ns.preempted as f64),
                    t.preempted_spans,
                    100.0 * t.state_ns.preempted as f64 / looking.max(1) as f64,
                    if t.mostly_preempted {
                        ""
                    } else {
                        " (the rest searching or spinning)"
                    },
                    if t.mostly_preempted {
                        "; its searching is not contention"
                    } else {
                        ""
                    }
                ));
            }
        }
        if let Some(t) = self.threads.iter().find(|t| t.run_queue_unknown) {
            warnings.push(format!(
                "run-queue wait not measured ({} and maybe others: no per-thread schedstat, \
                 i.e. not Linux or a kernel without it): time preempted by the OS shows as \
                 searching or spinning.",
                t.name
            ));
        }
        Summary {
            duration_ns: self.duration_ns,
            threads,
            jobs,
            latency,
            frames,
            active_workers: self.active_workers.iter().map(|c| c.count).collect(),
            resources: self.resource_stats(),
            warnings,
        }
    }

    /// Replays each resource's history (its accesses in the order they
    /// were recorded) with the core's ordering rules to find the derived
    /// edges, then charges each released job's wait (scheduled → released)
    /// to the resources that derived the edge to the dependency that
    /// finished last before the release: the one that released it.
    fn resource_stats(&self) -> Vec<ResourceStats> {
        if self.accesses.is_empty() {
            return Vec::new();
        }
        let mut stats: BTreeMap<u64, ResourceStats> = BTreeMap::new();
        // Per resource: (scheduled, job, writes), in history order.
        let mut history: BTreeMap<u64, Vec<(u64, JobId, bool)>> = BTreeMap::new();
        for (&job, a) in &self.accesses {
            for x in &a.accesses {
                let writes = x.mode != AccessMode::Read;
                history
                    .entry(x.resource)
                    .or_default()
                    .push((a.scheduled_ns, job, writes));
                let st = stats.entry(x.resource).or_insert_with(|| ResourceStats {
                    resource: x.resource,
                    name: self.resource_label(x.resource),
                    accesses: 0,
                    writes: 0,
                    waits: 0,
                    wait_ns: 0,
                    max_wait_ns: 0,
                });
                st.accesses += 1;
                st.writes += u64::from(writes);
            }
        }
        // Derived edges: job -> [(dependency, resource)].
        let mut deps: HashMap<JobId, Vec<(JobId, u64)>> = HashMap::new();
        for (&res, h) in &mut history {
            h.sort_unstable();
            let mut last_writer: Option<JobId> = None;
            let mut readers: Vec<JobId> = Vec::new();
            for &(_, job, writes) in h.iter() {
                let d = deps.entry(job).or_default();
                d.extend(last_writer.map(|w| (w, res)));
                if writes {
                    d.extend(readers.drain(..).map(|r| (r, res)));
                    last_writer = Some(job);
                } else {
                    readers.push(job);
                }
            }
        }
        // When each job ended (its last span, on any thread).
        let mut ended: HashMap<JobId, u64> = HashMap::new();
        for t in &self.threads {
            for s in t.jobs.iter().filter(|s| s.complete) {
                let e = ended.entry(s.job).or_insert(s.end_ns);
                *e = (*e).max(s.end_ns);
            }
        }
        for (job, a) in &self.accesses {
            let Some(released) = a.released_ns else {
                continue;
            };
            let wait = released.saturating_sub(a.scheduled_ns);
            let Some(d) = deps.get(job) else { continue };
            let last = d
                .iter()
                .filter_map(|&(dep, _)| ended.get(&dep).copied())
                .filter(|&e| e <= released)
                .max();
            let Some(last) = last else { continue };
            let mut charged: Vec<u64> = d
                .iter()
                .filter(|&&(dep, _)| ended.get(&dep) == Some(&last))
                .map(|&(_, res)| res)
                .collect();
            charged.sort_unstable();
            charged.dedup();
            for res in charged {
                let st = stats.get_mut(&res).expect("every resource has stats");
                st.waits += 1;
                st.wait_ns += wait;
                st.max_wait_ns = st.max_wait_ns.max(wait);
            }
        }
        let mut out: Vec<ResourceStats> = stats.into_values().collect();
        out.sort_by(|a, b| {
            b.wait_ns
                .cmp(&a.wait_ns)
                .then_with(|| a.name.cmp(&b.name))
                .then_with(|| a.resource.cmp(&b.resource))
        });
        out
    }
}

/// A duration for people: "850 ns", "12.50 µs", "1.234 ms", "2.000 s".
pub(crate) fn fmt_ns(ns: f64) -> String {
    let a = ns.abs();
    if a < 1e3 {
        format!("{ns:.0} ns")
    } else if a < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else if a < 1e9 {
        format!("{:.3} ms", ns / 1e6)
    } else {
        format!("{:.3} s", ns / 1e9)
    }
}

/// At most this many resources are listed in the text summary.
const RESOURCES_LISTED: usize = 10;

/// At most this many active-worker counts are listed one by one.
const ACTIVE_LISTED: usize = 8;

/// "2 -> 0 -> 2 (2 changes)"; a longer history shortened to its first and
/// last counts with the range between ("1 -> 0 -> 1 -> … -> 1 (40
/// changes, between 0 and 1)").
fn active_changes(counts: &[u32]) -> String {
    let n = counts.len();
    let join = |c: &[u32]| {
        c.iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(" -> ")
    };
    let plural = if n == 1 { "change" } else { "changes" };
    if n <= ACTIVE_LISTED {
        return format!("{} ({n} {plural})", join(counts));
    }
    let (lo, hi) = (
        counts.iter().min().copied().unwrap_or(0),
        counts.iter().max().copied().unwrap_or(0),
    );
    format!(
        "{} -> … -> {} ({n} {plural}, between {lo} and {hi})",
        join(&counts[..ACTIVE_LISTED / 2]),
        join(&counts[n - 2..])
    )
}

/// `s` cut to `width` characters (keeping the start, marking the cut).
pub(crate) fn fit(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(width.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "capture: {}, {} threads, {} frames",
            fmt_ns(self.duration_ns as f64),
            self.threads.len(),
            self.frames.count
        )?;
        if self.frames.count > 0 {
            let d = &self.frames;
            writeln!(
                f,
                "frame time: mean {}, p50 {}, p99 {}, max {}",
                fmt_ns(d.mean_ns as f64),
                fmt_ns(d.p50_ns as f64),
                fmt_ns(d.p99_ns as f64),
                fmt_ns(d.max_ns as f64)
            )?;
        }
        if !self.active_workers.is_empty() {
            writeln!(
                f,
                "active workers: {}",
                active_changes(&self.active_workers)
            )?;
        }
        let l = &self.latency;
        writeln!(
            f,
            "scheduling latency (ready -> start): {} jobs, p50 {}, p99 {}, max {}",
            l.count,
            fmt_ns(l.p50_ns as f64),
            fmt_ns(l.p99_ns as f64),
            fmt_ns(l.max_ns as f64)
        )?;
        writeln!(f)?;
        write!(f, "{:<20}", "thread")?;
        for s in ThreadState::ALL {
            write!(f, " {:>9}", s.name())?;
        }
        writeln!(
            f,
            " {:>7} {:>6} {:>6} {:>6} {:>11} {:>11} {:>11}",
            "jobs", "steals", "wakes", "futile", "lat p50", "lat p99", "lat max"
        )?;
        for t in &self.threads {
            write!(f, "{:<20}", fit(&t.name, 20))?;
            for s in ThreadState::ALL {
                write!(f, " {:>8.1}%", t.state_percent.get(s))?;
            }
            writeln!(
                f,
                " {:>7} {:>6} {:>6} {:>6} {:>11} {:>11} {:>11}",
                t.jobs_run,
                t.steals,
                t.wakes_issued,
                t.futile_wakes,
                fmt_ns(t.latency.p50_ns as f64),
                fmt_ns(t.latency.p99_ns as f64),
                fmt_ns(t.latency.max_ns as f64)
            )?;
        }
        for t in self.threads.iter().filter(|t| t.note.is_some()) {
            writeln!(f, "note: {}: {}", t.name, t.note.as_deref().unwrap_or(""))?;
        }
        if !self.jobs.is_empty() {
            writeln!(f)?;
            writeln!(
                f,
                "{:<40} {:>8} {:>12} {:>12} {:>12} {:>12}",
                "job", "count", "total", "mean", "p99", "max"
            )?;
            for j in &self.jobs {
                writeln!(
                    f,
                    "{:<40} {:>8} {:>12} {:>12} {:>12} {:>12}",
                    fit(&j.name, 40),
                    j.count,
                    fmt_ns(j.total_ns as f64),
                    fmt_ns(j.mean_ns as f64),
                    fmt_ns(j.p99_ns as f64),
                    fmt_ns(j.max_ns as f64)
                )?;
            }
        }
        if !self.resources.is_empty() {
            writeln!(f)?;
            writeln!(
                f,
                "resources that serialised the frame most (jobs released by an edge \
                 derived from the resource; wait = scheduled -> released):"
            )?;
            writeln!(
                f,
                "{:<32} {:>8} {:>8} {:>8} {:>12} {:>12}",
                "resource", "accesses", "writes", "waits", "wait total", "wait max"
            )?;
            for r in self.resources.iter().take(RESOURCES_LISTED) {
                writeln!(
                    f,
                    "{:<32} {:>8} {:>8} {:>8} {:>12} {:>12}",
                    fit(&r.name, 32),
                    r.accesses,
                    r.writes,
                    r.waits,
                    fmt_ns(r.wait_ns as f64),
                    fmt_ns(r.max_wait_ns as f64)
                )?;
            }
            if self.resources.len() > RESOURCES_LISTED {
                writeln!(
                    f,
                    "({} more resources in the JSON summary)",
                    self.resources.len() - RESOURCES_LISTED
                )?;
            }
        }
        if !self.warnings.is_empty() {
            writeln!(f)?;
            for w in &self.warnings {
                writeln!(f, "warning: {w}")?;
            }
        }
        Ok(())
    }
}
