//! Chat channels: `channel_message_send`, `channel_message_update`, `channel_message_remove`,
//! `channel_messages_list`, `channel_id_build`. Server code writes to a channel as any sender
//! (nil: a system message), whether or not that sender joined it; the channel's members
//! receive the `channel_message` as a client's message reaches them.
//!
//! Results use Nakama's camelCase keys in both languages (`channelId`, `createTime` in
//! seconds), as Nakama's Lua and JS runtimes do. Nakama's Lua sends with `persist` false by
//! default and its JS with true; each language keeps its default.

use metafi_core::{ChannelId, CoreError};
use metafi_proto::api::ChannelMessage;
use uuid::Uuid;

use super::streams::realtime;
use super::{NkArgs, NkCall, NkError, NkFunction, NkFuture, NkMap, NkValue};
use crate::nk::Nk;
use crate::realtime_host::{ChannelEdit, ChannelSender};

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("channel_message_send"),
        js: Some("channelMessageSend"),
        call: NkCall::Async(channel_message_send),
    },
    NkFunction {
        lua: Some("channel_message_update"),
        js: Some("channelMessageUpdate"),
        call: NkCall::Async(channel_message_update),
    },
    NkFunction {
        lua: Some("channel_message_remove"),
        js: Some("channelMessageRemove"),
        call: NkCall::Async(channel_message_remove),
    },
    NkFunction {
        lua: Some("channel_messages_list"),
        js: Some("channelMessagesList"),
        call: NkCall::Async(channel_messages_list),
    },
    NkFunction {
        lua: Some("channel_id_build"),
        js: Some("channelIdBuild"),
        call: NkCall::Async(channel_id_build),
    },
];

/// Largest page of `channel_messages_list` (and its default, as in Nakama).
const MAX_LIST_LIMIT: i64 = 100;

/// `(channel_id, content = {}, sender_id = system, sender_username = "", persist)` → the ack.
fn channel_message_send(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let channel = channel_arg(&args)?;
        let content = content_arg(&args, 2)?;
        let from = sender_args(&args, channel, 3)?;
        let host = realtime(&nk, &args, "channel_message_send", "channelMessageSend")?;
        let message = host
            .channel_message(from, ChannelEdit::Send { content })
            .await
            .map_err(|e| edit_error(&args, "send", e))?;
        Ok(ack(message))
    })
}

/// `(channel_id, message_id, content = {}, sender_id, sender_username, persist)` → the ack.
fn channel_message_update(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let channel = channel_arg(&args)?;
        let message_id = message_id_arg(&args)?;
        let content = content_arg(&args, 3)?;
        let from = sender_args(&args, channel, 4)?;
        let host = realtime(&nk, &args, "channel_message_update", "channelMessageUpdate")?;
        let message = host
            .channel_message(
                from,
                ChannelEdit::Update {
                    message_id,
                    content,
                },
            )
            .await
            .map_err(|e| edit_error(&args, "update", e))?;
        Ok(ack(message))
    })
}

/// `(channel_id, message_id, sender_id, sender_username, persist)` → the ack.
fn channel_message_remove(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let channel = channel_arg(&args)?;
        let message_id = message_id_arg(&args)?;
        let from = sender_args(&args, channel, 3)?;
        let host = realtime(&nk, &args, "channel_message_remove", "channelMessageRemove")?;
        let message = host
            .channel_message(from, ChannelEdit::Remove { message_id })
            .await
            .map_err(|e| edit_error(&args, "remove", e))?;
        Ok(ack(message))
    })
}

/// `(channel_id, limit = 100, forward = true, cursor = "")`: Lua returns
/// `(messages, next_cursor, prev_cursor)` (nil cursors when there is none), JS
/// `{messages, nextCursor, prevCursor}`. Read as the server: no membership checks.
fn channel_messages_list(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let channel_id = args.at(1).string("expects channel id")?.to_owned();
        let limit_arg = args.at(2);
        let limit = limit_arg
            .opt_integer("limit must be 1-100")?
            .unwrap_or(MAX_LIST_LIMIT);
        if !(1..=MAX_LIST_LIMIT).contains(&limit) {
            return Err(limit_arg.error("limit must be 1-100"));
        }
        let forward = args
            .at(3)
            .opt_bool("expects forward to be a boolean")?
            .unwrap_or(true);
        let cursor = args
            .at(4)
            .opt_string("expects cursor to be a string")?
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        if ChannelId::parse(&channel_id).is_none() {
            return Err(invalid_channel(&args));
        }
        let host = realtime(&nk, &args, "channel_messages_list", "channelMessagesList")?;
        let list = host
            .channel_messages_list(&channel_id, limit, forward, cursor.as_deref())
            .await
            .map_err(|e| NkError::core("failed to list channel messages", e))?;
        let messages = NkValue::List(list.messages.into_iter().map(message_value).collect());
        let cursor = |c: String| if c.is_empty() { NkValue::Nil } else { c.into() };
        if js {
            let mut result = NkMap::with_capacity(3);
            result.insert_data("messages", messages);
            result.insert_data("nextCursor", cursor(list.next_cursor));
            result.insert_data("prevCursor", cursor(list.prev_cursor));
            Ok(result.into())
        } else {
            Ok(NkValue::Multi(vec![
                messages,
                cursor(list.next_cursor),
                cursor(list.prev_cursor),
            ]))
        }
    })
}

/// `(sender_id, target, type)` → the channel id a client would join for `target` (type 1 room,
/// 2 direct, 3 group), with Nakama's checks (the other user of a direct chat must exist).
/// Does not create a channel.
fn channel_id_build(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let sender_arg = args.at(1);
        let sender = match sender_arg.value.as_str() {
            None if js && sender_arg.is_nil() => Uuid::nil(),
            Some("") => Uuid::nil(),
            Some(text) => Uuid::parse_str(text).map_err(|_| sender_arg.error(bad_sender(js)))?,
            None => return Err(sender_arg.error("expects sender id to be a string")),
        };
        let target = args
            .at(2)
            .string("expects target to be a string")?
            .to_owned();
        let kind_arg = args.at(3);
        let kind = kind_arg.integer("invalid channel type: expects value 1-3")?;
        let kind = match i32::try_from(kind) {
            Ok(kind @ 1..=3) => kind,
            _ => return Err(kind_arg.error("invalid channel type: expects value 1-3")),
        };
        let host = realtime(&nk, &args, "channel_id_build", "channelIdBuild")?;
        match host.channel_id_build(sender, &target, kind).await {
            Ok(id) => Ok(id.into()),
            Err(CoreError::InvalidArgument { message }) => Err(sender_arg.error(message)),
            Err(e) if js => Err(NkError::core("failed to build channel identifier", e)),
            Err(e) => Err(NkError::core("error building channel identifier", e)),
        }
    })
}

fn channel_arg(args: &NkArgs) -> Result<ChannelId, NkError> {
    args.at(1)
        .value
        .as_str()
        .and_then(ChannelId::parse)
        .ok_or_else(|| invalid_channel(args))
}

/// Nakama: Lua raises `error converting channel identifier to stream: …`, JS a `TypeError`.
fn invalid_channel(args: &NkArgs) -> NkError {
    if args.is_js() {
        args.at(1).error("invalid channel id")
    } else {
        NkError::failed("error converting channel identifier to stream: invalid channel id")
    }
}

fn message_id_arg(args: &NkArgs) -> Result<String, NkError> {
    let arg = args.at(2);
    match arg.value.as_str() {
        Some(text) if Uuid::parse_str(text).is_ok() => Ok(text.to_owned()),
        _ => Err(arg.error("Invalid message identifier")),
    }
}

/// Message content: nil is `{}`; anything else must be a table/object that encodes as a JSON
/// object.
fn content_arg(args: &NkArgs, position: usize) -> Result<String, NkError> {
    let js = args.is_js();
    let arg = args.at(position);
    match arg.value {
        NkValue::Nil => Ok("{}".to_owned()),
        NkValue::Map(map) if !map.is_empty() => NkValue::Map(map.clone())
            .to_go_json(args.naming())
            .map(|json| json.to_string())
            .map_err(|e| arg.error(format!("error encoding content: {e}"))),
        // An empty Lua table or JS object.
        NkValue::Map(_) => Ok("{}".to_owned()),
        NkValue::List(items) if items.is_empty() => Ok("{}".to_owned()),
        NkValue::List(_) => Err(arg.error("expects message content to be a valid JSON object")),
        _ if js => Err(arg.error("expects content to be an object")),
        _ => Err(arg.error("expects message content to be a valid JSON object")),
    }
}

/// Sender id, username and persist, from argument `position` on.
fn sender_args(
    args: &NkArgs,
    channel: ChannelId,
    position: usize,
) -> Result<ChannelSender, NkError> {
    let js = args.is_js();
    let sender_arg = args.at(position);
    let sender = match sender_arg.value {
        NkValue::Nil => Uuid::nil(),
        NkValue::Str(text) if text.is_empty() && !js => Uuid::nil(),
        NkValue::Str(text) => {
            Uuid::parse_str(text).map_err(|_| sender_arg.error(bad_sender(js)))?
        }
        _ => return Err(sender_arg.error(bad_sender(js))),
    };
    let username = args
        .at(position + 1)
        .opt_string("expects sender username to be a string")?
        .unwrap_or_default()
        .to_owned();
    // Nakama's defaults: Lua false, JS true.
    let persist = args
        .at(position + 2)
        .opt_bool("expects persist to be a boolean")?
        .unwrap_or(js);
    Ok(ChannelSender {
        channel,
        sender,
        username,
        persist,
    })
}

fn bad_sender(js: bool) -> &'static str {
    if js {
        "expects sender id to be valid identifier"
    } else {
        "expects sender id to either be not set, empty string or a valid UUID"
    }
}

/// Nakama's Lua says "failed to send channel message" for all three; its JS names the edit.
fn edit_error(args: &NkArgs, edit: &str, error: CoreError) -> NkError {
    let what = if args.is_js() {
        format!("failed to {edit} channel message")
    } else {
        "failed to send channel message".to_owned()
    };
    NkError::core(&what, error)
}

/// The ack of a sent, updated or removed message (Nakama's `ChannelMessageAck` fields).
fn ack(message: ChannelMessage) -> NkValue {
    let mut map = NkMap::with_capacity(7);
    map.insert_data("channelId", message.channel_id);
    map.insert_data("messageId", message.message_id);
    map.insert_data("code", message.code.map_or(0, |c| c.value));
    map.insert_data("username", message.username);
    map.insert_data("createTime", message.create_time.map_or(0, |t| t.seconds));
    map.insert_data("updateTime", message.update_time.map_or(0, |t| t.seconds));
    map.insert_data("persistent", message.persistent.is_some_and(|p| p.value));
    map.into()
}

fn message_value(message: ChannelMessage) -> NkValue {
    let mut map = NkMap::with_capacity(13);
    map.insert_data("channelId", message.channel_id);
    map.insert_data("messageId", message.message_id);
    map.insert_data("code", message.code.map_or(0, |c| c.value));
    map.insert_data("senderId", message.sender_id);
    map.insert_data("username", message.username);
    map.insert_data("content", message.content);
    map.insert_data("createTime", message.create_time.map_or(0, |t| t.seconds));
    map.insert_data("updateTime", message.update_time.map_or(0, |t| t.seconds));
    map.insert_data("persistent", message.persistent.is_some_and(|p| p.value));
    map.insert_data("roomName", message.room_name);
    map.insert_data("groupId", message.group_id);
    map.insert_data("userIdOne", message.user_id_one);
    map.insert_data("userIdTwo", message.user_id_two);
    map.into()
}

#[cfg(test)]
#[path = "channels_tests.rs"]
mod tests;
