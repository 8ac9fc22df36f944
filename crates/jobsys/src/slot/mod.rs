//! A job's slot and its state machine. This module is the slot's one
//! owner: it holds the state bits and their diagram (`state.rs`) and every transition
//! (publish, pin/unpin, claim, release, cancel, mark, finish, free, retire),
//! and the slot's fields are private to it. Nothing else writes a slot's
//! state word; the rest of the crate calls the methods here. Two parts
//! that never touch the state word live beside it: a job's dependency
//! edges and its dependents list (`edges.rs`), and its vtable and packed
//! name, priority and pin (`meta.rs`).
//!
//! A `Slot` is one fixed-size (128-byte) cell. It holds either a job
//! (closure inline when it fits in `PAYLOAD_BYTES`, boxed when not; a job's
//! first dependency edge in its payload's last 32 bytes when the closure
//! leaves them free) or, for a job with more dependencies, a block of two
//! dependency edges chained from the job. Slots live in pages (`store.rs`); each page belongs to one context
//! (thread), and only that context allocates from it.
//!
//! Invariants:
//! - A slot's memory is never freed before the registry is dropped, so an
//!   address from a handle or a deque entry is always readable while the
//!   system lives; the *generation* in `state` says whether it still names
//!   the same job. (An idle page's memory may be zeroed: generation 0,
//!   which no handle has.)
//! - The generation only changes in the single CAS that frees a slot
//!   (`FINISHED`, no pins → next generation, `FREE`), and never wraps (a slot
//!   retires at `RETIRED_GEN`). A thread holding a pin therefore sees a
//!   stable generation, payload, edges and failure.
//! - The payload is touched by one party at a time: the writer before
//!   publication, the claimer (or, for a parallel_for, pinned piece runners
//!   sharing `&F`), or the canceller.

use crate::error::Failure;
use crate::sync::AtomicPtr as SyncAtomicPtr;
use crate::sync::AtomicU64 as StateWord;
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};
use std::sync::Arc;

/// Bytes of closure a slot stores inline.
pub(crate) const PAYLOAD_BYTES: usize = 64;
/// Slots per page.
pub(crate) const PAGE_SLOTS: usize = 256;

mod edges;
mod meta;
mod state;

pub(crate) use edges::{Edge, EDGES_PER_BLOCK, OWN_EDGE_AT};
pub(crate) use meta::{
    is_event, JobMeta, JobVTable, EMPTY_LOOP_VTABLE, END_EVENT, MAX_PIN_CONTEXTS, NOOP_VTABLE,
    READ_EVENT, WRITE_EVENT,
};
use state::*;
pub(crate) use state::{Ending, Snapshot, CANCELLED, FAILED, PFOR, RETIRED_GEN, TRACED};

#[repr(C, align(16))]
pub(crate) struct Payload(pub [MaybeUninit<u8>; PAYLOAD_BYTES]);

#[repr(C, align(64))]
pub(crate) struct Slot {
    state: StateWord,
    /// Head of the list of edges of jobs waiting for this one, or `CLOSED`.
    dependents: AtomicPtr<Edge>,
    /// Unfinished dependencies + 1 while the job is being set up.
    pending: AtomicU32,
    /// Index of the context whose page holds this slot. Atomic only
    /// because an idle page is zeroed (`Store::trim`) and rewritten when
    /// reused; otherwise it never changes.
    owner: AtomicU32,
    /// Free-list link (`store.rs`: only the free lists use it).
    pub(crate) link: SyncAtomicPtr<Slot>,
    /// The job's vtable (a raw pointer: an idle, zeroed page holds null).
    vtable: UnsafeCell<*const JobVTable>,
    /// `Arc<Failure>` as a raw pointer, or null.
    failure: AtomicPtr<Failure>,
    /// First edge block of this job's own dependencies (chained through the
    /// blocks' `edges` field).
    edges: UnsafeCell<*mut Slot>,
    /// Number of dependencies recorded in the edge blocks.
    ndeps: UnsafeCell<u32>,
    /// Name id and priority, packed (`JobMeta::pack`). Written before
    /// publication and read-only until the slot is freed. Atomic (relaxed)
    /// because two readers look without a pin, only to guess which deque an
    /// entry is on (`Slot::prio_hint`); a pinned reader is ordered after the
    /// write by the publishing state CAS.
    meta: AtomicU32,
    payload: UnsafeCell<Payload>,
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

impl Slot {
    pub(crate) fn new(owner: u32) -> Slot {
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
    pub(crate) fn revive(&self, owner: u32, gen: u32) {
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
    pub(crate) fn pin(&self, gen: u32) -> Option<Snapshot> {
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
                Ok(_) => return Some(Snapshot::new(s + PIN_ONE)),
                Err(now) => s = now,
            }
        }
    }

    /// Pin for attaching a dependency edge: like `pin`, and also sets
    /// `HAS_DEPS` unless the job already finished (then the caller must not
    /// attach: the job's dependents list will not be walked again).
    #[inline]
    pub(crate) fn pin_for_attach(&self, gen: u32) -> Option<Snapshot> {
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
                Ok(_) => return Some(Snapshot::new((s | flag) + PIN_ONE)),
                Err(now) => s = now,
            }
        }
    }

    /// Claim a runnable single job for running: RUNNABLE → RUNNING, with a
    /// pin that `finish` drops. Returns the state the claim made (its flags,
    /// e.g. `CANCELLED`, are fixed from then on).
    #[inline]
    pub(crate) fn claim(&self, gen: u32) -> Option<Snapshot> {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if gen_of(s) != gen || phase_of(s) != RUNNABLE {
                return None;
            }
            let new = ((s & !PHASE_MASK) | RUNNING) + PIN_ONE;
            match self
                .state
                .compare_exchange_weak(s, new, Ordering::SeqCst, Ordering::Acquire)
            {
                Ok(_) => return Some(Snapshot::new(new)),
                Err(now) => s = now,
            }
        }
    }

    /// Cancel the job of generation `gen` (see the diagram): one CAS whose
    /// result tells the caller what it now owns. Every outcome but `No`
    /// adds one pin, which the caller must drop (`Waiting`, `Started`) or
    /// pass to `finish` (`Claimed`, and `Started` on a loop whose last
    /// pieces the caller abandons).
    /// Without `stop_started`, a job that started is left alone (`No`).
    pub(crate) fn cancel(&self, gen: u32, stop_started: bool) -> Cancel {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if gen_of(s) != gen || s & (CANCELLED | STOP) != 0 {
                return Cancel::No;
            }
            let (new, outcome) = match phase_of(s) {
                WAITING => (s | CANCELLED | DROPPING, Cancel::Waiting),
                RUNNABLE if s & PFOR == 0 => {
                    ((s & !PHASE_MASK) | RUNNING | CANCELLED, Cancel::Claimed)
                }
                RUNNABLE | RUNNING if stop_started => (s | STOP, Cancel::Started),
                _ => return Cancel::No,
            };
            match self.state.compare_exchange_weak(
                s,
                new + PIN_ONE,
                Ordering::SeqCst,
                Ordering::Acquire,
            ) {
                Ok(_) => return outcome,
                Err(now) => s = now,
            }
        }
    }

    /// Has this job (of generation `gen`) been cancelled? For a running job
    /// polling `is_cancelled`; it holds its claim or a piece pin.
    #[inline]
    pub(crate) fn cancel_requested(&self, gen: u32) -> bool {
        let s = self.state.load(Ordering::Acquire);
        gen_of(s) == gen && s & (CANCELLED | STOP) != 0
    }

    /// The last dependency finished: `WAITING` → `RUNNABLE` (flags kept,
    /// `CANCELLED` included). Called once per job, by whoever made
    /// `pending` reach 0. Returns the state before, or `None` when a
    /// canceller is still dropping the closure (`DROPPING`): then only
    /// `DROPPING` is cleared, and the canceller's `end_cancel_drop` tells
    /// it to make the job runnable itself, after the drop.
    #[inline]
    pub(crate) fn release(&self) -> Option<Snapshot> {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            debug_assert_eq!(phase_of(s), WAITING);
            let new = if s & DROPPING != 0 {
                s & !DROPPING
            } else {
                (s & !PHASE_MASK) | RUNNABLE
            };
            // SeqCst, as every state CAS; with DROPPING, pairs with the
            // canceller's CAS in `end_cancel_drop`: exactly one of the two
            // clears the flag, and the other one releases.
            match self
                .state
                .compare_exchange_weak(s, new, Ordering::SeqCst, Ordering::Acquire)
            {
                Ok(_) if s & DROPPING != 0 => return None,
                Ok(_) => return Some(Snapshot::new(s)),
                Err(now) => s = now,
            }
        }
    }

    /// A job of generation `gen` cancelled while it waited for its
    /// dependencies (it still waits): `Some(true)` once its canceller's
    /// drop of the closure has ended, `Some(false)` while that drop goes
    /// on (`DROPPING`), `None` for anything else (another generation, not
    /// cancelled, or past WAITING). For a scope's wait that cannot wait
    /// for such a job to finish (`ThisThread::wait_scoped`).
    pub(crate) fn cancelled_while_waiting(&self, gen: u32) -> Option<bool> {
        let s = self.state.load(Ordering::Acquire);
        if gen_of(s) != gen || phase_of(s) != WAITING || s & CANCELLED == 0 {
            return None;
        }
        Some(s & DROPPING == 0)
    }

    /// A canceller (`Cancel::Waiting`) has dropped the closure: clear
    /// `DROPPING`. Returns true when the last dependency finished during
    /// the drop (its `release` cleared the flag and left): the caller must
    /// now release the job (`release` again, and queue it). Caller holds
    /// the canceller's pin.
    pub(crate) fn end_cancel_drop(&self) -> bool {
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if s & DROPPING == 0 {
                return true;
            }
            // SeqCst, as every state CAS; Release also publishes the drop's
            // effects to whoever later claims and finishes the job (the
            // release and the claim read this value through the CAS chain).
            match self.state.compare_exchange_weak(
                s,
                s & !DROPPING,
                Ordering::SeqCst,
                Ordering::Acquire,
            ) {
                Ok(_) => return false,
                Err(now) => s = now,
            }
        }
    }

    /// Mark the job of generation `gen` `WAITED` (a waiter needs it);
    /// returns the state before, `None` when the slot no longer holds it.
    #[inline]
    pub(crate) fn mark_waited(&self, gen: u32) -> Option<Snapshot> {
        self.set_flag(gen, WAITED).map(Snapshot::new)
    }

    /// Set `flag` while the slot holds `gen`; returns the state before.
    fn set_flag(&self, gen: u32, flag: u64) -> Option<u64> {
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

/// What `Slot::cancel` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cancel {
    /// Not cancellable: another generation, finished, or cancelled already.
    No,
    /// It waited for dependencies: now `CANCELLED`, pinned; the caller owns
    /// the closure (drops it, then unpins). The job finishes, failed,
    /// when its dependencies do.
    Waiting,
    /// It was runnable: now claimed (`RUNNING | CANCELLED`); the caller
    /// owns the closure and finishes the job.
    Claimed,
    /// It had started (a running job, a loop handing out pieces): `STOP`
    /// set, pinned. The runner owns the closure.
    Started,
}

/// Outcome of dropping a pin or a claim.
pub(crate) enum Unpinned {
    /// The slot is still in use.
    Kept,
    /// This call freed the slot (generation moved on); the caller must
    /// return it with `ThisThread::recycle`.
    Freed,
}

/// Apply `update` to the state, and if the result is reclaimable, go to the
/// next generation's FREE state in the same CAS. Returns the previous state.
#[inline]
fn update_and_maybe_free(slot: &Slot, mut update: impl FnMut(u64) -> u64) -> (u64, Unpinned) {
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

impl Slot {
    // ---- reading the state (anyone) ---------------------------------------

    /// The state word (Acquire: whoever saw a phase also sees what the
    /// transition to it published).
    #[inline]
    pub(crate) fn state(&self) -> Snapshot {
        Snapshot::new(self.state.load(Ordering::Acquire))
    }

    /// The current generation, as the slot's owner sees it (a fresh slot
    /// from `alloc`, or one this thread just freed).
    #[inline]
    pub(crate) fn gen_now(&self) -> u32 {
        gen_of(self.state.load(Ordering::Relaxed))
    }

    /// Did this slot retire (`RETIRED_GEN`)? Asked by the thread that just
    /// freed it, before returning it to a free list.
    #[inline]
    pub(crate) fn retired(&self) -> bool {
        self.gen_now() == RETIRED_GEN
    }

    /// Is a failure recorded (a piece panicked, a dependency failed, or the
    /// job was cancelled)?
    #[inline]
    pub(crate) fn has_failure(&self) -> bool {
        !self.failure.load(Ordering::Acquire).is_null()
    }

    // ---- publishing (the owner, before anyone else can see the slot) ------

    /// Publish a job written into this fresh slot with no dependencies:
    /// `FREE(gen)` → `RUNNABLE(gen) | flags`. Release: whoever takes its
    /// entry (or handle) sees the payload, vtable and meta.
    #[inline]
    pub(crate) fn publish_runnable(&self, gen: u32, flags: u64) {
        self.state
            .store(u64::from(gen) | RUNNABLE | flags, Ordering::Release);
    }

    /// Publish a job with `ndeps` dependencies: `FREE(gen)` →
    /// `WAITING(gen) | flags`, with `pending` = `ndeps + 1` (the `+ 1` is
    /// the publisher's own, dropped by its last `dep_done` after attaching).
    /// No edge yet: `ndeps` restarts from 0 (a freed slot keeps its last
    /// job's, which `for_each_dep` of a waiting job must not read).
    #[inline]
    pub(crate) fn publish_waiting(&self, gen: u32, flags: u64, ndeps: usize) {
        // SAFETY: the publisher's unpublished slot (Release store below).
        unsafe { *self.ndeps.get() = 0 };
        self.pending.store(ndeps as u32 + 1, Ordering::Relaxed);
        self.state
            .store(u64::from(gen) | WAITING | flags, Ordering::Release);
    }

    /// One of this job's dependencies finished (or could not be attached).
    /// True for the call that made `pending` reach zero: that caller must
    /// `release` the job.
    #[inline]
    pub(crate) fn dep_done(&self) -> bool {
        // AcqRel: the last decrement sees every dependency's failure.
        self.pending.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// A fresh slot that is complete at once (`combine` of nothing): it
    /// goes straight to the next generation's `FREE` (the caller recycles
    /// it); its handle reads complete.
    pub(crate) fn complete_unpublished(&self, gen: u32) {
        self.state
            .store(next_free_state(u64::from(gen)), Ordering::Release);
    }

    // ---- finishing and freeing -------------------------------------------

    /// The job is done (ran, failed or was skipped): `FINISHED | flags`. The
    /// caller holds one pin (its claim). If nobody attached a dependent and
    /// nobody else holds a pin, no edge can be in flight (an attacher pins
    /// with `HAS_DEPS` first; one that pins after this CAS sees FINISHED),
    /// so the claim is dropped and the slot maybe freed in the same CAS;
    /// else the caller keeps its pin for the dependents walk
    /// (`close_dependents`) and drops it with `unpin`. Returns the state
    /// before, whether the claim was dropped here, and whether the slot was
    /// freed; `None` (nothing changed) when the job was cancelled after it
    /// started (`STOP`) and `flags` lack `FAILED`.
    #[inline]
    pub(crate) fn finish(&self, flags: u64) -> Option<(Snapshot, bool, Unpinned)> {
        let alone = |s: u64| s & HAS_DEPS == 0 && pins_of(s) == 1;
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            if s & STOP != 0 && flags & FAILED == 0 {
                // Cancelled while it ran: it may have stopped half-way, so
                // it must not finish as a success. The caller records the
                // cancellation and calls again with FAILED.
                return None;
            }
            let done = (s & !PHASE_MASK) | FINISHED | flags;
            let mut new = if alone(s) { done - PIN_ONE } else { done };
            let freed = reclaimable(new);
            if freed {
                new = next_free_state(new);
            }
            match self
                .state
                .compare_exchange_weak(s, new, Ordering::SeqCst, Ordering::Acquire)
            {
                Ok(_) => {
                    let un = if freed {
                        Unpinned::Freed
                    } else {
                        Unpinned::Kept
                    };
                    return Some((Snapshot::new(s), alone(s), un));
                }
                Err(now) => s = now,
            }
        }
    }

    /// `finish` of a job that succeeded, with nobody else involved: no
    /// dependent attached (`HAS_DEPS`), no pin but the caller's claim, not
    /// asked to stop. Then FINISHED, the claim dropped and the slot freed
    /// are one CAS to FREE(g+1), the transition `finish` makes for such a
    /// job (FINISHED with no pins, freed); the caller must recycle the
    /// slot. Returns false, changing nothing, when any of that does not hold (a pin or
    /// `HAS_DEPS` may arrive between the load and the CAS: the CAS then
    /// fails), and the caller takes `finish`. A transition of its own
    /// rather than `finish(0)` inline: driving `finish`'s general loop from
    /// the inline path cost W1 single a sixth more instructions per job
    /// (docs/history/benchmarks-log.md).
    #[inline]
    pub(crate) fn finish_alone(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed);
        if s & (HAS_DEPS | STOP) != 0 || pins_of(s) != 1 {
            return false;
        }
        // SeqCst as `finish`'s CAS: a waiter that pins after it sees the
        // next generation (and the Release half publishes the job's
        // effects to whoever observes the job finished).
        self.state
            .compare_exchange(s, next_free_state(s), Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
    }

    /// Drop one pin; frees the slot if it was the last one of a finished
    /// job (the caller must then recycle it).
    #[inline]
    pub(crate) fn unpin(&self) -> Unpinned {
        update_and_maybe_free(self, |s| s - PIN_ONE).1
    }

    /// Take the slot's job-scoped parts for reuse after the freeing CAS
    /// (this thread is its only user): drops the failure reference and
    /// returns the first of the job's edge blocks (to be freed with
    /// `free_edge_block`).
    ///
    /// # Safety
    /// The caller's `unpin`/`finish` just returned `Freed` for this slot.
    pub(crate) unsafe fn reset_for_reuse(&self) -> Option<&Slot> {
        // Plain load first: the common case (no failure) needs no RMW.
        let f = self.failure.load(Ordering::Acquire);
        if !f.is_null() {
            self.failure.store(ptr::null_mut(), Ordering::Relaxed);
            // SAFETY: the slot's own reference, from `Arc::into_raw`.
            unsafe { drop(Arc::from_raw(f)) };
        }
        self.dependents.store(ptr::null_mut(), Ordering::Relaxed);
        // SAFETY: the freeing CAS made this thread the slot's only user.
        let block = unsafe { std::mem::replace(&mut *self.edges.get(), ptr::null_mut()) };
        // SAFETY: edge blocks live in pages as long as the registry.
        unsafe { block.as_ref() }
    }

    /// Free this edge block (its job was just freed by this thread): next
    /// generation's `FREE`. Returns the next block of the same job.
    ///
    /// # Safety
    /// This is an edge block of a job the caller just freed.
    pub(crate) unsafe fn free_edge_block(&self) -> Option<&Slot> {
        // SAFETY: blocks are private to their job, now to this thread.
        let next = unsafe { std::mem::replace(&mut *self.edges.get(), ptr::null_mut()) };
        self.state.store(
            next_free_state(self.state.load(Ordering::Relaxed)),
            Ordering::Relaxed,
        );
        // SAFETY: as in `reset_for_reuse`.
        unsafe { next.as_ref() }
    }

    /// At registry teardown: drop a failure reference still held.
    ///
    /// # Safety
    /// No thread uses the slot any more (the registry is being dropped).
    pub(crate) unsafe fn drop_failure(&self) {
        let f = self.failure.swap(ptr::null_mut(), Ordering::Relaxed);
        if !f.is_null() {
            // SAFETY: the slot's own reference from `Arc::into_raw`.
            unsafe { drop(Arc::from_raw(f)) };
        }
    }

    // ---- dependencies ------------------------------------------------------

    /// Make this fresh slot an edge block of generation `gen`.
    pub(crate) fn become_edge_block(&self, gen: u32) {
        self.state.store(u64::from(gen) | EDGES, Ordering::Relaxed);
    }

    #[cfg(all(test, not(loom)))]
    /// Move a free slot to generation `gen` (tests of retirement).
    pub(crate) fn set_free_gen_for_test(&self, gen: u32) {
        assert_eq!(phase_of(self.state.load(Ordering::Relaxed)), FREE);
        self.state.store(u64::from(gen) | FREE, Ordering::Relaxed);
    }
}

#[cfg(all(test, loom))]
mod loom_tests;
