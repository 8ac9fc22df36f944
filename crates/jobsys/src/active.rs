//! How many workers take work: the limit the program sets
//! (`JobSystem::set_active_workers`) and, with `Builder::follow_cpus`, the
//! CPUs the process may use right now. The active count is the smaller of
//! the two; workers at or above it are benched (`Sleep::set_active`).
//!
//! Following the CPUs costs no thread and nothing on the job path: a worker
//! that is awake anyway (about to spin idle, or every `POLL_JOBS` jobs) and
//! a thread whose outermost `complete` returns call `poll_cpus`, which
//! reads the clock and, at most every `POLL_EVERY`, re-reads the affinity
//! mask, the online CPUs and the cgroup quota (`topology::CpuWatch`: one
//! syscall and two or three small file reads).

use crate::sleep::Sleep;
use crate::topology::{CpuWatch, MaskSource};
use crate::trace::{Site, TraceHost};
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often the usable CPUs are re-read at most.
pub(crate) const POLL_EVERY: Duration = Duration::from_millis(5);
/// A busy worker looks at the clock once per this many jobs.
pub(crate) const POLL_JOBS: u32 = 64;

/// `JobSystem::set_active_workers` was given more workers than started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ActiveWorkersError {
    /// The count asked for.
    pub requested: usize,
    /// Workers the system started (the most that can be active).
    pub workers: usize,
}

impl fmt::Display for ActiveWorkersError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "jobsys: set_active_workers({}): the system started {} workers, so at most {} can be active",
            self.requested, self.workers, self.workers
        )
    }
}

impl std::error::Error for ActiveWorkersError {}

pub(crate) struct Active {
    /// Workers the system started (the most that can be active).
    workers: usize,
    /// The program's limit (`set_active_workers`; all workers by default).
    user: AtomicU32,
    /// Usable CPUs − 1 while following them; all workers otherwise.
    cpus: AtomicU32,
    follow: Option<Follow>,
    /// Serialises `apply_active`, so two changes cannot apply out of order.
    apply: Mutex<()>,
}

struct Follow {
    watch: Mutex<CpuWatch>,
    start: Instant,
    /// Nanoseconds after `start` when the next poll is due.
    next: AtomicU64,
}

impl Active {
    pub(crate) fn new(workers: usize, follow_cpus: bool, pinned_workers: bool) -> Active {
        // Pinned workers each see one CPU in their own mask: follow the
        // process's (the main thread's) mask instead.
        let mask = if pinned_workers {
            MaskSource::Process
        } else {
            MaskSource::CallingThread
        };
        Active {
            workers,
            user: AtomicU32::new(workers as u32),
            cpus: AtomicU32::new(workers as u32),
            follow: follow_cpus.then(|| Follow {
                watch: Mutex::new(CpuWatch::new(Path::new("/"), mask)),
                start: Instant::now(),
                next: AtomicU64::new(0),
            }),
            apply: Mutex::new(()),
        }
    }
}

impl Active {
    /// `JobSystem::set_active_workers`. `site`: the calling thread's, for
    /// the tracer; `sleep`: the registry's, which benches the workers.
    pub(crate) fn set_active_workers<H: TraceHost>(
        &self,
        site: Site<'_, H>,
        sleep: &Sleep,
        n: usize,
    ) -> Result<(), ActiveWorkersError> {
        if n > self.workers {
            return Err(ActiveWorkersError {
                requested: n,
                workers: self.workers,
            });
        }
        self.user.store(n as u32, Ordering::SeqCst);
        self.apply_active(site, sleep);
        Ok(())
    }

    /// Re-read the usable CPUs if following them and a poll is due. Cheap
    /// when not: one load (not following), or a call, a clock read and a
    /// load. `oversubscribed`: the registry's flag, set when more threads
    /// than usable CPUs.
    #[inline]
    pub(crate) fn poll_cpus<H: TraceHost>(
        &self,
        site: Site<'_, H>,
        sleep: &Sleep,
        oversubscribed: &AtomicBool,
    ) {
        if let Some(f) = &self.follow {
            self.poll_cpus_following(site, sleep, oversubscribed, f);
        }
    }

    /// `poll_cpus` when following. Out of line: inlined, its clock call
    /// kept `site` (used only by the tracer's hooks in `apply_active`)
    /// alive in saved registers, which every top-level wait's
    /// `DepthGuard` drop paid for, following or not, with the tracer
    /// compiled in.
    #[inline(never)]
    fn poll_cpus_following<H: TraceHost>(
        &self,
        site: Site<'_, H>,
        sleep: &Sleep,
        oversubscribed: &AtomicBool,
        f: &Follow,
    ) {
        let now = f.start.elapsed().as_nanos() as u64;
        if now >= f.next.load(Ordering::Relaxed) {
            self.poll_cpus_now(site, sleep, oversubscribed, f, now);
        }
    }

    #[cold]
    #[inline(never)]
    fn poll_cpus_now<H: TraceHost>(
        &self,
        site: Site<'_, H>,
        sleep: &Sleep,
        oversubscribed: &AtomicBool,
        f: &Follow,
        now: u64,
    ) {
        // One poller at a time; the others go on with their work.
        let Ok(mut watch) = f.watch.try_lock() else {
            return;
        };
        f.next
            .store(now + POLL_EVERY.as_nanos() as u64, Ordering::Relaxed);
        let usable = watch.poll();
        drop(watch);
        // The thread that calls `complete` counts as one of the usable CPUs.
        let workers = (usable.saturating_sub(1)).min(self.workers) as u32;
        if self.cpus.swap(workers, Ordering::SeqCst) != workers {
            oversubscribed.store(workers as usize + 1 > usable, Ordering::Relaxed);
            self.apply_active(site, sleep);
        }
    }

    /// Make the active count the smaller of the two limits.
    fn apply_active<H: TraceHost>(&self, site: Site<'_, H>, sleep: &Sleep) {
        let _one = self.apply.lock().unwrap_or_else(|e| e.into_inner());
        let n = self
            .user
            .load(Ordering::SeqCst)
            .min(self.cpus.load(Ordering::SeqCst));
        if n == sleep.active() {
            return;
        }
        sleep.set_active(n, |w| crate::trace::wake_issued(site, Some(w)));
        crate::trace::active_workers(site, n);
    }
}
