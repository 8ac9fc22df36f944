//! One thread numbering (`docs/engine.md`, "Thread index"): the index a
//! job sees (`JobSystem::thread_index`), the pin that sent it there, the
//! `thread` its profiler hooks report, its trace track and the thread's
//! name all say the same number. And a pin that names no worker panics at
//! the caller, saying so.

// Without the tracer only the second test runs; the first's helpers stay.
#![cfg_attr(not(feature = "trace"), allow(dead_code, unused_imports))]

mod common;

use common::{expect_panic, watchdog};
#[cfg(feature = "trace")]
use jobsys::trace::Event;
use jobsys::trace::JobId;
use jobsys::{JobHandle, JobSystem, Pin, ProfilerHooks};
use std::sync::{Arc, Mutex};

const SECS: u64 = 60;

/// (thread, begin?, job) of every job begin and end; (thread, name) of
/// every thread start.
#[derive(Default)]
struct Rec {
    jobs: Mutex<Vec<(u32, bool, JobId)>>,
    starts: Mutex<Vec<(u32, String)>>,
}

impl ProfilerHooks for Rec {
    fn thread_start(&self, thread: u32, name: &str) {
        self.starts.lock().unwrap().push((thread, name.to_string()));
    }
    fn job_begin(&self, thread: u32, job: JobId, _: &'static str) {
        self.jobs.lock().unwrap().push((thread, true, job));
    }
    fn job_end(&self, thread: u32, job: JobId, _: &'static str) {
        self.jobs.lock().unwrap().push((thread, false, job));
    }
}

type Seen = Arc<Mutex<Option<(Option<usize>, Option<String>)>>>;

// The trace half needs the tracer (`trace_start`, `Event`).
#[cfg(feature = "trace")]
#[test]
fn a_job_pinned_to_each_worker_sees_the_pins_index_in_the_job_the_hooks_and_the_trace() {
    watchdog(SECS, || {
        let workers = 3;
        let hooks = Arc::new(Rec::default());
        let js = JobSystem::builder()
            .workers(workers)
            .profiler(hooks.clone())
            .build()
            .unwrap();
        assert_eq!(js.trace_start(), jobsys::trace::COMPILED);
        // (expected index, pin, handle, what the job saw).
        let mut jobs: Vec<(usize, JobHandle, Seen)> = Vec::new();
        let pins = (1..=workers)
            .map(|w| (w, Pin::Worker(w)))
            .chain([(0, Pin::Main)]);
        for (index, pin) in pins {
            let seen: Seen = Arc::default();
            let (s, js2) = (seen.clone(), js.clone());
            let h = js.job().pin(pin).schedule(move || {
                let name = std::thread::current().name().map(str::to_owned);
                *s.lock().unwrap() = Some((js2.thread_index(), name));
            });
            jobs.push((index, h, seen));
        }
        for (_, h, _) in &jobs {
            js.complete(*h);
        }
        let trace = js.trace_stop();
        let main_name = std::thread::current().name().map(str::to_owned);
        for (index, h, seen) in &jobs {
            let index = *index;
            let (in_job, name) = seen.lock().unwrap().clone().expect("the job ran");
            assert_eq!(in_job, Some(index), "thread_index inside the job");
            if index > 0 {
                assert_eq!(name, Some(format!("jobsys-worker-{index}")));
            } else {
                assert_eq!(name, main_name);
            }
            if !jobsys::trace::COMPILED {
                continue;
            }
            let id = JobId::of_handle(*h);
            let calls: Vec<_> = hooks
                .jobs
                .lock()
                .unwrap()
                .iter()
                .filter(|c| c.2 == id)
                .copied()
                .collect();
            assert_eq!(
                calls,
                [(index as u32, true, id), (index as u32, false, id)],
                "hooks: begin and end on thread {index}"
            );
            let tracks: Vec<_> = trace
                .threads
                .iter()
                .filter(|t| {
                    t.events
                        .iter()
                        .any(|r| matches!(r.event, Event::JobBegin { job, .. } if job == id))
                })
                .collect();
            assert_eq!(tracks.len(), 1);
            assert_eq!(tracks[0].index, index as u32, "trace track");
            assert_eq!(tracks[0].worker, index > 0);
            if index > 0 {
                assert_eq!(tracks[0].name, format!("worker {index}"));
            } else {
                assert!(tracks[0].name.ends_with("(thread 0)"), "{}", tracks[0].name);
            }
        }
        if jobsys::trace::COMPILED {
            // Every worker started as its index, under the name with it.
            let mut starts = hooks.starts.lock().unwrap().clone();
            starts.sort();
            let workers_started: Vec<_> = starts.iter().filter(|s| s.0 >= 1).cloned().collect();
            let expected: Vec<_> = (1..=workers as u32)
                .map(|w| (w, format!("jobsys-worker-{w}")))
                .collect();
            assert_eq!(workers_started, expected);
            assert_eq!(starts[0].0, 0, "the building thread is 0");
        }
    });
}

/// `Pin::Worker(i)` takes a worker's thread index: 0 (the building
/// thread's) and `workers + 1` are no worker's, and panic where the job is
/// scheduled, naming the valid range.
#[test]
fn a_pin_naming_no_workers_index_panics_saying_which_are() {
    watchdog(SECS, || {
        let js = JobSystem::builder().workers(2).build().unwrap();
        for bad in [0, 3] {
            let msg = expect_panic(|| js.job().pin(Pin::Worker(bad)).schedule(|| {}));
            assert!(
                msg.contains(&format!("Pin::Worker({bad})"))
                    && msg.contains("thread indices 1..=2"),
                "{msg}"
            );
        }
        // The system is still usable.
        js.complete(js.job().pin(Pin::Worker(2)).schedule(|| {}));
    });
}
