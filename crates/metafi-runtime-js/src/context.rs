//! The `ctx` argument of `InitModule`, RPCs and hooks, with the camelCase names of Nakama's
//! JavaScript runtime (`runtime_javascript_context.go`).
//!
//! An RPC's or hook's `ctx` is a new object per call, as in Nakama: a script may keep it or
//! change it. It is built here with QuickJS's C API ([`CallContexts::build`]): each key's
//! atom is made once per VM, each property *defined* (a setter on `Object.prototype` sees
//! none of them, as Nakama's `ctx` is plain data), and the strings every call repeats (node,
//! version, mode names) are kept per VM — a string is a primitive value, so a script cannot
//! tell a kept one from a new one. It used to be built by a JavaScript entry function that
//! the hook was then called from: two more interpreted calls of up to 16 arguments each.

// The per-call context is built with QuickJS's C API: rquickjs defines properties only by
// text and makes a context reference per value. Each unsafe block works on the live context
// it was given and hands every value it makes to its parent, to the caller, or frees it.
#![allow(unsafe_code)]

use std::cell::{Cell, RefCell};

use metafi_core::RpcContext;
use metafi_runtime::{CallContext, ExecutionMode};
use rquickjs::{Ctx, Object, Value, qjs};

use crate::convert;
use crate::hook_value::FieldNames;
use crate::vm::Shared;

/// The context of `InitModule`: `node`, `version` and `env`, as Nakama's init context.
pub(crate) fn init_object<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    env: Object<'js>,
) -> rquickjs::Result<Object<'js>> {
    let object = Object::new(ctx.clone())?;
    object.set("node", &**shared.nk.node())?;
    object.set("version", env!("CARGO_PKG_VERSION"))?;
    object.set("env", env)?;
    Ok(object)
}

/// The keys of an RPC's or hook's `ctx`, in the order Nakama's `NewRuntimeJsContext` sets
/// them: always the first four, `headers` and `queryParams` in a REST RPC, then the caller's
/// when it has them.
const KEYS: [&std::ffi::CStr; 15] = [
    c"node",
    c"version",
    c"env",
    c"executionMode",
    c"headers",
    c"queryParams",
    c"userSessionExp",
    c"userId",
    c"username",
    c"vars",
    c"sessionId",
    c"lang",
    c"clientIp",
    c"clientPort",
    c"traceId",
];

/// What every call's `ctx` of one VM shares. Holds one reference on each atom and string it
/// keeps; [`CallContexts::release`] drops them before the VM's context goes.
#[derive(Default)]
pub(crate) struct CallContexts {
    /// The atoms of [`KEYS`], made on the first call.
    atoms: Cell<Option<[qjs::JSAtom; KEYS.len()]>>,
    /// The strings every call repeats ([`Texts`]).
    texts: RefCell<Texts>,
    /// Which kinds of `ctx` (the keys present, [`Variant`]) had their shapes kept: one bit
    /// per kind.
    kept: Cell<[u64; 4]>,
}

/// The keys every `ctx` has: the first four of [`KEYS`].
const FIXED: usize = 4;

/// Which of a `ctx`'s optional keys are present ([`Given::variant`]).
struct Variant(u8);

impl CallContexts {
    /// Frees the atoms and strings this holds. Called while the VM's context is alive.
    pub(crate) fn release(&self, ctx: &Ctx<'_>) {
        let raw = ctx.as_raw().as_ptr();
        if let Some(atoms) = self.atoms.take() {
            for atom in atoms {
                // SAFETY: each holds one reference, taken in `atoms`.
                unsafe { qjs::JS_FreeAtom(raw, atom) };
            }
        }
        for value in self.texts.take().values() {
            // SAFETY: each holds one reference, taken in `kept`.
            unsafe { qjs::JS_FreeValue(raw, value) };
        }
        self.kept.set([0; 4]);
    }

    /// A new `ctx` for `call`: `node`, `version`, `env` (the VM's one object, as in Nakama),
    /// `executionMode`; `headers` and `queryParams` in an RPC called over REST (new objects,
    /// `{}` when the request has none; no such keys elsewhere, as in Nakama, whose callers
    /// pass those maps only from `api_rpc.go`); then `userSessionExp`, `userId`, `username`
    /// when a user called, `vars` when it has some, `sessionId` and `lang` over a socket,
    /// `clientIp`, `clientPort` (text, as Nakama's) and `traceId` when known.
    pub(crate) fn build<'js>(
        &self,
        ctx: &Ctx<'js>,
        names: &FieldNames,
        env: qjs::JSValue,
        call: &CallContext,
    ) -> rquickjs::Result<Value<'js>> {
        let raw = ctx.as_raw().as_ptr();
        let mut given = Given::new(raw);
        given.fill(ctx, &call.request)?;
        // SAFETY: `raw` is the live context of `ctx`; every value made or duplicated here is
        // handed to `JS_DefinePropertyValue` (which takes it, also on failure) or freed (the
        // request's values by `given` unless taken).
        unsafe {
            let Some(atoms) = self.atoms(raw) else {
                return Err(rquickjs::Error::Exception);
            };
            let object = qjs::JS_NewObject(raw);
            if qjs::JS_IsException(object) {
                return Err(rquickjs::Error::Exception);
            }
            let fixed: [_; FIXED] = {
                let mut texts = self.texts.borrow_mut();
                [
                    texts.node(raw, &call.node),
                    texts.version(raw, call.version),
                    qjs::JS_DupValue(raw, env),
                    texts.mode(raw, call.mode),
                ]
            };
            let variant = given.variant();
            let mut keys = [qjs::JS_ATOM_NULL; KEYS.len()];
            let mut count = 0;
            let mut failed = false;
            for (index, value) in fixed.into_iter().enumerate().chain(given.take()) {
                if failed || qjs::JS_IsException(value) {
                    // Out of memory making a value: free the rest, report the first.
                    failed = true;
                    qjs::JS_FreeValue(raw, value);
                    continue;
                }
                let atom = atoms[index];
                if qjs::JS_DefinePropertyValue(raw, object, atom, value, qjs::JS_PROP_C_W_E as _)
                    < 0
                {
                    failed = true;
                    continue;
                }
                keys[count] = atom;
                count += 1;
            }
            if failed {
                qjs::JS_FreeValue(raw, object);
                return Err(rquickjs::Error::Exception);
            }
            let (word, bit) = (usize::from(variant.0 / 64), 1u64 << (variant.0 % 64));
            let mut kept = self.kept.get();
            if kept[word] & bit == 0 {
                kept[word] |= bit;
                self.kept.set(kept);
                names.keep_shapes_of(raw, None, &keys[..count]);
            }
            Ok(Value::from_raw(ctx.clone(), object))
        }
    }

    /// The atoms of [`KEYS`], made once; `None` with an exception pending when QuickJS could
    /// not allocate one.
    unsafe fn atoms(&self, ctx: *mut qjs::JSContext) -> Option<[qjs::JSAtom; KEYS.len()]> {
        if let Some(atoms) = self.atoms.get() {
            return Some(atoms);
        }
        // SAFETY: `ctx` is live (this function's contract).
        let atoms = unsafe { new_atoms(ctx, &KEYS)? };
        self.atoms.set(Some(atoms));
        Some(atoms)
    }
}

/// The atoms of `keys`, each holding one reference, all or none: `None`, with an exception
/// pending and the ones already made freed, when QuickJS could not allocate one. Shared by the
/// key lists kept once per VM (this file's, `match_values.rs`'s).
///
/// # Safety
/// `ctx` is a live context.
pub(crate) unsafe fn new_atoms<const N: usize>(
    ctx: *mut qjs::JSContext,
    keys: &[&std::ffi::CStr; N],
) -> Option<[qjs::JSAtom; N]> {
    let mut atoms = [qjs::JS_ATOM_NULL; N];
    for (i, key) in keys.iter().enumerate() {
        // SAFETY: `ctx` is live; NUL-terminated names.
        atoms[i] = unsafe { qjs::JS_NewAtom(ctx, key.as_ptr()) };
        if atoms[i] == qjs::JS_ATOM_NULL {
            for &atom in &atoms[..i] {
                // SAFETY: the reference just taken.
                unsafe { qjs::JS_FreeAtom(ctx, atom) };
            }
            return None;
        }
    }
    Some(atoms)
}

/// The strings every call's `ctx` repeats, each kept once made (a string is a primitive
/// value: a script cannot tell a kept one from a new one), and found without comparing text:
/// the node's by its `Arc` (a clone kept with it, so its address cannot be reused), the
/// version's by its `&'static str`'s address and length, a mode's by the mode. Each holds one
/// reference on its string; [`CallContexts::release`] drops them.
#[derive(Default)]
struct Texts {
    node: Option<(std::sync::Arc<str>, qjs::JSValue)>,
    version: Option<((usize, usize), qjs::JSValue)>,
    modes: [Option<(ExecutionMode, qjs::JSValue)>; MODES],
}

/// How many execution modes [`Texts`] keeps a string for, by discriminant.
const MODES: usize = 32;

impl Texts {
    /// The strings kept.
    fn values(&self) -> impl Iterator<Item = qjs::JSValue> + '_ {
        let node = self.node.iter().map(|(_, value)| *value);
        let version = self.version.iter().map(|(_, value)| *value);
        node.chain(version)
            .chain(self.modes.iter().flatten().map(|(_, value)| *value))
    }

    /// The node's name as an owned string (`JS_EXCEPTION` with the exception pending when
    /// QuickJS could not allocate it).
    unsafe fn node(
        &mut self,
        ctx: *mut qjs::JSContext,
        node: &std::sync::Arc<str>,
    ) -> qjs::JSValue {
        if let Some((kept, value)) = &self.node
            && std::sync::Arc::ptr_eq(kept, node)
        {
            // SAFETY: a kept string is live until `release`.
            return unsafe { qjs::JS_DupValue(ctx, *value) };
        }
        // SAFETY: the caller's contract.
        let value = unsafe { new_string(ctx, node) };
        if let Some(kept) = unsafe { kept(ctx, value) }
            && let Some((_, old)) = self.node.replace((node.clone(), kept))
        {
            // SAFETY: the reference the replaced entry held.
            unsafe { qjs::JS_FreeValue(ctx, old) };
        }
        value
    }

    /// The version as an owned string (as [`Texts::node`]).
    unsafe fn version(&mut self, ctx: *mut qjs::JSContext, version: &'static str) -> qjs::JSValue {
        let address = (version.as_ptr() as usize, version.len());
        if let Some((kept, value)) = self.version
            && kept == address
        {
            // SAFETY: a kept string is live until `release`.
            return unsafe { qjs::JS_DupValue(ctx, value) };
        }
        // SAFETY: the caller's contract.
        let value = unsafe { new_string(ctx, version) };
        if let Some(kept) = unsafe { kept(ctx, value) }
            && let Some((_, old)) = self.version.replace((address, kept))
        {
            // SAFETY: the reference the replaced entry held.
            unsafe { qjs::JS_FreeValue(ctx, old) };
        }
        value
    }

    /// The mode's name as an owned string (as [`Texts::node`]).
    unsafe fn mode(&mut self, ctx: *mut qjs::JSContext, mode: ExecutionMode) -> qjs::JSValue {
        let slot = self.modes.get_mut(mode as usize);
        if let Some(Some((kept, value))) = &slot
            && *kept == mode
        {
            // SAFETY: a kept string is live until `release`.
            return unsafe { qjs::JS_DupValue(ctx, *value) };
        }
        // SAFETY: the caller's contract.
        let value = unsafe { new_string(ctx, mode.as_str()) };
        if let Some(slot) = slot
            && let Some(kept) = unsafe { kept(ctx, value) }
            && let Some((_, old)) = slot.replace((mode, kept))
        {
            // SAFETY: the reference the replaced entry held.
            unsafe { qjs::JS_FreeValue(ctx, old) };
        }
        value
    }
}

/// `text` as a new string of `ctx` (`JS_EXCEPTION` with the exception pending when QuickJS
/// could not allocate it).
unsafe fn new_string(ctx: *mut qjs::JSContext, text: &str) -> qjs::JSValue {
    // SAFETY: the context is live; valid UTF-8 of `text.len()` bytes.
    unsafe { qjs::JS_NewStringLen(ctx, text.as_ptr().cast(), text.len() as _) }
}

/// A second reference on `value` to keep, unless it is `JS_EXCEPTION`.
unsafe fn kept(ctx: *mut qjs::JSContext, value: qjs::JSValue) -> Option<qjs::JSValue> {
    // SAFETY: the context is live; `value` is one of its values or the exception marker.
    unsafe { (!qjs::JS_IsException(value)).then(|| qjs::JS_DupValue(ctx, value)) }
}

/// The request's part of a call's `ctx`, in [`KEYS`]' order from `headers`: `headers` and
/// `queryParams` of a REST RPC, then the session expiry, the user's id and name, the vars
/// when there are some (Nakama's session tokens leave empty ones out), the session id and
/// language, the client's address and port, and the trace id; each made straight through the
/// C API (an rquickjs `Value` per key took and dropped a context reference each, and an array
/// of eleven of them was moved and dropped per call). Holds one reference on each value made
/// and not yet [taken](Given::take).
struct Given {
    ctx: *mut qjs::JSContext,
    values: [qjs::JSValue; KEYS.len() - FIXED],
    /// Bit `i`: `values[i]` is present (and held).
    present: u16,
}

impl Given {
    fn new(ctx: *mut qjs::JSContext) -> Given {
        Given {
            ctx,
            values: [qjs::JS_UNDEFINED; KEYS.len() - FIXED],
            present: 0,
        }
    }

    /// Makes the values `request` has; on failure (out of memory) the ones made are freed by
    /// drop.
    fn fill(&mut self, ctx: &Ctx<'_>, request: &RpcContext) -> rquickjs::Result<()> {
        let mut uuid = uuid::Uuid::encode_buffer();
        if request.rest_rpc {
            let headers = convert::string_lists(ctx, request.headers.iter())?;
            self.put_object(0, headers.as_raw());
            let query = convert::string_lists(ctx, &request.query)?;
            self.put_object(1, query.as_raw());
        }
        if let Some(user) = &request.user {
            if user.expires_at != 0 {
                self.put(2, qjs::JS_NewFloat64(user.expires_at as f64))?;
            }
            self.put_text(3, user.user_id.hyphenated().encode_lower(&mut uuid))?;
            self.put_text(4, user.username.as_str())?;
            if !user.vars.is_empty() {
                let vars = convert::string_map(ctx, user.vars.iter())?;
                self.put_object(5, vars.as_raw());
            }
            if !user.session_id.is_nil() {
                self.put_text(6, user.session_id.hyphenated().encode_lower(&mut uuid))?;
                // Nakama gives `lang` only with a session id.
                self.put_text(7, request.lang())?;
            }
        }
        if let Some(ip) = request.client_ip {
            self.put_text(8, &ip.to_string())?;
        }
        if let Some(port) = request.client_port {
            let mut digits = [0; 5];
            self.put_text(9, metafi_runtime::port_text(port, &mut digits))?;
        }
        if let Some(trace_id) = request.trace_id {
            self.put_text(10, trace_id.hyphenated().encode_lower(&mut uuid))?;
        }
        Ok(())
    }

    /// Holds `value` (owned) at `at`; an exception is reported, with nothing held.
    fn put(&mut self, at: usize, value: qjs::JSValue) -> rquickjs::Result<()> {
        // SAFETY: only reads the tag.
        if unsafe { qjs::JS_IsException(value) } {
            return Err(rquickjs::Error::Exception);
        }
        self.values[at] = value;
        self.present |= 1 << at;
        Ok(())
    }

    fn put_text(&mut self, at: usize, text: &str) -> rquickjs::Result<()> {
        // SAFETY: the context is live; valid UTF-8 of `text.len()` bytes.
        let value =
            unsafe { qjs::JS_NewStringLen(self.ctx, text.as_ptr().cast(), text.len() as _) };
        self.put(at, value)
    }

    /// Holds a new reference on `object` (a live object of the context).
    fn put_object(&mut self, at: usize, object: qjs::JSValue) {
        // SAFETY: `object` is live; the reference taken is held until taken or dropped.
        self.values[at] = unsafe { qjs::JS_DupValue(self.ctx, object) };
        self.present |= 1 << at;
    }

    /// Which kind of `ctx` these values make: one bit each for the REST request's two maps,
    /// the session expiry, the user, the vars, the session id (with `lang`), the address, the
    /// port and the trace id (256 kinds).
    fn variant(&self) -> Variant {
        let bit = |at: usize, to: u8| u8::from(self.present & (1 << at) != 0) << to;
        Variant(
            bit(2, 0)
                | bit(3, 1)
                | bit(6, 2)
                | bit(8, 3)
                | bit(0, 4)
                | bit(5, 5)
                | bit(9, 6)
                | bit(10, 7),
        )
    }

    /// The values present with the index of their key in [`KEYS`], handed over (owned).
    fn take(&mut self) -> impl Iterator<Item = (usize, qjs::JSValue)> + '_ {
        // By the present bits, lowest first: a hook's `ctx` has few of the eleven.
        std::iter::from_fn(|| {
            if self.present == 0 {
                return None;
            }
            let i = self.present.trailing_zeros() as usize;
            self.present &= self.present - 1;
            Some((
                FIXED + i,
                std::mem::replace(&mut self.values[i], qjs::JS_UNDEFINED),
            ))
        })
    }
}

impl Drop for Given {
    fn drop(&mut self) {
        let ctx = self.ctx;
        for (_, value) in self.take() {
            // SAFETY: a reference this held, on a value of the live context.
            unsafe { qjs::JS_FreeValue(ctx, value) };
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use metafi_core::{RequestHeaders, RpcUser};
    use metafi_runtime::ExecutionMode;
    use rquickjs::{Context, Function, Runtime};

    use super::*;

    /// A hook's context (mode `before`), with a signed-in user when `user`.
    fn hook(user: bool) -> CallContext {
        let env = HashMap::from([("region".to_owned(), "eu".to_owned())]);
        let mut call = CallContext::load(Arc::from("node-a"), Arc::new(env));
        call.mode = ExecutionMode::Before;
        if user {
            call.request.user = Some(RpcUser {
                user_id: uuid::Uuid::from_u128(1),
                username: "ann".to_owned(),
                session_id: uuid::Uuid::from_u128(2),
                vars: HashMap::from([("k".to_owned(), "v".to_owned())]),
                expires_at: 1_700_000_000,
            });
            call.request.client_ip = Some([10, 0, 0, 7].into());
            call.request.client_port = Some(50_123);
            call.request.trace_id = Some(uuid::Uuid::from_u128(3));
        }
        call
    }

    /// An RPC called over REST by the user of `hook(true)`, with a header and a query when
    /// `request`.
    fn rest(request: bool) -> CallContext {
        let mut call = hook(true);
        call.mode = ExecutionMode::Rpc;
        call.request.rest_rpc = true;
        if let Some(user) = &mut call.request.user {
            user.session_id = uuid::Uuid::nil();
            // A session without vars: no `vars` key, as Nakama's.
            user.vars.clear();
        }
        if request {
            call.request.headers = RequestHeaders::from_pairs([("x-game-build", "41")]).unwrap();
            call.request.query = HashMap::from([("q".to_owned(), vec!["1".to_owned()])]);
        }
        call
    }

    /// Runs `script` (a function of the context) on a context built for `call`, and answers
    /// what it returns as text.
    fn seen(
        ctx: &Ctx<'_>,
        contexts: &CallContexts,
        names: &FieldNames,
        call: &CallContext,
        script: &str,
    ) -> String {
        let env: Object<'_> = ctx.globals().get("env").unwrap();
        let value = contexts.build(ctx, names, env.as_raw(), call).unwrap();
        let function: Function<'_> = ctx.eval(script).unwrap();
        function.call((value,)).unwrap()
    }

    #[test]
    fn a_call_context_is_a_plain_object_with_nakamas_keys_in_order() {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        let contexts = CallContexts::default();
        let names = FieldNames::default();
        context.with(|ctx| {
            ctx.eval::<(), _>(
                "var env = {region: 'eu'}; var stolen = []; \
                 ['node', 'userId', 'headers', 'clientIp', 'X-Game-Build', 'q', 'k'] \
                 .forEach(function (k) { \
                 Object.defineProperty(Object.prototype, k, \
                 { set: function () { stolen.push(k); }, configurable: true }); });",
            )
            .unwrap();
            let describe = "(function (c) { return [stolen.length, \
                 Object.getPrototypeOf(c) === Object.prototype, Object.keys(c).join(), \
                 Object.getOwnPropertyNames(c).every(function (k) { \
                   var d = Object.getOwnPropertyDescriptor(c, k); \
                   return d.writable && d.enumerable && d.configurable; }), \
                 c.env === env, JSON.stringify(c)].join('|'); })";
            let version = env!("CARGO_PKG_VERSION");
            // Twice each: the second call takes the kept atoms, strings and shapes.
            for _ in 0..2 {
                // A hook: no headers or queryParams (Nakama passes its hooks no maps).
                assert_eq!(
                    seen(&ctx, &contexts, &names, &hook(false), describe),
                    "0|true|node,version,env,executionMode|true|true|\
                     {\"node\":\"node-a\",\"version\":\"0.1.0\",\"env\":{\"region\":\"eu\"},\
                     \"executionMode\":\"before\"}"
                        .replace("0.1.0", version)
                );
                // A socket session's: `lang` after `sessionId` ("en" when the client gave none).
                assert_eq!(
                    seen(&ctx, &contexts, &names, &hook(true), describe),
                    "0|true|node,version,env,executionMode,userSessionExp,\
                     userId,username,vars,sessionId,lang,clientIp,clientPort,traceId|true|true|\
                     {\"node\":\"node-a\",\"version\":\"0.1.0\",\"env\":{\"region\":\"eu\"},\
                     \"executionMode\":\"before\",\"userSessionExp\":1700000000,\
                     \"userId\":\"00000000-0000-0000-0000-000000000001\",\"username\":\"ann\",\
                     \"vars\":{\"k\":\"v\"},\
                     \"sessionId\":\"00000000-0000-0000-0000-000000000002\",\"lang\":\"en\",\
                     \"clientIp\":\"10.0.0.7\",\"clientPort\":\"50123\",\
                     \"traceId\":\"00000000-0000-0000-0000-000000000003\"}"
                        .replace("0.1.0", version)
                );
                // A REST RPC: both maps, `{}` when the request has none.
                assert_eq!(
                    seen(&ctx, &contexts, &names, &rest(true), describe),
                    "0|true|node,version,env,executionMode,headers,queryParams,userSessionExp,\
                     userId,username,clientIp,clientPort,traceId|true|true|\
                     {\"node\":\"node-a\",\"version\":\"0.1.0\",\"env\":{\"region\":\"eu\"},\
                     \"executionMode\":\"rpc\",\"headers\":{\"X-Game-Build\":[\"41\"]},\
                     \"queryParams\":{\"q\":[\"1\"]},\"userSessionExp\":1700000000,\
                     \"userId\":\"00000000-0000-0000-0000-000000000001\",\"username\":\"ann\",\
                     \"clientIp\":\"10.0.0.7\",\"clientPort\":\"50123\",\
                     \"traceId\":\"00000000-0000-0000-0000-000000000003\"}"
                        .replace("0.1.0", version)
                );
                assert_eq!(
                    seen(
                        &ctx,
                        &contexts,
                        &names,
                        &rest(false),
                        "(function (c) { return JSON.stringify([c.headers, c.queryParams]); })"
                    ),
                    "[{},{}]"
                );
            }
            // Node, version and two modes kept as strings once; the shapes of the three kinds
            // of context kept once (5 + 14 + 13 objects: one per prefix).
            assert_eq!(contexts.texts.borrow().values().count(), 4);
            let kinds: u32 = contexts
                .kept
                .get()
                .iter()
                .map(|word| word.count_ones())
                .sum();
            assert_eq!(kinds, 3);
            assert_eq!(names.shapes_kept(), 32);
            names.release(&ctx);
            contexts.release(&ctx);
            assert_eq!(contexts.texts.borrow().values().count(), 0);
        });
    }

    #[test]
    fn each_call_gets_a_new_context() {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        let contexts = CallContexts::default();
        let names = FieldNames::default();
        context.with(|ctx| {
            ctx.eval::<(), _>("var env = {}; var kept;").unwrap();
            let change = "(function (c) { kept = c; c.node = 'changed'; c.headers.x = ['1']; \
                          c.extra = 1; return ''; })";
            seen(&ctx, &contexts, &names, &rest(false), change);
            assert_eq!(
                seen(
                    &ctx,
                    &contexts,
                    &names,
                    &rest(false),
                    "(function (c) { return [c === kept, c.headers === kept.headers, \
                      c.queryParams === kept.queryParams, c.node, Object.keys(c.headers).length, \
                      'extra' in c, kept.node].join('|'); })"
                ),
                "false|false|false|node-a|0|false|changed"
            );
            names.release(&ctx);
            contexts.release(&ctx);
        });
    }
}
