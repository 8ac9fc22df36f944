//! The library half of the `jobsys-trace` command: [`render`] draws a
//! capture's timeline as SVG. Reading, summarising and comparing captures
//! live in `jobsys::trace`; the command (`src/main.rs`) wires them up.
//!
//! `docs/tracing.md` (how to capture, view, render, summarise and compare)
//! is compiled here as a doctest, so its Rust snippet cannot rot.

pub mod render;

/// The Rust code of `docs/tracing.md`, built by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/tracing.md")]
pub struct TracingDoc;
