//! The transport experiment's server module (`docs/TRANSPORT.md`, "Experiment"): the seed's
//! game server (`shared/seeds/002_…`, section 5.3) as a native authoritative match, handler
//! name `transport_seed`. It tracks avatars' positions from their move messages; for every
//! client message it answers the sender and notifies the players the action concerns:
//!
//! | op code | message | answer to the sender | forwarded to |
//! |---|---|---|---|
//! | 1 | move | the confirmed position | every other player within the area of interest (`aoi`) of the new position |
//! | 2 | attack | the result | the target, if it is in the match |
//! | 3 | talk | an acknowledgement | the target (the chat partner) |
//!
//! Each answer and forward keeps the delivery class of its message type, given per op code in
//! the match parameters (`reliable`, and the delivery class where the transport supports it).
//!
//! Delay of client messages is measured here: every client message carries its send time on
//! `CLOCK_MONOTONIC` (one clock for every namespace of the host), and the handler records
//! `now − send time` per sender and type when it sees the message. Answers and forwards carry
//! the original send time and the handler's time, so clients measure the server → client leg.
//! The handler runs at `tick_rate` (default 128, the engine's maximum): a message waits for
//! the next tick, up to 7.8 ms, the same for every strategy compared.
//!
//! RPCs: `transport_seed_create` (payload: the match parameters as JSON; answers
//! `{"match_id": …}`) and `transport_seed_stats` (`{"match_id": …}`; answers the statistics
//! below as JSON, via `nk.match_signal(id, "stats")`).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use metafi_match::{
    Dispatcher, Flow, HandlerError, JoinRequest, JoinVerdict, MatchContext, MatchHandler,
    MatchInit, MatchMessage, Params, Presence, PresenceReason,
};
use metafi_proto::realtime::{Delivery, delivery_class};
use metafi_runtime::{CallContext, Nk, RpcError};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The handler name `nk.match_create` uses.
pub const HANDLER: &str = "transport_seed";
/// Message types (op codes), in the order statistics are reported.
pub const TYPES: [i64; 3] = [MOVE, ATTACK, TALK];
pub const MOVE: i64 = 1;
pub const ATTACK: i64 = 2;
pub const TALK: i64 = 3;
/// "No target" in a client message.
pub const NO_TARGET: u16 = u16::MAX;
/// Bytes before the type-specific part of a client message.
pub const CLIENT_HEADER: usize = 18;
/// Bytes before the type-specific part of a server message.
pub const SERVER_HEADER: usize = 23;
/// `kind` of a server message.
pub const ANSWER: u8 = 0;
pub const FORWARD: u8 = 1;

/// Microseconds on `CLOCK_MONOTONIC`, the clock every message is stamped with.
pub fn monotonic_us() -> u64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    u64::try_from(now.tv_sec).unwrap_or(0) * 1_000_000
        + u64::try_from(now.tv_nsec).unwrap_or(0) / 1_000
}

/// A client message: `seq u32, send_us u64, x i16, y i16, target u16` (little endian), then
/// padding or talk text up to the trace's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientMessage {
    pub seq: u32,
    pub send_us: u64,
    pub x: i16,
    pub y: i16,
    pub target: u16,
}

impl ClientMessage {
    pub fn encode(&self, size: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(size.max(CLIENT_HEADER));
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.send_us.to_le_bytes());
        out.extend_from_slice(&self.x.to_le_bytes());
        out.extend_from_slice(&self.y.to_le_bytes());
        out.extend_from_slice(&self.target.to_le_bytes());
        out.resize(size.max(CLIENT_HEADER), b'.');
        out
    }

    pub fn decode(data: &[u8]) -> Option<ClientMessage> {
        if data.len() < CLIENT_HEADER {
            return None;
        }
        Some(ClientMessage {
            seq: u32::from_le_bytes(data[0..4].try_into().ok()?),
            send_us: u64::from_le_bytes(data[4..12].try_into().ok()?),
            x: i16::from_le_bytes(data[12..14].try_into().ok()?),
            y: i16::from_le_bytes(data[14..16].try_into().ok()?),
            target: u16::from_le_bytes(data[16..18].try_into().ok()?),
        })
    }
}

/// A server message: `kind u8, origin u16, seq u32, send_us u64, handled_us u64`, then the
/// body (moves: the position; attacks: a result; talk: the text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerMessage {
    pub kind: u8,
    pub origin: u16,
    pub seq: u32,
    pub send_us: u64,
    pub handled_us: u64,
}

impl ServerMessage {
    pub fn encode(&self, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(SERVER_HEADER + body.len());
        out.push(self.kind);
        out.extend_from_slice(&self.origin.to_le_bytes());
        out.extend_from_slice(&self.seq.to_le_bytes());
        out.extend_from_slice(&self.send_us.to_le_bytes());
        out.extend_from_slice(&self.handled_us.to_le_bytes());
        out.extend_from_slice(body);
        out
    }

    pub fn decode(data: &[u8]) -> Option<ServerMessage> {
        if data.len() < SERVER_HEADER {
            return None;
        }
        Some(ServerMessage {
            kind: data[0],
            origin: u16::from_le_bytes(data[1..3].try_into().ok()?),
            seq: u32::from_le_bytes(data[3..7].try_into().ok()?),
            send_us: u64::from_le_bytes(data[7..15].try_into().ok()?),
            handled_us: u64::from_le_bytes(data[15..23].try_into().ok()?),
        })
    }
}

/// Match parameters (`transport_seed_create`'s payload).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedParams {
    /// Ticks per second (1–128).
    #[serde(default = "default_tick_rate")]
    pub tick_rate: u32,
    /// Radius of the area of interest: moves are forwarded to players this close.
    pub aoi: f64,
    /// Per op code (index 0 = move): send answers and forwards reliably.
    #[serde(default = "default_reliable")]
    pub reliable: [bool; 3],
    /// Per op code: MetaFi's delivery class of answers and forwards (QUIC sessions send by
    /// it). A latest-wins key is made per origin for forwards (`<key>:<origin>`), so one
    /// player's moves never supersede another's. `None`: `reliable` decides.
    #[serde(default)]
    pub delivery: Option<[Delivery; 3]>,
}

fn default_tick_rate() -> u32 {
    128
}

fn default_reliable() -> [bool; 3] {
    [true; 3]
}

/// Delay statistics of one sender and type, in microseconds.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct Moments {
    pub n: u64,
    pub sum: f64,
    pub sum_sq: f64,
}

impl Moments {
    pub fn add(&mut self, value: f64) {
        self.n += 1;
        self.sum += value;
        self.sum_sq += value * value;
    }
}

/// What `transport_seed_stats` answers.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SeedStats {
    /// Client index → per type (move, attack, talk): delays of its messages as the handler saw them.
    pub received: HashMap<u16, [Moments; 3]>,
    /// Answers sent, per type (one per recipient).
    pub answers_sent: [u64; 3],
    /// Forwards sent, per type (one per recipient).
    pub forwards_sent: [u64; 3],
    /// Client messages that were not understood.
    pub malformed: u64,
}

/// The handler's state.
#[derive(Debug)]
pub struct TransportSeed {
    params: SeedParams,
    /// Session → client index, from the join metadata `client`.
    index: HashMap<Uuid, u16>,
    /// Client index → session and position.
    players: HashMap<u16, Player>,
    pending: HashMap<Uuid, u16>,
    stats: SeedStats,
    scratch: Vec<Uuid>,
}

#[derive(Debug, Clone, Copy)]
struct Player {
    session: Uuid,
    x: f64,
    y: f64,
}

impl Default for TransportSeed {
    fn default() -> Self {
        TransportSeed {
            params: SeedParams {
                tick_rate: default_tick_rate(),
                aoi: 100.0,
                reliable: default_reliable(),
                delivery: None,
            },
            index: HashMap::new(),
            players: HashMap::new(),
            pending: HashMap::new(),
            stats: SeedStats::default(),
            scratch: Vec::new(),
        }
    }
}

impl TransportSeed {
    fn handle(&mut self, d: &mut Dispatcher<'_>, message: &MatchMessage, now_us: u64) {
        let (Some(&origin), Some(slot)) = (
            self.index.get(&message.sender.session_id),
            TYPES.iter().position(|t| *t == message.op_code),
        ) else {
            self.stats.malformed += 1;
            return;
        };
        let Some(client) = ClientMessage::decode(&message.data) else {
            self.stats.malformed += 1;
            return;
        };
        self.stats.received.entry(origin).or_default()[slot]
            .add(now_us.saturating_sub(client.send_us) as f64);
        let reliable = self.params.reliable[slot];
        let header = |kind| ServerMessage {
            kind,
            origin,
            seq: client.seq,
            send_us: client.send_us,
            handled_us: now_us,
        };
        let sender = message.sender.session_id;
        let body: &[u8] = match message.op_code {
            MOVE => &message.data[12..16],
            ATTACK => &[0x2a, 0x00],
            _ => &message.data[CLIENT_HEADER..],
        };
        let answer =
            Bytes::from(header(ANSWER).encode(if message.op_code == TALK { &[] } else { body }));
        let delivery = self.params.delivery.as_ref().map(|d| &d[slot]);
        d.broadcast_with(
            message.op_code,
            &answer,
            Some(&[sender]),
            None,
            reliable,
            delivery,
        );
        self.stats.answers_sent[slot] += 1;

        let mut recipients = std::mem::take(&mut self.scratch);
        recipients.clear();
        match message.op_code {
            MOVE => {
                let (x, y) = (f64::from(client.x), f64::from(client.y));
                if let Some(me) = self.players.get_mut(&origin) {
                    me.x = x;
                    me.y = y;
                }
                let reach = self.params.aoi * self.params.aoi;
                recipients.extend(
                    self.players
                        .iter()
                        .filter(|(i, p)| {
                            **i != origin && (p.x - x).powi(2) + (p.y - y).powi(2) <= reach
                        })
                        .map(|(_, p)| p.session),
                );
            }
            _ => {
                if let Some(target) = self.players.get(&client.target)
                    && client.target != origin
                {
                    recipients.push(target.session);
                }
            }
        }
        if !recipients.is_empty() {
            let forward = Bytes::from(header(FORWARD).encode(body));
            let keyed = delivery.map(|d| per_origin(d, origin));
            d.broadcast_with(
                message.op_code,
                &forward,
                Some(&recipients),
                None,
                reliable,
                keyed.as_ref(),
            );
            self.stats.forwards_sent[slot] += recipients.len() as u64;
        }
        self.scratch = recipients;
    }
}

/// A latest-wins class keyed per origin; other classes unchanged.
fn per_origin(delivery: &Delivery, origin: u16) -> Delivery {
    if delivery.class == delivery_class::UNRELIABLE_LATEST {
        Delivery {
            class: delivery.class,
            lane: format!("{}:{origin}", delivery.lane),
        }
    } else {
        delivery.clone()
    }
}

impl MatchHandler for TransportSeed {
    fn init(&mut self, _ctx: &MatchContext, params: &Params) -> Result<MatchInit, HandlerError> {
        let params: SeedParams = serde_json::from_value(serde_json::Value::Object(params.clone()))
            .map_err(|e| HandlerError::failed(format!("transport_seed parameters: {e}")))?;
        let valid =
            (1..=128).contains(&params.tick_rate) && params.aoi.is_finite() && params.aoi >= 0.0;
        if !valid {
            return Err(HandlerError::failed(
                "transport_seed parameters: tick_rate must be 1–128 and aoi ≥ 0",
            ));
        }
        self.params = params;
        Ok(MatchInit {
            tick_rate: self.params.tick_rate,
            label: r#"{"kind":"transport_seed"}"#.into(),
        })
    }

    fn join_attempt(
        &mut self,
        _ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        request: &JoinRequest,
    ) -> Result<JoinVerdict, HandlerError> {
        let index = request
            .metadata
            .get("client")
            .and_then(|c| c.parse::<u16>().ok())
            .filter(|i| *i != NO_TARGET && !self.players.contains_key(i));
        if let Some(index) = index {
            self.pending.insert(request.presence.session_id, index);
        }
        Ok(JoinVerdict {
            flow: Flow::Continue,
            allow: index.is_some(),
            reason: index.is_none().then(|| {
                "join metadata needs a free client index: {\"client\": \"<0–65534>\"}".to_owned()
            }),
        })
    }

    fn join(
        &mut self,
        _ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        presences: &[Arc<Presence>],
    ) -> Result<Flow, HandlerError> {
        for p in presences {
            if let Some(index) = self.pending.remove(&p.session_id) {
                self.index.insert(p.session_id, index);
                self.players.insert(
                    index,
                    Player {
                        session: p.session_id,
                        x: 0.0,
                        y: 0.0,
                    },
                );
            }
        }
        Ok(Flow::Continue)
    }

    fn leave(
        &mut self,
        _ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        presences: &[Arc<Presence>],
        _reason: PresenceReason,
    ) -> Result<Flow, HandlerError> {
        for p in presences {
            self.pending.remove(&p.session_id);
            if let Some(index) = self.index.remove(&p.session_id) {
                self.players.remove(&index);
            }
        }
        // An experiment's match ends with its last player, so finished runs do not keep
        // ticking next to the next one.
        if self.players.is_empty() && self.pending.is_empty() {
            return Ok(Flow::End);
        }
        Ok(Flow::Continue)
    }

    fn tick(
        &mut self,
        _ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        _tick: i64,
        messages: &[MatchMessage],
    ) -> Result<Flow, HandlerError> {
        if messages.is_empty() {
            return Ok(Flow::Continue);
        }
        let now_us = monotonic_us();
        for message in messages {
            self.handle(d, message, now_us);
        }
        Ok(Flow::Continue)
    }

    fn terminate(
        &mut self,
        _ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        _grace_seconds: u32,
    ) -> Result<Flow, HandlerError> {
        Ok(Flow::End)
    }

    /// `stats`: the statistics as JSON.
    fn signal(
        &mut self,
        _ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        data: &str,
    ) -> Result<(Flow, String), HandlerError> {
        if data != "stats" {
            return Ok((
                Flow::Continue,
                r#"{"error":"unknown signal: use stats"}"#.into(),
            ));
        }
        let text = serde_json::to_string(&self.stats)
            .map_err(|e| HandlerError::failed(format!("encoding statistics: {e}")))?;
        Ok((Flow::Continue, text))
    }
}

/// `transport_seed_create`: creates a match with the payload as its parameters.
pub async fn create(_ctx: Arc<CallContext>, nk: Nk, payload: String) -> Result<String, RpcError> {
    let params: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&payload)
        .map_err(|e| {
            RpcError::invalid_argument(format!(
                "payload must be a JSON object of match parameters: {e}"
            ))
        })?;
    let match_id = nk.match_create(HANDLER, params).await?;
    Ok(serde_json::json!({ "match_id": match_id }).to_string())
}

/// `transport_seed_stats`: the statistics of match `{"match_id": …}`.
pub async fn stats(_ctx: Arc<CallContext>, nk: Nk, payload: String) -> Result<String, RpcError> {
    #[derive(Deserialize)]
    struct Request {
        match_id: String,
    }
    let request: Request = serde_json::from_str(&payload).map_err(|e| {
        RpcError::invalid_argument(format!("payload must be {{\"match_id\": …}}: {e}"))
    })?;
    Ok(nk.match_signal(&request.match_id, "stats".into()).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let c = ClientMessage {
            seq: 7,
            send_us: 123_456_789,
            x: -5,
            y: 900,
            target: 12,
        };
        let bytes = c.encode(27);
        assert_eq!(bytes.len(), 27);
        assert_eq!(ClientMessage::decode(&bytes), Some(c));
        assert_eq!(ClientMessage::decode(&bytes[..10]), None);
        let s = ServerMessage {
            kind: FORWARD,
            origin: 3,
            seq: 9,
            send_us: 1,
            handled_us: 2,
        };
        let bytes = s.encode(b"abcd");
        assert_eq!(bytes.len(), SERVER_HEADER + 4);
        assert_eq!(ServerMessage::decode(&bytes), Some(s));
    }

    #[test]
    fn the_clock_moves_forward() {
        let a = monotonic_us();
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(monotonic_us() >= a + 2_000);
    }
}
