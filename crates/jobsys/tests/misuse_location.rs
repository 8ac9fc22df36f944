//! Misuse panics report the caller's line: the public function and every
//! internal one between it and the `panic!`/`assert!` are
//! `#[track_caller]`, so the panic's location is the user's call, not a
//! line inside jobsys.
//!
//! Each case runs the misuse under a panic hook that records the panic's
//! `Location` and checks it is this file at the line of the call (`line!()`
//! on the same line). The hook is process-wide, so the cases run one at a
//! time in one test.

use jobsys::{Batch, JobSystem, Pin};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

/// Run `f`, which must panic; return the panic's (file, line) and message.
fn panic_location(f: impl FnOnce()) -> (String, u32, String) {
    let seen: Arc<Mutex<Option<(String, u32, String)>>> = Arc::default();
    let s = seen.clone();
    let old = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let loc = info.location().expect("a panic location");
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        *s.lock().unwrap() = Some((loc.file().to_string(), loc.line(), msg));
    }));
    let r = catch_unwind(AssertUnwindSafe(f));
    std::panic::set_hook(old);
    assert!(r.is_err(), "the misuse did not panic");
    let got = seen.lock().unwrap().take();
    got.expect("the hook saw the panic")
}

#[track_caller]
fn assert_here(got: (String, u32, String), line: u32, what: &str) {
    let (file, l, msg) = got;
    assert!(
        file.ends_with("misuse_location.rs") && l == line,
        "{what}: panic reported at {file}:{l}, not at the call (line {line}): {msg}"
    );
}

#[test]
#[rustfmt::skip] // each `line!()` must stay on its call's line
fn misuse_panics_point_at_the_callers_line() {
    let js = JobSystem::builder().workers(1).build().unwrap();
    let other = JobSystem::builder().workers(0).build().unwrap();
    let foreign = other.schedule(|| {});
    other.complete(foreign);

    // Batch::Fixed(0), through each parallel_for form.
    let mut l = 0;
    let got = panic_location(|| {
        l = line!(); js.parallel_for(0..4, Batch::Fixed(0), |_| {});
    });
    assert_here(got, l, "parallel_for");
    let got = panic_location(|| {
        l = line!(); js.job().parallel_for_chunked(0..4, Batch::Fixed(0), |_| {});
    });
    assert_here(got, l, "parallel_for_chunked");
    let got = panic_location(|| {
        l = line!(); js.job().desc("named").after(&[]).parallel_for(0..4, Batch::Fixed(0), |_| {});
    });
    assert_here(got, l, "parallel_for_with");
    let got = panic_location(|| {
        js.scope(|s| {
            l = line!(); s.parallel_for(0..4, Batch::Fixed(0), |_| {});
        })
    });
    assert_here(got, l, "Scope::parallel_for");

    // A pin naming no worker's thread index.
    let got = panic_location(|| {
        l = line!(); js.job().pin(Pin::Worker(0)).schedule(|| {});
    });
    assert_here(got, l, "schedule_pinned(Pin::Worker(0))");
    let got = panic_location(|| {
        l = line!(); js.job().pin(Pin::Worker(2)).after(&[]).schedule(|| {});
    });
    assert_here(got, l, "schedule_pinned_after(Pin::Worker(2))");

    // A foreign dependency handle (a cold path's check).
    let got = panic_location(|| {
        l = line!(); js.job().pin(Pin::Main).after(&[foreign]).schedule(|| {});
    });
    assert_here(got, l, "schedule_pinned_after with a foreign handle");
    let got = panic_location(|| {
        l = line!(); js.job().after(&[foreign]).parallel_for(0..4, Batch::Auto, |_| {});
    });
    assert_here(got, l, "parallel_for_after with a foreign handle");

    // Through declared access and a scope's builder.
    let r = jobsys::Resource::new(vec![0u32; 4]);
    let got = panic_location(|| {
        l = line!(); js.job().pin(Pin::Worker(7)).access(r.write()).schedule(|_| {});
    });
    assert_here(got, l, "job().pin(bad).access(..).schedule");
    let got = panic_location(|| {
        l = line!(); js.job().access(r.write_each()).parallel_for(0..4, Batch::Fixed(0), |_, _| {});
    });
    assert_here(got, l, "job().access(..).parallel_for with Batch::Fixed(0)");
    let got = panic_location(|| {
        l = line!(); js.job().after(&[foreign]).access(r.read()).schedule(|_| {});
    });
    assert_here(got, l, "job().after(foreign).access(..).schedule");
    let got = panic_location(|| {
        js.scope(|s| {
            l = line!(); s.job().name("x").pin(Pin::Main).parallel_for_chunked(0..4, Batch::Fixed(0), |_| {});
        })
    });
    assert_here(got, l, "Scope::job().pin(..).parallel_for_chunked");
    js.complete(js.job().access(r.write()).schedule(|v| v[0] = 1));
    assert_eq!(r.read_now(&js)[0], 1, "the resource is usable after the refused calls");

    // register_thread on a worker (the panic is inside a job: the job's
    // line is where it points).
    let js2 = js.clone();
    let line = Arc::new(Mutex::new(0));
    let (line2, seen) = (line.clone(), Arc::new(Mutex::new(None)));
    let seen2 = seen.clone();
    let h = js.job().pin(Pin::Worker(1)).schedule(move || {
        *seen2.lock().unwrap() = Some(panic_location(|| {
            *line2.lock().unwrap() = line!(); js2.register_thread();
        }));
    });
    js.complete(h);
    let got = seen.lock().unwrap().take().expect("the job ran");
    assert_here(got, *line.lock().unwrap(), "register_thread on a worker");
    // Still usable after all that.
    js.complete(js.schedule(|| {}));
}
