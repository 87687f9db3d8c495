//! The tables a Lua match callback gets on every call, built in one protected call through the
//! Lua C API: the context fields that change (`match_label`, `match_size`,
//! `match_pending_joins`) and, for `match_loop`, the `messages` list.
//!
//! Through mlua's safe API each `Table::raw_set` and `create_string` is a protected call of its
//! own under the VM's memory cap, and each protected call pushes a new C closure (allocated,
//! then swept by the collector): ≈ 8 % of the server's CPU on the seed match row
//! (`docs/BENCHMARKS.md`, "Where MetaFi's time goes"). Here one C function, made once per Lua
//! state, is called with `lua_pcall` (not `Lua::exec_raw`, which pushes two new C functions per
//! call) and pushes everything: the field names from registry slots made once per state, a
//! joined player's presence table from its registry slot, a non-member sender's table built as
//! [`crate::lua_match_handler`]'s `presence_table` builds it and handed to the dispatcher.
//! Same tables as the safe API made (same keys inserted in the same order, `data = nil` set
//! for an empty payload), so even `pairs` visits them in the same order; the tests compare
//! them with that construction.

// Every unsafe block pushes onto the stack of the state the protected call runs on, after
// reserving room. A Lua error (memory) raised there unwinds to `lua_pcall`; the frames it
// crosses own nothing that needs a drop (`crate::tape`'s rule): the parameters are borrowed,
// a user id is written into a buffer on the stack.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::ffi::c_int;
use std::rc::Rc;
use std::sync::Arc;

use metafi_match::{MatchMessage, Presence};
use metafi_runtime::match_bridge::DispatchRecorder;
use mlua::{Function, Lua, RegistryKey, Table, Value, ffi};
use uuid::Uuid;

use crate::raw_push;

/// Presence tables of a match's joined players by session, with their addresses (the
/// recorder's keys).
pub(crate) type Members = HashMap<Uuid, (RegistryKey, usize)>;

/// The builder of one Lua state: shared by every match on it (per state, not per match:
/// thousands of matches share a thread's state, and each value held from Rust takes a slot of
/// mlua's reference stack).
pub(crate) struct MatchTables {
    /// [`build_protected`] as a Lua function, made once: Lua 5.1 and LuaJIT allocate a closure
    /// every time a C function is pushed.
    protected: Function,
    /// The registry slots of the field names ([`Key`]), strings never collected.
    slots: [c_int; KEYS],
    /// What keeps those slots theirs.
    _anchors: Vec<RegistryKey>,
}

/// The context fields one call refreshes.
pub(crate) struct ContextFields<'a> {
    /// The match's context table.
    pub table: &'a RegistryKey,
    /// The new label, when it changed.
    pub label: Option<&'a str>,
    pub size: i64,
    pub pending_joins: i64,
}

/// `match_loop`'s messages and what their senders' tables come from.
pub(crate) struct Messages<'a> {
    pub messages: &'a [MatchMessage],
    pub members: &'a Members,
    /// Where a non-member sender's table is handed out, so the script can pass it back.
    pub recorder: &'a DispatchRecorder<usize>,
}

impl MatchTables {
    /// The builder of `lua`'s state, made on its first use and kept in the state's app data.
    pub(crate) fn of(lua: &Lua) -> mlua::Result<Rc<MatchTables>> {
        if let Some(tables) = lua.app_data_ref::<Rc<MatchTables>>() {
            return Ok(tables.clone());
        }
        // SAFETY: `build_protected` follows the Lua C function protocol and is only called by
        // `MatchTables::build`, with the stack it expects.
        let protected = unsafe { lua.create_c_function(build_protected)? };
        let anchors = NAMES
            .iter()
            .map(|name| lua.create_registry_value(lua.create_string(name)?))
            .collect::<mlua::Result<Vec<_>>>()?;
        let mut slots = [0; KEYS];
        for (slot, anchor) in slots.iter_mut().zip(&anchors) {
            *slot = anchor.id();
        }
        let tables = Rc::new(MatchTables {
            protected,
            slots,
            _anchors: anchors,
        });
        lua.set_app_data(tables.clone());
        Ok(tables)
    }

    /// Sets `context`'s fields in its table and, with `messages`, builds `match_loop`'s list,
    /// in one protected call. A Lua error inside (out of memory) comes back as mlua reports
    /// it, with the context fields set before it kept.
    pub(crate) fn build(
        &self,
        lua: &Lua,
        context: &ContextFields<'_>,
        messages: Option<&Messages<'_>>,
    ) -> mlua::Result<Option<Table>> {
        let params = Params {
            keys: &self.slots,
            context,
            messages,
        };
        let value = lua.exec_raw_lua(|raw| {
            let state = raw.state();
            // SAFETY: `state` is the VM's current state, locked for the closure; room for the
            // two values is reserved before they are pushed; `params` outlives the call and
            // `build_protected` only reads it during it; the one value the call leaves is
            // popped, so the stack ends as it began.
            unsafe {
                let base = ffi::lua_gettop(state);
                if ffi::lua_checkstack(state, 2) == 0 {
                    return Err(mlua::Error::StackError);
                }
                raw.push(&self.protected)?;
                ffi::lua_pushlightuserdata(state, std::ptr::from_ref(&params).cast_mut().cast());
                let status = ffi::lua_pcall(state, 1, 1, 0);
                let value = raw.pop_value();
                ffi::lua_settop(state, base);
                if status == ffi::LUA_OK {
                    Ok(value)
                } else {
                    Err(crate::call_entry::died(status, value))
                }
            }
        })?;
        match value {
            Value::Table(list) => Ok(Some(list)),
            _ => Ok(None),
        }
    }
}

/// The field names kept per state, by [`Key`].
const NAMES: [&str; KEYS] = [
    "match_label",
    "match_size",
    "match_pending_joins",
    "sender",
    "op_code",
    "data",
    "reliable",
    "receive_time_ms",
    "user_id",
    "session_id",
    "username",
    "node",
];
const KEYS: usize = 12;

/// A kept field name: its index in [`NAMES`].
#[derive(Clone, Copy)]
enum Key {
    MatchLabel,
    MatchSize,
    MatchPendingJoins,
    Sender,
    OpCode,
    Data,
    Reliable,
    ReceiveTimeMs,
    UserId,
    SessionId,
    Username,
    Node,
}

/// What [`build_protected`] reads, passed as a light userdata.
struct Params<'a> {
    /// The registry slots of [`NAMES`].
    keys: &'a [c_int; KEYS],
    context: &'a ContextFields<'a>,
    messages: Option<&'a Messages<'a>>,
}

impl Params<'_> {
    /// Pushes the kept field name `key`.
    ///
    /// # Safety
    /// `state` is the state of the running [`build_protected`], with room for one value.
    unsafe fn push_key(&self, state: *mut ffi::lua_State, key: Key) {
        unsafe {
            ffi::lua_rawgeti(
                state,
                ffi::LUA_REGISTRYINDEX,
                ffi::lua_Integer::from(self.keys[key as usize]),
            );
        }
    }
}

/// The stack room the build uses at most: the list, a message, a key and the sender's table,
/// and a key and a value of that table.
const ROOM: c_int = 6;

/// Stack: `params` (a light userdata pointing at [`Params`]). Sets the context fields and
/// returns the messages list when there are messages to build, else nothing.
///
/// # Safety
/// Called by Lua through `lua_pcall` from [`MatchTables::build`], with that stack.
unsafe extern "C-unwind" fn build_protected(state: *mut ffi::lua_State) -> c_int {
    unsafe {
        let params = &*ffi::lua_touserdata(state, 1).cast::<Params<'_>>();
        ffi::lua_settop(state, 0);
        ffi::luaL_checkstack(state, ROOM, c"no room for the match's tables".as_ptr());
        set_context(state, params);
        match params.messages {
            Some(messages) => {
                push_messages(state, params, messages);
                1
            }
            None => 0,
        }
    }
}

/// Sets the changed context fields, in the order the safe API set them.
///
/// # Safety
/// As [`Params::push_key`], with room for three values.
unsafe fn set_context(state: *mut ffi::lua_State, params: &Params<'_>) {
    let context = params.context;
    unsafe {
        ffi::lua_rawgeti(
            state,
            ffi::LUA_REGISTRYINDEX,
            ffi::lua_Integer::from(context.table.id()),
        );
        if let Some(label) = context.label {
            params.push_key(state, Key::MatchLabel);
            raw_push::push_str(state, label);
            ffi::lua_rawset(state, -3);
        }
        params.push_key(state, Key::MatchSize);
        ffi::lua_pushinteger(state, context.size as ffi::lua_Integer);
        ffi::lua_rawset(state, -3);
        params.push_key(state, Key::MatchPendingJoins);
        ffi::lua_pushinteger(state, context.pending_joins as ffi::lua_Integer);
        ffi::lua_rawset(state, -3);
        ffi::lua_pop(state, 1);
    }
}

/// Pushes the messages list: `{sender, op_code, data, reliable, receive_time_ms}` per message,
/// each field set as the safe API set it (`data = nil` for an empty payload: the key is
/// inserted all the same, which decides where the later keys land).
///
/// # Safety
/// As [`Params::push_key`], with [`ROOM`] values of room.
unsafe fn push_messages(state: *mut ffi::lua_State, params: &Params<'_>, messages: &Messages<'_>) {
    unsafe {
        ffi::lua_createtable(state, raw_push::len(messages.messages.len()), 0);
        for (i, m) in messages.messages.iter().enumerate() {
            ffi::lua_createtable(state, 0, 5);
            params.push_key(state, Key::Sender);
            push_sender(state, params, messages, &m.sender);
            ffi::lua_rawset(state, -3);
            params.push_key(state, Key::OpCode);
            ffi::lua_pushinteger(state, m.op_code as ffi::lua_Integer);
            ffi::lua_rawset(state, -3);
            params.push_key(state, Key::Data);
            if m.data.is_empty() {
                ffi::lua_pushnil(state);
            } else {
                ffi::lua_pushlstring(state, m.data.as_ptr().cast(), m.data.len());
            }
            ffi::lua_rawset(state, -3);
            params.push_key(state, Key::Reliable);
            ffi::lua_pushboolean(state, c_int::from(m.reliable));
            ffi::lua_rawset(state, -3);
            params.push_key(state, Key::ReceiveTimeMs);
            ffi::lua_pushinteger(state, m.receive_time_ms as ffi::lua_Integer);
            ffi::lua_rawset(state, -3);
            // An index past 2^31 messages cannot be: they would not fit in memory.
            ffi::lua_rawseti(state, -2, (i + 1) as ffi::lua_Integer);
        }
    }
}

/// Pushes a sender's presence table: a joined player's kept table, or a new one
/// (`user_id`, `session_id`, `username`, `node`) handed out to the dispatcher by its address.
///
/// # Safety
/// As [`Params::push_key`], with room for three values.
unsafe fn push_sender(
    state: *mut ffi::lua_State,
    params: &Params<'_>,
    messages: &Messages<'_>,
    sender: &Arc<Presence>,
) {
    unsafe {
        if let Some((key, _)) = messages.members.get(&sender.session_id) {
            ffi::lua_rawgeti(
                state,
                ffi::LUA_REGISTRYINDEX,
                ffi::lua_Integer::from(key.id()),
            );
            return;
        }
        let mut uuid = Uuid::encode_buffer();
        ffi::lua_createtable(state, 0, 5);
        params.push_key(state, Key::UserId);
        raw_push::push_str(state, sender.user_id.hyphenated().encode_lower(&mut uuid));
        ffi::lua_rawset(state, -3);
        params.push_key(state, Key::SessionId);
        raw_push::push_str(
            state,
            sender.session_id.hyphenated().encode_lower(&mut uuid),
        );
        ffi::lua_rawset(state, -3);
        params.push_key(state, Key::Username);
        raw_push::push_str(state, &sender.username);
        ffi::lua_rawset(state, -3);
        params.push_key(state, Key::Node);
        raw_push::push_str(state, &sender.node);
        ffi::lua_rawset(state, -3);
        // No Lua call while the recorder is borrowed; the clone is moved into it.
        let address = ffi::lua_topointer(state, -1) as usize;
        messages.recorder.hand_out(address, sender.clone());
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use metafi_runtime::match_bridge::Dialect;

    use super::*;

    fn presence(n: u128, name: &str) -> Arc<Presence> {
        Arc::new(Presence {
            user_id: Uuid::from_u128(0xaaaa_0000 + n),
            session_id: Uuid::from_u128(0xbbbb_0000 + n),
            username: Arc::from(name),
            node: Arc::from("node-1"),
        })
    }

    fn message(sender: &Arc<Presence>, op_code: i64, data: &'static [u8]) -> MatchMessage {
        MatchMessage {
            sender: sender.clone(),
            op_code,
            data: Bytes::from_static(data),
            reliable: op_code % 2 == 0,
            receive_time_ms: 1_764_000_000_000 + op_code,
        }
    }

    /// The presence table as `presence_table` builds it through mlua's safe API.
    fn reference_presence(lua: &Lua, p: &Presence) -> mlua::Result<Table> {
        let table = lua.create_table_with_capacity(0, 5)?;
        table.raw_set("user_id", p.user_id.to_string())?;
        table.raw_set("session_id", p.session_id.to_string())?;
        table.raw_set("username", &*p.username)?;
        table.raw_set("node", &*p.node)?;
        Ok(table)
    }

    /// The list as `LuaMatch::tick` built it through mlua's safe API before this module: the
    /// reference.
    fn reference(lua: &Lua, messages: &[MatchMessage], members: &Members) -> mlua::Result<Table> {
        let list = lua.create_table_with_capacity(messages.len(), 0)?;
        for (i, m) in messages.iter().enumerate() {
            let message = lua.create_table_with_capacity(0, 5)?;
            let sender = match members.get(&m.sender.session_id) {
                Some((key, _)) => lua.registry_value(key)?,
                None => reference_presence(lua, &m.sender)?,
            };
            message.raw_set("sender", sender)?;
            message.raw_set("op_code", m.op_code)?;
            if m.data.is_empty() {
                message.raw_set("data", Value::Nil)?;
            } else {
                message.raw_set("data", lua.create_string(&m.data)?)?;
            }
            message.raw_set("reliable", m.reliable)?;
            message.raw_set("receive_time_ms", m.receive_time_ms)?;
            list.raw_set(i + 1, message)?;
        }
        Ok(list)
    }

    /// A value printed with its table keys in `pairs` order, so two tables compare by content
    /// and by the order a script walks them in.
    fn show_in_order(lua: &Lua) -> Function {
        lua.load(
            r#"
            local function show(v)
              if type(v) ~= "table" then return type(v) .. ":" .. tostring(v) end
              local out = {}
              for k, x in pairs(v) do out[#out + 1] = tostring(k) .. "=" .. show(x) end
              return "{" .. table.concat(out, ",") .. "}"
            end
            return show
            "#,
        )
        .eval()
        .unwrap()
    }

    struct Match {
        lua: Lua,
        tables: Rc<MatchTables>,
        ctx: RegistryKey,
        members: Members,
        recorder: DispatchRecorder<usize>,
        member: Arc<Presence>,
        stranger: Arc<Presence>,
    }

    impl Match {
        fn new() -> Match {
            let lua = Lua::new();
            let tables = MatchTables::of(&lua).unwrap();
            let ctx = lua
                .create_registry_value(lua.create_table().unwrap())
                .unwrap();
            let member = presence(1, "member");
            let table = reference_presence(&lua, &member).unwrap();
            let pointer = table.to_pointer() as usize;
            let mut members = Members::new();
            members.insert(
                member.session_id,
                (lua.create_registry_value(table).unwrap(), pointer),
            );
            Match {
                lua,
                tables,
                ctx,
                members,
                recorder: DispatchRecorder::new(Dialect::Lua),
                member,
                stranger: presence(2, "stranger"),
            }
        }

        fn messages(&self) -> Vec<MatchMessage> {
            vec![
                message(&self.member, 1, b"{\"x\":1}"),
                message(&self.member, 2, b""),
                message(&self.stranger, 3, b"bin\x00ary"),
                message(&self.stranger, 4, b""),
            ]
        }

        fn build(&self, messages: &[MatchMessage], label: Option<&str>) -> mlua::Result<Table> {
            let context = ContextFields {
                table: &self.ctx,
                label,
                size: 3,
                pending_joins: 1,
            };
            let messages = Messages {
                messages,
                members: &self.members,
                recorder: &self.recorder,
            };
            let list = self.tables.build(&self.lua, &context, Some(&messages))?;
            Ok(list.expect("a list is built for messages"))
        }

        /// The addresses of the tables handed to the dispatcher.
        fn handed(&self) -> Vec<usize> {
            let mut handed = Vec::new();
            self.recorder.retain(|key| {
                handed.push(*key);
                true
            });
            handed.sort_unstable();
            handed
        }
    }

    #[test]
    fn messages_match_the_safe_api_construction() {
        let m = Match::new();
        let messages = m.messages();
        let ours = m.build(&messages, None).unwrap();
        let theirs = reference(&m.lua, &messages, &m.members).unwrap();
        for show in [
            crate::test_support::show_sorted(&m.lua),
            show_in_order(&m.lua),
        ] {
            let ours: String = show.call(&ours).unwrap();
            let theirs: String = show.call(&theirs).unwrap();
            assert_eq!(ours, theirs);
        }
        let fields: Function = m
            .lua
            .load(
                r#"return function(list, member)
                  local out = {}
                  for i, message in ipairs(list) do
                    out[i] = table.concat({
                      tostring(message.data), tostring(message.sender == member),
                      message.sender.username, message.sender.user_id,
                      tostring(message.op_code), tostring(message.reliable),
                      string.format("%d", message.receive_time_ms),
                    }, " ")
                  end
                  return table.concat(out, "\n")
                end"#,
            )
            .eval()
            .unwrap();
        let member: Table = m
            .lua
            .registry_value(&m.members[&m.member.session_id].0)
            .unwrap();
        let shown: String = fields.call((&ours, member)).unwrap();
        assert_eq!(
            shown,
            "{\"x\":1} true member 00000000-0000-0000-0000-0000aaaa0001 1 false 1764000000001\n\
             nil true member 00000000-0000-0000-0000-0000aaaa0001 2 true 1764000000002\n\
             bin\0ary false stranger 00000000-0000-0000-0000-0000aaaa0002 3 false 1764000000003\n\
             nil false stranger 00000000-0000-0000-0000-0000aaaa0002 4 true 1764000000004"
        );
    }

    #[test]
    fn a_non_members_table_is_handed_to_the_dispatcher() {
        let m = Match::new();
        let list = m.build(&m.messages(), None).unwrap();
        let senders: Vec<usize> = (3..=4)
            .map(|i| {
                let message: Table = list.raw_get(i).unwrap();
                let sender: Table = message.raw_get("sender").unwrap();
                sender.to_pointer() as usize
            })
            .collect();
        // One new table per message, as before; the member's kept table is not handed out
        // again (it was when the player joined).
        assert_ne!(senders[0], senders[1]);
        let mut expected = senders.clone();
        expected.sort_unstable();
        assert_eq!(m.handed(), expected);
    }

    #[test]
    fn the_context_fields_are_set_and_an_unchanged_label_is_left() {
        let m = Match::new();
        let ctx: Table = m.lua.registry_value(&m.ctx).unwrap();
        m.build(&[], Some("first")).unwrap();
        let read = |ctx: &Table| {
            (
                ctx.raw_get::<String>("match_label").unwrap(),
                ctx.raw_get::<i64>("match_size").unwrap(),
                ctx.raw_get::<i64>("match_pending_joins").unwrap(),
            )
        };
        assert_eq!(read(&ctx), ("first".to_owned(), 3, 1));
        ctx.raw_set("match_label", "kept").unwrap();
        let context = ContextFields {
            table: &m.ctx,
            label: None,
            size: 4,
            pending_joins: 0,
        };
        assert!(m.tables.build(&m.lua, &context, None).unwrap().is_none());
        assert_eq!(read(&ctx), ("kept".to_owned(), 4, 0));
    }

    #[test]
    fn out_of_memory_is_mluas_memory_error_and_leaves_the_stack() {
        let m = Match::new();
        static BIG: [u8; 1 << 20] = [b'x'; 1 << 20];
        let big = MatchMessage {
            sender: m.stranger.clone(),
            op_code: 1,
            data: Bytes::from_static(&BIG),
            reliable: true,
            receive_time_ms: 0,
        };
        m.lua.gc_collect().unwrap();
        m.lua
            .set_memory_limit(m.lua.used_memory() + (256 << 10))
            .unwrap();
        let error = m.build(&[big], None).unwrap_err();
        assert!(matches!(error, mlua::Error::MemoryError(_)), "{error:?}");
        m.lua.set_memory_limit(0).unwrap();
        // The state is usable and the next build as before.
        let list = m.build(&m.messages(), None).unwrap();
        assert_eq!(list.raw_len(), 4);
    }
}
