//! Reading the raw capture file that the core writes (`Trace::write_raw`;
//! the format is specified in `crates/jobsys/src/trace/README.md`, "The raw
//! capture file") back into the same [`Trace`]. Streaming: each thread's
//! events are read one at a time.
//!
//! Job names in a `Trace` are `&'static str` (the core records static
//! names); names read from files are interned for the life of the process,
//! each distinct name once.

use crate::import::ReadError;
use crate::json::{Json, JsonError, Parser};
use jobsys::trace::{
    AccessMode, Event, JobId, Record, ThreadEvents, Trace, RAW_FORMAT, RAW_VERSION,
};
use std::collections::HashSet;
use std::io::Read;
use std::sync::Mutex;

/// Read a raw capture file written by `Trace::write_raw` (any version up
/// to `jobsys::trace::RAW_VERSION`). [`Capture::read`](crate::Capture::read)
/// reads it and analyses it in one go.
pub fn read_raw<R: Read>(r: R) -> Result<Trace, ReadError> {
    match crate::import::read_any(r)? {
        crate::import::Doc::Raw(t) => Ok(t),
        crate::import::Doc::Chrome(_) => Err(ReadError::Format(
            "this is Chrome trace JSON, not a raw capture (read it with Capture::read)".into(),
        )),
    }
}

/// `s` as a `&'static str`, allocated once per distinct name.
fn intern(s: &str) -> &'static str {
    static NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let names = names.get_or_insert_with(HashSet::new);
    if let Some(&n) = names.get(s) {
        return n;
    }
    let n: &'static str = Box::leak(s.to_owned().into_boxed_str());
    names.insert(n);
    n
}

/// The top-level keys of a raw capture, as the reader meets them.
#[derive(Default)]
pub(crate) struct RawReader {
    format: Option<Json>,
    version: Option<Json>,
    start_ns: Option<Json>,
    end_ns: Option<Json>,
    threads: Vec<ThreadEvents>,
    /// `threads` came before `format` (skipped: not known to be ours then).
    threads_skipped: bool,
    /// The first event or thread that made no sense.
    failed: Option<String>,
}

impl RawReader {
    /// Read the value of top-level `key` if it is a raw-capture key;
    /// `false` (nothing read) otherwise.
    pub(crate) fn key<R: Read>(&mut self, p: &mut Parser<R>, key: &str) -> Result<bool, JsonError> {
        let slot = match key {
            "format" => &mut self.format,
            "version" => &mut self.version,
            "start_ns" => &mut self.start_ns,
            "end_ns" => &mut self.end_ns,
            "threads" if self.format.is_some() => {
                p.array(|p| self.thread(p))?;
                return Ok(true);
            }
            "threads" => {
                self.threads_skipped = true;
                return Ok(false);
            }
            _ => return Ok(false),
        };
        *slot = Some(p.value()?);
        Ok(true)
    }

    /// Has a top-level `format` key: this document claims to be a raw
    /// capture (Chrome trace JSON has none).
    pub(crate) fn claimed(&self) -> bool {
        self.format.is_some()
    }

    fn thread<R: Read>(&mut self, p: &mut Parser<R>) -> Result<(), JsonError> {
        let k = self.threads.len();
        let mut t = ThreadEvents::default();
        let mut index = None;
        let failed = &mut self.failed;
        p.object(|p, key| {
            match key.as_str() {
                "events" => {
                    return p.array(|p| {
                        let v = p.value()?;
                        if failed.is_none() {
                            match event(&v) {
                                Ok(r) => t.events.push(r),
                                Err(m) => {
                                    *failed =
                                        Some(format!("thread {k}, event {}: {m}", t.events.len()))
                                }
                            }
                        }
                        Ok(())
                    })
                }
                "index" => index = p.value()?.as_u64().and_then(|i| u32::try_from(i).ok()),
                "name" => t.name = p.value()?.as_str().unwrap_or("").to_owned(),
                "worker" => t.worker = p.value()?.as_bool().unwrap_or(false),
                "dropped" => t.dropped = p.value()?.as_u64().unwrap_or(0),
                _ => drop(p.value()?),
            }
            Ok(())
        })?;
        match index {
            Some(i) => t.index = i,
            None => {
                failed.get_or_insert_with(|| format!("thread {k}: no index"));
            }
        }
        self.threads.push(t);
        Ok(())
    }

    pub(crate) fn finish(self) -> Result<Trace, ReadError> {
        if self.format.as_ref().and_then(Json::as_str) != Some(RAW_FORMAT) {
            return Err(ReadError::NotJobsys);
        }
        let version = self.version.as_ref().and_then(Json::as_u64);
        match version {
            Some(v) if v > RAW_VERSION => {
                return Err(ReadError::Format(format!(
                    "raw format version {v} is newer than this reader's ({RAW_VERSION})"
                )))
            }
            None => return Err(ReadError::Format("no version".into())),
            Some(_) => {}
        }
        if self.threads_skipped {
            return Err(ReadError::Format(
                "\"threads\" comes before \"format\" (the writer puts format first)".into(),
            ));
        }
        if let Some(m) = self.failed {
            return Err(ReadError::Format(m));
        }
        let ns = |v: Option<Json>, what: &str| {
            v.as_ref()
                .and_then(Json::as_u64)
                .ok_or_else(|| ReadError::Format(format!("no {what}")))
        };
        Ok(Trace {
            start_ns: ns(self.start_ns, "start_ns")?,
            end_ns: ns(self.end_ns, "end_ns")?,
            threads: self.threads,
        })
    }
}

/// One event, `[ts_ns, kind, fields…]` (the table in the format's spec).
fn event(v: &Json) -> Result<Record, String> {
    let Json::Arr(a) = v else {
        return Err("not an array".into());
    };
    let field = |i: usize, what: &str| a.get(i).ok_or_else(|| format!("no {what}"));
    let num = |i: usize, what: &str| {
        field(i, what)?
            .as_u64()
            .ok_or_else(|| format!("{what} is not an integer"))
    };
    let idx = |i: usize, what: &str| {
        u32::try_from(num(i, what)?).map_err(|_| format!("{what} out of range"))
    };
    let job = || {
        field(2, "job id")?
            .as_str()
            .and_then(|s| s.parse::<JobId>().ok())
            .ok_or_else(|| "bad job id".to_owned())
    };
    let name = || {
        field(3, "name")?
            .as_str()
            .map(intern)
            .ok_or_else(|| "the name is not a string".to_owned())
    };
    let ts_ns = num(0, "timestamp")?;
    let kind = field(1, "kind")?
        .as_str()
        .ok_or_else(|| "the kind is not a string".to_owned())?;
    let event = match kind {
        "capture_start" => Event::CaptureStart,
        "job_begin" => Event::JobBegin {
            job: job()?,
            name: name()?,
        },
        "job_end" => Event::JobEnd {
            job: job()?,
            name: name()?,
        },
        "ready" | "released" => Event::JobReady {
            job: job()?,
            by_dependency: kind == "released",
        },
        "steal" => Event::Steal {
            victim: idx(2, "victim")?,
        },
        "search_begin" => Event::SearchBegin,
        "spin_begin" => Event::SpinBegin,
        "sleep_begin" => Event::SleepBegin,
        "sleep_end" => Event::SleepEnd,
        "wake" => Event::Wake {
            wakee: match field(2, "wakee")? {
                Json::Null => None,
                _ => Some(idx(2, "wakee")?),
            },
        },
        "wait_begin" => Event::WaitBegin { job: job()? },
        "wait_end" => Event::WaitEnd { job: job()? },
        "frame_begin" => Event::FrameBegin {
            frame: num(2, "frame")?,
        },
        "frame_end" => Event::FrameEnd {
            frame: num(2, "frame")?,
        },
        "active_workers" => Event::ActiveWorkers {
            count: idx(2, "count")?,
        },
        // Version 2: declared data access.
        "accesses" => Event::Accesses { job: job()? },
        "read" | "write" | "write_each" => Event::Access {
            resource: num(2, "resource")?,
            name: name()?,
            mode: match kind {
                "read" => AccessMode::Read,
                "write" => AccessMode::Write,
                _ => AccessMode::WriteEach,
            },
        },
        // Version 3: run-queue samples.
        "run_queue_wait" => Event::RunQueueWait {
            wait_ns: num(2, "wait")?,
        },
        "run_queue_unknown" => Event::RunQueueUnknown,
        other => return Err(format!("unknown kind {other:?}")),
    };
    Ok(Record { ts_ns, event })
}
