//! Storing a closure in a slot: inline when it fits, boxed when not.
//!
//! Each closure type gets one `JobVTable` (a `static` per monomorphisation)
//! with functions to run it (consuming it) or drop it unrun.

use crate::store::{JobVTable, Slot, PAYLOAD_BYTES};
use std::mem::{align_of, size_of};
use std::ptr;

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
        run_range: crate::parallel_for::no_range,
    };
}
impl<F: FnOnce()> SingleVTable for SingleBoxed<F> {
    const VTABLE: JobVTable = JobVTable {
        type_name: std::any::type_name::<F>,
        run: run_boxed::<F>,
        drop: drop_boxed::<F>,
        run_range: crate::parallel_for::no_range,
    };
}

unsafe fn run_inline<F: FnOnce()>(p: *mut u8) {
    // SAFETY: `p` holds an initialised `F` written by `write_single`; the
    // claim guarantees this is the only read, which moves it out.
    let f = unsafe { ptr::read(p.cast::<F>()) };
    f();
}
unsafe fn drop_inline<F: FnOnce()>(p: *mut u8) {
    // SAFETY: as in `run_inline`: an initialised `F`, read exactly once.
    unsafe { ptr::drop_in_place(p.cast::<F>()) };
}
unsafe fn run_boxed<F: FnOnce()>(p: *mut u8) {
    // SAFETY: `p` holds a `Box<F>` written by `write_single`, read once.
    let f = unsafe { ptr::read(p.cast::<Box<F>>()) };
    f();
}
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
