//! [`ServerAllocator`]: the server's global allocator — mimalloc, asked the way its fast path
//! wants.
//!
//! The `mimalloc` crate's `GlobalAlloc` calls `mi_malloc_aligned(size, align)` for every
//! layout, and mimalloc's aligned entry takes a generic path even for the 8- and 16-byte
//! alignments nearly every Rust allocation has. Plain `mi_malloc` already returns blocks
//! aligned to 16 bytes for any size that is a multiple of 16 (and to 8 otherwise), so, like
//! Rust's own `System` allocator does with `malloc`, a layout whose alignment is at most 16
//! and at most its size goes to `mi_malloc` / `mi_zalloc` / `mi_realloc`; any other layout to
//! the aligned functions. Counted with callgrind (docs/RUNTIME.md, "The hook call path and its
//! cost"): a Lua before+after hook pair 44,200 → 40,500 instructions, a native pair 6,300 →
//! 5,600.
//!
//! The server binary installs it (`crates/metafi-server/src/main.rs`); benchmarks that count
//! the server's instructions install the same one.

// The GlobalAlloc contract is unsafe by nature; each function forwards to mimalloc's
// counterpart with the same pointer and a size and alignment it accepts.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// The largest alignment `mi_malloc` guarantees by itself (`MI_MAX_ALIGN_SIZE` on 64-bit).
const MI_MAX_ALIGN: usize = 16;

/// mimalloc through its unaligned fast path where the layout allows (module docs).
#[derive(Debug, Default, Clone, Copy)]
pub struct ServerAllocator;

/// Whether `mi_malloc` of `size` bytes is aligned enough for `align`: the rule of Rust's
/// `System` allocator (`align <= MIN_ALIGN && align <= size`), with mimalloc's 16.
#[inline]
fn plain(align: usize, size: usize) -> bool {
    align <= MI_MAX_ALIGN && align <= size
}

// SAFETY: every function forwards to mimalloc with the caller's pointer and a size, and
// either an alignment mimalloc's aligned functions accept (any power of two) or none where
// `plain` holds, in which case mimalloc's own guarantee covers the alignment asked.
unsafe impl GlobalAlloc for ServerAllocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe {
            if plain(layout.align(), layout.size()) {
                mi::mi_malloc(layout.size()).cast()
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe {
            if plain(layout.align(), layout.size()) {
                mi::mi_zalloc(layout.size()).cast()
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe {
            if plain(layout.align(), new_size) {
                mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every alignment and a spread of sizes come back aligned as asked, zeroed when asked,
    /// and keep their bytes through a realloc to a smaller and a larger size class.
    #[test]
    fn blocks_are_aligned_zeroed_and_kept_through_realloc() {
        let a = ServerAllocator;
        for align in [1usize, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [
                1usize, 7, 8, 15, 16, 24, 40, 48, 100, 144, 1000, 5000, 70_000,
            ] {
                let size = size.next_multiple_of(align);
                let layout = Layout::from_size_align(size, align).unwrap();
                for new_size in [size / 2 + 1, size * 3 + align] {
                    let new_size = new_size.next_multiple_of(align);
                    // SAFETY: each block is used within its size and freed once, with its
                    // current layout.
                    unsafe {
                        let p = a.alloc_zeroed(layout);
                        assert!(!p.is_null());
                        assert_eq!(p as usize % align, 0, "align {align} size {size}");
                        assert!(std::slice::from_raw_parts(p, size).iter().all(|b| *b == 0));
                        for i in 0..size {
                            *p.add(i) = i as u8;
                        }
                        let q = a.realloc(p, layout, new_size);
                        assert!(!q.is_null());
                        assert_eq!(q as usize % align, 0, "realloc, align {align}, {new_size}");
                        for i in 0..size.min(new_size) {
                            assert_eq!(*q.add(i), i as u8);
                        }
                        a.dealloc(q, Layout::from_size_align(new_size, align).unwrap());
                        let r = a.alloc(layout);
                        assert_eq!(r as usize % align, 0, "alloc, align {align} size {size}");
                        a.dealloc(r, layout);
                    }
                }
            }
        }
    }
}
