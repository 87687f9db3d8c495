//! The seven callbacks of Nakama's match handler contract, and how a failed one is reported.

use metafi_match::HandlerError;

use super::Dialect;
use crate::error::ScriptError;

/// A match handler callback, in the order engines index them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Callback {
    Init,
    JoinAttempt,
    Join,
    Leave,
    Loop,
    Terminate,
    Signal,
}

impl Callback {
    /// Every callback, in index order.
    pub const ALL: [Callback; 7] = [
        Callback::Init,
        Callback::JoinAttempt,
        Callback::Join,
        Callback::Leave,
        Callback::Loop,
        Callback::Terminate,
        Callback::Signal,
    ];

    /// Its index in [`Callback::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The name a module gives it: `match_loop` in Lua, `matchLoop` in JavaScript.
    pub fn name(self, dialect: Dialect) -> &'static str {
        const LUA: [&str; 7] = [
            "match_init",
            "match_join_attempt",
            "match_join",
            "match_leave",
            "match_loop",
            "match_terminate",
            "match_signal",
        ];
        const JS: [&str; 7] = [
            "matchInit",
            "matchJoinAttempt",
            "matchJoin",
            "matchLeave",
            "matchLoop",
            "matchTerminate",
            "matchSignal",
        ];
        match dialect {
            Dialect::Lua => LUA[self.index()],
            Dialect::Js => JS[self.index()],
        }
    }
}

/// A failed callback as the match engine's error: a timeout or the memory cap stop the match
/// as such; any other failure is `error in <callback>: <message>`.
pub fn handler_error(dialect: Dialect, callback: Callback, error: ScriptError) -> HandlerError {
    let name = callback.name(dialect);
    match error {
        ScriptError::Timeout => HandlerError::Timeout,
        ScriptError::OutOfMemory => HandlerError::OutOfMemory,
        ScriptError::Failed { detail, .. } => {
            HandlerError::failed(format!("error in {name}: {detail}"))
        }
        ScriptError::Raised { message, .. } => {
            HandlerError::failed(format!("error in {name}: {message}"))
        }
        other => HandlerError::failed(format!("error in {name}: {other:?}")),
    }
}
