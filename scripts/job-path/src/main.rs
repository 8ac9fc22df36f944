//! One job's path through the core (`scripts/job-path.sh` steps through it
//! in gdb between `jobpath_begin` and `jobpath_end`): schedule a job, a
//! second one after it, and complete the second, which runs both on this
//! thread (0 workers). Three rounds first, so that the storage is warm.
use jobsys::JobSystem;

#[inline(never)]
#[no_mangle]
pub extern "C" fn jobpath_begin() {
    std::hint::black_box(());
}
#[inline(never)]
#[no_mangle]
pub extern "C" fn jobpath_end() {
    std::hint::black_box(());
}

fn main() {
    let js = JobSystem::builder().workers(0).build().expect("a system");
    for _ in 0..3 {
        let a = js.schedule(|| {});
        let b = js.schedule_after(&[a], || {});
        js.complete(b);
    }
    jobpath_begin();
    let a = js.schedule(|| {});
    let b = js.schedule_after(&[a], || {});
    js.complete(b);
    jobpath_end();
}
