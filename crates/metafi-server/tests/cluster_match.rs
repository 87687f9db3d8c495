//! Matches across two nodes in one process, one PostgreSQL (`METAFI_TEST_POSTGRES_URL`) and one
//! NATS (`METAFI_TEST_NATS_URL`): a client on node 2 joins an authoritative match of node 1,
//! sends it data and gets the broadcasts, sees a node-1 player's presence events, is refused
//! with the handler's reason, signals it and is kicked; a stranger's burst of `match_leave`s
//! for that match is dropped on its node while a member's leave still goes through; a relayed
//! match with members on both nodes; node 2's listings (REST and `nk.match_list`) show node 1's
//! matches; a node that stops takes its matches away from the other node's players (they are
//! told), and its players leave the other node's matches; a party of node 1 with a member on
//! node 2 (join, data, refusals, promotion, close, a socket that closes), closed for that member
//! when node 1 goes. Without both variables the tests skip, unless `METAFI_REQUIRE_NATS=1` /
//! `METAFI_REQUIRE_POSTGRES=1` (as in `scripts/test.sh`).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use metafi_proto::realtime::{
    Envelope, ErrorCode, Match, MatchCreate, MatchDataSend, MatchJoin, MatchJoinId, MatchLeave,
    Message, PartyClose, PartyCreate, PartyDataSend, PartyJoin, PartyPromote,
};
use metafi_server::config::RawConfig;
use metafi_testkit::cluster::{ClusterSpec, Pair, TestCluster, eventually};
use metafi_testkit::{Http, Socket, TestNode, User, user};
use tokio::time::Instant;

/// A match that echoes op 1 to everyone as op 2 (with the sender), kicks the sender of op 9,
/// refuses joiners whose metadata says `deny`, tells everyone who left (op 7, the user id),
/// and answers signals.
const CMATCH: &str = r#"
return {
  match_init = function(context, params) return {}, 10, '{"kind":"cluster","n":1}' end,
  match_join_attempt = function(context, d, tick, state, presence, metadata)
    if metadata.deny == "1" then return state, false, "denied by the match" end
    return state, true
  end,
  match_join = function(context, d, tick, state, presences) return state end,
  match_leave = function(context, d, tick, state, presences)
    for _, p in ipairs(presences) do d.broadcast_message(7, p.user_id, nil, nil, true) end
    return state
  end,
  match_loop = function(context, d, tick, state, messages)
    for _, m in ipairs(messages) do
      if m.op_code == 1 then d.broadcast_message(2, m.data, nil, m.sender, true) end
      if m.op_code == 9 then d.match_kick({ m.sender }) end
    end
    return state
  end,
  match_terminate = function(context, d, tick, state, grace) return state end,
  match_signal = function(context, d, tick, state, data) return state, "signal:" .. data end,
}
"#;

const RPCS: &str = r#"
local nk = require("nakama")
nk.register_rpc(function(context, payload)
  return nk.match_create("cmatch", {})
end, "create")
nk.register_rpc(function(context, payload)
  local ids = {}
  for _, m in ipairs(nk.match_list(10, true, nil, nil, nil, "+label.kind:cluster")) do
    ids[#ids + 1] = m.match_id .. "/" .. m.size
  end
  return table.concat(ids, ",")
end, "list")
nk.register_rpc(function(context, payload)
  return nk.match_signal(payload, "ping")
end, "signal")
nk.register_rpc(function(context, payload)
  local m = nk.match_get(payload)
  if m == nil then return "gone" end
  return m.label
end, "get")
"#;

async fn pair() -> Option<Pair> {
    pair_with(|_| {}).await
}

/// Two nodes whose configuration `tweak` changes too.
async fn pair_with(tweak: fn(&mut RawConfig)) -> Option<Pair> {
    let spec = ClusterSpec::new()
        .module("cmatch.lua", CMATCH)
        .module("rpcs.lua", RPCS)
        .small()
        .config(move |_, raw| {
            raw.cluster.match_listing_interval_ms = 100;
            tweak(raw);
        });
    spec.start(2).await.map(TestCluster::pair)
}

async fn player(node: &TestNode) -> (User, Socket) {
    let who = user(&Http::new(&node.base)).await;
    let socket = Socket::connect(&node.base, &who.token, "").await;
    (who, socket)
}

fn join(id: &str, metadata: &[(&str, &str)]) -> Message {
    Message::MatchJoin(MatchJoin {
        id: Some(MatchJoinId::MatchId(id.into())),
        metadata: metadata
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<HashMap<_, _>>(),
    })
}

async fn joined(socket: &mut Socket, id: &str) -> Match {
    match socket.request(join(id, &[])).await.message {
        Some(Message::Match(m)) => m,
        other => panic!("expected a match, got {other:?}"),
    }
}

fn send(id: &str, op_code: i64, data: &'static [u8]) -> Envelope {
    Envelope::new(
        "",
        Message::MatchDataSend(MatchDataSend {
            match_id: id.into(),
            op_code,
            data: Bytes::from_static(data),
            presences: vec![],
            reliable: true,
            delivery: None,
        }),
    )
}

fn data_from(e: &Envelope, op: i64, payload: &[u8], sender: &User) -> bool {
    matches!(&e.message, Some(Message::MatchData(d))
        if d.op_code == op && d.data == payload
            && d.presence.as_ref().is_some_and(|p| p.user_id == sender.id))
}

fn presence_of(e: &Envelope, id: &str, who: &User, join: bool) -> bool {
    matches!(&e.message, Some(Message::MatchPresenceEvent(ev))
        if ev.match_id == id
            && (if join { &ev.joins } else { &ev.leaves }).iter().any(|p| p.user_id == who.id))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_player_on_another_node_plays_an_authoritative_match() {
    let Some(Pair { n1, n2, _dirs }) = pair().await else {
        return;
    };
    let (alice, mut a) = player(&n1).await;
    let (bob, mut b) = player(&n2).await;
    let id = a.rpc("create", "").await;
    assert!(id.ends_with(".n1"), "{id}");

    // Refused by the handler, with its reason, across nodes.
    let (code, message) = b.request_error(join(&id, &[("deny", "1")])).await;
    assert_eq!(code, ErrorCode::MatchJoinRejected as i32);
    assert_eq!(message, "denied by the match");

    // alice (node 1) joins, then bob (node 2): bob's answer lists alice, the label is the
    // match's, and alice sees bob join.
    let first = joined(&mut a, &id).await;
    assert!(first.presences.is_empty());
    let second = joined(&mut b, &id).await;
    assert!(second.authoritative);
    assert_eq!(
        second.label.as_ref().map(|l| l.value.as_str()),
        Some(r#"{"kind":"cluster","n":1}"#)
    );
    let others: Vec<&str> = second
        .presences
        .iter()
        .map(|p| p.user_id.as_str())
        .collect();
    assert_eq!(others, [alice.id.as_str()]);
    a.event(|e| presence_of(e, &id, &bob, true)).await;

    // Data both ways: each echo reaches both players, wherever they sit.
    b.send(&send(&id, 1, b"from bob")).await;
    a.event(|e| data_from(e, 2, b"from bob", &bob)).await;
    b.event(|e| data_from(e, 2, b"from bob", &bob)).await;
    a.send(&send(&id, 1, b"from alice")).await;
    b.event(|e| data_from(e, 2, b"from alice", &alice)).await;

    // In order per sender across the nodes.
    for i in 0..20u8 {
        let data: &'static [u8] = Box::leak(vec![b'0' + i].into_boxed_slice());
        b.send(&send(&id, 1, data)).await;
    }
    for i in 0..20u8 {
        let got = a
            .event(|e| matches!(&e.message, Some(Message::MatchData(d)) if d.op_code == 2 && d.data.len() == 1))
            .await;
        let Some(Message::MatchData(d)) = got.message else {
            unreachable!()
        };
        assert_eq!(d.data[0], b'0' + i, "out of order");
    }

    // match_signal and match_get from node 2's server code reach node 1's match.
    assert_eq!(b.rpc("signal", &id).await, "signal:ping");
    eventually("node 2 lists node 1's match", || {
        n2.node().cluster().unwrap().remote_matches() == 1
    })
    .await;
    assert_eq!(b.rpc("get", &id).await, r#"{"kind":"cluster","n":1}"#);

    // bob leaves and rejoins (alice sees both), then asks to be kicked.
    leave(&mut b, &id).await;
    a.event(|e| presence_of(e, &id, &bob, false)).await;
    joined(&mut b, &id).await;
    a.event(|e| presence_of(e, &id, &bob, true)).await;
    b.send(&send(&id, 9, b"kick me")).await;
    a.event(|e| presence_of(e, &id, &bob, false)).await;
    // Kicked: bob's data no longer reach the match.
    b.send(&send(&id, 1, b"after kick")).await;
    a.assert_no_event(Duration::from_millis(300), |e| {
        data_from(e, 2, b"after kick", &bob)
    })
    .await;

    n2.stop().await;
    n1.stop().await;
}

/// The handler's `match_leave` ran for `who`.
fn handler_saw_leave(e: &Envelope, who: &User) -> bool {
    matches!(&e.message, Some(Message::MatchData(d)) if d.op_code == 7 && d.data == who.id.as_bytes())
}

fn leave_request(id: &str) -> Message {
    Message::MatchLeave(MatchLeave {
        match_id: id.into(),
    })
}

/// Leaves match `id`: the answer is an empty acknowledgement, member or not (as Nakama's).
async fn leave(socket: &mut Socket, id: &str) {
    let ack = socket.request(leave_request(id)).await;
    assert!(ack.message.is_none(), "{ack:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_members_leave_a_match_on_another_node() {
    // A call queue of 1 past the match's presences: without the membership check a burst of a
    // stranger's leaves fills it and stops the match.
    let Some(Pair { n1, n2, _dirs }) = pair_with(|raw| raw.matches.call_queue_size = 1).await
    else {
        return;
    };
    let (alice, mut a) = player(&n1).await;
    let (bob, mut b) = player(&n2).await;
    let (carol, mut c) = player(&n2).await;
    let id = a.rpc("create", "").await;
    joined(&mut a, &id).await;
    joined(&mut b, &id).await;
    a.event(|e| presence_of(e, &id, &bob, true)).await;

    // carol (node 2) never joined: her leaves are answered as Nakama answers them (an empty
    // acknowledgement), cast to node 1 and dropped there.
    for cid in 1000..1300 {
        c.send(&Envelope::new(cid.to_string(), leave_request(&id)))
            .await;
    }
    leave(&mut c, &id).await;
    // bob's data follow carol's leaves from node 2: the echo says the match still runs.
    b.send(&send(&id, 1, b"after the leaves")).await;
    a.event(|e| data_from(e, 2, b"after the leaves", &bob))
        .await;
    a.assert_no_event(Duration::from_millis(300), |e| {
        handler_saw_leave(e, &carol)
            || matches!(&e.message, Some(Message::MatchPresenceEvent(ev)) if !ev.leaves.is_empty())
    })
    .await;

    // bob's own leave from node 2 still reaches the match: alice sees him go and the handler
    // ran match_leave for him; the match goes on.
    leave(&mut b, &id).await;
    a.event(|e| presence_of(e, &id, &bob, false)).await;
    a.event(|e| handler_saw_leave(e, &bob)).await;
    a.send(&send(&id, 1, b"still here")).await;
    a.event(|e| data_from(e, 2, b"still here", &alice)).await;

    n2.stop().await;
    n1.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relayed_match_spans_both_nodes() {
    let Some(Pair { n1, n2, _dirs }) = pair().await else {
        return;
    };
    let (alice, mut a) = player(&n1).await;
    let (bob, mut b) = player(&n2).await;
    let created = a
        .request(Message::MatchCreate(MatchCreate {
            name: String::new(),
        }))
        .await;
    let Some(Message::Match(m)) = created.message else {
        panic!("{created:?}")
    };
    let id = m.match_id;
    let second = joined(&mut b, &id).await;
    assert!(!second.authoritative);
    assert_eq!(second.presences.len(), 1);
    assert_eq!(second.presences[0].user_id, alice.id);
    a.event(|e| presence_of(e, &id, &bob, true)).await;

    b.send(&send(&id, 5, b"relayed from bob")).await;
    a.event(|e| data_from(e, 5, b"relayed from bob", &bob))
        .await;
    a.send(&send(&id, 6, b"relayed from alice")).await;
    b.event(|e| data_from(e, 6, b"relayed from alice", &alice))
        .await;

    // Node 2 lists the relayed match of node 1 (with both members).
    let http = Http::new(&n2.base);
    let token = user(&http).await.token;
    let expected = id.clone();
    let mut listed = false;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !listed && Instant::now() < deadline {
        let reply = http
            .send(
                http.get("/v2/match?limit=10&authoritative=false")
                    .bearer_auth(&token),
            )
            .await;
        listed = reply.body["matches"].as_array().is_some_and(|all| {
            all.iter()
                .any(|m| m["match_id"] == expected.as_str() && m["size"] == 2)
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        listed,
        "node 2 lists node 1's relayed match with its two members"
    );

    // A named relayed match created on node 1 is the one node 2's player "creates" later.
    let named = |name: &str| {
        Message::MatchCreate(MatchCreate {
            name: name.to_owned(),
        })
    };
    let first = a.request(named("cluster-room")).await;
    let Some(Message::Match(first)) = first.message else {
        panic!("{first:?}")
    };
    let second = b.request(named("cluster-room")).await;
    let Some(Message::Match(second)) = second.message else {
        panic!("{second:?}")
    };
    assert_eq!(second.match_id, first.match_id);
    assert_eq!(second.size, 2);
    a.event(|e| presence_of(e, &first.match_id, &bob, true))
        .await;
    b.send(&send(&first.match_id, 7, b"in the named room"))
        .await;
    a.event(|e| data_from(e, 7, b"in the named room", &bob))
        .await;

    // bob's socket closes: alice sees him leave both.
    drop(b);
    a.event(|e| presence_of(e, &id, &bob, false)).await;
    a.event(|e| presence_of(e, &first.match_id, &bob, false))
        .await;

    n2.stop().await;
    n1.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_on_one_node_show_the_other_nodes_matches() {
    let Some(Pair { n1, n2, _dirs }) = pair().await else {
        return;
    };
    let (_alice, mut a) = player(&n1).await;
    let (_bob, mut b) = player(&n2).await;
    let on_n1 = a.rpc("create", "").await;
    let on_n2 = b.rpc("create", "").await;
    joined(&mut a, &on_n1).await;
    // Within the bound (the listing interval, 100 ms here), each node lists both.
    let both = |listed: &str| listed.contains(&format!("{on_n1}/1")) && listed.contains(&on_n2);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let listed = b.rpc("list", "").await;
        if both(&listed) {
            break;
        }
        assert!(Instant::now() < deadline, "node 2 lists {listed}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // REST on node 2, with a query.
    let http = Http::new(&n2.base);
    let token = user(&http).await.token;
    let reply = http
        .send(
            http.get("/v2/match?limit=10&authoritative=true&query=%2Blabel.kind%3Acluster")
                .bearer_auth(&token),
        )
        .await;
    let ids: Vec<&str> = reply.body["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["match_id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&on_n1.as_str()) && ids.contains(&on_n2.as_str()),
        "{ids:?}"
    );
    // The other node's entry carries its label, size and tick rate.
    let entry = reply.body["matches"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["match_id"] == on_n1.as_str())
        .unwrap()
        .clone();
    assert_eq!(entry["authoritative"], true);
    assert_eq!(entry["size"], 1);
    assert_eq!(entry["tick_rate"], 10);
    assert_eq!(entry["label"], r#"{"kind":"cluster","n":1}"#);

    // Node 1 stops: node 2 stops listing its match at once (it said bye).
    n1.stop().await;
    eventually("node 1's match is no longer listed on node 2", || {
        n2.node().cluster().unwrap().remote_matches() == 0
    })
    .await;
    let listed = b.rpc("list", "").await;
    assert!(
        !listed.contains(&on_n1) && listed.contains(&on_n2),
        "{listed}"
    );
    n2.stop().await;
}

/// A listing lost in transit: the node publishes only changes, so nothing would resend it; its
/// next "unchanged, version V" tells the other node it holds an older version, which asks for
/// the listing again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_listing_is_asked_for_again() {
    let Some(Pair { n1, n2, _dirs }) = pair().await else {
        return;
    };
    let (_alice, mut a) = player(&n1).await;
    let (_bob, mut b) = player(&n2).await;
    // The listing that carries the new match is dropped before NATS.
    n1.node().cluster().unwrap().lose_listings(1);
    let on_n1 = a.rpc("create", "").await;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let listed = b.rpc("list", "").await;
        if listed.contains(&on_n1) {
            break;
        }
        assert!(Instant::now() < deadline, "node 2 lists {listed}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    n2.stop().await;
    n1.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_stops_takes_its_matches_and_its_players_away() {
    let Some(Pair { n1, n2, _dirs }) = pair().await else {
        return;
    };
    let (alice, mut a) = player(&n1).await;
    let (bob, mut b) = player(&n2).await;
    // A match on node 1 with bob (node 2) in it, and one on node 2 with alice (node 1) in it.
    let on_n1 = a.rpc("create", "").await;
    let on_n2 = b.rpc("create", "").await;
    joined(&mut b, &on_n1).await;
    joined(&mut b, &on_n2).await;
    joined(&mut a, &on_n2).await;
    b.event(|e| presence_of(e, &on_n2, &alice, true)).await;

    // Node 1 goes away: bob is told he is out of node 1's match (his own presence leaves), and
    // alice (a node-1 player) leaves node 2's match.
    n1.stop().await;
    b.event(|e| presence_of(e, &on_n1, &bob, false)).await;
    b.event(|e| presence_of(e, &on_n2, &alice, false)).await;
    // Joining the gone node's match: "Match not found".
    let (code, _) = b.request_error(join(&on_n1, &[])).await;
    assert_eq!(code, ErrorCode::MatchNotFound as i32);
    n2.stop().await;
}

fn party_presence(e: &Envelope, party_id: &str, who: &User, join: bool) -> bool {
    matches!(&e.message, Some(Message::PartyPresenceEvent(ev))
        if ev.party_id == party_id
            && (if join { &ev.joins } else { &ev.leaves }).iter().any(|p| p.user_id == who.id))
}

fn party_data_from(e: &Envelope, payload: &[u8], sender: &User) -> bool {
    matches!(&e.message, Some(Message::PartyData(d))
        if d.data == payload && d.presence.as_ref().is_some_and(|p| p.user_id == sender.id))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_party_spans_both_nodes() {
    let Some(Pair { n1, n2, _dirs }) = pair().await else {
        return;
    };
    let (alice, mut a) = player(&n1).await;
    let (bob, mut b) = player(&n2).await;
    let created = a
        .request(Message::PartyCreate(PartyCreate {
            open: true,
            max_size: 4,
            label: String::new(),
            hidden: false,
        }))
        .await;
    let Some(Message::Party(party)) = created.message else {
        panic!("{created:?}")
    };
    let party_id = party.party_id;
    assert!(party_id.ends_with(".n1"), "{party_id}");

    // bob (node 2) joins node 1's party: his answer, then the party, then both see him join.
    let ack = b
        .request(Message::PartyJoin(PartyJoin {
            party_id: party_id.clone(),
        }))
        .await;
    assert!(ack.message.is_none(), "{ack:?}");
    let joined = b
        .event(|e| matches!(&e.message, Some(Message::Party(p)) if p.party_id == party_id))
        .await;
    let Some(Message::Party(state)) = joined.message else {
        unreachable!()
    };
    assert_eq!(state.presences.len(), 2);
    a.event(|e| party_presence(e, &party_id, &bob, true)).await;

    // Data both ways.
    b.send(&Envelope::new(
        "",
        Message::PartyDataSend(PartyDataSend {
            party_id: party_id.clone(),
            op_code: 3,
            data: Bytes::from_static(b"bob to party"),
        }),
    ))
    .await;
    a.event(|e| party_data_from(e, b"bob to party", &bob)).await;
    a.send(&Envelope::new(
        "",
        Message::PartyDataSend(PartyDataSend {
            party_id: party_id.clone(),
            op_code: 3,
            data: Bytes::from_static(b"alice to party"),
        }),
    ))
    .await;
    b.event(|e| party_data_from(e, b"alice to party", &alice))
        .await;

    // A refusal from node 1 reaches bob with Nakama's text: he is not the leader.
    let (code, message) = b
        .request_error(Message::PartyClose(PartyClose {
            party_id: party_id.clone(),
        }))
        .await;
    assert_eq!(code, ErrorCode::BadInput as i32);
    assert_eq!(message, "Error closing party: party leader only");

    // alice promotes bob: both hear of the new leader; bob (node 2) now closes the party.
    let bob_presence = state
        .presences
        .iter()
        .find(|p| p.user_id == bob.id)
        .cloned()
        .unwrap();
    let ack = a
        .request(Message::PartyPromote(PartyPromote {
            party_id: party_id.clone(),
            presence: Some(bob_presence),
        }))
        .await;
    assert!(ack.message.is_none(), "{ack:?}");
    b.event(|e| matches!(&e.message, Some(Message::PartyLeader(l)) if l.presence.as_ref().is_some_and(|p| p.user_id == bob.id)))
        .await;
    let ack = b
        .request(Message::PartyClose(PartyClose {
            party_id: party_id.clone(),
        }))
        .await;
    assert!(ack.message.is_none(), "{ack:?}");
    a.event(|e| matches!(&e.message, Some(Message::PartyClose(c)) if c.party_id == party_id))
        .await;

    // A party of node 1 that bob joined: his socket closing on node 2 makes him leave it.
    let created = a
        .request(Message::PartyCreate(PartyCreate {
            open: true,
            max_size: 4,
            label: String::new(),
            hidden: false,
        }))
        .await;
    let Some(Message::Party(party)) = created.message else {
        panic!("{created:?}")
    };
    let second = party.party_id;
    b.request(Message::PartyJoin(PartyJoin {
        party_id: second.clone(),
    }))
    .await;
    a.event(|e| party_presence(e, &second, &bob, true)).await;
    drop(b);
    a.event(|e| party_presence(e, &second, &bob, false)).await;

    n2.stop().await;
    n1.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_stops_closes_its_parties_for_players_elsewhere() {
    let Some(Pair { n1, n2, _dirs }) = pair().await else {
        return;
    };
    let (_alice, mut a) = player(&n1).await;
    let (_bob, mut b) = player(&n2).await;
    let created = a
        .request(Message::PartyCreate(PartyCreate {
            open: true,
            max_size: 4,
            label: String::new(),
            hidden: false,
        }))
        .await;
    let Some(Message::Party(party)) = created.message else {
        panic!("{created:?}")
    };
    let party_id = party.party_id;
    b.request(Message::PartyJoin(PartyJoin {
        party_id: party_id.clone(),
    }))
    .await;
    b.event(|e| matches!(&e.message, Some(Message::Party(p)) if p.party_id == party_id))
        .await;
    // Node 1 goes away: bob hears the party is closed.
    n1.stop().await;
    b.event(|e| matches!(&e.message, Some(Message::PartyClose(c)) if c.party_id == party_id))
        .await;
    n2.stop().await;
}
