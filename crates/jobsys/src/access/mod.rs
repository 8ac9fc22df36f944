//! Declared data access: jobs say what they read and write; jobsys derives
//! their dependencies and hands each job exactly the references it
//! declared (`docs/access.md` has the usage and the decisions).
//!
//! ```text
//!   Resource<T> ── Arc ──▶ Inner { shared: Shared { history: Mutex<History>, poison },
//!                                  value: UnsafeCell<T> }
//!
//!   History (per resource): system it is bound to, last writer, readers since.
//!
//!   schedule_access((a.read(), b.write()), f):
//!     1. the declarations, sorted by resource address; a resource declared
//!        twice with a write is refused (panic, like other bad input);
//!        then back-pressure (`Config::max_jobs`), before any lock: it may
//!        run jobs (which may lock the same resources) or wait
//!        (room.rs `make_room_before_locks`)
//!     2. lock each resource's history in that order (no two threads lock
//!        in opposite orders: no deadlock)
//!     3. deps = explicit deps
//!            + for a read:  the last writer (if unfinished)
//!            + for a write: the last writer and every unfinished reader since
//!     4. submit the job after deps (no job may run on this thread while the
//!        locks are held, nor may it wait: room.rs `helping_forbidden` lets the
//!        allocation through, back-pressure was step 1's), then record it:
//!        a write becomes the last writer and clears the readers; a read
//!        joins the readers
//!     5. unlock
//!
//!   No user code runs on this thread while the locks are held: no job
//!   (`helping_forbidden`), and no closure drop: a pinned job whose thread
//!   is gone is cancelled when it becomes runnable, which drops its
//!   closure, so `job().pin(..).access(..)` submits it with a held pending
//!   count (`ThisThread::submit_held`) and releases it after step 5.
//! ```
//!
//! Cost: one lock + two reference-count increments per declared access
//! (the declaration's, and the copy the job owns: `Access::dup`; the
//! scheduling call keeps the declaration, and with it the resources,
//! until their locks are released), plus one load per unfinished history
//! entry looked at; no allocation unless the job's closure and its
//! declarations exceed the inline payload; no scan of other jobs. The history
//! is bounded: one writer handle and the readers since it, pruned of
//! finished ones (amortised: when the list doubles), so a program that
//! schedules forever keeps O(unfinished readers) per resource.
//!
//! # Why the references are sound
//!
//! Every job that declares a resource goes through step 2–5 under that
//! resource's lock, so those jobs have a total order (the *history order*).
//! For a job J that writes R, take any other job K that declares R:
//! - K before J in history order: K is the last writer, or a reader since
//!   it, or (transitively) before the last writer, which itself depended on
//!   K or saw K finished. Either J has a dependency edge to a job that
//!   finished after K did, or J's scheduler saw K (or its successor in the
//!   chain) finished under the lock. The edge case: K's `finish` releases
//!   its dependents with an AcqRel decrement (`Slot::dep_done`), the last
//!   decrement queues J (Release push), J's runner claims it (Acquire): K's
//!   accesses happen-before J's. The seen-finished case: the scheduler's
//!   Acquire load of K's state (`is_complete`) synchronises with K's
//!   finishing CAS, and the scheduler's publish of J (Release) with J's
//!   claim. (If K's slot was already reused, the load reads a later state
//!   whose writer is itself ordered after K's finish: the freeing CAS
//!   continues the release sequence and the new owner got the slot
//!   through the free lists' Release/Acquire hand-over.)
//! - K after J: by the same argument with the roles swapped, K cannot start
//!   before J finishes.
//!
//! So no reference K holds overlaps J's `&mut T`. Two readers may overlap
//! (both `&T`; `T: Sync`). A `read_now`/`write_now` guard is a job too (an
//! *event*: a slot held `WAITING` until the guard drops), so the same
//! argument covers it.
//!
//! Failures: a writer whose closure panics *poisons* the resource (the data
//! may be half written): every job declaring it that starts later fails
//! (without running) with the cause, until `Resource::clear_poison`. Jobs
//! that depend on a failed or cancelled job through a derived edge are
//! skipped with its cause, exactly as with explicit edges. A finished job
//! leaves the history (cancelled or failed alike): jobs scheduled after
//! that do not depend on it.

mod decl;
mod now;

pub use decl::{
    Access, Declare, ParAccess, ParDecl, Read, SingleDecl, SliceStorage, Write, WriteEach,
};
pub use now::{AccessError, ReadNow, WriteNow};

use crate::handle::JobHandle;
use crate::registry::Registry;
use crate::system::JobSystem;
use std::cell::UnsafeCell;
use std::ops::Range;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

/// How a job declared a resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub enum Mode {
    /// `read()`: shared.
    Read,
    /// `write()`: exclusive.
    Write,
    /// `write_each()`: exclusive (ordered like `Write`; told apart only in
    /// traces).
    WriteEach,
}

impl Mode {
    /// Exclusive (`Write` or `WriteEach`)?
    #[inline]
    pub(crate) fn writes(self) -> bool {
        self != Mode::Read
    }
}

/// A value shared by jobs that declare how they use it, plus its access
/// history. Cheap to clone (shared ownership, like `Arc`).
///
/// ```
/// use jobsys::{JobSystem, Resource};
/// let js = JobSystem::builder().workers(2).build().unwrap();
/// let pos = Resource::new(vec![0.0f32; 4]);
/// let vel = Resource::new(vec![1.0f32; 4]);
/// let step = js.job().access((vel.read(), pos.write())).schedule(|(v, p)| {
///     for (p, v) in p.iter_mut().zip(v) { *p += v; }
/// });
/// js.complete(step);
/// assert_eq!(pos.read_now(&js)[0], 1.0);
/// ```
pub struct Resource<T> {
    pub(crate) inner: Arc<Inner<T>>,
}

pub(crate) struct Inner<T> {
    pub(crate) shared: Shared,
    pub(crate) value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through guards whose exclusivity the
// history ordering guarantees (module docs): `&T` on several threads at
// once needs `T: Sync`, `&mut T` on another thread needs `T: Send`.
unsafe impl<T: Send + Sync> Sync for Inner<T> {}
// SAFETY: as above (the value may be dropped on any thread).
unsafe impl<T: Send + Sync> Send for Inner<T> {}

impl<T> Clone for Resource<T> {
    fn clone(&self) -> Self {
        Resource {
            inner: self.inner.clone(),
        }
    }
}

impl<T> std::fmt::Debug for Resource<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resource")
            .field("name", &self.describe())
            .field("poisoned", &self.is_poisoned())
            .finish_non_exhaustive()
    }
}

/// The untyped part of a resource: its history and poison flag.
#[doc(hidden)]
pub struct Shared {
    /// Unique per resource in the process (traces tell resources apart by
    /// it: unnamed ones, or two with the same name).
    id: u64,
    name: Option<&'static str>,
    type_name: &'static str,
    history: Mutex<History>,
    poisoned: AtomicBool,
}

struct History {
    /// Id of the system the resource is bound to (0: none yet) and a weak
    /// reference telling whether it still lives.
    system: u32,
    registry: Weak<Registry>,
    last_writer: Option<JobHandle>,
    readers: Vec<JobHandle>,
    /// Prune finished readers when `readers` reaches this length.
    prune_at: usize,
    /// The cause, while poisoned.
    poison: Option<String>,
}

const PRUNE_MIN: usize = 8;

/// The next `Shared::id` (0 is never used).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, History> {
        // A panic under the lock (a bad pin, say) leaves the history
        // consistent: it is only written after the job is submitted.
        self.history.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// (id, name or "", mode) as the tracer records an access.
    pub(crate) fn traced((s, m): (&Shared, Mode)) -> crate::trace::TracedAccess {
        let mode = match m {
            Mode::Read => crate::trace::AccessMode::Read,
            Mode::Write => crate::trace::AccessMode::Write,
            Mode::WriteEach => crate::trace::AccessMode::WriteEach,
        };
        (s.id, s.name.unwrap_or(""), mode)
    }

    pub(crate) fn describe(&self) -> String {
        match self.name {
            Some(n) => format!("resource \"{n}\""),
            None => format!("a Resource<{}>", self.type_name),
        }
    }

    /// Panic (failing the running job) if a writer's panic poisoned it.
    #[inline(always)]
    pub(crate) fn check_poison(&self) {
        if self.poisoned.load(Ordering::Acquire) {
            self.poisoned_panic();
        }
    }

    #[cold]
    #[inline(never)]
    fn poisoned_panic(&self) -> ! {
        let why = self.lock().poison.clone().unwrap_or_default();
        panic!(
            "jobsys: {} is poisoned: a job writing it panicked ({why}); \
             Resource::clear_poison lets jobs use it again",
            self.describe()
        );
    }

    fn poison(&self, payload: &(dyn std::any::Any + Send)) {
        let msg = if let Some(s) = payload.downcast_ref::<&'static str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "a job panicked with a non-string payload".to_string()
        };
        let mut h = self.lock();
        if h.poison.is_none() {
            h.poison = Some(msg);
        }
        self.poisoned.store(true, Ordering::Release);
    }
}

impl History {
    /// Bind to `reg`'s system, or panic if bound to another live one.
    #[inline(always)]
    fn bind(&mut self, js: &JobSystem, what: &Shared) {
        if self.system != js.reg().id() {
            self.bind_slow(js, what);
        }
    }

    /// `bind` to a system other than the current one (out of line: once
    /// per resource and system).
    #[cold]
    #[inline(never)]
    fn bind_slow(&mut self, js: &JobSystem, what: &Shared) {
        let id = js.reg().id();
        if self.system != 0 && self.registry.strong_count() > 0 {
            panic!(
                "jobsys: {} is used with two JobSystems (it belongs to the system \
                 with id {}, this one is {id}); a Resource's history names one \
                 system's jobs",
                what.describe(),
                self.system
            );
        }
        // Unbound, or its system is gone (dropping a system runs all its
        // jobs: nothing in the history can still run).
        self.system = id;
        self.registry = Arc::downgrade(js.reg_arc());
        self.last_writer = None;
        self.readers.clear();
    }

    /// Push the unfinished jobs a `mode` access must wait for onto `deps`,
    /// forgetting finished ones.
    #[inline(always)]
    fn collect(&mut self, reg: &Registry, mode: Mode, deps: &mut DepBuf) {
        if let Some(w) = self.last_writer {
            if reg.is_complete(w) {
                self.last_writer = None;
            } else {
                deps.push(w);
            }
        }
        if mode.writes() {
            self.readers.retain(|&r| !reg.is_complete(r));
            for &r in &self.readers {
                deps.push(r);
            }
        }
    }

    /// Record `h` as the latest `mode` access.
    #[inline(always)]
    fn record(&mut self, reg: &Registry, h: JobHandle, mode: Mode) {
        match mode {
            Mode::Write | Mode::WriteEach => {
                self.last_writer = Some(h);
                self.readers.clear();
                self.prune_at = PRUNE_MIN;
            }
            Mode::Read => {
                if self.readers.len() >= self.prune_at {
                    self.readers.retain(|&r| !reg.is_complete(r));
                    self.prune_at = (self.readers.len() * 2).max(PRUNE_MIN);
                }
                self.readers.push(h);
            }
        }
    }
}

impl<T: Send + Sync + 'static> Resource<T> {
    /// Share `value` between jobs that declare their access to it.
    pub fn new(value: T) -> Resource<T> {
        Resource::build(None, value)
    }

    /// `new`, with a name used in error messages.
    pub fn named(name: &'static str, value: T) -> Resource<T> {
        Resource::build(Some(name), value)
    }

    fn build(name: Option<&'static str>, value: T) -> Resource<T> {
        Resource {
            inner: Arc::new(Inner {
                shared: Shared {
                    id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                    name,
                    type_name: std::any::type_name::<T>(),
                    history: Mutex::new(History {
                        system: 0,
                        registry: Weak::new(),
                        last_writer: None,
                        readers: Vec::new(),
                        prune_at: PRUNE_MIN,
                        poison: None,
                    }),
                    poisoned: AtomicBool::new(false),
                },
                value: UnsafeCell::new(value),
            }),
        }
    }

    /// Declare a read: the job gets `&T`. Readers run at once.
    pub fn read(&self) -> Read<T> {
        Read { res: self.clone() }
    }

    /// Declare a write: the job gets `&mut T`; it runs after the previous
    /// writer and every reader since.
    pub fn write(&self) -> Write<T> {
        Write { res: self.clone() }
    }
}

impl<T: SliceStorage> Resource<T> {
    /// Declare a per-element write for a `job().access(..).parallel_for`: index `i`
    /// gets `&mut v[i]` (the chunked form `&mut v[range]`). Ordered like
    /// `write`. An index past the end fails the loop with a message.
    pub fn write_each(&self) -> WriteEach<T> {
        WriteEach { res: self.clone() }
    }
}

impl<T> Resource<T> {
    /// Has a writer's panic poisoned it (see `docs/access.md`)?
    pub fn is_poisoned(&self) -> bool {
        self.inner.shared.poisoned.load(Ordering::Acquire)
    }

    /// Let jobs use it again after a writer panicked. Jobs that already
    /// failed stay failed; jobs starting afterwards run.
    ///
    /// # Panics
    /// When called from a profiler hook (`ProfilerHooks`, "What a hook
    /// may do"): the hook may run under this resource's lock.
    pub fn clear_poison(&self) {
        crate::current::forbid_in_hook("Resource::clear_poison");
        let mut h = self.inner.shared.lock();
        h.poison = None;
        self.inner.shared.poisoned.store(false, Ordering::Release);
    }

    /// The name given to `named`, if any.
    pub fn name(&self) -> Option<&'static str> {
        self.inner.shared.name
    }

    pub(crate) fn describe(&self) -> String {
        self.inner.shared.describe()
    }

    /// (has a last writer, readers recorded): the history's size.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn history_size(&self) -> (bool, usize) {
        let h = self.inner.shared.lock();
        (h.last_writer.is_some(), h.readers.len())
    }
}

// ---- scheduling --------------------------------------------------------

/// Dependencies gathered for one job: inline up to 16, then a `Vec`.
pub(crate) struct DepBuf {
    inline: [JobHandle; 16],
    n: usize,
    more: Vec<JobHandle>,
}

impl DepBuf {
    #[inline(always)]
    fn new() -> DepBuf {
        DepBuf {
            inline: [JobHandle::DANGLING; 16],
            n: 0,
            more: Vec::new(),
        }
    }
    #[inline(always)]
    pub(crate) fn push(&mut self, h: JobHandle) {
        if self.more.is_empty() && self.n < self.inline.len() {
            self.inline[self.n] = h;
            self.n += 1;
        } else {
            if self.more.is_empty() {
                self.more.extend_from_slice(&self.inline[..self.n]);
            }
            self.more.push(h);
        }
    }
    pub(crate) fn as_slice(&self) -> &[JobHandle] {
        if self.more.is_empty() {
            &self.inline[..self.n]
        } else {
            &self.more
        }
    }
}

/// The declarations of one job, sorted by resource address, duplicates
/// merged (two reads) or refused (a write and anything).
struct Decls<'a> {
    items: [Option<(&'a Shared, Mode)>; decl::MAX_DECLS],
    n: usize,
}

impl<'a> Decls<'a> {
    #[inline(always)]
    fn add(&mut self, s: &'a Shared, m: Mode) {
        assert!(
            self.n < decl::MAX_DECLS,
            "jobsys: JobBuilder::access: a job may declare at most {} resources",
            decl::MAX_DECLS
        );
        // Insertion sort by address (at most MAX_DECLS).
        let key = s as *const Shared as usize;
        let mut i = self.n;
        while i > 0 {
            let (p, pm) = self.items[i - 1].expect("filled");
            let pk = p as *const Shared as usize;
            if pk == key {
                if pm.writes() || m.writes() {
                    panic!(
                        "jobsys: JobBuilder::access: {} is declared twice in one job, and one of \
                         the declarations writes (a job gets one reference per resource: \
                         declare it once, as write() if it writes)",
                        s.describe()
                    );
                }
                return; // read twice: one read
            }
            if pk < key {
                break;
            }
            self.items[i] = self.items[i - 1];
            i -= 1;
        }
        self.items[i] = Some((s, m));
        self.n += 1;
    }
    fn iter(&self) -> impl Iterator<Item = (&'a Shared, Mode)> + '_ {
        self.items[..self.n].iter().map(|x| x.expect("filled"))
    }
}

/// Steps 1–5 of the module docs: derive `visit`'s dependencies, call
/// `submit` with them (plus `extra`) under the locks, and record the job.
#[track_caller]
pub(crate) fn schedule_core<'s>(
    js: &JobSystem,
    visit: impl FnOnce(&mut dyn FnMut(&'s Shared, Mode)),
    extra: &[JobHandle],
    what: &str,
    submit: impl FnOnce(&[JobHandle]) -> JobHandle,
) -> JobHandle {
    // Before the resource locks: a hook may be running under them on this
    // thread (`access`, or `job_ready` and `wake` of a job scheduled here).
    crate::current::forbid_in_hook(what);
    let reg = js.reg();
    crate::handle::check_handles(reg.id(), extra, what);
    let mut decls = Decls {
        items: [None; decl::MAX_DECLS],
        n: 0,
    };
    visit(&mut |s, m| decls.add(s, m));
    // Before the locks: back-pressure may run jobs, or wait for other
    // threads to finish some (which may need these locks).
    crate::room::make_room_before_locks(reg, reg.current());
    let mut deps = DepBuf::new();
    for &h in extra {
        deps.push(h);
    }
    let mut locks: [Option<MutexGuard<'_, History>>; decl::MAX_DECLS] = Default::default();
    for (k, (s, m)) in decls.iter().enumerate() {
        let mut h = s.lock();
        h.bind(js, s);
        h.collect(reg, m, &mut deps);
        locks[k] = Some(h);
    }
    let handle = {
        let _no_help = crate::room::NoHelp::enter();
        submit(deps.as_slice())
    };
    for (k, (_, m)) in decls.iter().enumerate() {
        locks[k].as_mut().expect("locked").record(reg, handle, m);
    }
    // Under the locks: each resource's trace events come in its history
    // order. One check per job; nothing per access unless recording.
    crate::trace::accesses(reg, handle, &mut decls.iter().map(Shared::traced));
    handle
}

/// The body of a single access job: check poison, make the guards, run
/// `f`; a panic poisons the resources it writes.
pub(crate) fn run_single<A: Access, F>(access: &A, f: F)
where
    F: for<'a> FnOnce(A::Guards<'a>),
{
    access.visit(&mut |s, _| s.check_poison());
    // SAFETY: this job is running, so its derived dependencies finished
    // (module docs, "Why the references are sound").
    let g = unsafe { access.guards() };
    if let Err(p) = catch_unwind(AssertUnwindSafe(move || f(g))) {
        poison_writes(&|f| access.visit(f), &*p);
        resume_unwind(p);
    }
}

/// Calls its argument on every declaration of a job.
type Visit<'v> = &'v dyn Fn(&mut dyn FnMut(&Shared, Mode));

fn poison_writes(visit: Visit<'_>, p: &(dyn std::any::Any + Send)) {
    visit(&mut |s, m| {
        if m.writes() {
            s.poison(p);
        }
    });
}

/// A `job().access(..).parallel_for` job's shared state: the declarations and the
/// base pointers taken once, by the first piece.
pub(crate) struct ParJob<A: ParAccess> {
    access: A,
    base: OnceLock<A::Base>,
}

impl<A: ParAccess> ParJob<A> {
    pub(crate) fn new(access: A) -> ParJob<A> {
        ParJob {
            access,
            base: OnceLock::new(),
        }
    }

    fn base(&self) -> &A::Base {
        self.base.get_or_init(|| {
            self.access.visit(&mut |s, _| s.check_poison());
            // SAFETY: the loop is running (its dependencies finished), and
            // `OnceLock` runs this once, before any piece uses the base.
            unsafe { self.access.prepare() }
        })
    }

    pub(crate) fn run_index<F>(&self, i: usize, f: &F)
    where
        F: for<'a> Fn(usize, A::Item<'a>),
    {
        let base = self.base();
        // SAFETY: `base` is this loop's; `parallel_for` calls each index once.
        let item = unsafe { self.access.item(base, i) };
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| f(i, item))) {
            poison_writes(&|f| self.access.visit(f), &*p);
            resume_unwind(p);
        }
    }

    pub(crate) fn run_chunk<F>(&self, r: Range<usize>, f: &F)
    where
        F: for<'a> Fn(Range<usize>, A::Chunk<'a>),
    {
        let base = self.base();
        // SAFETY: `base` is this loop's; chunks of one loop are disjoint and
        // never inverted (`run_chunked` calls `lo..hi` with `lo <= hi`).
        let chunk = unsafe { self.access.chunk(base, r.clone()) };
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| f(r, chunk))) {
            poison_writes(&|f| self.access.visit(f), &*p);
            resume_unwind(p);
        }
    }
}
