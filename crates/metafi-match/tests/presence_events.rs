//! The presence seam of served worlds (`MatchHandler::presence_events`): with
//! `OwnJoinOnly` a joiner is told of its own join only, nobody hears of other joins or leaves,
//! and join answers list no other members — a ramp to n players sends n events, not n²/2.
//! The default keeps Nakama's behaviour (every member hears every join).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::sync::Arc;

use metafi_match::testing::{ScriptedMatch, Sent, join_request, presence};
use metafi_match::{Flow, JoinOutcome, MatchId, Presence, PresenceEvents};
use support::Engine;

/// Joins `n` players one after another; returns them and the members each join answer listed.
fn ramp(engine: &mut Engine, id: &MatchId, n: usize) -> (Vec<Arc<Presence>>, Vec<usize>) {
    let mut joined = Vec::new();
    let mut listed = Vec::new();
    for k in 0..n {
        let p = presence(&format!("p{k}"));
        let matches = engine.matches.clone();
        match engine.drive(matches.join(id, join_request(&p))).unwrap() {
            JoinOutcome::Accepted { presences, .. } => listed.push(presences.len()),
            other => panic!("join refused: {other:?}"),
        }
        engine.matches.complete_join(id, p.session_id);
        engine.step();
        joined.push(p);
    }
    (joined, listed)
}

/// A presence event as sent: (recipients, joined sessions).
type Told = (Vec<uuid::Uuid>, Vec<uuid::Uuid>);

/// The presence events the outlet saw, and how many recipients join and leave events had.
fn presence_traffic(engine: &Engine) -> (Vec<Told>, usize, usize) {
    let mut events = Vec::new();
    let (mut joins_told, mut leaves_told) = (0, 0);
    for sent in engine.outlet.take() {
        if let Sent::Presences {
            to, joins, leaves, ..
        } = sent
        {
            if !joins.is_empty() {
                joins_told += to.len();
            }
            if !leaves.is_empty() {
                leaves_told += to.len();
            }
            events.push((to, joins));
        }
    }
    (events, joins_told, leaves_told)
}

fn create(engine: &mut Engine, events: PresenceEvents) -> MatchId {
    let (inner, _calls) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
    engine.create("quiet", inner.with_presence_events(events))
}

#[test]
fn own_join_only_tells_each_joiner_of_itself_and_nobody_of_leaves() {
    let mut engine = Engine::single();
    let id = create(&mut engine, PresenceEvents::OwnJoinOnly);
    engine.outlet.take();
    let (players, listed) = ramp(&mut engine, &id, 10);
    assert_eq!(listed, vec![0; 10], "join answers list no other members");
    let (events, joins_told, _) = presence_traffic(&engine);
    assert_eq!(joins_told, 10, "one event per join: {events:?}");
    for (p, (to, joins)) in players.iter().zip(&events) {
        assert_eq!(to, &vec![p.session_id], "told to the joiner only");
        assert_eq!(joins, &vec![p.session_id], "its own join");
    }
    engine.matches.leave(&id, players[0].session_id);
    engine.step();
    let (_, _, leaves_told) = presence_traffic(&engine);
    assert_eq!(leaves_told, 0, "a leave is told to nobody");
    // The leave still happened: the match has 9 members.
    let info = engine.matches.get(&id.to_string()).unwrap().unwrap();
    assert_eq!(info.size, 9);
}

#[test]
fn everyone_is_nakamas_quadratic_ramp() {
    let mut engine = Engine::single();
    let id = create(&mut engine, PresenceEvents::Everyone);
    engine.outlet.take();
    let (players, listed) = ramp(&mut engine, &id, 10);
    assert_eq!(
        listed,
        (0..10).collect::<Vec<_>>(),
        "join answers list the members"
    );
    let (_, joins_told, _) = presence_traffic(&engine);
    // The k-th joiner's event goes to all k members (itself included): 1 + 2 + … + 10.
    assert_eq!(joins_told, 55);
    engine.matches.leave(&id, players[0].session_id);
    engine.step();
    let (_, _, leaves_told) = presence_traffic(&engine);
    assert_eq!(leaves_told, 9);
}
