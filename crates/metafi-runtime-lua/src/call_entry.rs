//! How a call (an RPC or a hook) starts on a Lua coroutine: its arguments pushed in one
//! protected call onto a coroutine this VM keeps, then resumed through mlua's `AsyncThread`.
//!
//! mlua's `Function::call_async` took a coroutine from mlua's pool, turned every argument into
//! an mlua `Value` (a reference slot each, a `MultiValue` of sixteen), moved them one by one
//! and gave the coroutine back through a status walk on drop; a hook pair paid that twice,
//! with the request and answer tables built in separate protected calls
//! (`docs/RUNTIME.md`, "The hook call path and its cost"). Here the entry function, the
//! script's function, the payload tables and the `ctx` fields are pushed in one
//! `Lua::exec_raw` and moved to the coroutine's stack at once; what every call's `ctx` shares
//! (env, node, version) is in the entry's upvalues (`sandbox::WRAPPERS`).
//!
//! The coroutine is still resumed by mlua's `AsyncThread`, so a call that waits (an `nk`
//! function doing storage or HTTP IO yields mlua's "pending" marker) is polled again with the
//! task's waker exactly as before. A coroutine that finished normally goes back to this VM's
//! idle list; one that was dropped while waiting (a call past its deadline) or died is left to
//! the collector.

// Every unsafe block pushes onto the stack of the state `exec_raw` hands over (protected:
// a memory error is a Lua error of that call), after reserving room.
#![allow(unsafe_code)]

use std::cell::RefCell;
use std::ffi::c_int;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use metafi_runtime::context::CallContext;
use mlua::thread::{AsyncThread, ThreadStatus};
use mlua::{Function, Lua, Thread, Value, ffi};
use serde_json::Value as Json;

use crate::raw_push;

/// Finished coroutines kept for the next calls. One call runs at a time on an inline VM; a
/// pool VM interleaves up to `lua_max_calls_per_vm` waiting calls, which take new coroutines
/// past this many.
const IDLE_THREADS: usize = 8;

/// The payload a call passes its function.
pub(crate) enum Payload<'a> {
    /// An RPC's payload text.
    Text(&'a str),
    /// A before hook's request (`None`: nil).
    Before(Option<&'a Json>),
    /// An after hook's answer and request.
    After {
        output: Option<&'a Json>,
        input: Option<&'a Json>,
    },
}

/// The call entry of one VM and its idle coroutines.
pub(crate) struct CallEntry {
    /// `(fn, mode, payload, after, input, ctx fields…) → ok, result` (`sandbox::WRAPPERS`).
    entry: Function,
    idle: RefCell<Vec<Thread>>,
}

impl CallEntry {
    pub(crate) fn new(entry: Function) -> Rc<CallEntry> {
        Rc::new(CallEntry {
            entry,
            idle: RefCell::new(Vec::with_capacity(IDLE_THREADS)),
        })
    }

    /// Starts `function` with `payload` and the `ctx` of `call` on a coroutine; the future
    /// resolves to the entry's `(ok, result or error)`.
    pub(crate) fn start(
        self: &Rc<Self>,
        lua: &Lua,
        function: &Function,
        payload: Payload<'_>,
        call: &CallContext,
    ) -> mlua::Result<Running> {
        match payload {
            Payload::Before(Some(json)) => raw_push::too_deep(json)?,
            Payload::After { output, input } => {
                for json in [output, input].into_iter().flatten() {
                    raw_push::too_deep(json)?;
                }
            }
            Payload::Text(_) | Payload::Before(None) => {}
        }
        let popped = self.idle.borrow_mut().pop();
        let thread = match popped {
            Some(thread) => thread,
            None => lua.create_thread(self.entry.clone())?,
        };
        // SAFETY: `exec_raw` pushes the three arguments onto `state` (live for the closure);
        // `push_call` pushes onto `state` after reserving room, then moves what it pushed to
        // the coroutine, whose stack it first checks has room.
        unsafe {
            lua.exec_raw::<()>((&self.entry, function, &thread), |state| {
                push_call(state, &payload, call);
            })?;
        }
        let running = thread.clone().into_async::<(bool, Value)>(())?;
        Ok(Running {
            running,
            thread: Some(thread),
            entry: self.clone(),
        })
    }
}

/// Stack: `entry, function, thread`. Pushes the entry's arguments, then moves the entry and
/// them onto the (idle, emptied) coroutine.
///
/// # Safety
/// `state` is a live Lua state inside a protected call, with the three values on its stack.
unsafe fn push_call(state: *mut ffi::lua_State, payload: &Payload<'_>, call: &CallContext) {
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
        raw_push::push_str(state, call.mode.as_str());
        let json = |state, value: Option<&Json>| match value {
            Some(json) => raw_push::push(state, json),
            None => ffi::lua_pushnil(state),
        };
        match payload {
            Payload::Text(text) => {
                raw_push::push_str(state, text);
                ffi::lua_pushboolean(state, 0);
                ffi::lua_pushnil(state);
            }
            Payload::Before(input) => {
                json(state, *input);
                ffi::lua_pushboolean(state, 0);
                ffi::lua_pushnil(state);
            }
            Payload::After { output, input } => {
                json(state, *output);
                ffi::lua_pushboolean(state, 1);
                json(state, *input);
            }
        }
        let request = &call.request;
        for map in [&request.headers, &request.query] {
            if map.is_empty() {
                ffi::lua_pushnil(state);
            } else {
                raw_push::push_string_lists(state, map);
            }
        }
        match &request.user {
            Some(user) => {
                let mut uuid = uuid::Uuid::encode_buffer();
                raw_push::push_str(state, user.user_id.hyphenated().encode_lower(&mut uuid));
                raw_push::push_str(state, &user.username);
                ffi::lua_createtable(state, 0, raw_push::len(user.vars.len()));
                for (k, v) in &user.vars {
                    raw_push::push_str(state, k);
                    raw_push::push_str(state, v);
                    ffi::lua_rawset(state, -3);
                }
                ffi::lua_pushinteger(state, user.expires_at as ffi::lua_Integer);
                if user.session_id.is_nil() {
                    ffi::lua_pushnil(state);
                } else {
                    raw_push::push_str(state, user.session_id.hyphenated().encode_lower(&mut uuid));
                }
            }
            None => {
                for _ in 0..5 {
                    ffi::lua_pushnil(state);
                }
            }
        }
        match request.client_ip {
            Some(ip) => raw_push::push_str(state, &ip.to_string()),
            None => ffi::lua_pushnil(state),
        }
        let pushed = ffi::lua_gettop(state) - base;
        if ffi::lua_checkstack(coroutine, pushed) == 0 {
            ffi::luaL_error(state, c"no room for the call's arguments".as_ptr());
        }
        ffi::lua_settop(coroutine, 0);
        ffi::lua_xmove(state, coroutine, pushed);
    }
}

/// The entry's arguments after the entry itself: fn, mode, payload, after, input, headers,
/// query, user id, username, vars, session expiry, session id, client address.
const ARGS: c_int = 14;

/// A started call; gives its coroutine back to the VM when it finished normally.
pub(crate) struct Running {
    running: AsyncThread<(bool, Value)>,
    thread: Option<Thread>,
    entry: Rc<CallEntry>,
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
            let mut idle = self.entry.idle.borrow_mut();
            if idle.len() < IDLE_THREADS {
                idle.push(thread);
            }
        }
    }
}
