//! A node under Agones, against a fake SDK server written from Agones' public `sdk.proto` and
//! `beta.proto` (gRPC over HTTP/2, recording every call): labels and counters then `Ready` at
//! start, `Health` ticks, the Counters `players` and `matches` follow a socket and a match, an
//! `Allocated` GameServer is seen, and after a drain `Shutdown` comes once the match has ended;
//! the Lists of players and matches follow sockets and matches up to their capacity.
//! (Agones' own SDK server is a Go program that cannot be built here: its module is not
//! served by the Go proxy this machine reaches.)

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use metafi_proto::api::Rpc;
use metafi_proto::realtime::Message;
use metafi_server::agones::grpc::{Frames, frame};
use metafi_server::agones::proto::{
    self, Counter, Empty, GameServer, GameServerStatus, GetListRequest, KeyValue, List,
    ListValueRequest, ObjectMeta, UpdateCounterRequest, UpdateListRequest,
};
use metafi_testkit::{Http, Socket, TestNode, user};
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};

#[derive(Debug, Clone, PartialEq)]
enum Call {
    Ready,
    Health,
    Shutdown,
    Label(String, String),
    Counter(String, i64),
    Watch,
    GetList(String),
    ListCapacity(String, i64),
    ListAdd(String, String),
    ListRemove(String, String),
}

/// A free port below the kernel's ephemeral range, for a sidecar that starts late. A port from
/// `bind(0)` is in that range: while nothing listens on it, the node's SDK client reconnecting
/// every 20 ms can be given the same port as its own source and connect to itself (TCP
/// simultaneous open), and the fake's later bind then fails with "address in use"; another
/// test's `bind(0)` can take it too. Below the range neither can happen.
fn port_outside_the_ephemeral_range() -> u16 {
    let low: u16 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768);
    let first = low.saturating_sub(10_000).max(1024);
    let span = low.saturating_sub(first).max(1);
    // Spread parallel test processes over the range; the first free port wins.
    let offset = (std::process::id() % u32::from(span)) as u16;
    (0..span)
        .map(|i| first + (offset + i) % span)
        .find(|&port| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok())
        .expect("a free port below the ephemeral range")
}

#[derive(Clone)]
struct Fake {
    calls: Arc<Mutex<Vec<Call>>>,
    changed: Arc<Notify>,
    state: watch::Sender<String>,
    /// The Lists the GameServer declares: capacity and values, as Agones' SDK server keeps them.
    lists: Arc<Mutex<Lists>>,
}

/// Each List's capacity and values, by name.
type Lists = std::collections::HashMap<String, (i64, Vec<String>)>;

impl Fake {
    async fn start() -> (Fake, u16) {
        Fake::start_on(0).await
    }

    async fn start_on(port: u16) -> (Fake, u16) {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let fake = Fake {
            calls: Arc::default(),
            changed: Arc::default(),
            state: watch::channel("Scheduled".to_owned()).0,
            lists: Arc::default(),
        };
        let serving = fake.clone();
        tokio::spawn(async move {
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                let fake = serving.clone();
                tokio::spawn(async move {
                    let mut connection = h2::server::handshake(tcp).await.unwrap();
                    while let Some(Ok((request, respond))) = connection.accept().await {
                        tokio::spawn(fake.clone().handle(request, respond));
                    }
                });
            }
        });
        (fake, port)
    }

    fn record(&self, call: Call) {
        self.calls.lock().unwrap().push(call);
        self.changed.notify_waiters();
    }

    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// Waits until `done` holds for the calls so far.
    async fn wait(&self, what: &str, done: impl Fn(&[Call]) -> bool) -> Vec<Call> {
        let waited = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                let changed = self.changed.notified();
                let calls = self.calls();
                if done(&calls) {
                    return calls;
                }
                changed.await;
            }
        })
        .await;
        match waited {
            Ok(calls) => calls,
            Err(_) => panic!("never: {what}; calls: {:?}", self.calls()),
        }
    }

    async fn handle(
        self,
        request: http::Request<h2::RecvStream>,
        mut respond: h2::server::SendResponse<Bytes>,
    ) {
        let path = request.uri().path().to_owned();
        assert_eq!(
            request.headers()["content-type"],
            "application/grpc",
            "{path}"
        );
        let mut body = request.into_body();
        let mut frames = Frames::default();
        let mut messages = Vec::new();
        while let Some(data) = body.data().await {
            let Ok(data) = data else { return };
            let _ = body.flow_control().release_capacity(data.len());
            frames.push(&data);
            while let Some(message) = frames.next_message().unwrap() {
                if path == proto::path::HEALTH {
                    <Empty as prost::Message>::decode(message).unwrap();
                    self.record(Call::Health);
                } else {
                    messages.push(message);
                }
            }
        }
        let answer = match path.as_str() {
            proto::path::HEALTH => frame(&Empty {}),
            proto::path::READY => {
                self.record(Call::Ready);
                frame(&Empty {})
            }
            proto::path::SHUTDOWN => {
                self.record(Call::Shutdown);
                frame(&Empty {})
            }
            proto::path::SET_LABEL => {
                let kv: KeyValue = prost::Message::decode(messages[0].clone()).unwrap();
                self.record(Call::Label(kv.key, kv.value));
                frame(&Empty {})
            }
            proto::path::UPDATE_COUNTER => {
                let update: UpdateCounterRequest =
                    prost::Message::decode(messages[0].clone()).unwrap();
                let update = update.counter_update_request.unwrap();
                let count = update.count.unwrap().value;
                self.record(Call::Counter(update.name.clone(), count));
                frame(&Counter {
                    name: update.name,
                    count,
                    capacity: 1000,
                })
            }
            proto::path::WATCH_GAME_SERVER => {
                self.record(Call::Watch);
                let mut send = respond.send_response(ok_headers(), false).unwrap();
                let mut state = self.state.subscribe();
                loop {
                    let current = state.borrow_and_update().clone();
                    let game_server = GameServer {
                        object_meta: Some(ObjectMeta {
                            name: "metafi-abc12".into(),
                        }),
                        status: Some(GameServerStatus { state: current }),
                    };
                    if send.send_data(frame(&game_server), false).is_err()
                        || state.changed().await.is_err()
                    {
                        return;
                    }
                }
            }
            proto::path::GET_LIST => {
                let get: GetListRequest = prost::Message::decode(messages[0].clone()).unwrap();
                self.record(Call::GetList(get.name.clone()));
                match self.list(&get.name) {
                    Some(list) => frame(&list),
                    None => return refuse(respond, 5, "not found"),
                }
            }
            proto::path::UPDATE_LIST => {
                let update: UpdateListRequest =
                    prost::Message::decode(messages[0].clone()).unwrap();
                let list = update.list.unwrap();
                assert_eq!(update.update_mask.unwrap().paths, vec!["capacity"]);
                self.record(Call::ListCapacity(list.name.clone(), list.capacity));
                let updated = {
                    let mut lists = self.lists.lock().unwrap();
                    lists.get_mut(&list.name).map(|(capacity, values)| {
                        *capacity = list.capacity;
                        values.truncate(list.capacity as usize);
                    })
                };
                match updated.and_then(|()| self.list(&list.name)) {
                    Some(list) => frame(&list),
                    None => return refuse(respond, 5, "not found"),
                }
            }
            proto::path::ADD_LIST_VALUE | proto::path::REMOVE_LIST_VALUE => {
                let request: ListValueRequest =
                    prost::Message::decode(messages[0].clone()).unwrap();
                let adding = path == proto::path::ADD_LIST_VALUE;
                // Agones' answers: NOT_FOUND (no such List, or removing a value it lacks),
                // ALREADY_EXISTS, OUT_OF_RANGE (at capacity).
                let refused = {
                    let mut lists = self.lists.lock().unwrap();
                    match lists.get_mut(&request.name) {
                        None => Some(5),
                        Some((capacity, values)) => {
                            let at = values.iter().position(|v| *v == request.value);
                            match (adding, at) {
                                (true, Some(_)) => Some(6),
                                (true, None) if values.len() as i64 >= *capacity => Some(11),
                                (true, None) => {
                                    values.push(request.value.clone());
                                    None
                                }
                                (false, Some(at)) => {
                                    values.remove(at);
                                    None
                                }
                                (false, None) => Some(5),
                            }
                        }
                    }
                };
                if let Some(code) = refused {
                    return refuse(respond, code, "refused");
                }
                self.record(if adding {
                    Call::ListAdd(request.name.clone(), request.value)
                } else {
                    Call::ListRemove(request.name.clone(), request.value)
                });
                frame(&self.list(&request.name).unwrap())
            }
            other => panic!("unexpected call {other}"),
        };
        let mut send = respond.send_response(ok_headers(), false).unwrap();
        send.send_data(answer, false).unwrap();
        let mut trailers = http::HeaderMap::new();
        trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
        send.send_trailers(trailers).unwrap();
    }
}

impl Fake {
    fn declare(&self, name: &str, capacity: i64) {
        self.lists
            .lock()
            .unwrap()
            .insert(name.into(), (capacity, Vec::new()));
    }

    fn list(&self, name: &str) -> Option<List> {
        let lists = self.lists.lock().unwrap();
        lists.get(name).map(|(capacity, values)| List {
            name: name.into(),
            capacity: *capacity,
            values: values.clone(),
        })
    }

    fn values(&self, name: &str) -> Vec<String> {
        self.list(name).map(|l| l.values).unwrap_or_default()
    }
}

/// A trailers-only gRPC answer with status `code`.
fn refuse(mut respond: h2::server::SendResponse<Bytes>, code: u32, message: &str) {
    let response = http::Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .header("grpc-status", code.to_string())
        .header("grpc-message", message)
        .body(())
        .unwrap();
    let _ = respond.send_response(response, true);
}

fn ok_headers() -> http::Response<()> {
    http::Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .body(())
        .unwrap()
}

const MODULES: &str = r#"
local nk = require("nakama")
nk.register_rpc(function(context, payload)
  return nk.json_encode({ match_id = nk.match_create("ticker", {}) })
end, "create")
"#;

const TICKER: &str = r#"
return {
  match_init = function(context, params) return {}, 20, "ticker" end,
  match_join_attempt = function(context, d, tick, state, presence, metadata) return state, true end,
  match_join = function(context, d, tick, state, presences) return state end,
  match_leave = function(context, d, tick, state, presences) return state end,
  match_loop = function(context, d, tick, state, messages) return state end,
  match_terminate = function(context, d, tick, state, grace) return nil end,
  match_signal = function(context, d, tick, state, data) return state, "" end,
}
"#;

fn count(calls: &[Call], call: &Call) -> usize {
    calls.iter().filter(|c| *c == call).count()
}

fn position(calls: &[Call], call: &Call) -> usize {
    calls
        .iter()
        .position(|c| c == call)
        .unwrap_or_else(|| panic!("no {call:?} in {calls:?}"))
}

fn counter(name: &str, value: i64) -> Call {
    Call::Counter(name.into(), value)
}

fn label(key: &str, value: &str) -> Call {
    Call::Label(key.into(), value.into())
}

async fn node(dir: &Path, port: u16) -> TestNode {
    let modules = dir.join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::write(modules.join("rpcs.lua"), MODULES).unwrap();
    std::fs::write(modules.join("ticker.lua"), TICKER).unwrap();
    TestNode::start_in(dir, |raw| {
        raw.name = "node one".into();
        raw.runtime.path = modules.display().to_string();
        raw.shutdown.grace_period_sec = 1;
        raw.agones.enabled = true;
        raw.agones.port = i64::from(port);
        raw.agones.health_interval_ms = 20;
        raw.agones.update_interval_ms = 20;
    })
    .await
}

#[tokio::test]
async fn a_node_speaks_the_agones_sdk_from_ready_to_shutdown() {
    let (fake, port) = Fake::start().await;
    let dir = tempfile::tempdir().unwrap();
    let s = node(dir.path(), port).await;

    // At start: its labels and counts, then Ready.
    let calls = fake
        .wait("Ready", |calls| calls.contains(&Call::Ready))
        .await;
    let ready = position(&calls, &Call::Ready);
    for before in [
        label("node", "node-one"),
        label("full", "false"),
        label("draining", "false"),
        counter("players", 0),
        counter("matches", 0),
    ] {
        assert!(position(&calls, &before) < ready, "{before:?}: {calls:?}");
    }
    assert_eq!(count(&calls, &Call::Ready), 1);

    // Health ticks on one stream; the GameServer is watched.
    fake.wait("three Health", |calls| count(calls, &Call::Health) >= 3)
        .await;
    fake.wait("Watch", |calls| calls.contains(&Call::Watch))
        .await;

    // A player connects: players follows; a match starts: matches follows.
    let http = Http::new(&s.base);
    let who = user(&http).await;
    let mut socket = Socket::connect(&s.base, &who.token, "").await;
    fake.wait("players 1", |calls| calls.contains(&counter("players", 1)))
        .await;
    let created = socket
        .request(Message::Rpc(Rpc {
            id: "create".into(),
            payload: String::new(),
            http_key: String::new(),
        }))
        .await;
    assert!(
        matches!(created.message, Some(Message::Rpc(_))),
        "{created:?}"
    );
    fake.wait("matches 1", |calls| calls.contains(&counter("matches", 1)))
        .await;
    // Only changes are sent.
    assert_eq!(count(&fake.calls(), &counter("matches", 1)), 1);

    // Agones allocates the game server: the node sees it.
    assert_eq!(
        s.node().agones_game_server_state().as_deref(),
        Some("Scheduled")
    );
    fake.state.send_replace("Allocated".into());
    tokio::time::timeout(Duration::from_secs(30), async {
        while s.node().agones_game_server_state().as_deref() != Some("Allocated") {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the allocation was never seen");

    // An operator drains the node: the label says so, and once the match has ended the last
    // counts go out and then Shutdown.
    let accepted = http
        .send(
            http.post("/v2/metafi/drain")
                .basic_auth("defaultkey", Some("")),
        )
        .await;
    assert_eq!(accepted.status, 202, "{:?}", accepted.body);
    fake.wait("draining", |calls| {
        calls.contains(&label("draining", "true"))
    })
    .await;
    assert!(!fake.calls().contains(&Call::Shutdown));
    drop(socket);
    s.stop().await;
    let calls = fake.calls();
    assert_eq!(calls.last(), Some(&Call::Shutdown), "{calls:?}");
    assert_eq!(count(&calls, &Call::Shutdown), 1);
    let draining = position(&calls, &label("draining", "true"));
    let ended = calls
        .iter()
        .rposition(|c| *c == counter("matches", 0))
        .unwrap();
    assert!(draining < ended, "{calls:?}");
}

#[tokio::test]
async fn without_agones_enabled_no_sdk_call_is_made() {
    let (fake, port) = Fake::start().await;
    let dir = tempfile::tempdir().unwrap();
    let s = TestNode::start_in(dir.path(), |raw| {
        raw.agones.port = i64::from(port);
    })
    .await;
    assert_eq!(s.node().agones_game_server_state(), None);
    s.stop().await;
    assert!(fake.calls().is_empty(), "{:?}", fake.calls());
}

#[tokio::test]
async fn a_full_node_says_so_in_its_label_and_a_late_sidecar_delays_nothing() {
    // The sidecar is not up when the node starts: the node starts anyway and the SDK calls
    // follow once it is.
    let port = port_outside_the_ephemeral_range();
    let dir = tempfile::tempdir().unwrap();
    // An objective of 1 % of the core: a new match (projected at 2 %) never fits.
    let s = TestNode::start_in(dir.path(), |raw| {
        raw.matches.executor_threads = 1;
        raw.matches.objective_cpu_percent = 1;
        raw.matches.new_match_cpu_us = 20_000;
        raw.agones.enabled = true;
        raw.agones.port = i64::from(port);
        raw.agones.health_interval_ms = 20;
        raw.agones.update_interval_ms = 20;
        raw.agones.counters = false;
    })
    .await;
    let health = s.http().send(s.http().get("/healthcheck")).await;
    assert_eq!(health.status, 200, "{:?}", health.body);
    let (fake, _) = Fake::start_on(port).await;
    let calls = fake
        .wait("Ready", |calls| calls.contains(&Call::Ready))
        .await;
    let ready = position(&calls, &Call::Ready);
    assert!(
        position(&calls, &label("full", "true")) < ready,
        "{calls:?}"
    );
    // agones.counters = false: no counter calls.
    assert!(
        !calls.iter().any(|c| matches!(c, Call::Counter(..))),
        "{calls:?}"
    );
    s.stop().await;
    let calls = fake.calls();
    assert_eq!(calls.last(), Some(&Call::Shutdown), "{calls:?}");
}

const LIST_MODULES: &str = r#"
local nk = require("nakama")
nk.register_rpc(function(context, payload)
  return nk.json_encode({ match_id = nk.match_create("room", {}) })
end, "create")
nk.register_rpc(function(context, payload)
  -- The handler ends the match, so the signal has no result (an error, as Nakama's).
  pcall(nk.match_signal, payload, "end")
  return "{}"
end, "end")
"#;

const ROOM: &str = r#"
return {
  match_init = function(context, params) return {}, 10, "room" end,
  match_join_attempt = function(context, d, tick, state, presence, metadata) return state, true end,
  match_join = function(context, d, tick, state, presences) return state end,
  match_leave = function(context, d, tick, state, presences) return state end,
  match_loop = function(context, d, tick, state, messages) return state end,
  match_terminate = function(context, d, tick, state, grace) return nil end,
  match_signal = function(context, d, tick, state, data) return nil, "" end,
}
"#;

#[tokio::test]
async fn the_lists_of_players_and_matches_follow_the_node_up_to_their_capacity() {
    let (fake, port) = Fake::start().await;
    fake.declare("players", 10);
    fake.declare("rooms", 5);
    let dir = tempfile::tempdir().unwrap();
    let modules = dir.path().join("modules");
    std::fs::create_dir_all(&modules).unwrap();
    std::fs::write(modules.join("rpcs.lua"), LIST_MODULES).unwrap();
    std::fs::write(modules.join("room.lua"), ROOM).unwrap();
    let s = TestNode::start_in(dir.path(), |raw| {
        raw.runtime.path = modules.display().to_string();
        raw.shutdown.grace_period_sec = 1;
        raw.agones.enabled = true;
        raw.agones.port = i64::from(port);
        raw.agones.health_interval_ms = 20;
        raw.agones.update_interval_ms = 20;
        raw.agones.counters = false;
        raw.agones.players_list = "players".into();
        raw.agones.matches_list = "rooms".into();
        // Room for one match in the List (the GameServer declared 5).
        raw.agones.matches_list_capacity = 1;
    })
    .await;
    // Before Ready: the players List is read, the rooms List gets its capacity.
    let calls = fake
        .wait("Ready", |calls| calls.contains(&Call::Ready))
        .await;
    let ready = position(&calls, &Call::Ready);
    assert!(position(&calls, &Call::GetList("players".into())) < ready);
    assert!(position(&calls, &Call::ListCapacity("rooms".into(), 1)) < ready);

    // A player connects: its user id joins the players List.
    let http = Http::new(&s.base);
    let who = user(&http).await;
    let mut socket = Socket::connect(&s.base, &who.token, "").await;
    let added = Call::ListAdd("players".into(), who.id.clone());
    fake.wait("player listed", |calls| calls.contains(&added))
        .await;

    // Two matches: the List holds the first (its capacity is 1); the second waits for room.
    let first: serde_json::Value = serde_json::from_str(&socket.rpc("create", "").await).unwrap();
    let first = first["match_id"].as_str().unwrap().to_owned();
    let listed = Call::ListAdd("rooms".into(), first.clone());
    fake.wait("first match listed", |calls| calls.contains(&listed))
        .await;
    let second: serde_json::Value = serde_json::from_str(&socket.rpc("create", "").await).unwrap();
    let second = second["match_id"].as_str().unwrap().to_owned();
    // A few updates later it is still the first alone.
    let health = count(&fake.calls(), &Call::Health);
    fake.wait("updates", |calls| count(calls, &Call::Health) >= health + 5)
        .await;
    assert_eq!(fake.values("rooms"), vec![first.clone()]);

    // The first ends: it leaves the List and the second takes its place.
    socket.rpc("end", &first).await;
    let second_listed = Call::ListAdd("rooms".into(), second.clone());
    let calls = fake
        .wait("second match listed", |calls| {
            calls.contains(&second_listed)
        })
        .await;
    assert!(
        position(&calls, &Call::ListRemove("rooms".into(), first.clone()))
            < position(&calls, &second_listed)
    );
    assert_eq!(fake.values("rooms"), vec![second.clone()]);
    // Each value was added once: only changes are sent.
    assert_eq!(count(&calls, &added), 1);

    // The player leaves: it leaves the List.
    drop(socket);
    let removed = Call::ListRemove("players".into(), who.id.clone());
    fake.wait("player unlisted", |calls| calls.contains(&removed))
        .await;
    assert!(fake.values("players").is_empty());
    s.stop().await;
    assert!(fake.values("rooms").is_empty(), "{:?}", fake.calls());
}

#[tokio::test]
async fn a_list_the_game_server_does_not_declare_is_read_once_and_left_alone() {
    let (fake, port) = Fake::start().await;
    let dir = tempfile::tempdir().unwrap();
    let s = TestNode::start_in(dir.path(), |raw| {
        raw.agones.enabled = true;
        raw.agones.port = i64::from(port);
        raw.agones.health_interval_ms = 20;
        raw.agones.update_interval_ms = 20;
        raw.agones.counters = false;
        raw.agones.players_list = "undeclared".into();
    })
    .await;
    fake.wait("Ready", |calls| calls.contains(&Call::Ready))
        .await;
    let http = Http::new(&s.base);
    let who = user(&http).await;
    let _socket = Socket::connect(&s.base, &who.token, "").await;
    let health = count(&fake.calls(), &Call::Health);
    fake.wait("updates", |calls| count(calls, &Call::Health) >= health + 5)
        .await;
    let calls = fake.calls();
    assert_eq!(
        count(&calls, &Call::GetList("undeclared".into())),
        1,
        "{calls:?}"
    );
    assert!(
        !calls.iter().any(|c| matches!(c, Call::ListAdd(..))),
        "{calls:?}"
    );
    s.stop().await;
}
