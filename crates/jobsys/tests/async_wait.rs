//! `JobSystem::wait_async`: a job's handle awaited from async code, with a
//! minimal executor written here (a thread that parks until woken) and
//! with tokio: ready with the job's outcome (success, its panic, its
//! cancellation), woken by the job's finish (no polling: the executor
//! here never polls unless woken), many at once, a future dropped early,
//! a finished job at the first poll.

mod common;

use common::{watchdog, Gate};
use jobsys::{JobError, JobHandle, JobSystem};
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

fn system(workers: usize) -> JobSystem {
    JobSystem::builder().workers(workers).build().unwrap()
}

/// Counts its wakes and unparks the executor's thread.
struct Unpark {
    thread: std::thread::Thread,
    wakes: AtomicUsize,
}

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, SeqCst);
        self.thread.unpark();
    }
}

/// Poll `f` on this thread, parking between polls: a poll happens only
/// after a wake (a spurious unpark polls again, which is allowed). The
/// output and the number of polls.
fn block_on<F: Future>(f: F) -> (F::Output, usize) {
    let unpark = Arc::new(Unpark {
        thread: std::thread::current(),
        wakes: AtomicUsize::new(0),
    });
    let waker = Waker::from(unpark.clone());
    let mut f = std::pin::pin!(f);
    let mut polls = 0;
    loop {
        polls += 1;
        if let Poll::Ready(v) = f.as_mut().poll(&mut Context::from_waker(&waker)) {
            return (v, polls);
        }
        let seen = unpark.wakes.load(SeqCst);
        while unpark.wakes.load(SeqCst) == seen {
            std::thread::park();
        }
    }
}

/// A job that waits for `gate` after saying it started, then returns `r`.
fn held(js: &JobSystem, gate: &Arc<Gate>, fail: bool) -> JobHandle {
    let started = Arc::new(AtomicBool::new(false));
    let (g, s) = (gate.clone(), started.clone());
    let h = js.schedule(move || {
        s.store(true, SeqCst);
        g.wait();
        if fail {
            panic!("async boom");
        }
    });
    while !started.load(SeqCst) {
        std::thread::yield_now();
    }
    h
}

#[test]
fn a_job_finishing_later_wakes_the_task_with_its_result() {
    watchdog(30, || {
        let js = system(1);
        let gate = Arc::new(Gate::default());
        let h = held(&js, &gate, false);
        let opener = {
            let gate = gate.clone();
            std::thread::spawn(move || gate.open())
        };
        let (r, polls) = block_on(js.wait_async(h));
        assert!(r.is_ok(), "{r:?}");
        assert!(polls <= 3, "polled {polls} times: it must wait for a wake");
        opener.join().unwrap();
    });
}

#[test]
fn a_panicking_job_is_an_error() {
    watchdog(30, || {
        let js = system(1);
        let gate = Arc::new(Gate::default());
        let h = held(&js, &gate, true);
        gate.open();
        let (r, _) = block_on(js.wait_async(h));
        match r {
            Err(JobError::Panicked(p)) => assert!(format!("{p:?}").contains("async boom")),
            other => panic!("expected the job's panic, got {other:?}"),
        }
    });
}

#[test]
fn a_cancelled_job_is_reported_cancelled() {
    watchdog(30, || {
        let js = system(1);
        let gate = Arc::new(Gate::default());
        let first = held(&js, &gate, false);
        let later = js.job().after(&[first]).schedule(|| unreachable!());
        let canceller = {
            let js = js.clone();
            std::thread::spawn(move || assert!(js.cancel(later)))
        };
        canceller.join().unwrap();
        gate.open();
        let (r, _) = block_on(js.wait_async(later));
        assert!(matches!(r, Err(JobError::Cancelled(_))), "{r:?}");
    });
}

#[test]
fn a_finished_job_is_ready_at_the_first_poll_and_schedules_nothing() {
    let js = system(1);
    let h = js.schedule(|| {});
    js.complete(h);
    let before = js.stats().jobs_scheduled;
    let (r, polls) = block_on(js.wait_async(h));
    assert!(r.is_ok());
    assert_eq!(polls, 1);
    assert_eq!(js.stats().jobs_scheduled, before);
}

#[test]
fn many_jobs_awaited_together() {
    watchdog(60, || {
        let js = system(2);
        let hs: Vec<JobHandle> = (0..64u64)
            .map(|i| {
                js.schedule(move || {
                    for _ in 0..(i * 100) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        // One task awaiting them in turn, each future woken by its job.
        let all = async {
            let mut ok = 0;
            for &h in &hs {
                if js.wait_async(h).await.is_ok() {
                    ok += 1;
                }
            }
            ok
        };
        assert_eq!(block_on(all).0, 64);
    });
}

#[test]
fn a_future_dropped_before_the_job_finished_leaves_it_alone() {
    watchdog(30, || {
        let js = system(1);
        let gate = Arc::new(Gate::default());
        let h = held(&js, &gate, false);
        {
            let mut f = Box::pin(js.wait_async(h));
            let waker = Waker::from(Arc::new(Unpark {
                thread: std::thread::current(),
                wakes: AtomicUsize::new(0),
            }));
            assert!(f
                .as_mut()
                .poll(&mut Context::from_waker(&waker))
                .is_pending());
        } // dropped while pending
        gate.open();
        js.complete(h);
        js.drain_outstanding().unwrap();
    });
}

#[cfg(not(loom))]
#[test]
fn under_tokio() {
    watchdog(60, || {
        let js = system(2);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let done = rt.block_on(async {
            let tasks: Vec<_> = (0..16)
                .map(|i| {
                    let js = js.clone();
                    tokio::spawn(async move {
                        let h = js.job().name("decode").schedule(move || {
                            if i == 7 {
                                panic!("tokio boom");
                            }
                        });
                        js.wait_async(h).await.is_ok()
                    })
                })
                .collect();
            let mut ok = 0;
            for t in tasks {
                if t.await.unwrap() {
                    ok += 1;
                }
            }
            ok
        });
        assert_eq!(done, 15);
    });
}
