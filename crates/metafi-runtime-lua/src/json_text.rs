//! `nk.json_decode` and `nk.json_encode` straight between JSON text and Lua values.
//!
//! Through the generic binding (`nk_binding::call_row`), decoding built a `serde_json::Value`
//! tree, copied it into an [`NkValue`](metafi_runtime::nk_api::NkValue) tree and pushed that;
//! encoding read the table into an `NkValue` tree, copied it into a `serde_json::Value` tree
//! and printed that. Here the parser pushes each value as it reads it
//! ([`raw_push::push_json_text`]) and the table is written as text as it is walked
//! ([`raw_read::json_text_at`]). The rows' own functions (`metafi_runtime::nk_api::json`)
//! stay the definition: the same rules, the same errors word for word (the tests run both on
//! the same inputs), and any call whose arguments are not the usual ones — `json_decode` with
//! anything but one non-empty UTF-8 string, `json_encode` with anything but one value — goes
//! to the row itself, so its argument errors come from one place.
//!
//! Neither lets a Lua error unwind a frame that owns something (`crate::tape`): the decoded
//! value is recorded by the parser and built in protected calls, and the encoded text and
//! every error message are copied into Lua from the VM's binding, not from this frame.

// C functions over the Lua C API; every unsafe block says which invariant it rests on.
#![allow(unsafe_code)]

use std::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};

use metafi_runtime::nk_api::json;
use mlua::ffi;

use crate::nk_binding::{call_row, enter, raise, raise_panic};
use crate::raw_push::DecodeError;
use crate::raw_read::TextError;
use crate::tape::Failed;
use crate::{raw_push, raw_read};

/// The C function that serves the row named `name`, when it has one of its own.
pub(crate) fn function(name: &str) -> Option<ffi::lua_CFunction> {
    match name {
        "json_decode" => Some(decode),
        "json_encode" => Some(encode),
        _ => None,
    }
}

/// `nk.json_decode(text)`.
unsafe extern "C-unwind" fn decode(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: bound by `nk_binding::c_function` with the `json_decode` row's upvalues; the
    // text is read while it stays on the stack (argument 1, never popped before the push
    // ends). `push_json_text` raises nothing (its tables are built in protected calls); what
    // it owned is dropped when it returns, so the errors below unwind only this frame, which
    // holds borrowed values.
    unsafe {
        let text = text_argument(state);
        let Some(text) = text else {
            return call_row(state);
        };
        let up = enter(state);
        match raw_push::push_json_text(state, text, up.binding.tape_runner()) {
            Ok(()) => 1,
            // The error value (out of memory) is on top, as the failed build left it.
            Err(DecodeError::Lua(Failed::Lua)) => ffi::lua_error(state),
            Err(DecodeError::Lua(Failed::Stack)) => {
                ffi::lua_settop(state, 1);
                raise(
                    state,
                    &up,
                    "stack overflow (JSON value too deep)".to_owned(),
                )
            }
            Err(DecodeError::Json(e)) => {
                ffi::lua_settop(state, 1);
                let message = json::decode_failure(&e, text).lua_message(up.name);
                drop(e);
                raise(state, &up, message)
            }
        }
    }
}

/// The only argument when it is a non-empty UTF-8 string (what `json_decode` accepts).
///
/// # Safety
/// `state` is the state of a running C function; the slice lives while argument 1 does.
unsafe fn text_argument<'a>(state: *mut ffi::lua_State) -> Option<&'a str> {
    unsafe {
        if ffi::lua_gettop(state) != 1 || ffi::lua_type(state, 1) != ffi::LUA_TSTRING {
            return None;
        }
        let mut len = 0usize;
        let ptr = ffi::lua_tolstring(state, 1, &mut len);
        if ptr.is_null() || len == 0 {
            return None;
        }
        std::str::from_utf8(std::slice::from_raw_parts(ptr.cast::<u8>(), len)).ok()
    }
}

/// `nk.json_encode(value)`.
unsafe extern "C-unwind" fn encode(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: bound by `nk_binding::c_function` with the `json_encode` row's upvalues.
    unsafe {
        if ffi::lua_gettop(state) != 1 {
            return call_row(state);
        }
        let up = enter(state);
        // With the room reserved the walk raises no Lua error, so it may run under
        // `catch_unwind` (see `nk_binding::call_row`).
        raw_read::reserve(state);
        let written = catch_unwind(AssertUnwindSafe(|| {
            let mut out = Vec::with_capacity(64);
            raw_read::json_text_at(state, 1, &mut out).map(|()| out)
        }));
        let message = match written {
            Ok(Ok(out)) => {
                // Parked in the binding while copied: a memory error unwinds this frame.
                up.binding.push_text(state, out);
                return 1;
            }
            // A walk error (too deep, too large) reads as the row's argument conversion
            // did; a number JSON cannot hold as the row's own failure.
            Ok(Err(TextError::Walk(message))) => message,
            Ok(Err(TextError::NonFinite(reason))) => {
                json::encode_failure(&reason).lua_message(up.name)
            }
            Err(panic) => return raise_panic(state, &up, panic),
        };
        raise(state, &up, message)
    }
}
