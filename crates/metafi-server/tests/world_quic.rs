//! A served world over QUIC (docs/WORLD.md, "Serving the world"): a client joins with
//! `match_join` over QUIC, sends its commands as unreliable-latest messages carrying its
//! acknowledgements, receives its snapshots as datagrams (the unreliable-latest path), decodes
//! each against the tick it acknowledged and sees itself move; the world's counters show the
//! acknowledgements arriving (every client acknowledged, a small acknowledgement age) and the
//! QUIC path counters show the snapshots went as datagrams. With `world.presence_events` off
//! the join answer lists nobody else and no presence event reaches the other player.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

#[allow(dead_code)] // the WebSocket helper is for other tests
mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use metafi_client::{DeliveryClass, Events};
use metafi_proto::realtime::Message;
use metafi_testkit::{Http, TestNode};
use metafi_world::delta;
use metafi_world::snapshot::Snapshot;
use metafi_world::{UserCmd, Weapon};
use metafi_world_server::codec::{self, CommandMsg};
use support::quic::quic_socket;

const WAIT: Duration = Duration::from_secs(15);

/// `name{…}` summed over the series whose labels include every `labels` pair.
async fn counter(server: &TestNode, name: &str, labels: &[(&str, &str)]) -> f64 {
    let url = format!(
        "{}/metrics",
        server.metrics.clone().expect("metrics are on")
    );
    let text = reqwest::get(url).await.unwrap().text().await.unwrap();
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn debug_worlds(server: &TestNode) -> serde_json::Value {
    let url = format!(
        "{}/debug/worlds",
        server.metrics.clone().expect("metrics are on")
    );
    reqwest::get(url).await.unwrap().json().await.unwrap()
}

/// A world player over QUIC.
struct Player {
    socket: metafi_client::Socket,
    events: Events,
    match_id: String,
    seq: u32,
    history: BTreeMap<u32, Snapshot>,
    newest: Option<u32>,
    applied: u32,
    presence_events: usize,
}

impl Player {
    async fn command(&mut self, forward: i16) {
        self.seq += 1;
        let msg = CommandMsg {
            seq: self.seq,
            ack: self.newest,
            cmd: UserCmd {
                msec: 50,
                forward,
                weapon: Weapon::MachineGun,
                ..UserCmd::default()
            },
        };
        // The latest command wins: QUIC's unreliable-latest class (a datagram).
        self.socket
            .send_match_data(
                &self.match_id,
                codec::OP_COMMAND,
                Bytes::from(msg.to_vec()),
                DeliveryClass::latest("world-command"),
            )
            .await
            .unwrap();
    }

    /// The next snapshot, decoded against the baseline it names.
    async fn snapshot(&mut self) -> Snapshot {
        let data = tokio::time::timeout(WAIT, async {
            loop {
                let envelope = self.events.next().await.expect("socket open");
                match envelope.message {
                    Some(Message::MatchData(d)) if d.op_code == codec::OP_SNAPSHOT => return d,
                    Some(Message::MatchPresenceEvent(_)) => self.presence_events += 1,
                    _ => {}
                }
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no snapshot within {WAIT:?}"));
        assert_eq!(data.match_id, self.match_id);
        let (applied, packet) = codec::split_snapshot(&data.data).unwrap();
        self.applied = self.applied.max(applied);
        let base = delta::baseline_tick(packet).unwrap().map(|t| {
            self.history
                .get(&t)
                .unwrap_or_else(|| panic!("a snapshot against tick {t}, never acknowledged"))
        });
        let snap = delta::decode(base, packet).unwrap();
        self.history.insert(snap.tick, snap.clone());
        while self.history.len() > 16 {
            self.history.pop_first();
        }
        self.newest = Some(self.newest.map_or(snap.tick, |n| n.max(snap.tick)));
        snap
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quic_player_acknowledges_datagram_snapshots_and_moves() {
    let dir = tempfile::tempdir().unwrap();
    let server = TestNode::start_in(dir.path(), |raw| {
        raw.world.enabled = true;
        raw.world.threads = 1;
        raw.world.max_players = 4;
    })
    .await;
    let worlds = debug_worlds(&server).await;
    let match_id = worlds["worlds"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .expect("the world from [world]")
        .clone();

    let http = Http::new(&server.base);
    let (first_token, _) = http.new_session().await;
    let (second_token, _) = http.new_session().await;
    let (socket, events) = quic_socket(&server, &first_token).await;
    let answer = socket.match_join(&match_id).await.unwrap();
    assert_eq!(answer.match_id, match_id);
    let mut one = Player {
        socket,
        events,
        match_id: match_id.clone(),
        seq: 0,
        history: BTreeMap::new(),
        newest: None,
        applied: 0,
        presence_events: 0,
    };
    let datagrams_before = counter(
        &server,
        "metafi_quic_messages_received_total",
        &[("side", "client"), ("class", "unreliable_latest")],
    )
    .await;

    // A second player joins: with presence events off (the default) its answer lists nobody,
    // and the first player hears nothing of it.
    let (second, mut second_events) = quic_socket(&server, &second_token).await;
    let joined = second.match_join(&match_id).await.unwrap();
    assert!(
        joined.presences.is_empty(),
        "a world's join answer lists no members: {:?}",
        joined.presences
    );
    let own_event = tokio::time::timeout(WAIT, async {
        loop {
            let envelope = second_events.next().await.expect("socket open");
            if let Some(Message::MatchPresenceEvent(e)) = envelope.message {
                return e;
            }
        }
    })
    .await
    .expect("the joiner's own join is acknowledged");
    assert_eq!(own_event.joins.len(), 1);
    assert!(own_event.leaves.is_empty());
    // The second player never commands; its snapshots are read and dropped.
    tokio::spawn(async move { while second_events.next().await.is_some() {} });

    let start = one.snapshot().await.view.origin;
    for _ in 0..40 {
        one.command(320).await;
        one.snapshot().await;
    }
    let end = one.snapshot().await.view.origin;
    assert!(one.applied > 0, "no command was applied");
    let dx = f64::from(end[0] - start[0]);
    let dy = f64::from(end[1] - start[1]);
    assert!(
        (dx * dx + dy * dy).sqrt() / 8.0 > 16.0,
        "did not move: {start:?} -> {end:?}"
    );
    // Only its own join reached the first player (the second's was not told to it).
    assert_eq!(
        one.presence_events, 1,
        "presence events to the first player"
    );

    // Snapshots went through the QUIC datagram path (the unreliable-latest class; the
    // messages themselves name no class: that would cost bytes in every snapshot).
    let datagrams = counter(
        &server,
        "metafi_quic_messages_received_total",
        &[("side", "client"), ("class", "unreliable_latest")],
    )
    .await
        - datagrams_before;
    assert!(
        datagrams >= 20.0,
        "snapshots received as datagrams: {datagrams}"
    );

    // The server's acknowledgement counters: keep acknowledging while the second player (who
    // never sends a command) stays unacknowledged; the first is counted with a small age.
    let mut stats = serde_json::Value::Null;
    for _ in 0..40 {
        one.command(0).await;
        one.snapshot().await;
        stats = debug_worlds(&server).await["worlds"][&match_id].clone();
        if stats["players"] == 2
            && stats["last_unacked_clients"] == 1
            && stats["last_ack_age_max_ticks"]
                .as_u64()
                .is_some_and(|a| a <= 8)
        {
            break;
        }
    }
    assert_eq!(stats["players"], 2, "{stats}");
    assert_eq!(
        stats["last_unacked_clients"], 1,
        "only the silent player is unacknowledged: {stats}"
    );
    let age = stats["last_ack_age_max_ticks"].as_u64().unwrap();
    // The acknowledged baseline is among the history the server keeps (8 ticks), so snapshots
    // are deltas, not full ones.
    assert!(age <= 8, "acknowledgement age {age} ticks: {stats}");
    assert!(stats["commands"].as_u64().unwrap() > 0, "{stats}");
    assert_eq!(stats["bad_commands"], 0, "{stats}");
    drop(second);
    server.stop().await;
}
