//! `DepthGuard`: a thread's wait depth, and what its outermost wait's end
//! does (give back storage, compact its deques, follow the CPUs); and
//! `WaitTarget`: the job its innermost `wait_loop` waits for.

use crate::handle::JobHandle;
use crate::registry::ThisThread;

/// Keeps `wait_depth` right even if a helped job's panic unwinds through.
/// When the outermost wait of a thread that is not a worker ends, that
/// thread is about to go back to its own code: a good moment to give back
/// job storage (room.rs `idle`).
pub(crate) struct DepthGuard<'a> {
    me: ThisThread<'a>,
}
impl<'a> DepthGuard<'a> {
    pub(crate) fn new(me: ThisThread<'a>) -> Self {
        me.ctx.add_wait_depth(1);
        DepthGuard { me }
    }
}
impl Drop for DepthGuard<'_> {
    fn drop(&mut self) {
        self.me.ctx.add_wait_depth(-1);
        if !self.me.ctx.is_worker && self.me.ctx.wait_depth() == 0 {
            self.me.compact_deques();
            crate::room::idle(self.me.reg, self.me.ctx);
            // With every worker benched, this thread may be the only one
            // that looks: follow the CPUs from here too (`active.rs`).
            self.me.reg.active().poll_cpus(
                self.me.reg.site(self.me.ctx),
                self.me.reg.sleep(),
                self.me.reg.oversubscribed(),
            );
        }
    }
}

/// `wait_loop`'s target for the jobs kept in hand (`handoff.rs`), put
/// back as it was on every way out.
pub(crate) struct WaitTarget<'a> {
    ctx: &'a crate::context::Context,
    before: (*const crate::slot::Slot, u32, u32),
}

impl<'a> WaitTarget<'a> {
    pub(crate) fn set(me: ThisThread<'a>, h: JobHandle) -> Self {
        let t = (h.slot.as_ptr() as *const _, h.gen, me.ctx.wait_depth());
        WaitTarget {
            ctx: me.ctx,
            before: me.ctx.swap_wait_target(t),
        }
    }
}

impl Drop for WaitTarget<'_> {
    fn drop(&mut self) {
        self.ctx.swap_wait_target(self.before);
    }
}
