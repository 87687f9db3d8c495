//! How a JavaScript match's dispatcher reads the presences a script passes back: the object the
//! engine handed out as a message's sender stands for that member (recognised by the object,
//! without reading it); an object the script built is read by its fields, even with a member's
//! `sessionId` (as Lua reads a table it built, and as Nakama's runtime reads every presence);
//! the presence objects of `matchJoin` are read by their fields too and reach their sessions.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use metafi_core::SystemClock;
use metafi_match::testing::{join_request, presence};
use metafi_match::{
    Executor, HandlerError, JoinOutcome, MatchConfig, MatchContext, MatchHandler, MatchSpec,
    Matches, OutgoingData, Outlet, Params, PresenceEvent, SystemMonotonic,
};
use metafi_runtime::EngineFactory;
use metafi_runtime_js::JsEngine;
use parking_lot::Mutex;
use uuid::Uuid;

/// Only a hang guard, never a timing assertion.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// Match data as sent: op code, recipients, and the sender's user id, session id and username.
type Data = (i64, Vec<Uuid>, Option<(Uuid, Uuid, String)>);

/// Records match data with the sender's fields (the engine's `RecordingOutlet` keeps only its
/// session id).
#[derive(Debug, Default)]
struct Senders(Mutex<Vec<Data>>);

impl Outlet for Senders {
    fn send_data(&self, recipients: &[Uuid], data: &OutgoingData<'_>) {
        let sender = data
            .sender
            .map(|p| (p.user_id, p.session_id, p.username.to_string()));
        self.0
            .lock()
            .push((data.op_code, recipients.to_vec(), sender));
    }

    fn send_presences(&self, _recipients: &[Uuid], _event: &PresenceEvent<'_>) {}

    fn is_connected(&self, _session_id: Uuid) -> bool {
        true
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_members_sender_object_is_the_member_and_a_built_one_is_read_by_its_fields() {
    let dir = tempfile::tempdir().unwrap();
    let setup = support::vm_setup("match_senders", dir.path()).await;
    let outlet = Arc::new(Senders::default());
    let (matches, seeds) = Matches::new(
        MatchConfig {
            executor_threads: 1,
            ..MatchConfig::default()
        },
        "node1",
        outlet.clone(),
        Arc::new(SystemMonotonic),
        Arc::new(SystemClock),
    );
    let executor = Executor::spawn(seeds).unwrap();
    let engine = Arc::new(JsEngine::new());
    let spec = MatchSpec {
        handler_name: Arc::from("senders"),
        runtime: "js",
        factory: Box::new(
            move |_: &MatchContext| -> Result<Box<dyn MatchHandler>, HandlerError> {
                engine.create_match(setup, "senders")
            },
        ),
        params: Params::new(),
    };
    let id = matches.create(spec).await.unwrap();
    let (alice, bob) = (presence("alice"), presence("bob"));
    for player in [&alice, &bob] {
        match matches.join(&id, join_request(player)).await.unwrap() {
            JoinOutcome::Accepted { is_new: true, .. } => {
                matches.complete_join(&id, player.session_id)
            }
            other => panic!("join refused: {other:?}"),
        }
    }
    // A message is taken only from a member the match has seen join: send until the match
    // answers one with both players joined.
    let both_joined = |sent: &[Data]| sent.iter().any(|(op, to, _)| *op == 3 && to.len() == 2);
    let until = Instant::now() + HANG_GUARD;
    while !both_joined(&outlet.0.lock()) {
        assert!(Instant::now() < until, "the match never answered");
        matches.send(
            &id,
            alice.session_id,
            9,
            Bytes::from_static(b"hi"),
            true,
            &[],
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    matches.stop();
    executor.join();

    let sent = outlet.0.lock().clone();
    let first = |op| sent.iter().find(|(o, _, _)| *o == op).unwrap().clone();
    let me = Some((alice.user_id, alice.session_id, "alice".to_owned()));
    assert_eq!(first(1), (1, vec![alice.session_id], me));
    assert_eq!(
        first(2),
        (
            2,
            vec![alice.session_id],
            Some((alice.user_id, alice.session_id, "renamed".to_owned()))
        ),
        "a presence the script built is read by its fields"
    );
    let (_, mut to, sender) = sent
        .iter()
        .find(|(op, to, _)| *op == 3 && to.len() == 2)
        .unwrap()
        .clone();
    to.sort();
    let mut both = vec![alice.session_id, bob.session_id];
    both.sort();
    assert_eq!((to, sender), (both, None));
}
