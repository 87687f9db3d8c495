//! Delivery classes chosen by script match handlers (`docs/MATCHES.md`, "Delivery classes in
//! script handlers"): a Lua and a JavaScript handler broadcast one message per class (and a
//! deferred one, and one with Nakama's plain `reliable = false`); a QUIC player receives each
//! with the class the handler named, through that class's QUIC path (the link's per-class
//! counters), a WebSocket player receives the same messages with the same `reliable` flag
//! Nakama's clients read, and a bad class name fails with a clear message.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use metafi_client::{DeliveryClass, Events};
use metafi_proto::realtime::{Envelope, MatchData, Message};
use metafi_testkit::{Http, TestNode};
use support::quic::{quic_socket, ws_socket};

const WAIT: Duration = Duration::from_secs(10);

/// The op code that makes the handlers broadcast.
const TRIGGER: i64 = 100;
/// The op code on which they answer the sender with the error of a bad class name.
const BAD_CLASS: i64 = 8;

const LUA_MATCH: &str = r#"
local M = {}

function M.match_init(context, params) return {}, 10, "" end
function M.match_join_attempt(context, d, tick, state, presence, metadata) return state, true end
function M.match_join(context, d, tick, state, presences) return state end
function M.match_leave(context, d, tick, state, presences) return state end
function M.match_terminate(context, d, tick, state, grace) return state end
function M.match_signal(context, d, tick, state, data) return state, data end

function M.match_loop(context, d, tick, state, messages)
  for _, m in ipairs(messages) do
    if m.op_code == 100 then
      d.broadcast_message(1, "m1", nil, nil, { class = "reliable_ordered" })
      d.broadcast_message(2, "m2", nil, nil, { class = "reliable_ordered", lane = "talk" })
      d.broadcast_message(3, "m3", nil, nil, { class = "reliable_unordered" })
      d.broadcast_message(4, "m4", nil, nil, { class = "unreliable" })
      d.broadcast_message(5, "m5", nil, nil, { class = "unreliable_latest", lane = "pos" })
      d.broadcast_message_deferred(6, "m6", nil, nil, { class = "reliable_ordered", lane = "later" })
      d.broadcast_message(7, "m7", nil, nil, false)
      local ok, err = pcall(d.broadcast_message, 9, "x", nil, nil, { class = "sideways" })
      d.broadcast_message(8, ok and "accepted" or tostring(err), { m.sender }, nil, true)
    end
  end
  return state
end

return M
"#;

const LUA_RPC: &str = r#"
local nk = require("nakama")
nk.register_rpc(function(context, payload)
  return nk.json_encode({ match_id = nk.match_create("classes", {}) })
end, "classes_lua")
"#;

const JS_MODULE: &str = r#"
function classesInit(ctx, logger, nk, params) {
  return { state: {}, tickRate: 10, label: '' };
}
function classesJoinAttempt(ctx, logger, nk, d, tick, state, presence, metadata) {
  return { state: state, accept: true };
}
function classesSame(ctx, logger, nk, d, tick, state) { return { state: state }; }
function classesSignal(ctx, logger, nk, d, tick, state, data) { return { state: state, data: data }; }
function classesLoop(ctx, logger, nk, d, tick, state, messages) {
  messages.forEach(function (m) {
    if (m.opCode !== 100) { return; }
    d.broadcastMessage(1, 'm1', null, null, { class: 'reliable_ordered' });
    d.broadcastMessage(2, 'm2', null, null, { class: 'reliable_ordered', lane: 'talk' });
    d.broadcastMessage(3, 'm3', null, null, { class: 'reliable_unordered' });
    d.broadcastMessage(4, 'm4', null, null, { class: 'unreliable' });
    d.broadcastMessage(5, 'm5', null, null, { class: 'unreliable_latest', lane: 'pos' });
    d.broadcastMessageDeferred(6, 'm6', null, null, { class: 'reliable_ordered', lane: 'later' });
    d.broadcastMessage(7, 'm7', null, null, false);
    var answer = 'accepted';
    try {
      d.broadcastMessage(9, 'x', null, null, { class: 'sideways' });
    } catch (e) {
      answer = e.name + ': ' + e.message;
    }
    d.broadcastMessage(8, answer, [m.sender], null, true);
  });
  return { state: state };
}
function InitModule(ctx, logger, nk, initializer) {
  initializer.registerMatch('classes_js', {
    matchInit: classesInit,
    matchJoinAttempt: classesJoinAttempt,
    matchJoin: classesSame,
    matchLeave: classesSame,
    matchLoop: classesLoop,
    matchTerminate: classesSame,
    matchSignal: classesSignal,
  });
  initializer.registerRpc('classes_js', function (ctx, logger, nk, payload) {
    return JSON.stringify({ match_id: nk.matchCreate('classes_js', {}) });
  });
}
"#;

/// What each broadcast op code must arrive as: (op, class named, reliable flag).
fn expected() -> Vec<(i64, Option<DeliveryClass>, bool)> {
    vec![
        (1, Some(DeliveryClass::default_stream()), true),
        (2, Some(DeliveryClass::ordered("talk")), true),
        (3, Some(DeliveryClass::ReliableUnordered), true),
        (4, Some(DeliveryClass::Unreliable), false),
        (5, Some(DeliveryClass::latest("pos")), false),
        (6, Some(DeliveryClass::ordered("later")), true),
        (7, None, false),
    ]
}

async fn server(dir: &Path) -> TestNode {
    let modules = dir.join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::write(modules.join("classes.lua"), LUA_MATCH).unwrap();
    std::fs::write(modules.join("classes_rpc.lua"), LUA_RPC).unwrap();
    std::fs::write(modules.join("classes.js"), JS_MODULE).unwrap();
    TestNode::start_in(dir, |raw| {
        raw.runtime.path = modules.display().to_string();
    })
    .await
}

/// The next match data pushed to `events` (other envelopes are skipped).
async fn next_data(events: &mut Events) -> MatchData {
    let found = tokio::time::timeout(WAIT, async {
        loop {
            let envelope: Envelope = events.next().await.expect("socket open");
            if let Some(Message::MatchData(data)) = envelope.message {
                return data;
            }
        }
    })
    .await;
    found.unwrap_or_else(|_| panic!("match data did not arrive within {WAIT:?}"))
}

/// `name{…}` of the node's metrics with both labels, or 0 before it was first counted.
async fn counter(server: &TestNode, name: &str, side: &str, class: &str) -> f64 {
    let url = format!(
        "{}/metrics",
        server.metrics.clone().expect("metrics are on")
    );
    let text = reqwest::get(url).await.unwrap().text().await.unwrap();
    let side = format!("side=\"{side}\"");
    let class = format!("class=\"{class}\"");
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(&side) && l.contains(&class))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The QUIC paths a round of broadcasts must take: messages the server sent by each class, and
/// messages the QUIC player received on each path (a latest-wins value arrives as a datagram or,
/// if that was lost, as the key's final value).
const PATHS: [(&str, &str, &[&str]); 10] = [
    ("metafi_quic_messages_sent_total", "server", &["default"]),
    (
        "metafi_quic_messages_sent_total",
        "server",
        &["reliable_ordered"],
    ),
    (
        "metafi_quic_messages_sent_total",
        "server",
        &["reliable_unordered"],
    ),
    ("metafi_quic_messages_sent_total", "server", &["unreliable"]),
    (
        "metafi_quic_messages_sent_total",
        "server",
        &["unreliable_latest"],
    ),
    (
        "metafi_quic_messages_received_total",
        "client",
        &["default"],
    ),
    (
        "metafi_quic_messages_received_total",
        "client",
        &["reliable_ordered"],
    ),
    (
        "metafi_quic_messages_received_total",
        "client",
        &["reliable_unordered"],
    ),
    (
        "metafi_quic_messages_received_total",
        "client",
        &["unreliable"],
    ),
    (
        "metafi_quic_messages_received_total",
        "client",
        &["unreliable_latest", "latest_final"],
    ),
];

/// Every path's count, in the order of [`PATHS`].
async fn path_counts(server: &TestNode) -> Vec<f64> {
    let mut counts = Vec::new();
    for (name, side, classes) in PATHS {
        let mut sum = 0.0;
        for class in classes {
            sum += counter(server, name, side, class).await;
        }
        counts.push(sum);
    }
    counts
}

/// Creates a match with the RPC `create`, joins a QUIC and a WebSocket player, triggers the
/// broadcasts and checks what each player receives and that every QUIC path carried a message;
/// `bad_class` is the start of the error the script caught.
async fn every_class_arrives(server: &TestNode, engine: &str, create: &str, bad_class: &str) {
    let http = Http::new(&server.base);
    let (quic_token, _) = http.new_session().await;
    let (ws_token, _) = http.new_session().await;
    let (quic, mut quic_events) = quic_socket(server, &quic_token).await;
    let (ws, mut ws_events) = ws_socket(server, &ws_token).await;
    let answer: serde_json::Value =
        serde_json::from_str(&quic.rpc(create, "").await.unwrap()).unwrap();
    let match_id = answer["match_id"].as_str().unwrap().to_owned();
    quic.match_join(&match_id).await.unwrap();
    ws.match_join(&match_id).await.unwrap();
    let before = path_counts(server).await;
    quic.match_data_send(&match_id, TRIGGER, Bytes::new(), true)
        .await
        .unwrap();

    for (who, events) in [("quic", &mut quic_events), ("websocket", &mut ws_events)] {
        let mut got = Vec::new();
        let wanted = if who == "quic" { 8 } else { 7 };
        while got.len() < wanted {
            got.push(next_data(events).await);
        }
        got.sort_by_key(|d| d.op_code);
        for (data, (op, class, reliable)) in got.iter().zip(expected()) {
            assert_eq!(data.op_code, op, "{engine}, {who}");
            assert_eq!(
                data.data,
                Bytes::from(format!("m{op}")),
                "{engine}, {who}, op {op}"
            );
            let named = data.delivery.as_ref().and_then(DeliveryClass::from_wire);
            assert_eq!(
                named, class,
                "{engine}, {who}, op {op}: the class the handler named"
            );
            assert_eq!(
                data.reliable, reliable,
                "{engine}, {who}, op {op}: Nakama's reliable flag"
            );
        }
        if who == "quic" {
            let error = String::from_utf8_lossy(&got[7].data).into_owned();
            assert_eq!(got[7].op_code, BAD_CLASS);
            assert!(error.starts_with(bad_class), "{engine}: {error}");
            assert!(
                error.contains("unknown delivery class 'sideways'; expected one of reliable_ordered, reliable_unordered, unreliable, unreliable_latest"),
                "{engine}: {error}"
            );
        }
    }
    // Only this round runs now, so each path's count grew by its messages.
    let after = path_counts(server).await;
    for ((path, before), after) in PATHS.iter().zip(before).zip(after) {
        assert!(after > before, "{engine}: nothing went through {path:?}");
    }
}

/// One test for both engines: the QUIC path counters are process-wide, so the rounds must not
/// overlap.
#[tokio::test]
async fn lua_and_javascript_handlers_send_each_delivery_class_over_quic() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(dir.path()).await;
    every_class_arrives(
        &server,
        "lua",
        "classes_lua",
        "bad argument #5 (unknown delivery class",
    )
    .await;
    every_class_arrives(
        &server,
        "js",
        "classes_js",
        "TypeError: unknown delivery class",
    )
    .await;
    server.stop().await;
}
