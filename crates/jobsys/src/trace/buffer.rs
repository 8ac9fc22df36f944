//! One thread's event buffer: append-only by its owner, no locks, no
//! allocation per event, read by the collector in `trace_stop`.
//!
//! Protocol (the README next to this file explains it with a picture):
//! - `head` packs the capture number (`epoch`, high 32 bits) and the number
//!   of events written in that capture (`len`, low 32 bits). Only the owner
//!   (the thread that holds the context this buffer belongs to) stores it.
//! - The owner writes event `len` into the storage, then stores
//!   `head = (epoch, len + 1)` with Release. The collector loads `head` with
//!   Acquire and reads events `[0, len)` only if the epoch is the capture it
//!   collects: those were all written before the Release it synchronised
//!   with, and the owner never writes them again in that capture. An append
//!   in flight (a thread that saw recording on just before `trace_stop`)
//!   writes at index `len` or later, which the collector does not read.
//! - When the owner sees a newer epoch than its buffer's, it *resets* the
//!   buffer (re-allocating the storage if the capacity changed, recording
//!   its thread's name) and publishes `(epoch, 0)`. It sees a newer epoch
//!   only after `trace_start` stored it (Release/Acquire), and `trace_start`
//!   runs after the previous `trace_stop` finished reading (both hold the
//!   tracer's control lock), so a reset never overlaps a collection.
//! - A full buffer counts the event in `dropped` and returns: it never
//!   blocks and never overwrites.
//! - A context is held by one thread at a time; a thread that releases it
//!   and the next one that claims it are ordered by the claim protocol
//!   (Release/Acquire on `Context::claimed`), so there is one writer at a
//!   time.

use super::event::RawEvent;
use std::cell::UnsafeCell;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) struct ThreadBuffer {
    /// `(epoch << 32) | len`; stored by the owner only.
    head: AtomicU64,
    /// Events that did not fit in this capture (owner-written, read by the
    /// collector; a plain store, not an RMW: only the owner writes).
    dropped: AtomicU64,
    /// Owner-written in `reset` only: start and capacity of the storage.
    events: UnsafeCell<*mut RawEvent>,
    cap: UnsafeCell<usize>,
    /// Owner-written in `reset` only: the thread's name at its first event
    /// of the capture.
    name: UnsafeCell<Option<String>>,
}

// SAFETY: the cells are written only by the owning thread in `reset`, which
// never overlaps a collector's reads (see the module docs); everything else
// is atomic. The storage holds `RawEvent`s, which are `Send + Sync` data.
unsafe impl Sync for ThreadBuffer {}
// SAFETY: as above; the raw pointer is an owned allocation.
unsafe impl Send for ThreadBuffer {}

/// What a collector copies out of one buffer.
pub(crate) struct Snapshot {
    pub events: Vec<RawEvent>,
    pub dropped: u64,
    pub name: Option<String>,
}

impl ThreadBuffer {
    pub(crate) fn new() -> ThreadBuffer {
        ThreadBuffer {
            // Epoch 0 is never a capture's: a fresh buffer is stale.
            head: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            events: UnsafeCell::new(std::ptr::null_mut()),
            cap: UnsafeCell::new(0),
            name: UnsafeCell::new(None),
        }
    }

    /// Append `ev` for capture `epoch` (whose buffers hold `cap` events).
    ///
    /// # Safety
    /// Only the buffer's owner may call this (one thread at a time, see the
    /// module docs); `epoch` must be the value the caller loaded (Acquire)
    /// from the tracer after seeing recording on.
    #[inline]
    pub(crate) unsafe fn push(&self, epoch: u32, cap: usize, ev: RawEvent) {
        // Relaxed: only this thread stores `head`.
        let mut head = self.head.load(Ordering::Relaxed);
        if (head >> 32) as u32 != epoch {
            // SAFETY: we are the owner (promised by the caller).
            unsafe { self.reset(epoch, cap) };
            head = u64::from(epoch) << 32;
        }
        let len = head as u32 as usize;
        // SAFETY: owner-only field, written only in `reset` (this thread).
        let (events, cap) = unsafe { (*self.events.get(), *self.cap.get()) };
        if len >= cap {
            self.dropped
                .store(self.dropped.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            return;
        }
        // SAFETY: `len < cap`, inside the allocation; index `len` is not
        // published yet, so no collector reads it.
        unsafe { events.add(len).write(ev) };
        // Release: publishes the write above together with the new length.
        self.head.store(head + 1, Ordering::Release);
    }

    /// Start capture `epoch` in this buffer: empty it, size it to `cap`.
    ///
    /// # Safety
    /// Owner only; no collector reads this buffer now (the epoch changed,
    /// so the previous capture's collection is over).
    #[cold]
    unsafe fn reset(&self, epoch: u32, cap: usize) {
        let cap = cap.min(u32::MAX as usize);
        // SAFETY: owner-only fields, no concurrent reader (see above).
        unsafe {
            if *self.cap.get() != cap || (*self.events.get()).is_null() {
                self.free_storage();
                let mut v = ManuallyDrop::new(Vec::<RawEvent>::with_capacity(cap));
                *self.events.get() = v.as_mut_ptr();
                *self.cap.get() = v.capacity();
            }
            *self.name.get() = std::thread::current().name().map(str::to_owned);
        }
        self.dropped.store(0, Ordering::Relaxed);
        // Release: the storage and name above are visible to a collector
        // that sees this epoch.
        self.head.store(u64::from(epoch) << 32, Ordering::Release);
    }

    /// # Safety
    /// Owner only, or `&mut self`; no reader of the storage.
    unsafe fn free_storage(&self) {
        // SAFETY: promised by the caller.
        unsafe {
            let p = *self.events.get();
            if !p.is_null() {
                // Length 0: `RawEvent` has no destructor to run.
                drop(Vec::from_raw_parts(p, 0, *self.cap.get()));
                *self.events.get() = std::ptr::null_mut();
                *self.cap.get() = 0;
            }
        }
    }

    /// Copy out what capture `epoch` recorded so far; `None` if this buffer
    /// holds nothing of that capture. Safe to call while the owner appends.
    ///
    /// # Safety
    /// The caller holds the tracer's control lock and `epoch` is the
    /// current capture, so no reset (which frees the storage) can run until
    /// the caller is done.
    pub(crate) unsafe fn snapshot(&self, epoch: u32) -> Option<Snapshot> {
        // Acquire: pairs with the owner's Release stores of `head`.
        let head = self.head.load(Ordering::Acquire);
        if (head >> 32) as u32 != epoch {
            return None;
        }
        let len = head as u32 as usize;
        // SAFETY: written by the owner's `reset` before the Release store
        // that published this epoch, and not written again in it.
        let (events, name) = unsafe { (*self.events.get(), (*self.name.get()).clone()) };
        let events = (0..len)
            // SAFETY: events `[0, len)` were written before the Release
            // store we synchronised with and are never rewritten in this
            // capture; reading by value (no reference into the storage)
            // leaves the owner free to write beyond `len`.
            .map(|i| unsafe { events.add(i).read() })
            .collect();
        Some(Snapshot {
            events,
            dropped: self.dropped.load(Ordering::Relaxed),
            name,
        })
    }
}

impl Drop for ThreadBuffer {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: nobody else uses the buffer.
        unsafe { self.free_storage() };
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::trace::event::{JOB_BEGIN, JOB_END};

    fn ev(i: u64) -> RawEvent {
        RawEvent::new(i, if i % 2 == 0 { JOB_BEGIN } else { JOB_END }, i, "j")
    }

    #[test]
    fn full_buffer_drops_and_counts_without_blocking() {
        let b = ThreadBuffer::new();
        for i in 0..10 {
            // SAFETY: this thread is the only user.
            unsafe { b.push(1, 4, ev(i)) };
        }
        // SAFETY: no concurrent reset.
        let s = unsafe { b.snapshot(1) }.unwrap();
        assert_eq!(s.events.len(), 4);
        assert_eq!(s.dropped, 6);
        assert_eq!(s.events, (0..4).map(ev).collect::<Vec<_>>());
    }

    #[test]
    fn a_new_epoch_starts_empty_and_an_old_one_reads_as_nothing() {
        let b = ThreadBuffer::new();
        // SAFETY: single thread.
        unsafe {
            assert!(b.snapshot(1).is_none());
            b.push(1, 2, ev(0));
            b.push(1, 2, ev(1));
            b.push(1, 2, ev(2));
            assert!(b.snapshot(2).is_none());
            b.push(2, 8, ev(3));
            let s = b.snapshot(2).unwrap();
            assert_eq!(s.events, vec![ev(3)]);
            assert_eq!(s.dropped, 0);
            assert!(b.snapshot(1).is_none());
        }
    }

    #[test]
    fn zero_capacity_drops_everything() {
        let b = ThreadBuffer::new();
        // SAFETY: single thread.
        unsafe {
            b.push(1, 0, ev(0));
            let s = b.snapshot(1).unwrap();
            assert!(s.events.is_empty());
            assert_eq!(s.dropped, 1);
        }
    }

    /// A collector reading while the owner appends sees a prefix, never a
    /// torn or uninitialised event (also run under Miri's race detector).
    #[test]
    fn concurrent_snapshots_see_a_prefix() {
        let n: u64 = if cfg!(miri) { 60 } else { 20_000 };
        let b = std::sync::Arc::new(ThreadBuffer::new());
        // SAFETY: the owner publishes epoch 1 before the reader starts.
        unsafe { b.push(1, n as usize, ev(0)) };
        let owner = {
            let b = b.clone();
            std::thread::spawn(move || {
                for i in 1..n {
                    // SAFETY: this thread is the owner now; the main thread
                    // only reads.
                    unsafe { b.push(1, n as usize, ev(i)) };
                }
            })
        };
        let mut last = 0;
        loop {
            // SAFETY: nobody resets (the epoch stays 1).
            let s = unsafe { b.snapshot(1) }.unwrap();
            assert!(s.events.len() >= last);
            for (i, e) in s.events.iter().enumerate() {
                assert_eq!(*e, ev(i as u64));
            }
            last = s.events.len();
            if last == n as usize {
                break;
            }
            std::thread::yield_now();
        }
        owner.join().unwrap();
    }
}
