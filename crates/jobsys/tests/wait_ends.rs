//! Every wait ends, and no closure outlives what it borrows.
//!
//! Regression tests for five defects in how waits end (each test names the
//! behaviour it checks):
//! 1. `scope` must not return or unwind while a job that borrows its stack
//!    is alive: not when one of its jobs depends on the job the scope runs
//!    inside of (the scope must cancel it), not when a scope job closes a
//!    ring of waits through the scope's own thread.
//! 2. A thread-local whose destructor uses the system after jobsys's own
//!    thread-locals are gone: no abort, no shared context, no spurious
//!    `WaitOnSelf`.
//! 3. A wait on a job's own handle from a place jobsys does not count as
//!    "inside the job" (the drop of a skipped job's closure, the drop of a
//!    parallel_for's closure): `WaitOnSelf`, never a hang.
//! 4. A panic in the drop of a parallel_for's closure fails the loop like a
//!    panic in the closure.
//! 5. Every closure is dropped exactly once on every path.
//!
//! A hang here means a wait that never ends, so each scenario runs under
//! `watchdog`, which names the scenario and aborts the process (a hung
//! scenario leaves threads parked or spinning inside a `JobSystem` whose
//! drop would hang as well, so failing just the test is not enough).
//! Ordering is done with channels, gates and `OnceLock`s, never with sleeps.
//! `WAIT_ENDS_WORKERS=2` (a comma-separated list) runs only those worker
//! counts.
//!
//! On the code before the fix several scenarios run a closure after the
//! stack frame it borrows is gone; `scripts/asan.sh` runs this file under
//! AddressSanitizer to see that as a report rather than as silent damage.

mod common;

use common::{panic_message, DropCount, Gate};
use jobsys::{Batch, JobError, JobHandle, JobSystem};
use std::cell::RefCell;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Generous bound for one scenario; each takes well under a second when
/// the waits end.
const WATCHDOG_SECS: u64 = 30;

// ---- helpers ---------------------------------------------------------------

/// Run `body`; if it has not returned (or unwound) after `secs` seconds,
/// print which scenario hung and abort the process.
///
/// `WAIT_ENDS_WATCHDOG_SECS` overrides `secs` (scripts/tsan.sh sets it: an
/// instrumented debug build runs the 1.6 M jobs of the teardown scenario
/// far slower than 30 s allows, without any wait being stuck).
fn watchdog<R>(what: &str, secs: u64, body: impl FnOnce() -> R) -> R {
    let secs = match std::env::var("WAIT_ENDS_WATCHDOG_SECS") {
        Ok(v) => v
            .trim()
            .parse()
            .expect("WAIT_ENDS_WATCHDOG_SECS: a number of seconds"),
        Err(_) => secs,
    };
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let what = what.to_string();
    std::thread::Builder::new()
        .name("wait_ends-watchdog".into())
        .spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) =
                done_rx.recv_timeout(Duration::from_secs(secs))
            {
                // Straight to stderr: the test harness captures `eprintln!`,
                // and the abort would lose what it captured.
                let _ = writeln!(
                    std::io::stderr(),
                    "watchdog: {what} did not finish within {secs} s (a wait that never ends); aborting"
                );
                std::process::abort();
            }
        })
        .expect("spawn the watchdog");
    // `done_tx` is dropped when `body` returns or unwinds: either ends the
    // watchdog's wait with `Disconnected`.
    let r = body();
    drop(done_tx);
    r
}

/// Print `msg` on stderr at once, past the harness's capture: for a
/// failure seen inside a job right before the broken code goes on to write
/// through a dangling borrow (which may crash the process before the test
/// can report).
fn report_now(msg: &str) {
    let _ = writeln!(std::io::stderr(), "wait_ends: {msg}");
}

/// The worker counts a scenario runs with: `default`, or those listed in
/// `WAIT_ENDS_WORKERS` (e.g. `WAIT_ENDS_WORKERS=2`, `=0,1`) to look at one
/// variant without the ones before it.
fn worker_counts(default: &[usize]) -> Vec<usize> {
    match std::env::var("WAIT_ENDS_WORKERS") {
        Ok(list) => list
            .split(',')
            .map(|w| {
                w.trim()
                    .parse()
                    .expect("WAIT_ENDS_WORKERS: worker counts, comma-separated")
            })
            .collect(),
        Err(_) => default.to_vec(),
    }
}

fn system(workers: usize) -> JobSystem {
    JobSystem::builder().workers(workers).build().unwrap()
}

/// What a wait gave, comparable and printable (`JobError` is neither).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    Ok,
    WaitOnSelf,
    Panicked {
        message: String,
        via_dependency: bool,
    },
    Other(String),
}

fn outcome(r: Result<(), JobError>) -> Outcome {
    match r {
        Ok(()) => Outcome::Ok,
        Err(JobError::WaitOnSelf) => Outcome::WaitOnSelf,
        Err(JobError::Panicked(p)) => Outcome::Panicked {
            message: p.message().to_string(),
            via_dependency: p.via_dependency(),
        },
        Err(e) => Outcome::Other(format!("{e:?}")),
    }
}

/// A job that fails once `go` has a message: what the dependents of the
/// skip-path scenarios depend on. Gated so that the dependents' handles are
/// published before any of them can be skipped.
fn failing_dependency(js: &JobSystem, go: mpsc::Receiver<()>, msg: &'static str) -> JobHandle {
    js.schedule(move || {
        let _ = go.recv();
        panic!("{msg}");
    })
}

/// Waits, when dropped, on the handle in `me` (the job that owns this guard)
/// and records what the wait gave.
struct WaitOnOwnHandle {
    js: JobSystem,
    me: Arc<OnceLock<JobHandle>>,
    got: Arc<Mutex<Vec<Outcome>>>,
}
impl Drop for WaitOnOwnHandle {
    fn drop(&mut self) {
        let r = match self.me.get() {
            Some(&me) => outcome(self.js.try_complete(me)),
            None => Outcome::Other("the own handle was not published yet".into()),
        };
        self.got.lock().unwrap().push(r);
    }
}

/// Panics when dropped.
struct PanicOnDrop(&'static str);
impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        panic!("{}", self.0);
    }
}

/// This thread's kernel thread id.
fn own_tid() -> Option<u32> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// Is thread `tid` of this process blocked (state `S`: it sleeps in the
/// kernel, for a job system thread that is the futex of a parked wait)?
/// `None` where /proc cannot tell.
fn is_blocked(tid: u32) -> Option<bool> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    let state = stat.rsplit_once(") ")?.1.chars().next()?;
    Some(state == 'S')
}

/// Wait until thread `tid` blocks (see `is_blocked`) or `done` is set;
/// gives up after 10 s, or at once where /proc cannot tell. Only orders the
/// scenario (to make the interleaving that used to go wrong the one that
/// happens); every assertion holds for every interleaving.
fn wait_until_blocked(tid: Option<u32>, done: &AtomicBool) {
    let Some(tid) = tid else { return };
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if done.load(SeqCst) {
            return;
        }
        match is_blocked(tid) {
            Some(true) | None => return,
            Some(false) => std::thread::yield_now(),
        }
    }
    eprintln!("wait_until_blocked: thread {tid} did not block within 10 s; going on");
}

// ---- 1(a): a scope job that depends on the job the scope runs inside of ----

/// Writes through a borrow of the scope owner's stack when dropped.
struct Touch<'a> {
    v: &'a mut u64,
    dropped: Arc<AtomicBool>,
    drops: Arc<AtomicUsize>,
}
impl Drop for Touch<'_> {
    fn drop(&mut self) {
        *self.v += 1;
        self.dropped.store(true, SeqCst);
        self.drops.fetch_add(1, SeqCst);
    }
}

/// What job A saw of its scope in scenario 1(a).
#[derive(Debug, Default)]
struct CancelReport {
    /// The message the scope panicked with (None: it returned).
    scope_panic: Option<String>,
    /// The scope job's `Touch` was dropped when the panic reached A.
    touch_dropped_at_catch: bool,
    /// A's stack variable at that point (7 before; 8 once Touch dropped).
    v_at_catch: u64,
}

/// Scenario 1(a): job A opens a scope and schedules in it a job S after A
/// itself (`s.schedule_after(&[a], ..)`) that owns a `Touch` borrowing A's
/// stack. S can only start after A, and A cannot finish before its scope
/// returns: the scope must panic ("waited on itself") *and* cancel S first,
/// so that nothing borrowing A's frame survives the unwind.
fn scope_job_after_its_own_scope_owner(workers: usize) {
    let js = system(workers);
    let a_cell: Arc<OnceLock<JobHandle>> = Arc::new(OnceLock::new());
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (report_tx, report_rx) = mpsc::channel::<CancelReport>();
    let s_ran = Arc::new(AtomicBool::new(false));
    let touch_drops = Arc::new(AtomicUsize::new(0));
    let (js2, a_cell2, s_ran2, touch_drops2) = (
        js.clone(),
        a_cell.clone(),
        s_ran.clone(),
        touch_drops.clone(),
    );
    let a = js.schedule(move || {
        go_rx.recv().unwrap();
        let a = *a_cell2.get().unwrap();
        let mut v = 7u64;
        let dropped = Arc::new(AtomicBool::new(false));
        let r = catch_unwind(AssertUnwindSafe(|| {
            js2.scope(|s| {
                let t = Touch {
                    v: &mut v,
                    dropped: dropped.clone(),
                    drops: touch_drops2.clone(),
                };
                let s_ran = s_ran2.clone();
                s.schedule_after(&[a], move || {
                    let _t = &t;
                    s_ran.store(true, SeqCst);
                });
            })
        }));
        let report = CancelReport {
            scope_panic: r.err().map(|p| panic_message(&*p)),
            touch_dropped_at_catch: dropped.load(SeqCst),
            v_at_catch: v,
        };
        if !report.touch_dropped_at_catch {
            report_now(&format!(
                "1(a), workers {workers}: the scope ended while its job S, which borrows this \
                 frame, is alive (S will run or be dropped after the frame is gone); {report:?}"
            ));
        }
        report_tx.send(report).unwrap();
    });
    a_cell.set(a).unwrap();
    go_tx.send(()).unwrap();
    // A caught its scope's panic, so A itself succeeded.
    let a_result = outcome(js.try_complete(a));
    let report = report_rx.recv().expect("job A sent its report");
    // Runs S if it is still queued (the broken code): that is the write
    // through a dangling borrow, which A reported on stderr first.
    drop(js);
    let msg = report.scope_panic.clone().unwrap_or_default();
    assert!(
        msg.contains("waited on itself"),
        "workers {workers}: the scope must panic with a wait-on-self message; report {report:?}"
    );
    assert!(
        report.touch_dropped_at_catch && report.v_at_catch == 8,
        "workers {workers}: the scope unwound while its job (owning a borrow of A's stack) was alive: \
         it must cancel the job first; report {report:?}"
    );
    assert_eq!(
        a_result,
        Outcome::Ok,
        "workers {workers}: A caught the panic"
    );
    assert!(
        !s_ran.load(SeqCst),
        "workers {workers}: the cancelled scope job ran"
    );
    assert_eq!(
        touch_drops.load(SeqCst),
        1,
        "workers {workers}: the cancelled job's closure is dropped exactly once"
    );
}

/// 1(a) with 0, 1 and 2 workers.
#[test]
fn a_scope_cancels_its_job_that_waits_on_the_scope_owner() {
    for workers in worker_counts(&[0, 1, 2]) {
        watchdog(
            &format!("a_scope_cancels_its_job_that_waits_on_the_scope_owner (workers {workers})"),
            WATCHDOG_SECS,
            || scope_job_after_its_own_scope_owner(workers),
        );
    }
}

// ---- 1(b): a scope job that waits on the scope owner (a ring) --------------

/// Sets the flag it borrows when dropped (at the end of the scope job, also
/// when it unwinds).
struct SetOnDrop<'a>(&'a mut bool);
impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        *self.0 = true;
    }
}

/// Sets a shared flag when dropped.
struct SetFlagOnDrop(Arc<AtomicBool>);
impl Drop for SetFlagOnDrop {
    fn drop(&mut self) {
        self.0.store(true, SeqCst);
    }
}

/// What job A saw of its scope in scenario 1(b).
#[derive(Debug, Default)]
struct RingReport {
    /// The message the scope panicked with (None: it returned).
    scope_panic: Option<String>,
    /// The scope job ended (its guard, on A's stack, was dropped) before
    /// the scope returned or unwound.
    s_ended: bool,
    /// What the scope job's wait on A gave (`WAIT_*`), written into A's
    /// stack by the scope job.
    s_wait: u8,
    /// The buffer on A's stack the scope job fills at its end (try variant).
    buf_filled: bool,
}

const FILL: u64 = 0x5EED_CAFE_F00D_0001;

// What the scope job of 1(b) writes into A's stack: plain bytes, so that on
// the broken code (where it writes after A's frame is gone) the write does
// not also run a destructor on whatever lives there now.
const WAIT_NONE: u8 = 0;
const WAIT_OK: u8 = 1;
const WAIT_ON_SELF: u8 = 2;
const WAIT_OTHER: u8 = 3;

fn wait_code(o: &Outcome) -> u8 {
    match o {
        Outcome::Ok => WAIT_OK,
        Outcome::WaitOnSelf => WAIT_ON_SELF,
        _ => WAIT_OTHER,
    }
}

/// Scenario 1(b): job A opens a scope whose job S (borrowing A's stack)
/// waits on A, with `try_complete` or (`via_complete`) with `complete`.
/// With workers, S is run by another thread, and A lets its scope wait only
/// once that thread is parked waiting on A: A's wait on S then closes the
/// ring A -> S -> A. The wait that must fail is S's (it returns
/// `WaitOnSelf`, or `complete` panics); the scope must only return, or
/// re-raise S's panic, after S ended.
fn scope_job_waiting_on_its_scope_owner(workers: usize, via_complete: bool) {
    let js = system(workers);
    let a_cell: Arc<OnceLock<JobHandle>> = Arc::new(OnceLock::new());
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let (report_tx, report_rx) = mpsc::channel::<RingReport>();
    // The scope job's handle, for the main thread to run it (workers > 0).
    let (s_tx, s_rx) = mpsc::channel::<JobHandle>();
    let (js2, a_cell2) = (js.clone(), a_cell.clone());
    let a = js.schedule(move || {
        go_rx.recv().unwrap();
        let a = *a_cell2.get().unwrap();
        let mut s_ended = false;
        let mut s_wait = WAIT_NONE;
        let mut buf = [0u64; 8];
        let js3 = js2.clone();
        let r = catch_unwind(AssertUnwindSafe(|| {
            js2.scope(|s| {
                let (s_ended, s_wait, buf) = (&mut s_ended, &mut s_wait, &mut buf);
                // S tells A which thread runs it (the kernel tid).
                let (tid_tx, tid_rx) = mpsc::channel::<Option<u32>>();
                // Set when S ends: nothing to wait for then.
                let s_done = Arc::new(AtomicBool::new(false));
                let s_done2 = s_done.clone();
                let h = s.schedule(move || {
                    let _done = SetFlagOnDrop(s_done2);
                    let _end = SetOnDrop(s_ended);
                    let _ = tid_tx.send(own_tid());
                    if via_complete {
                        js3.complete(a);
                        *s_wait = WAIT_OK;
                    } else {
                        *s_wait = wait_code(&outcome(js3.try_complete(a)));
                    }
                    buf.fill(FILL);
                });
                if workers > 0 {
                    // Another thread runs S (the main thread takes it if no
                    // worker did); let it park on A before the scope waits.
                    s_tx.send(h).unwrap();
                    let tid = tid_rx.recv().unwrap();
                    wait_until_blocked(tid, &s_done);
                }
            })
        }));
        let report = RingReport {
            scope_panic: r.err().map(|p| panic_message(&*p)),
            s_ended,
            s_wait,
            buf_filled: buf.iter().all(|&x| x == FILL),
        };
        if !report.s_ended {
            report_now(&format!(
                "1(b), workers {workers}, via_complete {via_complete}: the scope ended while its \
                 job S, which borrows this frame, still runs (S writes into the frame after it \
                 is gone); {report:?}"
            ));
        }
        report_tx.send(report).unwrap();
    });
    a_cell.set(a).unwrap();
    go_tx.send(()).unwrap();
    if workers > 0 {
        // A runs on a worker (this thread does not help before this
        // point); this thread then runs S unless a worker already took it.
        let h = s_rx.recv().expect("A sent its scope job's handle");
        let _ = js.try_complete(h);
    }
    let a_result = outcome(js.try_complete(a));
    let report = report_rx.recv().expect("job A sent its report");
    let what = format!(
        "workers {workers}, scope job uses {}",
        if via_complete {
            "complete"
        } else {
            "try_complete"
        }
    );
    assert!(
        report.s_ended,
        "{what}: the scope returned or unwound while its job (borrowing A's stack) still ran; report {report:?}"
    );
    if via_complete {
        let msg = report.scope_panic.clone().unwrap_or_default();
        assert!(
            msg.contains("waited on itself"),
            "{what}: the scope must re-raise the scope job's wait-on-self panic; report {report:?}"
        );
        assert_eq!(report.s_wait, WAIT_NONE, "{what}: complete(a) returned");
    } else {
        assert_eq!(
            report.scope_panic, None,
            "{what}: the scope must return normally; report {report:?}"
        );
        assert_eq!(
            report.s_wait, WAIT_ON_SELF,
            "{what}: the scope job's wait on A (2: WaitOnSelf); report {report:?}"
        );
        assert!(report.buf_filled, "{what}: A's stack buffer; {report:?}");
    }
    assert_eq!(a_result, Outcome::Ok, "{what}: A itself succeeds");
}

/// 1(b), the scope job calling `try_complete(a)`: 0, 1 and 2 workers.
#[test]
fn a_scope_job_waiting_on_the_scope_owner_gets_wait_on_self() {
    for workers in worker_counts(&[0, 1, 2]) {
        watchdog(
            &format!(
                "a_scope_job_waiting_on_the_scope_owner_gets_wait_on_self (workers {workers})"
            ),
            WATCHDOG_SECS,
            || scope_job_waiting_on_its_scope_owner(workers, false),
        );
    }
}

/// 1(b), the scope job calling `complete(a)`: the scope re-raises its panic
/// after the job ended. 0, 1 and 2 workers.
#[test]
fn a_scope_reraises_after_its_job_waiting_on_the_scope_owner_ended() {
    for workers in worker_counts(&[0, 1, 2]) {
        watchdog(
            &format!(
                "a_scope_reraises_after_its_job_waiting_on_the_scope_owner_ended (workers {workers})"
            ),
            WATCHDOG_SECS,
            || scope_job_waiting_on_its_scope_owner(workers, true),
        );
    }
}

// ---- 2: a thread-local destructor that uses the system ---------------------

/// Jobs per phase (the thread body, then the thread-local's destructor).
const TEARDOWN_JOBS: u64 = 2_000;
const TEARDOWN_THREADS: u64 = 8;
const TEARDOWN_ROUNDS: u64 = 50;

/// Schedule `TEARDOWN_JOBS` jobs, each adding 1 to `counter`, then wait for
/// each; a wait that does not return Ok is recorded in `errors`.
fn count_jobs(js: &JobSystem, counter: &Arc<AtomicU64>, errors: &Mutex<Vec<String>>, at: &str) {
    let hs: Vec<JobHandle> = (0..TEARDOWN_JOBS)
        .map(|_| {
            let c = counter.clone();
            js.schedule(move || {
                c.fetch_add(1, SeqCst);
            })
        })
        .collect();
    for h in hs {
        if let Err(e) = js.try_complete(h) {
            errors.lock().unwrap().push(format!("{at}: {e:?}"));
        }
    }
}

/// Does a phase of jobs when the thread exits.
struct Teardown {
    js: JobSystem,
    counter: Arc<AtomicU64>,
    errors: Arc<Mutex<Vec<String>>>,
    /// Told when the destructor starts.
    started: mpsc::Sender<()>,
}
impl Drop for Teardown {
    fn drop(&mut self) {
        let _ = self.started.send(());
        count_jobs(
            &self.js,
            &self.counter,
            &self.errors,
            "thread-local destructor",
        );
    }
}

thread_local! {
    static TEARDOWN: RefCell<Option<Teardown>> = const { RefCell::new(None) };
}

/// Each round runs `TEARDOWN_THREADS` threads, each of which touches
/// `TEARDOWN` first (so its destructor runs after those of the
/// thread-locals jobsys touches later: jobsys has let go of the thread's
/// context by then), then does a phase of jobs; its destructor does another.
/// The threads of a round overlap in a chain: thread i+1 starts once thread
/// i's destructor started and thread i-1 was joined, so the context jobsys
/// hands thread i+1 is the one thread i let go of while its destructor still
/// schedules and waits.
fn thread_local_teardown(workers: usize) {
    let js = system(workers);
    let counter = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let join = |t: std::thread::JoinHandle<()>| {
        if let Err(p) = t.join() {
            errors
                .lock()
                .unwrap()
                .push(format!("a thread panicked: {}", panic_message(&*p)));
        }
    };
    for round in 0..TEARDOWN_ROUNDS {
        let mut prev: Option<std::thread::JoinHandle<()>> = None;
        for i in 0..TEARDOWN_THREADS {
            let (js, counter, errors) = (js.clone(), counter.clone(), errors.clone());
            let (started_tx, started_rx) = mpsc::channel();
            let t = std::thread::Builder::new()
                .name(format!("teardown-{round}-{i}"))
                .spawn(move || {
                    TEARDOWN.with(|t| {
                        *t.borrow_mut() = Some(Teardown {
                            js: js.clone(),
                            counter: counter.clone(),
                            errors: errors.clone(),
                            started: started_tx,
                        })
                    });
                    count_jobs(&js, &counter, &errors, "thread body");
                })
                .unwrap();
            // Err only if the thread died without running the destructor.
            let _ = started_rx.recv();
            if let Some(p) = prev.replace(t) {
                join(p);
            }
        }
        if let Some(p) = prev {
            join(p);
        }
    }
    drop(js);
    let errors = errors.lock().unwrap();
    assert!(
        errors.is_empty(),
        "workers {workers}: {} waits failed, first: {:?}",
        errors.len(),
        errors.first()
    );
    assert_eq!(
        counter.load(SeqCst),
        TEARDOWN_THREADS * TEARDOWN_ROUNDS * 2 * TEARDOWN_JOBS,
        "workers {workers}: every job ran exactly once"
    );
}

/// 2, with 0 and 2 workers.
#[test]
fn a_thread_local_destructor_can_schedule_and_wait() {
    for workers in worker_counts(&[0, 2]) {
        watchdog(
            &format!("a_thread_local_destructor_can_schedule_and_wait (workers {workers})"),
            WATCHDOG_SECS,
            || thread_local_teardown(workers),
        );
    }
}

// ---- 3: waits on the own handle from a closure's drop ----------------------

/// 3(a): job D runs after a job that fails, so D is skipped and its closure
/// dropped unrun; a guard in that closure waits on D's own handle. The wait
/// must end with `WaitOnSelf`, and D reports the dependency's failure.
#[test]
fn a_skipped_jobs_closure_waiting_on_its_own_job_gets_wait_on_self() {
    for workers in worker_counts(&[0, 2]) {
        watchdog(
            &format!("a_skipped_jobs_closure_waiting_on_its_own_job_gets_wait_on_self (workers {workers})"),
            WATCHDOG_SECS,
            || {
                let js = system(workers);
                let me: Arc<OnceLock<JobHandle>> = Arc::new(OnceLock::new());
                let got = Arc::new(Mutex::new(Vec::new()));
                let ran = Arc::new(AtomicBool::new(false));
                let (go_tx, go_rx) = mpsc::channel();
                let p = failing_dependency(&js, go_rx, "3a: the dependency fails");
                let guard = WaitOnOwnHandle {
                    js: js.clone(),
                    me: me.clone(),
                    got: got.clone(),
                };
                let ran2 = ran.clone();
                let d = js.schedule_after(&[p], move || {
                    let _guard = &guard;
                    ran2.store(true, SeqCst);
                });
                me.set(d).unwrap();
                go_tx.send(()).unwrap();
                let r = outcome(js.try_complete(d));
                assert!(
                    matches!(&r, Outcome::Panicked { message, via_dependency: true }
                        if message.contains("3a: the dependency fails")),
                    "workers {workers}: D fails via its dependency, got {r:?}"
                );
                assert!(!ran.load(SeqCst), "workers {workers}: D was skipped");
                assert_eq!(
                    *got.lock().unwrap(),
                    vec![Outcome::WaitOnSelf],
                    "workers {workers}: the wait from D's closure's drop"
                );
            },
        );
    }
}

/// The same guard in a job that runs (control: the closure is dropped while
/// the job runs, which jobsys counts as inside the job).
#[test]
fn a_run_jobs_closure_waiting_on_its_own_job_gets_wait_on_self() {
    for workers in worker_counts(&[0, 2]) {
        watchdog(
            &format!(
                "a_run_jobs_closure_waiting_on_its_own_job_gets_wait_on_self (workers {workers})"
            ),
            WATCHDOG_SECS,
            || {
                let js = system(workers);
                let me: Arc<OnceLock<JobHandle>> = Arc::new(OnceLock::new());
                let got = Arc::new(Mutex::new(Vec::new()));
                let gate = Arc::new(Gate::default());
                let guard = WaitOnOwnHandle {
                    js: js.clone(),
                    me: me.clone(),
                    got: got.clone(),
                };
                let gate2 = gate.clone();
                let d = js.schedule(move || {
                    gate2.wait();
                    let _guard = &guard;
                });
                me.set(d).unwrap();
                gate.open();
                assert_eq!(outcome(js.try_complete(d)), Outcome::Ok);
                assert_eq!(*got.lock().unwrap(), vec![Outcome::WaitOnSelf]);
            },
        );
    }
}

/// 3(b): a parallel_for's closure owns a guard that waits on the loop's own
/// handle when dropped: after the last piece (`skipped` false), or unrun
/// because a dependency failed. The wait must end with `WaitOnSelf`.
fn loop_closure_waiting_on_its_own_loop(test: &str, skipped: bool) {
    for workers in worker_counts(&[0, 2]) {
        let what = format!("{test} (workers {workers})");
        watchdog(&what, WATCHDOG_SECS, || {
            let js = system(workers);
            let me: Arc<OnceLock<JobHandle>> = Arc::new(OnceLock::new());
            let got = Arc::new(Mutex::new(Vec::new()));
            let calls = Arc::new(AtomicUsize::new(0));
            // The pieces (ran) or the dependency (skipped) wait for the
            // loop's handle to be published.
            let gate = Arc::new(Gate::default());
            let (go_tx, go_rx) = mpsc::channel();
            let deps: Vec<JobHandle> = if skipped {
                vec![failing_dependency(&js, go_rx, "3b: the dependency fails")]
            } else {
                Vec::new()
            };
            let guard = WaitOnOwnHandle {
                js: js.clone(),
                me: me.clone(),
                got: got.clone(),
            };
            let (gate2, calls2) = (gate.clone(), calls.clone());
            let h = js
                .job()
                .after(&deps)
                .parallel_for(0..8, Batch::Fixed(1), move |_| {
                    gate2.wait();
                    let _guard = &guard;
                    calls2.fetch_add(1, SeqCst);
                });
            me.set(h).unwrap();
            gate.open();
            let _ = go_tx.send(());
            let r = outcome(js.try_complete(h));
            if skipped {
                assert!(
                    matches!(
                        &r,
                        Outcome::Panicked {
                            via_dependency: true,
                            ..
                        }
                    ),
                    "{what}: the loop fails via its dependency, got {r:?}"
                );
                assert_eq!(calls.load(SeqCst), 0, "{what}: no piece ran");
            } else {
                assert_eq!(r, Outcome::Ok, "{what}");
                assert_eq!(calls.load(SeqCst), 8, "{what}: every index ran");
            }
            assert_eq!(
                *got.lock().unwrap(),
                vec![Outcome::WaitOnSelf],
                "{what}: the wait from the loop closure's drop"
            );
        });
    }
}

/// 3(b), the loop ran: its closure is dropped after the last piece.
#[test]
fn a_loop_closure_waiting_on_its_own_loop_gets_wait_on_self() {
    loop_closure_waiting_on_its_own_loop(
        "a_loop_closure_waiting_on_its_own_loop_gets_wait_on_self",
        false,
    );
}

/// 3(b), the loop was skipped (its dependency failed): its closure is
/// dropped unrun.
#[test]
fn a_skipped_loop_closure_waiting_on_its_own_loop_gets_wait_on_self() {
    loop_closure_waiting_on_its_own_loop(
        "a_skipped_loop_closure_waiting_on_its_own_loop_gets_wait_on_self",
        true,
    );
}

// ---- 4: a panic in the drop of a parallel_for's closure --------------------

/// A closure that panics when dropped, run through `through` ("schedule",
/// "parallel_for" or "parallel_for_chunked"): the job fails with the drop's
/// panic (`Panicked`, its message, not via a dependency), and a job after
/// it is skipped.
fn closure_whose_drop_panics(test: &str, throughs: &[&'static str]) {
    for workers in worker_counts(&[0, 2]) {
        for &through in throughs {
            let what = format!("{test} ({through}, workers {workers})");
            watchdog(&what, WATCHDOG_SECS, || {
                let js = system(workers);
                let msg = "4: the closure's drop panicked";
                let bomb = PanicOnDrop(msg);
                let calls = Arc::new(AtomicUsize::new(0));
                let c = calls.clone();
                let h = match through {
                    "schedule" => js.schedule(move || {
                        let _bomb = &bomb;
                        c.fetch_add(1, SeqCst);
                    }),
                    "parallel_for" => js.parallel_for(0..8, Batch::Fixed(1), move |_| {
                        let _bomb = &bomb;
                        c.fetch_add(1, SeqCst);
                    }),
                    _ => js
                        .job()
                        .parallel_for_chunked(0..8, Batch::Fixed(1), move |r| {
                            let _bomb = &bomb;
                            c.fetch_add(r.len(), SeqCst);
                        }),
                };
                let after_ran = Arc::new(AtomicBool::new(false));
                let ar = after_ran.clone();
                let after = js.schedule_after(&[h], move || ar.store(true, SeqCst));
                let r = outcome(js.try_complete(h));
                assert!(
                    matches!(&r, Outcome::Panicked { message, via_dependency: false }
                        if message.contains(msg)),
                    "{what}: the job fails with the drop's panic, got {r:?}"
                );
                let ra = outcome(js.try_complete(after));
                assert!(
                    matches!(&ra, Outcome::Panicked { message, via_dependency: true } if message.contains(msg)),
                    "{what}: the job after it, got {ra:?}"
                );
                assert!(!after_ran.load(SeqCst), "{what}: the job after it ran");
                let want = if through == "schedule" { 1 } else { 8 };
                assert_eq!(calls.load(SeqCst), want, "{what}: the body ran fully");
            });
        }
    }
}

/// 4: a parallel_for (per-index and chunked) whose closure panics when
/// dropped fails like one whose body panics.
#[test]
fn a_panic_in_a_loop_closures_drop_fails_the_loop() {
    closure_whose_drop_panics(
        "a_panic_in_a_loop_closures_drop_fails_the_loop",
        &["parallel_for", "parallel_for_chunked"],
    );
}

/// 4, the comparison: the same closure through `schedule` (its drop runs
/// inside the job, so its panic is the job's).
#[test]
fn a_panic_in_a_job_closures_drop_fails_the_job() {
    closure_whose_drop_panics(
        "a_panic_in_a_job_closures_drop_fails_the_job",
        &["schedule"],
    );
}

// ---- 5: exactly-once drop --------------------------------------------------

/// On each path a closure can take (run, skipped, loop run, loop skipped),
/// what it owns is dropped exactly once by the time the wait returns, and
/// never again later (checked after the system is gone).
#[test]
fn every_closure_is_dropped_exactly_once() {
    for workers in worker_counts(&[0, 2]) {
        for path in ["run", "skipped", "loop run", "loop skipped"] {
            let what = format!("every_closure_is_dropped_exactly_once ({path}, workers {workers})");
            watchdog(&what, WATCHDOG_SECS, || {
                let js = system(workers);
                let drops = Arc::new(AtomicUsize::new(0));
                let owned = DropCount(drops.clone());
                let (go_tx, go_rx) = mpsc::channel();
                let deps: Vec<JobHandle> = if path.contains("skipped") {
                    vec![failing_dependency(&js, go_rx, "5: the dependency fails")]
                } else {
                    Vec::new()
                };
                let h = if path.starts_with("loop") {
                    js.job()
                        .after(&deps)
                        .parallel_for(0..64, Batch::Auto, move |_| {
                            let _owned = &owned;
                        })
                } else {
                    js.schedule_after(&deps, move || {
                        let _owned = &owned;
                    })
                };
                let _ = go_tx.send(());
                let r = outcome(js.try_complete(h));
                if path.contains("skipped") {
                    assert!(
                        matches!(
                            &r,
                            Outcome::Panicked {
                                via_dependency: true,
                                ..
                            }
                        ),
                        "{what}: {r:?}"
                    );
                } else {
                    assert_eq!(r, Outcome::Ok, "{what}");
                }
                assert_eq!(drops.load(SeqCst), 1, "{what}: after the wait");
                drop(js);
                assert_eq!(drops.load(SeqCst), 1, "{what}: after shutdown");
            });
        }
    }
}

/// The scope-cancel path of 1(a): the cancelled job's closure is dropped
/// exactly once, before the scope's panic reaches the scope owner, and
/// never again.
#[test]
fn a_cancelled_scope_job_is_dropped_exactly_once() {
    for workers in worker_counts(&[0, 2]) {
        let what = format!("a_cancelled_scope_job_is_dropped_exactly_once (workers {workers})");
        watchdog(&what, WATCHDOG_SECS, || {
            let js = system(workers);
            let drops = Arc::new(AtomicUsize::new(0));
            let a_cell: Arc<OnceLock<JobHandle>> = Arc::new(OnceLock::new());
            let (go_tx, go_rx) = mpsc::channel::<()>();
            let (at_catch_tx, at_catch_rx) = mpsc::channel::<(bool, usize)>();
            let (js2, a_cell2, drops2) = (js.clone(), a_cell.clone(), drops.clone());
            let a = js.schedule(move || {
                go_rx.recv().unwrap();
                let a = *a_cell2.get().unwrap();
                // Owned only (no borrow): on the broken code the job runs
                // after this frame is gone, harmlessly.
                let owned = DropCount(drops2.clone());
                let r = catch_unwind(AssertUnwindSafe(|| {
                    js2.scope(|s| {
                        s.schedule_after(&[a], move || {
                            let _owned = &owned;
                        });
                    })
                }));
                at_catch_tx.send((r.is_err(), drops2.load(SeqCst))).unwrap();
            });
            a_cell.set(a).unwrap();
            go_tx.send(()).unwrap();
            assert_eq!(outcome(js.try_complete(a)), Outcome::Ok, "{what}");
            let (panicked, at_catch) = at_catch_rx.recv().unwrap();
            drop(js);
            assert!(panicked, "{what}: the scope panics");
            assert_eq!(at_catch, 1, "{what}: dropped when the panic was caught");
            assert_eq!(drops.load(SeqCst), 1, "{what}: after shutdown");
        });
    }
}
