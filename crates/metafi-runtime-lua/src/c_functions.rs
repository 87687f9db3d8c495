//! The standard C functions whose running time grows with their input, each behind a check of
//! the running call's deadline.
//!
//! The budget hook only runs between VM instructions, once the watcher has seen the call
//! overdue (`super::budget`), and a C function is one instruction however long it runs. With
//! the hook once set every 10,000 instructions, a loop such as
//! `while true do local u = big:upper() end` met it only after thousands of multi-millisecond
//! calls, seconds past the deadline. Here each such function is replaced by a C closure that
//! reads the deadline and raises the budget error once it has passed, else calls the original,
//! so such a loop ends at its first call past the deadline, without waiting for the watcher.
//!
//! The wrapper is a raw `lua_CFunction` rather than an mlua callback, which would convert every
//! argument and result to and from Rust values on each call; the raw closure only moves the
//! original onto the stack under the arguments and calls it in protected mode (≈ 375
//! instructions a call: `docs/RUNTIME.md`, "Measured").
//!
//! Must run before the sandbox captures `load`, `loadstring` and `collectgarbage`, and before
//! the library is frozen.

// The wrapper is a C function: it reads its upvalues and calls the original through the Lua C
// API. Every unsafe block below says which invariant it rests on; none owns a Rust value while
// a Lua call may raise (`crate::tape`'s rule).
#![allow(unsafe_code)]

use std::ffi::c_int;
use std::rc::Rc;

use mlua::{Function, Lua, Table, Value, ffi};

use super::BudgetExceeded;
use super::budget::Deadline;

/// The functions checked, by table (`None`: a global). Left out: those whose work is constant
/// or bounded by a small fixed limit (`math`, `bit`, `string.len`, `select`, `rawget`, …) and
/// those whose long work is Lua code the hook already reaches (`pcall`, `coroutine.resume`,
/// `table.foreach`, `table.foreachi`). The pattern functions are bounded on their own (`super::strings`), the
/// `nakama` functions check the deadline themselves (`super::check_deadline`).
pub(super) const CHECKED: &[(Option<&str>, &[&str])] = &[
    (
        Some("string"),
        &[
            "upper", "lower", "rep", "reverse", "sub", "format", "byte", "char",
        ],
    ),
    (
        Some("table"),
        &["concat", "sort", "insert", "remove", "maxn"],
    ),
    (Some("os"), &["date"]),
    (
        None,
        &[
            "unpack",
            "tostring",
            "tonumber",
            "next",
            "load",
            "loadstring",
            "collectgarbage",
        ],
    ),
];

/// The deadline cell the wrappers read, kept alive with the Lua state (mlua app data): the
/// wrappers hold a bare pointer to it.
struct DeadlineCell(#[allow(dead_code)] Rc<Deadline>);

/// Replaces every function of [`CHECKED`] by its deadline-checked wrapper.
pub(super) fn install(lua: &Lua, deadline: &Rc<Deadline>) -> mlua::Result<()> {
    lua.set_app_data(DeadlineCell(deadline.clone()));
    let cell = Rc::as_ptr(deadline);
    let budget = Value::Error(Box::new(mlua::Error::external(BudgetExceeded)));
    let globals = lua.globals();
    for (table, names) in CHECKED {
        let table: Table = match table {
            Some(name) => globals.raw_get(*name)?,
            None => globals.clone(),
        };
        for name in *names {
            let original: Value = table.raw_get(*name)?;
            let Value::Function(original) = original else {
                continue;
            };
            table.raw_set(*name, wrap(lua, original, budget.clone(), cell)?)?;
        }
    }
    Ok(())
}

/// The C closure `guarded` with upvalues (original, budget error, deadline cell).
fn wrap(
    lua: &Lua,
    original: Function,
    budget: Value,
    cell: *const Deadline,
) -> mlua::Result<Function> {
    // SAFETY: `exec_raw` pushes the two arguments and leaves room for three more slots; the
    // closure pops the two and the pointer it pushes and leaves the one function `exec_raw`
    // returns. `cell` stays valid as long as the state: `install` keeps its `Rc` in app data.
    unsafe {
        lua.exec_raw::<Function>((original, budget), |state| {
            ffi::lua_pushlightuserdata(state, cell.cast_mut().cast());
            ffi::lua_pushcclosure(state, guarded, 3);
        })
    }
}

/// Raises the budget error (upvalue 2) past the deadline (upvalue 3), else calls the original
/// (upvalue 1) with every argument and returns all its results.
unsafe extern "C-unwind" fn guarded(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: upvalue 3 is the light userdata `wrap` stored, a pointer to the deadline cell,
    // which lives as long as the state (see `install`); only this thread touches the state.
    let over = unsafe {
        let cell = ffi::lua_touserdata(state, ffi::lua_upvalueindex(3))
            .cast::<Deadline>()
            .cast_const();
        (*cell).is_over()
    };
    // SAFETY: a C function is given LUA_MINSTACK (20) free slots; each branch pushes one value.
    // No Rust value that needs dropping is alive across `lua_error` or `lua_call`, which may
    // unwind through this frame (hence the "C-unwind" ABI).
    unsafe {
        if over {
            ffi::lua_pushvalue(state, ffi::lua_upvalueindex(2));
            ffi::lua_error(state);
        }
        let args = ffi::lua_gettop(state);
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
        ffi::lua_insert(state, 1);
        if ffi::lua_pcall(state, args, ffi::LUA_MULTRET, 0) != 0 {
            name_argument_error(state);
            ffi::lua_error(state);
        }
        ffi::lua_gettop(state)
    }
}

/// LuaJIT names the function and the caller's line in an argument error only when a Lua
/// function called it; called from the wrapper, `s:rep()` would fail with "bad argument #2 to
/// '?'". Rewrites such an error (on top of the stack) as LuaJIT would have written it for the
/// script's call of the wrapper: `m.lua:3: bad argument #1 to 'rep' (number expected, got no
/// value)`, or "calling 'rep' on bad self (…)" for the receiver of a method call.
///
/// # Safety
/// Called from `guarded` with the error value on top of the stack; leaves one value there.
unsafe fn name_argument_error(state: *mut ffi::lua_State) {
    const PREFIX: &[u8] = b"bad argument #";
    const UNNAMED: &[u8] = b" to '?'";
    // SAFETY: the value on top is read only when it is a string (no conversion in place), and
    // it stays on the stack — so the slices of it stay valid — until the new message is made.
    // The message is pushed in pieces that Lua owns or this function borrows: a memory error
    // raised by a push unwinds a frame that owns nothing (`crate::tape`'s rule).
    unsafe {
        if ffi::lua_type(state, -1) != ffi::LUA_TSTRING {
            return;
        }
        let mut len = 0;
        let text = ffi::lua_tolstring(state, -1, &mut len);
        let text = std::slice::from_raw_parts(text.cast::<u8>(), len);
        let Some(rest) = text.strip_prefix(PREFIX) else {
            return;
        };
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let Some(detail) = rest[digits..].strip_prefix(UNNAMED) else {
            return;
        };
        let Some(number) = std::str::from_utf8(&rest[..digits])
            .ok()
            .and_then(|n| n.parse::<u32>().ok())
            // LuaJIT never writes `#0`; a script's own error text may (`method` would underflow).
            .filter(|&n| n > 0)
        else {
            return;
        };
        let mut debug: ffi::lua_Debug = std::mem::zeroed();
        if ffi::lua_getstack(state, 0, &mut debug) == 0
            || ffi::lua_getinfo(state, c"n".as_ptr(), &mut debug) == 0
            || debug.name.is_null()
        {
            return;
        }
        let name = std::ffi::CStr::from_ptr(debug.name).to_bytes();
        let method = !debug.namewhat.is_null()
            && std::ffi::CStr::from_ptr(debug.namewhat).to_bytes() == b"method";
        let push = |bytes: &[u8]| {
            ffi::lua_pushlstring(state, bytes.as_ptr().cast(), bytes.len());
        };
        ffi::luaL_checkstack(state, 7, c"no room for the error".as_ptr());
        let message_at = ffi::lua_gettop(state);
        ffi::luaL_where(state, 1);
        match (method, number) {
            (true, 1) => {
                push(b"calling '");
                push(name);
                push(b"' on bad self");
            }
            (method, n) => {
                push(b"bad argument #");
                let n = if method { n - 1 } else { n };
                ffi::lua_pushinteger(state, ffi::lua_Integer::from(n));
                push(b" to '");
                push(name);
                push(b"'");
            }
        }
        push(detail);
        // The position and the pieces, into one string; then the original message goes.
        ffi::lua_concat(state, ffi::lua_gettop(state) - message_at);
        ffi::lua_remove(state, message_at);
    }
}
