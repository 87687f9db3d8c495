//! Lua tables → [`NkValue`] read in one call through the Lua C API.
//!
//! Walking a table through mlua's safe API (`Table::pairs`, `raw_get`) turns every key and
//! value into an mlua `Value` — a reference slot, a stack move and a drop each — and walks the
//! table twice (once for its largest index). For a before hook's request of a dozen fields
//! that was a third of a Lua hook pair's instructions (`docs/RUNTIME.md`, "The hook call path
//! and its cost"), and every `nk` call with a table argument paid it too. Here the table is
//! read with `lua_next`/`lua_rawgeti` inside one `Lua::exec_raw`; only Rust values come out.
//!
//! The rules are [`crate::nk_value::to_nk`]'s (stated there); the tests compare both on the
//! same tables. Nothing here raises a Lua error: the walk only reads (no string conversion of
//! number keys in place, no allocation on the Lua side), and stack room is asked for with
//! `lua_checkstack`, whose failure comes back as a Rust error.

// Every unsafe block reads the stack of the state `exec_raw` hands over, within room
// reserved by `lua_checkstack`.
#![allow(unsafe_code)]

use std::ffi::c_int;

use metafi_runtime::nk_api::{NkMap, NkValue, ValueBudget};
use mlua::{Lua, Table, ffi};

use crate::convert::MAX_DEPTH;

/// `table` as an [`NkValue`] at nesting `depth`, its entries charged to `budget`.
pub(crate) fn table(
    lua: &Lua,
    table: &Table,
    depth: usize,
    budget: &mut ValueBudget,
) -> mlua::Result<NkValue> {
    let mut read = Err(String::new());
    // SAFETY: `exec_raw` pushes `table` onto the stack of `state` (live for the closure's
    // duration); `walk` reads it and leaves the stack as it found it.
    unsafe {
        lua.exec_raw::<()>(table, |state| {
            let at = ffi::lua_gettop(state);
            read = walk_table(state, at, depth, budget);
        })?;
    }
    read.map_err(mlua::Error::runtime)
}

/// The value at stack index `at` (absolute).
///
/// # Safety
/// `state` is a live Lua state and `at` a valid absolute index on its stack.
unsafe fn walk(
    state: *mut ffi::lua_State,
    at: c_int,
    depth: usize,
    budget: &mut ValueBudget,
) -> Result<NkValue, String> {
    unsafe {
        Ok(match ffi::lua_type(state, at) {
            ffi::LUA_TBOOLEAN => NkValue::Bool(ffi::lua_toboolean(state, at) != 0),
            ffi::LUA_TNUMBER => number(ffi::lua_tonumber(state, at)),
            ffi::LUA_TSTRING => {
                let bytes = bytes(state, at);
                match std::str::from_utf8(bytes) {
                    Ok(text) => NkValue::Str(text.to_owned()),
                    Err(_) => NkValue::Bytes(bytes.to_vec()),
                }
            }
            ffi::LUA_TTABLE => walk_table(state, at, depth, budget)?,
            ffi::LUA_TFUNCTION => {
                NkValue::Str(format!("function: {:p}", ffi::lua_topointer(state, at)))
            }
            _ => NkValue::Nil,
        })
    }
}

/// # Safety
/// As [`walk`]; the value at `at` is a table.
unsafe fn walk_table(
    state: *mut ffi::lua_State,
    at: c_int,
    depth: usize,
    budget: &mut ValueBudget,
) -> Result<NkValue, String> {
    if depth >= MAX_DEPTH {
        return Err(format!(
            "table nesting deeper than {MAX_DEPTH} levels (a table that contains itself?)"
        ));
    }
    unsafe {
        // A key and a value while iterating, an item while reading a list.
        if ffi::lua_checkstack(state, 3) == 0 {
            return Err("table nesting too deep for the Lua stack".into());
        }
        let mut maxn: i64 = 0;
        ffi::lua_pushnil(state);
        while ffi::lua_next(state, at) != 0 {
            if let Some(i) = positive_integer(state, -2)
                && i > maxn
            {
                maxn = i;
            }
            ffi::lua_settop(state, -2);
        }
        if maxn > 0 {
            if maxn > 1 << 24 {
                return Err(
                    "array too sparse to convert: its largest index is over 16777216".into(),
                );
            }
            budget.take(maxn as usize)?;
            let mut items = Vec::with_capacity(maxn as usize);
            for i in 1..=maxn {
                ffi::lua_rawgeti(state, at, i as ffi::lua_Integer);
                let item = walk(state, ffi::lua_gettop(state), depth + 1, budget);
                ffi::lua_settop(state, -2);
                items.push(item?);
            }
            return Ok(NkValue::List(items));
        }
        let mut map = NkMap::new();
        ffi::lua_pushnil(state);
        while ffi::lua_next(state, at) != 0 {
            let key = key_text(state, -2);
            let item = budget
                .take(1)
                .and_then(|()| walk(state, ffi::lua_gettop(state), depth + 1, budget));
            match item {
                Ok(item) => {
                    map.insert_data(key, item);
                    ffi::lua_settop(state, -2);
                }
                Err(e) => {
                    // The key and the value: the stack as it was found.
                    ffi::lua_settop(state, -3);
                    return Err(e);
                }
            }
        }
        Ok(NkValue::Map(map))
    }
}

/// A map key's text, as `to_nk` spells it: strings as they are (lossy UTF-8), integral numbers
/// as integers, other numbers as Rust prints them, booleans, otherwise the type's name.
///
/// # Safety
/// As [`walk`]; `at` may be relative (read only, never converted in place: a number key
/// turned into a string would break `lua_next`).
unsafe fn key_text(state: *mut ffi::lua_State, at: c_int) -> String {
    unsafe {
        match ffi::lua_type(state, at) {
            ffi::LUA_TSTRING => String::from_utf8_lossy(bytes(state, at)).into_owned(),
            ffi::LUA_TNUMBER => {
                let n = ffi::lua_tonumber(state, at);
                // mlua's integer test (`-0.0` stays a number and prints as `-0`).
                match integer(n).filter(|i| (*i as f64).to_bits() == n.to_bits()) {
                    Some(i) => i.to_string(),
                    None => n.to_string(),
                }
            }
            ffi::LUA_TBOOLEAN => (ffi::lua_toboolean(state, at) != 0).to_string(),
            ffi::LUA_TTABLE => "table".into(),
            ffi::LUA_TFUNCTION => "function".into(),
            ffi::LUA_TUSERDATA => "userdata".into(),
            ffi::LUA_TLIGHTUSERDATA => "lightuserdata".into(),
            ffi::LUA_TTHREAD => "thread".into(),
            _ => "other".into(),
        }
    }
}

/// The bytes of the string at `at`.
///
/// # Safety
/// As [`walk`]; the value at `at` is a string (so `lua_tolstring` does not convert anything),
/// and the slice is used only while that value stays on the stack.
unsafe fn bytes<'a>(state: *mut ffi::lua_State, at: c_int) -> &'a [u8] {
    unsafe {
        let mut len = 0usize;
        let ptr = ffi::lua_tolstring(state, at, &mut len);
        if ptr.is_null() {
            return &[];
        }
        std::slice::from_raw_parts(ptr.cast::<u8>(), len)
    }
}

/// A positive integral number key (a list index).
///
/// # Safety
/// As [`key_text`].
unsafe fn positive_integer(state: *mut ffi::lua_State, at: c_int) -> Option<i64> {
    unsafe {
        if ffi::lua_type(state, at) != ffi::LUA_TNUMBER {
            return None;
        }
        integer(ffi::lua_tonumber(state, at)).filter(|i| *i > 0)
    }
}

/// A Lua number that is an integer in `i64`'s range (mlua reads those as integers).
fn integer(n: f64) -> Option<i64> {
    (n.fract() == 0.0 && n >= i64::MIN as f64 && n < i64::MAX as f64).then_some(n as i64)
}

/// A number as `to_nk` reads it: integral numbers are integers.
fn number(n: f64) -> NkValue {
    match integer(n) {
        Some(i) => NkValue::Int(i),
        None => NkValue::Float(n),
    }
}
