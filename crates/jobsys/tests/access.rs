//! Declared data access (`docs/access.md`): derived ordering checked
//! against a serial run of random programs, overlapping readers, the
//! calling thread's guards, failures, cancellation, pins, `write_each`.

mod common;

use common::{expect_panic, mix, watchdog, Gate, Rng};
use jobsys::{AccessError, Batch, JobError, JobSystem, Pin, Priority, Resource};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

fn system(workers: usize) -> JobSystem {
    JobSystem::builder().workers(workers).build().unwrap()
}

/// What a job does with one declared resource: a read records the value,
/// a write folds the op id into it.
trait Touch {
    fn touch(self, rec: &Rec, op: usize, k: usize);
}
type Rec = Arc<Vec<AtomicU64>>;
impl Touch for &u64 {
    fn touch(self, rec: &Rec, op: usize, k: usize) {
        rec[op * 3 + k].store(*self, Ordering::Relaxed);
    }
}
impl Touch for &mut u64 {
    fn touch(self, _: &Rec, op: usize, _: usize) {
        *self = mix(*self, op as u64);
    }
}

/// One job of a random program: up to 3 distinct resources, each read or
/// written (bit k of `writes`).
fn schedule_op(
    js: &JobSystem,
    res: &[Resource<u64>],
    op: usize,
    which: &[usize],
    writes: u32,
    rec: &Rec,
) -> jobsys::JobHandle {
    let r = rec.clone();
    macro_rules! d {
        ($i:expr, $bit:expr, r) => {
            res[which[$i]].read()
        };
        ($i:expr, $bit:expr, w) => {
            res[which[$i]].write()
        };
    }
    macro_rules! go1 {
        ($m0:ident) => {
            js.job()
                .access(d!(0, 0, $m0))
                .schedule(move |a| a.touch(&r, op, 0))
        };
    }
    macro_rules! go2 {
        ($m0:ident, $m1:ident) => {
            js.job()
                .access((d!(0, 0, $m0), d!(1, 1, $m1)))
                .schedule(move |(a, b)| {
                    a.touch(&r, op, 0);
                    b.touch(&r, op, 1);
                })
        };
    }
    macro_rules! go3 {
        ($m0:ident, $m1:ident, $m2:ident) => {
            js.job()
                .access((d!(0, 0, $m0), d!(1, 1, $m1), d!(2, 2, $m2)))
                .schedule(move |(a, b, c)| {
                    a.touch(&r, op, 0);
                    b.touch(&r, op, 1);
                    c.touch(&r, op, 2);
                })
        };
    }
    match (which.len(), writes) {
        (1, 0) => go1!(r),
        (1, _) => go1!(w),
        (2, 0) => go2!(r, r),
        (2, 1) => go2!(w, r),
        (2, 2) => go2!(r, w),
        (2, _) => go2!(w, w),
        (3, 0) => go3!(r, r, r),
        (3, 1) => go3!(w, r, r),
        (3, 2) => go3!(r, w, r),
        (3, 3) => go3!(w, w, r),
        (3, 4) => go3!(r, r, w),
        (3, 5) => go3!(w, r, w),
        (3, 6) => go3!(r, w, w),
        (3, _) => go3!(w, w, w),
        _ => unreachable!(),
    }
}

#[test]
fn random_programs_read_exactly_the_writes_before_them() {
    watchdog(120, || {
        for workers in 0..=4 {
            for seed in 0..6u64 {
                let mut rng = Rng::new(mix(seed, workers as u64) | 1);
                let js = system(workers);
                let nres = 2 + rng.below(4);
                let res: Vec<Resource<u64>> = (0..nres).map(|i| Resource::new(i as u64)).collect();
                let mut serial: Vec<u64> = (0..nres as u64).collect();
                let ops = 300;
                let rec: Rec = Arc::new((0..ops * 3).map(|_| AtomicU64::new(u64::MAX)).collect());
                let mut expect = vec![u64::MAX; ops * 3];
                let mut all = Vec::new();
                for op in 0..ops {
                    let k = 1 + rng.below(3.min(nres));
                    let mut which = Vec::new();
                    while which.len() < k {
                        let c = rng.below(nres);
                        if !which.contains(&c) {
                            which.push(c);
                        }
                    }
                    let writes = (rng.next_u64() % (1 << k)) as u32;
                    if rng.chance(5) {
                        // The calling thread takes part, in program order.
                        let i = which[0];
                        if writes & 1 != 0 {
                            let mut g = res[i].write_now(&js);
                            *g = mix(*g, op as u64);
                            serial[i] = mix(serial[i], op as u64);
                        } else {
                            assert_eq!(*res[i].read_now(&js), serial[i], "read_now, op {op}");
                        }
                        continue;
                    }
                    for (j, &i) in which.iter().enumerate() {
                        if writes & (1 << j) != 0 {
                            serial[i] = mix(serial[i], op as u64);
                        } else {
                            expect[op * 3 + j] = serial[i];
                        }
                    }
                    all.push(schedule_op(&js, &res, op, &which, writes, &rec));
                }
                js.complete(js.combine(&all));
                for (i, r) in res.iter().enumerate() {
                    assert_eq!(*r.read_now(&js), serial[i], "final value of resource {i}");
                }
                for (i, e) in expect.iter().enumerate() {
                    assert_eq!(
                        rec[i].load(Ordering::Relaxed),
                        *e,
                        "workers {workers} seed {seed}: op {} declaration {} read the wrong value",
                        i / 3,
                        i % 3
                    );
                }
            }
        }
    });
}

#[test]
fn readers_of_one_resource_run_at_once() {
    watchdog(30, || {
        let js = system(2);
        let r = Resource::new(7u32);
        // Both readers wait for each other: they can only finish if they
        // overlap (no timing involved).
        let b = Arc::new(Barrier::new(2));
        let (b1, b2) = (b.clone(), b.clone());
        let x = js.job().access(r.read()).schedule(move |v| {
            b1.wait();
            assert_eq!(*v, 7);
        });
        let y = js.job().access(r.read()).schedule(move |v| {
            b2.wait();
            assert_eq!(*v, 7);
        });
        js.complete(js.combine(&[x, y]));
    });
}

#[test]
fn a_writer_waits_for_the_readers_before_it() {
    watchdog(30, || {
        let js = system(2);
        let r = Resource::new(1u32);
        let gate = Arc::new(Gate::default());
        let g = gate.clone();
        let seen = Arc::new(AtomicU64::new(0));
        let s = seen.clone();
        let reader = js.job().access(r.read()).schedule(move |v| {
            g.wait();
            s.store(u64::from(*v), Ordering::SeqCst);
        });
        let writer = js.job().access(r.write()).schedule(|v| *v = 2);
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!js.is_complete(writer), "the writer ran before the reader");
        match r.try_write_now(&js) {
            Err(AccessError::Busy { .. }) => {}
            other => panic!("expected Busy, got {other:?}"),
        }
        gate.open();
        js.complete(writer);
        assert!(js.is_complete(reader));
        assert_eq!(seen.load(Ordering::SeqCst), 1);
        assert_eq!(*r.read_now(&js), 2);
    });
}

#[test]
fn read_now_waits_for_a_running_writer() {
    watchdog(30, || {
        let js = system(2);
        let r = Resource::named("transforms", 0u64);
        let gate = Arc::new(Gate::default());
        let g = gate.clone();
        let started = Arc::new(Gate::default());
        let st = started.clone();
        js.job()
            .desc("integrate")
            .after(&[])
            .access(r.write())
            .schedule(move |v| {
                st.open();
                g.wait();
                *v = 42;
            });
        started.wait(); // the writer is running on a worker
        match r.try_read_now(&js) {
            Err(AccessError::Busy { name, .. }) => assert_eq!(name, "integrate"),
            other => panic!("expected Busy, got {other:?}"),
        }
        let opener = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            gate.open();
        });
        assert_eq!(*r.read_now(&js), 42);
        opener.join().unwrap();
    });
}

#[test]
fn jobs_scheduled_while_a_write_now_guard_lives_wait_for_its_drop() {
    watchdog(30, || {
        let js = system(2);
        let r = Resource::new(0u32);
        let mut g = r.write_now(&js);
        let reader = js.job().access(r.read()).schedule(|v| assert_eq!(*v, 5));
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(
            !js.is_complete(reader),
            "a reader ran while write_now was held"
        );
        // Waiting here for it would never end: a clear error, not a hang.
        assert!(matches!(js.try_complete(reader), Err(JobError::WaitOnSelf)));
        let msg = expect_panic(|| drop(r.read_now(&js)));
        assert!(msg.contains("would wait forever"), "{msg}");
        *g = 5;
        drop(g);
        js.complete(reader);
        // A read_now guard blocks writers, not readers.
        let rg = r.read_now(&js);
        let reader2 = js.job().access(r.read()).schedule(|v| assert_eq!(*v, 5));
        js.complete(reader2);
        let writer = js.job().access(r.write()).schedule(|v| *v = 6);
        assert!(matches!(js.try_complete(writer), Err(JobError::WaitOnSelf)));
        drop(rg);
        js.complete(writer);
        assert_eq!(*r.read_now(&js), 6);
    });
}

#[test]
fn a_failing_writer_fails_its_readers_with_the_cause_and_poisons() {
    watchdog(30, || {
        let js = system(2);
        let r = Resource::named("mesh", vec![0u32; 4]);
        let gate = Arc::new(Gate::default());
        let g = gate.clone();
        let w = js.job().access(r.write()).schedule(move |v| {
            g.wait();
            v[0] = 1; // half written
            panic!("boom in the writer");
        });
        let reader = js
            .job()
            .access(r.read())
            .schedule(|_| unreachable!("must not see half-written data"));
        gate.open();
        match js.try_complete(reader) {
            Err(JobError::Panicked(p)) => {
                assert!(p.via_dependency());
                assert!(
                    p.message().contains("boom in the writer"),
                    "{}",
                    p.message()
                );
            }
            other => panic!("expected a dependency panic, got {other:?}"),
        }
        assert!(js.try_complete(w).is_err());
        assert!(r.is_poisoned());
        // Scheduled after the writer finished: poisoned, fails with the cause.
        let later = js
            .job()
            .access(r.write())
            .schedule(|_| unreachable!("poisoned"));
        match js.try_complete(later) {
            Err(JobError::Panicked(p)) => {
                assert!(
                    p.message().contains("\"mesh\" is poisoned"),
                    "{}",
                    p.message()
                );
                assert!(
                    p.message().contains("boom in the writer"),
                    "{}",
                    p.message()
                );
            }
            other => panic!("expected poison, got {other:?}"),
        }
        assert!(matches!(r.try_read_now(&js), Err(AccessError::Poisoned(_))));
        r.clear_poison();
        let fix = js
            .job()
            .access(r.write())
            .schedule(|v| v.iter_mut().for_each(|x| *x = 9));
        js.complete(fix);
        assert_eq!(*r.read_now(&js), vec![9; 4]);
    });
}

#[test]
fn a_failing_reader_does_not_poison() {
    let js = system(1);
    let r = Resource::new(1u32);
    let bad = js
        .job()
        .access(r.read())
        .schedule(|_| panic!("reader failed"));
    assert!(js.try_complete(bad).is_err());
    assert!(!r.is_poisoned());
    let w = js.job().access(r.write()).schedule(|v| *v = 2);
    js.complete(w);
    assert_eq!(*r.read_now(&js), 2);
}

#[test]
fn declaring_a_resource_twice_with_a_write_panics() {
    let js = system(1);
    let r = Resource::named("positions", 0u32);
    let msg = expect_panic(|| js.job().access((r.write(), r.read())).schedule(|_| {}));
    assert!(msg.contains("\"positions\" is declared twice"), "{msg}");
    let msg = expect_panic(|| js.job().access((r.write(), r.write())).schedule(|_| {}));
    assert!(msg.contains("declared twice"), "{msg}");
    // Two reads are one read.
    let h = js
        .job()
        .access((r.read(), r.read()))
        .schedule(|(a, b)| assert_eq!(a, b));
    js.complete(h);
    // The failed schedules left no trace: a writer runs.
    js.complete(js.job().access(r.write()).schedule(|v| *v = 3));
    assert_eq!(*r.read_now(&js), 3);
}

#[test]
fn write_each_gives_every_index_exactly_once() {
    watchdog(60, || {
        for workers in 0..=4 {
            let js = system(workers);
            let n = 10_000;
            let v = Resource::new(vec![0u32; n]);
            let k = Resource::new(3u32);
            let mut handles = Vec::new();
            for batch in [
                Batch::Auto,
                Batch::Fixed(1),
                Batch::Fixed(7),
                Batch::Fixed(n),
            ] {
                handles.push(js.job().access((k.read(), v.write_each())).parallel_for(
                    0..n,
                    batch,
                    |i, (k, x)| {
                        assert_eq!(*x % 3, 0, "index {i} visited twice at once");
                        *x += *k;
                    },
                ));
                handles.push(js.job().access(v.write_each()).parallel_for_chunked(
                    0..n,
                    batch,
                    |r, xs| {
                        assert_eq!(xs.len(), r.len());
                        xs.iter_mut().for_each(|x| *x += 3);
                    },
                ));
            }
            js.complete(js.combine(&handles));
            assert!(
                v.read_now(&js).iter().all(|&x| x == 24),
                "workers {workers}"
            );
            // Past the end: the loop fails with a message.
            let bad =
                js.job()
                    .access(v.write_each())
                    .parallel_for(0..n + 1, Batch::Auto, |_, x| *x += 0);
            let err = js.try_complete(bad).unwrap_err().to_string();
            assert!(err.contains("out of bounds"), "{err}");
        }
    });
}

#[test]
fn boxed_slices_and_arrays_work_too() {
    let js = system(2);
    let b = Resource::new(vec![1u8; 64].into_boxed_slice());
    let a = Resource::new([0u16; 32]);
    let h = js.job().access((b.read(), a.write_each())).parallel_for(
        0..32,
        Batch::Fixed(4),
        |i, (b, x)| {
            *x = u16::from(b[i]) + i as u16;
        },
    );
    js.complete(h);
    assert_eq!(a.read_now(&js)[31], 32);
}

/// Every storage `write_each` accepts (`Vec`, `Box<[E]>`, arrays; the
/// trait is sealed to these), per index and chunked, including empty ones
/// and zero-sized elements. Small, so Miri can run it
/// (`cargo +nightly miri test -p jobsys --test access write_each`).
#[test]
fn write_each_works_on_every_provided_storage() {
    fn check<S, E>(js: &JobSystem, res: Resource<S>, len: usize, to_vec: fn(&S) -> Vec<E>)
    where
        S: jobsys::access::SliceStorage<Elem = E>,
        E: From<u8> + std::ops::AddAssign + Copy + PartialEq + std::fmt::Debug + Send + Sync,
    {
        let a = js
            .job()
            .access(res.write_each())
            .parallel_for(0..len, Batch::Fixed(2), |_, x| *x += E::from(1));
        let b = js.job().access(res.write_each()).parallel_for_chunked(
            0..len,
            Batch::Fixed(3),
            |r, xs| {
                assert_eq!(xs.len(), r.len());
                xs.iter_mut().for_each(|x| *x += E::from(2));
            },
        );
        js.complete(js.combine(&[a, b]));
        assert_eq!(to_vec(&res.read_now(js)), vec![E::from(3); len]);
    }
    // Miri runs this some thousand times slower.
    watchdog(if cfg!(miri) { 3600 } else { 60 }, || {
        for workers in [0, 2] {
            let js = system(workers);
            check(&js, Resource::new(vec![0u32; 7]), 7, |v| v.clone());
            check(&js, Resource::new(Vec::<u32>::new()), 0, |v| v.clone());
            check(
                &js,
                Resource::new(vec![0u64; 5].into_boxed_slice()),
                5,
                |v| v.to_vec(),
            );
            check(&js, Resource::new([0u8; 9]), 9, |v| v.to_vec());
            check(&js, Resource::new([0u8; 0]), 0, |v| v.to_vec());
            // Zero-sized elements: every index gets its own `&mut ()`.
            let z = Resource::new(vec![(); 6]);
            let seen = Arc::new(AtomicUsize::new(0));
            let s = seen.clone();
            js.complete(js.job().access(z.write_each()).parallel_for(
                0..6,
                Batch::Fixed(1),
                move |_, u| {
                    *u = ();
                    s.fetch_add(1, Ordering::Relaxed);
                },
            ));
            assert_eq!(seen.load(Ordering::Relaxed), 6);
        }
    });
}

#[test]
fn pinned_and_prioritised_access_jobs_keep_the_order() {
    watchdog(30, || {
        let js = system(2);
        let r = Resource::new(Vec::<u32>::new());
        let main = std::thread::current().id();
        let a = js
            .job()
            .pin(Pin::Main)
            .after(&[])
            .access(r.write())
            .schedule(move |v| {
                assert_eq!(std::thread::current().id(), main);
                v.push(1);
            });
        let b = js
            .job()
            .desc(Priority::High)
            .after(&[])
            .access(r.write())
            .schedule(|v| v.push(2));
        let c = js
            .job()
            .desc(Priority::Low)
            .after(&[])
            .access(r.write())
            .schedule(|v| v.push(3));
        let d = js
            .job()
            .after(&[a])
            .access(r.read())
            .schedule(|v| assert_eq!(v[..], [1, 2, 3]));
        js.complete(d);
        assert!(js.is_complete(b) && js.is_complete(c));
    });
}

/// A pinned access job whose thread is gone is cancelled and its closure
/// dropped. That drop is user code, and here it declares the same
/// resource: run while `job().pin(..).access(..)` still held the resource's
/// lock, it would lock it again on the same thread and hang (it did, before
/// the drop was moved after the unlock).
#[test]
fn a_pinned_job_whose_thread_is_gone_is_dropped_after_the_locks() {
    struct DeclaresOnDrop {
        js: JobSystem,
        r: Resource<u32>,
        tx: std::sync::mpsc::Sender<jobsys::JobHandle>,
    }
    impl Drop for DeclaresOnDrop {
        fn drop(&mut self) {
            let h = self
                .js
                .job()
                .access(self.r.read())
                .schedule(|v| unreachable!("reads after a cancelled writer: skipped ({v})"));
            self.tx.send(h).unwrap();
        }
    }
    watchdog(30, || {
        for workers in [0, 2] {
            let js = system(workers);
            let idx = {
                let js = js.clone();
                std::thread::spawn(move || js.register_thread())
                    .join()
                    .unwrap()
            };
            let r = Resource::named("r", 1u32);
            let (tx, rx) = std::sync::mpsc::channel();
            let on_drop = DeclaresOnDrop {
                js: js.clone(),
                r: r.clone(),
                tx,
            };
            let h = js
                .job()
                .pin(Pin::Thread(idx))
                .after(&[])
                .access(r.write())
                .schedule(move |v| {
                    let _keep = &on_drop;
                    *v = 2;
                });
            let inner = rx.recv().expect("the closure was dropped");
            assert!(
                matches!(js.try_complete(h), Err(JobError::Cancelled(_))),
                "{workers} workers: the pinned writer is cancelled"
            );
            // The drop ran while the writer was still unfinished: its read
            // was ordered after it and is cancelled with it.
            assert!(
                matches!(js.try_complete(inner), Err(JobError::Cancelled(_))),
                "{workers} workers: the read declared in the drop follows the writer"
            );
            assert_eq!(*r.read_now(&js), 1, "{workers} workers: nothing wrote");
        }
    });
}

#[test]
fn cancelling_a_writer_cancels_jobs_after_it_but_not_the_resource() {
    watchdog(30, || {
        let js = system(1);
        let r = Resource::new(1u32);
        let gate = Arc::new(Gate::default());
        let g = gate.clone();
        let first = js.job().access(r.read()).schedule(move |_| g.wait());
        let w = js.job().access(r.write()).schedule(|v| *v = 100);
        let reader = js
            .job()
            .access(r.read())
            .schedule(|_| unreachable!("after a cancelled writer"));
        assert!(js.cancel(w));
        gate.open();
        js.complete(first);
        assert!(matches!(
            js.try_complete(reader),
            Err(JobError::Cancelled(_))
        ));
        assert!(!r.is_poisoned());
        // Scheduled after the cancelled writer finished: it left the history.
        let later = js
            .job()
            .access(r.read())
            .schedule(|v| assert_eq!(*v, 1, "the cancelled write did not happen"));
        js.complete(later);
    });
}

#[test]
fn explicit_dependencies_add_to_the_derived_ones() {
    let js = system(2);
    let r = Resource::new(0u32);
    let flag = Arc::new(AtomicUsize::new(0));
    let f = flag.clone();
    let other = js.schedule(move || {
        std::thread::sleep(std::time::Duration::from_millis(10));
        f.store(1, Ordering::SeqCst);
    });
    let fl = flag.clone();
    let h = js
        .job()
        .after(&[other])
        .access(r.write())
        .schedule(move |v| *v = fl.load(Ordering::SeqCst) as u32);
    js.complete(h);
    assert_eq!(*r.read_now(&js), 1);
}

#[test]
fn a_resource_belongs_to_one_live_system() {
    let js1 = system(1);
    let js2 = system(1);
    let r = Resource::named("world", 0u32);
    js1.complete(js1.job().access(r.write()).schedule(|v| *v = 1));
    let msg = expect_panic(|| js2.job().access(r.read()).schedule(|_| {}));
    assert!(msg.contains("two JobSystems"), "{msg}");
    drop(js1);
    // Its system is gone (every job of it ran): the next one may take it.
    js2.complete(js2.job().access(r.read()).schedule(|v| assert_eq!(*v, 1)));
}

#[test]
fn access_jobs_from_several_threads_keep_a_consistent_order() {
    watchdog(60, || {
        let js = system(2);
        let r = Resource::new(0u64);
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let js = js.clone();
                let r = r.clone();
                std::thread::spawn(move || {
                    let mut hs = Vec::new();
                    for _ in 0..500 {
                        hs.push(js.job().access(r.write()).schedule(|v| *v += 1));
                        hs.push(js.job().access(r.read()).schedule(|v| assert!(*v > 0)));
                    }
                    js.complete(js.combine(&hs));
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*r.read_now(&js), 2000);
    });
}

#[test]
fn eight_declarations_in_one_job() {
    let js = system(2);
    let rs: Vec<Resource<u32>> = (0..8).map(Resource::new).collect();
    let h = js
        .job()
        .access((
            rs[0].read(),
            rs[1].read(),
            rs[2].read(),
            rs[3].read(),
            rs[4].write(),
            rs[5].write(),
            rs[6].write(),
            rs[7].write(),
        ))
        .schedule(|(a, b, c, d, e, f, g, h)| {
            *e += a + b;
            *f += c + d;
            *g += 1;
            *h += 1;
        });
    js.complete(h);
    assert_eq!(*rs[4].read_now(&js), 5);
    assert_eq!(*rs[5].read_now(&js), 10);
}

#[test]
fn tuples_nest_up_to_sixteen_resources() {
    let js = system(1);
    let rs: Vec<Resource<u32>> = (0..17).map(Resource::new).collect();
    let reads8 = |k: usize| {
        (
            rs[k].read(),
            rs[k + 1].read(),
            rs[k + 2].read(),
            rs[k + 3].read(),
            rs[k + 4].read(),
            rs[k + 5].read(),
            rs[k + 6].read(),
            rs[k + 7].read(),
        )
    };
    let h = js
        .job()
        .access((reads8(0), (rs[8].read(), rs[9].write())))
        .schedule(|((a, ..), (b, c))| {
            *c = a + b + 100;
        });
    js.complete(h);
    assert_eq!(*rs[9].read_now(&js), 108);
    let msg = expect_panic(|| {
        js.job()
            .access((reads8(0), reads8(8), rs[16].write()))
            .schedule(|_| {})
    });
    assert!(msg.contains("at most 16"), "{msg}");
}

/// A `read_now`/`write_now` whose wait fails (a wait on oneself) must not
/// erase the resource's ordering: its event is already the history's last
/// writer, so jobs scheduled afterwards still come after the conflicting
/// jobs it waited for. Before, the event finished at once and a reader
/// scheduled next ran before the earlier writer (0 workers: every time).
#[test]
fn a_failed_guard_wait_keeps_later_readers_after_the_earlier_writer() {
    watchdog(30, || {
        for workers in [0, 2] {
            let js = system(workers);
            let a = Resource::named("a", 0u32);
            let b = Resource::named("b", 0u32);
            let g = a.write_now(&js);
            // Writes b, but needs a: cannot start before `g` drops.
            let j = js
                .job()
                .access((a.read(), b.write()))
                .schedule(|(_, b)| *b = 1);
            let msg = expect_panic(|| drop(b.write_now(&js)));
            assert!(msg.contains("would wait forever"), "{msg}");
            let seen = Arc::new(AtomicU64::new(u64::MAX));
            let s = seen.clone();
            let r = js
                .job()
                .access(b.read())
                .schedule(move |v| s.store(u64::from(*v), Ordering::SeqCst));
            assert!(
                !js.is_complete(r),
                "{workers} workers: the reader ran before its writer"
            );
            drop(g);
            js.complete(r);
            assert_eq!(
                seen.load(Ordering::SeqCst),
                1,
                "{workers} workers: the reader did not see the write scheduled before it"
            );
            js.complete(j);
        }
    });
}

/// The write side of the same defect: a writer scheduled after a failed
/// `write_now` must not run before (or beside) a reader scheduled before
/// it. Before, it ran at once: the reader then saw the later write (or, a
/// loop reading, overlapped it: `&mut T` and `&T` on two threads).
#[test]
fn a_failed_guard_wait_keeps_later_writers_after_the_earlier_reader() {
    watchdog(30, || {
        for workers in [0, 2] {
            let js = system(workers);
            let a = Resource::named("a", 0u32);
            let b = Resource::named("b", vec![0u32; 64]);
            let g = a.write_now(&js);
            let seen = Arc::new(AtomicU64::new(u64::MAX));
            let s = seen.clone();
            // Reads b, but needs a: cannot start before `g` drops.
            let reader = js
                .job()
                .access((a.read(), b.read()))
                .schedule(move |(_, b)| {
                    s.store(b.iter().map(|&x| u64::from(x)).sum(), Ordering::SeqCst)
                });
            let msg = expect_panic(|| drop(b.write_now(&js)));
            assert!(msg.contains("would wait forever"), "{msg}");
            let writer =
                js.job()
                    .access(b.write_each())
                    .parallel_for(0..64, Batch::Fixed(8), |_, x| {
                        *x = 2;
                    });
            assert!(
                !js.is_complete(writer),
                "{workers} workers: the writer ran before the reader"
            );
            drop(g);
            js.complete(writer);
            assert_eq!(
                seen.load(Ordering::SeqCst),
                0,
                "{workers} workers: the reader saw a write scheduled after it"
            );
            js.complete(reader);
            assert!(b.read_now(&js).iter().all(|&x| x == 2));
        }
    });
}

/// A wait that ended with `WaitOnSelf` (a job it needs waits for a guard
/// this thread holds) must not leave marks that hide the guard's event
/// from later waits: once the guard drops, a wait on the same job runs
/// the event and the jobs after it. Before, at 0 workers, the event went
/// to a plain deque that the later wait never searched: it parked forever.
#[test]
fn a_wait_after_a_failed_wait_on_a_guard_finds_the_released_event() {
    watchdog(30, || {
        for workers in [0, 1] {
            let js = system(workers);
            let a = Resource::new(0u32);
            let g = a.write_now(&js);
            let j = js.job().access(a.read()).schedule(|_| {});
            let k = js.schedule_after(&[j], || {});
            assert!(matches!(js.try_complete(k), Err(JobError::WaitOnSelf)));
            drop(g);
            js.complete(k);
            assert!(js.is_complete(j));
        }
    });
}
