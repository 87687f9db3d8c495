//! What an operator (the console) sees of and does to one match: its presences, and ending it
//! with `match_terminate` and a grace period, players told they left, the listing dropping it.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::sync::Arc;
use std::time::Duration;

use metafi_match::testing::{ScriptedMatch, Sent, join_request, presence};
use metafi_match::{Flow, MatchError};
use support::Engine;
use uuid::Uuid;

fn sessions(state: &metafi_match::MatchState) -> Vec<Uuid> {
    state.presences.iter().map(|p| p.session_id).collect()
}

#[test]
fn an_authoritative_match_lists_its_joined_presences() {
    let mut engine = Engine::single();
    let (handler, _) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
    let id = engine.create("scripted", handler);
    let text = id.to_string();
    let empty = engine.matches.presences(&text).unwrap().unwrap();
    assert!(empty.presences.is_empty());

    let bob = engine.join(&id, "bob");
    let alice = engine.join(&id, "alice");
    // A pending join (accepted, not completed) is not in the match yet.
    let pending = presence("carol");
    let matches = engine.matches.clone();
    engine
        .drive(matches.join(&id, join_request(&pending)))
        .unwrap();
    engine.run_for(Duration::from_millis(250));
    let state = engine.matches.presences(&text).unwrap().unwrap();
    assert_eq!(
        sessions(&state),
        vec![alice.session_id, bob.session_id],
        "joined presences, by username"
    );
    assert_eq!(&*state.presences[0].username, "alice");
    assert!(state.tick.unwrap() >= 2, "{:?}", state.tick);

    engine.matches.leave(&id, bob.session_id);
    engine.step();
    let state = engine.matches.presences(&text).unwrap().unwrap();
    assert_eq!(sessions(&state), vec![alice.session_id]);

    assert_eq!(
        engine
            .matches
            .presences(&format!("{}.node1", Uuid::new_v4()))
            .unwrap(),
        None
    );
    assert_eq!(
        engine.matches.presences("nonsense").unwrap_err(),
        MatchError::InvalidId
    );
    assert!(matches!(
        engine
            .matches
            .presences(&format!("{}.othernode", Uuid::new_v4()))
            .unwrap_err(),
        MatchError::InvalidArgument { .. }
    ));
}

#[test]
fn ending_a_match_runs_terminate_then_tells_its_players_after_the_grace() {
    let mut engine = Engine::single();
    let (handler, calls) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
    let id = engine.create("scripted", handler);
    let (other, other_calls) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
    let other = engine.create("scripted", other);
    let a = engine.join(&id, "a");
    let b = engine.join(&id, "b");
    engine.outlet.take();

    let matches = engine.matches.clone();
    engine
        .drive(matches.end(&id.to_string(), Duration::from_secs(3)))
        .unwrap();
    assert_eq!(calls.lock().terminated_with, Some(3));
    // During the grace the match keeps ticking and stays listed.
    let ticks = calls.lock().ticks.len();
    engine.run_for(Duration::from_millis(2500));
    assert!(calls.lock().ticks.len() > ticks);
    assert!(engine.matches.get(&id.to_string()).unwrap().is_some());
    assert!(
        engine
            .outlet
            .take()
            .iter()
            .all(|s| !matches!(s, Sent::Presences { leaves, .. } if !leaves.is_empty()))
    );

    engine.run_for(Duration::from_millis(600));
    assert!(
        engine.matches.get(&id.to_string()).unwrap().is_none(),
        "the listing dropped it"
    );
    let sent = engine.outlet.take();
    let told: Vec<&Sent> = sent
        .iter()
        .filter(|s| matches!(s, Sent::Presences { leaves, .. } if !leaves.is_empty()))
        .collect();
    assert_eq!(told.len(), 1, "{sent:?}");
    let Sent::Presences { to, leaves, .. } = told[0] else {
        unreachable!()
    };
    let mut expected = vec![a.session_id, b.session_id];
    expected.sort();
    let (mut to, mut leaves) = (to.clone(), leaves.clone());
    to.sort();
    leaves.sort();
    assert_eq!(to, expected);
    assert_eq!(leaves, expected);
    assert_eq!(engine.matches.presences(&id.to_string()).unwrap(), None);

    // The other match was left alone, and an ended match cannot be ended again.
    assert_eq!(other_calls.lock().terminated_with, None);
    assert!(engine.matches.get(&other.to_string()).unwrap().is_some());
    let err = engine
        .drive(matches.end(&id.to_string(), Duration::from_secs(3)))
        .unwrap_err();
    assert_eq!(err, MatchError::NotFound);
}

#[test]
fn ending_with_no_grace_ends_at_once() {
    let mut engine = Engine::single();
    let (handler, calls) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
    let id = engine.create("scripted", handler);
    let a = engine.join(&id, "a");
    engine.outlet.take();
    let matches = engine.matches.clone();
    engine
        .drive(matches.end(&id.to_string(), Duration::ZERO))
        .unwrap();
    assert_eq!(calls.lock().terminated_with, Some(0));
    assert!(engine.matches.get(&id.to_string()).unwrap().is_none());
    assert!(engine.outlet.take().iter().any(|s| matches!(
        s,
        Sent::Presences { to, leaves, .. } if to == &vec![a.session_id] && leaves == &vec![a.session_id]
    )));
}

#[test]
fn a_relayed_match_lists_its_members_and_ends_by_removing_them_all() {
    let mut engine = Engine::single();
    let a = presence("a");
    let b = presence("b");
    let created = engine.matches.create_relayed(None, a.clone()).unwrap();
    engine
        .matches
        .complete_join(&created.match_id, a.session_id);
    let joined = engine
        .matches
        .join_relayed(created.match_id.uuid(), b.clone(), false)
        .unwrap();
    engine.matches.complete_join(&joined.match_id, b.session_id);
    let text = created.match_id.to_string();
    let state = engine.matches.presences(&text).unwrap().unwrap();
    assert_eq!(sessions(&state), vec![a.session_id, b.session_id]);
    assert_eq!(state.tick, None);
    engine.outlet.take();

    let matches = engine.matches.clone();
    engine
        .drive(matches.end(&text, Duration::from_secs(5)))
        .unwrap();
    assert!(engine.matches.get(&text).unwrap().is_none());
    assert_eq!(engine.matches.presences(&text).unwrap(), None);
    let sent = engine.outlet.take();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let Sent::Presences { to, leaves, .. } = &sent[0] else {
        panic!("{sent:?}")
    };
    let mut expected = vec![a.session_id, b.session_id];
    expected.sort();
    let (mut to, mut leaves) = (to.clone(), leaves.clone());
    to.sort();
    leaves.sort();
    assert_eq!((to, leaves), (expected.clone(), expected));
    // Their sessions are no longer in it: ending the session later changes nothing.
    engine.matches.session_ended(a.session_id);
    assert!(engine.outlet.take().is_empty());
    let err = engine
        .drive(matches.end(&text, Duration::ZERO))
        .unwrap_err();
    assert_eq!(err, MatchError::NotFound);
}

#[test]
fn a_failed_handler_is_recorded_among_its_modules_last_errors() {
    let mut engine = Engine::single();
    let errors = Arc::new(metafi_core::ModuleErrors::new(
        5,
        Arc::new(metafi_core::ManualClock::new(42)),
    ));
    assert!(engine.matches.set_error_log(errors.clone()));
    let (handler, _) = ScriptedMatch::new(10, |_, _, tick, _| {
        if tick == 2 {
            Err(metafi_match::HandlerError::failed("boom at two"))
        } else {
            Ok(Flow::Continue)
        }
    });
    let id = engine.create("exploding", handler);
    engine.run_for(Duration::from_millis(500));
    assert!(engine.matches.get(&id.to_string()).unwrap().is_none());
    let kept = errors.of("exploding");
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(kept[0].function, "match exploding match_loop");
    assert_eq!(kept[0].kind, "error");
    assert_eq!(kept[0].message, "boom at two");
    assert_eq!((kept[0].runtime.as_str(), kept[0].time_ms), ("native", 42));
}
