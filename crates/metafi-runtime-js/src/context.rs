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
use metafi_runtime::CallContext;
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

/// How many texts a VM keeps as strings ([`CallContexts::text`]): the node, the version and
/// the few modes its calls run in.
const MAX_TEXTS: usize = 8;

/// What every call's `ctx` of one VM shares. Holds one reference on each atom and string it
/// keeps; [`CallContexts::release`] drops them before the VM's context goes.
#[derive(Default)]
pub(crate) struct CallContexts {
    /// The atoms of [`KEYS`], made on the first call.
    atoms: Cell<Option<[qjs::JSAtom; KEYS.len()]>>,
    /// Texts every call repeats and their kept strings.
    texts: RefCell<Vec<(Box<str>, qjs::JSValue)>>,
    /// Which kinds of `ctx` (the keys present, [`Variant`]) had their shapes kept: one bit
    /// per kind.
    kept: Cell<[u64; 4]>,
}

/// The keys every `ctx` has: the first four of [`KEYS`].
const FIXED: usize = 4;

/// Which of a `ctx`'s optional keys are present: one bit each for the REST request's two
/// maps, the session expiry, the user, the vars, the session id (with `lang`), the address,
/// the port and the trace id (256 kinds).
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
        for (_, value) in self.texts.borrow_mut().drain(..) {
            // SAFETY: each holds one reference, taken in `text`.
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
        env: &Object<'js>,
        call: &CallContext,
    ) -> rquickjs::Result<Value<'js>> {
        let request = request_values(ctx, &call.request)?;
        let raw = ctx.as_raw().as_ptr();
        // SAFETY: `raw` is the live context of `ctx`; every value made or duplicated here is
        // handed to `JS_DefinePropertyValue` (which takes it, also on failure) or freed.
        unsafe {
            let Some(atoms) = self.atoms(raw) else {
                return Err(rquickjs::Error::Exception);
            };
            let object = qjs::JS_NewObject(raw);
            if qjs::JS_IsException(object) {
                return Err(rquickjs::Error::Exception);
            }
            let fixed: [_; FIXED] = [
                self.text(raw, &call.node),
                self.text(raw, call.version),
                qjs::JS_DupValue(raw, env.as_raw()),
                self.text(raw, call.mode.as_str()),
            ];
            let mut keys = [qjs::JS_ATOM_NULL; KEYS.len()];
            let mut count = 0;
            let mut failed = false;
            let given = request.iter().enumerate().filter_map(|(i, value)| {
                let value = value.as_ref()?;
                Some((FIXED + i, qjs::JS_DupValue(raw, value.as_raw())))
            });
            for (index, value) in fixed.into_iter().enumerate().chain(given) {
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
            let variant = Variant::of(&request);
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
        let mut atoms = [qjs::JS_ATOM_NULL; KEYS.len()];
        for (i, key) in KEYS.iter().enumerate() {
            // SAFETY: `ctx` is live; NUL-terminated names.
            atoms[i] = unsafe { qjs::JS_NewAtom(ctx, key.as_ptr()) };
            if atoms[i] == qjs::JS_ATOM_NULL {
                for &atom in &atoms[..i] {
                    unsafe { qjs::JS_FreeAtom(ctx, atom) };
                }
                return None;
            }
        }
        self.atoms.set(Some(atoms));
        Some(atoms)
    }

    /// `text` as an owned JavaScript string (`JS_EXCEPTION` with the exception pending when
    /// QuickJS could not allocate it), from the kept ones when `text` was seen before.
    unsafe fn text(&self, ctx: *mut qjs::JSContext, text: &str) -> qjs::JSValue {
        let mut texts = self.texts.borrow_mut();
        if let Some((_, value)) = texts.iter().find(|(kept, _)| **kept == *text) {
            // SAFETY: a kept string is live until `release`.
            return unsafe { qjs::JS_DupValue(ctx, *value) };
        }
        // SAFETY: valid UTF-8 of `text.len()` bytes.
        let value = unsafe { qjs::JS_NewStringLen(ctx, text.as_ptr().cast(), text.len() as _) };
        if texts.len() < MAX_TEXTS && !unsafe { qjs::JS_IsException(value) } {
            texts.push((text.into(), unsafe { qjs::JS_DupValue(ctx, value) }));
        }
        value
    }
}

impl Variant {
    fn of(request: &[Option<Value<'_>>; KEYS.len() - FIXED]) -> Variant {
        let [headers, _, exp, uid, _, vars, sid, _, ip, port, trace] = request;
        let bit = |value: &Option<Value<'_>>, at: u8| u8::from(value.is_some()) << at;
        Variant(
            bit(exp, 0)
                | bit(uid, 1)
                | bit(sid, 2)
                | bit(ip, 3)
                | bit(headers, 4)
                | bit(vars, 5)
                | bit(port, 6)
                | bit(trace, 7),
        )
    }
}

/// The request's part of a call's `ctx`, in [`KEYS`]' order from `headers`: `headers` and
/// `queryParams` of a REST RPC, then the session expiry, the user's id and name, the vars
/// when there are some (Nakama's session tokens leave empty ones out), the session id and
/// language, the client's address and port, and the trace id; `None` where the call has none.
fn request_values<'js>(
    ctx: &Ctx<'js>,
    request: &RpcContext,
) -> rquickjs::Result<[Option<Value<'js>>; KEYS.len() - FIXED]> {
    let text = |s: &str| rquickjs::String::from_str(ctx.clone(), s).map(|s| Some(s.into_value()));
    let mut uuid = uuid::Uuid::encode_buffer();
    let mut values: [Option<Value<'js>>; KEYS.len() - FIXED] = Default::default();
    if request.rest_rpc {
        values[0] = Some(convert::string_lists(ctx, request.headers.iter())?.into_value());
        values[1] = Some(convert::string_lists(ctx, &request.query)?.into_value());
    }
    if let Some(user) = &request.user {
        if user.expires_at != 0 {
            values[2] = Some(Value::new_float(ctx.clone(), user.expires_at as f64));
        }
        values[3] = text(user.user_id.hyphenated().encode_lower(&mut uuid))?;
        values[4] = text(user.username.as_str())?;
        if !user.vars.is_empty() {
            values[5] = Some(convert::string_map(ctx, user.vars.iter())?.into_value());
        }
        if !user.session_id.is_nil() {
            values[6] = text(user.session_id.hyphenated().encode_lower(&mut uuid))?;
            // Nakama gives `lang` only with a session id.
            values[7] = text(request.lang())?;
        }
    }
    if let Some(ip) = request.client_ip {
        values[8] = text(&ip.to_string())?;
    }
    if let Some(port) = request.client_port {
        let mut digits = [0; 5];
        values[9] = text(metafi_runtime::port_text(port, &mut digits))?;
    }
    if let Some(trace_id) = request.trace_id {
        values[10] = text(trace_id.hyphenated().encode_lower(&mut uuid))?;
    }
    Ok(values)
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
        let value = contexts.build(ctx, names, &env, call).unwrap();
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
            assert_eq!(contexts.texts.borrow().len(), 4);
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
            assert!(contexts.texts.borrow().is_empty());
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
