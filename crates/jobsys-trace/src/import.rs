//! Reading capture files: [`Capture::read`] takes either kind, telling them
//! apart by their top-level keys: a raw capture (`format`; `raw.rs` reads
//! it into a `Trace`, which is then analysed) or the Chrome trace JSON
//! that `export.rs` writes, read back into the same [`Capture`] (so a
//! summary of the file equals the summary of the capture that wrote it).
//! Streaming: Chrome events are read one at a time into per-track lists,
//! which are attached to threads when the trailing `metadata.jobsys` object
//! has been read. Other producers' traces are refused (no
//! `metadata.jobsys`).

use crate::export::{job_tid, state_tid, ACTIVE_WORKERS, FORMAT, FRAMES_TID, VERSION};
use crate::json::{Json, JsonError, Parser};
use crate::raw::RawReader;
use crate::timeline::{
    span_order, ActiveWorkersChange, Capture, FrameSpan, Interner, JobSpan, Release, StateSpan,
    Steal, ThreadState, ThreadTimeline, WaitSpan, Wake,
};
use jobsys::trace::{JobId, Trace};
use std::collections::HashMap;
use std::fmt;
use std::io::{self, Read};

/// Why a capture file could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReadError {
    Io(io::Error),
    /// Not JSON, or not the trace event object format (with the byte
    /// offset where reading stopped).
    Json(String),
    /// JSON, but neither a raw capture (`format` is not
    /// `"jobsys-raw-trace"`) nor Chrome trace JSON written by jobsys (no
    /// `metadata.jobsys`).
    NotJobsys,
    /// Written by jobsys but inconsistent, or of a newer format version.
    Format(String),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "cannot read the capture: {e}"),
            ReadError::Json(e) => write!(f, "not a Chrome trace JSON file: {e}"),
            ReadError::NotJobsys => write!(
                f,
                "not a jobsys capture (neither a raw capture from Trace::write_raw nor Chrome \
                 trace JSON from jobsys-trace export)"
            ),
            ReadError::Format(m) => write!(f, "bad jobsys capture: {m}"),
        }
    }
}

impl std::error::Error for ReadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReadError::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<JsonError> for ReadError {
    fn from(e: JsonError) -> Self {
        match e {
            JsonError::Io(e) => ReadError::Io(e),
            JsonError::Syntax { offset, msg } => ReadError::Json(format!("{msg} at byte {offset}")),
        }
    }
}

/// What one track (tid) holds until we know its thread.
#[derive(Default)]
struct Track {
    states: Vec<StateSpan>,
    jobs: Vec<JobSpan>,
    waits: Vec<WaitSpan>,
    steals: Vec<Steal>,
    /// With the flow id of their arrow.
    wakes: Vec<(Wake, Option<u64>)>,
    releases: Vec<(Release, u64)>,
}

#[derive(Default)]
struct Reader {
    names: Interner,
    tracks: HashMap<u64, Track>,
    frames: Vec<FrameSpan>,
    active_workers: Vec<ActiveWorkersChange>,
    /// Flow ends by id: (tid, ts).
    flow_ends: HashMap<u64, (u64, u64)>,
}

fn bad(what: &str, e: &Json) -> ReadError {
    let name = e.get("name").and_then(Json::as_str).unwrap_or("?");
    let tid = e.get("tid").and_then(Json::as_u64).unwrap_or(0);
    ReadError::Format(format!("{what}: event {name:?} on tid {tid}"))
}

impl Reader {
    fn event(&mut self, e: &Json) -> Result<(), ReadError> {
        let field = |k: &str| e.get(k);
        let s = |k: &str| field(k).and_then(Json::as_str).unwrap_or("");
        let arg = |k: &str| field("args").and_then(|a| a.get(k));
        let arg_u64 = |k: &str| arg(k).and_then(Json::as_u64);
        let job = || -> Result<JobId, ReadError> {
            match arg("job").and_then(Json::as_str) {
                Some(j) => j.parse().map_err(|_| bad("bad job id", e)),
                None => Ok(JobId::default()),
            }
        };
        let partial = arg("partial").and_then(Json::as_bool).unwrap_or(false);
        let tid = field("tid").and_then(Json::as_u64).unwrap_or(0);
        let begin = field("ts").and_then(Json::as_ns).unwrap_or(0);
        let end = begin + field("dur").and_then(Json::as_ns).unwrap_or(0);
        match (s("ph"), s("cat")) {
            ("X", "state") => {
                let state =
                    ThreadState::from_name(s("name")).ok_or_else(|| bad("unknown state", e))?;
                self.tracks.entry(tid).or_default().states.push(StateSpan {
                    state,
                    begin_ns: begin,
                    end_ns: end,
                });
            }
            ("X", "job") => {
                let span = JobSpan {
                    name: self.names.intern(s("name")),
                    job: job()?,
                    begin_ns: begin,
                    end_ns: end,
                    latency_ns: arg_u64("latency_ns"),
                    complete: !partial,
                };
                self.tracks.entry(tid).or_default().jobs.push(span);
            }
            ("X", "wait") => {
                let span = WaitSpan {
                    job: job()?,
                    begin_ns: begin,
                    end_ns: end,
                    complete: !partial,
                };
                self.tracks.entry(tid).or_default().waits.push(span);
            }
            ("X", "frame") if tid == FRAMES_TID => self.frames.push(FrameSpan {
                frame: arg_u64("frame").ok_or_else(|| bad("frame without number", e))?,
                begin_ns: begin,
                end_ns: end,
            }),
            ("C", _) if s("name") == ACTIVE_WORKERS => {
                let count = arg_u64("count")
                    .and_then(|c| u32::try_from(c).ok())
                    .ok_or_else(|| bad("counter without count", e))?;
                self.active_workers.push(ActiveWorkersChange {
                    ts_ns: begin,
                    count,
                });
            }
            ("i", "steal") => {
                let victim = arg_u64("victim").ok_or_else(|| bad("steal without victim", e))?;
                self.tracks.entry(tid).or_default().steals.push(Steal {
                    ts_ns: begin,
                    victim: victim as u32,
                });
            }
            ("i", "wake") => {
                let wake = Wake {
                    ts_ns: begin,
                    wakee: arg_u64("wakee").map(|w| w as u32),
                    target_ns: None,
                };
                let flow = arg_u64("flow");
                self.tracks.entry(tid).or_default().wakes.push((wake, flow));
            }
            ("s", "dep") => {
                let id = field("id")
                    .and_then(Json::as_u64)
                    .ok_or_else(|| bad("flow without id", e))?;
                let r = Release {
                    ts_ns: begin,
                    job: job()?,
                    started: None,
                };
                self.tracks.entry(tid).or_default().releases.push((r, id));
            }
            ("f", _) => {
                let id = field("id")
                    .and_then(Json::as_u64)
                    .ok_or_else(|| bad("flow without id", e))?;
                self.flow_ends.insert(id, (tid, begin));
            }
            _ => {}
        }
        Ok(())
    }

    fn finish(mut self, meta: &Json) -> Result<Capture, ReadError> {
        if meta.get("format").and_then(Json::as_str) != Some(FORMAT) {
            return Err(ReadError::NotJobsys);
        }
        let version = meta.get("version").and_then(Json::as_u64).unwrap_or(0);
        if version > VERSION {
            return Err(ReadError::Format(format!(
                "format version {version} is newer than this reader's ({VERSION})"
            )));
        }
        let duration_ns = meta
            .get("duration_ns")
            .and_then(Json::as_u64)
            .ok_or_else(|| ReadError::Format("no duration_ns".into()))?;
        let Some(Json::Arr(list)) = meta.get("threads") else {
            return Err(ReadError::Format("no threads".into()));
        };
        let mut threads = Vec::new();
        for t in list {
            let index = t
                .get("index")
                .and_then(Json::as_u64)
                .ok_or_else(|| ReadError::Format("thread without index".into()))?
                as u32;
            let mut tl = ThreadTimeline {
                index,
                name: t
                    .get("name")
                    .and_then(Json::as_str)
                    .unwrap_or("")
                    .to_owned(),
                worker: t.get("worker").and_then(Json::as_bool).unwrap_or(false),
                dropped: t.get("dropped").and_then(Json::as_u64).unwrap_or(0),
                note: t.get("note").and_then(Json::as_str).map(str::to_owned),
                run_queue_ns: t.get("run_queue_ns").and_then(Json::as_u64),
                run_queue_other_ns: t
                    .get("run_queue_other_ns")
                    .and_then(Json::as_u64)
                    .unwrap_or(0),
                run_queue_unknown: t
                    .get("run_queue_unknown")
                    .and_then(Json::as_bool)
                    .unwrap_or(false),
                ..ThreadTimeline::default()
            };
            let jobs = self.tracks.remove(&job_tid(index)).unwrap_or_default();
            let states = self.tracks.remove(&state_tid(index)).unwrap_or_default();
            tl.states = states.states;
            tl.jobs = jobs.jobs;
            tl.waits = jobs.waits;
            tl.steals = jobs.steals;
            tl.wakes = jobs
                .wakes
                .into_iter()
                .map(|(mut w, flow)| {
                    w.target_ns = flow.and_then(|f| self.flow_ends.get(&f)).map(|&(_, ts)| ts);
                    w
                })
                .collect();
            tl.releases = states
                .releases
                .into_iter()
                .map(|(mut r, flow)| {
                    r.started = self.flow_ends.get(&flow).and_then(|&(tid, ts)| {
                        // The arrow ends on the runner's job track.
                        let runner = u32::try_from(tid.checked_sub(1)?).ok()?;
                        Some((runner, ts))
                    });
                    r
                })
                .collect();
            threads.push(tl);
        }
        threads.sort_by_key(|t| t.index);
        for t in &mut threads {
            t.states.sort_by_key(|s| s.begin_ns);
            t.jobs.sort_by_key(|s| span_order(s.begin_ns, s.end_ns));
            t.waits.sort_by_key(|s| span_order(s.begin_ns, s.end_ns));
            t.steals.sort_by_key(|s| s.ts_ns);
            t.wakes.sort_by_key(|s| s.ts_ns);
            t.releases.sort_by_key(|s| s.ts_ns);
        }
        self.frames.sort_by_key(|f| f.frame);
        self.active_workers.sort_by_key(|c| c.ts_ns);
        Ok(Capture {
            duration_ns,
            names: self.names.names,
            threads,
            frames: self.frames,
            active_workers: self.active_workers,
            ..Capture::default()
        })
    }
}

/// What a capture file held.
pub(crate) enum Doc {
    /// A raw capture (`Trace::write_raw`).
    Raw(Trace),
    /// Chrome trace JSON written by [`Capture::write_chrome_json`].
    Chrome(Capture),
}

/// Read either kind of capture file, streaming; which one it is shows in
/// its top-level keys (a raw capture has `format`, Chrome JSON has
/// `traceEvents`), in whatever order they come.
pub(crate) fn read_any<R: Read>(r: R) -> Result<Doc, ReadError> {
    let mut p = Parser::new(r);
    let mut raw = RawReader::default();
    let mut reader = Reader::default();
    let mut meta: Option<Json> = None;
    let mut failed: Option<ReadError> = None;
    let mut saw_events = false;
    let res = p.object(|p, key| {
        if raw.key(p, &key)? {
            return Ok(());
        }
        match key.as_str() {
            "traceEvents" => {
                saw_events = true;
                p.array(|p| {
                    let e = p.value()?;
                    if failed.is_none() {
                        if let Err(err) = reader.event(&e) {
                            failed = Some(err);
                        }
                    }
                    Ok(())
                })
            }
            "metadata" => p.object(|p, key| {
                let v = p.value()?;
                if key == "jobsys" {
                    meta = Some(v);
                }
                Ok(())
            }),
            _ => p.value().map(drop),
        }
    });
    res?;
    p.finish()?;
    if raw.claimed() && !saw_events {
        return raw.finish().map(Doc::Raw);
    }
    if let Some(e) = failed {
        return Err(e);
    }
    if !saw_events {
        return Err(ReadError::NotJobsys);
    }
    let meta = meta.as_ref().ok_or(ReadError::NotJobsys)?;
    reader.finish(meta).map(Doc::Chrome)
}

impl Capture {
    /// Read a capture file of either kind: a raw capture
    /// (`Trace::write_raw`, analysed here), or Chrome trace JSON written by
    /// [`Capture::write_chrome_json`] (read back as it was written). What
    /// every `jobsys-trace` command reads.
    pub fn read<R: Read>(r: R) -> Result<Capture, ReadError> {
        Ok(match read_any(r)? {
            Doc::Raw(t) => Capture::from_trace(&t),
            Doc::Chrome(c) => c,
        })
    }

    /// Read Chrome trace JSON written by [`Capture::write_chrome_json`] /
    /// [`TraceExt::write_chrome_json`](crate::TraceExt::write_chrome_json),
    /// back to the capture that wrote it.
    pub fn read_chrome_json<R: Read>(r: R) -> Result<Capture, ReadError> {
        match read_any(r)? {
            Doc::Chrome(c) => Ok(c),
            Doc::Raw(_) => Err(ReadError::Format(
                "this is a raw capture, not Chrome trace JSON (read it with Capture::read)".into(),
            )),
        }
    }
}
