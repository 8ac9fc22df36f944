//! What the tracer records: job identities, the public [`Event`] enum, and
//! the fixed-size 32-byte record the per-thread buffers hold.
//!
//! Invariant: a [`RawEvent`] is plain data (`Copy`, no destructor, no
//! pointer other than a `&'static str`), so copying it out of a buffer
//! while the owner appends further events is sound (see `buffer.rs`).

/// Identity of one job in a capture: a hash of its slot address and
/// generation, so the same job seen through a [`JobHandle`](crate::JobHandle),
/// a deque entry or a slot has the same id, and a recycled slot gives a new
/// one. Opaque; equal ids name the same job (collisions are as unlikely as
/// for a random 64-bit value).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct JobId(pub u64);

impl JobId {
    /// The id of the job at `addr` (a slot, or a tagged stack-job address)
    /// with generation `gen`.
    #[inline]
    pub const fn new(addr: usize, gen: u32) -> JobId {
        // Injective in `gen` for one address (odd multiplier), then the
        // splitmix64 finaliser (a bijection) to spread the bits.
        let g = ((gen as u64) << 32) | gen as u64;
        let mut z = (addr as u64) ^ g.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        JobId(z ^ (z >> 31))
    }

    /// The id of the job a handle names.
    #[inline]
    pub fn of_handle(h: crate::JobHandle) -> JobId {
        JobId::new(h.slot.as_ptr() as usize, h.gen)
    }
}

/// How a job declared a resource (`Event::Access`, `ProfilerHooks::access`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessMode {
    /// `read()` (or `read_now`).
    Read,
    /// `write()` (or `write_now`).
    Write,
    /// `write_each()`.
    WriteEach,
}

impl AccessMode {
    /// `"read"`, `"write"` or `"write_each"` (the raw format's kinds).
    pub fn as_str(self) -> &'static str {
        match self {
            AccessMode::Read => "read",
            AccessMode::Write => "write",
            AccessMode::WriteEach => "write_each",
        }
    }
}

#[cfg(feature = "trace")]
pub use recorded::*;

#[cfg(feature = "trace")]
mod recorded {
    use super::{AccessMode, JobId};

    /// One thing a thread did, as recorded (see the module docs of
    /// [`crate::trace`] for where each is recorded).
    // Each variant's doc names its fields.
    #[allow(missing_docs)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    #[non_exhaustive]
    pub enum Event {
        /// `trace_start` on this thread (makes the starting thread's track
        /// appear even if it records nothing else).
        CaptureStart,
        /// The thread started running a job (or some pieces of a
        /// `parallel_for`).
        JobBegin { job: JobId, name: &'static str },
        /// The job (or the pieces) this thread ran last finished.
        JobEnd { job: JobId, name: &'static str },
        /// A job became runnable: scheduled without unfinished dependencies
        /// (`by_dependency == false`), or released by this thread finishing
        /// its last dependency (`true`, drawn as an arrow to where it runs).
        JobReady { job: JobId, by_dependency: bool },
        /// Took work from another thread's deque (`victim`: its thread index).
        Steal { victim: u32 },
        /// A worker started looking for work.
        SearchBegin,
        /// A worker started spinning (work not visible yet, not asleep).
        SpinBegin,
        /// The thread blocked on its futex: an idle worker, or a waiter with
        /// nothing to help with.
        SleepBegin,
        /// It woke up.
        SleepEnd,
        /// It woke thread `wakee` (a thread index; `None` when the waker
        /// could not tell which one).
        Wake { wakee: Option<u32> },
        /// It started waiting for `job` (`complete`, or `join` whose half was
        /// stolen).
        WaitBegin { job: JobId },
        /// The wait for `job` ended.
        WaitEnd { job: JobId },
        /// `frame_begin` (frame numbers count up per job system).
        FrameBegin { frame: u64 },
        /// `frame_end`.
        FrameEnd { frame: u64 },
        /// The count of workers allowed to take work changed
        /// (`JobSystem::set_active_workers`, `Builder::follow_cpus`): a
        /// counter track.
        ActiveWorkers { count: u32 },
        /// The [`Access`](Event::Access) events that follow on this thread
        /// (up to the next event of another kind) are `job`'s declared
        /// accesses (`job().access(..).schedule`, `job().access(..).parallel_for`, or a
        /// `read_now`/`write_now` guard). Recorded when the job was
        /// scheduled, under the resources' locks, so one resource's
        /// accesses are stamped in its history order.
        Accesses { job: JobId },
        /// One declared access of the job named by the preceding
        /// [`Accesses`](Event::Accesses): `resource` is unique per
        /// `Resource` in the process, `name` its `Resource::named` name
        /// (empty if unnamed).
        Access {
            resource: u64,
            name: &'static str,
            mode: AccessMode,
        },
        /// A run-queue sample of this thread: since its previous
        /// `RunQueueWait` in the capture it spent `wait_ns` runnable but not
        /// running (waiting for a CPU: preempted by the OS, or not yet picked
        /// after a wake). Read from the kernel's per-thread schedstat at a
        /// state boundary at most every 50 µs per thread, only while
        /// recording or with profiler hooks (`src/trace/sched.rs`); the
        /// thread's first in a capture is the baseline (0). `jobsys-trace`
        /// draws the wait as the *preempted* state.
        RunQueueWait { wait_ns: u64 },
        /// Run-queue wait cannot be measured on this thread (no per-thread
        /// schedstat: not Linux, or a kernel without it); recorded once per
        /// thread and capture, instead of the baseline `RunQueueWait`.
        RunQueueUnknown,
    }

    /// An event and its time on the tracer's monotonic clock (nanoseconds).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Record {
        /// When, on the tracer's clock (ns).
        pub ts_ns: u64,
        /// What happened.
        pub event: Event,
    }

    pub(crate) const CAPTURE_START: u8 = 0;
    pub(crate) const JOB_BEGIN: u8 = 1;
    pub(crate) const JOB_END: u8 = 2;
    pub(crate) const READY: u8 = 3;
    pub(crate) const RELEASED: u8 = 4;
    // 5: unused (was a separate job-name event).
    pub(crate) const STEAL: u8 = 6;
    pub(crate) const SEARCH_BEGIN: u8 = 7;
    pub(crate) const SPIN_BEGIN: u8 = 8;
    pub(crate) const SLEEP_BEGIN: u8 = 9;
    pub(crate) const SLEEP_END: u8 = 10;
    pub(crate) const WAKE: u8 = 11;
    pub(crate) const WAIT_BEGIN: u8 = 12;
    pub(crate) const WAIT_END: u8 = 13;
    pub(crate) const FRAME_BEGIN: u8 = 14;
    pub(crate) const FRAME_END: u8 = 15;
    pub(crate) const ACTIVE_WORKERS: u8 = 16;
    pub(crate) const ACCESSES: u8 = 17;
    pub(crate) const ACCESS_READ: u8 = 18;
    pub(crate) const ACCESS_WRITE: u8 = 19;
    pub(crate) const ACCESS_WRITE_EACH: u8 = 20;
    pub(crate) const RUN_QUEUE_WAIT: u8 = 21;
    pub(crate) const RUN_QUEUE_UNKNOWN: u8 = 22;

    const TS_BITS: u32 = 56;
    const TS_MASK: u64 = (1 << TS_BITS) - 1;
    /// `Wake` with an unknown wakee.
    const NO_WAKEE: u64 = u64::MAX;

    /// The fixed-size record in a thread's buffer: 32 bytes, `Copy`.
    /// `ts_kind` holds the timestamp (56 bits of nanoseconds: over two
    /// years) and the kind (top 8 bits); `id` is a job id, a thread index
    /// or a frame number depending on the kind; `name` is empty unless the
    /// kind carries one.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) struct RawEvent {
        ts_kind: u64,
        id: u64,
        name: &'static str,
    }

    const _: () = assert!(std::mem::size_of::<RawEvent>() == 32);

    impl RawEvent {
        #[inline]
        pub(crate) fn new(ts_ns: u64, kind: u8, id: u64, name: &'static str) -> RawEvent {
            RawEvent {
                ts_kind: (ts_ns & TS_MASK) | (u64::from(kind) << TS_BITS),
                id,
                name,
            }
        }

        pub(crate) fn ts_ns(&self) -> u64 {
            self.ts_kind & TS_MASK
        }

        /// Decode; `None` for an unknown kind (never written by this crate).
        pub(crate) fn decode(&self) -> Option<Record> {
            let kind = (self.ts_kind >> TS_BITS) as u8;
            let job = JobId(self.id);
            let name = self.name;
            let event = match kind {
                CAPTURE_START => Event::CaptureStart,
                JOB_BEGIN => Event::JobBegin { job, name },
                JOB_END => Event::JobEnd { job, name },
                READY => Event::JobReady {
                    job,
                    by_dependency: false,
                },
                RELEASED => Event::JobReady {
                    job,
                    by_dependency: true,
                },
                STEAL => Event::Steal {
                    victim: self.id as u32,
                },
                SEARCH_BEGIN => Event::SearchBegin,
                SPIN_BEGIN => Event::SpinBegin,
                SLEEP_BEGIN => Event::SleepBegin,
                SLEEP_END => Event::SleepEnd,
                WAKE => Event::Wake {
                    wakee: (self.id != NO_WAKEE).then_some(self.id as u32),
                },
                WAIT_BEGIN => Event::WaitBegin { job },
                WAIT_END => Event::WaitEnd { job },
                FRAME_BEGIN => Event::FrameBegin { frame: self.id },
                FRAME_END => Event::FrameEnd { frame: self.id },
                ACTIVE_WORKERS => Event::ActiveWorkers {
                    count: self.id as u32,
                },
                ACCESSES => Event::Accesses { job },
                ACCESS_READ | ACCESS_WRITE | ACCESS_WRITE_EACH => Event::Access {
                    resource: self.id,
                    name,
                    mode: match kind {
                        ACCESS_READ => AccessMode::Read,
                        ACCESS_WRITE => AccessMode::Write,
                        _ => AccessMode::WriteEach,
                    },
                },
                RUN_QUEUE_WAIT => Event::RunQueueWait { wait_ns: self.id },
                RUN_QUEUE_UNKNOWN => Event::RunQueueUnknown,
                _ => return None,
            };
            Some(Record {
                ts_ns: self.ts_ns(),
                event,
            })
        }
    }

    /// The `id` word of a `Wake` record.
    #[inline]
    pub(crate) fn wakee_word(wakee: Option<u32>) -> u64 {
        wakee.map_or(NO_WAKEE, u64::from)
    }
}

/// Hex, as in the capture files ("0x…": exact in JavaScript viewers and
/// JSON tools, which read numbers as doubles).
impl std::fmt::Display for JobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#018x}", self.0)
    }
}

impl std::str::FromStr for JobId {
    type Err = std::num::ParseIntError;
    fn from_str(s: &str) -> Result<JobId, Self::Err> {
        u64::from_str_radix(s.strip_prefix("0x").unwrap_or(s), 16).map(JobId)
    }
}

#[cfg(all(test, feature = "trace", not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn events_survive_the_raw_record() {
        let r = RawEvent::new(42, WAKE, wakee_word(None), "");
        assert_eq!(r.decode().unwrap().event, Event::Wake { wakee: None });
        let r = RawEvent::new(43, READY, 7, "");
        assert_eq!(
            r.decode().unwrap(),
            Record {
                ts_ns: 43,
                event: Event::JobReady {
                    job: JobId(7),
                    by_dependency: false
                }
            }
        );
    }

    #[test]
    fn accesses_survive_the_raw_record() {
        let r = RawEvent::new(5, ACCESSES, 7, "");
        assert_eq!(r.decode().unwrap().event, Event::Accesses { job: JobId(7) });
        for (kind, mode) in [
            (ACCESS_READ, AccessMode::Read),
            (ACCESS_WRITE, AccessMode::Write),
            (ACCESS_WRITE_EACH, AccessMode::WriteEach),
        ] {
            let r = RawEvent::new(6, kind, 3, "positions");
            assert_eq!(
                r.decode().unwrap().event,
                Event::Access {
                    resource: 3,
                    name: "positions",
                    mode
                }
            );
        }
    }

    #[test]
    fn run_queue_samples_survive_the_raw_record() {
        let r = RawEvent::new(9, RUN_QUEUE_WAIT, 750_000, "");
        assert_eq!(
            r.decode().unwrap().event,
            Event::RunQueueWait { wait_ns: 750_000 }
        );
        let r = RawEvent::new(9, RUN_QUEUE_UNKNOWN, 0, "");
        assert_eq!(r.decode().unwrap().event, Event::RunQueueUnknown);
    }

    #[test]
    fn job_ids_print_as_hex_and_parse_back() {
        let id = JobId::new(0x1234_5678, 9);
        assert_eq!(id.to_string().len(), 18);
        assert_eq!(id.to_string().parse::<JobId>(), Ok(id));
        assert_eq!(JobId(0xA).to_string(), "0x000000000000000a");
    }
}
