//! Job slots and the per-thread slot store.
//!
//! A `Slot` is one fixed-size (128-byte) cell. It holds either a job
//! (closure inline when it fits in `PAYLOAD_BYTES`, boxed when not) or, for a
//! job with dependencies, a block of two dependency edges chained from the job.
//! Slots live in pages owned by the `Registry`; each page belongs to one
//! context (thread), and only that context allocates from it.
//!
//! Invariants:
//! - A slot's memory is never freed before the registry is dropped, so an
//!   address from a handle or a deque entry is always readable while the
//!   system lives; the *generation* in `state` says whether it still names
//!   the same job.
//! - The generation only changes in the single CAS that frees a slot
//!   (`FINISHED`, no pins → next generation, `FREE`). A thread holding a pin
//!   therefore sees a stable generation, payload, edges and failure.
//! - The local free list is touched only by the owning thread; other threads
//!   return slots through `remote_free`, a stack the owner empties with one
//!   `swap` (no ABA: nodes are only popped by that swap).

use crate::error::Failure;
use crate::sync::AtomicPtr as SyncAtomicPtr;
use crate::sync::AtomicU64 as StateWord;
use crossbeam_utils::CachePadded;
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

/// Bytes of closure a slot stores inline.
pub(crate) const PAYLOAD_BYTES: usize = 64;
/// Slots per page.
pub(crate) const PAGE_SLOTS: usize = 256;

// ---- the state word -------------------------------------------------------
// bits 0..32: generation; bits 32..35: phase; 35..41: flags; 41..64: pins.
//
// The phases of one generation (→ is one CAS or a store by the slot's owner
// before publication; every transition keeps the generation except the
// freeing one, which also drops the last pin):
//
//   FREE(g) ──alloc+publish──▶ RUNNABLE(g) ──claim (+pin)──▶ RUNNING(g)
//      │                          ▲   │ PFOR: pinned pieces,       │
//      │ publish with deps        │   │ stays RUNNABLE            │ run / fail /
//      ▼                          │   ▼                            ▼ skip
//   WAITING(g) ──last dep done────┘  FINISHED(g) ◀──finish──────────┘
//      │ cancel (+pin, CANCELLED; closure dropped by the canceller; the
//      │ job later goes RUNNABLE → RUNNING → FINISHED without running)
//   FINISHED(g), no pins ──free──▶ FREE(g+1), or retired at RETIRED_GEN
//   EDGES(g): an edge block, private to its job, freed with it.
//
// Flags: FAILED, POISONED (skipped: a dependency failed), CANCELLED,
// WAITED (a waiter needs it), PFOR, HAS_DEPS (dependents attached). Pins:
// waiters, attachers, a canceller and the runner (the claim) each hold one;
// a pinned slot keeps its generation, payload, edges and failure.
pub(crate) const PHASE_SHIFT: u32 = 32;
pub(crate) const PHASE_MASK: u64 = 0b111 << PHASE_SHIFT;
pub(crate) const FREE: u64 = 0;
pub(crate) const WAITING: u64 = 1 << PHASE_SHIFT;
pub(crate) const RUNNABLE: u64 = 2 << PHASE_SHIFT;
pub(crate) const RUNNING: u64 = 3 << PHASE_SHIFT;
pub(crate) const FINISHED: u64 = 4 << PHASE_SHIFT;
pub(crate) const EDGES: u64 = 5 << PHASE_SHIFT;
/// The job (or a dependency of it) panicked.
pub(crate) const FAILED: u64 = 1 << 35;
/// The job was skipped because a dependency failed.
pub(crate) const POISONED: u64 = 1 << 36;
/// A dependent attached (or is attaching) an edge: `finish` must walk and
/// close the dependents list. Set in the same CAS that pins the job for the
/// attach, so a job without it (and without other pins) finishes in one CAS.
pub(crate) const HAS_DEPS: u64 = 1 << 40;
/// Some thread in `complete` needs this job (it is the handle waited on or
/// one of its unfinished dependencies): waiters may help with it.
pub(crate) const WAITED: u64 = 1 << 38;
/// The slot holds a parallel_for: its entries pin instead of claim, and it
/// stays RUNNABLE while its pieces run (`parallel_for.rs`).
pub(crate) const PFOR: u64 = 1 << 39;
pub(crate) const PIN_SHIFT: u32 = 41;
pub(crate) const PIN_ONE: u64 = 1 << PIN_SHIFT;

#[inline]
pub(crate) fn gen_of(s: u64) -> u32 {
    s as u32
}
#[inline]
pub(crate) fn phase_of(s: u64) -> u64 {
    s & PHASE_MASK
}
#[inline]
pub(crate) fn pins_of(s: u64) -> u64 {
    s >> PIN_SHIFT
}
/// The job was cancelled before it could start (`Slot::cancel`): its
/// closure is already dropped; when it becomes runnable it finishes as
/// failed without running.
pub(crate) const CANCELLED: u64 = 1 << 37;

/// The first generation of a fresh slot. Generation 0 is never handed out,
/// so a zeroed slot never matches a handle.
pub(crate) const FIRST_GEN: u32 = 1;
/// A slot that reaches this generation is retired: never allocated again,
/// so no generation of a slot is ever handed out twice and a handle never
/// aliases a later job (128 bytes lost per 2^32 jobs run in one slot).
pub(crate) const RETIRED_GEN: u32 = u32::MAX;

/// A finished slot with no pins can be recycled. A failed job's failure
/// outlives its slot in the registry's failure log (`failures.rs`), keyed by
/// (slot, generation), so later waits and dependents still see it.
#[inline]
fn reclaimable(s: u64) -> bool {
    phase_of(s) == FINISHED && pins_of(s) == 0
}
/// The FREE state of the next generation (never past `RETIRED_GEN`).
#[inline]
pub(crate) fn next_free_state(s: u64) -> u64 {
    u64::from(gen_of(s).saturating_add(1)) | FREE
}
/// Is a just-freed slot in this state retired (never reused)?
#[inline]
pub(crate) fn is_retired(s: u64) -> bool {
    gen_of(s) == RETIRED_GEN
}

/// Sentinel in `Slot::dependents` once the job finished: no more edges.
pub(crate) const CLOSED: *mut Edge = 1 as *mut Edge;

/// What kind of job a slot holds, and how to run or drop its payload.
pub(crate) struct JobVTable {
    /// Run (consuming) the closure in the payload.
    pub run: unsafe fn(*mut u8),
    /// Drop the payload without running it.
    pub drop: unsafe fn(*mut u8),
    /// The closure's type name (unnamed jobs are reported by it).
    pub type_name: fn() -> &'static str,
    /// For parallel_for: run indices `[begin, end)` of the closure, which
    /// is whole pieces of `batch` indices (the last may be shorter).
    pub run_range: unsafe fn(*const u8, usize, usize, usize),
}

/// One dependency edge: `dependent` waits for `dep`. Lives in an edge block
/// owned by `dependent`; linked into `dep`'s dependents list through `next`.
#[repr(C)]
pub(crate) struct Edge {
    pub next: UnsafeCell<*mut Edge>,
    pub dependent: *const Slot,
    pub dep: *const Slot,
    pub dep_gen: u32,
}
pub(crate) const EDGES_PER_BLOCK: usize = PAYLOAD_BYTES / std::mem::size_of::<Edge>();

/// A job's name id (`desc::intern`) and priority, in the slot's 4 spare bytes.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub(crate) struct JobMeta {
    pub name: u16,
    pub priority: u8,
    pub _spare: u8,
}

impl JobMeta {
    /// One word, so the slot can keep it in an atomic.
    #[inline]
    fn pack(self) -> u32 {
        u32::from(self.name) | u32::from(self.priority) << 16 | u32::from(self._spare) << 24
    }

    /// Unnamed, normal priority.
    fn default_packed() -> u32 {
        JobMeta {
            name: 0,
            priority: 1,
            _spare: 0,
        }
        .pack()
    }

    #[inline]
    fn unpack(w: u32) -> JobMeta {
        JobMeta {
            name: w as u16,
            priority: (w >> 16) as u8,
            _spare: (w >> 24) as u8,
        }
    }
}

#[repr(C, align(16))]
pub(crate) struct Payload(pub [MaybeUninit<u8>; PAYLOAD_BYTES]);

#[repr(C, align(64))]
pub(crate) struct Slot {
    pub state: StateWord,
    /// Head of the list of edges of jobs waiting for this one, or `CLOSED`.
    pub dependents: AtomicPtr<Edge>,
    /// Unfinished dependencies + 1 while the job is being set up.
    pub pending: AtomicU32,
    /// Index of the context whose page holds this slot. Atomic only
    /// because an idle page is zeroed (`Store::trim`) and rewritten when
    /// reused; otherwise it never changes.
    owner: AtomicU32,
    /// Free-list link.
    pub link: SyncAtomicPtr<Slot>,
    /// The job's vtable (a raw pointer: an idle, zeroed page holds null).
    vtable: UnsafeCell<*const JobVTable>,
    /// `Arc<Failure>` as a raw pointer, or null.
    pub failure: AtomicPtr<Failure>,
    /// First edge block of this job's own dependencies (chained through the
    /// blocks' `edges` field).
    pub edges: UnsafeCell<*mut Slot>,
    /// Number of dependencies recorded in the edge blocks.
    pub ndeps: UnsafeCell<u32>,
    /// Name id and priority, packed (`JobMeta::pack`). Written before
    /// publication and read-only until the slot is freed. Atomic (relaxed)
    /// because two readers look without a pin, only to guess which deque an
    /// entry is on (`Slot::prio_hint`); a pinned reader is ordered after the
    /// write by the publishing state CAS.
    pub meta: AtomicU32,
    pub payload: UnsafeCell<Payload>,
}

#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<Slot>() == 128);
const _: () = assert!(EDGES_PER_BLOCK == 2);

// SAFETY: every field is either atomic or written only by the thread that owns
// the slot while no other thread can reach it (before publication, or after
// the freeing CAS), or read only while holding a pin; see module invariants.
unsafe impl Sync for Slot {}
// SAFETY: as above; slots move between threads only as addresses.
unsafe impl Send for Slot {}

unsafe fn noop(_: *mut u8) {}
unsafe fn noop_range(_: *const u8, _: usize, _: usize, _: usize) {}
/// The vtable of a job with nothing to run (`combine`).
fn combine_name() -> &'static str {
    "combine"
}
pub(crate) static NOOP_VTABLE: JobVTable = JobVTable {
    type_name: combine_name,
    run: noop,
    drop: noop,
    run_range: noop_range,
};

impl Slot {
    fn new(owner: u32) -> Slot {
        Slot {
            state: StateWord::new(u64::from(FIRST_GEN) | FREE),
            dependents: AtomicPtr::new(ptr::null_mut()),
            pending: AtomicU32::new(0),
            owner: AtomicU32::new(owner),
            link: SyncAtomicPtr::new(ptr::null_mut()),
            vtable: UnsafeCell::new(&NOOP_VTABLE),
            failure: AtomicPtr::new(ptr::null_mut()),
            edges: UnsafeCell::new(ptr::null_mut()),
            ndeps: UnsafeCell::new(0),
            meta: AtomicU32::new(JobMeta::default_packed()),
            payload: UnsafeCell::new(Payload([MaybeUninit::uninit(); PAYLOAD_BYTES])),
        }
    }

    #[inline]
    pub(crate) fn payload_ptr(&self) -> *mut u8 {
        self.payload.get().cast()
    }

    /// Name id and priority. Caller holds a pin or claim (or owns the slot),
    /// so the value is this job's.
    #[inline]
    pub(crate) fn meta(&self) -> JobMeta {
        JobMeta::unpack(self.meta.load(Ordering::Relaxed))
    }

    /// Set name id and priority. Caller owns the slot, before publication.
    #[inline]
    pub(crate) fn set_meta(&self, meta: JobMeta) {
        self.meta.store(meta.pack(), Ordering::Relaxed);
    }

    /// Priority index (`Priority as usize`). Caller holds a pin or claim (or
    /// owns the slot).
    #[inline]
    pub(crate) fn prio(&self) -> usize {
        self.meta().priority as usize
    }

    /// The priority without a pin: the slot may be freed and reused
    /// meanwhile, so this is the priority of *some* job that had the slot —
    /// good only as a guess of which deque to look at, where entries are
    /// checked against their generation anyway.
    #[inline]
    pub(crate) fn prio_hint(&self) -> usize {
        // Every value ever stored is a whole packed word with a valid
        // priority, so the same load as `prio` gives a valid index.
        self.prio()
    }

    #[inline]
    pub(crate) fn vtable(&self) -> &'static JobVTable {
        // SAFETY: the vtable is written (`set_vtable`, a `&'static`)
        // before the job is published (deque push or handle return, both
        // release operations) and not changed until the slot is freed;
        // readers hold a pin or a claim.
        unsafe { &**self.vtable.get() }
    }

    /// Set the vtable of a job being written.
    ///
    /// # Safety
    /// The caller owns the slot (fresh from `alloc`, unpublished).
    #[inline]
    pub(crate) unsafe fn set_vtable(&self, vt: &'static JobVTable) {
        // SAFETY: unpublished slot, promised by the caller.
        unsafe { *self.vtable.get() = vt };
    }

    /// Index of the context whose store this slot belongs to.
    #[inline]
    pub(crate) fn owner(&self) -> u32 {
        self.owner.load(Ordering::Relaxed)
    }

    /// Make a slot of an idle page (zeroed by `Store::trim`) a fresh free
    /// slot of generation `gen` again. Only atomic stores touch what other
    /// threads may read without a pin (`state`, `meta`): a stale handle or
    /// entry may still look at the slot's state.
    fn revive(&self, owner: u32, gen: u32) {
        self.state.store(u64::from(gen) | FREE, Ordering::Relaxed);
        self.owner.store(owner, Ordering::Relaxed);
        self.dependents.store(ptr::null_mut(), Ordering::Relaxed);
        self.pending.store(0, Ordering::Relaxed);
        self.failure.store(ptr::null_mut(), Ordering::Relaxed);
        self.meta
            .store(JobMeta::default_packed(), Ordering::Relaxed);
        self.link.store(ptr::null_mut(), Ordering::Relaxed);
    }

    /// Pin the slot if it still holds generation `gen` and is not free.
    /// A pinned slot is not recycled until `unpin`.
    #[inline]
    pub(crate) fn pin(&self, gen: u32) -> Option<u64> {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if gen_of(s) != gen || phase_of(s) == FREE || phase_of(s) == EDGES {
                return None;
            }
            match self.state.compare_exchange_weak(
                s,
                s + PIN_ONE,
                Ordering::SeqCst,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(s + PIN_ONE),
                Err(now) => s = now,
            }
        }
    }

    /// Pin for attaching a dependency edge: like `pin`, and also sets
    /// `HAS_DEPS` unless the job already finished (then the caller must not
    /// attach: the job's dependents list will not be walked again).
    #[inline]
    pub(crate) fn pin_for_attach(&self, gen: u32) -> Option<u64> {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if gen_of(s) != gen || phase_of(s) == FREE || phase_of(s) == EDGES {
                return None;
            }
            let flag = if phase_of(s) == FINISHED { 0 } else { HAS_DEPS };
            match self.state.compare_exchange_weak(
                s,
                (s | flag) + PIN_ONE,
                Ordering::SeqCst,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some((s | flag) + PIN_ONE),
                Err(now) => s = now,
            }
        }
    }

    /// Claim a runnable single job for running: RUNNABLE → RUNNING, with a
    /// pin that `finish` drops.
    #[inline]
    pub(crate) fn claim(&self, gen: u32) -> bool {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if gen_of(s) != gen || phase_of(s) != RUNNABLE {
                return false;
            }
            let new = (s & !PHASE_MASK) | RUNNING;
            match self.state.compare_exchange_weak(
                s,
                new + PIN_ONE,
                Ordering::SeqCst,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
    }

    /// Cancel a job that has not started: `WAITING` → `WAITING | CANCELLED`
    /// with one pin. On success the caller owns the payload: it must drop
    /// it, then drop the pin (`unpin`); nobody else runs or drops it
    /// (`run_claimed` and `run_pieces` see `CANCELLED`), and the pin keeps
    /// the slot from being recycled meanwhile even if the job's last
    /// dependency finishes and the job is finished concurrently.
    pub(crate) fn cancel(&self, gen: u32) -> bool {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if gen_of(s) != gen || phase_of(s) != WAITING || s & CANCELLED != 0 {
                return false;
            }
            match self.state.compare_exchange_weak(
                s,
                (s | CANCELLED) + PIN_ONE,
                Ordering::SeqCst,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
    }

    /// The last dependency finished: `WAITING` → `RUNNABLE` (flags kept,
    /// `CANCELLED` included). Called once per job, by whoever made
    /// `pending` reach 0. Returns the state before.
    #[inline]
    pub(crate) fn release(&self) -> u64 {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            debug_assert_eq!(phase_of(s), WAITING);
            let new = (s & !PHASE_MASK) | RUNNABLE;
            match self
                .state
                .compare_exchange_weak(s, new, Ordering::SeqCst, Ordering::Acquire)
            {
                Ok(_) => return s,
                Err(now) => s = now,
            }
        }
    }

    /// Set `flag` while the slot holds `gen`; returns the state before.
    pub(crate) fn set_flag(&self, gen: u32, flag: u64) -> Option<u64> {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if gen_of(s) != gen || phase_of(s) == FREE || phase_of(s) == EDGES {
                return None;
            }
            if s & flag != 0 {
                return Some(s);
            }
            match self
                .state
                .compare_exchange_weak(s, s | flag, Ordering::SeqCst, Ordering::Acquire)
            {
                Ok(_) => return Some(s),
                Err(now) => s = now,
            }
        }
    }

    /// The shared failure, if any. Caller holds a pin or the claim.
    pub(crate) fn failure(&self) -> Option<Arc<Failure>> {
        let p = self.failure.load(Ordering::Acquire);
        if p.is_null() {
            return None;
        }
        // SAFETY: `p` came from `Arc::into_raw` and the slot keeps that
        // reference until it is freed, which cannot happen while the caller
        // holds a pin or claim; so the count is >= 1 during the increment.
        unsafe {
            Arc::increment_strong_count(p);
            Some(Arc::from_raw(p))
        }
    }

    /// Record `f` as this job's failure unless one is recorded already.
    pub(crate) fn set_failure(&self, f: Arc<Failure>) {
        let raw = Arc::into_raw(f) as *mut Failure;
        if self
            .failure
            .compare_exchange(ptr::null_mut(), raw, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // SAFETY: `raw` came from `Arc::into_raw` just above and was not
            // stored, so this is its only owner.
            unsafe { drop(Arc::from_raw(raw)) };
        }
    }
}

/// Outcome of dropping a pin or a claim.
pub(crate) enum Unpinned {
    /// The slot is still in use.
    Kept,
    /// This call freed the slot (generation moved on); the caller must
    /// return it with `Registry::recycle`.
    Freed,
}

/// Apply `update` to the state, and if the result is reclaimable, go to the
/// next generation's FREE state in the same CAS. Returns the previous state.
#[inline]
pub(crate) fn update_and_maybe_free(
    slot: &Slot,
    mut update: impl FnMut(u64) -> u64,
) -> (u64, Unpinned) {
    let mut s = slot.state.load(Ordering::Acquire);
    loop {
        let mut new = update(s);
        let freed = reclaimable(new);
        if freed {
            new = next_free_state(new);
        }
        match slot
            .state
            .compare_exchange_weak(s, new, Ordering::SeqCst, Ordering::Acquire)
        {
            Ok(_) => {
                return (
                    s,
                    if freed {
                        Unpinned::Freed
                    } else {
                        Unpinned::Kept
                    },
                )
            }
            Err(now) => s = now,
        }
    }
}

/// Drop one pin.
#[inline]
pub(crate) fn unpin(slot: &Slot) -> Unpinned {
    update_and_maybe_free(slot, |s| s - PIN_ONE).1
}

/// Bytes of one page: `PAGE_SLOTS` slots, allocated aligned to this size
/// so a slot's page is its address with the low bits cleared.
pub(crate) const PAGE_BYTES: usize = PAGE_SLOTS * std::mem::size_of::<Slot>();

fn page_layout() -> std::alloc::Layout {
    std::alloc::Layout::from_size_align(PAGE_BYTES, PAGE_BYTES).expect("page layout")
}

/// The page holding `slot`.
#[inline]
fn page_base(slot: *const Slot) -> usize {
    slot as usize & !(PAGE_BYTES - 1)
}

/// One page of slots, owned by the registry until it is dropped (a slot's
/// memory is never freed while the system lives: handles and deque
/// entries read its state). Held through a raw pointer so that moving the
/// `Page` does not re-assert uniqueness of the allocation while other
/// threads hold references into it.
pub(crate) struct Page {
    slots: *mut Slot,
}

impl Page {
    fn new(owner: u32) -> Page {
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc(page_layout()) }.cast::<Slot>();
        if p.is_null() {
            std::alloc::handle_alloc_error(page_layout());
        }
        for i in 0..PAGE_SLOTS {
            // SAFETY: `p` has room for PAGE_SLOTS slots, suitably aligned
            // (the page alignment is a multiple of the slot's).
            unsafe { p.add(i).write(Slot::new(owner)) };
        }
        Page { slots: p }
    }

    /// The slots; they live until the page is dropped.
    pub(crate) fn slots(&self) -> &[Slot] {
        // SAFETY: PAGE_SLOTS initialised slots from `new`, freed only in Drop.
        unsafe { std::slice::from_raw_parts(self.slots, PAGE_SLOTS) }
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        // SAFETY: from `alloc` with this layout, freed once, when the
        // registry (sole owner of pages) is dropped and no thread uses the
        // slots; `Slot` has no drop glue.
        unsafe { std::alloc::dealloc(self.slots.cast(), page_layout()) };
    }
}

// SAFETY: a page is an owned allocation of `Sync` slots.
unsafe impl Send for Page {}
// SAFETY: as above.
unsafe impl Sync for Page {}

/// A page of a store whose slots were all free when the store was trimmed:
/// its memory was given back to the OS (`decommit`) and is reused before a
/// new page is allocated.
struct IdlePage {
    first: *const Slot,
    /// The generation every slot starts at when the page is reused: the
    /// highest one any of its slots had reached, so no handle of the page
    /// ever names a later job.
    floor: u32,
}

/// Owner-only page bookkeeping of a store.
#[derive(Default)]
struct Pages {
    idle: Vec<IdlePage>,
    /// `active` when the last trim ran (a trim that found nothing to give
    /// back is not repeated until the store grows again).
    trimmed_at: usize,
}

/// Give the memory of an idle page back to the OS. The range stays
/// mapped, so a stale handle that reads a slot's state there sees zeros
/// (generation 0, which no handle has) instead of faulting.
fn decommit(first: *const Slot) {
    #[cfg(all(target_os = "linux", not(miri), not(loom)))]
    // SAFETY: the page is a PAGE_BYTES-aligned range of our own
    // allocation; MADV_DONTNEED only drops its contents (reads then see
    // zeros), which every field of a free slot allows (atomics, raw
    // pointers, plain integers).
    unsafe {
        libc::madvise(first as *mut libc::c_void, PAGE_BYTES, libc::MADV_DONTNEED);
    }
    #[cfg(not(all(target_os = "linux", not(miri), not(loom))))]
    let _ = first;
}

/// The slot store of one context.
pub(crate) struct Store {
    owner: u32,
    /// Owner-only free list (linked through `Slot::link`).
    local_free: UnsafeCell<*mut Slot>,
    /// Slots freed by other threads, pushed here; the owner takes all at once.
    remote_free: CachePadded<SyncAtomicPtr<Slot>>,
    /// Pages in use (not idle); written by the owner only, read by `stats`.
    active: AtomicUsize,
    /// Owner-only.
    pages: UnsafeCell<Pages>,
}

// SAFETY: `local_free` and `pages` are only touched by the thread that has
// claimed the owning context (callers of the `unsafe fn`s promise this);
// the rest is atomic.
unsafe impl Sync for Store {}
// SAFETY: as above.
unsafe impl Send for Store {}

impl Store {
    pub(crate) fn new(owner: u32) -> Store {
        Store {
            owner,
            local_free: UnsafeCell::new(ptr::null_mut()),
            remote_free: CachePadded::new(SyncAtomicPtr::new(ptr::null_mut())),
            active: AtomicUsize::new(0),
            pages: UnsafeCell::new(Pages::default()),
        }
    }

    /// Pages in use (committed, not idle).
    pub(crate) fn active_pages(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    /// Are both free lists empty, so that the next `alloc` needs a page?
    ///
    /// # Safety
    /// Only the thread that has claimed this store's context may call it.
    #[inline]
    pub(crate) unsafe fn needs_page(&self) -> bool {
        // SAFETY: owner-only access, promised by the caller; a plain read.
        let local_empty = unsafe { (*self.local_free.get()).is_null() };
        local_empty && self.remote_free.load(Ordering::Relaxed).is_null()
    }

    /// Take a free slot. When both free lists are empty, an idle page is
    /// reused, else a new one is allocated and handed to `new_page` (which
    /// keeps it alive as long as the registry). The slot's state is
    /// `(gen, FREE)`.
    ///
    /// # Safety
    /// Only the thread that has claimed this store's context may call it.
    #[inline]
    pub(crate) unsafe fn alloc(
        &self,
        new_page: impl FnOnce(Page) -> &'static [Slot],
    ) -> ptr::NonNull<Slot> {
        // SAFETY: owner-only access, promised by the caller.
        let head = unsafe { &mut *self.local_free.get() };
        if head.is_null() {
            *head = self.remote_free.swap(ptr::null_mut(), Ordering::Acquire);
            if head.is_null() {
                // SAFETY: owner-only, as above.
                *head = unsafe { self.add_page(new_page) };
            }
        }
        // SAFETY: `*head` is non-null here and points into a page that lives
        // as long as the registry; a slot on a free list is owned by this
        // store and unreachable by other threads.
        let slot = unsafe { &**head };
        *head = slot.link.load(Ordering::Relaxed);
        ptr::NonNull::from(slot)
    }

    /// A page's worth of free slots, linked: an idle page revived, else a
    /// new page. Returns the head of the list.
    ///
    /// # Safety
    /// Owner-only.
    #[cold]
    unsafe fn add_page(&self, new_page: impl FnOnce(Page) -> &'static [Slot]) -> *mut Slot {
        // SAFETY: owner-only access, promised by the caller.
        let pages = unsafe { &mut *self.pages.get() };
        let slots: &[Slot] = match pages.idle.pop() {
            Some(idle) => {
                // SAFETY: an idle page is one of ours (registry-owned, alive).
                let slots = unsafe { std::slice::from_raw_parts(idle.first, PAGE_SLOTS) };
                for s in slots {
                    s.revive(self.owner, idle.floor);
                }
                slots
            }
            None => new_page(Page::new(self.owner)),
        };
        self.active
            .store(self.active_pages() + 1, Ordering::Relaxed);
        let mut head = ptr::null_mut();
        for s in slots.iter().rev() {
            s.link.store(head, Ordering::Relaxed);
            head = s as *const Slot as *mut Slot;
        }
        head
    }

    /// Give back the memory of whole free pages while more than `keep`
    /// pages are in use (called when the owner is idle: `Registry::trim`).
    /// A page is idle only if every one of its slots is on the free lists.
    /// Returns how many pages were given back.
    ///
    /// # Safety
    /// Owner-only.
    pub(crate) unsafe fn trim(&self, keep: usize) -> usize {
        // SAFETY: owner-only access, promised by the caller.
        let (head, pages) = unsafe { (&mut *self.local_free.get(), &mut *self.pages.get()) };
        let active = self.active_pages();
        if active <= keep || pages.trimmed_at == active {
            return 0;
        }
        pages.trimmed_at = active;
        // Every free slot onto the local list.
        let mut r = self.remote_free.swap(ptr::null_mut(), Ordering::Acquire);
        while !r.is_null() {
            // SAFETY: a free slot of ours, pushed with Release (see `alloc`).
            let s = unsafe { &*r };
            let next = s.link.load(Ordering::Relaxed);
            s.link.store(*head, Ordering::Relaxed);
            *head = r;
            r = next;
        }
        // Free slots per page, and the highest generation in each.
        let mut per_page: std::collections::HashMap<usize, (usize, u32)> = Default::default();
        let mut p = *head;
        while !p.is_null() {
            // SAFETY: free slots of ours.
            let s = unsafe { &*p };
            let e = per_page.entry(page_base(p)).or_insert((0, 0));
            e.0 += 1;
            e.1 = e.1.max(gen_of(s.state.load(Ordering::Relaxed)));
            p = s.link.load(Ordering::Relaxed);
        }
        let mut idle: Vec<(usize, u32)> = per_page
            .into_iter()
            .filter(|&(_, (n, _))| n == PAGE_SLOTS)
            .map(|(base, (_, floor))| (base, floor))
            .collect();
        idle.truncate(active - keep);
        if idle.is_empty() {
            return 0;
        }
        let gone: std::collections::HashSet<usize> = idle.iter().map(|&(b, _)| b).collect();
        // Relink the free list without the idle pages' slots.
        let mut p = std::mem::replace(head, ptr::null_mut());
        while !p.is_null() {
            // SAFETY: free slots of ours.
            let s = unsafe { &*p };
            let next = s.link.load(Ordering::Relaxed);
            if !gone.contains(&page_base(p)) {
                s.link.store(*head, Ordering::Relaxed);
                *head = p;
            }
            p = next;
        }
        for &(base, floor) in &idle {
            let first = base as *const Slot;
            decommit(first);
            pages.idle.push(IdlePage { first, floor });
        }
        self.active.store(active - idle.len(), Ordering::Relaxed);
        pages.trimmed_at = active - idle.len();
        idle.len()
    }

    /// Return a freed slot. `mine` says whether the calling thread owns this
    /// store (then the local list is used, else the remote stack).
    ///
    /// # Safety
    /// `slot` belongs to this store and has just been freed by the caller
    /// (it is unreachable by other threads); `mine` is true only on the
    /// owning thread.
    #[inline]
    pub(crate) unsafe fn push_free(&self, slot: &Slot, mine: bool) {
        let p = slot as *const Slot as *mut Slot;
        if mine {
            // SAFETY: owner-only access, promised by the caller.
            let head = unsafe { &mut *self.local_free.get() };
            slot.link.store(*head, Ordering::Relaxed);
            *head = p;
        } else {
            let mut head = self.remote_free.load(Ordering::Relaxed);
            loop {
                slot.link.store(head, Ordering::Relaxed);
                // Release pairs with the owner's Acquire swap in `alloc`.
                match self.remote_free.compare_exchange_weak(
                    head,
                    p,
                    Ordering::Release,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break,
                    Err(now) => head = now,
                }
            }
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc as LArc;
    use loom::thread;

    /// A slot of generation 5 in `phase` with `pins` pins, on the heap
    /// for the model's threads.
    fn slot_in(phase: u64, pins: u64) -> &'static Slot {
        let s: &'static Slot = Box::leak(Box::new(Slot::new(0)));
        s.state.store(5 | phase | pins * PIN_ONE, Ordering::Relaxed);
        s
    }

    // Pin vs recycle: the runner drops the last pin of a finished job while
    // a waiter tries to pin it. Either the waiter pins generation 5 (and
    // the slot is freed only by its own unpin), or it finds the slot freed
    // (generation 6); exactly one thread frees it, once.
    #[test]
    fn pin_races_the_freeing_unpin() {
        loom::model(|| {
            let s = slot_in(FINISHED, 1);
            let t = thread::spawn(move || matches!(unpin(s), Unpinned::Freed) as u32);
            let mut freed = 0;
            if let Some(st) = s.pin(5) {
                assert_eq!(gen_of(st), 5, "a pin holds the generation");
                freed += matches!(unpin(s), Unpinned::Freed) as u32;
            }
            freed += t.join().unwrap();
            assert_eq!(freed, 1, "freed exactly once");
            let st = s.state.load(Ordering::Relaxed);
            assert_eq!((gen_of(st), phase_of(st), pins_of(st)), (6, FREE, 0));
        });
    }

    // Claim vs claim (a pop racing a steal, or a waiter claiming through
    // the handle): exactly one thread gets to run the job.
    #[test]
    fn one_claim_wins() {
        loom::model(|| {
            let s = slot_in(RUNNABLE, 0);
            let t = thread::spawn(move || s.claim(5) as u32);
            let won = s.claim(5) as u32 + t.join().unwrap();
            assert_eq!(won, 1);
            let st = s.state.load(Ordering::Relaxed);
            assert_eq!((phase_of(st), pins_of(st)), (RUNNING, 1));
        });
    }

    // Cancel vs release + claim: a scope cancels a waiting job while its
    // last dependency finishes and a worker claims it. If the cancel won,
    // the claimer sees CANCELLED (and must not touch the closure) and the
    // slot cannot be freed while the canceller holds its pin; if it lost,
    // the job runs normally and the canceller changed nothing.
    #[test]
    fn cancel_races_release_and_claim() {
        loom::model(|| {
            let s = slot_in(WAITING, 0);
            let t = thread::spawn(move || {
                s.release();
                if s.claim(5) {
                    let cancelled = s.state.load(Ordering::Acquire) & CANCELLED != 0;
                    // finish: FINISHED, drop the claim's pin.
                    update_and_maybe_free(s, |x| ((x & !PHASE_MASK) | FINISHED) - PIN_ONE);
                    Some(cancelled)
                } else {
                    None
                }
            });
            let cancelled = s.cancel(5);
            if cancelled {
                // Our pin keeps generation 5 until we drop it.
                assert_eq!(gen_of(s.state.load(Ordering::Acquire)), 5);
            }
            let ran = t.join().unwrap();
            assert_eq!(ran, Some(cancelled), "the claimer saw exactly the cancel");
            if cancelled {
                assert!(matches!(unpin(s), Unpinned::Freed));
            }
            let st = s.state.load(Ordering::Relaxed);
            assert_eq!((gen_of(st), phase_of(st), pins_of(st)), (6, FREE, 0));
        });
    }

    // Remote frees race with the owner draining the stack: every slot freed
    // remotely is allocated again exactly once.
    #[test]
    fn remote_free_is_not_lost() {
        loom::model(|| {
            let slots: &'static [Slot] = Box::leak(
                (0..2)
                    .map(|_| Slot::new(0))
                    .collect::<Vec<_>>()
                    .into_boxed_slice(),
            );
            let store = LArc::new(Store::new(0));
            let s2 = store.clone();
            let t = thread::spawn(move || {
                for s in slots {
                    // SAFETY: the slots are owned by this thread until pushed.
                    unsafe { s2.push_free(s, false) };
                }
            });
            let mut seen = Vec::new();
            while seen.len() < 2 {
                let got = store.remote_free.swap(ptr::null_mut(), Ordering::Acquire);
                let mut p = got;
                while !p.is_null() {
                    seen.push(p as *const Slot);
                    // SAFETY: `p` was pushed by the other thread with a
                    // Release CAS that our Acquire swap synchronised with.
                    p = unsafe { (*p).link.load(Ordering::Relaxed) };
                }
                thread::yield_now();
            }
            t.join().unwrap();
            seen.sort();
            seen.dedup();
            assert_eq!(seen.len(), 2);
        });
    }
}
