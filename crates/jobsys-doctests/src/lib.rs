//! The code blocks of the repository's README and docs pages, compiled and
//! run as doctests by `cargo test --workspace` (`cargo test -p
//! jobsys-doctests --doc` alone). They live here, not in `jobsys`, because
//! the pages are not part of the published `jobsys` package; the package's
//! own doctests are its crate and item docs.
//!
//! Nothing else is in this crate.

/// The README's examples.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// docs/engine.md's examples.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/engine.md")]
pub struct EngineDoctests;

/// docs/profiling.md's examples (the Tracy one is `ignore`: it needs the
/// `tracy` feature and loops forever).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/profiling.md")]
pub struct ProfilingDoctests;

/// docs/access.md's examples (and its compile_fail checks).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/access.md")]
pub struct AccessDoctests;

/// docs/graph.md's examples.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/graph.md")]
pub struct GraphDoctests;
