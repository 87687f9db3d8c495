//! A node under Agones, against a fake SDK server written from Agones' public `sdk.proto` and
//! `beta.proto` (gRPC over HTTP/2, recording every call): labels and counters then `Ready` at
//! start, `Health` ticks, the Counters `players` and `matches` follow a socket and a match, an
//! `Allocated` GameServer is seen, and after a drain `Shutdown` comes once the match has ended.
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
    self, Counter, Empty, GameServer, GameServerStatus, KeyValue, ObjectMeta, UpdateCounterRequest,
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
}

#[derive(Clone)]
struct Fake {
    calls: Arc<Mutex<Vec<Call>>>,
    changed: Arc<Notify>,
    state: watch::Sender<String>,
}

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
            other => panic!("unexpected call {other}"),
        };
        let mut send = respond.send_response(ok_headers(), false).unwrap();
        send.send_data(answer, false).unwrap();
        let mut trailers = http::HeaderMap::new();
        trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
        send.send_trailers(trailers).unwrap();
    }
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
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
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
