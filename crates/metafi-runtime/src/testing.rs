//! Test support shared by the engines' suites (feature `test-util`): a fake match host that
//! records what scripts asked for, and a gate that lets a test decide when a slow IO call ends.
//! Not compiled into the server.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use metafi_core::CoreError;
use metafi_match::{ListQuery, MatchInfo};
use serde_json::{Map, Value};

use crate::MatchHost;

/// A match host that records what scripts asked for. `signal("sleep", ms)` sleeps, to play a
/// slow IO call; `signal("sleep", "gate")` waits at `gate` until the test opens it, a slow IO
/// call whose end the test decides (so no test has to guess how long anything takes), and
/// `signal("gate?", _)` answers at once whether it is open.
#[derive(Debug, Default)]
pub struct FakeMatches {
    pub creates: AtomicUsize,
    pub last_params: parking_lot::Mutex<Option<(String, Map<String, Value>)>>,
    pub last_query: parking_lot::Mutex<Option<ListQuery>>,
    pub gate: Gate,
}

/// Where gated IO calls wait: closed until `open`, and counts the calls that reached it.
#[derive(Debug)]
pub struct Gate {
    open: tokio::sync::watch::Sender<bool>,
    arrived: AtomicUsize,
}

impl Default for Gate {
    fn default() -> Gate {
        Gate {
            open: tokio::sync::watch::Sender::new(false),
            arrived: AtomicUsize::new(0),
        }
    }
}

impl Gate {
    /// Lets every call waiting at the gate, and every later one, through.
    pub fn open(&self) {
        self.open.send_replace(true);
    }

    pub fn is_open(&self) -> bool {
        *self.open.borrow()
    }

    /// How many calls reached the gate so far (waiting, passed or abandoned).
    pub fn arrived(&self) -> usize {
        self.arrived.load(Ordering::SeqCst)
    }

    /// Waits until `n` calls reached the gate; panics with `what` if that never happens (a
    /// hang guard far above any real wait).
    pub async fn until_arrived(&self, n: usize, what: &str) {
        tokio::time::timeout(Duration::from_secs(30), async {
            while self.arrived() < n {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("{what}: {} of {n} calls reached the gate", self.arrived()));
    }

    async fn pass(&self) {
        let mut open = self.open.subscribe();
        self.arrived.fetch_add(1, Ordering::SeqCst);
        // The sender lives as long as the host: `wait_for` ends only when the gate opens.
        let _ = open.wait_for(|open| *open).await;
    }
}

#[async_trait]
impl MatchHost for FakeMatches {
    async fn create(&self, module: &str, params: Map<String, Value>) -> Result<String, CoreError> {
        let n = self.creates.fetch_add(1, Ordering::SeqCst);
        *self.last_params.lock() = Some((module.to_owned(), params));
        Ok(format!("match-{n}.node"))
    }

    async fn list(&self, query: ListQuery) -> Result<Vec<MatchInfo>, CoreError> {
        *self.last_query.lock() = Some(query.clone());
        Ok(vec![MatchInfo {
            match_id: "listed.node".into(),
            authoritative: true,
            label: query.label,
            size: 2,
            tick_rate: Some(10),
            handler_name: Some("lobby".into()),
        }])
    }

    async fn get(&self, id: &str) -> Result<Option<MatchInfo>, CoreError> {
        if id == "nope" {
            return Ok(None);
        }
        Ok(Some(MatchInfo {
            match_id: id.to_owned(),
            authoritative: true,
            label: None,
            size: 1,
            tick_rate: None,
            handler_name: Some("lobby".into()),
        }))
    }

    async fn signal(&self, id: &str, data: String) -> Result<String, CoreError> {
        if id == "gate?" {
            return Ok(if self.gate.is_open() {
                "open"
            } else {
                "closed"
            }
            .to_owned());
        }
        if id == "sleep" && data == "gate" {
            self.gate.pass().await;
            return Ok("passed the gate".to_owned());
        }
        if id == "sleep" {
            let ms: u64 = data.parse().unwrap_or(0);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            return Ok(format!("slept {ms}"));
        }
        Ok(format!("{id} got {data}"))
    }
}

/// The context of a REST RPC the engines' suites call as `user`: a client address, a query and
/// a header, so scripts can show that they see each.
pub fn caller(user: metafi_core::RpcUser) -> metafi_core::RpcContext {
    metafi_core::RpcContext {
        user: Some(user),
        client_ip: Some(std::net::IpAddr::from([127, 0, 0, 9])),
        client_port: Some(50_009),
        trace_id: Some(uuid::Uuid::from_u128(0x4000_8000_0000_0000_0009)),
        lang: None,
        query: std::collections::HashMap::from([(
            "q".to_owned(),
            vec!["1".to_owned(), "2".to_owned()],
        )]),
        headers: metafi_core::RequestHeaders::from_pairs([("x-test", "yes")])
            .expect("a valid header"),
        rest_rpc: true,
    }
}

/// A user with a device, created straight in storage.
pub async fn device_user(store: &dyn metafi_storage::Storage, username: &str) -> uuid::Uuid {
    let id = uuid::Uuid::new_v4();
    store
        .create_user(metafi_storage::NewUser {
            id,
            username: username.to_owned(),
            identity: metafi_storage::NewIdentity::Device {
                id: format!("device-{id}"),
            },
            now_ms: 1_700_000_000_000,
        })
        .await
        .unwrap_or_else(|e| panic!("could not create user {username}: {e}"));
    id
}

/// `text` as JSON; a test fails when it is not.
pub fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}
