//! Authoritative match handlers written in JavaScript, with Nakama's contract
//! (`runtime_javascript_match_core.go`): `initializer.registerMatch(name, { matchInit,
//! matchJoinAttempt, matchJoin, matchLeave, matchLoop, matchTerminate, matchSignal })` during
//! `InitModule`, then `nk.matchCreate(name, params)`.
//!
//! By default each match gets its own QuickJS VM with every module loaded (Nakama's model),
//! created on the match's executor thread where it stays ([`MatchVms::PerThread`]: the matches
//! of a thread share one VM); callbacks run under the match budget through the
//! VM's interrupt handler, and `nk` calls block the executor thread as they block a VM thread.
//! Callbacks receive `(ctx, logger, nk, dispatcher, tick, state, …)` and return an object with
//! `state` (and `tickRate`/`label` from `matchInit`, `accept`/`rejectMessage` from
//! `matchJoinAttempt`, `data` from `matchSignal`); `null` ends the match. Message `data` is an
//! `ArrayBuffer`; the dispatcher takes an `ArrayBuffer`, a typed array or a string.
//!
//! The dispatcher's rules (arguments, limits, recording and replay), the callbacks' names and
//! errors and the per-thread VM cache are the host's match bridge
//! ([`metafi_runtime::match_bridge`]); this file converts JavaScript values for it.
//! Context: Nakama's `matchId`, `matchNode`, `matchLabel`, `matchTickRate`, plus `matchSize`
//! (presences that joined) and `matchPendingJoins` (accepted joins not completed yet).

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use metafi_match::{
    Dispatcher, Flow, HandlerError, JoinRequest, JoinVerdict, MatchContext, MatchHandler,
    MatchInit, MatchMessage, Params, Presence, PresenceReason,
};
use metafi_runtime::match_bridge::{
    self, Arg, Callback, Dialect, DispatchRecorder, Refusal, ScriptObject, ThreadVms,
};
use metafi_runtime::{MATCHMAKER_MATCHED_HOOK, MatchVms, Registrations, VmSetup};
use rquickjs::function::Rest;
use rquickjs::{Ctx, Exception, Function, Object, Persistent, Value};
use tokio::runtime::Handle;
use uuid::Uuid;

use crate::convert::{self, arg};
use crate::match_values;
use crate::vm::{self, JsVm, Registration, Settled, Shared};

/// Whether a JS module registered match handler `name`.
pub(crate) fn has_match(registrations: &Registrations, name: &str) -> bool {
    registrations.matches.iter().any(|r| r.id == name)
}

/// The dispatcher of a JavaScript match; the presence objects it keeps for its members (the
/// senders of every tick's messages) are known by their address, so one passed back to the
/// dispatcher is recognised without reading and parsing its `sessionId` (≈ 670 instructions a
/// delivered message on the seed match). Each address is handed out only while the match holds
/// its object ([`Handles::presences`]), so no other object can have it; any other object is
/// read by its fields, as Nakama's runtime reads every one.
type Recorder = DispatchRecorder<usize>;

/// Persistent handles to the JavaScript side of one match. Dropped before the VM.
struct Handles {
    functions: Vec<Persistent<Function<'static>>>,
    ctx: Persistent<Object<'static>>,
    dispatcher: Persistent<Object<'static>>,
    logger: Persistent<Value<'static>>,
    state: Option<Persistent<Value<'static>>>,
    /// Presence objects of joined players, reused in every tick's messages, and each one's
    /// address (its key in the recorder).
    presences: HashMap<Uuid, Kept>,
}

/// A member's presence object, held so that its address stays its own.
struct Kept {
    object: Persistent<Object<'static>>,
    address: usize,
}

/// A JavaScript match handler: its own VM, the registered functions, the match state.
pub(crate) struct JsMatch {
    handles: Option<Handles>,
    recorder: Rc<Recorder>,
    label: Arc<str>,
    // Last: the VM must outlive every handle above.
    vm: Rc<JsVm>,
}

impl Drop for JsMatch {
    fn drop(&mut self) {
        // Release the handles while the VM is alive (QuickJS aborts on values that outlive it).
        self.handles.take();
    }
}

thread_local! {
    /// The shared VM of this executor thread, per module set ([`MatchVms::PerThread`]).
    static THREAD_VMS: ThreadVms<JsVm> = const { ThreadVms::new() };
}

/// Builds the handler registered as `name` (called on the executor thread).
pub(crate) fn create(
    setup: VmSetup,
    io: Handle,
    name: &str,
    vms: MatchVms,
    freeze: bool,
) -> Result<Box<dyn MatchHandler>, HandlerError> {
    let load = |setup: VmSetup| {
        JsVm::create(setup, io.clone(), freeze)
            .map(Rc::new)
            .map_err(|e| {
                HandlerError::failed(format!("error loading the modules for match '{name}': {e}"))
            })
    };
    // A VM whose job queue a script flooded is left to the matches already on it; new matches
    // get a fresh one.
    let vm = match_bridge::match_vm(&THREAD_VMS, vms, setup, |vm| !vm.is_poisoned(), load)?;
    let registration: Registration<Object<'static>> = vm
        .shared()
        .matches
        .borrow()
        .get(name)
        .cloned()
        .ok_or_else(|| HandlerError::failed(format!("match handler '{name}' not found")))?;
    let recorder = Rc::new(Recorder::new(Dialect::Js));
    let handles = vm
        .context()
        .with(|ctx| build(&ctx, vm.shared(), &registration, &recorder))
        .map_err(|e| HandlerError::failed(format!("cannot set up match '{name}': {e}")))?;
    Ok(Box::new(JsMatch {
        handles: Some(handles),
        recorder,
        label: Arc::from(""),
        vm,
    }))
}

fn build<'js>(
    ctx: &Ctx<'js>,
    shared: &Rc<Shared>,
    registration: &Registration<Object<'static>>,
    recorder: &Rc<Recorder>,
) -> rquickjs::Result<Handles> {
    let handlers = registration.value.clone().restore(ctx)?;
    let mut functions = Vec::with_capacity(Callback::ALL.len());
    for name in Callback::ALL.map(|c| c.name(Dialect::Js)) {
        let function: Function<'js> = handlers.get(name)?;
        functions.push(Persistent::save(ctx, function));
    }
    let (_, logger_proto, env) = vm::cached(ctx, shared)?;
    let logger = shared
        .loggers
        .build(ctx, &shared.names, logger_proto.as_raw())?;
    let match_ctx = Object::new(ctx.clone())?;
    match_ctx.set("env", env)?;
    match_ctx.set("executionMode", "match")?;
    match_ctx.set("node", &**shared.nk.node())?;
    match_ctx.set("version", env!("CARGO_PKG_VERSION"))?;
    let dispatcher = dispatcher(ctx, recorder)?;
    // Shared by every callback of the match: a callback cannot swap its functions.
    let freeze: Function<'js> = ctx
        .globals()
        .get::<_, Object<'js>>("Object")?
        .get("freeze")?;
    freeze.call::<_, ()>((dispatcher.clone(),))?;
    Ok(Handles {
        functions,
        ctx: Persistent::save(ctx, match_ctx),
        dispatcher: Persistent::save(ctx, dispatcher),
        logger: Persistent::save(ctx, logger),
        state: None,
        presences: HashMap::new(),
    })
}

impl JsMatch {
    fn handles(&self) -> Result<&Handles, HandlerError> {
        self.handles
            .as_ref()
            .ok_or_else(|| HandlerError::failed("the match VM was released"))
    }

    /// Runs a callback with `(ctx, logger, nk, dispatcher, tick, state, extra…)` under the
    /// budget; `read` turns its result into the callback's answer inside the VM.
    #[allow(clippy::too_many_arguments)]
    fn call<T>(
        &mut self,
        callback: Callback,
        ctx: &MatchContext,
        tick: i64,
        room: usize,
        extra: impl for<'js> FnOnce(&Ctx<'js>, &Shared, &Handles) -> rquickjs::Result<Vec<Value<'js>>>,
        read: impl for<'js> FnOnce(
            &Ctx<'js>,
            Option<Object<'js>>,
            &mut Option<Persistent<Value<'static>>>,
        ) -> Result<T, HandlerError>,
    ) -> Result<T, HandlerError> {
        self.recorder.begin(room);
        let label_changed = *self.label != *ctx.label;
        if label_changed {
            self.label = ctx.label.clone();
        }
        let shared = self.vm.shared().clone();
        let budget = shared.budget.clone();
        budget.start(ctx.deadline);
        let handles = self
            .handles
            .as_mut()
            .ok_or_else(|| HandlerError::failed("the match VM was released"))?;
        let outcome = self.vm.context().with(|js| {
            let result = (|| -> rquickjs::Result<Value<'_>> {
                let match_ctx = handles.ctx.clone().restore(&js)?;
                shared.match_values.set_context(
                    &js,
                    &shared.names,
                    &match_ctx,
                    ctx.presences,
                    ctx.pending_joins,
                    label_changed.then_some(&*ctx.label),
                )?;
                let (nk, _, _) = vm::cached(&js, &shared)?;
                let mut args: Vec<Value<'_>> = vec![
                    match_ctx.into_value(),
                    handles.logger.clone().restore(&js)?,
                    nk.into_value(),
                ];
                if !matches!(callback, Callback::Init) {
                    args.push(handles.dispatcher.clone().restore(&js)?.into_value());
                    args.push(Value::new_number(js.clone(), tick as f64));
                    args.push(match &handles.state {
                        Some(state) => state.clone().restore(&js)?,
                        None => Value::new_undefined(js.clone()),
                    });
                }
                args.extend(extra(&js, &shared, handles)?);
                let function = handles.functions[callback.index()].clone().restore(&js)?;
                function.call((Rest(args),))
            })();
            // On a VM whose job queue another callback flooded (see `rpc_vm.rs`) the queue is
            // left alone: running it would run that flood in this match's budget. Synchronous
            // handlers are unaffected; a promise returned here then stays pending (a timeout).
            if !self.vm.is_poisoned() {
                vm::run_jobs(&js, &budget);
            }
            let value = match result {
                Ok(_) if budget.expired() => return Err(HandlerError::Timeout),
                Ok(value) => match vm::settled(&js, &shared, value) {
                    Settled::Value(value) => value,
                    Settled::Failed(e) => {
                        return Err(match_bridge::handler_error(Dialect::Js, callback, e));
                    }
                    // A tick cannot wait: the promise could only settle in a later callback.
                    Settled::Pending => {
                        tracing::warn!(
                            engine = "js",
                            callback = callback.name(Dialect::Js),
                            "match handler returned a Promise that never settles; treated as running past its budget"
                        );
                        return Err(HandlerError::Timeout);
                    }
                },
                Err(e) => {
                    return Err(match_bridge::handler_error(
                        Dialect::Js,
                        callback,
                        vm::classify(&js, &shared, e),
                    ));
                }
            };
            let object = if value.is_null() || value.is_undefined() {
                None
            } else {
                match value.as_object() {
                    Some(o) if !value.is_array() => Some(o.clone()),
                    _ => {
                        return Err(HandlerError::invalid(format!(
                            "{} is expected to return an object with a 'state' property",
                            callback.name(Dialect::Js)
                        )));
                    }
                }
            };
            read(&js, object, &mut handles.state)
        });
        budget.stop();
        outcome
    }

    fn replay(&mut self, d: &mut Dispatcher<'_>) {
        self.recorder.replay(d);
    }

    /// The new state of a callback that returns `{ state }`; no object (or no state) ends it.
    fn state_of<'js>(
        js: &Ctx<'js>,
        object: Option<Object<'js>>,
        slot: &mut Option<Persistent<Value<'static>>>,
        callback: &str,
    ) -> Result<Flow, HandlerError> {
        let Some(object) = object else {
            return Ok(Flow::End);
        };
        let state: Value<'js> = object
            .get("state")
            .map_err(|e| HandlerError::failed(e.to_string()))?;
        if state.is_null() || state.is_undefined() {
            return Err(HandlerError::invalid(format!(
                "{callback} is expected to return an object with 'state' property"
            )));
        }
        *slot = Some(Persistent::save(js, state));
        Ok(Flow::Continue)
    }
}

fn presence_object<'js>(
    js: &Ctx<'js>,
    shared: &Shared,
    p: &Presence,
    reason: Option<PresenceReason>,
) -> rquickjs::Result<Object<'js>> {
    shared.match_values.presence(js, &shared.names, p, reason)
}

fn presence_array<'js>(
    js: &Ctx<'js>,
    shared: &Shared,
    presences: &[Arc<Presence>],
    reason: PresenceReason,
) -> rquickjs::Result<Value<'js>> {
    convert::array_of(js, presences, |p| {
        Ok(presence_object(js, shared, p, Some(reason))?.into_value())
    })
}

impl MatchHandler for JsMatch {
    fn init(&mut self, ctx: &MatchContext, params: &Params) -> Result<MatchInit, HandlerError> {
        {
            let handles = self.handles()?;
            self.vm
                .context()
                .with(|js| -> rquickjs::Result<()> {
                    let match_ctx = handles.ctx.clone().restore(&js)?;
                    match_ctx.set("matchId", &*ctx.match_id)?;
                    match_ctx.set("matchNode", &*ctx.node)?;
                    Ok(())
                })
                .map_err(|e| HandlerError::failed(e.to_string()))?;
        }
        let params_text = serde_json::Value::Object(params.clone()).to_string();
        let init = self.call(
            Callback::Init,
            ctx,
            0,
            0,
            |js, _, _| Ok(vec![convert::from_json_text(js, &params_text)?]),
            |js, object, slot| {
                let Some(object) = object else {
                    return Err(HandlerError::invalid(
                        "matchInit is expected to return an object with 'state', 'tickRate' and 'label' properties",
                    ));
                };
                let get = |key: &str| -> Result<Value<'_>, HandlerError> {
                    object.get(key).map_err(|e| HandlerError::failed(e.to_string()))
                };
                let tick_rate = get("tickRate")?;
                let tick_rate = convert::integer(&tick_rate).ok_or_else(|| {
                    HandlerError::invalid("matchInit 'tickRate' must be a number between 1 and 128")
                })?;
                let label = get("label")?;
                let label = if label.is_undefined() || label.is_null() {
                    String::new()
                } else {
                    convert::string(&label).ok_or_else(|| HandlerError::invalid("matchInit 'label' must be a string"))?
                };
                let state = get("state")?;
                if state.is_null() || state.is_undefined() {
                    return Err(HandlerError::invalid("matchInit is expected to return an object with 'state' property"));
                }
                *slot = Some(Persistent::save(js, state));
                Ok((u32::try_from(tick_rate).unwrap_or(0), label))
            },
        )?;
        self.recorder.discard();
        let (tick_rate, label) = init;
        {
            let handles = self.handles()?;
            self.vm
                .context()
                .with(|js| -> rquickjs::Result<()> {
                    let match_ctx = handles.ctx.clone().restore(&js)?;
                    match_ctx.set("matchLabel", label.as_str())?;
                    match_ctx.set("matchTickRate", tick_rate)?;
                    Ok(())
                })
                .map_err(|e| HandlerError::failed(e.to_string()))?;
        }
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
        let request = request.clone();
        let verdict = self.call(
            Callback::JoinAttempt,
            ctx,
            tick,
            d.deferred_room(),
            |js, shared, _| {
                let presence = presence_object(js, shared, &request.presence, None)?;
                let metadata = Object::new(js.clone())?;
                for (k, v) in &request.metadata {
                    metadata.set(k.as_str(), v.as_str())?;
                }
                Ok(vec![presence.into_value(), metadata.into_value()])
            },
            |js, object, slot| {
                let Some(object) = object else {
                    return Ok(JoinVerdict {
                        flow: Flow::End,
                        allow: false,
                        reason: None,
                    });
                };
                let accept: Value<'_> = object
                    .get("accept")
                    .map_err(|e| HandlerError::failed(e.to_string()))?;
                let Some(allow) = accept.as_bool() else {
                    return Err(HandlerError::invalid(
                        "matchJoinAttempt 'accept' property must be a boolean",
                    ));
                };
                let reject: Value<'_> = object
                    .get("rejectMessage")
                    .map_err(|e| HandlerError::failed(e.to_string()))?;
                let reason = if reject.is_undefined() || reject.is_null() {
                    None
                } else {
                    Some(convert::string(&reject).ok_or_else(|| {
                        HandlerError::invalid(
                            "matchJoinAttempt 'rejectMessage' property must be a string",
                        )
                    })?)
                };
                let flow = JsMatch::state_of(js, Some(object), slot, "matchJoinAttempt")?;
                Ok(JoinVerdict {
                    flow,
                    allow,
                    reason,
                })
            },
        )?;
        self.replay(d);
        Ok(verdict)
    }

    fn join(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        presences: &[Arc<Presence>],
    ) -> Result<Flow, HandlerError> {
        let flow = self.call(
            Callback::Join,
            ctx,
            tick,
            d.deferred_room(),
            |js, shared, _| {
                Ok(vec![presence_array(
                    js,
                    shared,
                    presences,
                    PresenceReason::Join,
                )?])
            },
            |js, object, slot| JsMatch::state_of(js, object, slot, "matchJoin"),
        )?;
        // Cache the members' presence objects for message senders, known to the dispatcher by
        // their address while they are held.
        if let Some(handles) = self.handles.as_mut() {
            let context = self.vm.context();
            let shared = self.vm.shared();
            for p in presences {
                let saved = context.with(|js| {
                    presence_object(&js, shared, p, None).map(|o| {
                        (
                            match_values::address(o.as_value()),
                            Persistent::save(&js, o),
                        )
                    })
                });
                if let Ok((address, object)) = saved {
                    let kept = Kept { object, address };
                    if let Some(old) = handles.presences.insert(p.session_id, kept) {
                        self.recorder.forget(&old.address);
                    }
                    self.recorder.hand_out(address, p.clone());
                }
            }
        }
        self.replay(d);
        Ok(flow)
    }

    fn leave(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        presences: &[Arc<Presence>],
        reason: PresenceReason,
    ) -> Result<Flow, HandlerError> {
        if let Some(handles) = self.handles.as_mut() {
            for p in presences {
                if let Some(kept) = handles.presences.remove(&p.session_id) {
                    self.recorder.forget(&kept.address);
                }
            }
        }
        let flow = self.call(
            Callback::Leave,
            ctx,
            tick,
            d.deferred_room(),
            |js, shared, _| Ok(vec![presence_array(js, shared, presences, reason)?]),
            |js, object, slot| JsMatch::state_of(js, object, slot, "matchLeave"),
        )?;
        self.replay(d);
        Ok(flow)
    }

    fn tick(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        messages: &[MatchMessage],
    ) -> Result<Flow, HandlerError> {
        let flow = self.call(
            Callback::Loop,
            ctx,
            tick,
            d.deferred_room(),
            |js, shared, handles| {
                let list = shared
                    .match_values
                    .messages(js, &shared.names, messages, |m| {
                        match handles.presences.get(&m.sender.session_id) {
                            Some(kept) => Ok(Some(kept.object.clone().restore(js)?)),
                            None => Ok(None),
                        }
                    })?;
                Ok(vec![list])
            },
            |js, object, slot| JsMatch::state_of(js, object, slot, "matchLoop"),
        );
        let flow = flow?;
        self.replay(d);
        Ok(flow)
    }

    fn terminate(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        grace_seconds: u32,
    ) -> Result<Flow, HandlerError> {
        let flow = self.call(
            Callback::Terminate,
            ctx,
            tick,
            d.deferred_room(),
            |js, _, _| {
                Ok(vec![Value::new_number(
                    js.clone(),
                    f64::from(grace_seconds),
                )])
            },
            |js, object, slot| JsMatch::state_of(js, object, slot, "matchTerminate"),
        )?;
        self.replay(d);
        Ok(flow)
    }

    fn signal(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        data: &str,
    ) -> Result<(Flow, String), HandlerError> {
        let data = data.to_owned();
        let answer = self.call(
            Callback::Signal,
            ctx,
            tick,
            d.deferred_room(),
            |js, _, _| {
                Ok(vec![
                    rquickjs::String::from_str(js.clone(), &data)?.into_value(),
                ])
            },
            |js, object, slot| {
                let reply = match &object {
                    Some(o) => {
                        let value: Value<'_> = o
                            .get("data")
                            .map_err(|e| HandlerError::failed(e.to_string()))?;
                        if value.is_undefined() || value.is_null() {
                            String::new()
                        } else {
                            convert::string(&value).ok_or_else(|| {
                                HandlerError::invalid(
                                    "matchSignal 'data' property must be a string",
                                )
                            })?
                        }
                    }
                    None => String::new(),
                };
                let flow = JsMatch::state_of(js, object, slot, "matchSignal")?;
                Ok((flow, reply))
            },
        )?;
        self.replay(d);
        Ok(answer)
    }
}

/// The `dispatcher` object: Nakama's four functions, recording into `recorder`.
fn dispatcher<'js>(js: &Ctx<'js>, recorder: &Rc<Recorder>) -> rquickjs::Result<Object<'js>> {
    let object = Object::new(js.clone())?;
    for (name, deferred) in [
        ("broadcastMessage", false),
        ("broadcastMessageDeferred", true),
    ] {
        let recorder = recorder.clone();
        let function = Function::new(js.clone(), move |js: Ctx<'js>, args: Rest<Value<'js>>| {
            let mut classified: [Arg<JsObject<'js>>; 5] = std::array::from_fn(|_| Arg::Absent);
            for (slot, value) in classified.iter_mut().zip(&args.0) {
                *slot = classify(value, true);
            }
            recorder
                .broadcast(&classified, deferred)
                .map_err(|refusal| raise(&js, refusal))
        })?
        .with_name(name)?;
        object.set(name, function)?;
    }
    let one_argument: [(&str, OneArgument<'js>); 2] = [
        ("matchKick", Recorder::kick),
        ("matchLabelUpdate", Recorder::update_label),
    ];
    for (name, call) in one_argument {
        let recorder = recorder.clone();
        let function = Function::new(
            js.clone(),
            move |js: Ctx<'js>, args: Rest<Value<'js>>| -> rquickjs::Result<()> {
                let arg = match args.0.first() {
                    Some(value) => classify(value, false),
                    None => Arg::Absent,
                };
                call(&recorder, &arg).map_err(|refusal| raise(&js, refusal))
            },
        )?
        .with_name(name)?;
        object.set(name, function)?;
    }
    Ok(object)
}

/// A dispatcher function of one argument (`matchKick`, `matchLabelUpdate`).
type OneArgument<'js> = fn(&Recorder, &Arg<JsObject<'js>>) -> Result<(), Refusal<rquickjs::Error>>;

/// A refused dispatcher call as the exception the script sees.
fn raise(js: &Ctx<'_>, refusal: Refusal<rquickjs::Error>) -> rquickjs::Error {
    match refusal {
        Refusal::Argument { message, .. } => Exception::throw_type(js, &message),
        Refusal::Failed(message) => Exception::throw_message(js, &message),
        Refusal::Engine(e) => e,
    }
}

/// A JavaScript value as the match bridge's rules see it. With `data` (the dispatcher's
/// arguments), an `ArrayBuffer` or `Uint8Array` is read as binary data; without, it is an
/// object like any other.
fn classify<'js>(value: &Value<'js>, data: bool) -> Arg<JsObject<'js>> {
    if value.is_undefined() {
        return Arg::Absent;
    }
    if value.is_null() {
        return Arg::Null;
    }
    if let Some(b) = value.as_bool() {
        return Arg::Bool(b);
    }
    if let Some(n) = convert::integer(value) {
        return Arg::Integer(n);
    }
    if let Some(n) = value.as_number() {
        return Arg::Number(n);
    }
    if value.is_string() {
        return match convert::string(value) {
            Some(text) => Arg::Str(bytes::Bytes::from(text)),
            None => Arg::Other,
        };
    }
    if value.as_object().is_none() {
        return Arg::Other;
    }
    if data && let Some(bytes) = match_values::bytes(value) {
        return Arg::Data(bytes);
    }
    Arg::Object(JsObject(value.clone()))
}

/// An object passed to the dispatcher (a presence, an array of presences, delivery options).
struct JsObject<'js>(Value<'js>);

impl<'js> ScriptObject for JsObject<'js> {
    type Key = usize;
    type Error = rquickjs::Error;

    fn items(&self) -> rquickjs::Result<Option<Vec<Arg<JsObject<'js>>>>> {
        let Some(items) = convert::array_items(self.0.ctx(), &self.0) else {
            return Ok(None);
        };
        let items = items?
            .iter()
            .map(|item| classify(item, false))
            .collect::<Vec<_>>();
        Ok(Some(items))
    }

    fn field(&self, name: &str) -> Arg<JsObject<'js>> {
        // A getter that throws reads as a missing field (the rule's own message follows).
        self.0
            .as_object()
            .and_then(|o| o.get::<_, Value<'js>>(name).ok())
            .map(|value| classify(&value, false))
            .unwrap_or(Arg::Other)
    }

    fn key(&self) -> Option<usize> {
        self.0.is_object().then(|| match_values::address(&self.0))
    }
}

/// `initializer.registerMatchmakerMatched(fn)`: `fn(ctx, logger, nk, matches)` returns the id
/// of a match for the group (usually from `nk.matchCreate`) or nothing. Stored under a reserved
/// id the host calls with the entries as JSON; never reachable as an RPC.
pub(crate) fn register_matchmaker_matched<'js>(
    js: &Ctx<'js>,
    shared: &Shared,
    args: &[Value<'js>],
    module: String,
) -> rquickjs::Result<()> {
    let function = arg(args, 0)
        .and_then(|f| f.as_function())
        .ok_or_else(|| Exception::throw_type(js, "expects a function"))?;
    let wrap: Function<'js> = js.eval(
        "(function (fn) { return function (ctx, logger, nk, payload) { var entries = JSON.parse(payload).map(function (e) { var m = { presence: { userId: e.presence.user_id, sessionId: e.presence.session_id, username: e.presence.username, node: e.presence.node }, properties: e.properties }; if (e.party_id) { m.partyId = e.party_id; } return m; }); var text = function (id) { return id == null ? '' : String(id); }; var id = fn(ctx, logger, nk, entries); return id instanceof Promise ? id.then(text) : text(id); }; })",
    )?;
    let wrapper: Function<'js> = wrap.call((function.clone(),))?;
    shared.rpcs.borrow_mut().insert(
        MATCHMAKER_MATCHED_HOOK.to_owned(),
        Registration {
            value: Persistent::save(js, wrapper),
            module,
        },
    );
    Ok(())
}
