//! Proto field names as Lua strings made once per VM and kept in the registry, so pushing a
//! hook's request or answer does not intern its keys again on every call.
//!
//! A hook's tables have keys from a small fixed set per message type (`account`, `create`,
//! `refresh_token`, …). `lua_pushlstring` hashes each one, walks the string table's chain and
//! compares, and runs the collector's check, on every push; a registry slot is read with
//! `lua_rawgeti` (an array read: no hash, no compare), and the Rust side finds the slot with
//! FxHash, which reads a short name a word at a time. Anchored in the registry, the strings
//! are never collected, so a key is also never made twice after a collection freed it.
//!
//! Only names in renamed positions are cached (the caller decides: keys inside map fields,
//! `hooks::MAP_FIELDS`, are user data and pushed as they are), and at most [`MAX_KEYS`] of
//! them: a message with unforeseen keys cannot grow the cache past that. The same bound and
//! rule as the JavaScript engine's atom cache (`hook_value::FieldNames`).

// Every unsafe block pushes onto the stack of a live state inside a protected call (a memory
// error is a Lua error of that call); no Rust value that needs dropping is alive across a Lua
// API call that may raise.
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::ffi::c_int;

use mlua::ffi;
use rustc_hash::FxHashMap;

use crate::raw_push;

/// How many names a VM keeps. Nakama's messages have a few hundred field names in all.
pub(crate) const MAX_KEYS: usize = 1024;

/// Field names → the registry slots holding their Lua strings, for one VM. The slots are
/// never released: they go with the state.
#[derive(Default)]
pub(crate) struct FieldKeys {
    slots: RefCell<FxHashMap<Box<str>, c_int>>,
    /// A struct field name's address and length (a `&'static str` from a `Serialize`
    /// derive) → its slot in `slots`: found by two words, without hashing or comparing the
    /// text. The same name at two addresses (two crates' structs) has two entries, one slot.
    statics: RefCell<FxHashMap<(usize, usize), c_int>>,
}

impl FieldKeys {
    /// Pushes `name` as a Lua string: the kept one, or a new one kept from now on while the
    /// cache has room.
    ///
    /// # Safety
    /// `state` is a live Lua state of the VM this cache belongs to, inside a protected call,
    /// with room for two more values.
    pub(crate) unsafe fn push(&self, state: *mut ffi::lua_State, name: &str) {
        // The borrow ends with the statement: nothing borrowed while Lua may raise below.
        let slot = self.slots.borrow().get(name).copied();
        unsafe {
            if let Some(slot) = slot {
                ffi::lua_rawgeti(state, ffi::LUA_REGISTRYINDEX, ffi::lua_Integer::from(slot));
                return;
            }
            raw_push::push_str(state, name);
            if self.slots.borrow().len() >= MAX_KEYS {
                return;
            }
            ffi::lua_pushvalue(state, -1);
            // Pops the copy; may raise (out of memory) before anything is recorded.
            let slot = ffi::luaL_ref(state, ffi::LUA_REGISTRYINDEX);
            self.slots.borrow_mut().insert(name.into(), slot);
        }
    }

    /// Pushes the struct field name `name` as [`FieldKeys::push`] does, its slot found by
    /// the name's address.
    ///
    /// # Safety
    /// As [`FieldKeys::push`].
    pub(crate) unsafe fn push_static(&self, state: *mut ffi::lua_State, name: &'static str) {
        let address = (name.as_ptr() as usize, name.len());
        // The borrow ends with the statement: nothing borrowed while Lua may raise below.
        let slot = self.statics.borrow().get(&address).copied();
        unsafe {
            if let Some(slot) = slot {
                ffi::lua_rawgeti(state, ffi::LUA_REGISTRYINDEX, ffi::lua_Integer::from(slot));
                return;
            }
            self.push(state, name);
            let slot = self.slots.borrow().get(name).copied();
            let mut statics = self.statics.borrow_mut();
            if let Some(slot) = slot
                && statics.len() < MAX_KEYS
            {
                statics.insert(address, slot);
            }
        }
    }

    /// How many names are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.slots.borrow().len()
    }
}

#[cfg(test)]
mod tests {
    use mlua::{Function, Lua, Value};
    use serde_json::{Value as Json, json};

    use super::*;

    /// `json` pushed as a hook's message through `keys`, as the call entry pushes it.
    fn message(lua: &Lua, keys: &FieldKeys, json: &Json) -> Value {
        let mut within = false;
        // SAFETY: `exec_raw` runs the closure in a protected call on the VM's state, and
        // `push_message` leaves the one value it returns.
        let value = unsafe {
            lua.exec_raw::<Value>((), |state| {
                within = raw_push::push_message(state, json, keys);
            })
        }
        .unwrap();
        assert!(within);
        value
    }

    fn request() -> Json {
        json!({
            "account": {"id": "device-1", "vars": {"region": "eu", "account": "x"}},
            "create": true,
            "username": "",
            "gone": null,
        })
    }

    #[test]
    fn field_names_are_kept_once_and_map_keys_are_not() {
        let lua = Lua::new();
        let keys = FieldKeys::default();
        let show = crate::test_support::show_sorted(&lua);
        let expected = "{account={id=string:device-1,vars={account=string:x,region=string:eu}},\
                        create=boolean:true,username=string:}";
        let first: String = show.call(message(&lua, &keys, &request())).unwrap();
        assert_eq!(first, expected);
        // account, id, vars, create, username: not `region` (a key inside `vars`), not
        // `gone` (null, absent).
        assert_eq!(keys.len(), 5);
        let second: String = show.call(message(&lua, &keys, &request())).unwrap();
        assert_eq!(second, expected);
        assert_eq!(keys.len(), 5);
    }

    #[test]
    fn kept_names_survive_the_collector() {
        let lua = Lua::new();
        let keys = FieldKeys::default();
        drop(message(&lua, &keys, &request()));
        // Nothing but the cache refers to the names now; two full cycles free whatever is
        // not anchored.
        lua.gc_collect().unwrap();
        lua.gc_collect().unwrap();
        let read: Function = lua
            .load("return function(t) return t.account.id, t.username, t.create end")
            .eval()
            .unwrap();
        let (id, username, create): (String, String, bool) =
            read.call(message(&lua, &keys, &request())).unwrap();
        assert_eq!(
            (id.as_str(), username.as_str(), create),
            ("device-1", "", true)
        );
    }

    #[test]
    fn a_script_that_changes_a_message_does_not_change_the_next_ones() {
        let lua = Lua::new();
        let keys = FieldKeys::default();
        let show = crate::test_support::show_sorted(&lua);
        let mutate: Function = lua
            .load(
                r#"return function(t)
                  t.account.id = "changed"; t.account = nil; t.username = nil
                  t.create = "no"; t.added = {}
                end"#,
            )
            .eval()
            .unwrap();
        let expected: String = show.call(message(&lua, &keys, &request())).unwrap();
        mutate.call::<()>(message(&lua, &keys, &request())).unwrap();
        let after: String = show.call(message(&lua, &keys, &request())).unwrap();
        assert_eq!(after, expected);
    }

    #[test]
    fn the_cache_stops_growing_at_its_bound() {
        let lua = Lua::new();
        let keys = FieldKeys::default();
        let many: serde_json::Map<String, Json> = (0..MAX_KEYS + 10)
            .map(|i| (format!("field_{i}"), json!(i)))
            .collect();
        let table = message(&lua, &keys, &Json::Object(many));
        assert_eq!(keys.len(), MAX_KEYS);
        // Every field is there, kept name or not.
        let count: Function = lua
            .load("return function(t) local n = 0 for _ in pairs(t) do n = n + 1 end return n, t.field_1033 end")
            .eval()
            .unwrap();
        let (n, last): (usize, i64) = count.call(table).unwrap();
        assert_eq!((n, last), (MAX_KEYS + 10, 1033));
    }
}
