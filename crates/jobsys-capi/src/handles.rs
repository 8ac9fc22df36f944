//! `jobsys_handle`: the 128-bit value C holds for a job, and the table of
//! one system that maps it back to a `jobsys::JobHandle`.
//!
//! Why a table: a `JobHandle` holds a slot address, and the library has no
//! way to rebuild one from bits (`to_bits` only goes one way), let alone to
//! check that bits from C name one of its slots. So the C side never sees a
//! `JobHandle`: a C handle is (system serial, shard, index) in `id` and the
//! entry's generation in `gen`, and only handles found in the table reach
//! the library. A forged, zeroed or corrupted value is rejected, never
//! dereferenced.
//!
//! Why shards: every `jobsys_schedule*` records its job and every
//! `jobsys_complete` looks its handle up, so one lock for the table would
//! make C threads that schedule at once wait for each other, which the
//! library itself avoids. The table is [`SHARDS`] shards, each its own
//! mutex on its own cache line. A thread records its jobs in the shard of
//! its thread number (a process-wide round-robin number given to a thread
//! the first time it records a job, modulo the shard count), so threads
//! that schedule and complete their own jobs each lock a different,
//! uncontended mutex; a handle completed on another thread locks the shard
//! it names (in its `id`), only that one. The shard count is fixed when a
//! system is created, so memory stays bounded however many short-lived
//! threads come and go: a new thread reuses the shard of an old one, and
//! with it the entries that thread's finished jobs left free.
//!
//! Each shard counts the acquisitions that found its lock held (a
//! `try_lock` first: no cost when it is free); `JOBSYS_CAPI_HANDLE_STATS`
//! prints the total at `jobsys_destroy`, and `JOBSYS_CAPI_HANDLE_SHARDS=1`
//! makes a system with the single-lock table of before, both for
//! measuring the difference (scripts/capi-bench.sh).
//!
//! `id` layout (the header documents it): bits 63..32 the system's serial,
//! bits 31..26 the shard, bits 25..0 the index in the shard.
//!
//! Invariants of each [`Shard`]:
//! - Each entry is in exactly one state: *free* (in `free`, `job == None`),
//!   *pending* (in `pending`, `job` set, maybe still running), or *failed*
//!   (in `failed`, `job` set: failed or cancelled, kept so that later
//!   `jobsys_complete` calls still report the failure). The newest
//!   `FAILED_KEPT` failed entries *of each shard* are kept; an older one is
//!   recycled, remembering its generation (`unknown_upto`), and its handle
//!   then reads `JOBSYS_ERR_OUTCOME_UNKNOWN`, never success. The library remembers
//!   `Config::failure_history` failures (same default) over the whole
//!   system, so per shard the table never forgets a failure the library
//!   still knows of its thread, and a program that fails or cancels jobs
//!   every frame does not grow the table for ever (at most
//!   `SHARDS * FAILED_KEPT` failed entries).
//! - An entry is recycled only after its job completed **successfully**;
//!   its generation goes up when it is reused. So a C handle whose
//!   generation is below its entry's (or equal, with the entry free) names a
//!   job that finished successfully: it reads as complete, like a library
//!   handle whose slot was reused.
//! - Recycling is lazy: each insert examines the two oldest pending
//!   entries of its shard, so a shard stays within about twice the number
//!   of its jobs in flight, plus `FAILED_KEPT`. A shard that reaches
//!   `2^26` entries (only with tens of millions of its jobs unfinished)
//!   first recycles every finished entry, then records in the next shard
//!   with room: recording a scheduled job never fails.
//! - `jobsys_destroy`'s drain reads the pending entries of every shard.

use crate::errors::{Code, Error, Result};
use jobsys::{JobHandle, JobSystem};
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};

/// `jobsys_handle`. All-zero is never a valid handle.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Handle {
    /// System serial (bits 63..32), shard (31..26), index (25..0).
    pub id: u64,
    /// Generation of the table entry, from 1.
    pub gen: u64,
}

/// Shards of a system's table by default (and at most).
pub const SHARDS: usize = 32;
/// Bits of `id` that hold the index in the shard.
const INDEX_BITS: u32 = 26;
/// Bits of `id` (above the index) that hold the shard: room for 64.
const SHARD_BITS: u32 = 6;
/// Entries one shard may hold.
const INDEX_LIMIT: usize = 1 << INDEX_BITS;

const _: () = assert!(SHARDS <= 1 << SHARD_BITS && INDEX_BITS + SHARD_BITS == 32);

/// The environment variable that sets the shard count of the systems
/// created after it is set (1..=`SHARDS`); 1 is the single-lock table this
/// one replaced, kept for measuring the difference (docs/c-api.md).
pub const SHARDS_ENV: &str = "JOBSYS_CAPI_HANDLE_SHARDS";

/// Set (to anything), `jobsys_destroy` prints to stderr how often the
/// system's table locks were found held (for scripts/capi-bench.sh).
pub const STATS_ENV: &str = "JOBSYS_CAPI_HANDLE_STATS";

/// Failed (or cancelled) jobs whose entries each shard keeps (see the
/// module comment): the library's default failure history.
const FAILED_KEPT: usize = jobsys::DEFAULT_FAILURE_HISTORY;

/// Serials of systems created so far (0 is never used).
static NEXT_SERIAL: AtomicU32 = AtomicU32::new(1);

/// A serial no other system of this process has (wrapping past 2^32
/// systems would at worst report a foreign handle as invalid).
pub fn next_serial() -> u32 {
    NEXT_SERIAL.fetch_add(1, Ordering::Relaxed).max(1)
}

/// Thread numbers given out so far (round robin over the shards).
static NEXT_THREAD: AtomicU32 = AtomicU32::new(0);

thread_local! {
    /// This thread's number, `u32::MAX` until it first records a job.
    static THREAD_NO: Cell<u32> = const { Cell::new(u32::MAX) };
}

/// The calling thread's number: the same for its whole life, consecutive
/// for threads in the order they first ask.
fn thread_no() -> u32 {
    THREAD_NO
        .try_with(|t| {
            if t.get() == u32::MAX {
                t.set(NEXT_THREAD.fetch_add(1, Ordering::Relaxed) & (u32::MAX >> 1));
            }
            t.get()
        })
        // During thread teardown (a release callback run by a TLS
        // destructor): any shard will do.
        .unwrap_or(0)
}

/// The shard count `JOBSYS_CAPI_HANDLE_SHARDS` asks for (unset: `SHARDS`).
pub fn shards_from_env() -> Result<usize> {
    match std::env::var(SHARDS_ENV) {
        Err(_) => Ok(SHARDS),
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if (1..=SHARDS).contains(&n) => Ok(n),
            _ => Err(Error::new(
                Code::Config,
                format!("{SHARDS_ENV}={v:?}: expected a shard count from 1 to {SHARDS}"),
            )),
        },
    }
}

/// What a valid C handle names.
#[derive(Clone, Copy, Debug)]
pub enum Lookup {
    /// A job the library still knows under this handle.
    Live(JobHandle),
    /// A job that finished successfully; its entry was recycled.
    Done,
    /// A job that finished, failed or not: its failed entry was recycled
    /// (more than `FAILED_KEPT` newer failures in its shard).
    Unknown,
}

#[derive(Debug)]
struct Entry {
    gen: u64,
    job: Option<JobHandle>,
    /// The highest generation of this entry whose failed job was recycled
    /// (0: none): its handles, and older ones, read `Lookup::Unknown`.
    unknown_upto: u64,
}

/// One shard's entries (see the module comment).
#[derive(Debug)]
struct Shard {
    entries: Vec<Entry>,
    free: Vec<u32>,
    pending: VecDeque<u32>,
    /// Failed entries, oldest first (at most `FAILED_KEPT`).
    failed: VecDeque<u32>,
}

/// A shard's lock, alone on its cache line(s) so that two shards' locks
/// never share one (128: adjacent-line prefetch on x86, the line size on
/// Apple ARM), and how often a thread found it held.
#[repr(align(128))]
#[derive(Debug)]
struct ShardLock {
    shard: Mutex<Shard>,
    /// Acquisitions that found the lock held (written only then).
    contended: AtomicU64,
}

impl ShardLock {
    /// Lock the shard, ignoring poisoning (nothing panics while a shard is
    /// locked halfway through an update); count it if it was held. The
    /// uncontended path is one `try_lock`, the same atomic operation as
    /// `lock`'s fast path.
    fn lock(&self) -> MutexGuard<'_, Shard> {
        match self.shard.try_lock() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => {
                self.contended.fetch_add(1, Ordering::Relaxed);
                self.shard.lock().unwrap_or_else(|e| e.into_inner())
            }
        }
    }
}

/// The handles of one system (see the module comment).
#[derive(Debug)]
pub struct Table {
    serial: u32,
    shards: Box<[ShardLock]>,
    /// Entries one shard may hold (`INDEX_LIMIT`; smaller in tests).
    limit: usize,
}

impl Table {
    /// The table of system `serial`, with `shards` shards (1..=`SHARDS`).
    pub fn new(serial: u32, shards: usize) -> Table {
        Table::with_limit(serial, shards, INDEX_LIMIT)
    }

    fn with_limit(serial: u32, shards: usize, limit: usize) -> Table {
        assert!((1..=SHARDS).contains(&shards) && limit <= INDEX_LIMIT);
        Table {
            serial,
            shards: (0..shards)
                .map(|_| ShardLock {
                    shard: Mutex::new(Shard {
                        entries: Vec::new(),
                        free: Vec::new(),
                        pending: VecDeque::new(),
                        failed: VecDeque::new(),
                    }),
                    contended: AtomicU64::new(0),
                })
                .collect(),
            limit,
        }
    }

    /// The number of shards.
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// How many lock acquisitions so far found their shard's lock held
    /// (for `JOBSYS_CAPI_HANDLE_STATS`).
    pub fn contended(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| s.contended.load(Ordering::Relaxed))
            .sum()
    }

    /// Record `job` (just scheduled on `js`) and return its C handle: in
    /// the calling thread's shard, or the next one with room.
    pub fn insert(&self, js: &JobSystem, job: JobHandle) -> Handle {
        let n = self.shards.len();
        let first = thread_no() as usize % n;
        for k in 0..n {
            let s = (first + k) % n;
            if let Some(idx) = self.shards[s].lock().insert(js, job, self.limit) {
                let id = (u64::from(self.serial) << 32) | ((s as u64) << INDEX_BITS) | idx.0;
                return Handle { id, gen: idx.1 };
            }
        }
        // Every shard holds 2^26 entries of unfinished or failed jobs:
        // more than the library's job storage allows by far.
        panic!(
            "the handle table is full ({n} shards of {} entries)",
            self.limit
        )
    }

    /// The jobs of every pending entry of every shard (for
    /// `jobsys_destroy`'s drain).
    pub fn pending_jobs(&self) -> Vec<JobHandle> {
        let mut out = Vec::new();
        for s in self.shards.iter() {
            let s = s.lock();
            out.extend(s.pending.iter().filter_map(|&i| s.entries[i as usize].job));
        }
        out
    }

    /// What `h` names, or why it names nothing of this system.
    pub fn lookup(&self, h: Handle) -> Result<Lookup> {
        let serial = (h.id >> 32) as u32;
        if serial != self.serial {
            return Err(
                if serial != 0 && serial < NEXT_SERIAL.load(Ordering::Relaxed) {
                    Error::new(
                    Code::ForeignHandle,
                    format!(
                        "the handle belongs to jobsys system #{serial} (another or a destroyed one), not to this system (#{})",
                        self.serial
                    ),
                )
                } else {
                    invalid(h, "")
                },
            );
        }
        let shard = (h.id >> INDEX_BITS) as usize & ((1 << SHARD_BITS) - 1);
        let idx = h.id as usize & (INDEX_LIMIT - 1);
        let Some(s) = self.shards.get(shard) else {
            return Err(invalid(
                h,
                &format!(
                    ": it names handle-table shard {shard}, and this system has {}",
                    self.shards.len()
                ),
            ));
        };
        let s = s.lock();
        match s.entries.get(idx) {
            Some(e) if e.gen == h.gen && e.job.is_some() => Ok(Lookup::Live(e.job.unwrap())),
            Some(e) if h.gen != 0 && h.gen <= e.unknown_upto => Ok(Lookup::Unknown),
            Some(e) if h.gen != 0 && h.gen <= e.gen => Ok(Lookup::Done),
            _ => Err(invalid(h, "")),
        }
    }

    /// The library handles of `hs`, leaving out jobs known to have
    /// succeeded; the first invalid or foreign handle is the error.
    pub fn resolve(&self, hs: &[Handle]) -> Result<Vec<JobHandle>> {
        let mut out = Vec::with_capacity(hs.len());
        for (i, &h) in hs.iter().enumerate() {
            match self.lookup(h) {
                Ok(Lookup::Live(j)) => out.push(j),
                Ok(Lookup::Done) => {}
                Ok(Lookup::Unknown) => {
                    return Err(Error::new(
                        Code::OutcomeUnknown,
                        format!(
                            "handle [{i}] of {}: its job finished, but whether it failed is no \
                             longer known (more than {FAILED_KEPT} newer failures), so a job \
                             cannot be scheduled after it",
                            hs.len()
                        ),
                    ))
                }
                Err(e) => {
                    return Err(Error::new(
                        e.code,
                        format!("handle [{i}] of {}: {}", hs.len(), e.message),
                    ))
                }
            }
        }
        Ok(out)
    }
}

impl Shard {
    /// Record `job`; its (index, generation), or `None` if the shard
    /// holds `limit` entries none of which can be recycled.
    fn insert(&mut self, js: &JobSystem, job: JobHandle, limit: usize) -> Option<(u64, u64)> {
        self.reclaim(js, 2);
        if self.free.is_empty() && self.entries.len() >= limit {
            self.reclaim(js, self.pending.len());
        }
        let idx = match self.free.pop() {
            Some(i) => i,
            None if self.entries.len() < limit => {
                self.entries.push(Entry {
                    gen: 0,
                    job: None,
                    unknown_upto: 0,
                });
                (self.entries.len() - 1) as u32
            }
            None => return None,
        };
        let e = &mut self.entries[idx as usize];
        e.gen += 1;
        e.job = Some(job);
        self.pending.push_back(idx);
        Some((u64::from(idx), e.gen))
    }

    /// Look at up to `n` of the oldest pending entries: recycle the ones
    /// whose job succeeded, keep the failed ones, requeue the running ones.
    /// Calls into `js` only for finished jobs, which never runs a job.
    fn reclaim(&mut self, js: &JobSystem, n: usize) {
        for _ in 0..n.min(self.pending.len()) {
            let Some(idx) = self.pending.pop_front() else {
                return;
            };
            let e = &mut self.entries[idx as usize];
            let Some(job) = e.job else { continue };
            if !js.is_complete(job) {
                self.pending.push_back(idx);
            } else if js.try_complete(job).is_ok() {
                e.job = None;
                self.free.push(idx);
            } else {
                self.failed.push_back(idx);
                if self.failed.len() > FAILED_KEPT {
                    let old = self.failed.pop_front().expect("over the limit");
                    let e = &mut self.entries[old as usize];
                    e.job = None;
                    // Its handles must not read complete-and-fine now.
                    e.unknown_upto = e.gen;
                    self.free.push(old);
                }
            }
        }
    }
}

fn invalid(h: Handle, why: &str) -> Error {
    Error::new(
        Code::InvalidHandle,
        format!(
            "{{id {:#x}, gen {}}} is not a handle any jobsys system gave out (zeroed, corrupted or made up){why}",
            h.id, h.gen
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program that fails (or cancels) jobs every frame keeps at most
    /// `FAILED_KEPT` failed entries per shard: the table stays bounded,
    /// the newest failures still report, the oldest read unknown (never
    /// done: that would be success).
    #[test]
    fn failed_entries_are_bounded() {
        let js = JobSystem::builder().workers(0).build().unwrap();
        let t = Table::new(next_serial(), SHARDS);
        let n = FAILED_KEPT + 1000;
        let mut hs = Vec::new();
        for _ in 0..n {
            let gate = js.schedule(|| {});
            let j = js.schedule_after(&[gate], || {});
            js.cancel(j);
            js.complete(gate);
            assert!(js.try_complete(j).is_err(), "cancelled");
            hs.push((t.insert(&js, j), j));
        }
        let shard = (hs[0].0.id >> INDEX_BITS) as usize & 63;
        {
            let mut s = t.shards[shard].lock();
            for _ in 0..4 {
                s.reclaim(&js, n);
            }
            assert!(
                s.entries.len() <= FAILED_KEPT + 16,
                "{} entries",
                s.entries.len()
            );
        }
        assert!(
            matches!(t.lookup(hs[0].0), Ok(Lookup::Unknown)),
            "the oldest is forgotten, and reads unknown, not done"
        );
        // No handle of a failed job reads done (success).
        for (i, (h, _)) in hs.iter().enumerate() {
            assert!(
                !matches!(t.lookup(*h), Ok(Lookup::Done)),
                "failed job {i} reads done"
            );
        }
        let (newest, job) = hs[n - 1];
        assert!(matches!(t.lookup(newest), Ok(Lookup::Live(h)) if h == job));
        assert!(js.try_complete(job).is_err(), "the newest still reports");
    }

    /// A shard that is full of unfinished jobs records in the next one:
    /// every handle still finds its job, in the shard its `id` names.
    #[test]
    fn a_full_shard_spills_into_the_next() {
        let js = JobSystem::builder().workers(0).build().unwrap();
        let t = Table::with_limit(next_serial(), 4, 3);
        let gate = js.schedule(|| {});
        let jobs: Vec<JobHandle> = (0..12).map(|_| js.schedule_after(&[gate], || {})).collect();
        let hs: Vec<Handle> = jobs.iter().map(|&j| t.insert(&js, j)).collect();
        let mut used: Vec<u64> = hs.iter().map(|h| (h.id >> INDEX_BITS) & 63).collect();
        used.sort_unstable();
        used.dedup();
        assert_eq!(used, [0, 1, 2, 3], "all four shards hold three each");
        for (h, j) in hs.iter().zip(&jobs) {
            assert!(matches!(t.lookup(*h), Ok(Lookup::Live(x)) if x == *j));
        }
        assert_eq!(t.pending_jobs().len(), 12, "the drain sees every shard");
        js.complete(gate);
        for &j in &jobs {
            js.complete(j);
        }
        // Finished now: a full shard recycles them instead of spilling.
        let mut home = None;
        for _ in 0..20 {
            let j = js.schedule(|| {});
            js.complete(j);
            let h = t.insert(&js, j);
            let s = (h.id >> INDEX_BITS) & 63;
            assert_eq!(*home.get_or_insert(s), s, "stays in its shard");
        }
    }

    /// 1000 short-lived threads, each recording and completing 10 jobs:
    /// they share the fixed shards, and reuse the entries the jobs of
    /// threads gone before them left free, so the table stays a few
    /// entries per shard instead of growing with every thread.
    #[test]
    fn short_lived_threads_do_not_grow_the_table() {
        let js = JobSystem::builder().workers(1).build().unwrap();
        let t = Table::new(next_serial(), SHARDS);
        let mut handles = Vec::new();
        for _ in 0..1000 {
            std::thread::scope(|sc| {
                sc.spawn(|| {
                    (0..10)
                        .map(|_| {
                            let j = js.schedule(|| {});
                            let h = t.insert(&js, j);
                            js.complete(j);
                            h
                        })
                        .collect::<Vec<_>>()
                })
                .join()
                .unwrap()
            })
            .into_iter()
            .for_each(|h| handles.push(h));
        }
        let entries: usize = t.shards.iter().map(|s| s.lock().entries.len()).sum();
        assert!(entries <= SHARDS * 4, "{entries} entries for 10000 jobs");
        for h in handles {
            assert!(matches!(t.lookup(h), Ok(Lookup::Live(_) | Lookup::Done)));
        }
    }

    /// An acquisition that finds its shard's lock held is counted (what
    /// `JOBSYS_CAPI_HANDLE_STATS` prints); a free lock is not.
    #[test]
    fn a_held_lock_is_counted() {
        let js = JobSystem::builder().workers(0).build().unwrap();
        let t = Table::new(next_serial(), 1);
        let h = t.insert(&js, js.schedule(|| {}));
        assert_eq!(t.contended(), 0, "one thread, never held");
        let held = t.shards[0].lock();
        std::thread::scope(|sc| {
            let waiter = sc.spawn(|| t.lookup(h).is_ok());
            // The count goes up before the waiter blocks on the lock.
            while t.contended() == 0 {
                std::hint::spin_loop();
            }
            drop(held);
            assert!(waiter.join().unwrap());
        });
        assert_eq!(t.contended(), 1);
        js.complete(match t.lookup(h) {
            Ok(Lookup::Live(j)) => j,
            other => panic!("{other:?}"),
        });
    }

    /// A forged shard number beyond the system's shards is rejected with a
    /// message that says so.
    #[test]
    fn a_shard_out_of_range_is_invalid() {
        let t = Table::new(next_serial(), 4);
        let h = Handle {
            id: (u64::from(t.serial) << 32) | (40 << INDEX_BITS),
            gen: 1,
        };
        let e = t.lookup(h).unwrap_err();
        assert_eq!(e.code, Code::InvalidHandle);
        assert!(
            e.message.contains("shard 40, and this system has 4"),
            "{}",
            e.message
        );
    }
}
