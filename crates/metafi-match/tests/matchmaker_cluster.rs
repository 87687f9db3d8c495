//! The matchmaker's side of the cluster (docs/CLUSTER.md, "Matchmaker"): copies of other
//! nodes' tickets match with this node's own, never count as its own, and are dropped by owner;
//! the listener hears every own add and remove (not the copies') and each group formed; a node
//! that does not run the pool never passes.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::HashMap;
use std::sync::Arc;

use metafi_core::ManualClock;
use metafi_match::testing::presence;
use metafi_match::{
    Formed, Matchmaker, MatchmakerConfig, Matchmaking, PoolListener, Presence, TicketCopy,
    TicketRequest,
};
use parking_lot::Mutex;
use uuid::Uuid;

fn request() -> TicketRequest {
    TicketRequest {
        query: "*".into(),
        min_count: 2,
        max_count: 2,
        count_multiple: 1,
        string_properties: HashMap::new(),
        numeric_properties: HashMap::new(),
    }
}

fn remote(node: &str) -> TicketCopy {
    TicketCopy {
        id: Uuid::new_v4(),
        created_ms: 1,
        presences: vec![Arc::new(Presence {
            user_id: Uuid::new_v4(),
            session_id: Uuid::new_v4(),
            username: Arc::from("far"),
            node: Arc::from(node),
        })],
        party_id: String::new(),
        request: request(),
    }
}

#[test]
fn a_copy_matches_an_own_ticket_and_is_not_resubmitted_as_own() {
    let mut pool = Matchmaker::new(MatchmakerConfig::default());
    let copy = remote("n2");
    pool.insert_copy(Arc::from("n2"), copy.clone()).unwrap();
    pool.insert_copy(Arc::from("n2"), copy.clone()).unwrap();
    assert_eq!(pool.len(), 1, "a copy held twice is one ticket");
    assert_eq!(pool.copies(), 1);
    assert!(pool.own_tickets().is_empty(), "a copy is not this node's");
    assert!(!pool.take_own(copy.id), "a copy is not taken as own");

    let mine = presence("near");
    let ticket = pool.add(mine.clone(), request(), 2).unwrap();
    let own = pool.own_tickets();
    assert_eq!(own.len(), 1);
    assert_eq!(own[0].id.to_string(), ticket);
    assert_eq!(own[0].presences, vec![mine]);

    let groups = pool.process();
    assert_eq!(groups.len(), 1);
    let mut tickets: Vec<String> = groups[0].iter().map(|e| e.ticket.clone()).collect();
    tickets.sort();
    let mut expected = vec![ticket, copy.id.to_string()];
    expected.sort();
    assert_eq!(tickets, expected, "the copy keeps its owner's ticket id");
    assert!(pool.is_empty());
}

#[test]
fn copies_are_dropped_by_owner_and_one_by_one() {
    let mut pool = Matchmaker::new(MatchmakerConfig::default());
    let (a, b, c) = (remote("n2"), remote("n2"), remote("n3"));
    for (owner, copy) in [("n2", &a), ("n2", &b), ("n3", &c)] {
        pool.insert_copy(Arc::from(owner), copy.clone()).unwrap();
    }
    pool.add(presence("own"), request(), 0).unwrap();
    assert!(
        !pool.remove_copy("n3", a.id),
        "only its owner removes a copy"
    );
    assert!(pool.remove_copy("n2", a.id));
    assert_eq!(pool.drop_copies(Some("n2")), 1);
    assert_eq!(pool.copies(), 1);
    assert_eq!(pool.drop_copies(None), 1);
    assert_eq!(pool.len(), 1, "the own ticket stays");
}

#[test]
fn a_copy_with_a_bad_request_is_refused() {
    let mut pool = Matchmaker::new(MatchmakerConfig::default());
    let mut copy = remote("n2");
    copy.request.min_count = 1;
    assert!(pool.insert_copy(Arc::from("n2"), copy).is_err());
    assert!(pool.is_empty());
}

#[derive(Debug, Default)]
struct Heard {
    added: Mutex<Vec<Uuid>>,
    removed: Mutex<Vec<Uuid>>,
    formed: Mutex<Vec<Formed>>,
}

impl PoolListener for Heard {
    fn added(&self, ticket: &TicketCopy) {
        self.added.lock().push(ticket.id);
    }
    fn removed(&self, tickets: &[Uuid]) {
        self.removed.lock().extend_from_slice(tickets);
    }
    fn formed(&self, formed: &Formed) {
        self.formed.lock().push(formed.clone());
    }
}

fn matchmaking() -> (Matchmaking, Arc<Heard>) {
    let mm = Matchmaking::new(
        MatchmakerConfig::default(),
        b"key",
        Arc::new(ManualClock::new(1_000)),
    );
    let heard = Arc::new(Heard::default());
    mm.set_listener(heard.clone());
    (mm, heard)
}

#[tokio::test]
async fn the_listener_hears_own_changes_and_formed_groups() {
    let (mm, heard) = matchmaking();
    let alice = presence("alice");
    let first = mm.add(alice.clone(), request()).unwrap();
    let second = mm.add(alice.clone(), request()).unwrap();
    mm.remove(alice.session_id, &first).unwrap();
    let party = mm
        .add_party("p.n1", vec![presence("x"), presence("y")], request())
        .unwrap();
    assert_eq!(mm.remove_party_all("p.n1"), 1);
    assert_eq!(mm.session_ended(alice.session_id), 1);
    let ids = |v: &[&str]| -> Vec<Uuid> { v.iter().map(|t| t.parse().unwrap()).collect() };
    assert_eq!(*heard.added.lock(), ids(&[&first, &second, &party]));
    assert_eq!(*heard.removed.lock(), ids(&[&first, &party, &second]));

    // A copy is no change of this node's: nothing is forwarded for it.
    let copy = remote("n2");
    mm.insert_copy(Arc::from("n2"), copy.clone()).unwrap();
    assert!(mm.remove_copy("n2", copy.id));
    assert_eq!(heard.added.lock().len(), 3);
    assert_eq!(heard.removed.lock().len(), 3);

    // Copies of nodes no longer live go; the live ones' stay.
    mm.insert_copy(Arc::from("n2"), remote("n2")).unwrap();
    mm.insert_copy(Arc::from("n3"), remote("n3")).unwrap();
    assert_eq!(mm.drop_copies_except(&["n3".to_owned()]), 1);
    assert_eq!(mm.drop_copies(None), 1);

    // A group with a copy is formed here and heard (to tell the copy's node).
    mm.insert_copy(Arc::from("n2"), copy.clone()).unwrap();
    let bob = presence("bob");
    mm.add(bob.clone(), request()).unwrap();
    let formed = mm.pass().await;
    assert_eq!(formed.len(), 1);
    assert_eq!(*heard.formed.lock(), formed);
    assert!(
        formed[0]
            .entries
            .iter()
            .any(|e| e.ticket == copy.id.to_string())
    );
}

#[tokio::test]
async fn a_node_that_does_not_run_the_pool_keeps_its_tickets_and_never_passes() {
    let (mm, heard) = matchmaking();
    mm.set_runs_pool(false);
    let (a, b) = (presence("a"), presence("b"));
    let ta = mm.add(a, request()).unwrap();
    mm.add(b, request()).unwrap();
    assert!(mm.pass().await.is_empty());
    assert_eq!(mm.len(), 2);
    assert!(heard.formed.lock().is_empty());
    let own = mm.with_own_tickets(|tickets| tickets.len());
    assert_eq!(own, 2);

    // The pool elsewhere matched `ta`: taken once; a second group naming it finds it gone.
    let id: Uuid = ta.parse().unwrap();
    assert_eq!(mm.take_own(&[id]), vec![id]);
    assert!(mm.take_own(&[id]).is_empty());
    assert_eq!(mm.len(), 1);

    mm.set_runs_pool(true);
    mm.add(presence("c"), request()).unwrap();
    assert_eq!(mm.pass().await.len(), 1);
}
