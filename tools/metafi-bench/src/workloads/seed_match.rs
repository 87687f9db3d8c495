//! `match`: the seed's workload 7. Each user authenticates an existing account, calls the RPC
//! that returns a match that is not full (`get_match`), opens the socket, joins the match, then
//! every interval sends alternately an "echo" message (the server returns it to the sender) and
//! a "broadcast" message (the server sends it to every player). Each payload carries the send
//! time, so the tool measures delivery latency: echo at the sender, broadcast at every
//! receiver (same process, same clock).
//!
//! With `--cross-node SHARE` ([`Placement`]) the players do not look for a match: before the
//! run, the matches are created on every node (the `create_match` RPC on each server), and each
//! player joins the one picked for it by id, a fixed share of every node's players a match of
//! the next node. With several clustered nodes, that fixes how many messages cross nodes (the
//! finder's choice depends on timing); `--cross-node 0` places every player on its own node,
//! which two nodes that are not a cluster also run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use std::collections::HashMap;

use bytes::Bytes;
use metafi_client::{
    ClientError, Format, MatchDataSendJson, MatchDataView, SocketConfig, Transport as _,
    WebSocketTransport,
};
use metafi_proto::realtime::{Envelope, MatchDataSend, MatchJoin, MatchJoinId, Message};
use serde_json::Value;

use crate::servers::Servers;
use crate::stats::{SeriesId, SeriesKind};
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
    /// Matches made before the run and players placed in them by id, instead of `rpc`.
    pub placement: Option<Placement>,
}

/// Where the players' matches are when they are placed rather than found.
#[derive(Debug, Clone)]
pub struct Placement {
    /// Share of every node's players (0 to 1) placed in a match of the next node.
    pub cross_node: f64,
    /// The RPC that creates a match on the node it is called on and answers its id.
    pub create_rpc: String,
    /// Players per match (the match handler's capacity).
    pub match_size: u64,
}

#[derive(Debug)]
pub struct Matches {
    options: MatchOptions,
    ids: Arc<DeviceIds>,
    seats: Seats,
    /// With a placement: the match id of every user, by user number (set by `prepare`).
    placed: OnceLock<Vec<String>>,
}

/// How many players were seated: every player that got a match id from the finder and sent its
/// join, and what the join answered (`docs/MATCHES.md`, "Seats").
#[derive(Debug, Default)]
struct Seats {
    /// Players that got a match id and sent their join.
    joining: AtomicU64,
    /// Joins the match accepted.
    seated: AtomicU64,
    /// Joins the match refused (an error answer: "match full", …).
    refused: AtomicU64,
}

impl Seats {
    /// The report's line: the share of players seated and the joins refused.
    fn note(&self) -> String {
        let joining = self.joining.load(Ordering::Relaxed);
        let seated = self.seated.load(Ordering::Relaxed);
        let refused = self.refused.load(Ordering::Relaxed);
        let share = if joining == 0 {
            0.0
        } else {
            100.0 * seated as f64 / joining as f64
        };
        format!(
            "seats: {seated} of {joining} players seated ({share:.1} %), {refused} joins refused, \
             {} unanswered",
            joining.saturating_sub(seated + refused)
        )
    }
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
            seats: Seats::default(),
            placed: OnceLock::new(),
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

    async fn prepare(&self, servers: &Servers) -> anyhow::Result<Vec<String>> {
        // Setup calls other than the users' creation go to the first server.
        let client = servers.client(0);
        let started = Instant::now();
        let users = self.options.users.max(1);
        let sessions =
            create_users(servers, &self.ids, users, self.options.setup_concurrency).await?;
        let took = started.elapsed();
        if let Some(placement) = &self.options.placement {
            let placed = place(users, servers.len(), placement);
            let mut ids: Vec<Vec<String>> = vec![Vec::new(); servers.len()];
            for (node, ids) in ids.iter_mut().enumerate() {
                let matches = placed.iter().filter(|p| p.node == node).map(|p| p.slot);
                let count = matches.max().map_or(0, |last| last + 1);
                // User `node` signed up on server `node` (round-robin), so its token is good
                // there whether or not the nodes share their sessions.
                let token = &sessions[node.min(sessions.len() - 1)].token;
                for _ in 0..count {
                    let answer = servers
                        .client(node)
                        .rpc(token, &placement.create_rpc, "{}")
                        .await
                        .map_err(|e| {
                            anyhow::anyhow!(
                                "calling RPC {:?} on {} failed: {e}; --cross-node needs an RPC \
                                 that creates a match on the node it is called on (examples/lua's \
                                 create_match)",
                                placement.create_rpc,
                                servers.urls()[node]
                            )
                        })?;
                    ids.push(match_id_of(&answer).ok_or_else(|| {
                        anyhow::anyhow!(
                            "RPC {:?} answered {answer:?}, which holds no match id",
                            placement.create_rpc
                        )
                    })?);
                }
            }
            let crossing = placed
                .iter()
                .enumerate()
                .filter(|(user, p)| servers.of_user(*user as u64) != p.node)
                .count();
            let matches: usize = ids.iter().map(Vec::len).sum();
            let placed = placed.iter().map(|p| ids[p.node][p.slot].clone()).collect();
            // Invariant: `prepare` runs once, before any user.
            let _ = self.placed.set(placed);
            return Ok(vec![
                setup_note("created", users, took),
                format!(
                    "placement: {matches} matches made on their nodes, {crossing} of {users} \
                     players in a match of another node"
                ),
            ]);
        }
        let answer = client
            .rpc(&sessions[0].token, &self.options.rpc, "{}")
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "calling RPC {:?} before the run failed: {e}; the match workload needs a \
                     module with an RPC that returns a match id (see docs/BENCH.md; metafi's \
                     get_match_native needs a server built with `--features examples`)",
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

    fn after(&self, _duration: Duration) -> Vec<String> {
        vec![self.seats.note()]
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
        let client = ctx.client().with_own_connections();
        let device = self.ids.id(index % o.users.max(1));
        let started = Instant::now();
        let session = client
            .authenticate_device(&device, false, None)
            .await
            .map_err(|e| e.kind().into_owned())?;
        ctx.stats
            .record(ctx.series("authenticate"), started.elapsed());

        let match_id = match self.placed.get() {
            // Invariant: `prepare` placed every user number below `users`.
            Some(placed) => placed[(index % o.users.max(1)) as usize].clone(),
            None => {
                let started = Instant::now();
                let answer = client
                    .rpc(&session.token, &o.rpc, "{}")
                    .await
                    .map_err(|e| e.kind().into_owned())?;
                let match_id = match_id_of(&answer).ok_or("get_match answer holds no match id")?;
                ctx.stats.record(ctx.series("get_match"), started.elapsed());
                match_id
            }
        };
        drop(client);

        let started = Instant::now();
        let mut socket =
            WebSocketTransport::connect(ctx.client().endpoint(), &session.token, &o.socket)
                .await
                .map_err(|e| e.kind().into_owned())?;
        ctx.stats.record(ctx.series("connect"), started.elapsed());
        ctx.stats.connected();
        let result = self.in_match(ctx, index, &mut socket, &match_id).await;
        if result.is_ok() {
            // a polite close, as dropping a `Socket` does; bounded like every other wait
            let _ = tokio::time::timeout(o.socket.timeout, socket.close()).await;
        }
        ctx.stats.disconnected();
        result
    }

    /// Joins the match, then sends on schedule and checks every frame that arrives, all in
    /// this one task: the user owns its socket (no socket task, no channel between them), one
    /// timer is re-armed per send (not per received message), and match data in JSON is read
    /// by the fast path of `metafi_client::MatchDataView`.
    async fn in_match(
        &self,
        ctx: &Ctx,
        index: u64,
        socket: &mut WebSocketTransport,
        match_id: &str,
    ) -> Result<(), String> {
        let o = &self.options;
        let format = socket.format();
        let join = Envelope::new(
            JOIN_CID,
            Message::MatchJoin(MatchJoin {
                id: Some(MatchJoinId::MatchId(match_id.to_owned())),
                metadata: HashMap::new(),
            }),
        );
        let join_started = Instant::now();
        socket
            .send(Bytes::from(format.encode(&join)))
            .await
            .map_err(|e| e.kind().into_owned())?;
        self.seats.joining.fetch_add(1, Ordering::Relaxed);

        let user = User {
            echo: ctx.series("echo"),
            broadcast: ctx.series("broadcast"),
            me: index as u32,
            echo_opcode: o.echo_opcode,
            broadcast_opcode: o.broadcast_opcode,
            format,
        };
        let templates = [
            (
                o.echo_opcode,
                MatchDataSendJson::new(match_id, o.echo_opcode, true),
            ),
            (
                o.broadcast_opcode,
                MatchDataSendJson::new(match_id, o.broadcast_opcode, true),
            ),
        ];
        // spread users' send times over the interval so they do not all send at once
        let offset = Duration::from_micros((index * 7919) % o.interval.as_micros().max(1) as u64);
        let mut next_send = Instant::now();
        let mut until = ctx.deadline;
        let mut joined = false;
        let mut send_echo = true;
        // before the join answer: its timeout; then the next send, or the end of the hold
        let timer = tokio::time::sleep_until((join_started + o.socket.timeout).into());
        let mut timer = std::pin::pin!(timer);
        let mut stop = std::pin::pin!(ctx.stop.cancelled());
        loop {
            tokio::select! {
                biased;
                () = &mut stop => return Ok(()),
                () = timer.as_mut() => {
                    if !joined {
                        let timeout = o.socket.timeout;
                        return Err(ClientError::Timeout { timeout }.kind().into_owned());
                    }
                    let now = Instant::now();
                    if now >= until {
                        return Ok(());
                    }
                    let (which, size) =
                        if send_echo { (0, o.echo_size) } else { (1, o.broadcast_size) };
                    send_echo = !send_echo;
                    let payload = stamp(ctx.stats.start().elapsed(), user.me, size);
                    let sent = send_data(socket, &templates[which], match_id, payload).await;
                    sent.map_err(|e| e.kind().into_owned())?;
                    // a late send pushes the schedule back rather than bursting (as tokio's
                    // `MissedTickBehavior::Delay` does)
                    next_send = if now > next_send + LATE {
                        now + o.interval
                    } else {
                        next_send + o.interval
                    };
                    timer.as_mut().reset(next_send.min(until).into());
                }
                frame = socket.recv() => {
                    let Some(frame) = frame.map_err(|e| e.kind().into_owned())? else {
                        return Err("socket closed by the server in the match".into());
                    };
                    ctx.stats.message_received();
                    match user.on_frame(ctx, &frame) {
                        Received::Data | Received::Other => {}
                        Received::JoinAnswer(answer) if !joined => {
                            let counter = if answer.is_ok() {
                                &self.seats.seated
                            } else {
                                &self.seats.refused
                            };
                            counter.fetch_add(1, Ordering::Relaxed);
                            answer?;
                            let took = join_started.elapsed();
                            ctx.stats.record(ctx.series("match_join"), took);
                            joined = true;
                            let now = Instant::now();
                            until = (now + o.hold).min(ctx.deadline);
                            next_send = now + offset;
                            timer.as_mut().reset(next_send.min(until).into());
                        }
                        Received::JoinAnswer(_) => {}
                    }
                }
            }
        }
    }
}

/// Sends `payload` as reliable match data with the op code of `template`: JSON from the
/// template, protobuf through the encoder.
async fn send_data(
    socket: &mut WebSocketTransport,
    (op_code, template): &(i64, MatchDataSendJson),
    match_id: &str,
    payload: Bytes,
) -> Result<(), ClientError> {
    match socket.format() {
        Format::Json => socket.send_text(template.encode(&payload)).await,
        Format::Protobuf => {
            let message = Message::MatchDataSend(MatchDataSend {
                match_id: match_id.to_owned(),
                op_code: *op_code,
                data: payload,
                presences: Vec::new(),
                reliable: true,
                delivery: None,
            });
            let envelope = Envelope::new(String::new(), message);
            socket
                .send(Bytes::from(Format::Protobuf.encode(&envelope)))
                .await
        }
    }
}

/// How late a send may be before the schedule is pushed back (tokio's interval uses 5 ms).
const LATE: Duration = Duration::from_millis(5);

/// The `cid` of the join request, the only request a user sends on its socket.
const JOIN_CID: &str = "1";

/// What a user needs to check the frames it receives.
struct User {
    echo: SeriesId,
    broadcast: SeriesId,
    me: u32,
    echo_opcode: i64,
    broadcast_opcode: i64,
    format: Format,
}

/// What a frame was.
enum Received {
    /// Match data, recorded (or counted as an error).
    Data,
    /// The answer to the join: `Err` is the kind of failure.
    JoinAnswer(Result<(), String>),
    /// Anything else the server pushes (presence events, …), or a frame that is no envelope.
    Other,
}

impl User {
    fn on_frame(&self, ctx: &Ctx, frame: &[u8]) -> Received {
        if self.format == Format::Json
            && let Some(view) = MatchDataView::parse_json(frame)
        {
            let mut head = [0u8; STAMP_LEN];
            if view.data_prefix(&mut head).is_some() {
                self.on_data(ctx, view.op_code, read_stamp(&head));
                return Received::Data;
            }
            // Not the padded standard base64 this server sends (or too short for a stamp): the
            // full decoder below reads every form Nakama accepts.
        }
        let envelope = match self.format.decode(frame) {
            Ok(envelope) => envelope,
            Err(e) => {
                tracing::debug!(error = %e, "ignoring a frame that is not an envelope");
                return Received::Other;
            }
        };
        match envelope.message {
            Some(Message::MatchData(data)) => {
                self.on_data(ctx, data.op_code, read_stamp(&data.data));
                Received::Data
            }
            _ if envelope.cid != JOIN_CID => Received::Other,
            Some(Message::Match(_)) => Received::JoinAnswer(Ok(())),
            Some(Message::Error(error)) => Received::JoinAnswer(Err(ClientError::Realtime {
                code: error.code,
                message: error.message,
            }
            .kind()
            .into_owned())),
            _ => Received::JoinAnswer(Err(ClientError::Unexpected {
                what: String::new(),
            }
            .kind()
            .into_owned())),
        }
    }

    fn on_data(&self, ctx: &Ctx, op_code: i64, stamp: Option<(Duration, u32)>) {
        let Some((sent, sender)) = stamp else {
            ctx.stats.error("match data without a stamp");
            return;
        };
        let now = ctx.stats.start().elapsed();
        let latency = now.saturating_sub(sent);
        if op_code == self.echo_opcode && sender == self.me {
            ctx.stats.record_at(self.echo, now, latency);
        } else if op_code == self.broadcast_opcode {
            ctx.stats.record_at(self.broadcast, now, latency);
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

/// Where one user plays: the `slot`-th match made on server `node`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Placed {
    node: usize,
    slot: usize,
}

/// The match of each of `users` users over `nodes` servers (user `n` on server `n mod nodes`,
/// as the runner spreads them): of every node's players in turn, the share `cross_node` goes
/// to the next node (spread evenly: the k-th player crosses when ⌊(k+1)·share⌋ > ⌊k·share⌋),
/// and every node fills its matches `match_size` players at a time in user order, so a match
/// mixes its node's own players and the crossing ones.
fn place(users: u64, nodes: usize, placement: &Placement) -> Vec<Placed> {
    let nodes = nodes.max(1);
    let size = placement.match_size.max(1) as usize;
    let share = placement.cross_node.clamp(0.0, 1.0);
    let mut filled = vec![0usize; nodes];
    (0..users as usize)
        .map(|user| {
            let (own, k) = (user % nodes, (user / nodes) as f64);
            let crosses = ((k + 1.0) * share).floor() > (k * share).floor();
            let node = if crosses { (own + 1) % nodes } else { own };
            let slot = filled[node] / size;
            filled[node] += 1;
            Placed { node, slot }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placement(cross_node: f64) -> Placement {
        Placement {
            cross_node,
            create_rpc: "create_match".into(),
            match_size: 10,
        }
    }

    #[test]
    fn half_of_each_nodes_players_cross_and_every_match_is_full() {
        let placed = place(100, 2, &placement(0.5));
        let crossing: Vec<usize> = (0..100).filter(|u| placed[*u].node != u % 2).collect();
        assert_eq!(crossing.len(), 50);
        assert_eq!(crossing.iter().filter(|u| *u % 2 == 0).count(), 25);
        for node in 0..2 {
            for slot in 0..5 {
                let members: Vec<usize> = (0..100)
                    .filter(|u| placed[*u] == Placed { node, slot })
                    .collect();
                assert_eq!(members.len(), 10, "match {slot} of node {node}");
                let remote = members.iter().filter(|u| *u % 2 != node).count();
                assert_eq!(remote, 5, "match {slot} of node {node} mixes both nodes");
            }
        }
    }

    #[test]
    fn no_share_keeps_players_home_and_three_nodes_cross_to_the_next() {
        let home = place(60, 2, &placement(0.0));
        assert!((0..60).all(|u| home[u].node == u % 2));
        assert_eq!(home.iter().map(|p| p.slot).max(), Some(2));
        let three = place(30, 3, &placement(1.0));
        assert!((0..30).all(|u| three[u].node == (u % 3 + 1) % 3));
    }

    #[test]
    fn the_seats_note_gives_the_share_seated_and_the_refusals() {
        let seats = Seats::default();
        seats.joining.store(200, Ordering::Relaxed);
        seats.seated.store(150, Ordering::Relaxed);
        seats.refused.store(49, Ordering::Relaxed);
        assert_eq!(
            seats.note(),
            "seats: 150 of 200 players seated (75.0 %), 49 joins refused, 1 unanswered"
        );
    }

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
