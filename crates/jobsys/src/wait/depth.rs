//! `DepthGuard`: a thread's wait depth, and what its outermost wait's end
//! does (give back storage, compact its deques, follow the CPUs).

use crate::context::Context;
use crate::registry::Registry;

/// Keeps `wait_depth` right even if a helped job's panic unwinds through.
/// When the outermost wait of a thread that is not a worker ends, that
/// thread is about to go back to its own code: a good moment to give back
/// job storage (room.rs `idle`).
pub(crate) struct DepthGuard<'a> {
    reg: &'a Registry,
    ctx: &'a Context,
}
impl<'a> DepthGuard<'a> {
    pub(crate) fn new(reg: &'a Registry, ctx: &'a Context) -> Self {
        ctx.add_wait_depth(1);
        DepthGuard { reg, ctx }
    }
}
impl Drop for DepthGuard<'_> {
    fn drop(&mut self) {
        self.ctx.add_wait_depth(-1);
        if !self.ctx.is_worker && self.ctx.wait_depth() == 0 {
            self.reg.compact_deques(self.ctx);
            crate::room::idle(self.reg, self.ctx);
            // With every worker benched, this thread may be the only one
            // that looks: follow the CPUs from here too (`active.rs`).
            self.reg.active.poll_cpus(
                self.reg.site(self.ctx),
                &self.reg.sleep,
                &self.reg.oversubscribed,
            );
        }
    }
}
