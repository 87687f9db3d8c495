//! Two nodes in one process, one PostgreSQL (`METAFI_TEST_POSTGRES_URL`) and one NATS
//! (`METAFI_TEST_NATS_URL`): they see each other, a user's newer socket on one node closes the
//! older one on the other (single socket), a notification reaches a socket on the other node
//! (direct delivery), a chat room's members on two nodes see each other join, talk and leave,
//! and a node that leaves takes its sessions and presences out of the other's books.
//! Without both variables the tests skip, unless `METAFI_REQUIRE_NATS=1` /
//! `METAFI_REQUIRE_POSTGRES=1` (as in `scripts/test.sh`).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::time::Duration;

use metafi_proto::realtime::{ChannelJoin, ChannelMessageSend, Envelope, Message, Ping};
use metafi_proto::wkt::bool_value;
use metafi_testkit::cluster::{ClusterSpec, Pair, TestCluster, eventually, peers};
use metafi_testkit::{Http, Socket, TestNode, user};

fn remote_sessions(node: &TestNode) -> usize {
    node.node().cluster().unwrap().directory().len()
}

fn remote_presences(node: &TestNode) -> usize {
    node.node().cluster().unwrap().remote_presences()
}

async fn join_room(socket: &mut Socket, room: &str) -> metafi_proto::realtime::Channel {
    let answer = socket
        .request(Message::ChannelJoin(ChannelJoin {
            target: room.into(),
            r#type: 1,
            persistence: bool_value(false),
            hidden: None,
        }))
        .await;
    match answer.message {
        Some(Message::Channel(channel)) => channel,
        other => panic!("expected a channel, got {other:?}"),
    }
}

/// `from` sends `text` to the channel; `to` receives it.
async fn talk(from: &mut Socket, to: &mut Socket, channel_id: &str, text: &str) {
    let ack = from
        .request(Message::ChannelMessageSend(ChannelMessageSend {
            channel_id: channel_id.into(),
            content: text.into(),
        }))
        .await;
    assert!(
        matches!(ack.message, Some(Message::ChannelMessageAck(_))),
        "{ack:?}"
    );
    // (Each member gets it, the sender too, as with Nakama.)
    let got = to
        .event(|e| matches!(&e.message, Some(Message::ChannelMessage(m)) if m.content == text))
        .await;
    let Some(Message::ChannelMessage(message)) = got.message else {
        unreachable!()
    };
    assert_eq!(message.channel_id, channel_id);
}

fn presence_event(e: &Envelope, joins: usize, leaves: usize) -> bool {
    matches!(&e.message, Some(Message::ChannelPresenceEvent(ev))
        if ev.joins.len() == joins && ev.leaves.len() == leaves)
}

async fn pair() -> Option<Pair> {
    let spec = ClusterSpec::new().config(|_, raw| raw.session.single_socket = true);
    spec.start(2).await.map(TestCluster::pair)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_socket_on_another_node_closes_the_older_one() {
    let Some(Pair { n1, n2, _dirs }) = pair().await else {
        return;
    };
    let alice = user(&Http::new(&n1.base)).await;
    let mut first = Socket::connect(&n1.base, &alice.token, "").await;
    first.request(Message::Ping(Ping {})).await;

    // The same user opens a socket on the other node: the first is told and closed, as on
    // one node.
    let mut second = Socket::connect(&n2.base, &alice.token, "format=protobuf").await;
    let frame = first.closed(Duration::from_secs(5)).await.unwrap();
    assert_eq!(u16::from(frame.code), 1000);
    assert!(
        frame.reason.contains("server-side session disconnect"),
        "{frame:?}"
    );
    assert!(
        first.backlog().iter().any(|e| matches!(&e.message,
            Some(Message::Notifications(n)) if n.notifications[0].code == -7)),
        "{:?}",
        first.backlog()
    );
    second.request(Message::Ping(Ping {})).await;

    // And back: a third socket on the first node closes the second.
    let mut third = Socket::connect(&n1.base, &alice.token, "").await;
    second.closed(Duration::from_secs(5)).await.unwrap();
    third.request(Message::Ping(Ping {})).await;
    eventually("each node knows the one socket left", || {
        remote_sessions(&n2) == 1 && remote_sessions(&n1) == 0
    })
    .await;
    n2.stop().await;
    n1.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_reaches_a_socket_on_the_other_node() {
    let Some(Pair { n1, n2, _dirs }) = pair().await else {
        return;
    };
    let (http1, http2) = (Http::new(&n1.base), Http::new(&n2.base));
    let alice = user(&http1).await;
    let bob = user(&http2).await;
    let mut bob_socket = Socket::connect(&n2.base, &bob.token, "").await;
    bob_socket.request(Message::Ping(Ping {})).await;
    eventually("node 1 knows bob's socket on node 2", || {
        remote_sessions(&n1) == 1
    })
    .await;

    // Alice, on node 1, asks bob to be friends: Nakama notifies bob (code -2), and his socket
    // is on node 2.
    let added = http1
        .send(
            http1
                .post(&format!("/v2/friend?ids={}", bob.id))
                .bearer_auth(&alice.token),
        )
        .await;
    assert_eq!(added.status, 200, "{:?}", added.body);
    let event = bob_socket
        .event(|e| matches!(&e.message, Some(Message::Notifications(_))))
        .await;
    let Some(Message::Notifications(n)) = event.message else {
        unreachable!()
    };
    assert_eq!(n.notifications.len(), 1, "{n:?}");
    assert_eq!(n.notifications[0].code, -2, "{n:?}");
    assert_eq!(n.notifications[0].sender_id, alice.id);

    // Node 2 leaves: node 1 forgets it and its sessions at once.
    n2.stop().await;
    eventually("node 1 forgot node 2 and bob's socket", || {
        peers(&n1).is_empty() && remote_sessions(&n1) == 0
    })
    .await;
    n1.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_room_spans_the_nodes() {
    let Some(Pair { n1, n2, _dirs }) = pair().await else {
        return;
    };
    let alice = user(&Http::new(&n1.base)).await;
    let bob = user(&Http::new(&n2.base)).await;
    let mut bob_socket = Socket::connect(&n2.base, &bob.token, "").await;
    join_room(&mut bob_socket, "lobby").await;
    eventually("node 1 knows bob is in the room", || {
        remote_presences(&n1) == 1
    })
    .await;

    // Alice joins on node 1: she sees bob (on node 2) among the members, bob sees her join.
    let mut alice_socket = Socket::connect(&n1.base, &alice.token, "format=protobuf").await;
    let channel = join_room(&mut alice_socket, "lobby").await;
    // As Nakama: the others in `presences`, the joiner in `self_presence`.
    let members: Vec<&str> = channel
        .presences
        .iter()
        .map(|p| p.user_id.as_str())
        .collect();
    assert_eq!(members, [bob.id.as_str()], "{channel:?}");
    assert_eq!(
        channel.self_presence.as_ref().map(|p| p.user_id.as_str()),
        Some(alice.id.as_str())
    );
    let joined = bob_socket
        .event(|e| {
            matches!(&e.message, Some(Message::ChannelPresenceEvent(ev))
                if ev.joins.iter().any(|p| p.user_id == alice.id))
        })
        .await;
    let Some(Message::ChannelPresenceEvent(event)) = joined.message else {
        unreachable!()
    };
    assert_eq!(event.channel_id, channel.id);

    // A message from each side reaches the other.
    eventually("node 2 knows alice is in the room", || {
        remote_presences(&n2) == 1
    })
    .await;
    talk(
        &mut alice_socket,
        &mut bob_socket,
        &channel.id,
        r#"{"from":"alice"}"#,
    )
    .await;
    talk(
        &mut bob_socket,
        &mut alice_socket,
        &channel.id,
        r#"{"from":"bob"}"#,
    )
    .await;

    // Node 2 leaves: bob's socket closes, alice sees him leave, node 1 forgets his presence.
    n2.stop().await;
    let left = alice_socket.event(|e| presence_event(e, 0, 1)).await;
    let Some(Message::ChannelPresenceEvent(event)) = left.message else {
        unreachable!()
    };
    assert_eq!(event.leaves[0].user_id, bob.id);
    eventually("node 1 forgot bob's presence", || {
        remote_presences(&n1) == 0
    })
    .await;
    n1.stop().await;
}

#[tokio::test]
async fn a_cluster_on_sqlite_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let error = TestNode::try_start_in(dir.path(), |raw| {
        raw.cluster.url = "nats://127.0.0.1:4222".into();
    })
    .await
    .err()
    .expect("refused");
    assert!(
        format!("{error:#}").contains("cluster.url: a cluster needs PostgreSQL"),
        "{error:#}"
    );
}
