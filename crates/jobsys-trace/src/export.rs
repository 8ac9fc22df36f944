//! Chrome trace event JSON (the "JSON Object Format" that Perfetto and
//! chrome://tracing open), written event by event through a `BufWriter`:
//! the document is never built in memory.
//!
//! Layout (process 1, "jobsys"):
//! - track `tid 0` "frames": one `X` slice per frame, plus a global instant
//!   (`ph: i, s: g`) at each frame's begin, drawn across all tracks;
//! - per thread, two tracks next to each other (`thread_sort_index`):
//!   the thread's own (`tid = index + 1`, named after the thread) with job
//!   slices named by job name (`cat: job`, args: job id, scheduling
//!   latency, `partial` when clipped by the capture, and the job's
//!   declared accesses as `reads`, `writes`, `write_each`: lists of
//!   resource names, `#id` for an unnamed one), wait slices
//!   (`cat: wait`) around the jobs run while waiting, and instants for
//!   steals and wakes; and its state track (`tid = 1000001 + index`,
//!   "`<name> state`") whose `X` slices (`cat: state`) cover the capture
//!   and are named and coloured (`cname`) by state;
//! - flow arrows (`ph: s` → `ph: f`, `bp: e`): `cat: wake` from the waker's
//!   state track to where the wakee woke up, `cat: dep` from the thread
//!   that released a job (finished its last dependency) to the job's slice.
//! - counter `active workers` (`ph: C`, `args.count`; Perfetto names the
//!   track "active workers count"): the active worker count after each
//!   change (`set_active_workers`, `follow_cpus`); only changes are
//!   recorded, so the track starts at the first change.
//! - A thread's note (`ThreadTimeline::note`, e.g. a worker with no
//!   events drawn as sleeping) is the `note` arg of its state slices.
//! - Time a thread looking for work spent waiting for a CPU is a
//!   `preempted` slice on its state track (`cname` yellow), cut out of
//!   the searching or spinning around it; the thread's measured run-queue
//!   wait (`run_queue_ns`, the part not drawn `run_queue_other_ns`) and
//!   `run_queue_unknown` (not measurable) are in the metadata.
//! - After `traceEvents`, `metadata.jobsys` (format, version, duration,
//!   threads with their tracks, dropped-event counts and notes) lets
//!   [`Capture::read_chrome_json`] rebuild the capture exactly. It comes
//!   after the events, under a key viewers know: Perfetto's importer stops
//!   at the first top-level key it does not know.
//! - Times are microseconds written as exact decimals with a 0.4 ns bias
//!   (`json::write_us`), read back to the same nanosecond; no
//!   `displayTimeUnit` (Perfetto takes `"ns"` as the unit of `ts`).

use crate::json::{write_str, write_us};
use crate::timeline::{span_order, Capture};
use jobsys::trace::{AccessMode, JobId};
use std::io::{self, BufWriter, Write};

pub(crate) const FORMAT: &str = "jobsys-trace";
pub(crate) const VERSION: u64 = 1;
const PID: u32 = 1;
pub(crate) const FRAMES_TID: u64 = 0;
/// The name of the active-worker counter.
pub(crate) const ACTIVE_WORKERS: &str = "active workers";
const STATE_TID_BASE: u64 = 1_000_001;

pub(crate) fn job_tid(index: u32) -> u64 {
    u64::from(index) + 1
}

pub(crate) fn state_tid(index: u32) -> u64 {
    STATE_TID_BASE + u64::from(index)
}

/// One trace event; empty/`None` fields are left out.
#[derive(Default)]
struct Ev<'a> {
    name: &'a str,
    cat: &'a str,
    ph: &'static str,
    ts: Option<u64>,
    dur: Option<u64>,
    tid: u64,
    id: Option<u64>,
    bp: Option<&'static str>,
    s: Option<&'static str>,
    cname: Option<&'static str>,
    args: Args<'a>,
}

#[derive(Default)]
struct Args<'a> {
    name: Option<&'a str>,
    sort_index: Option<i64>,
    job: Option<JobId>,
    latency_ns: Option<u64>,
    partial: bool,
    victim: Option<u32>,
    wakee: Option<u32>,
    flow: Option<u64>,
    frame: Option<u64>,
    count: Option<u64>,
    note: Option<&'a str>,
    /// Declared accesses: ("reads" | "writes" | "write_each", labels).
    accesses: Vec<(&'static str, Vec<String>)>,
}

struct Out<W: Write> {
    w: BufWriter<W>,
    first: bool,
    next_flow: u64,
}

impl<W: Write> Out<W> {
    fn ev(&mut self, e: &Ev<'_>) -> io::Result<()> {
        let w = &mut self.w;
        if !self.first {
            w.write_all(b",\n")?;
        }
        self.first = false;
        w.write_all(b"{\"name\":")?;
        write_str(w, e.name)?;
        if !e.cat.is_empty() {
            w.write_all(b",\"cat\":")?;
            write_str(w, e.cat)?;
        }
        write!(w, ",\"ph\":\"{}\"", e.ph)?;
        if let Some(ts) = e.ts {
            w.write_all(b",\"ts\":")?;
            write_us(w, ts)?;
        }
        if let Some(dur) = e.dur {
            w.write_all(b",\"dur\":")?;
            write_us(w, dur)?;
        }
        write!(w, ",\"pid\":{PID},\"tid\":{}", e.tid)?;
        if let Some(id) = e.id {
            write!(w, ",\"id\":{id}")?;
        }
        if let Some(bp) = e.bp {
            write!(w, ",\"bp\":\"{bp}\"")?;
        }
        if let Some(s) = e.s {
            write!(w, ",\"s\":\"{s}\"")?;
        }
        if let Some(c) = e.cname {
            write!(w, ",\"cname\":\"{c}\"")?;
        }
        let a = &e.args;
        let mut sep = ",\"args\":{";
        let mut field = |w: &mut BufWriter<W>, key: &str| -> io::Result<()> {
            write!(w, "{sep}\"{key}\":")?;
            sep = ",";
            Ok(())
        };
        if let Some(n) = a.name {
            field(w, "name")?;
            write_str(w, n)?;
        }
        if let Some(i) = a.sort_index {
            field(w, "sort_index")?;
            write!(w, "{i}")?;
        }
        if let Some(n) = a.note {
            field(w, "note")?;
            write_str(w, n)?;
        }
        if let Some(j) = a.job {
            field(w, "job")?;
            write!(w, "\"{j}\"")?;
        }
        for (key, v) in [
            ("latency_ns", a.latency_ns),
            ("victim", a.victim.map(u64::from)),
            ("wakee", a.wakee.map(u64::from)),
            ("flow", a.flow),
            ("frame", a.frame),
            ("count", a.count),
        ] {
            if let Some(v) = v {
                field(w, key)?;
                write!(w, "{v}")?;
            }
        }
        if a.partial {
            field(w, "partial")?;
            w.write_all(b"true")?;
        }
        for (key, labels) in &a.accesses {
            field(w, key)?;
            w.write_all(b"[")?;
            for (k, l) in labels.iter().enumerate() {
                if k > 0 {
                    w.write_all(b",")?;
                }
                write_str(w, l)?;
            }
            w.write_all(b"]")?;
        }
        if sep == "," {
            w.write_all(b"}")?;
        }
        w.write_all(b"}")
    }

    fn meta(&mut self, tid: u64, name: &str, sort_index: i64) -> io::Result<()> {
        self.ev(&Ev {
            name: "thread_name",
            ph: "M",
            tid,
            args: Args {
                name: Some(name),
                ..Args::default()
            },
            ..Ev::default()
        })?;
        self.ev(&Ev {
            name: "thread_sort_index",
            ph: "M",
            tid,
            args: Args {
                sort_index: Some(sort_index),
                ..Args::default()
            },
            ..Ev::default()
        })
    }

    /// A flow arrow from (tid, ts) to (tid, ts); returns its id.
    fn flow(
        &mut self,
        name: &'static str,
        cat: &'static str,
        from: (u64, u64),
        to: (u64, u64),
        job: Option<JobId>,
    ) -> io::Result<u64> {
        let id = self.next_flow;
        self.next_flow += 1;
        self.ev(&Ev {
            name,
            cat,
            ph: "s",
            ts: Some(from.1),
            tid: from.0,
            id: Some(id),
            args: Args {
                job,
                ..Args::default()
            },
            ..Ev::default()
        })?;
        self.ev(&Ev {
            name,
            cat,
            ph: "f",
            bp: Some("e"),
            ts: Some(to.1),
            tid: to.0,
            id: Some(id),
            ..Ev::default()
        })?;
        Ok(id)
    }
}

impl Capture {
    /// The job's declared accesses as slice args: `reads`, `writes`,
    /// `write_each`, each a list of resource labels (empty lists left out).
    fn access_args(&self, job: JobId) -> Vec<(&'static str, Vec<String>)> {
        let Some(a) = self.accesses.get(&job) else {
            return Vec::new();
        };
        [
            ("reads", AccessMode::Read),
            ("writes", AccessMode::Write),
            ("write_each", AccessMode::WriteEach),
        ]
        .into_iter()
        .filter_map(|(key, mode)| {
            let labels: Vec<String> = a
                .accesses
                .iter()
                .filter(|x| x.mode == mode)
                .map(|x| self.resource_label(x.resource))
                .collect();
            (!labels.is_empty()).then_some((key, labels))
        })
        .collect()
    }

    /// Write the capture as Chrome trace event JSON (see the module docs
    /// of `export.rs` for the layout). Open the file in
    /// <https://ui.perfetto.dev> or chrome://tracing; `jobsys-trace`
    /// summarises and compares such files.
    pub fn write_chrome_json<W: Write>(&self, w: W) -> io::Result<()> {
        let mut out = Out {
            w: BufWriter::new(w),
            first: true,
            next_flow: 1,
        };
        out.w.write_all(b"{\"traceEvents\":[\n")?;
        out.ev(&Ev {
            name: "process_name",
            ph: "M",
            args: Args {
                name: Some("jobsys"),
                ..Args::default()
            },
            ..Ev::default()
        })?;
        out.meta(FRAMES_TID, "frames", -1)?;
        for (k, t) in self.threads.iter().enumerate() {
            out.meta(job_tid(t.index), &t.name, 2 * k as i64)?;
            out.meta(
                state_tid(t.index),
                &format!("{} state", t.name),
                2 * k as i64 + 1,
            )?;
        }
        for f in &self.frames {
            let name = format!("frame {}", f.frame);
            let args = || Args {
                frame: Some(f.frame),
                ..Args::default()
            };
            out.ev(&Ev {
                name: &name,
                cat: "frame",
                ph: "X",
                ts: Some(f.begin_ns),
                dur: Some(f.end_ns - f.begin_ns),
                tid: FRAMES_TID,
                args: args(),
                ..Ev::default()
            })?;
            out.ev(&Ev {
                name: &name,
                cat: "frame",
                ph: "i",
                s: Some("g"),
                ts: Some(f.begin_ns),
                tid: FRAMES_TID,
                args: args(),
                ..Ev::default()
            })?;
        }
        for c in &self.active_workers {
            out.ev(&Ev {
                name: ACTIVE_WORKERS,
                cat: "active_workers",
                ph: "C",
                ts: Some(c.ts_ns),
                tid: FRAMES_TID,
                args: Args {
                    count: Some(u64::from(c.count)),
                    ..Args::default()
                },
                ..Ev::default()
            })?;
        }
        for t in &self.threads {
            let (tid, stid) = (job_tid(t.index), state_tid(t.index));
            for s in &t.states {
                out.ev(&Ev {
                    name: s.state.name(),
                    cat: "state",
                    ph: "X",
                    ts: Some(s.begin_ns),
                    dur: Some(s.end_ns - s.begin_ns),
                    tid: stid,
                    cname: Some(s.state.cname()),
                    args: Args {
                        note: t.note.as_deref(),
                        ..Args::default()
                    },
                    ..Ev::default()
                })?;
            }
            // Jobs and waits nest on one track: merge them by begin,
            // enclosing spans first.
            let (mut j, mut w) = (0, 0);
            while j < t.jobs.len() || w < t.waits.len() {
                let take_job = match (t.jobs.get(j), t.waits.get(w)) {
                    (Some(a), Some(b)) => {
                        span_order(a.begin_ns, a.end_ns) <= span_order(b.begin_ns, b.end_ns)
                    }
                    (a, _) => a.is_some(),
                };
                if take_job {
                    let s = &t.jobs[j];
                    j += 1;
                    out.ev(&Ev {
                        name: self.name_of(s),
                        cat: "job",
                        ph: "X",
                        ts: Some(s.begin_ns),
                        dur: Some(s.end_ns - s.begin_ns),
                        tid,
                        args: Args {
                            job: Some(s.job),
                            latency_ns: s.latency_ns,
                            partial: !s.complete,
                            accesses: self.access_args(s.job),
                            ..Args::default()
                        },
                        ..Ev::default()
                    })?;
                } else {
                    let s = &t.waits[w];
                    w += 1;
                    out.ev(&Ev {
                        name: "wait",
                        cat: "wait",
                        ph: "X",
                        ts: Some(s.begin_ns),
                        dur: Some(s.end_ns - s.begin_ns),
                        tid,
                        args: Args {
                            job: Some(s.job),
                            partial: !s.complete,
                            ..Args::default()
                        },
                        ..Ev::default()
                    })?;
                }
            }
            for s in &t.steals {
                out.ev(&Ev {
                    name: "steal",
                    cat: "steal",
                    ph: "i",
                    s: Some("t"),
                    ts: Some(s.ts_ns),
                    tid,
                    args: Args {
                        victim: Some(s.victim),
                        ..Args::default()
                    },
                    ..Ev::default()
                })?;
            }
            for wk in &t.wakes {
                let flow = match (wk.wakee.and_then(|i| self.thread(i)), wk.target_ns) {
                    (Some(wakee), Some(target)) => Some(out.flow(
                        "wake",
                        "wake",
                        (stid, wk.ts_ns),
                        (state_tid(wakee.index), target),
                        None,
                    )?),
                    _ => None,
                };
                out.ev(&Ev {
                    name: "wake",
                    cat: "wake",
                    ph: "i",
                    s: Some("t"),
                    ts: Some(wk.ts_ns),
                    tid,
                    args: Args {
                        wakee: wk.wakee,
                        flow,
                        ..Args::default()
                    },
                    ..Ev::default()
                })?;
            }
            for r in &t.releases {
                let Some((runner, begin)) = r.started else {
                    continue;
                };
                out.flow(
                    "release",
                    "dep",
                    (stid, r.ts_ns),
                    (job_tid(runner), begin),
                    Some(r.job),
                )?;
            }
        }
        // Metadata after the events, under keys viewers know.
        let w = &mut out.w;
        w.write_all(b"\n],\n\"otherData\":{\"producer\":\"jobsys\"},\n\"metadata\":{\"jobsys\":")?;
        write!(
            w,
            "{{\"format\":\"{FORMAT}\",\"version\":{VERSION},\"duration_ns\":{},\"threads\":[",
            self.duration_ns
        )?;
        for (k, t) in self.threads.iter().enumerate() {
            if k > 0 {
                w.write_all(b",")?;
            }
            write!(w, "\n{{\"index\":{},\"name\":", t.index)?;
            write_str(w, &t.name)?;
            write!(
                w,
                ",\"worker\":{},\"dropped\":{},\"tid\":{},\"state_tid\":{}",
                t.worker,
                t.dropped,
                job_tid(t.index),
                state_tid(t.index)
            )?;
            if let Some(n) = &t.note {
                w.write_all(b",\"note\":")?;
                write_str(w, n)?;
            }
            if let Some(ns) = t.run_queue_ns {
                write!(
                    w,
                    ",\"run_queue_ns\":{ns},\"run_queue_other_ns\":{}",
                    t.run_queue_other_ns
                )?;
            }
            if t.run_queue_unknown {
                w.write_all(b",\"run_queue_unknown\":true")?;
            }
            w.write_all(b"}")?;
        }
        w.write_all(b"]}}}\n")?;
        out.w.flush()
    }
}
