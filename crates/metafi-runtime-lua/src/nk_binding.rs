//! Binds the host's `nk` table (`metafi_runtime::nk_api`) into the `nakama` module: one Lua
//! function per row with a Lua name. Sync rows run on the VM thread; async rows are awaited
//! from the calling coroutine, so other calls on the VM run meanwhile; unserved rows raise
//! their error when called, never at load. Every error carries the calling script's
//! `file:line: ` as gopher-lua's `RaiseError` does, and every call first checks the deadline.
//!
//! Sync and unserved rows are plain C functions (`lua_CFunction` closures made once per VM):
//! arguments are read straight off the Lua stack ([`raw_read::nk_args`]) and results pushed
//! onto it ([`raw_push::push_nk`]). mlua's `create_function` trampoline cost more than most of
//! these functions' own work: per call it borrows the VM's state, moves every argument into a
//! `MultiValue` of registry-held values and back, and runs the callback under `catch_unwind`
//! in a protected call — a third of the Lua part of the socket echo, whose two `nk` calls
//! were the script's only work (`docs/RUNTIME.md`, "The nk binding table"). `json_decode` and
//! `json_encode` go further and convert between JSON text and Lua values with no tree between
//! ([`crate::json_text`]). Async rows stay mlua async functions: they need its coroutine
//! machinery to wait.
//!
//! Errors are raised as Lua strings (`m.lua:3: bad argument #1 to json_decode (…)`), which is
//! what a script's `pcall` showed of mlua's error objects (the sandbox's `pcall` turns those
//! into their message) and what the host reads of an uncaught one. A Rust panic in a row is
//! caught here and raised as a Lua error: it never unwinds through LuaJIT's frames. Nor does a
//! Lua error unwind a frame here that owns something (`crate::tape`'s rule): a row's result
//! and an error's text are parked in the VM's [`Binding`] while the C API copies them.

// The functions below are C functions: they read their upvalues and the stack through the Lua
// C API. Every unsafe block says which invariant it rests on.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::ffi::c_int;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::rc::Rc;

use metafi_runtime::nk::Nk;
use metafi_runtime::nk_api::{
    self, Naming, NkArgs, NkCall, NkError, NkFunction, NkValue, ValueBudget,
};
use mlua::{Function, Lua, MultiValue, RegistryKey, Table, Value, ffi};

use crate::nakama::{located_async, script_position_raw, shared_nk};
use crate::{BudgetExceeded, json_text, nk_value, raw_push, raw_read, tape};

/// What every C function of one VM reads through its upvalue 3, kept alive with the Lua state
/// (mlua app data): the functions hold a bare pointer to it.
pub(crate) struct Binding {
    nk: Nk,
    deadline: Rc<crate::budget::Deadline>,
    /// `tape::run` as a Lua function, for building a tape in a protected call without pushing
    /// a new C function (which allocates, so may raise) each time.
    tape_runner: RegistryKey,
    /// A row's result while it is pushed, and the text of an error or of `json_encode`'s
    /// result while it is copied into Lua: kept here, not in the C function's frame, so that
    /// a memory error raised by the copy unwinds a frame that owns nothing
    /// (`crate::tape`'s rule). The next call that parks one drops what a failed copy left.
    parked_value: Cell<Option<NkValue>>,
    parked_text: Cell<Vec<u8>>,
}

impl Binding {
    fn over_deadline(&self) -> bool {
        self.deadline.is_over()
    }

    /// The registry slot of `tape::run` (see [`crate::tape::Tape::build_protected`]).
    pub(crate) fn tape_runner(&self) -> c_int {
        self.tape_runner.id()
    }

    /// Pushes `value` as a row's results (see [`raw_push::push_results`]) from
    /// `parked_value`; returns how many.
    ///
    /// # Safety
    /// `state` is the state of a running C function of this binding's VM.
    unsafe fn push_results(&self, state: *mut ffi::lua_State, value: NkValue) -> c_int {
        self.parked_value.set(Some(value));
        // SAFETY: a plain reference into the cell (no guard to skip); nothing else reaches
        // the cell until `take` below, and a Lua error leaves the value parked.
        let pushed = match unsafe { &*self.parked_value.as_ptr() } {
            Some(value) => unsafe { raw_push::push_results(state, value) },
            None => 0,
        };
        drop(self.parked_value.take());
        pushed
    }

    /// Pushes `text` as a Lua string from `parked_text` (its buffer reused after).
    ///
    /// # Safety
    /// As [`Binding::push_results`].
    pub(crate) unsafe fn push_text(&self, state: *mut ffi::lua_State, text: Vec<u8>) {
        self.parked_text.set(text);
        // SAFETY: as in `push_results`.
        unsafe {
            let text = &*self.parked_text.as_ptr();
            ffi::lua_pushlstring(state, text.as_ptr().cast(), text.len());
        }
        let mut text = self.parked_text.take();
        // A large text is not kept for the next call.
        text.clear();
        text.shrink_to(1024);
        self.parked_text.set(text);
    }
}

/// Keeps [`Binding`] alive as long as the Lua state (mlua app data).
struct BindingCell(#[allow(dead_code)] Rc<Binding>);

/// Puts every table row with a Lua name into `module`, replacing a function of the same name
/// the engine bound itself (the table wins).
pub(crate) fn install(
    lua: &Lua,
    module: &Table,
    deadline: &Rc<crate::budget::Deadline>,
) -> mlua::Result<()> {
    // SAFETY: `tape::run` follows the C function protocol; only `Tape::build_protected`
    // calls it, with the stack it expects.
    let runner = unsafe { lua.create_c_function(tape::run)? };
    let binding = Rc::new(Binding {
        nk: shared_nk(lua)?,
        deadline: deadline.clone(),
        tape_runner: lua.create_registry_value(runner)?,
        parked_value: Cell::new(None),
        parked_text: Cell::new(Vec::new()),
    });
    let binding_ptr = Rc::as_ptr(&binding);
    lua.set_app_data(BindingCell(binding));
    let budget = Value::Error(Box::new(mlua::Error::external(BudgetExceeded)));
    for row in nk_api::functions() {
        let Some(name) = row.lua else {
            continue;
        };
        let function = match row.call {
            NkCall::Async(f) => located_async(lua, move |lua: Lua, values: MultiValue| {
                let call = nk_value::args(&values)
                    .and_then(|args| Ok(f(shared_nk(&lua)?, NkArgs::new(Naming::Snake, args))));
                async move {
                    let value = call?.await.map_err(|e| raised(&e, name))?;
                    nk_value::results(&lua, value)
                }
            })?,
            NkCall::Sync(_) | NkCall::Unserved(_) => {
                let body = json_text::function(name).unwrap_or(call_row);
                c_function(lua, body, row, budget.clone(), binding_ptr)?
            }
        };
        module.raw_set(name, function)?;
    }
    Ok(())
}

/// An `nk` error as Lua raises it: `bad argument #N to name (…)` or the failure's text.
fn raised(error: &NkError, name: &str) -> mlua::Error {
    mlua::Error::runtime(error.lua_message(name))
}

/// The C closure `body` with upvalues (row, budget error, binding).
fn c_function(
    lua: &Lua,
    body: ffi::lua_CFunction,
    row: &'static NkFunction,
    budget: Value,
    binding: *const Binding,
) -> mlua::Result<Function> {
    // SAFETY: `exec_raw` pushes the budget error and leaves room for three more slots; the
    // closure pushes the two pointers and pops all three into the one function `exec_raw`
    // returns. `row` is static; `binding` stays valid as long as the state (`install` keeps
    // its `Rc` in app data). Upvalue 2 must follow upvalue 1, so the row goes under it.
    unsafe {
        lua.exec_raw::<Function>(budget, |state| {
            ffi::lua_pushlightuserdata(state, std::ptr::from_ref(row).cast_mut().cast());
            ffi::lua_insert(state, -2);
            ffi::lua_pushlightuserdata(state, binding.cast_mut().cast());
            ffi::lua_pushcclosure(state, body, 3);
        })
    }
}

/// What a row's C function reads of its upvalues.
pub(crate) struct Upvalues {
    pub(crate) row: &'static NkFunction,
    pub(crate) name: &'static str,
    pub(crate) binding: &'static Binding,
}

/// Reads the upvalues of the running C function, or raises the budget error (upvalue 2) when
/// the call is past its deadline: what every row does first.
///
/// # Safety
/// Called first thing from a C function made by [`c_function`] (its upvalues are the row,
/// the budget error and the binding).
pub(crate) unsafe fn enter(state: *mut ffi::lua_State) -> Upvalues {
    // SAFETY: the upvalues are what `c_function` stored: a static row and a binding that
    // lives as long as the state, which outlives every call of its functions.
    unsafe {
        let row = &*ffi::lua_touserdata(state, ffi::lua_upvalueindex(1))
            .cast::<NkFunction>()
            .cast_const();
        let binding = &*ffi::lua_touserdata(state, ffi::lua_upvalueindex(3))
            .cast::<Binding>()
            .cast_const();
        if binding.over_deadline() {
            ffi::lua_pushvalue(state, ffi::lua_upvalueindex(2));
            ffi::lua_error(state);
        }
        Upvalues {
            row,
            // Invariant: only rows with a Lua name are bound (`install`).
            name: row.lua.unwrap_or("?"),
            binding,
        }
    }
}

/// A sync or unserved row: its arguments read off the stack, the row called, its results
/// pushed (several for `NkValue::Multi`) or its error raised.
pub(crate) unsafe extern "C-unwind" fn call_row(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: bound by `c_function` with `call_row` as body.
    let up = unsafe { enter(state) };
    // SAFETY: a C function may grow its stack; a memory error raised here unwinds a frame
    // that holds nothing. With the room reserved, reading the arguments raises no Lua error,
    // so it can run under `catch_unwind` (which must never see a Lua error: LuaJIT's errors
    // are foreign exceptions, and `catch_unwind` aborts on those).
    unsafe { raw_read::reserve(state) };
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut budget = ValueBudget::default();
        // SAFETY: reads the arguments on the stack of this call within the reserved room.
        let args = unsafe { raw_read::nk_args(state, &mut budget) }?;
        match up.row.call {
            NkCall::Sync(f) => f(&up.binding.nk, NkArgs::new(Naming::Snake, args))
                .map_err(|e| e.lua_message(up.name)),
            NkCall::Unserved(why) => Err(why.error(up.name).lua_message(up.name)),
            // Invariant: async rows are bound as mlua async functions (`install`).
            NkCall::Async(_) => Err(format!("nk.{} cannot be called here", up.name)),
        }
    }));
    match outcome {
        // SAFETY: pushing onto the stack of this call, which `push_nk` grows as it needs;
        // the value is parked in the binding, so a memory error raised there unwinds this
        // frame holding nothing but references.
        Ok(Ok(value)) => unsafe { up.binding.push_results(state, value) },
        // SAFETY: raising from a C function called by Lua.
        Ok(Err(message)) => unsafe { raise(state, &up, message) },
        // SAFETY: as above.
        Err(panic) => unsafe { raise_panic(state, &up, panic) },
    }
}

/// Raises `message` with the calling script's position (`m.lua:3: message`).
///
/// # Safety
/// Called from a C function called by Lua, whose upvalues `up` are; nothing that needs
/// dropping may be alive in the caller's frame (the error unwinds it).
pub(crate) unsafe fn raise(state: *mut ffi::lua_State, up: &Upvalues, message: String) -> c_int {
    // SAFETY: the caller's. The text is put together and parked before any Lua call that may
    // raise; reading the call stack touches nothing else.
    unsafe {
        let position = script_position_raw(state).unwrap_or_default();
        let mut text = Vec::with_capacity(position.len() + message.len());
        text.extend_from_slice(position.as_bytes());
        text.extend_from_slice(message.as_bytes());
        drop(position);
        drop(message);
        ffi::luaL_checkstack(state, 1, c"no room for the error".as_ptr());
        up.binding.push_text(state, text);
        ffi::lua_error(state)
    }
}

/// Raises the error for a row that panicked, after logging the panic: the script sees an
/// internal failure, LuaJIT's frames never see the unwinding.
///
/// # Safety
/// As [`raise`].
pub(crate) unsafe fn raise_panic(
    state: *mut ffi::lua_State,
    up: &Upvalues,
    panic: Box<dyn std::any::Any + Send>,
) -> c_int {
    let name = up.name;
    {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        drop(panic);
        tracing::error!(function = name, panic = %what, "an nk function panicked; the script gets an error");
    }
    // SAFETY: the caller's.
    unsafe {
        raise(
            state,
            up,
            format!("nk.{name} failed: internal server error"),
        )
    }
}

#[cfg(test)]
mod tests;
