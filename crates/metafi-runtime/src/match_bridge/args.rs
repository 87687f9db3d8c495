//! A script value as the dispatcher's rules see it, and why a call was refused.

use std::borrow::Cow;
use std::hash::Hash;

use bytes::Bytes;

/// One argument (or field, or list item) of a dispatcher call, classified by the engine. Only
/// tables/objects stay engine values ([`ScriptObject`]): the rules read their fields and
/// items when they need them.
#[derive(Debug, Clone)]
pub enum Arg<O> {
    /// Not passed, Lua `nil`, JavaScript `undefined`.
    Absent,
    /// JavaScript `null` (Lua has none).
    Null,
    Bool(bool),
    /// A number the engine reads as an integer (Lua: integers and whole floats; JavaScript:
    /// integral numbers within `i64`, as Nakama's `getJsInt`).
    Integer(i64),
    /// Any other number.
    Number(f64),
    /// A string, as its bytes (Lua strings are bytes; JavaScript strings as UTF-8).
    Str(Bytes),
    /// Binary data that is not a string (JavaScript `ArrayBuffer`, `Uint8Array`).
    Data(Bytes),
    /// A Lua table or a JavaScript object (arrays included).
    Object(O),
    /// Anything else (functions, userdata, …).
    Other,
}

impl<O> Arg<O> {
    /// Absent or null: the argument's default applies.
    pub fn is_nullish(&self) -> bool {
        matches!(self, Arg::Absent | Arg::Null)
    }

    /// A string as text (invalid UTF-8 replaced, as Lua's `to_string_lossy`).
    pub(crate) fn text(&self) -> Option<String> {
        match self {
            Arg::Str(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
            _ => None,
        }
    }
}

/// A table/object the script passed: a presence, a list of presences, delivery options.
pub trait ScriptObject: Sized {
    /// How the engine recognises a presence it handed to the script (Lua: the table's address;
    /// JavaScript: its `sessionId`), so one passed back needs no parsing.
    type Key: Hash + Eq + Clone;
    /// The engine's own error (a Lua error, a pending JavaScript exception).
    type Error;

    /// The items, if this is a list (Lua: a table's sequence; JavaScript: an array).
    fn items(&self) -> Result<Option<Vec<Arg<Self>>>, Self::Error>;

    /// The field `name` (a raw read: no metamethods or getters that could fail count as
    /// [`Arg::Other`]).
    fn field(&self, name: &str) -> Arg<Self>;

    /// The key under which a presence handed out by the engine would be known.
    fn key(&self) -> Option<Self::Key>;
}

/// Why the bridge refused a dispatcher call; the engine raises it in the script.
#[derive(Debug)]
pub enum Refusal<E> {
    /// A bad argument: Lua `bad argument #position (message)`, JavaScript `TypeError(message)`.
    Argument {
        position: usize,
        message: Cow<'static, str>,
    },
    /// A call the dispatcher cannot take (a full deferred queue, a label too long): a Lua
    /// runtime error, a JavaScript `Error`.
    Failed(Cow<'static, str>),
    /// The engine failed while the rules read a value.
    Engine(E),
}

impl<E> Refusal<E> {
    pub(crate) fn argument(position: usize, message: impl Into<Cow<'static, str>>) -> Refusal<E> {
        Refusal::Argument {
            position,
            message: message.into(),
        }
    }
}
