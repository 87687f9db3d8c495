//! Chat channels: Nakama's channel ids, who may join and read which channel, and message
//! history. The realtime socket joins and sends through this service; `GET /v2/channel/{id}`
//! lists through it, so both apply the same rules.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use metafi_proto::api;
use metafi_proto::realtime::channel_type;
use metafi_proto::wkt::{Timestamp, bool_value, int32_value};
use metafi_storage::{ChannelMessage, Direction, FriendState, Storage, StorageError};
use uuid::Uuid;

use crate::{Clock, CoreError};

/// Longest room name, in bytes (Nakama's limit).
pub const MAX_ROOM_NAME_BYTES: usize = 64;
/// Largest page of `GET /v2/channel/{id}`.
pub const MAX_LIST_LIMIT: i64 = 100;

/// Nakama's message codes.
pub mod message_code {
    pub const CHAT: i32 = 0;
    pub const CHAT_UPDATE: i32 = 1;
    pub const CHAT_REMOVE: i32 = 2;
    /// System messages of a group's channel: a user joined it,
    pub const GROUP_JOIN: i32 = 3;
    /// was added to it,
    pub const GROUP_ADD: i32 = 4;
    /// left it,
    pub const GROUP_LEAVE: i32 = 5;
    /// was kicked,
    pub const GROUP_KICK: i32 = 6;
    /// promoted,
    pub const GROUP_PROMOTE: i32 = 7;
    /// banned,
    pub const GROUP_BAN: i32 = 8;
    /// or demoted.
    pub const GROUP_DEMOTE: i32 = 9;
}

/// A chat channel, as its id string names it: `2...<room>`, `3.<group>..`, `4.<user>.<user>.`
/// (the mode, subject, subcontext and label of Nakama's presence stream; a nil UUID is empty).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ChannelId {
    Room {
        name: String,
    },
    Group {
        group_id: Uuid,
    },
    /// The two users in a fixed order (the smaller id string first), so both see one channel.
    Direct {
        user_one: Uuid,
        user_two: Uuid,
    },
}

impl ChannelId {
    /// The direct channel between two users, whichever of them asks.
    pub fn direct(a: Uuid, b: Uuid) -> ChannelId {
        // Nakama orders the pair by the text of the ids; hyphenated lowercase hex orders like
        // the bytes, so comparing the UUIDs gives the same order.
        let (user_one, user_two) = if a <= b { (a, b) } else { (b, a) };
        ChannelId::Direct { user_one, user_two }
    }

    /// Parses a channel id as Nakama does; `None` when it is not one.
    pub fn parse(text: &str) -> Option<ChannelId> {
        let mut parts = text.splitn(4, '.');
        let (mode, subject, subcontext, label) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        let uuid_or_nil = |part: &str| {
            if part.is_empty() {
                Some(Uuid::nil())
            } else {
                Uuid::parse_str(part).ok()
            }
        };
        match mode {
            "2" if subject.is_empty()
                && subcontext.is_empty()
                && (1..=MAX_ROOM_NAME_BYTES).contains(&label.len()) =>
            {
                Some(ChannelId::Room {
                    name: label.to_owned(),
                })
            }
            "3" if subcontext.is_empty() && label.is_empty() => Some(ChannelId::Group {
                group_id: uuid_or_nil(subject)?,
            }),
            "4" if label.is_empty() => Some(ChannelId::Direct {
                user_one: uuid_or_nil(subject)?,
                user_two: uuid_or_nil(subcontext)?,
            }),
            _ => None,
        }
    }

    /// Nakama's stream mode number: 2 room, 3 group, 4 direct.
    pub fn mode(&self) -> u8 {
        match self {
            ChannelId::Room { .. } => 2,
            ChannelId::Group { .. } => 3,
            ChannelId::Direct { .. } => 4,
        }
    }

    /// Fills the room/group/user fields that messages and events of this channel carry.
    pub fn fill(&self, fields: ChannelFields<'_>) {
        match self {
            ChannelId::Room { name } => *fields.room_name = name.clone(),
            ChannelId::Group { group_id } => *fields.group_id = id_text(*group_id),
            ChannelId::Direct { user_one, user_two } => {
                *fields.user_id_one = id_text(*user_one);
                *fields.user_id_two = id_text(*user_two);
            }
        }
    }
}

/// The four descriptive fields shared by channel messages, acks, events and joins.
#[derive(Debug)]
pub struct ChannelFields<'a> {
    pub room_name: &'a mut String,
    pub group_id: &'a mut String,
    pub user_id_one: &'a mut String,
    pub user_id_two: &'a mut String,
}

impl fmt::Display for ChannelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChannelId::Room { name } => write!(f, "2...{name}"),
            ChannelId::Group { group_id } => write!(f, "3.{}..", id_text(*group_id)),
            ChannelId::Direct { user_one, user_two } => {
                write!(f, "4.{}.{}.", id_text(*user_one), id_text(*user_two))
            }
        }
    }
}

/// A UUID as a channel id part: empty for the nil UUID, as Nakama writes it.
fn id_text(id: Uuid) -> String {
    if id.is_nil() {
        String::new()
    } else {
        id.to_string()
    }
}

/// Who belongs to which group. MetaFi has no groups API yet: [`NoGroups`] is the only
/// implementation, and group channels refuse everyone with Nakama's "Group not found" error.
#[async_trait]
pub trait GroupMembership: Send + Sync + fmt::Debug {
    /// Whether `user_id` may chat in `group_id` (a member in good standing).
    async fn may_chat(&self, group_id: Uuid, user_id: Uuid) -> Result<bool, CoreError>;
}

/// No groups exist.
#[derive(Debug, Default)]
pub struct NoGroups;

#[async_trait]
impl GroupMembership for NoGroups {
    async fn may_chat(&self, _group_id: Uuid, _user_id: Uuid) -> Result<bool, CoreError> {
        Ok(false)
    }
}

/// Channel rules and history.
#[derive(Debug)]
pub struct Channels {
    store: Arc<dyn Storage>,
    groups: Arc<dyn GroupMembership>,
    clock: Arc<dyn Clock>,
}

impl Channels {
    pub fn new(
        store: Arc<dyn Storage>,
        groups: Arc<dyn GroupMembership>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Channels {
            store,
            groups,
            clock,
        }
    }

    /// The channel `user_id` asks to join: a room name, the other user of a direct chat (who
    /// must exist), or a group the user belongs to. `kind` is the join message's `type`.
    /// Refusals are `InvalidArgument` with Nakama's texts.
    pub async fn resolve_join(
        &self,
        user_id: Uuid,
        target: &str,
        kind: i32,
    ) -> Result<ChannelId, CoreError> {
        const BAD_TARGET: &str = "Invalid channel target";
        if target.is_empty() {
            return Err(CoreError::invalid(BAD_TARGET));
        }
        match kind {
            channel_type::UNSPECIFIED | channel_type::ROOM => {
                if target.len() > MAX_ROOM_NAME_BYTES {
                    return Err(CoreError::invalid(format!(
                        "Channel name is required and must be 1-64 chars: {BAD_TARGET}"
                    )));
                }
                if target.chars().any(|c| c.is_ascii_control()) {
                    return Err(CoreError::invalid(format!(
                        "Channel name must not contain control chars: {BAD_TARGET}"
                    )));
                }
                Ok(ChannelId::Room {
                    name: target.to_owned(),
                })
            }
            channel_type::DIRECT_MESSAGE => {
                let other = Uuid::parse_str(target)
                    .ok()
                    .filter(|id| !id.is_nil())
                    .ok_or_else(|| {
                        CoreError::invalid(format!(
                            "Invalid user ID in direct message join: {BAD_TARGET}"
                        ))
                    })?;
                let found =
                    self.store.users_by_id(&[other]).await.map_err(|e| {
                        CoreError::storage("looking up the other user of a chat", e)
                    })?;
                // A user who blocked the caller is not found, as in Nakama
                // (`UserExistsAndDoesNotBlock`).
                let blocked = !found.is_empty()
                    && self
                        .store
                        .friends_by_id(other, &[user_id])
                        .await
                        .map_err(|e| CoreError::storage("looking up a block", e))?
                        .iter()
                        .any(|edge| edge.state == FriendState::Blocked);
                if found.is_empty() || blocked {
                    return Err(CoreError::invalid(format!(
                        "User ID not found: {BAD_TARGET}"
                    )));
                }
                Ok(ChannelId::direct(user_id, other))
            }
            channel_type::GROUP => {
                let group_id = Uuid::parse_str(target).map_err(|_| {
                    CoreError::invalid(format!(
                        "Invalid group ID in group channel join: {BAD_TARGET}"
                    ))
                })?;
                if !self.groups.may_chat(group_id, user_id).await? {
                    return Err(CoreError::invalid(format!("Group not found: {BAD_TARGET}")));
                }
                Ok(ChannelId::Group { group_id })
            }
            _ => Err(CoreError::invalid("Invalid channel type")),
        }
    }

    /// A page of a channel's history, for `caller`. `limit` defaults to 1 and `forward` to
    /// true, as in Nakama; direct chats are readable by their two users, group chats by members.
    pub async fn list_messages(
        &self,
        caller: Uuid,
        channel_id: &str,
        limit: Option<i64>,
        forward: Option<bool>,
        cursor: Option<&str>,
    ) -> Result<api::ChannelMessageList, CoreError> {
        self.list_messages_as(Some(caller), channel_id, limit, forward, cursor)
            .await
    }

    /// Like [`Channels::list_messages`]; `None` reads as the server (server code's
    /// `nk.channel_messages_list`): any channel, no membership checks, as Nakama's nil caller.
    pub async fn list_messages_as(
        &self,
        caller: Option<Uuid>,
        channel_id: &str,
        limit: Option<i64>,
        forward: Option<bool>,
        cursor: Option<&str>,
    ) -> Result<api::ChannelMessageList, CoreError> {
        let limit = limit.unwrap_or(1);
        if !(1..=MAX_LIST_LIMIT).contains(&limit) {
            return Err(CoreError::invalid(
                "Invalid limit - limit must be between 1 and 100.",
            ));
        }
        let channel = ChannelId::parse(channel_id)
            .ok_or_else(|| CoreError::invalid("Invalid channel ID."))?;
        match (&channel, caller) {
            (_, None) | (ChannelId::Room { .. }, _) => {}
            (ChannelId::Group { group_id }, Some(caller)) => {
                if !self.groups.may_chat(*group_id, caller).await? {
                    return Err(CoreError::invalid("Group not found."));
                }
            }
            (ChannelId::Direct { user_one, user_two }, Some(caller)) => {
                if caller != *user_one && caller != *user_two {
                    return Err(CoreError::invalid("Channel not found."));
                }
            }
        }
        let key = channel.to_string();
        let direction = if forward.unwrap_or(true) {
            Direction::Forward
        } else {
            Direction::Backward
        };
        let cursor = cursor.filter(|c| !c.is_empty());
        // In range: checked above.
        let page = self
            .store
            .list_messages(&key, direction, limit as usize, cursor)
            .await
            .map_err(|e| match e {
                StorageError::Invalid { .. } => CoreError::invalid("Cursor is invalid or expired."),
                other => CoreError::storage("listing channel messages", other),
            })?;
        let cacheable_cursor =
            metafi_storage::support::message_cacheable_cursor(&key, &page.messages, cursor)
                .unwrap_or_default();
        Ok(api::ChannelMessageList {
            messages: page
                .messages
                .into_iter()
                .map(|m| message_view(&channel, m, true))
                .collect(),
            next_cursor: page.next_cursor.unwrap_or_default(),
            prev_cursor: page.prev_cursor.unwrap_or_default(),
            cacheable_cursor,
        })
    }

    /// A new chat message from `sender`, stored when `persist`. Returns it as clients see it.
    pub async fn send(
        &self,
        channel: &ChannelId,
        sender: Uuid,
        username: &str,
        content: String,
        persist: bool,
    ) -> Result<api::ChannelMessage, CoreError> {
        require_json_object(&content)?;
        let now = self.clock.now_ms();
        let message = ChannelMessage {
            // Time-ordered (v7, monotonic within the process): history sorts by (create_time,
            // id), so messages sent within one millisecond keep the order they were sent in.
            id: Uuid::now_v7(),
            channel_id: channel.to_string(),
            code: message_code::CHAT,
            sender_id: sender,
            username: username.to_owned(),
            content,
            create_time_ms: now,
            update_time_ms: now,
        };
        if persist {
            self.store
                .insert_message(message.clone())
                .await
                .map_err(|e| CoreError::storage("storing a channel message", e))?;
        }
        Ok(message_view(channel, message, persist))
    }

    /// Replaces the content of `sender`'s message. With `persist`, the stored message must exist
    /// and be the sender's; without, the edit is only relayed (as in Nakama).
    pub async fn update(
        &self,
        channel: &ChannelId,
        message_id: &str,
        sender: Uuid,
        username: &str,
        content: String,
        persist: bool,
    ) -> Result<api::ChannelMessage, CoreError> {
        let id = parse_message_id(message_id)?;
        require_json_object(&content)?;
        let now = self.clock.now_ms();
        let mut message = ChannelMessage {
            id,
            channel_id: channel.to_string(),
            code: message_code::CHAT_UPDATE,
            sender_id: sender,
            username: username.to_owned(),
            content: content.clone(),
            create_time_ms: now,
            update_time_ms: now,
        };
        if persist {
            let stored = self
                .store
                .update_message(&message.channel_id, id, sender, content, now)
                .await
                .map_err(|e| match e {
                    StorageError::NotFound { .. } => {
                        CoreError::invalid("Could not find message to update in channel history")
                    }
                    other => CoreError::storage("updating a channel message", other),
                })?;
            message.create_time_ms = stored.create_time_ms;
        }
        Ok(message_view(channel, message, persist))
    }

    /// Removes `sender`'s message; like [`Channels::update`] for `persist`.
    pub async fn remove(
        &self,
        channel: &ChannelId,
        message_id: &str,
        sender: Uuid,
        username: &str,
        persist: bool,
    ) -> Result<api::ChannelMessage, CoreError> {
        let id = parse_message_id(message_id)?;
        let now = self.clock.now_ms();
        let mut message = ChannelMessage {
            id,
            channel_id: channel.to_string(),
            code: message_code::CHAT_REMOVE,
            sender_id: sender,
            username: username.to_owned(),
            content: "{}".to_owned(),
            create_time_ms: now,
            update_time_ms: now,
        };
        if persist {
            let stored = self
                .store
                .remove_message(&message.channel_id, id, sender)
                .await
                .map_err(|e| match e {
                    StorageError::NotFound { .. } => {
                        CoreError::invalid("Could not find message to remove in channel history")
                    }
                    other => CoreError::storage("removing a channel message", other),
                })?;
            message.create_time_ms = stored.create_time_ms;
            message.update_time_ms = stored.update_time_ms;
        }
        Ok(message_view(channel, message, persist))
    }
}

/// A message as clients see it.
pub fn message_view(
    channel: &ChannelId,
    message: ChannelMessage,
    persistent: bool,
) -> api::ChannelMessage {
    let mut view = api::ChannelMessage {
        channel_id: message.channel_id,
        message_id: message.id.to_string(),
        code: int32_value(message.code),
        sender_id: message.sender_id.to_string(),
        username: message.username,
        content: message.content,
        create_time: Some(Timestamp::from_millis(message.create_time_ms)),
        update_time: Some(Timestamp::from_millis(message.update_time_ms)),
        persistent: bool_value(persistent),
        ..api::ChannelMessage::default()
    };
    channel.fill(ChannelFields {
        room_name: &mut view.room_name,
        group_id: &mut view.group_id,
        user_id_one: &mut view.user_id_one,
        user_id_two: &mut view.user_id_two,
    });
    view
}

fn parse_message_id(text: &str) -> Result<Uuid, CoreError> {
    Uuid::parse_str(text).map_err(|_| CoreError::invalid("Invalid message identifier"))
}

/// Checks that message content is a JSON object, as Nakama requires.
pub fn require_json_object(content: &str) -> Result<(), CoreError> {
    let is_object = content.trim_start().starts_with('{')
        && serde_json::from_str::<serde::de::IgnoredAny>(content).is_ok();
    if is_object {
        Ok(())
    } else {
        Err(CoreError::invalid(
            "Message content must be a valid JSON object",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_format_and_parse_like_nakama() {
        let room = ChannelId::Room {
            name: "lobby.eu".into(),
        };
        assert_eq!(room.to_string(), "2...lobby.eu");
        assert_eq!(ChannelId::parse("2...lobby.eu"), Some(room));
        let a = Uuid::parse_str("00000000-0000-0000-0000-00000000000a").unwrap();
        let b = Uuid::parse_str("00000000-0000-0000-0000-00000000000b").unwrap();
        let dm = ChannelId::direct(b, a);
        assert_eq!(
            dm,
            ChannelId::direct(a, b),
            "either user names the same chat"
        );
        assert_eq!(dm.to_string(), format!("4.{a}.{b}."));
        assert_eq!(ChannelId::parse(&dm.to_string()), Some(dm));
        let group = ChannelId::Group { group_id: a };
        assert_eq!(group.to_string(), format!("3.{a}.."));
        assert_eq!(ChannelId::parse(&group.to_string()), Some(group));
        for bad in [
            "",
            "2...",
            "2.x..room",
            "3...x",
            "3.nope..",
            "4.a.b.",
            "5...x",
            "2..room",
            &format!("2...{}", "r".repeat(65)),
        ] {
            assert_eq!(ChannelId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn direct_ids_order_like_their_text() {
        for _ in 0..100 {
            let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
            let ChannelId::Direct { user_one, user_two } = ChannelId::direct(a, b) else {
                unreachable!()
            };
            assert!(user_one.to_string() <= user_two.to_string());
        }
    }

    #[test]
    fn content_must_be_a_json_object() {
        assert!(require_json_object(r#"{"a":1}"#).is_ok());
        assert!(require_json_object(" {}").is_ok());
        assert!(require_json_object("[1]").is_err());
        assert!(require_json_object("").is_err());
        assert!(require_json_object("{").is_err());
    }

    #[test]
    fn views_carry_the_channel_fields() {
        let a = Uuid::new_v4();
        let b = Uuid::new_v4();
        let channel = ChannelId::direct(a, b);
        let view = message_view(
            &channel,
            ChannelMessage {
                id: Uuid::new_v4(),
                channel_id: channel.to_string(),
                code: 0,
                sender_id: a,
                username: "a".into(),
                content: "{}".into(),
                create_time_ms: 1,
                update_time_ms: 2,
            },
            true,
        );
        let ChannelId::Direct { user_one, user_two } = channel else {
            unreachable!()
        };
        assert_eq!(view.user_id_one, user_one.to_string());
        assert_eq!(view.user_id_two, user_two.to_string());
        assert_eq!(view.room_name, "");
        assert_eq!(view.code, int32_value(0));
        assert_eq!(view.persistent, bool_value(true));
    }
}
