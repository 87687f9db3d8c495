//! `relay`: pairs of players in relayed matches (no tick: data go straight through), to compare a
//! message between two players on one node with one between players on two nodes (issue 18:
//! "a match message whose sender sits on another node than the match arrives within 1 ms more
//! at p99 than a local one").
//!
//! Users go in pairs (users 2p and 2p+1). Pair p's first player signs up on server p mod N; the
//! second on the same server when p is even ("same_node" pairs) and on the next server when p is
//! odd ("cross_node" pairs; with one server every pair is on the same node). Both join the
//! relayed match named after the pair (`match_create` with a name; the second waits
//! `--join-delay` first, so it finds the first one's match rather than making its own on another
//! node), then each sends a stamped message every interval; the partner records its latency in
//! the pair kind's series. In a cross pair every message crosses NATS once: the second player's
//! from its node to the match's, the first player's from the match's node to the second's.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use metafi_client::{
    ClientError, Format, MatchDataSendJson, MatchDataView, SocketConfig, Transport as _,
    WebSocketTransport,
};
use metafi_proto::realtime::{Envelope, MatchCreate, MatchDataSend, Message};

use crate::stats::{SeriesId, SeriesKind};
use crate::workloads::seed_match::{STAMP_LEN, read_stamp, stamp};
use crate::workloads::{Ctx, DeviceIds, Workload};

/// What the relay workload does.
#[derive(Debug, Clone)]
pub struct RelayOptions {
    pub hold: Duration,
    pub interval: Duration,
    pub size: usize,
    pub join_delay: Duration,
    pub socket: SocketConfig,
}

#[derive(Debug)]
pub struct Relay {
    options: RelayOptions,
    ids: Arc<DeviceIds>,
    /// Names this run's matches apart from earlier runs' on the same servers.
    run: String,
}

const OP_CODE: i64 = 7;
const CREATE_CID: &str = "1";

impl Relay {
    pub fn new(options: RelayOptions) -> anyhow::Result<Relay> {
        if options.size < STAMP_LEN {
            anyhow::bail!("--size must be at least {STAMP_LEN} characters (the stamp)");
        }
        let ids = Arc::new(DeviceIds::new("relay"));
        let run = ids.id(0);
        Ok(Relay { options, ids, run })
    }
}

impl Workload for Relay {
    fn name(&self) -> &'static str {
        "relay"
    }

    fn series(&self) -> Vec<(&'static str, SeriesKind)> {
        vec![
            ("authenticate", SeriesKind::Request),
            ("connect", SeriesKind::Request),
            ("match_create", SeriesKind::Request),
            ("same_node", SeriesKind::Request),
            ("cross_node", SeriesKind::Request),
        ]
    }

    async fn user(self: Arc<Self>, ctx: Arc<Ctx>, index: u64, _repeat: bool) {
        if let Err(kind) = self.play(&ctx, index).await {
            ctx.stats.error(&kind);
        }
    }
}

impl Relay {
    async fn play(&self, ctx: &Ctx, index: u64) -> Result<(), String> {
        let o = &self.options;
        let servers = ctx.servers.len().max(1);
        let pair = index / 2;
        let second = index % 2 == 1;
        let first_server = (pair % servers as u64) as usize;
        let cross = pair % 2 == 1 && servers > 1;
        let server = if second && cross {
            (first_server + 1) % servers
        } else {
            first_server
        };
        let series = ctx.series(if cross { "cross_node" } else { "same_node" });
        let client = ctx.servers.client(server).with_own_connections();
        let started = Instant::now();
        let session = client
            .authenticate_device(&self.ids.next(), true, None)
            .await
            .map_err(|e| e.kind().into_owned())?;
        ctx.stats
            .record(ctx.series("authenticate"), started.elapsed());
        let started = Instant::now();
        let mut socket = WebSocketTransport::connect(client.endpoint(), &session.token, &o.socket)
            .await
            .map_err(|e| e.kind().into_owned())?;
        ctx.stats.record(ctx.series("connect"), started.elapsed());
        ctx.stats.connected();
        let result = self
            .in_match(ctx, index, pair, second, series, &mut socket)
            .await;
        if result.is_ok() {
            let _ = tokio::time::timeout(o.socket.timeout, socket.close()).await;
        }
        ctx.stats.disconnected();
        result
    }

    async fn in_match(
        &self,
        ctx: &Ctx,
        index: u64,
        pair: u64,
        second: bool,
        series: SeriesId,
        socket: &mut WebSocketTransport,
    ) -> Result<(), String> {
        let o = &self.options;
        if second {
            tokio::time::sleep(o.join_delay).await;
        }
        let format = socket.format();
        let create = Envelope::new(
            CREATE_CID,
            Message::MatchCreate(MatchCreate {
                name: format!("{}-pair-{pair}", self.run),
            }),
        );
        let started = Instant::now();
        socket
            .send(Bytes::from(format.encode(&create)))
            .await
            .map_err(|e| e.kind().into_owned())?;
        let me = index as u32;
        let mut match_id: Option<String> = None;
        let mut template: Option<MatchDataSendJson> = None;
        let mut until = ctx.deadline;
        let mut next_send = Instant::now();
        let timer = tokio::time::sleep_until((started + o.socket.timeout).into());
        let mut timer = std::pin::pin!(timer);
        let mut stop = std::pin::pin!(ctx.stop.cancelled());
        loop {
            tokio::select! {
                biased;
                () = &mut stop => return Ok(()),
                () = timer.as_mut() => {
                    let Some(id) = &match_id else {
                        let timeout = o.socket.timeout;
                        return Err(ClientError::Timeout { timeout }.kind().into_owned());
                    };
                    let now = Instant::now();
                    if now >= until {
                        return Ok(());
                    }
                    let payload = stamp(ctx.stats.start().elapsed(), me, o.size);
                    let sent = match (format, &template) {
                        (Format::Json, Some(template)) => {
                            socket.send_text(template.encode(&payload)).await
                        }
                        _ => {
                            let message = Message::MatchDataSend(MatchDataSend {
                                match_id: id.clone(),
                                op_code: OP_CODE,
                                data: payload,
                                presences: Vec::new(),
                                reliable: true,
                                delivery: None,
                            });
                            socket
                                .send(Bytes::from(format.encode(&Envelope::new("", message))))
                                .await
                        }
                    };
                    sent.map_err(|e| e.kind().into_owned())?;
                    next_send = if now > next_send + Duration::from_millis(5) {
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
                    if format == Format::Json
                        && let Some(view) = MatchDataView::parse_json(&frame)
                    {
                        let mut head = [0u8; STAMP_LEN];
                        if view.data_prefix(&mut head).is_some() {
                            record(ctx, series, me, read_stamp(&head));
                            continue;
                        }
                    }
                    let Ok(envelope) = format.decode(&frame) else {
                        continue;
                    };
                    match envelope.message {
                        Some(Message::MatchData(data)) => {
                            record(ctx, series, me, read_stamp(&data.data));
                        }
                        Some(Message::Match(answer)) if envelope.cid == CREATE_CID => {
                            ctx.stats.record(ctx.series("match_create"), started.elapsed());
                            template = Some(MatchDataSendJson::new(&answer.match_id, OP_CODE, true));
                            match_id = Some(answer.match_id);
                            let now = Instant::now();
                            until = (now + o.hold).min(ctx.deadline);
                            // spread the pairs' sends over the interval
                            let offset = Duration::from_micros(
                                (index * 7919) % o.interval.as_micros().max(1) as u64,
                            );
                            next_send = now + offset;
                            timer.as_mut().reset(next_send.min(until).into());
                        }
                        Some(Message::Error(error)) if envelope.cid == CREATE_CID => {
                            return Err(ClientError::Realtime {
                                code: error.code,
                                message: error.message,
                            }
                            .kind()
                            .into_owned());
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

/// Records a partner's message (a player never hears its own in a relayed match).
fn record(ctx: &Ctx, series: SeriesId, me: u32, stamp: Option<(Duration, u32)>) {
    let Some((sent, sender)) = stamp else {
        ctx.stats.error("match data without a stamp");
        return;
    };
    if sender == me {
        return;
    }
    let now = ctx.stats.start().elapsed();
    ctx.stats.record_at(series, now, now.saturating_sub(sent));
}
