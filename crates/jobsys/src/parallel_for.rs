//! `parallel_for`: one job whose pieces many threads run at once.
//!
//! The payload starts with a `Header` (the piece dispenser) followed by the
//! closure (inline when it fits, boxed when not). The job stays `RUNNABLE`
//! while pieces remain; a thread that takes the job's entry pins the slot,
//! grabs pieces one at a time (a loop of up to 64 pieces per thread, as
//! `Batch::Auto` makes: a descheduled thread then holds back one piece at
//! most) or in guided chunks (half of what remains divided by the
//! participants, so contention shrinks as the loop nears its end) and,
//! while pieces remain, keeps one entry of the loop on its own deque (a new
//! one only once the last was taken), so idle workers can join. Whoever completes the last piece finishes the job. Running and
//! cancelling the pieces are methods of `ThisThread` (`registry.rs`).

use crate::error::Failure;
use crate::job::Entry;
use crate::registry::Registry;
use crate::registry::ThisThread;
use crate::slot::{Ending, JobVTable, Slot, PAYLOAD_BYTES};

use std::mem::{align_of, size_of};
use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// How a parallel_for's range is cut into pieces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Batch {
    /// Let the system choose (about 16 pieces per thread).
    #[default]
    Auto,
    /// Pieces of exactly this many indices (the last may be shorter).
    /// Must be at least 1. (A range of more than `usize::MAX / 4` pieces
    /// gets longer ones: a loop has at most `usize::MAX / 4` pieces.)
    Fixed(usize),
}

impl Batch {
    #[track_caller]
    pub(crate) fn piece_len(self, len: usize, threads: usize) -> usize {
        match self {
            Batch::Fixed(0) => {
                panic!("jobsys: Batch::Fixed(0): a batch must hold at least one index")
            }
            Batch::Fixed(n) => n,
            Batch::Auto => len.div_ceil(16 * threads.max(1)).max(1),
        }
    }
}

#[repr(C)]
struct Header {
    /// Next piece to hand out (may overshoot `pieces`).
    next: AtomicUsize,
    /// Pieces finished (run or abandoned after a panic).
    done: AtomicUsize,
    pieces: usize,
    start: usize,
    end: usize,
    batch: usize,
}
/// What `next` is swapped to when a loop stops handing out pieces. Above
/// any real position: a loop has at most `MAX_PIECES` pieces, and `next`
/// overshoots `pieces` by at most one chunk per thread.
const ABANDONED: usize = usize::MAX / 2;

/// Pieces per thread above which runners claim guided chunks rather than
/// one piece at a time (`run_pieces`).
const GUIDED_ABOVE: usize = 64;
/// Most pieces of one loop: a longer range gets longer pieces. Before this
/// cap, `0..usize::MAX` in pieces of 1 put `pieces` above `ABANDONED`, and
/// a loop with two failing pieces counted the rest done twice (an overflow
/// panic inside jobsys in debug builds).
const MAX_PIECES: usize = usize::MAX / 4;
const CLOSURE_ROOM: usize = PAYLOAD_BYTES - size_of::<Header>();
const _: () = assert!(size_of::<Header>() % 16 == 0);

/// The loop's header, at the start of its slot's payload.
///
/// # Safety
/// `slot` holds a parallel_for (its payload starts with a `Header`
/// written by `write_pfor`) and the caller holds a pin on it, so the
/// header stays initialised for the returned borrow.
unsafe fn header(slot: &Slot) -> &Header {
    // SAFETY: the payload of a PFOR slot starts with an initialised Header;
    // the caller holds a pin.
    unsafe { &*slot.payload_ptr().cast::<Header>() }
}

trait RangeVTable {
    const VTABLE: JobVTable;
}
struct PerIndex<F, const BOXED: bool>(F);
struct Chunked<F, const BOXED: bool>(F);

/// The loop's closure from `p`, the payload past the header.
///
/// # Safety
/// `p` points just past the `Header` of a payload where `write_pfor`
/// stored the closure (`F` inline, or `Box<F>` when `BOXED`), still
/// initialised; the pointer returned is valid while it stays so.
unsafe fn closure<F, const BOXED: bool>(p: *const u8) -> *const F {
    if BOXED {
        // SAFETY: `p` holds a `Box<F>` written by `write_pfor`.
        unsafe { &**p.cast::<Box<F>>() }
    } else {
        p.cast::<F>()
    }
}
/// The vtable's `drop`: `p` is the payload (header first, then the closure).
///
/// # Safety
/// `p` is the payload of a parallel_for written by `write_pfor` with the
/// same `F` and `BOXED`, whose closure is still initialised, and this is
/// its only drop: no piece runs now or later.
unsafe fn drop_closure<F, const BOXED: bool>(p: *mut u8) {
    // SAFETY: the payload holds the closure written by `write_pfor` after
    // the header; the caller drops it once (job finished, or cancelled).
    unsafe {
        let p = p.add(size_of::<Header>());
        if BOXED {
            ptr::drop_in_place(p.cast::<Box<F>>())
        } else {
            ptr::drop_in_place(p.cast::<F>())
        }
    }
}
/// The loop hands out no more pieces (cancelled, or a piece failed): its
/// dispenser `next` was swapped to `ABANDONED`, which it passes only that
/// way (a loop's own overshoot stays below). The runners look between two
/// pieces of the chunk they grabbed, so none starts after `cancel` returns
/// (before, a thread went on with up to a quarter of the loop).
#[inline]
fn stopped(next: &AtomicUsize) -> bool {
    next.load(Ordering::Relaxed) >= ABANDONED
}

/// Calls `f(i)` for every index of pieces `[a, b)`, none after `stopped`.
///
/// # Safety
/// `p` points to the loop's initialised closure past the header (as for
/// `closure`) and is only shared (`Fn`) for the call; indices `[a, b)`,
/// whole pieces of `batch` indices (the last may be shorter), were handed
/// to the caller alone; `next` is the same loop's dispenser.
unsafe fn run_per_index<F: Fn(usize), const BOXED: bool>(
    p: *const u8,
    a: usize,
    b: usize,
    batch: usize,
    next: &AtomicUsize,
) {
    // SAFETY: initialised closure, shared (`Fn`) access only.
    let f = unsafe { &*closure::<F, BOXED>(p) };
    if batch == 1 {
        // A piece per index: one load between two calls (W1 pfor-empty).
        for i in a..b {
            f(i);
            if stopped(next) {
                return;
            }
        }
        return;
    }
    let mut lo = a;
    loop {
        let hi = lo + batch.min(b - lo);
        for i in lo..hi {
            f(i);
        }
        lo = hi;
        if lo >= b || stopped(next) {
            return;
        }
    }
}
/// One call per piece, so `Batch::Fixed(n)` means calls of exactly `n`
/// indices (the last may be shorter) even when a runner grabbed several;
/// none after `stopped`.
///
/// # Safety
/// As for `run_per_index`.
unsafe fn run_chunked<F: Fn(Range<usize>), const BOXED: bool>(
    p: *const u8,
    a: usize,
    b: usize,
    batch: usize,
    next: &AtomicUsize,
) {
    // SAFETY: initialised closure, shared (`Fn`) access only.
    let f = unsafe { &*closure::<F, BOXED>(p) };
    let mut lo = a;
    loop {
        let hi = lo + batch.min(b - lo);
        f(lo..hi);
        lo = hi;
        if lo >= b || stopped(next) {
            return;
        }
    }
}
/// The vtable's `run` of a parallel_for: never called (it panics).
///
/// # Safety
/// None: it reads nothing.
unsafe fn unreachable_run(_: *mut u8) {
    unreachable!("a parallel_for is never claimed as a single job")
}

impl<F: Fn(usize), const BOXED: bool> RangeVTable for PerIndex<F, BOXED> {
    const VTABLE: JobVTable = JobVTable {
        type_name: std::any::type_name::<F>,
        run: unreachable_run,
        drop: drop_closure::<F, BOXED>,
        run_range: run_per_index::<F, BOXED>,
        // The loop's header and closure fill the payload.
        edge_room: false,
    };
}
impl<F: Fn(Range<usize>), const BOXED: bool> RangeVTable for Chunked<F, BOXED> {
    const VTABLE: JobVTable = JobVTable {
        type_name: std::any::type_name::<F>,
        run: unreachable_run,
        drop: drop_closure::<F, BOXED>,
        run_range: run_chunked::<F, BOXED>,
        edge_room: false,
    };
}

/// Write header and closure; `V` picks per-index or chunked calls.
///
/// # Safety
/// As `job::write_single`: fresh slot, and borrows in `F` outlive the job.
pub(crate) unsafe fn write_pfor<F: Send + Sync>(
    slot: &Slot,
    range: Range<usize>,
    batch: usize,
    f: F,
    inline_vt: &'static JobVTable,
    boxed_vt: &'static JobVTable,
) {
    let len = range.end - range.start;
    let batch = batch.max(len.div_ceil(MAX_PIECES));
    let p = slot.payload_ptr();
    // SAFETY: the payload is 64 bytes, 16-aligned, unused; the header takes
    // the first 48, the closure (or its box) the rest.
    unsafe {
        ptr::write(
            p.cast::<Header>(),
            Header {
                next: AtomicUsize::new(0),
                done: AtomicUsize::new(0),
                pieces: len.div_ceil(batch),
                start: range.start,
                end: range.end,
                batch,
            },
        );
        let c = p.add(size_of::<Header>());
        if size_of::<F>() <= CLOSURE_ROOM && align_of::<F>() <= 16 {
            ptr::write(c.cast::<F>(), f);
            slot.set_vtable(inline_vt);
        } else {
            ptr::write(c.cast::<Box<F>>(), Box::new(f));
            slot.set_vtable(boxed_vt);
        }
    }
}

pub(crate) fn vtables_per_index<F: Fn(usize)>() -> (&'static JobVTable, &'static JobVTable) {
    (
        &<PerIndex<F, false> as RangeVTable>::VTABLE,
        &<PerIndex<F, true> as RangeVTable>::VTABLE,
    )
}
pub(crate) fn vtables_chunked<F: Fn(Range<usize>)>() -> (&'static JobVTable, &'static JobVTable) {
    (
        &<Chunked<F, false> as RangeVTable>::VTABLE,
        &<Chunked<F, true> as RangeVTable>::VTABLE,
    )
}

impl ThisThread<'_> {
    /// Queue the rest of a loop whose pieces this thread started, so that
    /// other threads join it. A loop some waiter needs (`WAITED`) goes on
    /// the `needed` deque (`queue_runnable`, as `make_runnable` does), and, if
    /// `wake`, parked waiters are woken: a waiter helps only with needed
    /// work, which it finds on `needed` deques, and while it sleeps only
    /// `finish` or a release wakes it, so the rest of a long needed loop
    /// started by a worker used to run on that worker alone while the main
    /// thread slept (W3, D = 5 us, 1 worker: docs/design-notes.md,
    /// "`complete` helps only with work the handle needs").
    ///
    /// After the first chunk (`wake` false) the rest is offered again only
    /// when the last offer is gone (taken, or covered by a push): while it
    /// is still the newest entry of its deque, another would be a twin
    /// that a thief finds stale and `push_needed` pops again (a loop run
    /// on one thread pushed an entry per piece, trimmed as many and
    /// checked for a sleeper to wake each time). A thread that takes the offer offers the rest from its own
    /// deque in turn, and this thread runs whatever nobody takes.
    fn offer_rest(self, slot: &Slot, gen: u32, wake: bool) {
        let e = Entry {
            slot: NonNull::from(slot),
            gen,
        };
        // A fresh load: a waiter's walk may have marked the loop after our
        // pin. A mark that lands after this load is seen by that walk
        // itself, which offers the loop while it is RUNNABLE.
        let waited = slot.state().is_waited();
        if !wake && self.ctx.is_newest(e, slot.prio(), waited) {
            return;
        }
        self.queue_runnable(e, slot.prio(), waited);
        if waited && wake {
            self.wake_parked_waiters();
        }
    }

    /// Run pieces of the parallel_for in `slot` until none are left to
    /// grab. Returns whether any piece ran.
    pub(crate) fn run_pieces(self, slot: &Slot, gen: u32, on_claim: &mut dyn FnMut()) -> bool {
        let Some(st) = slot.pin(gen) else {
            return false;
        };
        let mut traced = None;
        if !st.is_runnable() {
            self.unpin(slot);
            return false;
        }
        // SAFETY: pinned PFOR slot.
        let h = unsafe { header(slot) };
        let vt = slot.vtable();
        // SAFETY: the closure follows the header in the payload.
        let closure = unsafe { slot.payload_ptr().add(size_of::<Header>()) };
        let threads = self.reg.num_workers() + 1;
        let mut ran = false;
        loop {
            let cur = h.next.load(Ordering::Relaxed);
            if cur >= h.pieces {
                break;
            }
            if st.is_cancelled() || slot.has_failure() {
                // A piece panicked, a dependency failed before any piece
                // ran (POISONED), or the job was cancelled before it became
                // runnable (its closure is gone): hand out nothing more,
                // count the rest done.
                let prev = h.next.swap(ABANDONED, Ordering::AcqRel);
                if prev < h.pieces {
                    let if_failed = if prev == 0 {
                        Ending::POISONED
                    } else {
                        Ending::FAILED
                    };
                    let n = h.pieces - prev;
                    if h.done.fetch_add(n, Ordering::AcqRel) + n == h.pieces {
                        // End before finish (see `run_claimed`).
                        if let Some(name) = traced {
                            let id = Registry::job_id(slot, gen);
                            crate::trace::job_end(self.reg.site(self.ctx), id, name);
                        }
                        return self.finish_pieces(slot, gen, st.is_cancelled(), if_failed);
                    }
                }
                break;
            }
            // One piece at a time while the loop has few pieces per thread
            // (`Batch::Auto` makes 16): a thread that is descheduled (more
            // threads than cores) then holds at most one piece, which is
            // what the others wait for at the end. Guided chunks (half of
            // what remains over the participants) only for many small
            // pieces, where one claim per piece would contend.
            let take = if h.pieces <= GUIDED_ABOVE * threads {
                1
            } else {
                ((h.pieces - cur) / (2 * threads)).max(1)
            };
            let first = h.next.fetch_add(take, Ordering::Relaxed);
            if first >= h.pieces {
                break;
            }
            let last = first.saturating_add(take).min(h.pieces);
            // Parked waiters are woken for this call's first chunk only: a
            // waiter that needs the loop then joins it, and one that does
            // not is not woken again for every chunk.
            let wake = !ran;
            if !ran {
                ran = true;
                on_claim();
                traced = crate::trace::job_begin_slot(
                    self.reg.site(self.ctx),
                    slot as *const Slot as usize,
                    gen,
                    || crate::lifecycle::job_name(slot),
                );
            }
            if last < h.pieces {
                // More to hand out: let idle workers join.
                self.offer_rest(slot, gen, wake);
            }
            // No overflow even for ranges ending at usize::MAX: first piece
            // starts inside the range, and the end is capped by its length.
            let len = h.end - h.start;
            let lo = h.start + first * h.batch;
            let hi = h.start + last.saturating_mul(h.batch).min(len);
            self.ctx.running_push(slot, gen);
            let outer = crate::running::CurrentJob::enter(slot, gen);
            // SAFETY: pieces [first, last) were handed to us alone; the
            // closure is initialised and only shared (`Fn`) while RUNNABLE.
            let r = catch_unwind(AssertUnwindSafe(|| unsafe {
                (vt.run_range)(closure, lo, hi, h.batch, &h.next)
            }));
            drop(outer);
            self.ctx.running_pop(slot, gen);
            let mut finished_pieces = last - first;
            if let Err(p) = r {
                slot.set_failure(Arc::new(Failure::from_panic(
                    p,
                    crate::running::failed_name(slot),
                )));
                // Abandon what nobody took yet; count it as done.
                let prev = h.next.swap(ABANDONED, Ordering::AcqRel);
                finished_pieces += h.pieces.saturating_sub(prev);
            }
            let done = h.done.fetch_add(finished_pieces, Ordering::AcqRel) + finished_pieces;
            if done == h.pieces {
                // End before finish (see `run_claimed`).
                if let Some(name) = traced {
                    crate::trace::job_end(
                        self.reg.site(self.ctx),
                        Registry::job_id(slot, gen),
                        name,
                    );
                }
                return self.finish_pieces(slot, gen, st.is_cancelled(), Ending::FAILED);
            }
        }
        if let Some(name) = traced {
            crate::trace::job_end(self.reg.site(self.ctx), Registry::job_id(slot, gen), name);
        }
        self.unpin(slot);
        ran
    }

    /// `cancel` of a loop that may have started (`STOP` is set and the
    /// caller holds the cancel's pin, which this drops): hand out no more
    /// pieces, count the rest done, and finish the loop here if no piece
    /// is running. Returns whether no piece had been handed out.
    pub(crate) fn cancel_pieces(self, slot: &Slot, gen: u32) -> bool {
        // SAFETY: pinned PFOR slot.
        let h = unsafe { header(slot) };
        let prev = h.next.swap(ABANDONED, Ordering::AcqRel);
        if prev < h.pieces {
            let n = h.pieces - prev;
            if h.done.fetch_add(n, Ordering::AcqRel) + n == h.pieces {
                // No piece runs: the closure is ours to drop (STOP, unlike
                // CANCELLED, leaves it in place).
                self.finish_pieces(slot, gen, false, Ending::FAILED);
                return prev == 0;
            }
        }
        self.unpin(slot);
        prev == 0
    }

    /// The last piece is done: drop the closure and finish the job. The
    /// caller's pin is dropped by `finish`. `closure_dropped`: the state
    /// the caller pinned was `CANCELLED` (the closure was dropped already;
    /// a loop's cancel after it started, `STOP`, leaves it in place).
    /// `if_failed`: how the job ends if a failure is recorded by then
    /// (`Ending::POISONED` when no piece ran, else `Ending::FAILED`).
    ///
    /// The closure is dropped as part of the job: the slot is on this
    /// thread's `running` stack meanwhile, so a `Drop` that waits on the
    /// job's own handle gets `WaitOnSelf` instead of parking forever, and a
    /// panic in that `Drop` fails the job like a panic in a piece.
    fn finish_pieces(
        self,
        slot: &Slot,
        gen: u32,
        closure_dropped: bool,
        if_failed: Ending,
    ) -> bool {
        if !closure_dropped {
            // SAFETY: every piece is done or abandoned, so no thread uses the
            // closure any more; it is dropped exactly once, here.
            if let Err(p) = unsafe { crate::running::drop_as_job(self.ctx, slot, gen) } {
                slot.set_failure(Arc::new(Failure::from_panic(
                    p,
                    crate::running::failed_name(slot),
                )));
            }
        }
        let end = if slot.has_failure() {
            if_failed
        } else {
            Ending::SUCCEEDED
        };
        self.finish(slot, gen, end);
        true
    }
}

#[cfg(all(test, not(loom), not(miri)))]
mod tests {
    use crate::{Batch, JobSystem};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::thread;
    use std::time::{Duration, Instant};

    // The main thread sleeps in `complete(x)`; x needs a loop whose
    // dependency a worker runs. When that dependency finishes, the worker
    // (at its top-level loop, so it wakes nobody for the loop it will run
    // itself) starts the loop: its offer of the rest must wake the sleeping
    // waiter, which then runs pieces too. Before `offer_rest`, the waiter
    // slept until the worker had run every piece (the worker's pieces here
    // hold until a piece ran on the main thread, up to 5 s, then the
    // assertion fails).
    #[test]
    fn a_sleeping_waiter_joins_a_needed_loop_that_a_worker_started() {
        let js = JobSystem::builder()
            .workers(1)
            .wait_spin(Duration::ZERO)
            .build()
            .unwrap();
        let main = thread::current().id();
        let (started, gate) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (s, g) = (started.clone(), gate.clone());
        let z = js.schedule(move || {
            s.store(true, Ordering::Release);
            while !g.load(Ordering::Acquire) {
                thread::yield_now();
            }
        });
        // z must run on the worker: a waiter would run it itself.
        while !started.load(Ordering::Acquire) {
            thread::yield_now();
        }
        let on_main = Arc::new(AtomicUsize::new(0));
        let om = on_main.clone();
        let give_up = Instant::now() + Duration::from_secs(5);
        let y = js
            .job()
            .after(&[z])
            .parallel_for(0..64, Batch::Fixed(1), move |_| {
                if thread::current().id() == main {
                    om.fetch_add(1, Ordering::Relaxed);
                } else {
                    while om.load(Ordering::Relaxed) == 0 && Instant::now() < give_up {
                        thread::yield_now();
                    }
                }
            });
        let x = js.schedule_after(&[y], || {});
        thread::scope(|sc| {
            sc.spawn(|| {
                // Open the gate once the main thread sleeps in `complete`.
                while js.reg().waiters().parked() == 0 {
                    thread::yield_now();
                }
                gate.store(true, Ordering::Release);
            });
            js.complete(x);
        });
        assert!(
            on_main.load(Ordering::Relaxed) > 0,
            "the waiting thread ran no piece of the loop its target needs"
        );
    }
}
