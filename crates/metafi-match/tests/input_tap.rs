//! The input seam of served worlds (`MatchHandler::input_tap`): a handler with a tap gets its
//! members' match data as it arrives, not in `match_loop`; non-members are still refused; a
//! handler without one keeps Nakama's behaviour.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::sync::Arc;

use bytes::Bytes;
use metafi_match::testing::ScriptedMatch;
use metafi_match::{Flow, InputTap, MatchMessage, Queued};
use parking_lot::Mutex;
use support::Engine;
use uuid::Uuid;

#[derive(Debug, Default)]
struct Tap {
    got: Mutex<Vec<(Uuid, i64, Bytes)>>,
}

impl InputTap for Tap {
    fn input(&self, message: MatchMessage) {
        self.got
            .lock()
            .push((message.sender.session_id, message.op_code, message.data));
    }
}

#[test]
fn a_tapped_match_gets_member_data_at_once_and_its_loop_sees_none() {
    let mut engine = Engine::single();
    let seen = Arc::new(Mutex::new(0usize));
    let counted = seen.clone();
    let (inner, _calls) = ScriptedMatch::new(10, move |_, _, _, messages| {
        *counted.lock() += messages.len();
        Ok(Flow::Continue)
    });
    let tap = Arc::new(Tap::default());
    let id = engine.create("tapped", inner.with_tap(tap.clone()));
    let a = engine.join(&id, "a");
    let queued = engine
        .matches
        .send(&id, a.session_id, 1, Bytes::from_static(b"cmd"), true, &[]);
    assert_eq!(queued, Queued::Queued);
    // Delivered before any tick ran.
    assert_eq!(
        *tap.got.lock(),
        vec![(a.session_id, 1, Bytes::from_static(b"cmd"))]
    );
    // A non-member is refused as before, and never reaches the tap.
    let stranger = engine
        .matches
        .send(&id, Uuid::new_v4(), 1, Bytes::new(), true, &[]);
    assert_eq!(stranger, Queued::NotMember);
    assert_eq!(tap.got.lock().len(), 1);
    engine.run_for(std::time::Duration::from_millis(500));
    assert_eq!(*seen.lock(), 0, "match_loop saw tapped messages");
}

#[test]
fn an_untapped_match_keeps_its_messages_for_match_loop() {
    let mut engine = Engine::single();
    let seen = Arc::new(Mutex::new(0usize));
    let counted = seen.clone();
    let (inner, _calls) = ScriptedMatch::new(10, move |_, _, _, messages| {
        *counted.lock() += messages.len();
        Ok(Flow::Continue)
    });
    let id = engine.create("plain", inner);
    let a = engine.join(&id, "a");
    engine
        .matches
        .send(&id, a.session_id, 1, Bytes::from_static(b"x"), true, &[]);
    engine.run_for(std::time::Duration::from_millis(500));
    assert_eq!(*seen.lock(), 1);
}
