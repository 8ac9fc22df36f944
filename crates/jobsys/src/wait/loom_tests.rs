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

/// A registry of `workers` workers whose threads the model plays itself
/// (none is started), waits that do not spin, inheritance on.
fn registry(workers: usize) -> std::sync::Arc<Registry> {
    Registry::new(
        workers,
        IdlePolicy::default(),
        Duration::ZERO,
        true,
        None,
        16,
        1 << 20,
        64,
        crate::active::Active::new(workers, false, false),
    )
}

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
        let reg = registry(0);
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

// A waiter's look at its own deque vs a worker going to sleep, on the
// real code: the waiter's `help_needed` looks at the top entry of its own
// deque to see whether a waiter needs it and finds it is not, while the
// one worker searches (`find_and_run`), prepares to park, re-checks
// (`work_visible_to`) and parks. When the look popped the entry and
// pushed it back without a notify, a worker whose look fell in between
// slept with the job on the deque; the waiter, which does not run jobs
// nobody needs, parked too (the deadlock Miri found in `wait_any`, whose
// gate waits for such a job). The look is now made in place (`Local::pop_if`): the
// entry never leaves the deque. Whatever the interleaving, the worker
// runs the job: loom reports a deadlock if it sleeps for ever.
#[test]
fn a_job_a_waiter_looked_at_reaches_a_worker_that_parks() {
    loom::model(|| {
        let reg = registry(1);
        let waiter = reg.claim_external() as usize;
        // SAFETY: contexts live as long as `reg`; the waiter's is used by
        // this model thread only.
        let ctx_w = unsafe { &*(waiter as *const Context) };
        let (slot, gen) = crate::room::alloc(&reg, ctx_w);
        // SAFETY: fresh, unpublished slot.
        unsafe { slot.set_vtable(&NOOP_VTABLE) };
        let me = ThisThread::new(&reg, ctx_w);
        let h = me.submit(slot, gen, &[], 0);
        let reg2 = reg.clone();
        let worker = loom::thread::spawn(move || {
            let ctx = reg2.context(0);
            let me = ThisThread::new(&reg2, ctx);
            let mut searching = false;
            // `worker_loop` with no spinning, until the job has run.
            while !reg2.is_complete(h) {
                if me.find_and_run(&mut searching) {
                    continue;
                }
                if !searching {
                    searching = reg2.sleep().try_become_searching();
                }
                reg2.sleep().prepare_park(0, searching, false);
                if me.work_visible_to() || reg2.is_complete(h) {
                    reg2.sleep().cancel_park(0);
                    searching = true;
                    continue;
                }
                reg2.sleep().park(0);
                searching = true;
            }
            if searching {
                reg2.sleep().stop_searching();
            }
        });
        // Not needed (no waiter marked it): looked at and put back.
        assert!(!me.help_needed().unwrap());
        worker.join().unwrap();
        assert!(reg.is_complete(h));
    });
}
