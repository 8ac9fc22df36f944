//! Blocking jobs (`JobBuilder::schedule_blocking`): a closure that may
//! block (file or network I/O, a third-party call that sleeps) runs on a
//! thread of its own, so that no worker is held while it blocks, and its
//! job finishes when it returns.
//!
//! One job becomes three: a starter after the job's dependencies hands
//! the closure to a blocking thread; the job the caller gets runs after
//! the starter and after a gate (`held.rs`) that the blocking thread opens
//! once the closure has returned (or panicked: the panic is kept and the
//! job re-raises it, so it fails as a job whose closure panicked). A
//! starter dropped unrun (a dependency failed) drops the closure unrun and
//! opens the gate; the job is skipped with the dependency's cause.
//!
//! Blocking threads are shared by every job system of the process: started
//! when a closure finds none idle (at most `MAX_THREADS`; beyond that,
//! closures wait in order), and ended after `KEEP_ALIVE` without work.

use crate::desc::{JobDesc, Priority};
use crate::handle::JobHandle;
use crate::held::{gate, Hold};
use crate::limiter::SeatGuard;
use crate::system::JobSystem;
use std::any::Any;
use std::collections::VecDeque;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Most blocking threads alive at once, over all job systems.
const MAX_THREADS: usize = 64;
/// A blocking thread with nothing to do for this long ends.
const KEEP_ALIVE: Duration = Duration::from_secs(5);

type Task = Box<dyn FnOnce() + Send>;

struct Pool {
    state: Mutex<State>,
    work: Condvar,
}

struct State {
    queue: VecDeque<Task>,
    /// Threads alive, and those of them waiting for work.
    threads: usize,
    idle: usize,
}

static POOL: Pool = Pool {
    state: Mutex::new(State {
        queue: VecDeque::new(),
        threads: 0,
        idle: 0,
    }),
    work: Condvar::new(),
};

fn lock() -> MutexGuard<'static, State> {
    // Tasks run outside the lock and catch their panics: the state is
    // consistent whenever the lock is free.
    POOL.state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Run `task` on a blocking thread: an idle one, a new one, or the first
/// one free. If no thread can be started and none is alive, it runs on
/// the calling thread (it must run: its gate opens when it has).
fn run(task: Task) {
    let mut st = lock();
    st.queue.push_back(task);
    if st.idle >= st.queue.len() {
        POOL.work.notify_one();
        return;
    }
    if st.threads >= MAX_THREADS {
        return;
    }
    st.threads += 1;
    drop(st);
    let spawned = std::thread::Builder::new()
        .name("jobsys-blocking".into())
        .spawn(serve);
    if spawned.is_err() {
        let mut st = lock();
        st.threads -= 1;
        if st.threads == 0 {
            // Nobody else would ever run the queue.
            let tasks: Vec<Task> = st.queue.drain(..).collect();
            drop(st);
            tasks.into_iter().for_each(|t| t());
        }
    }
}

/// A blocking thread: run queued tasks, end after `KEEP_ALIVE` idle.
fn serve() {
    let mut st = lock();
    loop {
        if let Some(task) = st.queue.pop_front() {
            drop(st);
            task();
            st = lock();
            continue;
        }
        st.idle += 1;
        let (next, timeout) = POOL
            .work
            .wait_timeout(st, KEEP_ALIVE)
            .unwrap_or_else(|e| e.into_inner());
        st = next;
        st.idle -= 1;
        if timeout.timed_out() && st.queue.is_empty() {
            st.threads -= 1;
            return;
        }
    }
}

/// What the blocking thread leaves for the job: the closure's panic.
pub(crate) struct Outcome(Arc<Mutex<Option<Box<dyn Any + Send>>>>);

impl Outcome {
    /// The job's closure: fail as the blocking closure did. Runs after the
    /// gate opened, so after the blocking thread stored the panic (the
    /// gate's release orders it before this).
    pub(crate) fn finish(self) {
        let p = self.0.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(p) = p {
            resume_unwind(p);
        }
    }
}

/// The blocking closure with what it needs on its thread: its seat (a
/// limited job), the gate's hold, and the outcome to fill.
struct Blocking<F> {
    f: F,
    seat: Option<SeatGuard>,
    hold: Hold,
    outcome: Arc<Mutex<Option<Box<dyn Any + Send>>>>,
}

impl<F: FnOnce() + Send + 'static> Blocking<F> {
    fn call(self) {
        let Blocking {
            f,
            seat,
            hold,
            outcome,
        } = self;
        // A `JobSystem` dropped by `f` (its last clone) must not wait for
        // this job, which ends after `f` returns.
        let inside = crate::running::InBlocking::enter();
        let r = match &seat {
            Some(s) => catch_unwind(AssertUnwindSafe(|| s.run(f))),
            None => catch_unwind(AssertUnwindSafe(f)),
        };
        drop(inside);
        if let Err(p) = r {
            *outcome.lock().unwrap_or_else(|e| e.into_inner()) = Some(p);
        }
        // The seat before the gate: the next job of the limiter may start
        // as soon as this one has finished.
        drop(seat);
        hold.release();
    }
}

/// Start a blocking job: the starter after `deps` (batched if `batched`)
/// and the gate. The caller schedules the job itself after the two
/// returned handles, with `Outcome::finish` as its closure.
pub(crate) fn start<F: FnOnce() + Send + 'static>(
    js: &JobSystem,
    deps: &[JobHandle],
    batched: bool,
    seat: Option<SeatGuard>,
    f: F,
) -> ([JobHandle; 2], Outcome) {
    let (g, hold) = gate(js, &JobDesc::default());
    let outcome = Arc::new(Mutex::new(None));
    let task = Blocking {
        f,
        seat,
        hold,
        outcome: outcome.clone(),
    };
    // Unrun (a dependency failed), the closure drops `task`: `f` unrun,
    // the seat given back, the gate opened.
    let hand_off = move || run(Box::new(move || task.call()));
    let desc = JobDesc::default().with_priority(Priority::High);
    // SAFETY: `hand_off` is `'static`.
    let s = unsafe {
        if batched {
            js.schedule_batched_unchecked(&desc, deps, hand_off)
        } else {
            js.schedule_unchecked(&desc, deps, hand_off)
        }
    };
    ([s, g], Outcome(outcome))
}
