//! One order per sender across nodes, against a real nats-server (`METAFI_TEST_NATS_URL`;
//! skipped without it unless `METAFI_REQUIRE_NATS=1`): a member on node b hears what happens on
//! node a — presence joins and leaves (announcements) and messages (deliveries) — in exactly
//! the order a made them, even when a burst of them leaves a in one wake-up of its publisher
//! (where a batches what it queued). And a delivery is encoded once: the receiving node takes
//! the sender's bytes as they are.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use metafi_cluster::{Cluster, ClusterConfig};
use metafi_core::{Channels, NoGroups, NoRpcs, SystemClock};
use metafi_proto::realtime::{Envelope, Format, Message, StreamData};
use metafi_realtime::{
    LocalStatusRegistry, Next, Outbound, Presence, PresenceMeta, Realtime, RealtimeConfig,
    RealtimeParts, RealtimeServices, Session, SessionParams, SessionRegistry, StreamKey,
    StreamMode,
};
use metafi_storage::Storage;
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use tokio::time::Instant;
use uuid::Uuid;

mod support;
use support::nats_url;

/// A clustered node with sockets (a `Realtime` over the cluster's parts).
struct Node {
    _dir: tempfile::TempDir,
    cluster: Cluster,
    realtime: Realtime,
}

async fn node(url: &str, prefix: &str, name: &str) -> Node {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Storage> = Arc::new(
        SqliteStorage::open(SqliteConfig {
            path: dir.path().join("metafi.db"),
            readers: 1,
            ..SqliteConfig::default()
        })
        .unwrap(),
    );
    let clock = Arc::new(SystemClock);
    let registry = Arc::new(SessionRegistry::new());
    let cluster = Cluster::start(
        ClusterConfig {
            subject_prefix: prefix.to_owned(),
            heartbeat_interval: Duration::from_millis(100),
            ..ClusterConfig::new(url, name)
        },
        registry.clone(),
        true,
        clock.clone(),
    )
    .await
    .unwrap();
    let parts = RealtimeParts {
        registry,
        tracker: cluster.tracker(),
        status: Arc::new(LocalStatusRegistry::new()),
        router: cluster.router(),
        remote: cluster.remote_sessions(),
    };
    cluster.set_parts(&parts);
    let realtime = Realtime::with_parts(
        RealtimeConfig::default(),
        RealtimeServices {
            channels: Arc::new(Channels::new(
                store.clone(),
                Arc::new(NoGroups),
                clock.clone(),
            )),
            store,
            rpc: Arc::new(NoRpcs),
            clock,
        },
        parts,
    );
    Node {
        _dir: dir,
        cluster,
        realtime,
    }
}

/// Two nodes of one new cluster (a subject prefix of their own) that see each other.
async fn two_nodes(url: &str) -> (Node, Node) {
    let prefix = format!("test{}", Uuid::new_v4().simple());
    let a = node(url, &prefix, "a").await;
    let b = node(url, &prefix, "b").await;
    eventually("a and b see each other", || {
        a.cluster.peers() == ["b"] && b.cluster.peers() == ["a"]
    })
    .await;
    (a, b)
}

/// A JSON session named "member" on `node`.
fn member_session(node: &Node) -> Arc<Session> {
    node.realtime.open(SessionParams {
        user_id: Uuid::new_v4(),
        username: "member".into(),
        vars: HashMap::new(),
        expires_at: i64::MAX,
        client_addr: None,
        lang: None,
        format: Format::Json,
        appear_online: false,
    })
}

async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let within = Duration::from_secs(5);
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "not within {within:?}: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn arena() -> StreamKey {
    StreamKey {
        mode: StreamMode::from_number(123),
        subject: Uuid::nil(),
        subcontext: Uuid::nil(),
        label: "arena".into(),
    }
}

fn presence(session_id: Uuid, username: &str) -> Presence {
    Presence {
        session_id,
        user_id: Uuid::new_v4(),
        meta: PresenceMeta {
            username: username.into(),
            persistence: false,
            hidden: false,
            status: None,
        },
    }
}

fn data(text: &str) -> Outbound {
    Outbound::new(Envelope::new(
        "",
        Message::StreamData(StreamData {
            stream: Some(arena().to_wire()),
            sender: None,
            data: text.into(),
            reliable: true,
        }),
    ))
}

/// What `session` received, as "join NAME", "leave NAME" and the messages' texts.
fn heard(session: &Session, names: &HashMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(Next::Frame(frame)) = session.outbox().try_next() {
        match session.format().decode(&frame).unwrap().message {
            Some(Message::StreamPresenceEvent(event)) => {
                for (what, presences) in [("join", &event.joins), ("leave", &event.leaves)] {
                    for p in presences {
                        out.push(format!("{what} {}", names[&p.session_id]));
                    }
                }
            }
            Some(Message::StreamData(d)) => out.push(d.data),
            other => panic!("unexpected {other:?}"),
        }
    }
    out
}

/// The burst case of "in order per sender": on a, three players each join, send a message and
/// leave, all queued before a's publisher wakes (this test's runtime has one thread and the
/// burst has no await). a batches what it queued; a member on b must still hear each message
/// between its sender's join and leave. (Before, announcements and deliveries went on two
/// subjects, each batched apart: b got every join and leave first, then the messages.)
#[tokio::test]
async fn a_burst_of_joins_messages_and_leaves_reaches_another_node_in_the_order_it_was_made() {
    let Some(url) = nats_url() else { return };
    let (a, b) = two_nodes(&url).await;

    // The member on b, in the stream; a knows its session and presence.
    let member = member_session(&b);
    b.cluster
        .tracker()
        .track(&arena(), presence(member.id(), "member"))
        .unwrap();
    eventually("a knows the member", || a.cluster.remote_presences() == 1).await;
    let mut names = HashMap::new();
    names.insert(member.id().to_string(), "member".to_owned());
    heard(&member, &names);

    let players: Vec<Uuid> = (0..3).map(|_| Uuid::new_v4()).collect();
    for (i, id) in players.iter().enumerate() {
        names.insert(id.to_string(), format!("p{i}"));
    }
    let (tracker, router) = (a.cluster.tracker(), a.cluster.router());
    for (i, id) in players.iter().enumerate() {
        tracker
            .track(&arena(), presence(*id, &format!("p{i}")))
            .unwrap();
        assert_eq!(
            router.send_to_sessions(&[member.id()], &data(&format!("from p{i}"))),
            1
        );
        tracker.untrack(*id, &arena()).unwrap();
    }

    let mut got = Vec::new();
    eventually("the member heard the burst", || {
        got.extend(heard(&member, &names));
        got.len() >= 9
    })
    .await;
    let expected: Vec<String> = (0..3)
        .flat_map(|i| {
            [
                format!("join p{i}"),
                format!("from p{i}"),
                format!("leave p{i}"),
            ]
        })
        .collect();
    assert_eq!(got, expected);
    a.cluster.stop().await;
    b.cluster.stop().await;
}

/// A delivery that a's own JSON sessions made JSON of reaches b's JSON session as those very
/// bytes (b decodes the protobuf once and encodes nothing); one that a never made JSON of is
/// encoded on b. The JSON given to a here is pretty-printed, which no node's encoder writes,
/// so the bytes b's session gets show who encoded them.
#[tokio::test]
async fn a_delivery_reaches_another_node_as_the_sending_node_encoded_it() {
    let Some(url) = nats_url() else { return };
    let (a, b) = two_nodes(&url).await;
    let member = member_session(&b);
    eventually("a knows the member's session", || {
        a.cluster.directory().node_of(member.id()).is_some()
    })
    .await;

    let encoded_on_a = data("encoded on a");
    let compact = encoded_on_a.bytes(Format::Json);
    let value: serde_json::Value = serde_json::from_slice(&compact).unwrap();
    let pretty = bytes::Bytes::from(serde_json::to_vec_pretty(&value).unwrap());
    assert_ne!(pretty, compact);
    let sent = Outbound::received(
        encoded_on_a.envelope().clone(),
        encoded_on_a.class().clone(),
        encoded_on_a.bytes(Format::Protobuf),
        Some(pretty.clone()),
    );
    let not_encoded = data("not encoded on a");
    assert!(!not_encoded.is_encoded(Format::Json));
    let router = a.cluster.router();
    assert_eq!(router.send_to_sessions(&[member.id()], &sent), 1);
    assert_eq!(router.send_to_sessions(&[member.id()], &not_encoded), 1);

    let mut frames = Vec::new();
    eventually("the member got both", || {
        while let Some(Next::Frame(frame)) = member.outbox().try_next() {
            frames.push(frame);
        }
        frames.len() >= 2
    })
    .await;
    assert_eq!(frames[0], pretty, "b encoded again what a had encoded");
    assert_eq!(frames[1], not_encoded.bytes(Format::Json));
    a.cluster.stop().await;
    b.cluster.stop().await;
}
