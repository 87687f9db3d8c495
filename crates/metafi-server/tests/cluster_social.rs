//! Status follows and the matchmaker across nodes (docs/CLUSTER.md, "Status follows" and
//! "Matchmaker"): nodes in one process on one PostgreSQL (`METAFI_TEST_POSTGRES_URL`) and one
//! NATS (`METAFI_TEST_NATS_URL`). A follower on one node hears a user on another come online,
//! change status and go offline (by disconnecting, or with a lost node), once each; two players
//! on two nodes match each other; a ticket removed, or whose session ended, leaves the pool
//! node; a lost pool node's successor, and a new node with a lower name, get every ticket
//! again and match them; twelve players spread over two nodes each match exactly once.
//! Without both variables the tests skip, unless `METAFI_REQUIRE_NATS=1` /
//! `METAFI_REQUIRE_POSTGRES=1` (as in `scripts/test.sh`).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::time::Duration;

use metafi_proto::realtime::{
    Envelope, MatchmakerAdd, MatchmakerMatched, MatchmakerMatchedId, MatchmakerRemove, Message,
    Ping, StatusFollow, StatusPresenceEvent, StatusUpdate, UserPresence,
};
use metafi_proto::wkt::string_value;
use metafi_testkit::cluster::{ClusterSpec, NodeDirs, eventually};
use metafi_testkit::{Http, Socket, TestNode, user};

fn copies(node: &TestNode) -> usize {
    node.node().cluster().unwrap().matchmaker_copies()
}

fn runs_pool(node: &TestNode) -> bool {
    node.node().cluster().unwrap().runs_matchmaker_pool()
}

fn remote_presences(node: &TestNode) -> usize {
    node.node().cluster().unwrap().remote_presences()
}

fn spec() -> ClusterSpec {
    ClusterSpec::new().config(|_, raw| raw.matchmaker.interval_sec = 1)
}

/// The first node (the lowest name) runs the matchmaker pool, alone.
async fn first_runs_the_pool(nodes: &[TestNode]) {
    eventually("the first node runs the pool, alone", || {
        runs_pool(&nodes[0]) && nodes[1..].iter().all(|n| !runs_pool(n))
    })
    .await;
}

/// `count` nodes named n1, n2, … that see each other, n1 running the matchmaker pool.
async fn cluster(count: usize) -> Option<(Vec<TestNode>, NodeDirs)> {
    let cluster = spec().start(count).await?;
    first_runs_the_pool(&cluster.nodes).await;
    Some(cluster.into_nodes())
}

fn status_event(e: &Envelope) -> bool {
    matches!(e.message, Some(Message::StatusPresenceEvent(_)))
}

async fn next_status(socket: &mut Socket) -> StatusPresenceEvent {
    match socket.event(status_event).await.message {
        Some(Message::StatusPresenceEvent(event)) => event,
        _ => unreachable!(),
    }
}

async fn follow(
    socket: &mut Socket,
    user_ids: Vec<String>,
    usernames: Vec<String>,
) -> Vec<UserPresence> {
    let answer = socket
        .request(Message::StatusFollow(StatusFollow {
            user_ids,
            usernames,
        }))
        .await;
    match answer.message {
        Some(Message::Status(status)) => status.presences,
        other => panic!("expected a status, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_follow_spans_the_nodes() {
    let Some((mut nodes, _dirs)) = cluster(2).await else {
        return;
    };
    let (base1, base2) = (nodes[0].base.clone(), nodes[1].base.clone());
    let fan = user(&Http::new(&base1)).await;
    let star = user(&Http::new(&base2)).await;
    let mut f = Socket::connect(&base1, &fan.token, "").await;
    assert!(
        follow(&mut f, vec![star.id.clone()], vec![])
            .await
            .is_empty()
    );

    // The star comes online on node 2: the fan on node 1 hears it, with an empty status.
    let mut s = Socket::connect(&base2, &star.token, "status=true&format=protobuf").await;
    let online = next_status(&mut f).await;
    assert_eq!(online.joins.len(), 1, "{online:?}");
    assert!(online.leaves.is_empty());
    assert_eq!(online.joins[0].user_id, star.id);
    assert_eq!(online.joins[0].status, string_value(""));

    // A status update: the new status joins, the old one leaves, as on one node.
    s.request(Message::StatusUpdate(StatusUpdate {
        status: string_value("in a match"),
    }))
    .await;
    let update = next_status(&mut f).await;
    assert_eq!(update.joins[0].status, string_value("in a match"));
    assert_eq!(update.leaves[0].status, string_value(""));

    // A follower on node 1 following by username gets the presence on node 2 in the answer.
    let other = user(&Http::new(&base1)).await;
    let mut o = Socket::connect(&base1, &other.token, "").await;
    let now = follow(&mut o, vec![], vec![star.username.clone()]).await;
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now[0].status, string_value("in a match"));

    // The star disconnects: both followers hear it go offline.
    drop(s);
    for socket in [&mut f, &mut o] {
        let gone = next_status(socket).await;
        assert!(gone.joins.is_empty(), "{gone:?}");
        assert_eq!(gone.leaves[0].user_id, star.id);
    }
    // Each change was heard once: no duplicate from the star's own node.
    f.assert_no_event(Duration::from_millis(300), status_event)
        .await;

    // Online again, then node 2 is lost (silent): the followers on node 1 hear the star go
    // offline once node 1 declares node 2 lost.
    let _s = Socket::connect(&base2, &star.token, "status=true").await;
    assert_eq!(next_status(&mut f).await.joins.len(), 1);
    assert_eq!(next_status(&mut o).await.joins.len(), 1);
    nodes[1].node_mut().halt_cluster().await;
    for socket in [&mut f, &mut o] {
        let gone = next_status(socket).await;
        assert!(gone.joins.is_empty(), "{gone:?}");
        assert_eq!(gone.leaves[0].user_id, star.id);
    }
    eventually("node 1 forgot node 2's presences", || {
        remote_presences(&nodes[0]) == 0
    })
    .await;
    f.request(Message::Ping(Ping {})).await;
    for node in nodes {
        node.stop().await;
    }
}

fn add(min: i32, max: i32) -> Message {
    Message::MatchmakerAdd(MatchmakerAdd {
        min_count: min,
        max_count: max,
        query: "*".into(),
        ..MatchmakerAdd::default()
    })
}

async fn ticket(socket: &mut Socket, message: Message) -> String {
    match socket.request(message).await.message {
        Some(Message::MatchmakerTicket(t)) => t.ticket,
        other => panic!("expected a ticket, got {other:?}"),
    }
}

async fn matched(socket: &mut Socket) -> MatchmakerMatched {
    let event = socket
        .event(|e| matches!(e.message, Some(Message::MatchmakerMatched(_))))
        .await;
    match event.message {
        Some(Message::MatchmakerMatched(m)) => m,
        _ => unreachable!(),
    }
}

fn token(m: &MatchmakerMatched) -> String {
    match &m.id {
        Some(MatchmakerMatchedId::Token(token)) => token.clone(),
        other => panic!("expected a token, got {other:?}"),
    }
}

/// Both were matched together: each with its own ticket and `self`, the same token.
fn assert_matched_together(
    a: &MatchmakerMatched,
    a_ticket: &str,
    b: &MatchmakerMatched,
    b_ticket: &str,
) {
    assert_eq!(a.ticket, a_ticket);
    assert_eq!(b.ticket, b_ticket);
    assert_eq!(token(a), token(b), "one group, one match");
    assert_eq!(a.users.len(), 2, "{a:?}");
    assert_eq!(b.users.len(), 2, "{b:?}");
    let session = |m: &MatchmakerMatched| {
        m.self_user
            .as_ref()
            .and_then(|u| u.presence.as_ref())
            .map(|p| p.session_id.clone())
            .unwrap()
    };
    assert_ne!(session(a), session(b));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_players_on_two_nodes_match_each_other() {
    let Some((nodes, _dirs)) = cluster(2).await else {
        return;
    };
    let (base1, base2) = (nodes[0].base.clone(), nodes[1].base.clone());
    let alice = user(&Http::new(&base1)).await;
    let bob = user(&Http::new(&base2)).await;
    let mut a = Socket::connect(&base1, &alice.token, "").await;
    let mut b = Socket::connect(&base2, &bob.token, "format=protobuf").await;

    // Bob's ticket (node 2) is held by the pool on node 1 too.
    let bob_ticket = ticket(&mut b, add(2, 2)).await;
    eventually("node 1's pool holds bob's ticket", || {
        copies(&nodes[0]) == 1
    })
    .await;
    let alice_ticket = ticket(&mut a, add(2, 2)).await;
    let (ma, mb) = (matched(&mut a).await, matched(&mut b).await);
    assert_matched_together(&ma, &alice_ticket, &mb, &bob_ticket);
    assert_eq!(copies(&nodes[0]), 0, "matched tickets leave the pool");

    // Bob's matched ticket left node 2 as well: he may hold `matchmaker.max_tickets` (3) new
    // ones, not a fourth, and the limit is his node's.
    for _ in 0..3 {
        ticket(&mut b, add(2, 2)).await;
    }
    let (code, message) = b.request_error(add(2, 2)).await;
    assert_eq!(code, 0, "{message}");
    assert!(message.contains("Too many matchmaker tickets"), "{message}");
    eventually("node 1 holds bob's three", || copies(&nodes[0]) == 3).await;
    for node in nodes {
        node.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_ticket_and_an_ended_session_leave_the_pool_node() {
    let Some((nodes, _dirs)) = cluster(2).await else {
        return;
    };
    let base2 = nodes[1].base.clone();
    let bob = user(&Http::new(&base2)).await;
    let mut b = Socket::connect(&base2, &bob.token, "").await;
    // Four players wanted: nothing matches while the tickets are there.
    let first = ticket(&mut b, add(4, 4)).await;
    let _second = ticket(&mut b, add(4, 4)).await;
    eventually("node 1 holds both", || copies(&nodes[0]) == 2).await;
    let ack = b
        .request(Message::MatchmakerRemove(MatchmakerRemove {
            ticket: first,
        }))
        .await;
    assert!(ack.message.is_none(), "{ack:?}");
    eventually("node 1 dropped the removed one", || copies(&nodes[0]) == 1).await;
    drop(b);
    eventually("node 1 dropped the ended session's ticket", || {
        copies(&nodes[0]) == 0
    })
    .await;
    for node in nodes {
        node.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_pool_node_is_replaced_and_its_tickets_come_back() {
    let Some((mut nodes, _dirs)) = cluster(3).await else {
        return;
    };
    let (base2, base3) = (nodes[1].base.clone(), nodes[2].base.clone());
    let bob = user(&Http::new(&base2)).await;
    let carol = user(&Http::new(&base3)).await;
    let mut c = Socket::connect(&base3, &carol.token, "").await;
    let carol_ticket = ticket(&mut c, add(2, 2)).await;
    eventually("n1's pool holds carol's ticket", || copies(&nodes[0]) == 1).await;

    // The pool node is lost without a word: n2 (the lowest name left) takes the pool over and
    // n3 resubmits carol's ticket to it.
    nodes[0].node_mut().halt_cluster().await;
    eventually("n2 runs the pool and holds carol's ticket", || {
        runs_pool(&nodes[1]) && !runs_pool(&nodes[2]) && copies(&nodes[1]) == 1
    })
    .await;

    // Bob on n2 matches with carol on n3.
    let mut b = Socket::connect(&base2, &bob.token, "").await;
    let bob_ticket = ticket(&mut b, add(2, 2)).await;
    let (mb, mc) = (matched(&mut b).await, matched(&mut c).await);
    assert_matched_together(&mb, &bob_ticket, &mc, &carol_ticket);
    for node in nodes {
        node.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_players_on_two_nodes_each_match_exactly_once() {
    let Some((nodes, _dirs)) = cluster(2).await else {
        return;
    };
    // Twelve players, alternately on each node, each wanting a group of two.
    let mut players = Vec::new();
    for i in 0..12 {
        let base = nodes[i % 2].base.clone();
        let player = user(&Http::new(&base)).await;
        let mut socket = Socket::connect(&base, &player.token, "").await;
        let ticket = ticket(&mut socket, add(2, 2)).await;
        players.push((socket, ticket));
    }
    let mut groups: std::collections::HashMap<String, Vec<String>> = Default::default();
    for (socket, ticket) in &mut players {
        let m = matched(socket).await;
        assert_eq!(&m.ticket, ticket);
        assert_eq!(m.users.len(), 2, "{m:?}");
        groups.entry(token(&m)).or_default().push(m.ticket);
    }
    assert_eq!(groups.len(), 6, "six groups: {groups:?}");
    assert!(
        groups.values().all(|tickets| tickets.len() == 2),
        "{groups:?}"
    );
    // Nobody is matched twice, and nothing is left in the pool.
    for (socket, _) in &mut players {
        socket
            .assert_no_event(Duration::from_millis(50), |e| {
                matches!(e.message, Some(Message::MatchmakerMatched(_)))
            })
            .await;
    }
    assert_eq!(copies(&nodes[0]), 0);
    drop(players);
    for node in nodes {
        node.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_lowest_node_takes_the_pool_over_with_every_ticket() {
    let Some(mut cluster) = spec().start(0).await else {
        return;
    };
    // n2 then n3: n2 runs the pool and holds carol's ticket (n3).
    if cluster.add_named("n2").await.is_none() {
        return; // no PostgreSQL
    }
    cluster.add_named("n3").await.unwrap();
    first_runs_the_pool(&cluster.nodes).await;
    let base3 = cluster.nodes[1].base.clone();
    let carol = user(&Http::new(&base3)).await;
    let mut c = Socket::connect(&base3, &carol.token, "").await;
    let carol_ticket = ticket(&mut c, add(2, 2)).await;
    eventually("n2's pool holds carol's ticket", || {
        copies(&cluster.nodes[0]) == 1
    })
    .await;

    // n1 joins: it runs the pool now, n2 dropped its copies, n3 resubmitted carol's ticket.
    cluster.add_named("n1").await.unwrap();
    let (n2_n3, n1) = cluster.nodes.split_at(2);
    let n1 = &n1[0];
    eventually("n1 runs the pool with carol's ticket; n2 no longer", || {
        runs_pool(n1) && copies(n1) == 1 && n2_n3.iter().all(|n| !runs_pool(n) && copies(n) == 0)
    })
    .await;

    // Alice on n1 matches with carol on n3.
    let alice = user(&Http::new(&n1.base)).await;
    let mut a = Socket::connect(&n1.base, &alice.token, "").await;
    let alice_ticket = ticket(&mut a, add(2, 2)).await;
    let (ma, mc) = (matched(&mut a).await, matched(&mut c).await);
    assert_matched_together(&ma, &alice_ticket, &mc, &carol_ticket);
    let (nodes, _dirs) = cluster.into_nodes();
    for node in nodes {
        node.stop().await;
    }
}
