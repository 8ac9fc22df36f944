//! The tracer's one clock: nanoseconds since a process-wide epoch, read
//! through `Instant` (CLOCK_MONOTONIC on Linux, through the vDSO: no
//! syscall). Every thread's timestamps come from this clock, so events of
//! different threads are comparable; it never goes backwards.

use std::sync::OnceLock;
use std::time::Instant;

static EPOCH: OnceLock<Instant> = OnceLock::new();

/// Nanoseconds since the first call in this process.
#[inline]
pub(crate) fn now_ns() -> u64 {
    let epoch = *EPOCH.get_or_init(Instant::now);
    // u64 nanoseconds last 584 years; the record format keeps 56 bits
    // (2.2 years) per capture, which `RawEvent` documents.
    epoch.elapsed().as_nanos() as u64
}
