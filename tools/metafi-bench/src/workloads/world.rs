//! `world`: bots in a served world (docs/WORLD.md, "Serving the world"; issue 19). Each bot
//! authenticates an existing account, opens the socket, joins the world (found in the match
//! listing by its label, or named with `--world`), then every command interval sends the next
//! command of its generated track (`metafi_world::bots`, replayed open loop as the seeds
//! replayed recordings) with a sequence number and the newest snapshot tick it received as its
//! acknowledgement. It measures the seed's figures: snapshots received per bot per second
//! against the tick rate, the time from sending a command to the first snapshot that applied
//! it, and bytes on the wire per bot.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use metafi_client::net::NetCounters;
use metafi_client::{
    Client, ClientConfig, ClientError, Format, SocketConfig, Transport as _, WebSocketTransport,
};
use metafi_proto::realtime::{Envelope, MatchDataSend, MatchJoin, MatchJoinId, Message};
use metafi_world::bots::{self, Behaviour, BotSpec};
use metafi_world::{Map, UserCmd};
use metafi_world_server::WorldSettings;
use metafi_world_server::codec::{self, CommandMsg};

use crate::servers::Servers;
use crate::stats::{SeriesId, SeriesKind};
use crate::workloads::world_window::{self, ThreadsReading, WindowFigures, WorldSeen};
use crate::workloads::{Ctx, DeviceIds, Workload, create_users, setup_note};

/// What the world workload does.
#[derive(Debug, Clone)]
pub struct WorldOptions {
    /// The world's match id; empty: the first world in the listing.
    pub world: String,
    /// The map the bots' tracks are generated on (the world's, for tracks that fit it).
    pub map: String,
    pub seed: u64,
    pub behaviour: Behaviour,
    /// Time between two commands of one bot.
    pub command_interval: Duration,
    pub hold: Duration,
    pub users: u64,
    pub setup_concurrency: u64,
    pub socket: SocketConfig,
    /// The server's metrics listener (`http://host:port`): its `/debug/worlds` is read during
    /// the measured phase. `None`: the server's side is not reported.
    pub metrics: Option<String>,
    /// The server's processes (`--server-pid`): their threads' CPU over the measured phase.
    pub server_pids: Vec<u32>,
}

/// Counters of the whole run (the report's notes).
#[derive(Debug, Default)]
struct Totals {
    snapshots: AtomicU64,
    snapshot_bytes: AtomicU64,
    commands: AtomicU64,
    /// Commands never applied (a newer one of the same bot was applied first: latest wins).
    superseded: AtomicU64,
    /// Microseconds bots spent joined (the denominator of snapshots per bot per second).
    joined_us: AtomicU64,
    /// Tick gaps seen (a snapshot whose tick is more than one after the previous).
    skipped_ticks: AtomicU64,
}

#[derive(Debug)]
pub struct Worlds {
    options: WorldOptions,
    ids: Arc<DeviceIds>,
    /// Generated in `prepare`: one command track per bot.
    tracks: parking_lot::Mutex<Arc<Vec<Vec<UserCmd>>>>,
    world: parking_lot::Mutex<String>,
    tick_rate: AtomicU64,
    totals: Totals,
    /// What the measured phase gave (`watch`), once it is over.
    window: parking_lot::Mutex<Option<WindowFigures>>,
    /// Bots in the world now and the bot-seconds spent in it so far (exact, at every join
    /// and leave): the measured phase's per-bot denominator.
    presence: parking_lot::Mutex<Presence>,
}

/// Bots in the world and the integral of that count over time.
#[derive(Debug, Clone, Copy)]
struct Presence {
    bots: i64,
    since: Instant,
    bot_secs: f64,
}

impl Presence {
    /// Adds `delta` bots now.
    fn change(&mut self, delta: i64) {
        let now = Instant::now();
        self.bot_secs += self.bots.max(0) as f64 * now.duration_since(self.since).as_secs_f64();
        self.since = now;
        self.bots += delta;
    }

    /// The bot-seconds up to `at` (not before the last change).
    fn bot_secs_at(&self, at: Instant) -> f64 {
        self.bot_secs
            + self.bots.max(0) as f64 * at.saturating_duration_since(self.since).as_secs_f64()
    }
}

impl Worlds {
    pub fn new(options: WorldOptions) -> Worlds {
        Worlds {
            options,
            ids: Arc::new(DeviceIds::new("world")),
            tracks: parking_lot::Mutex::new(Arc::new(Vec::new())),
            world: parking_lot::Mutex::new(String::new()),
            tick_rate: AtomicU64::new(20),
            totals: Totals::default(),
            window: parking_lot::Mutex::new(None),
            presence: parking_lot::Mutex::new(Presence {
                bots: 0,
                since: Instant::now(),
                bot_secs: 0.0,
            }),
        }
    }
}

/// The first world in a match listing: `(match id, tick rate)`.
fn find_world(list: &serde_json::Value) -> Option<(String, u64)> {
    list["matches"].as_array()?.iter().find_map(|m| {
        let label: serde_json::Value = serde_json::from_str(m["label"].as_str()?).ok()?;
        (label["world"] == true).then(|| {
            (
                m["match_id"].as_str().unwrap_or_default().to_owned(),
                label["tick_rate"].as_u64().unwrap_or(20),
            )
        })
    })
}

impl Workload for Worlds {
    fn name(&self) -> &'static str {
        "world"
    }

    fn series(&self) -> Vec<(&'static str, SeriesKind)> {
        vec![
            ("connect", SeriesKind::Connect),
            ("authenticate", SeriesKind::Request),
            ("world_join", SeriesKind::Request),
            // Time between two snapshots of one bot (its count is the snapshots received).
            ("snapshot", SeriesKind::Request),
            // Command sent → first snapshot that applied it.
            ("command", SeriesKind::Request),
        ]
    }

    async fn prepare(&self, servers: &Servers) -> anyhow::Result<Vec<String>> {
        let o = &self.options;
        let started = Instant::now();
        let users = o.users.max(1);
        let sessions = create_users(servers, &self.ids, users, o.setup_concurrency).await?;
        let took = started.elapsed();
        let mut notes = vec![setup_note("created", users, took)];
        let listed = servers
            .client(0)
            .list_matches(&sessions[0].token, "authoritative=true&limit=100")
            .await
            .map_err(|e| anyhow::anyhow!("listing matches failed: {e}"))?;
        let (id, tick_rate) = if o.world.is_empty() {
            find_world(&listed).ok_or_else(|| {
                anyhow::anyhow!(
                    "no world in the match listing; start the server with [world] enabled = true \
                     (or create one with nk.world_create) or name one with --world"
                )
            })?
        } else {
            let rate = find_world(&serde_json::json!({
                "matches": listed["matches"]
                    .as_array()
                    .map(|a| a.iter().filter(|m| m["match_id"] == o.world.as_str()).cloned().collect::<Vec<_>>())
                    .unwrap_or_default()
            }))
            .map_or(20, |(_, r)| r);
            (o.world.clone(), rate)
        };
        self.tick_rate.store(tick_rate, Ordering::Relaxed);
        *self.world.lock() = id.clone();

        // The bots' tracks: generated on the map (not measured).
        let started = Instant::now();
        let settings = WorldSettings {
            map: o.map.clone(),
            seed: o.seed,
            max_players: users as usize,
            ..WorldSettings::default()
        };
        let spec = settings.map_spec()?;
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
        let map = Map::build(spec, &pool)?;
        let command_ms = o.command_interval.as_millis().clamp(1, 255) as u8;
        let file = bots::generate(
            &map,
            &BotSpec {
                behaviour: o.behaviour,
                bots: users as usize,
                duration_ms: 20_000,
                command_ms,
                seed: o.seed,
            },
            &pool,
        );
        let tracks: Vec<Vec<UserCmd>> = file
            .bots
            .iter()
            .map(|b| b.commands.iter().map(|c| c.cmd).collect())
            .collect();
        *self.tracks.lock() = Arc::new(tracks);
        notes.push(format!(
            "world {id} at {tick_rate} ticks/s; {users} bot tracks ({}) generated on map {} in {:.1} s (not measured); one command every {} ms",
            o.behaviour.name(),
            o.map,
            started.elapsed().as_secs_f64(),
            command_ms
        ));
        Ok(notes)
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

    async fn watch(self: Arc<Self>, ctx: Arc<Ctx>) {
        let figures = self.measure_window(&ctx).await;
        *self.window.lock() = figures;
    }

    fn figures(&self) -> Option<serde_json::Value> {
        let window = self.window.lock().clone()?;
        serde_json::to_value(window).ok()
    }

    fn after(&self, _duration: Duration) -> Vec<String> {
        let t = &self.totals;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let joined_s = get(&t.joined_us) as f64 / 1e6;
        let rate = get(&t.snapshots) as f64 / joined_s.max(1e-9);
        let tick_rate = get(&self.tick_rate) as f64;
        let window = self.window.lock().as_ref().map(world_window::notes);
        let mut notes = vec![
            format!(
                "snapshots received per bot per second: {rate:.2} of {tick_rate} ticks/s ({:.1}%), over {joined_s:.0} bot-seconds in the world",
                100.0 * rate / tick_rate.max(1.0)
            ),
            format!(
                "snapshot payload per bot: {:.0} bytes per snapshot, {:.1} kbit/s; commands sent {} ({} superseded by a newer one before a tick applied them); tick gaps seen {}",
                get(&t.snapshot_bytes) as f64 / (get(&t.snapshots).max(1)) as f64,
                get(&t.snapshot_bytes) as f64 * 8.0 / 1000.0 / joined_s.max(1e-9),
                get(&t.commands),
                get(&t.superseded),
                get(&t.skipped_ticks),
            ),
        ];
        notes.extend(window.unwrap_or_else(|| {
            vec![
                "measured phase: not read (too short, or the run ended before its last reading)"
                    .into(),
            ]
        }));
        notes
    }
}

/// The `cid` of the join request, the only request a bot sends on its socket.
const JOIN_CID: &str = "1";

impl Worlds {
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
        drop(client);
        let started = Instant::now();
        let mut socket =
            WebSocketTransport::connect(ctx.client().endpoint(), &session.token, &o.socket)
                .await
                .map_err(|e| e.kind().into_owned())?;
        ctx.stats.record(ctx.series("connect"), started.elapsed());
        ctx.stats.connected();
        let world = self.world.lock().clone();
        let result = self.in_world(ctx, index, &mut socket, &world).await;
        if result.is_ok() {
            let _ = tokio::time::timeout(o.socket.timeout, socket.close()).await;
        }
        ctx.stats.disconnected();
        result
    }

    async fn in_world(
        &self,
        ctx: &Ctx,
        index: u64,
        socket: &mut WebSocketTransport,
        world: &str,
    ) -> Result<(), String> {
        let o = &self.options;
        let format = socket.format();
        let join = Envelope::new(
            JOIN_CID,
            Message::MatchJoin(MatchJoin {
                id: Some(MatchJoinId::MatchId(world.to_owned())),
                metadata: HashMap::new(),
            }),
        );
        let join_started = Instant::now();
        socket
            .send(Bytes::from(format.encode(&join)))
            .await
            .map_err(|e| e.kind().into_owned())?;
        let tracks = self.tracks.lock().clone();
        let track: &[UserCmd] = tracks
            .get(index as usize % tracks.len().max(1))
            .map_or(&[], Vec::as_slice);
        let series = (ctx.series("snapshot"), ctx.series("command"));
        let mut bot = Bot {
            seq: 0,
            newest: None,
            sent: VecDeque::new(),
            last_snapshot: None,
            joined_at: None,
        };
        let offset =
            Duration::from_micros((index * 7919) % o.command_interval.as_micros().max(1) as u64);
        let mut next_send = Instant::now();
        let mut until = ctx.deadline;
        let mut cursor = 0usize;
        let timer = tokio::time::sleep_until((join_started + o.socket.timeout).into());
        let mut timer = std::pin::pin!(timer);
        let mut stop = std::pin::pin!(ctx.stop.cancelled());
        let result = loop {
            tokio::select! {
                biased;
                () = &mut stop => break Ok(()),
                () = timer.as_mut() => {
                    if bot.joined_at.is_none() {
                        let timeout = o.socket.timeout;
                        break Err(ClientError::Timeout { timeout }.kind().into_owned());
                    }
                    let now = Instant::now();
                    if now >= until {
                        break Ok(());
                    }
                    let cmd = track.get(cursor).copied().unwrap_or_default();
                    cursor = if cursor + 1 >= track.len() { 0 } else { cursor + 1 };
                    bot.seq += 1;
                    let msg = CommandMsg { seq: bot.seq, ack: bot.newest, cmd };
                    let frame = command_frame(format, world, &msg);
                    if let Err(e) = socket.send(frame).await {
                        break Err(e.kind().into_owned());
                    }
                    bot.sent.push_back((bot.seq, now));
                    // Bounded: commands older than a second are never reflected any more.
                    while bot.sent.len() > 64 {
                        bot.sent.pop_front();
                        self.totals.superseded.fetch_add(1, Ordering::Relaxed);
                    }
                    self.totals.commands.fetch_add(1, Ordering::Relaxed);
                    next_send = if now > next_send + Duration::from_millis(5) {
                        now + o.command_interval
                    } else {
                        next_send + o.command_interval
                    };
                    timer.as_mut().reset(next_send.min(until).into());
                }
                frame = socket.recv() => {
                    let frame = match frame {
                        Ok(Some(frame)) => frame,
                        Ok(None) => break Err("socket closed by the server in the world".into()),
                        Err(e) => break Err(e.kind().into_owned()),
                    };
                    ctx.stats.message_received();
                    let Ok(envelope) = format.decode(&frame) else {
                        continue;
                    };
                    match envelope.message {
                        Some(Message::MatchData(data)) if data.op_code == codec::OP_SNAPSHOT => {
                            self.on_snapshot(ctx, &mut bot, &data.data, series);
                        }
                        Some(Message::Match(_)) if envelope.cid == JOIN_CID => {
                            ctx.stats.record(ctx.series("world_join"), join_started.elapsed());
                            let now = Instant::now();
                            bot.joined_at = Some(now);
                            self.presence.lock().change(1);
                            until = (now + o.hold).min(ctx.deadline);
                            // Counted now for the planned stay (the runner aborts bots still
                            // playing at the end); a bot that leaves early gives back the rest.
                            self.totals.joined_us.fetch_add(
                                until.saturating_duration_since(now).as_micros() as u64,
                                Ordering::Relaxed,
                            );
                            next_send = now + offset;
                            timer.as_mut().reset(next_send.min(until).into());
                        }
                        Some(Message::Error(error)) if envelope.cid == JOIN_CID => {
                            break Err(ClientError::Realtime { code: error.code, message: error.message }
                                .kind()
                                .into_owned());
                        }
                        _ => {}
                    }
                }
            }
        };
        if bot.joined_at.is_some() {
            self.presence.lock().change(-1);
            let unused = until.saturating_duration_since(Instant::now());
            self.totals
                .joined_us
                .fetch_sub(unused.as_micros() as u64, Ordering::Relaxed);
        }
        result
    }

    fn on_snapshot(&self, ctx: &Ctx, bot: &mut Bot, data: &[u8], series: (SeriesId, SeriesId)) {
        let Ok((applied, packet)) = codec::split_snapshot(data) else {
            ctx.stats.error("snapshot that cannot be read");
            return;
        };
        let Ok(tick) = metafi_world_server::codec::Cursor::new(packet).varint() else {
            ctx.stats.error("snapshot that cannot be read");
            return;
        };
        let now = Instant::now();
        let at = ctx.stats.start().elapsed();
        if let Some(prev) = bot.last_snapshot {
            ctx.stats.record_at(series.0, at, now - prev);
        }
        bot.last_snapshot = Some(now);
        if let Some(newest) = bot.newest
            && tick > newest + 1
        {
            self.totals
                .skipped_ticks
                .fetch_add(u64::from(tick - newest - 1), Ordering::Relaxed);
        }
        if bot.newest.is_none_or(|n| tick > n) {
            bot.newest = Some(tick);
        }
        self.totals.snapshots.fetch_add(1, Ordering::Relaxed);
        self.totals
            .snapshot_bytes
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        // The command this snapshot applied: its latency; older unapplied ones were superseded.
        while let Some(&(seq, sent)) = bot.sent.front() {
            if seq > applied {
                break;
            }
            bot.sent.pop_front();
            if seq == applied {
                ctx.stats.record_at(series.1, at, now - sent);
            } else {
                self.totals.superseded.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

impl Worlds {
    /// Reads the server and the bots' counters over the measured phase (`world_window`).
    async fn measure_window(&self, ctx: &Ctx) -> Option<WindowFigures> {
        let o = &self.options;
        let (from, to) = world_window::window(ctx)?;
        let metrics = match &o.metrics {
            Some(url) => {
                let config = ClientConfig {
                    server: url.clone(),
                    // Short: the last reading must be in before the runner stops waiting for it.
                    timeout: Duration::from_secs(2),
                    max_idle: 1,
                    ..ClientConfig::default()
                };
                Client::new(&config, Arc::new(NetCounters::default()))
                    .await
                    .map_err(|e| format!("the metrics listener {url}: {e}"))
                    .map(Some)
            }
            None => Ok(None),
        };
        let world = self.world.lock().clone();
        let mut problems = Vec::new();
        let metrics = metrics.unwrap_or_else(|e| {
            problems.push(e);
            None
        });
        tokio::time::sleep_until(from.into()).await;
        let start = ctx.stats.start();
        let tool = |at: Instant| Tool {
            at: at.saturating_duration_since(start).as_secs_f64(),
            snapshots: self.totals.snapshots.load(Ordering::Relaxed),
            received: ctx.stats.net().received(),
            sent: ctx.stats.net().sent(),
            bot_secs: self.presence.lock().bot_secs_at(at),
        };
        let first_tool = tool(Instant::now());
        let first_threads =
            (!o.server_pids.is_empty()).then(|| ThreadsReading::take(&o.server_pids));
        let first_world = read_world(metrics.as_ref(), &world).await;
        let mut seen = WorldSeen::default();
        if let Some(Ok(w)) = &first_world {
            seen.observe(w);
        }
        let mut next = Instant::now() + Duration::from_secs(1);
        while next < to {
            tokio::time::sleep_until(next.into()).await;
            if let Some(Ok(w)) = read_world(metrics.as_ref(), &world).await {
                seen.observe(&w);
            }
            next += Duration::from_secs(1);
        }
        tokio::time::sleep_until(to.into()).await;
        let last_tool = tool(Instant::now());
        let last_threads =
            (!o.server_pids.is_empty()).then(|| ThreadsReading::take(&o.server_pids));
        let last_world = read_world(metrics.as_ref(), &world).await;
        if let Some(Ok(w)) = &last_world {
            seen.observe(w);
        }

        let seconds = (last_tool.at - first_tool.at).max(1e-9);
        // Bot-seconds in the world over the window, exactly (bots whose --hold ends inside it
        // count for the time they were in).
        let bot_secs = (last_tool.bot_secs - first_tool.bot_secs).max(0.0);
        let bots = bot_secs / seconds;
        let per_bot_s = |a: u64, b: u64| {
            if bot_secs > 0.0 {
                b.saturating_sub(a) as f64 / bot_secs
            } else {
                0.0
            }
        };
        let tick_rate = self.tick_rate.load(Ordering::Relaxed) as f64;
        let (p50, p99, measured) = world_window::command_quantiles(
            ctx,
            ctx.series("command"),
            first_tool.at,
            last_tool.at,
        );
        let server = match (first_world, last_world) {
            (Some(Ok(a)), Some(Ok(b))) => Some(world_window::server_figures(&a, &b, &seen)),
            (Some(Err(e)), _) | (_, Some(Err(e))) => {
                problems.push(e);
                None
            }
            _ => None,
        };
        let cpu = match (first_threads, last_threads) {
            (Some(Ok(a)), Some(Ok(b))) => {
                // The bots are the players: their exact mean, else the server's sampled one.
                let players = if bots > 0.0 {
                    bots
                } else {
                    server.as_ref().map_or(0.0, |s| s.players_mean)
                };
                Some(world_window::cpu_split(
                    &a,
                    &b,
                    seconds,
                    server.as_ref(),
                    players,
                    tick_rate,
                ))
            }
            (Some(Err(e)), _) | (_, Some(Err(e))) => {
                problems.push(e);
                None
            }
            _ => None,
        };
        Some(WindowFigures {
            from_secs: first_tool.at,
            to_secs: last_tool.at,
            bots,
            tick_rate,
            snapshots_per_bot_per_sec: per_bot_s(first_tool.snapshots, last_tool.snapshots),
            command_p50_ms: p50,
            command_p99_ms: p99,
            commands_measured: measured,
            bytes_in_per_bot_per_sec: per_bot_s(first_tool.received, last_tool.received),
            bytes_out_per_bot_per_sec: per_bot_s(first_tool.sent, last_tool.sent),
            server,
            cpu,
            problems,
        })
    }
}

/// The world's entry of the server's `/debug/worlds` (`None`: no metrics listener given).
async fn read_world(
    client: Option<&Client>,
    world: &str,
) -> Option<Result<serde_json::Value, String>> {
    let client = client?;
    Some(match client.get_json("/debug/worlds").await {
        Ok(answer) => world_window::world_entry(&answer, world)
            .cloned()
            .ok_or_else(|| "/debug/worlds lists no world (it had ended?)".to_owned()),
        Err(e) => Err(format!("GET /debug/worlds: {e}")),
    })
}

/// The bots' counters at one instant of the measured phase.
struct Tool {
    /// Seconds since the run's start.
    at: f64,
    snapshots: u64,
    received: u64,
    sent: u64,
    /// Bot-seconds in the world since the start.
    bot_secs: f64,
}

struct Bot {
    seq: u32,
    newest: Option<u32>,
    /// Commands sent and not yet reflected: `(seq, when)`.
    sent: VecDeque<(u32, Instant)>,
    last_snapshot: Option<Instant>,
    joined_at: Option<Instant>,
}

/// A command as match data (op 1) in the socket's format.
fn command_frame(format: Format, world: &str, msg: &CommandMsg) -> Bytes {
    let envelope = Envelope::new(
        String::new(),
        Message::MatchDataSend(MatchDataSend {
            match_id: world.to_owned(),
            op_code: codec::OP_COMMAND,
            data: Bytes::from(msg.to_vec()),
            presences: Vec::new(),
            reliable: true,
            delivery: None,
        }),
    );
    Bytes::from(format.encode(&envelope))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_world_is_found_by_its_label() {
        let list = serde_json::json!({ "matches": [
            { "match_id": "a.n", "label": "{\"kind\":\"seed\"}" },
            { "match_id": "b.n", "label": "{\"world\":true,\"tick_rate\":30}" },
        ]});
        assert_eq!(find_world(&list), Some(("b.n".into(), 30)));
        assert_eq!(find_world(&serde_json::json!({ "matches": [] })), None);
    }
}
