//! A served world (docs/WORLD.md, "Serving the world") over real sockets: created from the
//! `[world]` configuration, listed as a match, joined by two clients (one JSON, one protobuf)
//! that send moves with acknowledgements, decode their delta snapshots against the ticks they
//! acknowledged and see themselves move; a leave removes the player; `nk.world_create` makes
//! another world.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use metafi_proto::realtime::{
    Envelope, MatchDataSend, MatchJoin, MatchJoinId, MatchLeave, Message,
};
use metafi_testkit::{Socket, TestNode, user};
use metafi_world::delta;
use metafi_world::snapshot::Snapshot;
use metafi_world::{UserCmd, Weapon};
use metafi_world_server::codec::{self, CommandMsg};

/// A world client: decodes snapshots against the ticks it acknowledged.
struct Client {
    socket: Socket,
    match_id: String,
    seq: u32,
    /// Decoded snapshots by tick (the last few).
    history: BTreeMap<u32, Snapshot>,
    newest: Option<u32>,
    applied: u32,
}

impl Client {
    async fn join(socket: Socket, match_id: &str) -> Client {
        let mut socket = socket;
        let answer = socket
            .request(Message::MatchJoin(MatchJoin {
                id: Some(MatchJoinId::MatchId(match_id.into())),
                metadata: HashMap::new(),
            }))
            .await;
        match answer.message {
            Some(Message::Match(m)) => assert_eq!(m.match_id, match_id),
            other => panic!("join failed: {other:?}"),
        }
        Client {
            socket,
            match_id: match_id.into(),
            seq: 0,
            history: BTreeMap::new(),
            newest: None,
            applied: 0,
        }
    }

    async fn send_command(&mut self, forward: i16) {
        self.seq += 1;
        let msg = CommandMsg {
            seq: self.seq,
            ack: self.newest,
            cmd: UserCmd {
                msec: 50,
                yaw: 0,
                forward,
                weapon: Weapon::MachineGun,
                ..UserCmd::default()
            },
        };
        self.socket
            .send(&Envelope::new(
                "",
                Message::MatchDataSend(MatchDataSend {
                    match_id: self.match_id.clone(),
                    op_code: codec::OP_COMMAND,
                    data: Bytes::from(msg.to_vec()),
                    presences: vec![],
                    reliable: true,
                    delivery: None,
                }),
            ))
            .await;
    }

    /// The next snapshot, decoded against the baseline it names.
    async fn snapshot(&mut self) -> Snapshot {
        let envelope = self
            .socket
            .event(|e| {
                matches!(&e.message, Some(Message::MatchData(d)) if d.op_code == codec::OP_SNAPSHOT)
            })
            .await;
        let Some(Message::MatchData(data)) = envelope.message else {
            unreachable!()
        };
        assert_eq!(data.match_id, self.match_id);
        let (applied, packet) = codec::split_snapshot(&data.data).unwrap();
        assert!(applied >= self.applied, "applied sequence went back");
        self.applied = applied;
        let base = delta::baseline_tick(packet).unwrap();
        let base = base.map(|t| {
            self.history.get(&t).unwrap_or_else(|| {
                panic!("snapshot against tick {t}, which was never acknowledged")
            })
        });
        let snap = delta::decode(base, packet).unwrap();
        self.history.insert(snap.tick, snap.clone());
        while self.history.len() > 16 {
            self.history.pop_first();
        }
        self.newest = Some(snap.tick);
        snap
    }
}

fn world_id(list: &serde_json::Value) -> String {
    let matches = list["matches"].as_array().expect("matches");
    let world = matches
        .iter()
        .find(|m| {
            let label: serde_json::Value =
                serde_json::from_str(m["label"].as_str().unwrap_or("")).unwrap_or_default();
            label["world"] == true
        })
        .unwrap_or_else(|| panic!("no world listed: {list}"));
    world["match_id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clients_join_move_and_see_themselves_in_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let node = TestNode::start_in(dir.path(), |raw| {
        raw.world.enabled = true;
        raw.world.threads = 1;
        raw.world.max_players = 2;
    })
    .await;
    let http = node.http();
    let (a, b, c) = (user(&http).await, user(&http).await, user(&http).await);
    let list = http
        .send(
            http.get("/v2/match?authoritative=true&limit=10")
                .bearer_auth(&a.token),
        )
        .await;
    assert_eq!(list.status, 200, "{:?}", list.body);
    let id = world_id(&list.body);

    let mut one = Client::join(Socket::connect(&http.base, &a.token, "").await, &id).await;
    let mut two = Client::join(
        Socket::connect(&http.base, &b.token, "format=protobuf").await,
        &id,
    )
    .await;
    // A third player is one too many (max_players = 2).
    let mut third = Socket::connect(&http.base, &c.token, "").await;
    let (_, message) = third
        .request_error(Message::MatchJoin(MatchJoin {
            id: Some(MatchJoinId::MatchId(id.clone())),
            metadata: HashMap::new(),
        }))
        .await;
    assert_eq!(message, "World is full");

    // Each client: one command per snapshot, acknowledging the newest it decoded.
    let mut starts = Vec::new();
    for client in [&mut one, &mut two] {
        let first = client.snapshot().await;
        starts.push(first.view.origin);
    }
    let mut last = Vec::new();
    let mut deltas = 0;
    for _ in 0..40 {
        one.send_command(320).await;
        two.send_command(320).await;
        for client in [&mut one, &mut two] {
            let before = client.newest;
            let snap = client.snapshot().await;
            // Encoded against an acknowledged tick once acknowledgements flow.
            if before.is_some() && snap.tick > before.unwrap_or(0) {
                deltas += 1;
            }
        }
    }
    for client in [&mut one, &mut two] {
        let snap = client.snapshot().await;
        assert!(client.applied > 0, "no command was applied");
        last.push(snap.view.origin);
    }
    assert!(deltas > 0);
    for (start, end) in starts.iter().zip(&last) {
        let dx = (end[0] - start[0]) as f64;
        let dy = (end[1] - start[1]) as f64;
        // Quantized units (1/8): a player running at up to 320 u/s for ~2 s moves hundreds
        // of units unless a wall stops it at once; at least 16 units either way.
        assert!(
            (dx * dx + dy * dy).sqrt() / 8.0 > 16.0,
            "did not move: {start:?} -> {end:?}"
        );
    }

    // The world's counters: two players, acknowledgements used, nothing dropped.
    let stats: serde_json::Value =
        serde_json::from_str(&node.nk().match_signal(&id, "stats".into()).await.unwrap()).unwrap();
    assert_eq!(stats["players"], 2, "{stats}");
    assert!(stats["commands"].as_u64().unwrap() > 0, "{stats}");
    assert_eq!(stats["bad_commands"], 0, "{stats}");

    // A leave removes the player (on the world thread, between ticks).
    two.socket
        .send(&Envelope::new(
            "",
            Message::MatchLeave(MatchLeave {
                match_id: id.clone(),
            }),
        ))
        .await;
    let mut players = 2;
    for _ in 0..100 {
        let _ = one.snapshot().await;
        one.send_command(0).await;
        let stats: serde_json::Value =
            serde_json::from_str(&node.nk().match_signal(&id, "stats".into()).await.unwrap())
                .unwrap();
        players = stats["players"].as_u64().unwrap();
        if players == 1 {
            break;
        }
    }
    assert_eq!(players, 1);

    // Server code creates another world.
    let other = node
        .nk()
        .world_create(
            "arena",
            serde_json::json!({ "tick_rate": 10 })
                .as_object()
                .unwrap()
                .clone(),
        )
        .await
        .unwrap();
    assert_ne!(other, id);
    let info = node.nk().match_get(&other).await.unwrap().unwrap();
    let label = info.label.unwrap_or_default();
    assert!(label.contains("\"world\":true"), "{label}");
    assert_eq!(info.tick_rate, Some(10));
    let bad = node
        .nk()
        .world_create(
            "arena",
            serde_json::json!({ "colour": 1 })
                .as_object()
                .unwrap()
                .clone(),
        )
        .await;
    assert!(bad.is_err());
    node.stop().await;
}
