//! A node in a fleet, over its real API: an operator drains it (`POST /v2/metafi/drain`, server
//! key) — no new matches, health answers 503, running matches get `match_terminate` with the
//! grace period and the node stops — and a node whose latency objective is full says so in its
//! health and load and refuses new matches (nk and relayed `match_create`) with a clear error.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::{Path, PathBuf};
use std::time::Duration;

use metafi_proto::api::Rpc;
use metafi_proto::realtime::{ErrorCode, MatchCreate, Message};
use metafi_testkit::{Http, Socket, TestNode, user};

const MODULES: &str = r#"
local nk = require("nakama")

nk.register_rpc(function(context, payload)
  local ok, result = pcall(nk.match_create, "ticker", {})
  if ok then return nk.json_encode({ match_id = result }) end
  return nk.json_encode({ error = tostring(result) })
end, "try_create")

nk.register_rpc(function(context, payload)
  return nk.match_signal(payload, "tick?")
end, "ticks")

nk.register_rpc(function(context, payload)
  local objects = nk.storage_read({ { collection = "matches", key = "terminated" } })
  if #objects == 0 then return "" end
  return nk.json_encode(objects[1].value)
end, "terminated")
"#;

const TICKER: &str = r#"
local nk = require("nakama")
return {
  match_init = function(context, params) return { ticks = 0 }, 20, "ticker" end,
  match_join_attempt = function(context, d, tick, state, presence, metadata) return state, true end,
  match_join = function(context, d, tick, state, presences) return state end,
  match_leave = function(context, d, tick, state, presences) return state end,
  match_loop = function(context, d, tick, state, messages) state.ticks = state.ticks + 1; return state end,
  match_terminate = function(context, d, tick, state, grace)
    nk.storage_write({ { collection = "matches", key = "terminated", value = { grace = grace, ticks = state.ticks } } })
    return state
  end,
  match_signal = function(context, d, tick, state, data) return state, tostring(state.ticks) end,
}
"#;

fn modules(dir: &Path) -> PathBuf {
    let modules = dir.join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::write(modules.join("fleet_rpcs.lua"), MODULES).unwrap();
    std::fs::write(modules.join("ticker.lua"), TICKER).unwrap();
    modules
}

async fn server(dir: &Path, cpu_percent: i64) -> TestNode {
    let modules = modules(dir);
    TestNode::start_in(dir, |raw| {
        raw.runtime.path = modules.display().to_string();
        raw.matches.executor_threads = 1;
        raw.matches.objective_cpu_percent = cpu_percent;
        raw.shutdown.grace_period_sec = 1;
    })
    .await
}

async fn rpc(socket: &mut Socket, id: &str, payload: &str) -> serde_json::Value {
    let answer = socket
        .request(Message::Rpc(Rpc {
            id: id.into(),
            payload: payload.into(),
            http_key: String::new(),
        }))
        .await;
    match answer.message {
        Some(Message::Rpc(rpc)) => {
            serde_json::from_str(&rpc.payload).unwrap_or(serde_json::Value::String(rpc.payload))
        }
        other => panic!("rpc {id} failed: {other:?}"),
    }
}

async fn relayed_create(socket: &mut Socket) -> (i32, String) {
    socket
        .request_error(Message::MatchCreate(MatchCreate {
            name: String::new(),
        }))
        .await
}

#[tokio::test]
async fn an_operator_drains_the_node_and_its_matches_terminate_with_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path(), 75).await;
    let http = Http::new(&s.base);
    let who = user(&http).await;
    let mut socket = Socket::connect(&s.base, &who.token, "").await;
    let created = rpc(&mut socket, "try_create", "").await;
    let ticker = created["match_id"].as_str().unwrap().to_owned();
    tokio::time::timeout(Duration::from_secs(30), async {
        while rpc(&mut socket, "ticks", &ticker).await == serde_json::json!(0) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the match never ticked");

    // The drain call needs the server key.
    let refused = http.send(http.post("/v2/metafi/drain")).await;
    assert_eq!(refused.status, 401, "{:?}", refused.body);
    let wrong = http
        .send(http.post("/v2/metafi/drain").basic_auth("nope", Some("")))
        .await;
    assert_eq!(wrong.status, 401, "{:?}", wrong.body);
    let drained = s.node().drain_requested();
    let accepted = http
        .send(
            http.post("/v2/metafi/drain")
                .basic_auth("defaultkey", Some("")),
        )
        .await;
    assert_eq!(accepted.status, 202, "{:?}", accepted.body);
    assert_eq!(accepted.body["draining"], true);
    assert_eq!(accepted.body["matches"], 1);
    tokio::time::timeout(Duration::from_secs(5), drained)
        .await
        .expect("the node's main loop hears the drain");

    // Draining: health says so (load balancers stop sending players), no new match starts.
    let health = http.send(http.get("/healthcheck")).await;
    assert_eq!(health.status, 503, "{:?}", health.body);
    assert_eq!(health.body["draining"], true);
    let refused = rpc(&mut socket, "try_create", "").await;
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("error creating match: Service temporarily unavailable"),
        "{refused}"
    );
    let (code, message) = relayed_create(&mut socket).await;
    assert_eq!(code, ErrorCode::RuntimeException as i32);
    assert!(message.contains("shutting down"), "{message}");
    // The running match still runs.
    let before = rpc(&mut socket, "ticks", &ticker).await;
    assert_ne!(before, serde_json::json!(0));

    drop(socket);
    s.stop().await;
    // What match_terminate wrote, with the grace period, survived.
    let s = server(dir.path(), 75).await;
    let http = Http::new(&s.base);
    let who = user(&http).await;
    let mut socket = Socket::connect(&s.base, &who.token, "").await;
    let trace = rpc(&mut socket, "terminated", "").await;
    assert_eq!(trace["grace"], 1, "{trace}");
    drop(socket);
    s.stop().await;
}

#[tokio::test]
async fn a_full_node_says_so_and_refuses_new_matches_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    // An objective of 1 % of the core: a new match (projected at 2 %) never fits.
    let s = TestNode::start_in(dir.path(), |raw| {
        raw.runtime.path = modules(dir.path()).display().to_string();
        raw.matches.executor_threads = 1;
        raw.matches.objective_cpu_percent = 1;
        raw.matches.new_match_cpu_us = 20_000;
    })
    .await;
    let http = Http::new(&s.base);
    let health = http.send(http.get("/healthcheck")).await;
    assert_eq!(health.status, 200, "{:?}", health.body);
    let full = health.body["full"].as_str().unwrap().to_owned();
    assert!(
        full.starts_with(
            "Node is full: a new match would take executor CPU past the objective of 1%"
        ),
        "{full}"
    );

    let load = http.send(http.get("/v2/metafi/load")).await;
    assert_eq!(load.status, 401);
    let load = http
        .send(
            http.get("/v2/metafi/load")
                .basic_auth("defaultkey", Some("")),
        )
        .await;
    assert_eq!(load.status, 200, "{:?}", load.body);
    assert_eq!(load.body["full"], serde_json::json!(full));
    assert_eq!(load.body["draining"], false);
    assert_eq!(load.body["threads"], 1);
    // Lateness by cause (docs/MATCHES.md, "Whose lateness"): an idle node is late by neither.
    assert_eq!(load.body["late_threads"], 0);
    assert_eq!(load.body["late_threads_by_others"], 0);
    // Hand-off counters (one thread: nothing to hand off to).
    assert_eq!(load.body["moves"], 0);
    assert_eq!(load.body["moves_refused_not_movable"], 0);
    assert_eq!(load.body["moves_refused_no_room"], 0);

    let who = user(&http).await;
    let mut socket = Socket::connect(&s.base, &who.token, "").await;
    let refused = rpc(&mut socket, "try_create", "").await;
    assert!(
        refused["error"].as_str().unwrap().contains("Node is full"),
        "{refused}"
    );
    let (code, message) = relayed_create(&mut socket).await;
    assert_eq!(code, ErrorCode::RuntimeException as i32);
    assert!(message.starts_with("Node is full"), "{message}");

    if let Some(metrics) = &s.metrics {
        let text = reqwest::get(format!("{metrics}/metrics"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(text.contains("metafi_node_full 1"), "{text}");
    }
    drop(socket);
    s.stop().await;
}
