//! Engine integration, part 1: pinned jobs and `run_pinned` (thread
//! indices and pinned jobs whose thread is gone: `engine_threads.rs`).
//!
//! Every scenario runs under `common::watchdog`, so a pinned job nobody
//! runs (a deadlock) fails the test instead of stalling the suite. Ordering
//! is done with channels and handles, never with sleeps.

mod common;

use common::watchdog;
use jobsys::{JobHandle, JobSystem, Pin, ThreadIndex};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::{self, ThreadId};

const SECS: u64 = 60;

fn system(workers: usize) -> JobSystem {
    JobSystem::builder().workers(workers).build().unwrap()
}

/// The thread a pinned job must run on.
#[derive(Clone, Debug)]
enum Expect {
    /// The thread with this id (the builder, a registered thread).
    Id(ThreadId),
    /// The worker at this place from 0 (`jobsys-worker-{i + 1}`, thread
    /// index i + 1).
    Worker(usize),
}

/// `None` if the calling thread is the expected one, else what differs.
fn check_here(js: &JobSystem, expect: &Expect) -> Option<String> {
    let me = thread::current();
    let ok = match expect {
        Expect::Id(id) => me.id() == *id,
        Expect::Worker(i) => {
            me.name() == Some(&format!("jobsys-worker-{}", i + 1))
                && js.thread_index() == Some(i + 1)
        }
    };
    (!ok).then(|| {
        format!(
            "pinned job expected on {expect:?}, ran on {:?} ({:?}, index {:?})",
            me.name(),
            me.id(),
            js.thread_index()
        )
    })
}

/// A registered outside thread that runs its pinned jobs while it waits in
/// `complete` on each handle it is sent; ends when the sender is dropped.
struct Registered {
    index: ThreadIndex,
    id: ThreadId,
    tx: Option<mpsc::Sender<JobHandle>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Registered {
    fn start(js: &JobSystem) -> Registered {
        let (tx, rx) = mpsc::channel::<JobHandle>();
        let (itx, irx) = mpsc::channel();
        let js = js.clone();
        let thread = thread::spawn(move || {
            itx.send((js.register_thread(), thread::current().id()))
                .unwrap();
            for h in rx {
                js.complete(h);
            }
        });
        let (index, id) = irx.recv().unwrap();
        Registered {
            index,
            id,
            tx: Some(tx),
            thread: Some(thread),
        }
    }
    fn complete(&self, h: JobHandle) {
        self.tx.as_ref().unwrap().send(h).unwrap();
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            if t.join().is_err() && !thread::panicking() {
                panic!("the registered thread panicked");
            }
        }
    }
}

/// Builds, `rounds` times, a graph with jobs pinned to `pin` in the middle:
/// two unpinned jobs fan in to pinned P1, which fans out to three unpinned
/// jobs, which fan in to pinned P2, followed by an unpinned job. Each pinned
/// job checks its thread and that its dependencies ran first; every job
/// counts its run. Returns the combined handle of all rounds.
fn pinned_graph(
    js: &JobSystem,
    pin: Pin,
    expect: &Expect,
    rounds: usize,
    errors: &Arc<Mutex<Vec<String>>>,
    runs: &Arc<AtomicUsize>,
) -> JobHandle {
    let mut ends = Vec::new();
    for _ in 0..rounds {
        let before = Arc::new(AtomicUsize::new(0));
        let count = |before: &Arc<AtomicUsize>| {
            let (b, r) = (before.clone(), runs.clone());
            move || {
                b.fetch_add(1, SeqCst);
                r.fetch_add(1, SeqCst);
            }
        };
        let pinned = |need: usize, before: &Arc<AtomicUsize>, after: &Arc<AtomicUsize>| {
            let (b, a, r, e, js2, ex) = (
                before.clone(),
                after.clone(),
                runs.clone(),
                errors.clone(),
                js.clone(),
                expect.clone(),
            );
            move || {
                if let Some(err) = check_here(&js2, &ex) {
                    e.lock().unwrap().push(err);
                }
                let got = b.load(SeqCst);
                if got != need {
                    e.lock()
                        .unwrap()
                        .push(format!("pinned job ran after {got} of {need} deps"));
                }
                a.fetch_add(1, SeqCst);
                r.fetch_add(1, SeqCst);
            }
        };
        let mid = Arc::new(AtomicUsize::new(0));
        let a1 = js.schedule(count(&before));
        let a2 = js.schedule(count(&before));
        let p1 = js
            .job()
            .pin(pin)
            .after(&[a1, a2])
            .schedule(pinned(2, &before, &mid));
        let fan: Vec<_> = (0..3)
            .map(|_| js.schedule_after(&[p1], count(&mid)))
            .collect();
        let last = Arc::new(AtomicUsize::new(0));
        // mid counts P1 (1) and the three fan-out jobs (3).
        let p2 = js
            .job()
            .pin(pin)
            .after(&fan)
            .schedule(pinned(4, &mid, &last));
        let (l, e) = (last.clone(), errors.clone());
        let r = runs.clone();
        ends.push(js.schedule_after(&[p2], move || {
            if l.load(SeqCst) != 1 {
                e.lock().unwrap().push("tail ran before P2".into());
            }
            r.fetch_add(1, SeqCst);
        }));
    }
    js.combine(&ends)
}

/// Jobs per round of `pinned_graph`.
const GRAPH_JOBS: usize = 8;

/// A job pinned to Main, to each worker or to a registered thread runs on
/// that thread only, also as a dependency in the middle of a graph (fan-in
/// into it, fan-out from it, unpinned jobs before and after), with 0, 1, 2
/// and 4 workers; every job of the graph runs exactly once.
#[test]
fn pinned_jobs_run_only_on_their_thread_mid_graph() {
    watchdog(SECS * 2, || {
        for workers in [0, 1, 2, 4] {
            let js = system(workers);
            let main = thread::current().id();
            let reg = Registered::start(&js);
            let mut targets = vec![
                (Pin::Main, Expect::Id(main)),
                (Pin::Thread(reg.index), Expect::Id(reg.id)),
            ];
            targets.extend((0..workers).map(|i| (Pin::Worker(i + 1), Expect::Worker(i))));
            for (pin, expect) in targets {
                let errors = Arc::new(Mutex::new(Vec::new()));
                let runs = Arc::new(AtomicUsize::new(0));
                let rounds = 40;
                let all = pinned_graph(&js, pin, &expect, rounds, &errors, &runs);
                if matches!(pin, Pin::Thread(_)) {
                    reg.complete(all);
                }
                js.complete(all);
                let errors = errors.lock().unwrap();
                assert!(
                    errors.is_empty(),
                    "{workers} workers, {pin:?}: {:?}",
                    &errors[..errors.len().min(5)]
                );
                assert_eq!(
                    runs.load(SeqCst),
                    rounds * GRAPH_JOBS,
                    "{workers} workers, {pin:?}"
                );
            }
        }
    });
}

/// 10 000 jobs pinned to one worker while another thread floods the system
/// with ordinary jobs: each pinned job ran exactly once, all on that worker.
#[test]
fn many_pinned_jobs_to_one_worker_under_a_flood() {
    watchdog(SECS * 2, || {
        for workers in [2, 4] {
            let js = system(workers);
            let target = workers - 1;
            const N: usize = 10_000;
            let ran: Arc<Vec<AtomicUsize>> =
                Arc::new((0..N).map(|_| AtomicUsize::new(0)).collect());
            let wrong = Arc::new(AtomicUsize::new(0));
            let flood_ran = Arc::new(AtomicUsize::new(0));
            let flooder = {
                let (js, flood_ran) = (js.clone(), flood_ran.clone());
                thread::spawn(move || {
                    for _ in 0..20 {
                        let hs: Vec<_> = (0..1000)
                            .map(|i| {
                                let f = flood_ran.clone();
                                js.schedule(move || {
                                    std::hint::black_box(common::mix(i, 7));
                                    f.fetch_add(1, SeqCst);
                                })
                            })
                            .collect();
                        js.complete(js.combine(&hs));
                    }
                })
            };
            let name = format!("jobsys-worker-{}", target + 1);
            let hs: Vec<_> = (0..N)
                .map(|i| {
                    let (ran, wrong, name, js2) =
                        (ran.clone(), wrong.clone(), name.clone(), js.clone());
                    js.job().pin(Pin::Worker(target + 1)).schedule(move || {
                        if thread::current().name() != Some(name.as_str())
                            || js2.thread_index() != Some(target + 1)
                        {
                            wrong.fetch_add(1, SeqCst);
                        }
                        ran[i].fetch_add(1, SeqCst);
                    })
                })
                .collect();
            js.complete(js.combine(&hs));
            flooder.join().unwrap();
            assert_eq!(wrong.load(SeqCst), 0, "pinned jobs ran off worker {target}");
            let bad: Vec<_> = (0..N).filter(|&i| ran[i].load(SeqCst) != 1).collect();
            assert!(
                bad.is_empty(),
                "jobs not run exactly once: {:?}",
                &bad[..bad.len().min(10)]
            );
            assert_eq!(flood_ran.load(SeqCst), 20_000);
        }
    });
}

/// A worker that waits in `complete`, inside a job, on a job pinned to
/// itself runs that job (no hang), whether the outer job is itself pinned
/// there or landed on the worker by chance.
#[test]
fn worker_waiting_on_a_job_pinned_to_itself_runs_it() {
    watchdog(SECS, || {
        for workers in [1, 2, 4] {
            let js = system(workers);
            let ran = Arc::new(AtomicUsize::new(0));
            let mut outer = Vec::new();
            for i in 0..workers {
                let (js2, ran) = (js.clone(), ran.clone());
                outer.push(js.job().pin(Pin::Worker(i + 1)).schedule(move || {
                    let r = ran.clone();
                    let name = format!("jobsys-worker-{}", i + 1);
                    let inner = js2.job().pin(Pin::Worker(i + 1)).schedule(move || {
                        assert_eq!(thread::current().name(), Some(name.as_str()));
                        r.fetch_add(1, SeqCst);
                    });
                    js2.complete(inner);
                }));
            }
            // Unpinned outer jobs: whichever worker takes one pins to itself.
            for _ in 0..8 {
                let (js2, ran) = (js.clone(), ran.clone());
                outer.push(js.schedule(move || {
                    let Some(idx) = js2.thread_index().filter(|&t| t >= 1 && t <= js2.workers())
                    else {
                        // Run by the waiting main thread: nothing to check.
                        ran.fetch_add(1, SeqCst);
                        return;
                    };
                    let r = ran.clone();
                    let name = format!("jobsys-worker-{idx}");
                    let inner = js2.job().pin(Pin::Worker(idx)).schedule(move || {
                        assert_eq!(thread::current().name(), Some(name.as_str()));
                        r.fetch_add(1, SeqCst);
                    });
                    js2.complete(inner);
                }));
            }
            js.complete(js.combine(&outer));
            assert_eq!(ran.load(SeqCst), workers + 8, "{workers} workers");
        }
    });
}

/// The main thread waits on a job X running on a worker; X schedules a job
/// pinned to Main and waits for it. Main must run it while it waits (no
/// deadlock), on the main thread.
#[test]
fn main_runs_its_pinned_job_while_waiting_on_a_worker_job() {
    watchdog(SECS, || {
        for workers in [1, 2, 4] {
            let js = system(workers);
            let main = thread::current().id();
            for _ in 0..50 {
                let on_main = Arc::new(Mutex::new(None));
                let (js2, on_main2) = (js.clone(), on_main.clone());
                let x = js.job().pin(Pin::Worker(workers)).schedule(move || {
                    let m = js2.job().pin(Pin::Main).schedule(move || {
                        *on_main2.lock().unwrap() = Some(thread::current().id());
                    });
                    js2.complete(m);
                });
                js.complete(x);
                assert_eq!(*on_main.lock().unwrap(), Some(main), "{workers} workers");
            }
        }
    });
}

/// `run_pinned` returns exactly how many jobs ran: 0 with none queued, all
/// the ready ones otherwise, and not jobs that those jobs pin to the same
/// thread (the call is bounded by what was queued on entry); on the
/// building thread and on a registered thread.
#[test]
fn run_pinned_counts_exactly_and_is_bounded() {
    fn scenario(js: &JobSystem, pin: Pin) {
        assert_eq!(js.run_pinned(), 0, "{pin:?}: nothing queued");
        let ran = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..5)
            .map(|_| {
                let r = ran.clone();
                js.job().pin(pin).schedule(move || {
                    r.fetch_add(1, SeqCst);
                })
            })
            .collect();
        assert_eq!(js.run_pinned(), 5, "{pin:?}");
        assert_eq!(ran.load(SeqCst), 5);
        assert!(hs.iter().all(|&h| js.is_complete(h)));
        assert_eq!(js.run_pinned(), 0, "{pin:?}: all ran");

        // Three jobs that each pin another job to this thread.
        ran.store(0, SeqCst);
        for _ in 0..3 {
            let (r, js2) = (ran.clone(), js.clone());
            js.job().pin(pin).schedule(move || {
                r.fetch_add(1, SeqCst);
                let r2 = r.clone();
                js2.job().pin(pin).schedule(move || {
                    r2.fetch_add(100, SeqCst);
                });
            });
        }
        assert_eq!(
            js.run_pinned(),
            3,
            "{pin:?}: only the three queued on entry"
        );
        assert_eq!(ran.load(SeqCst), 3);
        assert_eq!(js.run_pinned(), 3, "{pin:?}: the three they queued");
        assert_eq!(ran.load(SeqCst), 303);
        assert_eq!(js.run_pinned(), 0);
    }
    watchdog(SECS, || {
        for workers in [0, 2] {
            let js = system(workers);
            scenario(&js, Pin::Main);
            let js2 = js.clone();
            thread::spawn(move || {
                let idx = js2.register_thread();
                scenario(&js2, Pin::Thread(idx));
            })
            .join()
            .unwrap();
        }
    });
}
