//! How large buffers are laid out in memory.

/// Asks the kernel to back a large buffer with huge pages (where it is set to on request), so
/// random lookups across it do not each miss the TLB. Only advice: nothing changes if refused.
pub fn advise_huge_pages<T>(buffer: &[T]) {
    const HUGE: usize = 2 << 20;
    let start = buffer.as_ptr() as usize;
    let end = start + std::mem::size_of_val(buffer);
    let (first, last) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
    if last > first {
        // SAFETY: the range lies inside `buffer`'s allocation; MADV_HUGEPAGE changes only how
        // the kernel backs those pages, never their contents.
        unsafe {
            libc::madvise(first as *mut libc::c_void, last - first, libc::MADV_HUGEPAGE);
        }
    }
}

/// Starts loading the cache line of `buffer[index]` (its value is not needed yet): on random
/// lookups known a few steps ahead, the misses then overlap instead of coming one by one.
#[inline]
pub fn preload<T>(buffer: &[T], index: usize) {
    if index >= buffer.len() {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; SSE is part of every x86-64 target, and the address
    // is inside `buffer`.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(buffer.as_ptr().add(index).cast());
    }
}
