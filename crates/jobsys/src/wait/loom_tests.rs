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

/// B's closure in the model below: count the run in the `AtomicUsize`
/// whose address the payload holds (a plain std atomic: only read after
/// the model's threads are joined).
unsafe fn count_run(p: *mut u8) {
    // SAFETY: the model wrote a pointer to a live counter there.
    unsafe { (*p.cast::<*const std::sync::atomic::AtomicUsize>().read()).fetch_add(1, SeqCst) };
}
unsafe fn no_drop(_: *mut u8) {}
unsafe fn no_range(_: *const u8, _: usize, _: usize, _: usize, _: &std::sync::atomic::AtomicUsize) {
}
fn counted_name() -> &'static str {
    "counted"
}
static COUNTED_VTABLE: crate::slot::JobVTable = crate::slot::JobVTable {
    run: count_run,
    drop: no_drop,
    type_name: counted_name,
    run_range: no_range,
    // Its payload is one pointer: B's edge to A lives in B's own slot.
    edge_room: true,
};
use std::sync::atomic::Ordering::SeqCst;

// The successor in hand (`handoff.rs`) vs a thread that waits for it, on
// the real code: a top-level worker runs job A (`run_claimed`); A's finish
// releases B, which the worker keeps in hand and runs next, or queues
// when the waiter's needed mark set the `Urgent` hint first. Meanwhile
// the waiter helps (`help_once`: it may take B through its handle, or from
// a needed deque) and parks (`park_on`) until B's finish wakes it.
// Whatever the interleaving, B runs exactly once and the waiter returns
// (loom reports a deadlock if it sleeps for ever).
#[test]
fn a_successor_kept_in_hand_runs_once_and_its_waiter_returns() {
    loom::model(|| {
        let reg = registry(1);
        let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let ctx0 = reg.context(0);
        let waiter = reg.claim_external() as usize;
        // The worker's context is set up here, before its thread starts.
        let me0 = ThisThread::new(&reg, ctx0);
        let (a, ga) = crate::room::alloc(&reg, ctx0);
        // SAFETY: fresh, unpublished slot.
        unsafe { a.set_vtable(&NOOP_VTABLE) };
        a.publish_runnable(ga, 0);
        let claimed = a.claim(ga).expect("a fresh runnable job");
        let ha = JobHandle {
            slot: NonNull::from(a),
            gen: ga,
            system: reg.id(),
        };
        let (b, gb) = crate::room::alloc(&reg, ctx0);
        // SAFETY: fresh, unpublished slot; the payload holds the counter's
        // address, which outlives the model's threads.
        unsafe {
            b.set_vtable(&COUNTED_VTABLE);
            b.payload_ptr()
                .cast::<*const std::sync::atomic::AtomicUsize>()
                .write(&*runs);
        }
        let hb = me0.submit(b, gb, &[ha], 0);
        let (a_addr, reg2) = (a as *const crate::slot::Slot as usize, reg.clone());
        let worker = loom::thread::spawn(move || {
            // SAFETY: the slot lives in `reg2`'s pages; the context is
            // worker 0's, used by this thread only from here on.
            let a = unsafe { &*(a_addr as *const crate::slot::Slot) };
            ThisThread::new(&reg2, reg2.context(0)).run_claimed(a, ga, claimed);
        });
        // SAFETY: contexts live as long as `reg`; this one is this model
        // thread's.
        let me = ThisThread::new(&reg, unsafe { &*(waiter as *const Context) });
        let mut marked = false;
        while !reg.is_complete(hb) {
            if me.help_once(hb, &mut marked).unwrap() {
                continue;
            }
            me.park_on(hb, &mut marked, false, None).unwrap();
        }
        worker.join().unwrap();
        assert_eq!(runs.load(SeqCst), 1, "B ran exactly once");
    });
}
