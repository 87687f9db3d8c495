//! The dispatcher's argument rules, with Nakama's messages in each dialect. One function per
//! argument kind; each takes the argument's position for the Lua message.

use std::sync::Arc;

use bytes::Bytes;
use metafi_match::Presence;
use uuid::Uuid;

use super::args::{Arg, Refusal, ScriptObject};
use super::{Dialect, PresenceField};

/// What a rule checks, for its message.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Rule {
    OpCode,
    Data,
    /// A list of presences (recipients, kicks).
    Presences,
    /// An item of such a list that is not a table/object.
    PresenceItem,
    /// An item without a valid session id.
    PresenceSession,
    Sender,
    Reliable,
    Label,
}

impl Dialect {
    /// Nakama's message for a broken rule.
    pub(crate) fn message(self, rule: Rule) -> &'static str {
        match self {
            Dialect::Lua => match rule {
                Rule::OpCode => "number expected",
                Rule::Data => "expects data to be a string or nil",
                Rule::Presences | Rule::PresenceItem => "expects a valid set of presences",
                Rule::PresenceSession => "expects each presence to have a valid session_id",
                Rule::Sender => {
                    "expects presence to have a valid user_id, session_id, and username"
                }
                Rule::Reliable => "boolean expected",
                Rule::Label => "expects label string",
            },
            Dialect::Js => match rule {
                Rule::OpCode => "expects an op code number",
                Rule::Data => "expects data to be an ArrayBuffer, a Uint8Array or a string",
                Rule::Presences => "expects an array of presences",
                Rule::PresenceItem | Rule::PresenceSession => {
                    "expects each presence to have a valid sessionId"
                }
                Rule::Sender => "expects sender to have a valid userId, sessionId and username",
                Rule::Reliable => "expects reliable to be a boolean",
                Rule::Label => "expects a string",
            },
        }
    }

    pub(crate) fn refuse<E>(self, position: usize, rule: Rule) -> Refusal<E> {
        Refusal::argument(position, self.message(rule))
    }
}

pub(crate) fn op_code<O: ScriptObject>(
    dialect: Dialect,
    arg: &Arg<O>,
) -> Result<i64, Refusal<O::Error>> {
    match arg {
        Arg::Integer(n) => Ok(*n),
        _ => Err(dialect.refuse(1, Rule::OpCode)),
    }
}

/// Message data: absent or null is empty.
pub(crate) fn data<O: ScriptObject>(
    dialect: Dialect,
    arg: &Arg<O>,
) -> Result<Bytes, Refusal<O::Error>> {
    match arg {
        Arg::Absent | Arg::Null => Ok(Bytes::new()),
        Arg::Str(bytes) | Arg::Data(bytes) => Ok(bytes.clone()),
        _ => Err(dialect.refuse(2, Rule::Data)),
    }
}

/// The session ids of a list of presences (recipients, kicks).
pub(crate) fn session_ids<O: ScriptObject>(
    dialect: Dialect,
    handed: &dyn Fn(&O::Key) -> Option<Uuid>,
    arg: &Arg<O>,
    position: usize,
) -> Result<Vec<Uuid>, Refusal<O::Error>> {
    let items = match arg {
        Arg::Object(list) => list.items().map_err(Refusal::Engine)?,
        _ => None,
    };
    let Some(items) = items else {
        return Err(dialect.refuse(position, Rule::Presences));
    };
    let mut ids = Vec::with_capacity(items.len());
    for item in &items {
        let Arg::Object(presence) = item else {
            return Err(dialect.refuse(position, Rule::PresenceItem));
        };
        if let Some(known) = presence.key().and_then(|key| handed(&key)) {
            ids.push(known);
            continue;
        }
        let field = dialect.presence_field(PresenceField::SessionId);
        match presence.field(field).text().and_then(|s| uuid(&s)) {
            Some(id) => ids.push(id),
            None => return Err(dialect.refuse(position, Rule::PresenceSession)),
        }
    }
    Ok(ids)
}

/// A sender: a presence the engine handed out, or one the script built (`user_id`,
/// `session_id`, a non-empty `username`, optional `node`).
pub(crate) fn sender<O: ScriptObject>(
    dialect: Dialect,
    handed: &dyn Fn(&O::Key) -> Option<Arc<Presence>>,
    presence: &O,
    position: usize,
) -> Result<Arc<Presence>, Refusal<O::Error>> {
    if let Some(known) = presence.key().and_then(|key| handed(&key)) {
        return Ok(known);
    }
    let text = |field| presence.field(dialect.presence_field(field)).text();
    let invalid = || dialect.refuse(position, Rule::Sender);
    let user_id = text(PresenceField::UserId)
        .and_then(|s| uuid(&s))
        .ok_or_else(invalid)?;
    let session_id = text(PresenceField::SessionId)
        .and_then(|s| uuid(&s))
        .ok_or_else(invalid)?;
    let username = text(PresenceField::Username)
        .filter(|u| !u.is_empty())
        .ok_or_else(invalid)?;
    let node = text(PresenceField::Node).unwrap_or_default();
    Ok(Arc::new(Presence {
        user_id,
        session_id,
        username: Arc::from(username),
        node: Arc::from(node),
    }))
}

/// A label: absent is empty.
pub(crate) fn label<O: ScriptObject>(
    dialect: Dialect,
    arg: &Arg<O>,
) -> Result<String, Refusal<O::Error>> {
    match arg {
        Arg::Absent => Ok(String::new()),
        other => other.text().ok_or_else(|| dialect.refuse(1, Rule::Label)),
    }
}

fn uuid(text: &str) -> Option<Uuid> {
    Uuid::parse_str(text).ok()
}
