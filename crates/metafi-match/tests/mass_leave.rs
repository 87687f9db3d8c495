//! A mass disconnect: every player of a match leaving at once fits the call queue, however
//! small `match.call_queue_size` is (a 5,000-bot world was stopped when its bots all left
//! together); the queue is still bounded past the match's own presences.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use metafi_match::testing::ScriptedMatch;
use metafi_match::{Flow, MatchConfig};
use support::Engine;

fn engine(call_queue_size: usize) -> Engine {
    Engine::new(MatchConfig {
        executor_threads: 1,
        call_queue_size,
        ..MatchConfig::default()
    })
}

#[test]
fn every_player_leaving_at_once_does_not_stop_the_match() {
    let mut engine = engine(4);
    let (handler, _) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
    let id = engine.create("m", handler);
    let players: Vec<_> = (0..40)
        .map(|i| engine.join(&id, &format!("p{i}")))
        .collect();
    assert_eq!(engine.stats(&id).presences, 40);
    // All 40 leaves queue before the executor runs again: ten times the limit.
    for p in &players {
        engine.matches.leave(&id, p.session_id);
    }
    engine.step();
    assert!(
        engine.matches.get(&id.to_string()).unwrap().is_some(),
        "the match was stopped"
    );
    assert_eq!(engine.stats(&id).presences, 0);
}

#[test]
fn leaves_past_the_presences_and_the_limit_still_stop_the_match() {
    let mut engine = engine(4);
    let (handler, _) = ScriptedMatch::new(10, |_, _, _, _| Ok(Flow::Continue));
    let id = engine.create("m", handler);
    let p = engine.join(&id, "only");
    // One presence and a limit of 4: the sixth queued call overflows.
    for _ in 0..6 {
        engine.matches.leave(&id, p.session_id);
    }
    engine.run_for(std::time::Duration::from_millis(300));
    assert!(
        engine.matches.get(&id.to_string()).unwrap().is_none(),
        "the match still runs"
    );
}
