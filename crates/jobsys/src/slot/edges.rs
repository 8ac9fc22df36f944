//! A job's dependency edges: its first one in its own payload when the
//! closure leaves room (`write_own_edge`), the others in blocks of edges
//! chained from its slot (`write_edge`; all read back by `for_each_dep`), and
//! each dependency's list of the edges of jobs that wait for it
//! (`push_dependent`, closed and taken once by its finisher:
//! `close_dependents`, `Edge::take`). Touches no state word: the state
//! checks it needs are `Snapshot` questions (`state.rs`).

use super::{Slot, Snapshot, PAYLOAD_BYTES};
use std::cell::UnsafeCell;
use std::ptr::{self, NonNull};
use std::sync::atomic::Ordering;

/// Sentinel in `Slot::dependents` once the job finished: no more edges.
const CLOSED: *mut Edge = 1 as *mut Edge;

/// One dependency edge: `dependent` waits for `dep`. Lives in an edge block
/// owned by `dependent`; linked into `dep`'s dependents list through `next`.
#[repr(C)]
pub(crate) struct Edge {
    next: UnsafeCell<*mut Edge>,
    dependent: *const Slot,
    dep: *const Slot,
    dep_gen: u32,
}
pub(crate) const EDGES_PER_BLOCK: usize = PAYLOAD_BYTES / std::mem::size_of::<Edge>();

/// Where a job's own edge lives in its payload: the last
/// `size_of::<Edge>()` bytes (32), free when the vtable says `edge_room`
/// (a closure of at most 32 bytes, a boxed one, or none). A job with one
/// unfinished dependency (a chain, a tree) then needs no edge block: one
/// slot per job instead of two.
pub(crate) const OWN_EDGE_AT: usize = PAYLOAD_BYTES - std::mem::size_of::<Edge>();

/// Flag in `Slot::ndeps`: edge 0 is the job's own (at `OWN_EDGE_AT`),
/// edges 1.. are in its blocks. The count below it is all edges.
const OWN: u32 = 1 << 31;

impl Slot {
    /// Record edge number `i` of this (unpublished or still-being-attached)
    /// job's blocks (its own edge, if `own` says it has one, not counted),
    /// `dependent` on the
    /// job `(dep, dep_gen)`, in `block`, which the
    /// caller allocated for edges `i - i % EDGES_PER_BLOCK ..` (and linked
    /// after `prev`, the block before it, when `i % EDGES_PER_BLOCK == 0`).
    /// Returns the edge, private until `push_dependent` publishes it.
    ///
    /// # Safety
    /// The caller is the job's publisher, inside `submit` / `submit_held`,
    /// and `block` is an edge block of this job. Edges are written after
    /// `publish_waiting`, but nobody else reads them meanwhile: the only
    /// readers (`for_each_dep`: a wait's walk, a group's cancel) start from
    /// the job's handle, which nobody has until `submit` returns it (a
    /// dependency's dependents list leads to the edge, never to the job's
    /// other edges), and `ndeps`/`edges` only grow until then.
    pub(crate) unsafe fn write_edge(
        &self,
        i: usize,
        own: bool,
        prev: Option<&Slot>,
        block: &Slot,
        dep: NonNull<Slot>,
        dep_gen: u32,
    ) -> *mut Edge {
        let k = i % EDGES_PER_BLOCK;
        // SAFETY: private to the publisher (see above).
        unsafe {
            if k == 0 {
                let link = match prev {
                    None => self.edges.get(),
                    Some(p) => p.edges.get(),
                };
                *link = block as *const Slot as *mut Slot;
            }
            let e = block.payload_ptr().cast::<Edge>().add(k);
            self.put_edge(e, dep, dep_gen);
            *self.ndeps.get() = if own {
                OWN | (i as u32 + 2)
            } else {
                i as u32 + 1
            };
            e
        }
    }

    /// Record this job's first edge, on `(dep, dep_gen)`, in its own
    /// payload (`OWN_EDGE_AT`); later ones go to blocks (`write_edge`,
    /// which numbers its edges from 0 all the same). Returns the edge,
    /// private until `push_dependent` publishes it.
    ///
    /// # Safety
    /// As `write_edge`, before any `write_edge` of this job; and the job's
    /// vtable has `edge_room`: its payload's last 32 bytes are unused, and
    /// nothing touches them until the slot is freed (running or dropping
    /// the closure reads its own bytes only), so the edge outlives every
    /// reader (a dependency's finisher reads it before its `dep_done`).
    pub(crate) unsafe fn write_own_edge(&self, dep: NonNull<Slot>, dep_gen: u32) -> *mut Edge {
        debug_assert!(self.vtable().edge_room);
        // SAFETY: private to the publisher; in the payload, 8-aligned
        // (the payload is 16-aligned, `OWN_EDGE_AT` is 32).
        unsafe {
            debug_assert_eq!(*self.ndeps.get(), 0);
            let e = self.payload_ptr().add(OWN_EDGE_AT).cast::<Edge>();
            self.put_edge(e, dep, dep_gen);
            *self.ndeps.get() = OWN | 1;
            e
        }
    }

    /// Write at `e` an unlinked edge of this job on `(dep, dep_gen)`.
    ///
    /// # Safety
    /// `e` is an edge's place this job's publisher owns: in one of its edge
    /// blocks, or its own (`OWN_EDGE_AT`) when its vtable has `edge_room`.
    #[inline(always)]
    unsafe fn put_edge(&self, e: *mut Edge, dep: NonNull<Slot>, dep_gen: u32) {
        // SAFETY: as the caller promises.
        unsafe {
            ptr::write(
                e,
                Edge {
                    next: UnsafeCell::new(ptr::null_mut()),
                    dependent: self,
                    dep: dep.as_ptr(),
                    dep_gen,
                },
            )
        };
    }

    /// Link edge `e` into this job's dependents list, unless the list is
    /// closed (the job finished: its dependents were walked). `pinned` is
    /// the state `pin_for_attach` returned.
    ///
    /// # Safety
    /// `e` came from `write_edge` and is not linked anywhere yet; the
    /// caller holds a pin from `pin_for_attach`.
    pub(crate) unsafe fn push_dependent(&self, pinned: Snapshot, e: *mut Edge) -> bool {
        if pinned.is_finished() {
            // Finished before our pin: its dependents were (or are being)
            // walked without us.
            return false;
        }
        // Acquire pairs with the AcqRel swap to CLOSED in `close_dependents`.
        let mut head = self.dependents.load(Ordering::Acquire);
        loop {
            if head == CLOSED {
                return false;
            }
            // SAFETY: `e` is still private to us until the CAS succeeds.
            unsafe { *(*e).next.get() = head };
            // Release publishes the edge to the finisher's swap.
            match self.dependents.compare_exchange_weak(
                head,
                e,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => head = now,
            }
        }
    }

    /// Close the dependents list of a finished job (the caller holds a pin)
    /// and return its edges, to be walked once with `Edge::take`. AcqRel:
    /// Acquire pairs with the edges' CAS in `push_dependent`; Release
    /// publishes the job's failure to later attachers.
    pub(crate) fn close_dependents(&self) -> *mut Edge {
        self.dependents.swap(CLOSED, Ordering::AcqRel)
    }

    /// Visit this job's dependencies as (slot, generation).
    ///
    /// # Safety
    /// The caller holds a pin on the job (its edges are then stable), and
    /// it is `WAITING` (published with its edges).
    pub(crate) unsafe fn for_each_dep(&self, mut f: impl FnMut(NonNull<Slot>, u32)) {
        // SAFETY: pinned and published: `edges` and `ndeps` are final.
        let (mut block, raw) = unsafe { (*self.edges.get(), *self.ndeps.get()) };
        let mut n = (raw & !OWN) as usize;
        if raw & OWN != 0 && n > 0 {
            // SAFETY: `write_own_edge` wrote it; the slot holds this job
            // while it is pinned.
            let e = unsafe { &*self.payload_ptr().add(OWN_EDGE_AT).cast::<Edge>() };
            // SAFETY: `dep` came from a handle's non-null slot pointer.
            f(
                unsafe { NonNull::new_unchecked(e.dep as *mut Slot) },
                e.dep_gen,
            );
            n -= 1;
        }
        let mut i = 0;
        while i < n && !block.is_null() {
            // SAFETY: blocks hold EDGES_PER_BLOCK initialised edges each, `n`
            // in total, until their job is freed (it is pinned).
            let edges = unsafe { (*block).payload_ptr().cast::<Edge>() };
            for k in 0..EDGES_PER_BLOCK.min(n - i) {
                // SAFETY: in bounds (see above).
                let e = unsafe { &*edges.add(k) };
                // SAFETY: `dep` came from a handle's non-null slot pointer.
                f(
                    unsafe { NonNull::new_unchecked(e.dep as *mut Slot) },
                    e.dep_gen,
                );
            }
            i += EDGES_PER_BLOCK;
            // SAFETY: as above.
            block = unsafe { *(*block).edges.get() };
        }
    }
}

impl Edge {
    /// Read an edge of a list taken with `close_dependents`: its next edge
    /// and its dependent job.
    ///
    /// # Safety
    /// `e` is a non-null edge of that list, read before the dependent's
    /// `dep_done` (after which the dependent may run and free the edge).
    pub(crate) unsafe fn take<'a>(e: *mut Edge) -> (*mut Edge, &'a Slot) {
        // SAFETY: promised by the caller; the dependent's slot lives as long
        // as the registry.
        unsafe { (*(*e).next.get(), &*(*e).dependent) }
    }
}
