//! A mass disconnect: every player of a match leaving at once fits the call queue, however
//! small `match.call_queue_size` is (a 5,000-bot world was stopped when its bots all left
//! together); the queue is still bounded past the match's own presences. Only a member's leave
//! is queued, once, and only an accepted join's completion, once: a client naming a match it is
//! not in (or repeating its own leave or completion) could otherwise fill the queue and stop
//! the match.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::sync::Arc;

use metafi_match::testing::{Calls, ScriptedMatch, Sent, join_request, presence};
use metafi_match::{Flow, MatchConfig, MatchId, PresenceReason};
use parking_lot::Mutex;
use support::Engine;

fn engine(call_queue_size: usize) -> Engine {
    Engine::new(MatchConfig {
        executor_threads: 1,
        call_queue_size,
        ..MatchConfig::default()
    })
}

/// A match whose loop does nothing, and what its handler saw.
fn idle_match(engine: &mut Engine, name: &str) -> (MatchId, Arc<Mutex<Calls>>) {
    let (handler, calls) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
    (engine.create(name, handler), calls)
}

fn is_running(engine: &Engine, id: &MatchId) -> bool {
    engine.matches.get(&id.to_string()).unwrap().is_some()
}

#[test]
fn every_player_leaving_at_once_does_not_stop_the_match() {
    let mut engine = engine(4);
    let (id, _) = idle_match(&mut engine, "m");
    let players: Vec<_> = (0..40)
        .map(|i| engine.join(&id, &format!("p{i}")))
        .collect();
    assert_eq!(engine.stats(&id).presences, 40);
    // All 40 leaves queue before the executor runs again: ten times the limit.
    for p in &players {
        engine.matches.leave(&id, p.session_id);
    }
    engine.step();
    assert!(is_running(&engine, &id), "the match was stopped");
    assert_eq!(engine.stats(&id).presences, 0);
}

#[test]
fn calls_past_the_presences_and_the_limit_still_stop_the_match() {
    let mut engine = engine(4);
    let (id, _) = idle_match(&mut engine, "m");
    let matches = engine.matches.clone();
    let players: Vec<_> = (0..8).map(|i| presence(&format!("p{i}"))).collect();
    for p in &players {
        engine.drive(matches.join(&id, join_request(p))).unwrap();
    }
    assert_eq!(engine.stats(&id).pending_joins, 8);
    // Eight presences and a limit of 4: each completes and leaves before the executor runs
    // (16 calls for a bound of 12), so the queue overflows.
    for p in &players {
        engine.matches.complete_join(&id, p.session_id);
        engine.matches.leave(&id, p.session_id);
    }
    engine.run_for(std::time::Duration::from_millis(300));
    assert!(!is_running(&engine, &id), "the match still runs");
}

/// Only an accepted join waiting in the match completes, once: completions naming a stranger
/// or a member (from a client, or cast by another node) queue nothing and change nothing.
#[test]
fn completions_without_an_accepted_join_neither_stop_the_match_nor_reach_its_handler() {
    let mut engine = engine(4);
    let (id, calls) = idle_match(&mut engine, "m");
    let member = engine.join(&id, "member");
    let stranger = presence("stranger");
    let pending = presence("pending");
    let matches = engine.matches.clone();
    engine
        .drive(matches.join(&id, join_request(&pending)))
        .unwrap();
    engine.outlet.take();
    let joins_before = calls.lock().joins.len();
    // Ten times the limit before the executor runs again.
    for _ in 0..40 {
        engine.matches.complete_join(&id, stranger.session_id);
        engine.matches.complete_join(&id, member.session_id);
    }
    engine.run_for(std::time::Duration::from_millis(300));
    assert!(is_running(&engine, &id), "the match was stopped");
    assert_eq!(
        calls.lock().joins.len(),
        joins_before,
        "{:?}",
        calls.lock().joins
    );
    assert!(engine.outlet.take().is_empty(), "presence events were sent");
    assert_eq!(engine.stats(&id).presences, 1);

    // The pending join completes, once.
    for _ in 0..40 {
        engine.matches.complete_join(&id, pending.session_id);
    }
    engine.step();
    assert!(is_running(&engine, &id), "the match was stopped");
    assert_eq!(calls.lock().joins.len(), joins_before + 1);
    assert_eq!(calls.lock().joins.last(), Some(&pending.session_id));
    assert_eq!(engine.stats(&id).presences, 2);
}

#[test]
fn leaves_from_sessions_not_in_the_match_neither_stop_it_nor_reach_its_handler() {
    let mut engine = engine(4);
    let (id, calls) = idle_match(&mut engine, "m");
    let (other, _) = idle_match(&mut engine, "other");
    let member = engine.join(&id, "member");
    // In another match of this node, and never in this one.
    let elsewhere = engine.join(&other, "elsewhere");
    let stranger = presence("stranger");
    engine.outlet.take();
    // Ten times the limit before the executor runs again.
    for _ in 0..40 {
        engine.matches.leave(&id, stranger.session_id);
        engine.matches.leave(&id, elsewhere.session_id);
    }
    engine.run_for(std::time::Duration::from_millis(300));
    assert!(is_running(&engine, &id), "the match was stopped");
    assert!(calls.lock().leaves.is_empty(), "{:?}", calls.lock().leaves);
    assert!(engine.outlet.take().is_empty(), "presence events were sent");
    assert_eq!(engine.stats(&id).presences, 1);
    assert_eq!(engine.stats(&other).presences, 1);

    // The member's own leave still goes through.
    engine.matches.leave(&id, member.session_id);
    engine.step();
    assert_eq!(
        calls.lock().leaves,
        [(member.session_id, PresenceReason::Leave)]
    );
    assert_eq!(engine.stats(&id).presences, 0);
}

#[test]
fn a_members_repeated_leaves_reach_its_handler_once() {
    let mut engine = engine(4);
    let (id, calls) = idle_match(&mut engine, "m");
    let p = engine.join(&id, "player");
    for _ in 0..40 {
        engine.matches.leave(&id, p.session_id);
    }
    engine.step();
    assert!(is_running(&engine, &id), "the match was stopped");
    assert_eq!(calls.lock().leaves, [(p.session_id, PresenceReason::Leave)]);

    // Back in, it may leave again; and a session's end after its leave leaves nothing more.
    engine.join_as(&id, &p);
    engine.matches.leave(&id, p.session_id);
    engine.matches.session_ended(p.session_id);
    engine.step();
    assert_eq!(
        calls.lock().leaves,
        [
            (p.session_id, PresenceReason::Leave),
            (p.session_id, PresenceReason::Leave)
        ]
    );
}

#[test]
fn a_pending_joins_leave_is_queued() {
    let mut engine = engine(4);
    let (id, calls) = idle_match(&mut engine, "m");
    let p = presence("pending");
    let matches = engine.matches.clone();
    engine.drive(matches.join(&id, join_request(&p))).unwrap();
    assert_eq!(engine.stats(&id).pending_joins, 1);
    engine.matches.leave(&id, p.session_id);
    engine.step();
    assert_eq!(engine.stats(&id).pending_joins, 0);
    // It never joined: no leave callback, and its late completion is not a join.
    engine.matches.complete_join(&id, p.session_id);
    engine.step();
    assert!(calls.lock().joins.is_empty());
    assert!(calls.lock().leaves.is_empty());
}

#[test]
fn a_relayed_matchs_non_member_leave_announces_nothing() {
    let engine = engine(4);
    let (a, b, stranger) = (presence("a"), presence("b"), presence("stranger"));
    let id = engine
        .matches
        .create_relayed(None, a.clone())
        .unwrap()
        .match_id;
    engine
        .matches
        .join_relayed(id.uuid(), b.clone(), false)
        .unwrap();
    engine.outlet.take();
    for _ in 0..40 {
        engine.matches.leave(&id, stranger.session_id);
    }
    assert!(engine.outlet.take().is_empty(), "presence events were sent");
    engine.matches.leave(&id, b.session_id);
    assert_eq!(
        engine.outlet.take(),
        [Sent::Presences {
            to: vec![a.session_id],
            match_id: id.to_string(),
            joins: vec![],
            leaves: vec![b.session_id],
        }]
    );
}
