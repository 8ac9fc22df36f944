//! The set of a registry's page addresses: a lock-free "is this one of my
//! pages?" for handles that come back as bits (the C API), checked before
//! any dereference.
//!
//! Pages are only ever added (they are freed when the registry drops), so
//! the set is an append-only open-addressed table of page bases (0: empty).
//! One writer at a time (`Registry::keep_page` holds the pages' mutex);
//! readers never lock. When the table would be half full, the writer copies
//! it into one twice as large and publishes that; the old tables stay
//! allocated until the set drops (a reader may still be probing one), so
//! the memory is under twice the last table's, a few KiB per GiB of slots.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Slots in the first table.
const FIRST: usize = 64;

struct Table {
    /// Power of two.
    cells: Box<[AtomicUsize]>,
}

impl Table {
    fn new(len: usize) -> Table {
        Table {
            cells: (0..len).map(|_| AtomicUsize::new(0)).collect(),
        }
    }

    #[inline]
    fn start(&self, base: usize, page_bytes: usize) -> usize {
        // Fibonacci hashing of the page number.
        // A shift, not a division: page sizes are powers of two.
        let n = (base >> page_bytes.trailing_zeros()) as u64;
        (n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & (self.cells.len() - 1)
    }

    #[inline]
    fn contains(&self, base: usize, page_bytes: usize) -> bool {
        let mask = self.cells.len() - 1;
        let mut i = self.start(base, page_bytes);
        loop {
            // Acquire: pairs with the Release store in `insert`, though a
            // reader only compares the value (it never reads the page
            // through it: the caller does, after this says yes, and the
            // page was fully built before its base was inserted).
            match self.cells[i].load(Ordering::Acquire) {
                0 => return false,
                b if b == base => return true,
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// Insert `base` (not present). Writer only.
    fn insert(&self, base: usize, page_bytes: usize) {
        let mask = self.cells.len() - 1;
        let mut i = self.start(base, page_bytes);
        while self.cells[i].load(Ordering::Relaxed) != 0 {
            i = (i + 1) & mask;
        }
        self.cells[i].store(base, Ordering::Release);
    }
}

/// A table the set owns: from `Box::leak`, freed in `PageSet::drop`.
/// A raw pointer rather than a `Box` in the writer's list: moving a `Box`
/// asserts unique access to the table, which readers holding `current` do
/// not grant (Miri's aliasing model rejects it).
struct Owned(NonNull<Table>);
// SAFETY: a `Table` is atomics only; the pointer is freed once, by the set's
// `Drop`, when no reader can hold it any more.
unsafe impl Send for Owned {}

/// The page bases of one registry.
pub(crate) struct PageSet {
    page_bytes: usize,
    /// The current table; readers load it, the writer replaces it.
    current: AtomicPtr<Table>,
    /// Every table ever published (the current one last) and the count of
    /// bases; written under this lock only. Tables never move (they are
    /// heap blocks owned through raw pointers) while `current` points at one.
    writer: Mutex<(Vec<Owned>, usize)>,
}

impl PageSet {
    pub(crate) fn new(page_bytes: usize) -> PageSet {
        assert!(page_bytes.is_power_of_two());
        let first = NonNull::from(Box::leak(Box::new(Table::new(FIRST))));
        PageSet {
            page_bytes,
            current: AtomicPtr::new(first.as_ptr()),
            writer: Mutex::new((vec![Owned(first)], 0)),
        }
    }

    /// Add the page at `base` (aligned to the page size, non-zero, not in
    /// the set yet).
    pub(crate) fn insert(&self, base: usize) {
        debug_assert!(base != 0 && base % self.page_bytes == 0);
        let mut w = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let (tables, count) = &mut *w;
        let cur = tables.last().expect("a table").0;
        // SAFETY: tables in the list are alive until the set drops, and the
        // writer (we hold its lock) only reads them through shared references.
        let cur = unsafe { cur.as_ref() };
        let cur = if (*count + 1) * 2 > cur.cells.len() {
            let bigger = Box::new(Table::new(cur.cells.len() * 2));
            for c in cur.cells.iter() {
                let b = c.load(Ordering::Relaxed);
                if b != 0 {
                    bigger.insert(b, self.page_bytes);
                }
            }
            let bigger = NonNull::from(Box::leak(bigger));
            // Release: a reader that loads the new table sees its cells.
            self.current.store(bigger.as_ptr(), Ordering::Release);
            tables.push(Owned(bigger));
            // SAFETY: just leaked, owned by the list from here on.
            unsafe { bigger.as_ref() }
        } else {
            cur
        };
        cur.insert(base, self.page_bytes);
        *count += 1;
    }

    /// Is `addr` inside one of the set's pages?
    #[inline]
    pub(crate) fn contains_addr(&self, addr: usize) -> bool {
        let base = addr & !(self.page_bytes - 1);
        if base == 0 {
            return false;
        }
        // SAFETY: every pointer ever stored in `current` is a table kept in
        // `writer`'s list until the set drops, and `&self` keeps the set
        // alive.
        let t = unsafe { &*self.current.load(Ordering::Acquire) };
        t.contains(base, self.page_bytes)
    }
}

impl Drop for PageSet {
    fn drop(&mut self) {
        let tables = self.writer.get_mut().unwrap_or_else(|e| e.into_inner());
        for t in tables.0.drain(..) {
            // SAFETY: from `Box::leak` in `new`/`insert`, in the list once,
            // freed once here; `&mut self`: no reader can hold it now.
            drop(unsafe { Box::from_raw(t.0.as_ptr()) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PB: usize = 1 << 15;

    #[test]
    fn finds_every_inserted_page_and_nothing_else_across_growth() {
        let s = PageSet::new(PB);
        let n = if cfg!(miri) { 150 } else { 2000 };
        let bases: Vec<usize> = (1..n).map(|i| i * 7919 * PB).collect();
        for (k, &b) in bases.iter().enumerate() {
            s.insert(b);
            // Everything so far, at any offset inside the page.
            for &o in &bases[..=k] {
                assert!(s.contains_addr(o) && s.contains_addr(o + PB - 1));
            }
            assert!(!s.contains_addr(bases.get(k + 1).copied().unwrap_or(3 * PB)));
        }
        assert!(!s.contains_addr(0));
        assert!(!s.contains_addr(PB - 1));
        assert!(!s.contains_addr(usize::MAX));
    }

    #[test]
    fn readers_racing_the_writer_never_miss_a_page_inserted_before_they_looked() {
        let last = if cfg!(miri) { 100 } else { 3000 };
        let s = std::sync::Arc::new(PageSet::new(PB));
        let done = std::sync::Arc::new(AtomicUsize::new(0));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (s, done) = (s.clone(), done.clone());
                std::thread::spawn(move || {
                    let mut checks = 0u64;
                    loop {
                        let n = done.load(Ordering::Acquire);
                        for i in 1..=n {
                            assert!(s.contains_addr(i * PB), "page {i} of {n} lost");
                        }
                        checks += 1;
                        if n == last {
                            return checks;
                        }
                    }
                })
            })
            .collect();
        for i in 1..=last {
            s.insert(i * PB);
            done.store(i, Ordering::Release);
        }
        for r in readers {
            assert!(r.join().unwrap() > 0);
        }
    }
}
