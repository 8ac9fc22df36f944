//! The job types: a queued `Entry` (a slot job or a tagged stack job), and
//! storing a closure in a slot (inline when it fits, boxed when not).
//!
//! Each closure type gets one `JobVTable` (a `static` per monomorphisation)
//! with functions to run it (consuming it) or drop it unrun.

use crate::sleep::Futex;
use crate::slot::{JobVTable, Slot, PAYLOAD_BYTES};
use std::mem::{align_of, size_of};
use std::ptr::{self, NonNull};

/// True when `T` fits in a slot's payload (size and alignment).
const fn fits<T>(room: usize) -> bool {
    size_of::<T>() <= room && align_of::<T>() <= 16
}

struct SingleInline<F>(F);
struct SingleBoxed<F>(F);

trait SingleVTable {
    const VTABLE: JobVTable;
}

impl<F: FnOnce()> SingleVTable for SingleInline<F> {
    const VTABLE: JobVTable = JobVTable {
        type_name: std::any::type_name::<F>,
        run: run_inline::<F>,
        drop: drop_inline::<F>,
        run_range: no_range,
        // The closure is at the payload's start; reading or dropping it
        // touches its own bytes only.
        edge_room: size_of::<F>() <= crate::slot::OWN_EDGE_AT,
    };
}
impl<F: FnOnce()> SingleVTable for SingleBoxed<F> {
    const VTABLE: JobVTable = JobVTable {
        type_name: std::any::type_name::<F>,
        run: run_boxed::<F>,
        drop: drop_boxed::<F>,
        run_range: no_range,
        edge_room: size_of::<Box<F>>() <= crate::slot::OWN_EDGE_AT,
    };
}

/// The `run_range` of single jobs, never called for them.
///
/// # Safety
/// None: it reads nothing.
pub(crate) unsafe fn no_range(
    _: *const u8,
    _: usize,
    _: usize,
    _: usize,
    _: &std::sync::atomic::AtomicUsize,
) {
}

/// The vtable's `run` of a closure stored inline.
///
/// # Safety
/// `p` is the payload of a slot where `write_single` stored an `F` inline,
/// still initialised; this call moves it out, so the caller makes it the
/// payload's only read: no other `run` or `drop` of it, before or after.
unsafe fn run_inline<F: FnOnce()>(p: *mut u8) {
    // SAFETY: `p` holds an initialised `F` written by `write_single`; the
    // claim guarantees this is the only read, which moves it out.
    let f = unsafe { ptr::read(p.cast::<F>()) };
    f();
}
/// The vtable's `drop` of a closure stored inline.
///
/// # Safety
/// As for `run_inline`: an initialised `F` written inline by
/// `write_single`, and this is the payload's only read or drop.
unsafe fn drop_inline<F: FnOnce()>(p: *mut u8) {
    // SAFETY: as in `run_inline`: an initialised `F`, read exactly once.
    unsafe { ptr::drop_in_place(p.cast::<F>()) };
}
/// The vtable's `run` of a closure too big for the payload.
///
/// # Safety
/// `p` is the payload of a slot where `write_single` stored a `Box<F>`,
/// still initialised; this call moves it out, so the caller makes it the
/// payload's only read: no other `run` or `drop` of it, before or after.
unsafe fn run_boxed<F: FnOnce()>(p: *mut u8) {
    // SAFETY: `p` holds a `Box<F>` written by `write_single`, read once.
    let f = unsafe { ptr::read(p.cast::<Box<F>>()) };
    f();
}
/// The vtable's `drop` of a boxed closure.
///
/// # Safety
/// As for `run_boxed`: an initialised `Box<F>` written by `write_single`,
/// and this is the payload's only read or drop.
unsafe fn drop_boxed<F: FnOnce()>(p: *mut u8) {
    // SAFETY: as in `run_boxed`.
    unsafe { ptr::drop_in_place(p.cast::<Box<F>>()) };
}

/// Write closure `f` into `slot`'s payload and set its vtable.
///
/// # Safety
/// The caller owns `slot` (freshly allocated, unpublished). `F` may borrow
/// data that must outlive the job: the caller guarantees the job finishes
/// (runs or is dropped) before those borrows end.
pub(crate) unsafe fn write_single<F: FnOnce() + Send>(slot: &Slot, f: F) {
    let p = slot.payload_ptr();
    if fits::<F>(PAYLOAD_BYTES) {
        // SAFETY: the payload is at least `size_of::<F>()` bytes, 16-aligned,
        // and unused (the slot is fresh).
        unsafe {
            ptr::write(p.cast::<F>(), f);
            slot.set_vtable(&<SingleInline<F> as SingleVTable>::VTABLE);
        }
    } else {
        // SAFETY: a Box is one pointer, which fits; slot is unpublished.
        unsafe {
            ptr::write(p.cast::<Box<F>>(), Box::new(f));
            slot.set_vtable(&<SingleBoxed<F> as SingleVTable>::VTABLE);
        }
    }
}

/// The type-erased head of a `StackJob` (join.rs), which a stack entry
/// points to.
#[repr(C)]
pub(crate) struct StackHeader {
    pub(crate) run: unsafe fn(*const StackHeader),
    pub(crate) latch: Futex,
    /// Context index + 1 of the thread that took the job from a deque (0:
    /// not taken yet). A thief's deque is empty when it steals (threads pop
    /// their own deque before stealing, one entry at a time), so everything
    /// in it while it runs this job descends from this job: the joiner may
    /// take work from there while it waits (leapfrogging).
    pub(crate) thief: std::sync::atomic::AtomicU32,
}

/// A queued job: slot address and generation at push time.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Entry {
    pub slot: NonNull<Slot>,
    pub gen: u32,
}

// SAFETY: an entry is an address plus a generation; the slot it points to is
// `Sync` and lives as long as the registry that owns every deque.
unsafe impl Send for Entry {}

impl Entry {
    /// An entry for a `join` job living on its joiner's stack: the address
    /// is tagged with the low bit (slots and stack jobs are 4-aligned).
    /// `job` must be derived from a reference to the whole `StackJob` (its
    /// header is its first field): `run_stack_job` reads the rest of the job
    /// through the pointer this entry gives back, and a pointer made from
    /// `&header` would only be allowed to read the header (Stacked Borrows).
    /// The tag is added and removed by pointer arithmetic, not through an
    /// integer, so the pointer keeps its provenance.
    #[inline]
    pub(crate) fn stack(job: *const StackHeader) -> Entry {
        let tagged = job.cast::<u8>().wrapping_add(1) as *mut Slot;
        Entry {
            // SAFETY: a pointer derived from a reference, plus one, is non-null.
            slot: unsafe { NonNull::new_unchecked(tagged) },
            gen: 0,
        }
    }

    #[inline]
    pub(crate) fn is_stack(&self) -> bool {
        self.slot.as_ptr() as usize & 1 != 0
    }

    /// The job pointer `Entry::stack` was given (only on a stack entry).
    #[inline]
    pub(crate) fn stack_header(&self) -> *const StackHeader {
        debug_assert!(self.is_stack());
        self.slot
            .as_ptr()
            .cast::<u8>()
            .wrapping_sub(1)
            .cast::<StackHeader>()
    }

    /// The slot of a slot entry (never called on a stack entry).
    #[inline]
    pub(crate) fn slot(&self) -> &Slot {
        debug_assert!(!self.is_stack());
        // SAFETY: slots are never freed while the registry lives, and
        // entries never outlive the registry's deques.
        unsafe { self.slot.as_ref() }
    }
}
