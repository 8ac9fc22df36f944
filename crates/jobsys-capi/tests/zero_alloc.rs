//! `jobsys_schedule` with inline data (`desc.data_size <= JOBSYS_INLINE_DATA`)
//! allocates nothing: the copy and the call live in the job's slot, a few
//! dependencies are resolved on the stack, and a handle is the slot's bits.
//! Counted with a global allocator that counts every allocation of the
//! process (so also the workers'), after a warm-up: a thread's first job
//! takes its slot pages and per-thread state.

mod common;

use common::abi::{create, watchdog};
use jobsys_capi::errors::Code;
use jobsys_capi::handles::Handle;
use jobsys_capi::jobs::{jobsys_complete, jobsys_join, jobsys_schedule, JobDesc, INLINE_DATA};
use jobsys_capi::system::{jobsys_destroy, System};
use std::alloc::{GlobalAlloc, Layout, System as Heap};
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};

struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator, only counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, SeqCst);
        // SAFETY: the caller's layout, as GlobalAlloc requires.
        unsafe { Heap.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { Heap.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, SeqCst);
        // SAFETY: as the caller promises.
        unsafe { Heap.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The job's data: five words, the whole inline size.
#[repr(C)]
#[derive(Clone, Copy)]
struct Payload {
    sum: *const AtomicU64,
    words: [u64; 4],
}

unsafe extern "C" fn add(data: *mut c_void) {
    // SAFETY: the job's own copy of a `Payload` (data_size below).
    let p = unsafe { &*(data as *const Payload) };
    // SAFETY: `sum` points to the test's counter, alive until destroy.
    unsafe { &*p.sum }.fetch_add(p.words.iter().sum(), SeqCst);
}

unsafe extern "C" fn noop(_: *mut c_void) {}

/// Schedule a job with the `Payload` copied inline after `dep`, complete it.
fn round(sys: *mut System, sum: &AtomicU64, dep: Handle, i: u64) -> Handle {
    let p = Payload {
        sum,
        words: [i, 1, 2, 3],
    };
    let deps = [dep, Handle::default()];
    let d = JobDesc {
        name: c"inline".as_ptr(),
        deps: deps.as_ptr(),
        ndeps: 2,
        data_size: std::mem::size_of::<Payload>(),
        ..JobDesc::default()
    };
    let mut h = Handle::default();
    // SAFETY: live system; `p` is readable for data_size bytes (copied
    // before the call returns); `add` may run on any thread.
    unsafe {
        assert_eq!(
            jobsys_schedule(
                sys,
                &d,
                Some(add),
                &p as *const Payload as *mut c_void,
                &mut h
            ),
            Code::Ok
        );
    }
    h
}

fn allocations_per_round(workers: i32) -> usize {
    assert_eq!(std::mem::size_of::<Payload>(), INLINE_DATA);
    let sys = create(workers);
    let sum = AtomicU64::new(0);
    const N: u64 = 2000;
    let mut last = Handle::default();
    // Warm-up: slot pages, this thread's context, the interned name.
    for i in 0..N {
        last = round(sys, &sum, last, i);
    }
    // SAFETY: live system, a handle it gave.
    assert_eq!(unsafe { jobsys_complete(sys, last) }, Code::Ok);
    let before = ALLOCS.load(SeqCst);
    for i in 0..N {
        let h = round(sys, &sum, last, i);
        // SAFETY: as above.
        assert_eq!(unsafe { jobsys_complete(sys, h) }, Code::Ok);
        // SAFETY: live system; both halves may run anywhere.
        let joined = unsafe { jobsys_join(sys, Some(noop), null_mut(), Some(noop), null_mut()) };
        assert_eq!(joined, Code::Ok);
        last = h;
    }
    let allocs = ALLOCS.load(SeqCst) - before;
    let expected = 2 * (0..N).map(|i| i + 6).sum::<u64>();
    assert_eq!(
        sum.load(SeqCst),
        expected,
        "every job ran once with its own copy"
    );
    // SAFETY: live system, not used after.
    assert_eq!(unsafe { jobsys_destroy(sys) }, Code::Ok);
    allocs
}

/// One test, so that no other test of this process allocates meanwhile
/// (the count is global).
#[test]
fn scheduling_with_inline_data_and_joining_allocate_nothing() {
    watchdog(120, || {
        assert_eq!(allocations_per_round(0), 0, "0 workers");
        // A worker may take jobs and park: that allocates nothing either.
        assert_eq!(allocations_per_round(1), 0, "1 worker");
    });
}
