//! `Limiter`: at most n of its jobs run at once, each told its seat.
//!
//! A limited job (`JobBuilder::limit`) is scheduled after a gate
//! (`held.rs`) that opens when the job has a seat, an index in
//! `0..max` no other running job of the limiter holds (to index a fixed
//! buffer: `limiter_slot()`). Until then the job waits as any job with an
//! unfinished dependency does: no worker holds it and nothing spins.
//!
//! The path of one limited job, by what it depends on:
//! - no dependencies, a seat free: the seat is taken when it is scheduled,
//!   and the job is scheduled as usual;
//! - no dependencies, no seat free: a closed gate joins the limiter's
//!   queue, and the job runs after it;
//! - dependencies: a small starter job runs after them and asks for the
//!   seat (taking a free one, else queueing the gate), so that a job does
//!   not sit on a seat while its dependencies run.
//!
//! The seat is given back when the job's closure is gone (it ran, panicked,
//! or was dropped unrun: skipped, cancelled), to the first job waiting in
//! the queue (`High` before `Normal` before `Low`, then first come), whose
//! gate it opens. A loop gives its seat back when the loop has finished.
//!
//! Every seat transition happens under the queue's lock (`Queue`); holds
//! are released after it is unlocked (opening a gate queues a job, which
//! may wake a worker).

use crate::desc::{JobDesc, Priority};
use crate::handle::JobHandle;
use crate::held::{gate, Hold};
use crate::system::JobSystem;
use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// At most `max` of its jobs run at once (`JobBuilder::limit`); each
/// running one holds a seat in `0..max`, read with [`limiter_slot`].
///
/// ```
/// use jobsys::{limiter_slot, JobSystem, Limiter};
/// use std::sync::Mutex;
/// let js = JobSystem::builder().workers(3).build().unwrap();
/// let decoders = Limiter::new(2);
/// // One scratch buffer per seat: never shared by two running jobs.
/// let scratch: std::sync::Arc<Vec<Mutex<Vec<u8>>>> =
///     std::sync::Arc::new((0..decoders.max()).map(|_| Mutex::new(Vec::new())).collect());
/// let jobs: Vec<_> = (0..8)
///     .map(|i| {
///         let scratch = scratch.clone();
///         js.job().limit(&decoders).schedule(move || {
///             let seat = limiter_slot().expect("a limited job has a seat");
///             let mut buf = scratch[seat].try_lock().expect("seats are exclusive");
///             buf.clear();
///             buf.push(i);
///         })
///     })
///     .collect();
/// js.complete(js.combine(&jobs));
/// ```
///
/// A limited job must not wait (`complete`) for a job of the same limiter
/// that has no seat yet when every seat is taken by such waiters: as with
/// any semaphore, that wait never ends.
#[derive(Clone)]
pub struct Limiter {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Limiter")
            .field("max", &self.inner.max)
            .finish()
    }
}

struct Inner {
    max: usize,
    queue: Mutex<Queue>,
}

/// The seats and the jobs waiting for one.
struct Queue {
    /// Seats no job holds.
    free: Vec<usize>,
    /// Gates of jobs waiting for a seat, by priority (`High` first).
    waiting: [VecDeque<Waiter>; 3],
}

struct Waiter {
    seat: Arc<Seat>,
    hold: Hold,
}

/// No seat yet.
const WAITING: usize = usize::MAX;
/// The job's closure is gone before it had a seat: it needs none.
const GONE: usize = usize::MAX - 1;

/// One limited job's seat: `WAITING`, `GONE`, or the index it holds.
/// Written under the queue's lock only; read by the job itself, after its
/// gate opened (or after it was scheduled with the seat taken).
pub(crate) struct Seat(AtomicUsize);

impl Seat {
    /// The index this job holds. Called from the job only, which runs
    /// after the seat was given (its gate opened: the give's Release store
    /// and the gate's finish both order it before this).
    fn index(&self) -> usize {
        let i = self.0.load(Ordering::Acquire);
        debug_assert!(i < GONE, "a limited job runs without a seat");
        i
    }
}

impl Limiter {
    /// A limiter of `max` seats.
    ///
    /// # Panics
    /// If `max` is 0.
    #[track_caller]
    pub fn new(max: usize) -> Limiter {
        assert!(max > 0, "jobsys: Limiter::new(0): a limiter needs a seat");
        Limiter {
            inner: Arc::new(Inner {
                max,
                queue: Mutex::new(Queue {
                    // Popped from the end: seat 0 is handed out first.
                    free: (0..max).rev().collect(),
                    waiting: Default::default(),
                }),
            }),
        }
    }

    /// Its number of seats.
    pub fn max(&self) -> usize {
        self.inner.max
    }

    /// Jobs waiting for a seat now (for tests and stats).
    pub fn waiting(&self) -> usize {
        self.inner.lock().waiting.iter().map(|q| q.len()).sum()
    }

    /// Seats no job holds now.
    pub fn free(&self) -> usize {
        self.inner.lock().free.len()
    }

    /// A seat for a job of priority `prio` after `deps`: the seat, and
    /// what the job must run after besides `deps` (a starter and a gate, a
    /// gate alone, or nothing when a seat was free).
    pub(crate) fn ask(
        &self,
        js: &JobSystem,
        deps: &[JobHandle],
        prio: Priority,
    ) -> (SeatGuard, Before) {
        let seat = Arc::new(Seat(AtomicUsize::new(WAITING)));
        let guard = SeatGuard {
            inner: self.inner.clone(),
            seat: seat.clone(),
        };
        if deps.is_empty() {
            let mut q = self.inner.lock();
            if let Some(i) = q.free.pop() {
                seat.0.store(i, Ordering::Release);
                return (guard, Before::Nothing);
            }
            drop(q);
            let (g, hold) = gate(js, &JobDesc::default());
            q = self.inner.lock();
            // A seat may have come back while the gate was made.
            if let Some(i) = q.free.pop() {
                seat.0.store(i, Ordering::Release);
                drop(q);
                hold.release();
            } else {
                q.waiting[slot_of(prio)].push_back(Waiter { seat, hold });
            }
            return (guard, Before::Gate([g]));
        }
        let (g, hold) = gate(js, &JobDesc::default());
        let starter = Starter {
            inner: self.inner.clone(),
            seat: Some(seat),
            hold: Some(hold),
            prio,
        };
        let desc = JobDesc::default().with_priority(Priority::High);
        let s = js.job().desc(desc).after(deps).schedule(move || {
            let mut starter = starter;
            starter.start();
        });
        (guard, Before::Starter([s, g]))
    }
}

/// What a limited job runs after, besides its own dependencies: its
/// starter (after them) and its gate, its gate alone, or nothing.
pub(crate) enum Before {
    Nothing,
    Gate([JobHandle; 1]),
    Starter([JobHandle; 2]),
}

impl Before {
    /// The handles, none when the job had a seat at once.
    pub(crate) fn as_slice(&self) -> &[JobHandle] {
        match self {
            Before::Nothing => &[],
            Before::Gate(g) => g,
            Before::Starter(s) => s,
        }
    }
}

/// `Priority` as an index of `Queue::waiting`, `High` first.
fn slot_of(p: Priority) -> usize {
    match p {
        Priority::High => 0,
        Priority::Normal => 1,
        Priority::Low => 2,
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // No user code runs under the lock: a poisoned lock is one a
        // panic in this module left, and its state is still consistent
        // (each transition is one store or one push/pop).
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Seat `i` is free again: to the first job waiting that still wants
    /// one, or to the free list. The holds to release (after the lock).
    fn give_back(&self, q: &mut Queue, i: usize, open: &mut Vec<Hold>) {
        // A queued seat is always WAITING: a job whose closure is gone
        // leaves the queue (`SeatGuard::drop`, under this lock).
        if let Some(w) = q.waiting.iter_mut().find_map(|list| list.pop_front()) {
            debug_assert!(w.seat.0.load(Ordering::Relaxed) == WAITING);
            // Release: pairs with the Acquire in `Seat::index`.
            w.seat.0.store(i, Ordering::Release);
            open.push(w.hold);
            return;
        }
        q.free.push(i);
    }
}

/// The starter of a limited job with dependencies: after them, asks for
/// the seat. Dropped unrun (a dependency failed, so the job is skipped
/// too): opens the gate, so that the gate does not wait for ever.
struct Starter {
    inner: Arc<Inner>,
    seat: Option<Arc<Seat>>,
    hold: Option<Hold>,
    prio: Priority,
}

impl Starter {
    fn start(&mut self) {
        let (Some(seat), Some(hold)) = (self.seat.take(), self.hold.take()) else {
            return;
        };
        let mut q = self.inner.lock();
        let st = seat.0.load(Ordering::Relaxed);
        if st == GONE {
            // The job was cancelled meanwhile: it needs no seat.
            drop(q);
            hold.release();
        } else if let Some(i) = q.free.pop() {
            seat.0.store(i, Ordering::Release);
            drop(q);
            hold.release();
        } else {
            q.waiting[slot_of(self.prio)].push_back(Waiter { seat, hold });
        }
    }
}

impl Drop for Starter {
    fn drop(&mut self) {
        // Unrun: the hold is still here; dropping it opens the gate.
        self.hold.take();
    }
}

/// Gives the job's seat back when dropped (its closure is gone: ran,
/// panicked, or dropped unrun); a job that had none yet leaves the queue.
pub(crate) struct SeatGuard {
    inner: Arc<Inner>,
    seat: Arc<Seat>,
}

impl SeatGuard {
    /// The job's seat, for the pieces of a loop (the guard itself stays
    /// with the job that gives the seat back).
    pub(crate) fn seat(&self) -> SeatRef {
        SeatRef(self.seat.clone())
    }

    /// Run `f` with this job's seat as `limiter_slot()`.
    pub(crate) fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        with_seat(&self.seat, f)
    }
}

/// A limited loop's seat, shared by its pieces.
pub(crate) struct SeatRef(Arc<Seat>);

impl SeatRef {
    /// Run `f` with this seat as `limiter_slot()`.
    pub(crate) fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        with_seat(&self.0, f)
    }
}

/// Run `f` with `seat`'s index as `limiter_slot()`, restoring the outer
/// one after (a job that waits may run another limited job inside).
fn with_seat<R>(seat: &Seat, f: impl FnOnce() -> R) -> R {
    /// Puts the outer seat back, on return and on unwind.
    struct Restore(usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = SLOT.try_with(|s| s.set(self.0));
        }
    }
    let outer = SLOT.with(|s| s.replace(seat.index()));
    let _restore = Restore(outer);
    f()
}

impl Drop for SeatGuard {
    fn drop(&mut self) {
        let mut open = Vec::new();
        let mut q = self.inner.lock();
        let st = self.seat.0.load(Ordering::Relaxed);
        if st == WAITING {
            self.seat.0.store(GONE, Ordering::Relaxed);
            // Queued already (else its starter sees GONE): leave the queue
            // and open the gate, so a cancelled job ends now.
            for list in q.waiting.iter_mut() {
                if let Some(at) = list.iter().position(|w| Arc::ptr_eq(&w.seat, &self.seat)) {
                    if let Some(w) = list.remove(at) {
                        open.push(w.hold);
                    }
                    break;
                }
            }
        } else if st < GONE {
            self.seat.0.store(GONE, Ordering::Relaxed);
            self.inner.give_back(&mut q, st, &mut open);
        }
        drop(q);
        // Opening a gate queues its job (and may wake a worker): after
        // the lock.
        drop(open);
    }
}

thread_local! {
    /// The seat of the limited job this thread runs (`usize::MAX`: none).
    static SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// The seat of the limited job running on this thread, in
/// `0..limiter.max()`; `None` outside a limited job. Two jobs of one
/// limiter that run at the same time never have the same seat.
pub fn limiter_slot() -> Option<usize> {
    SLOT.try_with(|s| s.get()).ok().filter(|&i| i != usize::MAX)
}
