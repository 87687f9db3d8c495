//! Which users a friend request names: ids and usernames, checked with the messages each edge
//! gives (Nakama's REST API and its runtime word the same rules differently).

use uuid::Uuid;

use crate::CoreError;

/// The three calls that name users.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Add,
    Delete,
    Block,
}

impl Op {
    /// The verb of Nakama's messages ("Cannot add self as friend.").
    pub(crate) fn operation(self) -> &'static str {
        match self {
            Op::Add => "add friends",
            Op::Delete => "delete friends",
            Op::Block => "block friends",
        }
    }

    fn rest_self(self) -> &'static str {
        match self {
            Op::Add => "Cannot add self as friend.",
            Op::Delete => "Cannot delete self.",
            Op::Block => "Cannot block self.",
        }
    }
}

/// Which edge's words to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Messages {
    /// `POST /v2/friend` and friends: "Invalid user ID '…'." (InvalidArgument).
    Rest,
    /// `nk.friends_add` and friends: "invalid user ID …" (a runtime error).
    Runtime,
}

/// Validated targets: parsed ids (never the caller's, never nil) and non-empty usernames
/// (never the caller's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Targets {
    pub ids: Vec<Uuid>,
    pub usernames: Vec<String>,
    pub(crate) messages: Messages,
}

impl Targets {
    /// Checks the ids and usernames of a REST call as Nakama's API does, in its order.
    pub fn rest(
        op: Op,
        caller_id: Uuid,
        caller_username: &str,
        ids: &[String],
        usernames: &[String],
    ) -> Result<Targets, CoreError> {
        let mut parsed = Vec::with_capacity(ids.len());
        for id in ids {
            if *id == caller_id.to_string() {
                return Err(CoreError::invalid(op.rest_self()));
            }
            match Uuid::parse_str(id) {
                Ok(uid) if !uid.is_nil() => parsed.push(uid),
                _ => return Err(CoreError::invalid(format!("Invalid user ID '{id}'."))),
            }
        }
        for name in usernames {
            if name.is_empty() {
                return Err(CoreError::invalid("Username must not be empty."));
            }
            if name == caller_username {
                return Err(CoreError::invalid(op.rest_self()));
            }
        }
        Ok(Targets {
            ids: parsed,
            usernames: usernames.to_vec(),
            messages: Messages::Rest,
        })
    }

    /// Targets an `nk` call checked itself (each runtime words its argument errors its own
    /// way); errors the service raises use the runtime's words.
    pub fn checked(ids: Vec<Uuid>, usernames: Vec<String>) -> Targets {
        Targets {
            ids,
            usernames,
            messages: Messages::Runtime,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty() && self.usernames.is_empty()
    }
}

/// What the runtime raises when nothing valid was named (Nakama's words).
pub const RUNTIME_NOTHING_VALID: &str = "no valid ID or username was provided";

/// Nothing valid was named (only unknown usernames).
pub(crate) fn nothing_valid(messages: Messages) -> CoreError {
    CoreError::invalid(match messages {
        Messages::Rest => "No valid ID or username was provided.",
        Messages::Runtime => RUNTIME_NOTHING_VALID,
    })
}
