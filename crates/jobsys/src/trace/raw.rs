//! The raw capture file: a [`Trace`] written as recorded, with no
//! analysis, for `jobsys-trace` to read back exactly (it derives the
//! states, arrows and statistics, and exports Chrome trace JSON for
//! Perfetto). Written event by event through a `BufWriter`: the document
//! is never built in memory. The format is specified in `README.md` next
//! to this file ("The raw capture file").
//!
//! Why not Chrome trace JSON here: what makes that file worth opening (the
//! state tracks, wake and release arrows, scheduling latency, slices clipped
//! by the capture) is the timeline analysis, which lives in `jobsys-trace`;
//! from the raw events alone a viewer would get unmatched slice ends and no
//! states. So the core writes what it recorded, losslessly, in a small JSON
//! document that needs no JSON library to write and any JSON tool can read.
//!
//! Invariant: reading the file back (`jobsys_trace::read_raw`) gives a
//! `Trace` equal to the one written (names and numbers are exact: job ids
//! are hex strings, every other number an integer).

use super::event::{Event, JobId};
use super::recorder::{ThreadEvents, Trace};
use std::io::{self, BufWriter, Write};

/// The `format` field of a raw capture file.
pub const RAW_FORMAT: &str = "jobsys-raw-trace";
/// The format version this build writes (readers refuse newer ones).
/// 2 added the `accesses`, `read`, `write` and `write_each` kinds
/// (declared data access); 3 added `run_queue_wait` and
/// `run_queue_unknown` (run-queue samples). Older files read as before.
pub const RAW_VERSION: u64 = 3;

impl Trace {
    /// Write the capture as a raw capture file (the format is in
    /// `src/trace/README.md`): every thread's events as recorded, which
    /// `jobsys-trace` summarises, compares, renders and converts to Chrome
    /// trace JSON for Perfetto (`jobsys-trace export`).
    ///
    /// ```
    /// let js = jobsys::JobSystem::builder().workers(1).build().unwrap();
    /// js.trace_start();
    /// js.complete(js.job().name("physics").schedule(|| {}));
    /// let mut file = Vec::new();
    /// js.trace_stop().write_raw(&mut file).unwrap();
    /// assert!(file.starts_with(br#"{"format":"jobsys-raw-trace","version":3,"#));
    /// ```
    pub fn write_raw<W: Write>(&self, w: W) -> io::Result<()> {
        let mut w = BufWriter::new(w);
        write!(
            w,
            "{{\"format\":\"{RAW_FORMAT}\",\"version\":{RAW_VERSION},\"start_ns\":{},\"end_ns\":{},\"threads\":[",
            self.start_ns, self.end_ns
        )?;
        for (k, t) in self.threads.iter().enumerate() {
            if k > 0 {
                w.write_all(b",")?;
            }
            write_thread(&mut w, t)?;
        }
        w.write_all(b"\n]}\n")?;
        w.flush()
    }
}

fn write_thread<W: Write>(w: &mut W, t: &ThreadEvents) -> io::Result<()> {
    write!(w, "\n{{\"index\":{},\"name\":", t.index)?;
    write_str(w, &t.name)?;
    write!(
        w,
        ",\"worker\":{},\"dropped\":{},\"events\":[",
        t.worker, t.dropped
    )?;
    for (k, r) in t.events.iter().enumerate() {
        w.write_all(if k == 0 { b"\n" } else { b",\n" })?;
        write!(w, "[{},", r.ts_ns)?;
        write_event(w, &r.event)?;
        w.write_all(b"]")?;
    }
    w.write_all(b"]}")
}

/// `"kind"` and the event's fields (see the table in the README).
fn write_event<W: Write>(w: &mut W, e: &Event) -> io::Result<()> {
    let job = |w: &mut W, kind: &str, job: JobId| write!(w, "\"{kind}\",\"{job}\"");
    match *e {
        Event::CaptureStart => w.write_all(b"\"capture_start\""),
        Event::JobBegin { job: j, name } | Event::JobEnd { job: j, name } => {
            let kind = if matches!(e, Event::JobBegin { .. }) {
                "job_begin"
            } else {
                "job_end"
            };
            job(w, kind, j)?;
            w.write_all(b",")?;
            write_str(w, name)
        }
        Event::JobReady {
            job: j,
            by_dependency,
        } => job(w, if by_dependency { "released" } else { "ready" }, j),
        Event::Steal { victim } => write!(w, "\"steal\",{victim}"),
        Event::SearchBegin => w.write_all(b"\"search_begin\""),
        Event::SpinBegin => w.write_all(b"\"spin_begin\""),
        Event::SleepBegin => w.write_all(b"\"sleep_begin\""),
        Event::SleepEnd => w.write_all(b"\"sleep_end\""),
        Event::Wake { wakee: Some(i) } => write!(w, "\"wake\",{i}"),
        Event::Wake { wakee: None } => w.write_all(b"\"wake\",null"),
        Event::WaitBegin { job: j } => job(w, "wait_begin", j),
        Event::WaitEnd { job: j } => job(w, "wait_end", j),
        Event::FrameBegin { frame } => write!(w, "\"frame_begin\",{frame}"),
        Event::FrameEnd { frame } => write!(w, "\"frame_end\",{frame}"),
        Event::ActiveWorkers { count } => write!(w, "\"active_workers\",{count}"),
        Event::Accesses { job: j } => job(w, "accesses", j),
        Event::Access {
            resource,
            name,
            mode,
        } => {
            write!(w, "\"{}\",{resource},", mode.as_str())?;
            write_str(w, name)
        }
        Event::RunQueueWait { wait_ns } => write!(w, "\"run_queue_wait\",{wait_ns}"),
        Event::RunQueueUnknown => w.write_all(b"\"run_queue_unknown\""),
    }
}

/// `s` as a JSON string, exactly: `"` and `\` escaped, control characters
/// as `\n \r \t` or `\u00XX` (any JSON reader gives `s` back).
fn write_str<W: Write>(w: &mut W, s: &str) -> io::Result<()> {
    w.write_all(b"\"")?;
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if !matches!(b, b'"' | b'\\' | 0..=0x1f | 0x7f) {
            continue;
        }
        w.write_all(&bytes[start..i])?;
        match b {
            b'"' => w.write_all(b"\\\"")?,
            b'\\' => w.write_all(b"\\\\")?,
            b'\n' => w.write_all(b"\\n")?,
            b'\r' => w.write_all(b"\\r")?,
            b'\t' => w.write_all(b"\\t")?,
            _ => write!(w, "\\u{b:04x}")?,
        }
        start = i + 1;
    }
    w.write_all(&bytes[start..])?;
    w.write_all(b"\"")
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::trace::Record;

    fn write(t: &Trace) -> String {
        let mut buf = Vec::new();
        t.write_raw(&mut buf).unwrap();
        String::from_utf8(buf).unwrap()
    }

    /// The format, byte for byte (the README's example).
    #[test]
    fn every_event_kind_is_written_as_documented() {
        let r = |ts_ns, event| Record { ts_ns, event };
        let (a, b) = (JobId(0xA), JobId(0xB));
        let t = Trace {
            start_ns: 100,
            end_ns: 900,
            threads: vec![
                ThreadEvents {
                    index: 0,
                    name: "worker 0".into(),
                    worker: true,
                    dropped: 2,
                    events: vec![
                        r(110, Event::SleepEnd),
                        r(120, Event::SearchBegin),
                        r(130, Event::Steal { victim: 1 }),
                        r(
                            130,
                            Event::JobBegin {
                                job: a,
                                name: "physics",
                            },
                        ),
                        r(
                            140,
                            Event::JobReady {
                                job: b,
                                by_dependency: true,
                            },
                        ),
                        r(
                            150,
                            Event::JobEnd {
                                job: a,
                                name: "physics",
                            },
                        ),
                        r(160, Event::SpinBegin),
                        r(160, Event::RunQueueWait { wait_ns: 12_345 }),
                        r(170, Event::SleepBegin),
                        r(170, Event::RunQueueUnknown),
                    ],
                },
                ThreadEvents {
                    index: 1,
                    name: "main \"quoted\"\t(thread 1)".into(),
                    worker: false,
                    dropped: 0,
                    events: vec![
                        r(100, Event::CaptureStart),
                        r(101, Event::FrameBegin { frame: 0 }),
                        r(
                            102,
                            Event::JobReady {
                                job: a,
                                by_dependency: false,
                            },
                        ),
                        r(103, Event::Wake { wakee: Some(0) }),
                        r(104, Event::Wake { wakee: None }),
                        r(105, Event::WaitBegin { job: b }),
                        r(106, Event::Accesses { job: b }),
                        r(
                            106,
                            Event::Access {
                                resource: 3,
                                name: "positions",
                                mode: crate::trace::AccessMode::Read,
                            },
                        ),
                        r(
                            106,
                            Event::Access {
                                resource: 4,
                                name: "",
                                mode: crate::trace::AccessMode::Write,
                            },
                        ),
                        r(
                            107,
                            Event::Access {
                                resource: 5,
                                name: "v",
                                mode: crate::trace::AccessMode::WriteEach,
                            },
                        ),
                        r(800, Event::WaitEnd { job: b }),
                        r(801, Event::FrameEnd { frame: 0 }),
                    ],
                },
                ThreadEvents {
                    index: 2,
                    name: "bell\u{7}\\".into(),
                    worker: false,
                    dropped: 0,
                    events: vec![],
                },
            ],
        };
        let want = r#"{"format":"jobsys-raw-trace","version":3,"start_ns":100,"end_ns":900,"threads":[
{"index":0,"name":"worker 0","worker":true,"dropped":2,"events":[
[110,"sleep_end"],
[120,"search_begin"],
[130,"steal",1],
[130,"job_begin","0x000000000000000a","physics"],
[140,"released","0x000000000000000b"],
[150,"job_end","0x000000000000000a","physics"],
[160,"spin_begin"],
[160,"run_queue_wait",12345],
[170,"sleep_begin"],
[170,"run_queue_unknown"]]},
{"index":1,"name":"main \"quoted\"\t(thread 1)","worker":false,"dropped":0,"events":[
[100,"capture_start"],
[101,"frame_begin",0],
[102,"ready","0x000000000000000a"],
[103,"wake",0],
[104,"wake",null],
[105,"wait_begin","0x000000000000000b"],
[106,"accesses","0x000000000000000b"],
[106,"read",3,"positions"],
[106,"write",4,""],
[107,"write_each",5,"v"],
[800,"wait_end","0x000000000000000b"],
[801,"frame_end",0]]},
{"index":2,"name":"bell\u0007\\","worker":false,"dropped":0,"events":[]}
]}
"#;
        assert_eq!(write(&t), want);
    }

    #[test]
    fn an_empty_trace_is_a_document_without_threads() {
        assert_eq!(
            write(&Trace::default()),
            "{\"format\":\"jobsys-raw-trace\",\"version\":3,\"start_ns\":0,\"end_ns\":0,\"threads\":[\n]}\n"
        );
    }
}
