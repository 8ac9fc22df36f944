//! `Stats`: the counters a job system reports (`JobSystem::stats`,
//! `JobSystem::worker_stats`), summed from the contexts' counters. The
//! shared state they are read from is `registry.rs`'s `Registry`.

use std::sync::atomic::Ordering;
use std::time::Duration;

/// Counters of a job system (`JobSystem::stats`, summed over all threads)
/// or of one worker (`JobSystem::worker_stats`). `a - b` gives the counts
/// between two snapshots, e.g. per frame (`JobSystem::take_stats` does it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Worker threads (of the system; 1 in a per-worker view).
    pub workers: usize,
    /// Jobs scheduled (each `schedule*`, `parallel_for*` and `combine` is one).
    pub jobs_scheduled: u64,
    /// Jobs finished (run, or failed because a dependency failed).
    pub jobs_finished: u64,
    /// Sleeping workers woken (one futex wake each), by whoever woke them.
    pub wakes: u64,
    /// Woken workers that found nothing and slept again.
    pub futile_wakes: u64,
    /// Times a worker went to sleep.
    pub sleeps: u64,
    /// Time workers spent spinning idle.
    pub spin_time: Duration,
    /// Entries taken from another thread's deque.
    pub steals: u64,
    /// Steal sweeps over all other deques that found nothing.
    pub failed_steals: u64,
    /// Jobs run by the thread whose finished job released them, right
    /// after it, without a trip through a deque (the successor kept in
    /// hand: a chain of dependent jobs runs on one thread with no push,
    /// pop or wake between its jobs).
    pub handoffs: u64,
    /// Failures dropped from the failure log (`Config::failure_history`):
    /// waits on those handles read success. A counter; system-wide only.
    pub failures_forgotten: u64,
    /// Job panics that no wait read, reported when nothing could read them
    /// any more (`Builder::on_unobserved_panic`). A counter; system-wide
    /// only.
    pub panics_unobserved: u64,
    /// Batched jobs (`JobBuilder::batched`) that no `flush` and no wait of
    /// their thread published: the thread's exit did (they ran then, or
    /// whenever an awake worker found them first). A counter;
    /// system-wide only.
    pub batched_unflushed: u64,
    /// Job slots reserved now (128 bytes each; a gauge, not a counter:
    /// `a - b` keeps `a`'s value). System-wide only.
    pub job_slots: u64,
    /// Workers allowed to take work now (`JobSystem::set_active_workers`,
    /// `Builder::follow_cpus`); a gauge. System-wide only.
    pub active_workers: usize,
}

impl std::ops::Sub for Stats {
    type Output = Stats;
    fn sub(self, b: Stats) -> Stats {
        Stats {
            workers: self.workers,
            jobs_scheduled: self.jobs_scheduled - b.jobs_scheduled,
            jobs_finished: self.jobs_finished - b.jobs_finished,
            wakes: self.wakes - b.wakes,
            futile_wakes: self.futile_wakes - b.futile_wakes,
            sleeps: self.sleeps - b.sleeps,
            spin_time: self.spin_time.saturating_sub(b.spin_time),
            steals: self.steals - b.steals,
            failed_steals: self.failed_steals - b.failed_steals,
            handoffs: self.handoffs - b.handoffs,
            failures_forgotten: self.failures_forgotten - b.failures_forgotten,
            panics_unobserved: self.panics_unobserved - b.panics_unobserved,
            batched_unflushed: self.batched_unflushed - b.batched_unflushed,
            job_slots: self.job_slots,
            active_workers: self.active_workers,
        }
    }
}

impl Stats {
    pub(crate) fn add_context(&mut self, c: &crate::context::Counters) {
        let l = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Acquire);
        self.jobs_scheduled += l(&c.scheduled);
        self.jobs_finished += l(&c.finished);
        self.wakes += l(&c.wakes);
        self.futile_wakes += l(&c.futile_wakes);
        self.sleeps += l(&c.sleeps);
        self.spin_time += Duration::from_nanos(l(&c.spin_ns));
        self.steals += l(&c.steals);
        self.failed_steals += l(&c.failed_steals);
        self.handoffs += l(&c.handoffs);
    }
}
