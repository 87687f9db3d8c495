//! A Lua value recorded by Rust code as a list of stack operations, then built by a function
//! that owns nothing: the one place where a value walked by serde becomes Lua tables.
//!
//! The rule (`docs/RUNTIME.md`, "Lua errors and Rust frames"): a Lua C API call that may
//! raise — anything that allocates (`lua_createtable`, `lua_pushlstring`, `lua_rawset`, a
//! registry reference), `luaL_checkstack`, `lua_error` — runs only in a frame that owns nothing
//! needing a drop (references, integers, raw pointers), below a protected call. A script can
//! fill its VM's memory up to the cap, so any allocation can raise "not enough memory", and
//! LuaJIT raises by unwinding to the protected call: over serde's frames (`serde_json`'s parser
//! owns its buffers, a `Serialize` may own the text it formats) that is a leak where LuaJIT
//! unwinds with its own unwinder, undefined behaviour in Rust's terms, and an abort if a
//! `catch_unwind` is on the way (LuaJIT's errors are foreign exceptions to Rust).
//!
//! So serde walks record ([`Tape`]: Rust only, nothing raises), and [`Tape::build`] replays the
//! operations with the C API. A caller inside a protected call that owns nothing builds
//! directly (a hook's request, in `call_entry`); a C function called straight by Lua, whose
//! frame owns the recording, builds through [`Tape::build_protected`]: `lua_pcall` of
//! [`run`], the error value returned to the caller, who drops what it owns, then raises it.
//! A long recording is built in chunks of [`CHUNK`] operations, the tables still open passed
//! through each protected call, so the recording stays small whatever the value's size.

// Every unsafe block calls the Lua C API on the state of a running C function or protected
// call; `build` and `run` own nothing that needs dropping while Lua may raise.
#![allow(unsafe_code)]

use std::ffi::{c_int, c_void};
use std::fmt::Write as _;

use mlua::ffi;
use rustc_hash::FxHashMap;

use crate::field_keys::FieldKeys;

/// Operations recorded before a long recording is built (≈ 24 KiB): large enough that the
/// protected call per chunk costs nothing measurable, small enough to bound the recording.
pub(crate) const CHUNK: usize = 1024;

/// One stack operation.
#[derive(Clone, Copy)]
enum Op {
    Nil,
    Bool(bool),
    Number(f64),
    /// A string copied into the tape's text: `len` bytes at `start`.
    Text {
        start: usize,
        len: usize,
    },
    /// A string the caller keeps alive until the tape is built (the JSON text being decoded,
    /// held on the Lua stack).
    Slice(*const u8, usize),
    /// A struct field name, from the VM's [`FieldKeys`] by its address.
    Field(&'static str),
    /// A table sized for `array` items and `fields` fields.
    Table {
        array: u32,
        fields: u32,
    },
    /// `t[i] = v`: the value on top, the table below it.
    SetIndex(u32),
    /// `t[k] = v`: the key and value on top, the table below them; a nil value removes `k`.
    Set,
    /// As [`Op::Set`], but a nil value is dropped with its key (a `null` field is absent).
    SetField,
    /// The list on top rebuilt as a table sized for its `n` items (holes stay nil, so `#`
    /// finds the border it found when lists were made by `nk_value::to_lua`).
    Resize(u32),
}

/// What a walk recorded: operations, and the text of the strings they push.
#[derive(Default)]
pub(crate) struct Tape {
    ops: Vec<Op>,
    text: String,
    /// Values the operations leave on the stack (positive: a value pushed, not yet set).
    live: c_int,
    /// The most values on the stack at once while building, above those of the last chunk.
    peak: c_int,
    /// `live` when the last chunk was built: the values the next chunk starts on.
    built: c_int,
    /// Constructors of the message shapes this tape has built ([`Templates`]).
    templates: Templates,
}

/// A Lua constructor per message shape, compiled on the shape's first build: a hook's request
/// or answer is the same tables with the same field names on every call, only its values
/// differ. `return {["account"] = {["id"] = a1, …}, …}` is one `TDUP` of a template that
/// already holds the keys and one `TSETS` per field, where building the tables through the C
/// API paid a `lua_createtable`, a key pushed from the registry and a `lua_rawset` (a hash
/// lookup and a new key) per field: ≈ 300 instructions a field, ≈ 1,000 a message.
#[derive(Default)]
struct Templates {
    /// The shape of the recording being built, a buffer kept for every call.
    shape: Vec<u64>,
    /// The registry slot of each shape's constructor.
    slots: FxHashMap<Box<[u64]>, c_int>,
    /// The source of a new constructor, a buffer kept for the next.
    source: String,
}

/// Shapes with a constructor per VM; a message of another shape is built operation by
/// operation. The edges have ≈ 60 hookable messages, each with a shape or two.
const MAX_TEMPLATES: usize = 256;

/// The most values a constructor takes (LuaJIT allows 200 locals in a function).
const MAX_TEMPLATE_VALUES: usize = 64;

/// Why a tape could not be built.
pub(crate) enum Failed {
    /// Lua raised: its error value is on top of the stack (out of memory, stack overflow).
    Lua,
    /// No stack room to call the builder.
    Stack,
}

impl Tape {
    /// Forgets everything recorded, keeping the buffers unless a large value grew them.
    pub(crate) fn clear(&mut self) {
        self.ops.clear();
        self.text.clear();
        self.ops.shrink_to(CHUNK);
        self.text.shrink_to(CHUNK * 16);
        self.live = 0;
        self.peak = 0;
        self.built = 0;
    }

    /// How many message shapes have a constructor.
    #[cfg(test)]
    pub(crate) fn templates(&self) -> usize {
        self.templates.slots.len()
    }

    /// Whether the recording is long enough to build a chunk of it.
    pub(crate) fn full(&self) -> bool {
        self.ops.len() >= CHUNK
    }

    /// Whether the last value recorded is nil.
    pub(crate) fn ends_with_nil(&self) -> bool {
        matches!(self.ops.last(), Some(Op::Nil))
    }

    pub(crate) fn nil(&mut self) {
        self.push(Op::Nil);
    }

    pub(crate) fn bool(&mut self, b: bool) {
        self.push(Op::Bool(b));
    }

    pub(crate) fn number(&mut self, n: f64) {
        self.push(Op::Number(n));
    }

    /// A string, copied.
    pub(crate) fn string(&mut self, s: &str) {
        let start = self.text.len();
        self.text.push_str(s);
        self.push(Op::Text {
            start,
            len: s.len(),
        });
    }

    /// A string that stays alive, unmoved, until this tape is built.
    ///
    /// # Safety
    /// `s` outlives the tape's next build.
    pub(crate) unsafe fn slice(&mut self, s: &str) {
        self.push(Op::Slice(s.as_ptr(), s.len()));
    }

    /// A struct field name (a proto name), pushed from the VM's kept strings.
    pub(crate) fn field(&mut self, name: &'static str) {
        self.push(Op::Field(name));
    }

    /// A new table with room for `array` items and `fields` fields (hints).
    pub(crate) fn table(&mut self, array: usize, fields: usize) {
        let hint = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        self.push(Op::Table {
            array: hint(array),
            fields: hint(fields),
        });
    }

    /// The value on top as item `i` of the list below it.
    pub(crate) fn set_index(&mut self, i: usize) {
        self.pop(Op::SetIndex(u32::try_from(i).unwrap_or(u32::MAX)), 1);
    }

    /// The key and value on top into the table below them (nil removes the key).
    pub(crate) fn set(&mut self) {
        self.pop(Op::Set, 2);
    }

    /// The key and value on top into the table below them, both dropped when the value is nil.
    pub(crate) fn set_field(&mut self) {
        self.pop(Op::SetField, 2);
    }

    /// The list on top rebuilt sized for its `n` items.
    pub(crate) fn resize(&mut self, n: usize) {
        self.ops
            .push(Op::Resize(u32::try_from(n).unwrap_or(u32::MAX)));
        // The new table is pushed above the old one before the old one goes.
        self.peak = self.peak.max(self.live + 1 - self.built);
    }

    fn push(&mut self, op: Op) {
        self.ops.push(op);
        self.live += 1;
        self.peak = self.peak.max(self.live - self.built);
    }

    fn pop(&mut self, op: Op, values: c_int) {
        self.ops.push(op);
        self.live -= values;
    }

    /// Builds what was recorded onto the stack of `state` and forgets it (the values still
    /// open stay on the stack for the next chunk); keys from `keys` when given. Raises a Lua
    /// error (memory, stack) through its caller, who must own nothing that needs dropping.
    ///
    /// # Safety
    /// `state` is a live Lua state inside a protected call, with the values of the previous
    /// chunk (if any) on its top; the strings recorded by [`Tape::slice`] are alive.
    pub(crate) unsafe fn build(&mut self, state: *mut ffi::lua_State, keys: Option<&FieldKeys>) {
        // SAFETY: the caller's; `replay` and `construct` borrow the recording only.
        unsafe {
            // A message (field names from `keys`) recorded whole is built by its shape's
            // constructor when it has one.
            let constructed = keys.is_some() && self.built == 0 && self.construct(state);
            if !constructed {
                // One more for `FieldKeys::push`'s copy of a new key.
                ffi::luaL_checkstack(state, self.peak + 1, c"value nested too deep".as_ptr());
                replay(state, &self.ops, self.text.as_bytes(), keys);
            }
        }
        self.forget();
    }

    /// Builds the recording, one message, by calling its shape's constructor ([`Templates`]),
    /// compiling it on the shape's first build. False, with nothing pushed, when the
    /// recording is not a message of fixed shape (a list, a map field with entries, more than
    /// [`MAX_TEMPLATE_VALUES`] values) or the VM has [`MAX_TEMPLATES`] shapes already. Raises
    /// a Lua error as [`Tape::build`] does: this frame owns nothing (the buffers it fills
    /// belong to the tape).
    ///
    /// # Safety
    /// As [`Tape::build`].
    unsafe fn construct(&mut self, state: *mut ffi::lua_State) -> bool {
        let Some(values) = shape(&self.ops, &mut self.templates.shape) else {
            return false;
        };
        let slot = match self.templates.slots.get(self.templates.shape.as_slice()) {
            Some(&slot) => slot,
            None => {
                if self.templates.slots.len() >= MAX_TEMPLATES {
                    return false;
                }
                let source = &mut self.templates.source;
                source.clear();
                if constructor_source(&self.ops, source).is_none() {
                    return false;
                }
                // SAFETY: the caller's; the source is the tape's, alive through the call.
                let slot = unsafe { compile(state, source) };
                let Some(slot) = slot else {
                    return false;
                };
                let shape = self.templates.shape.as_slice().into();
                self.templates.slots.insert(shape, slot);
                slot
            }
        };
        // SAFETY: the caller's: room for the constructor and its values is reserved first;
        // the constructor returns one table.
        unsafe {
            ffi::luaL_checkstack(
                state,
                c_int::try_from(values).unwrap_or(c_int::MAX) + 1,
                c"value nested too deep".as_ptr(),
            );
            ffi::lua_rawgeti(state, ffi::LUA_REGISTRYINDEX, ffi::lua_Integer::from(slot));
            let text = self.text.as_bytes();
            for op in &self.ops {
                if is_value(op) {
                    push_value(state, op, text);
                }
            }
            ffi::lua_call(state, c_int::try_from(values).unwrap_or(c_int::MAX), 1);
        }
        true
    }

    /// [`Tape::build`] in a protected call made by calling [`run`], which `runner` (a registry
    /// reference to [`run`] as a Lua function, made once per VM: pushing a C function would
    /// allocate a closure outside the protection) names. On failure the values of earlier
    /// chunks are gone, and for [`Failed::Lua`] the error value is on top of the stack.
    ///
    /// # Safety
    /// `state` is the state of a running C function, with the values of the previous chunk
    /// (if any) on its top; the strings recorded by [`Tape::slice`] are alive.
    pub(crate) unsafe fn build_protected(
        &mut self,
        state: *mut ffi::lua_State,
        runner: c_int,
    ) -> Result<(), Failed> {
        let open = self.built;
        // SAFETY: room for the function and the tape's pointer is checked first
        // (`lua_checkstack` itself never raises); `lua_rawgeti` and `lua_insert` do not
        // allocate, and `lua_pcall` catches whatever `run` raises.
        let status = unsafe {
            if ffi::lua_checkstack(state, 2) == 0 {
                ffi::lua_settop(state, -open - 1);
                return Err(Failed::Stack);
            }
            ffi::lua_rawgeti(
                state,
                ffi::LUA_REGISTRYINDEX,
                ffi::lua_Integer::from(runner),
            );
            ffi::lua_insert(state, -open - 1);
            ffi::lua_pushlightuserdata(state, std::ptr::from_mut(self).cast::<c_void>());
            ffi::lua_pcall(state, open + 1, ffi::LUA_MULTRET, 0)
        };
        if status == ffi::LUA_OK {
            Ok(())
        } else {
            self.clear();
            Err(Failed::Lua)
        }
    }

    fn forget(&mut self) {
        self.ops.clear();
        self.text.clear();
        self.peak = 0;
        self.built = self.live;
    }
}

/// The Lua function [`Tape::build_protected`] calls: arguments the values a tape's earlier
/// chunks left open and the tape (a light userdata); returns them, with the chunk built.
///
/// # Safety
/// Called by Lua through `lua_pcall` from [`Tape::build_protected`], with that stack.
pub(crate) unsafe extern "C-unwind" fn run(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: the light userdata is the `&mut Tape` of `build_protected`, alive and not
    // otherwise borrowed during the call; this frame holds only the pointer.
    unsafe {
        let tape = ffi::lua_touserdata(state, -1).cast::<Tape>();
        ffi::lua_settop(state, -2);
        (*tape).build(state, None);
        ffi::lua_gettop(state)
    }
}

/// Writes the shape of `ops` into `shape` (the operations without their values: tables,
/// field names by address, where a value goes) and returns how many values they hold, or
/// `None` when they are not a message of fixed shape (see [`Tape::construct`]).
fn shape(ops: &[Op], shape: &mut Vec<u64>) -> Option<usize> {
    shape.clear();
    let mut values = 0;
    for op in ops {
        match *op {
            Op::Nil | Op::Bool(_) | Op::Number(_) | Op::Text { .. } | Op::Slice(..) => {
                values += 1;
                shape.push(0);
            }
            Op::Table { array, fields } => {
                shape.push(1 | (u64::from(array) << 2) | (u64::from(fields) << 33));
            }
            Op::Field(name) => {
                shape.push(2 | ((name.len() as u64) << 2));
                shape.push(name.as_ptr() as u64);
            }
            Op::SetField => shape.push(3),
            // A list or a map field's entries: keys and lengths that vary per value.
            Op::Set | Op::SetIndex(_) | Op::Resize(_) => return None,
        }
    }
    (values <= MAX_TEMPLATE_VALUES).then_some(values)
}

/// Writes the Lua source of the constructor of `ops` into `source`: `local a1, … = ...`
/// and `return` the tables with the values in the order recorded. `None` when `ops` is not
/// one table of struct fields (see [`shape`]) or a field name is not a plain identifier.
fn constructor_source(ops: &[Op], source: &mut String) -> Option<()> {
    let mut body = String::new();
    let mut at = 0;
    let mut values = 0;
    if !matches!(ops.first(), Some(Op::Table { .. })) {
        return None;
    }
    constructor_expression(ops, &mut at, &mut body, &mut values)?;
    if at != ops.len() {
        return None;
    }
    if values > 0 {
        source.push_str("local ");
        for i in 1..=values {
            let comma = if i > 1 { "," } else { "" };
            let _ = write!(source, "{comma}a{i}");
        }
        source.push_str(" = ...\n");
    }
    source.push_str("return ");
    source.push_str(&body);
    Some(())
}

/// The expression of the value starting at `ops[*at]`, which it moves past; values are named
/// `a1`, `a2`, … in the order recorded.
fn constructor_expression(
    ops: &[Op],
    at: &mut usize,
    out: &mut String,
    values: &mut usize,
) -> Option<()> {
    match *ops.get(*at)? {
        Op::Table { .. } => {
            *at += 1;
            out.push('{');
            while let Some(&Op::Field(name)) = ops.get(*at) {
                let plain = !name.is_empty()
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                if !plain {
                    return None;
                }
                *at += 1;
                let _ = write!(out, "[\"{name}\"]=");
                constructor_expression(ops, at, out, values)?;
                // A nil value leaves its key without a value, as absent as a dropped key.
                if !matches!(ops.get(*at), Some(Op::SetField)) {
                    return None;
                }
                *at += 1;
                out.push(',');
            }
            out.push('}');
        }
        ref op if is_value(op) => {
            *at += 1;
            *values += 1;
            let _ = write!(out, "a{values}");
        }
        _ => return None,
    }
    Some(())
}

/// Compiles `source` into a function kept in the registry; its slot, or `None` when it does
/// not compile (nothing left on the stack). Raises a memory error as [`Tape::build`] does.
///
/// # Safety
/// As [`Tape::build`].
unsafe fn compile(state: *mut ffi::lua_State, source: &str) -> Option<c_int> {
    // SAFETY: the caller's; `luaL_loadbuffer` returns its error rather than raising it.
    unsafe {
        ffi::luaL_checkstack(state, 1, c"value nested too deep".as_ptr());
        let status = ffi::luaL_loadbuffer(
            state,
            source.as_ptr().cast(),
            source.len(),
            c"=metafi-message".as_ptr(),
        );
        match status {
            ffi::LUA_OK => Some(ffi::luaL_ref(state, ffi::LUA_REGISTRYINDEX)),
            ffi::LUA_ERRMEM => ffi::lua_error(state),
            _ => {
                ffi::lua_settop(state, -2);
                None
            }
        }
    }
}

fn is_value(op: &Op) -> bool {
    matches!(
        op,
        Op::Nil | Op::Bool(_) | Op::Number(_) | Op::Text { .. } | Op::Slice(..)
    )
}

/// Pushes the value `op` records.
///
/// # Safety
/// As [`Tape::build`], with room for the value reserved; `op` is a value ([`is_value`]).
unsafe fn push_value(state: *mut ffi::lua_State, op: &Op, text: &[u8]) {
    unsafe {
        match *op {
            Op::Nil => ffi::lua_pushnil(state),
            Op::Bool(b) => ffi::lua_pushboolean(state, c_int::from(b)),
            Op::Number(n) => ffi::lua_pushnumber(state, n),
            Op::Text { start, len } => {
                let bytes = &text[start..start + len];
                ffi::lua_pushlstring(state, bytes.as_ptr().cast(), bytes.len());
            }
            Op::Slice(ptr, len) => {
                ffi::lua_pushlstring(state, ptr.cast(), len);
            }
            _ => {}
        }
    }
}

/// Runs `ops` onto the stack of `state`.
///
/// # Safety
/// As [`Tape::build`], with room for the ops' values reserved.
unsafe fn replay(state: *mut ffi::lua_State, ops: &[Op], text: &[u8], keys: Option<&FieldKeys>) {
    unsafe {
        for op in ops {
            match *op {
                Op::Nil | Op::Bool(_) | Op::Number(_) | Op::Text { .. } | Op::Slice(..) => {
                    push_value(state, op, text);
                }
                Op::Field(name) => match keys {
                    Some(keys) => keys.push_static(state, name),
                    None => {
                        ffi::lua_pushlstring(state, name.as_ptr().cast(), name.len());
                    }
                },
                Op::Table { array, fields } => {
                    ffi::lua_createtable(state, hint(array), hint(fields));
                }
                Op::SetIndex(i) => ffi::lua_rawseti(state, -2, ffi::lua_Integer::from(i)),
                Op::Set => ffi::lua_rawset(state, -3),
                Op::SetField => {
                    if ffi::lua_type(state, -1) == ffi::LUA_TNIL {
                        ffi::lua_settop(state, -3);
                    } else {
                        ffi::lua_rawset(state, -3);
                    }
                }
                Op::Resize(n) => {
                    ffi::lua_createtable(state, hint(n), 0);
                    for i in 1..=ffi::lua_Integer::from(n) {
                        ffi::lua_rawgeti(state, -2, i);
                        ffi::lua_rawseti(state, -2, i);
                    }
                    ffi::lua_remove(state, -2);
                }
            }
        }
    }
}

/// A size hint for `lua_createtable`, capped: LuaJIT raises "table overflow" past 2^27 array
/// items, and a hint is only a hint.
fn hint(n: u32) -> c_int {
    n.min(1 << 24) as c_int
}

#[cfg(test)]
mod tests {
    use std::panic::{AssertUnwindSafe, catch_unwind};

    use mlua::Lua;

    use super::*;
    use crate::raw_push::{DecodeError, push_json_text};

    /// `nk.json_decode`'s push of `text` as a Rust caller under `catch_unwind` sees it: the
    /// type of the value, the error text of a failed build, or "unwound".
    fn decode(lua: &Lua, runner: c_int, text: &str) -> String {
        let mut seen = String::new();
        // SAFETY: `exec_raw` runs the closure in a protected call on the VM's state;
        // `push_json_text` leaves a value or an error value, read while on the stack.
        unsafe {
            lua.exec_raw::<()>((), |state| {
                let pushed = catch_unwind(AssertUnwindSafe(|| push_json_text(state, text, runner)));
                seen = match pushed {
                    Ok(Ok(())) => {
                        let name = ffi::lua_typename(state, ffi::lua_type(state, -1));
                        std::ffi::CStr::from_ptr(name)
                            .to_string_lossy()
                            .into_owned()
                    }
                    Ok(Err(DecodeError::Lua(Failed::Lua))) => {
                        let mut len = 0;
                        let text = ffi::lua_tolstring(state, -1, &mut len);
                        let text = std::slice::from_raw_parts(text.cast::<u8>(), len);
                        String::from_utf8_lossy(text).into_owned()
                    }
                    Ok(Err(_)) => "another error".into(),
                    Err(_) => "unwound".into(),
                };
                ffi::lua_settop(state, 0);
            })
        }
        .unwrap();
        seen
    }

    /// Regression: the JSON parser pushed tables from inside `serde_json`'s frames, so a memory
    /// error at the VM's cap unwound through them (and aborted the process under this
    /// `catch_unwind`: LuaJIT's errors are foreign exceptions to Rust). Now the tables are
    /// built in protected calls and the error comes back as a value; the VM decodes again
    /// once the garbage is collected.
    #[test]
    fn a_json_value_past_the_memory_cap_is_a_lua_error_returned_not_unwound() {
        let lua = Lua::new();
        // SAFETY: `run` is only called by `build_protected`.
        let runner = lua
            .create_registry_value(unsafe { lua.create_c_function(run) }.unwrap())
            .unwrap();
        lua.gc_collect().unwrap();
        lua.set_memory_limit(lua.used_memory() + (1 << 20)).unwrap();
        // 100,001 empty tables: ≈ 6 MB of Lua memory from a 300 KB text, in many chunks.
        let text = format!("[{}[]]", "[],".repeat(100_000));
        assert_eq!(decode(&lua, runner.id(), &text), "not enough memory");
        lua.gc_collect().unwrap();
        assert_eq!(
            decode(&lua, runner.id(), r#"[1,{"a":"b\n"},null,3]"#),
            "table"
        );
        // Smaller than the cap, the same text in chunks builds the whole value.
        lua.set_memory_limit(lua.used_memory() + (64 << 20))
            .unwrap();
        assert_eq!(decode(&lua, runner.id(), &text), "table");
    }
}
