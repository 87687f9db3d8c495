//! A cluster of real `metafi` processes (the binary, started with `--cluster`) on one PostgreSQL
//! (`METAFI_TEST_POSTGRES_URL`) and NATS:
//! - a node killed with SIGKILL mid-test: the others tell their clients its presences left
//!   within the stated bound and keep serving; restarted, it rejoins and its new sessions are
//!   known everywhere (`METAFI_TEST_NATS_URL`);
//! - one node cut off from NATS (a TCP relay between it and NATS, cut and restored): the others
//!   see it lost within the bound and keep talking among themselves, it serves its own clients
//!   alone, and it rejoins when the link returns;
//! - NATS stopped and restarted on the same port (a partition of every node from every other):
//!   while it is down each node declares its peers lost and keeps serving its own clients; when
//!   it is back the nodes reconnect and reconcile (`METAFI_TEST_NATS_BIN`, a nats-server this
//!   test starts and stops itself, so the shared NATS of the other tests is never cut).
//!
//! Without the variables the tests skip, unless `METAFI_REQUIRE_NATS=1` /
//! `METAFI_REQUIRE_POSTGRES=1` (as in `scripts/test.sh`). The only time assertions are the
//! bounds docs/CLUSTER.md states, used as deadlines (plus a stated slack for a loaded machine).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use metafi_proto::realtime::{
    ChannelJoin, ChannelMessageSend, Envelope, MatchCreate, MatchJoin, MatchJoinId, Message, Ping,
    StatusFollow,
};
use metafi_proto::wkt::bool_value;
use metafi_testkit::{Http, Socket, User, user};
use tokio::time::Instant;

/// Heartbeats every 200 ms, a peer silent for 1 s is lost: the bound a lost node is noticed
/// within is `PEER_LOST + HEARTBEAT / 2` (docs/CLUSTER.md, "Membership").
const HEARTBEAT: Duration = Duration::from_millis(200);
const PEER_LOST: Duration = Duration::from_millis(1000);
/// Scheduling slack on top of a stated bound: three servers, NATS and the test share two cores
/// (with other builds running), so a timer may fire late by this much.
const SLACK: Duration = Duration::from_secs(2);
/// async-nats retries a lost connection with a backoff that grows to 4 s: the bound a node
/// reconnects within once NATS is back.
const NATS_RECONNECT: Duration = Duration::from_secs(4);

fn lost_bound() -> Duration {
    PEER_LOST + HEARTBEAT / 2 + SLACK
}

fn env_or_skip(var: &str, require: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => Some(v),
        _ => {
            assert!(
                std::env::var(require).as_deref() != Ok("1"),
                "{require}=1 but {var} is not set (see scripts/test.sh)"
            );
            None
        }
    }
}

fn postgres() -> Option<String> {
    env_or_skip("METAFI_TEST_POSTGRES_URL", "METAFI_REQUIRE_POSTGRES")
}

/// One `metafi serve --cluster …` process and where to reach it.
struct NodeProcess {
    name: String,
    child: Child,
    base: String,
    metrics: String,
    log: Arc<Mutex<Vec<String>>>,
}

/// What the nodes of one test share.
struct Setup {
    nats: String,
    postgres: String,
    /// A subject prefix of this test's own: tests running at once form separate clusters.
    prefix: String,
    dir: tempfile::TempDir,
}

impl Setup {
    fn new(nats: String, postgres: String) -> Setup {
        Setup {
            nats,
            postgres,
            prefix: format!("procs{}", uuid::Uuid::new_v4().simple()),
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// Starts node `name` and waits until it is ready (its data directory is `name`'s own, so
    /// a restart under the same name reuses it, as an operator's would).
    fn start(&self, name: &str) -> NodeProcess {
        self.start_via(name, &self.nats)
    }

    /// Like [`Setup::start`], reaching NATS at `nats` (a [`NatsLink`] of its own).
    fn start_via(&self, name: &str, nats: &str) -> NodeProcess {
        let data: PathBuf = self.dir.path().join(name);
        let mut child = Command::new(env!("CARGO_BIN_EXE_metafi"))
            .arg("serve")
            .args([
                "--port",
                "0",
                "--metrics-port",
                "0",
                "--console-port",
                "0",
                "--data-dir",
            ])
            .arg(&data)
            .args(["--database-url", &self.postgres])
            .args(["--cluster", nats, "--node", name])
            .args(["--set", &format!("cluster.subject_prefix={}", self.prefix)])
            .args([
                "--set",
                &format!("cluster.heartbeat_interval_ms={}", HEARTBEAT.as_millis()),
            ])
            .args([
                "--set",
                &format!("cluster.peer_lost_timeout_ms={}", PEER_LOST.as_millis()),
            ])
            .args(["--set", "session.single_socket=true"])
            .args(["--set", "quic.enabled=false"])
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the metafi binary");
        let log: Arc<Mutex<Vec<String>>> = Arc::default();
        let stdout = child.stdout.take().expect("stdout is piped");
        let lines = log.clone();
        // Keeps draining the log so the server never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line);
            }
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let (base, metrics) = loop {
            let found = {
                let log = log.lock().unwrap();
                let ready = log.iter().find(|l| l.contains("metafi is ready"));
                let metrics = log.iter().find(|l| l.contains("metrics at /metrics"));
                ready
                    .zip(metrics)
                    .map(|(r, m)| (address_in(r), address_in(m)))
            };
            if let Some((base, metrics)) = found {
                break (base, metrics);
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "node {name} exited at start ({status}); its log:\n{}",
                    log.lock().unwrap().join("\n")
                );
            }
            assert!(
                std::time::Instant::now() < deadline,
                "node {name} not ready within 60 s; its log:\n{}",
                log.lock().unwrap().join("\n")
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        NodeProcess {
            name: name.to_owned(),
            child,
            base: format!("http://{base}"),
            metrics: format!("http://{metrics}/metrics"),
            log,
        }
    }
}

/// `127.0.0.1:PORT` from a log line's `address=…` field (`address=Some(127.0.0.1:PORT)` too).
fn address_in(line: &str) -> String {
    let field = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("address="))
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    field
        .trim_start_matches("Some(")
        .trim_end_matches(')')
        .to_owned()
}

impl NodeProcess {
    /// `kill -9`: no `bye`, no closed sockets; the others must notice on their own.
    fn sigkill(&mut self) {
        self.child.kill().unwrap(); // Child::kill sends SIGKILL on Unix.
        self.child.wait().unwrap();
    }

    /// A gauge or counter of the node's `/metrics` (0 when absent).
    async fn metric(&self, name: &str) -> f64 {
        let text = reqwest::get(&self.metrics)
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
            .unwrap_or(0.0)
    }

    fn logged(&self, needle: &str) -> bool {
        self.log.lock().unwrap().iter().any(|l| l.contains(needle))
    }

    fn http(&self) -> Http {
        Http::new(&self.base)
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `metric` on `node` until it equals `want`, for up to `within`.
async fn metric_becomes(node: &NodeProcess, metric: &str, want: f64, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let got = node.metric(metric).await;
        if got == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{}: {metric} is {got}, not {want}, after {within:?}; its log:\n{}",
            node.name,
            node.log.lock().unwrap().join("\n")
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until each of `nodes` holds `count` presences of other nodes' sessions.
async fn presences_known(nodes: &[&NodeProcess], count: usize) {
    for node in nodes {
        metric_becomes(
            node,
            "metafi_cluster_remote_presences",
            count as f64,
            Duration::from_secs(5),
        )
        .await;
    }
}

async fn join_room(socket: &mut Socket, room: &str) -> String {
    let answer = socket
        .request(Message::ChannelJoin(ChannelJoin {
            target: room.into(),
            r#type: 1,
            persistence: bool_value(false),
            hidden: None,
        }))
        .await;
    match answer.message {
        Some(Message::Channel(channel)) => channel.id,
        other => panic!("expected a channel, got {other:?}"),
    }
}

/// A user signed in on `node` with a socket there (pinged, so the session is registered).
async fn player(node: &NodeProcess) -> (User, Socket) {
    let who = user(&node.http()).await;
    let mut socket = Socket::connect(&node.base, &who.token, "").await;
    socket.request(Message::Ping(Ping {})).await;
    (who, socket)
}

async fn say(socket: &mut Socket, channel: &str, text: &str) {
    let ack = socket
        .request(Message::ChannelMessageSend(ChannelMessageSend {
            channel_id: channel.into(),
            // Nakama wants a JSON object.
            content: serde_json::json!({ "text": text }).to_string(),
        }))
        .await;
    assert!(
        matches!(ack.message, Some(Message::ChannelMessageAck(_))),
        "{ack:?}"
    );
}

fn message(e: &Envelope, text: &str) -> bool {
    matches!(&e.message, Some(Message::ChannelMessage(m))
        if serde_json::from_str::<serde_json::Value>(&m.content).ok()
            == Some(serde_json::json!({ "text": text })))
}

fn joined(e: &Envelope, user_id: &str) -> bool {
    matches!(&e.message, Some(Message::ChannelPresenceEvent(ev))
        if ev.joins.iter().any(|p| p.user_id == user_id))
}

fn left(e: &Envelope, user_id: &str) -> bool {
    matches!(&e.message, Some(Message::ChannelPresenceEvent(ev))
        if ev.leaves.iter().any(|p| p.user_id == user_id))
}

/// Waits up to `within` (at most the testkit's 5 s) for an event `accept` takes.
async fn event_within(
    socket: &mut Socket,
    within: Duration,
    what: &str,
    accept: impl Fn(&Envelope) -> bool,
) {
    tokio::time::timeout(within, socket.event(accept))
        .await
        .unwrap_or_else(|_| {
            panic!(
                "not within {within:?}: {what}; received meanwhile: {:?}",
                socket.backlog()
            )
        });
}

/// The next event `accept` takes; fails naming `what` (within the testkit's wait, a little less
/// so this message wins).
async fn expect_event(socket: &mut Socket, what: &str, accept: impl Fn(&Envelope) -> bool) {
    event_within(socket, Duration::from_millis(4800), what, accept).await;
}

/// A new account can sign in on `node` (the database is reachable, the API serves).
async fn serves(node: &NodeProcess) {
    let reply = node.http().auth_device(&uuid_device(), true).await;
    assert_eq!(reply.status, 200, "{}: {:?}", node.name, reply.body);
}

fn uuid_device() -> String {
    format!("procs-{}", uuid::Uuid::new_v4())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_node_leaves_everywhere_within_the_bound_and_rejoins_when_restarted() {
    let (Some(nats), Some(pg)) = (
        env_or_skip("METAFI_TEST_NATS_URL", "METAFI_REQUIRE_NATS"),
        postgres(),
    ) else {
        return;
    };
    let setup = Setup::new(nats, pg);
    let n1 = setup.start("n1");
    let n2 = setup.start("n2");
    let mut n3 = setup.start("n3");
    for node in [&n1, &n2, &n3] {
        metric_becomes(node, "metafi_cluster_peers", 2.0, Duration::from_secs(10)).await;
    }

    // alice on node 1, bob on node 2, carol on node 3, all in one room.
    let room = format!("procs-{}", uuid::Uuid::new_v4().simple());
    let (alice, mut alice_socket) = player(&n1).await;
    let (bob, mut bob_socket) = player(&n2).await;
    let (carol, mut carol_socket) = player(&n3).await;
    // Each join waits until every node's books hold the members so far: a presence event is
    // sent by the joiner's node to the members *it* knows, and a member tracked on another node
    // a moment ago may not be announced there yet (docs/CLUSTER.md, "What does not work yet").
    let channel = join_room(&mut alice_socket, &room).await;
    presences_known(&[&n2, &n3], 1).await;
    join_room(&mut bob_socket, &room).await;
    presences_known(&[&n1], 1).await;
    presences_known(&[&n3], 2).await;
    join_room(&mut carol_socket, &room).await;
    expect_event(&mut alice_socket, "alice_socket: joined carol.id", |e| {
        joined(e, &carol.id)
    })
    .await;
    expect_event(&mut bob_socket, "bob_socket: joined carol.id", |e| {
        joined(e, &carol.id)
    })
    .await;
    for node in [&n1, &n2, &n3] {
        metric_becomes(
            node,
            "metafi_cluster_remote_presences",
            2.0,
            Duration::from_secs(5),
        )
        .await;
    }
    say(&mut carol_socket, &channel, "carol was here").await;
    expect_event(
        &mut alice_socket,
        "alice_socket: message \"carol was here\"",
        |e| message(e, "carol was here"),
    )
    .await;
    expect_event(
        &mut bob_socket,
        "bob_socket: message \"carol was here\"",
        |e| message(e, "carol was here"),
    )
    .await;

    // Node 3 dies without a word: alice and bob are told carol left, within the bound.
    n3.sigkill();
    let bound = lost_bound();
    event_within(&mut alice_socket, bound, "alice sees carol leave", |e| {
        left(e, &carol.id)
    })
    .await;
    event_within(&mut bob_socket, bound, "bob sees carol leave", |e| {
        left(e, &carol.id)
    })
    .await;
    for node in [&n1, &n2] {
        metric_becomes(node, "metafi_cluster_peers", 1.0, bound).await;
        metric_becomes(node, "metafi_cluster_remote_presences", 1.0, bound).await;
        assert!(node.logged("peer lost"), "{} logs the loss", node.name);
    }

    // The others keep serving: sign-ins, and the room between nodes 1 and 2.
    serves(&n1).await;
    serves(&n2).await;
    say(&mut alice_socket, &channel, "still here").await;
    expect_event(&mut bob_socket, "bob_socket: message \"still here\"", |e| {
        message(e, "still here")
    })
    .await;

    // Node 3 restarts under its name: it rejoins, and what happens on it is seen everywhere.
    let n3 = setup.start("n3");
    for node in [&n1, &n2, &n3] {
        metric_becomes(node, "metafi_cluster_peers", 2.0, Duration::from_secs(10)).await;
    }
    // It learned the others' sessions and presences from their join snapshots.
    metric_becomes(
        &n3,
        "metafi_cluster_remote_sessions",
        2.0,
        Duration::from_secs(5),
    )
    .await;
    presences_known(&[&n3], 2).await;
    let (dave, mut dave_socket) = player(&n3).await;
    join_room(&mut dave_socket, &room).await;
    expect_event(&mut alice_socket, "alice_socket: joined dave.id", |e| {
        joined(e, &dave.id)
    })
    .await;
    expect_event(&mut bob_socket, "bob_socket: joined dave.id", |e| {
        joined(e, &dave.id)
    })
    .await;
    for node in [&n1, &n2] {
        metric_becomes(
            node,
            "metafi_cluster_remote_presences",
            2.0,
            Duration::from_secs(5),
        )
        .await;
    }
    say(&mut dave_socket, &channel, "dave from the new node 3").await;
    expect_event(
        &mut alice_socket,
        "alice_socket: message \"dave from the new node 3\"",
        |e| message(e, "dave from the new node 3"),
    )
    .await;
    expect_event(
        &mut bob_socket,
        "bob_socket: message \"dave from the new node 3\"",
        |e| message(e, "dave from the new node 3"),
    )
    .await;
    say(&mut bob_socket, &channel, "welcome back").await;
    expect_event(
        &mut dave_socket,
        "dave_socket: message \"welcome back\"",
        |e| message(e, "welcome back"),
    )
    .await;

    // A new session on the restarted node closes the user's older socket on node 1 (single
    // socket across nodes: node 1 knows node 3's sessions again).
    let mut newer = Socket::connect(&n3.base, &alice.token, "").await;
    let frame = alice_socket.closed(Duration::from_secs(5)).await.unwrap();
    assert_eq!(u16::from(frame.code), 1000);
    newer.request(Message::Ping(Ping {})).await;
    drop(bob);
}

/// A nats-server of the test's own, stopped and restarted on the same port.
struct Nats {
    bin: String,
    dir: tempfile::TempDir,
    child: Option<Child>,
    port: u16,
}

impl Nats {
    fn start(bin: &str) -> Nats {
        let dir = tempfile::tempdir().unwrap();
        let mut nats = Nats {
            bin: bin.to_owned(),
            dir,
            child: None,
            port: 0,
        };
        nats.run();
        nats
    }

    /// Starts the server: on a port it chooses the first time, on the same port afterwards.
    fn run(&mut self) {
        let port = if self.port == 0 {
            "-1".to_owned()
        } else {
            self.port.to_string()
        };
        let child = Command::new(&self.bin)
            .args(["-a", "127.0.0.1", "-p", &port, "--ports_file_dir"])
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nats-server");
        let ports = self
            .dir
            .path()
            .join(format!("nats-server_{}.ports", child.id()));
        self.child = Some(child);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let port = loop {
            if let Some(port) = read_port(&ports) {
                break port;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "nats-server did not report its port"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(self.port == 0 || self.port == port, "restarted elsewhere");
        self.port = port;
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }
}

fn read_port(file: &Path) -> Option<u16> {
    let text = std::fs::read_to_string(file).ok()?;
    let url = text.split('"').find(|s| s.starts_with("nats://"))?;
    url.rsplit(':').next()?.parse().ok()
}

impl Drop for Nats {
    fn drop(&mut self) {
        self.stop();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_nats_is_down_each_node_serves_alone_and_they_reconcile_when_it_returns() {
    let (Some(bin), Some(pg)) = (
        env_or_skip("METAFI_TEST_NATS_BIN", "METAFI_REQUIRE_NATS"),
        postgres(),
    ) else {
        return;
    };
    let mut nats = Nats::start(&bin);
    let setup = Setup::new(nats.url(), pg);
    let n1 = setup.start("n1");
    let n2 = setup.start("n2");
    for node in [&n1, &n2] {
        metric_becomes(node, "metafi_cluster_peers", 1.0, Duration::from_secs(10)).await;
    }
    let room = format!("procs-{}", uuid::Uuid::new_v4().simple());
    let (alice, mut alice_socket) = player(&n1).await;
    let (bob, mut bob_socket) = player(&n2).await;
    let channel = join_room(&mut alice_socket, &room).await;
    presences_known(&[&n2], 1).await;
    join_room(&mut bob_socket, &room).await;
    expect_event(&mut alice_socket, "alice_socket: joined bob.id", |e| {
        joined(e, &bob.id)
    })
    .await;
    for node in [&n1, &n2] {
        metric_becomes(
            node,
            "metafi_cluster_remote_presences",
            1.0,
            Duration::from_secs(5),
        )
        .await;
    }

    // NATS goes away: every node is cut off from every other.
    nats.stop();
    // Within the bound each declares the other lost and tells its own members of the leaves.
    let bound = lost_bound();
    event_within(&mut alice_socket, bound, "alice sees bob leave", |e| {
        left(e, &bob.id)
    })
    .await;
    event_within(&mut bob_socket, bound, "bob sees alice leave", |e| {
        left(e, &alice.id)
    })
    .await;
    for node in [&n1, &n2] {
        metric_becomes(node, "metafi_cluster_peers", 0.0, bound).await;
        metric_becomes(node, "metafi_cluster_remote_sessions", 0.0, bound).await;
        assert!(node.logged("disconnected from NATS"), "{}", node.name);
    }
    // Each keeps serving its own clients: sign-ins (PostgreSQL is not cut off), the room on
    // its side (alice gets her own message; bob, on the other side, does not).
    serves(&n1).await;
    serves(&n2).await;
    say(&mut alice_socket, &channel, "alone on node 1").await;
    expect_event(
        &mut alice_socket,
        "alice_socket: message \"alone on node 1\"",
        |e| message(e, "alone on node 1"),
    )
    .await;
    // One user signs in on both sides: the partition cannot settle single socket; both stay.
    let carol = user(&n1.http()).await;
    let mut carol_on_1 = Socket::connect(&n1.base, &carol.token, "").await;
    carol_on_1.request(Message::Ping(Ping {})).await;
    let mut carol_on_2 = Socket::connect(&n2.base, &carol.token, "").await;
    carol_on_2.request(Message::Ping(Ping {})).await;
    carol_on_1.request(Message::Ping(Ping {})).await;
    bob_socket
        .assert_no_event(Duration::from_millis(300), |e| {
            message(e, "alone on node 1")
        })
        .await;

    // NATS returns on the same port: the nodes reconnect (within async-nats's 4 s backoff), hear
    // each other, exchange snapshots, and their books are whole again.
    nats.run();
    let heal = NATS_RECONNECT + HEARTBEAT * 2 + SLACK;
    for node in [&n1, &n2] {
        metric_becomes(node, "metafi_cluster_peers", 1.0, heal).await;
        metric_becomes(
            node,
            "metafi_cluster_remote_presences",
            1.0,
            Duration::from_secs(5),
        )
        .await;
    }
    // The partition's double sign-in is settled: carol's older socket (node 1) is closed.
    let frame = carol_on_1.closed(Duration::from_secs(5)).await.unwrap();
    assert_eq!(u16::from(frame.code), 1000);
    carol_on_2.request(Message::Ping(Ping {})).await;
    // The room spans both nodes again, both ways.
    say(&mut alice_socket, &channel, "together again").await;
    expect_event(
        &mut bob_socket,
        "bob_socket: message \"together again\"",
        |e| message(e, "together again"),
    )
    .await;
    say(&mut bob_socket, &channel, "indeed").await;
    expect_event(&mut alice_socket, "alice_socket: message \"indeed\"", |e| {
        message(e, "indeed")
    })
    .await;
}

/// Two nodes on the shared NATS, `None` (skip) without NATS or PostgreSQL.
fn two_nodes() -> Option<(Setup, NodeProcess, NodeProcess)> {
    let (Some(nats), Some(pg)) = (
        env_or_skip("METAFI_TEST_NATS_URL", "METAFI_REQUIRE_NATS"),
        postgres(),
    ) else {
        return None;
    };
    let setup = Setup::new(nats, pg);
    let n1 = setup.start("n1");
    let n2 = setup.start("n2");
    Some((setup, n1, n2))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_elsewhere_see_the_users_of_a_sigkilled_node_go_offline() {
    let Some((_setup, n1, mut n2)) = two_nodes() else {
        return;
    };
    for node in [&n1, &n2] {
        metric_becomes(node, "metafi_cluster_peers", 1.0, Duration::from_secs(10)).await;
    }
    let (_fan, mut fan_socket) = player(&n1).await;
    let star = user(&n2.http()).await;
    let follow = fan_socket
        .request(Message::StatusFollow(StatusFollow {
            user_ids: vec![star.id.clone()],
            usernames: Vec::new(),
        }))
        .await;
    assert!(
        matches!(follow.message, Some(Message::Status(_))),
        "{follow:?}"
    );
    // The star comes online on node 2: the follower on node 1 is told.
    let mut star_socket = Socket::connect(&n2.base, &star.token, "status=true").await;
    star_socket.request(Message::Ping(Ping {})).await;
    expect_event(&mut fan_socket, "fan: the star comes online", |e| {
        matches!(&e.message, Some(Message::StatusPresenceEvent(ev))
            if ev.joins.iter().any(|p| p.user_id == star.id))
    })
    .await;
    // Node 2 dies: within the bound the follower sees the star go offline.
    n2.sigkill();
    event_within(
        &mut fan_socket,
        lost_bound(),
        "fan: the star goes offline",
        |e| {
            matches!(&e.message, Some(Message::StatusPresenceEvent(ev))
            if ev.leaves.iter().any(|p| p.user_id == star.id) && ev.joins.is_empty())
        },
    )
    .await;
}

/// A relayed match lives on the node that made it: when that node dies, a player elsewhere is
/// told it is out of the match (its own presence leaves, as a kicked player is told; CLUSTER.md,
/// "A lost (or departed) node's matches"), within the lost-peer bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_elsewhere_are_told_a_sigkilled_nodes_relayed_match_is_gone() {
    let Some((_setup, n1, mut n2)) = two_nodes() else {
        return;
    };
    for node in [&n1, &n2] {
        metric_becomes(node, "metafi_cluster_peers", 1.0, Duration::from_secs(10)).await;
    }
    let (host, mut host_socket) = player(&n2).await;
    let (guest, mut guest_socket) = player(&n1).await;
    let created = host_socket
        .request(Message::MatchCreate(MatchCreate::default()))
        .await;
    let Some(Message::Match(created)) = created.message else {
        panic!("expected a match, got {created:?}")
    };
    // The guest on node 1 joins the match made on node 2 and sees its host.
    let joined = guest_socket
        .request(Message::MatchJoin(MatchJoin {
            id: Some(MatchJoinId::MatchId(created.match_id.clone())),
            metadata: Default::default(),
        }))
        .await;
    let Some(Message::Match(joined)) = joined.message else {
        panic!("expected a match, got {joined:?}")
    };
    assert_eq!(
        joined
            .presences
            .iter()
            .map(|p| p.user_id.as_str())
            .collect::<Vec<_>>(),
        [host.id.as_str()]
    );
    // Node 2 dies: within the bound the guest is told it left the match, which is gone.
    n2.sigkill();
    event_within(
        &mut guest_socket,
        lost_bound(),
        "guest: its own presence leaves the lost node's match",
        |e| {
            matches!(&e.message, Some(Message::MatchPresenceEvent(ev))
            if ev.match_id == created.match_id
                && ev.leaves.iter().any(|p| p.user_id == guest.id))
        },
    )
    .await;
}

/// A TCP relay between one node and NATS: cutting it partitions that node alone from NATS (and
/// so from the rest of the cluster) while the other nodes keep their connections.
struct NatsLink {
    addr: std::net::SocketAddr,
    open: Arc<AtomicBool>,
    connections: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl NatsLink {
    async fn start(nats_url: &str) -> NatsLink {
        let target = nats_url
            .trim_start_matches("nats://")
            .split(',')
            .next()
            .unwrap()
            .to_owned();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let open = Arc::new(AtomicBool::new(true));
        let connections: Arc<Mutex<Vec<tokio::task::AbortHandle>>> = Arc::default();
        let accept = tokio::spawn({
            let (open, connections) = (open.clone(), connections.clone());
            async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    if !open.load(Ordering::SeqCst) {
                        // Cut: the node's reconnect attempts are closed at once.
                        continue;
                    }
                    let target = target.clone();
                    let relay = tokio::spawn(async move {
                        if let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                    connections.lock().unwrap().push(relay.abort_handle());
                }
            }
        });
        NatsLink {
            addr,
            open,
            connections,
            accept,
        }
    }

    fn url(&self) -> String {
        format!("nats://{}", self.addr)
    }

    /// Drops the node's NATS connection and refuses its reconnects.
    fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        for relay in self.connections.lock().unwrap().drain(..) {
            relay.abort();
        }
    }

    /// Lets the node's next reconnect through.
    fn heal(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

impl Drop for NatsLink {
    fn drop(&mut self) {
        self.accept.abort();
        self.cut();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_from_nats_is_lost_to_the_others_who_keep_talking_and_it_rejoins() {
    let (Some(nats), Some(pg)) = (
        env_or_skip("METAFI_TEST_NATS_URL", "METAFI_REQUIRE_NATS"),
        postgres(),
    ) else {
        return;
    };
    let link = NatsLink::start(&nats).await;
    let setup = Setup::new(nats, pg);
    let n1 = setup.start("n1");
    let n2 = setup.start_via("n2", &link.url());
    let n3 = setup.start("n3");
    for node in [&n1, &n2, &n3] {
        metric_becomes(node, "metafi_cluster_peers", 2.0, Duration::from_secs(10)).await;
    }
    let room = format!("procs-{}", uuid::Uuid::new_v4().simple());
    let (alice, mut alice_socket) = player(&n1).await;
    let (bob, mut bob_socket) = player(&n2).await;
    let (carol, mut carol_socket) = player(&n3).await;
    let channel = join_room(&mut alice_socket, &room).await;
    presences_known(&[&n2, &n3], 1).await;
    join_room(&mut bob_socket, &room).await;
    presences_known(&[&n1], 1).await;
    presences_known(&[&n3], 2).await;
    join_room(&mut carol_socket, &room).await;
    presences_known(&[&n1, &n2], 2).await;

    // Node 2 alone loses NATS.
    link.cut();
    let bound = lost_bound();
    // Within the bound the others tell their members bob left, and node 2 tells bob the others
    // left.
    for (socket, who) in [(&mut alice_socket, "alice"), (&mut carol_socket, "carol")] {
        event_within(socket, bound, &format!("{who} sees bob leave"), |e| {
            left(e, &bob.id)
        })
        .await;
    }
    // (Both peers are noticed at one check: one event may carry both leaves.)
    let deadline = Instant::now() + bound;
    let mut gone = std::collections::HashSet::new();
    while gone.len() < 2 {
        let within = deadline.saturating_duration_since(Instant::now());
        let event = tokio::time::timeout(
            within,
            bob_socket.event(|e| left(e, &alice.id) || left(e, &carol.id)),
        )
        .await
        .unwrap_or_else(|_| panic!("bob did not see alice and carol leave within {bound:?}"));
        if let Some(Message::ChannelPresenceEvent(ev)) = event.message {
            gone.extend(ev.leaves.into_iter().map(|p| p.user_id));
        }
    }
    metric_becomes(&n2, "metafi_cluster_peers", 0.0, bound).await;
    for node in [&n1, &n3] {
        metric_becomes(node, "metafi_cluster_peers", 1.0, bound).await;
        metric_becomes(node, "metafi_cluster_remote_presences", 1.0, bound).await;
    }
    // The rest of the cluster keeps talking; node 2 serves its own clients alone.
    say(&mut alice_socket, &channel, "n1 to n3 without n2").await;
    expect_event(&mut carol_socket, "carol gets alice's message", |e| {
        message(e, "n1 to n3 without n2")
    })
    .await;
    say(&mut bob_socket, &channel, "bob alone").await;
    expect_event(&mut bob_socket, "bob gets his own message", |e| {
        message(e, "bob alone")
    })
    .await;
    serves(&n2).await;
    alice_socket
        .assert_no_event(Duration::from_millis(300), |e| message(e, "bob alone"))
        .await;

    // The link returns: node 2 reconnects within the backoff, everyone's books are whole.
    link.heal();
    let heal = NATS_RECONNECT + HEARTBEAT * 2 + SLACK;
    for node in [&n1, &n2, &n3] {
        metric_becomes(node, "metafi_cluster_peers", 2.0, heal).await;
    }
    presences_known(&[&n1, &n2, &n3], 2).await;
    say(&mut bob_socket, &channel, "bob is back").await;
    for (socket, who) in [(&mut alice_socket, "alice"), (&mut carol_socket, "carol")] {
        expect_event(socket, &format!("{who} gets bob's message"), |e| {
            message(e, "bob is back")
        })
        .await;
    }
    say(&mut carol_socket, &channel, "welcome back bob").await;
    expect_event(&mut bob_socket, "bob gets carol's message", |e| {
        message(e, "welcome back bob")
    })
    .await;
}
