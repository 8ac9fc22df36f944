//! `ProfilerHooks` through the public API, with a hooks implementation that
//! records every call with the OS thread it came from: jobs begin and end
//! once on the thread that ran them with their names, waits, sleeps and
//! wakes pair up, threads start and stop, frames, and hooks on one system
//! see nothing of another. With `--features tracy`, the same suite runs
//! with the Tracy client linked (no profiler connected), and `TracyHooks`
//! is checked to open a zone for every begin it is given.
//!
//! No test waits on time: gates and the recorder's own condition variable.

#![cfg(feature = "trace")]

mod common;

use common::{watchdog, Gate};
use jobsys::trace::{AccessMode, JobId};
use jobsys::{Batch, IdlePolicy, JobDesc, JobSystem, ProfilerHooks};
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Ev {
    Start(String),
    Stop,
    Ready(JobId),
    Begin(JobId, &'static str),
    End(JobId, &'static str),
    Steal(u32),
    WaitBegin(JobId),
    WaitEnd(JobId),
    SleepBegin,
    SleepEnd,
    Wake(u32),
    FrameBegin(u64),
    FrameEnd(u64),
    Active(u32),
    Access(JobId, u64, &'static str, AccessMode),
}

/// One hook call: the OS thread it came on, the `thread` index it named,
/// what it was.
type Call = (ThreadId, u32, Ev);

/// Records every call in order (a hook may take its own short lock: it
/// must only not call back into jobsys).
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<Call>>,
    changed: Condvar,
}

impl Recorder {
    fn push(&self, thread: u32, ev: Ev) {
        self.calls
            .lock()
            .unwrap()
            .push((std::thread::current().id(), thread, ev));
        self.changed.notify_all();
    }

    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// Block until `ready(calls)` holds.
    fn wait_until(&self, mut ready: impl FnMut(&[Call]) -> bool) {
        let mut calls = self.calls.lock().unwrap();
        while !ready(&calls) {
            calls = self.changed.wait(calls).unwrap();
        }
    }
}

impl ProfilerHooks for Recorder {
    fn thread_start(&self, thread: u32, name: &str) {
        self.push(thread, Ev::Start(name.to_string()));
    }
    fn thread_stop(&self, thread: u32) {
        self.push(thread, Ev::Stop);
    }
    fn job_ready(&self, thread: u32, job: JobId) {
        self.push(thread, Ev::Ready(job));
    }
    fn job_begin(&self, thread: u32, job: JobId, name: &'static str) {
        self.push(thread, Ev::Begin(job, name));
    }
    fn job_end(&self, thread: u32, job: JobId, name: &'static str) {
        self.push(thread, Ev::End(job, name));
    }
    fn steal(&self, thread: u32, victim: u32) {
        self.push(thread, Ev::Steal(victim));
    }
    fn wait_begin(&self, thread: u32, job: JobId) {
        self.push(thread, Ev::WaitBegin(job));
    }
    fn wait_end(&self, thread: u32, job: JobId) {
        self.push(thread, Ev::WaitEnd(job));
    }
    fn sleep_begin(&self, thread: u32) {
        self.push(thread, Ev::SleepBegin);
    }
    fn sleep_end(&self, thread: u32) {
        self.push(thread, Ev::SleepEnd);
    }
    fn wake(&self, thread: u32, wakee: u32) {
        self.push(thread, Ev::Wake(wakee));
    }
    fn frame_begin(&self, thread: u32, frame: u64) {
        self.push(thread, Ev::FrameBegin(frame));
    }
    fn frame_end(&self, thread: u32, frame: u64) {
        self.push(thread, Ev::FrameEnd(frame));
    }
    fn active_workers(&self, thread: u32, count: u32) {
        self.push(thread, Ev::Active(count));
    }
    fn access(&self, thread: u32, job: JobId, resource: u64, name: &'static str, mode: AccessMode) {
        self.push(thread, Ev::Access(job, resource, name, mode));
    }
}

/// The hooks under test: the recorder alone, or with `--features tracy`
/// the recorder layered over `TracyHooks` (every call goes to both), so
/// the whole suite also drives the Tracy client.
struct Hooks {
    rec: Recorder,
    #[cfg(feature = "tracy")]
    tracy: jobsys::tracy::TracyHooks,
}

impl Hooks {
    fn new() -> Arc<Hooks> {
        Arc::new(Hooks {
            rec: Recorder::default(),
            #[cfg(feature = "tracy")]
            tracy: jobsys::tracy::TracyHooks::new(),
        })
    }
}

/// Forward one call to the recorder and, with `tracy`, to `TracyHooks`.
macro_rules! both {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {
        impl ProfilerHooks for Hooks {
            $(fn $name(&self $(, $arg: $ty)*) {
                #[cfg(feature = "tracy")]
                self.tracy.$name($($arg),*);
                self.rec.$name($($arg),*);
            })*
        }
    };
}

both! {
    thread_start(t: u32, name: &str);
    thread_stop(t: u32);
    job_ready(t: u32, job: JobId);
    job_begin(t: u32, job: JobId, name: &'static str);
    job_end(t: u32, job: JobId, name: &'static str);
    steal(t: u32, victim: u32);
    wait_begin(t: u32, job: JobId);
    wait_end(t: u32, job: JobId);
    sleep_begin(t: u32);
    sleep_end(t: u32);
    wake(t: u32, wakee: u32);
    frame_begin(t: u32, frame: u64);
    frame_end(t: u32, frame: u64);
    active_workers(t: u32, count: u32);
    access(t: u32, job: JobId, resource: u64, name: &'static str, mode: AccessMode);
}

fn system(workers: usize, hooks: &Arc<Hooks>) -> JobSystem {
    JobSystem::builder()
        .workers(workers)
        .profiler(hooks.clone())
        .build()
        .unwrap()
}

/// Per OS thread: one `thread` index, and job, wait and sleep begins and
/// ends nest like brackets and are all closed (read after the system is
/// dropped). Returns each thread's index.
fn assert_nested_and_closed(calls: &[Call]) -> HashMap<ThreadId, u32> {
    #[derive(Debug, PartialEq)]
    enum Open {
        Job(JobId, &'static str),
        Wait(JobId),
        Sleep,
    }
    let mut index: HashMap<ThreadId, u32> = HashMap::new();
    let mut open: HashMap<ThreadId, Vec<Open>> = HashMap::new();
    for (tid, thread, ev) in calls {
        let i = *index.entry(*tid).or_insert(*thread);
        assert_eq!(i, *thread, "one index per thread: {ev:?}");
        let stack = open.entry(*tid).or_default();
        match ev {
            Ev::Begin(j, n) => stack.push(Open::Job(*j, n)),
            Ev::WaitBegin(j) => stack.push(Open::Wait(*j)),
            Ev::SleepBegin => stack.push(Open::Sleep),
            Ev::End(j, n) => assert_eq!(stack.pop(), Some(Open::Job(*j, n)), "thread {i}"),
            Ev::WaitEnd(j) => assert_eq!(stack.pop(), Some(Open::Wait(*j)), "thread {i}"),
            Ev::SleepEnd => assert_eq!(stack.pop(), Some(Open::Sleep), "thread {i}"),
            _ => {}
        }
    }
    for (tid, stack) in open {
        // Every test reads the calls after dropping its system.
        assert!(
            stack.is_empty(),
            "thread {}: left open {stack:?}",
            index[&tid]
        );
    }
    index
}

/// (OS thread, begins, ends) of `job`'s begin/end calls.
fn runs_of(calls: &[Call], job: JobId) -> Vec<(ThreadId, &'static str, bool)> {
    calls
        .iter()
        .filter_map(|(tid, _, ev)| match ev {
            Ev::Begin(j, n) if *j == job => Some((*tid, *n, true)),
            Ev::End(j, n) if *j == job => Some((*tid, *n, false)),
            _ => None,
        })
        .collect()
}

#[test]
fn every_job_begins_and_ends_once_on_the_thread_that_ran_it_with_its_name() {
    watchdog(60, || {
        let hooks = Hooks::new();
        let js = system(2, &hooks);
        // Each job notes the OS thread it ran on, under its number.
        let ran: Arc<Mutex<HashMap<usize, ThreadId>>> = Arc::default();
        let note = |k: usize| {
            let ran = ran.clone();
            move || {
                ran.lock().unwrap().insert(k, std::thread::current().id());
            }
        };
        const PHYSICS: JobDesc = JobDesc::named("physics");
        let mut jobs = Vec::new();
        for i in 0..20 {
            let k = 3 * i;
            let a = js.job().name("anim").schedule(note(k));
            let p = js.job().desc(PHYSICS).after(&[a]).schedule(note(k + 1));
            let u = js.schedule_after(&[p], note(k + 2));
            jobs.extend([(a, "anim", k), (p, "physics", k + 1), (u, "unnamed", k + 2)]);
        }
        let pfor_threads: Arc<Mutex<Vec<ThreadId>>> = Arc::default();
        let r = pfor_threads.clone();
        let pfor = js.job().desc("particles").after(&[]).parallel_for(
            0..4096,
            Batch::Fixed(16),
            move |_| {
                let t = std::thread::current().id();
                let mut r = r.lock().unwrap();
                if !r.contains(&t) {
                    r.push(t);
                }
            },
        );
        let all: Vec<_> = jobs.iter().map(|j| j.0).chain([pfor]).collect();
        js.complete(js.combine(&all));
        // Read after the workers are joined: a thread that ran pieces of
        // the loop records its end after its last piece, possibly after
        // another thread finished the loop.
        drop(js);
        let calls = hooks.rec.calls();
        assert_nested_and_closed(&calls);
        let ran = ran.lock().unwrap();
        for &(h, label, k) in &jobs {
            let id = JobId::of_handle(h);
            let runs = runs_of(&calls, id);
            let tid = ran[&k];
            assert_eq!(runs.len(), 2, "{label}: one begin, one end: {runs:?}");
            let name = runs[0].1;
            assert_eq!(runs[0], (tid, name, true), "{label}: begin where it ran");
            assert_eq!(runs[1], (tid, name, false), "{label}: end where it ran");
            if label == "unnamed" {
                assert!(name.contains("closure"), "closure type name: {name}");
            } else {
                assert_eq!(name, label);
            }
            // Ready once, before its begin.
            let ready: Vec<_> = calls
                .iter()
                .enumerate()
                .filter(|(_, c)| c.2 == Ev::Ready(id))
                .map(|(i, _)| i)
                .collect();
            let begin = calls
                .iter()
                .position(|c| c.2 == Ev::Begin(id, name))
                .unwrap();
            assert_eq!(ready.len(), 1, "{label}: one ready");
            assert!(ready[0] < begin, "{label}: ready before begin");
        }
        // The parallel_for: one begin/end pair on each thread that ran
        // pieces, and none elsewhere.
        let runs = runs_of(&calls, JobId::of_handle(pfor));
        let mut threads: Vec<ThreadId> = runs.iter().filter(|r| r.2).map(|r| r.0).collect();
        threads.sort_by_key(|t| format!("{t:?}"));
        let mut expected = pfor_threads.lock().unwrap().clone();
        expected.sort_by_key(|t| format!("{t:?}"));
        assert_eq!(threads, expected, "a begin per thread that ran pieces");
        assert_eq!(runs.len(), 2 * threads.len());
        assert!(runs.iter().all(|r| r.1 == "particles"));
    });
}

#[test]
fn a_join_half_taken_by_another_thread_is_a_join_job_there() {
    watchdog(60, || {
        let hooks = Hooks::new();
        let js = system(1, &hooks);
        let started = Gate::default();
        let ran_on = Mutex::new(None);
        // `b` waits until `a` runs: `a` must be taken by the worker, which
        // the hot zone keeps awake and looking (`join`'s own wake is
        // unfenced, so it could be missed by a worker falling asleep).
        let hot = js.hot_zone();
        js.join(
            || {
                *ran_on.lock().unwrap() = Some(std::thread::current().id());
                started.open();
            },
            || started.wait(),
        );
        drop(hot);
        // The worker records the join job's end after it released the
        // joiner: read after it is joined.
        drop(js);
        let worker = ran_on.lock().unwrap().unwrap();
        let calls = hooks.rec.calls();
        assert_nested_and_closed(&calls);
        let joins: Vec<_> = calls
            .iter()
            .filter(|c| matches!(c.2, Ev::Begin(_, "join") | Ev::End(_, "join")))
            .collect();
        assert_eq!(joins.len(), 2, "{joins:?}");
        assert!(joins.iter().all(|c| c.0 == worker && c.1 == 1));
        // The joining thread waited for it.
        let Ev::Begin(id, _) = joins[0].2 else {
            unreachable!()
        };
        let me = std::thread::current().id();
        assert!(calls.iter().any(|c| c.0 == me && c.2 == Ev::WaitBegin(id)));
        assert!(calls.iter().any(|c| c.0 == me && c.2 == Ev::WaitEnd(id)));
    });
}

#[test]
fn a_wait_begins_and_ends_on_the_waiting_thread() {
    watchdog(60, || {
        let hooks = Hooks::new();
        let js = system(1, &hooks);
        let gate = Arc::new(Gate::default());
        let g = gate.clone();
        let h = js.job().name("blocked").schedule(move || g.wait());
        let id = JobId::of_handle(h);
        let me = std::thread::current().id();
        // The worker runs it (this thread is not in jobsys meanwhile).
        hooks
            .rec
            .wait_until(|c| c.iter().any(|c| c.2 == Ev::Begin(id, "blocked")));
        // Open the gate once this thread is inside its wait for `h`.
        let opener = {
            let hooks = hooks.clone();
            std::thread::spawn(move || {
                hooks
                    .rec
                    .wait_until(|c| c.iter().any(|c| c.0 == me && c.2 == Ev::WaitBegin(id)));
                gate.open();
            })
        };
        js.complete(h);
        opener.join().unwrap();
        drop(js);
        let calls = hooks.rec.calls();
        assert_nested_and_closed(&calls);
        let mine: Vec<_> = calls
            .iter()
            .filter(|c| c.0 == me && matches!(c.2, Ev::WaitBegin(_) | Ev::WaitEnd(_)))
            .map(|c| c.2.clone())
            .collect();
        assert_eq!(mine, [Ev::WaitBegin(id), Ev::WaitEnd(id)]);
        // The job ran on the worker (this thread was blocked in the wait).
        let runs = runs_of(&calls, id);
        assert_eq!(runs.len(), 2);
        assert!(runs.iter().all(|r| r.0 != me && r.1 == "blocked"));
    });
}

#[test]
fn a_sleeping_worker_is_woken_by_a_wake_that_names_it() {
    watchdog(60, || {
        let hooks = Hooks::new();
        let js = JobSystem::builder()
            .workers(1)
            .idle_policy(IdlePolicy::SpinThenSleep {
                spin: Duration::ZERO,
            })
            .profiler(hooks.clone())
            .build()
            .unwrap();
        // The worker (thread index 1) asleep: its last sleep call is a begin.
        let asleep = |c: &[Call]| {
            c.iter()
                .rev()
                .find(|c| c.1 == 1 && matches!(c.2, Ev::SleepBegin | Ev::SleepEnd))
                .is_some_and(|c| c.2 == Ev::SleepBegin)
        };
        hooks.rec.wait_until(asleep);
        let from = hooks.rec.calls().len();
        let gate = Arc::new(Gate::default());
        let g = gate.clone();
        // The job blocks until opened, so the worker (not this thread)
        // can run it only if woken; this thread runs nothing meanwhile.
        let h = js.job().name("wake me").schedule(move || g.wait());
        let me = std::thread::current().id();
        hooks.rec.wait_until(|c| {
            c[from..]
                .iter()
                .any(|c| c.1 == 1 && matches!(c.2, Ev::Begin(_, "wake me")))
        });
        gate.open();
        js.complete(h);
        drop(js);
        let calls = hooks.rec.calls();
        assert_nested_and_closed(&calls);
        let after = &calls[from..];
        let end = after
            .iter()
            .position(|c| c.1 == 1 && c.2 == Ev::SleepEnd)
            .expect("the worker's sleep ended");
        // Woken by this thread's schedule, before the sleep ended.
        let wake = after[..end]
            .iter()
            .find(|c| c.2 == Ev::Wake(1))
            .unwrap_or_else(|| panic!("no wake of worker 0 before its sleep ended: {after:?}"));
        assert_eq!(wake.0, me);
        // Every sleep begin of the worker has its end before the next one.
        let mut sleeping = false;
        for c in calls.iter().filter(|c| c.1 == 1) {
            match c.2 {
                Ev::SleepBegin => assert!(!std::mem::replace(&mut sleeping, true)),
                Ev::SleepEnd => assert!(std::mem::replace(&mut sleeping, false)),
                _ => {}
            }
        }
    });
}

#[test]
fn threads_start_and_stop_and_frames_are_marked() {
    watchdog(60, || {
        let hooks = Hooks::new();
        let js = system(3, &hooks);
        for _ in 0..3 {
            let _frame = js.frame();
            js.complete(js.schedule(|| {}));
        }
        js.frame_begin();
        js.frame_end();
        js.set_active_workers(1).unwrap();
        // An outside thread: started when it first uses the system,
        // stopped when it exits (the system still lives).
        let js2 = js.clone();
        let helper = std::thread::Builder::new()
            .name("helper".into())
            .spawn(move || {
                js2.complete(js2.schedule(|| {}));
                std::thread::current().id()
            })
            .unwrap()
            .join()
            .unwrap();
        let me = std::thread::current().id();
        let my_name = std::thread::current().name().unwrap_or("").to_string();
        drop(js);
        let calls = hooks.rec.calls();
        let index = assert_nested_and_closed(&calls);
        // Every worker (thread indices 1..=3): started first thing with its
        // name, stopped last.
        for w in 1..=3u32 {
            let mine: Vec<_> = calls.iter().filter(|c| c.1 == w).collect();
            assert_eq!(mine[0].2, Ev::Start(format!("jobsys-worker-{w}")));
            assert_eq!(mine.last().unwrap().2, Ev::Stop, "worker {w}");
            assert!(mine.iter().all(|c| c.0 == mine[0].0), "one OS thread");
        }
        // This thread (it built the system) started with its name, as
        // thread index 0.
        assert_eq!(index[&me], 0);
        assert_eq!(
            calls.iter().find(|c| c.0 == me).unwrap().2,
            Ev::Start(my_name)
        );
        let theirs: Vec<_> = calls
            .iter()
            .filter(|c| c.0 == helper && matches!(c.2, Ev::Start(_) | Ev::Stop))
            .collect();
        assert_eq!(theirs.len(), 2, "{theirs:?}");
        assert_eq!(theirs[0].2, Ev::Start("helper".into()));
        assert_eq!(theirs[1].2, Ev::Stop);
        // The helper only scheduled and waited: no thread index, so a
        // number from UNINDEXED_THREAD_BASE up.
        assert!(theirs[0].1 >= jobsys::trace::UNINDEXED_THREAD_BASE);
        let frames: Vec<_> = calls
            .iter()
            .filter(|c| matches!(c.2, Ev::FrameBegin(_) | Ev::FrameEnd(_)))
            .map(|c| {
                assert_eq!(c.0, me);
                c.2.clone()
            })
            .collect();
        let expected: Vec<_> = (0..4)
            .flat_map(|n| [Ev::FrameBegin(n), Ev::FrameEnd(n)])
            .collect();
        assert_eq!(frames, expected);
        assert!(calls.iter().any(|c| c.0 == me && c.2 == Ev::Active(1)));
    });
}

#[test]
fn another_system_without_hooks_reports_nothing_to_them() {
    watchdog(60, || {
        let hooks = Hooks::new();
        let with = system(1, &hooks);
        let without = JobSystem::builder().workers(2).build().unwrap();
        // The system without hooks runs (on its cold path now) and records
        // a capture of its own.
        without.trace_start();
        let hs: Vec<_> = (0..50)
            .map(|_| without.job().name("other").schedule(|| {}))
            .collect();
        let hs2: Vec<_> = hs
            .iter()
            .map(|&h| without.schedule_after(&[h], || {}))
            .collect();
        without.complete(without.combine(&hs2));
        let trace = without.trace_stop();
        assert!(trace.event_count() > 0);
        let h = with.job().name("mine").schedule(|| {});
        with.complete(h);
        drop(without);
        // After the drop, so its worker has surely started (and stopped).
        drop(with);
        let calls = hooks.rec.calls();
        let ids: Vec<JobId> = hs
            .iter()
            .chain(&hs2)
            .map(|&h| JobId::of_handle(h))
            .collect();
        for c in &calls {
            match &c.2 {
                Ev::Begin(j, n) | Ev::End(j, n) => {
                    assert!(!ids.contains(j) && *n != "other", "{c:?}")
                }
                Ev::Ready(j) | Ev::WaitBegin(j) | Ev::WaitEnd(j) => assert!(!ids.contains(j)),
                _ => {}
            }
        }
        // Only this system's threads: its worker and this thread.
        let starts: Vec<_> = calls
            .iter()
            .filter(|c| matches!(c.2, Ev::Start(_)))
            .collect();
        assert_eq!(starts.len(), 2, "{starts:?}");
        assert_eq!(runs_of(&calls, JobId::of_handle(h)).len(), 2);
    });
}

/// Run by `a_panicking_hook_aborts_the_process` in a child process.
/// Each declared access reaches `access` on the scheduling thread, with
/// its job (the handle's id), the resource's name and mode; one resource
/// keeps one id; a job without declarations reports none.
#[test]
fn declared_accesses_reach_the_access_hook() {
    watchdog(30, || {
        let hooks = Hooks::new();
        let js = system(1, &hooks);
        let pos = jobsys::Resource::named("positions", vec![0u32; 8]);
        let vel = jobsys::Resource::new(1u32);
        let a = js
            .job()
            .access((pos.read(), vel.write()))
            .schedule(|(_, v)| *v = 2);
        let b = js
            .job()
            .access(pos.write_each())
            .parallel_for(0..8, Batch::Auto, |i, p| *p = i as u32);
        js.complete(js.schedule(|| {}));
        js.complete(a);
        js.complete(b);
        let me = std::thread::current().id();
        let mut got: Vec<(JobId, &'static str, AccessMode, u64)> = hooks
            .rec
            .calls()
            .into_iter()
            .filter_map(|(t, _, ev)| match ev {
                Ev::Access(job, res, name, mode) => {
                    assert_eq!(t, me, "reported on the scheduling thread");
                    Some((job, name, mode, res))
                }
                _ => None,
            })
            .collect();
        assert_eq!(got.len(), 3, "{got:?}");
        got.sort_by_key(|g| (g.0 != JobId::of_handle(a), g.1));
        let (ja, jb) = (JobId::of_handle(a), JobId::of_handle(b));
        assert_eq!((got[0].0, got[0].1, got[0].2), (ja, "", AccessMode::Write));
        assert_eq!(
            (got[1].0, got[1].1, got[1].2),
            (ja, "positions", AccessMode::Read)
        );
        assert_eq!(
            (got[2].0, got[2].1, got[2].2),
            (jb, "positions", AccessMode::WriteEach)
        );
        assert_eq!(got[1].3, got[2].3, "one resource, one id");
        assert_ne!(got[0].3, got[1].3);
    });
}

#[test]
fn panicking_hook_child() {
    if std::env::var_os("JOBSYS_PANICKING_HOOK_CHILD").is_none() {
        return;
    }
    struct Bad;
    impl ProfilerHooks for Bad {
        fn job_begin(&self, _: u32, _: JobId, _: &'static str) {
            panic!("hook panic");
        }
    }
    let js = JobSystem::builder()
        .workers(0)
        .profiler(Arc::new(Bad))
        .build()
        .unwrap();
    js.complete(js.schedule(|| {}));
    // Not reached: the hook's panic aborts.
    std::process::exit(0);
}

#[test]
fn a_panicking_hook_aborts_the_process() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "panicking_hook_child", "--nocapture"])
        .env("JOBSYS_PANICKING_HOOK_CHILD", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(libc_sigabrt()), "{stderr}");
    }
    assert!(!out.status.success());
    assert!(stderr.contains("hook panic"), "{stderr}");
    assert!(
        stderr.contains("a ProfilerHooks method panicked"),
        "{stderr}"
    );
}

/// A hook that calls back into the job system: when `armed` and its
/// method `hook` is called, it runs `call` (once) with the system it was
/// given. It also tells which threads sleep (`Seen`), so a scenario can
/// wait for a parked worker or waiter without timing.
struct CallsBack {
    hook: &'static str,
    call: Box<dyn Fn(Option<JobSystem>) + Send + Sync>,
    js: Mutex<Option<JobSystem>>,
    armed: std::sync::atomic::AtomicBool,
    seen: Mutex<Seen>,
    changed: Condvar,
}

/// What a `CallsBack` scenario waits for.
#[derive(Default)]
struct Seen {
    /// OS threads, and thread indices, between their `sleep_begin` and a
    /// `wake` naming them (not their `sleep_end`: a woken thread that has
    /// not stamped it yet is no longer asleep).
    asleep: Vec<(ThreadId, u32)>,
    /// `call` has returned.
    returned: bool,
}

impl CallsBack {
    fn new(
        hook: &'static str,
        call: impl Fn(Option<JobSystem>) + Send + Sync + 'static,
    ) -> Arc<Self> {
        Arc::new(CallsBack {
            hook,
            call: Box::new(call),
            js: Mutex::new(None),
            armed: std::sync::atomic::AtomicBool::new(false),
            seen: Mutex::new(Seen::default()),
            changed: Condvar::new(),
        })
    }

    fn arm(&self) {
        self.armed.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn fire(&self, method: &str) {
        if method == self.hook && self.armed.swap(false, std::sync::atomic::Ordering::SeqCst) {
            // Taken out (not cloned): a scenario that handed over its last
            // clone has the hook drop it.
            let js = self.js.lock().unwrap().take();
            (self.call)(js);
            eprintln!("jobsys-test: the call from ProfilerHooks::{method} returned");
            self.seen.lock().unwrap().returned = true;
            self.changed.notify_all();
        }
    }

    fn sleeping(&self, thread: u32, begin: bool) {
        let mut seen = self.seen.lock().unwrap();
        seen.asleep.retain(|t| t.1 != thread);
        if begin {
            seen.asleep.push((std::thread::current().id(), thread));
        }
        drop(seen);
        self.changed.notify_all();
    }

    /// Block until `ready(what was seen)`.
    fn wait_until(&self, ready: impl Fn(&Seen) -> bool) {
        let mut seen = self.seen.lock().unwrap();
        while !ready(&seen) {
            seen = self.changed.wait(seen).unwrap();
        }
    }

    /// Block until thread index `thread` is asleep.
    fn wait_asleep(&self, thread: u32) {
        self.wait_until(|s| s.asleep.iter().any(|t| t.1 == thread));
    }

    /// Block until the hook's call has returned.
    fn wait_returned(&self) {
        self.wait_until(|s| s.returned);
    }
}

impl ProfilerHooks for CallsBack {
    fn job_ready(&self, _: u32, _: JobId) {
        self.fire("job_ready");
    }
    fn job_begin(&self, _: u32, _: JobId, _: &'static str) {
        self.fire("job_begin");
    }
    fn job_end(&self, _: u32, _: JobId, _: &'static str) {
        self.fire("job_end");
    }
    fn sleep_begin(&self, thread: u32) {
        self.sleeping(thread, true);
        self.fire("sleep_begin");
    }
    fn sleep_end(&self, thread: u32) {
        self.sleeping(thread, false);
    }
    fn wake(&self, _: u32, wakee: u32) {
        self.sleeping(wakee, false);
        self.fire("wake");
    }
    fn active_workers(&self, _: u32, _: u32) {
        self.fire("active_workers");
    }
    fn access(&self, _: u32, _: JobId, _: u64, _: &'static str, _: AccessMode) {
        self.fire("access");
    }
}

fn calls_back_system(workers: usize, hooks: &Arc<CallsBack>) -> JobSystem {
    JobSystem::builder()
        .workers(workers)
        .idle_policy(IdlePolicy::SpinThenSleep {
            spin: Duration::ZERO,
        })
        .profiler(hooks.clone())
        .build()
        .unwrap()
}

/// The scenarios of `calls_back_child`, each a hook that calls back into
/// the system while its caller holds a lock or is half way through a
/// step. Each hung for ever before the calls were refused.
fn calls_back_scenario(name: &str) {
    use jobsys::Resource;
    match name {
        // Under `set_active_workers`' lock.
        "set_active_workers from active_workers" => {
            let hooks = CallsBack::new("active_workers", |js| {
                let _ = js.unwrap().set_active_workers(2);
            });
            let js = calls_back_system(2, &hooks);
            *hooks.js.lock().unwrap() = Some(js.clone());
            hooks.arm();
            let _ = js.set_active_workers(1);
        }
        // Under the resource's lock: a job scheduled on the same resource,
        // a guard on it, its poison cleared.
        "schedule_access from access" | "read_now from access" | "clear_poison from access" => {
            let r = Resource::named("r", 0u32);
            let r2 = r.clone();
            let what = name.to_string();
            let hooks = CallsBack::new("access", move |js| {
                let js = js.unwrap();
                match what.as_str() {
                    "schedule_access from access" => {
                        js.job().access(r2.read()).schedule(|_| {});
                    }
                    "read_now from access" => drop(r2.read_now(&js)),
                    _ => r2.clear_poison(),
                }
            });
            let js = calls_back_system(0, &hooks);
            *hooks.js.lock().unwrap() = Some(js.clone());
            hooks.arm();
            js.job().access(r.write()).schedule(|v| *v += 1);
        }
        // The ready of an access job comes under the resource's lock too.
        "write_now from job_ready" => {
            let r = Resource::named("r", 0u32);
            let r2 = r.clone();
            let hooks = CallsBack::new("job_ready", move |js| {
                drop(r2.write_now(&js.unwrap()));
            });
            let js = calls_back_system(0, &hooks);
            *hooks.js.lock().unwrap() = Some(js.clone());
            hooks.arm();
            js.job().access(r.write()).schedule(|v| *v += 1);
        }
        // Under the sleepers' lock: the wake of a parked worker by this
        // thread's schedule.
        "hot_zone from wake" => {
            let hooks = CallsBack::new("wake", |js| drop(js.unwrap().hot_zone()));
            let js = calls_back_system(1, &hooks);
            *hooks.js.lock().unwrap() = Some(js.clone());
            hooks.wait_asleep(1); // the worker, thread index 1
            hooks.arm();
            js.schedule(|| {});
        }
        // Under the sleepers' lock, on a worker, with the system's last
        // clone: worker 1 (thread index) finishes `gate`, which releases
        // two jobs; it keeps one to run next itself and wakes the parked
        // worker 2 for the other.
        "drop from wake" => {
            let hooks = CallsBack::new("wake", drop);
            let js = calls_back_system(2, &hooks);
            let open = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let started = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let (o, st) = (open.clone(), started.clone());
            let gate = js.job().pin(jobsys::Pin::Worker(1)).schedule(move || {
                st.store(true, std::sync::atomic::Ordering::SeqCst);
                while !o.load(std::sync::atomic::Ordering::SeqCst) {
                    std::hint::spin_loop();
                }
            });
            js.schedule_after(&[gate], || {});
            js.schedule_after(&[gate], || {});
            // Worker 1 is in `gate` (nothing else wakes worker 2 then) and
            // worker 2 is parked.
            while !started.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::yield_now();
            }
            hooks.wait_asleep(2);
            *hooks.js.lock().unwrap() = Some(js);
            hooks.arm();
            open.store(true, std::sync::atomic::Ordering::SeqCst);
            // The call happens on worker 1, and this thread has nothing
            // else to wait on.
            hooks.wait_returned();
        }
        // Under the waiters' lock, on the worker: the wake of this thread,
        // parked in `complete`, by the job it waits for.
        "schedule_pinned from wake" => {
            let hooks = CallsBack::new("wake", |js| {
                js.unwrap().job().pin(jobsys::Pin::Main).schedule(|| {});
            });
            let js = calls_back_system(1, &hooks);
            *hooks.js.lock().unwrap() = Some(js.clone());
            let main = std::thread::current().id();
            let h2 = hooks.clone();
            let x = js.job().pin(jobsys::Pin::Worker(1)).schedule(move || {
                h2.arm();
                h2.wait_until(|s| s.asleep.iter().any(|t| t.0 == main));
            });
            js.complete(x);
        }
        // No lock held, but half way through a job's start or end: a
        // schedule and wait there, and a schedule.
        "complete from job_begin" | "schedule from job_end" => {
            let begin = name == "complete from job_begin";
            let hooks = CallsBack::new(if begin { "job_begin" } else { "job_end" }, move |js| {
                let js = js.unwrap();
                let h = js.schedule(|| {});
                if begin {
                    js.complete(h);
                }
            });
            let js = calls_back_system(2, &hooks);
            *hooks.js.lock().unwrap() = Some(js.clone());
            hooks.arm();
            js.complete(js.schedule(|| {}));
            // The job ran on a worker, whose hook is refused; or here.
            hooks.wait_returned();
        }
        // Another system counts too.
        "schedule of another system from job_ready" => {
            let other = JobSystem::builder().workers(0).build().unwrap();
            let hooks = CallsBack::new("job_ready", move |_| {
                other.schedule(|| {});
            });
            let js = calls_back_system(0, &hooks);
            hooks.arm();
            js.schedule(|| {});
        }
        _ => panic!("no scenario {name:?}"),
    }
}

const CALLS_BACK: &str = "JOBSYS_CALLS_BACK_SCENARIO";

/// Runs one `calls_back_scenario` (in a child process: the refused call
/// panics inside a hook, which aborts).
#[test]
fn calls_back_child() {
    let Ok(name) = std::env::var(CALLS_BACK) else {
        return;
    };
    calls_back_scenario(&name);
    // Not reached when the call is refused.
    eprintln!("jobsys-test: no panic");
    std::process::exit(0);
}

/// Run `scenario` in a child process; fail if it has not ended within 60 s
/// (the deadlock these tests are about), else return its stderr after
/// checking that it aborted.
fn run_calls_back(scenario: &str) -> String {
    use std::io::Read;
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "calls_back_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CALLS_BACK, scenario)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read stderr on a thread, so a chatty child cannot block on a full pipe.
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = reader.join().unwrap();
            panic!(
                "{scenario}: the child hung for 60 s (a deadlock, or a hook that was never \
                 called): {stderr}"
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = reader.join().unwrap();
    assert!(!status.success(), "{scenario}: {stderr}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            status.signal(),
            Some(libc_sigabrt()),
            "{scenario}: {stderr}"
        );
    }
    assert!(
        stderr.contains("a ProfilerHooks method panicked"),
        "{scenario}: {stderr}"
    );
    stderr
}

/// The refusal's message, for `call` made from the hook method `hook`.
fn refused(call: &str, hook: &str) -> String {
    format!(
        "jobsys: {call} called from a profiler hook (ProfilerHooks::{hook}); \
         hooks must not call back into the job system"
    )
}

#[test]
fn set_active_workers_from_the_active_workers_hook_panics_naming_it() {
    let err = run_calls_back("set_active_workers from active_workers");
    let want = refused("JobSystem::set_active_workers", "active_workers");
    assert!(err.contains(&want), "{err}");
}

#[test]
fn access_calls_from_the_access_hook_panic_naming_them() {
    for (scenario, call) in [
        ("schedule_access from access", "JobBuilder::access"),
        ("read_now from access", "Resource::read_now"),
        ("clear_poison from access", "Resource::clear_poison"),
    ] {
        let err = run_calls_back(scenario);
        assert!(err.contains(&refused(call, "access")), "{scenario}: {err}");
    }
}

#[test]
fn write_now_from_the_ready_of_an_access_job_panics_naming_it() {
    let err = run_calls_back("write_now from job_ready");
    assert!(
        err.contains(&refused("Resource::write_now", "job_ready")),
        "{err}"
    );
}

#[test]
fn calls_from_a_wake_under_the_schedulers_locks_panic_naming_them() {
    for (scenario, call) in [
        ("hot_zone from wake", "JobSystem::hot_zone"),
        ("drop from wake", "JobSystem::drop (of the last clone)"),
        ("schedule_pinned from wake", "JobBuilder::schedule"),
    ] {
        let err = run_calls_back(scenario);
        assert!(err.contains(&refused(call, "wake")), "{scenario}: {err}");
    }
}

#[test]
fn scheduling_and_waiting_from_a_job_begin_or_end_panic_naming_them() {
    for (scenario, call, hook) in [
        (
            "complete from job_begin",
            "JobSystem::schedule",
            "job_begin",
        ),
        ("schedule from job_end", "JobSystem::schedule", "job_end"),
    ] {
        let err = run_calls_back(scenario);
        assert!(err.contains(&refused(call, hook)), "{scenario}: {err}");
    }
}

#[test]
fn a_hook_calling_another_system_panics_too() {
    let err = run_calls_back("schedule of another system from job_ready");
    assert!(
        err.contains(&refused("JobSystem::schedule", "job_ready")),
        "{err}"
    );
}

/// What a hook may call: the read-only queries return (from every hook
/// method, on every thread), and the system runs on.
#[test]
fn read_only_queries_work_from_every_hook() {
    struct Queries {
        js: Mutex<Option<JobSystem>>,
        h: Mutex<Option<jobsys::JobHandle>>,
        calls: std::sync::atomic::AtomicUsize,
    }
    impl Queries {
        fn query(&self) {
            // Under the lock, not a clone: the test's drop of the hooks'
            // clone (under it too) must leave the system's last one to the
            // test, never to a hook.
            let js = self.js.lock().unwrap();
            if let Some(js) = js.as_ref() {
                let _ = (js.stats(), js.take_stats(), js.worker_stats());
                let _ = (js.active_workers(), js.workers(), js.idle_policy());
                let _ = js.is_tracing();
                if let Some(h) = *self.h.lock().unwrap() {
                    let _ = js.is_complete(h);
                }
                self.calls
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
    impl ProfilerHooks for Queries {
        fn thread_start(&self, _: u32, _: &str) {
            self.query()
        }
        fn job_ready(&self, _: u32, _: JobId) {
            self.query()
        }
        fn job_begin(&self, _: u32, _: JobId, _: &'static str) {
            self.query()
        }
        fn job_end(&self, _: u32, _: JobId, _: &'static str) {
            self.query()
        }
        fn wait_begin(&self, _: u32, _: JobId) {
            self.query()
        }
        fn wait_end(&self, _: u32, _: JobId) {
            self.query()
        }
        fn sleep_begin(&self, _: u32) {
            self.query()
        }
        fn sleep_end(&self, _: u32) {
            self.query()
        }
        fn wake(&self, _: u32, _: u32) {
            self.query()
        }
        fn frame_begin(&self, _: u32, _: u64) {
            self.query()
        }
        fn frame_end(&self, _: u32, _: u64) {
            self.query()
        }
        fn active_workers(&self, _: u32, _: u32) {
            self.query()
        }
        fn access(&self, _: u32, _: JobId, _: u64, _: &'static str, _: AccessMode) {
            self.query()
        }
    }
    watchdog(60, || {
        let hooks = Arc::new(Queries {
            js: Mutex::new(None),
            h: Mutex::new(None),
            calls: Default::default(),
        });
        let js = JobSystem::builder()
            .workers(2)
            .profiler(hooks.clone())
            .build()
            .unwrap();
        *hooks.js.lock().unwrap() = Some(js.clone());
        let r = jobsys::Resource::new(0u32);
        for _ in 0..20 {
            let _f = js.frame();
            let a = js.job().access(r.write()).schedule(|v| *v += 1);
            *hooks.h.lock().unwrap() = Some(a);
            let b = js
                .job()
                .after(&[a])
                .parallel_for(0..64, Batch::Fixed(1), |_| {});
            js.complete(b);
            js.set_active_workers(1).unwrap();
            js.set_active_workers(2).unwrap();
        }
        assert_eq!(*r.read_now(&js), 20);
        // The hooks' clone goes before the system's last one.
        hooks.js.lock().unwrap().take();
        drop(js);
        let n = hooks.calls.load(std::sync::atomic::Ordering::Relaxed);
        if jobsys::trace::COMPILED {
            assert!(n > 100, "{n}");
        }
    });
}

#[cfg(unix)]
fn libc_sigabrt() -> i32 {
    6 // SIGABRT on Linux and macOS
}

#[cfg(feature = "tracy")]
#[test]
fn tracy_hooks_open_a_zone_for_every_begin_and_mark_frames() {
    watchdog(60, || {
        let hooks = Hooks::new();
        let js = system(2, &hooks);
        for _ in 0..10 {
            let _frame = js.frame();
            let a = js.job().name("physics").schedule(|| {});
            let b =
                js.job()
                    .desc("particles")
                    .after(&[a])
                    .parallel_for(0..1000, Batch::Auto, |_| {});
            js.complete(js.schedule_after(&[b], || {}));
        }
        drop(js);
        let calls = hooks.rec.calls();
        let begins = calls
            .iter()
            .filter(|c| matches!(c.2, Ev::Begin(..) | Ev::WaitBegin(_) | Ev::SleepBegin))
            .count() as u64;
        let counts = hooks.tracy.counts();
        // Every job that became runnable has started: none left queued.
        assert_eq!(hooks.tracy.queued(), 0);
        assert!(begins > 30, "{begins}");
        assert_eq!(counts.zones, begins);
        assert_eq!(counts.frame_marks, 10);
        // The two workers and this thread (when it has a name).
        let named = calls
            .iter()
            .filter(|c| matches!(&c.2, Ev::Start(n) if !n.is_empty()))
            .count() as u64;
        assert!(named >= 2);
        assert_eq!(counts.threads_named, named);
    });
}
