//! Interleaved measurement: implementations take turns (A B A B ...) so that
//! machine drift (other load, frequency, thermal) hits them all equally.
//!
//! Each contestant first runs `warmup` uncounted iterations. Then, round
//! after round, every contestant with blocks left runs one block: its
//! hooks start what lives only during the block (a jobsys system, a CPU
//! hog), then a `settle` pause (so the previous contestant's threads have
//! gone idle and this one's have started), optionally some uncounted
//! iterations (the block's own warm-up), then `per_block` counted ones.

use crate::error::Result;
use crate::json::Label;
use std::time::Duration;

/// One implementation's measurement loop.
pub struct Contestant<'a> {
    /// Who this is.
    pub label: Label,
    /// Uncounted iterations before the first block.
    pub warmup: usize,
    /// Blocks to run.
    pub blocks: usize,
    /// Counted iterations per block.
    pub per_block: usize,
    /// One iteration: runs, verifies its result, returns the measured value.
    pub iter: Box<dyn FnMut() -> Result<f64> + 'a>,
    /// Counted values so far.
    pub samples: Vec<f64>,
    /// Called with `true` before each block (and before the warm-up, and
    /// before its settle pause), with `false` after it, in reverse order:
    /// e.g. to start and stop a job system or a background load.
    pub block_hooks: Vec<Box<dyn FnMut(bool) -> Result<()> + 'a>>,
}

impl<'a> Contestant<'a> {
    /// A contestant with no samples yet.
    pub fn new(
        label: Label,
        warmup: usize,
        blocks: usize,
        per_block: usize,
        iter: impl FnMut() -> Result<f64> + 'a,
    ) -> Self {
        Contestant {
            label,
            warmup,
            blocks,
            per_block,
            iter: Box::new(iter),
            samples: Vec::with_capacity(blocks * per_block),
            block_hooks: Vec::new(),
        }
    }

    /// Also run `hook(true)` before and `hook(false)` after each block.
    pub fn around_block(mut self, hook: impl FnMut(bool) -> Result<()> + 'a) -> Self {
        self.block_hooks.push(Box::new(hook));
        self
    }

    /// Enter the hooks, settle, run `body`, leave the hooks (also on error).
    fn in_block(
        &mut self,
        settle: Duration,
        body: impl FnOnce(&mut Self) -> Result<()>,
    ) -> Result<()> {
        let mut entered = 0;
        let mut r = Ok(());
        for h in self.block_hooks.iter_mut() {
            r = h(true);
            if r.is_err() {
                break;
            }
            entered += 1;
        }
        if r.is_ok() {
            std::thread::sleep(settle);
            r = body(self);
        }
        for h in self.block_hooks[..entered].iter_mut().rev() {
            let l = h(false);
            if r.is_ok() {
                r = l;
            }
        }
        r
    }
}

/// How a set of contestants is interleaved.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Pause before each block.
    pub settle: Duration,
    /// Uncounted iterations at the start of each block.
    pub block_warmup: usize,
}

impl Plan {
    /// The default for throughput workloads: 1 ms settle, block warm-up.
    pub fn throughput() -> Plan {
        Plan {
            settle: Duration::from_millis(1),
            block_warmup: 1,
        }
    }
}

/// Blocks and per-block counts for `samples` counted iterations with at
/// most `per_block` in one block.
pub fn split(samples: usize, per_block: usize) -> (usize, usize) {
    let samples = samples.max(1);
    let per_block = per_block.clamp(1, samples);
    (samples.div_ceil(per_block), per_block)
}

/// Run all contestants interleaved; their `samples` are filled.
pub fn interleave(cs: &mut [Contestant<'_>], plan: Plan) -> Result<()> {
    for c in cs.iter_mut() {
        if c.warmup > 0 {
            let n = c.warmup;
            c.in_block(plan.settle, |c| {
                (0..n).try_for_each(|_| (c.iter)().map(drop))
            })?;
        }
    }
    let rounds = cs.iter().map(|c| c.blocks).max().unwrap_or(0);
    for r in 0..rounds {
        for c in cs.iter_mut().filter(|c| c.blocks > r) {
            c.in_block(plan.settle, |c| run_block(c, plan.block_warmup))?;
        }
    }
    Ok(())
}

fn run_block(c: &mut Contestant<'_>, block_warmup: usize) -> Result<()> {
    for _ in 0..block_warmup {
        (c.iter)()?;
    }
    for _ in 0..c.per_block {
        let v = (c.iter)()?;
        c.samples.push(v);
    }
    Ok(())
}
