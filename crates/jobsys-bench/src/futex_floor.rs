//! The helper threads of the `futex-floor` rows (W4 cold, W5): threads
//! blocked on one futex word that run a closure once each time the word
//! changes. The least machinery a design that sleeps its threads between
//! bursts can have: one store and one futex wake to start a helper.

use crate::error::Result;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

#[derive(Default)]
struct Word {
    /// The futex word: bumped once per wake.
    generation: AtomicU32,
    /// Set before the last bump: the helpers exit.
    stop: AtomicBool,
}

/// `n` helpers blocked on one futex word. Stopped and joined on drop.
pub struct Helpers {
    word: Arc<Word>,
    threads: Vec<JoinHandle<()>>,
}

impl Helpers {
    /// Start `n` helpers named `name-i`; each runs `body` once per bump of
    /// the word that wakes it (a helper that missed bumps runs it once).
    pub fn start(name: &str, n: usize, body: impl Fn() + Send + Sync + 'static) -> Result<Helpers> {
        let body = Arc::new(body);
        // Built first, so that a failed spawn drops it: the helpers started
        // so far are stopped and joined.
        let mut helpers = Helpers {
            word: Arc::new(Word::default()),
            threads: Vec::with_capacity(n),
        };
        for i in 0..n {
            let (w, body) = (helpers.word.clone(), body.clone());
            let t = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn(move || {
                    let mut seen = 0;
                    loop {
                        let g = w.generation.load(Ordering::Acquire);
                        if g == seen {
                            atomic_wait::wait(&w.generation, seen);
                            continue;
                        }
                        if w.stop.load(Ordering::Acquire) {
                            break;
                        }
                        seen = g;
                        body();
                    }
                })?;
            helpers.threads.push(t);
        }
        Ok(helpers)
    }

    /// Bump the word and wake one helper (what the rows measure). Release:
    /// what the caller wrote before is visible to the woken helper's body.
    #[inline]
    pub fn wake_one(&self) {
        self.word.generation.fetch_add(1, Ordering::Release);
        atomic_wait::wake_one(&self.word.generation);
    }

    /// Bump the word and wake every helper (W5's `futex-floor-all` row:
    /// the least a design pays that runs a burst on all its threads).
    #[inline]
    pub fn wake_all(&self) {
        self.word.generation.fetch_add(1, Ordering::Release);
        atomic_wait::wake_all(&self.word.generation);
    }
}

impl Drop for Helpers {
    fn drop(&mut self) {
        self.word.stop.store(true, Ordering::Release);
        self.word.generation.fetch_add(1, Ordering::Release);
        atomic_wait::wake_all(&self.word.generation);
        for t in self.threads.drain(..) {
            // A panic in a helper has already been reported.
            let _ = t.join();
        }
    }
}
