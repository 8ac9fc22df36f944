//! The worker loop: find and run work, spin by the idle policy, sleep,
//! and the whole of shutdown (a worker leaves when the system is
//! terminating and drained; `drain` runs what is left on the dropping
//! thread). The loop and the drains are functions of the registry that
//! build the thread's `ThisThread` once; spinning and a benched worker's
//! round are its methods.

use crate::builder::IdlePolicy;
use crate::context::{bump, bump_by};
use crate::registry::Registry;
use crate::registry::ThisThread;
use crate::sleep::{AdaptiveSpin, Backoff, Park};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a never-sleeping worker spins between full searches.
const NEVER_SLEEP_ROUND: Duration = Duration::from_micros(50);
/// How long the whipping boy spins before it tries (and, as the last
/// searcher, refuses) to park; then it searches again.
const WHIPPING_BOY_ROUND: Duration = Duration::from_micros(30);
/// SpinThenSleep: after spins that ended in a park, the budget shrinks to
/// at most `spin >> MAX_SHRINK`.
const MAX_SHRINK: u32 = 4;

/// The life of worker `idx` (its thread, started by `start.rs`): find and
/// run work, spin by the idle policy, sleep, until the system terminates
/// and is drained.
pub(crate) fn worker_main(reg: Arc<Registry>, idx: usize) {
    // Chosen once: the usual loop has no shuffle test in it.
    if reg.shuffle().is_some() {
        worker_loop::<true>(reg, idx)
    } else {
        worker_loop::<false>(reg, idx)
    }
}

/// `worker_main`'s loop; `SHUFFLE`: take jobs in shuffled order
/// (`Builder::shuffle`, `shuffle.rs`).
fn worker_loop<const SHUFFLE: bool>(reg: Arc<Registry>, idx: usize) {
    let ctx = reg.context(idx);
    reg.set_current(ctx);
    let me = ThisThread::new(&reg, ctx);
    crate::trace::thread_start(reg.site(ctx));
    let mut adaptive = match reg.policy() {
        IdlePolicy::Adaptive { max_spin, cpu_cap } => Some(AdaptiveSpin::new(max_spin, cpu_cap)),
        _ => None,
    };
    let mut searching = false;
    let mut woken = false;
    // The context whose push woke this worker (see `Sleep::park`).
    let mut woken_by: Option<usize> = None;
    // Looks in a row that saw work and lost it to its owner or another
    // thief (sleep/backoff.rs: the next spin backs off harder).
    let mut contention = 0u32;
    let mut saw_work = false;
    // Jobs since this worker last looked whether the CPUs changed.
    let mut since_poll = 0u32;
    // SpinThenSleep's budget (see `SpinBudget`).
    let mut spin_budget = SpinBudget::new(match reg.policy() {
        IdlePolicy::SpinThenSleep { spin } => spin,
        _ => Duration::ZERO,
    });
    loop {
        if idx as u32 >= reg.sleep().active() && !reg.terminating().load(Ordering::Relaxed) {
            me.benched_round(idx, &mut searching);
            woken_by = None;
            continue;
        }
        // An idle adaptive worker's gap ends when it looks and finds
        // work, not after that work ran (the clock is read only then).
        let looked = adaptive
            .as_ref()
            .filter(|a| a.is_idle())
            .map(|_| Instant::now());
        let found = match woken_by.take() {
            _ if SHUFFLE => me.find_and_run_shuffled(&mut searching),
            Some(from) => me.find_and_run_from(from, &mut searching),
            None => me.find_and_run(&mut searching),
        };
        if found {
            if let (Some(a), Some(t)) = (&mut adaptive, looked) {
                a.found_work(t);
            }
            spin_budget.looked(true);
            woken = false;
            contention = 0;
            saw_work = false;
            since_poll += 1;
            if since_poll >= crate::active::POLL_JOBS {
                since_poll = 0;
                reg.active()
                    .poll_cpus(reg.site(ctx), reg.sleep(), reg.oversubscribed());
            }
            continue;
        }
        since_poll = 0;
        spin_budget.looked(false);
        reg.active()
            .poll_cpus(reg.site(ctx), reg.sleep(), reg.oversubscribed());
        if std::mem::take(&mut saw_work) {
            contention = (contention + 1).min(3);
        }
        if reg.terminating().load(Ordering::SeqCst) && reg.outstanding() == 0 {
            break;
        }
        if let Some(a) = &mut adaptive {
            a.went_idle(Instant::now());
        }
        if !searching {
            searching = reg.sleep().try_become_searching();
        }
        let hot = reg.is_hot();
        let never_sleep = hot || matches!(reg.policy(), IdlePolicy::AlwaysSpin);
        let budget = match reg.policy() {
            _ if never_sleep => NEVER_SLEEP_ROUND,
            _ if !searching => Duration::ZERO,
            IdlePolicy::SpinThenSleep { .. } => spin_budget.budget(),
            IdlePolicy::WhippingBoy => WHIPPING_BOY_ROUND,
            IdlePolicy::Adaptive { .. } => match &mut adaptive {
                Some(a) => a.budget(Instant::now()),
                None => Duration::ZERO,
            },
            IdlePolicy::AlwaysSpin => NEVER_SLEEP_ROUND,
        };
        if !budget.is_zero() {
            crate::trace::spin_begin(reg.site(ctx));
        }
        let (found, spun) = me.spin_until_work(budget, contention);
        saw_work = found;
        bump_by(&ctx.counters.spin_ns, spun.as_nanos() as u64);
        if let Some(a) = &mut adaptive {
            a.spun(spun);
        }
        if !budget.is_zero() && !never_sleep {
            spin_budget.spun(found, spun);
        }
        if found || never_sleep {
            crate::trace::search_begin(reg.site(ctx));
            continue;
        }
        // The whipping boy (the last searcher) does not park; it goes
        // round again.
        let whipping = matches!(reg.policy(), IdlePolicy::WhippingBoy);
        if reg.sleep().prepare_park(idx, searching, whipping) == Park::StayAwakeSearching {
            searching = true;
            continue;
        }
        if woken {
            bump(&ctx.counters.futile_wakes);
        }
        // Re-check after unregistering as awake (see sleep/README.md).
        if me.work_visible_to() || reg.terminating().load(Ordering::SeqCst) || reg.is_hot() {
            reg.sleep().cancel_park(idx);
            crate::trace::search_begin(reg.site(ctx));
            searching = true;
            woken = false;
            continue;
        }
        bump(&ctx.counters.sleeps);
        // Idle: give back storage a burst left behind long enough ago.
        crate::room::idle(&reg, ctx);
        crate::trace::sleep_begin(reg.site(ctx));
        let parked = Instant::now();
        woken_by = reg.sleep().park(idx);
        spin_budget.parked(parked.elapsed());
        crate::trace::sleep_end(reg.site(ctx));
        searching = true;
        woken = true;
    }
    if searching {
        reg.sleep().stop_searching();
    }
    // Tell a thread waiting in shutdown that the system drained.
    reg.drained().store(
        reg.drained().load(Ordering::Relaxed).wrapping_add(1),
        Ordering::SeqCst,
    );
    reg.drained().wake_all();
    reg.sleep().wake_all(true);
    // Before the thread exits, so `Owner::drop`'s join sees it.
    crate::trace::thread_stop(reg.site(ctx));
}

impl ThisThread<'_> {
    /// Spin (with backoff, no CAS) until work is visible, shutdown begins or
    /// `budget` has passed; `contention` (0..=3) lengthens the steps after
    /// looks that lost the work they saw. Returns (work visible, time spent
    /// spinning).
    fn spin_until_work(self, budget: Duration, contention: u32) -> (bool, Duration) {
        if budget.is_zero() {
            return (false, Duration::ZERO);
        }
        let mut backoff = Backoff::contended(
            self.reg.oversubscribed().load(Ordering::Relaxed),
            contention,
        );
        loop {
            if self.work_visible_to() {
                return (true, backoff.elapsed());
            }
            let spent = backoff.elapsed();
            if self.reg.terminating().load(Ordering::Relaxed) {
                return (false, spent);
            }
            if spent >= budget {
                // A short (shrunk) spin never yielded: the thread that
                // would push our next job may be waiting for our CPU (the
                // kernel often puts a woken worker on its waker's CPU).
                // Yield once and look again before parking; without this,
                // W5 with 1 worker parked and was woken 30 times a frame.
                if backoff.yielded() {
                    return (false, spent);
                }
                backoff.yield_now();
                return (self.work_visible_to(), backoff.elapsed());
            }
            backoff.snooze(spent);
        }
    }

    /// One round of a benched worker (index at or above the active count):
    /// it runs only what nobody else may or will take — jobs pinned to it
    /// and its class's jobs (every worker of the class may be benched),
    /// then its own deques' leftovers, the `needed` one included (a job it
    /// released for a waiter lands there, and as a top-level worker it does
    /// not wake the waiters for it: `make_runnable`) — and otherwise parks
    /// on the bench, where no `notify_work` wakes it (`Sleep::set_active`).
    fn benched_round(self, idx: usize, searching: &mut bool) {
        if self.run_one_pinned(&mut || {})
            || self.run_one_class(&mut || {})
            || self.run_own_needed(&mut || {})
            || (0..crate::context::PRIORITIES).any(|p| self.pop_and_run(p, &mut false))
        {
            return;
        }
        self.reg.active().poll_cpus(
            self.reg.site(self.ctx),
            self.reg.sleep(),
            self.reg.oversubscribed(),
        );
        // `prepare_park` puts a benched worker on the bench.
        self.reg.sleep().prepare_park(idx, *searching, false);
        *searching = false;
        // Re-check after leaving the awake count (pairs with the pinned
        // and class pushes' `wake_worker` and with `set_active`, all under the lock
        // `prepare_park` took).
        if self.ctx.pinned.has_any()
            || self.class_work_visible()
            || (idx as u32) < self.reg.sleep().active()
            || self.reg.terminating().load(Ordering::SeqCst)
        {
            self.reg.sleep().cancel_park(idx);
            *searching = true;
            return;
        }
        // Work we will not take may be visible while no active worker
        // searches (we may have been the searcher): pass it on.
        if self.work_visible() {
            self.notify_work();
        }
        crate::room::idle(self.reg, self.ctx);
        crate::trace::sleep_begin(self.reg.site(self.ctx));
        self.reg.sleep().park(idx);
        crate::trace::sleep_end(self.reg.site(self.ctx));
        *searching = true;
    }
}

/// Run everything scheduled, then return (shutdown, on a non-worker).
pub(crate) fn drain(reg: &Registry) {
    let ctx = reg.current();
    let me = ThisThread::new(reg, ctx);
    let mut searching = false;
    loop {
        if me.find_and_run_any(&mut searching) {
            continue;
        }
        let seen = reg.drained().load(Ordering::SeqCst);
        if reg.outstanding() == 0 {
            return;
        }
        if me.work_visible() {
            continue;
        }
        if reg.num_workers() == 0 {
            // Nothing visible and nothing runs elsewhere: every
            // outstanding job waits on one that is queued somewhere we
            // just searched, so look again.
            continue;
        }
        reg.drained().wait(seen);
    }
}
/// `drain` while the system keeps running (`JobSystem::drain_outstanding`):
/// the workers do not exit, so nobody bumps `drained`; between sweeps
/// that found nothing this thread backs off (yield, then sleeps of up
/// to 1 ms) instead of waiting on it. Used once, at a C system's
/// destroy, so the polling costs nothing that matters.
pub(crate) fn drain_while_running(reg: &Registry) {
    let ctx = reg.current();
    let me = ThisThread::new(reg, ctx);
    let mut searching = false;
    let mut idle = 0u32;
    loop {
        if me.find_and_run_any(&mut searching) {
            idle = 0;
            continue;
        }
        // Read after the sweep: a job that schedules another counts
        // the new one before its own finish (`outstanding`), so 0 here
        // means nothing is left anywhere.
        if reg.outstanding() == 0 {
            return;
        }
        if me.work_visible() {
            continue;
        }
        idle = idle.saturating_add(1);
        if idle < 64 {
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_micros(u64::from(idle.min(1000))));
        }
    }
}

/// SpinThenSleep's spin budget: `spin >> shrink`. Each spin that ends with
/// no work halves the next one, down to `spin >> MAX_SHRINK`; the whole
/// `spin` comes back only when a longer spin would have paid: a spin that
/// saw work after more than the shortest budget, or a park that ended in
/// work within `spin` (the wake a full spin would have saved). Work seen
/// sooner restores nothing: at the end of a burst a thief that lost the
/// last jobs to their owner still sees them for a moment, and restoring
/// the budget then made every burst end in a whole `spin` (W5: ~30 us of
/// CPU per frame and worker; sleep/README.md, "Who may search").
#[derive(Clone, Copy, Debug)]
struct SpinBudget {
    full: Duration,
    shrink: u32,
    /// The last park ended within `full`; the next look decides.
    short_park: bool,
}

impl SpinBudget {
    fn new(full: Duration) -> SpinBudget {
        SpinBudget {
            full,
            shrink: 0,
            short_park: false,
        }
    }

    /// The next spin's length.
    fn budget(&self) -> Duration {
        self.full / (1 << self.shrink)
    }

    /// A spin of `budget()` ended after `spun`, having seen work or not.
    fn spun(&mut self, found: bool, spun: Duration) {
        if !found {
            self.shrink = (self.shrink + 1).min(MAX_SHRINK);
        } else if spun > self.full / (1 << MAX_SHRINK) {
            self.shrink = 0;
        }
    }

    /// A park ended after `slept`.
    fn parked(&mut self, slept: Duration) {
        self.short_park = slept < self.full;
    }

    /// A look for work found some or not.
    fn looked(&mut self, found: bool) {
        if std::mem::take(&mut self.short_park) && found {
            self.shrink = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{SpinBudget, MAX_SHRINK};
    use std::time::Duration;

    const SPIN: Duration = Duration::from_micros(32);
    const SHORTEST: Duration = Duration::from_micros(32 >> MAX_SHRINK);

    fn shrunk() -> SpinBudget {
        let mut b = SpinBudget::new(SPIN);
        for _ in 0..10 {
            b.spun(false, b.budget());
        }
        b
    }

    #[test]
    fn spins_that_find_nothing_halve_the_budget_down_to_a_sixteenth() {
        let mut b = SpinBudget::new(SPIN);
        let mut seen = vec![b.budget()];
        for _ in 0..6 {
            b.spun(false, b.budget());
            seen.push(b.budget());
        }
        let us = |d: &Duration| d.as_micros();
        assert_eq!(
            seen.iter().map(us).collect::<Vec<_>>(),
            [32, 16, 8, 4, 2, 2, 2]
        );
        assert_eq!(b.budget(), SHORTEST);
    }

    #[test]
    fn work_seen_within_the_shortest_budget_restores_nothing() {
        // The end of a burst: the thief sees the owner's last jobs at once.
        let mut b = shrunk();
        b.spun(true, SHORTEST / 4);
        b.spun(true, SHORTEST);
        assert_eq!(b.budget(), SHORTEST);
    }

    #[test]
    fn work_seen_after_the_shortest_budget_restores_the_whole_spin() {
        let mut b = shrunk();
        // A spin that ran past the shortest budget (its yield) and then saw work.
        b.spun(true, SHORTEST + Duration::from_nanos(1));
        assert_eq!(b.budget(), SPIN);
    }

    #[test]
    fn a_short_park_that_ends_in_work_restores_the_whole_spin() {
        let mut b = shrunk();
        b.parked(SPIN / 2);
        b.looked(true);
        assert_eq!(b.budget(), SPIN);
    }

    #[test]
    fn a_long_park_or_a_futile_wake_restores_nothing() {
        let mut b = shrunk();
        b.parked(SPIN * 100); // W5: the next frame comes 2 ms later
        b.looked(true);
        assert_eq!(b.budget(), SHORTEST);
        b.parked(SPIN / 2); // woken, but nothing to do
        b.looked(false);
        b.looked(true); // a later look does not count the old park
        assert_eq!(b.budget(), SHORTEST);
    }
}
