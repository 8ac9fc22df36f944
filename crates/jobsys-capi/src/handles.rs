//! `jobsys_handle`: the 128-bit value C holds for a job.
//!
//! A C handle is the library's own handle as bits ([`JobHandle::to_bits`]):
//! `id` the address of the job's slot, `gen` the system's id (high half)
//! and the slot's generation (low half). There is no table behind it:
//! [`JobSystem::handle_from_bits`] checks the bits against the system's own
//! pages (and the slot's generation) before it reads any slot, so a forged,
//! corrupted or foreign value is an error code, never a dereference of an
//! address C made up. A handle whose slot was reused since reads complete,
//! or the failure the library still remembers for it, or
//! `JOBSYS_ERR_OUTCOME_UNKNOWN` once that was forgotten (the library's
//! failure log: `Config::failure_history`).
//!
//! The zeroed handle names no job: a dependency on it is skipped, waiting
//! on it returns at once.

use crate::errors::{Code, Error, Result};
use jobsys::{HandleBits, JobHandle, JobSystem};
use std::mem::MaybeUninit;

/// `jobsys_handle`. All-zero names no job.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Handle {
    /// The slot's address.
    pub id: u64,
    /// The system's id (bits 63..32) and the slot's generation (31..0).
    pub gen: u64,
}

impl Handle {
    /// The C form of a library handle.
    #[inline]
    pub fn from_job(h: JobHandle) -> Handle {
        let [id, gen] = h.to_bits();
        Handle { id, gen }
    }

    /// Is this the zeroed handle (no job)?
    #[inline]
    pub fn is_none(self) -> bool {
        self.id == 0 && self.gen == 0
    }
}

/// The library handle `h` names in `js`; `None` for the zeroed handle.
#[inline]
pub fn job_of(js: &JobSystem, h: Handle) -> Result<Option<JobHandle>> {
    if h.is_none() {
        return Ok(None);
    }
    match js.handle_from_bits([h.id, h.gen]) {
        Ok(job) => Ok(Some(job)),
        Err(why) => Err(refused(why)),
    }
}

/// The error for bits `handle_from_bits` refused.
#[cold]
pub(crate) fn refused(why: HandleBits) -> Error {
    match why {
        HandleBits::Foreign => Error::new(
            Code::ForeignHandle,
            "the handle belongs to another (or a destroyed) system",
        ),
        HandleBits::Invalid => Error::new(
            Code::InvalidHandle,
            "not a handle this system gave out (forged or corrupted)",
        ),
    }
}

/// Dependencies up to this many are resolved on the stack.
const ON_STACK: usize = 16;

/// The library handles of a list of C handles (zeroed ones skipped): on
/// the stack for up to [`ON_STACK`] of them, so scheduling with a few
/// dependencies allocates nothing. Built in place (`Resolved::new`, then
/// `fill`): the array is never moved.
pub struct Resolved {
    small: [MaybeUninit<JobHandle>; ON_STACK],
    /// How many of `small` are written.
    n: usize,
    /// More than `ON_STACK` handles: all of them, here instead.
    big: Vec<JobHandle>,
}

impl Resolved {
    #[inline]
    pub fn new() -> Resolved {
        Resolved {
            small: [MaybeUninit::uninit(); ON_STACK],
            n: 0,
            big: Vec::new(),
        }
    }

    /// Resolve `hs` (the first refused one is the error).
    #[inline]
    pub fn fill(&mut self, js: &JobSystem, hs: &[Handle]) -> Result<()> {
        if hs.is_empty() {
            return Ok(());
        }
        self.fill_some(js, hs)
    }

    #[inline(never)]
    fn fill_some(&mut self, js: &JobSystem, hs: &[Handle]) -> Result<()> {
        let big = hs.len() > ON_STACK;
        for &h in hs {
            if let Some(j) = job_of(js, h)? {
                if big {
                    self.big.push(j);
                } else {
                    self.small[self.n].write(j);
                    self.n += 1;
                }
            }
        }
        Ok(())
    }

    /// The handles resolved.
    #[inline]
    pub fn as_slice(&self) -> &[JobHandle] {
        if !self.big.is_empty() {
            return &self.big;
        }
        // SAFETY: the first `n` elements were written by `fill_some` (`n`
        // counts them), and `JobHandle` is `Copy`, so no drop is skipped.
        unsafe { std::slice::from_raw_parts(self.small.as_ptr().cast::<JobHandle>(), self.n) }
    }
}

impl Default for Resolved {
    fn default() -> Resolved {
        Resolved::new()
    }
}
