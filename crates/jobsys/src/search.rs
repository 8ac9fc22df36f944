//! Finding work: the order a thread takes jobs in (own High deque, jobs a
//! waiter needs, then High/Normal/Low from its own deque and by stealing
//! from a random victim), and the wake cascade (`notify_work`,
//! `found_work`: the last searcher to find work wakes the next worker).
//! Methods of `ThisThread` (`registry.rs`): each runs on one thread's
//! behalf, with its context.

use crate::builder::IdlePolicy;
use crate::context::{bump, HIGH, NORMAL, PRIORITIES};
use crate::job::Entry;
use crate::registry::ThisThread;

impl ThisThread<'_> {
    /// Work was pushed on a deque: wake a worker if needed (nothing to do
    /// without workers).
    #[inline]
    pub(crate) fn notify_work(self) {
        self.notify_work_from(self.ctx.index);
    }

    /// `notify_work` for work visible in context `from`'s deques (a
    /// woken worker looks there first).
    #[inline]
    pub(crate) fn notify_work_from(self, from: u32) {
        if self.reg.num_workers() != 0 {
            // The wake is recorded inside, before the store that ends the
            // wakee's park (the wakee's `sleep_end` is stamped after its
            // Acquire load sees that store): its arrow never points back.
            let traced = |w| crate::trace::wake_issued(self.reg.site(self.ctx), Some(w));
            if self.reg.sleep().notify_work(from, traced).is_some() {
                bump(&self.ctx.counters.wakes);
            }
        }
    }

    // ---- finding work -----------------------------------------------------

    /// Find one runnable job and run it. Order: our own High deque, then
    /// jobs some waiter needs (the `needed` deques: priority inheritance),
    /// then High from others, then Normal (own, others), then Low. Other
    /// deques are visited from a random victim. Returns whether anything ran.
    ///
    /// Inline: the worker loop calls it for every job. A busy worker's
    /// usual case (nothing pinned, its own High and needed deques empty, no
    /// `Urgent` hint, a Normal entry on its own deque) is handled here,
    /// without a call frame of its own; anything else goes to
    /// `find_and_run_own` (its own pinned/High/needed entries first) or
    /// `find_and_run_rest` (the same order from the hint on).
    #[inline(always)]
    pub(crate) fn find_and_run(self, searching: &mut bool) -> bool {
        // Each look costs two loads when empty. Only this thread pushes on
        // its own deques, so their `back` is current, and an older `front`
        // is smaller: empty here means a pop finds nothing.
        if self.ctx.pinned.has_any()
            || !self.ctx.local(HIGH).is_empty()
            || (self.reg.inheritance() && !self.ctx.needed.is_empty())
        {
            return self.find_and_run_own(searching);
        }
        let swept = self.reg.urgent().take();
        if !swept {
            let local = self.ctx.local(NORMAL);
            if !local.is_empty() && self.pop_and_run_inline(NORMAL, searching) {
                return true;
            }
        }
        self.find_and_run_rest(searching, swept)
    }

    /// `find_and_run` when this thread's own pinned, High or needed queue
    /// has entries.
    #[inline(never)]
    fn find_and_run_own(self, searching: &mut bool) -> bool {
        // Jobs pinned to this thread first: nobody else may run them.
        if self.ctx.pinned.has_any()
            && self.run_one_pinned(&mut || self.found_work(searching, || Some(self.ctx.index)))
        {
            return true;
        }
        // Our own High deque, and our own needed one: a job this worker
        // released for a waiter is there, and as a top-level worker it did
        // not wake the waiters for it (`make_runnable`), so it must run it
        // next whatever the hint below says.
        if self.pop_and_run(HIGH, searching)
            || (self.reg.inheritance()
                && self.run_own_needed(&mut || self.found_work(searching, || Some(self.ctx.index))))
        {
            return true;
        }
        let swept = self.reg.urgent().take();
        self.find_and_run_rest(searching, swept)
    }

    /// `find_and_run` from the `Urgent` hint on (`swept`: the hint was
    /// taken, set). The busy path may already have popped our own Normal
    /// deque empty; popping it again costs two loads.
    #[inline(never)]
    fn find_and_run_rest(self, searching: &mut bool, swept: bool) -> bool {
        // Our class's jobs (`classes.rs`): only workers of the class may
        // run them, so before anything we could steal.
        if self.run_one_class(&mut || self.found_work(searching, || Some(self.ctx.index))) {
            return true;
        }
        // One random first victim for every sweep of this search.
        let start = self.first_victim();
        // Others' High and needed deques only when some were pushed since
        // the last sweep (`Urgent`); otherwise go straight to Normal work.
        if swept && self.run_urgent(searching, start) {
            return true;
        }
        for prio in HIGH + 1..PRIORITIES {
            if self.pop_and_run(prio, searching) || self.steal_and_run(prio, searching, start) {
                return true;
            }
        }
        // A stale hint must not hide work: sweep before giving up.
        if !swept && self.run_urgent(searching, start) {
            return true;
        }
        bump(&self.ctx.counters.failed_steals);
        false
    }

    /// Jobs some waiter needs (priority inheritance) in other contexts'
    /// deques, then High jobs of other threads. A hit leaves the `Urgent`
    /// hint set: more may wait.
    fn run_urgent(self, searching: &mut bool, start: usize) -> bool {
        let found = (self.reg.inheritance()
            && self.run_others_needed(
                &mut || self.found_work(searching, || Some(self.ctx.index)),
                start,
            ))
            || self.steal_and_run(HIGH, searching, start);
        if found {
            self.reg.urgent().set();
        }
        found
    }

    /// Run a job from our own `needed` deque (a local pop: cheap when empty).
    #[inline]
    pub(crate) fn run_own_needed(self, on_claim: &mut dyn FnMut()) -> bool {
        !self.ctx.needed.is_empty() && self.run_own_needed_some(on_claim)
    }

    /// `run_own_needed` past its emptiness check.
    #[inline(never)]
    fn run_own_needed_some(self, on_claim: &mut dyn FnMut()) -> bool {
        while let Some(e) = self.ctx.pop_needed() {
            if self.run_entry(e, on_claim) {
                return true;
            }
        }
        false
    }

    /// A random context index to start a sweep over the others at
    /// (`victims`): one random number and one division per search.
    #[inline]
    pub(crate) fn first_victim(self) -> usize {
        (self.ctx.next_random() % self.reg.num_contexts() as u64) as usize
    }

    /// The contexts other than this thread's, from `start` (below the number
    /// of contexts when it was drawn; contexts are never removed) round to
    /// `start - 1`, without a division per step.
    #[inline]
    fn victims(self, start: usize) -> impl Iterator<Item = usize> {
        let n = self.reg.num_contexts();
        let own = self.ctx.index as usize;
        (start..n).chain(0..start.min(n)).filter(move |&v| v != own)
    }

    /// Run a job from another context's `needed` deque, from victim `start`.
    pub(crate) fn run_others_needed(self, on_claim: &mut dyn FnMut(), start: usize) -> bool {
        for v in self.victims(start) {
            while let Some(e) = self.reg.context(v).needed.steal() {
                if self.run_entry(e, on_claim) {
                    return true;
                }
            }
        }
        false
    }

    /// Steal from the `prio` deques of other threads, from a random victim.
    pub(crate) fn steal_and_run(self, prio: usize, searching: &mut bool, start: usize) -> bool {
        // An empty victim costs two loads here, not a call of `steal_from`
        // (a failed search looks at every victim's three deques).
        self.victims(start).any(|v| {
            !self.reg.context(v).stealer(prio).is_empty() && self.steal_from(v, prio, searching)
        })
    }

    /// Steal from context `v`'s `prio` deque until an entry runs.
    pub(crate) fn steal_from(self, v: usize, prio: usize, searching: &mut bool) -> bool {
        let victim = self.reg.context(v).stealer(prio);
        // Short deques are stolen one entry at a time (see steal_into).
        while let Some(e) = victim.steal_into(self.ctx.local(prio)) {
            bump(&self.ctx.counters.steals);
            crate::trace::steal(self.reg.site(self.ctx), v as u32);
            // Where more work is visible, for the cascade's wake.
            let more = || {
                if !victim.is_empty() {
                    Some(v as u32)
                } else {
                    (!self.ctx.local(prio).is_empty()).then_some(self.ctx.index)
                }
            };
            if self.run_entry_found(e, searching, more) {
                return true;
            }
            // A stale entry: what a batch moved into our deque is next.
            if self.pop_and_run(prio, searching) {
                return true;
            }
        }
        false
    }

    /// A worker just woken because context `from` pushed work: look at
    /// `from`'s deques first (High to Low), then search as usual. Saves the
    /// woken worker a sweep over every other context's deques, whose lines
    /// are cold after a sleep (0.1-0.2 us with 2-4 workers here).
    pub(crate) fn find_and_run_from(self, from: usize, searching: &mut bool) -> bool {
        if from != self.ctx.index as usize && from < self.reg.num_contexts() {
            for prio in HIGH..PRIORITIES {
                if self.steal_from(from, prio, searching) {
                    return true;
                }
            }
        }
        self.find_and_run(searching)
    }

    /// Pop our own `prio` deque until an entry runs (stale ones are dropped).
    /// An empty deque costs two loads inline: a worker looks at its own
    /// High deque before every job (`find_and_run`), and an out-of-line
    /// call there showed in the W1 counts when it was empty.
    #[inline]
    pub(crate) fn pop_and_run(self, prio: usize, searching: &mut bool) -> bool {
        // The owner's own `back` and a (possibly older, so smaller) `front`:
        // empty here means `pop` would find it empty too.
        !self.ctx.local(prio).is_empty() && self.pop_and_run_some(prio, searching)
    }

    #[inline(never)]
    fn pop_and_run_some(self, prio: usize, searching: &mut bool) -> bool {
        self.pop_and_run_inline(prio, searching)
    }

    /// The body of `pop_and_run_some`, for `find_and_run`'s busy path.
    #[inline(always)]
    fn pop_and_run_inline(self, prio: usize, searching: &mut bool) -> bool {
        let local = self.ctx.local(prio);
        while let Some(e) = local.pop() {
            let more = || (!local.is_empty()).then_some(self.ctx.index);
            if self.run_entry_found(e, searching, more) {
                return true;
            }
        }
        false
    }

    /// `run_entry` whose claim ends a search (`found_work`). A thread that
    /// is not searching (a busy worker: almost every job) passes a closure
    /// that does nothing, a few instructions, instead of `found_work`
    /// (which would only find `searching` false).
    #[inline]
    pub(crate) fn run_entry_found(
        self,
        e: Entry,
        searching: &mut bool,
        more: impl Fn() -> Option<u32>,
    ) -> bool {
        if *searching {
            self.run_entry(e, &mut || self.found_work(searching, &more))
        } else {
            // `searching` is only ever set by this thread: it stays false.
            self.run_entry(e, &mut || {})
        }
    }

    /// A searching worker claimed a job: stop searching; the last searcher
    /// wakes another worker when more work is visible (the cascade), in
    /// the deques of the context `more` names (the woken worker looks there
    /// first). `more` is only asked while searching: a busy thread's pops
    /// and steals read no extra deque indices.
    ///
    /// Under `WhippingBoy` the last searcher always wakes a sleeper (if any)
    /// to take over the role, work visible or not: the worker pays for that
    /// wake, never the scheduling thread.
    #[inline]
    pub(crate) fn found_work(self, searching: &mut bool, more: impl FnOnce() -> Option<u32>) {
        if *searching {
            *searching = false;
            if matches!(self.reg.policy(), IdlePolicy::WhippingBoy) {
                // Recorded before the successor's word is stored (as in
                // `notify_work_from`).
                let traced = |w| crate::trace::wake_issued(self.reg.site(self.ctx), Some(w));
                if self.reg.sleep().hand_over(more(), traced).is_some() {
                    bump(&self.ctx.counters.wakes);
                }
            } else if self.reg.sleep().stop_searching() {
                if let Some(from) = more() {
                    self.notify_work_from(from);
                }
            }
        }
    }

    /// Is any deque non-empty? (Cheap: two loads per deque, no CAS.)
    pub(crate) fn work_visible(self) -> bool {
        let n = self.reg.num_contexts();
        (0..n).any(|i| self.reg.context(i).has_work())
    }

    /// Is there work this thread could take: any deque, a job pinned to
    /// it, or one of its class's? (Other threads' pinned jobs are not its
    /// work.)
    #[inline]
    pub(crate) fn work_visible_to(self) -> bool {
        self.ctx.pinned.has_any() || self.class_work_visible() || self.work_visible()
    }
}
