use jobsys::{Batch, JobSystem};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

#[test]
fn smoke() {
    for w in [0, 1, 3] {
        let js = JobSystem::builder().workers(w).build().unwrap();
        let c = Arc::new(AtomicUsize::new(0));
        let mut hs = vec![];
        for _ in 0..1000 {
            let c = c.clone();
            hs.push(js.schedule(move || {
                c.fetch_add(1, Ordering::Relaxed);
            }));
        }
        let c2 = c.clone();
        let after = js.schedule_after(&hs, move || assert_eq!(c2.load(Ordering::Relaxed), 1000));
        let c3 = c.clone();
        let p = js.parallel_for_after(&[after], 0..10000, Batch::Fixed(7), move |_| {
            c3.fetch_add(1, Ordering::Relaxed);
        });
        js.complete(p);
        assert_eq!(c.load(Ordering::Relaxed), 11000);
        let mut v = vec![0u32; 1000];
        js.scope(|s| {
            for (i, x) in v.iter_mut().enumerate() {
                s.schedule(move || *x = i as u32);
            }
        });
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u32));
        let (a, b) = js.join(|| 1, || 2);
        assert_eq!(a + b, 3);
        let h = js.schedule(|| panic!("boom"));
        let d = js.schedule_after(&[h], || {});
        let e = js.try_complete(d).unwrap_err();
        assert!(e.to_string().contains("boom"), "{e}");
        let e = js.try_complete(h).unwrap_err();
        assert!(e.to_string().contains("boom"), "{e}");
        println!("w={w} {:?}", js.stats());
    }
}
