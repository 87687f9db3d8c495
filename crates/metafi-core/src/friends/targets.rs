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

    fn runtime_self(self) -> &'static str {
        match self {
            Op::Add => "cannot add self as friend",
            Op::Delete => "cannot delete self",
            Op::Block => "cannot block self",
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

    /// Checks the ids and usernames of an `nk` call as Nakama's runtime does; the error is the
    /// argument error text (the binding adds the argument position).
    pub fn runtime(
        op: Op,
        caller_id: Uuid,
        caller_username: &str,
        ids: &[String],
        usernames: &[String],
    ) -> Result<Targets, RuntimeFault> {
        let mut parsed = Vec::with_capacity(ids.len());
        for id in ids {
            if id.is_empty() {
                return Err(RuntimeFault::Ids("each user id must be a string".into()));
            }
            match Uuid::parse_str(id) {
                Ok(uid) if !uid.is_nil() => {
                    if uid == caller_id {
                        return Err(RuntimeFault::Ids(op.runtime_self().into()));
                    }
                    parsed.push(uid);
                }
                _ => return Err(RuntimeFault::Ids(format!("invalid user ID {id}"))),
            }
        }
        for name in usernames {
            if name.is_empty() {
                return Err(RuntimeFault::Usernames(
                    "each username must be a non-empty string".into(),
                ));
            }
            if name == caller_username {
                return Err(RuntimeFault::Usernames(op.runtime_self().into()));
            }
        }
        Ok(Targets {
            ids: parsed,
            usernames: usernames.to_vec(),
            messages: Messages::Runtime,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty() && self.usernames.is_empty()
    }
}

/// Which runtime argument was wrong, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuntimeFault {
    Ids(String),
    Usernames(String),
}

/// Nothing valid was named (only unknown usernames).
pub(crate) fn nothing_valid(messages: Messages) -> CoreError {
    CoreError::invalid(match messages {
        Messages::Rest => "No valid ID or username was provided.",
        Messages::Runtime => "no valid ID or username was provided",
    })
}
