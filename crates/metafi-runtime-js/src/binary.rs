//! Binary data in QuickJS values, read through QuickJS's C API: no JavaScript runs, and a value
//! that is not binary is told apart by its class without an exception. (rquickjs's
//! `Object::is_array_buffer` asks `JS_GetArrayBuffer`, which *throws* a `TypeError` — an
//! `Error` object with its stack trace, ≈ 3,500 instructions — for every other object, and
//! leaves it pending; asked of every object an `nk` argument holds, that was most of a small
//! conversion's cost.)
//!
//! Unsafe code: raw QuickJS calls on values the caller holds alive; each block says why it is
//! sound.
#![allow(unsafe_code)]

use std::ptr;

use rquickjs::{Ctx, qjs};

/// QuickJS's class id of plain objects (`JS_CLASS_OBJECT`, the first of its enum; not exported).
const PLAIN_OBJECT_CLASS: qjs::JSClassID = 1;

/// The bytes of an `ArrayBuffer` or `SharedArrayBuffer`, copied; `None` for any other value and
/// for a detached buffer.
pub(crate) fn buffer(ctx: &Ctx<'_>, value: qjs::JSValue) -> Option<Vec<u8>> {
    // SAFETY: `value` is a live value of `ctx`; the bytes are copied before any JavaScript runs;
    // the exception `JS_GetArrayBuffer` raises for a value that is no buffer (or is detached) is
    // taken and freed.
    unsafe {
        if !(qjs::JS_IsArrayBuffer(value) || maybe_shared_buffer(value)) {
            return None;
        }
        let raw = ctx.as_raw().as_ptr();
        let mut size: qjs::size_t = 0;
        let data = qjs::JS_GetArrayBuffer(raw, &mut size, value);
        if data.is_null() {
            qjs::JS_FreeValue(raw, qjs::JS_GetException(raw));
            return None;
        }
        Some(std::slice::from_raw_parts(data, usize::try_from(size).unwrap_or(0)).to_vec())
    }
}

/// What a typed array holds.
pub(crate) enum View {
    /// Not a typed array.
    None,
    /// The bytes of its view (whatever its element type), copied.
    Bytes(Vec<u8>),
    /// A view of a detached or shrunk buffer: QuickJS's `TypeError` is pending on the context
    /// (return `rquickjs::Error::Exception` to throw it, or take it).
    OutOfBounds,
}

/// The bytes of `value`'s view when it is a typed array of any element type (`Uint8Array`,
/// `Float64Array`, …; a `DataView` is not one).
pub(crate) fn view(ctx: &Ctx<'_>, value: qjs::JSValue) -> View {
    // SAFETY: as in `buffer`; the buffer value `JS_GetTypedArrayBuffer` returns is freed.
    unsafe {
        if qjs::JS_GetTypedArrayType(value) < 0 {
            return View::None;
        }
        let raw = ctx.as_raw().as_ptr();
        let (mut offset, mut length): (qjs::size_t, qjs::size_t) = (0, 0);
        let buffer =
            qjs::JS_GetTypedArrayBuffer(raw, value, &mut offset, &mut length, ptr::null_mut());
        if qjs::JS_IsException(buffer) {
            return View::OutOfBounds;
        }
        let mut size: qjs::size_t = 0;
        let data = qjs::JS_GetArrayBuffer(raw, &mut size, buffer);
        let view = if data.is_null() {
            View::OutOfBounds
        } else {
            let all = std::slice::from_raw_parts(data, usize::try_from(size).unwrap_or(0));
            let (offset, length) = (
                usize::try_from(offset).unwrap_or(usize::MAX),
                usize::try_from(length).unwrap_or(usize::MAX),
            );
            match offset
                .checked_add(length)
                .and_then(|end| all.get(offset..end))
            {
                Some(bytes) => View::Bytes(bytes.to_vec()),
                // QuickJS checked the view's bounds above; kept as its error, not a panic.
                None => {
                    // Leaves the error pending (`JS_EXCEPTION`, returned, holds nothing).
                    qjs::JS_ThrowRangeError(raw, c"typed array outside its buffer".as_ptr());
                    View::OutOfBounds
                }
            }
        };
        qjs::JS_FreeValue(raw, buffer);
        view
    }
}

/// Whether `value` is a `Uint8Array` (not `Uint8ClampedArray`).
pub(crate) fn is_uint8_array(value: qjs::JSValue) -> bool {
    // SAFETY: only reads the tag and class.
    unsafe { qjs::JS_GetTypedArrayType(value) == qjs::JSTypedArrayEnum_JS_TYPED_ARRAY_UINT8 as i32 }
}

/// Whether `value` may be a `SharedArrayBuffer`: an object that is neither plain nor an array
/// (whose class id QuickJS does not export).
unsafe fn maybe_shared_buffer(value: qjs::JSValue) -> bool {
    // SAFETY: only reads the tag and class.
    unsafe {
        qjs::JS_IsObject(value)
            && !qjs::JS_IsArray(value)
            && qjs::JS_GetClassID(value) != PLAIN_OBJECT_CLASS
    }
}
