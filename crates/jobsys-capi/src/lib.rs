//! The C ABI of jobsys: the functions declared in `include/jobsys.h`.
//!
//! Built as a static library (`libjobsys_capi.a`) and a shared one
//! (`libjobsys_capi.so`); `include/jobsys.hpp` is a header-only C++17
//! wrapper over it. The header is written by hand and is the reference for
//! C programmers; `tests/header.rs` checks that it declares exactly the
//! functions exported here and that its structs have the sizes of the
//! `#[repr(C)]` types below. How to build and link: `docs/c-api.md`.
//!
//! Rules every exported function follows:
//! - Its body runs in [`errors::ffi`]: failures are a `jobsys_error` code
//!   plus a thread-local message, and no Rust panic crosses into C.
//! - Pointers from C are checked for NULL; nothing else about them can be
//!   checked (a dangling `jobsys_system*` is the caller's bug, as with
//!   `free`). Handles *are* checked: see `handles`.
//! - Nothing from C is read as a Rust enum or `bool` (enums are `i32`,
//!   flags `u8`, both validated).
//!
//! Modules: `config` (jobsys_config), `system` (create/destroy, hot zones,
//! flush, stats), `jobs` (schedule, parallel_for, combine, complete,
//! wait_any, jobsys_fail, jobsys_join), `limiter` (jobsys_limiter), `handles` (jobsys_handle: the library's own
//! handle as bits, checked against the system's pages),
//! `trace` (trace start/stop/write), `profiler` (jobsys_profiler_callbacks),
//! `engine` (pins, registered threads, thread indices, active workers), `graph` (frame graphs: nodes, runs, sync points), `errors` (codes, last-error message,
//! the panic guard).

pub mod config;
pub mod engine;
pub mod errors;
pub mod graph;
pub mod handles;
pub mod jobs;
pub mod limiter;
pub mod profiler;
pub mod system;
pub mod trace;
