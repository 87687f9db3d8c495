//! [`QuickJsAllocator`]: QuickJS's memory from mimalloc, the allocator the rest of the server
//! uses (`metafi_core::ServerAllocator`), instead of the C library's `malloc` that QuickJS
//! calls by default.
//!
//! QuickJS carves blocks of up to 512 bytes out of 4 KiB arenas of its own and asks the
//! allocator for those arenas and for every larger block (property arrays past a few dozen
//! properties, strings, bytecode); it frees an arena as soon as its last block is freed, so a
//! call whose objects are the only ones of a size class allocates and frees a whole arena. With
//! glibc's `malloc` each of those went through its bins and consolidation; mimalloc's thread
//! -local free lists take them on the fast path. Counted in `docs/RUNTIME.md`, "The hook call
//! path and its cost".
//!
//! The VM's memory cap is unaffected: QuickJS counts what it allocates (with the usable size
//! this allocator reports) against `set_memory_limit` before it calls the allocator.

// The allocator interface is unsafe by nature: each function forwards to mimalloc's
// counterpart with the pointer QuickJS gave, which this allocator handed out.
#![allow(unsafe_code)]

use std::ffi::c_void;

use libmimalloc_sys as mi;
use rquickjs::allocator::Allocator;

// libmimalloc-sys declares these two only under its `extended` feature, which would change the
// build of every crate above `metafi-core` (the one that links mimalloc) for two declarations.
unsafe extern "C" {
    fn mi_calloc(count: usize, size: usize) -> *mut c_void;
    fn mi_usable_size(p: *const c_void) -> usize;
}

/// QuickJS's allocator: mimalloc (module docs).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct QuickJsAllocator;

// SAFETY: mimalloc returns null or a block of at least the size asked, aligned to at least 8
// bytes (the `usize` alignment the trait requires; 16 for sizes that are multiples of 16, as
// the C library's `malloc`); `mi_usable_size` is the usable size of any block it handed out;
// `dealloc` and `realloc` only get blocks of this allocator (the trait's contract).
unsafe impl Allocator for QuickJsAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        unsafe { mi::mi_malloc(size).cast() }
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        // mimalloc's `calloc`: null when `count * size` overflows.
        unsafe { mi_calloc(count, size).cast() }
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        unsafe { mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast() }
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        unsafe { mi_usable_size(ptr.cast::<c_void>().cast_const()) }
    }
}

#[cfg(test)]
mod tests {
    use rquickjs::{Context, Runtime};

    use super::*;

    #[test]
    fn blocks_are_usable_to_their_size_zeroed_by_calloc_and_kept_by_realloc() {
        let mut a = QuickJsAllocator;
        unsafe {
            let p = a.calloc(3, 40);
            assert!(!p.is_null());
            assert!(QuickJsAllocator::usable_size(p) >= 120);
            assert_eq!(p.align_offset(8), 0);
            assert!(std::slice::from_raw_parts(p, 120).iter().all(|&b| b == 0));
            p.write_bytes(7, 120);
            let q = a.realloc(p, 5000);
            assert!(QuickJsAllocator::usable_size(q) >= 5000);
            assert!(std::slice::from_raw_parts(q, 120).iter().all(|&b| b == 7));
            a.dealloc(q);
            assert!(
                a.calloc(usize::MAX, 2).is_null(),
                "an overflowing size is refused"
            );
        }
    }

    #[test]
    fn a_runtime_on_it_runs_scripts_and_its_memory_cap_still_stops_a_script_cleanly() {
        let runtime = Runtime::new_with_alloc(QuickJsAllocator).unwrap();
        runtime.set_memory_limit(4 << 20);
        let context = Context::full(&runtime).unwrap();
        context.with(|ctx| {
            let sum: i32 = ctx
                .eval("var o = {}; for (var i = 0; i < 1000; i++) o['k' + i] = i; Object.keys(o).length")
                .unwrap();
            assert_eq!(sum, 1000);
            // Past the cap: QuickJS's out-of-memory error, which the script can catch, and the
            // runtime goes on.
            let caught: String = ctx
                .eval(
                    "var a = []; try { for (;;) a.push('x'.repeat(1 << 16) + a.length); } \
                     catch (e) { a = null; String(e) }",
                )
                .unwrap();
            assert!(caught.contains("out of memory"), "{caught}");
            let after: i32 = ctx.eval("[1, 2, 3].length").unwrap();
            assert_eq!(after, 3);
        });
        let usage = runtime.memory_usage();
        assert!(
            usage.malloc_size > 0 && usage.malloc_size < 4 << 20,
            "{usage:?}"
        );
    }
}
