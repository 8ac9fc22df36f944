//! W1's floor kernels: per job, the least that any job system of jobsys's
//! kind has to do, written out plainly (on one thread, but for
//! `floor-thief`). `spawn-empty` times them in the same run as jobsys,
//! rayon and the serial loop, so a target missed can be set against the
//! floor that stops it.
//!
//! Every kernel runs W1's own `empty_job` (which bumps the job counter)
//! once per job through a function pointer, so its row is checked like the
//! others: a floor whose jobs do not run fails. The kernels, by the name
//! of their rows (`impl` column) and the case whose shape they take:
//!
//! - `floor-cl` (`single`, `flat`): a job that may be stolen and waited on
//!   through a handle. Per job:
//!   1. take a 128-byte, 64-aligned slot from the thread's free list (a
//!      `Vec` of slot addresses; slots come in pages of 256 and are reused,
//!      so the steady state allocates nothing);
//!   2. write the job's function pointer and its closure (zero-sized here)
//!      into the slot;
//!   3. publish it: a Release store of the slot's state word, so that a
//!      thief that finds the slot also finds what was written into it;
//!   4. push its address on the thread's deque, and later pop it back: a
//!      plain `Vec` push and pop plus the one SeqCst fence that a Chase-Lev
//!      owner's pop needs between its store of `back` and its load of
//!      `front`, so that a thief cannot take the same entry. Left out: the
//!      CAS on `front` that Chase-Lev adds when the popped entry is the
//!      last one (every pop of `single`), and the atomic `back` store
//!      (a plain store on x86);
//!   5. claim it: one `compare_exchange` READY → RUNNING (AcqRel), the race
//!      a thief or a canceller would lose;
//!   6. call the job through the function pointer;
//!   7. finish it: one `swap` to DONE (AcqRel), whose old value says whether
//!      a waiter must be woken (none here);
//!   8. return the slot to the free list.
//!
//!   `single` does 1-8 for one job at a time; `flat` does 1-4 (up to the
//!   push) for all jobs, then the rest newest first.
//! - `floor-cl-nofence` (`single`, `flat`): the same without the fence,
//!   which only a thief makes necessary: the floor at 0 workers.
//! - `floor-mem128`, `floor-mem64` (`flat`): no atomics and no deque, only
//!   the memory traffic of the slots: write one whole slot per job (its
//!   function pointer and filler, 128 or 64 bytes) over as many slots as
//!   `flat` has jobs, then newest first read each back and call the
//!   function pointer read from it.
//! - `floor-fence` (`nested`): the serial tree of the serial row plus one
//!   SeqCst fence per join (per inner node: 32,767 of the 65,535 jobs at
//!   depth 16), where jobsys's `join` pops its second half off its deque:
//!   what that fence costs on its own.
//! - `floor-thief` (`flat`, from one worker on): `flat` with one helper
//!   thread that takes jobs while the caller pushes and completes them, so
//!   that the jobs and their slots move between two cores, as jobsys's do
//!   once a worker steals. Slots sit in one array (no free list, no deque
//!   buffer); per job the caller writes the slot's function pointer,
//!   publishes its state (Release) and then the queue's end (Release). The
//!   helper takes the oldest untaken index (one CAS on a shared index, its
//!   own cache line), claims the slot (CAS READY → RUNNING), calls it and
//!   finishes it (swap to DONE). The caller then goes newest first: it
//!   claims each job the helper did not, runs and finishes it, and waits
//!   (spinning on the state word) for each one the helper did. The helper
//!   spins only while an iteration runs and parks between them, so it
//!   burns no CPU under the other rows; waking it costs each iteration one
//!   `unpark`. What it leaves out: a deque (the shared index is a queue
//!   only thieves take from), slot reuse across threads, and any check
//!   beyond the claim.
//!
//! `std::hint::black_box(())` (a compiler memory clobber, no instruction)
//! keeps the optimiser from carrying a value from a `Vec` push to the pop
//! that follows (a real deque's cells are atomics it cannot see through);
//! the atomics themselves are never removed by the compiler.
//!
//! Like `w1_kernels.rs`, this file is compiled twice: into jobsys-bench and,
//! through `#[path]`, into the `jobsys-w1` child program (instruction
//! counts: `scripts/w1-instructions.sh`). So it uses only `std`,
//! `crate::count` (through `empty_job`) and `super::w1_kernels`.

use super::w1_kernels::{empty_job, Case, Sizes};
use std::cell::UnsafeCell;
use std::hint::black_box;
use std::mem::{align_of, size_of, MaybeUninit};
use std::ptr::{self, NonNull};
use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

/// What a floor kernel does, besides its case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Slot, publish, deque push/pop with the Chase-Lev pop's fence, claim,
    /// call, finish, slot returned.
    Cl,
    /// [`Kind::Cl`] without the fence (no thief).
    ClNoFence,
    /// Write then read back 128 bytes per job.
    Mem128,
    /// Write then read back 64 bytes per job.
    Mem64,
    /// The serial tree with one SeqCst fence per join.
    Fence,
    /// `flat` shared with one helper thread that takes the oldest jobs.
    Thief,
}

/// One floor kernel: a kind in the shape of a W1 case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Floor {
    /// The W1 case whose shape and size it takes (and whose rows it joins).
    pub case: Case,
    /// What it does per job.
    pub kind: Kind,
}

const fn floor(case: Case, kind: Kind) -> Floor {
    Floor { case, kind }
}

impl Floor {
    /// Every floor kernel, in table order.
    pub const ALL: [Floor; 8] = [
        floor(Case::Single, Kind::Cl),
        floor(Case::Single, Kind::ClNoFence),
        floor(Case::Flat, Kind::Cl),
        floor(Case::Flat, Kind::ClNoFence),
        floor(Case::Flat, Kind::Mem128),
        floor(Case::Flat, Kind::Mem64),
        floor(Case::Flat, Kind::Thief),
        floor(Case::Nested, Kind::Fence),
    ];

    /// The `impl` name of its rows.
    pub fn imp(self) -> &'static str {
        match self.kind {
            Kind::Cl => "floor-cl",
            Kind::ClNoFence => "floor-cl-nofence",
            Kind::Mem128 => "floor-mem128",
            Kind::Mem64 => "floor-mem64",
            Kind::Fence => "floor-fence",
            Kind::Thief => "floor-thief",
        }
    }

    /// Threads it runs on: the caller, and for `floor-thief` one helper.
    pub fn threads(self) -> usize {
        match self.kind {
            Kind::Thief => 2,
            _ => 1,
        }
    }

    /// Its name on `jobsys-w1`'s command line: `case:impl`.
    pub fn name(self) -> String {
        format!("{}:{}", self.case.name(), self.imp())
    }

    /// The floor called `name` ([`Floor::name`]).
    pub fn parse(name: &str) -> Option<Floor> {
        Floor::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// Per-kernel memory kept between iterations (the `floor-mem*` slots), so
/// that no iteration but the first allocates. The `floor-cl` slots live in
/// a thread-local free list instead, as a job system's would.
#[derive(Default)]
pub struct Buffers {
    mem128: Vec<MemSlot<15>>,
    mem64: Vec<MemSlot<7>>,
    /// `floor-thief`'s slots and helper thread (joined on drop).
    thief: Option<Thief>,
}

/// One iteration of floor `f` at sizes `s` (untimed, unchecked: the caller
/// times it and checks `count::total`, as for `w1_kernels::iteration`).
/// An error means the kernel's own bookkeeping broke (a claim or a finish
/// saw a state it cannot see on one thread).
///
/// Never inlined, so that a profiler can count exactly one iteration
/// (`--toggle-collect='*w1_floor::iteration*'`).
#[inline(never)]
pub fn iteration(f: Floor, s: &Sizes, b: &mut Buffers) -> Result<(), String> {
    let job: fn() = black_box(empty_job as fn());
    match (f.kind, f.case) {
        (Kind::Cl, Case::Single) => cl_single::<true>(s.single)?,
        (Kind::ClNoFence, Case::Single) => cl_single::<false>(s.single)?,
        (Kind::Cl, Case::Flat) => cl_flat::<true>(s.flat)?,
        (Kind::ClNoFence, Case::Flat) => cl_flat::<false>(s.flat)?,
        (Kind::Mem128, Case::Flat) => mem(&mut b.mem128, s.flat, job),
        (Kind::Mem64, Case::Flat) => mem(&mut b.mem64, s.flat, job),
        (Kind::Fence, Case::Nested) => tree_fence(job, s.depth),
        (Kind::Thief, Case::Flat) => thief_flat(&mut b.thief, s.flat, job)?,
        _ => return Err(format!("no floor {f:?}")),
    }
    Ok(())
}

// ---- floor-cl: slots, free list, deque ------------------------------------

// The closure is the function item `empty_job` (zero-sized), as in
// `js.schedule(empty_job)`: the slot's function pointer is `run_closure`'s
// for it, which calls `empty_job` directly.

/// `single`: schedule one job, complete it; `n` times.
#[inline(always)]
fn cl_single<const FENCED: bool>(n: usize) -> Result<(), String> {
    for _ in 0..n {
        schedule(empty_job);
        black_box(());
        complete_top::<FENCED>()?;
        black_box(());
    }
    Ok(())
}

/// `flat`: schedule `n` jobs, then complete them newest first.
#[inline(always)]
fn cl_flat<const FENCED: bool>(n: usize) -> Result<(), String> {
    for _ in 0..n {
        schedule(empty_job);
    }
    black_box(());
    for _ in 0..n {
        complete_top::<FENCED>()?;
    }
    Ok(())
}

const SLOT_BYTES: usize = 128;
/// Closure bytes a slot holds (after the state word and the fn pointer).
const PAYLOAD_BYTES: usize = SLOT_BYTES - 16;
const PAGE_SLOTS: usize = 256;

const READY: u64 = 1;
const RUNNING: u64 = 2;
const DONE: u64 = 3;

/// A job's slot: state word, function pointer, closure.
#[repr(C, align(64))]
struct Slot {
    state: AtomicU64,
    /// Runs the closure in `payload` (written before publication).
    run: UnsafeCell<unsafe fn(NonNull<Slot>)>,
    payload: UnsafeCell<[MaybeUninit<u8>; PAYLOAD_BYTES]>,
}

impl Slot {
    fn new() -> Slot {
        Slot {
            state: AtomicU64::new(0),
            run: UnsafeCell::new(run_nothing),
            payload: UnsafeCell::new([MaybeUninit::uninit(); PAYLOAD_BYTES]),
        }
    }
}

/// A fresh slot's function (never called: a slot runs only once written).
unsafe fn run_nothing(_: NonNull<Slot>) {}

/// Runs the closure `F` stored in `s`.
///
/// # Safety
/// `s` holds an `F` written by [`schedule`], claimed by the caller and not
/// run before.
unsafe fn run_closure<F: FnOnce()>(s: NonNull<Slot>) {
    // SAFETY: per the contract, the payload holds an `F`, ours alone to take.
    let f = unsafe { ptr::read((*s.as_ptr()).payload.get().cast::<F>()) };
    f();
}

/// The calling thread's slots, free list and deque.
struct Local {
    /// Pages of `PAGE_SLOTS` slots (from `Box<[Slot]>`), freed on drop.
    pages: Vec<NonNull<Slot>>,
    /// Free slots, taken and returned at the end.
    free: Vec<NonNull<Slot>>,
    /// The owner's end of the deque: pushed and popped at the end.
    deque: Vec<NonNull<Slot>>,
}

impl Local {
    /// The free list is empty: a new page, all but one slot onto it.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) -> NonNull<Slot> {
        let page: Box<[Slot]> = (0..PAGE_SLOTS).map(|_| Slot::new()).collect();
        let first = NonNull::new(Box::into_raw(page).cast::<Slot>()).expect("Box is non-null");
        self.pages.push(first);
        // Lowest address last, so slots are taken in address order.
        for i in (1..PAGE_SLOTS).rev() {
            // SAFETY: `i` < PAGE_SLOTS, within the page just allocated.
            self.free
                .push(unsafe { NonNull::new_unchecked(first.as_ptr().add(i)) });
        }
        first
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        for p in self.pages.drain(..) {
            let page = ptr::slice_from_raw_parts_mut(p.as_ptr(), PAGE_SLOTS);
            // SAFETY: `p` came from `Box::into_raw` of a `Box<[Slot]>` of
            // PAGE_SLOTS slots in `grow`, and is freed only here, once. The
            // closures of slots never run need no drop (`F: Copy`).
            drop(unsafe { Box::from_raw(page) });
        }
    }
}

thread_local! {
    static LOCAL: UnsafeCell<Local> = const {
        UnsafeCell::new(Local { pages: Vec::new(), free: Vec::new(), deque: Vec::new() })
    };
}

/// The calling thread's `Local` (one thread-local lookup, as a job system's
/// `schedule` and `complete` each make to find the caller's context).
#[inline(always)]
fn local() -> *mut Local {
    LOCAL.with(|l| l.get())
}

/// Steps 1-4 (to the push): take a slot, write `f` into it, publish it,
/// push it on the deque.
#[inline(always)]
fn schedule<F: FnOnce() + Copy + 'static>(f: F) {
    assert!(size_of::<F>() <= PAYLOAD_BYTES && align_of::<F>() <= 16);
    // SAFETY: only this module reaches `LOCAL`, and no reference to it
    // lives across this block (none is held while a job runs).
    let l = unsafe { &mut *local() };
    let s = match l.free.pop() {
        Some(s) => s,
        None => l.grow(),
    };
    // SAFETY: a free slot is on no list and in no deque: no other party
    // can reach it, so we may write its fields. Its page lives as long as
    // the thread's `Local`. The payload is at offset 16 of a 64-aligned
    // slot and holds PAYLOAD_BYTES (asserted above for `F`).
    let slot = unsafe {
        let slot = s.as_ref();
        *slot.run.get() = run_closure::<F>;
        slot.payload.get().cast::<F>().write(f);
        slot
    };
    // Release: a thief that acquires READY also sees `run` and the payload.
    slot.state.store(READY, Ordering::Release);
    l.deque.push(s);
}

/// Steps 4-8 (from the pop): pop the newest entry (with the Chase-Lev
/// fence when `FENCED`), claim it, run it, finish it, free its slot.
#[inline(always)]
fn complete_top<const FENCED: bool>() -> Result<(), String> {
    let l = local();
    // SAFETY: as in `schedule`; the reference ends with this statement.
    let s = unsafe { (*l).deque.pop() }.ok_or("floor: the deque is empty")?;
    if FENCED {
        fence(Ordering::SeqCst);
    }
    // SAFETY: deque entries are slots of our pages, alive while `Local` is.
    let slot = unsafe { s.as_ref() };
    slot.state
        .compare_exchange(READY, RUNNING, Ordering::AcqRel, Ordering::Acquire)
        .map_err(|st| format!("floor: claim found state {st}"))?;
    // SAFETY: the claim made us the slot's only runner; `run` and the
    // payload were written before the Release store that the claim read.
    unsafe { (*slot.run.get())(s) };
    let old = slot.state.swap(DONE, Ordering::AcqRel);
    if old != RUNNING {
        return Err(format!("floor: finish found state {old}"));
    }
    // SAFETY: the job has returned, so no reference to `LOCAL` is alive
    // (it never takes one); the thread-local outlives this call.
    unsafe { (*l).free.push(s) };
    Ok(())
}

// ---- floor-mem*: slot memory traffic alone ---------------------------------

/// A slot of `8 + 8 * FILL` bytes: a function pointer and filler.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct MemSlot<const FILL: usize> {
    run: fn(),
    fill: [u64; FILL],
}

/// Write `n` whole slots, then newest first read each back and call its
/// function pointer.
#[inline(always)]
fn mem<const FILL: usize>(buf: &mut Vec<MemSlot<FILL>>, n: usize, job: fn()) {
    if buf.len() != n {
        *buf = vec![
            MemSlot {
                run: job,
                fill: [0; FILL],
            };
            n
        ];
    }
    for (i, s) in buf.iter_mut().enumerate() {
        *s = MemSlot {
            run: job,
            fill: [i as u64; FILL],
        };
    }
    // The slots may have changed: the reads below go to memory.
    let buf = black_box(buf);
    let mut sum = 0u64;
    for s in buf.iter().rev() {
        sum = s.fill.iter().fold(sum, |a, &x| a ^ x);
        (s.run)();
    }
    black_box(sum);
}

// ---- floor-fence: the serial tree plus the join pop's fence ----------------

fn tree_fence(job: fn(), depth: u32) {
    job();
    if depth > 1 {
        tree_fence(job, depth - 1);
        // Where jobsys's join pops its second half: the pop's fence.
        fence(Ordering::SeqCst);
        tree_fence(job, depth - 1);
    }
}

// ---- floor-thief: flat with one helper thread ------------------------------

/// A `floor-thief` slot: state word and function pointer, 128 bytes as
/// jobsys's and `floor-cl`'s.
#[repr(C, align(64))]
struct ThiefSlot {
    state: AtomicU64,
    /// Written by the caller while the slot is DONE (or new), before the
    /// Release store of READY; read by whoever claimed it.
    run: UnsafeCell<fn()>,
    _fill: [u64; 14],
}

/// A cache line of its own.
#[repr(align(128))]
struct Line<T>(T);

const IDLE: u32 = 0;
const GO: u32 = 1;
const QUIT: u32 = 2;

/// `floor-thief`'s jobs in this process so far, and how many of them its
/// helpers ran (published when a helper parks or quits).
static THIEF_JOBS: AtomicU64 = AtomicU64::new(0);
static THIEF_HELPER_RAN: AtomicU64 = AtomicU64::new(0);

/// (`floor-thief`'s jobs so far, how many of them its helper ran): how
/// many jobs moved between cores. Exact once the helper parked, which it
/// does at the end of each iteration (and the drop of its `Buffers` waits
/// for it).
pub fn thief_share() -> (u64, u64) {
    (
        THIEF_JOBS.load(Ordering::Acquire),
        THIEF_HELPER_RAN.load(Ordering::Acquire),
    )
}

/// What the caller and the helper share.
struct ThiefShared {
    slots: Box<[ThiefSlot]>,
    /// Next index to take (helper), ever increasing across iterations;
    /// index `i` names slot `i % slots.len()`.
    front: Line<AtomicUsize>,
    /// One past the newest index published (caller).
    back: Line<AtomicUsize>,
    /// IDLE between iterations (the helper parks), GO during one, QUIT.
    phase: Line<AtomicU32>,
}

// SAFETY: `run` is written by the caller only while no other thread may
// read it (see `ThiefSlot::run` and `thief_flat`); the rest are atomics.
unsafe impl Sync for ThiefShared {}

/// The helper thread and its slots.
struct Thief {
    shared: Arc<ThiefShared>,
    helper: Option<JoinHandle<()>>,
}

impl Thief {
    fn new(n: usize) -> Thief {
        let shared = Arc::new(ThiefShared {
            slots: (0..n)
                .map(|_| ThiefSlot {
                    state: AtomicU64::new(DONE),
                    run: UnsafeCell::new(empty_job),
                    _fill: [0; 14],
                })
                .collect(),
            front: Line(AtomicUsize::new(0)),
            back: Line(AtomicUsize::new(0)),
            phase: Line(AtomicU32::new(IDLE)),
        });
        let sh = shared.clone();
        let helper = thread::Builder::new()
            .name("floor-thief".into())
            .spawn(move || thief_loop(&sh))
            .expect("spawn the floor-thief helper");
        Thief {
            shared,
            helper: Some(helper),
        }
    }
}

impl Drop for Thief {
    fn drop(&mut self) {
        self.shared.phase.0.store(QUIT, Ordering::Release);
        if let Some(h) = self.helper.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

/// Claim slot `s` (READY → RUNNING), call it, finish it. False if someone
/// else claimed it first.
#[inline(always)]
fn claim_and_run(s: &ThiefSlot) -> Result<bool, String> {
    if s.state
        .compare_exchange(READY, RUNNING, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return Ok(false);
    }
    // SAFETY: the claim read the caller's Release store of READY, which
    // follows its write of `run`; the caller writes `run` again only once
    // it has seen this slot DONE, after our last read.
    let f = unsafe { *s.run.get() };
    f();
    match s.state.swap(DONE, Ordering::AcqRel) {
        RUNNING => Ok(true),
        st => Err(format!("floor-thief: finish found state {st}")),
    }
}

/// The helper: while an iteration runs, take the oldest untaken index and
/// run its job; between iterations, park.
fn thief_loop(sh: &ThiefShared) {
    let n = sh.slots.len();
    // Jobs run since the last park: published in one add, not per job.
    let mut ran = 0u64;
    loop {
        let phase = sh.phase.0.load(Ordering::Acquire);
        if phase != GO && ran != 0 {
            THIEF_HELPER_RAN.fetch_add(std::mem::take(&mut ran), Ordering::Release);
        }
        match phase {
            QUIT => return,
            IDLE => {
                thread::park();
                continue;
            }
            _ => {}
        }
        let f = sh.front.0.load(Ordering::Relaxed);
        // Acquire: pairs with the caller's Release store of `back`, after
        // the slots below it were published.
        let b = sh.back.0.load(Ordering::Acquire);
        if f >= b {
            std::hint::spin_loop();
            continue;
        }
        if sh
            .front
            .0
            .compare_exchange(f, f + 1, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            // A failed claim (the caller got there first) or a finish error
            // (impossible: only the claimant finishes) drops the index.
            if let Ok(true) = claim_and_run(&sh.slots[f % n]) {
                ran += 1;
            }
        }
    }
}

/// `flat` with one helper taking the oldest jobs: push all, then newest
/// first claim-and-run or wait.
fn thief_flat(t: &mut Option<Thief>, n: usize, job: fn()) -> Result<(), String> {
    // A helper with slots for another size is dropped (joined) first.
    let t = match t {
        Some(old) if old.shared.slots.len() == n => old,
        _ => {
            *t = None;
            t.insert(Thief::new(n))
        }
    };
    let sh = &*t.shared;
    let base = sh.back.0.load(Ordering::Relaxed);
    sh.phase.0.store(GO, Ordering::Release);
    if let Some(h) = &t.helper {
        h.thread().unpark();
    }
    for i in 0..n {
        let s = &sh.slots[(base + i) % n];
        // SAFETY: the slot is DONE (the last iteration waited for all), so
        // nobody claims it, and a claimant's last read of `run` came before
        // its DONE swap, which we read (Acquire) then.
        unsafe { *s.run.get() = job };
        // Release: whoever claims the slot sees `run`.
        s.state.store(READY, Ordering::Release);
        sh.back.0.store(base + i + 1, Ordering::Release);
    }
    for i in (0..n).rev() {
        let s = &sh.slots[(base + i) % n];
        if !claim_and_run(s)? {
            // The helper has it: wait until it finished.
            while s.state.load(Ordering::Acquire) != DONE {
                std::hint::spin_loop();
            }
        }
    }
    // No index is left to take: move `front` past this iteration (a helper
    // that took one whose job we ran finds it claimed), then let it park.
    sh.front.0.fetch_max(base + n, Ordering::AcqRel);
    sh.phase.0.store(IDLE, Ordering::Release);
    THIEF_JOBS.fetch_add(n as u64, Ordering::Relaxed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::count;

    /// Every floor runs exactly its case's jobs, iteration after iteration
    /// (the second reuses the slots and buffers of the first).
    #[test]
    fn every_floor_runs_each_job_once() {
        let s = Sizes::QUICK;
        let mut b = Buffers::default();
        for f in Floor::ALL {
            for _ in 0..2 {
                let before = count::total();
                iteration(f, &s, &mut b).unwrap();
                let ran = count::total() - before;
                assert_eq!(ran, s.jobs(f.case) as u64, "{}", f.name());
            }
            assert_eq!(Floor::parse(&f.name()), Some(f));
        }
        // The deque is empty again, and every slot is back on the free list.
        let l = LOCAL.with(|l| {
            // SAFETY: no kernel is running on this thread.
            let l = unsafe { &*l.get() };
            (l.deque.len(), l.free.len(), l.pages.len())
        });
        assert_eq!(l.0, 0);
        assert_eq!(l.1, l.2 * PAGE_SLOTS);
        assert!(l.2 * PAGE_SLOTS >= s.flat);

        // `floor-thief` (in this test: `count::total` is global, so no
        // other test may count meanwhile) keeps its helper across
        // iterations of one size, starts a new one when the size changes
        // (joining the old), and runs every job once either way; the drop
        // at the end joins the helper (one that missed QUIT hangs here).
        let f = floor(Case::Flat, Kind::Thief);
        const SIZES: [usize; 4] = [2_048, 100, 1, 2_048];
        for flat in SIZES {
            let s = Sizes { flat, ..s };
            let before = count::total();
            iteration(f, &s, &mut b).unwrap();
            assert_eq!(count::total() - before, flat as u64);
            let t = b.thief.as_ref().unwrap();
            assert_eq!(t.shared.slots.len(), flat);
            // Every slot finished, and no index is left to take.
            assert!(t
                .shared
                .slots
                .iter()
                .all(|s| s.state.load(Ordering::Acquire) == DONE));
            assert_eq!(
                t.shared.front.0.load(Ordering::Acquire),
                t.shared.back.0.load(Ordering::Acquire)
            );
        }
        drop(b);
        // The drop joined the helper, so its count is published: the jobs
        // of every iteration above (two at `s.flat` in the loop over
        // `Floor::ALL`, then `SIZES`), of which it ran at most all.
        let (jobs, helper) = thief_share();
        assert_eq!(jobs, (2 * s.flat + SIZES.iter().sum::<usize>()) as u64);
        assert!(helper <= jobs);
    }

    #[test]
    fn no_floor_for_other_cases() {
        let f = floor(Case::PforEmpty, Kind::Cl);
        assert!(iteration(f, &Sizes::QUICK, &mut Buffers::default()).is_err());
        assert_eq!(Floor::parse("pfor-empty:floor-cl"), None);
        assert_eq!(std::mem::size_of::<Slot>(), 128);
        assert_eq!(std::mem::size_of::<MemSlot<15>>(), 128);
        assert_eq!(std::mem::size_of::<MemSlot<7>>(), 64);
        assert_eq!(std::mem::size_of::<ThiefSlot>(), 128);
    }
}
