//! Jobs from C: `jobsys_schedule`, `jobsys_parallel_for`, `jobsys_join`,
//! `jobsys_combine`, `jobsys_complete`, `jobsys_is_complete`,
//! `jobsys_fail`, `jobsys_cancel`, `jobsys_is_cancelled`.
//!
//! Every option of a job is a field of the one `jobsys_job_desc` (read by
//! [`read_desc`]) and becomes an option of the library's job builder. A C
//! job is a [`CJob`] (the release callback, the system's serial and the
//! job's data) inside the closure the library stores:
//! - `data_size == 0`: the data is the caller's pointer ([`Ptr`]);
//! - `data_size <= JOBSYS_INLINE_DATA`: a byte copy held in the job itself
//!   ([`Inline`]): with the function pointer the closure is 64 bytes, the
//!   slot's whole payload, so `jobsys_schedule` allocates nothing;
//! - larger: a byte copy on the heap ([`Heap`]).
//!
//! A `parallel_for`'s closure is larger than the room the library keeps
//! inline beside a loop's state, so each C loop allocates one block.
//!
//! Invariants:
//! - The C function runs inside [`run_c`], which keeps a per-thread stack of
//!   the C jobs running on this thread: `jobsys_fail` marks the innermost
//!   one, and `jobsys_destroy` refuses to run inside a job of its system.
//! - A job marked failed ends with `resume_unwind` *after* its C function
//!   returned, so the unwind only crosses Rust frames, up to the library's
//!   `catch_unwind`, which fails the job and its dependents. A Rust panic in
//!   the wrapper itself would be a jobsys bug; it aborts with a message
//!   rather than unwind anywhere near C frames.
//! - `release(data)` is called exactly once, when the library drops the
//!   closure (`CJob`'s `Drop`): after the last call of the function, or
//!   without any call if the job never runs (a dependency failed, or it was
//!   cancelled: then the thread that cancels it, or that finishes a
//!   cancelled loop's last running piece, drops it). Not called when
//!   scheduling itself returns an error: then `data` stays the caller's
//!   (a copy is dropped without a call).

use crate::engine::Pin;
use crate::errors::{ffi, non_null, Code, Error, Result};
use crate::handles::{job_of, Handle, Resolved};
use crate::system::{system, write_opt, System};
use jobsys::{Batch, JobHandle, Priority};
use std::cell::{Cell, UnsafeCell};
use std::collections::BTreeMap;
use std::ffi::{c_char, c_void, CStr};
use std::mem::{size_of, MaybeUninit};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Mutex;

/// `jobsys_job_fn`.
pub type JobFn = unsafe extern "C" fn(data: *mut c_void);
/// `jobsys_range_fn`.
pub type RangeFn = unsafe extern "C" fn(data: *mut c_void, begin: usize, end: usize);
/// `jobsys_release_fn`.
pub type ReleaseFn = unsafe extern "C" fn(data: *mut c_void);

/// `jobsys_priority` values (Normal is 0 so a zeroed desc is the default).
pub const PRIORITY_NORMAL: i32 = 0;
pub const PRIORITY_HIGH: i32 = 1;
pub const PRIORITY_LOW: i32 = 2;

/// `jobsys_core_class` values (Any is 0 so a zeroed desc is the default).
pub const CORE_ANY: i32 = 0;
pub const CORE_PERFORMANCE: i32 = 1;
pub const CORE_EFFICIENCY: i32 = 2;

/// `jobsys_job_flags`.
pub const JOB_BATCHED: u32 = 1;
pub const JOB_PINNED: u32 = 2;
pub const JOB_BLOCKING: u32 = 4;
pub const JOB_KEEP_PRIORITY: u32 = 8;
const KNOWN_FLAGS: u32 = JOB_BATCHED | JOB_PINNED | JOB_BLOCKING | JOB_KEEP_PRIORITY;

/// `JOBSYS_INLINE_DATA`: bytes of data a job copies into itself.
pub const INLINE_DATA: usize = 40;

/// `jobsys_job_desc`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct JobDesc {
    /// `sizeof(jobsys_job_desc)` of the caller's header.
    pub size: u32,
    /// `jobsys_job_flags`.
    pub flags: u32,
    /// NUL-terminated name, or NULL. Copied.
    pub name: *const c_char,
    /// A `jobsys_priority`.
    pub priority: i32,
    /// Where the job runs, with `JOB_PINNED`.
    pub pin: Pin,
    /// `ndeps` handles to run after (NULL when `ndeps` is 0).
    pub deps: *const Handle,
    pub ndeps: usize,
    /// 0: `data` is passed as is; else bytes of `*data` to copy.
    pub data_size: usize,
    /// Called with the job's data when the job is done with it, or NULL.
    pub release: Option<ReleaseFn>,
    /// Run only with a seat of this limiter, or NULL.
    pub limiter: *const crate::limiter::Limiter,
    /// A `jobsys_core_class`.
    pub core_class: i32,
}

impl Default for JobDesc {
    /// `JOBSYS_JOB_DESC_INIT`.
    fn default() -> JobDesc {
        JobDesc {
            size: DESC_SIZE as u32,
            flags: 0,
            name: std::ptr::null(),
            priority: PRIORITY_NORMAL,
            pin: Pin::default(),
            deps: std::ptr::null(),
            ndeps: 0,
            data_size: 0,
            release: None,
            limiter: std::ptr::null(),
            core_class: CORE_ANY,
        }
    }
}

/// Bytes of a desc that this library reads.
const DESC_SIZE: usize = size_of::<JobDesc>();

/// A desc read and checked: the library's options plus what the C layer
/// does itself.
pub(crate) struct Desc<'a> {
    pub(crate) desc: jobsys::JobDesc,
    pub(crate) batched: bool,
    pub(crate) pin: Option<jobsys::Pin>,
    pub(crate) deps: &'a [Handle],
    pub(crate) data_size: usize,
    pub(crate) release: Option<ReleaseFn>,
    pub(crate) limit: Option<&'a jobsys::Limiter>,
    pub(crate) blocking: bool,
    /// `JOBSYS_JOB_KEEP_PRIORITY` (graph nodes only).
    pub(crate) keep_priority: bool,
    pub(crate) class: jobsys::topology::CoreClass,
}

/// A C job running on this thread, or the release callback of one
/// (`release`: part of the job for `running_in`, too late to fail it).
/// Frames live on the stack of [`in_frame`] and are linked through `prev`
/// from the thread-local [`TOP`]: entering a C job allocates nothing.
struct Frame {
    system: u32,
    failure: Option<String>,
    release: bool,
    /// The frame below this one on this thread (NULL: none).
    prev: *mut Frame,
}

thread_local! {
    /// The innermost C job running on this thread (a job that waits in
    /// `jobsys_complete` may run others on top of itself); NULL: none.
    static TOP: Cell<*mut Frame> = const { Cell::new(std::ptr::null_mut()) };
}

/// Call `call` inside a frame of system `serial` on this thread's stack of
/// C jobs; the failure `jobsys_fail` recorded in it, if any.
///
/// Invariant (what makes the raw pointers in `TOP` sound): a frame is
/// pushed and popped by this function only, on this thread, in stack
/// order, and popped before the function returns (`call` is a C function
/// or a C callback: it does not unwind, and a Rust panic in our wrapper
/// aborts before anything could outlive the frame); while it is linked,
/// only this thread reads or writes it, through `TOP`.
#[inline]
fn in_frame(serial: u32, release: bool, call: impl FnOnce()) -> Option<String> {
    let mut frame = Frame {
        system: serial,
        failure: None,
        release,
        prev: std::ptr::null_mut(),
    };
    let me: *mut Frame = &mut frame;
    // `try_with`: without TOP (a job run from a thread-local destructor)
    // the job cannot be failed by message, nor counted for `running_in`.
    // SAFETY: `me` points to `frame`, alive until the end of this function;
    // nothing else refers to it yet.
    let pushed = TOP
        .try_with(|t| unsafe { (*me).prev = t.replace(me) })
        .is_ok();
    call();
    if pushed {
        // SAFETY: `me` is still on top (inner frames were popped by the
        // calls that pushed them, before returning into `call`).
        let _ = TOP.try_with(|t| t.set(unsafe { (*me).prev }));
    }
    frame.failure
}

/// Is a job of system `serial` running on this thread (below us)?
pub fn running_in(serial: u32) -> bool {
    TOP.try_with(|t| {
        let mut p = t.get();
        while !p.is_null() {
            // SAFETY: linked frames are alive and this thread's (see
            // `in_frame`); only read here.
            let f = unsafe { &*p };
            if f.system == serial {
                return true;
            }
            p = f.prev;
        }
        false
    })
    .unwrap_or(false)
}

/// Run the C function `call` as a job of system `serial` (see the module
/// comment). Nothing here can panic (`in_frame` uses `try_with`, and a C
/// function does not unwind), so no `catch_unwind` is needed to keep an
/// unwind away from C frames: the only unwind starts below, after the C
/// function returned.
#[inline]
pub(crate) fn run_c(serial: u32, call: impl FnOnce()) {
    if let Some(message) = in_frame(serial, false, call) {
        // No panic hook runs for `resume_unwind`: nothing is printed.
        resume_unwind(Box::new(message));
    }
}

/// Mark the C job running on this thread as failed.
///
/// # Safety
/// `message` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn jobsys_fail(message: *const c_char) -> Code {
    ffi("jobsys_fail", || {
        let message = if message.is_null() {
            "the job failed (no message given)".to_string()
        } else {
            // SAFETY: non-NULL and NUL-terminated, as the caller promises.
            unsafe { CStr::from_ptr(message) }
                .to_string_lossy()
                .into_owned()
        };
        let frames = TOP.try_with(|t| {
            let top = t.get();
            if top.is_null() {
                return Err(Error::new(
                    Code::BadState,
                    "not called from inside a jobsys job",
                ));
            }
            // SAFETY: the innermost frame of this thread, alive while it is
            // linked (`in_frame`); no other reference to it is live now
            // (its job's C function is what called us).
            let frame = unsafe { &mut *top };
            if frame.release {
                return Err(Error::new(
                    Code::BadState,
                    "called from a release callback: the job is already done (fail it from its function)",
                ));
            }
            frame.failure.get_or_insert(message);
            Ok(())
        });
        frames.unwrap_or_else(|_| {
            Err(Error::new(
                Code::BadState,
                "called while this thread exits (no job can be failed from here)",
            ))
        })
    })
}

/// The `&'static str` the library needs for a job name: each distinct name
/// is copied once and kept for the life of the process (the library keeps
/// names for the tracer too). A BTreeMap, not a HashMap: valgrind reports
/// a static hashbrown table as "possibly lost" (it points into the middle
/// of its allocation).
fn intern(name: &CStr) -> &'static str {
    static NAMES: Mutex<BTreeMap<Box<[u8]>, &'static str>> = Mutex::new(BTreeMap::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let bytes = name.to_bytes();
    if let Some(&s) = names.get(bytes) {
        return s;
    }
    let s: &'static str = Box::leak(String::from_utf8_lossy(bytes).into_owned().into_boxed_str());
    names.insert(bytes.into(), s);
    s
}

/// `*desc` checked (NULL: the defaults).
///
/// # Safety
/// `desc` is NULL or points to `desc->size` readable bytes that start with
/// a `jobsys_job_desc` of at least this version's size (checked) whose
/// `name` is NULL or NUL-terminated and whose `deps` holds `ndeps` handles.
pub(crate) unsafe fn read_desc<'a>(s: &System, desc: *const JobDesc) -> Result<Desc<'a>> {
    if desc.is_null() {
        return Ok(Desc {
            desc: jobsys::JobDesc::default(),
            batched: false,
            pin: None,
            deps: &[],
            data_size: 0,
            release: None,
            limit: None,
            blocking: false,
            keep_priority: false,
            class: jobsys::topology::CoreClass::Any,
        });
    }
    // SAFETY: non-NULL; the caller promises at least `size` readable bytes,
    // and `size` (the first field) is always there.
    let size = unsafe { desc.cast::<u32>().read() } as usize;
    if size < DESC_SIZE {
        return Err(Error::new(
            Code::InvalidArgument,
            format!(
                "desc->size = {size}, less than sizeof(jobsys_job_desc) = {DESC_SIZE}: set it to sizeof(jobsys_job_desc) (JOBSYS_JOB_DESC_INIT does)"
            ),
        ));
    }
    if size > DESC_SIZE {
        // A newer header's desc: accepted only if what this library does
        // not know is zero (an option it would silently drop otherwise).
        // SAFETY: `size` bytes are readable, as the caller promises.
        let extra = unsafe {
            std::slice::from_raw_parts(desc.cast::<u8>().add(DESC_SIZE), size - DESC_SIZE)
        };
        if let Some(at) = extra.iter().position(|&b| b != 0) {
            return Err(Error::new(
                Code::InvalidArgument,
                format!(
                    "desc->size = {size}: byte {} is set, in a field this version of jobsys does not know (a newer header's option); sizeof(jobsys_job_desc) here is {DESC_SIZE}",
                    DESC_SIZE + at
                ),
            ));
        }
    }
    // SAFETY: non-NULL, at least `DESC_SIZE` readable bytes (checked above).
    let d = unsafe { desc.read() };
    if d.flags & !KNOWN_FLAGS != 0 {
        return Err(Error::new(
            Code::InvalidArgument,
            format!(
                "desc->flags = {:#x} has bits that are no jobsys_job_flags ({:#x})",
                d.flags,
                d.flags & !KNOWN_FLAGS
            ),
        ));
    }
    let priority = match d.priority {
        PRIORITY_NORMAL => Priority::Normal,
        PRIORITY_HIGH => Priority::High,
        PRIORITY_LOW => Priority::Low,
        p => {
            return Err(Error::new(
                Code::InvalidArgument,
                format!("desc->priority = {p} is not a jobsys_priority"),
            ))
        }
    };
    let jdesc = if d.name.is_null() {
        jobsys::JobDesc::default().with_priority(priority)
    } else {
        // SAFETY: NUL-terminated, as the caller promises.
        jobsys::JobDesc::named(intern(unsafe { CStr::from_ptr(d.name) })).with_priority(priority)
    };
    let pin = if d.flags & JOB_PINNED != 0 {
        Some(s.pin(d.pin)?)
    } else {
        None
    };
    let deps = if d.ndeps == 0 {
        &[][..]
    } else {
        non_null(d.deps, "desc->deps (with desc->ndeps > 0)")?;
        // SAFETY: non-NULL, `ndeps` readable handles as the caller promises.
        unsafe { std::slice::from_raw_parts(d.deps, d.ndeps) }
    };
    let blocking = d.flags & JOB_BLOCKING != 0;
    if blocking && pin.is_some() {
        return Err(Error::new(
            Code::InvalidArgument,
            "desc->flags: JOBSYS_JOB_BLOCKING with JOBSYS_JOB_PINNED (a blocking job runs on a blocking thread)",
        ));
    }
    // SAFETY: NULL or a live limiter, as the caller promises; read during
    // this call only.
    let limit = unsafe { d.limiter.as_ref() }.map(|l| &l.0);
    let class = match d.core_class {
        CORE_ANY => jobsys::topology::CoreClass::Any,
        CORE_PERFORMANCE => jobsys::topology::CoreClass::Performance,
        CORE_EFFICIENCY => jobsys::topology::CoreClass::Efficiency,
        c => {
            return Err(Error::new(
                Code::InvalidArgument,
                format!("desc->core_class = {c} is not a jobsys_core_class"),
            ))
        }
    };
    Ok(Desc {
        desc: jdesc,
        batched: d.flags & JOB_BATCHED != 0,
        pin,
        deps,
        data_size: d.data_size,
        release: d.release,
        limit,
        blocking,
        keep_priority: d.flags & JOB_KEEP_PRIORITY != 0,
        class,
    })
}

/// Where a C job's data is; the pointer its function and release get.
pub(crate) trait Payload: Send + Sync + 'static {
    fn ptr(&self) -> *mut c_void;
}

/// The caller's own pointer (`data_size == 0`).
pub(crate) struct Ptr(pub(crate) *mut c_void);
// SAFETY: the header makes the caller promise that `data` may be used from
// any thread (jobs run on workers); jobsys itself never dereferences it.
unsafe impl Send for Ptr {}
// SAFETY: as for Send; a parallel_for passes it to several threads at once,
// which the header also states.
unsafe impl Sync for Ptr {}
impl Payload for Ptr {
    fn ptr(&self) -> *mut c_void {
        self.0
    }
}

/// A byte copy of up to `8 * W` bytes, 8-aligned, held in the job (`W`
/// is `INLINE_DATA / 8` but for a small copy with a dependency,
/// `SmallInline`). In an `UnsafeCell`: C writes through the pointer it gets.
struct Inline<const W: usize = { INLINE_DATA / 8 }>(UnsafeCell<[MaybeUninit<u64>; W]>);
// SAFETY: plain bytes the caller promised are usable from any thread (and,
// for a parallel_for, from several at once: the header's contract).
unsafe impl<const W: usize> Send for Inline<W> {}
// SAFETY: as for Send.
unsafe impl<const W: usize> Sync for Inline<W> {}
impl<const W: usize> Payload for Inline<W> {
    fn ptr(&self) -> *mut c_void {
        self.0.get().cast()
    }
}

impl<const W: usize> Inline<W> {
    fn uninit() -> Inline<W> {
        Inline(UnsafeCell::new([MaybeUninit::uninit(); W]))
    }
}

/// The copy of at most 16 bytes (a C++ lambda capturing a reference or
/// two): with the function and the system's serial, the job's closure is
/// 32 bytes, which leaves the slot room for the job's first dependency
/// edge (no edge block for a chain or a tree: the library's
/// `JobVTable::edge_room`).
type SmallInline = Inline<2>;
const SMALL_INLINE: usize = 16;

/// A byte copy of any size, on the heap.
pub(crate) struct Heap(Box<[UnsafeCell<MaybeUninit<u64>>]>);

impl Heap {
    /// A heap copy of the `n` bytes at `data`, 8-aligned.
    ///
    /// # Safety
    /// `data` is readable for `n` bytes.
    pub(crate) unsafe fn copy_of(data: *const c_void, n: usize) -> Heap {
        let copy = Heap(
            (0..n.div_ceil(8))
                .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
                .collect(),
        );
        // SAFETY: `data` holds `n` readable bytes (the caller's promise);
        // the copy has `8 * ceil(n / 8) >= n` bytes.
        unsafe { copy_in(data, copy.ptr(), n) };
        copy
    }
}
// SAFETY: as for `Inline`.
unsafe impl Send for Heap {}
// SAFETY: as for `Inline`.
unsafe impl Sync for Heap {}
impl Payload for Heap {
    fn ptr(&self) -> *mut c_void {
        // `UnsafeCell<MaybeUninit<u64>>` has the layout of `u64`, and the
        // cells are contiguous: the first one's pointer covers them all.
        UnsafeCell::raw_get(self.0.as_ptr()).cast()
    }
}

/// Copy `size` bytes of `data` into `dst` (at least `size` bytes).
///
/// # Safety
/// `data` is readable for `size` bytes; `dst` writable for `size` bytes.
#[inline]
pub(crate) unsafe fn copy_in(data: *const c_void, dst: *mut c_void, size: usize) {
    if size > INLINE_DATA {
        // SAFETY: as the caller promises; a fresh `dst` cannot overlap `data`.
        unsafe { std::ptr::copy_nonoverlapping(data.cast::<u8>(), dst.cast::<u8>(), size) };
        return;
    }
    // A few words, inline: a call to `memcpy` with a run-time size costs as
    // much as the rest of a C job's scheduling. Fixed-size pieces, some
    // overlapping, and no loop (which the compiler would turn back into a
    // `memcpy` call).
    let (src, dst) = (data.cast::<u8>(), dst.cast::<u8>());
    // SAFETY: every piece below lies inside both `size`-byte ranges
    // (checked by its condition); the reads and writes are unaligned.
    unsafe {
        if size >= 8 {
            let w8 = |at: usize| {
                let v = src.add(at).cast::<u64>().read_unaligned();
                dst.add(at).cast::<u64>().write_unaligned(v);
            };
            for at in [0, 8, 16, 24] {
                if at + 8 < size {
                    w8(at);
                }
            }
            w8(size - 8);
        } else if size >= 4 {
            let w4 = |at: usize| {
                let v = src.add(at).cast::<u32>().read_unaligned();
                dst.add(at).cast::<u32>().write_unaligned(v);
            };
            w4(0);
            w4(size - 4);
        } else if size >= 2 {
            let w2 = |at: usize| {
                let v = src.add(at).cast::<u16>().read_unaligned();
                dst.add(at).cast::<u16>().write_unaligned(v);
            };
            w2(0);
            w2(size - 2);
        } else if size == 1 {
            dst.write(src.read());
        }
    }
}

/// A C job's release callback and data: calls `release` with the data's
/// address when dropped, i.e. when the library drops the job (after it
/// ran, or unrun when it was skipped). The call counts as part of the job
/// of system `serial`: a `jobsys_destroy` of that system from the callback
/// gets `JOBSYS_ERR_BAD_STATE`, as from the job itself.
pub(crate) struct CJob<P: Payload> {
    pub(crate) release: Option<ReleaseFn>,
    pub(crate) serial: u32,
    pub(crate) data: P,
}

impl<P: Payload> Drop for CJob<P> {
    fn drop(&mut self) {
        if let Some(f) = self.release {
            let data = self.data.ptr();
            // In a release frame: part of the job for `running_in`, and
            // `jobsys_fail` refuses. A C function does not unwind.
            // SAFETY: the caller of `jobsys_schedule`/`jobsys_parallel_for`
            // passed `f` for exactly this call with this data (or its
            // copy), made once.
            in_frame(self.serial, true, || unsafe { f(data) });
        }
    }
}

/// What to do with a checked desc: one job or a loop.
#[derive(Clone, Copy)]
enum Body {
    Job(JobFn),
    Range {
        f: RangeFn,
        begin: usize,
        end: usize,
        batch: usize,
    },
}

/// The closure of a C job: `f` on the job's data, once; then `job` drops,
/// which calls `release`.
///
/// # Safety
/// `f` may be called once with the data, from any thread.
#[inline(always)]
unsafe fn one_call<P: Payload>(f: JobFn, job: CJob<P>) -> impl FnOnce() + Send {
    // `job` is captured whole (a type with `Drop` is never split into its
    // fields) and dropped when the closure returns: `release` runs after
    // `f`, on this thread.
    move || {
        // SAFETY: as the caller promises.
        run_c(job.serial, || unsafe { f(job.data.ptr()) });
    }
}

/// A C loop's `[begin, end)`: `begin > end` is INVALID_ARGUMENT.
pub(crate) fn check_range(begin: usize, end: usize) -> Result<()> {
    if begin > end {
        return Err(Error::new(
            Code::InvalidArgument,
            format!("begin {begin} > end {end}"),
        ));
    }
    Ok(())
}

/// A C `batch` (indices per piece; 0: chosen by the library) as a `Batch`.
pub(crate) fn batch_of(batch: usize) -> Batch {
    match batch {
        0 => Batch::Auto,
        n => Batch::Fixed(n),
    }
}

/// Schedule `body` as `d` says, with `payload` as its data.
#[inline]
fn submit<P: Payload>(s: &System, d: &Desc<'_>, body: Body, payload: P) -> Result<Handle> {
    if d.deps.is_empty() {
        return Ok(submit_after(s, d, &[], body, payload));
    }
    submit_resolving(s, d, body, payload)
}

/// `submit` with dependencies to resolve first.
#[inline(never)]
fn submit_resolving<P: Payload>(
    s: &System,
    d: &Desc<'_>,
    body: Body,
    payload: P,
) -> Result<Handle> {
    // One or two dependencies (the common cases): resolved into a small
    // array here, without `Resolved`'s 16-handle buffer to set up.
    match *d.deps {
        [a] => {
            let ja = job_of(&s.js, a)?;
            return Ok(submit_after(s, d, one_or_none(&ja), body, payload));
        }
        [a, b] => {
            let deps = Few::new(job_of(&s.js, a)?, job_of(&s.js, b)?);
            return Ok(submit_after(s, d, deps.as_slice(), body, payload));
        }
        _ => {}
    }
    let mut deps = Resolved::new();
    deps.fill(&s.js, d.deps)?;
    Ok(submit_after(s, d, deps.as_slice(), body, payload))
}

/// One or two resolved dependencies, zeroed handles left out: the slice the
/// library takes, without `Resolved`'s 16-handle buffer to set up.
enum Few {
    Some(Option<JobHandle>),
    Two([JobHandle; 2]),
}

impl Few {
    #[inline(always)]
    fn new(a: Option<JobHandle>, b: Option<JobHandle>) -> Few {
        match (a, b) {
            (Some(x), Some(y)) => Few::Two([x, y]),
            (x, y) => Few::Some(x.or(y)),
        }
    }

    #[inline(always)]
    fn as_slice(&self) -> &[JobHandle] {
        match self {
            Few::Some(o) => one_or_none(o),
            Few::Two(both) => both,
        }
    }
}

/// `o` as a slice (`Option::as_slice` is newer than the MSRV).
#[inline(always)]
fn one_or_none(o: &Option<JobHandle>) -> &[JobHandle] {
    match o {
        Some(j) => std::slice::from_ref(j),
        None => &[],
    }
}

/// `submit` after the library handles `deps`.
#[inline(always)]
fn submit_after<P: Payload>(
    s: &System,
    d: &Desc<'_>,
    deps: &[JobHandle],
    body: Body,
    payload: P,
) -> Handle {
    let mut b = s.js.job().desc(d.desc).after(deps);
    if d.batched {
        b = b.batched();
    }
    if let Some(pin) = d.pin {
        b = b.pin(pin);
    }
    if let Some(l) = d.limit {
        b = b.limit(l);
    }
    if d.class != jobsys::topology::CoreClass::Any {
        b = b.core_class(d.class);
    }
    let job = CJob {
        release: d.release,
        serial: s.serial,
        data: payload,
    };
    let h = match body {
        // SAFETY: the caller of `jobsys_schedule` promised `f(data)` may be
        // called once, from any thread.
        Body::Job(f) if d.blocking => b.schedule_blocking(unsafe { one_call(f, job) }),
        // SAFETY: as above.
        Body::Job(f) => b.schedule(unsafe { one_call(f, job) }),
        Body::Range {
            f,
            begin,
            end,
            batch,
        } => {
            b.parallel_for_chunked(begin..end, batch_of(batch), move |r| {
                // SAFETY: the caller promised `f` may be called on disjoint
                // pieces of the range from several threads at once.
                run_c(job.serial, || unsafe { f(job.data.ptr(), r.start, r.end) });
            })
        }
    };
    Handle::from_job(h)
}

/// The body of `jobsys_schedule` and `jobsys_parallel_for`.
///
/// # Safety
/// The promises of `jobsys_schedule`: `sys` NULL or live, `desc` NULL or
/// valid (`read_desc`), `data` readable for `desc->data_size` bytes when
/// that is not 0, `out` NULL or writable.
unsafe fn schedule(
    name: &str,
    sys: *const System,
    desc: *const JobDesc,
    body: Option<Body>,
    data: *mut c_void,
    out: *mut Handle,
) -> Code {
    ffi(name, || {
        // SAFETY: `sys` is NULL or a live system, as the caller promises.
        let s = unsafe { system(sys) }?;
        let body = body.ok_or_else(|| Error::new(Code::NullArgument, "fn is NULL"))?;
        if let Body::Range { begin, end, .. } = body {
            check_range(begin, end)?;
        }
        // SAFETY: `desc` is NULL or a valid desc, as the caller promises.
        let d = unsafe { read_desc(s, desc) }?;
        if d.keep_priority {
            return Err(Error::new(
                Code::InvalidArgument,
                "desc->flags: JOBSYS_JOB_KEEP_PRIORITY applies to graph nodes only (a job's priority is always its own)",
            ));
        }
        if d.blocking && matches!(body, Body::Range { .. }) {
            return Err(Error::new(
                Code::InvalidArgument,
                "desc->flags: JOBSYS_JOB_BLOCKING with jobsys_parallel_for (only one call can block)",
            ));
        }
        let h = match d.data_size {
            0 => submit(s, &d, body, Ptr(data))?,
            n => {
                non_null(data, "data (with desc->data_size > 0)")?;
                if n <= INLINE_DATA {
                    let copy = Inline::<{ INLINE_DATA / 8 }>::uninit();
                    // SAFETY: `data` holds `n` readable bytes (the caller's
                    // promise); the copy has room for INLINE_DATA >= n.
                    unsafe { copy_in(data, copy.ptr(), n) };
                    submit(s, &d, body, copy)?
                } else {
                    // SAFETY: `data` holds `n` readable bytes (the caller's
                    // promise).
                    submit(s, &d, body, unsafe { Heap::copy_of(data, n) })?
                }
            }
        };
        // SAFETY: the out-parameter is NULL or writable, as the caller promises.
        unsafe { write_opt(out, h) };
        Ok(())
    })
}

/// Schedule `fn(data)` as one job described by `*desc`.
///
/// # Safety
/// See the header: `sys` live or NULL, `desc` NULL or valid, `data`
/// readable for `desc->data_size` bytes (when not 0), `out` NULL or
/// writable, `fn(data)` callable once from any thread.
#[no_mangle]
pub unsafe extern "C" fn jobsys_schedule(
    sys: *const System,
    desc: *const JobDesc,
    f: Option<JobFn>,
    data: *mut c_void,
    out: *mut Handle,
) -> Code {
    if let (false, Some(f)) = (sys.is_null(), f) {
        if desc.is_null() {
            // SAFETY: `sys` non-NULL; the caller's promises.
            return unsafe { schedule_bare(sys, f, Ptr(data), out) };
        }
    }
    // SAFETY: the caller's promises.
    unsafe { schedule_desc(sys, desc, f, data, out) }
}

/// `jobsys_schedule` with a desc (or a NULL argument to report), out of
/// line: the NULL desc's path stays short.
///
/// # Safety
/// As `jobsys_schedule`.
#[inline(never)]
unsafe fn schedule_desc(
    sys: *const System,
    desc: *const JobDesc,
    f: Option<JobFn>,
    data: *mut c_void,
    out: *mut Handle,
) -> Code {
    if let (false, false, Some(f)) = (sys.is_null(), desc.is_null(), f) {
        // SAFETY: `sys` and `desc` non-NULL; the caller's promises.
        if let Some(code) = unsafe { schedule_plain(sys, desc, f, data, out) } {
            return code;
        }
    }
    // SAFETY: the caller's promises.
    unsafe { schedule("jobsys_schedule", sys, desc, f.map(Body::Job), data, out) }
}

/// `jobsys_schedule` of a plain desc (a NULL one is plainer still, and
/// `jobsys_schedule` takes it itself): this version's size with no flags,
/// at most two dependencies (then no release callback), no name,
/// normal priority, and data inline (at most `INLINE_DATA` bytes, non-NULL)
/// or the caller's pointer: what C++'s `js.job().schedule(lambda)` sends
/// for a small lambda. The library's shortcut, without the builder and
/// without checking fields that are all defaults here. `None`: not a
/// plain job, or an invalid one; the general path (`schedule`) takes it and
/// reports what is wrong.
///
/// # Safety
/// `sys` is a live system (non-NULL); `desc` is non-NULL and readable as
/// `jobsys_schedule` requires (its `size` field, then `size` bytes); `data`
/// readable for `desc->data_size` bytes; `out` NULL or writable; `f(data)`
/// callable once from any thread.
#[inline(always)]
unsafe fn schedule_plain(
    sys: *const System,
    desc: *const JobDesc,
    f: JobFn,
    data: *mut c_void,
    out: *mut Handle,
) -> Option<Code> {
    // SAFETY: non-NULL; `size`, the first field, is always readable.
    if unsafe { desc.cast::<u32>().read() } as usize != DESC_SIZE {
        return None;
    }
    // SAFETY: non-NULL with `DESC_SIZE` readable bytes (its size, checked).
    let d = unsafe { desc.read() };
    // One or two dependencies (C++'s `js.job().after(h).schedule(f)`, a
    // grid's `after(up, left)`) without a release callback are plain too;
    // anything wrong with them (a forged handle, another system's) goes
    // the general way, which reports it.
    let few_deps = (d.ndeps == 1 || d.ndeps == 2) && !d.deps.is_null() && d.release.is_none();
    let plain = d.flags == 0
        && (d.ndeps == 0 || few_deps)
        && d.name.is_null()
        && d.priority == PRIORITY_NORMAL
        && d.limiter.is_null()
        && d.core_class == CORE_ANY;
    let n = d.data_size;
    if !plain || n > INLINE_DATA || (n != 0 && data.is_null()) {
        return None;
    }
    if few_deps {
        // SAFETY: as the caller promises.
        return unsafe { schedule_plain_after(sys, d.deps, d.ndeps, d.data_size, f, data, out) };
    }
    if n == 0 {
        // SAFETY: as the caller promises.
        return Some(unsafe { schedule_payload(sys, f, d.release, Ptr(data), out) });
    }
    let copy = Inline::<{ INLINE_DATA / 8 }>::uninit();
    // SAFETY: `data` holds `n` readable bytes (the caller's promise; non-NULL,
    // checked); the copy has room for INLINE_DATA >= n.
    unsafe { copy_in(data, copy.ptr(), n) };
    if d.release.is_none() {
        // SAFETY: as the caller promises, for the copy.
        return Some(unsafe { schedule_bare(sys, f, copy, out) });
    }
    // SAFETY: as the caller promises, for the copy.
    Some(unsafe { schedule_payload(sys, f, d.release, copy, out) })
}

/// `schedule_plain` of a desc with one or two dependencies and no release
/// callback (out of line: the plain path without dependencies stays as
/// short). `None` if a dependency is not a handle of this system: the
/// general path reports it.
///
/// # Safety
/// As `schedule_plain`, for its desc checked plain with `ndeps` 1 or 2:
/// `deps` non-NULL with `ndeps` readable handles, `n` its `data_size` (at
/// most `INLINE_DATA`, `data` non-NULL when not 0).
#[inline(never)]
unsafe fn schedule_plain_after(
    sys: *const System,
    deps: *const Handle,
    ndeps: usize,
    n: usize,
    f: JobFn,
    data: *mut c_void,
    out: *mut Handle,
) -> Option<Code> {
    debug_assert!(ndeps == 1 || ndeps == 2);
    // SAFETY: `sys` is live and `deps` holds `ndeps` readable handles (the
    // caller's promises).
    let (s, hs) = unsafe { (&*sys, std::slice::from_raw_parts(deps, ndeps)) };
    let first = job_of(&s.js, hs[0]).ok()?;
    let second = match hs.get(1) {
        Some(&h) => job_of(&s.js, h).ok()?,
        None => None,
    };
    let deps = Few::new(first, second);
    let dep = deps.as_slice();
    if n == 0 {
        // SAFETY: as the caller promises.
        return Some(unsafe { schedule_bare_after(sys, f, Ptr(data), dep, out) });
    }
    if n <= SMALL_INLINE {
        let copy = SmallInline::uninit();
        // SAFETY: `data` holds `n` readable bytes (the caller's promise;
        // checked non-NULL by `schedule_plain`); the copy has room for 16.
        unsafe { copy_in(data, copy.ptr(), n) };
        // SAFETY: as the caller promises, for the copy.
        return Some(unsafe { schedule_bare_after(sys, f, copy, dep, out) });
    }
    let copy = Inline::<{ INLINE_DATA / 8 }>::uninit();
    // SAFETY: `data` holds `n` readable bytes (the caller's promise; checked
    // non-NULL by `schedule_plain`); the copy has room for INLINE_DATA >= n.
    unsafe { copy_in(data, copy.ptr(), n) };
    // SAFETY: as the caller promises, for the copy.
    Some(unsafe { schedule_bare_after(sys, f, copy, dep, out) })
}

/// `jobsys_schedule` of `f` on `payload` with nothing to release (no desc,
/// or a plain one without `release`): the job's closure has no drop code
/// (`CJob`'s release check), which costs more than the check itself (the
/// closure's frame and its unwind path).
///
/// # Safety
/// `sys` is a live system (non-NULL); `out` NULL or writable; `f` callable
/// once with the payload's pointer, from any thread.
#[inline(always)]
unsafe fn schedule_bare<P: Payload>(
    sys: *const System,
    f: JobFn,
    payload: P,
    out: *mut Handle,
) -> Code {
    // Nothing here fails; a panic would be a jobsys bug: the guard stays.
    ffi("jobsys_schedule", || {
        // SAFETY: non-NULL and live, as the caller promises.
        let s = unsafe { &*sys };
        let serial = s.serial;
        // SAFETY: the caller promised `f` may be called once with the
        // payload's pointer, from any thread.
        let h =
            s.js.schedule(move || run_c(serial, || unsafe { f(payload.ptr()) }));
        // SAFETY: the out-parameter is NULL or writable, as the caller
        // promises.
        unsafe { write_opt(out, Handle::from_job(h)) };
        Ok(())
    })
}

/// `schedule_bare` after `dep`, a resolved handle (a function of its own:
/// sharing one with the no-dependency path cost that path instructions).
///
/// # Safety
/// As `schedule_bare`.
#[inline(always)]
unsafe fn schedule_bare_after<P: Payload>(
    sys: *const System,
    f: JobFn,
    payload: P,
    dep: &[JobHandle],
    out: *mut Handle,
) -> Code {
    // Nothing here fails; a panic would be a jobsys bug: the guard stays.
    ffi("jobsys_schedule", || {
        // SAFETY: non-NULL and live, as the caller promises.
        let s = unsafe { &*sys };
        let serial = s.serial;
        // SAFETY: as in `schedule_bare`.
        let h =
            s.js.schedule_after(dep, move || run_c(serial, || unsafe { f(payload.ptr()) }));
        // SAFETY: the out-parameter is NULL or writable, as the caller
        // promises.
        unsafe { write_opt(out, Handle::from_job(h)) };
        Ok(())
    })
}

/// The library's `schedule` of `f` on `payload`, with `release`.
///
/// # Safety
/// `sys` is a live system (non-NULL); `out` NULL or writable; `f` callable
/// once with the payload's pointer, from any thread; `release` (if any)
/// callable once with it after that.
#[inline(always)]
unsafe fn schedule_payload<P: Payload>(
    sys: *const System,
    f: JobFn,
    release: Option<ReleaseFn>,
    payload: P,
    out: *mut Handle,
) -> Code {
    // Nothing here fails; a panic would be a jobsys bug: the guard stays.
    ffi("jobsys_schedule", || {
        // SAFETY: non-NULL and live, as the caller promises.
        let s = unsafe { &*sys };
        let job = CJob {
            release,
            serial: s.serial,
            data: payload,
        };
        // SAFETY: as the caller promises.
        let h = s.js.schedule(unsafe { one_call(f, job) });
        // SAFETY: the out-parameter is NULL or writable, as the caller
        // promises.
        unsafe { write_opt(out, Handle::from_job(h)) };
        Ok(())
    })
}

/// Run `fn(data, b, e)` over pieces covering `[begin, end)`.
///
/// # Safety
/// As `jobsys_schedule`, and `fn` callable from several threads at once.
#[no_mangle]
pub unsafe extern "C" fn jobsys_parallel_for(
    sys: *const System,
    desc: *const JobDesc,
    begin: usize,
    end: usize,
    batch: usize,
    f: Option<RangeFn>,
    data: *mut c_void,
    out: *mut Handle,
) -> Code {
    let body = f.map(|f| Body::Range {
        f,
        begin,
        end,
        batch,
    });
    // SAFETY: the caller's promises.
    unsafe { schedule("jobsys_parallel_for", sys, desc, body, data, out) }
}

/// Run `a(a_data)` and `b(b_data)`, potentially in parallel; return when
/// both have.
///
/// # Safety
/// `sys` live or NULL; `a(a_data)` callable once from any thread, `b(b_data)`
/// once on this one.
#[no_mangle]
pub unsafe extern "C" fn jobsys_join(
    sys: *const System,
    a: Option<JobFn>,
    a_data: *mut c_void,
    b: Option<JobFn>,
    b_data: *mut c_void,
) -> Code {
    ffi("jobsys_join", || {
        // SAFETY: `sys` is NULL or a live system, as the caller promises.
        let s = unsafe { system(sys) }?;
        let a = a.ok_or_else(|| Error::new(Code::NullArgument, "a is NULL"))?;
        let b = b.ok_or_else(|| Error::new(Code::NullArgument, "b is NULL"))?;
        let serial = s.serial;
        let (ad, bd) = (Ptr(a_data), Ptr(b_data));
        let joined = catch_unwind(AssertUnwindSafe(|| {
            s.js.join(
                // SAFETY: the caller promised `a(a_data)` may be called
                // once, from any thread.
                move || run_c(serial, || unsafe { a(ad.ptr()) }),
                // SAFETY: the caller promised `b(b_data)` may be called
                // once, here.
                move || run_c(serial, || unsafe { b(bd.ptr()) }),
            )
        }));
        match joined {
            Ok(_) => Ok(()),
            // `run_c` ends a failed half with its `jobsys_fail` message
            // (a `String`); the library's join re-raises it (a's first)
            // after both halves are done.
            Err(p) => match p.downcast::<String>() {
                Ok(message) => Err(Error::new(
                    Code::JobFailed,
                    format!("a job of jobsys_join failed: {message}"),
                )),
                Err(p) => resume_unwind(p),
            },
        }
    })
}

/// One handle for all of `handles[..n]` (zeroed ones skipped).
///
/// # Safety
/// `sys` live or NULL; `handles` NULL (with `n` 0) or `n` handles; `out`
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_combine(
    sys: *const System,
    handles: *const Handle,
    n: usize,
    out: *mut Handle,
) -> Code {
    ffi("jobsys_combine", || {
        // SAFETY: `sys` is NULL or a live system, as the caller promises.
        let s = unsafe { system(sys) }?;
        non_null(out, "out")?;
        let hs = if n == 0 {
            &[][..]
        } else {
            non_null(handles, "handles (with n > 0)")?;
            // SAFETY: non-NULL, `n` readable handles as the caller promises.
            unsafe { std::slice::from_raw_parts(handles, n) }
        };
        let mut jobs = Resolved::new();
        jobs.fill(&s.js, hs)?;
        let h = Handle::from_job(s.js.combine(jobs.as_slice()));
        // SAFETY: checked non-NULL above, and writable as the caller promises.
        unsafe { out.write(h) };
        Ok(())
    })
}

/// Wait for `h`, helping with its work.
///
/// # Safety
/// `sys` live or NULL.
#[no_mangle]
pub unsafe extern "C" fn jobsys_complete(sys: *const System, h: Handle) -> Code {
    ffi("jobsys_complete", || {
        // SAFETY: as promised by the caller.
        let s = unsafe { system(sys) }?;
        if h.is_none() {
            return Ok(());
        }
        // One look-up of this thread in the system for the check and the
        // wait (`job_of` then `try_complete` would make two).
        match s.js.try_complete_bits([h.id, h.gen]) {
            Ok(r) => r.map_err(|e| crate::errors::from_job_error(&e)),
            Err(why) => Err(crate::handles::refused(why)),
        }
    })
}

/// `jobsys_complete` that gives up after `timeout_ns` with `Timeout`.
///
/// # Safety
/// `sys` live or NULL.
#[no_mangle]
pub unsafe extern "C" fn jobsys_complete_timeout(
    sys: *const System,
    h: Handle,
    timeout_ns: u64,
) -> Code {
    ffi("jobsys_complete_timeout", || {
        // SAFETY: as promised by the caller.
        let s = unsafe { system(sys) }?;
        match job_of(&s.js, h)? {
            None => Ok(()),
            Some(job) => {
                s.js.try_complete_timeout(job, std::time::Duration::from_nanos(timeout_ns))
                    .map_err(|e| crate::errors::from_job_error(&e))
            }
        }
    })
}

/// `*index` = the index of the first of `handles[0..n)` to finish.
///
/// # Safety
/// `sys` live or NULL; `handles` NULL or `n` readable handles; `index`
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_wait_any(
    sys: *const System,
    handles: *const Handle,
    n: usize,
    index: *mut usize,
) -> Code {
    ffi("jobsys_wait_any", || {
        // SAFETY: as promised by the caller.
        let s = unsafe { system(sys) }?;
        non_null(index, "index")?;
        if n == 0 {
            return Err(Error::new(
                Code::InvalidArgument,
                "n is 0: wait_any needs at least one handle",
            ));
        }
        non_null(handles, "handles")?;
        // SAFETY: non-NULL, `n` readable handles as the caller promises.
        let hs = unsafe { std::slice::from_raw_parts(handles, n) };
        let mut jobs = Vec::with_capacity(n);
        for &h in hs {
            // A zeroed handle names no job: one that has finished.
            jobs.push(job_of(&s.js, h)?.unwrap_or_else(|| s.js.combine(&[])));
        }
        let i =
            s.js.wait_any(&jobs)
                .map_err(|e| crate::errors::from_job_error(&e))?;
        // SAFETY: checked non-NULL, writable as promised.
        unsafe { index.write(i) };
        Ok(())
    })
}

/// `*done` = has `h` finished (successfully or not)? Never blocks.
///
/// # Safety
/// `sys` live or NULL; `done` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_is_complete(
    sys: *const System,
    h: Handle,
    done: *mut bool,
) -> Code {
    ffi("jobsys_is_complete", || {
        // SAFETY: `sys` is NULL or a live system, as the caller promises.
        let s = unsafe { system(sys) }?;
        non_null(done, "done")?;
        let d = match job_of(&s.js, h)? {
            None => true,
            Some(job) => s.js.is_complete(job),
        };
        // SAFETY: checked non-NULL above, and writable as the caller promises.
        unsafe { done.write(d) };
        Ok(())
    })
}

/// Cancel `h` (a job, a parallel_for or a combined group); `*stopped` (if
/// not NULL) = whether it was stopped before it started.
///
/// # Safety
/// `sys` live or NULL; `stopped` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jobsys_cancel(sys: *const System, h: Handle, stopped: *mut bool) -> Code {
    ffi("jobsys_cancel", || {
        // SAFETY: `sys` is NULL or a live system, as the caller promises.
        let s = unsafe { system(sys) }?;
        // The closures of the cancelled jobs are dropped in this call, and
        // their release callbacks may schedule jobs: nothing is locked here.
        let st = match job_of(&s.js, h)? {
            None => false,
            Some(job) => s.js.cancel(job),
        };
        // SAFETY: NULL or writable, as the caller promises.
        unsafe { write_opt(stopped, st) };
        Ok(())
    })
}

/// Has the job running on this thread been cancelled after it started?
/// False outside a job.
#[no_mangle]
pub extern "C" fn jobsys_is_cancelled() -> bool {
    // Cannot panic: a thread-local read (and `try_with` in the library).
    jobsys::is_cancelled()
}
