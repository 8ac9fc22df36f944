//! The extra phases a frame may run on its main thread between scheduling
//! graph nodes, each checked on the spot:
//!
//! - [`scope`]: a `scope` whose jobs borrow the caller's stack (a slice and
//!   counters): independent jobs with random priorities (job 0 schedules a
//!   nested scope job from inside itself), a `parallel_for` and a
//!   `schedule_after` after job 0, and a `parallel_for_chunked`. Every job
//!   and index must run exactly once and compute the right sums; with an
//!   injected panic (in a job nothing depends on) the scope must still wait
//!   for all of them and then re-raise exactly that panic.
//! - [`main_join`]: nested `join` on the main thread (both sides join
//!   again); the four leaves' results must come back.
//! - [`Burst`]: 100k (quick: 10k) tiny jobs in one go (`schedule`, or
//!   `job().batched()` and one `flush`), running alongside the rest of the
//!   frame; each must run exactly once, their combine must succeed.

use super::check::mix;
use super::faults;
use super::plan::{BurstPlan, ScopePlan};
use jobsys::{JobDesc, JobHandle, JobSystem, Priority};
use jobsys_bench::spin::spin_ns;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

/// What the phases of one frame found and left to wait for.
#[derive(Default)]
pub struct Extras {
    /// Mismatches.
    pub errors: Vec<String>,
    /// Job runs.
    pub jobs: u64,
    /// Handles the frame must still wait on (must succeed).
    pub handles: Vec<JobHandle>,
}

fn counters32(n: usize) -> Vec<AtomicU32> {
    (0..n).map(|_| AtomicU32::new(0)).collect()
}

fn counters64(n: usize) -> Vec<AtomicU64> {
    (0..n).map(|_| AtomicU64::new(0)).collect()
}

/// First index whose counter is not 1, with its count.
fn not_once(c: &[AtomicU32]) -> Option<(usize, u32)> {
    c.iter()
        .map(|a| a.load(Ordering::SeqCst))
        .enumerate()
        .find(|&(_, v)| v != 1)
}

/// Run the scope of `sp` and check it.
pub fn scope(js: &JobSystem, sp: &ScopePlan, x: &mut Extras) {
    let data: Vec<u64> = (0..sp.len).map(|k| mix(sp.seed, k as u64)).collect();
    let hits = counters32(sp.jobs);
    let sums = counters64(sp.jobs);
    let idx = counters32(sp.len);
    let out = counters64(sp.len);
    let chunk = counters32(sp.len);
    let nested = AtomicU32::new(0);
    let after = AtomicU32::new(0);
    let r = catch_unwind(AssertUnwindSafe(|| {
        js.scope(|s| {
            let (data, hits, sums, idx, out, chunk, nested, after) =
                (&data, &hits, &sums, &idx, &out, &chunk, &nested, &after);
            let mut first = None;
            for j in 0..sp.jobs {
                let prio = match mix(sp.seed, j as u64) % 3 {
                    0 => Priority::High,
                    1 => Priority::Normal,
                    _ => Priority::Low,
                };
                let h = s
                    .job()
                    .desc(JobDesc::named("soak-scope").with_priority(prio))
                    .schedule({
                        move || {
                            hits[j].fetch_add(1, Ordering::SeqCst);
                            spin_ns(sp.dur_ns);
                            if sp.panic_job == Some(j) {
                                faults::inject(faults::scope_message(j));
                            }
                            let sum = data.iter().fold(j as u64, |a, &b| a.wrapping_add(b));
                            sums[j].store(sum, Ordering::SeqCst);
                            if j == 0 {
                                s.schedule(move || {
                                    nested.fetch_add(1, Ordering::SeqCst);
                                });
                            }
                        }
                    });
                first.get_or_insert(h);
            }
            let first: Vec<JobHandle> = first.into_iter().collect();
            s.job()
                .after(&first)
                .parallel_for(0..sp.len, sp.batch, move |k| {
                    idx[k].fetch_add(1, Ordering::SeqCst);
                    out[k].store(data[k].wrapping_mul(3), Ordering::SeqCst);
                });
            s.job().parallel_for_chunked(0..sp.len, sp.batch, move |r| {
                for k in r {
                    chunk[k].fetch_add(1, Ordering::SeqCst);
                }
            });
            s.schedule_after(&first, move || {
                after.fetch_add(1, Ordering::SeqCst);
            });
        });
    }));
    let mut bad = Vec::new();
    match (r, sp.panic_job) {
        (Ok(()), None) => {}
        (Err(p), Some(j)) => {
            let got = p.downcast_ref::<String>();
            if got != Some(&faults::scope_message(j)) {
                bad.push(format!(
                    "re-raised {got:?} instead of the injected panic of scope job {j}"
                ));
            }
        }
        (Ok(()), Some(j)) => bad.push(format!("returned normally although scope job {j} panicked")),
        (Err(p), None) => bad.push(format!(
            "panicked without an injected panic: {}",
            faults::payload_text(&*p)
        )),
    }
    if let Some((j, c)) = not_once(&hits) {
        bad.push(format!("job {j} ran {c} times"));
    }
    let total = data.iter().fold(0u64, |a, &b| a.wrapping_add(b));
    for (j, s) in sums.iter().enumerate() {
        let want = if sp.panic_job == Some(j) {
            0
        } else {
            total.wrapping_add(j as u64)
        };
        if s.load(Ordering::SeqCst) != want {
            bad.push(format!("job {j} summed the borrowed slice wrong"));
        }
    }
    if let Some((k, c)) = not_once(&idx) {
        bad.push(format!("parallel_for index {k} ran {c} times"));
    }
    if let Some(k) = (0..sp.len).find(|&k| out[k].load(Ordering::SeqCst) != data[k].wrapping_mul(3))
    {
        bad.push(format!("parallel_for index {k} wrote a wrong value"));
    }
    if let Some((k, c)) = not_once(&chunk) {
        bad.push(format!("parallel_for_chunked index {k} ran {c} times"));
    }
    for (what, c) in [("the nested job", &nested), ("the job after job 0", &after)] {
        let c = c.load(Ordering::SeqCst);
        if c != 1 {
            bad.push(format!("{what} ran {c} times"));
        }
    }
    x.errors
        .extend(bad.into_iter().map(|m| format!("scope: {m}")));
    x.jobs += sp.jobs as u64 + 2 + 2 * sp.len as u64;
}

/// A nested `join` on the calling thread; checks the four leaves.
pub fn main_join(js: &JobSystem, seed: u64, dur_ns: u64, x: &mut Extras) {
    let got = js.join(
        || {
            spin_ns(dur_ns);
            js.join(|| mix(seed, 1), || mix(seed, 2))
        },
        || {
            js.join(
                || mix(seed, 3),
                || {
                    spin_ns(dur_ns);
                    mix(seed, 4)
                },
            )
        },
    );
    let want = ((mix(seed, 1), mix(seed, 2)), (mix(seed, 3), mix(seed, 4)));
    if got != want {
        x.errors.push(format!(
            "main-thread join returned {got:x?}, expected {want:x?}"
        ));
    }
    x.jobs += 6;
}

/// A burst in flight.
pub struct Burst {
    hits: Arc<Vec<AtomicU8>>,
    handles: Vec<JobHandle>,
    all: JobHandle,
    batched: bool,
}

impl Burst {
    /// Schedule the burst of `b`.
    pub fn start(js: &JobSystem, b: &BurstPlan) -> Burst {
        let hits: Arc<Vec<AtomicU8>> = Arc::new((0..b.jobs).map(|_| AtomicU8::new(0)).collect());
        let handles: Vec<JobHandle> = (0..b.jobs)
            .map(|k| {
                let h = hits.clone();
                let job = move || {
                    h[k].fetch_add(1, Ordering::Relaxed);
                };
                if b.batched {
                    js.job().batched().schedule(job)
                } else {
                    js.schedule(job)
                }
            })
            .collect();
        if b.batched {
            js.flush();
        }
        let all = js.combine(&handles);
        Burst {
            hits,
            handles,
            all,
            batched: b.batched,
        }
    }

    /// Wait for it and check it.
    pub fn finish(self, js: &JobSystem, x: &mut Extras) {
        let what = if self.batched {
            "batched burst"
        } else {
            "burst"
        };
        if let Err(e) = js.try_complete(self.all) {
            x.errors.push(format!("{what}: the combine failed: {e}"));
        }
        if let Some((k, c)) = self
            .hits
            .iter()
            .map(|a| a.load(Ordering::SeqCst))
            .enumerate()
            .find(|&(_, v)| v != 1)
        {
            x.errors.push(format!(
                "{what}: job {k} of {} ran {c} times",
                self.hits.len()
            ));
        }
        if let Some(k) = self.handles.iter().position(|&h| !js.is_complete(h)) {
            x.errors.push(format!(
                "{what}: job {k} reads incomplete after the combine"
            ));
        }
        x.jobs += self.hits.len() as u64;
    }
}
