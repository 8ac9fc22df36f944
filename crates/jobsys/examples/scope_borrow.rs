//! Jobs that borrow from the stack: `JobSystem::scope`.
//!
//! ```text
//! cargo run --example scope_borrow -p jobsys
//! ```
//!
//! Jobs from `js.schedule` must be `'static`; jobs from a scope's `s.schedule`,
//! `s.parallel_for` and `s.schedule_after` may borrow locals, because
//! `js.scope(|s| ...)` returns only after every job scheduled in it finished.
//! This example, on plain `Vec`s and arrays that live on `main`'s stack:
//!
//! 1. brightens an image in place, one job per band of rows (`chunks_mut`
//!    gives each job its own `&mut [u8]`), and has each band job record
//!    its band's sum;
//! 2. with `s.schedule_after`, adds the band sums up once all band jobs ran,
//!    writing into a `&mut u64` local;
//! 3. builds a histogram of a borrowed heightmap with `s.parallel_for`
//!    (per-index reads of a `&[u16]`, counts in an array of atomics);
//! 4. with `s.schedule_after` again, finds the fullest histogram bucket;
//! 5. schedules from inside a scope job (`s` can be used in the jobs too):
//!    a recursive split that sums a borrowed slice.
//!
//! Then it checks everything against the same work done serially.

use jobsys::{Batch, JobHandle, JobSystem, Scope};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

const WIDTH: usize = 256;
const HEIGHT: usize = 256;
const BAND_ROWS: usize = 16;
const BUCKETS: usize = 16;

fn brighten(p: &mut u8) {
    *p = p.saturating_add(40);
}

/// Sum `data` by splitting it in halves, each half a job of the same scope,
/// down to pieces of 1024. The sum lands in `out`.
fn split_sum<'scope>(s: &'scope Scope<'scope, '_>, data: &'scope [u32], out: &'scope AtomicU64) {
    if data.len() <= 1024 {
        out.fetch_add(data.iter().map(|&x| u64::from(x)).sum::<u64>(), Relaxed);
        return;
    }
    let (left, right) = data.split_at(data.len() / 2);
    s.schedule(move || split_sum(s, left, out));
    split_sum(s, right, out);
}

fn main() {
    let js = JobSystem::builder().build().expect("start the job system");

    // Locals the jobs borrow. None of them is 'static, none is in an Arc.
    let mut image: Vec<u8> = (0..WIDTH * HEIGHT).map(|i| (i * 7 % 251) as u8).collect();
    let original = image.clone();
    let band_sums: Vec<AtomicU64> = (0..HEIGHT / BAND_ROWS).map(|_| AtomicU64::new(0)).collect();
    // Two hashes added: a hill-shaped height distribution.
    let heights: Vec<u16> = (0..100_000u32)
        .map(|i| {
            let a = i.wrapping_mul(2_654_435_761) >> 17;
            let b = (i ^ 0x5bd1_e995).wrapping_mul(2_246_822_519) >> 17;
            (a + b) as u16
        })
        .collect();
    let histogram: [AtomicU32; BUCKETS] = Default::default();
    let scores: Vec<u32> = (0..50_000).collect();
    let score_sum = AtomicU64::new(0);
    let mut image_sum = 0u64;
    let mut fullest = (0usize, 0u32);

    js.scope(|s| {
        // 1. In place, band by band.
        let bands: Vec<JobHandle> = image
            .chunks_mut(WIDTH * BAND_ROWS)
            .zip(&band_sums)
            .map(|(band, sum)| {
                s.schedule(move || {
                    band.iter_mut().for_each(brighten);
                    sum.store(band.iter().map(|&p| u64::from(p)).sum(), Relaxed);
                })
            })
            .collect();

        // 2. After every band: the total, into a local.
        let band_sums = &band_sums;
        let image_sum = &mut image_sum;
        s.schedule_after(&bands, move || {
            *image_sum = band_sums.iter().map(|b| b.load(Relaxed)).sum();
        });

        // 3. A parallel_for over a borrowed slice.
        let (heights, histogram) = (&heights, &histogram);
        let hist = s.parallel_for(0..heights.len(), Batch::Auto, move |i| {
            let bucket = usize::from(heights[i]) * BUCKETS / (usize::from(u16::MAX) + 1);
            histogram[bucket].fetch_add(1, Relaxed);
        });

        // 4. After the histogram: its fullest bucket.
        let fullest = &mut fullest;
        s.schedule_after(&[hist], move || {
            *fullest = histogram
                .iter()
                .map(|c| c.load(Relaxed))
                .enumerate()
                .max_by_key(|&(b, c)| (c, std::cmp::Reverse(b)))
                .unwrap();
        });

        // 5. A job that schedules more jobs into the scope.
        let (scores, score_sum) = (&scores, &score_sum);
        s.schedule(move || split_sum(s, scores, score_sum));
    });
    // The scope has returned: every job ran, and the borrows are over.

    let mut expected = original;
    expected.iter_mut().for_each(brighten);
    if let Some(i) = (0..image.len()).find(|&i| image[i] != expected[i]) {
        panic!(
            "pixel {i} is {}, expected {}: a band was not brightened exactly once",
            image[i], expected[i]
        );
    }
    let expected_sum: u64 = expected.iter().map(|&p| u64::from(p)).sum();
    assert_eq!(image_sum, expected_sum);

    let mut expected_hist = [0u32; BUCKETS];
    for &h in &heights {
        expected_hist[usize::from(h) * BUCKETS / (usize::from(u16::MAX) + 1)] += 1;
    }
    let hist: Vec<u32> = histogram.iter().map(|c| c.load(Relaxed)).collect();
    assert_eq!(hist, expected_hist);
    let (bucket, count) = fullest;
    assert_eq!(count, *expected_hist.iter().max().unwrap());
    assert_eq!(expected_hist[bucket], count);

    let expected_scores: u64 = scores.iter().map(|&x| u64::from(x)).sum();
    assert_eq!(score_sum.load(Relaxed), expected_scores);

    println!(
        "scope_borrow: {} workers; image {WIDTH}x{HEIGHT} brightened in {} band jobs, sum {image_sum}",
        js.workers(),
        HEIGHT / BAND_ROWS
    );
    println!("  heightmap histogram {hist:?}, fullest bucket {bucket} ({count})");
    println!(
        "  recursive split sum of {} scores: {expected_scores}",
        scores.len()
    );
    println!("scope_borrow: all results equal the serial computation");
}
