//! Core classes per job (`JobBuilder::core_class`) on hybrid CPUs: which
//! class of core each worker runs on, and the pin a class job gets.
//!
//! A worker has a class when the build placed it on CPUs of one class
//! (`Builder::pin_workers`: one CPU each, the fastest first). Classes are
//! in use only when the workers span two of them: then a `Performance` job
//! is pinned to a performance worker and an `Efficiency` job to an
//! efficiency worker, round-robin over that class's workers (an ordinary
//! pin: only that worker runs it). On a machine with one class, with
//! unpinned workers, or when a class has no worker (all of them kept off
//! efficiency cores), `core_class` changes nothing: the job runs anywhere.
//! Nothing here is on the job path of a job that does not ask for a class:
//! the builder turns the class into its pin when `core_class` is called.

use crate::topology::internals::{Placement, WorkerPlan};
use crate::topology::{CoreClass, Topology};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Each worker's class, and the round-robin over each class's workers.
#[derive(Debug, Default)]
pub(crate) struct WorkerClasses {
    /// Worker `i`'s class (thread index `i + 1`); `Any`: unknown.
    of: Box<[CoreClass]>,
    /// Thread indices of the performance and the efficiency workers;
    /// both empty unless the workers span both classes.
    performance: Box<[usize]>,
    efficiency: Box<[usize]>,
    next: AtomicUsize,
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
            next: AtomicUsize::new(0),
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

    /// The thread index of the worker a job that asks for `class` is
    /// pinned to: one of that class, round-robin; `None` (run anywhere)
    /// for `Any`, or when classes are not in use.
    pub(crate) fn worker_for(&self, class: CoreClass) -> Option<usize> {
        let workers = match class {
            CoreClass::Performance => &self.performance,
            CoreClass::Efficiency => &self.efficiency,
            CoreClass::Any => return None,
        };
        if workers.is_empty() {
            return None;
        }
        let k = self.next.fetch_add(1, Ordering::Relaxed) % workers.len();
        Some(workers[k])
    }
}
