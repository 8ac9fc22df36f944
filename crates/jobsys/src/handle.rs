//! `JobHandle`: a (slot, generation) pair naming one scheduled job.

use crate::slot::Slot;
use std::fmt;
use std::ptr::NonNull;

/// Names a scheduled job. Small and `Copy`; a handle whose job finished long
/// ago (its slot reused by a later job) still reads as complete, because the
/// slot's generation moved on.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct JobHandle {
    pub(crate) slot: NonNull<Slot>,
    pub(crate) gen: u32,
    pub(crate) system: u32,
}

// SAFETY: a handle is an address plus two integers. It is only dereferenced
// by a JobSystem whose id equals `system`; that system owns the page holding
// the slot and frees it only when it is dropped, after which no method that
// could dereference the handle can be called on it.
unsafe impl Send for JobHandle {}
// SAFETY: see the Send impl: shared handles are never dereferenced without the
// owning system's check.
unsafe impl Sync for JobHandle {}

impl JobHandle {
    /// A placeholder that names no job (filler of fixed arrays; never
    /// dereferenced).
    pub(crate) const DANGLING: JobHandle = JobHandle {
        slot: NonNull::dangling(),
        gen: 0,
        system: 0,
    };

    /// The handle as two 64-bit words (slot address; generation and system
    /// id), e.g. to key a map or to print. The way back is the C API's
    /// (`JobSystem::handle_from_bits`, hidden), which checks the bits
    /// against the system's storage first.
    pub fn to_bits(self) -> [u64; 2] {
        [
            self.slot.as_ptr() as usize as u64,
            (u64::from(self.system) << 32) | u64::from(self.gen),
        ]
    }

    pub(crate) fn slot(&self) -> &Slot {
        // SAFETY: only called by a `Registry` whose id equals `system` (its
        // methods check `h.system == self.id` first, e.g. `wait`,
        // `is_complete`, `check_handles`), and that registry's pages outlive
        // it (see the Send impl).
        unsafe { self.slot.as_ref() }
    }
}

impl fmt::Debug for JobHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "JobHandle(system {}, slot {:p}, gen {})",
            self.system, self.slot, self.gen
        )
    }
}

/// Check that every handle in `deps` belongs to the system with id
/// `system`; a foreign one panics at the caller's line, naming `what`.
/// Inlined: a length test for a job without dependencies, a compare per
/// dependency otherwise (a call of its own cost a dependent job ~20
/// instructions), with the panic out of line.
#[track_caller]
#[inline(always)]
pub(crate) fn check_handles(system: u32, deps: &[JobHandle], what: &str) {
    for d in deps {
        if d.system != system {
            foreign_handle(what, d);
        }
    }
}

/// `check_handles`' panic, out of line.
#[cold]
#[track_caller]
#[inline(never)]
fn foreign_handle(what: &str, d: &JobHandle) -> ! {
    panic!("jobsys: {what}: a dependency handle belongs to another JobSystem ({d:?})")
}
