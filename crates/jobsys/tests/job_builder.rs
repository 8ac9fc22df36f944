//! `js.job()` / `s.job()`: every combination of options (name, priority,
//! dependencies, pin, batched, declared access) with every ending
//! (`schedule`, `parallel_for`, `parallel_for_chunked`) schedules a job
//! that runs exactly once, after its dependencies, on its pinned thread when
//! it has one, under its name.

mod common;

use common::watchdog;
use jobsys::trace::JobId;
use jobsys::{Batch, JobHandle, JobSystem, Pin, Priority, ProfilerHooks, Resource};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};

const SECS: u64 = 120;

/// Records the name of every job begin.
#[derive(Default)]
struct Names(Mutex<HashSet<&'static str>>);

impl ProfilerHooks for Names {
    fn job_begin(&self, _thread: u32, _job: JobId, name: &'static str) {
        self.0.lock().unwrap().insert(name);
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Ending {
    Schedule,
    ParallelFor,
    Chunked,
}

#[derive(Clone, Copy, Debug)]
struct Combo {
    named: bool,
    after: bool,
    pin: Option<usize>, // None, 0: Main, 1: Worker(0)
    batched: bool,
    access: bool,
    ending: Ending,
}

fn combos() -> Vec<Combo> {
    let mut v = Vec::new();
    for named in [false, true] {
        for after in [false, true] {
            for pin in [None, Some(0), Some(1)] {
                for batched in [false, true] {
                    for access in [false, true] {
                        for ending in [Ending::Schedule, Ending::ParallelFor, Ending::Chunked] {
                            v.push(Combo {
                                named,
                                after,
                                pin,
                                batched,
                                access,
                                ending,
                            });
                        }
                    }
                }
            }
        }
    }
    v
}

const N: usize = 40;

/// What one combination's job saw.
struct Seen {
    /// Calls per index (a single job counts at index 0).
    hits: Vec<AtomicUsize>,
    /// Threads that ran it.
    threads: Mutex<HashSet<ThreadId>>,
    /// The gate (its dependency) had opened when it ran.
    after_gate: AtomicBool,
    ran_before_gate: AtomicBool,
}

impl Seen {
    fn new() -> Arc<Seen> {
        Arc::new(Seen {
            hits: (0..N).map(|_| AtomicUsize::new(0)).collect(),
            threads: Mutex::new(HashSet::new()),
            after_gate: AtomicBool::new(false),
            ran_before_gate: AtomicBool::new(false),
        })
    }
    fn hit(&self, i: usize, gate: &AtomicBool) {
        self.hits[i].fetch_add(1, SeqCst);
        self.threads.lock().unwrap().insert(thread::current().id());
        if gate.load(SeqCst) {
            self.after_gate.store(true, SeqCst);
        } else {
            self.ran_before_gate.store(true, SeqCst);
        }
    }
}

/// `js.job()` with `c`'s options (and a priority).
fn options<'a, 'd>(
    js: &'a JobSystem,
    c: Combo,
    name: &'static str,
    deps: &'d [JobHandle],
) -> jobsys::JobBuilder<'a, 'static, 'd> {
    let mut b = js.job().priority(Priority::High);
    if c.named {
        b = b.name(name);
    }
    let b = if c.after { b.after(deps) } else { b.after(&[]) };
    let b = match c.pin {
        None => b,
        Some(0) => b.pin(Pin::Main),
        Some(_) => b.pin(Pin::Worker(1)),
    };
    if c.batched {
        b.batched()
    } else {
        b
    }
}

/// Schedule one combination on `js` (a `'static` builder).
fn schedule_combo(
    js: &JobSystem,
    c: Combo,
    name: &'static str,
    dep: JobHandle,
    seen: &Arc<Seen>,
    gate: &Arc<AtomicBool>,
    res: &Resource<Vec<u32>>,
) -> JobHandle {
    let deps = [dep];
    let b = options(js, c, name, &deps);
    let (s, g) = (seen.clone(), gate.clone());
    if c.access {
        match c.ending {
            // A single access job takes a whole write.
            Ending::Schedule => b.access(res.write()).schedule(move |v| {
                v[0] += 1;
                s.hit(0, &g)
            }),
            Ending::ParallelFor => {
                b.access(res.write_each())
                    .parallel_for(0..N, Batch::Fixed(3), move |i, x| {
                        *x += 1;
                        s.hit(i, &g)
                    })
            }
            Ending::Chunked => b.access(res.write_each()).parallel_for_chunked(
                0..N,
                Batch::Fixed(7),
                move |r, xs| {
                    assert_eq!(r.len(), xs.len());
                    for (i, x) in r.zip(xs.iter_mut()) {
                        *x += 1;
                        s.hit(i, &g);
                    }
                },
            ),
        }
    } else {
        match c.ending {
            Ending::Schedule => b.schedule(move || s.hit(0, &g)),
            Ending::ParallelFor => b.parallel_for(0..N, Batch::Fixed(3), move |i| s.hit(i, &g)),
            Ending::Chunked => b.parallel_for_chunked(0..N, Batch::Fixed(7), move |r| {
                for i in r {
                    s.hit(i, &g)
                }
            }),
        }
    }
}

/// Proves: every combination of the builder's options and endings runs its
/// job exactly once per index, after its dependency when it has one, only
/// on its pinned thread when pinned, and under its name; a declared
/// `write_each`/`write` is applied exactly once per element.
#[test]
fn every_combination_of_options_runs_once_after_its_deps_on_its_thread_with_its_name() {
    watchdog(SECS, || {
        let names = Arc::new(Names::default());
        let js = JobSystem::builder()
            .workers(2)
            .profiler(names.clone())
            .build()
            .unwrap();
        let main = thread::current().id();
        let worker0 = {
            let t = Arc::new(Mutex::new(None));
            let t2 = t.clone();
            js.complete(
                js.job()
                    .pin(Pin::Worker(1))
                    .schedule(move || *t2.lock().unwrap() = Some(thread::current().id())),
            );
            let id = t.lock().unwrap().unwrap();
            id
        };
        const NAMES: [&str; 8] = ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"];
        for (k, c) in combos().into_iter().enumerate() {
            let name = NAMES[k % NAMES.len()];
            let gate = Arc::new(AtomicBool::new(false));
            let (open_tx, open_rx) = std::sync::mpsc::channel::<()>();
            let g2 = gate.clone();
            // The dependency: a job that opens the gate once told to.
            let dep = js.schedule(move || {
                let _ = open_rx.recv();
                g2.store(true, SeqCst);
            });
            let res = Resource::new(vec![0u32; N]);
            let seen = Seen::new();
            let h = schedule_combo(&js, c, name, dep, &seen, &gate, &res);
            open_tx.send(()).unwrap();
            js.flush();
            js.complete(h);
            js.complete(dep);
            let want = if c.ending == Ending::Schedule { 1 } else { N };
            for i in 0..N {
                let n = seen.hits[i].load(SeqCst);
                assert_eq!(n, usize::from(i < want), "{c:?}: index {i} ran {n} times");
            }
            if c.after {
                assert!(
                    !seen.ran_before_gate.load(SeqCst),
                    "{c:?}: ran before its dependency finished"
                );
            }
            match c.pin {
                None => {}
                Some(p) => {
                    let want = if p == 0 { main } else { worker0 };
                    let threads = seen.threads.lock().unwrap();
                    assert!(
                        threads.len() == 1 && threads.contains(&want),
                        "{c:?}: ran on {threads:?}, pinned to {want:?}"
                    );
                }
            }
            if c.access {
                let v = res.read_now(&js);
                let sum: u32 = v.iter().sum();
                assert_eq!(sum as usize, want, "{c:?}: declared writes applied once");
            }
            if c.named && jobsys::trace::COMPILED {
                assert!(
                    names.0.lock().unwrap().contains(name),
                    "{c:?}: the job began under its name"
                );
            }
        }
    });
}

/// Proves: `s.job()` takes closures that borrow the stack, with every
/// option, and the scope returns only after all of them ran.
#[test]
fn scope_jobs_borrow_with_every_option() {
    watchdog(SECS, || {
        let js = JobSystem::builder().workers(2).build().unwrap();
        let main = thread::current().id();
        let mut single = 0u32;
        let mut cells = vec![0u32; N];
        let chunks = AtomicUsize::new(0);
        let pinned_on = Mutex::new(HashSet::new());
        let res = Resource::new(0u64);
        js.scope(|s| {
            let first = s.job().name("first").schedule(|| single += 1);
            let loop_h = s
                .job()
                .name("cells")
                .priority(Priority::Low)
                .after(&[first])
                .batched()
                .parallel_for_chunked(0..N, Batch::Fixed(5), |r| {
                    chunks.fetch_add(r.len(), SeqCst);
                });
            let (cells, pinned_on) = (&mut cells, &pinned_on);
            s.job().pin(Pin::Main).after(&[loop_h]).schedule(move || {
                pinned_on.lock().unwrap().insert(thread::current().id());
                cells.iter_mut().for_each(|c| *c += 1);
            });
            s.job()
                .after(&[first])
                .access(res.write())
                .schedule(|r| *r += 7);
            s.system().flush();
        });
        assert_eq!(single, 1);
        assert_eq!(chunks.load(SeqCst), N);
        assert!(cells.iter().all(|&c| c == 1));
        assert_eq!(*pinned_on.lock().unwrap(), HashSet::from([main]));
        assert_eq!(*res.read_now(&js), 7);
    });
}

/// Proves: a bad pin on an access job panics at scheduling, before any
/// resource is locked, and leaves the resource usable and its order intact.
#[test]
fn a_bad_pin_with_access_panics_before_the_locks() {
    watchdog(SECS, || {
        let js = JobSystem::builder().workers(1).build().unwrap();
        let res = Resource::new(1u32);
        let msg = common::expect_panic(|| {
            js.job()
                .pin(Pin::Worker(5))
                .access(res.write())
                .schedule(|r| *r = 99)
        });
        assert!(msg.contains("Pin::Worker(5)"), "{msg}");
        let h = js.job().access(res.write()).schedule(|r| *r += 1);
        js.complete(h);
        assert_eq!(*res.read_now(&js), 2);
    });
}

/// Proves: an empty range with any option completes once its dependencies
/// do and runs nothing; `Batch::Fixed(0)` panics even when pinned.
#[test]
fn empty_ranges_complete_and_a_zero_batch_panics_with_every_option() {
    watchdog(SECS, || {
        let js = JobSystem::builder().workers(1).build().unwrap();
        let res = Resource::new(vec![0u32; 4]);
        let dep = [js.schedule(|| {})];
        for pin in [None, Some(Pin::Main)] {
            let b = js.job().after(&dep);
            let b = match pin {
                Some(p) => b.pin(p),
                None => b,
            };
            js.complete(b.parallel_for(0..0, Batch::Auto, |_| unreachable!()));
            let b = js.job().access(res.write_each());
            let b = match pin {
                Some(p) => b.pin(p),
                None => b,
            };
            js.complete(b.parallel_for_chunked(3..3, Batch::Auto, |_, _| unreachable!()));
            let msg = common::expect_panic(|| {
                let b = js.job();
                let b = match pin {
                    Some(p) => b.pin(p),
                    None => b,
                };
                b.parallel_for(0..8, Batch::Fixed(0), |_| {})
            });
            assert!(msg.contains("Batch::Fixed(0)"), "{msg}");
        }
    });
}
