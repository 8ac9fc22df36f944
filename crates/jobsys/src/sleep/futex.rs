//! A 32-bit word a thread can sleep on until another thread changes it.
//!
//! Outside loom this is the OS futex (`atomic-wait`: futex on Linux,
//! WaitOnAddress on Windows, ulock on macOS). Under loom the sleep is a loom
//! `Condvar`, so a lost wake-up shows up as a deadlock in the model.

use crate::sync::{AtomicU32, Ordering};

pub(crate) struct Futex {
    word: AtomicU32,
    #[cfg(loom)]
    lock: loom::sync::Mutex<()>,
    #[cfg(loom)]
    cv: loom::sync::Condvar,
}

impl Futex {
    pub(crate) fn new(v: u32) -> Futex {
        Futex {
            word: AtomicU32::new(v),
            #[cfg(loom)]
            lock: loom::sync::Mutex::new(()),
            #[cfg(loom)]
            cv: loom::sync::Condvar::new(),
        }
    }

    #[inline]
    pub(crate) fn load(&self, o: Ordering) -> u32 {
        self.word.load(o)
    }

    #[inline]
    pub(crate) fn store(&self, v: u32, o: Ordering) {
        self.word.store(v, o)
    }

    /// Sleep while the word equals `expected`. May return spuriously:
    /// callers re-check their condition in a loop.
    pub(crate) fn wait(&self, expected: u32) {
        #[cfg(not(loom))]
        atomic_wait::wait(&self.word, expected);
        #[cfg(loom)]
        {
            let mut g = self.lock.lock().unwrap();
            while self.word.load(Ordering::SeqCst) == expected {
                g = self.cv.wait(g).unwrap();
            }
        }
    }

    /// `wait`, for at most about `timeout` (a timed `complete`). May return
    /// early, spuriously or at the timeout alike: callers re-check their
    /// condition and their deadline in a loop. On Linux one futex wait
    /// with a timeout; elsewhere (no timed wait in `atomic-wait`) a sleep
    /// of at most 500 µs at a time, so a timed wait there notices its
    /// wake that late. Under loom: an untimed `wait` (models use none).
    pub(crate) fn wait_for(&self, expected: u32, timeout: std::time::Duration) {
        #[cfg(all(not(loom), target_os = "linux"))]
        {
            let ts = libc::timespec {
                tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
                tv_nsec: timeout.subsec_nanos() as libc::c_long,
            };
            // SAFETY: FUTEX_WAIT reads the aligned u32 at the word's address
            // (alive: `&self`) and the timespec on our stack; it changes no
            // memory. Its result (woken, timed out, interrupted, or the word
            // already differed) is not needed: the caller re-checks.
            unsafe {
                libc::syscall(
                    libc::SYS_futex,
                    self.word.as_ptr(),
                    libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                    expected,
                    &ts as *const libc::timespec,
                )
            };
        }
        #[cfg(all(not(loom), not(target_os = "linux")))]
        if self.word.load(Ordering::Acquire) == expected {
            std::thread::sleep(timeout.min(std::time::Duration::from_micros(500)));
        }
        #[cfg(loom)]
        {
            let _ = timeout;
            self.wait(expected);
        }
    }

    /// Wake every thread sleeping on the word (callers change the word first).
    pub(crate) fn wake_all(&self) {
        #[cfg(not(loom))]
        atomic_wait::wake_all(&self.word);
        #[cfg(loom)]
        {
            let _g = self.lock.lock().unwrap();
            self.cv.notify_all();
        }
    }

    /// Atomically replace the word.
    #[inline]
    pub(crate) fn swap(&self, v: u32, o: Ordering) -> u32 {
        self.word.swap(v, o)
    }

    /// Atomically replace the word if it holds `current`.
    #[inline]
    pub(crate) fn compare_exchange(&self, current: u32, new: u32) -> Result<u32, u32> {
        self.word
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
    }

    /// Wake one sleeper of the futex at `this`, which may have been freed
    /// since (its owner returned after seeing the change): only the address
    /// is used, and a wake at a reused address is a spurious wake-up, which
    /// every waiter tolerates.
    ///
    /// # Safety
    /// `this` was a valid `Futex` when the caller last changed its word.
    pub(crate) unsafe fn wake_one_raw(this: *const Futex) {
        #[cfg(not(loom))]
        // SAFETY: computing a field address does not read the memory.
        atomic_wait::wake_one(unsafe { std::ptr::addr_of!((*this).word) });
        #[cfg(loom)]
        // SAFETY: under loom the latch outlives the wake (models keep it).
        unsafe {
            (*this).wake_one()
        };
    }

    /// Wake one thread sleeping on the word (callers change the word first).
    pub(crate) fn wake_one(&self) {
        #[cfg(not(loom))]
        atomic_wait::wake_one(&self.word);
        #[cfg(loom)]
        {
            let _g = self.lock.lock().unwrap();
            self.cv.notify_one();
        }
    }
}
