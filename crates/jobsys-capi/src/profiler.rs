//! `jobsys_profiler_callbacks`: C function pointers behind the library's
//! [`ProfilerHooks`].
//!
//! `jobsys_create` copies the table `jobsys_config.profiler` points to
//! ([`from_c`]); the system calls [`CHooks`]' methods, each of which is
//! one branch on its pointer and, if set, the C call. A table whose every
//! callback is NULL installs no hooks at all, so it costs what no table
//! costs.
//!
//! Versioning: the caller sets `size` to `sizeof(jobsys_profiler_callbacks)`
//! of the header it compiled against. The library reads that many bytes
//! (at most its own struct's): a table from an older header (fewer
//! callbacks) leaves the newer callbacks NULL, one from a newer header has
//! its extra callbacks ignored. A `size` below the first version's (0: the
//! caller forgot it) is rejected.
//! `from_c` copies `min(size, size_of::<Callbacks>())` bytes into a zeroed
//! table; `SIZE_V1` is the first version's size (the struct below) and
//! stays that when a later version adds callbacks at the end.

use crate::errors::{Code, Error, Result};
use jobsys::trace::JobId;
use jobsys::ProfilerHooks;
use std::ffi::{c_char, c_void};
use std::mem::size_of;
use std::sync::Arc;

type ThreadName = unsafe extern "C" fn(*mut c_void, u32, *const c_char, usize);
type Thread = unsafe extern "C" fn(*mut c_void, u32);
type ThreadJob = unsafe extern "C" fn(*mut c_void, u32, u64);
type ThreadJobName = unsafe extern "C" fn(*mut c_void, u32, u64, *const c_char, usize);
type ThreadThread = unsafe extern "C" fn(*mut c_void, u32, u32);
type ThreadNs = unsafe extern "C" fn(*mut c_void, u32, u64);

/// `jobsys_profiler_callbacks` (same field order and types as the header).
/// All-zero bytes are a valid value (every callback `None`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Callbacks {
    /// `sizeof(jobsys_profiler_callbacks)` as the caller compiled it.
    pub size: u32,
    /// Passed first to every callback.
    pub user_data: *mut c_void,
    pub thread_start: Option<ThreadName>,
    pub thread_stop: Option<Thread>,
    pub job_ready: Option<ThreadJob>,
    pub job_begin: Option<ThreadJobName>,
    pub job_end: Option<ThreadJobName>,
    pub steal: Option<ThreadThread>,
    pub wait_begin: Option<ThreadJob>,
    pub wait_end: Option<ThreadJob>,
    pub sleep_begin: Option<Thread>,
    pub sleep_end: Option<Thread>,
    pub wake: Option<ThreadThread>,
    pub frame_begin: Option<ThreadJob>,
    pub frame_end: Option<ThreadJob>,
    pub active_workers: Option<ThreadThread>,
    pub preempted: Option<ThreadNs>,
}

/// The `size` of the first version of the struct (the one above): the
/// smallest table `jobsys_create` takes.
pub const SIZE_V1: usize = size_of::<Callbacks>();

impl Callbacks {
    fn any(&self) -> bool {
        self.thread_start.is_some()
            || self.thread_stop.is_some()
            || self.job_ready.is_some()
            || self.job_begin.is_some()
            || self.job_end.is_some()
            || self.steal.is_some()
            || self.wait_begin.is_some()
            || self.wait_end.is_some()
            || self.sleep_begin.is_some()
            || self.sleep_end.is_some()
            || self.wake.is_some()
            || self.frame_begin.is_some()
            || self.frame_end.is_some()
            || self.active_workers.is_some()
            || self.preempted.is_some()
    }
}

/// The hooks a system calls: a copy of the caller's table.
#[derive(Debug)]
pub struct CHooks(Callbacks);

// SAFETY: the table holds only function pointers and `user_data`, which
// jobsys never dereferences; it only passes it back to the callbacks. The
// header makes the caller promise that the callbacks may be called from
// any thread, at the same time, with that `user_data`.
unsafe impl Send for CHooks {}
// SAFETY: as for `Send`: shared use is calls from several threads at once,
// which the caller promised the callbacks allow.
unsafe impl Sync for CHooks {}

/// The hooks of `table` (NULL, or every callback NULL: none).
///
/// # Safety
/// `table` is NULL or points to at least `table->size` readable bytes of a
/// `jobsys_profiler_callbacks` (as the header defines it, possibly a later
/// version with more callbacks at the end), whose callbacks keep the
/// header's contract for as long as the system lives.
pub unsafe fn from_c(table: *const Callbacks) -> Result<Option<Arc<dyn ProfilerHooks>>> {
    if table.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL, so it points to a table, which starts with `size`.
    let size = unsafe { table.cast::<u32>().read_unaligned() } as usize;
    if size < SIZE_V1 {
        return Err(Error::new(
            Code::Config,
            format!(
                "profiler->size = {size}: set it to sizeof(jobsys_profiler_callbacks) ({SIZE_V1} or more)"
            ),
        ));
    }
    // The bytes both versions know: a newer header's extra callbacks are
    // not read; an older one's missing ones stay zero (NULL).
    let known = size.min(size_of::<Callbacks>());
    let mut cb = std::mem::MaybeUninit::<Callbacks>::zeroed();
    // SAFETY: `size >= known` readable bytes at `table`, as the caller
    // promises; `cb` has room for `size_of::<Callbacks>() >= known`; the two
    // do not overlap (one is a fresh local).
    unsafe {
        std::ptr::copy_nonoverlapping(table.cast::<u8>(), cb.as_mut_ptr().cast::<u8>(), known)
    };
    // SAFETY: all-zero bytes are a valid `Callbacks` (its doc), and the
    // bytes copied over them are the caller's fields up to `known`, each a
    // value of its type (a function pointer or NULL), as the header says.
    let cb = unsafe { cb.assume_init() };
    if !cb.any() {
        return Ok(None);
    }
    Ok(Some(Arc::new(CHooks(cb))))
}

/// Every method of the impl below: one branch on the table's pointer for
/// it, then the call with `user_data` first and the listed arguments.
macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*) => ($($c:expr),*);)*) => {
        $(
            #[inline]
            fn $method(&self, $($arg: $ty),*) {
                if let Some(f) = self.0.$method {
                    // SAFETY: the pointer came from the caller's table,
                    // which `from_c`'s caller promised keeps the header's
                    // contract for the system's life; the arguments are
                    // plain values, and name pointers point to `len` bytes
                    // of UTF-8 valid during the call.
                    unsafe { f(self.0.user_data, $($c),*) }
                }
            }
        )*
    };
}

impl ProfilerHooks for CHooks {
    forward! {
        thread_start(thread: u32, name: &str) => (thread, name.as_ptr().cast(), name.len());
        thread_stop(thread: u32) => (thread);
        job_ready(thread: u32, job: JobId) => (thread, job.0);
        job_begin(thread: u32, job: JobId, name: &'static str) => (thread, job.0, name.as_ptr().cast(), name.len());
        job_end(thread: u32, job: JobId, name: &'static str) => (thread, job.0, name.as_ptr().cast(), name.len());
        steal(thread: u32, victim: u32) => (thread, victim);
        wait_begin(thread: u32, job: JobId) => (thread, job.0);
        wait_end(thread: u32, job: JobId) => (thread, job.0);
        sleep_begin(thread: u32) => (thread);
        sleep_end(thread: u32) => (thread);
        wake(thread: u32, wakee: u32) => (thread, wakee);
        frame_begin(thread: u32, frame: u64) => (thread, frame);
        frame_end(thread: u32, frame: u64) => (thread, frame);
        active_workers(thread: u32, count: u32) => (thread, count);
        preempted(thread: u32, wait_ns: u64) => (thread, wait_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// What `on_preempted` received: thread << 48 | wait_ns.
    unsafe extern "C" fn on_preempted(user_data: *mut c_void, thread: u32, wait_ns: u64) {
        // SAFETY: the tests pass a live `AtomicU64` as user_data.
        let seen = unsafe { &*user_data.cast::<AtomicU64>() };
        seen.store((u64::from(thread) << 48) | wait_ns, Ordering::Relaxed);
    }

    fn zeroed() -> Callbacks {
        // SAFETY: all-zero bytes are a valid `Callbacks` (every callback None).
        unsafe { std::mem::MaybeUninit::<Callbacks>::zeroed().assume_init() }
    }

    #[test]
    fn a_table_with_only_preempted_installs_hooks_that_forward_it() {
        let seen = AtomicU64::new(0);
        let mut cb = zeroed();
        cb.size = size_of::<Callbacks>() as u32;
        cb.user_data = (&seen as *const AtomicU64).cast_mut().cast();
        cb.preempted = Some(on_preempted);
        // SAFETY: a whole table of this version, live for the test.
        let hooks = unsafe { from_c(&cb) }
            .unwrap()
            .expect("preempted alone is a hook");
        hooks.preempted(3, 1234);
        assert_eq!(seen.load(Ordering::Relaxed), (3 << 48) | 1234);
    }

    #[test]
    fn a_newer_headers_larger_table_is_read_up_to_this_versions_fields() {
        #[repr(C)]
        struct Newer {
            cb: Callbacks,
            later: [usize; 2],
        }
        let seen = AtomicU64::new(0);
        let mut t = Newer {
            cb: zeroed(),
            later: [usize::MAX; 2],
        };
        t.cb.size = size_of::<Newer>() as u32;
        t.cb.user_data = (&seen as *const AtomicU64).cast_mut().cast();
        t.cb.preempted = Some(on_preempted);
        // SAFETY: `size` readable bytes at the table; the unknown tail is
        // never interpreted.
        let hooks = unsafe { from_c(&t.cb) }.unwrap().expect("hooks");
        hooks.preempted(1, 7);
        assert_eq!(seen.load(Ordering::Relaxed), (1 << 48) | 7);
    }

    #[test]
    fn a_size_below_the_first_versions_is_refused_and_all_null_is_no_hooks() {
        let mut cb = zeroed();
        cb.size = (SIZE_V1 - 1) as u32;
        // SAFETY: the whole table is readable.
        let err = unsafe { from_c(&cb) }.expect_err("too small");
        assert_eq!(err.code, Code::Config);
        cb.size = SIZE_V1 as u32;
        // SAFETY: as above.
        assert!(unsafe { from_c(&cb) }.unwrap().is_none());
    }
}
