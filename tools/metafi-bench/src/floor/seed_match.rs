//! The floor of the seed match row: what a server on MetaFi's network stack pays to deliver the
//! seed match's messages (`metafi-bench match`, docs/BENCHMARKS.md, "The seed match beside
//! Nakama"), with no match logic.
//!
//! What it keeps is what the seed's match needs of any server: a finder that hands out seats
//! (in order, [`MATCH_SIZE`] a match: no listing, no reservation, no handler), a join answered
//! with the match, and each match's messages of one tick delivered at the tick ([`TICK`], the
//! seed's 10 Hz): op code 1 back to its sender, op code 2 to every player, each frame written
//! once and a session's frames of a tick handed to its socket together (one `send` per session
//! per tick, as MetaFi's socket writer does). JSON only. What it leaves out is everything a real
//! match engine adds: handlers, a VM, `match_loop`'s message table, presence tracking, metrics.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::extract::ws::{Message, Utf8Bytes, WebSocket};
use futures_util::{SinkExt as _, StreamExt as _};
use parking_lot::Mutex;
use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use tokio::sync::mpsc;
use tokio::time::MissedTickBehavior;

/// Players per match, as the seed's handler (`examples/lua/match.lua`).
pub const MATCH_SIZE: u64 = 10;
/// The seed's tick (10 per second): a match's messages go out once a tick.
pub const TICK: Duration = Duration::from_millis(100);
/// The seed's op codes (`metafi-bench match`'s defaults): echo to the sender, broadcast to all.
const ECHO: i64 = 1;
const BROADCAST: i64 = 2;

/// The floor's matches: seats handed out in order, and the matches they are in.
#[derive(Debug, Default)]
pub struct Matches {
    seats: AtomicU64,
    created: AtomicU64,
    sessions: AtomicU64,
    running: Mutex<HashMap<String, Arc<Match>>>,
}

impl Matches {
    /// A seat: the id of the match the next player goes to. A match starts ticking when its
    /// first seat is handed out.
    pub fn seat(self: &Arc<Self>) -> String {
        let id = match_id(self.seats.fetch_add(1, Ordering::Relaxed) / MATCH_SIZE, 0);
        self.start(&id);
        id
    }

    /// A new match for players placed by id (`create_match`, `metafi-bench match
    /// --cross-node 0`): its own series of ids, apart from the seats'.
    pub fn create(self: &Arc<Self>) -> String {
        let id = match_id(self.created.fetch_add(1, Ordering::Relaxed), 1);
        self.start(&id);
        id
    }

    fn start(self: &Arc<Self>, id: &str) {
        let mut running = self.running.lock();
        if !running.contains_key(id) {
            let game = Arc::new(Match {
                id: id.to_owned(),
                state: Mutex::new(State::default()),
            });
            running.insert(id.to_owned(), game.clone());
            tokio::spawn(tick(self.clone(), game));
        }
    }

    fn find(&self, id: &str) -> Option<Arc<Match>> {
        self.running.lock().get(id).cloned()
    }
}

/// True when `first` (a socket's first frame) is a match join: that socket plays in a match;
/// any other socket is the RPC floor's echo (read once per socket, not per frame).
pub fn is_join(first: &str) -> bool {
    serde_json::from_str::<Request<'_>>(first).is_ok_and(|r| r.match_join.is_some())
}

/// One player's socket from its join (`first`) to its close.
pub async fn play(socket: WebSocket, first: Utf8Bytes, matches: Arc<Matches>) {
    let session = matches.sessions.fetch_add(1, Ordering::Relaxed);
    let (mut sink, mut stream) = socket.split();
    let (out, mut due) = mpsc::unbounded_channel::<Vec<Utf8Bytes>>();
    // The writer: a tick's frames for this session fed together and flushed once.
    let writer = tokio::spawn(async move {
        while let Some(frames) = due.recv().await {
            for frame in frames {
                if sink.feed(Message::Text(frame)).await.is_err() {
                    return;
                }
            }
            if sink.flush().await.is_err() {
                return;
            }
        }
    });
    let mut joined: Option<Arc<Match>> = None;
    let mut frame = Some(first);
    while let Some(text) = frame.take() {
        if let Ok(request) = serde_json::from_str::<Request<'_>>(&text) {
            if let (Some(send), Some(game)) = (request.match_data_send, &joined) {
                game.state.lock().inbound.push(Inbound {
                    from: session,
                    op_code: send.op_code.0,
                    data: send.data.into_owned(),
                });
            } else if let Some(join) = request.match_join {
                let cid = serde_json::to_string(&request.cid.unwrap_or_default())
                    .unwrap_or_else(|_| "\"\"".into());
                let answer = match matches.find(&join.match_id) {
                    Some(game) if joined.is_none() => {
                        let presence = presence(session);
                        let size = {
                            let mut state = game.state.lock();
                            state.members.push(Member {
                                session,
                                presence: presence.clone(),
                                out: out.clone(),
                            });
                            state.members.len()
                        };
                        joined = Some(game.clone());
                        format!(
                            r#"{{"cid":{cid},"match":{{"match_id":"{}","authoritative":true,"label":"","size":{size},"self":{presence}}}}}"#,
                            game.id
                        )
                    }
                    _ => format!(
                        r#"{{"cid":{cid},"error":{{"code":4,"message":"Match not found"}}}}"#
                    ),
                };
                let _ = out.send(vec![answer.into()]);
            }
        }
        frame = loop {
            match stream.next().await {
                Some(Ok(Message::Text(text))) => break Some(text),
                Some(Ok(Message::Close(_)) | Err(_)) | None => break None,
                Some(Ok(_)) => {}
            }
        };
    }
    if let Some(game) = joined {
        let mut state = game.state.lock();
        state.members.retain(|m| m.session != session);
        state.emptied = state.members.is_empty();
    }
    drop(out);
    let _ = writer.await;
}

/// A running match: who is in it and what they sent since the last tick.
#[derive(Debug)]
struct Match {
    id: String,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    members: Vec<Member>,
    inbound: Vec<Inbound>,
    /// Its last player left: the match ends at its next tick.
    emptied: bool,
}

#[derive(Debug)]
struct Member {
    session: u64,
    /// The player's presence as JSON, written into every frame it sends.
    presence: String,
    out: mpsc::UnboundedSender<Vec<Utf8Bytes>>,
}

#[derive(Debug)]
struct Inbound {
    from: u64,
    op_code: i64,
    /// The payload as the client sent it (base64 text): passed on without decoding.
    data: String,
}

/// Every tick: each message sent since the last one becomes one frame, queued to its
/// recipients, and every recipient's frames go to its writer in one hand-over.
async fn tick(matches: Arc<Matches>, game: Arc<Match>) {
    let mut ticks = tokio::time::interval(TICK);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut due: Vec<Vec<Utf8Bytes>> = Vec::new();
    loop {
        ticks.tick().await;
        let mut state = game.state.lock();
        if state.emptied && state.members.is_empty() {
            matches.running.lock().remove(&game.id);
            return;
        }
        let state = &mut *state;
        due.resize_with(state.members.len(), Vec::new);
        for message in state.inbound.drain(..) {
            let Some(sender) = state.members.iter().position(|m| m.session == message.from) else {
                continue;
            };
            let frame = Utf8Bytes::from(format!(
                r#"{{"match_data":{{"match_id":"{}","presence":{},"op_code":"{}","data":"{}","reliable":true}}}}"#,
                game.id, state.members[sender].presence, message.op_code, message.data
            ));
            match message.op_code {
                ECHO => due[sender].push(frame),
                BROADCAST => due.iter_mut().for_each(|d| d.push(frame.clone())),
                _ => {}
            }
        }
        for (member, frames) in state.members.iter().zip(due.iter_mut()) {
            if !frames.is_empty() {
                let _ = member.out.send(std::mem::take(frames));
            }
        }
    }
}

/// A match id of Nakama's shape (a UUID and the node's name), so frames have their real size.
fn match_id(n: u64, series: u8) -> String {
    format!("{n:08x}-0000-4000-8000-{series:012x}.floor")
}

/// A presence of Nakama's shape: user and session UUIDs and a username.
fn presence(session: u64) -> String {
    format!(
        r#"{{"user_id":"{session:08x}-0000-4000-8000-000000000001","session_id":"{session:08x}-0000-4000-8000-000000000002","username":"floor{session:08}"}}"#
    )
}

/// A realtime envelope, reduced to the two messages a player sends; other keys are skipped.
#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow, default)]
    cid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    match_join: Option<Join<'a>>,
    #[serde(borrow, default)]
    match_data_send: Option<DataSend<'a>>,
}

#[derive(Deserialize)]
struct Join<'a> {
    #[serde(borrow, default)]
    match_id: Cow<'a, str>,
}

#[derive(Deserialize)]
struct DataSend<'a> {
    #[serde(default)]
    op_code: OpCode,
    #[serde(borrow, default)]
    data: Cow<'a, str>,
}

/// An op code as Nakama's JSON writes an int64 (a string), or as a number.
#[derive(Default)]
struct OpCode(i64);

impl<'de> Deserialize<'de> for OpCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<OpCode, D::Error> {
        struct Read;
        impl Visitor<'_> for Read {
            type Value = OpCode;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an op code: an integer or a string holding one")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<OpCode, E> {
                Ok(OpCode(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<OpCode, E> {
                i64::try_from(v).map(OpCode).map_err(E::custom)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<OpCode, E> {
                v.parse().map(OpCode).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(Read)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_player_s_requests_are_read_with_either_op_code_form() {
        let send: Request<'_> = serde_json::from_str(
            r#"{"match_data_send":{"match_id":"m","op_code":"2","data":"YWJj","reliable":true}}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let send = send.match_data_send.unwrap_or_else(|| panic!("no send"));
        assert_eq!((send.op_code.0, &*send.data), (2, "YWJj"));
        let join: Request<'_> =
            serde_json::from_str(r#"{"cid":"1","match_join":{"match_id":"abc","metadata":{}}}"#)
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(join.cid.as_deref(), Some("1"));
        assert_eq!(
            join.match_join.map(|j| j.match_id.into_owned()).as_deref(),
            Some("abc")
        );
        let number: DataSend<'_> =
            serde_json::from_str(r#"{"op_code":1}"#).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(number.op_code.0, 1);
        assert!(is_join(r#"{"cid":"1","match_join":{"match_id":"abc"}}"#));
        assert!(!is_join(
            r#"{"cid":"1","rpc":{"id":"echo","payload":"\"match_join\""}}"#
        ));
    }

    #[test]
    fn ids_and_presences_have_nakama_s_sizes() {
        assert_eq!(match_id(3, 1).len(), 36 + ".floor".len());
        assert_ne!(match_id(3, 0), match_id(3, 1));
        let presence: serde_json::Value =
            serde_json::from_str(&presence(7)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(presence["user_id"].as_str().map(str::len), Some(36));
        assert_eq!(presence["session_id"].as_str().map(str::len), Some(36));
    }
}
