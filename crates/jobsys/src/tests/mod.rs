//! Unit tests of the unsafe core, small enough for Miri
//! (`scripts/miri.sh`): slot recycling and generations, remote frees,
//! dependency edges, parallel_for pieces, stack jobs, failures.

mod access;
mod back_pressure;
mod engine;
mod gates;
mod join;
mod slots;
mod storage_trim;
mod timed_wait;

use crate::{Batch, JobError, JobSystem};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Smaller under Miri, which is ~1000x slower.
fn n(normal: usize, miri: usize) -> usize {
    if cfg!(miri) {
        miri
    } else {
        normal
    }
}

fn system(workers: usize) -> JobSystem {
    JobSystem::builder().workers(workers).build().unwrap()
}
