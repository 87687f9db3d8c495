//! Server code on one node acting on sessions of another (two nodes in one process, one
//! PostgreSQL `METAFI_TEST_POSTGRES_URL`, one NATS `METAFI_TEST_NATS_URL`): alice's RPCs run
//! on node 1, bob's socket sits on node 2. `nk.session_disconnect` (with a reason), a ban
//! (`nk.users_ban_id`) and an account deletion (`DELETE /v2/account` made on node 1) close
//! his socket as on one node; `nk.stream_user_join`, `stream_user_update`,
//! `stream_user_leave`, `stream_user_kick` and `stream_close` act on his presence;
//! `nk.notification_send_all` reaches his socket. Without both variables the tests skip,
//! unless `METAFI_REQUIRE_NATS=1` / `METAFI_REQUIRE_POSTGRES=1` (as in `scripts/test.sh`).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::HashMap;
use std::time::Duration;

use metafi_proto::realtime::{
    ChannelJoin, ChannelMessageSend, Envelope, Match, MatchJoin, MatchJoinId, Message, Ping,
};
use metafi_proto::wkt::bool_value;
use metafi_testkit::cluster::{ClusterSpec, Pair, TestCluster, eventually};
use metafi_testkit::{Http, Socket, TestNode, User, user};
use tokio::time::Instant;

/// A match that tells its players each leave's reason (op 7, the reason's number).
const LMATCH: &str = r#"
return {
  match_init = function(context, params) return {}, 10, "" end,
  match_join_attempt = function(context, d, tick, state, presence, metadata) return state, true end,
  match_join = function(context, d, tick, state, presences) return state end,
  match_leave = function(context, d, tick, state, presences)
    for _, p in ipairs(presences) do d.broadcast_message(7, tostring(p.reason)) end
    return state
  end,
  match_loop = function(context, d, tick, state, messages) return state end,
  match_terminate = function(context, d, tick, state, grace) return state end,
  match_signal = function(context, d, tick, state, data) return state, data end,
}
"#;

/// RPCs taking "user_id,session_id" (or one id) as payload.
const RPCS: &str = r#"
local nk = require("nakama")
local stream = { mode = 120, label = "control" }
local function two(payload) return payload:match("([^,]*),([^,]*)") end
nk.register_rpc(function(context, payload) return context.session_id end, "me")
nk.register_rpc(function(context, payload) return nk.match_create("lmatch", {}) end, "create")
nk.register_rpc(function(context, payload)
  local sid, reason = two(payload)
  nk.session_disconnect(sid, tonumber(reason))
  return ""
end, "disconnect")
nk.register_rpc(function(context, payload) nk.users_ban_id({ payload }) return "" end, "ban")
nk.register_rpc(function(context, payload)
  local uid, sid = two(payload)
  return tostring(nk.stream_user_join(uid, sid, stream, false, false, "in"))
end, "join")
nk.register_rpc(function(context, payload)
  local uid, sid = two(payload)
  nk.stream_user_leave(uid, sid, stream)
  return tostring(nk.stream_user_join(uid, sid, stream, false, false, "again"))
end, "rejoin")
nk.register_rpc(function(context, payload)
  local uid, sid = two(payload)
  nk.stream_user_update(uid, sid, stream, false, false, "updated")
  return ""
end, "update")
nk.register_rpc(function(context, payload)
  local uid, sid = two(payload)
  nk.session_disconnect(sid)
  nk.stream_user_update(uid, sid, stream, false, false, "late")
  return "updated"
end, "update_closed")
nk.register_rpc(function(context, payload)
  local uid, sid = two(payload)
  nk.stream_user_leave(uid, sid, stream)
  return ""
end, "leave")
nk.register_rpc(function(context, payload)
  local uid, sid = two(payload)
  nk.stream_user_kick({ user_id = uid, session_id = sid, node = "n2" }, stream)
  return ""
end, "kick")
nk.register_rpc(function(context, payload) nk.stream_close(stream) return "" end, "close")
nk.register_rpc(function(context, payload) return tostring(nk.stream_count(stream)) end, "count")
nk.register_rpc(function(context, payload)
  return tostring(nk.stream_count({ mode = 3, subject = payload }))
end, "group_count")
nk.register_rpc(function(context, payload)
  local status = ""
  for _, p in ipairs(nk.stream_user_list(stream)) do
    if p.session_id == payload then status = p.status .. "@" .. p.node end
  end
  return status
end, "status")
nk.register_rpc(function(context, payload)
  nk.notification_send_all("to everyone", { n = 1 }, 101, false)
  return ""
end, "all")
"#;

async fn pair() -> Option<Pair> {
    let spec = ClusterSpec::new()
        .module("lmatch.lua", LMATCH)
        .module("rpcs.lua", RPCS)
        .small();
    spec.start(2).await.map(TestCluster::pair)
}

/// A user with a socket on `node`, and the socket's session id.
async fn player(node: &TestNode) -> (User, Socket, String) {
    let who = user(&Http::new(&node.base)).await;
    let mut socket = Socket::connect(&node.base, &who.token, "").await;
    let session = socket.rpc("me", "").await;
    (who, socket, session)
}

/// Waits until node 1 knows `session` of node 2 (its directory), so a request can find it.
async fn known_on_n1(n1: &TestNode, session: &str) {
    let id = uuid::Uuid::parse_str(session).unwrap();
    eventually("node 1 knows the session of node 2", || {
        n1.node()
            .cluster()
            .unwrap()
            .directory()
            .node_of(id)
            .as_deref()
            == Some("n2")
    })
    .await;
}

async fn join_room(socket: &mut Socket, room: &str) -> String {
    join_channel(socket, room, 1).await
}

/// Joins a channel (type 1 room, 3 group) and returns its id.
async fn join_channel(socket: &mut Socket, target: &str, r#type: i32) -> String {
    let answer = socket
        .request(Message::ChannelJoin(ChannelJoin {
            target: target.into(),
            r#type,
            persistence: bool_value(false),
            hidden: None,
        }))
        .await;
    match answer.message {
        Some(Message::Channel(channel)) => channel.id,
        other => panic!("channel join failed: {other:?}"),
    }
}

/// Sends `content` (a JSON string) to a channel and waits for the acknowledgement.
async fn say(socket: &mut Socket, channel_id: &str, content: &str) {
    let answer = socket
        .request(Message::ChannelMessageSend(ChannelMessageSend {
            channel_id: channel_id.into(),
            content: serde_json::json!({ "text": content }).to_string(),
        }))
        .await;
    assert!(
        matches!(answer.message, Some(Message::ChannelMessageAck(_))),
        "{answer:?}"
    );
}

fn message_with(e: &Envelope, text: &str) -> bool {
    matches!(&e.message, Some(Message::ChannelMessage(m)) if m.content.contains(text))
}

fn channel_join_of(e: &Envelope, who: &User) -> bool {
    matches!(&e.message, Some(Message::ChannelPresenceEvent(ev))
        if ev.joins.iter().any(|p| p.user_id == who.id))
}

fn channel_leave_of(e: &Envelope, who: &User) -> bool {
    matches!(&e.message, Some(Message::ChannelPresenceEvent(ev))
        if ev.leaves.iter().any(|p| p.user_id == who.id))
}

/// A join (or a leave) of `who` alone: an update is a join and a leave in one event.
fn stream_event_of(e: &Envelope, who: &User, join: bool) -> bool {
    matches!(&e.message, Some(Message::StreamPresenceEvent(ev))
    if {
        let (these, others) = if join { (&ev.joins, &ev.leaves) } else { (&ev.leaves, &ev.joins) };
        others.is_empty() && these.iter().any(|p| p.user_id == who.id)
    })
}

/// The client on node 2 sees exactly what a local one sees: the close (1000, "server-side
/// session disconnect"); alice's room on node 1 sees him leave; the match on node 1 he
/// played in sees his leave with the reason server code gave (3, leave; not 4, disconnect).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_disconnect_closes_a_socket_on_another_node_with_its_reason() {
    let Some(Pair { n1, n2, _dirs }) = pair().await else {
        return;
    };
    let (_alice, mut a, _) = player(&n1).await;
    let (bob, mut b, bob_session) = player(&n2).await;
    join_room(&mut a, "control-room").await;
    join_room(&mut b, "control-room").await;
    let match_id = a.rpc("create", "").await;
    for socket in [&mut a, &mut b] {
        let answer = socket
            .request(Message::MatchJoin(MatchJoin {
                id: Some(MatchJoinId::MatchId(match_id.clone())),
                metadata: HashMap::new(),
            }))
            .await;
        assert!(
            matches!(answer.message, Some(Message::Match(Match { .. }))),
            "{answer:?}"
        );
    }
    known_on_n1(&n1, &bob_session).await;

    a.rpc("disconnect", &format!("{bob_session},3")).await;
    let frame = b
        .closed(Duration::from_secs(5))
        .await
        .expect("bob's socket closes");
    assert_eq!(u16::from(frame.code), 1000);
    assert!(
        frame.reason.contains("server-side session disconnect"),
        "{frame:?}"
    );
    a.event(|e| channel_leave_of(e, &bob)).await;
    let reason = a
        .event(|e| matches!(&e.message, Some(Message::MatchData(d)) if d.op_code == 7))
        .await;
    let Some(Message::MatchData(data)) = reason.message else {
        unreachable!()
    };
    assert_eq!(
        data.data.as_ref(),
        b"3",
        "the match sees the reason server code gave"
    );
    eventually("node 1 forgets bob's session", || {
        n1.node().cluster().unwrap().directory().is_empty()
    })
    .await;
    n2.stop().await;
    n1.stop().await;
}

/// A ban made on node 1 closes the banned user's socket on node 2; so does an account deletion
/// asked of node 1 (`DELETE /v2/account`) for a user whose socket is on node 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ban_and_an_account_deletion_close_sockets_on_another_node() {
    let Some(Pair { n1, n2, _dirs }) = pair().await else {
        return;
    };
    let (_alice, mut a, _) = player(&n1).await;
    let (bob, mut b, bob_session) = player(&n2).await;
    let (carol, mut c, carol_session) = player(&n2).await;
    known_on_n1(&n1, &bob_session).await;
    known_on_n1(&n1, &carol_session).await;

    a.rpc("ban", &bob.id).await;
    let frame = b
        .closed(Duration::from_secs(5))
        .await
        .expect("the ban closes bob's socket");
    assert!(
        frame.reason.contains("server-side session disconnect"),
        "{frame:?}"
    );

    let http1 = Http::new(&n1.base);
    let deleted = http1
        .send(http1.delete("/v2/account").bearer_auth(&carol.token))
        .await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    c.closed(Duration::from_secs(5))
        .await
        .expect("the deletion closes carol's socket");
    a.request(Message::Ping(Ping {})).await;
    eventually("node 1 forgets both sessions", || {
        n1.node().cluster().unwrap().directory().is_empty()
    })
    .await;
    n2.stop().await;
    n1.stop().await;
}

/// Server code on node 1 puts bob (node 2) in a stream, updates his status, takes him out,
/// kicks him and closes the stream: alice, in the stream on node 1, sees each join and leave,
/// and node 2 (which holds his presence) counts what she sees; node 1's `nk.stream_user_list`
/// names his node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_operations_act_on_a_session_of_another_node() {
    let Some(Pair { n1, n2, _dirs }) = pair().await else {
        return;
    };
    let (alice, mut a, alice_session) = player(&n1).await;
    let (bob, mut b, bob_session) = player(&n2).await;
    known_on_n1(&n1, &bob_session).await;
    let bob_ids = format!("{},{bob_session}", bob.id);
    assert_eq!(
        a.rpc("join", &format!("{},{alice_session}", alice.id))
            .await,
        "true"
    );

    assert_eq!(a.rpc("join", &bob_ids).await, "true", "bob was not in it");
    a.event(|e| stream_event_of(e, &bob, true)).await;
    // Node 2 tells its own members (bob himself) of the join it made.
    b.event(|e| stream_event_of(e, &bob, true)).await;
    assert_eq!(b.rpc("count", "").await, "2", "node 2 holds his presence");
    a.rpc("update", &bob_ids).await;
    // Node 1 lists his new status, and names his node.
    rpc_until(&mut a, "status", &bob_session, "updated@n2").await;

    a.rpc("leave", &bob_ids).await;
    a.event(|e| stream_event_of(e, &bob, false)).await;
    rpc_until(&mut b, "count", "", "1").await;

    assert_eq!(a.rpc("join", &bob_ids).await, "true");
    a.event(|e| stream_event_of(e, &bob, true)).await;
    a.rpc("kick", &bob_ids).await;
    a.event(|e| stream_event_of(e, &bob, false)).await;
    rpc_until(&mut b, "count", "", "1").await;

    assert_eq!(a.rpc("join", &bob_ids).await, "true");
    a.event(|e| stream_event_of(e, &bob, true)).await;
    rpc_until(&mut b, "count", "", "2").await;
    // Every presence leaves, on both nodes (nobody is left in the stream to be told).
    a.rpc("close", "").await;
    rpc_until(&mut b, "count", "", "0").await;
    rpc_until(&mut a, "count", "", "0").await;
    n2.stop().await;
    n1.stop().await;
}

/// `nk.notification_send_all` on node 1 reaches the sockets of node 2 as well as its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_to_everyone_reaches_every_node() {
    let Some(Pair { n1, n2, _dirs }) = pair().await else {
        return;
    };
    let (_alice, mut a, _) = player(&n1).await;
    let (_bob, mut b, bob_session) = player(&n2).await;
    known_on_n1(&n1, &bob_session).await;
    a.rpc("all", "").await;
    for socket in [&mut a, &mut b] {
        socket
            .event(|e| {
                matches!(&e.message, Some(Message::Notifications(n))
                if n.notifications.iter().any(|n| n.subject == "to everyone" && n.code == 101))
            })
            .await;
    }
    n2.stop().await;
    n1.stop().await;
}

/// `nk.stream_user_join` of bob's session (node 2) made on node 1 answers what node 2 did:
/// true when he was not in the stream, false when he already was, and a leave made just before
/// the join (one RPC) is applied first there, so the join is new again and he stays in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_user_join_of_a_session_on_another_node_answers_from_its_node() {
    let Some(Pair { n1, n2, _dirs }) = pair().await else {
        return;
    };
    let (_alice, mut a, _) = player(&n1).await;
    let (bob, mut b, bob_session) = player(&n2).await;
    known_on_n1(&n1, &bob_session).await;
    let bob_ids = format!("{},{bob_session}", bob.id);
    assert_eq!(a.rpc("join", &bob_ids).await, "true");
    // Node 2 holds him now (it answered): whatever node 1's books say yet.
    assert_eq!(
        a.rpc("join", &bob_ids).await,
        "false",
        "he is already in the stream"
    );
    assert_eq!(
        a.rpc("rejoin", &bob_ids).await,
        "true",
        "the leave just before reached node 2 first"
    );
    assert_eq!(b.rpc("count", "").await, "1", "he is in the stream");
    rpc_until(&mut a, "status", &bob_session, "again@n2").await;
    n2.stop().await;
    n1.stop().await;
}

/// `nk.stream_user_update` of bob's session (node 2) made on node 1 is answered by node 2, as
/// Nakama's `StreamUserUpdate` is on the session's node: it updates his presence, and once node 2
/// closed his session (`nk.session_disconnect` just before, in the same RPC: it reaches node 2
/// first) the update fails with Nakama's error (before, a one-way request: no error).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_user_update_of_a_session_on_another_node_answers_from_its_node() {
    let Some(Pair { n1, n2, _dirs }) = pair().await else {
        return;
    };
    let (_alice, mut a, _) = player(&n1).await;
    let (bob, _b, bob_session) = player(&n2).await;
    known_on_n1(&n1, &bob_session).await;
    let bob_ids = format!("{},{bob_session}", bob.id);
    assert_eq!(a.rpc("update", &bob_ids).await, "");
    rpc_until(&mut a, "status", &bob_session, "updated@n2").await;
    let error = a.rpc_error("update_closed", &bob_ids).await;
    assert!(
        error.contains("tracker rejected updated presence, session is closing")
            || error.contains("session id does not exist"),
        "{error}"
    );
    n2.stop().await;
    n1.stop().await;
}

/// A group kick made over REST on node 1 takes the kicked member out of the group's channel on
/// node 2, where his socket is: alice (node 1) sees him leave, and a message she sends to the
/// channel afterwards does not reach him (a room message sent after it does). Deleting the group
/// takes carol (node 2) out of its channel as well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_kick_and_a_deletion_take_members_out_of_the_channel_on_another_node() {
    let Some(Pair { n1, n2, _dirs }) = pair().await else {
        return;
    };
    let (alice, mut a, _) = player(&n1).await;
    let (bob, mut b, _) = player(&n2).await;
    let (carol, mut c, _) = player(&n2).await;
    let http1 = Http::new(&n1.base);
    let group = http1
        .send(http1.post("/v2/group").bearer_auth(&alice.token).json(
            &serde_json::json!({ "name": format!("guild-{}", uuid::Uuid::new_v4()), "open": true }),
        ))
        .await;
    assert_eq!(group.status, 200, "{:?}", group.body);
    let group_id = group.body["id"].as_str().unwrap().to_owned();
    for who in [&bob, &carol] {
        let joined = http1
            .send(
                http1
                    .post(&format!("/v2/group/{group_id}/join"))
                    .bearer_auth(&who.token),
            )
            .await;
        assert_eq!(joined.status, 200, "{:?}", joined.body);
    }
    let channel_id = join_channel(&mut a, &group_id, 3).await;
    join_channel(&mut b, &group_id, 3).await;
    a.event(|e| channel_join_of(e, &bob)).await;
    join_channel(&mut c, &group_id, 3).await;
    a.event(|e| channel_join_of(e, &carol)).await;
    let room_id = join_room(&mut a, "after-kick").await;
    join_room(&mut b, "after-kick").await;
    // Node 1 holds him in the room: the room's messages reach him.
    a.event(|e| channel_join_of(e, &bob)).await;

    let kicked = http1
        .send(
            http1
                .post(&format!("/v2/group/{group_id}/kick?user_ids={}", bob.id))
                .bearer_auth(&alice.token),
        )
        .await;
    assert_eq!(kicked.status, 200, "{:?}", kicked.body);
    a.event(|e| channel_leave_of(e, &bob)).await;
    c.event(|e| channel_leave_of(e, &bob)).await;
    say(&mut a, &channel_id, "after the kick").await;
    say(&mut a, &room_id, "marker").await;
    // Both travel from node 1 to node 2 in order: the room's message comes second.
    b.event(|e| message_with(e, "marker")).await;
    assert!(
        !b.backlog()
            .iter()
            .any(|e| message_with(e, "after the kick")),
        "the kicked member still receives the group channel: {:?}",
        b.backlog()
    );

    let deleted = http1
        .send(
            http1
                .delete(&format!("/v2/group/{group_id}"))
                .bearer_auth(&alice.token),
        )
        .await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    // Every member leaves the channel; carol (node 2) is taken out by her node.
    rpc_until(&mut c, "group_count", &group_id, "0").await;
    n2.stop().await;
    n1.stop().await;
}

/// Calls RPC `id` until it answers `expected` (what another node does arrives one hop later).
async fn rpc_until(socket: &mut Socket, id: &str, payload: &str, expected: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let got = socket.rpc(id, payload).await;
        if got == expected {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "rpc {id}({payload}) answers {got:?}, not {expected:?}, after 5 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
