//! Authoritative match handlers written in Lua, with Nakama's contract
//! (`runtime_lua_match_core.go`): `nk.match_create("module", params)` names a module that
//! returns a table with `match_init`, `match_join_attempt`, `match_join`, `match_leave`,
//! `match_loop`, `match_terminate` and `match_signal`.
//!
//! By default each match gets its own Lua state with every module loaded (Nakama's model:
//! module-level variables are per match, a failing match cannot disturb another's globals),
//! created on the match's executor thread where it stays. With [`MatchVms::PerThread`] the
//! matches of an executor thread share one state, loaded once (see `docs/MATCHES.md` for the
//! measured trade-off). The match state is an opaque Lua value kept in the VM, never
//! converted. Callbacks run under the match budget through the same budget hook (`budget.rs`)
//! as RPCs; one that calls an `nk` function doing IO blocks its executor thread until the IO is
//! done or the budget is spent (`docs/MATCHES.md`).
//!
//! The dispatcher's rules (arguments, limits, recording and replay), the callbacks' names and
//! errors and the per-thread VM cache are the host's match bridge
//! ([`metafi_runtime::match_bridge`]); this file converts Lua values for it.
//!
//! Context: Nakama's `match_id`, `match_node`, `match_label`, `match_tick_rate`, plus
//! `match_size` (presences that joined) and `match_pending_joins` (accepted joins not yet
//! completed, and seats reserved for players on their way): a capacity check is
//! `match_size + match_pending_joins < max`.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use metafi_match::{
    Dispatcher, Flow, HandlerError, IdleStatus, JoinRequest, JoinVerdict, MatchContext,
    MatchHandler, MatchInit, MatchMessage, Params, Presence, PresenceReason,
};
use metafi_runtime::host::VmSetup;
use metafi_runtime::match_bridge::{
    self, Arg, Callback, Dialect, DispatchRecorder, Refusal, ScriptObject, ThreadVms,
};
use metafi_runtime::match_host::{MATCHMAKER_MATCHED_HOOK, MatchVms};
use mlua::{Function, Lua, MultiValue, RegistryKey, Table, Value};

use super::{LuaVm, VmShared, WithDeadline, convert, is_budget};
use crate::match_tables::{ContextFields, MatchTables, Members, Messages};

/// The dispatcher of a Lua match; presence tables are known by their address.
type Recorder = DispatchRecorder<usize>;

/// Whether `name` is a Lua module (Nakama names Lua match handlers by module).
pub(crate) fn has_match(setup: &VmSetup, name: &str) -> bool {
    setup.modules.iter().any(|m| m.name == name)
}

/// A Lua match handler: one Lua state, the module's callbacks, the match state.
///
/// The Lua values a match keeps between callbacks are anchored in the Lua registry
/// ([`RegistryKey`]), not held as mlua handles: every live handle occupies a slot of mlua's
/// reference stack, which LuaJIT caps near 8,000 slots per state, so a few hundred matches
/// sharing one VM (`match.vm_per_match = false`) would exhaust it ("out of Lua stack"). Handles
/// are made from the keys for one callback and dropped when it returns.
pub(crate) struct LuaMatch {
    vm: Rc<LuaVm>,
    callback_keys: Vec<RegistryKey>,
    ctx_key: RegistryKey,
    dispatcher_key: RegistryKey,
    state_key: RegistryKey,
    recorder: Rc<Recorder>,
    /// Presence tables of joined players, reused in every tick's messages, with their
    /// addresses (the recorder's keys).
    member_tables: Members,
    /// Builds the context fields and `match_loop`'s messages in one protected call (shared
    /// by the matches of the Lua state).
    tables: Rc<MatchTables>,
    label: Arc<str>,
}

thread_local! {
    /// The shared Lua state of this executor thread, per module set ([`MatchVms::PerThread`]).
    static THREAD_VMS: ThreadVms<LuaVm> = const { ThreadVms::new() };
}

fn load(setup: VmSetup) -> Result<LuaVm, HandlerError> {
    let deadline = Instant::now() + setup.limits.load_timeout;
    match metafi_runtime::block_on_until(LuaVm::create(setup), Some(deadline)) {
        Some(Ok(vm)) => Ok(vm),
        Some(Err(e)) => Err(HandlerError::failed(format!(
            "error loading match module: {e}"
        ))),
        None => Err(HandlerError::failed(
            "loading the modules for a match took longer than runtime.load_timeout_ms",
        )),
    }
}

/// Builds the handler of module `name` (called on the executor thread).
pub(crate) fn create(
    setup: VmSetup,
    name: &str,
    vms: MatchVms,
) -> Result<Box<dyn MatchHandler>, HandlerError> {
    let vm = match_bridge::match_vm(
        &THREAD_VMS,
        vms,
        setup,
        |_| true,
        |setup| Ok(paced(Rc::new(load(setup)?))),
    )?;
    let lua = vm.lua.clone();
    let internal = |e: mlua::Error| HandlerError::failed(format!("match module '{name}': {e}"));
    // `get`, not `raw_get`: once frozen, the library globals live behind `_G`'s `__index`.
    let require: Function = lua.globals().get("require").map_err(internal)?;
    let module: Value = require.call(name).map_err(|e| {
        HandlerError::failed(format!(
            "error loading match module: {}",
            super::innermost_message(&e)
        ))
    })?;
    let Value::Table(module) = module else {
        return Err(HandlerError::failed(
            "match module must return a table containing the match callback functions",
        ));
    };
    let mut callback_keys = Vec::with_capacity(Callback::ALL.len());
    for callback in Callback::ALL.map(|c| c.name(Dialect::Lua)) {
        match module.raw_get::<Value>(callback).map_err(internal)? {
            Value::Function(f) => {
                callback_keys.push(lua.create_registry_value(f).map_err(internal)?);
            }
            _ => {
                return Err(HandlerError::failed(format!(
                    "{callback} not found or not a function"
                )));
            }
        }
    }
    let recorder = Rc::new(Recorder::new(Dialect::Lua));
    let anchor = |value: Value| lua.create_registry_value(value).map_err(internal);
    let ctx_key = anchor(Value::Table(base_context(&lua).map_err(internal)?))?;
    let dispatcher_key = anchor(Value::Table(
        dispatcher_table(&lua, &recorder).map_err(internal)?,
    ))?;
    let state_key = anchor(Value::Nil)?;
    let tables = MatchTables::of(&lua).map_err(internal)?;
    Ok(Box::new(LuaMatch {
        vm,
        callback_keys,
        ctx_key,
        dispatcher_key,
        state_key,
        recorder,
        member_tables: Members::new(),
        tables,
        label: Arc::from(""),
    }))
}

/// Lets the executor thread collect `vm`'s garbage while no tick is due (`docs/MATCHES.md`,
/// "Lua garbage collection between ticks").
fn paced(vm: Rc<LuaVm>) -> Rc<LuaVm> {
    let mut collector = IdleCollector::new(&vm.lua);
    metafi_match::register_idle_task(move |until| collector.run(until));
    vm
}

/// Garbage collection of one Lua state in the executor's idle time. Once the heap has grown by
/// 80 % since the last finished cycle (just before LuaJIT's own trigger at 100 %, so cycles are
/// not more frequent than without it), idle slices run the incremental collector step by step
/// until the cycle finishes, so the steps the allocator would otherwise trigger inside ticks
/// (tracing and sweeping the heap of every match sharing the state) mostly happen between
/// them. LuaJIT's own pacing is untouched and still runs a cycle at twice the live heap when the
/// thread has no idle time, so memory stays bounded as before.
struct IdleCollector {
    lua: mlua::WeakLua,
    /// Heap size when the last cycle finished.
    live: usize,
    /// A cycle this collector started is under way.
    in_cycle: bool,
}

impl IdleCollector {
    fn new(lua: &Lua) -> IdleCollector {
        IdleCollector {
            lua: lua.weak(),
            live: lua.used_memory(),
            in_cycle: false,
        }
    }

    fn run(&mut self, until: Instant) -> IdleStatus {
        let Some(lua) = self.lua.try_upgrade() else {
            return IdleStatus::Gone;
        };
        let start_at = self
            .live
            .saturating_add(self.live / 5 * 4)
            .max(IDLE_GC_MIN_BYTES);
        if !self.in_cycle && lua.used_memory() < start_at {
            return IdleStatus::Done;
        }
        loop {
            match lua.gc_step() {
                Ok(false) => self.in_cycle = true,
                // A cycle finished, or the step failed (logged): either way the cycle is over.
                done @ (Ok(true) | Err(_)) => {
                    if let Err(e) = done {
                        tracing::warn!(error = %e, "idle Lua garbage collection step failed");
                    }
                    self.in_cycle = false;
                    self.live = lua.used_memory();
                    return IdleStatus::Done;
                }
            }
            if Instant::now() >= until {
                return IdleStatus::Pending;
            }
        }
    }
}

/// Below this heap size idle collection does not start a cycle (too little to be worth it).
const IDLE_GC_MIN_BYTES: usize = 1 << 20;

fn base_context(lua: &Lua) -> mlua::Result<Table> {
    let shared = shared_of(lua)?;
    let ctx = lua.create_table_with_capacity(0, 12)?;
    ctx.raw_set("env", shared.env.clone())?;
    ctx.raw_set("execution_mode", "match")?;
    ctx.raw_set("node", &**shared.nk.node())?;
    Ok(ctx)
}

impl LuaMatch {
    fn lua(&self) -> &Lua {
        &self.vm.lua
    }

    /// The match's context table (a handle valid for the current callback).
    fn ctx(&self) -> mlua::Result<Table> {
        self.lua().registry_value(&self.ctx_key)
    }

    /// The dispatcher table.
    fn dispatcher(&self) -> mlua::Result<Table> {
        self.lua().registry_value(&self.dispatcher_key)
    }

    /// The match state the last callback returned.
    fn state(&self) -> mlua::Result<Value> {
        self.lua().registry_value(&self.state_key)
    }

    /// The arguments of a callback after `match_init`: context, dispatcher, tick, state, and
    /// the callback's own last argument.
    fn callback_args(&self, tick: i64, last: Value) -> mlua::Result<MultiValue> {
        Ok(MultiValue::from_iter([
            Value::Table(self.ctx()?),
            Value::Table(self.dispatcher()?),
            Value::Integer(tick),
            self.state()?,
            last,
        ]))
    }

    /// Refreshes the context fields that change during the match.
    fn update_context(&mut self, ctx: &MatchContext) -> Result<(), HandlerError> {
        self.refresh(ctx, None).map(|_| ())
    }

    /// Refreshes the context fields and, with `messages` (`match_loop`'s), builds the list of
    /// them: one protected call for both (`match_tables.rs`).
    fn refresh(
        &mut self,
        ctx: &MatchContext,
        messages: Option<&[MatchMessage]>,
    ) -> Result<Option<Table>, HandlerError> {
        let changed = *self.label != *ctx.label;
        let fields = ContextFields {
            table: &self.ctx_key,
            label: changed.then_some(&*ctx.label),
            size: ctx.presences as i64,
            pending_joins: ctx.pending_joins as i64,
        };
        let messages = messages.map(|messages| Messages {
            messages,
            members: &self.member_tables,
            recorder: &self.recorder,
        });
        let built = self
            .tables
            .build(self.lua(), &fields, messages.as_ref())
            .map_err(LuaMatch::lua_error)?;
        if changed {
            self.label = ctx.label.clone();
        }
        Ok(built)
    }

    /// A presence as a Lua table (`user_id`, `session_id`, `username`, `node`), registered so
    /// the script can hand it back to the dispatcher.
    fn presence_table(
        &self,
        presence: &Arc<Presence>,
        reason: Option<PresenceReason>,
    ) -> mlua::Result<Table> {
        if reason.is_none()
            && let Some((key, _)) = self.member_tables.get(&presence.session_id)
        {
            return self.lua().registry_value(key);
        }
        let lua = self.lua();
        let table = lua.create_table_with_capacity(0, 5)?;
        table.raw_set("user_id", presence.user_id.to_string())?;
        table.raw_set("session_id", presence.session_id.to_string())?;
        table.raw_set("username", &*presence.username)?;
        table.raw_set("node", &*presence.node)?;
        if let Some(reason) = reason {
            table.raw_set("reason", reason as u8)?;
        }
        self.recorder
            .hand_out(table.to_pointer() as usize, presence.clone());
        Ok(table)
    }

    fn presence_list(
        &self,
        presences: &[Arc<Presence>],
        reason: PresenceReason,
    ) -> mlua::Result<Table> {
        let list = self.lua().create_table_with_capacity(presences.len(), 0)?;
        for (i, p) in presences.iter().enumerate() {
            list.raw_set(i + 1, self.presence_table(p, Some(reason))?)?;
        }
        Ok(list)
    }

    /// Runs one callback under the budget and returns what it returned.
    fn call(
        &mut self,
        callback: Callback,
        ctx: &MatchContext,
        args: MultiValue,
        room: usize,
    ) -> Result<MultiValue, HandlerError> {
        self.recorder.begin(room);
        let function: Function = self
            .lua()
            .registry_value(&self.callback_keys[callback.index()])
            .map_err(LuaMatch::lua_error)?;
        let run = function.call_async::<MultiValue>(args);
        let guarded = WithDeadline::new(Box::pin(run), ctx.deadline, self.vm.deadline.clone());
        let outcome = metafi_runtime::block_on_until(guarded, Some(ctx.deadline));
        let timed_out = Instant::now() >= ctx.deadline;
        match outcome {
            None => Err(HandlerError::Timeout),
            Some(Ok(values)) => Ok(values),
            Some(Err(e)) if is_budget(&e) || timed_out => Err(HandlerError::Timeout),
            Some(Err(e)) => Err(match_bridge::handler_error(
                Dialect::Lua,
                callback,
                self.vm.mlua_error(&e, false),
            )),
        }
    }

    /// Hands what the callback recorded to the engine's dispatcher, in order.
    fn replay(&mut self, d: &mut Dispatcher<'_>) {
        self.recorder.replay(d);
    }

    /// Takes the new state from the first returned value; nil ends the match.
    fn take_state(&mut self, value: Option<Value>) -> Result<Flow, HandlerError> {
        match value {
            None | Some(Value::Nil) => Ok(Flow::End),
            Some(state) => {
                let lua = self.vm.lua.clone();
                lua.replace_registry_value(&mut self.state_key, state)
                    .map_err(LuaMatch::lua_error)?;
                Ok(Flow::Continue)
            }
        }
    }

    fn state_only(&mut self, values: MultiValue, callback: &str) -> Result<Flow, HandlerError> {
        let mut values = values.into_iter();
        let flow = self.take_state(values.next())?;
        if values.next().is_some() {
            return Err(HandlerError::invalid(format!(
                "{callback} returned too many values, stopping match"
            )));
        }
        Ok(flow)
    }

    fn lua_error(e: mlua::Error) -> HandlerError {
        HandlerError::failed(e.to_string())
    }
}

impl MatchHandler for LuaMatch {
    fn init(&mut self, ctx: &MatchContext, params: &Params) -> Result<MatchInit, HandlerError> {
        let setup = (|| -> mlua::Result<Value> {
            let table = self.ctx()?;
            table.raw_set("match_id", &*ctx.match_id)?;
            table.raw_set("match_node", &*ctx.node)?;
            if params.is_empty() {
                Ok(Value::Nil)
            } else {
                Ok(Value::Table(convert::object_to_table(self.lua(), params)?))
            }
        })();
        let params = setup.map_err(LuaMatch::lua_error)?;
        self.update_context(ctx)?;
        let args = MultiValue::from_iter([
            Value::Table(self.ctx().map_err(LuaMatch::lua_error)?),
            params,
        ]);
        let values: Vec<Value> = self
            .call(Callback::Init, ctx, args, 0)?
            .into_iter()
            .collect();
        self.recorder.discard();
        if values.len() > 3 {
            return Err(HandlerError::invalid(
                "match_init returned too many arguments, must be: state, tick rate number, label string",
            ));
        }
        let label = match values.get(2) {
            Some(Value::String(s)) => s.to_string_lossy(),
            _ => {
                return Err(HandlerError::invalid(
                    "match_init returned unexpected third value, must be a label string",
                ));
            }
        };
        let tick_rate = match values.get(1) {
            Some(Value::Integer(n)) => *n,
            Some(Value::Number(n)) => *n as i64,
            _ => {
                return Err(HandlerError::invalid(
                    "match_init returned unexpected second value, must be a tick rate number",
                ));
            }
        };
        match values.first() {
            None | Some(Value::Nil) => {
                return Err(HandlerError::invalid("Match initial state must not be nil"));
            }
            Some(state) => {
                let lua = self.vm.lua.clone();
                lua.replace_registry_value(&mut self.state_key, state.clone())
                    .map_err(LuaMatch::lua_error)?;
            }
        }
        let tick_rate = u32::try_from(tick_rate).unwrap_or(0);
        let result = (|| -> mlua::Result<()> {
            let table = self.ctx()?;
            table.raw_set("match_label", label.as_str())?;
            table.raw_set("match_tick_rate", tick_rate)?;
            Ok(())
        })();
        result.map_err(LuaMatch::lua_error)?;
        self.label = Arc::from(label.as_str());
        Ok(MatchInit { tick_rate, label })
    }

    fn join_attempt(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        request: &JoinRequest,
    ) -> Result<JoinVerdict, HandlerError> {
        self.update_context(ctx)?;
        let built = (|| -> mlua::Result<MultiValue> {
            let lua = self.lua().clone();
            // A copy of the match context with the joining user, as Nakama builds it.
            let call_ctx = lua.create_table_with_capacity(0, 16)?;
            for pair in self.ctx()?.pairs::<Value, Value>() {
                let (k, v) = pair?;
                call_ctx.raw_set(k, v)?;
            }
            let p = &request.presence;
            call_ctx.raw_set("user_id", p.user_id.to_string())?;
            call_ctx.raw_set("username", &*p.username)?;
            call_ctx.raw_set("session_id", p.session_id.to_string())?;
            call_ctx.raw_set("user_session_exp", request.session_expiry)?;
            let vars = lua.create_table()?;
            for (k, v) in request.vars.iter() {
                vars.raw_set(k.as_str(), v.as_str())?;
            }
            call_ctx.raw_set("vars", vars)?;
            if let Some(ip) = &request.client_ip {
                call_ctx.raw_set("client_ip", ip.as_str())?;
            }
            if let Some(port) = &request.client_port {
                call_ctx.raw_set("client_port", port.as_str())?;
            }
            let presence = self.presence_table(p, None)?;
            let metadata = lua.create_table()?;
            for (k, v) in &request.metadata {
                metadata.raw_set(k.as_str(), v.as_str())?;
            }
            Ok(MultiValue::from_iter([
                Value::Table(call_ctx),
                Value::Table(self.dispatcher()?),
                Value::Integer(tick),
                self.state()?,
                Value::Table(presence),
                Value::Table(metadata),
            ]))
        })();
        let args = built.map_err(LuaMatch::lua_error)?;
        let values: Vec<Value> = self
            .call(Callback::JoinAttempt, ctx, args, d.deferred_room())?
            .into_iter()
            .collect();
        self.replay(d);
        // state, allow [, reason]
        let (allow, reason) = match (values.get(1), values.get(2)) {
            (Some(Value::Boolean(allow)), None | Some(Value::Nil)) => (*allow, None),
            (Some(Value::Boolean(allow)), Some(Value::String(reason))) => {
                (*allow, Some(reason.to_string_lossy()))
            }
            (Some(Value::Boolean(_)), Some(_)) => {
                return Err(HandlerError::invalid(
                    "Match join attempt returned non-string reject reason, stopping match",
                ));
            }
            _ => {
                return Err(HandlerError::invalid(
                    "Match join attempt returned incorrect or too few values, stopping match - expected: state, join result boolean, optional reject reason string",
                ));
            }
        };
        if values.len() > 3 {
            return Err(HandlerError::invalid(
                "Match join attempt returned too many values, stopping match",
            ));
        }
        let flow = self.take_state(values.into_iter().next())?;
        Ok(JoinVerdict {
            flow,
            allow,
            reason,
        })
    }

    fn join(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        presences: &[Arc<Presence>],
    ) -> Result<Flow, HandlerError> {
        self.update_context(ctx)?;
        let built = (|| -> mlua::Result<MultiValue> {
            for p in presences {
                let table = self.presence_table(p, None)?;
                let pointer = table.to_pointer() as usize;
                let key = self.lua().create_registry_value(table)?;
                self.member_tables.insert(p.session_id, (key, pointer));
            }
            let list = self.presence_list(presences, PresenceReason::Join)?;
            self.callback_args(tick, Value::Table(list))
        })();
        let args = built.map_err(LuaMatch::lua_error)?;
        let values = self.call(Callback::Join, ctx, args, d.deferred_room())?;
        self.replay(d);
        self.state_only(values, "Match join")
    }

    fn leave(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        presences: &[Arc<Presence>],
        reason: PresenceReason,
    ) -> Result<Flow, HandlerError> {
        self.update_context(ctx)?;
        for p in presences {
            if let Some((_, pointer)) = self.member_tables.remove(&p.session_id) {
                self.recorder.forget(&pointer);
            }
        }
        let built = (|| -> mlua::Result<MultiValue> {
            let list = self.presence_list(presences, reason)?;
            self.callback_args(tick, Value::Table(list))
        })();
        let args = built.map_err(LuaMatch::lua_error)?;
        let values = self.call(Callback::Leave, ctx, args, d.deferred_room())?;
        self.replay(d);
        self.forget_transient();
        self.state_only(values, "Match leave")
    }

    fn tick(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        messages: &[MatchMessage],
    ) -> Result<Flow, HandlerError> {
        let list = self
            .refresh(ctx, Some(messages))?
            .ok_or_else(|| HandlerError::failed("the match_loop messages were not built"))?;
        let args = self
            .callback_args(tick, Value::Table(list))
            .map_err(LuaMatch::lua_error)?;
        let values = self.call(Callback::Loop, ctx, args, d.deferred_room())?;
        self.replay(d);
        self.state_only(values, "Match loop")
    }

    fn terminate(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        grace_seconds: u32,
    ) -> Result<Flow, HandlerError> {
        self.update_context(ctx)?;
        let args = self
            .callback_args(tick, Value::Integer(i64::from(grace_seconds)))
            .map_err(LuaMatch::lua_error)?;
        let values = self.call(Callback::Terminate, ctx, args, d.deferred_room())?;
        self.replay(d);
        self.state_only(values, "Match terminate")
    }

    fn signal(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        data: &str,
    ) -> Result<(Flow, String), HandlerError> {
        self.update_context(ctx)?;
        let args = (|| {
            let data = self.lua().create_string(data)?;
            self.callback_args(tick, Value::String(data))
        })()
        .map_err(LuaMatch::lua_error)?;
        let values: Vec<Value> = self
            .call(Callback::Signal, ctx, args, d.deferred_room())?
            .into_iter()
            .collect();
        self.replay(d);
        if values.len() > 2 {
            return Err(HandlerError::invalid(
                "Match signal returned too many values, stopping match",
            ));
        }
        let reply = match values.get(1) {
            None | Some(Value::Nil) => String::new(),
            Some(Value::String(s)) => s.to_string_lossy(),
            Some(_) => {
                return Err(HandlerError::invalid(
                    "Match signal returned non-string result, stopping match",
                ));
            }
        };
        let flow = self.take_state(values.into_iter().next())?;
        Ok((flow, reply))
    }
}

impl LuaMatch {
    /// Forgets presence tables made for one callback (join attempts, leave lists); members'
    /// tables stay.
    fn forget_transient(&mut self) {
        let kept: std::collections::HashSet<usize> = self
            .member_tables
            .values()
            .map(|(_, pointer)| *pointer)
            .collect();
        self.recorder.retain(|pointer| kept.contains(pointer));
    }
}

/// The `dispatcher` table: Nakama's four functions, recording into `recorder`.
fn dispatcher_table(lua: &Lua, recorder: &Rc<Recorder>) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(0, 4)?;
    for (name, deferred) in [
        ("broadcast_message", false),
        ("broadcast_message_deferred", true),
    ] {
        let recorder = recorder.clone();
        let function = lua.create_function(move |_, args: MultiValue| {
            let args: [Arg<LuaTable>; 5] = std::array::from_fn(|i| classify(args.get(i)));
            recorder.broadcast(&args, deferred).map_err(raise)
        })?;
        table.raw_set(name, function)?;
    }
    let one_argument: [(&str, OneArgument); 2] = [
        ("match_kick", Recorder::kick),
        ("match_label_update", Recorder::update_label),
    ];
    for (name, call) in one_argument {
        let recorder = recorder.clone();
        let function = lua.create_function(move |_, value: Value| {
            call(&recorder, &classify(Some(&value))).map_err(raise)
        })?;
        table.raw_set(name, function)?;
    }
    Ok(table)
}

/// A dispatcher function of one argument (`match_kick`, `match_label_update`).
type OneArgument = fn(&Recorder, &Arg<LuaTable>) -> Result<(), Refusal<mlua::Error>>;

fn bad_argument(position: usize, message: &str) -> mlua::Error {
    mlua::Error::runtime(format!("bad argument #{position} ({message})"))
}

/// A refused dispatcher call as the Lua error the script sees.
fn raise(refusal: Refusal<mlua::Error>) -> mlua::Error {
    match refusal {
        Refusal::Argument { position, message } => bad_argument(position, &message),
        Refusal::Failed(message) => mlua::Error::runtime(message),
        Refusal::Engine(e) => e,
    }
}

/// A Lua value as the match bridge's rules see it.
fn classify(value: Option<&Value>) -> Arg<LuaTable> {
    match value {
        None | Some(Value::Nil) => Arg::Absent,
        Some(Value::Boolean(b)) => Arg::Bool(*b),
        Some(Value::Integer(n)) => Arg::Integer(*n),
        Some(Value::Number(n)) if n.fract() == 0.0 => Arg::Integer(*n as i64),
        Some(Value::Number(n)) => Arg::Number(*n),
        Some(Value::String(s)) => Arg::Str(Bytes::copy_from_slice(&s.as_bytes())),
        Some(Value::Table(t)) => Arg::Object(LuaTable(t.clone())),
        Some(_) => Arg::Other,
    }
}

/// A table passed to the dispatcher (a presence, a list of presences, delivery options).
struct LuaTable(Table);

impl ScriptObject for LuaTable {
    type Key = usize;
    type Error = mlua::Error;

    fn items(&self) -> mlua::Result<Option<Vec<Arg<LuaTable>>>> {
        self.0
            .sequence_values::<Value>()
            .map(|item| item.map(|value| classify(Some(&value))))
            .collect::<mlua::Result<Vec<_>>>()
            .map(Some)
    }

    fn field(&self, name: &str) -> Arg<LuaTable> {
        match self.0.raw_get::<Value>(name) {
            Ok(value) => classify(Some(&value)),
            Err(_) => Arg::Other,
        }
    }

    fn key(&self) -> Option<usize> {
        Some(self.0.to_pointer() as usize)
    }
}

/// `nk.register_matchmaker_matched(fn)`: `fn(context, matched_users)` returns the id of a match
/// for the group (usually from `nk.match_create`) or nil. Registered under a reserved id the
/// host calls with the entries as JSON; never reachable as an RPC.
pub(super) fn register_matchmaker_matched(lua: &Lua, function: Value) -> mlua::Result<()> {
    let Value::Function(function) = function else {
        return Err(bad_argument(1, "function expected"));
    };
    let decode = lua.create_function(|lua, text: mlua::LuaString| {
        convert::json_text_to_table(lua, &text.to_string_lossy())
    })?;
    let wrapper: Function = lua
        .load(
            "local decode, fn = ...\nreturn function(ctx, payload)\n  local id = fn(ctx, decode(payload))\n  if id == nil then return '' end\n  return id\nend",
        )
        .set_name("=metafi-matchmaker-hook")
        .call((decode, function))?;
    let shared: mlua::AppDataRef<'_, VmShared> = shared_of(lua)?;
    let mut registry = shared.registry.borrow_mut();
    let Some(module) = registry.loading.clone() else {
        return Err(mlua::Error::runtime(
            "nk.register_matchmaker_matched can only be called while modules load (at the top level of a module)",
        ));
    };
    registry
        .rpcs
        .insert(MATCHMAKER_MATCHED_HOOK.to_owned(), (wrapper, module));
    Ok(())
}

fn shared_of(lua: &Lua) -> mlua::Result<mlua::AppDataRef<'_, VmShared>> {
    lua.app_data_ref::<VmShared>()
        .ok_or_else(|| mlua::Error::runtime("the nakama module is not set up in this Lua state"))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn idle_collection_frees_garbage_and_waits_for_growth() {
        let lua = Lua::new();
        lua.gc_collect().ok();
        let mut collector = IdleCollector::new(&lua);
        let far = || Instant::now() + Duration::from_secs(10);
        assert_eq!(collector.run(far()), IdleStatus::Done);
        // Garbage beyond the start threshold, with the automatic collector held back.
        lua.gc_stop();
        lua.load("garbage = {} for i = 1, 40000 do garbage[i] = { i, tostring(i), {} } end garbage = nil")
            .exec()
            .unwrap_or_else(|e| panic!("{e}"));
        let before = lua.used_memory();
        assert!(before > 2 * IDLE_GC_MIN_BYTES, "made {before} bytes");
        // A slice that is already over does one step and leaves the rest for later.
        assert_eq!(
            collector.run(Instant::now() - Duration::from_millis(1)),
            IdleStatus::Pending
        );
        assert_eq!(collector.run(far()), IdleStatus::Done);
        let after = lua.used_memory();
        assert!(after < before / 2, "{before} -> {after} bytes");
        // Below the growth threshold it does nothing.
        assert_eq!(collector.run(far()), IdleStatus::Done);
        drop(lua);
        assert_eq!(collector.run(far()), IdleStatus::Gone);
    }
}
