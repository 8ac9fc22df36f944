//! The successor in hand (what Taskflow and oneTBB call the scheduler
//! bypass): a job that this thread's `finish` releases is run by this
//! thread next, without a trip through a deque, when a pop of its own
//! deque would have taken it next anyway.
//!
//! ```text
//!   run_claimed ── finish_as::<true> ── releases dependents ──┐
//!        ▲             (lifecycle.rs)                          │ the last plain
//!        │                                                     │ Normal one: kept
//!        │                                                     ▼ (`hand_on`)
//!        └──── claim ◄── may_run_next? ── yes ─── Next { entry, waited }
//!           (claim_next)         │
//!                                no ──► queue_next: queued and told,
//!                                       as `make_runnable` would have
//! ```
//!
//! A kept job is RUNNABLE and on no deque: no thief, waiter or sleeping
//! worker can see it. That is sound because it is kept only between its
//! release and this thread's next step, which is always one of two: claim
//! and run it, or queue it (`queue_next`, with the push, the notify and the
//! waiters' wake that `make_runnable` skipped). `finish_as::<true>` returns
//! it to `run_claimed_as::<_, true>`, which returns it to its only caller,
//! `run_claimed`'s loop, which hands it to `claim_next` at once; nothing in
//! between can block, sleep or unwind (the job's closure has returned and
//! its panic, if any, was caught), so the job reaches a deque or this
//! thread's hands before this thread does anything else.
//!
//! What is kept: a job released by a job that *ran* (not by a cancel, a
//! skip or a loop's last piece), of Normal priority, not pinned to a
//! thread or a class, not cancelled, not a loop, and not while jobs are
//! shuffled (`Builder::shuffle` tests orders a deque would give). Of the
//! dependents one `finish` releases, the last one is kept (a pop would
//! have taken the last one pushed), unless an earlier one is needed by a
//! waiter and the last one is not.
//!
//! At most `HANDOFF_RUN` jobs are handed on in a row; the next is queued,
//! and the thread's loop pops it.
//!
//! When it runs (`may_run_next`), so that no order a deque pop would keep
//! is broken:
//! - a worker at its top level: as `find_and_run` would pop its own Normal
//!   deque: not benched, nothing pinned to it, its High deque empty, and,
//!   unless the job is needed itself, its needed deque empty and no
//!   `Urgent` hint set;
//! - a thread waiting in `complete` (`wait_loop`): only a job some waiter
//!   needs (`WAITED`), as `help_needed` takes, while the job it waits for
//!   is unfinished and nothing pinned to it or queued for its class waits;
//! - any other thread (outside every wait, or in a wait of its own inside
//!   a job that `wait_loop` ran): never. The wait's fast path
//!   (`run_if_on_top`, which runs the very job waited for) keeps nothing.

use crate::context::{bump, HIGH, NORMAL};
use crate::job::Entry;
use crate::registry::ThisThread;
use crate::slot::Snapshot;

/// Jobs a thread hands on in a row before it queues the next one and goes
/// back to its loop, which then pops it: a worker's loop looks at the
/// bench, the CPUs (`active.rs`, every `POLL_JOBS` jobs) and shutdown
/// between jobs, and a job that schedules its own successor for ever must
/// not keep it from them. One push and pop per this many jobs.
pub(crate) const HANDOFF_RUN: u32 = 64;

/// A released job kept in hand (see the module docs).
pub(crate) struct Next {
    pub(crate) e: Entry,
    /// It was `WAITED` when released: queued, it would also go on the
    /// needed deque and wake parked waiters.
    pub(crate) waited: bool,
}

/// Did `finish` release a job that it may keep, and where does it go?
/// `None`: queue every released job (the caller cannot run one next).
pub(crate) type Hand<'a> = Option<&'a mut Option<Next>>;

impl ThisThread<'_> {
    /// Keep the released job `e` (Normal priority, plain) in `kept`: the
    /// job kept before it is queued, unless that one is needed by a waiter
    /// and `e` is not (then `e` is queued).
    pub(crate) fn hand_on(self, kept: &mut Option<Next>, e: Entry, waited: bool) {
        let new = Next { e, waited };
        if kept.as_ref().is_some_and(|old| old.waited && !waited) {
            self.queue_next(new);
        } else if let Some(old) = kept.replace(new) {
            self.queue_next(old);
        }
    }

    /// Queue a job kept in hand as `make_runnable` would have
    /// (`queue_released`).
    #[inline(never)]
    fn queue_next(self, n: Next) {
        self.queue_released(n.e, NORMAL, n.waited);
    }

    /// The job `run_claimed`'s last finish kept: claimed, for the caller
    /// to run next, when `may_run_next` allows and fewer than
    /// `HANDOFF_RUN` jobs were handed on in a row (`handed`, counted
    /// here); otherwise queued, and `None`. `None` too when the claim
    /// fails: another thread took the job through its handle (a waiter's
    /// `help_once`), as for a stale deque entry. (It was not cancelled
    /// when kept, and CANCELLED is only set while WAITING.)
    #[inline]
    pub(crate) fn claim_next(self, n: Next, handed: &mut u32) -> Option<(Entry, Snapshot)> {
        if *handed >= HANDOFF_RUN || !self.may_run_next(&n) {
            self.queue_next(n);
            return None;
        }
        let claimed = n.e.slot().claim(n.e.gen)?;
        bump(&self.ctx.counters.handoffs);
        *handed += 1;
        Some((n.e, claimed))
    }

    /// May this thread run the kept job `n` before it looks anywhere
    /// else? (The rules are in the module docs.)
    fn may_run_next(self, n: &Next) -> bool {
        let ctx = self.ctx;
        if ctx.pinned.has_any() || !ctx.local(HIGH).is_empty() {
            return false;
        }
        if ctx.is_top_level_worker() {
            if ctx.index >= self.reg.sleep().active() {
                return false; // benched: `benched_round` decides
            }
            return n.waited
                || !((self.reg.inheritance() && !ctx.needed.is_empty())
                    || self.reg.urgent().is_set());
        }
        n.waited && ctx.wait_target_unfinished() && !self.class_work_visible()
    }
}
