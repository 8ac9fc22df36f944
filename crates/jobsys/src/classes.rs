//! Core classes per job (`JobBuilder::core_class`) on hybrid CPUs: which
//! class of core each worker runs on, and the queue each class's jobs wait
//! in.
//!
//! A worker has a class when the build placed it on CPUs of one class
//! (`Builder::pin_workers`: one CPU each, the fastest first). Classes are
//! in use only when the workers span two of them: then a `Performance` job
//! waits in the performance queue and an `Efficiency` job in the
//! efficiency queue, and any worker of that class takes it: in its search
//! for work (once its own pinned, High, needed and Normal entries are
//! done, before its own Low ones and before it steals), on the bench, and
//! while it waits in `complete` (a waiting worker is idle; it runs its
//! class's jobs as it runs its pinned ones). A class job never enters a work-stealing deque,
//! so no worker of another class can take it.
//!
//! A class job's slot names its class in the pin field (`PERFORMANCE` or
//! `EFFICIENCY`, two values above every context index), so the pinned
//! path carries it: `push_pinned` queues it here and wakes one worker of
//! the class (`pinned.rs`), and `run_entry` lets a worker of the class
//! claim it. On a machine with one class, with unpinned workers, or when a
//! class has no worker (all of them kept off efficiency cores),
//! `core_class` changes nothing: the job runs anywhere. Nothing here is on
//! the path of a job that does not ask for a class: the queues are looked
//! at only by the workers of a class, and only once their own High,
//! needed and Normal entries are done.

use crate::job::Entry;
use crate::pinned_queue::NO_THREAD;
use crate::sync::{lock, Mutex};
use crate::topology::internals::{Placement, WorkerPlan};
use crate::topology::{CoreClass, Topology};
use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The pin target of a `Performance` job: no context has this index
/// (`Registry::new` keeps them below `EFFICIENCY`).
pub(crate) const PERFORMANCE: u32 = NO_THREAD - 1;
/// The pin target of an `Efficiency` job.
pub(crate) const EFFICIENCY: u32 = NO_THREAD - 2;

/// Is `target` a class (not a context)?
#[inline]
pub(crate) fn is_class(target: u32) -> bool {
    target == PERFORMANCE || target == EFFICIENCY
}

/// One class's runnable jobs: a FIFO behind a mutex (class jobs are few
/// and coarse: an engine's physics step, a decoder), any thread pushes,
/// the class's workers pop.
pub(crate) struct ClassQueue {
    entries: Mutex<VecDeque<Entry>>,
    /// Entries queued: the lock-free emptiness check of the workers' loops.
    len: AtomicUsize,
    /// Where the next wake starts among the class's workers.
    next_wake: AtomicUsize,
}

impl ClassQueue {
    /// Anything queued? One load; a worker about to sleep re-checks it
    /// after registering as asleep (pairs with `push`'s store through the
    /// sleepers lock the waker takes).
    #[inline]
    pub(crate) fn has_any(&self) -> bool {
        self.len.load(Ordering::Acquire) != 0
    }

    pub(crate) fn push(&self, e: Entry) {
        let mut q = lock(&self.entries);
        q.push_back(e);
        self.len.store(q.len(), Ordering::Release);
    }

    /// Where a wake starts among `n` workers: round-robin, so that the
    /// wakes spread over the class.
    pub(crate) fn wake_start(&self, n: usize) -> usize {
        self.next_wake.fetch_add(1, Ordering::Relaxed) % n.max(1)
    }

    pub(crate) fn pop(&self) -> Option<Entry> {
        if !self.has_any() {
            return None;
        }
        let mut q = lock(&self.entries);
        let e = q.pop_front();
        self.len.store(q.len(), Ordering::Release);
        e
    }
}

impl Default for ClassQueue {
    fn default() -> ClassQueue {
        ClassQueue {
            entries: Mutex::new(VecDeque::new()),
            len: AtomicUsize::new(0),
            next_wake: AtomicUsize::new(0),
        }
    }
}

impl fmt::Debug for ClassQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClassQueue")
            .field("len", &self.len.load(Ordering::Relaxed))
            .finish()
    }
}

/// Each worker's class, and each class's queue.
#[derive(Debug, Default)]
pub(crate) struct WorkerClasses {
    /// Worker `i`'s class (thread index `i + 1`); `Any`: unknown.
    of: Box<[CoreClass]>,
    /// Thread indices of the performance and the efficiency workers;
    /// both empty unless the workers span both classes.
    performance: Box<[usize]>,
    efficiency: Box<[usize]>,
    queues: [ClassQueue; 2],
}

impl WorkerClasses {
    /// The classes of `plan`'s workers on `topo`'s CPUs.
    pub(crate) fn of_plan(plan: &WorkerPlan, topo: &Topology) -> WorkerClasses {
        let of: Box<[CoreClass]> = (0..plan.workers)
            .map(|i| match (plan.placement(i), &topo.cores) {
                (Placement::Cpus(set), Some(cores)) => {
                    let mut classes = set.iter().map(|c| cores.class_of(c));
                    match classes.next().flatten() {
                        Some(first) if classes.all(|c| c == Some(first)) => first,
                        _ => CoreClass::Any,
                    }
                }
                _ => CoreClass::Any,
            })
            .collect();
        let indices = |class| -> Box<[usize]> {
            (0..of.len())
                .filter(|&i| of[i] == class)
                .map(|i| i + 1)
                .collect()
        };
        let (p, e) = (
            indices(CoreClass::Performance),
            indices(CoreClass::Efficiency),
        );
        let spans_both = !p.is_empty() && !e.is_empty();
        WorkerClasses {
            performance: if spans_both { p } else { Box::default() },
            efficiency: if spans_both { e } else { Box::default() },
            of,
            queues: Default::default(),
        }
    }

    /// The class of the worker with thread index `index` (`Any`: not a
    /// worker, or its class is unknown).
    pub(crate) fn class_of(&self, index: usize) -> CoreClass {
        index
            .checked_sub(1)
            .and_then(|i| self.of.get(i))
            .copied()
            .unwrap_or(CoreClass::Any)
    }

    /// The pin target of a job that asks for `class`: its class's queue;
    /// `None` (run anywhere) for `Any`, or when classes are not in use.
    pub(crate) fn target_for(&self, class: CoreClass) -> Option<u32> {
        match class {
            CoreClass::Performance if !self.performance.is_empty() => Some(PERFORMANCE),
            CoreClass::Efficiency if !self.efficiency.is_empty() => Some(EFFICIENCY),
            _ => None,
        }
    }

    /// The queue of class target `target` (`is_class(target)`), and the
    /// thread indices of its workers.
    pub(crate) fn queue(&self, target: u32) -> (&ClassQueue, &[usize]) {
        debug_assert!(is_class(target));
        match target {
            PERFORMANCE => (&self.queues[0], &self.performance),
            _ => (&self.queues[1], &self.efficiency),
        }
    }

    /// The class target of the worker with thread index `index`, if
    /// classes are in use and it has one.
    pub(crate) fn target_of_worker(&self, index: usize) -> Option<u32> {
        self.target_for(self.class_of(index))
    }
}
