//! Parties and presence events across three nodes in one process, one PostgreSQL
//! (`METAFI_TEST_POSTGRES_URL`) and one NATS (`METAFI_TEST_NATS_URL`):
//! - `GET /v2/party` and `nk.party_list` on every node list every node's parties (the others'
//!   within `cluster.party_listing_interval_ms`): open/closed filters, label queries, hidden ones
//!   only for server code, pages across nodes, an update and a close seen everywhere, a stopped
//!   node's parties gone;
//! - a party on n2 with members on n1, n2 and n3 (n1 runs the matchmaker pool): every member
//!   gets the `party_matchmaker_ticket` and then the `matchmaker_matched` of the group (with a
//!   solo player on n3); a ticket the leader removes never matches, a member elsewhere may not
//!   remove it;
//! - the presence-event race: two users joining one room on two nodes at the same moment each
//!   hear of the other (in the join answer or as one join event), round after round.
//! - a member on another node removed from a party, or whose party was closed, is not told of
//!   that party's end again when the party's node stops; a member still in one is.
//!
//! Without both variables the tests skip, unless `METAFI_REQUIRE_NATS=1` /
//! `METAFI_REQUIRE_POSTGRES=1` (as in `scripts/test.sh`).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::time::Duration;

use metafi_proto::api::Rpc;
use metafi_proto::realtime::{
    ChannelJoin, Envelope, MatchmakerAdd, MatchmakerMatchedId, Message, PartyClose, PartyCreate,
    PartyJoin, PartyMatchmakerAdd, PartyMatchmakerRemove, PartyUpdate,
};
use metafi_proto::wkt::bool_value;
use metafi_testkit::cluster::{ClusterSpec, NodeDirs, TestCluster, eventually};
use metafi_testkit::{Http, Socket, TestNode, User, user};
use serde_json::Value;
use tokio::time::Instant;

/// `nk.party_list` from server code: `limit, open, show_hidden, query, cursor` as the payload
/// says (JSON), answered as `{parties: [ids], cursor}`.
const RPCS: &str = r#"
local nk = require("nakama")
nk.register_rpc(function(context, payload)
  local a = nk.json_decode(payload)
  local open = a.open
  if open == "nil" then open = nil end
  local parties, cursor = nk.party_list(a.limit, open, a.hidden, a.query, a.cursor)
  local ids = {}
  for _, p in ipairs(parties) do ids[#ids + 1] = p.match_id end
  return nk.json_encode({ parties = ids, cursor = cursor or "" })
end, "parties")
"#;

/// n1, n2 and n3, each hearing the other two.
async fn trio() -> Option<(Vec<TestNode>, NodeDirs)> {
    let spec = ClusterSpec::new()
        .module("rpcs.lua", RPCS)
        .small()
        .config(|_, raw| {
            raw.cluster.party_listing_interval_ms = 100;
            raw.matchmaker.interval_sec = 1;
            // Nodes here stop cleanly (they say goodbye), never by SIGKILL, so no test needs
            // the builder's 500 ms lost-peer bound, which a loaded machine can exceed (a lost
            // peer's members leave their parties and cancel the parties' tickets).
            raw.cluster.peer_lost_timeout_ms = 5_000;
        });
    spec.start(3).await.map(TestCluster::into_nodes)
}

async fn player(node: &TestNode) -> (User, Socket) {
    let who = user(&Http::new(&node.base)).await;
    let socket = Socket::connect(&node.base, &who.token, "").await;
    (who, socket)
}

async fn create_party(socket: &mut Socket, open: bool, hidden: bool, label: &str) -> String {
    let created = socket
        .request(Message::PartyCreate(PartyCreate {
            open,
            max_size: 8,
            label: label.into(),
            hidden,
        }))
        .await;
    match created.message {
        Some(Message::Party(party)) => party.party_id,
        other => panic!("expected a party, got {other:?}"),
    }
}

/// `GET /v2/party` on `node` (query string as given): the ids listed and the cursor.
async fn rest_list(node: &TestNode, who: &User, query: &str) -> (Vec<String>, String) {
    let http = Http::new(&node.base);
    let reply = http
        .send(
            http.get(&format!("/v2/party?{query}"))
                .bearer_auth(&who.token),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let ids = reply.body["parties"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|p| p["party_id"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    let cursor = reply.body["cursor"].as_str().unwrap_or("").to_owned();
    (ids, cursor)
}

/// `nk.party_list` on the node of `socket`.
async fn nk_list(socket: &mut Socket, args: Value) -> (Vec<String>, String) {
    let answer = socket
        .request(Message::Rpc(Rpc {
            id: "parties".into(),
            payload: args.to_string(),
            http_key: String::new(),
        }))
        .await;
    let Some(Message::Rpc(rpc)) = answer.message else {
        panic!("rpc failed: {answer:?}")
    };
    let value: Value = serde_json::from_str(&rpc.payload).unwrap();
    let ids = value["parties"]
        .as_array()
        .map(|l| l.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default();
    (ids, value["cursor"].as_str().unwrap_or("").to_owned())
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

/// Polls `GET /v2/party?{query}` on `node` until it lists exactly `want` (any order).
async fn rest_lists(node: &TestNode, who: &User, query: &str, want: &[&String]) {
    let mut want: Vec<String> = want.iter().map(|s| (*s).clone()).collect();
    want.sort();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (ids, _) = rest_list(node, who, query).await;
        if sorted(ids.clone()) == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "GET /v2/party?{query} lists {ids:?}, not {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_lists_every_nodes_parties() {
    let Some((mut nodes, _dirs)) = trio().await else {
        return;
    };
    let (alice, mut a) = player(&nodes[0]).await;
    let (bob, mut b) = player(&nodes[1]).await;
    let (carol, mut c) = player(&nodes[2]).await;
    let on_n1 = create_party(&mut a, true, false, r#"{"mode":"ranked","skill":5}"#).await;
    let on_n2 = create_party(&mut b, false, false, r#"{"mode":"casual"}"#).await;
    let hidden_n3 = create_party(&mut c, true, true, "").await;
    let open_n3 = create_party(&mut c, true, false, r#"{"mode":"ranked","skill":1}"#).await;
    assert!(on_n1.ends_with(".n1") && on_n2.ends_with(".n2") && open_n3.ends_with(".n3"));

    // Every node lists the three visible parties, whichever node asks.
    let visible = [&on_n1, &on_n2, &open_n3];
    for (node, who) in nodes.iter().zip([&alice, &bob, &carol]) {
        rest_lists(node, who, "limit=100", &visible).await;
    }
    // Filters and queries run over the other nodes' parties as over this node's.
    rest_lists(&nodes[1], &bob, "limit=100&open=false", &[&on_n2]).await;
    rest_lists(
        &nodes[0],
        &alice,
        "limit=100&open=true",
        &[&on_n1, &open_n3],
    )
    .await;
    let (ranked, _) = rest_list(&nodes[1], &bob, "limit=100&query=%2Blabel.mode%3Aranked").await;
    assert_eq!(sorted(ranked), sorted(vec![on_n1.clone(), open_n3.clone()]));
    // Best score first across nodes: the boosted skill term ranks n1's party above n3's.
    let (best, _) = rest_list(
        &nodes[1],
        &bob,
        "limit=100&query=%2Blabel.mode%3Aranked%20label.skill%3A%3E%3D5%5E10",
    )
    .await;
    assert_eq!(best, [on_n1.clone(), open_n3.clone()]);

    // Pages through the cursor span the nodes, neither repeating nor skipping.
    let (first, cursor) = rest_list(&nodes[2], &carol, "limit=2").await;
    assert_eq!(first.len(), 2);
    assert!(!cursor.is_empty());
    let (second, last) = rest_list(&nodes[2], &carol, &format!("limit=2&cursor={cursor}")).await;
    assert_eq!(second.len(), 1);
    assert!(last.is_empty());
    let mut all = first;
    all.extend(second);
    assert_eq!(
        sorted(all),
        sorted(visible.iter().map(|s| (*s).clone()).collect())
    );

    // Server code (`nk.party_list`) on n1 sees every node's parties, hidden ones when asked.
    let (ids, _) = nk_list(
        &mut a,
        serde_json::json!({"limit": 100, "open": "nil", "hidden": true, "query": "", "cursor": ""}),
    )
    .await;
    assert_eq!(
        sorted(ids),
        sorted(vec![
            on_n1.clone(),
            on_n2.clone(),
            hidden_n3.clone(),
            open_n3.clone()
        ])
    );
    let (ids, _) = nk_list(
        &mut a,
        serde_json::json!({"limit": 100, "open": false, "hidden": false, "query": "", "cursor": ""}),
    )
    .await;
    assert_eq!(ids, std::slice::from_ref(&on_n2));

    // bob (n2) opens his party and relabels it; carol (n3) closes hers: n1 sees both.
    let ack = b
        .request(Message::PartyUpdate(PartyUpdate {
            party_id: on_n2.clone(),
            label: r#"{"mode":"ranked","skill":2}"#.into(),
            open: true,
            hidden: false,
        }))
        .await;
    assert!(ack.message.is_none(), "{ack:?}");
    let ack = c
        .request(Message::PartyClose(PartyClose {
            party_id: open_n3.clone(),
        }))
        .await;
    assert!(ack.message.is_none(), "{ack:?}");
    rest_lists(
        &nodes[0],
        &alice,
        "limit=100&open=true&query=%2Blabel.mode%3Aranked",
        &[&on_n1, &on_n2],
    )
    .await;

    // n3 stops: its parties leave every listing at once.
    eventually("n1 lists n3's hidden party", || {
        nodes[0].node().cluster().unwrap().remote_parties() == 2
    })
    .await;
    let n3 = nodes.pop().unwrap();
    n3.stop().await;
    eventually("n1 forgets n3's parties", || {
        nodes[0].node().cluster().unwrap().remote_parties() == 1
    })
    .await;
    let (ids, _) = nk_list(
        &mut a,
        serde_json::json!({"limit": 100, "open": "nil", "hidden": true, "query": "", "cursor": ""}),
    )
    .await;
    assert_eq!(sorted(ids), sorted(vec![on_n1.clone(), on_n2.clone()]));
    for node in nodes {
        node.stop().await;
    }
}

fn ticket_of(e: &Envelope, party_id: &str) -> Option<String> {
    match &e.message {
        Some(Message::PartyMatchmakerTicket(t)) if t.party_id == party_id => Some(t.ticket.clone()),
        _ => None,
    }
}

fn is_matched(e: &Envelope) -> bool {
    matches!(&e.message, Some(Message::MatchmakerMatched(_)))
}

async fn party_ticket(socket: &mut Socket, party_id: &str) -> String {
    let got = socket.event(|e| ticket_of(e, party_id).is_some()).await;
    ticket_of(&got, party_id).unwrap()
}

fn party_add(party_id: &str) -> Message {
    Message::PartyMatchmakerAdd(PartyMatchmakerAdd {
        party_id: party_id.into(),
        min_count: 4,
        max_count: 4,
        query: "*".into(),
        ..PartyMatchmakerAdd::default()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partys_matchmaking_reaches_its_members_on_every_node() {
    let Some((nodes, _dirs)) = trio().await else {
        return;
    };
    eventually("n1 runs the matchmaker pool", || {
        nodes[0].node().cluster().unwrap().runs_matchmaker_pool()
    })
    .await;
    // The party lives on n2 (alice's); bob on n3 and carol on n1 join it.
    let (alice, mut a) = player(&nodes[1]).await;
    let (bob, mut b) = player(&nodes[2]).await;
    let (carol, mut c) = player(&nodes[0]).await;
    let party_id = create_party(&mut a, true, false, "").await;
    assert!(party_id.ends_with(".n2"));
    for s in [&mut b, &mut c] {
        let ack = s
            .request(Message::PartyJoin(PartyJoin {
                party_id: party_id.clone(),
            }))
            .await;
        assert!(ack.message.is_none(), "{ack:?}");
        s.event(|e| matches!(&e.message, Some(Message::Party(p)) if p.party_id == party_id))
            .await;
    }

    // The leader adds the party, then takes it out again: every member is told of the ticket,
    // a member on another node may not remove it, and nobody is matched.
    let answer = a.request(party_add(&party_id)).await;
    let first = ticket_of(&answer, &party_id).expect("the leader gets the ticket");
    assert_eq!(party_ticket(&mut b, &party_id).await, first);
    assert_eq!(party_ticket(&mut c, &party_id).await, first);
    let (code, message) = b
        .request_error(Message::PartyMatchmakerRemove(PartyMatchmakerRemove {
            party_id: party_id.clone(),
            ticket: first.clone(),
        }))
        .await;
    assert_eq!(code, 3);
    assert_eq!(message, "Error closing party: party leader only");
    let ack = a
        .request(Message::PartyMatchmakerRemove(PartyMatchmakerRemove {
            party_id: party_id.clone(),
            ticket: first.clone(),
        }))
        .await;
    assert!(ack.message.is_none(), "{ack:?}");
    // dave (n3) looks for four: with the party's ticket gone he waits alone.
    let (dave, mut d) = player(&nodes[2]).await;
    let solo = d
        .request(Message::MatchmakerAdd(MatchmakerAdd {
            min_count: 4,
            max_count: 4,
            query: "*".into(),
            ..MatchmakerAdd::default()
        }))
        .await;
    let Some(Message::MatchmakerTicket(solo)) = solo.message else {
        panic!("{solo:?}")
    };
    d.assert_no_event(Duration::from_millis(2500), is_matched)
        .await;
    for s in [&mut a, &mut b, &mut c] {
        s.assert_no_event(Duration::from_millis(10), is_matched)
            .await;
    }

    // Added again: the party (three members on three nodes) and dave make four. Each member
    // gets the party's ticket, then the group, wherever its socket is.
    let answer = a.request(party_add(&party_id)).await;
    let second = ticket_of(&answer, &party_id).expect("the leader gets the ticket");
    assert_ne!(second, first);
    assert_eq!(party_ticket(&mut b, &party_id).await, second);
    assert_eq!(party_ticket(&mut c, &party_id).await, second);
    let mut tokens = Vec::new();
    for (s, who, ticket) in [
        (&mut a, &alice, &second),
        (&mut b, &bob, &second),
        (&mut c, &carol, &second),
        (&mut d, &dave, &solo.ticket),
    ] {
        let got = s.event(is_matched).await;
        let Some(Message::MatchmakerMatched(matched)) = got.message else {
            unreachable!()
        };
        assert_eq!(&matched.ticket, ticket, "{}", who.username);
        assert_eq!(matched.users.len(), 4);
        let me = matched.self_user.unwrap();
        assert_eq!(me.presence.unwrap().user_id, who.id);
        let in_party = who.id != dave.id;
        assert_eq!(me.party_id == party_id, in_party);
        let Some(MatchmakerMatchedId::Token(token)) = matched.id else {
            panic!("no token")
        };
        tokens.push(token);
        // Told once.
        s.assert_no_event(Duration::from_millis(200), is_matched)
            .await;
    }
    tokens.dedup();
    assert_eq!(tokens.len(), 1, "one group, one token");
    for node in nodes {
        node.stop().await;
    }
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

fn joined_event(e: &Envelope, channel_id: &str, who: &User) -> bool {
    matches!(&e.message, Some(Message::ChannelPresenceEvent(ev))
        if ev.channel_id == channel_id && ev.joins.iter().any(|p| p.user_id == who.id))
}

/// Whether `socket` learns of `other` in `channel`: listed in its join answer, or told by a
/// join event within 2 s. Never by two events (an event may follow an answer that listed the
/// other when the two crossed, as on one node).
async fn learns_of(
    socket: &mut Socket,
    channel: &metafi_proto::realtime::Channel,
    other: &User,
) -> bool {
    let listed = channel.presences.iter().any(|p| p.user_id == other.id);
    let events = |socket: &Socket| {
        socket
            .backlog()
            .iter()
            .filter(|e| joined_event(e, &channel.id, other))
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(2);
    while !listed && events(socket) == 0 && Instant::now() < deadline {
        // Reads what arrives for 20 ms into the backlog.
        socket
            .assert_no_event(Duration::from_millis(20), |_| false)
            .await;
    }
    // A second telling would come right after the first.
    socket
        .assert_no_event(Duration::from_millis(100), |_| false)
        .await;
    let told = events(socket);
    assert!(told <= 1, "told {told} times of one join");
    listed || told == 1
}

/// The race CLUSTER.md described: alice (n1) and bob (n2) join one room at the same moment,
/// each node before it heard of the other's join. Each must hear of the other: in the join
/// answer, or as a join event from its own node once that node holds the other's presence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_joining_at_once_on_two_nodes_hear_of_each_other() {
    let Some((nodes, _dirs)) = trio().await else {
        return;
    };
    let (alice, mut a) = player(&nodes[0]).await;
    let (bob, mut b) = player(&nodes[1]).await;
    let mut missed = Vec::new();
    for round in 0..20 {
        let room = format!("race-{round}-{}", uuid::Uuid::new_v4().simple());
        let (ca, cb) = tokio::join!(join_room(&mut a, &room), join_room(&mut b, &room));
        assert_eq!(ca.id, cb.id);
        let a_knows = learns_of(&mut a, &ca, &bob).await;
        let b_knows = learns_of(&mut b, &cb, &alice).await;
        if !(a_knows && b_knows) {
            missed.push((round, a_knows, b_knows));
        }
        a.discard_backlog();
        b.discard_backlog();
    }
    assert!(
        missed.is_empty(),
        "rounds where a member missed the other: {missed:?}"
    );
    for node in nodes {
        node.stop().await;
    }
}

fn party_closed(e: &Envelope, party_id: &str) -> bool {
    matches!(&e.message, Some(Message::PartyClose(c)) if c.party_id == party_id)
}

/// A member on another node that is no longer in a party (removed by the leader, or the party
/// closed) is not told the party closed when the party's node goes; one still in it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_left_is_not_told_of_its_former_partys_end() {
    let Some((mut nodes, _dirs)) = trio().await else {
        return;
    };
    let (_alice, mut a) = player(&nodes[0]).await;
    let (bob, mut b) = player(&nodes[1]).await;
    let (_carol, mut c) = player(&nodes[2]).await;
    let removed_from = create_party(&mut a, true, false, "").await;
    let closed = create_party(&mut a, true, false, "").await;
    let kept = create_party(&mut a, true, false, "").await;
    let mut bob_presence = None;
    for party in [&removed_from, &closed] {
        b.request(Message::PartyJoin(PartyJoin {
            party_id: party.clone(),
        }))
        .await;
        let got = b
            .event(|e| matches!(&e.message, Some(Message::Party(p)) if p.party_id == *party))
            .await;
        let Some(Message::Party(state)) = got.message else {
            unreachable!()
        };
        bob_presence = state.presences.into_iter().find(|p| p.user_id == bob.id);
    }
    c.request(Message::PartyJoin(PartyJoin {
        party_id: kept.clone(),
    }))
    .await;
    c.event(|e| matches!(&e.message, Some(Message::Party(p)) if p.party_id == kept))
        .await;

    // alice removes bob from one party (he is sent `party_close` for it, as Nakama does) and
    // closes the other.
    let ack = a
        .request(Message::PartyRemove(metafi_proto::realtime::PartyRemove {
            party_id: removed_from.clone(),
            presence: bob_presence,
        }))
        .await;
    assert!(ack.message.is_none(), "{ack:?}");
    let ack = a
        .request(Message::PartyClose(PartyClose {
            party_id: closed.clone(),
        }))
        .await;
    assert!(ack.message.is_none(), "{ack:?}");
    b.event(|e| party_closed(e, &removed_from)).await;
    b.event(|e| party_closed(e, &closed)).await;
    // (The node-to-node note that bob left travels a hop behind what bob was told.)
    tokio::time::sleep(Duration::from_millis(200)).await;
    b.discard_backlog();

    // n1 stops: carol, still in its party, is told it closed; bob, in none, is told nothing.
    let n1 = nodes.remove(0);
    n1.stop().await;
    c.event(|e| party_closed(e, &kept)).await;
    b.assert_no_event(Duration::from_millis(500), |e| {
        matches!(&e.message, Some(Message::PartyClose(_)))
    })
    .await;
    for node in nodes {
        node.stop().await;
    }
}

fn message_in(e: &Envelope, channel_id: &str, text: &str) -> bool {
    matches!(&e.message, Some(Message::ChannelMessage(m)) if m.channel_id == channel_id && m.content == text)
}

fn left_event(e: &Envelope, channel_id: &str, who: &User) -> bool {
    matches!(&e.message, Some(Message::ChannelPresenceEvent(ev))
        if ev.channel_id == channel_id && ev.leaves.iter().any(|p| p.user_id == who.id))
}

/// In order per sender across nodes: alice (n1) joins a room where bob (n2) waits and sends a
/// message at once, without waiting for her join answer, then another and leaves at once.
/// bob hears her join before her first message and her last message before her leave, every
/// round: the presence events travel with n1's announcements, the messages as deliveries, and
/// n2 handles both in arrival order (with the two on two tasks, a quarter of the rounds had
/// the message first; with announcements merely taken first, every leave overtook).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_senders_presence_events_and_messages_keep_their_order_across_nodes() {
    let Some((nodes, _dirs)) = trio().await else {
        return;
    };
    let (alice, mut a) = player(&nodes[0]).await;
    let (_bob, mut b) = player(&nodes[1]).await;
    let mut inverted = Vec::new();
    for round in 0..40 {
        let room = format!("order-{round}-{}", uuid::Uuid::new_v4().simple());
        let channel = join_room(&mut b, &room).await;
        // Until n1 holds bob's presence (its books are where alice's message goes).
        tokio::time::sleep(Duration::from_millis(30)).await;
        let send = |content: &str| {
            Envelope::new(
                "",
                Message::ChannelMessageSend(metafi_proto::realtime::ChannelMessageSend {
                    channel_id: channel.id.clone(),
                    content: content.into(),
                }),
            )
        };
        a.send(&Envelope::new(
            "join",
            Message::ChannelJoin(ChannelJoin {
                target: room.clone(),
                r#type: 1,
                persistence: bool_value(false),
                hidden: None,
            }),
        ))
        .await;
        a.send(&send(r#"{"n":"first"}"#)).await;
        a.send(&send(r#"{"n":"last"}"#)).await;
        a.send(&Envelope::new(
            "",
            Message::ChannelLeave(metafi_proto::realtime::ChannelLeave {
                channel_id: channel.id.clone(),
            }),
        ))
        .await;
        let first = b
            .event(|e| {
                joined_event(e, &channel.id, &alice)
                    || message_in(e, &channel.id, r#"{"n":"first"}"#)
            })
            .await;
        if !joined_event(&first, &channel.id, &alice) {
            inverted.push((round, "first message before the join"));
        }
        let last = b
            .event(|e| {
                left_event(e, &channel.id, &alice) || message_in(e, &channel.id, r#"{"n":"last"}"#)
            })
            .await;
        if !message_in(&last, &channel.id, r#"{"n":"last"}"#) {
            inverted.push((round, "leave before the last message"));
        }
        b.discard_backlog();
        a.discard_backlog();
    }
    assert!(inverted.is_empty(), "out of order: {inverted:?}");
    for node in nodes {
        node.stop().await;
    }
}
