//! The list of threads parked in `complete` (`Waiters`, a field of
//! `Registry`): who waits on which job, the check for a cycle of waits
//! across threads at registration, and the wakes (`wait/mod.rs` parks and
//! helps; this leaf names no registry).

use crate::context::Context;
use crate::error::JobError;
use crate::slot::Slot;
use crate::sync::{fence, lock, AtomicU32, Ordering};

/// Threads parked in `complete`, with the slot each waits on.
pub(crate) struct Waiters {
    parked: crate::sync::Mutex<Vec<Parked>>,
    count: AtomicU32,
}

/// One parked waiter: its context, the job it waits on, and the jobs it is
/// inside of (a copy of its `running` stack, taken when it parked), so a
/// thread about to park can see a cycle of waits across threads.
struct Parked {
    ctx: *const Context,
    target: (*const Slot, u32),
    running: Vec<(*const Slot, u32)>,
    /// A scope's wait: it never gives up (see `register`).
    must_finish: bool,
}

// SAFETY: the raw pointers name contexts and slots of the registry that owns
// this list; they are only dereferenced while that registry is alive.
unsafe impl Sync for Waiters {}
// SAFETY: as above.
unsafe impl Send for Waiters {}

/// `park` word values: 0 while parked, then
/// - `WOKEN`: the target finished or needed work became runnable: look again;
/// - `BROKEN`: a scope's wait closed a cycle through this thread's wait,
///   which must end (`register`): it returns `WaitOnSelf`.
pub(crate) const WOKEN: u32 = 1;
pub(crate) const BROKEN: u32 = 2;

impl Waiters {
    /// `threads`: the most contexts the registry can have. The list holds
    /// at most one entry per context, so it never grows after this: a
    /// park allocates nothing (tests/alloc_free.rs).
    pub(crate) fn new(threads: usize) -> Waiters {
        Waiters {
            parked: crate::sync::Mutex::new(Vec::with_capacity(threads)),
            count: AtomicU32::new(0),
        }
    }

    /// Register `ctx` as parked on `target` — unless that closes a cycle of
    /// waits: `target` is run by a parked thread that waits on a job run by
    /// another parked thread … that waits on a job `ctx` is inside of. Then
    /// nobody in the cycle can ever finish, and one wait in it must end:
    /// - normally the caller's: returns `Err(WaitOnSelf)` and registers
    ///   nothing;
    /// - if the caller `must_finish` (a scope waiting on a job that borrows
    ///   its stack: it may not return while that job lives), another
    ///   member's: a parked thread of the cycle that may give up is woken
    ///   with `BROKEN` (its wait returns `WaitOnSelf`) and the caller
    ///   registers and waits on. If every other member must finish too,
    ///   nothing can end the cycle without freeing borrowed memory under a
    ///   running job: the process aborts with a message.
    ///
    /// Registration and check happen under one lock, so of two threads
    /// closing a cycle the second to register sees it.
    ///
    /// `ctx` is the caller's own context (its `running` is copied into the
    /// list, in a buffer reused from park to park: `take_running_copy`).
    pub(crate) fn register(
        &self,
        ctx: &Context,
        target: (*const Slot, u32),
        must_finish: bool,
    ) -> Result<(), JobError> {
        ctx.park.store(0, Ordering::Relaxed);
        // Copied before the lock, and moved into the list under it: other
        // threads read the copy only under the lock; the thread's own
        // `running` changes if it runs a job before it sleeps.
        let running = ctx.take_running_copy();
        let mut p = lock(&self.parked);
        if !running.is_empty() {
            let mut job = target;
            // The parked thread followed last that may give up its wait
            // (an index into `p`).
            let mut breakable = None;
            // Each step follows one parked thread; a chain longer than the
            // list has looped without reaching us.
            for _ in 0..p.len() {
                let Some(i) = p.iter().position(|w| w.running.contains(&job)) else {
                    break;
                };
                if !p[i].must_finish {
                    breakable = Some(i);
                }
                job = p[i].target;
                if running.contains(&job) {
                    if !must_finish {
                        drop(p);
                        ctx.put_running_copy(running);
                        return Err(JobError::WaitOnSelf);
                    }
                    // The last thread followed waits on our job: it is the
                    // most direct one to tell.
                    let Some(v) = breakable else {
                        eprintln!(
                            "jobsys: scopes wait on each other in a cycle (each waits on a job \
                             that borrows its stack); none can return safely. Aborting."
                        );
                        std::process::abort();
                    };
                    // SAFETY: parked contexts belong to the live registry.
                    let c = unsafe { &*p[v].ctx };
                    c.park.store(BROKEN, Ordering::Release);
                    c.park.wake_one();
                    break;
                }
            }
        }
        p.push(Parked {
            ctx,
            target,
            running,
            must_finish,
        });
        // SeqCst: pairs with the SeqCst loads of `count` in the wake paths
        // (each after the waker's state change on the slot).
        self.count.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// Remove `ctx` (the caller's own context) from the list; its copy of
    /// `running` goes back to the context for the next park.
    pub(crate) fn unregister(&self, ctx: &Context) {
        let mut p = lock(&self.parked);
        if let Some(i) = p.iter().position(|w| std::ptr::eq(w.ctx, ctx)) {
            let w = p.swap_remove(i);
            self.count.fetch_sub(1, Ordering::SeqCst);
            drop(p);
            ctx.put_running_copy(w.running);
        }
    }

    /// Threads parked in `complete` now (tests wait for a waiter to sleep).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn parked(&self) -> u32 {
        self.count.load(Ordering::SeqCst)
    }

    /// `slot` finished while pinned by someone: wake its parked waiters.
    /// `on_wake(index)` runs for each waiter this wakes (for the tracer's
    /// arrows), before the store of `WOKEN` (see `wake_waiter`).
    pub(crate) fn wake_target(&self, slot: &Slot, mut on_wake: impl FnMut(u32)) {
        if self.count.load(Ordering::SeqCst) == 0 {
            return;
        }
        let p = lock(&self.parked);
        for w in p.iter() {
            if std::ptr::eq(w.target.0, slot) {
                // SAFETY: parked contexts belong to the live registry.
                let c = unsafe { &*w.ctx };
                wake_waiter(c, &mut on_wake);
            }
        }
    }

    /// A job was pinned to `ctx`'s thread: wake it if it is parked here.
    /// The caller's push is ordered before the count load by a SeqCst
    /// fence, pairing with the one in `park_on` after registering.
    pub(crate) fn wake_ctx(&self, ctx: &Context, mut on_wake: impl FnMut(u32)) {
        fence(Ordering::SeqCst);
        if self.count.load(Ordering::SeqCst) == 0 {
            return;
        }
        let p = lock(&self.parked);
        if p.iter().any(|w| std::ptr::eq(w.ctx, ctx)) {
            wake_waiter(ctx, &mut on_wake);
        }
    }

    /// A needed job became runnable where nobody may run it soon: wake all
    /// parked waiters so they look again.
    /// `on_wake` as in `wake_target`.
    pub(crate) fn wake_all_parked(&self, mut on_wake: impl FnMut(u32)) {
        if self.count.load(Ordering::SeqCst) == 0 {
            return;
        }
        let p = lock(&self.parked);
        for w in p.iter() {
            // SAFETY: as in `wake_target`.
            let c = unsafe { &*w.ctx };
            wake_waiter(c, &mut on_wake);
        }
    }
}

/// Wake the registered waiter `c` (the caller holds the `parked` lock).
///
/// `on_wake` (the tracer's `wake_issued`) runs only when this call is what
/// ends the wait (the word is still 0), and *before* the store of `WOKEN`:
/// the waiter stamps its `sleep_end` after its Acquire load sees that
/// store, so the wake's arrow never ends before it starts, and a waiter
/// already woken (or `BROKEN`) gets no second arrow. The load cannot be
/// overtaken: other threads change a registered waiter's word only under
/// the `parked` lock, which we hold.
fn wake_waiter(c: &Context, on_wake: &mut impl FnMut(u32)) {
    if c.park.load(Ordering::Relaxed) == 0 {
        on_wake(c.index);
    }
    // A BROKEN word stays BROKEN: that wait must still end.
    let _ = c.park.compare_exchange(0, WOKEN);
    c.park.wake_one();
}
