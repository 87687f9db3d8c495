//! Match data keep their delivery class across nodes (two nodes in one process, one PostgreSQL
//! `METAFI_TEST_POSTGRES_URL` and one NATS `METAFI_TEST_NATS_URL`): a Lua handler on node 1
//! broadcasts one message per class to a QUIC player on node 2, and a relayed match of node 1
//! carries each class its QUIC players name both ways between the nodes. What a player sees is
//! what it would see on the match's own node: each message names its class, and node 2's QUIC
//! link sends it on that class's path (`metafi_quic_messages_sent_total{side="server",class}`,
//! as `quic_script_match` reads it on one node). Without both variables the tests skip, unless
//! `METAFI_REQUIRE_NATS=1` / `METAFI_REQUIRE_POSTGRES=1` (as in `scripts/test.sh`).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

#[allow(dead_code)] // the shared helpers: this file uses the QUIC player only
mod support;

use std::time::Duration;

use bytes::Bytes;
use metafi_client::{DeliveryClass, Events};
use metafi_proto::realtime::{Envelope, Match, MatchCreate, MatchData, Message};
use metafi_testkit::cluster::{ClusterSpec, Pair, TestCluster};
use metafi_testkit::{Http, TestNode};
use support::quic::quic_socket;

const WAIT: Duration = Duration::from_secs(10);

/// The QUIC path counters are process-wide (both nodes and both tests report to one
/// recorder), so the tests, which count exactly, take turns.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A match that, on op 100 from anyone, broadcasts one message per class that is not the
/// default stream (the class names are `docs/MATCHES.md`'s).
const CLASSES_MATCH: &str = r#"
return {
  match_init = function(context, params) return {}, 10, "" end,
  match_join_attempt = function(context, d, tick, state, presence, metadata) return state, true end,
  match_join = function(context, d, tick, state, presences) return state end,
  match_leave = function(context, d, tick, state, presences) return state end,
  match_loop = function(context, d, tick, state, messages)
    for _, m in ipairs(messages) do
      if m.op_code == 100 then
        d.broadcast_message(1, "m1", nil, nil, { class = "reliable_ordered", lane = "talk" })
        d.broadcast_message(2, "m2", nil, nil, { class = "reliable_unordered" })
        d.broadcast_message(3, "m3", nil, nil, { class = "unreliable" })
        d.broadcast_message(4, "m4", nil, nil, { class = "unreliable_latest", lane = "pos" })
      end
    end
    return state
  end,
  match_terminate = function(context, d, tick, state, grace) return state end,
  match_signal = function(context, d, tick, state, data) return state, data end,
}
"#;

const RPCS: &str = r#"
local nk = require("nakama")
nk.register_rpc(function(context, payload)
  return nk.match_create("classes", {})
end, "create")
"#;

/// The classes of ops 1–4, and the QUIC counter's label of each.
fn classes() -> [(DeliveryClass, &'static str); 4] {
    [
        (DeliveryClass::ordered("talk"), "reliable_ordered"),
        (DeliveryClass::ReliableUnordered, "reliable_unordered"),
        (DeliveryClass::Unreliable, "unreliable"),
        (DeliveryClass::latest("pos"), "unreliable_latest"),
    ]
}

async fn pair() -> Option<Pair> {
    let spec = ClusterSpec::new()
        .module("classes.lua", CLASSES_MATCH)
        .module("rpcs.lua", RPCS)
        .small();
    spec.start(2).await.map(TestCluster::pair)
}

/// A QUIC player of a new user on `node`.
async fn quic_player(node: &TestNode) -> (metafi_client::Socket, Events) {
    let (token, _) = Http::new(&node.base).new_session().await;
    quic_socket(node, &token).await
}

/// The next `count` match data pushed to `events` (other envelopes skipped), by op code.
async fn match_data(events: &mut Events, count: usize) -> Vec<MatchData> {
    let found = tokio::time::timeout(WAIT, async {
        let mut got = Vec::new();
        while got.len() < count {
            let envelope: Envelope = events.next().await.expect("socket open");
            if let Some(Message::MatchData(data)) = envelope.message {
                got.push(data);
            }
        }
        got
    })
    .await;
    let mut got = found.unwrap_or_else(|_| panic!("{count} match data not within {WAIT:?}"));
    got.sort_by_key(|d| d.op_code);
    got
}

/// Messages the process's QUIC links sent as servers, per class of [`classes`].
async fn server_sent(node: &TestNode) -> Vec<f64> {
    let url = format!("{}/metrics", node.metrics.clone().expect("metrics are on"));
    let text = reqwest::get(url).await.unwrap().text().await.unwrap();
    classes()
        .iter()
        .map(|(_, label)| {
            let class = format!("class=\"{label}\"");
            text.lines()
                .filter(|l| {
                    l.starts_with("metafi_quic_messages_sent_total{")
                        && l.contains("side=\"server\"")
                        && l.contains(&class)
                })
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum()
        })
        .collect()
}

/// Each of `got` (ops 1–4) names the class of its op.
fn names_each_class(got: &[MatchData], who: &str) {
    for (data, (class, _)) in got.iter().zip(classes()) {
        let named = data.delivery.as_ref().and_then(DeliveryClass::from_wire);
        assert_eq!(named, Some(class.clone()), "{who}, op {}", data.op_code);
        assert_eq!(
            data.reliable,
            class.is_reliable(),
            "{who}, op {}",
            data.op_code
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handlers_classes_reach_a_member_on_another_node() {
    let _turn = SERIAL.lock().await;
    let Some(Pair { n1, n2, _dirs }) = pair().await else {
        return;
    };
    let (maker, _maker_events) = quic_player(&n1).await;
    let id = maker.rpc("create", "").await.unwrap();
    assert!(id.ends_with(".n1"), "{id}");
    // The only member, on node 2: every message of the round crosses nodes.
    let (bob, mut bob_events) = quic_player(&n2).await;
    bob.match_join(&id).await.unwrap();

    let before = server_sent(&n2).await;
    bob.match_data_send(&id, 100, Bytes::new(), true)
        .await
        .unwrap();
    let got = match_data(&mut bob_events, 4).await;
    names_each_class(&got, "bob on node 2");
    // Node 2's link sent each on its class's path, as node 1's would (on main: the default
    // stream for all four).
    let after = server_sent(&n2).await;
    let grown: Vec<f64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    assert_eq!(grown, [1.0; 4], "messages sent per class {:?}", classes());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relayed_match_data_keep_the_senders_class_both_ways_across_nodes() {
    let _turn = SERIAL.lock().await;
    let Some(Pair { n1, n2, _dirs }) = pair().await else {
        return;
    };
    let (alice, mut alice_events) = quic_player(&n1).await;
    let (bob, mut bob_events) = quic_player(&n2).await;
    let created = match alice
        .request(Message::MatchCreate(MatchCreate::default()))
        .await
        .unwrap()
        .message
    {
        Some(Message::Match(m)) => m,
        other => panic!("{other:?}"),
    };
    let Match { match_id: id, .. } = created;
    bob.match_join(&id).await.unwrap();

    for (sender, receiver, who) in [
        (
            &bob,
            &mut alice_events,
            "from bob (node 2) to alice (node 1)",
        ),
        (
            &alice,
            &mut bob_events,
            "from alice (node 1) to bob (node 2)",
        ),
    ] {
        let before = server_sent(&n1).await;
        for (op, (class, _)) in classes().into_iter().enumerate() {
            let op = op as i64 + 1;
            let data = Bytes::from(format!("m{op}"));
            sender.send_match_data(&id, op, data, class).await.unwrap();
        }
        let got = match_data(receiver, 4).await;
        // The sender's extension reached the match's node (on main: none from node 2).
        names_each_class(&got, who);
        // The receiver's node sent each on the sender's class's path (on main: the
        // `reliable` flag's mapping, default stream or unreliable).
        let after = server_sent(&n1).await;
        let grown: Vec<f64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
        assert_eq!(
            grown,
            [1.0; 4],
            "{who}: messages sent per class {:?}",
            classes()
        );
    }
}
