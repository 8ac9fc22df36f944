//! What a slot holds besides its state: the job's vtable (`JobVTable`,
//! and the vtables of jobs with nothing to run: `combine`, an empty loop,
//! a `read_now` / `write_now` guard's event) and its packed name,
//! priority and pinned thread (`JobMeta`).

use std::sync::atomic::AtomicUsize;

/// What kind of job a slot holds, and how to run or drop its payload.
pub(crate) struct JobVTable {
    /// Run (consuming) the closure in the payload.
    pub run: unsafe fn(*mut u8),
    /// Drop the payload without running it.
    pub drop: unsafe fn(*mut u8),
    /// The closure's type name (unnamed jobs are reported by it).
    pub type_name: fn() -> &'static str,
    /// For parallel_for: run indices `[begin, end)` of the closure, which
    /// is whole pieces of `batch` indices (the last may be shorter), and
    /// start no further piece once the loop stops handing out pieces (the
    /// `AtomicUsize` is its dispenser: parallel_for.rs `stopped`).
    pub run_range: unsafe fn(*const u8, usize, usize, usize, &AtomicUsize),
    /// The payload's last 32 bytes (from `OWN_EDGE_AT`) stay unused while
    /// the job is published: its first dependency edge may live there
    /// (`edges.rs`) instead of in an edge block of its own.
    pub edge_room: bool,
}

/// A job's name id (`desc::intern`), priority and pinned thread, in the
/// slot's 4 spare bytes: name 16 bits, priority 2, pin 14.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct JobMeta {
    pub name: u16,
    pub priority: u8,
    /// 0: any thread may run the job; else the index + 1 of the only
    /// context that may (`Pin`).
    pub pin: u16,
}

/// Contexts a pinned job can name (14 bits, minus the 0 "unpinned").
pub(crate) const MAX_PIN_CONTEXTS: usize = (1 << 14) - 1;

impl JobMeta {
    /// One word, so the slot can keep it in an atomic.
    #[inline]
    pub(super) fn pack(self) -> u32 {
        debug_assert!(self.priority < 4 && usize::from(self.pin) <= MAX_PIN_CONTEXTS);
        u32::from(self.name) | u32::from(self.priority) << 16 | u32::from(self.pin) << 18
    }

    /// Unnamed, normal priority, unpinned.
    pub(super) fn default_packed() -> u32 {
        JobMeta {
            name: 0,
            priority: 1,
            pin: 0,
        }
        .pack()
    }

    #[inline]
    pub(super) fn unpack(w: u32) -> JobMeta {
        JobMeta {
            name: w as u16,
            priority: ((w >> 16) & 3) as u8,
            pin: (w >> 18) as u16,
        }
    }

    /// The context a pinned job must run on.
    #[inline]
    pub(crate) fn pinned_to(self) -> Option<u32> {
        u32::from(self.pin).checked_sub(1)
    }
}

/// The `run` and `drop` of the vtables below: the slot has nothing to run
/// or drop.
///
/// # Safety
/// None beyond the vtable's: it reads nothing, so any pointer will do.
unsafe fn noop(_: *mut u8) {}
/// The `run_range` of the vtables below, never called (no loop has them;
/// an empty loop runs no piece).
///
/// # Safety
/// None: it reads nothing.
unsafe fn noop_range(_: *const u8, _: usize, _: usize, _: usize, _: &AtomicUsize) {}
/// The vtable of a job with nothing to run (`combine`).
fn combine_name() -> &'static str {
    "combine"
}
pub(crate) static NOOP_VTABLE: JobVTable = JobVTable {
    type_name: combine_name,
    run: noop,
    drop: noop,
    run_range: noop_range,
    edge_room: true,
};
fn empty_loop_name() -> &'static str {
    "parallel_for (empty range)"
}
/// The vtable of a `parallel_for` over an empty range: nothing to run, but
/// not a group (`cancel` of a `combine` cancels its members).
pub(crate) static EMPTY_LOOP_VTABLE: JobVTable = JobVTable {
    type_name: empty_loop_name,
    run: noop,
    drop: noop,
    run_range: noop_range,
    edge_room: false,
};
fn read_guard_name() -> &'static str {
    "read_now guard"
}
fn write_guard_name() -> &'static str {
    "write_now guard"
}
/// The vtables of a `read_now` / `write_now` guard's event job
/// (`access/now.rs`): here, below the job lifecycle, which asks
/// `is_event` when a failure would pass to dependents.
pub(crate) static READ_EVENT: JobVTable = JobVTable {
    type_name: read_guard_name,
    run: noop,
    drop: noop,
    run_range: noop_range,
    edge_room: false,
};
pub(crate) static WRITE_EVENT: JobVTable = JobVTable {
    type_name: write_guard_name,
    run: noop,
    drop: noop,
    run_range: noop_range,
    edge_room: false,
};

fn end_event_name() -> &'static str {
    "end of a job"
}
/// The vtable of an end event (`held::end_of`): a job that finishes when
/// the job before it has ended, however that ended.
pub(crate) static END_EVENT: JobVTable = JobVTable {
    type_name: end_event_name,
    run: noop,
    drop: noop,
    run_range: noop_range,
    edge_room: true,
};

/// Is this job an event (a guard's, `access/now.rs`, or an end event,
/// `held::end_of`)? Its dependents do not inherit the failures of the jobs
/// it waited for. Asked only on failure paths, of a slot the caller holds
/// a pin, claim or edge on (its vtable is fixed while it is published).
pub(crate) fn is_event(slot: &super::Slot) -> bool {
    let vt = slot.vtable();
    std::ptr::eq(vt, &READ_EVENT) || std::ptr::eq(vt, &WRITE_EVENT) || std::ptr::eq(vt, &END_EVENT)
}
