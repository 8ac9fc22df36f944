//! Loom model of a finish racing a waiter that parks (`ThisThread::finish`,
//! `ThisThread::park_on`), on the real code.

use crate::builder::IdlePolicy;
use crate::context::Context;
use crate::handle::JobHandle;
use crate::registry::Registry;
use crate::registry::ThisThread;
use crate::slot::NOOP_VTABLE;
use std::ptr::NonNull;
use std::time::Duration;

// Finish vs waiter registration, on the real code: a thread finishes a
// running job (`ThisThread::finish`) while another pins it, registers as
// parked and sleeps (`ThisThread::park_on`, wait spin 0). Whatever the
// interleaving, the waiter sees the job finished or is woken: no lost
// wake-up (loom reports a deadlock if the waiter sleeps forever), and
// the slot is freed exactly once (the finisher or the waiter's unpin
// recycles it).
#[test]
fn finish_wakes_a_waiter_that_parks_concurrently() {
    loom::model(|| {
        let reg = Registry::new(
            0,
            IdlePolicy::default(),
            Duration::ZERO,
            true,
            None,
            16,
            1 << 20,
            64,
            crate::active::Active::new(0, false, false),
        );
        let waiter = reg.claim_external() as usize;
        let runner = reg.claim_external() as usize;
        // SAFETY: contexts live as long as `reg`; each is used by one
        // model thread at a time (the runner's moves to the spawned one).
        let ctx_r = unsafe { &*(runner as *const Context) };
        let (slot, gen) = crate::room::alloc(&reg, ctx_r);
        // SAFETY: fresh, unpublished slot.
        unsafe { slot.set_vtable(&NOOP_VTABLE) };
        slot.publish_runnable(gen, 0);
        assert!(slot.claim(gen).is_some());
        let h = JobHandle {
            slot: NonNull::from(slot),
            gen,
            system: reg.id(),
        };
        let slot_addr = slot as *const _ as usize;
        let reg2 = reg.clone();
        let t = loom::thread::spawn(move || {
            // SAFETY: as above; the slot lives in `reg2`'s pages.
            let (ctx_r, slot) = unsafe {
                (
                    &*(runner as *const Context),
                    &*(slot_addr as *const crate::slot::Slot),
                )
            };
            ThisThread::new(&reg2, ctx_r).finish(slot, gen, crate::slot::Ending::SUCCEEDED);
        });
        // SAFETY: as above.
        let ctx_w = unsafe { &*(waiter as *const Context) };
        let mut marked = false;
        loop {
            let s = h.slot().state();
            if s.is_complete_for(gen) {
                break;
            }
            ThisThread::new(&reg, ctx_w)
                .park_on(h, &mut marked, false, None)
                .unwrap();
        }
        t.join().unwrap();
        assert!(reg.is_complete(h));
    });
}
