//! How a call (an RPC or a hook) runs on a Lua coroutine: its arguments pushed onto a
//! coroutine this VM keeps and the coroutine resumed, in one protected call; only a call that
//! waits is handed to mlua's `AsyncThread`.
//!
//! mlua's `Function::call_async` took a coroutine from mlua's pool, turned every argument into
//! an mlua `Value` (a reference slot each, a `MultiValue` of sixteen), moved them one by one
//! and gave the coroutine back through a status walk on drop; a hook pair paid that twice,
//! with the request and answer tables built in separate protected calls
//! (`docs/RUNTIME.md`, "The hook call path and its cost"). Here the entry function, the
//! script's function, the payload tables and the `ctx` fields are pushed in one protected
//! call (a C function made once per VM, not `Lua::exec_raw`'s two closures a call) and moved to the coroutine's stack at once; what every call's `ctx` shares
//! (env, node, version) is in the entry's upvalues (`sandbox::WRAPPERS`).
//!
//! In the same protected call the coroutine is resumed with `lua_resume`, and a call that
//! ends there (most hooks and RPCs: no `nk` call that waits) has its result read right away —
//! a before hook's table straight into JSON (`raw_read::json_at`) — without an mlua `Value`,
//! an `AsyncThread` or a status walk. A call that waits (an `nk` function doing storage or
//! HTTP IO yields mlua's "pending" marker; its future was polled once with mlua's no-op waker,
//! as no task's waker is set outside `AsyncThread`) is handed to mlua's `AsyncThread`, whose
//! first poll resumes it at once and so polls that future again with the task's waker; from
//! there it runs as every call did before. A coroutine that finished normally goes back to
//! this VM's idle list; one that was dropped while waiting (a call past its deadline) or died
//! is left to the collector, never reused.

// Every unsafe block pushes onto the stack of the VM's state inside the protected call
// (`start_protected`: a memory error is a Lua error of that call), after reserving room.
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::ffi::c_int;
use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Instant;

use metafi_runtime::HookValue;
use metafi_runtime::context::CallContext;
use mlua::thread::{AsyncThread, ThreadStatus};
use mlua::{Function, Lua, Thread, Value, ffi};
use serde_json::Value as Json;

use crate::field_keys::FieldKeys;
use crate::tape::Tape;
use crate::{raw_push, raw_read};

/// Finished coroutines kept for the next calls. One call runs at a time on an inline VM; a
/// pool VM interleaves up to `lua_max_calls_per_vm` waiting calls, which take new coroutines
/// past this many.
const IDLE_THREADS: usize = 8;

/// The payload a call passes its function.
pub(crate) enum Payload<'a> {
    /// An RPC's payload text.
    Text(&'a str),
    /// A before hook's request (`None`: nil).
    Before(Option<&'a HookValue>),
    /// An after hook's answer and request.
    After {
        output: Option<&'a HookValue>,
        input: Option<&'a HookValue>,
    },
}

/// The call entry of one VM and its idle coroutines.
pub(crate) struct CallEntry {
    /// `(fn, mode, payload, after, input, ctx fields…) → ok, result` (`sandbox::WRAPPERS`).
    entry: Function,
    /// [`start_protected`] as a Lua function, made once: Lua 5.1 and LuaJIT make a closure
    /// every time a C function is pushed, and `Lua::exec_raw` pushes two per call (its
    /// function and an error handler), ≈ 450 instructions each call with their collection.
    protected: Function,
    idle: RefCell<Vec<Thread>>,
    /// The hooks' field names and the execution modes as strings kept for this VM.
    keys: FieldKeys,
    /// Where a hook's request or answer struct is recorded before it is built (`crate::tape`),
    /// kept so that its buffers serve every call.
    tape: RefCell<Tape>,
}

impl CallEntry {
    pub(crate) fn new(lua: &Lua, entry: Function) -> mlua::Result<Rc<CallEntry>> {
        // SAFETY: `start_protected` follows the Lua C function protocol and is only called by
        // `start`, with the stack and parameter it expects.
        let protected = unsafe { lua.create_c_function(start_protected)? };
        Ok(Rc::new(CallEntry {
            entry,
            protected,
            idle: RefCell::new(Vec::with_capacity(IDLE_THREADS)),
            keys: FieldKeys::default(),
            tape: RefCell::new(Tape::default()),
        }))
    }

    /// Starts `function` with `payload` and the `ctx` of `call` on a coroutine and runs it
    /// until it ends or first waits, in the same protected call that pushed its arguments. The
    /// running call's deadline must be set (the budget hook reads it).
    pub(crate) fn start(
        self: &Rc<Self>,
        lua: &Lua,
        function: &Function,
        payload: Payload<'_>,
        call: &CallContext,
    ) -> mlua::Result<Started> {
        let read = match payload {
            Payload::Text(_) => Read::Text,
            Payload::Before(_) => Read::Json,
            Payload::After { .. } => Read::Nothing,
        };
        let popped = self.idle.borrow_mut().pop();
        let thread = match popped {
            Some(thread) => thread,
            None => lua.create_thread(self.entry.clone())?,
        };
        // Nakama's view of the headers is written here, outside the protected call: a Lua error
        // there (out of memory) jumps over the pushing frames, which must own nothing to drop.
        let headers: Vec<(String, Vec<&str>)> = call.request.headers.iter().collect();
        let mut params = Params {
            payload: &payload,
            keys: &self.keys,
            tape: &self.tape,
            call,
            headers: &headers,
            read,
            first: None,
        };
        let left = self.protected_start(lua, function, &thread, &mut params);
        let first = params.first;
        let (left, first) = match (left, first) {
            (Ok(left), Some(first)) => (left, first),
            // Nothing reached the coroutine (a payload too deep, no stack room): it is clean.
            (Ok(_), None) => {
                self.give_back(thread);
                return Err(raw_push::deep());
            }
            // Out of memory while pushing the arguments (a request larger than what the
            // script left of the cap): the call's failure, reported and collected as one.
            (Err(e @ mlua::Error::MemoryError(_)), None) => {
                self.give_back(thread);
                return Ok(Started::Done(Outcome::Failed(e)));
            }
            (Err(e), None) => {
                self.give_back(thread);
                return Err(e);
            }
            // It ran, so it may be suspended half-way: never reused.
            (Err(e), Some(_)) => return Err(e),
        };
        match first {
            First::Waiting => {
                let running = thread.clone().into_async::<(bool, Value)>(())?;
                Ok(Started::Waiting(Running {
                    running,
                    thread: Some(thread),
                    entry: self.clone(),
                    read,
                }))
            }
            First::Died(status) => Ok(Started::Done(Outcome::Failed(died(status, left)))),
            First::Ended(end) => {
                self.give_back(thread);
                Ok(Started::Done(match end {
                    Ended::Raised => Outcome::Raised(left),
                    Ended::Returned(returned) => Outcome::Returned(returned),
                    Ended::Other => Outcome::Returned(Returned::Other(left)),
                    Ended::Unreadable(why) => Outcome::Failed(mlua::Error::runtime(why)),
                }))
            }
        }
    }

    /// Calls [`start_protected`] with `entry, function, thread` and `params` in a protected
    /// call on the VM's current state; returns the value it left (nil when none) or the error
    /// it raised. The stack is left as found.
    fn protected_start(
        &self,
        lua: &Lua,
        function: &Function,
        thread: &Thread,
        params: &mut Params<'_>,
    ) -> mlua::Result<Value> {
        lua.exec_raw_lua(|raw| {
            let state = raw.state();
            // SAFETY: `state` is the VM's current state, locked for the closure; room for the
            // five values is reserved before they are pushed; `params` outlives the call and
            // `start_protected` reads it only during it; what the call leaves is popped, so the
            // stack ends as it began.
            unsafe {
                let base = ffi::lua_gettop(state);
                if ffi::lua_checkstack(state, 6) == 0 {
                    return Err(mlua::Error::StackError);
                }
                let pushed = raw
                    .push(&self.protected)
                    .and_then(|()| raw.push(&self.entry))
                    .and_then(|()| raw.push(function))
                    .and_then(|()| raw.push(thread));
                if let Err(e) = pushed {
                    ffi::lua_settop(state, base);
                    return Err(e);
                }
                ffi::lua_pushlightuserdata(state, std::ptr::from_mut(params).cast());
                let status = ffi::lua_pcall(state, 4, ffi::LUA_MULTRET, 0);
                let result = if status != ffi::LUA_OK {
                    // The error value (mlua's error object when it is one).
                    Err(died(status, raw.pop_value()))
                } else if ffi::lua_gettop(state) > base {
                    Ok(raw.pop_value())
                } else {
                    Ok(Value::Nil)
                };
                ffi::lua_settop(state, base);
                result
            }
        })
    }

    /// Keeps a coroutine that finished normally for the next call.
    fn give_back(&self, thread: Thread) {
        let mut idle = self.idle.borrow_mut();
        if idle.len() < IDLE_THREADS {
            idle.push(thread);
        }
    }
}

/// How a call went.
pub(crate) enum Outcome {
    /// The function returned; its result read as its payload's kind asks.
    Returned(Returned),
    /// The function raised this error value (the entry's `pcall` caught it).
    Raised(Value),
    /// The call failed outside the function: out of memory or past its budget while building
    /// `ctx`, or a result that cannot be read.
    Failed(mlua::Error),
}

/// A function's result.
pub(crate) enum Returned {
    /// An RPC's result text (nil: empty).
    Text(String),
    /// A before hook's result as JSON in the names the script wrote (`None`: nil, the call is
    /// dropped).
    Json(Option<Json>),
    /// An after hook's (ignored).
    Nothing,
    /// An RPC's result that is neither text nor nil.
    Other(Value),
}

/// A started call: over already, or waiting in an `nk` call.
pub(crate) enum Started {
    Done(Outcome),
    Waiting(Running),
}

impl Started {
    /// The call's outcome, waiting for it if it waits; `deadline` is set in `cell` around each
    /// poll (the budget hook reads it), as for the first run.
    pub(crate) async fn finish(
        self,
        lua: &Lua,
        deadline: Instant,
        cell: &Rc<crate::budget::Deadline>,
    ) -> Outcome {
        match self {
            Started::Done(outcome) => outcome,
            Started::Waiting(mut running) => {
                let result = std::future::poll_fn(|cx| {
                    let previous = cell.replace(Some(deadline));
                    let poll = Pin::new(&mut running).poll(cx);
                    cell.set(previous);
                    poll
                })
                .await;
                match result {
                    Ok((true, value)) => Outcome::Returned(match running.read {
                        Read::Text => match value {
                            Value::String(s) => Returned::Text(s.to_string_lossy()),
                            Value::Nil => Returned::Text(String::new()),
                            other => Returned::Other(other),
                        },
                        Read::Json => match value {
                            Value::Nil => Returned::Json(None),
                            value => match raw_read::json(lua, &value) {
                                Ok(json) => Returned::Json(Some(json)),
                                Err(e) => return Outcome::Failed(e),
                            },
                        },
                        Read::Nothing => Returned::Nothing,
                    }),
                    Ok((false, error)) => Outcome::Raised(error),
                    Err(e) => Outcome::Failed(e),
                }
            }
        }
    }
}

/// What the first run's result is read into.
#[derive(Clone, Copy)]
enum Read {
    Text,
    Json,
    Nothing,
}

/// How the first run went.
enum First {
    /// The coroutine yielded (an `nk` call waits): the rest goes to mlua's `AsyncThread`.
    Waiting,
    /// The coroutine died with this status; the error value is left on the stack.
    Died(c_int),
    Ended(Ended),
}

impl First {
    /// Whether `run_first` left a value on the stack.
    fn leaves_value(&self) -> bool {
        matches!(
            self,
            First::Died(_) | First::Ended(Ended::Raised | Ended::Other)
        )
    }
}

/// How a call that ended in its first run ended.
enum Ended {
    Returned(Returned),
    /// The error value is left on the stack.
    Raised,
    /// An RPC's result of another type is left on the stack.
    Other,
    /// A before hook's result that cannot be JSON (too large, too deep, not a finite number).
    Unreadable(String),
}

/// The error of a coroutine that died with `status` (outside the entry's `pcall`), or of a
/// failed `lua_pcall`, `error` its error value; as mlua's resume reports it.
pub(crate) fn died(status: c_int, error: Value) -> mlua::Error {
    match error {
        Value::Error(error) => *error,
        Value::String(text) if status == ffi::LUA_ERRMEM => {
            mlua::Error::MemoryError(text.to_string_lossy())
        }
        Value::String(text) => mlua::Error::RuntimeError(text.to_string_lossy()),
        other => mlua::Error::RuntimeError(format!(
            "the call's coroutine failed with a {} error value",
            other.type_name()
        )),
    }
}

/// What [`start_protected`] needs and what it found, passed as a light userdata.
struct Params<'a> {
    payload: &'a Payload<'a>,
    keys: &'a FieldKeys,
    tape: &'a RefCell<Tape>,
    call: &'a CallContext,
    /// The REST call's headers in Nakama's form (empty otherwise), made before the call.
    headers: &'a [(String, Vec<&'a str>)],
    read: Read,
    /// `None`: nothing reached the coroutine (a payload too deep, or the call raised).
    first: Option<First>,
}

/// Stack: `entry, function, thread, params` (a light userdata pointing at [`Params`]). Pushes
/// the call onto the coroutine and runs it ([`push_call`], [`run_first`]); returns the value
/// `run_first` left, if any.
///
/// # Safety
/// Called by Lua through `lua_pcall` from `CallEntry::protected_start`, with that stack.
unsafe extern "C-unwind" fn start_protected(state: *mut ffi::lua_State) -> c_int {
    unsafe {
        let params = ffi::lua_touserdata(state, 4).cast::<Params<'_>>();
        ffi::lua_settop(state, 3);
        let params = &mut *params;
        let ran = push_call(state, params).map(|nargs| run_first(state, nargs, params.read));
        // What comes back is what is left on the stack: the value `run_first` left, if any,
        // without the three arguments.
        let left = if ran.as_ref().is_some_and(First::leaves_value) {
            ffi::lua_replace(state, 1);
            ffi::lua_settop(state, 1);
            1
        } else {
            ffi::lua_settop(state, 0);
            0
        };
        params.first = ran;
        left
    }
}

/// Stack: `entry, function, thread`, the coroutine holding the entry and its `nargs`
/// arguments. Resumes it; when it ends or dies, reads what it left per `read` and leaves at
/// most one value on the stack (see [`First`] and [`Ended`]).
///
/// # Safety
/// `state` is a live Lua state inside a protected call; the coroutine is not running.
unsafe fn run_first(state: *mut ffi::lua_State, nargs: c_int, read: Read) -> First {
    unsafe {
        let coroutine = ffi::lua_tothread(state, 3);
        let mut nresults = 0;
        let status = ffi::lua_resume(coroutine, state, nargs, &mut nresults);
        match status {
            ffi::LUA_YIELD => {
                // What a waiting `nk` call yields (mlua's pending marker); `AsyncThread`
                // resumes with an empty stack, as after its own polls.
                ffi::lua_settop(coroutine, 0);
                return First::Waiting;
            }
            ffi::LUA_OK => {}
            died => {
                // The error value is on the dead coroutine's top.
                ffi::lua_xmove(coroutine, state, 1);
                return First::Died(died);
            }
        }
        // `ok, result` (a function that returns nothing: `ok` alone).
        ffi::lua_settop(coroutine, 2);
        ffi::lua_xmove(coroutine, state, 2);
        let ok = ffi::lua_toboolean(state, -2) != 0;
        ffi::lua_remove(state, -2);
        if !ok {
            return First::Ended(Ended::Raised);
        }
        let at = ffi::lua_gettop(state);
        let nil = ffi::lua_type(state, at) == ffi::LUA_TNIL;
        let end = match read {
            Read::Nothing => Ended::Returned(Returned::Nothing),
            Read::Text if nil => Ended::Returned(Returned::Text(String::new())),
            Read::Text if ffi::lua_type(state, at) == ffi::LUA_TSTRING => {
                let mut len = 0usize;
                let text = ffi::lua_tolstring(state, at, &mut len);
                let bytes = std::slice::from_raw_parts(text.cast::<u8>(), len);
                Ended::Returned(Returned::Text(raw_read::lossy(bytes)))
            }
            Read::Text => return First::Ended(Ended::Other),
            Read::Json if nil => Ended::Returned(Returned::Json(None)),
            Read::Json => match raw_read::json_at(state, at) {
                Ok(json) => Ended::Returned(Returned::Json(Some(json))),
                Err(why) => Ended::Unreadable(why),
            },
        };
        ffi::lua_settop(state, at - 1);
        First::Ended(end)
    }
}

/// Stack: `entry, function, thread`. Pushes the entry's arguments (`params.headers`: the
/// call's, as `RequestHeaders::iter` gives them), then moves the entry and them onto the
/// (idle, emptied) coroutine; returns how many arguments, or `None` (the coroutine untouched)
/// when a payload nests too deep. Owns nothing while it pushes (`crate::tape`'s rule): what it
/// pushes is borrowed, the client's address written into a buffer on the stack.
///
/// # Safety
/// `state` is a live Lua state inside a protected call, with the three values on its stack.
unsafe fn push_call(state: *mut ffi::lua_State, params: &Params<'_>) -> Option<c_int> {
    let Params {
        payload,
        keys,
        tape,
        call,
        headers,
        ..
    } = *params;
    unsafe {
        let coroutine = ffi::lua_tothread(state, 3);
        ffi::luaL_checkstack(
            state,
            ARGS + 1,
            c"no room for the call's arguments".as_ptr(),
        );
        let base = ffi::lua_gettop(state);
        ffi::lua_pushvalue(state, 1);
        ffi::lua_pushvalue(state, 2);
        keys.push(state, call.mode.as_str());
        let json = |state, value: Option<&HookValue>| match value {
            Some(value) => raw_push::push_hook_value(state, value, keys, tape),
            None => {
                ffi::lua_pushnil(state);
                true
            }
        };
        match payload {
            Payload::Text(text) => {
                raw_push::push_str(state, text);
                ffi::lua_pushboolean(state, 0);
                ffi::lua_pushnil(state);
            }
            Payload::Before(input) => {
                if !json(state, *input) {
                    return None;
                }
                ffi::lua_pushboolean(state, 0);
                ffi::lua_pushnil(state);
            }
            Payload::After { output, input } => {
                if !json(state, *output) {
                    return None;
                }
                ffi::lua_pushboolean(state, 1);
                if !json(state, *input) {
                    return None;
                }
            }
        }
        let request = &call.request;
        if headers.is_empty() {
            ffi::lua_pushnil(state);
        } else {
            let entries = headers.iter().map(|(name, values)| (name, values));
            raw_push::push_string_lists(state, headers.len(), entries);
        }
        match request.query.len() {
            0 => ffi::lua_pushnil(state),
            names => raw_push::push_string_lists(state, names, &request.query),
        }
        let mut uuid = uuid::Uuid::encode_buffer();
        match &request.user {
            Some(user) => {
                raw_push::push_str(state, user.user_id.hyphenated().encode_lower(&mut uuid));
                raw_push::push_str(state, &user.username);
                // No `vars` for a session without any, as Nakama's (its tokens leave them out).
                if user.vars.is_empty() {
                    ffi::lua_pushnil(state);
                } else {
                    ffi::lua_createtable(state, 0, raw_push::len(user.vars.len()));
                    for (k, v) in &user.vars {
                        raw_push::push_str(state, k);
                        raw_push::push_str(state, v);
                        ffi::lua_rawset(state, -3);
                    }
                }
                ffi::lua_pushinteger(state, user.expires_at as ffi::lua_Integer);
                if user.session_id.is_nil() {
                    ffi::lua_pushnil(state);
                    ffi::lua_pushnil(state);
                } else {
                    raw_push::push_str(state, user.session_id.hyphenated().encode_lower(&mut uuid));
                    // Nakama gives `lang` only with a session id.
                    raw_push::push_str(state, request.lang());
                }
            }
            None => {
                for _ in 0..6 {
                    ffi::lua_pushnil(state);
                }
            }
        }
        match request.client_ip {
            Some(ip) => {
                // The longest address (IPv6, 45 characters with an embedded IPv4) fits.
                let mut buffer = [0u8; 64];
                let mut out = std::io::Cursor::new(&mut buffer[..]);
                let _ = write!(out, "{ip}");
                let end = usize::try_from(out.position()).unwrap_or(0);
                ffi::lua_pushlstring(state, buffer.as_ptr().cast(), end);
            }
            None => ffi::lua_pushnil(state),
        }
        match request.client_port {
            // A string, as Nakama's.
            Some(port) => raw_push::push_str(state, metafi_runtime::port_text(port, &mut [0; 5])),
            None => ffi::lua_pushnil(state),
        }
        match request.trace_id {
            Some(trace_id) => {
                raw_push::push_str(state, trace_id.hyphenated().encode_lower(&mut uuid));
            }
            None => ffi::lua_pushnil(state),
        }
        let pushed = ffi::lua_gettop(state) - base;
        if ffi::lua_checkstack(coroutine, pushed) == 0 {
            ffi::luaL_error(state, c"no room for the call's arguments".as_ptr());
        }
        ffi::lua_settop(coroutine, 0);
        ffi::lua_xmove(state, coroutine, pushed);
        // The entry's arguments: all but the entry itself.
        Some(pushed - 1)
    }
}

/// The entry's arguments after the entry itself: fn, mode, payload, after, input, headers,
/// query, user id, username, vars, session expiry, session id, language, client address,
/// client port, trace id.
const ARGS: c_int = 17;

/// A started call that waits; gives its coroutine back to the VM when it finished normally.
pub(crate) struct Running {
    running: AsyncThread<(bool, Value)>,
    thread: Option<Thread>,
    entry: Rc<CallEntry>,
    /// What its result is read into.
    read: Read,
}

impl Future for Running {
    type Output = mlua::Result<(bool, Value)>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // `AsyncThread` is `Unpin` (a thread reference and a marker).
        Pin::new(&mut self.running).poll(cx)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take()
            && thread.status() == ThreadStatus::Finished
        {
            self.entry.give_back(thread);
        }
    }
}
