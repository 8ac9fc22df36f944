//! The one error type of the benchmark command.
//!
//! A wrong result (a job count that does not add up, an array that differs
//! from the serial loop's) is an error like any other: the run stops and the
//! process exits non-zero instead of printing a time for it.

use std::fmt;

/// Why a benchmark run failed.
#[derive(Debug)]
pub enum Error {
    /// Bad command line (also `--help`, which clap reports this way).
    Args(clap::Error),
    /// An implementation produced a wrong result.
    Verify(String),
    /// A job failed (panicked) inside the job system.
    Job(String),
    /// The job system refused to start.
    Build(jobsys::BuildError),
    /// The rayon pool refused to start.
    Rayon(rayon::ThreadPoolBuildError),
    /// Writing output files.
    Io(std::io::Error),
    /// Reading or writing JSON.
    Json(serde_json::Error),
    /// Drawing a plot.
    Plot(String),
    /// A program the benchmark runs (cargo, `trace-cost`'s child) failed.
    Child(String),
    /// The soak (crate `jobsys-soak`, which shares this error type) found
    /// frames that broke the checks (the message lists them).
    Soak(String),
}

/// `Result` with the benchmark's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Args(e) => write!(f, "{e}"),
            Error::Verify(m) => write!(f, "wrong result, no time reported: {m}"),
            Error::Job(m) => write!(f, "a benchmark job failed: {m}"),
            Error::Build(e) => write!(f, "{e}"),
            Error::Rayon(e) => write!(f, "rayon: {e}"),
            Error::Io(e) => write!(f, "i/o: {e}"),
            Error::Json(e) => write!(f, "json: {e}"),
            Error::Plot(m) => write!(f, "plot: {m}"),
            Error::Child(m) => write!(f, "{m}"),
            Error::Soak(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<jobsys::BuildError> for Error {
    fn from(e: jobsys::BuildError) -> Self {
        Error::Build(e)
    }
}
impl From<jobsys::JobError> for Error {
    fn from(e: jobsys::JobError) -> Self {
        Error::Job(e.to_string())
    }
}
impl From<rayon::ThreadPoolBuildError> for Error {
    fn from(e: rayon::ThreadPoolBuildError) -> Self {
        Error::Rayon(e)
    }
}
impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e)
    }
}
impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Json(e)
    }
}

/// `Err(Error::Verify(msg()))` unless `ok`.
pub fn check(ok: bool, msg: impl FnOnce() -> String) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::Verify(msg()))
    }
}
