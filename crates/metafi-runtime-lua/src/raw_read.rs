//! Lua tables → [`NkValue`] or straight to JSON, read in one call through the Lua C API.
//!
//! Walking a table through mlua's safe API (`Table::pairs`, `raw_get`) turns every key and
//! value into an mlua `Value` — a reference slot, a stack move and a drop each — and walks the
//! table twice (once for its largest index). For a before hook's request of a dozen fields
//! that was a third of a Lua hook pair's instructions (`docs/RUNTIME.md`, "The hook call path
//! and its cost"), and every `nk` call with a table argument paid it too. Here the table is
//! read with `lua_next`/`lua_rawgeti` inside one `Lua::exec_raw`; only Rust values come out.
//!
//! The rules are [`crate::nk_value::to_nk`]'s (stated there); the tests compare both on the
//! same tables. One walk builds either tree ([`Tree`]): an [`NkValue`] for `nk` arguments, or
//! a `serde_json::Value` for a before hook's result, which was read into an [`NkValue`] and
//! then copied into JSON (`NkValue::to_go_json`); the JSON tree follows that copy's rules
//! (binary strings lossy, non-finite numbers an error), so both give the same JSON. Nothing here raises a Lua error: the walk only reads (no string conversion of
//! number keys in place, no allocation on the Lua side), and stack room is asked for with
//! `lua_checkstack`, whose failure comes back as a Rust error.

// Every unsafe block reads the stack of the state `exec_raw` hands over, within room
// reserved by `lua_checkstack`.
#![allow(unsafe_code)]

use std::ffi::c_int;

use metafi_runtime::nk_api::{NkMap, NkValue, ValueBudget};
use mlua::{Lua, Table, Value, ffi};
use serde_json::{Map, Number, Value as Json};

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
            read = walk_table::<NkValue>(state, at, depth, budget);
        })?;
    }
    read.map_err(mlua::Error::runtime)
}

/// `value` as JSON, as `to_nk` then `NkValue::to_go_json(Naming::Snake)` would give it.
pub(crate) fn json(lua: &Lua, value: &Value) -> mlua::Result<Json> {
    let mut read = Err(String::new());
    // SAFETY: as in `table`.
    unsafe {
        lua.exec_raw::<()>(value, |state| {
            read = json_at(state, ffi::lua_gettop(state));
        })?;
    }
    read.map_err(mlua::Error::runtime)
}

/// The value at stack index `at` (absolute) as JSON (see [`json`]); the stack is left as found.
///
/// # Safety
/// `state` is a live Lua state and `at` a valid absolute index on its stack.
pub(crate) unsafe fn json_at(state: *mut ffi::lua_State, at: c_int) -> Result<Json, String> {
    let mut budget = ValueBudget::default();
    // SAFETY: the caller's.
    let json = unsafe { walk::<JsonTree>(state, at, 0, &mut budget)? };
    json.done()
}

/// What one walk builds: the same rules, two trees.
trait Tree: Sized {
    type Map;

    fn nil() -> Self;
    fn bool(b: bool) -> Self;
    /// Integral numbers in `i64`'s range are integers.
    fn number(n: f64) -> Self;
    /// UTF-8 text, or binary data when not.
    fn string(bytes: &[u8]) -> Self;
    /// A function inside a table: its text.
    fn function(text: String) -> Self;
    fn list(items: Vec<Self>) -> Self;
    fn map() -> Self::Map;
    fn insert(map: &mut Self::Map, key: String, value: Self);
    fn from_map(map: Self::Map) -> Self;
}

impl Tree for NkValue {
    type Map = NkMap;

    fn nil() -> Self {
        NkValue::Nil
    }
    fn bool(b: bool) -> Self {
        NkValue::Bool(b)
    }
    fn number(n: f64) -> Self {
        match integer(n) {
            Some(i) => NkValue::Int(i),
            None => NkValue::Float(n),
        }
    }
    fn string(bytes: &[u8]) -> Self {
        match std::str::from_utf8(bytes) {
            Ok(text) => NkValue::Str(text.to_owned()),
            Err(_) => NkValue::Bytes(bytes.to_vec()),
        }
    }
    fn function(text: String) -> Self {
        NkValue::Str(text)
    }
    fn list(items: Vec<Self>) -> Self {
        NkValue::List(items)
    }
    fn map() -> NkMap {
        NkMap::new()
    }
    fn insert(map: &mut NkMap, key: String, value: Self) {
        map.insert_data(key, value);
    }
    fn from_map(map: NkMap) -> Self {
        NkValue::Map(map)
    }
}

/// JSON with the first non-finite number remembered: `to_go_json` refuses one only after the
/// whole walk, so a walk error (too deep, too large) found later still wins, as there.
struct JsonTree {
    json: Json,
    non_finite: Option<f64>,
}

impl JsonTree {
    fn done(self) -> Result<Json, String> {
        match self.non_finite {
            Some(n) => Err(format!("cannot encode {n} as JSON")),
            None => Ok(self.json),
        }
    }

    fn of(json: Json) -> Self {
        JsonTree {
            json,
            non_finite: None,
        }
    }
}

impl Tree for JsonTree {
    type Map = (Map<String, Json>, Option<f64>);

    fn nil() -> Self {
        JsonTree::of(Json::Null)
    }
    fn bool(b: bool) -> Self {
        JsonTree::of(Json::Bool(b))
    }
    fn number(n: f64) -> Self {
        match integer(n) {
            Some(i) => JsonTree::of(Json::from(i)),
            None => match Number::from_f64(n) {
                Some(number) => JsonTree::of(Json::Number(number)),
                None => JsonTree {
                    json: Json::Null,
                    non_finite: Some(n),
                },
            },
        }
    }
    fn string(bytes: &[u8]) -> Self {
        JsonTree::of(Json::String(lossy(bytes)))
    }
    fn function(text: String) -> Self {
        JsonTree::of(Json::String(text))
    }
    fn list(items: Vec<Self>) -> Self {
        let mut non_finite = None;
        let items = items
            .into_iter()
            .map(|item| {
                non_finite = non_finite.or(item.non_finite);
                item.json
            })
            .collect();
        JsonTree {
            json: Json::Array(items),
            non_finite,
        }
    }
    fn map() -> Self::Map {
        (Map::new(), None)
    }
    fn insert((map, non_finite): &mut Self::Map, key: String, value: Self) {
        *non_finite = non_finite.or(value.non_finite);
        map.insert(key, value.json);
    }
    fn from_map((map, non_finite): Self::Map) -> Self {
        JsonTree {
            json: Json::Object(map),
            non_finite,
        }
    }
}

/// The value at stack index `at` (absolute).
///
/// # Safety
/// `state` is a live Lua state and `at` a valid absolute index on its stack.
unsafe fn walk<T: Tree>(
    state: *mut ffi::lua_State,
    at: c_int,
    depth: usize,
    budget: &mut ValueBudget,
) -> Result<T, String> {
    unsafe {
        Ok(match ffi::lua_type(state, at) {
            ffi::LUA_TBOOLEAN => T::bool(ffi::lua_toboolean(state, at) != 0),
            ffi::LUA_TNUMBER => T::number(ffi::lua_tonumber(state, at)),
            ffi::LUA_TSTRING => T::string(bytes(state, at)),
            ffi::LUA_TTABLE => walk_table(state, at, depth, budget)?,
            ffi::LUA_TFUNCTION => {
                T::function(format!("function: {:p}", ffi::lua_topointer(state, at)))
            }
            _ => T::nil(),
        })
    }
}

/// # Safety
/// As [`walk`]; the value at `at` is a table.
unsafe fn walk_table<T: Tree>(
    state: *mut ffi::lua_State,
    at: c_int,
    depth: usize,
    budget: &mut ValueBudget,
) -> Result<T, String> {
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
        // One pass reads the table as a map, as nearly every table a hook returns is one; a
        // positive integer key makes it a list instead (its other keys ignored), read from
        // the start with the budget as it was. An error in a value counts only once the pass
        // has found no such key, as when the list test was a pass of its own before this one.
        let before = budget.clone();
        let mut map = T::map();
        let mut failed = None;
        ffi::lua_pushnil(state);
        while ffi::lua_next(state, at) != 0 {
            if positive_integer(state, -2).is_some() {
                // The key and the value: the stack as it was found.
                ffi::lua_settop(state, -3);
                *budget = before;
                return walk_list(state, at, depth, budget);
            }
            if failed.is_none() {
                let key = key_text(state, -2);
                let item = budget
                    .take(1)
                    .and_then(|()| walk::<T>(state, ffi::lua_gettop(state), depth + 1, budget));
                match item {
                    Ok(item) => T::insert(&mut map, key, item),
                    Err(e) => failed = Some(e),
                }
            }
            ffi::lua_settop(state, -2);
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(T::from_map(map)),
        }
    }
}

/// A table with a positive integer key, as a list of its items from 1 to its largest such key.
///
/// # Safety
/// As [`walk_table`], which has reserved the stack room.
unsafe fn walk_list<T: Tree>(
    state: *mut ffi::lua_State,
    at: c_int,
    depth: usize,
    budget: &mut ValueBudget,
) -> Result<T, String> {
    unsafe {
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
        if maxn > 1 << 24 {
            return Err("array too sparse to convert: its largest index is over 16777216".into());
        }
        budget.take(maxn as usize)?;
        let mut items = Vec::with_capacity(maxn as usize);
        for i in 1..=maxn {
            ffi::lua_rawgeti(state, at, i as ffi::lua_Integer);
            let item = walk::<T>(state, ffi::lua_gettop(state), depth + 1, budget);
            ffi::lua_settop(state, -2);
            items.push(item?);
        }
        Ok(T::list(items))
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
            ffi::LUA_TSTRING => lossy(bytes(state, at)),
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

/// `bytes` as text, invalid UTF-8 replaced (`String::from_utf8_lossy`): checked with
/// `str::from_utf8` first, whose validation is several times faster on the valid text nearly
/// every string is.
pub(crate) fn lossy(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
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

/// Stack room for reading any value (three slots per nesting level up to [`MAX_DEPTH`], and a
/// few more), taken before a read that must raise no Lua error: with it reserved, the
/// `lua_checkstack` calls of a walk never grow the stack, so never allocate.
///
/// # Safety
/// `state` is a live Lua state inside a C function (the growth may raise a memory error).
pub(crate) unsafe fn reserve(state: *mut ffi::lua_State) {
    // Past LuaJIT's limit of 8,000 slots per C call (thousands of arguments) this does
    // nothing, and the walk reports the shortage as it did.
    // SAFETY: the caller's.
    unsafe {
        ffi::lua_checkstack(state, 3 * MAX_DEPTH as c_int + 8);
    }
}

/// Every argument on the stack of a C function as an `nk` argument, with the rules of
/// [`crate::nk_value::args`]: a function passed as an argument is nil, anything else is read
/// as [`walk`] reads it (a table through [`walk_table`] at depth 0), one budget for all.
///
/// # Safety
/// `state` is the state of a running C function; its arguments fill the stack. Raises no Lua
/// error once [`reserve`] has been called.
pub(crate) unsafe fn nk_args(
    state: *mut ffi::lua_State,
    budget: &mut ValueBudget,
) -> Result<Vec<NkValue>, String> {
    unsafe {
        let top = ffi::lua_gettop(state);
        let mut args = Vec::with_capacity(top.max(0) as usize);
        for at in 1..=top {
            args.push(match ffi::lua_type(state, at) {
                ffi::LUA_TFUNCTION => NkValue::Nil,
                _ => walk::<NkValue>(state, at, 0, budget)?,
            });
        }
        Ok(args)
    }
}

/// The value at `at` as JSON text, as `nk.json_encode` wrote it through [`crate::nk_value`]
/// and `NkValue::to_json` (objects with sorted keys, the last of equal keys winning, as in a
/// `serde_json::Map`), without either tree: the same walk rules and errors as [`walk`] (a
/// walk error wins over a non-finite number found before it, which is reported as
/// `cannot encode NaN as JSON` once the walk is done). A function at the top is `null`, as an
/// `nk` argument.
///
/// # Safety
/// `state` is a live Lua state and `at` a valid absolute index on its stack. Raises no Lua
/// error once [`reserve`] has been called.
pub(crate) unsafe fn json_text_at(
    state: *mut ffi::lua_State,
    at: c_int,
    out: &mut Vec<u8>,
) -> Result<(), TextError> {
    let mut text = Text {
        out,
        non_finite: None,
    };
    let mut budget = ValueBudget::default();
    // SAFETY: the caller's.
    unsafe {
        if ffi::lua_type(state, at) == ffi::LUA_TFUNCTION {
            text.out.extend_from_slice(b"null");
        } else {
            text_value(state, at, 0, &mut budget, &mut text).map_err(TextError::Walk)?;
        }
    }
    match text.non_finite {
        Some(n) => Err(TextError::NonFinite(format!("cannot encode {n} as JSON"))),
        None => Ok(()),
    }
}

/// Why [`json_text_at`] wrote no text.
#[derive(Debug, PartialEq)]
pub(crate) enum TextError {
    /// The walk failed (too deep, too large): what reading the value as an `nk` argument said.
    Walk(String),
    /// A number JSON cannot hold, in `NkValue::to_json`'s words (`cannot encode NaN as JSON`).
    NonFinite(String),
}

/// JSON text being written, with the first non-finite number met (see [`json_text_at`]).
struct Text<'a> {
    out: &'a mut Vec<u8>,
    non_finite: Option<f64>,
}

impl Text<'_> {
    fn string(&mut self, text: &str) {
        // Invariant: writing into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut *self.out, text);
    }

    fn number(&mut self, n: f64) {
        match integer(n) {
            Some(i) => {
                let _ = serde_json::to_writer(&mut *self.out, &i);
            }
            None if n.is_finite() => {
                let _ = serde_json::to_writer(&mut *self.out, &n);
            }
            None => {
                self.non_finite = self.non_finite.or(Some(n));
                self.out.extend_from_slice(b"null");
            }
        }
    }
}

/// The value at `at` as JSON text ([`walk`]'s rules).
///
/// # Safety
/// As [`json_text_at`].
unsafe fn text_value(
    state: *mut ffi::lua_State,
    at: c_int,
    depth: usize,
    budget: &mut ValueBudget,
    text: &mut Text<'_>,
) -> Result<(), String> {
    unsafe {
        match ffi::lua_type(state, at) {
            ffi::LUA_TBOOLEAN => {
                let b = ffi::lua_toboolean(state, at) != 0;
                text.out
                    .extend_from_slice(if b { b"true" } else { b"false" });
            }
            ffi::LUA_TNUMBER => text.number(ffi::lua_tonumber(state, at)),
            ffi::LUA_TSTRING => match std::str::from_utf8(bytes(state, at)) {
                Ok(s) => text.string(s),
                Err(_) => text.string(&String::from_utf8_lossy(bytes(state, at))),
            },
            ffi::LUA_TTABLE => text_table(state, at, depth, budget, text)?,
            ffi::LUA_TFUNCTION => {
                text.string(&format!("function: {:p}", ffi::lua_topointer(state, at)));
            }
            _ => text.out.extend_from_slice(b"null"),
        }
        Ok(())
    }
}

/// A table as a JSON object or array, [`walk_table`]'s rules: one pass reads it as a map
/// (each value written where it ends, its key remembered), a positive integer key starts it
/// again as a list with the budget and the text as they were.
///
/// # Safety
/// As [`text_value`]; the value at `at` is a table.
unsafe fn text_table(
    state: *mut ffi::lua_State,
    at: c_int,
    depth: usize,
    budget: &mut ValueBudget,
    text: &mut Text<'_>,
) -> Result<(), String> {
    if depth >= MAX_DEPTH {
        return Err(format!(
            "table nesting deeper than {MAX_DEPTH} levels (a table that contains itself?)"
        ));
    }
    unsafe {
        if ffi::lua_checkstack(state, 3) == 0 {
            return Err("table nesting too deep for the Lua stack".into());
        }
        let before = budget.clone();
        let start = text.out.len();
        let non_finite = text.non_finite;
        // Each key with where its value's text starts and ends in `text.out`.
        let mut entries: Vec<(String, usize, usize)> = Vec::new();
        let mut failed = None;
        ffi::lua_pushnil(state);
        while ffi::lua_next(state, at) != 0 {
            if positive_integer(state, -2).is_some() {
                ffi::lua_settop(state, -3);
                *budget = before;
                text.out.truncate(start);
                text.non_finite = non_finite;
                return text_list(state, at, depth, budget, text);
            }
            if failed.is_none() {
                let key = key_text(state, -2);
                let from = text.out.len();
                let item = budget.take(1).and_then(|()| {
                    text_value(state, ffi::lua_gettop(state), depth + 1, budget, text)
                });
                match item {
                    Ok(()) => entries.push((key, from, text.out.len())),
                    Err(e) => failed = Some(e),
                }
            }
            ffi::lua_settop(state, -2);
        }
        if let Some(e) = failed {
            return Err(e);
        }
        let values = text.out.split_off(start);
        // Stable: of equal keys the last read stays last, and is the one written.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        text.out.push(b'{');
        let mut first = true;
        for (i, (key, from, to)) in entries.iter().enumerate() {
            if entries.get(i + 1).is_some_and(|next| next.0 == *key) {
                continue;
            }
            if !first {
                text.out.push(b',');
            }
            first = false;
            text.string(key);
            text.out.push(b':');
            text.out
                .extend_from_slice(&values[from - start..to - start]);
        }
        text.out.push(b'}');
        Ok(())
    }
}

/// A table with a positive integer key as a JSON array ([`walk_list`]'s rules).
///
/// # Safety
/// As [`text_table`], which has reserved the stack room.
unsafe fn text_list(
    state: *mut ffi::lua_State,
    at: c_int,
    depth: usize,
    budget: &mut ValueBudget,
    text: &mut Text<'_>,
) -> Result<(), String> {
    unsafe {
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
        if maxn > 1 << 24 {
            return Err("array too sparse to convert: its largest index is over 16777216".into());
        }
        budget.take(maxn as usize)?;
        text.out.push(b'[');
        for i in 1..=maxn {
            if i > 1 {
                text.out.push(b',');
            }
            ffi::lua_rawgeti(state, at, i as ffi::lua_Integer);
            let item = text_value(state, ffi::lua_gettop(state), depth + 1, budget, text);
            ffi::lua_settop(state, -2);
            item?;
        }
        text.out.push(b']');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use metafi_runtime::nk_api::Naming;

    use super::*;
    use crate::nk_value::to_nk;

    /// The JSON read gives what the `NkValue` read then `to_go_json` gave a before hook's
    /// result: the same JSON, or the same error.
    #[test]
    fn json_is_what_the_nk_value_read_made_of_it() {
        let lua = Lua::new();
        let through_nk = |value: &Value| {
            to_nk(value, 0, &mut ValueBudget::default())
                .and_then(|nk| nk.to_go_json(Naming::Snake).map_err(mlua::Error::runtime))
        };
        for code in [
            "return {account = {id = 'd', vars = {k = 'v'}}, create = true, username = ''}",
            "return {1, 'x', {a = {b = {true, false}}}}",
            "return {[1] = 'a', [3] = 'c', x = 'ignored'}",
            "return {a = 1, [-2] = true, [2.5] = 'f', [-0.0] = 'z', [true] = 1, [{}] = 2}",
            "return {n = 1e300, m = -3, f = -0.5, big = 2^53 + 2, huge = 2^63, tiny = -2^63}",
            "return {s = '\\255\\0', e = '', u = 'héllo', fn = print}",
            "return {[2.5] = 'number key', ['2.5'] = 'string key'}",
            "return {{}, {{}}, {k = {}}}",
            // A list whose other keys hold what could not be read: those keys are ignored,
            // whether the map pass meets them before the integer key or not.
            "local t = {} t.t = t return {x = t, [3] = 'c', y = 0/0, z = {[5000000] = 1}}",
            "local t = {} t.t = t local l = {x = t} l[2] = 'b' return {l, {y = 0/0, [1] = 1}}",
            "return {}",
            "return 'text'",
            "return 3.0",
            "return 0.25",
            "return true",
            "return print",
            "return coroutine.create(print)",
        ] {
            let value: Value = lua.load(code).eval().unwrap();
            let direct = json(&lua, &value).unwrap();
            assert_eq!(direct, through_nk(&value).unwrap(), "{code}");
        }
        for code in [
            "return {nan = 0/0}",
            "return {1, 2, 1/0}",
            "return {a = {b = -1/0}, c = 0/0}",
            // A walk error found after a non-finite number still wins, as it did.
            "local t = {} t.t = t return {0/0, t}",
            "local t = {} for i = 1, 40 do t = {a = t, b = t} end return {x = 0/0, t = t}",
            "return {[5000000] = 1}",
            // The first error of a map still wins when a later value fails too.
            "local t = {} t.t = t return {a = {[5000000] = 1}, b = {[6000000] = 1}, c = t}",
            "return 0/0",
        ] {
            let value: Value = lua.load(code).eval().unwrap();
            let direct = json(&lua, &value).unwrap_err();
            let old = through_nk(&value).unwrap_err();
            assert_eq!(direct.to_string(), old.to_string(), "{code}");
        }
        // The stack is left as found, errors included: the VM keeps working.
        let after: i64 = lua.load("return 1 + 1").eval().unwrap();
        assert_eq!(after, 2);
    }
}
