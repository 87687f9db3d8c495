//! Authoritative matches run by Lua handlers, over real sockets: the seed match (get_match,
//! echo, broadcast, presence events), capacity under a join race, listing that follows label
//! changes, a crashing handler next to a healthy one, the matchmaker hook creating a match, and
//! match_terminate on shutdown.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use metafi_proto::realtime::{
    Envelope, ErrorCode, Match, MatchDataSend, MatchJoin, MatchJoinId, MatchLeave, MatchmakerAdd,
    MatchmakerMatchedId, Message,
};
use metafi_testkit::{Http, TestNode};
use metafi_testkit::{Socket, User, user};

/// Test-only handlers: one that fails at its fifth tick, one that reports its tick count, one
/// whose match_terminate leaves a trace in storage, and a matchmaker hook.
const TEST_MODULES: &str = r#"
local nk = require("nakama")

nk.register_rpc(function(context, payload)
  local args = nk.json_decode(payload)
  return nk.json_encode({ match_id = nk.match_create(args.module, {}) })
end, "create")

nk.register_rpc(function(context, payload)
  return nk.match_signal(payload, "tick?")
end, "ticks")

nk.register_rpc(function(context, payload)
  local m = nk.match_get(payload)
  if m == nil then return "gone" end
  return "running"
end, "state")

nk.register_rpc(function(context, payload)
  local objects = nk.storage_read({ { collection = "matches", key = "terminated" } })
  if #objects == 0 then return "" end
  return nk.json_encode(objects[1].value)
end, "terminated")

nk.register_rpc(function(context, payload)
  local n = tonumber(payload)
  local ids = {}
  for i = 1, n do ids[i] = nk.match_create("idle", { i = i }) end
  local running = 0
  for i = 1, n do
    if nk.match_get(ids[i]) ~= nil then running = running + 1 end
  end
  return nk.json_encode({ running = running, last = ids[n] })
end, "create_many")

nk.register_matchmaker_matched(function(context, users)
  if #users ~= 2 or users[1].properties.mode ~= "seed" then
    error("unexpected group")
  end
  return nk.match_create("match", {})
end)
"#;

const CRASHY: &str = r#"
return {
  match_init = function(context, params) return {}, 20, "crashy" end,
  match_join_attempt = function(context, d, tick, state, presence, metadata) return state, true end,
  match_join = function(context, d, tick, state, presences) return state end,
  match_leave = function(context, d, tick, state, presences) return state end,
  match_loop = function(context, d, tick, state, messages)
    if tick == 5 then local x = nil; return x.boom end
    return state
  end,
  match_terminate = function(context, d, tick, state, grace) return state end,
  match_signal = function(context, d, tick, state, data) return state, tostring(tick) end,
}
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

/// A match whose match_loop runs away at its third tick, in the way its name says.
fn runaway(body: &str) -> String {
    format!(
        r#"
return {{
  match_init = function(context, params) return {{}}, 20, "runaway" end,
  match_join_attempt = function(context, d, tick, state, presence, metadata) return state, true end,
  match_join = function(context, d, tick, state, presences) return state end,
  match_leave = function(context, d, tick, state, presences) return state end,
  match_loop = function(context, d, tick, state, messages)
    if tick == 3 then {body} end
    return state
  end,
  match_terminate = function(context, d, tick, state, grace) return state end,
  match_signal = function(context, d, tick, state, data) return state, tostring(tick) end,
}}
"#
    )
}

/// Runaway match loops, by module name: a pathological pattern (LuaJIT's matcher is C code the
/// budget hook never interrupts), a loop in an xpcall message handler (run with the hook off
/// after the budget error), a pcall loop swallowing the budget error, a coroutine, a metamethod
/// and a gsub replacement function.
const RUNAWAYS: [(&str, &str); 6] = [
    (
        "runaway_pattern",
        r#"string.rep("a", 30000):find(".-.-.-.-.-.-b")"#,
    ),
    (
        "runaway_xpcall",
        "xpcall(function() while true do end end, function() while true do end end)",
    ),
    (
        "runaway_pcall",
        "while true do pcall(function() while true do end end) end",
    ),
    (
        "runaway_coroutine",
        "coroutine.resume(coroutine.create(function() while true do end end))",
    ),
    (
        "runaway_index",
        "local t = setmetatable({}, { __index = function() while true do end end }) local _ = t.x",
    ),
    (
        "runaway_gsub",
        r#"("abc"):gsub(".", function() while true do end end)"#,
    ),
];

/// A match that does nothing, once a second: many of them share an executor thread's VM.
const IDLE: &str = r#"
return {
  match_init = function(context, params) return { i = params.i }, 1, "idle" end,
  match_join_attempt = function(context, d, tick, state, presence, metadata) return state, true end,
  match_join = function(context, d, tick, state, presences) return state end,
  match_leave = function(context, d, tick, state, presences) return state end,
  match_loop = function(context, d, tick, state, messages) return state end,
  match_terminate = function(context, d, tick, state, grace) return state end,
  match_signal = function(context, d, tick, state, data) return state, tostring(state.i) end,
}
"#;

fn modules(dir: &Path) -> std::path::PathBuf {
    let modules = dir.join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/lua");
    for file in ["match.lua", "match_rpc.lua"] {
        std::fs::copy(examples.join(file), modules.join(file)).unwrap();
    }
    let js = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/js/match.js");
    std::fs::copy(js, modules.join("match.js")).unwrap();
    std::fs::write(modules.join("test_rpcs.lua"), TEST_MODULES).unwrap();
    std::fs::write(modules.join("crashy.lua"), CRASHY).unwrap();
    std::fs::write(modules.join("ticker.lua"), TICKER).unwrap();
    std::fs::write(modules.join("idle.lua"), IDLE).unwrap();
    for (name, body) in RUNAWAYS {
        std::fs::write(modules.join(format!("{name}.lua")), runaway(body)).unwrap();
    }
    modules
}

async fn server(dir: &Path) -> TestNode {
    server_with(dir, false).await
}

async fn server_with(dir: &Path, vm_per_match: bool) -> TestNode {
    let modules = modules(dir);
    TestNode::start_in(dir, |raw| {
        raw.matches.vm_per_match = vm_per_match;
        raw.runtime.path = modules.display().to_string();
        raw.runtime.lua_vms = 2;
        raw.matches.executor_threads = 2;
        raw.matchmaker.interval_sec = 1;
        raw.matchmaker.max_intervals = 1;
        raw.shutdown.grace_period_sec = 1;
    })
    .await
}

fn match_id(answer: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(answer).unwrap();
    value["match_id"].as_str().unwrap().to_owned()
}

fn join(id: &str) -> Message {
    Message::MatchJoin(MatchJoin {
        id: Some(MatchJoinId::MatchId(id.into())),
        metadata: HashMap::from([("skill".to_owned(), "12".to_owned())]),
    })
}

fn send(id: &str, op_code: i64, data: &'static [u8]) -> Envelope {
    Envelope::new(
        "",
        Message::MatchDataSend(MatchDataSend {
            match_id: id.into(),
            op_code,
            data: Bytes::from_static(data),
            presences: vec![],
            reliable: true,
            delivery: None,
        }),
    )
}

fn is_data(e: &Envelope, op: i64, payload: &[u8]) -> bool {
    matches!(&e.message, Some(Message::MatchData(d)) if d.op_code == op && d.data == payload)
}

fn is_presence(e: &Envelope) -> bool {
    matches!(e.message, Some(Message::MatchPresenceEvent(_)))
}

async fn player(s: &TestNode, http: &Http, format: &str) -> (User, Socket) {
    let who = user(http).await;
    let socket = Socket::connect(&s.base, &who.token, format).await;
    (who, socket)
}

#[tokio::test]
async fn the_seed_match_in_lua_echoes_and_broadcasts() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path()).await;
    seed_match(&s, "get_match").await;
    s.stop().await;
}

#[tokio::test]
async fn the_seed_match_in_javascript_and_native_echoes_and_broadcasts() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path()).await;
    seed_match(&s, "get_match_js").await;
    seed_match(&s, "get_match_native").await;
    s.stop().await;
}

#[tokio::test]
async fn the_seed_match_runs_with_a_vm_per_match_too() {
    let dir = tempfile::tempdir().unwrap();
    let s = server_with(dir.path(), true).await;
    seed_match(&s, "get_match").await;
    seed_match(&s, "get_match_js").await;
    s.stop().await;
}

/// Two players find the same match through `get_rpc`, join it, echo and broadcast, and one
/// leaves.
async fn seed_match(s: &TestNode, get_rpc: &str) {
    let http = Http::new(&s.base);
    let (alice, mut a) = player(s, &http, "").await;
    let (_, mut b) = player(s, &http, "format=protobuf").await;

    let id = match_id(&a.rpc(get_rpc, "{}").await);
    assert!(
        id.ends_with(".metafi"),
        "authoritative ids end with the node name: {id}"
    );
    assert_eq!(
        match_id(&b.rpc(get_rpc, "{}").await),
        id,
        "a match with room is reused"
    );

    let joined = match a.request(join(&id)).await.message {
        Some(Message::Match(m)) => m,
        other => panic!("{other:?}"),
    };
    assert!(joined.authoritative);
    assert_eq!(
        joined.label.as_ref().unwrap().value,
        r#"{"kind":"seed","open":1}"#
    );
    assert!(joined.presences.is_empty());
    a.event(is_presence).await;
    let joined_b: Match = match b.request(join(&id)).await.message {
        Some(Message::Match(m)) => m,
        other => panic!("{other:?}"),
    };
    assert_eq!(joined_b.presences.len(), 1);
    assert_eq!(joined_b.presences[0].user_id, alice.id);
    a.event(is_presence).await;
    b.event(is_presence).await;

    a.send(&send(&id, 1, b"echo")).await;
    a.event(|e| is_data(e, 1, b"echo")).await;
    b.assert_no_event(Duration::from_millis(300), |e| is_data(e, 1, b"echo"))
        .await;
    b.send(&send(&id, 2, b"all")).await;
    let got = a.event(|e| is_data(e, 2, b"all")).await;
    b.event(|e| is_data(e, 2, b"all")).await;
    match got.message {
        Some(Message::MatchData(d)) => {
            assert_eq!(d.match_id, id);
            assert!(d.reliable);
            assert_ne!(d.presence.unwrap().user_id, alice.id, "the sender is shown");
        }
        _ => unreachable!(),
    }

    // Leaving is announced to the one who stays.
    b.request(Message::MatchLeave(MatchLeave {
        match_id: id.clone(),
    }))
    .await;
    a.event(
        |e| matches!(&e.message, Some(Message::MatchPresenceEvent(ev)) if ev.leaves.len() == 1),
    )
    .await;
}

#[tokio::test]
async fn exactly_ten_of_a_hundred_racing_clients_get_in() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path()).await;
    let http = Http::new(&s.base);
    let (_, mut first) = player(&s, &http, "").await;
    // Created directly: get_match would reserve a seat for `first`.
    let id = match_id(&first.rpc("create", r#"{"module":"match"}"#).await);
    let mut sockets = Vec::new();
    for _ in 0..100 {
        sockets.push(player(&s, &http, "").await.1);
    }
    let attempts = sockets.into_iter().map(|mut socket| {
        let id = id.clone();
        tokio::spawn(async move {
            let answer = socket.request(join(&id)).await;
            (answer, socket)
        })
    });
    let mut accepted = 0;
    let mut rejected = 0;
    let mut keep = Vec::new();
    for attempt in attempts {
        let (answer, socket) = attempt.await.unwrap();
        match answer.message {
            Some(Message::Match(_)) => accepted += 1,
            Some(Message::Error(e)) => {
                assert_eq!(e.code, ErrorCode::MatchJoinRejected as i32);
                assert_eq!(e.message, "match full");
                rejected += 1;
            }
            other => panic!("{other:?}"),
        }
        keep.push(socket);
    }
    assert_eq!((accepted, rejected), (10, 90));

    // Full: listings of open seed matches leave it out at once, and get_match makes another.
    let listed = http
        .send(
            http.get("/v2/match?limit=10&authoritative=true&query=%2Blabel.open%3A1")
                .bearer_auth(&user(&http).await.token),
        )
        .await;
    assert_eq!(listed.status, 200);
    assert!(listed.body.get("matches").is_none(), "{}", listed.body);
    let other = match_id(&first.rpc("get_match", "{}").await);
    assert_ne!(other, id);
    s.stop().await;
}

/// Thousands of Lua matches share the two executor threads' VMs. Each match once held a dozen
/// mlua handles, and LuaJIT caps those near 8,000 per VM: past a few hundred matches per thread
/// every new match failed with "out of Lua stack" (found by the seed benchmark at 5,000 players).
#[tokio::test]
async fn thousands_of_lua_matches_share_a_thread_vm() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path()).await;
    let http = Http::new(&s.base);
    let (_, mut a) = player(&s, &http, "").await;
    // 3,000 matches (1,500 per thread), in batches so that no RPC runs for long on a slow box.
    let mut last = String::new();
    for _ in 0..6 {
        let created: serde_json::Value =
            serde_json::from_str(&a.rpc("create_many", "500").await).unwrap();
        assert_eq!(created["running"], 500, "{created}");
        last = created["last"].as_str().unwrap().to_owned();
    }
    // The last one's callbacks run: a player can join it.
    let id = last.as_str();
    assert!(matches!(
        a.request(join(id)).await.message,
        Some(Message::Match(_))
    ));
    s.stop().await;
}

#[tokio::test]
async fn a_crashing_handler_ends_its_match_only() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path()).await;
    let http = Http::new(&s.base);
    let (_, mut a) = player(&s, &http, "").await;
    let healthy = match_id(&a.rpc("create", r#"{"module":"ticker"}"#).await);
    let crashy = match_id(&a.rpc("create", r#"{"module":"crashy"}"#).await);
    let (_, mut victim) = player(&s, &http, "").await;
    assert!(matches!(
        victim.request(join(&crashy)).await.message,
        Some(Message::Match(_))
    ));
    let before: u64 = a.rpc("ticks", &healthy).await.parse().unwrap();
    // The crashing match tells its player it is over...
    victim
        .event(|e| matches!(&e.message, Some(Message::MatchPresenceEvent(ev)) if !ev.leaves.is_empty()))
        .await;
    assert_eq!(a.rpc("state", &crashy).await, "gone");
    // ...while the other keeps ticking: a second's worth of ticks (20) more, with a hang guard
    // far above it (the rate itself is the match engine's fake-clock tests' business).
    let kept_ticking = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let now: u64 = a.rpc("ticks", &healthy).await.parse().unwrap();
            if now >= before + 20 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        kept_ticking.is_ok(),
        "the healthy match stopped ticking after {before} ticks"
    );
    assert_eq!(a.rpc("state", &healthy).await, "running");
    s.stop().await;
}

#[tokio::test]
async fn a_lua_match_loop_that_runs_away_ends_its_match_while_another_on_its_thread_keeps_ticking()
{
    let dir = tempfile::tempdir().unwrap();
    let modules = modules(dir.path());
    // One executor thread and one Lua state for its matches: every runaway shares both with the
    // healthy match.
    let s = TestNode::start_in(dir.path(), |raw| {
        raw.matches.vm_per_match = false;
        raw.runtime.path = modules.display().to_string();
        raw.runtime.lua_vms = 1;
        raw.matches.executor_threads = 1;
        raw.shutdown.grace_period_sec = 1;
    })
    .await;
    let http = Http::new(&s.base);
    let (_, mut a) = player(&s, &http, "").await;
    let healthy = match_id(&a.rpc("create", r#"{"module":"ticker"}"#).await);
    let mut runaways = Vec::new();
    for (module, _) in RUNAWAYS {
        let answer = a
            .rpc("create", &format!(r#"{{"module":"{module}"}}"#))
            .await;
        runaways.push((module, match_id(&answer)));
    }
    // Each is ended at its budget (match.handler_budget_ms); the hang guard is far above it.
    for (module, id) in &runaways {
        let ended = tokio::time::timeout(Duration::from_secs(30), async {
            while a.rpc("state", id).await != "gone" {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        assert!(ended.is_ok(), "{module}: the runaway match never ended");
    }
    let before: u64 = a.rpc("ticks", &healthy).await.parse().unwrap();
    // The other match keeps ticking on the shared thread and state: a second's worth of ticks
    // (20) more, with a hang guard far above it.
    let kept_ticking = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let now: u64 = a.rpc("ticks", &healthy).await.parse().unwrap();
            if now >= before + 20 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(
        kept_ticking.is_ok(),
        "the healthy match stopped ticking after {before} ticks"
    );
    assert_eq!(a.rpc("state", &healthy).await, "running");
    drop(a);
    tokio::time::timeout(Duration::from_secs(30), s.stop())
        .await
        .expect("shutdown hung");
}

#[tokio::test]
async fn the_matchmaker_hook_sends_players_to_an_authoritative_match() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path()).await;
    let http = Http::new(&s.base);
    let (_, mut a) = player(&s, &http, "").await;
    let (_, mut b) = player(&s, &http, "").await;
    let add = Message::MatchmakerAdd(MatchmakerAdd {
        min_count: 2,
        max_count: 2,
        query: "+properties.mode:seed".into(),
        string_properties: HashMap::from([("mode".to_owned(), "seed".to_owned())]),
        ..MatchmakerAdd::default()
    });
    a.request(add.clone()).await;
    b.request(add).await;
    let mut ids = Vec::new();
    for socket in [&mut a, &mut b] {
        let matched = socket
            .event(|e| matches!(e.message, Some(Message::MatchmakerMatched(_))))
            .await;
        let Some(Message::MatchmakerMatched(matched)) = matched.message else {
            unreachable!()
        };
        let Some(MatchmakerMatchedId::MatchId(id)) = matched.id else {
            panic!("the hook created a match: {:?}", matched.id)
        };
        ids.push(id);
    }
    assert_eq!(ids[0], ids[1]);
    for socket in [&mut a, &mut b] {
        match socket.request(join(&ids[0])).await.message {
            Some(Message::Match(m)) => assert!(m.authoritative),
            other => panic!("{other:?}"),
        }
    }
    s.stop().await;
}

#[tokio::test]
async fn shutdown_runs_match_terminate_with_the_grace_period() {
    let dir = tempfile::tempdir().unwrap();
    let s = server(dir.path()).await;
    let http = Http::new(&s.base);
    let (_, mut a) = player(&s, &http, "").await;
    let ticker = match_id(&a.rpc("create", r#"{"module":"ticker"}"#).await);
    // Stop once the match has ticked (its terminate records the count), not after a guess.
    tokio::time::timeout(Duration::from_secs(30), async {
        while a.rpc("ticks", &ticker).await == "0" {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the match never ticked");
    drop(a);
    s.stop().await;

    // What match_terminate wrote survived the restart.
    let s = server(dir.path()).await;
    let (_, mut a) = player(&s, &http_of(&s), "").await;
    let trace: serde_json::Value = serde_json::from_str(&a.rpc("terminated", "").await).unwrap();
    assert_eq!(trace["grace"], 1);
    assert!(trace["ticks"].as_u64().unwrap() > 0);
    s.stop().await;
}

fn http_of(s: &TestNode) -> Http {
    Http::new(&s.base)
}
