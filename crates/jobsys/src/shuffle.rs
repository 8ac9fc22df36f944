//! Shuffled order, a test mode (`Builder::shuffle(seed)`): wherever a
//! thread may choose among ready jobs, the choice comes from its context's
//! random sequence, started from the seed. A missing dependency hides as
//! long as the usual order happens to run the jobs right; a shuffled order
//! shows it, and at `workers(0)` the same seed repeats the same order.
//!
//! What is shuffled: which entry of its own deque a thread takes (any of
//! the newest `WINDOW`, not the newest), whether it looks at its own deque
//! or steals first, the victim a steal starts from, and which of the jobs
//! a waiter needs it runs first. What is kept: pinned jobs first (only
//! this thread may run them), jobs some waiter needs before other work
//! (priority inheritance), then High, Normal, Low. Nothing here runs when
//! the mode is off: workers pick their loop once (`worker.rs`), waiters
//! look at `Registry::shuffle` only once they help.

use crate::context::{bump, HIGH, PRIORITIES};
use crate::deque::Local;
use crate::job::Entry;
use crate::registry::ThisThread;

/// How many of a deque's newest entries a shuffled pop chooses among.
const WINDOW: usize = 16;

impl ThisThread<'_> {
    /// A random one of the newest `WINDOW` entries of `local` (this
    /// thread's end of one of its deques): pop them, keep one, push the
    /// others back in their order. Only the owner pops and pushes there;
    /// thieves meanwhile see a shorter deque, never a lost or doubled
    /// entry (each popped entry is either returned or pushed back). On the
    /// stack: the mode allocates no more than the usual order does.
    fn pop_shuffled(self, local: &Local) -> Option<Entry> {
        let mut taken: [Option<Entry>; WINDOW] = [None; WINDOW];
        let mut n = 0;
        while n < WINDOW {
            match local.pop() {
                Some(e) => taken[n] = Some(e),
                None => break,
            }
            n += 1;
        }
        if n == 0 {
            return None;
        }
        let pick = (self.ctx.next_random() % n as u64) as usize;
        let e = taken[pick].take();
        // Newest last, as they were.
        for rest in taken[..n].iter().rev().flatten() {
            local.push(*rest);
        }
        if n > 1 {
            // They were out of sight for a moment: a worker may have gone
            // to sleep meanwhile (`wait::loom_tests` models that gap).
            self.notify_work();
        }
        e
    }

    /// `find_and_run`, shuffled when the mode is on: for the paths that
    /// look for work now and then (shutdown's drain, waiting for room),
    /// not once per job.
    pub(crate) fn find_and_run_any(self, searching: &mut bool) -> bool {
        if self.reg.shuffle().is_some() {
            self.find_and_run_shuffled(searching)
        } else {
            self.find_and_run(searching)
        }
    }

    /// `find_and_run` in shuffled order (the worker loop's, when shuffling).
    pub(crate) fn find_and_run_shuffled(self, searching: &mut bool) -> bool {
        if self.ctx.pinned.has_any()
            && self.run_one_pinned(&mut || self.found_work(searching, || Some(self.ctx.index)))
        {
            return true;
        }
        if self.run_one_class(&mut || self.found_work(searching, || Some(self.ctx.index))) {
            return true;
        }
        if self.reg.inheritance()
            && self.run_needed_shuffled(&mut || self.found_work(searching, || Some(self.ctx.index)))
        {
            return true;
        }
        for prio in HIGH..PRIORITIES {
            let start = self.first_victim();
            let own_first = self.ctx.next_random() & 1 == 0;
            if (own_first && self.pop_shuffled_and_run(prio, searching))
                || self.steal_and_run(prio, searching, start)
                || (!own_first && self.pop_shuffled_and_run(prio, searching))
            {
                return true;
            }
        }
        bump(&self.ctx.counters.failed_steals);
        false
    }

    /// Pop our own `prio` deque in shuffled order until an entry runs.
    fn pop_shuffled_and_run(self, prio: usize, searching: &mut bool) -> bool {
        let local = self.ctx.local(prio);
        while let Some(e) = self.pop_shuffled(local) {
            let more = || (!local.is_empty()).then_some(self.ctx.index);
            if self.run_entry_found(e, searching, more) {
                return true;
            }
        }
        false
    }

    /// A wait's help in shuffled order: a random one of our own needed
    /// entries, else other threads' from a random victim.
    pub(crate) fn run_needed_shuffled(self, on_claim: &mut dyn FnMut()) -> bool {
        while let Some(e) = self.pop_shuffled(self.ctx.needed_local()) {
            if self.run_entry(e, on_claim) {
                return true;
            }
        }
        self.run_others_needed(on_claim, self.first_victim())
    }
}
