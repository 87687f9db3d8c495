//! Seats across a cluster (`docs/MATCHES.md`, "Seats"; `docs/CLUSTER.md`, "Seats on other
//! nodes"): two nodes in one process, one PostgreSQL (`METAFI_TEST_POSTGRES_URL`) and one NATS
//! (`METAFI_TEST_NATS_URL`).
//!
//! - Node 1 refuses every new match (admission forced full): its finders get seats on node 2,
//!   which fills its matches one after another, and every player then joins from node 1.
//! - Reservations from both nodes race for one match of node 2: exactly its seats are promised;
//!   finders on both nodes at once never promise more than a match's seats.
//! - A reservation in a match of a node that is gone answers false; the finder seats here.
//!
//! No timing assertions: the finders all answer before any join is sent (the widest window).
//! Without both variables the tests skip, unless `METAFI_REQUIRE_NATS=1` /
//! `METAFI_REQUIRE_POSTGRES=1` (as in `scripts/test.sh`).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::HashMap;
use std::time::Duration;

use futures_util::future::join_all;
use metafi_match::ListQuery;
use metafi_proto::realtime::{MatchJoin, MatchJoinId, Message};
use metafi_testkit::cluster::{ClusterSpec, Pair, TestCluster, eventually};
use metafi_testkit::{Http, Socket, TestNode, user};
use serde_json::Map;
use tokio::time::Instant;
use uuid::Uuid;

/// A match of at most 10 players that counts reserved seats: it admits while players plus
/// pending joins (reserved seats included; the joiner's own seat is not counted against it)
/// stay under 10.
const SEAT: &str = r#"
return {
  match_init = function(context, params) return { n = 0 }, 10, '{"kind":"seat"}' end,
  match_join_attempt = function(context, d, tick, state, presence, metadata)
    if state.n + (context.match_pending_joins or 0) >= 10 then
      return state, false, "match full"
    end
    return state, true
  end,
  match_join = function(context, d, tick, state, presences)
    state.n = state.n + #presences
    return state
  end,
  match_leave = function(context, d, tick, state, presences)
    state.n = state.n - #presences
    return state
  end,
  match_loop = function(context, d, tick, state, messages) return state end,
  match_terminate = function(context, d, tick, state, grace) return state end,
  match_signal = function(context, d, tick, state, data) return state, data end,
}
"#;

const SEATS: u32 = 10;

/// Node 1 (full when `n1_full`) and node 2, seeing each other.
async fn pair(n1_full: bool) -> Option<Pair> {
    let spec = ClusterSpec::new()
        .module("seat.lua", SEAT)
        .small()
        .config(move |name, raw| {
            raw.cluster.match_listing_interval_ms = 100;
            // Far longer than a slow machine takes between a find and its join.
            raw.matches.seat_reservation_ms = 120_000;
            if n1_full && name == "n1" {
                // Every new match is projected to need a whole core: admission refuses it.
                raw.matches.new_match_cpu_us = 1_000_000;
            } else {
                // A busy test machine's tick lateness must not make this node refuse matches.
                raw.matches.admission = false;
            }
        });
    spec.start(2).await.map(TestCluster::pair)
}

/// Polls an async `done` every 10 ms for up to 5 s.
async fn eventually_async<F: std::future::Future<Output = bool>>(
    what: &str,
    mut done: impl FnMut() -> F,
) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done().await {
        assert!(Instant::now() < deadline, "not within 5 s: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn seat_query() -> ListQuery {
    ListQuery {
        limit: 1,
        authoritative: Some(true),
        ..ListQuery::default()
    }
}

async fn find(node: &TestNode, user: Uuid) -> Result<String, metafi_core::CoreError> {
    node.nk()
        .match_find_seat("seat", Map::new(), seat_query(), user, SEATS)
        .await
}

/// The size `node` lists for match `id` (`None`: not listed).
async fn listed_size(node: &TestNode, id: &str) -> Option<i32> {
    node.nk().match_get(id).await.unwrap().map(|info| info.size)
}

async fn join_answer(socket: &mut Socket, id: &str) -> Message {
    socket
        .request(Message::MatchJoin(MatchJoin {
            id: Some(MatchJoinId::MatchId(id.into())),
            metadata: HashMap::new(),
        }))
        .await
        .message
        .unwrap()
}

/// Node 1 refuses new matches ("Node is full"): twenty players finding seats on node 1 at once
/// are all seated on node 2, which fills two matches of ten one after another; each player then
/// joins from node 1 (the seat was kept for it), and a stranger is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_node_seats_its_players_on_a_peer() {
    let Some(p) = pair(true).await else { return };
    // Node 1 really is full.
    let refused =
        p.n1.nk()
            .match_create("seat", Map::new())
            .await
            .unwrap_err();
    assert!(refused.to_string().contains("Node is full"), "{refused}");

    let http = Http::new(&p.n1.base);
    let mut players = Vec::new();
    for _ in 0..20 {
        let who = user(&http).await;
        let socket = Socket::connect(&p.n1.base, &who.token, "").await;
        players.push((who, socket));
    }
    let found = join_all(
        players
            .iter()
            .map(|(who, _)| find(&p.n1, who.id.parse().unwrap())),
    )
    .await;
    let mut per_match: HashMap<String, usize> = HashMap::new();
    let mut ids = Vec::new();
    for answer in found {
        let id = answer.expect("every finder on the full node gets a seat");
        assert!(id.ends_with(".n2"), "seated on node 2: {id}");
        *per_match.entry(id.clone()).or_default() += 1;
        ids.push(id);
    }
    assert_eq!(per_match.len(), 2, "two full matches: {per_match:?}");
    for (id, seats) in &per_match {
        assert_eq!(*seats, 10, "{id}");
        // Node 2 counts the promised seats in the size it lists.
        assert_eq!(listed_size(&p.n2, id).await, Some(10), "{id}");
    }
    // Every seat is promised: a stranger on node 1 is refused by the match…
    let stranger = user(&http).await;
    let mut stranger_socket = Socket::connect(&p.n1.base, &stranger.token, "").await;
    match join_answer(&mut stranger_socket, &ids[0]).await {
        Message::Error(e) => assert!(e.message.contains("match full"), "{e:?}"),
        other => panic!("a stranger took a promised seat: {other:?}"),
    }
    // …while every seat holder joins from node 1, all at once.
    let joins = join_all(
        players
            .iter_mut()
            .zip(&ids)
            .map(|((_, socket), id)| async move { (id.clone(), join_answer(socket, id).await) }),
    )
    .await;
    for (id, answer) in joins {
        match answer {
            Message::Match(m) => assert_eq!(m.match_id, id),
            other => panic!("a seat holder was not let in to {id}: {other:?}"),
        }
    }
    p.n1.stop().await;
    p.n2.stop().await;
}

/// Reservations from both nodes (twelve from node 1, six from node 2) race for one match of
/// node 2: exactly ten are granted. Then
/// thirty finders, half on each node, all at once: every one gets a seat and no match is
/// promised more than ten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finders_on_both_nodes_never_overfill_a_match() {
    let Some(p) = pair(false).await else { return };
    let id = p.n2.nk().match_create("seat", Map::new()).await.unwrap();
    eventually_async("node 1 lists node 2's match", || {
        let (n1, id) = (&p.n1, id.clone());
        async move { listed_size(n1, &id).await.is_some() }
    })
    .await;

    let reserve = |node: &TestNode| {
        let (nk, id) = (node.nk(), id.clone());
        async move {
            nk.match_reserve_seat(&id, Uuid::new_v4(), SEATS)
                .await
                .unwrap()
        }
    };
    // More from node 1 than the match has seats, fewer from node 2: without reservations
    // across nodes fewer than ten would be granted, without one check for both more.
    let mut races = Vec::new();
    for i in 0..12 {
        races.push(reserve(&p.n1));
        if i % 2 == 0 {
            races.push(reserve(&p.n2));
        }
    }
    let granted = join_all(races).await.into_iter().filter(|r| *r).count();
    assert_eq!(
        granted, SEATS as usize,
        "exactly the match's seats are promised"
    );
    assert_eq!(listed_size(&p.n2, &id).await, Some(10));
    // A full match refuses another reservation from either node.
    assert!(!reserve(&p.n1).await);
    assert!(!reserve(&p.n2).await);

    let mut finders = Vec::new();
    for i in 0..30 {
        let node = if i % 2 == 0 { &p.n1 } else { &p.n2 };
        finders.push(find(node, Uuid::new_v4()));
    }
    let mut per_match: HashMap<String, usize> = HashMap::new();
    for answer in join_all(finders).await {
        let seat = answer.expect("every finder gets a seat");
        assert_ne!(seat, id, "the full match promised another seat");
        *per_match.entry(seat).or_default() += 1;
    }
    assert_eq!(per_match.values().sum::<usize>(), 30);
    for (seat, promised) in &per_match {
        assert!(*promised <= 10, "{promised} seats promised in {seat}");
        let home = if seat.ends_with(".n1") { &p.n1 } else { &p.n2 };
        let size = listed_size(home, seat).await.unwrap();
        assert!(size <= 10, "{seat} lists {size}");
        assert_eq!(
            size as usize, *promised,
            "{seat}: its node counts each seat once"
        );
    }
    p.n1.stop().await;
    p.n2.stop().await;
}

/// A reservation in a match whose node is gone answers false (not an error, not a hang), and
/// a finder no longer looks there: it seats its player on its own node.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seat_on_a_lost_node_is_refused_cleanly() {
    let Some(mut p) = pair(false).await else {
        return;
    };
    let id = p.n2.nk().match_create("seat", Map::new()).await.unwrap();
    eventually_async("node 1 lists node 2's match", || {
        let (n1, id) = (&p.n1, id.clone());
        async move { listed_size(n1, &id).await.is_some() }
    })
    .await;
    // Before node 2 goes, node 1 reserves there (the remote path works).
    assert!(
        p.n1.nk()
            .match_reserve_seat(&id, Uuid::new_v4(), SEATS)
            .await
            .unwrap()
    );
    p.n2.node_mut().halt_cluster().await;
    eventually("node 1 lost node 2", || {
        p.n1.node().cluster().unwrap().peers().is_empty()
    })
    .await;
    assert!(
        !p.n1
            .nk()
            .match_reserve_seat(&id, Uuid::new_v4(), SEATS)
            .await
            .unwrap(),
        "a seat on a lost node"
    );
    let seat = find(&p.n1, Uuid::new_v4()).await.unwrap();
    assert!(seat.ends_with(".n1"), "seated on node 1: {seat}");
    p.n1.stop().await;
    p.n2.stop().await;
}
