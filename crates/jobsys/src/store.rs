//! The per-thread slot store: pages of slots and their free lists.
//!
//! Each context (thread) owns a store and is the only one that allocates
//! from it. The local free list is touched only by the owning thread; other
//! threads return slots through `remote_free`, a stack the owner empties
//! with one `swap` (no ABA: nodes are only popped by that swap). Pages are
//! owned by the registry and freed only when it is dropped; whole free
//! pages above a high-water mark are given back to the OS while kept
//! mapped (`Store::trim`).

pub(crate) use crate::slot::Slot;
use crate::slot::PAGE_SLOTS;
use crate::sync::AtomicPtr as SyncAtomicPtr;
use crossbeam_utils::CachePadded;
use std::cell::UnsafeCell;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

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
            e.1 = e.1.max(s.gen_now());
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
