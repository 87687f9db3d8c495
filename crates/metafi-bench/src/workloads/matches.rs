//! `match`: the seed's workload 7. Each user authenticates an existing account, calls the RPC
//! that returns a match that is not full (`get_match`), opens the socket, joins the match, then
//! every interval sends alternately an "echo" message (the server returns it to the sender) and
//! a "broadcast" message (the server sends it to every player). Each payload carries the send
//! time, so the tool measures delivery latency: echo at the sender, broadcast at every
//! receiver (same process, same clock).

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use metafi_client::{Socket, SocketConfig};
use metafi_proto::realtime::Message;
use serde_json::Value;

use crate::stats::SeriesKind;
use crate::workloads::{Ctx, DeviceIds, Workload, create_users, setup_note};

/// Characters of the stamp at the start of every payload: send time (16 hex digits of µs since
/// the run started) and sender (8 hex digits).
pub const STAMP_LEN: usize = 24;

/// What the match workload sends.
#[derive(Debug, Clone)]
pub struct MatchOptions {
    pub rpc: String,
    pub hold: Duration,
    pub interval: Duration,
    pub echo_opcode: i64,
    pub broadcast_opcode: i64,
    pub echo_size: usize,
    pub broadcast_size: usize,
    pub users: u64,
    pub setup_concurrency: u64,
    pub socket: SocketConfig,
}

#[derive(Debug)]
pub struct Matches {
    options: MatchOptions,
    ids: Arc<DeviceIds>,
}

impl Matches {
    pub fn new(options: MatchOptions) -> anyhow::Result<Matches> {
        if options.echo_size < STAMP_LEN || options.broadcast_size < STAMP_LEN {
            anyhow::bail!(
                "--echo-size and --broadcast-size must be at least {STAMP_LEN} characters (the \
                 send-time stamp travels in the payload)"
            );
        }
        Ok(Matches {
            options,
            ids: Arc::new(DeviceIds::new("match")),
        })
    }
}

impl Workload for Matches {
    fn name(&self) -> &'static str {
        "match"
    }

    fn series(&self) -> Vec<(&'static str, SeriesKind)> {
        vec![
            ("connect", SeriesKind::Connect),
            ("authenticate", SeriesKind::Request),
            ("get_match", SeriesKind::Request),
            ("match_join", SeriesKind::Request),
            ("echo", SeriesKind::Request),
            ("broadcast", SeriesKind::Request),
        ]
    }

    async fn prepare(&self, client: &metafi_client::Client) -> anyhow::Result<Vec<String>> {
        let started = Instant::now();
        let users = self.options.users.max(1);
        let sessions =
            create_users(client, &self.ids, users, self.options.setup_concurrency).await?;
        let took = started.elapsed();
        let answer = client
            .rpc(&sessions[0].token, &self.options.rpc, "{}")
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "calling RPC {:?} before the run failed: {e}; the match workload needs a \
                     module with an RPC that returns a match id (see docs/BENCH.md)",
                    self.options.rpc
                )
            })?;
        if match_id_of(&answer).is_none() {
            anyhow::bail!(
                "RPC {:?} answered {answer:?}, which holds no match id",
                self.options.rpc
            );
        }
        Ok(vec![setup_note("created", users, took)])
    }

    async fn user(self: Arc<Self>, ctx: Arc<Ctx>, index: u64, repeat: bool) {
        loop {
            if let Err(kind) = self.play(&ctx, index).await {
                ctx.stats.error(&kind);
            }
            if !repeat || ctx.stopping() {
                break;
            }
        }
    }
}

impl Matches {
    /// One user's session; `Err` is the kind of the failure that ended it.
    async fn play(&self, ctx: &Ctx, index: u64) -> Result<(), String> {
        let o = &self.options;
        let client = ctx.client.with_own_connections();
        let device = self.ids.id(index % o.users.max(1));
        let started = Instant::now();
        let session = client
            .authenticate_device(&device, false, None)
            .await
            .map_err(|e| e.kind().into_owned())?;
        ctx.stats
            .record(ctx.series("authenticate"), started.elapsed());

        let started = Instant::now();
        let answer = client
            .rpc(&session.token, &o.rpc, "{}")
            .await
            .map_err(|e| e.kind().into_owned())?;
        let match_id = match_id_of(&answer).ok_or("get_match answer holds no match id")?;
        ctx.stats.record(ctx.series("get_match"), started.elapsed());
        drop(client);

        let started = Instant::now();
        let (socket, mut events) =
            Socket::connect(ctx.client.endpoint(), &session.token, &o.socket)
                .await
                .map_err(|e| e.kind().into_owned())?;
        ctx.stats.record(ctx.series("connect"), started.elapsed());
        ctx.stats.connected();
        let result = self
            .in_match(ctx, index, &socket, &mut events, &match_id)
            .await;
        ctx.stats.disconnected();
        result
    }

    async fn in_match(
        &self,
        ctx: &Ctx,
        index: u64,
        socket: &Socket,
        events: &mut metafi_client::Events,
        match_id: &str,
    ) -> Result<(), String> {
        let o = &self.options;
        let started = Instant::now();
        socket
            .match_join(match_id)
            .await
            .map_err(|e| e.kind().into_owned())?;
        ctx.stats
            .record(ctx.series("match_join"), started.elapsed());

        let (echo, broadcast) = (ctx.series("echo"), ctx.series("broadcast"));
        let run_start = ctx.stats.start();
        let me = index as u32;
        let until = (Instant::now() + o.hold).min(ctx.deadline);
        // spread users' send times over the interval so they do not all send at once
        let offset = Duration::from_micros((index * 7919) % o.interval.as_micros().max(1) as u64);
        let mut ticker = tokio::time::interval_at((Instant::now() + offset).into(), o.interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut send_echo = true;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(until.into()) => return Ok(()),
                _ = ctx.stop.cancelled() => return Ok(()),
                _ = ticker.tick() => {
                    let (op, size) = if send_echo {
                        (o.echo_opcode, o.echo_size)
                    } else {
                        (o.broadcast_opcode, o.broadcast_size)
                    };
                    send_echo = !send_echo;
                    let payload = stamp(run_start.elapsed(), me, size);
                    socket
                        .match_data_send(match_id, op, payload, true)
                        .await
                        .map_err(|e| e.kind().into_owned())?;
                }
                event = events.next() => {
                    let Some(envelope) = event else {
                        return Err("socket closed by the server in the match".into());
                    };
                    if let Some(Message::MatchData(data)) = envelope.message {
                        let Some((sent, sender)) = read_stamp(&data.data) else {
                            ctx.stats.error("match data without a stamp");
                            continue;
                        };
                        let latency = run_start.elapsed().saturating_sub(sent);
                        if data.op_code == o.echo_opcode && sender == me {
                            ctx.stats.record(echo, latency);
                        } else if data.op_code == o.broadcast_opcode {
                            ctx.stats.record(broadcast, latency);
                        }
                    }
                }
            }
        }
    }
}

/// A payload of exactly `size` ASCII characters starting with the send time and the sender.
pub fn stamp(sent: Duration, sender: u32, size: usize) -> Bytes {
    let mut text = format!("{:016x}{sender:08x}", sent.as_micros() as u64);
    while text.len() < size {
        text.push('.');
    }
    Bytes::from(text)
}

/// The send time and sender of a payload made by [`stamp`].
pub fn read_stamp(payload: &[u8]) -> Option<(Duration, u32)> {
    let head = std::str::from_utf8(payload.get(..STAMP_LEN)?).ok()?;
    let micros = u64::from_str_radix(&head[..16], 16).ok()?;
    let sender = u32::from_str_radix(&head[16..], 16).ok()?;
    Some((Duration::from_micros(micros), sender))
}

/// The match id in an RPC answer: `{"match_id": …}` (or `matchId`), a JSON string, or bare text.
pub fn match_id_of(answer: &str) -> Option<String> {
    let id = match serde_json::from_str::<Value>(answer) {
        Ok(Value::Object(map)) => map
            .get("match_id")
            .or_else(|| map.get("matchId"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        Ok(Value::String(s)) => Some(s),
        Ok(_) => None,
        Err(_) => Some(answer.trim().to_owned()),
    }?;
    (!id.is_empty()).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_have_the_seed_sizes_and_carry_time_and_sender() {
        let echo = stamp(Duration::from_micros(123_456_789), 42, 44);
        let broadcast = stamp(Duration::from_micros(5), 7, 35);
        assert_eq!(echo.len(), 44);
        assert_eq!(broadcast.len(), 35);
        assert_eq!(
            read_stamp(&echo),
            Some((Duration::from_micros(123_456_789), 42))
        );
        assert_eq!(read_stamp(&broadcast), Some((Duration::from_micros(5), 7)));
        assert_eq!(read_stamp(b"short"), None);
        assert_eq!(read_stamp(b"zzzzzzzzzzzzzzzzzzzzzzzzzzzz"), None);
    }

    #[test]
    fn match_ids_are_read_from_json_or_text() {
        assert_eq!(
            match_id_of(r#"{"match_id":"abc.node"}"#).as_deref(),
            Some("abc.node")
        );
        assert_eq!(match_id_of(r#"{"matchId":"abc"}"#).as_deref(), Some("abc"));
        assert_eq!(match_id_of(r#""abc""#).as_deref(), Some("abc"));
        assert_eq!(match_id_of("abc.node\n").as_deref(), Some("abc.node"));
        assert_eq!(match_id_of(r#"{"other":1}"#), None);
        assert_eq!(match_id_of(""), None);
    }
}
