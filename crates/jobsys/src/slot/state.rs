//! The slot's state word: its bits, the diagram of its phases, the pure
//! functions of one state to the next, and `Snapshot`, a loaded state
//! that the rest of the crate asks named questions of. Only the slot
//! module writes the word (`Slot`'s transitions, in `mod.rs`); the bit
//! constants are private to it but for the flags that are part of its
//! API: `PFOR` and `TRACED` (publish flags), `FAILED` and `POISONED`
//! (finish flags) and `CANCELLED` (recorded with a failure).

// ---- the state word -------------------------------------------------------
// bits 0..32: generation; bits 32..35: phase; 35..44: flags; 44..64: pins.
//
// The phases of one generation (→ is one CAS or a store by the slot's owner
// before publication; every transition keeps the generation except the
// freeing one, which also drops the last pin):
//
//   FREE(g) ──alloc+publish──▶ RUNNABLE(g) ──claim (+pin)──▶ RUNNING(g)
//      │                          ▲   │ PFOR: pinned pieces,       │
//      │ publish with deps        │   │ stays RUNNABLE            │ run / fail /
//      ▼                          │   ▼                            ▼ skip
//   WAITING(g) ──last dep done────┘  FINISHED(g) ◀──finish──────────┘
//
// Cancelling (`cancel`, one CAS whose outcome depends on the phase):
//   WAITING        → WAITING | CANCELLED | DROPPING (+pin): the canceller
//                    drops the closure, then clears DROPPING
//                    (`end_cancel_drop`); the job later goes RUNNABLE →
//                    RUNNING → FINISHED without running. While DROPPING is
//                    set the job cannot become RUNNABLE: a `release` then
//                    only clears DROPPING, which leaves the release to the
//                    canceller, after its drop. So nobody sees the job
//                    finished while its closure is still being dropped (a
//                    scope's borrowed data must outlive that drop).
//   RUNNABLE       → RUNNING | CANCELLED (+pin, a claim): the canceller
//                    drops the closure and finishes the job.
//   RUNNABLE|PFOR,
//   RUNNING        → same | STOP (+pin): the job started; `is_cancelled`
//                    reads true, a loop hands out no more pieces, and
//                    `finish` fails the job (it cannot finish successfully
//                    once STOP is set: the finishing CAS refuses).
//   FINISHED(g), no pins ──free──▶ FREE(g+1), or retired at RETIRED_GEN
//   EDGES(g): an edge block, private to its job, freed with it.
//
// Flags: FAILED, POISONED (skipped: a dependency failed), CANCELLED (the
// canceller owns the closure), DROPPING (and is dropping it now), STOP (cancelled after it started), WAITED
// (a waiter needs it), PFOR, HAS_DEPS (dependents attached), TRACED (a
// wait on it checks the tracer). Pins: waiters,
// attachers, a canceller and the runner (the claim) each hold one; a
// pinned slot keeps its generation, payload, edges and failure.
pub(super) const PHASE_SHIFT: u32 = 32;
pub(super) const PHASE_MASK: u64 = 0b111 << PHASE_SHIFT;
pub(super) const FREE: u64 = 0;
pub(super) const WAITING: u64 = 1 << PHASE_SHIFT;
pub(super) const RUNNABLE: u64 = 2 << PHASE_SHIFT;
pub(super) const RUNNING: u64 = 3 << PHASE_SHIFT;
pub(super) const FINISHED: u64 = 4 << PHASE_SHIFT;
pub(super) const EDGES: u64 = 5 << PHASE_SHIFT;
/// The job (or a dependency of it) panicked.
pub(crate) const FAILED: u64 = 1 << 35;
/// The job was skipped because a dependency failed.
pub(crate) const POISONED: u64 = 1 << 36;
/// A dependent attached (or is attaching) an edge: `finish` must walk and
/// close the dependents list. Set in the same CAS that pins the job for the
/// attach, so a job without it (and without other pins) finishes in one CAS.
pub(super) const HAS_DEPS: u64 = 1 << 40;
/// Some thread in `complete` needs this job (it is the handle waited on or
/// one of its unfinished dependencies): waiters may help with it.
pub(super) const WAITED: u64 = 1 << 38;
/// The slot holds a parallel_for: its entries pin instead of claim, and it
/// stays RUNNABLE while its pieces run (`parallel_for.rs`).
pub(crate) const PFOR: u64 = 1 << 39;
/// Cancelled after it started (`cancel` on a running job or a loop whose
/// pieces are being handed out): cooperative; the job fails as cancelled.
pub(super) const STOP: u64 = 1 << 41;
/// A wait on this job checks the tracer itself: set when the tracer was on
/// as `submit` published the job (it checked, for the job's ready event),
/// and by publishers that do not check. Without it a wait whose fast path
/// runs the job inline (`wait_with`) has no event site at all: one tracer
/// check per job, at submit, instead of one per event (trace/README.md,
/// "Cost"). 0 without the `trace` feature.
pub(crate) const TRACED: u64 = if cfg!(feature = "trace") { 1 << 42 } else { 0 };
/// A canceller is dropping the closure of a WAITING job: the job may not
/// become RUNNABLE (and so not finish) before that drop ends
/// (`Slot::release`, `Slot::end_cancel_drop`).
pub(super) const DROPPING: u64 = 1 << 43;
pub(super) const PIN_SHIFT: u32 = 44;
pub(super) const PIN_ONE: u64 = 1 << PIN_SHIFT;

#[inline]
pub(super) fn gen_of(s: u64) -> u32 {
    s as u32
}
#[inline]
pub(super) fn phase_of(s: u64) -> u64 {
    s & PHASE_MASK
}
#[inline]
pub(super) fn pins_of(s: u64) -> u64 {
    s >> PIN_SHIFT
}
/// The job was cancelled before it could start (`Slot::cancel`): its
/// closure is already dropped; when it becomes runnable it finishes as
/// failed without running.
pub(crate) const CANCELLED: u64 = 1 << 37;

/// The first generation of a fresh slot. Generation 0 is never handed out,
/// so a zeroed slot never matches a handle.
pub(crate) const FIRST_GEN: u32 = 1;
/// A slot that reaches this generation is retired: never allocated again,
/// so no generation of a slot is ever handed out twice and a handle never
/// aliases a later job (128 bytes lost per 2^32 jobs run in one slot).
pub(crate) const RETIRED_GEN: u32 = u32::MAX;

/// A finished slot with no pins can be freed. A failed job's failure
/// outlives its slot in the registry's failure log (`failures.rs`), keyed by
/// (slot, generation), so later waits and dependents still see it.
#[inline]
pub(super) fn reclaimable(s: u64) -> bool {
    phase_of(s) == FINISHED && pins_of(s) == 0
}
/// The FREE state of the next generation (never past `RETIRED_GEN`).
#[inline]
pub(super) fn next_free_state(s: u64) -> u64 {
    u64::from(gen_of(s).saturating_add(1)) | FREE
}

/// How a job ended, as `ThisThread::finish` records it: on the state word
/// (`Slot::finish`'s flags) and, for a failure, in the failure log. A
/// named set of the finish flags instead of bare bits: succeeded (no
/// flag), failed (`FAILED`), or failed before any of it ran because a
/// dependency failed (`FAILED | POISONED`). `CANCELLED` is not an ending
/// of its own: the slot records it when cancelled (the failure's cause
/// says so).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Ending(u64);

impl Ending {
    pub(crate) const SUCCEEDED: Ending = Ending(0);
    pub(crate) const FAILED: Ending = Ending(FAILED);
    pub(crate) const POISONED: Ending = Ending(FAILED | POISONED);

    /// The finish flags (`Slot::finish`, the failure log's `Recorded`).
    #[inline(always)]
    pub(crate) fn bits(self) -> u64 {
        self.0
    }

    /// Did the job fail?
    #[inline(always)]
    pub(crate) fn failed(self) -> bool {
        self.0 & FAILED != 0
    }

    /// Was the job skipped because a dependency failed?
    #[inline(always)]
    pub(crate) fn poisoned(self) -> bool {
        self.0 & POISONED != 0
    }

    /// This ending, failed too (a job cancelled while it ran).
    #[inline(always)]
    pub(crate) fn and_failed(self) -> Ending {
        Ending(self.0 | FAILED)
    }
}

/// One load of a slot's state word (`Slot::state`, or the state a
/// transition returns), asked named questions. A plain copy: it says what
/// the word held then, and every question is one or two instructions on
/// that value (no further load).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct Snapshot(u64);

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Snapshot({:#x})", self.0)
    }
}

impl Snapshot {
    #[inline]
    pub(super) fn new(s: u64) -> Snapshot {
        Snapshot(s)
    }
    /// The job generation this state belongs to.
    #[inline]
    pub(crate) fn generation(self) -> u32 {
        gen_of(self.0)
    }
    /// Pins held: waiters, attachers, a canceller, the runner's claim.
    #[inline]
    pub(crate) fn pins(self) -> u64 {
        pins_of(self.0)
    }
    #[inline]
    pub(crate) fn is_free(self) -> bool {
        phase_of(self.0) == FREE
    }
    /// Published with dependencies that have not all finished.
    #[inline]
    pub(crate) fn is_waiting(self) -> bool {
        phase_of(self.0) == WAITING
    }
    /// Queued, or (a parallel_for) handing out pieces.
    #[inline]
    pub(crate) fn is_runnable(self) -> bool {
        phase_of(self.0) == RUNNABLE
    }
    /// Claimed by a runner (asked by the loom models).
    #[cfg(all(test, loom))]
    #[inline]
    pub(crate) fn is_running(self) -> bool {
        phase_of(self.0) == RUNNING
    }
    #[inline]
    pub(crate) fn is_finished(self) -> bool {
        phase_of(self.0) == FINISHED
    }
    /// An edge block, not a job.
    #[inline]
    pub(crate) fn is_edge_block(self) -> bool {
        phase_of(self.0) == EDGES
    }
    /// The job of generation `gen` is complete: the slot finished it or
    /// moved on to a later generation.
    #[inline]
    pub(crate) fn is_complete_for(self, gen: u32) -> bool {
        self.generation() != gen || self.is_finished()
    }
    /// The slot still holds the runnable job of generation `gen`.
    #[inline]
    pub(crate) fn is_runnable_for(self, gen: u32) -> bool {
        self.generation() == gen && self.is_runnable()
    }
    /// A handed-out job of generation `gen` named this slot: a slot's
    /// generation only grows, so `gen` is at most the slot's now, and
    /// equal only while the slot still holds that job (never FREE or EDGES
    /// under it).
    #[inline]
    pub(crate) fn has_issued(self, gen: u32) -> bool {
        let cur = self.generation();
        gen < cur || (gen == cur && !self.is_free() && !self.is_edge_block())
    }
    /// Runnable, a single job (not a parallel_for).
    #[inline]
    pub(crate) fn is_runnable_single(self) -> bool {
        self.0 & (PHASE_MASK | PFOR) == RUNNABLE
    }
    /// Runnable, a single job, and a wait on it makes no tracer check
    /// (no `TRACED`): one mask and compare.
    #[inline]
    pub(crate) fn is_runnable_single_untraced(self) -> bool {
        self.0 & (PHASE_MASK | PFOR | TRACED) == RUNNABLE
    }
    /// `is_runnable_single_untraced`, and not cancelled: a plain job a
    /// wait may run inline at once. One mask and compare.
    #[inline]
    pub(crate) fn is_plain_runnable(self) -> bool {
        self.0 & (PHASE_MASK | PFOR | TRACED | CANCELLED) == RUNNABLE
    }
    /// Finished failed (a panic, a failed dependency or a cancel).
    #[inline]
    pub(crate) fn is_failed(self) -> bool {
        self.0 & FAILED != 0
    }
    /// Skipped because a dependency failed.
    #[inline]
    pub(crate) fn is_poisoned(self) -> bool {
        self.0 & POISONED != 0
    }
    /// Cancelled before it started: the canceller owns (dropped) the
    /// closure.
    #[inline]
    pub(crate) fn is_cancelled(self) -> bool {
        self.0 & CANCELLED != 0
    }
    /// Some waiter needs this job (`WAITED`).
    #[inline]
    pub(crate) fn is_waited(self) -> bool {
        self.0 & WAITED != 0
    }
    /// The slot holds a parallel_for.
    #[inline]
    pub(crate) fn is_pfor(self) -> bool {
        self.0 & PFOR != 0
    }
}
