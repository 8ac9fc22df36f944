//! What the W3 frame workloads share, kept out of any one of them so that
//! none imports another both ways: the frame with its checks ([`Frame`]),
//! the executors ([`Exec`]) and the background load of
//! frame-graph-background ([`Background`], which `frame_graph`'s
//! contestants start and drain). `frame_graph`, `frame_graph_background`
//! and `static_floor` import this module; it imports none of them.

use crate::count;
use crate::error::{check, Error, Result};
use crate::graph::FrameGraph;
use crate::pools::BlockSystem;
use crate::spin::spin_ns;
use jobsys::{JobDesc, JobHandle, JobSystem, Priority};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One frame's graph, job duration and check state. Leaked (`'static`) so
/// jobsys jobs can borrow it without a scope; one per (duration, group).
pub struct Frame {
    /// The graph.
    pub graph: &'static FrameGraph,
    /// D, ns.
    pub d_ns: u64,
    done: Vec<AtomicBool>,
    left: Vec<AtomicU32>,
    violations: AtomicU64,
}

impl Frame {
    /// A frame of `graph` with jobs of `d_ns`, leaked.
    pub fn leak(graph: &'static FrameGraph, d_ns: u64) -> &'static Frame {
        let n = graph.nodes.len();
        Box::leak(Box::new(Frame {
            graph,
            d_ns,
            done: (0..n).map(|_| AtomicBool::new(false)).collect(),
            left: (0..n).map(|_| AtomicU32::new(0)).collect(),
            violations: AtomicU64::new(0),
        }))
    }

    /// Clear the dependency checks before a checked frame.
    pub fn reset_checks(&self) {
        for (i, (d, l)) in self.done.iter().zip(&self.left).enumerate() {
            d.store(false, Ordering::Relaxed);
            l.store(self.graph.pieces(i), Ordering::Relaxed);
        }
        self.violations.store(0, Ordering::Relaxed);
    }

    /// Fail if a checked frame ran a piece before its dependencies.
    pub fn verify_checks(&self, who: &str) -> Result<()> {
        let v = self.violations.load(Ordering::Acquire);
        check(v == 0, || {
            format!("{who}: {v} pieces started before one of their dependencies finished")
        })?;
        let unfinished = self
            .done
            .iter()
            .filter(|d| !d.load(Ordering::Acquire))
            .count();
        check(unfinished == 0, || {
            format!("{who}: {unfinished} jobs never finished")
        })
    }

    /// One piece of job `i`: spin D; with `CHECK`, first verify that the
    /// job's dependencies are done, and mark the job done after its last piece.
    #[inline(always)]
    pub fn piece<const CHECK: bool>(&self, i: u32) {
        if CHECK {
            for &d in &self.graph.nodes[i as usize].deps {
                if !self.done[d as usize].load(Ordering::Acquire) {
                    self.violations.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        spin_ns(self.d_ns);
        count::bump();
        if CHECK && self.left[i as usize].fetch_sub(1, Ordering::AcqRel) == 1 {
            self.done[i as usize].store(true, Ordering::Release);
        }
    }
}

/// Which executor a contestant runs.
#[derive(Clone)]
pub enum Exec<'a> {
    /// jobsys, a fresh system per block.
    Jobsys(BlockSystem),
    /// A rayon pool.
    Rayon(&'a rayon::ThreadPool),
    /// The calling thread.
    Serial,
}

/// Background jobs per frame.
pub const BG_JOBS: usize = 4;

/// Duration of one background job, ns.
pub const BG_NS: u64 = 200_000;

const BG_DESC: JobDesc = JobDesc::named("background").with_priority(Priority::Low);

/// One contestant's background jobs: how many were started and finished.
#[derive(Default)]
pub struct Background {
    started: AtomicU64,
    done: AtomicU64,
}

impl Background {
    /// A fresh counter pair, leaked (`'static`) so jobs can borrow it.
    pub fn leak() -> &'static Background {
        Box::leak(Box::default())
    }

    fn job(&self) {
        spin_ns(BG_NS);
        self.done.fetch_add(1, Ordering::Release);
    }

    /// Start this frame's background jobs (serial: nothing yet).
    pub fn start(&'static self, exec: &Exec<'_>, js: Option<&JobSystem>, hs: &mut Vec<JobHandle>) {
        hs.clear();
        match (exec, js) {
            (Exec::Jobsys(_), Some(js)) => {
                for _ in 0..BG_JOBS {
                    hs.push(js.job().desc(BG_DESC).schedule(move || self.job()));
                }
            }
            (Exec::Rayon(pool), _) => {
                for _ in 0..BG_JOBS {
                    pool.spawn(move || self.job());
                }
            }
            _ => return,
        }
        self.started.fetch_add(BG_JOBS as u64, Ordering::Relaxed);
    }

    /// After the timed frame: finish this frame's background jobs (serial:
    /// run them inline) and check that every one started has finished.
    pub fn drain(
        &self,
        exec: &Exec<'_>,
        js: Option<&JobSystem>,
        hs: &mut Vec<JobHandle>,
        who: &str,
    ) -> Result<()> {
        match (exec, js) {
            (Exec::Jobsys(_), Some(js)) => {
                for h in hs.drain(..) {
                    js.try_complete(h)?;
                }
            }
            (Exec::Rayon(_), _) => self.wait_rayon(who)?,
            _ => {
                self.started.fetch_add(BG_JOBS as u64, Ordering::Relaxed);
                (0..BG_JOBS).for_each(|_| self.job());
            }
        }
        let (s, d) = (self.started(), self.done.load(Ordering::Acquire));
        check(s == d, || {
            format!("{who}: {d} background jobs finished, {s} started")
        })
    }

    /// Background jobs started so far.
    pub fn started(&self) -> u64 {
        self.started.load(Ordering::Relaxed)
    }

    /// Poll (yielding) until every started job has finished.
    fn wait_rayon(&self, who: &str) -> Result<()> {
        let t = Instant::now();
        while self.done.load(Ordering::Acquire) < self.started() {
            if t.elapsed() > Duration::from_secs(10) {
                return Err(Error::Verify(format!(
                    "{who}: background jobs did not finish within 10 s"
                )));
            }
            std::thread::yield_now();
        }
        Ok(())
    }
}
