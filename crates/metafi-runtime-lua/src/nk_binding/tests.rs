//! The C functions answer every call as the mlua trampoline they replaced did: the same
//! results, the same error text, the same budget error; a panicking row is an error.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use metafi_core::{Objects, SystemClock};
use metafi_runtime::{NoMatches, RuntimeServices};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use mlua::{Lua, MultiValue, Table, Value};

use super::*;
use crate::nakama::located;
use crate::test_support::show_sorted;
use crate::{DeadlineCheck, VmShared, innermost_message};

/// A Lua state with what the `nk` functions need (the `nk` handle, the deadline check), its
/// deadline cell, and the folder of the store behind the `nk` handle.
fn state() -> (Lua, Rc<crate::budget::Deadline>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        SqliteStorage::open(SqliteConfig {
            path: dir.path().join("nk.db"),
            ..SqliteConfig::default()
        })
        .unwrap(),
    );
    let services = RuntimeServices::new(
        Arc::new(Objects::new(store.clone(), Arc::new(SystemClock))),
        store,
        Arc::new(NoMatches),
        Arc::new(SystemClock),
    );
    let nk = Nk::new(services, Arc::from("node"), Arc::new(HashMap::new()));
    let lua = Lua::new();
    let deadline = Rc::new(crate::budget::Deadline::new(&lua).unwrap());
    let over = deadline.clone();
    lua.set_app_data(DeadlineCheck(Rc::new(move || over.is_over())));
    lua.set_app_data(VmShared {
        nk,
        env: lua.create_table().unwrap(),
        registry: RefCell::default(),
        modules_by_path: HashMap::new(),
    });
    (lua, deadline, dir)
}

/// The binding this module replaced: every sync and unserved row through mlua's trampoline.
fn reference(lua: &Lua) -> Table {
    let module = lua.create_table().unwrap();
    for row in nk_api::functions() {
        let Some(name) = row.lua else { continue };
        let function = match row.call {
            NkCall::Sync(f) => located(lua, move |lua, values: MultiValue| {
                let nk = shared_nk(lua)?;
                let args = NkArgs::new(Naming::Snake, nk_value::args(&values)?);
                let value = f(&nk, args).map_err(|e| raised(&e, name))?;
                nk_value::results(lua, value)
            }),
            NkCall::Unserved(why) => located(lua, move |_, _: MultiValue| -> mlua::Result<()> {
                Err(raised(&why.error(name), name))
            }),
            NkCall::Async(_) => continue,
        };
        module.raw_set(name, function.unwrap()).unwrap();
    }
    module
}

/// What a script sees of `call` (Lua code using `nk`): whether it raised, then each result
/// (or the error) printed, errors as the sandbox's `pcall` shows them (mlua's error objects
/// as their message).
fn seen(lua: &Lua, nk: &Table, call: &str) -> Vec<String> {
    let code = format!(
        "local nk = ...\nlocal function pack(...) return {{n = select('#', ...), ...}} end\n\
         return pack(pcall(function() return {call} end))"
    );
    let packed: Table = lua.load(code).set_name("@t.lua").call(nk.clone()).unwrap();
    let show = show_sorted(lua);
    let n: i64 = packed.raw_get("n").unwrap();
    (1..=n)
        .map(|i| match packed.raw_get::<Value>(i).unwrap() {
            Value::Error(e) => format!("string:{}", innermost_message(&e)),
            value => {
                // Binary results (hashes, decoded bytes) printed escaped.
                let shown = show.call::<mlua::LuaString>(value).unwrap();
                let bytes = shown.as_bytes();
                match std::str::from_utf8(&bytes) {
                    Ok(text) => text.to_owned(),
                    Err(_) => bytes.escape_ascii().to_string(),
                }
            }
        })
        .collect()
}

const CALLS: &[&str] = &[
    // json_decode: the usual call, the rules, every kind of failure.
    r#"nk.json_decode('{"name":"bot-7","pos":[1.5,-2,3],"flags":{"alive":true},"n":42}')"#,
    r#"nk.json_decode('[1,null,3]'), #nk.json_decode('[1,null,3]')"#,
    r#"#nk.json_decode('[null,null,3,null]'), #nk.json_decode('[1,2,null]')"#,
    r#"nk.json_decode('{"a":null,"b":{"c":[[],{}]},"a":1,"d":"\\u00e9\\n"}')"#,
    r#"nk.json_decode('{"a":1,"a":null}').a"#,
    r#"nk.json_decode('9007199254740993'), nk.json_decode('18446744073709551615')"#,
    r#"nk.json_decode('-0'), nk.json_decode('1e2'), nk.json_decode('-1.25e-3')"#,
    r#"nk.json_decode('null'), select('#', nk.json_decode('null'))"#,
    r#"nk.json_decode(' "text" ')"#,
    r#"nk.json_decode('')"#,
    r#"nk.json_decode()"#,
    r#"nk.json_decode(42)"#,
    r#"nk.json_decode('\255')"#,
    r#"nk.json_decode('{')"#,
    r#"nk.json_decode('{} x')"#,
    r#"nk.json_decode('[1,]')"#,
    r#"nk.json_decode(string.rep('[', 200) .. string.rep(']', 200))"#,
    r#"nk.json_decode('[1]', 'extra')"#,
    r#"nk.json_decode('[1]', (function() local t = {} t.t = t return t end)())"#,
    r#"pcall(nk.json_decode, '{nope')"#,
    // json_encode: sorted keys, lists, numbers, strings, functions, every failure.
    r#"nk.json_encode({b = 1, a = {c = true}, [""] = false})"#,
    r#"nk.json_encode({name = "bot-7", pos = {1.5, -2, 3}, flags = {alive = true}, n = 42})"#,
    r#"nk.json_encode({[1] = 'a', [3] = 'c', x = 'ignored'})"#,
    r#"nk.json_encode({x = {y = 1}, [2] = 'b'})"#,
    r#"nk.json_encode({[1.5] = 1, ['1.5'] = 2, [true] = 3, [-0.0] = 4})"#,
    r#"nk.json_encode({['1.5'] = 2, [1.5] = 1})"#,
    r#"nk.json_encode({n = 1e300, m = -3, f = 0.1, big = 2^53 + 2, huge = 2^63, z = -0.0})"#,
    r#"nk.json_encode({s = '\255\0"\\', u = 'héllo\1', e = ''})"#,
    r#"nk.json_encode({}), nk.json_encode(nil), nk.json_encode(true), nk.json_encode('x')"#,
    r#"nk.json_encode(print), nk.json_encode({print}), nk.json_encode({f = print})"#,
    r#"nk.json_encode(coroutine.create(print))"#,
    r#"nk.json_encode()"#,
    r#"nk.json_encode(0/0)"#,
    r#"nk.json_encode({1, 1/0, {x = -1/0}})"#,
    r#"nk.json_encode({a = 0/0, b = (function() local t = {} t.t = t return t end)()})"#,
    r#"nk.json_encode({0/0, (function() local t = {} t.t = t return t end)()})"#,
    r#"nk.json_encode((function() local t = {} t.t = t return t end)())"#,
    r#"nk.json_encode((function() local t = {} for i = 1, 40 do t = {a = t, b = t} end return t end)())"#,
    r#"nk.json_encode({[5000000] = 1})"#,
    r#"nk.json_encode({x = {[5000000] = 1}, [2] = 'list after all'})"#,
    r#"nk.json_encode({1}, {2})"#,
    r#"nk.json_encode({1}, (function() local t = {} t.t = t return t end)())"#,
    r#"pcall(nk.json_encode)"#,
    // Other rows through the generic C function: results, several results, errors.
    r#"nk.base64_encode('hello'), nk.base64_decode('aGVsbG8=')"#,
    r#"nk.base64_decode('!!!')"#,
    r#"nk.base64_encode()"#,
    r#"nk.sha256_hash('abc'), nk.md5_hash('\255\0')"#,
    r#"nk.hmac_sha256_hash('key', 'text')"#,
    r#"nk.test_echo({a = {1, 2, {b = '\255'}}, c = 2^60, d = print})"#,
    r#"nk.test_echo(1, 2, 3)"#,
    r#"nk.sql_exec('select 1')"#,
    r#"pcall(nk.sql_query)"#,
];

#[test]
fn every_call_answers_as_through_the_mlua_trampoline() {
    let (lua, deadline, _dir) = state();
    let ours = lua.create_table().unwrap();
    install(&lua, &ours, &deadline).unwrap();
    let theirs = reference(&lua);
    for call in CALLS {
        assert_eq!(seen(&lua, &ours, call), seen(&lua, &theirs, call), "{call}");
    }
    // Spot checks of what both agree on: the script's position, Go's words.
    assert_eq!(
        seen(&lua, &ours, "nk.json_decode('{} x')"),
        [
            "boolean:false",
            "string:t.lua:3: not a valid JSON string: invalid character 'x' after top-level value"
        ]
    );
    assert_eq!(
        seen(&lua, &ours, "nk.json_encode({b = 1, a = {c = true}})"),
        ["boolean:true", r#"string:{"a":{"c":true},"b":1}"#]
    );
}

/// Keys come out sorted by their bytes, whatever order the table holds them in, at every
/// level: Go's `encoding/json`, what Nakama's scripts get.
#[test]
fn json_encode_sorts_keys_at_every_level() {
    let (lua, deadline, _dir) = state();
    let nk = lua.create_table().unwrap();
    install(&lua, &nk, &deadline).unwrap();
    let text: String = lua
        .load(
            "local nk = ... local t = {} for i = 30, 1, -1 do t['k' .. i] = {z = i, a = -i} end \
             t.B = 1 t['_'] = 2 t['\\195\\169'] = 3 return nk.json_encode(t)",
        )
        .call(nk)
        .unwrap();
    let mut keys: Vec<String> = (1..=30).map(|i| format!("k{i}")).collect();
    keys.extend(["B".into(), "_".into(), "é".into()]);
    keys.sort();
    let expected = keys
        .iter()
        .map(|k| match k.as_str() {
            "B" => r#""B":1"#.to_owned(),
            "_" => r#""_":2"#.to_owned(),
            "é" => r#""é":3"#.to_owned(),
            k => format!(r#""{k}":{{"a":-{n},"z":{n}}}"#, n = &k[1..]),
        })
        .collect::<Vec<_>>()
        .join(",");
    assert_eq!(text, format!("{{{expected}}}"));
}

/// Past the deadline every `nk` C function raises the budget error before doing anything,
/// which the host reports as a timeout and the sandbox's `pcall` re-raises.
#[test]
fn a_call_past_its_deadline_raises_the_budget_error() {
    let (lua, deadline, _dir) = state();
    let nk = lua.create_table().unwrap();
    install(&lua, &nk, &deadline).unwrap();
    deadline.set(Some(Instant::now()));
    for call in [
        "nk.json_decode('[1]')",
        "nk.json_encode({})",
        "nk.base64_encode('x')",
    ] {
        let error = lua
            .load(format!("local nk = ... return {call}"))
            .call::<Value>(nk.clone())
            .unwrap_err();
        assert!(crate::is_budget(&error), "{call}: {error}");
    }
    deadline.set(None);
    let text: String = lua
        .load("local nk = ... return nk.json_encode({1})")
        .call(nk)
        .unwrap();
    assert_eq!(text, "[1]");
}

/// A row that panics raises a Lua error the script can catch; the panic never crosses
/// LuaJIT's frames, and the VM goes on serving.
#[test]
fn a_panicking_row_raises_an_error_and_the_vm_goes_on() {
    static PANICS: NkFunction = NkFunction {
        lua: Some("panics"),
        js: None,
        call: NkCall::Sync(|_, _| panic!("a bug in a row")),
    };
    let (lua, deadline, _dir) = state();
    let module = lua.create_table().unwrap();
    install(&lua, &module, &deadline).unwrap();
    let binding = lua
        .app_data_ref::<BindingCell>()
        .map(|b| Rc::as_ptr(&b.0))
        .unwrap();
    let budget = Value::Error(Box::new(mlua::Error::external(BudgetExceeded)));
    let panics = c_function(&lua, call_row, &PANICS, budget, binding).unwrap();
    module.raw_set("panics", panics).unwrap();
    let seen = seen(&lua, &module, "nk.panics({1, 2})");
    assert_eq!(
        seen,
        [
            "boolean:false",
            "string:t.lua:3: nk.panics failed: internal server error"
        ]
    );
    let text: String = lua
        .load("local nk = ... return nk.json_encode({ok = true})")
        .call(module)
        .unwrap();
    assert_eq!(text, r#"{"ok":true}"#);
}
