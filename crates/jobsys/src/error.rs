//! What a failed job reports to whoever waits on it.

use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The panic of a job, shared by the job and everything that depended on it.
pub(crate) struct Failure {
    message: String,
    kind: Kind,
    /// The `JobDesc` name of the job that failed (the one that panicked or
    /// was cancelled, not a dependent that inherits the failure); `None`
    /// for an unnamed job. Read from the job's meta only when a failure is
    /// recorded, so the success path never looks at it.
    job: Option<&'static str>,
    /// The original payload; taken by the first waiter that re-raises it.
    payload: Mutex<Option<Box<dyn Any + Send>>>,
    /// A wait read this failure (`to_error`, `to_panic`): on the job
    /// itself or on one that inherited it (dependents share the `Arc`).
    observed: AtomicBool,
    /// Where a panic nobody read is reported when its last reference goes
    /// (`Drop`): the failure log of its system, attached by
    /// `FailureLog::record`, which `finish` calls for every failed job.
    report: OnceLock<Arc<Unobserved>>,
}

/// The message of a panic payload (a placeholder for non-string ones).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a job panicked with a non-string payload".to_string()
    }
}

/// What kind of failure a `Failure` is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The job panicked (`JobError::Panicked`).
    Panic,
    /// The job was cancelled (`JobError::Cancelled`).
    Cancelled,
    /// A dependency's outcome was no longer known (`JobError::OutcomeUnknown`).
    Unknown,
}

impl Failure {
    /// `job`: the panicking job's name (`JobDesc::named`), if it has one.
    pub(crate) fn from_panic(payload: Box<dyn Any + Send>, job: Option<&'static str>) -> Failure {
        let message = panic_message(&*payload);
        Failure {
            message,
            kind: Kind::Panic,
            job,
            payload: Mutex::new(Some(payload)),
            observed: AtomicBool::new(false),
            report: OnceLock::new(),
        }
    }

    /// The cause recorded for a cancelled job, saying why (`job`: its
    /// name, if it has one).
    pub(crate) fn cancelled(why: &str, job: Option<&'static str>) -> Failure {
        Failure {
            message: why.to_string(),
            kind: Kind::Cancelled,
            job,
            payload: Mutex::new(None),
            observed: AtomicBool::new(false),
            report: OnceLock::new(),
        }
    }

    /// The cause recorded for a job skipped because the outcome of a job it
    /// depends on was no longer known (`failures.rs`): it may have failed.
    pub(crate) fn dependency_unknown() -> Failure {
        Failure {
            message: "the outcome of a job it depends on is no longer known \
                      (the failure log forgot it; see Builder::failure_history)"
                .to_string(),
            kind: Kind::Unknown,
            job: None,
            payload: Mutex::new(None),
            observed: AtomicBool::new(false),
            report: OnceLock::new(),
        }
    }

    /// Report this failure to `to` if it is a panic that is dropped unread
    /// (the first system to record it keeps it).
    pub(crate) fn report_to(&self, to: &Arc<Unobserved>) {
        if self.kind == Kind::Panic {
            let _ = self.report.set(to.clone());
        }
    }

    /// What a wait on the failed job reports (`via_dependency`: the job
    /// was skipped because a dependency failed).
    pub(crate) fn to_error(&self, via_dependency: bool) -> JobError {
        self.observed.store(true, Ordering::Relaxed);
        match self.kind {
            Kind::Cancelled => JobError::Cancelled(match self.job {
                Some(name) => format!("{} (job \"{name}\")", self.message),
                None => self.message.clone(),
            }),
            Kind::Unknown => JobError::OutcomeUnknown,
            Kind::Panic => JobError::Panicked(self.to_panic(via_dependency)),
        }
    }

    pub(crate) fn to_panic(&self, via_dependency: bool) -> JobPanic {
        // Relaxed: only this failure's own `Drop` reads it, after the last
        // reference went (the `Arc` count's release/acquire orders it).
        self.observed.store(true, Ordering::Relaxed);
        let payload = if via_dependency {
            None
        } else {
            self.payload
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
        };
        JobPanic {
            message: self.message.clone(),
            via_dependency,
            job: self.job,
            payload,
        }
    }
}

/// A panic that no wait read is reported as its last reference goes: when
/// the failure log forgets it and its slot is reused, or when the system
/// drops (`Builder::on_unobserved_panic`).
impl Drop for Failure {
    fn drop(&mut self) {
        if self.kind != Kind::Panic || *self.observed.get_mut() {
            return;
        }
        if let Some(to) = self.report.take() {
            to.report(JobError::Panicked(self.to_panic(false)));
        }
    }
}

/// What a job system does with a job's panic that no wait read
/// ([`Builder::on_unobserved_panic`](crate::Builder::on_unobserved_panic)).
/// It gets the error a wait would have returned (a
/// [`JobError::Panicked`], naming the job when it has a name). It runs on
/// whichever thread lets go of the failure last (a worker reusing the
/// job's slot, or the thread that drops the system), so it must not wait
/// on jobs of that system, and it should not hold a clone of the
/// `JobSystem` (that would keep the system alive). A panic inside it is
/// caught and printed.
#[derive(Clone)]
pub struct PanicHandler(pub Arc<dyn Fn(&JobError) + Send + Sync>);

impl fmt::Debug for PanicHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PanicHandler")
    }
}

/// Where a system's unobserved panics go: counted, then handed to the
/// handler, or printed.
#[derive(Default)]
pub(crate) struct Unobserved {
    count: AtomicU64,
    handler: OnceLock<PanicHandler>,
}

impl Unobserved {
    /// Report to `h` instead of printing (set once, as the system is built).
    pub(crate) fn set_handler(&self, h: PanicHandler) {
        let _ = self.handler.set(h);
    }

    /// Panics reported so far.
    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// A failure that no wait read is dropped (`Failure`'s `Drop`).
    pub(crate) fn report(&self, e: JobError) {
        self.count.fetch_add(1, Ordering::Relaxed);
        match self.handler.get() {
            Some(h) => {
                let call = std::panic::AssertUnwindSafe(|| (h.0)(&e));
                if std::panic::catch_unwind(call).is_err() {
                    eprintln!("jobsys: the unobserved-panic handler panicked (on: {e})");
                }
            }
            None => eprintln!(
                "{e} (no wait read this failure; Builder::on_unobserved_panic changes this report)"
            ),
        }
    }
}

/// A job's panic, as handed to the thread that waited on it.
pub struct JobPanic {
    message: String,
    via_dependency: bool,
    job: Option<&'static str>,
    payload: Option<Box<dyn Any + Send>>,
}

impl JobPanic {
    /// The panic message (or a placeholder for non-string payloads).
    pub fn message(&self) -> &str {
        &self.message
    }
    /// True when this job did not run because a job it depends on failed.
    pub fn via_dependency(&self) -> bool {
        self.via_dependency
    }
    /// The name (`JobDesc::named`) of the job that panicked: the waited-on
    /// job itself, or with [`via_dependency`](Self::via_dependency) the
    /// dependency whose panic it inherited. `None` when that job has no
    /// name.
    pub fn job_name(&self) -> Option<&'static str> {
        self.job
    }
    /// The original panic payload, if this waiter is the first to see it.
    pub fn take_payload(&mut self) -> Option<Box<dyn Any + Send>> {
        self.payload.take()
    }
    /// Continue unwinding with the original payload where there is one.
    pub fn resume(mut self) -> ! {
        match self.payload.take() {
            Some(p) => std::panic::resume_unwind(p),
            None => panic!("{}", JobError::Panicked(self)),
        }
    }
}

impl fmt::Debug for JobPanic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobPanic")
            .field("message", &self.message)
            .field("via_dependency", &self.via_dependency)
            .field("job", &self.job)
            .finish()
    }
}

/// Why waiting on a handle did not end in success.
///
/// A failed job that has a name (`JobDesc::named`, `schedule_named`) is
/// named in `Display` (`jobsys: job "physics" panicked: …`, `jobsys: a
/// dependency, job "physics", panicked: …`, a cancellation's text ending
/// `(job "physics")`); [`job_name`](JobError::job_name) gives a panic's.
#[derive(Debug)]
#[non_exhaustive]
pub enum JobError {
    /// The job, or a job it depends on, panicked.
    Panicked(JobPanic),
    /// The handle was made by another `JobSystem`.
    ForeignHandle,
    /// A job waited on itself, or on a job that needs it to finish first,
    /// or closed a cycle of waits across threads (it waits on a job whose
    /// thread waits, directly or through other waiting threads, on a job
    /// this one is inside of): that wait could never end.
    WaitOnSelf,
    /// The job was cancelled (`JobSystem::cancel`, or a scope that could
    /// not wait for it), or a job it depends on was: it did not run, or
    /// was stopped while running. Says why.
    Cancelled(String),
    /// The job finished, but whether it (or a job it depends on) failed is
    /// no longer known: the failure log (`Builder::failure_history`) pushed
    /// out a failure of its slot from this job's time or later. Never
    /// reported for a handle whose job failed within the log's reach; a
    /// program that keeps its failures below `failure_history` never sees
    /// it. Treat it as a failure whose cause is lost.
    OutcomeUnknown,
    /// A timed wait ([`JobSystem::try_complete_timeout`](crate::JobSystem::try_complete_timeout))
    /// ran out of time before the job finished. Nothing happened to the
    /// job: it goes on, and its handle may be waited on again.
    Timeout,
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JobError::Panicked(p) => match (p.via_dependency, p.job) {
                (true, Some(name)) => write!(
                    f,
                    "jobsys: a dependency, job \"{name}\", panicked: {}",
                    p.message
                ),
                (true, None) => write!(f, "jobsys: a dependency panicked: {}", p.message),
                (false, Some(name)) => write!(f, "jobsys: job \"{name}\" panicked: {}", p.message),
                (false, None) => write!(f, "jobsys: job panicked: {}", p.message),
            },
            JobError::ForeignHandle => {
                write!(f, "jobsys: this handle belongs to another JobSystem")
            }
            JobError::Cancelled(why) => write!(f, "jobsys: job cancelled: {why}"),
            JobError::OutcomeUnknown => write!(
                f,
                "jobsys: the job finished, but whether it failed is no longer known \
                 (the failure log forgot failures of its slot; see Builder::failure_history)"
            ),
            JobError::WaitOnSelf => write!(
                f,
                "jobsys: a job waited on itself (or on a job that depends on it); that wait would never end"
            ),
            JobError::Timeout => write!(
                f,
                "jobsys: the wait timed out before the job finished (the job goes on)"
            ),
        }
    }
}

impl JobError {
    /// The name (`JobDesc::named`) of the job that failed, where the error
    /// knows it: for [`Panicked`](JobError::Panicked), the job that
    /// panicked ([`JobPanic::job_name`]). A cancelled named job's name is
    /// in its [`Cancelled`](JobError::Cancelled) text (`… (job "name")`),
    /// and so in `Display`; this returns `None` for it and for the other
    /// variants.
    pub fn job_name(&self) -> Option<&'static str> {
        match self {
            JobError::Panicked(p) => p.job,
            _ => None,
        }
    }
}

impl std::error::Error for JobError {}
