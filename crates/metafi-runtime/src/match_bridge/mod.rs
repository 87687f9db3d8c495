//! The match bridge: everything a script match handler needs that is not converting values.
//! The Lua and JavaScript engines (`metafi-runtime-lua`, `metafi-runtime-js`) keep only what
//! touches their VM (building context tables/objects, calling the callbacks, reading what they
//! return); the rules live here once:
//!
//! - [`DispatchRecorder`]: the dispatcher's calls (`broadcast_message[_deferred]`,
//!   `match_kick`, `match_label_update`) checked when the script makes them (argument rules and
//!   their messages, the deferred-message limit, the label size) and recorded, then replayed
//!   to the engine's [`Dispatcher`](metafi_match::Dispatcher) in order when the callback
//!   returns. A broadcast may name a delivery class (`docs/MATCHES.md`, "Delivery classes in
//!   script handlers").
//! - [`Arg`] and [`ScriptObject`]: a script value as those rules see it; each engine classifies
//!   its own values into them.
//! - [`Dialect`]: what differs between Nakama's Lua and JavaScript APIs (names, messages).
//! - [`Callback`] and [`handler_error`]: the seven callbacks and how a failed one ends a match.
//! - [`ThreadVms`] and [`match_vm`]: which VM a new match runs on ([`MatchVms`]).
//!
//! Must not depend on a script engine. Design: `docs/RUNTIME.md`, "Match handlers in scripts".
//!
//! [`MatchVms`]: crate::MatchVms

mod args;
mod callback;
mod delivery_options;
mod recorder;
mod rules;
#[cfg(test)]
mod tests;
mod vm_cache;

pub use args::{Arg, Refusal, ScriptObject};
pub use callback::{Callback, handler_error};
pub use recorder::DispatchRecorder;
pub use vm_cache::{ThreadVms, match_vm};

/// Which of Nakama's script APIs a call comes from: their names and argument messages differ
/// (Lua: `bad argument #3 (expects a valid set of presences)`; JavaScript: a `TypeError`
/// "expects an array of presences"), their rules do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Lua,
    Js,
}

impl Dialect {
    /// A presence field's name: `user_id` in Lua, `userId` in JavaScript.
    pub fn presence_field(self, field: PresenceField) -> &'static str {
        match (self, field) {
            (Dialect::Lua, PresenceField::UserId) => "user_id",
            (Dialect::Lua, PresenceField::SessionId) => "session_id",
            (Dialect::Js, PresenceField::UserId) => "userId",
            (Dialect::Js, PresenceField::SessionId) => "sessionId",
            (_, PresenceField::Username) => "username",
            (_, PresenceField::Node) => "node",
        }
    }
}

/// The fields of a presence table/object a script hands to the dispatcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PresenceField {
    UserId,
    SessionId,
    Username,
    Node,
}
