//! Per-thread work-stealing deques of `Entry`s (`job.rs`): jobsys's own
//! Chase-Lev deque, with the memory orderings of Lê, Pop, Cohen and Zappa
//! Nardelli, "Correct and Efficient Work-Stealing for Weak Memory Models"
//! (PPoPP 2013).
//!
//! Each context owns a `Local` (the owner pushes and pops LIFO at the back)
//! and publishes a `Stealer` (others take FIFO from the front). An entry
//! names a slot and the generation it was pushed for; a popped entry whose
//! job was already claimed elsewhere (by `complete` helping directly
//! through a handle) fails its claim and is dropped. The deque never
//! dereferences an entry's pointer.
//!
//! Why our own and not crossbeam-deque (used until issue 17):
//! - `front` and `back` sit on separate cache lines. With one worker, the
//!   idle searcher polls the main thread's deques; a poll only reads, so
//!   both lines stay shared, and the owner's pop (which reads `front`)
//!   finds its line in cache. The owner keeps its own copies of `back`, the
//!   buffer pointer (and its cells and mask, `Ring`) and a lower bound of
//!   `front`, so a push reads no shared line at all and writes only the
//!   cell and `back`.
//! - The buffer grows and never shrinks: a deque that drains and refills
//!   allocates nothing (crossbeam halved it on every drain below a quarter
//!   and regrew it on the next burst).
//! - No epoch GC: a buffer replaced by a larger one is kept, linked from its
//!   successor, until both ends are dropped (a thief may still be reading
//!   it). Growth doubles, so the retired buffers together are smaller than
//!   the live one: memory stays within twice the largest buffer. No
//!   crossbeam-epoch also means Miri checks this module under Stacked
//!   Borrows, and TSan needs no suppression for it (cells are atomics).
//!
//! Batch steals (`steal_into`) stay one CAS per element. A single CAS that
//! moves `front` over several entries is unsound against this owner: its
//! LIFO pop takes entries from the back without a CAS while it sees more
//! than one left, so a thief that read `back` before the owner popped
//! several entries could CAS `front` over entries the owner already took.
//! Making it sound needs the owner to write `front` (a tag) on every pop
//! within a batch's reach of `front`, which is every pop of a short
//! fork/join deque: that puts a second locked instruction on the hot path
//! to speed up a path that only deques of 64+ entries take (a design that
//! confines the tag to long deques, not built yet: docs/design-notes.md,
//! "Not built yet: a one-CAS batch steal with an epoch in `front`").
//! Go's runqgrab and tokio's queue can batch in one CAS because their
//! owners also take with a CAS. The per-element fence is kept too:
//! dropping it is sound in the C++20 model (the thief's SeqCst CAS and
//! SeqCst load of `back` order it against the owner's fence), but loom
//! models SeqCst accesses as AcqRel, so that variant could not be checked,
//! and a double take of a `join` stack job would be undefined behaviour.
//!
//! Loom models (`loom_tests` below) drive this code with loom's atomics
//! (`crate::sync`); under loom `MIN_CAP`, `BATCH_FROM` and `BATCH` are small
//! so that growth and batches fit a model. `DEQUE_MUTANT` (loom builds
//! only) weakens one named step so each model can be shown to catch it.

/// Re-exported: the tracer names entries by this path.
pub(crate) use crate::job::Entry;
use crate::slot::Slot;
use crate::sync::{fence, AtomicIsize, AtomicPtr, AtomicU32, Ordering};
use crossbeam_utils::CachePadded;
use std::cell::Cell;
use std::ptr::{self, NonNull};
use std::sync::Arc;

/// A new deque's capacity (entries). 64: a burst of up to 64 jobs never
/// grows it (tests/alloc_free.rs).
#[cfg(not(loom))]
const MIN_CAP: usize = 64;
#[cfg(loom)]
const MIN_CAP: usize = 2;

/// `steal_into` moves a batch only from deques at least this long...
#[cfg(not(loom))]
const BATCH_FROM: isize = 64;
#[cfg(loom)]
const BATCH_FROM: isize = 3;
/// ...and then at most this many entries besides the one it returns.
#[cfg(not(loom))]
const BATCH: usize = 32;
#[cfg(loom)]
const BATCH: usize = 2;

/// Loom builds: is the named mutant selected by `DEQUE_MUTANT`? Always false
/// otherwise (compiled out).
#[inline(always)]
fn mutant(_name: &str) -> bool {
    #[cfg(loom)]
    {
        std::env::var("DEQUE_MUTANT").is_ok_and(|m| m == _name)
    }
    #[cfg(not(loom))]
    {
        false
    }
}

/// `o`, or `Relaxed` under the named mutant.
#[inline(always)]
fn ord(o: Ordering, weakened_by: &str) -> Ordering {
    if mutant(weakened_by) {
        Ordering::Relaxed
    } else {
        o
    }
}

/// One entry, as two atomics. A thief may read a cell while the owner
/// overwrites it (the owner wrapped around after thieves moved `front` past
/// it); with atomics that is a race on values, not a data race, and the
/// thief's CAS on `front` then fails, so the possibly torn pair is dropped.
struct EntryCell {
    slot: AtomicPtr<Slot>,
    gen: AtomicU32,
}

impl EntryCell {
    /// Relaxed: publication is `back`'s Release store (owner) or the
    /// buffer pointer's (growth); see `Local::push`.
    #[inline]
    fn write(&self, (slot, gen): (*mut Slot, u32)) {
        self.slot.store(slot, Ordering::Relaxed);
        self.gen.store(gen, Ordering::Relaxed);
    }

    /// Relaxed: see above; a thief trusts the value only once its CAS on
    /// `front` succeeded.
    #[inline]
    fn read(&self) -> (*mut Slot, u32) {
        (
            self.slot.load(Ordering::Relaxed),
            self.gen.load(Ordering::Relaxed),
        )
    }
}

/// A ring of `mask + 1` cells (a power of two), indexed modulo its length.
struct Buffer {
    mask: usize,
    cells: Box<[EntryCell]>,
    /// The smaller buffer this one replaced, kept for thieves that may
    /// still read it; freed with the deque (`Inner::drop`).
    prev: *mut Buffer,
}

impl Buffer {
    fn alloc(cap: usize, prev: *mut Buffer) -> *mut Buffer {
        debug_assert!(cap.is_power_of_two());
        let cells = (0..cap)
            .map(|_| EntryCell {
                slot: AtomicPtr::new(ptr::null_mut()),
                gen: AtomicU32::new(0),
            })
            .collect();
        Box::into_raw(Box::new(Buffer {
            mask: cap - 1,
            cells,
            prev,
        }))
    }

    #[inline]
    fn cap(&self) -> usize {
        self.mask + 1
    }

    #[inline]
    fn cell(&self, i: isize) -> &EntryCell {
        // SAFETY: `i as usize & mask` is below `mask + 1 == cells.len()`.
        unsafe { self.cells.get_unchecked(i as usize & self.mask) }
    }
}

impl Buffer {
    /// The owner's copy of this buffer's cells (`Local::ring`).
    fn ring(&self) -> Ring {
        Ring {
            cells: self.cells.as_ptr(),
            mask: self.mask,
        }
    }
}

/// The current buffer's cells and mask, cached by the owner: a push or a
/// pop then reaches a cell with one load fewer than through the buffer
/// pointer (W1 `nested`: a join pushes and pops once each).
#[derive(Clone, Copy)]
struct Ring {
    cells: *const EntryCell,
    mask: usize,
}

impl Ring {
    #[inline]
    fn cell(&self, i: isize) -> &EntryCell {
        // SAFETY: `cells` points at the `mask + 1` cells of a buffer that
        // lives until the deque is dropped (`Inner::drop`), which the
        // `Local` holding this copy keeps alive; the index is masked.
        unsafe { &*self.cells.add(i as usize & self.mask) }
    }
}

/// The owner's line: `back`, and the buffer pointer thieves read right
/// after it (one line for both).
struct BackLine {
    back: AtomicIsize,
    buffer: AtomicPtr<Buffer>,
}

struct Inner {
    /// Index of the oldest entry; only ever increases, by CAS (thieves, and
    /// the owner taking the last entry).
    front: CachePadded<AtomicIsize>,
    /// One past the newest entry; written only by the owner.
    line: CachePadded<BackLine>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Both ends are gone (`Arc`): no thread reads any buffer.
        let mut p = self.line.buffer.load(Ordering::Relaxed);
        while !p.is_null() {
            // SAFETY: every buffer came from `Box::into_raw` in
            // `Buffer::alloc`, is reachable exactly once (the current one,
            // then each one's `prev`), and is freed only here.
            let b = unsafe { Box::from_raw(p) };
            p = b.prev;
        }
    }
}

/// The owner's end of a deque. `!Sync`: one thread pushes and pops.
pub(crate) struct Local {
    inner: Arc<Inner>,
    /// The owner's copy of `back` (it is the only writer).
    back: Cell<isize>,
    /// A lower bound of `front` (it only increases), so that `push` reads
    /// `front` only when the buffer looks full.
    front_hint: Cell<isize>,
    /// The current buffer (the owner is the only one to replace it).
    buf: Cell<*mut Buffer>,
    /// Its cells and mask.
    ring: Cell<Ring>,
}

// SAFETY: moving the owner's end moves the owner role with it; the cached
// pointers (`buf`, `ring`) name a buffer and its cells, kept alive by
// `inner`, which is `Send + Sync`.
unsafe impl Send for Local {}

/// Everyone else's end. Shared by reference across threads; clones steal
/// from the same deque.
#[derive(Clone)]
pub(crate) struct Stealer {
    inner: Arc<Inner>,
}

pub(crate) fn new() -> (Local, Stealer) {
    with_capacity(MIN_CAP)
}

/// A deque whose first buffer holds `cap` entries (a power of two).
fn with_capacity(cap: usize) -> (Local, Stealer) {
    let buf = Buffer::alloc(cap, ptr::null_mut());
    let inner = Arc::new(Inner {
        front: CachePadded::new(AtomicIsize::new(0)),
        line: CachePadded::new(BackLine {
            back: AtomicIsize::new(0),
            buffer: AtomicPtr::new(buf),
        }),
    });
    let local = Local {
        inner: inner.clone(),
        back: Cell::new(0),
        front_hint: Cell::new(0),
        buf: Cell::new(buf),
        // SAFETY: just allocated, freed only by `Inner::drop`.
        ring: Cell::new(unsafe { &*buf }.ring()),
    };
    (local, Stealer { inner })
}

/// An entry from a cell a thief or the owner has taken (its CAS won, or the
/// owner popped above `front`): the cell was written by a push before that.
#[inline]
fn entry((slot, gen): (*mut Slot, u32)) -> Entry {
    match NonNull::new(slot) {
        Some(slot) => Entry { slot, gen },
        None => unreachable!("jobsys: deque: a taken cell was never written"),
    }
}

impl Local {
    #[inline]
    fn buffer(&self) -> &Buffer {
        // SAFETY: `buf` is the current buffer, freed only when `inner` is
        // dropped, which `self` keeps alive.
        unsafe { &*self.buf.get() }
    }

    #[inline]
    pub(crate) fn push(&self, e: Entry) {
        // Read before the cell stores (see `pop_fenced`).
        let inner: &Inner = &self.inner;
        let b = self.back.get();
        let mut ring = self.ring.get();
        if b.wrapping_sub(self.front_hint.get()) as usize > ring.mask {
            ring = self.make_room(b);
        }
        ring.cell(b).write((e.slot.as_ptr(), e.gen));
        // Release: pairs with the Acquire load of `back` in `steal`, so a
        // thief that sees `b + 1` also sees the cell (and the job's slot,
        // written before the push).
        inner
            .line
            .back
            .store(b.wrapping_add(1), ord(Ordering::Release, "push-relaxed"));
        self.back.set(b.wrapping_add(1));
    }

    /// The buffer looked full against the hint: reload `front`, and grow if
    /// it really is full.
    #[cold]
    #[inline(never)]
    fn make_room(&self, b: isize) -> Ring {
        // Acquire: pairs with the thieves' SeqCst CAS on `front`. A cell
        // that `front` moved past is overwritten below only after its thief
        // read it (the thief's read happens before our write), so that read
        // cannot see this push's value and then win its CAS.
        let f = self.inner.front.load(Ordering::Acquire);
        self.front_hint.set(f);
        let old = self.buffer();
        if (b.wrapping_sub(f) as usize) < old.cap() {
            return old.ring();
        }
        let new = Buffer::alloc(old.cap() * 2, self.buf.get());
        // SAFETY: just allocated; freed only by `Inner::drop`, like every
        // buffer, once it is linked below.
        let new_ref = unsafe { &*new };
        let mut i = f;
        while i != b {
            // The owner's own writes (thieves never write cells).
            new_ref.cell(i).write(old.cell(i).read());
            i = i.wrapping_add(1);
        }
        // Release: pairs with the Acquire load of the buffer in `steal`: a
        // thief that finds the new buffer finds the copies in it. The old
        // one is never written again, and stays allocated (`prev`).
        self.inner
            .line
            .buffer
            .store(new, ord(Ordering::Release, "grow-relaxed"));
        self.buf.set(new);
        self.ring.set(new_ref.ring());
        new_ref.ring()
    }

    #[inline]
    pub(crate) fn pop(&self) -> Option<Entry> {
        // Acquire: as in `make_room` (the hint may later let `push`
        // overwrite a cell a thief took).
        let f = self.inner.front.load(Ordering::Acquire);
        self.front_hint.set(f);
        // `front` only increases: empty now means empty (no store, no
        // fence). A stale `f` only sends us down the full path.
        if self.back.get().wrapping_sub(f) <= 0 {
            return None;
        }
        self.pop_fenced()
    }

    /// `pop`, if the newest entry passes `take` (looked at in place); else
    /// `None`, and the deque is left as it was. For a thread that only
    /// looks at its top (a waiter choosing what to run): an entry it does
    /// not take never leaves the deque, so nobody who looks meanwhile
    /// finds the deque emptier than it is. A `Some` is the entry `take`
    /// passed: between the look and the pop only thieves move, from the
    /// front, so the pop returns that entry or nothing (if a thief took
    /// it, the value looked at was stale and the pop finds the deque
    /// empty). The cell is read before the pop's fence: only this thread
    /// writes cells, and not before its next push.
    #[inline]
    pub(crate) fn pop_if(&self, take: impl FnOnce(Entry) -> bool) -> Option<Entry> {
        // Acquire: as in `pop`.
        let f = self.inner.front.load(Ordering::Acquire);
        let b = self.back.get().wrapping_sub(1);
        if b.wrapping_sub(f) < 0 {
            return None;
        }
        let cell = self.ring.get().cell(b).read();
        if !take(entry(cell)) {
            return None;
        }
        // The cell is not read again: only this thread writes cells.
        self.pop_top(Some(cell))
    }

    /// `pop` without its empty check: the Chase-Lev pop proper, which
    /// always stores `back` and fences. For a caller that expects an entry
    /// (a `join` taking back the job it just pushed): the check would cost
    /// it a load and a branch and save nothing. Correct on an empty deque
    /// too (it restores `back` and returns `None`).
    #[inline]
    pub(crate) fn pop_fenced(&self) -> Option<Entry> {
        self.pop_top(None)
    }

    /// `pop_fenced`, with the top cell's value when the caller read it
    /// already (`pop_if`).
    #[inline(always)]
    fn pop_top(&self, seen: Option<(*mut Slot, u32)>) -> Option<Entry> {
        // One read of the `Arc`'s pointer: `self` holds `Cell`s, so the
        // compiler would reload it after every store below.
        let inner: &Inner = &self.inner;
        let b = self.back.get().wrapping_sub(1);
        // The store, then the fence: the store-load (Dekker) pair with the
        // thieves' `front` load, fence, `back` load in `steal`. Either we
        // see a thief's CAS of `front` past `b`, or that thief sees
        // `back == b` and leaves entry `b` alone. Release (free on x86),
        // here and in the two restores below: a thief whose Acquire load of
        // `back` reads a pop's store must still see the cells and the
        // buffer that the pushes before it wrote. Lê et al. store Relaxed
        // and rely on C11 release sequences, which included the releasing
        // thread's later stores; C++20 (and so Rust) dropped that.
        inner.line.back.store(b, Ordering::Release);
        if !mutant("pop-no-fence") {
            fence(Ordering::SeqCst);
        }
        // Not copied into `front_hint` (one store fewer on `join`'s path):
        // an older value is a lower bound too, and `make_room` refreshes
        // it when it gets in the way. Acquire, as in `pop` (free on x86).
        let f = inner.front.load(Ordering::Acquire);
        let len = b.wrapping_sub(f);
        if len < 0 {
            // Thieves took everything meanwhile (or it was empty).
            inner.line.back.store(b.wrapping_add(1), Ordering::Release);
            return None;
        }
        let e = match seen {
            Some(e) => e,
            None => self.ring.get().cell(b).read(),
        };
        if len > 0 || mutant("pop-no-last-cas") {
            // More than one entry: no thief can reach `b` (see above).
            self.back.set(b);
            return Some(entry(e));
        }
        // The last entry: race the thieves for it with a CAS on `front`
        // (SeqCst: in the total order with the thieves' fences and CASes).
        // Acquire on failure: it reads the winning thief's CAS, so that
        // thief's read of cell `b` happens before a later push overwrites
        // it on the strength of the hint below (was Relaxed; a locked
        // instruction either way on x86).
        let won = inner
            .front
            .compare_exchange(f, f.wrapping_add(1), Ordering::SeqCst, Ordering::Acquire)
            .is_ok();
        // Either way the deque is now empty at `front == b + 1`.
        inner.line.back.store(b.wrapping_add(1), Ordering::Release);
        self.front_hint.set(f.wrapping_add(1));
        won.then(|| entry(e))
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.back
            .get()
            .wrapping_sub(self.inner.front.load(Ordering::Relaxed))
            <= 0
    }

    /// Entries queued (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> usize {
        self.back
            .get()
            .wrapping_sub(self.inner.front.load(Ordering::Relaxed))
            .max(0) as usize
    }
}

/// What one steal attempt found.
enum Steal {
    Taken(Entry),
    Empty,
    Lost,
}

impl Stealer {
    /// One Chase-Lev steal from `front == f`, `back == b` (read in that
    /// order, with the fence between them).
    #[inline]
    fn take(&self, f: isize, b: isize) -> Steal {
        if b.wrapping_sub(f) <= 0 {
            return Steal::Empty;
        }
        // Acquire, after `back`: pairs with the Release store in
        // `make_room`. `back`'s Acquire load (which saw the push of `f`)
        // makes this load see the buffer that push wrote into, or a newer
        // one holding a copy.
        let buf = self
            .inner
            .line
            .buffer
            .load(ord(Ordering::Acquire, "steal-buffer-relaxed"));
        // SAFETY: buffers are freed only when `inner` is dropped, which
        // `self` keeps alive; a replaced one is never written again.
        let e = unsafe { &*buf }.cell(f).read();
        // SeqCst: in the total order with the owner's fence in `pop` (and
        // its CAS for the last entry). On failure, `e` may be torn or
        // overwritten and is dropped unread.
        match self.inner.front.compare_exchange(
            f,
            f.wrapping_add(1),
            Ordering::SeqCst,
            Ordering::Relaxed,
        ) {
            Ok(_) => Steal::Taken(entry(e)),
            Err(_) => Steal::Lost,
        }
    }

    /// `front`, then (after the fence) `back`: the thief's half of the
    /// Dekker pair with `pop`.
    #[inline]
    fn fenced_back(&self, mutant_name: &str) -> isize {
        if !mutant(mutant_name) {
            fence(Ordering::SeqCst);
        }
        // Acquire: pairs with the Release store in `push` (the cell).
        self.inner.line.back.load(Ordering::Acquire)
    }

    /// Take the oldest entry; retries on a lost race a few times. An empty
    /// deque costs two loads and no fence.
    #[inline]
    pub(crate) fn steal(&self) -> Option<Entry> {
        for _ in 0..4 {
            // Acquire: as in Lê et al.; pairs with other thieves' CAS.
            let f = self.inner.front.load(Ordering::Acquire);
            // The cheap check first (two loads, no fence, as `is_empty`):
            // it may miss an entry pushed a moment ago, as any look at
            // another thread's deque may; the sleep protocol's own fences
            // (sleep/) make sure such a push wakes someone. A non-empty
            // look goes on to the fenced load, which decides.
            if self.inner.line.back.load(Ordering::Relaxed).wrapping_sub(f) <= 0 {
                return None;
            }
            let b = self.fenced_back("steal-no-fence");
            match self.take(f, b) {
                Steal::Taken(e) => return Some(e),
                Steal::Empty => return None,
                Steal::Lost => std::hint::spin_loop(),
            }
        }
        None
    }

    /// Take the oldest entry; from a long deque (at least `BATCH_FROM`
    /// entries) also move up to `BATCH` more into `dest`, one CAS each (see
    /// the module comment for why not one CAS for all). Short deques
    /// (fork/join) are stolen from one entry at a time, so a thief running
    /// a stolen `join` job holds only that job's descendants.
    #[inline]
    pub(crate) fn steal_into(&self, dest: &Local) -> Option<Entry> {
        let f = self.inner.front.load(Ordering::Relaxed);
        let b = self.inner.line.back.load(Ordering::Relaxed);
        if b.wrapping_sub(f) < BATCH_FROM {
            return self.steal();
        }
        #[cfg(loom)]
        if mutant("batch-one-cas") {
            return self.steal_batch_one_cas(dest);
        }
        let first = self.steal()?;
        self.steal_batch(dest);
        Some(first)
    }

    #[cold]
    #[inline(never)]
    fn steal_batch(&self, dest: &Local) {
        for _ in 0..BATCH {
            let f = self.inner.front.load(Ordering::Acquire);
            let b = self.fenced_back("batch-no-fence");
            match self.take(f, b) {
                Steal::Taken(e) => dest.push(e),
                Steal::Empty | Steal::Lost => return,
            }
        }
    }

    /// The unsound alternative (loom mutant `batch-one-cas`): read up to
    /// `1 + BATCH` cells, then move `front` over all of them with one CAS.
    /// The models show an owner's CAS-free pops taking an entry twice.
    #[cfg(loom)]
    fn steal_batch_one_cas(&self, dest: &Local) -> Option<Entry> {
        let f = self.inner.front.load(Ordering::Acquire);
        let b = self.fenced_back("");
        let n = b.wrapping_sub(f).min(1 + BATCH as isize);
        if n <= 0 {
            return None;
        }
        // SAFETY: as in `take`.
        let buf = unsafe { &*self.inner.line.buffer.load(Ordering::Acquire) };
        let cells: Vec<_> = (0..n).map(|k| buf.cell(f.wrapping_add(k)).read()).collect();
        self.inner
            .front
            .compare_exchange(f, f.wrapping_add(n), Ordering::SeqCst, Ordering::Relaxed)
            .ok()?;
        for &c in &cells[1..] {
            dest.push(entry(c));
        }
        Some(entry(cells[0]))
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        let f = self.inner.front.load(Ordering::Relaxed);
        self.inner.line.back.load(Ordering::Relaxed).wrapping_sub(f) <= 0
    }
}

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_tests;
