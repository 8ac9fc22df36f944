//! Loom models of the sleep/wake protocol: no job pushed while workers go
//! to sleep is ever left without an awake worker (a lost wake-up would park
//! the model's worker forever, which loom reports as a deadlock).
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p jobsys --lib --release sleep::loom_tests`
//! (`LOOM_MAX_PREEMPTIONS` bounds the search; CI uses 3).

use super::Sleep;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

/// A stand-in for the deques: a count of queued jobs.
struct Model {
    sleep: Sleep,
    queued: AtomicUsize,
    ran: AtomicUsize,
}

impl Model {
    fn take(&self) -> bool {
        let mut n = self.queued.load(Ordering::SeqCst);
        while n > 0 {
            match self
                .queued
                .compare_exchange(n, n - 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return true,
                Err(now) => n = now,
            }
        }
        false
    }

    fn visible(&self) -> bool {
        self.queued.load(Ordering::SeqCst) > 0
    }

    /// The worker loop of `worker::worker_main`, minus spinning, until
    /// `total` jobs ran in all.
    fn worker(&self, idx: usize, total: usize) {
        let mut searching = false;
        loop {
            if self.ran.load(Ordering::SeqCst) >= total {
                // Everyone may stop: wake the others so they see it too.
                self.sleep.wake_all(true);
                return;
            }
            if self.take() {
                if searching {
                    searching = false;
                    if self.sleep.stop_searching() && self.visible() {
                        self.sleep.notify_work(0, |_| {});
                    }
                }
                self.ran.fetch_add(1, Ordering::SeqCst);
                continue;
            }
            if !searching {
                searching = self.sleep.try_become_searching();
            }
            if self.sleep.prepare_park(idx, searching, false) != super::Park::Registered {
                unreachable!("only the whipping-boy policy stays awake");
            }
            if self.visible() || self.ran.load(Ordering::SeqCst) >= total {
                self.sleep.cancel_park(idx);
                searching = true;
                continue;
            }
            self.sleep.park(idx);
            searching = true;
        }
    }

    fn schedule(&self) {
        self.queued.fetch_add(1, Ordering::SeqCst);
        self.sleep.notify_work(0, |_| {});
    }
}

fn model(workers: usize, jobs: usize) {
    model_searching(workers, jobs, 1);
}

/// `model` with up to `max_searching` workers searching at once
/// (`Sleep::set_max_searching`, the SpinThenSleep rule).
fn model_searching(workers: usize, jobs: usize, max_searching: u32) {
    loom::model(move || {
        let m = Arc::new(Model {
            sleep: Sleep::new(workers),
            queued: AtomicUsize::new(0),
            ran: AtomicUsize::new(0),
        });
        m.sleep.set_max_searching(max_searching);
        let handles: Vec<_> = (0..workers)
            .map(|i| {
                let m = m.clone();
                thread::spawn(move || m.worker(i, jobs))
            })
            .collect();
        for _ in 0..jobs {
            m.schedule();
        }
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(m.ran.load(Ordering::SeqCst), jobs);
    });
}

#[test]
fn one_worker_one_job_is_never_lost() {
    model(1, 1);
}

#[test]
fn one_worker_two_jobs_is_never_lost() {
    model(1, 2);
}

#[test]
fn two_workers_cascade_is_never_lost() {
    model(2, 2);
}

/// SpinThenSleep lets every idle worker search: both workers may count as
/// searchers at once, so a `schedule` that sees either one skips the wake;
/// each searcher that parks re-checks after leaving the count, so the job
/// is still never lost, and the last searcher to find work while more is
/// visible still wakes the other.
#[test]
fn every_idle_worker_searching_is_never_lost() {
    model_searching(2, 2, 2);
}

/// The same with one job: both workers search, the job lands while both
/// go to sleep.
#[test]
fn two_searchers_one_job_is_never_lost() {
    model_searching(2, 1, 2);
}

/// The whipping-boy variant of `Model::worker`, mirroring `worker_main` and
/// `found_work` with that policy.
fn whipping_worker(m: &Model, idx: usize, total: usize) {
    let mut searching = false;
    loop {
        if m.ran.load(Ordering::SeqCst) >= total {
            m.sleep.wake_all(true);
            return;
        }
        if m.take() {
            if searching {
                searching = false;
                m.sleep.hand_over(None, |_| {});
            }
            m.ran.fetch_add(1, Ordering::SeqCst);
            continue;
        }
        if !searching {
            searching = m.sleep.try_become_searching();
        }
        match m.sleep.prepare_park(idx, searching, true) {
            super::Park::StayAwakeSearching => {
                searching = true;
                // The boy spins; under loom, yield so others progress.
                thread::yield_now();
                continue;
            }
            super::Park::Registered => {}
        }
        if m.visible() || m.ran.load(Ordering::SeqCst) >= total {
            m.sleep.cancel_park(idx);
            searching = true;
            continue;
        }
        m.sleep.park(idx);
        searching = true;
    }
}

/// Two whipping-boy workers, two jobs: every job runs (no lost wake-up) and,
/// each time the scheduler looks, a sleeping worker implies a searching one.
#[test]
fn whipping_boy_hand_over_keeps_a_searcher() {
    loom::model(|| {
        let m = Arc::new(Model {
            sleep: Sleep::new(2),
            queued: AtomicUsize::new(0),
            ran: AtomicUsize::new(0),
        });
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let m = m.clone();
                thread::spawn(move || whipping_worker(&m, i, 2))
            })
            .collect();
        for _ in 0..2 {
            assert!(m.sleep.whipping_invariant_holds());
            m.schedule();
        }
        assert!(m.sleep.whipping_invariant_holds());
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(m.ran.load(Ordering::SeqCst), 2);
    });
}

/// The benched branch of `worker_main` (`benched_round`) and its active
/// one, for one worker: a benched worker takes only pinned jobs; an active
/// one takes both. Returns once `total` jobs of either kind ran.
fn bench_worker(m: &Model, pinned: &AtomicUsize, idx: usize, total: usize) {
    let mut searching = false;
    let take_pinned = || {
        let n = pinned.load(Ordering::SeqCst);
        n > 0
            && pinned
                .compare_exchange(n, n - 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
    };
    loop {
        if m.ran.load(Ordering::SeqCst) >= total {
            return;
        }
        let benched = idx as u32 >= m.sleep.active();
        if take_pinned() || (!benched && m.take()) {
            m.ran.fetch_add(1, Ordering::SeqCst);
            continue;
        }
        // No longer searching from here (`prepare_park` counted that).
        m.sleep.prepare_park(idx, searching, false);
        // The re-checks of `benched_round` / `worker_main`.
        let benched = idx as u32 >= m.sleep.active();
        // (`ran` reaching `total` stands for shutdown's `terminating`.)
        if pinned.load(Ordering::SeqCst) > 0
            || (!benched && m.visible())
            || m.ran.load(Ordering::SeqCst) >= total
        {
            m.sleep.cancel_park(idx);
            searching = true;
            continue;
        }
        m.sleep.park(idx);
        searching = true;
    }
}

fn bench_model() -> (Arc<Model>, Arc<AtomicUsize>) {
    let m = Arc::new(Model {
        sleep: Sleep::new(1),
        queued: AtomicUsize::new(0),
        ran: AtomicUsize::new(0),
    });
    m.sleep.set_active(0, |_| {});
    (m, Arc::new(AtomicUsize::new(0)))
}

/// A job pinned to a benched worker (`push_pinned` → `Sleep::wake_worker`)
/// while it goes to the bench: it is woken or sees the job in its re-check.
#[test]
fn a_pinned_job_reaches_a_benched_worker() {
    loom::model(|| {
        let (m, pinned) = bench_model();
        let t = {
            let (m, pinned) = (m.clone(), pinned.clone());
            thread::spawn(move || bench_worker(&m, &pinned, 0, 1))
        };
        pinned.fetch_add(1, Ordering::SeqCst);
        m.sleep.wake_worker(0, |_| {});
        t.join().unwrap();
        assert_eq!(m.ran.load(Ordering::SeqCst), 1);
    });
}

/// Work scheduled while every worker is benched wakes nobody
/// (`notify_work` sees awake >= active); raising the count
/// (`set_active`) while the worker goes to the bench then reaches it.
#[test]
fn raising_the_active_count_reaches_a_benched_worker() {
    loom::model(|| {
        let (m, pinned) = bench_model();
        let t = {
            let (m, pinned) = (m.clone(), pinned.clone());
            thread::spawn(move || bench_worker(&m, &pinned, 0, 1))
        };
        m.queued.fetch_add(1, Ordering::SeqCst);
        assert_eq!(
            m.sleep.notify_work(0, |_| {}),
            None,
            "a benched worker is never notified"
        );
        m.sleep.set_active(1, |_| {});
        t.join().unwrap();
        assert_eq!(m.ran.load(Ordering::SeqCst), 1);
    });
}

/// One active and one benched worker: with the benched one parked, a
/// parked worker always exists, so `notify_work` decides on the count of
/// sleepers (`asleep`) instead; a job scheduled while the active worker
/// goes to sleep is still never lost, and the benched worker is never the
/// one woken for it.
#[test]
fn a_benched_sleeper_does_not_hide_an_active_one() {
    loom::model(|| {
        let m = Arc::new(Model {
            sleep: Sleep::new(2),
            queued: AtomicUsize::new(0),
            ran: AtomicUsize::new(0),
        });
        m.sleep.set_active(1, |_| {});
        let pinned = Arc::new(AtomicUsize::new(0));
        let benched = {
            let (m, pinned) = (m.clone(), pinned.clone());
            thread::spawn(move || bench_worker(&m, &pinned, 1, 1))
        };
        let active = {
            let m = m.clone();
            thread::spawn(move || m.worker(0, 1))
        };
        m.schedule();
        active.join().unwrap();
        benched.join().unwrap();
        assert_eq!(m.ran.load(Ordering::SeqCst), 1);
    });
}
