//! Engine transitions under Miri: cancels, pinned jobs, benched workers, entries left by waits.

use super::*;

/// Counts drops of the closure it is moved into.
struct DropCount(Arc<AtomicUsize>);
impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_cancelled_job_drops_its_closure_once_and_never_runs() {
    let js = system(1);
    let (ran, drops) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    // Waiting (a gate not yet done) and queued (0 workers take nothing:
    // scheduled from a thread that does not wait) jobs, boxed and inline.
    let gate = js.job().pin(crate::Pin::Main).schedule(|| {});
    let mut hs = Vec::new();
    for big in [false, true] {
        let (r, d) = (ran.clone(), DropCount(drops.clone()));
        let pad = [0u8; 128];
        hs.push(js.schedule_after(&[gate], move || {
            let _keep = &d;
            if big {
                let _ = pad;
            }
            r.fetch_add(1, Ordering::SeqCst);
        }));
    }
    for &h in &hs {
        assert!(js.cancel(h), "not started: stopped");
        assert!(!js.cancel(h), "a second cancel changes nothing");
    }
    assert_eq!(
        drops.load(Ordering::SeqCst),
        2,
        "dropped at once, by cancel"
    );
    js.complete(gate);
    for h in hs {
        assert!(matches!(js.try_complete(h), Err(JobError::Cancelled(_))));
    }
    assert_eq!(ran.load(Ordering::SeqCst), 0);
    assert_eq!(drops.load(Ordering::SeqCst), 2, "never dropped twice");
}

#[test]
fn a_job_cancelled_while_it_runs_fails_and_its_dependents_do_not_run() {
    let js = system(1);
    let started = Arc::new(AtomicUsize::new(0));
    let s = started.clone();
    let h = js.schedule(move || {
        s.store(1, Ordering::SeqCst);
        while !crate::is_cancelled() {
            std::hint::spin_loop();
        }
    });
    let after = js.schedule_after(&[h], || unreachable!("its dependency was cancelled"));
    while started.load(Ordering::SeqCst) == 0 {
        std::thread::yield_now();
    }
    assert!(!js.cancel(h), "it had started");
    assert!(matches!(js.try_complete(h), Err(JobError::Cancelled(_))));
    assert!(matches!(
        js.try_complete(after),
        Err(JobError::Cancelled(_))
    ));
    assert!(!crate::is_cancelled(), "outside a job");
}

#[test]
fn a_cancelled_loop_skips_the_pieces_not_handed_out() {
    let js = system(1);
    let total = n(256, 16);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    // One piece per index; each piece waits until the loop is cancelled, so
    // the runners never hand out more than one piece each after it.
    let h = js.parallel_for(0..total, Batch::Fixed(1), move |_| {
        r.fetch_add(1, Ordering::SeqCst);
        while !crate::is_cancelled() {
            std::hint::spin_loop();
        }
    });
    while ran.load(Ordering::SeqCst) == 0 {
        std::thread::yield_now();
    }
    assert!(!js.cancel(h), "a piece had started");
    assert!(matches!(js.try_complete(h), Err(JobError::Cancelled(_))));
    let ran = ran.load(Ordering::SeqCst);
    assert!(ran >= 1 && ran < total, "{ran} of {total} pieces ran");
}

#[test]
fn a_pinned_job_runs_on_its_thread_only() {
    let js = system(2);
    let main = std::thread::current().id();
    let on = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut hs = Vec::new();
    for i in 0..n(20, 4) {
        let o = on.clone();
        let pin = if i % 2 == 0 {
            crate::Pin::Main
        } else {
            crate::Pin::Worker(2)
        };
        hs.push(js.job().pin(pin).schedule(move || {
            o.lock().unwrap().push((
                pin,
                std::thread::current().id(),
                std::thread::current().name().map(str::to_owned),
            ));
        }));
    }
    js.complete(js.combine(&hs));
    for (pin, id, name) in on.lock().unwrap().iter() {
        match pin {
            crate::Pin::Main => assert_eq!(*id, main),
            _ => assert_eq!(name.as_deref(), Some("jobsys-worker-2")),
        }
    }
}

#[test]
fn a_benched_worker_still_runs_the_jobs_pinned_to_it() {
    let js = system(2);
    js.set_active_workers(0).unwrap();
    assert_eq!(js.stats().active_workers, 0);
    assert!(js.set_active_workers(3).is_err(), "only 2 workers started");
    let on = Arc::new(std::sync::Mutex::new(Vec::new()));
    let hs: Vec<_> = (0..n(20, 4))
        .map(|i| {
            let o = on.clone();
            if i % 2 == 0 {
                js.schedule(|| {})
            } else {
                js.job().pin(crate::Pin::Worker(1)).schedule(move || {
                    o.lock()
                        .unwrap()
                        .push(std::thread::current().name().map(str::to_owned));
                })
            }
        })
        .collect();
    js.complete(js.combine(&hs));
    let on = on.lock().unwrap();
    assert_eq!(on.len(), hs.len() / 2);
    assert!(on.iter().all(|n| n.as_deref() == Some("jobsys-worker-1")));
    js.set_active_workers(2).unwrap();
    assert_eq!(js.stats().active_workers, 2);
}

/// A thread that runs jobs through their handles leaves their entries in
/// its deque; with no worker to steal them (0 workers, or all benched) they
/// piled up under live ones without bound (24 B per job; found by the
/// follow-cpus benchmark). They are compacted away when its outermost wait
/// returns.
#[test]
fn entries_left_by_waits_through_handles_do_not_pile_up() {
    let js = system(0);
    let rounds = n(2000, 10);
    for _ in 0..rounds {
        let hs: Vec<_> = (0..100).map(|_| js.schedule(|| {})).collect();
        // Newest first (popped), then the rest, each run through its handle
        // while the entries of the others stay queued.
        js.complete(*hs.last().unwrap());
        for &h in &hs {
            js.complete(h);
        }
    }
    let ctx = js.reg().current();
    let queued: usize = (0..crate::context::PRIORITIES)
        .map(|p| ctx.local(p).len())
        .sum();
    // At most the entries of one compaction interval remain (all stale).
    assert!(
        queued <= 200,
        "{queued} entries left in the deques after {rounds} rounds"
    );
}

#[test]
fn a_loop_run_on_one_thread_keeps_one_entry_of_its_rest_queued() {
    // The thread running a loop's pieces offers the rest so that idle
    // threads can join; it offers again only once its last offer is
    // taken. Here nobody can take it: every piece must see at most two
    // entries queued, the one the loop was scheduled with (left behind
    // when the wait offered the loop as needed) and one offer (there was
    // one more offer per piece run).
    let js = system(0);
    let pieces = n(200, 20);
    let most = Arc::new(AtomicUsize::new(0));
    let (js2, m) = (js.clone(), most.clone());
    let h = js.parallel_for(0..pieces, Batch::Fixed(1), move |_| {
        let ctx = js2.reg().current();
        let queued: usize = (0..crate::context::PRIORITIES)
            .map(|p| ctx.local(p).len())
            .sum::<usize>()
            + ctx.needed_local().len();
        m.fetch_max(queued, Ordering::Relaxed);
    });
    js.complete(h);
    let most = most.load(Ordering::Relaxed);
    assert!(
        most <= 2,
        "{most} entries queued while a loop of {pieces} pieces ran on one thread"
    );
}
