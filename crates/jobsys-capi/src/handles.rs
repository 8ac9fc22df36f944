//! `jobsys_handle`: the 128-bit value C holds for a job, and the table of
//! one system that maps it back to a `jobsys::JobHandle`.
//!
//! Why a table: a `JobHandle` holds a slot address, and the library has no
//! way to rebuild one from bits (`to_bits` only goes one way), let alone to
//! check that bits from C name one of its slots. So the C side never sees a
//! `JobHandle`: a C handle is (system serial, table index) in `id` and the
//! entry's generation in `gen`, and only handles found in the table reach
//! the library. A forged, zeroed or corrupted value is rejected, never
//! dereferenced.
//!
//! Invariants of [`Table`]:
//! - Each entry is in exactly one state: *free* (in `free`, `job == None`),
//!   *pending* (in `pending`, `job` set, maybe still running), or *failed*
//!   (in `failed`, `job` set: failed or cancelled, kept so that later
//!   `jobsys_complete` calls still report the failure). The newest
//!   `FAILED_KEPT` failed entries are kept; an older one is recycled and
//!   its handle then reads complete, as the library forgets failures beyond
//!   `Config::failure_history` (same default), so a program that fails or
//!   cancels jobs every frame does not grow the table for ever.
//! - An entry is recycled only after its job completed **successfully**;
//!   its generation goes up when it is reused. So a C handle whose
//!   generation is below its entry's (or equal, with the entry free) names a
//!   job that finished successfully: it reads as complete, like a library
//!   handle whose slot was reused.
//! - Recycling is lazy: each insert examines the two oldest pending
//!   entries, so the table stays within about twice the number of jobs in
//!   flight, plus `FAILED_KEPT`.

use crate::errors::{Code, Error, Result};
use jobsys::{JobHandle, JobSystem};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};

/// `jobsys_handle`. All-zero is never a valid handle.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Handle {
    /// System serial (high 32 bits) and table index (low 32 bits).
    pub id: u64,
    /// Generation of the table entry, from 1.
    pub gen: u64,
}

/// Failed (or cancelled) jobs whose entries are kept (see the module
/// comment): the library's default failure history.
const FAILED_KEPT: usize = jobsys::DEFAULT_FAILURE_HISTORY;

/// Serials of systems created so far (0 is never used).
static NEXT_SERIAL: AtomicU32 = AtomicU32::new(1);

/// A serial no other system of this process has (wrapping past 2^32
/// systems would at worst report a foreign handle as invalid).
pub fn next_serial() -> u32 {
    NEXT_SERIAL.fetch_add(1, Ordering::Relaxed).max(1)
}

/// What a valid C handle names.
#[derive(Clone, Copy, Debug)]
pub enum Lookup {
    /// A job the library still knows under this handle.
    Live(JobHandle),
    /// A job that finished successfully; its entry was recycled.
    Done,
}

#[derive(Debug)]
struct Entry {
    gen: u64,
    job: Option<JobHandle>,
}

/// The handles of one system (see the module comment).
#[derive(Debug)]
pub struct Table {
    serial: u32,
    entries: Vec<Entry>,
    free: Vec<u32>,
    pending: VecDeque<u32>,
    /// Failed entries, oldest first (at most `FAILED_KEPT`).
    failed: VecDeque<u32>,
}

impl Table {
    pub fn new(serial: u32) -> Table {
        Table {
            serial,
            entries: Vec::new(),
            free: Vec::new(),
            pending: VecDeque::new(),
            failed: VecDeque::new(),
        }
    }

    /// Record `job` (just scheduled on `js`) and return its C handle.
    pub fn insert(&mut self, js: &JobSystem, job: JobHandle) -> Handle {
        self.reclaim(js, 2);
        let idx = self.free.pop().unwrap_or_else(|| {
            self.entries.push(Entry { gen: 0, job: None });
            (self.entries.len() - 1) as u32
        });
        let e = &mut self.entries[idx as usize];
        e.gen += 1;
        e.job = Some(job);
        self.pending.push_back(idx);
        Handle {
            id: (u64::from(self.serial) << 32) | u64::from(idx),
            gen: e.gen,
        }
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
                    self.entries[old as usize].job = None;
                    self.free.push(old);
                }
            }
        }
    }

    /// The jobs of every pending entry (for `jobsys_destroy`'s drain).
    pub fn pending_jobs(&self) -> Vec<JobHandle> {
        self.pending
            .iter()
            .filter_map(|&i| self.entries[i as usize].job)
            .collect()
    }

    /// What `h` names, or why it names nothing of this system.
    pub fn lookup(&self, h: Handle) -> Result<Lookup> {
        let serial = (h.id >> 32) as u32;
        let idx = h.id as u32 as usize;
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
                    invalid(h)
                },
            );
        }
        match self.entries.get(idx) {
            Some(e) if e.gen == h.gen && e.job.is_some() => Ok(Lookup::Live(e.job.unwrap())),
            Some(e) if h.gen != 0 && h.gen <= e.gen => Ok(Lookup::Done),
            _ => Err(invalid(h)),
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

fn invalid(h: Handle) -> Error {
    Error::new(
        Code::InvalidHandle,
        format!(
            "{{id {:#x}, gen {}}} is not a handle any jobsys system gave out (zeroed, corrupted or made up)",
            h.id, h.gen
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program that fails (or cancels) jobs every frame keeps at most
    /// `FAILED_KEPT` failed entries: the table stays bounded, the newest
    /// failures still report, the oldest read complete.
    #[test]
    fn failed_entries_are_bounded() {
        let js = JobSystem::builder().workers(0).build().unwrap();
        let mut t = Table::new(next_serial());
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
        for _ in 0..4 {
            t.reclaim(&js, n);
        }
        assert!(
            t.entries.len() <= FAILED_KEPT + 16,
            "{} entries",
            t.entries.len()
        );
        assert!(
            matches!(t.lookup(hs[0].0), Ok(Lookup::Done)),
            "the oldest is forgotten"
        );
        let (newest, job) = hs[n - 1];
        assert!(matches!(t.lookup(newest), Ok(Lookup::Live(h)) if h == job));
        assert!(js.try_complete(job).is_err(), "the newest still reports");
    }
}
