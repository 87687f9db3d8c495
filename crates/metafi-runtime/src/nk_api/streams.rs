//! Streams: `stream_user_list`, `stream_user_get`, `stream_user_join`, `stream_user_update`,
//! `stream_user_leave`, `stream_user_kick`, `stream_count`, `stream_close`, `stream_send`,
//! `stream_send_raw`. A stream is Nakama's `{mode, subject, subcontext, label}`; clients in it
//! receive `stream_data` (or the raw envelope) exactly as Nakama sends them.
//!
//! Argument errors carry Nakama's texts, per language where Nakama's two APIs differ. One
//! deliberate difference: Nakama's Lua `stream_count`, `stream_close`, `stream_send` and
//! `stream_send_raw` name a bad stream as argument #3; here it is the stream's real position.

use std::sync::Arc;

use metafi_proto::realtime::{Envelope, Message, Stream, StreamData};
use uuid::Uuid;

use super::{Arg, NkArgs, NkCall, NkError, NkFunction, NkFuture, NkMap, NkValue};
use crate::nk::Nk;
use crate::realtime_host::{
    RealtimeHost, StreamId, StreamJoin, StreamJoinError, StreamMeta, StreamPresence,
};

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("stream_user_list"),
        js: Some("streamUserList"),
        call: NkCall::Sync(stream_user_list),
    },
    NkFunction {
        lua: Some("stream_user_get"),
        js: Some("streamUserGet"),
        call: NkCall::Sync(stream_user_get),
    },
    NkFunction {
        lua: Some("stream_user_join"),
        js: Some("streamUserJoin"),
        // Async: a session of another node joins there, and that node answers.
        call: NkCall::Async(stream_user_join),
    },
    NkFunction {
        lua: Some("stream_user_update"),
        js: Some("streamUserUpdate"),
        // Async: as `stream_user_join`.
        call: NkCall::Async(stream_user_update),
    },
    NkFunction {
        lua: Some("stream_user_leave"),
        js: Some("streamUserLeave"),
        call: NkCall::Sync(stream_user_leave),
    },
    NkFunction {
        lua: Some("stream_user_kick"),
        js: Some("streamUserKick"),
        call: NkCall::Sync(stream_user_kick),
    },
    NkFunction {
        lua: Some("stream_count"),
        js: Some("streamCount"),
        call: NkCall::Sync(stream_count),
    },
    NkFunction {
        lua: Some("stream_close"),
        js: Some("streamClose"),
        call: NkCall::Sync(stream_close),
    },
    NkFunction {
        lua: Some("stream_send"),
        js: Some("streamSend"),
        call: NkCall::Sync(stream_send),
    },
    NkFunction {
        lua: Some("stream_send_raw"),
        js: Some("streamSendRaw"),
        call: NkCall::Sync(stream_send_raw),
    },
];

/// `(stream, include_hidden = true, include_not_hidden = true)` → presences.
fn stream_user_list(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let stream = stream_arg(&args, 1)?;
    let include_hidden = args
        .at(2)
        .opt_bool("expects include hidden to be a boolean")?
        .unwrap_or(true);
    let include_not_hidden = args
        .at(3)
        .opt_bool("expects include not hidden to be a boolean")?
        .unwrap_or(true);
    let host = realtime(nk, &args, "stream_user_list", "streamUserList")?;
    let presences = host.stream_user_list(&stream, include_hidden, include_not_hidden);
    Ok(NkValue::List(
        presences
            .into_iter()
            .map(|p| presence_value(p, args.is_js()))
            .collect(),
    ))
}

/// `(user_id, session_id, stream)` → the presence's meta, or nil.
fn stream_user_get(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let (user_id, session_id) = user_and_session(&args)?;
    let stream = stream_arg(&args, 3)?;
    let host = realtime(nk, &args, "stream_user_get", "streamUserGet")?;
    Ok(host
        .stream_user_get(user_id, session_id, &stream)
        .map_or(NkValue::Nil, |meta| meta_map(meta, args.is_js()).into()))
}

/// `(user_id, session_id, stream, hidden = false, persistence = true, status = "")` → true when
/// the session was not in the stream before.
fn stream_user_join(nk: Nk, args: NkArgs) -> NkFuture {
    let parsed = (|| {
        let (user_id, session_id) = user_and_session(&args)?;
        let stream = stream_arg(&args, 3)?;
        let join = join_args(&args)?;
        let host = realtime(&nk, &args, "stream_user_join", "streamUserJoin")?.clone();
        Ok((user_id, session_id, stream, join, host))
    })();
    let (user_id, session_id, stream, join, host) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return Box::pin(std::future::ready(Err(e))),
    };
    Box::pin(async move {
        host.stream_user_join(user_id, session_id, &stream, join)
            .await
            .map(NkValue::Bool)
            .map_err(|e| join_error(&args, e, "new"))
    })
}

/// Same arguments as `stream_user_join`; returns nothing. Async for the same reason: a session
/// of another node is updated there, and its refusal (gone, closing) is the answer.
fn stream_user_update(nk: Nk, args: NkArgs) -> NkFuture {
    let parsed = (|| {
        let (user_id, session_id) = user_and_session(&args)?;
        let stream = stream_arg(&args, 3)?;
        let join = join_args(&args)?;
        let host = realtime(&nk, &args, "stream_user_update", "streamUserUpdate")?.clone();
        Ok((user_id, session_id, stream, join, host))
    })();
    let (user_id, session_id, stream, join, host) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return Box::pin(std::future::ready(Err(e))),
    };
    Box::pin(async move {
        host.stream_user_update(user_id, session_id, &stream, join)
            .await
            .map(|()| NkValue::Nil)
            .map_err(|e| join_error(&args, e, "updated"))
    })
}

/// `(user_id, session_id, stream)`.
fn stream_user_leave(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let (user_id, session_id) = user_and_session(&args)?;
    let stream = stream_arg(&args, 3)?;
    let host = realtime(nk, &args, "stream_user_leave", "streamUserLeave")?;
    host.stream_user_leave(user_id, session_id, &stream);
    Ok(NkValue::Nil)
}

/// `(presence, stream)`: the presence (`user_id`, `session_id`, optional `node`) leaves.
fn stream_user_kick(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let js = args.is_js();
    let arg = args.at(1);
    let presence = if js {
        if arg.is_nil() {
            return Err(arg.error("expects presence object"));
        }
        arg.map("expects a presence object")?
    } else {
        arg.map("expects a valid presence")?
    };
    let id = |field: &'static str, lua: &'static str, js_type: &'static str, js_bad| {
        let value = presence.get(field);
        if value.is_nil() {
            return Ok(Uuid::nil());
        }
        match value.value.as_str() {
            Some(text) => {
                Uuid::parse_str(text).map_err(|_| value.error(if js { js_bad } else { lua }))
            }
            None => Err(value.error(if js { js_type } else { lua })),
        }
    };
    let user_id = id(
        "user_id",
        "expects each presence to have a valid user_id",
        "presence userId must be a string",
        "invalid userId",
    )?;
    let session_id = id(
        "session_id",
        "expects each presence to have a valid session_id",
        "presence sessionId must be a string",
        "invalid sessionId",
    )?;
    let node = match presence.get("node") {
        node if node.is_nil() => nk.node().to_string(),
        node => node
            .string(if js {
                "expects node to be a string"
            } else {
                "expects node to be string"
            })?
            .to_owned(),
    };
    if user_id.is_nil() || session_id.is_nil() || node.is_empty() {
        return Err(arg.error(if js {
            "expects each presence to have a valid userId, sessionId, and node"
        } else {
            "expects each presence to have a valid user_id, session_id, and node"
        }));
    }
    let stream = stream_arg(&args, 2)?;
    let host = realtime(nk, &args, "stream_user_kick", "streamUserKick")?;
    // The session's own node takes it out, wherever the call is made (in a cluster the
    // realtime layer sends it there); `node` only has to name one.
    let _ = node;
    host.stream_user_leave(user_id, session_id, &stream);
    Ok(NkValue::Nil)
}

/// `(stream)` → how many presences, hidden ones included.
fn stream_count(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let stream = stream_arg(&args, 1)?;
    let host = realtime(nk, &args, "stream_count", "streamCount")?;
    Ok(host.stream_count(&stream).into())
}

/// `(stream)`: every presence leaves.
fn stream_close(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let stream = stream_arg(&args, 1)?;
    let host = realtime(nk, &args, "stream_close", "streamClose")?;
    host.stream_close(&stream);
    Ok(NkValue::Nil)
}

/// `(stream, data, presences = all, reliable = true)`: a `stream_data` envelope with no sender.
fn stream_send(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let stream = stream_arg(&args, 1)?;
    let data = args.at(2).string("expects data to be a string")?.to_owned();
    let only = presences_arg(nk, &args, 3)?;
    let reliable = args
        .at(4)
        .opt_bool("expects reliable to be a boolean")?
        .unwrap_or(true);
    let host = realtime(nk, &args, "stream_send", "streamSend")?;
    let envelope = Envelope::new(
        "",
        Message::StreamData(StreamData {
            stream: Some(wire_stream(&stream)),
            sender: None,
            data,
            reliable,
        }),
    );
    send(host, &stream, envelope, only.as_deref());
    Ok(NkValue::Nil)
}

/// `(stream, envelope, presences = all, reliable = true)`: any envelope, given as its JSON
/// form (`{channel_message = {…}}`; proto or camelCase field names).
fn stream_send_raw(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let stream = stream_arg(&args, 1)?;
    let js = args.is_js();
    let arg = args.at(2);
    let map = arg.map(if js {
        "expects envelope object"
    } else {
        "expects a valid envelope"
    })?;
    let json = NkValue::Map(map.map.clone())
        .to_go_json(args.naming())
        .map_err(|e| arg.error(format!("failed to convert envelope: {e}")))?;
    let envelope: Envelope = serde_json::from_value(json)
        .map_err(|e| raw_error(js, &arg, format!("not a valid envelope: {e}")))?;
    if envelope.message.is_none() {
        return Err(raw_error(
            js,
            &arg,
            "not a valid envelope: it has no message".to_owned(),
        ));
    }
    let only = presences_arg(nk, &args, 3)?;
    // Every MetaFi socket delivers in order and reliably; the flag is accepted for Nakama's
    // signature.
    args.at(4).opt_bool("expects reliable to be a boolean")?;
    let host = realtime(nk, &args, "stream_send_raw", "streamSendRaw")?;
    send(host, &stream, envelope, only.as_deref());
    Ok(NkValue::Nil)
}

/// The realtime layer, or the error a function without it fails with.
pub(super) fn realtime<'a>(
    nk: &'a Nk,
    args: &NkArgs,
    lua: &'static str,
    js: &'static str,
) -> Result<&'a Arc<dyn RealtimeHost>, NkError> {
    nk.realtime().ok_or_else(|| {
        let name = if args.is_js() { js } else { lua };
        NkError::failed(format!(
            "nk.{name} is not available: this server runs without the realtime layer"
        ))
    })
}

/// Argument `position` as a stream: `{mode, subject, subcontext, label}`, each optional.
pub(super) fn stream_arg(args: &NkArgs, position: usize) -> Result<StreamId, NkError> {
    let arg = args.at(position);
    let map = if args.is_js() {
        if arg.is_nil() {
            return Err(arg.error("expects stream object"));
        }
        arg.map("expects a stream object")?
    } else {
        arg.map("expects a valid stream")?
    };
    let mut stream = StreamId::default();
    let mode = map.get("mode");
    if !mode.is_nil() {
        let number = mode.number("stream mode must be a number")?;
        if !(0.0..256.0).contains(&number) {
            return Err(mode.error("stream mode must be a number from 0 to 255"));
        }
        // In range: checked above; a fraction is dropped, as Nakama's uint8 conversion does.
        stream.mode = number as u8;
    }
    stream.subject = stream_uuid(map.get("subject"), "subject")?;
    stream.subcontext = stream_uuid(map.get("subcontext"), "subcontext")?;
    let label = map.get("label");
    if !label.is_nil() {
        stream.label = label.string("stream label must be a string")?.to_owned();
    }
    Ok(stream)
}

/// A stream as the wire shows it (`rtapi.Stream`): nil UUIDs are empty.
pub(super) fn wire_stream(stream: &StreamId) -> Stream {
    let text = |id: Uuid| {
        if id.is_nil() {
            String::new()
        } else {
            id.to_string()
        }
    };
    Stream {
        mode: i32::from(stream.mode),
        subject: text(stream.subject),
        subcontext: text(stream.subcontext),
        label: stream.label.clone(),
    }
}

fn stream_uuid(arg: Arg<'_>, which: &'static str) -> Result<Uuid, NkError> {
    if arg.is_nil() {
        return Ok(Uuid::nil());
    }
    let (not_string, not_id) = match which {
        "subject" => (
            "stream subject must be a string",
            "stream subject must be a valid identifier",
        ),
        _ => (
            "stream subcontext must be a string",
            "stream subcontext must be a valid identifier",
        ),
    };
    let text = arg.string(not_string)?;
    Uuid::parse_str(text).map_err(|_| arg.error(not_id))
}

/// Arguments 1 and 2: the user id and the session id, with Nakama's errors in each language.
fn user_and_session(args: &NkArgs) -> Result<(Uuid, Uuid), NkError> {
    let js = args.is_js();
    let user = id_arg(
        args.at(1),
        "expects user id",
        if js {
            "invalid user id"
        } else {
            "expects valid user id"
        },
    )?;
    let session = id_arg(
        args.at(2),
        "expects session id",
        if js {
            "invalid session id"
        } else {
            "expects valid session id"
        },
    )?;
    Ok((user, session))
}

/// A required UUID: `missing` for nil or an empty string, `invalid` for anything else.
fn id_arg(arg: Arg<'_>, missing: &'static str, invalid: &'static str) -> Result<Uuid, NkError> {
    match arg.value.as_str() {
        None | Some("") => Err(arg.error(missing)),
        Some(text) => Uuid::parse_str(text).map_err(|_| arg.error(invalid)),
    }
}

/// Arguments 4–6 of `stream_user_join`/`update`.
fn join_args(args: &NkArgs) -> Result<StreamJoin, NkError> {
    let defaults = StreamJoin::default();
    Ok(StreamJoin {
        hidden: args
            .at(4)
            .opt_bool("expects hidden to be a boolean")?
            .unwrap_or(defaults.hidden),
        persistence: args
            .at(5)
            .opt_bool("expects persistence to be a boolean")?
            .unwrap_or(defaults.persistence),
        status: args
            .at(6)
            .opt_string("expects status to be a string")?
            .map_or(defaults.status, str::to_owned),
    })
}

fn join_error(args: &NkArgs, error: StreamJoinError, which: &str) -> NkError {
    match error {
        // Lua names the argument; JS throws an Error, as Nakama's do.
        StreamJoinError::NoSession if args.is_js() => NkError::failed("session id does not exist"),
        StreamJoinError::NoSession => args.at(2).error("session id does not exist"),
        StreamJoinError::Closing => NkError::failed(format!(
            "tracker rejected {which} presence, session is closing"
        )),
        StreamJoinError::Unanswered(why) => NkError::failed(why),
    }
}

/// Argument `position`: the presences to send to (`session_id`, `node`), or `None` (nil or an
/// empty list) for the whole stream. Presences on other nodes are left out.
fn presences_arg(nk: &Nk, args: &NkArgs, position: usize) -> Result<Option<Vec<Uuid>>, NkError> {
    let js = args.is_js();
    let arg = args.at(position);
    if arg.is_nil() {
        return Ok(None);
    }
    let items = arg.list(if js {
        "expects an array of presence objects"
    } else {
        "expects a valid set of presences"
    })?;
    if items.is_empty() {
        return Ok(None);
    }
    let mut sessions = Vec::with_capacity(items.len());
    for item in items {
        let presence = item.map(if js {
            "expects an array of presence objects"
        } else {
            "expects a valid set of presences"
        })?;
        let session = presence.get("session_id");
        let session_id = if session.is_nil() {
            Uuid::nil()
        } else {
            let text = session.string(if js {
                "presence sessionId must be a string"
            } else {
                "presence session id must be a string"
            })?;
            Uuid::parse_str(text).map_err(|_| {
                session.error(if js {
                    "invalid presence sessionId"
                } else {
                    "presence session id must be a valid identifier"
                })
            })?
        };
        let node = presence.get(if js { "node_id" } else { "node" });
        let here = if node.is_nil() {
            true
        } else {
            let node = node.string(if js {
                "expects node id to be a string"
            } else {
                "presence node must be a string"
            })?;
            node.is_empty() || node == &**nk.node()
        };
        if here {
            sessions.push(session_id);
        }
    }
    Ok(Some(sessions))
}

fn send(
    host: &Arc<dyn RealtimeHost>,
    stream: &StreamId,
    envelope: Envelope,
    only: Option<&[Uuid]>,
) {
    // Presences named but all on other nodes: nothing to send here.
    if only.is_some_and(<[Uuid]>::is_empty) {
        return;
    }
    host.stream_send(stream, envelope, only);
}

fn raw_error(js: bool, arg: &Arg<'_>, message: String) -> NkError {
    if js {
        NkError::failed(message)
    } else {
        arg.error(message)
    }
}

fn presence_value(presence: StreamPresence, js: bool) -> NkValue {
    let mut map = NkMap::with_capacity(8)
        .with("user_id", presence.user_id.to_string())
        .with("session_id", presence.session_id.to_string());
    map.insert(if js { "node_id" } else { "node" }, presence.node);
    map.insert("hidden", presence.meta.hidden);
    map.insert("persistence", presence.meta.persistence);
    map.insert("username", presence.meta.username);
    map.insert("status", presence.meta.status);
    if js {
        // Nakama's JS presences carry the presence reason; a listed presence has none (0).
        map.insert("reason", 0i64);
    }
    map.into()
}

fn meta_map(meta: StreamMeta, js: bool) -> NkMap {
    let mut map = NkMap::with_capacity(5)
        .with("hidden", meta.hidden)
        .with("persistence", meta.persistence)
        .with("username", meta.username)
        .with("status", meta.status);
    if js {
        map.insert("reason", 0i64);
    }
    map
}

#[cfg(test)]
#[path = "streams_tests.rs"]
mod tests;
