//! `complete(h)`: wait for a job, helping only with work it needs.
//!
//! A waiter first tries `h` itself (the common fork/join case: it is on top
//! of the waiter's own deque). Otherwise it walks `h`'s unfinished
//! dependencies once, marking each `WAITED` ("someone waits on a job that
//! needs this") and running the runnable ones it meets. After that, any entry
//! it pops from its own deque whose job is `WAITED` is needed and may be run;
//! others are left alone. Released `WAITED` jobs are also offered on each
//! context's `needed` deque, which only waiters take from. When nothing
//! needed is runnable it spins for a bounded time, then parks on its own
//! futex word, registered in `Waiters`:
//! - the thread that finishes `h` wakes it (it sees `h` pinned), and
//! - a thread that releases a `WAITED` job it will not run itself soon
//!   wakes every parked waiter, so needed work never sits in a queue while
//!   the threads that need it sleep.
//!
//! A failed job's slot is reused like any other; its failure stays in the
//! registry's failure log (`failures.rs`), so `complete` reports a panic
//! even when called after the slot moved on to later jobs.
//!
//! A scope's final wait (`wait_scoped`) is the one wait that never gives
//! up: it returns only after the job's closure has run or been dropped.
//! Wait cycles are found in two places: the walk (a thread waits on a job
//! that needs a job it is inside of) and `Waiters::register` (a ring of
//! parked threads, each inside the job the previous one waits on). Cycles
//! that pass through a dependency edge of a job no thread runs yet, and
//! cycles across two job systems, are not detected (docs/design-notes.md,
//! "Known limits").

use crate::context::{WaitScratch, HIGH, PRIORITIES};
use crate::error::JobError;
use crate::failures::Outcome;
use crate::handle::JobHandle;
use crate::job::Entry;
use crate::registry::ThisThread;
use crate::slot::Snapshot;

use crate::sync::{fence, Ordering};
use crate::waiters::BROKEN;
use std::time::Instant;

mod depth;
pub(crate) use depth::DepthGuard;

/// When a timed wait gives up (`wait_until`); `None`: never.
type Deadline = Option<Instant>;

/// Is the deadline (if any) past?
#[inline]
fn past(deadline: Deadline) -> bool {
    deadline.is_some_and(|d| Instant::now() >= d)
}

/// Why a scope cancelled one of its jobs (`wait_scoped`).
const SCOPE_CYCLE: &str = "the job was cancelled before it started: the scope that owned it \
                           could not wait for it (a job waited on itself)";

/// What a scope's wait reports for a job that someone else cancelled while
/// it waited on the job the scope's thread is inside of (`wait_scoped`).
const SCOPE_CYCLE_CANCELLED: &str = "the job was cancelled before it started (it waited on the \
                                     job its scope's thread runs)";

/// Stale entries a thread may leave in its deques before it compacts them.
const STALE_LIMIT: u32 = 64;

impl ThisThread<'_> {
    /// Drop the entries of jobs that this thread ran through their handles
    /// from its own deques, once enough may have piled up. A thread that
    /// is not a worker never pops its deques to the bottom, and with no
    /// worker stealing from it (0 workers, or all benched) the dead entries
    /// under live ones grew without bound (~24 B per job). Pops everything,
    /// keeps what is still runnable, pushes it back in the same order:
    /// amortised O(1) per entry left behind. `self.ctx` is the caller's own.
    #[inline]
    pub(crate) fn compact_deques(self) {
        if self.ctx.stale() >= STALE_LIMIT {
            self.compact_deques_now();
        }
    }

    #[cold]
    #[inline(never)]
    fn compact_deques_now(self) {
        self.ctx.clear_stale();
        // No job runs below: the buffer is back before anything can nest.
        let mut scratch = self.ctx.take_wait_scratch();
        let keep = &mut scratch.keep;
        let mut kept = false;
        for prio in HIGH..PRIORITIES {
            let local = self.ctx.local(prio);
            while let Some(e) = local.pop() {
                if still_queued(e) {
                    keep.push(e);
                }
            }
            kept |= !keep.is_empty();
            // Popped newest first: push back oldest first.
            for e in keep.drain(..).rev() {
                local.push(e);
            }
        }
        self.ctx.put_wait_scratch(scratch);
        if kept {
            // A worker that looked while the deques were empty may have
            // gone to sleep: the pushes back need the usual notify.
            self.notify_work();
        }
    }

    /// Wait for `h`, helping with the work it needs.
    pub(crate) fn wait(self, h: JobHandle) -> Result<(), JobError> {
        self.wait_with(h, false, None)
    }

    /// `wait` that gives up at `deadline` with `Err(Timeout)`, leaving the
    /// job as it is (not cancelled). It helps as `wait` does meanwhile, and
    /// a job it runs is not interrupted: it can return later than
    /// `deadline` by the length of one such job.
    pub(crate) fn wait_until(self, h: JobHandle, deadline: Instant) -> Result<(), JobError> {
        self.wait_with(h, false, Some(deadline))
    }

    /// A scope's wait for one of its jobs, which may borrow the scope's
    /// stack: it returns only once the job's closure has run or been
    /// dropped, whatever error it reports.
    ///
    /// - A job that cannot start because it (transitively) needs a job this
    ///   thread is inside of is cancelled: its closure is dropped here and
    ///   it finishes as failed when its dependencies do.
    /// - A running job whose thread waits, through a cycle of waits, on a
    ///   job this thread is inside of: that other wait is ended with
    ///   `WaitOnSelf` (`Waiters::register`), and this one goes on until the
    ///   job finishes.
    ///
    /// Either way the cycle is reported as `Err(WaitOnSelf)`, after the
    /// closure is gone. A job in such a cycle that was cancelled already
    /// (by `JobSystem::cancel`) is reported as cancelled, once its
    /// canceller has dropped its closure.
    pub(crate) fn wait_scoped(self, h: JobHandle) -> Result<(), JobError> {
        let mut cycle = false;
        loop {
            match self.wait_with(h, true, None) {
                Err(JobError::WaitOnSelf) => {
                    cycle = true;
                    if self.ctx.is_running(h.slot.as_ptr(), h.gen) {
                        // A scope's final wait runs below the scope's own
                        // frame, never inside one of its jobs.
                        unreachable!("jobsys: a scope waits on a job it is running");
                    }
                    if crate::cancel::cancel_with(self.reg, self.ctx, h, SCOPE_CYCLE, false) {
                        return Err(JobError::WaitOnSelf);
                    }
                    // Cancelled already (`JobSystem::cancel`, or another
                    // scope's cycle): it cannot finish before the job this
                    // thread is inside of, but its closure is gone once its
                    // canceller's drop has ended. Before this check the
                    // loop met the same cycle again at once, for ever.
                    if self.wait_cancelled_drop(h) {
                        return Err(JobError::Cancelled(SCOPE_CYCLE_CANCELLED.into()));
                    }
                    // Runnable, running or finished: wait again.
                }
                _ if cycle => return Err(JobError::WaitOnSelf),
                r => return r,
            }
        }
    }

    /// If `h` was cancelled while it waits for its dependencies, wait until
    /// its canceller has dropped its closure (another thread's drop may
    /// still use what the closure borrows) and return true; false if `h`
    /// is not such a job (any more). Spins, then sleeps in growing steps:
    /// only a scope in a wait cycle whose job another thread cancelled
    /// gets here, and the drop runs the user's code.
    #[cold]
    fn wait_cancelled_drop(self, h: JobHandle) -> bool {
        let mut backoff = self.reg.backoff();
        let mut nap = std::time::Duration::from_micros(20);
        loop {
            match h.slot().cancelled_while_waiting(h.gen) {
                None => return false,
                Some(true) => return true,
                Some(false) => {}
            }
            let spent = backoff.elapsed();
            if spent < self.reg.wait_spin() {
                backoff.snooze(spent);
            } else {
                std::thread::sleep(nap);
                nap = (nap * 2).min(std::time::Duration::from_millis(1));
            }
        }
    }

    fn wait_with(
        self,
        h: JobHandle,
        must_finish: bool,
        deadline: Deadline,
    ) -> Result<(), JobError> {
        if h.system != self.reg.id() {
            return Err(JobError::ForeignHandle);
        }
        let slot = h.slot();
        let s = slot.state();
        if s.generation() != h.gen {
            return self.observe_recycled(h);
        }
        // Fast path: `h` is on top of our own deque (fork/join, W1 single)
        // and was published with the tracer off (no `TRACED`: `submit`
        // checked it, for the job's ready event). This path has no event
        // site: a job waited on this way pays one tracer check in all, at
        // submit, not one per event (the wait's begin and end, the job's
        // begin and end). If a capture starts between its submit and this
        // wait, the wait and the job it runs here are left out of the
        // capture whole, as the job's ready is. A wait that does not end
        // here is traced from `wait_slow` on.
        //
        // No look at the running stack either: it holds claimed jobs
        // (RUNNING), loops (PFOR, RUNNABLE while their pieces run),
        // closures a canceller drops (CANCELLED; `DROPPING` keeps such a
        // job WAITING until the drop ends, and the flag is checked here
        // all the same) and `*_now` events (WAITING until their guard is
        // gone), so a RUNNABLE job with none of those flags is not on it.
        if s.is_plain_runnable() && self.ctx.batch_pending() == 0 {
            let _depth = DepthGuard::new(self);
            self.run_if_on_top::<false>(h);
            return self.wait_after_top(h, must_finish, deadline);
        }
        self.wait_general(h, s, must_finish, deadline)
    }

    /// `wait_with` of a job it saw in state `s` that is not a plain
    /// runnable one, or with a batch to flush first.
    #[inline(never)]
    fn wait_general(
        self,
        h: JobHandle,
        s: Snapshot,
        must_finish: bool,
        deadline: Deadline,
    ) -> Result<(), JobError> {
        if s.is_finished() {
            return self.observe(h);
        }
        // Nothing may wait forever on a batch this thread forgot to flush.
        if self.ctx.batch_pending() != 0 {
            self.flush();
        }
        if self.ctx.is_running(h.slot(), h.gen) {
            return Err(JobError::WaitOnSelf);
        }
        let _depth = DepthGuard::new(self);
        // The fast path (see `wait_with`) of a job that has the CANCELLED
        // flag or that waited for the flush.
        if s.is_runnable_single_untraced() {
            self.run_if_on_top::<false>(h);
            return self.wait_after_top(h, must_finish, deadline);
        }
        self.wait_slow(h, Some(s), must_finish, deadline)
    }

    /// The rest of a wait after `run_if_on_top`: done if it ran `h` (or
    /// `h` finished meanwhile), else the traced slow path.
    #[inline(always)]
    fn wait_after_top(
        self,
        h: JobHandle,
        must_finish: bool,
        deadline: Deadline,
    ) -> Result<(), JobError> {
        let s = h.slot().state();
        if s.generation() != h.gen {
            return self.observe_recycled(h);
        }
        if s.is_finished() {
            return self.observe(h);
        }
        self.wait_slow(h, None, must_finish, deadline)
    }

    /// `wait_with` past its fast path, or for a `TRACED` job: the traced
    /// wait (its begin first, its end on every return), then, for a job
    /// `wait_with` saw in state `seen`, the fast path with its events, then
    /// the loop.
    #[inline(never)]
    fn wait_slow(
        self,
        h: JobHandle,
        seen: Option<Snapshot>,
        must_finish: bool,
        deadline: Deadline,
    ) -> Result<(), JobError> {
        let _trace = crate::trace::WaitTrace::of_handle(self.reg.site(self.ctx), h);
        if let Some(s) = seen {
            if s.is_runnable_single() {
                self.run_if_on_top::<true>(h);
            }
        }
        self.wait_loop(h, must_finish, deadline)
    }

    /// The fast path of a wait, `h` seen runnable and not a loop: if `h`
    /// is on top of our own deque, run it here. `TRACE`: as
    /// `run_claimed_as`.
    #[inline(always)]
    fn run_if_on_top<const TRACE: bool>(self, h: JobHandle) {
        let slot = h.slot();
        // No pin: the slot may be reused meanwhile, so the priority is a
        // guess; the popped entry is compared with `h` before it runs.
        // The top is taken only if it is `h` (`pop_if`): an entry this
        // thread does not take stays where thieves see it. (Popping it to
        // look and pushing it back hid it for a moment: a worker whose
        // last look before sleeping, the re-check after
        // `Sleep::prepare_park`, fell there slept while the entry waited
        // for it; `wait::loom_tests` has the model.)
        let local = self.ctx.local(slot.prio_hint());
        if local
            .pop_if(|e| e.slot == h.slot && e.gen == h.gen)
            .is_some()
        {
            if let Some(claimed) = slot.claim(h.gen) {
                // `h` itself: once it ran, the wait is over, so nothing is
                // kept in hand (`handoff.rs`).
                let kept = self.run_claimed_as::<TRACE, false>(slot, h.gen, claimed);
                debug_assert!(kept.is_none());
            }
        }
    }

    /// The rest of a wait: help, spin, park until `h` finishes (or the
    /// deadline passes: `Timeout`, checked only when there is nothing to
    /// help with, so a finished job is never reported as timed out). The
    /// `WAITED` marks of a wait that times out stay: they only give the
    /// marked jobs precedence, and those jobs are still needed.
    fn wait_loop(
        self,
        h: JobHandle,
        must_finish: bool,
        deadline: Deadline,
    ) -> Result<(), JobError> {
        let slot = h.slot();
        let mut marked = false;
        let _target = depth::WaitTarget::set(self, h);
        loop {
            let s = slot.state();
            if s.generation() != h.gen {
                return self.observe_recycled(h);
            }
            if s.is_finished() {
                return self.observe(h);
            }
            if self.help_once(h, &mut marked)? {
                continue;
            }
            if past(deadline) {
                return Err(JobError::Timeout);
            }
            if self.spin_for_help(h, &mut marked, deadline)? {
                continue;
            }
            self.park_on(h, &mut marked, must_finish, deadline)?;
        }
    }

    /// One attempt to run something `h` needs. Ok(true) if something ran.
    fn help_once(self, h: JobHandle, marked: &mut bool) -> Result<bool, JobError> {
        let slot = h.slot();
        let noop = &mut || {};
        // 1. h itself.
        if self.run_entry(
            Entry {
                slot: h.slot,
                gen: h.gen,
            },
            noop,
        ) {
            // Its entry (or a loop's next one) stays in a deque, maybe ours.
            self.ctx.note_stale();
            return Ok(true);
        }
        // 2. Mark h's unfinished dependencies once; run a runnable one.
        if !*marked {
            *marked = true;
            slot.mark_waited(h.gen);
            // The walk's buffers, reused from wait to wait. No job runs
            // until they are back (a nested wait would find empty ones).
            let mut scratch = self.ctx.take_wait_scratch();
            let walked = self.mark_needed(h, &mut scratch);
            // Offer them on our `needed` deque: workers take those before
            // any High/Normal/Low work (priority inheritance), and we run
            // them from there ourselves below.
            let offered = !scratch.runnable.is_empty();
            for e in scratch.runnable.drain(..) {
                self.ctx.push_needed(e, still_queued);
            }
            self.ctx.put_wait_scratch(scratch);
            if offered {
                self.notify_work();
                if walked.is_err() {
                    // We return without running them, and a pruned walk of
                    // another waiter may rely on our marks: wake it.
                    self.wake_parked_waiters();
                }
            }
            walked?;
        }
        self.help_needed()
    }

    /// Run one job that some waiter needs: our own deque's top if it is
    /// marked, else an entry from the `needed` deques. Ok(true) if one ran.
    pub(crate) fn help_needed(self) -> Result<bool, JobError> {
        let noop = &mut || {};
        // 0. Jobs pinned to this thread, then its class's (a worker of a
        //    core class): only such threads can run them, and it is idle
        //    (all of them, needed or not, as enkiTS's waits do).
        if self.run_one_pinned(noop) || self.run_one_class(noop) {
            return Ok(true);
        }
        // Shuffled (`Builder::shuffle`): a random one of the needed jobs.
        if self.reg.shuffle().is_some() {
            return Ok(self.run_needed_shuffled(noop));
        }
        // 3. Our own High deque's top, if needed; then our own `needed`
        //    deque, where a needed job released by a finish goes
        //    (`queue_runnable`), whatever its priority: before our Normal
        //    and Low tops, as every thread searches it right after its own
        //    High work (a raised critical chain is not held back behind
        //    our needed Normal work); then those tops; then the `needed`
        //    deques of the others.
        if self.run_top_if_needed(HIGH) || self.run_own_needed(noop) {
            return Ok(true);
        }
        for prio in HIGH + 1..PRIORITIES {
            if self.run_top_if_needed(prio) {
                return Ok(true);
            }
        }
        Ok(self.run_others_needed(noop, self.first_victim()))
    }

    /// Run our own `prio` deque's top if a waiter needs it. Looked at in
    /// place (see `run_if_on_top`): taken if needed, or if dead (its job
    /// was taken through a handle: `run_entry` drops it, so that the next
    /// look sees the entry below).
    #[inline]
    fn run_top_if_needed(self, prio: usize) -> bool {
        let noop = &mut || {};
        let local = self.ctx.local(prio);
        local
            .pop_if(|e| is_needed(e) || !still_queued(e))
            .is_some_and(|e| self.run_entry(e, noop))
    }

    /// Walk `h`'s unfinished dependencies (depth-first), mark them WAITED,
    /// collect the runnable ones, and detect a wait on a job this thread is
    /// inside of.
    ///
    /// Invariant the pruning rests on: **a walk that sets `WAITED` on a node
    /// goes on to visit all of that node's unfinished dependencies** (no walk
    /// stops early: a detected self-wait is reported after the walk). So a
    /// node found already `WAITED` had its graph marked, and its runnable
    /// jobs offered on a `needed` deque, by another walk (or is being, by a
    /// waiter that helps until its target, which needs them, finishes); and
    /// a job released later is offered as needed by `make_runnable`.
    ///
    /// - A thread inside no job (the main thread at a sync point) cannot
    ///   wait on itself, so it stops at nodes already marked: over a frame,
    ///   each job is marked once, not once per sync point (W3 at 0 workers
    ///   spent 40% of its overhead re-walking with a hash set).
    /// - A thread inside jobs walks the whole unfinished graph once (a hash
    ///   set keeps each node to one visit), since a job it is inside of may
    ///   sit below a node another walk marked.
    ///
    /// The runnable jobs are pushed to `scratch.runnable`; the walk uses
    /// `scratch.stack` and `scratch.visited` and leaves them empty.
    fn mark_needed(self, h: JobHandle, scratch: &mut WaitScratch) -> Result<(), JobError> {
        let inside_job = self.ctx.inside_job();
        let WaitScratch {
            stack,
            runnable,
            visited,
            ..
        } = scratch;
        let mut self_wait = false;
        stack.clear();
        stack.push((h.slot, h.gen));
        while let Some((p, gen)) = stack.pop() {
            if inside_job && !visited.insert((p.as_ptr(), gen)) {
                continue;
            }
            // SAFETY: slots live as long as the registry.
            let node = unsafe { p.as_ref() };
            let Some(st) = node.pin(gen) else { continue };
            // A job this thread is inside of (a single job, or a
            // parallel_for whose piece we are running, which stays RUNNABLE)
            // cannot finish while we wait below it.
            if inside_job && self.ctx.is_running(node, gen) {
                self_wait = true;
                // Marked, and walked on, all the same: a later walk that
                // meets a node this one marked stops there, relying on the
                // invariant above. A guard's event held here (WAITING on
                // its group) and a cancelled job whose closure this thread
                // drops (DROPPING keeps it WAITING on its dependencies) have
                // unfinished dependencies: left unmarked, the event went to
                // a plain deque once the guard dropped; marked but not
                // walked, a runnable dependency stayed on a plain deque.
                // Either way a waiter at 0 workers, which never searches
                // plain deques, parked for ever.
                node.mark_waited(gen);
                if st.is_waiting() {
                    // SAFETY: pinned, and WAITING: published with its edges.
                    unsafe { node.for_each_dep(|dep, dgen| stack.push((dep, dgen))) };
                }
                self.unpin(node);
                continue;
            }
            let before = node.mark_waited(gen);
            let is_root = p == h.slot && gen == h.gen;
            if !inside_job && !is_root && before.is_some_and(Snapshot::is_waited) {
                // Marked by another walk (or earlier in this one).
                self.unpin(node);
                continue;
            }
            if st.is_runnable() {
                // A pinned job is on its own thread's queue, not offered.
                if p != h.slot && node.meta().pinned_to().is_none() {
                    runnable.push(Entry { slot: p, gen })
                }
            } else if st.is_waiting() {
                // SAFETY: pinned, and WAITING: published with its edges.
                unsafe { node.for_each_dep(|dep, dgen| stack.push((dep, dgen))) };
            }
            self.unpin(node);
        }
        // Keeps its capacity for the next walk.
        visited.clear();
        if self_wait {
            return Err(JobError::WaitOnSelf);
        }
        Ok(())
    }

    /// Spin a bounded time (the configured wait spin), retrying help.
    fn spin_for_help(
        self,
        h: JobHandle,
        marked: &mut bool,
        deadline: Deadline,
    ) -> Result<bool, JobError> {
        if self.reg.wait_spin().is_zero() {
            return Ok(false);
        }
        let mut backoff = self.reg.backoff();
        loop {
            let s = h.slot().state();
            if s.is_complete_for(h.gen) {
                return Ok(true);
            }
            if self.help_once(h, marked)? {
                return Ok(true);
            }
            let spent = backoff.elapsed();
            if spent >= self.reg.wait_spin() || past(deadline) {
                return Ok(false);
            }
            backoff.snooze(spent);
        }
    }

    /// Sleep until `h` finishes or needed work may have become runnable
    /// (or the deadline passes: the caller's loop then reports it).
    pub(crate) fn park_on(
        self,
        h: JobHandle,
        marked: &mut bool,
        must_finish: bool,
        deadline: Deadline,
    ) -> Result<(), JobError> {
        let slot = h.slot();
        if slot.pin(h.gen).is_none() {
            return Ok(());
        }
        if let Err(e) = self
            .reg
            .waiters()
            .register(self.ctx, (slot, h.gen), must_finish)
        {
            self.unpin(slot);
            return Err(e);
        }
        // Re-check after registering; pairs with the SeqCst count loads in
        // `finish` (via `wake_target`), `make_runnable` and `offer_rest`
        // (via `wake_all_parked`, after their push and `notify_work`'s
        // fence).
        fence(Ordering::SeqCst);
        let s = slot.state();
        let helped = if s.is_finished() {
            Ok(true)
        } else {
            self.help_once(h, marked)
        };
        if !matches!(helped, Ok(false)) {
            self.reg.waiters().unregister(self.ctx);
            self.unpin(slot);
            return helped.map(|_| ());
        }
        crate::trace::sleep_begin(self.reg.site(self.ctx));
        let mut word = self.ctx.park.load(Ordering::Acquire);
        while word == 0 {
            match deadline {
                None => self.ctx.park.wait(0),
                // Timed out: still registered, so a waker may set the word
                // until `unregister` below takes us off the list (under its
                // lock, which every waker holds while it sets a word).
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => self.ctx.park.wait_for(0, left),
                    _ => break,
                },
            }
            word = self.ctx.park.load(Ordering::Acquire);
        }
        crate::trace::sleep_end(self.reg.site(self.ctx));
        self.reg.waiters().unregister(self.ctx);
        self.unpin(slot);
        if word == BROKEN {
            return Err(JobError::WaitOnSelf);
        }
        Ok(())
    }

    /// `h` finished: report its failure, if any (from the slot while it
    /// still holds `h`'s generation, else from the failure log).
    fn observe(self, h: JobHandle) -> Result<(), JobError> {
        let slot = h.slot();
        let s = slot.state();
        if s.generation() != h.gen {
            return self.observe_recycled(h);
        }
        if !s.is_failed() {
            return Ok(());
        }
        let Some(st) = slot.pin(h.gen) else {
            return self.observe_recycled(h);
        };
        let failure = slot.failure();
        self.unpin(slot);
        match failure {
            Some(f) => Err(f.to_error(st.is_poisoned())),
            None => Ok(()),
        }
    }

    /// `h`'s slot moved on to a later job: `h` finished; report the failure
    /// the log remembers for it, or that its outcome is no longer known
    /// (`failures.rs`). One load when the log never recorded anything.
    #[inline]
    pub(crate) fn observe_recycled(self, h: JobHandle) -> Result<(), JobError> {
        if self.reg.failures().is_empty() {
            return Ok(());
        }
        self.observe_logged(h)
    }

    #[cold]
    fn observe_logged(self, h: JobHandle) -> Result<(), JobError> {
        match self.reg.failures().lookup(h.slot.as_ptr() as usize, h.gen) {
            Outcome::Succeeded => Ok(()),
            Outcome::Failed(rec) => Err(rec.failure.to_error(rec.ending.poisoned())),
            Outcome::Unknown => Err(JobError::OutcomeUnknown),
        }
    }
}

/// Some waiter needs this entry's job and it can still run.
#[inline]
fn is_needed(e: Entry) -> bool {
    if e.is_stack() {
        return false;
    }
    let s = e.slot().state();
    s.is_runnable_for(e.gen) && s.is_waited()
}

/// The entry still names a runnable job (worth keeping in a deque).
#[inline]
pub(crate) fn still_queued(e: Entry) -> bool {
    if e.is_stack() {
        return true;
    }
    let s = e.slot().state();
    s.is_runnable_for(e.gen)
}

#[cfg(all(test, loom))]
mod loom_tests;
