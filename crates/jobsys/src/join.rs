//! `join(a, b)`: fork/join without a slot.
//!
//! `a` lives in a `StackJob` on the joiner's stack; its deque entry is the
//! job's address tagged with the low bit. Deque entries are taken exactly
//! once (pop or steal), so a stack job needs no claim: when the joiner pops
//! its own entry back (the common case) it runs `a` inline with no atomic
//! read-modify-write at all. If a thief took it, the joiner helps with
//! needed work, then sleeps on the job's latch, which the thief sets last.
//!
//! Invariant: a stack job's entry is never dropped or duplicated; the joiner
//! does not return (or unwind) before it ran the job itself or saw the
//! latch set.
//!
//! `join` is a function of the registry (it finds the calling thread's
//! context); taking the entry back and waiting are `ThisThread` methods.

use crate::context::{HIGH, NORMAL, PRIORITIES};
use crate::job::{Entry, StackHeader};
use crate::registry::Registry;
use crate::registry::ThisThread;
use crate::sleep::Futex;
use crate::sync::Ordering;
use crate::wait::DepthGuard;
use std::cell::UnsafeCell;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::thread;

const PENDING: u32 = 0;
const DONE: u32 = 1;
const SLEEPING: u32 = 2;

/// `f` and `result` carry no "taken"/"written" flag of their own: the
/// deque entry, taken exactly once, decides who runs `f` (the joiner after
/// popping the entry back, or `execute` on whichever thread took it), and
/// `result` is written (by `execute`) exactly when the latch is set. So
/// neither is ever dropped in place, and the joiner's common path tests
/// and drops nothing.
#[repr(C)]
struct StackJob<F, R> {
    header: StackHeader,
    f: UnsafeCell<ManuallyDrop<F>>,
    result: UnsafeCell<MaybeUninit<thread::Result<R>>>,
}

/// A stack job's `run`: runs `f`, writes the result, sets the latch.
///
/// # Safety
/// `h` is the header of a live `StackJob<F, R>` (the `F` and `R` it was
/// built with) whose latch is not set yet, and the caller is its only
/// runner: it took the job's deque entry (`run_stack_job`). The job may be
/// freed as soon as the latch is set, which this does last.
unsafe fn execute<F: FnOnce() -> R, R>(h: *const StackHeader) {
    // SAFETY: `h` is the header of a live `StackJob<F, R>` (repr(C), header
    // first); we are its only runner (entries are taken once).
    let job = unsafe { &*(h as *const StackJob<F, R>) };
    // SAFETY: only the runner touches `f` and `result` before the latch,
    // and this is the only take of `f`: the thread that took the entry
    // runs the job, and the joiner, which did not take it, never reads `f`.
    let f = unsafe { ManuallyDrop::take(&mut *job.f.get()) };
    let r = catch_unwind(AssertUnwindSafe(f));
    // SAFETY: as above; the joiner reads `result` only after the latch.
    unsafe { (*job.result.get()).write(r) };
    let latch: *const Futex = &job.header.latch;
    // Release: the joiner's Acquire load of the latch sees the result.
    // After this swap the joiner may return and free the job.
    if job.header.latch.swap(DONE, Ordering::AcqRel) == SLEEPING {
        // SAFETY: the latch was valid at the swap; only its address is used.
        unsafe { Futex::wake_one_raw(latch) };
    }
}

/// Run a stack job taken from a deque.
///
/// # Safety
/// `h` came from an `Entry::stack` taken from a deque (so it is alive and
/// nobody else runs it).
pub(crate) unsafe fn run_stack_job(h: *const StackHeader, thief: u32) {
    // SAFETY: promised by the caller: the job is alive until its latch is
    // set, which `run` does last.
    unsafe {
        (*h).thief
            .store(thief + 1, std::sync::atomic::Ordering::Release);
        ((*h).run)(h)
    }
}

/// `join` in a system with no workers: nobody could take `a` while `b`
/// runs (no worker steals, and a thread waiting in `complete` takes only
/// jobs someone waits on, never a `join` half), so `b` then `a` run here,
/// in the order of the deque path when it takes `a` back, with the same
/// panic rule (both run; `a`'s panic first). No push, no fence, no
/// context: W1 nested at 0 workers is the serial tree plus one
/// `catch_unwind` (around `b`, so that `a` still runs if `b` panics). The
/// one thread the deque path would let take `a` is another one under
/// back-pressure (`Config::max_jobs`) at its top level, which runs queued
/// work of any kind; inline, it finds none of ours.
#[inline]
fn join_inline<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA,
    B: FnOnce() -> RB,
{
    match catch_unwind(AssertUnwindSafe(b)) {
        // A panic of `a` here unwinds on its own, as `resume_unwind` of it
        // would (`rb` is dropped on the way either way).
        Ok(rb) => (a(), rb),
        Err(pb) => match catch_unwind(AssertUnwindSafe(a)) {
            Err(pa) => resume_unwind(pa),
            Ok(_) => resume_unwind(pb),
        },
    }
}

/// `JobSystem::join`.
pub(crate) fn join<A, B, RA, RB>(reg: &Registry, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB,
    RA: Send,
{
    if reg.num_workers() == 0 {
        return join_inline(a, b);
    }
    let ctx = reg.current_for(|| "JobSystem::join");
    let me = ThisThread::new(reg, ctx);
    let job = StackJob {
        header: StackHeader {
            run: execute::<A, RA>,
            latch: Futex::new(PENDING),
            thief: std::sync::atomic::AtomicU32::new(0),
        },
        f: UnsafeCell::new(ManuallyDrop::new(a)),
        result: UnsafeCell::new(MaybeUninit::uninit()),
    };
    // From a pointer to the whole job (repr(C), header first): the
    // runner reads `f` and writes `result` through it.
    let entry = Entry::stack((&job as *const StackJob<A, RA>).cast::<StackHeader>());
    ctx.push(entry, NORMAL);
    // With the fence: a wake lost here is lost progress, not only
    // parallelism, when `b` waits for something `a` does (a flag, a
    // channel): this thread takes `a` back only after `b` returns, and
    // a worker that was going to sleep as we pushed would miss the push
    // without it (tests/concurrency.rs,
    // `join_runs_a_on_another_thread_and_waits_for_it`). rayon's
    // `new_internal_jobs` leaves it out; W1's `floor-fence` case measures
    // it (docs/history/benchmarks-log.md), and it costs less than the noise.
    me.notify_work();
    let rb = catch_unwind(AssertUnwindSafe(b));
    let ra = if me.take_back(entry) {
        // We took our own entry back, so nobody else has it and
        // `execute` never runs: run `a` here without touching the latch.
        // SAFETY: the only take of `f` (see `StackJob`).
        let a = unsafe { ManuallyDrop::take(&mut *job.f.get()) };
        catch_unwind(AssertUnwindSafe(a))
    } else {
        me.wait_latch(&job.header);
        // SAFETY: the latch is DONE, stored (Release) by `execute` after
        // it wrote `result`, and `wait_latch` read it with Acquire; this
        // is the only read.
        unsafe { (*job.result.get()).assume_init_read() }
    };
    match (ra, rb) {
        (Ok(ra), Ok(rb)) => (ra, rb),
        (Err(p), _) | (_, Err(p)) => resume_unwind(p),
    }
}

impl ThisThread<'_> {
    /// Pop our entry back. Usually it is on top (one pop, inlined); if
    /// `b` left jobs above it, `take_back_below`. False if another thread
    /// took it, or this one did inside `b` (a wait there may run it).
    #[inline(always)]
    fn take_back(self, entry: Entry) -> bool {
        match self.ctx.local(NORMAL).pop_fenced() {
            Some(e) if e == entry => true,
            None => false,
            Some(e) => self.take_back_below(entry, e),
        }
    }

    /// `b` left jobs above our entry (`top` was popped already): lift them
    /// off and put them back in order. Out of line, so that `join`'s own
    /// frame stays small.
    #[cold]
    #[inline(never)]
    fn take_back_below(self, entry: Entry, top: Entry) -> bool {
        let mut above = vec![top];
        let mut found = false;
        while let Some(e) = self.ctx.local(NORMAL).pop() {
            if e == entry {
                found = true;
                break;
            }
            above.push(e);
        }
        for e in above.into_iter().rev() {
            self.ctx.push(e, NORMAL);
        }
        // They were invisible for a moment: keep them findable.
        self.notify_work();
        found
    }

    /// The job was stolen: help with needed work and with the thief's
    /// deque (the stolen job's own descendants), spin a bounded time, then
    /// sleep on the latch. Out of line: not generic, and a stolen job's
    /// wait dwarfs a call.
    #[cold]
    #[inline(never)]
    fn wait_latch(self, job: &StackHeader) {
        let _depth = DepthGuard::new(self);
        let _trace = crate::trace::WaitTrace::of_stack(
            self.reg.site(self.ctx),
            job as *const StackHeader as usize,
        );
        let latch = &job.latch;
        let mut backoff = self.reg.backoff();
        loop {
            if latch.load(Ordering::Acquire) == DONE {
                return;
            }
            let thief = job.thief.load(std::sync::atomic::Ordering::Acquire);
            if thief != 0 && thief - 1 != self.ctx.index {
                let thief = self.reg.context(thief as usize - 1);
                if let Some(e) = (HIGH..PRIORITIES).find_map(|p| thief.stealer(p).steal()) {
                    self.run_entry(e, &mut || {});
                    continue;
                }
            }
            if matches!(self.help_needed(), Ok(true)) {
                continue;
            }
            let spent = backoff.elapsed();
            if spent < self.reg.wait_spin() {
                backoff.snooze(spent);
                continue;
            }
            if latch.compare_exchange(PENDING, SLEEPING).is_err() {
                return; // DONE meanwhile
            }
            crate::trace::sleep_begin(self.reg.site(self.ctx));
            while latch.load(Ordering::Acquire) == SLEEPING {
                latch.wait(SLEEPING);
            }
            crate::trace::sleep_end(self.reg.site(self.ctx));
            return;
        }
    }
}
