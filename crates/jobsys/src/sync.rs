//! Atomics and locks used by the parts of the crate that loom models.
//!
//! Under `--cfg loom` these are loom's instrumented types, so the sleep/wake
//! protocol (`sleep/`), the remote-free stack, the slot state word
//! (`store.rs`) and the work-stealing deque (`deque.rs`) are checked by the loom models in those modules. Everything
//! else uses `std` directly.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicIsize, AtomicPtr, AtomicU32, AtomicU64};
#[cfg(loom)]
pub(crate) use loom::sync::Mutex;
pub(crate) use std::sync::atomic::Ordering;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicIsize, AtomicPtr, AtomicU32, AtomicU64};
#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;

/// Lock a mutex, ignoring poisoning: the data behind our locks (lists of
/// indices) stays consistent even if a holder panicked, because every
/// critical section is a single push/pop/retain.
pub(crate) fn lock<T>(m: &Mutex<T>) -> impl std::ops::DerefMut<Target = T> + '_ {
    #[cfg(loom)]
    {
        m.lock().unwrap()
    }
    #[cfg(not(loom))]
    {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }
}
