//! Declared access (src/access): the unsafe parts under Miri.

use super::*;

#[test]
fn access_writers_and_readers_hand_out_exclusive_references() {
    use crate::Resource;
    let js = system(2);
    let r = Resource::new(vec![0u64; 4]);
    let mut hs = Vec::new();
    for k in 0..n(50, 6) as u64 {
        hs.push(
            js.job()
                .access(r.write())
                .schedule(move |v| v.iter_mut().for_each(|x| *x += k)),
        );
        for _ in 0..2 {
            hs.push(
                js.job()
                    .access(r.read())
                    .schedule(|v| assert!(v.windows(2).all(|w| w[0] == w[1]))),
            );
        }
    }
    js.complete(js.combine(&hs));
    let total: u64 = (0..n(50, 6) as u64).sum();
    assert_eq!(*r.read_now(&js), vec![total; 4]);
}

#[test]
fn access_write_each_pieces_touch_disjoint_elements() {
    use crate::Resource;
    let js = system(2);
    let len = n(1000, 24);
    let v = Resource::new(vec![0u32; len]);
    let a = js
        .job()
        .access(v.write_each())
        .parallel_for(0..len, Batch::Fixed(3), |i, x| *x += i as u32);
    let b =
        js.job()
            .access(v.write_each())
            .parallel_for_chunked(0..len, Batch::Fixed(5), |r, xs| {
                for (x, i) in xs.iter_mut().zip(r) {
                    *x += i as u32;
                }
            });
    js.complete(js.combine(&[a, b]));
    let g = v.read_now(&js);
    assert!(g.iter().enumerate().all(|(i, &x)| x == 2 * i as u32));
}

#[test]
fn access_now_guards_order_with_jobs() {
    use crate::Resource;
    let js = system(1);
    let r = Resource::new(1u32);
    let w = js.job().access(r.write()).schedule(|v| *v += 1);
    {
        let mut g = r.write_now(&js); // waits for `w`
        *g *= 10;
        let later = js.job().access(r.write()).schedule(|v| *v += 1);
        assert!(matches!(js.try_complete(later), Err(JobError::WaitOnSelf)));
    }
    assert!(js.is_complete(w));
    assert_eq!(*r.read_now(&js), 21);
}

/// A `write_now` whose wait fails (a wait on oneself) keeps later jobs
/// after the conflicting jobs it waited for: a writer scheduled next never
/// overlaps, nor precedes, a reader scheduled before it (Miri and ASan see
/// a `&mut` beside a `&` if it does).
#[test]
fn access_a_failed_guard_wait_keeps_the_order() {
    use crate::Resource;
    for workers in [0, 1] {
        let js = system(workers);
        let a = Resource::new(0u32);
        let b = Resource::new(vec![1u32; 8]);
        let g = a.write_now(&js);
        let seen = Arc::new(AtomicUsize::new(0));
        let s = seen.clone();
        let reader = js
            .job()
            .access((a.read(), b.read()))
            .schedule(move |(_, v)| s.store(v.iter().map(|&x| x as usize).sum(), Ordering::SeqCst));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(b.write_now(&js))));
        assert!(r.is_err(), "the wait on oneself panics");
        let writer = js
            .job()
            .access(b.write_each())
            .parallel_for(0..8, Batch::Fixed(2), |_, x| *x = 2);
        assert!(!js.is_complete(writer), "the writer ran before the reader");
        drop(g);
        js.complete(writer);
        js.complete(reader);
        assert_eq!(
            seen.load(Ordering::SeqCst),
            8,
            "the reader saw the later write"
        );
    }
}

#[test]
fn access_history_stays_bounded() {
    use crate::Resource;
    let js = system(1);
    let r = Resource::new(0u32);
    // A burst of readers, all unfinished for a while...
    let burst: Vec<_> = (0..n(1000, 30))
        .map(|_| js.job().access(r.read()).schedule(|_| {}))
        .collect();
    js.complete(js.combine(&burst));
    // ...then a steady frame loop: finished readers are dropped again.
    for _ in 0..n(2000, 40) {
        let h = js.job().access(r.read()).schedule(|_| {});
        js.complete(h);
    }
    let (_, readers) = r.history_size();
    assert!(readers <= 16, "{readers} readers kept");
    js.complete(js.job().access(r.write()).schedule(|_| {}));
    assert_eq!(r.history_size().1, 0);
}

#[test]
fn access_panicking_writer_poisons_and_readers_fail() {
    use crate::Resource;
    let js = system(1);
    let r = Resource::new(String::from("ok"));
    let w = js.job().access(r.write()).schedule(|s| {
        s.push_str(" half");
        panic!("writer broke");
    });
    let rd = js.job().access(r.read()).schedule(|_| unreachable!());
    assert!(js.try_complete(rd).is_err());
    assert!(js.try_complete(w).is_err());
    assert!(r.is_poisoned());
    r.clear_poison();
    assert_eq!(*r.read_now(&js), "ok half");
}
