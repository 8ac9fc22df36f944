//! Run-queue wait: how long a thread was runnable but not running (it
//! waited for a CPU, preempted by the OS or not yet picked after a wake),
//! read from the kernel's per-thread scheduler statistics.
//!
//! Linux keeps, per thread, `/proc/self/task/<tid>/schedstat` (the same
//! file as `/proc/thread-self/schedstat`, which is tried first): three
//! numbers, nanoseconds on a CPU, nanoseconds waiting on a run queue,
//! timeslices run. The wait is
//! cumulative; the tracer reads it now and then and records the
//! difference since its previous reading on that thread
//! (`Event::RunQueueWait`), which `jobsys-trace` turns into the
//! *preempted* state.
//!
//! When (`sample`): only on the recording path (the cold, out-of-line
//! one: never while tracing is off), at a thread's state boundaries (a
//! job's begin or end, a search, spin or sleep begin, a sleep end, a
//! wait's begin or end), and only once at least [`SAMPLE_INTERVAL_NS`]
//! passed since that thread's previous reading: at most one file read
//! per thread per 50 µs, so a long searching span is always closed by a
//! reading, and the reading before it is at most 50 µs before the span
//! began. The first boundary of a thread in a capture (or, with profiler
//! hooks only, its first ever) is a baseline: recorded as a wait of 0.
//!
//! Without the file (not Linux, or a kernel built without
//! `CONFIG_SCHED_INFO`) the feature is off: the first boundary of each
//! thread in a capture records `Event::RunQueueUnknown` once, nothing
//! else is read, and the summary says so.
//!
//! Invariant: the per-thread state (`SAMPLER`) is the calling OS thread's
//! own (schedstat is per OS thread, not per job-system context), and
//! belongs to one capture of one system (`key`); another key starts a
//! new baseline.

use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};

/// The least time between two readings on one thread (50 µs).
pub const SAMPLE_INTERVAL_NS: u64 = 50_000;

/// One reading of a thread's scheduler statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SchedStat {
    /// Nanoseconds it ran on a CPU.
    pub on_cpu_ns: u64,
    /// Nanoseconds it waited on a run queue (runnable, not running).
    pub wait_ns: u64,
    /// Timeslices it ran.
    pub slices: u64,
}

/// Parse the text of a `schedstat` file: three unsigned decimal numbers
/// separated by spaces (a trailing newline allowed). `None` for anything
/// else (fewer or more fields, a sign, a non-digit, an overflow).
pub(crate) fn parse(text: &[u8]) -> Option<SchedStat> {
    let text = std::str::from_utf8(text).ok()?;
    let mut it = text.strip_suffix('\n').unwrap_or(text).split(' ');
    let mut field = || -> Option<u64> {
        let f = it.next()?;
        if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        f.parse().ok()
    };
    let s = SchedStat {
        on_cpu_ns: field()?,
        wait_ns: field()?,
        slices: field()?,
    };
    it.next().is_none().then_some(s)
}

/// Why a reading failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ReadError {
    /// No such file (not Linux, or a kernel without per-thread schedstat):
    /// the feature is off for the process.
    Unavailable,
    /// The file exists but could not be read or parsed this time.
    Failed,
}

/// Open a schedstat file (a missing one: `Unavailable`).
fn open(path: &str) -> Result<std::fs::File, ReadError> {
    std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ReadError::Unavailable,
        _ => ReadError::Failed,
    })
}

/// Read an open schedstat file from its start (`pread` at offset 0: the
/// kernel makes the text anew for each read from 0, so one open file
/// serves every reading) and parse it. No allocation: a stack buffer.
fn read_file(f: &std::fs::File) -> Result<SchedStat, ReadError> {
    let mut buf = [0u8; 128];
    let mut len = 0;
    loop {
        match read_at(f, &mut buf[len..], len as u64) {
            Ok(0) => break,
            Ok(n) => {
                len += n;
                if len == buf.len() {
                    return Err(ReadError::Failed);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(ReadError::Failed),
        }
    }
    parse(&buf[..len]).ok_or(ReadError::Failed)
}

#[cfg(unix)]
fn read_at(f: &std::fs::File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(f, buf, at)
}

#[cfg(not(unix))]
fn read_at(f: &std::fs::File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = f;
    f.seek(SeekFrom::Start(at))?;
    f.read(buf)
}

/// Open the file at `path`, read it once and parse it (tests).
#[cfg(all(test, not(loom)))]
fn read_path(path: &str) -> Result<SchedStat, ReadError> {
    read_file(&open(path)?)
}

/// The calling thread's statistics, through its own file, opened at its
/// first reading and kept open (closed when the thread exits): an open
/// of a `/proc` file costs several times the read.
#[cfg(target_os = "linux")]
pub(crate) fn read_current() -> Result<SchedStat, ReadError> {
    use std::cell::RefCell;
    thread_local! {
        static FILE: RefCell<Option<std::fs::File>> = const { RefCell::new(None) };
    }
    FILE.try_with(|cell| {
        let mut slot = cell.borrow_mut();
        let f = match &mut *slot {
            Some(f) => f,
            none => none.insert(open_own()?),
        };
        let r = read_file(f);
        if r.is_err() {
            // Open it anew next time.
            *slot = None;
        }
        r
    })
    // In this thread's thread-local destructors: no reading.
    .unwrap_or(Err(ReadError::Failed))
}

/// Open the calling thread's schedstat file: `/proc/thread-self/…`, or,
/// on a kernel older than 3.17 (no `thread-self`), the same file by
/// thread id, `/proc/self/task/<tid>/schedstat`.
#[cfg(target_os = "linux")]
fn open_own() -> Result<std::fs::File, ReadError> {
    match open("/proc/thread-self/schedstat") {
        Err(ReadError::Unavailable) => {
            // SAFETY: `gettid` takes no arguments, cannot fail and touches
            // no memory; the raw syscall avoids needing glibc 2.30's
            // wrapper.
            let tid = unsafe { libc::syscall(libc::SYS_gettid) };
            open(&format!("/proc/self/task/{tid}/schedstat"))
        }
        r => r,
    }
}

/// The calling thread's statistics: not measured on this OS.
#[cfg(not(target_os = "linux"))]
pub(crate) fn read_current() -> Result<SchedStat, ReadError> {
    Err(ReadError::Unavailable)
}

/// Process-wide: 0 not tried yet, 1 available, 2 unavailable (a reading
/// found no file; never tried again).
static AVAILABLE: AtomicU8 = AtomicU8::new(0);

/// Can this process read run-queue wait (`/proc/thread-self/schedstat`)?
/// Tries once if nobody has.
pub fn run_queue_available() -> bool {
    match AVAILABLE.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => read_checked().is_ok(),
    }
}

/// `read_current`, remembering a missing file process-wide.
fn read_checked() -> Result<SchedStat, ReadError> {
    if AVAILABLE.load(Ordering::Relaxed) == 2 {
        return Err(ReadError::Unavailable);
    }
    let r = read_current();
    match r {
        Ok(_) => AVAILABLE.store(1, Ordering::Relaxed),
        Err(ReadError::Unavailable) => AVAILABLE.store(2, Ordering::Relaxed),
        Err(ReadError::Failed) => {}
    }
    r
}

/// What `sample` asks the recorder to record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sample {
    /// Run-queue wait (ns) since this thread's previous sample of the same
    /// key (0 for the baseline).
    Wait(u64),
    /// Run-queue wait cannot be read here (said once per thread and key).
    Unknown,
}

#[derive(Clone, Copy)]
struct Sampler {
    /// The capture this state belongs to (`TraceState` address, epoch);
    /// `(0, 0)`: none yet.
    key: (usize, u32),
    /// When the previous reading was taken (tracer clock).
    last_ts: u64,
    /// Its run-queue wait.
    last_wait: u64,
    /// `Unknown` was said for this key: read nothing more.
    unknown: bool,
}

thread_local! {
    static SAMPLER: Cell<Sampler> = const {
        Cell::new(Sampler { key: (0, 0), last_ts: 0, last_wait: 0, unknown: false })
    };
}

/// A state boundary of the calling thread at `ts` (tracer clock), for
/// the capture `key`: read the thread's run-queue wait if due (see the
/// module docs) and say what to record, if anything. Cheap when not due:
/// a thread-local read and a compare.
pub(crate) fn sample(key: (usize, u32), ts: u64) -> Option<Sample> {
    sample_with(key, ts, read_checked)
}

/// `sample` with the reading supplied (tests).
fn sample_with(
    key: (usize, u32),
    ts: u64,
    read: impl FnOnce() -> Result<SchedStat, ReadError>,
) -> Option<Sample> {
    SAMPLER
        .try_with(|c| {
            let s = c.get();
            let fresh = s.key != key;
            if !fresh && (s.unknown || ts.saturating_sub(s.last_ts) < SAMPLE_INTERVAL_NS) {
                return None;
            }
            match read() {
                Ok(now) => {
                    let wait = if fresh {
                        0
                    } else {
                        now.wait_ns.saturating_sub(s.last_wait)
                    };
                    c.set(Sampler {
                        key,
                        last_ts: ts,
                        last_wait: now.wait_ns,
                        unknown: false,
                    });
                    Some(Sample::Wait(wait))
                }
                Err(ReadError::Unavailable) => {
                    c.set(Sampler {
                        key,
                        last_ts: ts,
                        last_wait: 0,
                        unknown: true,
                    });
                    Some(Sample::Unknown)
                }
                // A failed read of an existing file: try again at the next
                // boundary (without a baseline yet, the key stays fresh);
                // the next reading's wait covers the gap.
                Err(ReadError::Failed) => None,
            }
        })
        .ok()
        .flatten()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_good_line_parses() {
        assert_eq!(
            parse(b"43535309 8218518 89\n"),
            Some(SchedStat {
                on_cpu_ns: 43535309,
                wait_ns: 8218518,
                slices: 89
            })
        );
        assert_eq!(
            parse(b"0 0 1"),
            Some(SchedStat {
                on_cpu_ns: 0,
                wait_ns: 0,
                slices: 1
            })
        );
        let max = format!("{} {} {}", u64::MAX, u64::MAX, u64::MAX);
        assert_eq!(parse(max.as_bytes()).map(|s| s.wait_ns), Some(u64::MAX));
    }

    #[test]
    fn malformed_text_is_refused() {
        for bad in [
            &b""[..],
            b"\n",
            b"1 2",
            b"1 2 3 4",
            b"1  2 3",
            b"1 -2 3",
            b"1 +2 3",
            b"1 2 x",
            b"1 2 3x",
            b" 1 2 3",
            b"1\t2\t3",
            b"1 2 3\n\n",
            b"1 2 18446744073709551616",
            b"1 2 \xff",
        ] {
            assert_eq!(parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_missing_file_is_unavailable_and_a_bad_one_failed() {
        let dir = std::env::temp_dir().join(format!("jobsys-sched-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("no-such-schedstat");
        assert_eq!(
            read_path(missing.to_str().unwrap()),
            Err(ReadError::Unavailable)
        );
        let bad = dir.join("bad-schedstat");
        std::fs::write(&bad, "not numbers\n").unwrap();
        assert_eq!(read_path(bad.to_str().unwrap()), Err(ReadError::Failed));
        let long = dir.join("long-schedstat");
        std::fs::write(&long, "1 ".repeat(100)).unwrap();
        assert_eq!(read_path(long.to_str().unwrap()), Err(ReadError::Failed));
        let good = dir.join("good-schedstat");
        std::fs::write(&good, "10 20 3\n").unwrap();
        assert_eq!(
            read_path(good.to_str().unwrap()),
            Ok(SchedStat {
                on_cpu_ns: 10,
                wait_ns: 20,
                slices: 3
            })
        );
        // One open file serves every reading (read from its start).
        let f = open(good.to_str().unwrap()).unwrap();
        assert_eq!(read_file(&f), read_file(&f));
        assert_eq!(read_file(&f).map(|s| s.slices), Ok(3));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    // Miri emulates `gettid` (its own thread ids, not the kernel's), so the
    // file by thread id is not this thread's there; this test is about the
    // kernel's files, which only a native run reads.
    #[cfg_attr(miri, ignore)]
    fn this_thread_reads_its_own_file_where_the_kernel_has_one() {
        if !std::path::Path::new("/proc/thread-self/schedstat").exists() {
            println!("skipped: no /proc/thread-self/schedstat on this kernel");
            return;
        }
        // The first reading opens the thread's file, the second reuses it.
        let a = read_current().expect("schedstat readable");
        // The kernel adds a running thread's time at a tick or a switch,
        // not when the file is read: run, then yield (a switch), and look
        // again, up to 100 times (a release build runs the loop in well
        // under a tick).
        let mut b = a;
        for _ in 0..100 {
            let mut x = 0u64;
            for i in 0..1_000_000u64 {
                x = std::hint::black_box(x.wrapping_add(i));
            }
            std::thread::yield_now();
            b = read_current().expect("schedstat readable");
            if b.on_cpu_ns > a.on_cpu_ns {
                break;
            }
        }
        assert!(b.on_cpu_ns > a.on_cpu_ns, "{a:?} then {b:?}");
        assert!(b.wait_ns >= a.wait_ns);
        assert!(run_queue_available());
        // The file by thread id is the same file.
        // SAFETY: as in `open_own`.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) };
        let by_tid = read_path(&format!("/proc/self/task/{tid}/schedstat")).unwrap();
        let c = read_current().unwrap();
        assert!(by_tid.on_cpu_ns >= b.on_cpu_ns && by_tid.on_cpu_ns <= c.on_cpu_ns);
    }

    fn stat(wait_ns: u64) -> impl FnOnce() -> Result<SchedStat, ReadError> {
        move || {
            Ok(SchedStat {
                on_cpu_ns: 0,
                wait_ns,
                slices: 0,
            })
        }
    }

    #[test]
    fn samples_are_rate_limited_deltas_from_a_baseline_per_key() {
        // Runs on its own test thread: its SAMPLER starts empty.
        let k = (1, 1);
        let t0 = 1_000_000;
        assert_eq!(sample_with(k, t0, stat(500)), Some(Sample::Wait(0)));
        // Not due: nothing read.
        let never = || -> Result<SchedStat, ReadError> { panic!("read too early") };
        assert_eq!(sample_with(k, t0 + SAMPLE_INTERVAL_NS - 1, never), None);
        assert_eq!(
            sample_with(k, t0 + SAMPLE_INTERVAL_NS, stat(800)),
            Some(Sample::Wait(300))
        );
        // A failed read keeps the previous reading: the next one covers it.
        let failed = || Err(ReadError::Failed);
        assert_eq!(sample_with(k, t0 + 3 * SAMPLE_INTERVAL_NS, failed), None);
        assert_eq!(
            sample_with(k, t0 + 4 * SAMPLE_INTERVAL_NS, stat(1000)),
            Some(Sample::Wait(200))
        );
        // Another capture: a new baseline at once.
        let k2 = (1, 2);
        assert_eq!(
            sample_with(k2, t0 + 4 * SAMPLE_INTERVAL_NS + 1, stat(5000)),
            Some(Sample::Wait(0))
        );
        // Unavailable: said once per key, then nothing is read.
        let k3 = (1, 3);
        let missing = || Err(ReadError::Unavailable);
        assert_eq!(sample_with(k3, t0, missing), Some(Sample::Unknown));
        assert_eq!(sample_with(k3, t0 + 10 * SAMPLE_INTERVAL_NS, never), None);
    }
}
