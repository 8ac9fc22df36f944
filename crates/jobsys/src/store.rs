//! The per-thread slot store: pages of slots and their free lists.
//!
//! Each context (thread) owns a store and is the only one that allocates
//! from it. The local free list is touched only by the owning thread; other
//! threads return slots through `remote_free`, a stack the owner empties
//! with one `swap` (no ABA: nodes are only popped by that swap). A page
//! added for an allocation that skips back-pressure (an edge block) goes
//! on a list of its own (`Store::bypass`), which the owner takes only after
//! applying back-pressure: skipping it once never lets the jobs after it
//! skip it too. Pages are
//! owned by the registry and freed only when it is dropped; whole free
//! pages above a high-water mark are given back to the OS while kept
//! mapped (`Store::trim`), but not those the owner's recent peak needs
//! (`demand.rs`, `Store::trim_if_due_at`), nor those it used since the
//! previous look: a look sets whole free pages aside (`Pages::cold`,
//! allocated from last), and the next gives back those still unused.

pub(crate) use crate::slot::Slot;
use crate::slot::PAGE_SLOTS;
use crate::sync::AtomicPtr as SyncAtomicPtr;
use crossbeam_utils::CachePadded;
use demand::Demand;
use std::cell::{Cell, UnsafeCell};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

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

/// Push every slot of `slots` on the free list at `head`, the first slot
/// ending on top. The caller owns the list and the slots are free and on
/// no other list.
fn push_all(slots: &[Slot], head: &mut *mut Slot) {
    for s in slots.iter().rev() {
        s.link.store(*head, Ordering::Relaxed);
        *head = s as *const Slot as *mut Slot;
    }
}

/// The slots of the set-aside page at `base` (`Pages::cold`).
///
/// # Safety
/// `base` is a page of the caller's store on `Pages::cold`: registry-owned
/// and alive, every slot free and on no free list.
unsafe fn cold_slots<'a>(base: usize) -> &'a [Slot] {
    // SAFETY: promised by the caller.
    unsafe { std::slice::from_raw_parts(base as *const Slot, PAGE_SLOTS) }
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

mod demand;
pub(crate) mod pages;

/// Owner-only page bookkeeping of a store.
#[derive(Default)]
struct Pages {
    idle: Vec<IdlePage>,
    /// The recent peak, and since when the store is above its mark; reset
    /// when a trim gets back to the mark.
    demand: Demand,
    /// Idle moments seen while above the mark; the clock is read on every
    /// `TRIM_CHECK_EVERY`th.
    ticks: u32,
    /// The pages whose slots were all free when a trim last looked,
    /// each with the sum of its slots' generations then. A page whose sum
    /// is the same at the next look was not used in between (every reuse
    /// of a slot raises its generation): only such pages are given back
    /// (`Store::give_back`).
    unused: std::collections::HashMap<usize, u64>,
    /// Pages whose slots are all free and on no free list: those of
    /// `unused`, kept committed. `Store::alloc` takes one
    /// (`take_cold_page`) only when both free lists are empty, so a page
    /// here stays unused unless the owner's demand reaches it, and one
    /// still unused at the next look is given back.
    cold: Vec<usize>,
}

impl Pages {
    /// Count an idle moment above the mark: true on every
    /// `TRIM_CHECK_EVERY`th, when the clock is read for a trim.
    #[inline]
    fn tick(&mut self) -> bool {
        self.ticks = self.ticks.wrapping_add(1);
        self.ticks % TRIM_CHECK_EVERY == 0
    }
}

/// How long a store stays above its mark before its free pages are given
/// back, and how long the trim remembers a peak (`demand.rs`): pages that
/// a burst coming back every frame needs are never given back (a page
/// given back costs 8 page faults to take again).
pub(crate) const TRIM_DELAY: Duration = Duration::from_secs(1);
/// An idle moment above the mark reads the clock only this often.
const TRIM_CHECK_EVERY: u32 = 64;

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
    /// Owner-only: the free slots of a page added for an allocation that
    /// skips back-pressure (an edge block: `alloc_bypass`). Kept off the
    /// local list, so that the next allocation that applies back-pressure
    /// still finds the free lists empty and applies it before it takes
    /// them (`take_bypass`).
    bypass: UnsafeCell<*mut Slot>,
    /// Slots freed by other threads, pushed here; the owner takes all at once.
    remote_free: CachePadded<SyncAtomicPtr<Slot>>,
    /// Pages in use (not idle); written by the owner only, read by `stats`.
    active: AtomicUsize,
    /// Owner-only: slots allocated since the owner's last idle moment
    /// (`idle_tick`), the demand the trim keeps room for.
    allocs: Cell<usize>,
    /// Owner-only.
    pages: UnsafeCell<Pages>,
}

// SAFETY: `local_free`, `bypass`, `allocs` and `pages` are only touched by the thread
// that has claimed the owning context (callers of the `unsafe fn`s promise
// this); the rest is atomic.
unsafe impl Sync for Store {}
// SAFETY: as above.
unsafe impl Send for Store {}

impl Store {
    pub(crate) fn new(owner: u32) -> Store {
        Store {
            owner,
            local_free: UnsafeCell::new(ptr::null_mut()),
            bypass: UnsafeCell::new(ptr::null_mut()),
            remote_free: CachePadded::new(SyncAtomicPtr::new(ptr::null_mut())),
            active: AtomicUsize::new(0),
            allocs: Cell::new(0),
            pages: UnsafeCell::new(Pages::default()),
        }
    }

    /// Pages in use (committed, not idle).
    pub(crate) fn active_pages(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    /// Take a free slot (state `(gen, FREE)`), or `None` when every free
    /// list is empty: then the caller adds a page (`add_page`) and asks
    /// again. Nothing else runs in between, so the two steps never overlap
    /// (a job run by the caller's back-pressure may allocate itself).
    ///
    /// # Safety
    /// Only the thread that has claimed this store's context may call it.
    #[inline]
    pub(crate) unsafe fn alloc(&self) -> Option<ptr::NonNull<Slot>> {
        // SAFETY: owner-only access, promised by the caller; the reference
        // ends with this call.
        let head = unsafe { &mut *self.local_free.get() };
        if head.is_null() {
            // SAFETY: owner-only, promised by the caller.
            *head = unsafe { self.refill() };
            if head.is_null() {
                return None;
            }
        }
        // SAFETY: `*head` is non-null here and points into a page that lives
        // as long as the registry; a slot on a free list is owned by this
        // store and unreachable by other threads.
        let slot = unsafe { &**head };
        *head = slot.link.load(Ordering::Relaxed);
        self.allocs.set(self.allocs.get().wrapping_add(1));
        Some(ptr::NonNull::from(slot))
    }

    /// Would `alloc` find a slot now (no page needed)? Moves the slots
    /// other threads freed, or a set-aside page's, onto the local list when
    /// it is empty, as `alloc` would.
    ///
    /// # Safety
    /// Only the thread that has claimed this store's context may call it.
    #[inline]
    pub(crate) unsafe fn has_free(&self) -> bool {
        // SAFETY: owner-only access, promised by the caller; the reference
        // ends with this call.
        let head = unsafe { &mut *self.local_free.get() };
        if head.is_null() {
            // SAFETY: owner-only, promised by the caller; the list is empty.
            *head = unsafe { self.refill() };
        }
        !head.is_null()
    }

    /// Free slots for an empty local list, linked: those other threads
    /// freed, else those of a cold page; null if there are none. Out of
    /// line: `alloc` is inlined into every `schedule`.
    ///
    /// # Safety
    /// Owner-only; the local free list is empty.
    #[cold]
    #[inline(never)]
    unsafe fn refill(&self) -> *mut Slot {
        let remote = self.remote_free.swap(ptr::null_mut(), Ordering::Acquire);
        if !remote.is_null() {
            return remote;
        }
        // SAFETY: owner-only, promised by the caller.
        unsafe { self.take_cold_page() }
    }

    /// The slots of one page of `Pages::cold`, linked, or null if it has
    /// none. A page leaves the cold list only here, one at a time: a
    /// burst's worth of pages taken at once would be walked through by the
    /// frames after it (their slots freed by workers come back only once
    /// the local list is empty), which would keep every one of them in use.
    ///
    /// # Safety
    /// Owner-only; the local free list is empty.
    unsafe fn take_cold_page(&self) -> *mut Slot {
        // SAFETY: owner-only access, promised by the caller.
        let pages = unsafe { &mut *self.pages.get() };
        let mut head = ptr::null_mut();
        if let Some(base) = pages.cold.pop() {
            // SAFETY: taken off `cold` just now (`give_back` puts only
            // whole free pages of ours there, their slots on no list).
            push_all(unsafe { cold_slots(base) }, &mut head);
        }
        head
    }

    /// Put a page's worth of free slots on the local free list: an idle page
    /// revived, else a new page handed to `new_page` (which keeps it alive
    /// as long as the registry).
    ///
    /// # Safety
    /// Owner-only.
    #[cold]
    pub(crate) unsafe fn add_page(&self, new_page: impl FnOnce(Page) -> &'static [Slot]) {
        // SAFETY: owner-only, promised by the caller.
        unsafe { self.add_page_to(self.local_free.get(), new_page) }
    }

    /// `add_page` onto the bypass list (`Store::bypass`), for an allocation
    /// that skips back-pressure and found every list empty.
    ///
    /// # Safety
    /// Owner-only.
    #[cold]
    pub(crate) unsafe fn add_bypass_page(&self, new_page: impl FnOnce(Page) -> &'static [Slot]) {
        // SAFETY: owner-only, promised by the caller.
        unsafe { self.add_page_to(self.bypass.get(), new_page) }
    }

    /// `add_page` onto the owner-only list at `list`.
    ///
    /// # Safety
    /// Owner-only; `list` is `local_free` or `bypass`.
    unsafe fn add_page_to(
        &self,
        list: *mut *mut Slot,
        new_page: impl FnOnce(Page) -> &'static [Slot],
    ) {
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
        // SAFETY: owner-only access, promised by the caller; no other
        // reference to the list is live.
        push_all(slots, unsafe { &mut *list });
    }

    /// A free slot for an allocation that skips back-pressure: as `alloc`,
    /// else one of the bypass list; `None` when that is empty too (then
    /// the caller adds a page with `add_bypass_page` and asks again).
    ///
    /// # Safety
    /// Owner-only.
    pub(crate) unsafe fn alloc_bypass(&self) -> Option<ptr::NonNull<Slot>> {
        // SAFETY: owner-only, promised by the caller.
        if let Some(slot) = unsafe { self.alloc() } {
            return Some(slot);
        }
        // SAFETY: owner-only access, promised by the caller; the reference
        // ends with this call.
        let head = unsafe { &mut *self.bypass.get() };
        if head.is_null() {
            return None;
        }
        // SAFETY: a free slot of ours, as on the local list (`alloc`).
        let slot = unsafe { &**head };
        *head = slot.link.load(Ordering::Relaxed);
        self.allocs.set(self.allocs.get().wrapping_add(1));
        Some(ptr::NonNull::from(slot))
    }

    /// Back-pressure was applied and the free lists are still empty: move
    /// the bypass list's slots onto the local list. Returns whether there
    /// were any.
    ///
    /// # Safety
    /// Owner-only; the local free list is empty.
    pub(crate) unsafe fn take_bypass(&self) -> bool {
        // SAFETY: owner-only access, promised by the caller.
        let (head, bypass) = unsafe { (&mut *self.local_free.get(), &mut *self.bypass.get()) };
        debug_assert!(head.is_null());
        *head = std::mem::replace(bypass, ptr::null_mut());
        !head.is_null()
    }

    /// The owner is idle (a worker about to sleep, or another thread whose
    /// outermost `complete` returns). Above the mark, the slots allocated
    /// since its last idle moment are noted as demand (`Demand::note`),
    /// and every `TRIM_CHECK_EVERY`th time it returns true: the caller
    /// should then call `trim_if_due`. Below it, one owner-only load, a
    /// compare and a store.
    ///
    /// # Safety
    /// Owner-only.
    #[inline]
    pub(crate) unsafe fn idle_tick(&self, keep: usize) -> bool {
        // SAFETY: owner-only, promised by the caller.
        unsafe { self.idle_tick_with(keep, Instant::now) }
    }

    /// `idle_tick` with the clock passed in (tests pass made-up times).
    ///
    /// # Safety
    /// Owner-only.
    #[inline]
    unsafe fn idle_tick_with(&self, keep: usize, clock: impl FnOnce() -> Instant) -> bool {
        if self.active_pages() <= keep {
            self.allocs.set(0);
            return false;
        }
        // SAFETY: owner-only, promised by the caller.
        unsafe { self.idle_above(clock) }
    }

    /// `idle_tick` above the mark; `clock` is read only for a new peak
    /// (`idle_peak`). Its common case is a leaf of a dozen instructions:
    /// W1 flat runs it after each of its 65,536 `complete`s.
    ///
    /// # Safety
    /// Owner-only.
    #[inline(never)]
    unsafe fn idle_above(&self, clock: impl FnOnce() -> Instant) -> bool {
        // SAFETY: owner-only access, promised by the caller.
        let pages = unsafe { &mut *self.pages.get() };
        let n = self.allocs.replace(0);
        if !pages.demand.note(n) {
            // SAFETY: owner-only, promised by the caller.
            return unsafe { self.idle_peak(n, clock) };
        }
        pages.tick()
    }

    /// `idle_above` when `n` is a new peak.
    ///
    /// # Safety
    /// Owner-only.
    #[cold]
    #[inline(never)]
    unsafe fn idle_peak(&self, n: usize, clock: impl FnOnce() -> Instant) -> bool {
        // SAFETY: owner-only access, promised by the caller.
        let pages = unsafe { &mut *self.pages.get() };
        pages.demand.note_peak(n, clock());
        pages.tick()
    }

    /// `trim_if_due_at` now.
    ///
    /// # Safety
    /// Owner-only.
    pub(crate) unsafe fn trim_if_due(&self, keep: usize) -> usize {
        // SAFETY: owner-only, promised by the caller.
        unsafe { self.trim_if_due_at(keep, Instant::now()) }
    }

    /// Once the store has been above `keep` pages for `TRIM_DELAY`, give
    /// back its whole free pages down to `keep`, but never below room for
    /// the live slots plus the recent peak (`Demand::peak`, the most slots
    /// allocated between two idle moments in the last `TRIM_DELAY` or
    /// more) and an eighth more: a peak that recurs keeps its pages, one
    /// that stopped recurring is given back. A trim that leaves the store
    /// above the mark is not tried again for `TRIM_DELAY`. `now` is the
    /// clock (tests pass made-up times).
    ///
    /// # Safety
    /// Owner-only.
    pub(crate) unsafe fn trim_if_due_at(&self, keep: usize, now: Instant) -> usize {
        // SAFETY: owner-only access, promised by the caller.
        let demand = unsafe { &mut (*self.pages.get()).demand };
        demand.read(now, 0);
        match demand.since {
            Some(t) if now.saturating_duration_since(t) >= TRIM_DELAY => {}
            _ => return 0,
        }
        let peak = demand.peak();
        let room = peak.saturating_add(peak / 8);
        // The live slots only add to what is kept: nothing to give back.
        if self.active_pages() <= keep.max(room.div_ceil(PAGE_SLOTS)) {
            return 0;
        }
        // SAFETY: owner-only, promised by the caller.
        let n = unsafe { self.give_back(keep, room, true) };
        if self.active_pages() > keep {
            // SAFETY: as above (`give_back` holds no reference any more).
            unsafe { (*self.pages.get()).demand.since = Some(now) };
        }
        n
    }

    /// Give back the memory of whole free pages while more than `keep`
    /// pages are in use (`JobSystem::trim_storage`: the recent peak is not
    /// consulted). A page is idle only if every one of its slots is on the
    /// free lists. Returns how many pages were given back.
    ///
    /// # Safety
    /// Owner-only.
    pub(crate) unsafe fn trim(&self, keep: usize) -> usize {
        // SAFETY: owner-only, promised by the caller.
        unsafe { self.give_back(keep, 0, false) }
    }

    /// Give back whole free pages while more are in use than `keep` and
    /// than room for the live slots plus `room` free ones needs. With
    /// `unused_only` (the timed trim), only pages that were whole free at
    /// the previous look and not used since (`Pages::unused`): a frame
    /// whose peak the demand count misses (it allocates in waves, with
    /// idle moments in between) still uses its pages every frame and keeps
    /// them. Getting back to `keep` resets the demand (`Pages::demand`).
    ///
    /// # Safety
    /// Owner-only.
    unsafe fn give_back(&self, keep: usize, room: usize, unused_only: bool) -> usize {
        // SAFETY: owner-only access, promised by the caller.
        let (head, pages) = unsafe { (&mut *self.local_free.get(), &mut *self.pages.get()) };
        let active = self.active_pages();
        if active <= keep {
            return 0;
        }
        // Every free slot onto the local list: the bypass list's, the cold
        // pages' ones, then the remote ones.
        // SAFETY: owner-only, promised by the caller; no other reference
        // to the bypass list is live.
        let mut b = std::mem::replace(unsafe { &mut *self.bypass.get() }, ptr::null_mut());
        while !b.is_null() {
            // SAFETY: a free slot of ours, linked by `push_all`.
            let s = unsafe { &*b };
            let next = s.link.load(Ordering::Relaxed);
            s.link.store(*head, Ordering::Relaxed);
            *head = b;
            b = next;
        }
        for base in pages.cold.drain(..) {
            // SAFETY: taken off `cold`, as in `take_cold_page`.
            push_all(unsafe { cold_slots(base) }, head);
        }
        let mut r = self.remote_free.swap(ptr::null_mut(), Ordering::Acquire);
        while !r.is_null() {
            // SAFETY: a free slot of ours, pushed with Release (see `alloc`).
            let s = unsafe { &*r };
            let next = s.link.load(Ordering::Relaxed);
            s.link.store(*head, Ordering::Relaxed);
            *head = r;
            r = next;
        }
        // Free slots per page, the highest generation in each, and the sum
        // of their generations.
        let mut per_page: std::collections::HashMap<usize, (usize, u32, u64)> = Default::default();
        let mut free = 0;
        let mut p = *head;
        while !p.is_null() {
            // SAFETY: free slots of ours.
            let s = unsafe { &*p };
            let e = per_page.entry(page_base(p)).or_insert((0, 0, 0));
            let g = s.gen_now();
            e.0 += 1;
            e.1 = e.1.max(g);
            e.2 += u64::from(g);
            free += 1;
            p = s.link.load(Ordering::Relaxed);
        }
        // Live (and retired) slots, plus the room asked for.
        let need = (active * PAGE_SLOTS)
            .saturating_sub(free)
            .saturating_add(room);
        let target = keep.max(need.div_ceil(PAGE_SLOTS));
        let whole = per_page
            .into_iter()
            .filter(|&(_, (n, _, _))| n == PAGE_SLOTS);
        let last = std::mem::take(&mut pages.unused);
        let mut idle: Vec<(usize, u32)> = Vec::new();
        for (base, (_, floor, sum)) in whole {
            if !unused_only || last.get(&base) == Some(&sum) {
                idle.push((base, floor));
            }
            pages.unused.insert(base, sum);
        }
        idle.truncate(active.saturating_sub(target));
        for (base, _) in &idle {
            pages.unused.remove(base);
        }
        let gone: std::collections::HashSet<usize> = idle.iter().map(|&(b, _)| b).collect();
        // Relink the free list without the idle pages' slots; for the timed
        // trim, without the other whole free pages' either: those go on the
        // cold list, taken only once the rest is used up.
        let mut p = std::mem::replace(head, ptr::null_mut());
        while !p.is_null() {
            // SAFETY: free slots of ours.
            let s = unsafe { &*p };
            let next = s.link.load(Ordering::Relaxed);
            let base = page_base(p);
            let set_aside = unused_only && pages.unused.contains_key(&base);
            if !set_aside && !gone.contains(&base) {
                s.link.store(*head, Ordering::Relaxed);
                *head = p;
            }
            p = next;
        }
        if unused_only {
            pages.cold.extend(pages.unused.keys());
        }
        if idle.is_empty() {
            return 0;
        }
        for &(base, floor) in &idle {
            let first = base as *const Slot;
            decommit(first);
            pages.idle.push(IdlePage { first, floor });
        }
        self.active.store(active - idle.len(), Ordering::Relaxed);
        if active - idle.len() <= keep {
            pages.demand = Demand::default();
        }
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

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_tests;
