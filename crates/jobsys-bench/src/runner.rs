//! Interleaved measurement: implementations take turns (A B A B ...) so that
//! machine drift (other load, frequency, thermal) hits them all equally.
//!
//! Each contestant first runs `warmup` uncounted iterations. Then, round
//! after round, every contestant with blocks left runs one block: after a
//! `settle` pause (so the previous contestant's threads have gone idle),
//! optionally one uncounted iteration (the block's own warm-up: caches and
//! sleeping workers of this implementation), then `per_block` counted ones.

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
    /// Called with `true` before each block (and before the warm-up), with
    /// `false` after it: e.g. to start and stop a background load.
    pub block_hook: Option<Box<dyn FnMut(bool) + 'a>>,
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
            block_hook: None,
        }
    }

    /// Run `hook(true)` before and `hook(false)` after each block.
    pub fn around_block(mut self, hook: impl FnMut(bool) + 'a) -> Self {
        self.block_hook = Some(Box::new(hook));
        self
    }

    fn hook(&mut self, entering: bool) {
        if let Some(h) = &mut self.block_hook {
            h(entering);
        }
    }
}

/// How a set of contestants is interleaved.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    /// Pause before each block.
    pub settle: Duration,
    /// Run one uncounted iteration at the start of each block.
    pub block_warmup: bool,
}

impl Plan {
    /// The default for throughput workloads: 1 ms settle, block warm-up.
    pub fn throughput() -> Plan {
        Plan {
            settle: Duration::from_millis(1),
            block_warmup: true,
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
            std::thread::sleep(plan.settle);
            c.hook(true);
            let r = (0..c.warmup).try_for_each(|_| (c.iter)().map(drop));
            c.hook(false);
            r?;
        }
    }
    let rounds = cs.iter().map(|c| c.blocks).max().unwrap_or(0);
    for r in 0..rounds {
        for c in cs.iter_mut().filter(|c| c.blocks > r) {
            std::thread::sleep(plan.settle);
            c.hook(true);
            let r = run_block(c, plan.block_warmup);
            c.hook(false);
            r?;
        }
    }
    Ok(())
}

fn run_block(c: &mut Contestant<'_>, block_warmup: bool) -> Result<()> {
    if block_warmup {
        (c.iter)()?;
    }
    for _ in 0..c.per_block {
        let v = (c.iter)()?;
        c.samples.push(v);
    }
    Ok(())
}
