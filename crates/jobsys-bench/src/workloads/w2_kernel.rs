//! W2's per-element work, apart from `parallel_for` so that its floor
//! (`static_floor`) runs the same kernel without importing the workload
//! that imports the floor.

/// The per-element work, shared by every implementation.
#[inline(always)]
pub fn kernel(x: &mut u32, m: u32) {
    let mut v = *x;
    for _ in 0..20 {
        v = v.wrapping_mul(m).wrapping_add(1);
    }
    *x = v;
}

/// [`kernel`] over a slice.
#[inline(always)]
pub fn kernel_slice(xs: &mut [u32], m: u32) {
    for x in xs {
        kernel(x, m);
    }
}
