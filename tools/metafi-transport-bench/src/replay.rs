//! `run`: one strategy replays one trace against a server running the `transport_seed`
//! module. Every player is a task with its own account, source address (so the link emulator
//! gives it its own access link) and realtime connection; all players join one match, then
//! send their trace's messages at the trace's times and record what the server sends them.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use bytes::Bytes;
use metafi_client::net::NetCounters;
use metafi_client::{Client, ClientConfig, Events, Format, SocketConfig};
use metafi_proto::realtime::{MatchJoin, MatchJoinId, Message};
use serde::{Deserialize, Serialize};
use tokio::sync::{Semaphore, watch};

use crate::connect::Connection;
use crate::stats::{Moments, Summary};
use crate::strategy::{Class, Strategy};
use crate::trace::{Trace, TraceMessage};
use crate::wire::{self, FORWARD, ServerMessage};

/// How to reach the server and what to replay.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub trace: PathBuf,
    pub strategy: Strategy,
    pub server: String,
    pub server_key: String,
    /// QUIC listener (UDP) of the server, for QUIC strategies.
    pub quic: Option<SocketAddr>,
    /// SHA-256 fingerprint of the server's certificate (64 hex digits), for QUIC strategies.
    pub quic_fingerprint: Option<String>,
    /// Client-side QUIC knobs (`[quic]` key names), e.g. `redundancy_copies=1`.
    pub quic_tuning: Vec<(String, String)>,
    /// Player i connects from this address + i (none: the kernel chooses).
    pub first_source: Option<Ipv4Addr>,
    /// Ticks per second of the server module.
    pub tick_rate: u32,
    /// Wait after the last scheduled message for late deliveries.
    pub drain: Duration,
    /// Connections being set up at once.
    pub setup_concurrency: usize,
    /// Longest wait for every player to hear of every other one after joining.
    pub settle_timeout: Duration,
    pub timeout: Duration,
    /// Prefix of the device ids (accounts are reused across runs of one server).
    pub device_prefix: String,
    /// `metafi-linkemu` started with `--setup-link`: signalled to use the setup link while
    /// players sign in, connect and join (SIGUSR2), and the measured links from then on
    /// (SIGUSR1).
    pub emulator_pid: Option<u32>,
}

/// A player that heard no announcement for this long has heard them all.
const QUIET: Duration = Duration::from_secs(1);

/// What one run measured (one JSON file).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub strategy: Strategy,
    pub clients: u16,
    pub seed: u64,
    pub trace_messages: usize,
    pub trace_seconds: f64,
    /// Client → server, per type (move, attack, talk), then all types.
    pub client_messages: [Summary; 4],
    /// Server → client (answers and forwards), per type, then all.
    pub server_messages: [Summary; 4],
    /// Forwarded messages from their sender to the player they were forwarded to, per type, then all.
    pub end_to_end: [Summary; 4],
    /// GSI of client traffic (the seed's comparison) and of server traffic.
    pub gsi_client: f64,
    pub gsi_server: f64,
    /// Latest a message was sent after its scheduled time, ms (the tool keeping up).
    pub max_send_lateness_ms: f64,
    /// Server messages that did not parse.
    pub malformed: u64,
    /// Seconds spent signing in, connecting and joining (not measured).
    pub setup_seconds: f64,
}

/// The server module's statistics (`transport_seed_stats`).
#[derive(Debug, Default, Deserialize)]
struct SeedStats {
    received: HashMap<u16, [Moments; 3]>,
    answers_sent: [u64; 3],
    forwards_sent: [u64; 3],
    malformed: u64,
}

/// One player's records.
#[derive(Debug, Default)]
struct PlayerRecord {
    sent: [u64; 3],
    /// Server → client delay per type.
    down: [Moments; 3],
    /// Sender → this player for forwards, per type.
    end_to_end: [Moments; 3],
    max_lateness_us: u64,
    malformed: u64,
}

pub async fn run(options: &RunOptions) -> anyhow::Result<RunResult> {
    let trace = Trace::read(&options.trace)?;
    let players = trace.players.len();
    anyhow::ensure!(players >= 2, "the trace has fewer than 2 players");
    let classes = options.strategy.classes();
    let setup_started = Instant::now();
    signal_emulator(options.emulator_pid, "-USR2")?;

    let clients = sign_in(options, players).await?;
    let limit = Arc::new(Semaphore::new(options.setup_concurrency.max(1)));
    let params = serde_json::json!({
        "tick_rate": options.tick_rate,
        "aoi": trace.params.aoi,
        "reliable": [classes[0].reliable(), classes[1].reliable(), classes[2].reliable()],
        "delivery": classes.iter().map(class_json).collect::<Vec<_>>(),
    });
    let (client0, token0) = &clients[0];
    let created = client0
        .rpc(token0, "transport_seed_create", &params.to_string())
        .await
        .context(
            "creating the match (is the transport_seed module loaded? it is in a metafi built \
             with `--features examples`)",
        )?;
    let match_id = serde_json::from_str::<serde_json::Value>(&created)?
        .get("match_id")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .context("transport_seed_create answered no match_id")?;

    // Realtime connections, then joins.
    let socket_config = SocketConfig {
        format: Format::Protobuf,
        timeout: options.timeout,
        send_queue: 256,
        event_queue: 1024,
        appear_online: false,
        read_buffer: 4096,
    };
    let mut joins = Vec::new();
    for (i, (client, token)) in clients.iter().enumerate() {
        let limit = limit.clone();
        let endpoint = client.endpoint().clone();
        let token = token.clone();
        let socket_config = socket_config.clone();
        let match_id = match_id.clone();
        let options = options.clone();
        joins.push(tokio::spawn(async move {
            let _permit = limit.acquire().await?;
            let source = source(&options, i);
            let (connection, events) =
                Connection::open(&options, &endpoint, source, &token, &socket_config)
                    .await
                    .with_context(|| format!("player {i}: connecting"))?;
            let metadata = HashMap::from([("client".to_owned(), i.to_string())]);
            let answer = connection
                .socket()
                .request(Message::MatchJoin(MatchJoin {
                    id: Some(MatchJoinId::MatchId(match_id)),
                    metadata,
                }))
                .await
                .with_context(|| format!("player {i}: joining the match"))?;
            let mut known = HashSet::new();
            if let Some(Message::Match(m)) = answer.message {
                let me = m.self_presence.map(|p| p.session_id).unwrap_or_default();
                known.extend(
                    m.presences
                        .into_iter()
                        .map(|p| p.session_id)
                        .filter(|s| *s != me),
                );
            }
            anyhow::Ok((connection, events, known))
        }));
    }
    let mut joined = Vec::new();
    for join in joins {
        joined.push(join.await??);
    }
    // Every join announces the player to everyone (presence events: N² messages). Start only
    // when every player has heard of every other one — or heard nothing more for a second
    // (a player that joined while another's join was still pending may not be announced to
    // it) — so the measured run does not share the links with the announcements.
    let mut settles = Vec::new();
    for (i, (connection, mut events, mut known)) in joined.into_iter().enumerate() {
        let deadline = tokio::time::Instant::now() + options.settle_timeout;
        settles.push(tokio::spawn(async move {
            while known.len() + 1 < players {
                anyhow::ensure!(
                    tokio::time::Instant::now() < deadline,
                    "player {i} kept hearing of players for longer than the settle timeout"
                );
                let event = match tokio::time::timeout(QUIET, events.next()).await {
                    Err(_) => break,
                    Ok(event) => event.with_context(|| {
                        format!("player {i}: the connection closed while settling")
                    })?,
                };
                if let Some(Message::MatchPresenceEvent(e)) = event.message {
                    known.extend(e.joins.into_iter().map(|p| p.session_id));
                    for p in e.leaves {
                        known.remove(&p.session_id);
                    }
                }
            }
            anyhow::Ok((connection, events))
        }));
    }
    let mut connections = Vec::new();
    for settle in settles {
        connections.push(settle.await??);
    }
    signal_emulator(options.emulator_pid, "-USR1")?;
    let setup_seconds = setup_started.elapsed().as_secs_f64();

    // Replay.
    let start = tokio::time::Instant::now() + Duration::from_secs(1);
    let last_us = trace
        .players
        .iter()
        .filter_map(|p| p.last())
        .map(TraceMessage::at_us)
        .max()
        .unwrap_or(0);
    let end = start + Duration::from_micros(last_us) + options.drain;
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = Vec::new();
    for ((connection, events), messages) in connections.into_iter().zip(trace.players.clone()) {
        let classes = classes.clone();
        let match_id = match_id.clone();
        let stop = stop_rx.clone();
        tasks.push(tokio::spawn(play(
            connection, events, messages, classes, match_id, start, stop,
        )));
    }
    tokio::time::sleep_until(end).await;
    let _ = stop_tx.send(true);
    let mut records = Vec::new();
    // Connections stay open until the statistics are read: the match ends when its last
    // player leaves.
    let mut open = Vec::new();
    for task in tasks {
        let (record, connection) = task.await?;
        records.push(record);
        open.push(connection);
    }

    let stats_text = client0
        .rpc(
            token0,
            "transport_seed_stats",
            &serde_json::json!({ "match_id": match_id }).to_string(),
        )
        .await
        .context("fetching the server module's statistics")?;
    let server: SeedStats =
        serde_json::from_str(&stats_text).context("parsing the server module's statistics")?;
    for connection in open {
        connection.close().await;
    }
    Ok(summarise(
        options.strategy,
        &trace,
        &records,
        &server,
        setup_seconds,
    ))
}

/// Signs `players` players in (device accounts, created on first use), each from its own
/// address: their REST clients and session tokens.
pub async fn sign_in(
    options: &RunOptions,
    players: usize,
) -> anyhow::Result<Vec<(Client, String)>> {
    let counters = Arc::new(NetCounters::default());
    let limit = Arc::new(Semaphore::new(options.setup_concurrency.max(1)));
    let mut joins = Vec::new();
    for i in 0..players {
        let config = ClientConfig {
            server: options.server.clone(),
            server_key: options.server_key.clone(),
            timeout: options.timeout,
            sources: source(options, i).map(IpAddr::V4).into_iter().collect(),
            max_idle: 1,
        };
        let counters = counters.clone();
        let limit = limit.clone();
        let device = format!("{}-player-{i:05}", options.device_prefix);
        joins.push(tokio::spawn(async move {
            let _permit = limit.acquire().await?;
            let client = Client::new(&config, counters).await?;
            let session = client
                .authenticate_device(&device, true, None)
                .await
                .with_context(|| format!("player {i}: signing in"))?;
            anyhow::Ok((client, session.token))
        }));
    }
    let mut clients = Vec::new();
    for join in joins {
        clients.push(join.await??);
    }
    Ok(clients)
}

/// Player `i`'s address, if players have their own.
pub fn source(options: &RunOptions, i: usize) -> Option<Ipv4Addr> {
    options
        .first_source
        .map(|first| Ipv4Addr::from(u32::from(first) + i as u32))
}

/// One player: sends its messages on schedule and records what arrives, until `stop`.
async fn play(
    connection: Connection,
    mut events: Events,
    messages: Vec<TraceMessage>,
    classes: [Class; 3],
    match_id: String,
    start: tokio::time::Instant,
    mut stop: watch::Receiver<bool>,
) -> (PlayerRecord, Connection) {
    let mut record = PlayerRecord::default();
    let mut next = 0;
    let mut open = true;
    loop {
        let due = messages
            .get(next)
            .map(|m| start + Duration::from_micros(m.at_us()));
        tokio::select! {
            biased;
            _ = stop.changed() => break,
            event = events.next(), if open => match event {
                None => open = false,
                Some(envelope) => {
                    let now = wire::monotonic_us();
                    if let Some(Message::MatchData(data)) = envelope.message {
                        match (wire::slot(data.op_code), ServerMessage::decode(&data.data)) {
                            (Some(slot), Some(m)) => {
                                record.down[slot].add(now.saturating_sub(m.handled_us) as f64);
                                if m.kind == FORWARD {
                                    record.end_to_end[slot].add(now.saturating_sub(m.send_us) as f64);
                                }
                            }
                            _ => record.malformed += 1,
                        }
                    }
                }
            },
            () = sleep_until_opt(due) => {
                let m = messages[next];
                let Some(slot) = wire::slot(m.op_code()) else {
                    next += 1;
                    continue;
                };
                let late = tokio::time::Instant::now().saturating_duration_since(start + Duration::from_micros(m.at_us()));
                record.max_lateness_us = record.max_lateness_us.max(late.as_micros() as u64);
                let (x, y) = m.position();
                let payload = wire::ClientMessage {
                    seq: next as u32,
                    send_us: wire::monotonic_us(),
                    x,
                    y,
                    target: m.target(),
                }
                .encode(m.size());
                // A failed send is a lost message: the counts show it.
                let _ = connection.send(&match_id, m.op_code(), Bytes::from(payload), &classes[slot]).await;
                record.sent[slot] += 1;
                next += 1;
            }
        }
    }
    (record, connection)
}

async fn sleep_until_opt(due: Option<tokio::time::Instant>) {
    match due {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A class as the server module's `delivery` parameter (`metafi_proto::realtime::Delivery`).
fn class_json(class: &Class) -> serde_json::Value {
    let wire = crate::connect::delivery_class(class).to_wire();
    serde_json::json!({ "class": wire.class, "lane": wire.lane })
}

fn summarise(
    strategy: Strategy,
    trace: &Trace,
    records: &[PlayerRecord],
    server: &SeedStats,
    setup_seconds: f64,
) -> RunResult {
    let players = records.len();
    let mut client_messages = [Summary::default(); 4];
    let mut server_messages = [Summary::default(); 4];
    let mut end_to_end = [Summary::default(); 4];
    let received = |i: usize| {
        server
            .received
            .get(&(i as u16))
            .copied()
            .unwrap_or_default()
    };
    for slot in 0..3 {
        let up: Vec<Moments> = (0..players).map(|i| received(i)[slot]).collect();
        let sent: u64 = records.iter().map(|r| r.sent[slot]).sum();
        client_messages[slot] = Summary::new(&up, sent);
        let down: Vec<Moments> = records.iter().map(|r| r.down[slot]).collect();
        server_messages[slot] = Summary::new(
            &down,
            server.answers_sent[slot] + server.forwards_sent[slot],
        );
        let e2e: Vec<Moments> = records.iter().map(|r| r.end_to_end[slot]).collect();
        end_to_end[slot] = Summary::new(&e2e, server.forwards_sent[slot]);
    }
    let merged = |f: &dyn Fn(usize) -> [Moments; 3]| -> Vec<Moments> {
        (0..players)
            .map(|i| {
                let mut all = Moments::default();
                for m in f(i) {
                    all.merge(&m);
                }
                all
            })
            .collect()
    };
    client_messages[3] = Summary::new(
        &merged(&|i| received(i)),
        records.iter().map(|r| r.sent.iter().sum::<u64>()).sum(),
    );
    server_messages[3] = Summary::new(
        &merged(&|i| records[i].down),
        server.answers_sent.iter().sum::<u64>() + server.forwards_sent.iter().sum::<u64>(),
    );
    end_to_end[3] = Summary::new(
        &merged(&|i| records[i].end_to_end),
        server.forwards_sent.iter().sum(),
    );
    RunResult {
        strategy,
        clients: players as u16,
        seed: trace.params.seed,
        trace_messages: trace.messages(),
        trace_seconds: trace.params.duration_s,
        gsi_client: client_messages[3].gsi(),
        gsi_server: server_messages[3].gsi(),
        client_messages,
        server_messages,
        end_to_end,
        max_send_lateness_ms: records.iter().map(|r| r.max_lateness_us).max().unwrap_or(0) as f64
            / 1e3,
        malformed: records.iter().map(|r| r.malformed).sum::<u64>() + server.malformed,
        setup_seconds,
    }
}

/// Switches the link emulator between its setup and measured links.
pub fn signal_emulator(pid: Option<u32>, signal: &str) -> anyhow::Result<()> {
    let Some(pid) = pid else {
        return Ok(());
    };
    let status = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .context("running kill")?;
    anyhow::ensure!(
        status.success(),
        "cannot signal the link emulator (pid {pid}): is it running?"
    );
    Ok(())
}

/// Checks a strategy can run with the options given.
pub fn check(options: &RunOptions) -> anyhow::Result<()> {
    crate::connect::tuning(&options.quic_tuning)?;
    if options.strategy.uses_quic() && options.quic.is_none() {
        bail!(
            "strategy {} runs over QUIC: pass --quic HOST:PORT (the server's QUIC listener) and \
             --quic-fingerprint",
            options.strategy
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use metafi_testkit::TestNode;

    use super::*;
    use crate::trace::TraceParams;

    /// A MetaFi node in this process (SQLite in `dir`, ports 0, from the test kit), its QUIC
    /// address and certificate fingerprint.
    async fn server(dir: &std::path::Path) -> (TestNode, SocketAddr, String) {
        let node = TestNode::start_in(dir, |_| {}).await;
        let quic = node.quic.unwrap();
        let path = dir.join("data/quic/fingerprint.txt");
        let mut fingerprint = String::new();
        for _ in 0..200 {
            if let Ok(text) = std::fs::read_to_string(&path) {
                fingerprint = text.trim().to_owned();
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        assert_eq!(fingerprint.len(), 64, "the server wrote its fingerprint");
        (node, quic, fingerprint)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_message_is_measured_over_websocket_and_quic() {
        let dir = tempfile::tempdir().unwrap();
        let (node, quic, fingerprint) = server(dir.path()).await;
        let base = node.base.clone();
        let trace = Trace::generate(&TraceParams {
            clients: 6,
            duration_s: 3.0,
            seed: 4,
            rate: 3.0,
            burst: 3.0,
            burst_rate: 8.0,
            world: 200.0,
            aoi: 150.0,
            mix: [0.84, 0.12, 0.04],
        })
        .unwrap();
        let path = dir.path().join("trace.json");
        trace.write(&path).unwrap();
        for strategy in [Strategy::Tcp, Strategy::M, Strategy::Best] {
            let options = RunOptions {
                trace: path.clone(),
                strategy,
                server: base.clone(),
                server_key: "defaultkey".into(),
                quic: Some(quic),
                quic_fingerprint: Some(fingerprint.clone()),
                quic_tuning: vec![("redundancy_copies".into(), "1".into())],
                first_source: None,
                tick_rate: 128,
                drain: Duration::from_millis(500),
                setup_concurrency: 8,
                settle_timeout: Duration::from_secs(10),
                timeout: Duration::from_secs(10),
                device_prefix: format!("test-{strategy}"),
                emulator_pid: None,
            };
            check(&options).unwrap();
            let result = run(&options).await.unwrap();
            let client = result.client_messages[3];
            assert_eq!(client.sent, trace.messages() as u64, "{strategy}");
            assert_eq!(
                client.received, client.sent,
                "{strategy}: nothing is lost on loopback"
            );
            assert!(
                client.delay_ms > 0.0 && client.delay_ms < 500.0,
                "{strategy}: {client:?}"
            );
            let server = result.server_messages[3];
            // An answer per message, plus forwards to the players near the mover.
            assert!(server.sent > client.sent, "{strategy}: {server:?}");
            assert_eq!(server.received, server.sent, "{strategy}: {server:?}");
            assert!(
                result.end_to_end[0].received > 0,
                "{strategy}: moves were forwarded"
            );
            assert_eq!(result.malformed, 0);
            assert!(result.gsi_client > 0.0 && result.gsi_client <= 1.0);
        }
        node.stop().await;
    }
}
