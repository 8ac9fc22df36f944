//! Loom model of the store's remote-free stack.

use super::*;
use loom::sync::Arc as LArc;
use loom::thread;

// Remote frees race with the owner draining the stack: every slot freed
// remotely is allocated again exactly once.
#[test]
fn remote_free_is_not_lost() {
    loom::model(|| {
        let slots: &'static [Slot] = Box::leak(
            (0..2)
                .map(|_| Slot::new(0))
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        );
        let store = LArc::new(Store::new(0));
        let s2 = store.clone();
        let t = thread::spawn(move || {
            for s in slots {
                // SAFETY: the slots are owned by this thread until pushed.
                unsafe { s2.push_free(s, false) };
            }
        });
        let mut seen = Vec::new();
        while seen.len() < 2 {
            let got = store.remote_free.swap(ptr::null_mut(), Ordering::Acquire);
            let mut p = got;
            while !p.is_null() {
                seen.push(p as *const Slot);
                // SAFETY: `p` was pushed by the other thread with a
                // Release CAS that our Acquire swap synchronised with.
                p = unsafe { (*p).link.load(Ordering::Relaxed) };
            }
            thread::yield_now();
        }
        t.join().unwrap();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 2);
    });
}
