//! Per-thread scheduling context: a deque, a slot store, counters.
//!
//! A `Context` is owned by the registry and *claimed* by one thread at a
//! time: worker N claims context N for its life; any other thread that
//! schedules or waits claims a free external context on first use (kept in a
//! thread-local) and releases it when the thread exits (or, if jobs pinned
//! to that thread are still on their way to its queue, the last of them
//! does: `pinned.rs`). Jobs left in a
//! released context's deque stay stealable, and the next thread to claim it
//! inherits them. Fields marked owner-only are touched only by the claiming
//! thread.

use crate::deque::{self, Local, Stealer};
use crate::job::Entry;
use crate::sleep::Futex;
use crate::slot::Slot;
use crate::store::Store;
use crossbeam_utils::CachePadded;
use std::cell::UnsafeCell;
use std::collections::HashSet;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Number of priority levels (`Priority::High`, `Normal`, `Low`).
pub(crate) const PRIORITIES: usize = 3;
pub(crate) const HIGH: usize = 0;
pub(crate) const NORMAL: usize = 1;

/// Counters written only by the owning thread (plain load + store, no RMW),
/// read by anyone.
#[derive(Default)]
pub(crate) struct Counters {
    pub scheduled: AtomicU64,
    pub finished: AtomicU64,
    pub steals: AtomicU64,
    pub failed_steals: AtomicU64,
    /// Jobs this thread ran as the successor kept in hand (`handoff.rs`).
    pub handoffs: AtomicU64,
    /// Sleeping workers this thread woke (one futex wake each).
    pub wakes: AtomicU64,
    /// Times this worker was woken and went back to sleep without running
    /// anything.
    pub futile_wakes: AtomicU64,
    /// Times this worker went to sleep.
    pub sleeps: AtomicU64,
    /// Nanoseconds this worker spent spinning idle.
    pub spin_ns: AtomicU64,
}

/// Owner-only increment: no read-modify-write needed, only this thread writes.
#[inline]
pub(crate) fn bump(c: &AtomicU64) {
    c.store(c.load(Ordering::Relaxed) + 1, Ordering::Release);
}

/// Owner-only add.
#[inline]
pub(crate) fn bump_by(c: &AtomicU64, n: u64) {
    if n != 0 {
        c.store(c.load(Ordering::Relaxed) + n, Ordering::Release);
    }
}

/// Owner-only scratch state.
pub(crate) struct OwnerState {
    /// Nesting depth of `complete` calls on this thread.
    pub wait_depth: u32,
    /// The job the innermost `wait_loop` waits for, and its `wait_depth`
    /// (`handoff.rs`: a kept job runs next only while it is unfinished).
    pub wait_target: (*const Slot, u32, u32),
    /// Jobs this thread is running right now (innermost last), for
    /// wait-on-self detection. Strictly nested: a job leaves it with a pop.
    pub running: Vec<(*const Slot, u32)>,
    /// The events of the `read_now`/`write_now` guards this thread holds,
    /// for the same detection. Apart from `running`: a guard may outlive
    /// the job that made it (kept in a thread-local) or be dropped out of
    /// order, and when its event sat on `running` the job's pop took the
    /// event off and left the finished job on for good.
    pub guards: Vec<(*const Slot, u32)>,
    pub rng: u64,
    /// Jobs queued by `job().batched()` since the last `flush`.
    pub batch_pending: usize,
    /// Jobs this thread ran through a handle while waiting, whose entries
    /// may still sit in its deques (stale; `ThisThread::compact_deques`).
    pub stale_hint: u32,
    /// Buffers of `complete`'s dependency walk and deque compaction, kept
    /// between waits so that a wait allocates nothing in steady state
    /// (`wait/mod.rs`). Taken out while in use (`take_wait_scratch`).
    pub wait_scratch: WaitScratch,
    /// A reused buffer for the copy of `running` that a thread parking in
    /// `complete` leaves in the parked list (`Waiters::register`); moved
    /// there while it is parked and back when it unregisters.
    pub park_running: Vec<(*const Slot, u32)>,
    /// The base of the last page `Registry::slot_of_bits` found in the
    /// registry's page set for this thread (0: none yet): a C handle's
    /// slot is usually in the page this thread scheduled it from, so the
    /// set is probed once per page, not once per handle.
    pub checked_page: usize,
}

pub(crate) struct Context {
    pub index: u32,
    pub is_worker: bool,
    /// Owner-only: the owner's ends of the deques, one per priority
    /// (`Priority as usize`: High, Normal, Low).
    locals: [Local; PRIORITIES],
    stealers: [Stealer; PRIORITIES],
    /// Owner-only: a second deque holding copies of released jobs that some
    /// waiter needs (`WAITED`); only threads in `complete` take from it.
    needed_local: Local,
    pub needed: Stealer,
    pub store: Store,
    /// Runnable jobs pinned to this context's thread, and its thread index
    /// (`pinned.rs`).
    pub pinned: crate::pinned_queue::PinnedQueue,
    pub claimed: AtomicBool,
    /// Futex this thread sleeps on inside `complete`.
    pub park: CachePadded<Futex>,
    pub counters: CachePadded<Counters>,
    owner: UnsafeCell<OwnerState>,
    /// The registry's `Urgent` hint, set by every push onto a High or a
    /// needed deque.
    urgent: std::sync::Arc<Urgent>,
}

/// "Some High or needed entry may be queued somewhere": a hint that lets a
/// busy worker skip its sweep over every other context's High and needed
/// deques (two of them per context, on every job) while none were pushed.
/// Each such push stores it (after the push, Release); a worker takes it
/// with a swap (Acquire) just before the sweep, so the sweep sees every
/// push whose store it took, and a push after the swap leaves it set. A
/// worker always looks at its *own* High and needed deques, and one that
/// finds nothing else sweeps anyway (`find_and_run`): a stale hint only
/// reorders work between threads, it never hides it.
#[derive(Default)]
pub(crate) struct Urgent(CachePadded<AtomicBool>);

impl Urgent {
    /// Unconditional: skipping the store when already set would let a
    /// taker that saw an earlier store miss this push.
    #[inline]
    pub(crate) fn set(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Set now? (A look that leaves the hint as it is: `handoff.rs`.)
    #[inline]
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Read and clear; the swap (an RMW) only when set.
    #[inline]
    pub(crate) fn take(&self) -> bool {
        self.0.load(Ordering::Relaxed) && self.0.swap(false, Ordering::Acquire)
    }
}

// SAFETY: `locals`, `needed_local`, `store`'s owner-only parts and `owner`
// are only used by the thread that claimed the context (the claim protocol:
// `Registry::current` / `claim_external`, released by `Claim::drop`, and a
// worker's own context); everything else is atomic or immutable.
unsafe impl Sync for Context {}
// SAFETY: as above.
unsafe impl Send for Context {}

impl Context {
    /// `shuffle`: the seed of `Builder::shuffle`, from which this
    /// context's random numbers then come (else a fixed per-index start).
    pub(crate) fn new(
        index: u32,
        is_worker: bool,
        urgent: std::sync::Arc<Urgent>,
        shuffle: Option<u64>,
    ) -> Context {
        let [(l0, s0), (l1, s1), (l2, s2)] = [deque::new(), deque::new(), deque::new()];
        let (needed_local, needed) = deque::new();
        Context {
            index,
            is_worker,
            locals: [l0, l1, l2],
            stealers: [s0, s1, s2],
            needed_local,
            needed,
            store: Store::new(index),
            pinned: crate::pinned_queue::PinnedQueue::new(is_worker.then_some(index)),
            claimed: AtomicBool::new(false),
            park: CachePadded::new(Futex::new(0)),
            counters: CachePadded::new(Counters::default()),
            owner: UnsafeCell::new(OwnerState {
                wait_depth: 0,
                wait_target: (std::ptr::null(), 0, 0),
                running: Vec::with_capacity(16),
                guards: Vec::new(),
                batch_pending: 0,
                stale_hint: 0,
                wait_scratch: WaitScratch::with_initial_capacity(),
                park_running: Vec::with_capacity(WaitScratch::INITIAL),
                rng: first_random(index, shuffle),
                checked_page: 0,
            }),
            urgent,
        }
    }

    /// The owner's end of the deque of `prio`. Callers are the claiming
    /// thread.
    #[inline]
    pub(crate) fn local(&self, prio: usize) -> &Local {
        &self.locals[prio]
    }

    /// Everyone's end of the deque of `prio`.
    #[inline]
    pub(crate) fn stealer(&self, prio: usize) -> &Stealer {
        &self.stealers[prio]
    }

    /// Is any of this context's deques (the `needed` one included) non-empty?
    #[inline]
    pub(crate) fn has_work(&self) -> bool {
        self.stealers.iter().any(|s| !s.is_empty()) || !self.needed.is_empty()
    }

    /// Owner-only scratch state.
    ///
    /// # Safety
    /// Only the claiming thread may call this, and must not hold two of the
    /// returned references at once. Private: the owner-only accessors below
    /// are the only callers, and each returns before another can run.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    unsafe fn owner(&self) -> &mut OwnerState {
        // SAFETY: owner-only, non-overlapping use, promised by the caller.
        unsafe { &mut *self.owner.get() }
    }

    // ---- owner-only accessors ---------------------------------------------
    // The engine calls these only on the context of the calling thread: the
    // one `Registry::current` returned, or a worker's own. No `&mut` they
    // make outlives the call, so two never overlap.

    /// Enter a job (or the drop of its closure): wait-on-self detection
    /// sees it until `running_pop`.
    #[inline]
    pub(crate) fn running_push(&self, slot: *const Slot, gen: u32) {
        // SAFETY: owner-only (see above); the reference ends here.
        unsafe { self.owner() }.running.push((slot, gen));
    }

    /// Leave the job entered last (`(slot, gen)`, checked in debug builds).
    #[inline]
    pub(crate) fn running_pop(&self, slot: *const Slot, gen: u32) {
        // SAFETY: as in `running_push`.
        let top = unsafe { self.owner() }.running.pop();
        debug_assert_eq!(
            top,
            Some((slot, gen)),
            "jobs leave the running stack in order"
        );
    }

    /// A `read_now`/`write_now` guard's event: wait-on-self detection sees
    /// this thread inside it until `guard_remove`.
    pub(crate) fn guard_push(&self, slot: *const Slot, gen: u32) {
        // SAFETY: as in `running_push`.
        unsafe { self.owner() }.guards.push((slot, gen));
    }

    /// The guard of event `(slot, gen)` is gone (in any order).
    pub(crate) fn guard_remove(&self, slot: *const Slot, gen: u32) {
        // SAFETY: as in `running_push`.
        let g = &mut unsafe { self.owner() }.guards;
        if let Some(i) = g.iter().rposition(|&e| e == (slot, gen)) {
            g.remove(i);
        }
    }

    /// The page base `Registry::slot_of_bits` checked last on this thread.
    #[inline]
    pub(crate) fn checked_page(&self) -> usize {
        // SAFETY: as in `running_push`.
        unsafe { self.owner() }.checked_page
    }

    /// Remember `base`, a page of this context's registry.
    #[inline]
    pub(crate) fn set_checked_page(&self, base: usize) {
        // SAFETY: as in `running_push`.
        unsafe { self.owner() }.checked_page = base;
    }

    /// Forget every job this thread was inside of (its claim ends: see
    /// `Claim::drop`).
    pub(crate) fn clear_running(&self) {
        // SAFETY: as in `running_push`.
        let st = unsafe { self.owner() };
        st.running.clear();
        st.guards.clear();
    }

    /// Is this thread inside any job (or a guard's event)?
    #[inline]
    pub(crate) fn inside_job(&self) -> bool {
        // SAFETY: as in `running_push`.
        let st = unsafe { self.owner() };
        !st.running.is_empty() || !st.guards.is_empty()
    }

    /// How many jobs this thread is inside of (its `running` stack), and
    /// how many `read_now`/`write_now` guards' events it holds: jobs that
    /// cannot finish before it returns to them (back-pressure, `make_room`).
    #[inline]
    pub(crate) fn own_unfinished(&self) -> (usize, usize) {
        // SAFETY: as in `running_push`.
        let st = unsafe { self.owner() };
        (st.running.len(), st.guards.len())
    }

    /// A copy of the jobs this thread is inside of (innermost last), in the
    /// reused buffer: give it back with `put_running_copy` (it allocates
    /// only when the buffer is out or too small).
    pub(crate) fn take_running_copy(&self) -> Vec<(*const Slot, u32)> {
        // SAFETY: as in `running_push`.
        let st = unsafe { self.owner() };
        let mut copy = std::mem::take(&mut st.park_running);
        copy.clear();
        copy.extend_from_slice(&st.guards);
        copy.extend_from_slice(&st.running);
        copy
    }

    /// Give back the buffer of `take_running_copy`.
    pub(crate) fn put_running_copy(&self, copy: Vec<(*const Slot, u32)>) {
        // SAFETY: as in `running_push`.
        unsafe { self.owner() }.park_running = copy;
    }

    /// Take the wait buffers out of the context (leaving empty ones, which
    /// own no memory): a nested use while they are out finds those and
    /// allocates, instead of aliasing. Give them back with
    /// `put_wait_scratch`.
    #[inline]
    pub(crate) fn take_wait_scratch(&self) -> WaitScratch {
        // SAFETY: as in `running_push`.
        std::mem::take(&mut unsafe { self.owner() }.wait_scratch)
    }

    /// Give back the buffers of `take_wait_scratch`.
    #[inline]
    pub(crate) fn put_wait_scratch(&self, scratch: WaitScratch) {
        // SAFETY: as in `running_push`.
        unsafe { self.owner() }.wait_scratch = scratch;
    }

    /// Nesting depth of `complete` on this thread, changed by `delta`.
    #[inline]
    pub(crate) fn add_wait_depth(&self, delta: i32) {
        // SAFETY: as in `running_push`.
        let st = unsafe { self.owner() };
        st.wait_depth = st.wait_depth.wrapping_add_signed(delta);
    }

    /// Make `(slot, gen)` the job this thread's innermost wait waits for,
    /// at the current depth; returns the one before, to put back when the
    /// wait ends.
    pub(crate) fn swap_wait_target(&self, t: (*const Slot, u32, u32)) -> (*const Slot, u32, u32) {
        // SAFETY: as in `running_push`.
        std::mem::replace(&mut unsafe { self.owner() }.wait_target, t)
    }

    /// Is this thread inside `wait_loop` at its current depth, waiting for
    /// a job that is still unfinished?
    #[inline]
    pub(crate) fn wait_target_unfinished(&self) -> bool {
        // SAFETY: as in `running_push`.
        let st = unsafe { self.owner() };
        let (slot, gen, depth) = st.wait_target;
        if slot.is_null() || depth != st.wait_depth {
            return false;
        }
        // SAFETY: a slot's memory lives as long as the registry (pages are
        // freed only when it is dropped); its state is atomic.
        let s = unsafe { &*slot }.state();
        s.generation() == gen && !s.is_finished()
    }

    /// Nesting depth of `complete` on this thread.
    #[inline]
    pub(crate) fn wait_depth(&self) -> u32 {
        // SAFETY: as in `running_push`.
        unsafe { self.owner() }.wait_depth
    }

    /// One more job in this thread's unflushed batch.
    #[inline]
    pub(crate) fn batch_add(&self) {
        // SAFETY: as in `running_push`.
        unsafe { self.owner() }.batch_pending += 1;
    }

    /// Jobs batched since the last flush, without resetting.
    #[inline]
    pub(crate) fn batch_pending(&self) -> usize {
        // SAFETY: as in `running_push`.
        unsafe { self.owner() }.batch_pending
    }

    /// Take (and reset) the count of batched jobs.
    #[inline]
    pub(crate) fn batch_take(&self) -> usize {
        // SAFETY: as in `running_push`.
        std::mem::take(&mut unsafe { self.owner() }.batch_pending)
    }

    /// A job was run through its handle: its entry may be left behind.
    #[inline]
    pub(crate) fn note_stale(&self) {
        // SAFETY: as in `running_push`.
        let st = unsafe { self.owner() };
        st.stale_hint = st.stale_hint.saturating_add(1);
    }

    /// Entries possibly left behind since `clear_stale`.
    #[inline]
    pub(crate) fn stale(&self) -> u32 {
        // SAFETY: as in `running_push`.
        unsafe { self.owner() }.stale_hint
    }

    /// The deques were compacted.
    #[inline]
    pub(crate) fn clear_stale(&self) {
        // SAFETY: as in `running_push`.
        unsafe { self.owner() }.stale_hint = 0;
    }

    #[inline]
    pub(crate) fn push(&self, e: Entry, prio: usize) {
        self.locals[prio].push(e);
        if prio == HIGH {
            self.urgent.set();
        }
    }

    /// Also offer `e` to waiters. Entries whose job already ran are trimmed
    /// from the owner's end first, so the deque stays short.
    pub(crate) fn push_needed(&self, e: Entry, still_runnable: impl Fn(Entry) -> bool) {
        while let Some(top) = self.needed_local.pop() {
            if still_runnable(top) {
                self.needed_local.push(top);
                break;
            }
        }
        self.needed_local.push(e);
        self.urgent.set();
    }

    /// Whether `e` is the newest entry of the deque `queue_runnable` puts
    /// it on first (`needed` when `waited`, else the deque of `prio`):
    /// nothing was pushed over it and nobody took it. A look, never a pop.
    pub(crate) fn is_newest(&self, e: Entry, prio: usize, waited: bool) -> bool {
        let d = if waited {
            &self.needed_local
        } else {
            &self.locals[prio]
        };
        let mut newest = false;
        d.pop_if(|top| {
            newest = top == e;
            false
        });
        newest
    }

    /// The owner's end of its needed deque (a shuffled pop, `shuffle.rs`).
    pub(crate) fn needed_local(&self) -> &Local {
        &self.needed_local
    }

    /// Owner's pop from its needed deque.
    pub(crate) fn pop_needed(&self) -> Option<Entry> {
        self.needed_local.pop()
    }

    /// A worker at its top-level loop will pop what it pushes next.
    #[inline]
    pub(crate) fn is_top_level_worker(&self) -> bool {
        // SAFETY: owner-only (see the accessors above): called from finish
        // paths, on the finishing thread's own context.
        self.is_worker && unsafe { self.owner() }.wait_depth == 0
    }

    #[inline]
    pub(crate) fn is_running(&self, slot: *const Slot, gen: u32) -> bool {
        // SAFETY: owner-only read.
        let st = unsafe { self.owner() };
        let is = |&(s, g): &(*const Slot, u32)| s == slot && g == gen;
        st.running.iter().any(is) || st.guards.iter().any(is)
    }

    /// xorshift64: a random starting victim for steals, and every choice
    /// of a shuffled order (`shuffle.rs`).
    #[inline]
    pub(crate) fn next_random(&self) -> u64 {
        // SAFETY: owner-only.
        let st = unsafe { self.owner() };
        let mut x = st.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        st.rng = x;
        x
    }
}

/// The first state of context `index`'s xorshift sequence: from the seed
/// when shuffling (splitmix64 of seed and index, so contexts differ and
/// the state is never zero), else a fixed start per index.
fn first_random(index: u32, shuffle: Option<u64>) -> u64 {
    match shuffle {
        None => 0x9E37_79B9_7F4A_7C15 ^ (u64::from(index) + 1).wrapping_mul(0xA24B_AED4_963E_E407),
        Some(seed) => {
            let mut z = seed ^ u64::from(index).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            if z == 0 {
                0x2545_F491_4F6C_DD1D
            } else {
                z
            }
        }
    }
}

/// Buffers of a wait, kept in the waiting thread's context between waits
/// (`Context::take_wait_scratch`), so `complete` allocates nothing once
/// they have grown to the graphs it walks. Each is empty between uses.
/// A context's buffers start with `INITIAL` entries each: the first wait
/// that walks a graph may come late (under load more of a graph is still
/// unfinished when waited on than in any earlier frame), and a small walk
/// then still allocates nothing.
#[derive(Default)]
pub(crate) struct WaitScratch {
    /// The walk's depth-first stack (`mark_needed`).
    pub(crate) stack: Vec<(NonNull<Slot>, u32)>,
    /// Runnable jobs the walk found, to offer as needed (`help_once`).
    pub(crate) runnable: Vec<Entry>,
    /// Nodes the walk visited, used when the thread is inside a job.
    /// Keyed by (slot, generation): a graph can hold two handles of one
    /// slot, an early job's (finished, slot reused) and a later one's.
    pub(crate) visited: HashSet<(*const Slot, u32), SlotHash>,
    /// Entries kept by `compact_deques`.
    pub(crate) keep: Vec<Entry>,
}

impl WaitScratch {
    /// Entries each buffer starts with (about 6 KiB per context, with
    /// `park_running`): a burst of 64 jobs (tests/alloc_free.rs) fits.
    pub(crate) const INITIAL: usize = 64;

    pub(crate) fn with_initial_capacity() -> WaitScratch {
        WaitScratch {
            stack: Vec::with_capacity(Self::INITIAL),
            runnable: Vec::with_capacity(Self::INITIAL),
            visited: HashSet::with_capacity_and_hasher(Self::INITIAL, SlotHash::default()),
            keep: Vec::with_capacity(Self::INITIAL),
        }
    }
}

/// Hasher of the walk's visited set: keys are (slot address, generation),
/// already well spread; SipHash cost more than the rest of the walk.
#[derive(Default)]
pub(crate) struct SlotHasher(u64);

impl std::hash::Hasher for SlotHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.write_u64(u64::from(x));
    }
    #[inline]
    fn write_usize(&mut self, x: usize) {
        self.write_u64(x as u64);
    }
}

pub(crate) type SlotHash = std::hash::BuildHasherDefault<SlotHasher>;
