//! Agones (`[agones]`, docs/MATCHES.md "Agones"): the node speaks the Agones SDK to the SDK
//! sidecar of its pod. Once started it sets its labels and counters and calls `Ready`; it
//! sends `Health` every `health_interval_ms` on one client stream; every `update_interval_ms`
//! it keeps the labels (`full`, `draining`) and the beta Counters `players` (realtime sessions)
//! and `matches` (authoritative matches) current; it watches its `GameServer` and logs when
//! Agones allocates it; when the node stops (SIGTERM or `POST /v2/metafi/drain`) it sends the
//! last counts and calls `Shutdown` once the matches have finished. When configured it also
//! keeps the beta Lists of its players and matches (`lists.rs`).
//!
//! Everything runs in one background task, so a sidecar that is not up yet delays nothing:
//! the task connects with retries and then does the above.

pub mod grpc;
mod lists;
pub mod proto;

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::config::AgonesSettings;
use grpc::{Channel, ClientStream};
use proto::{CounterUpdateRequest, Empty, GameServer, Int64Value, KeyValue, UpdateCounterRequest};

/// How long the last counts and `Shutdown` may take when the node stops.
const FINISH_TIMEOUT: Duration = Duration::from_secs(10);

/// What the node reports to Agones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NodeState {
    /// Realtime sessions on this node.
    pub players: usize,
    /// Authoritative matches running on this node.
    pub matches: usize,
    /// The node refuses new matches (its latency objective is full).
    pub full: bool,
    /// The node is draining or stopping.
    pub draining: bool,
}

/// Reads the node's state when an update is due.
pub type StateSource = Arc<dyn Fn() -> NodeState + Send + Sync>;

/// What the node's Lists should hold (`[agones] players_list`, `matches_list`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeLists {
    /// User ids of the node's realtime sessions, each once.
    pub players: Vec<String>,
    /// Ids of the node's authoritative matches.
    pub matches: Vec<String>,
}

/// Reads what the Lists should hold when an update is due (only when a List is configured).
pub type ListsSource = Arc<dyn Fn() -> NodeLists + Send + Sync>;

/// The running Agones task.
#[derive(Debug)]
pub struct Agones {
    finish: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
    seen: Arc<Mutex<Option<String>>>,
}

impl Agones {
    /// Starts the task for the node named `node`.
    pub fn start(
        settings: AgonesSettings,
        node: &str,
        source: StateSource,
        lists: ListsSource,
    ) -> Agones {
        let (finish, finished) = oneshot::channel();
        let seen = Arc::new(Mutex::new(None));
        let task = tokio::spawn(run(
            settings,
            label_value(node),
            (source, lists),
            finished,
            seen.clone(),
        ));
        Agones {
            finish: Some(finish),
            task,
            seen,
        }
    }

    /// The `GameServer` state last seen on the watch (`Ready`, `Allocated`, …).
    pub fn game_server_state(&self) -> Option<String> {
        self.seen.lock().clone()
    }

    /// The matches have finished: sends the last counts and `Shutdown`, then ends the task.
    pub async fn finish(mut self) {
        if let Some(finish) = self.finish.take() {
            let _ = finish.send(());
        }
        if tokio::time::timeout(FINISH_TIMEOUT, &mut self.task)
            .await
            .is_err()
        {
            tracing::warn!("Agones: Shutdown not confirmed in time");
            self.task.abort();
        }
    }
}

/// A label value Kubernetes accepts: at most 63 characters of `[A-Za-z0-9._-]`, starting and
/// ending with an alphanumeric character.
fn label_value(text: &str) -> String {
    let mapped: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(63)
        .collect();
    mapped
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_owned()
}

/// What was last sent, so only changes are sent again.
#[derive(Default)]
struct Sent {
    state: Option<NodeState>,
    /// False once the SDK refused a counter update (the GameServer declares no such counter):
    /// counters are not tried again.
    counters: bool,
}

/// The Lists the node keeps, and where their values come from.
struct Lists {
    source: ListsSource,
    players: Option<lists::ListKeeper>,
    matches: Option<lists::ListKeeper>,
}

impl Lists {
    fn new(settings: &AgonesSettings, source: ListsSource) -> Lists {
        let keeper = |kind, list: &Option<(String, Option<i64>)>| {
            list.as_ref()
                .map(|(name, capacity)| lists::ListKeeper::new(kind, name.clone(), *capacity))
        };
        Lists {
            source,
            players: keeper("players", &settings.players_list),
            matches: keeper("matches", &settings.matches_list),
        }
    }

    async fn sync(&mut self, channel: &Channel) {
        if self.players.is_none() && self.matches.is_none() {
            return;
        }
        let now = (self.source)();
        if let Some(players) = &mut self.players {
            players.sync(channel, &now.players).await;
        }
        if let Some(matches) = &mut self.matches {
            matches.sync(channel, &now.matches).await;
        }
    }
}

async fn run(
    settings: AgonesSettings,
    node: String,
    (source, lists): (StateSource, ListsSource),
    mut finished: oneshot::Receiver<()>,
    seen: Arc<Mutex<Option<String>>>,
) {
    let mut lists = Lists::new(&settings, lists);
    // Connect, retrying, until the node stops.
    let mut delay = Duration::from_millis(100);
    let channel = loop {
        match Channel::connect(settings.sdk).await {
            Ok(channel) => break channel,
            Err(e) => {
                tracing::warn!(address = %settings.sdk, error = %e, "Agones SDK server not reachable yet");
                tokio::select! {
                    _ = &mut finished => return,
                    () = tokio::time::sleep(delay) => {}
                }
                delay = (delay * 2).min(Duration::from_secs(5));
            }
        }
    };
    let mut sent = Sent {
        state: None,
        counters: settings.counters,
    };
    if let Err(e) = label(&channel, "node", &node).await {
        tracing::warn!(error = %e, "Agones: SetLabel node failed");
    }
    update(&channel, &mut sent, source()).await;
    lists.sync(&channel).await;
    match channel
        .unary::<_, Empty>(proto::path::READY, &Empty {})
        .await
    {
        Ok(_) => tracing::info!(address = %settings.sdk, "Agones: Ready"),
        Err(e) => tracing::error!(error = %e, "Agones: Ready failed"),
    }
    let watch = tokio::spawn(watch(channel.clone(), seen));
    let mut health: Option<ClientStream> = None;
    let mut health_tick = tokio::time::interval(settings.health_interval);
    let mut update_tick = tokio::time::interval(settings.update_interval);
    loop {
        tokio::select! {
            finish = &mut finished => {
                if finish.is_err() {
                    // The node was dropped without stopping: no Shutdown on its behalf.
                    watch.abort();
                    return;
                }
                break;
            }
            _ = health_tick.tick() => {
                if health.is_none() {
                    match channel.client_stream(proto::path::HEALTH).await {
                        Ok(stream) => health = Some(stream),
                        Err(e) => tracing::warn!(error = %e, "Agones: Health stream failed"),
                    }
                }
                if let Some(stream) = &mut health
                    && let Err(e) = stream.send(&Empty {})
                {
                    tracing::warn!(error = %e, "Agones: Health failed; reopening the stream");
                    health = None;
                }
            }
            _ = update_tick.tick() => {
                update(&channel, &mut sent, source()).await;
                lists.sync(&channel).await;
            }
        }
    }
    // The node stopped and its matches finished: the last counts, then Shutdown.
    let mut last = source();
    last.draining = true;
    update(&channel, &mut sent, last).await;
    lists.sync(&channel).await;
    match channel
        .unary::<_, Empty>(proto::path::SHUTDOWN, &Empty {})
        .await
    {
        Ok(_) => tracing::info!("Agones: Shutdown"),
        Err(e) => tracing::error!(error = %e, "Agones: Shutdown failed"),
    }
    drop(health);
    watch.abort();
}

/// Sends what changed since the last update: labels `full` and `draining`, counters
/// `players` and `matches`.
async fn update(channel: &Channel, sent: &mut Sent, now: NodeState) {
    let before = sent.state;
    let mut ok = true;
    for (key, value, old) in [
        ("full", now.full, before.map(|s| s.full)),
        ("draining", now.draining, before.map(|s| s.draining)),
    ] {
        if old != Some(value)
            && let Err(e) = label(channel, key, if value { "true" } else { "false" }).await
        {
            tracing::warn!(label = key, error = %e, "Agones: SetLabel failed");
            ok = false;
        }
    }
    if sent.counters {
        for (name, value, old) in [
            ("players", now.players, before.map(|s| s.players)),
            ("matches", now.matches, before.map(|s| s.matches)),
        ] {
            if old == Some(value) {
                continue;
            }
            let request = UpdateCounterRequest {
                counter_update_request: Some(CounterUpdateRequest {
                    name: name.to_owned(),
                    count: Some(Int64Value {
                        value: i64::try_from(value).unwrap_or(i64::MAX),
                    }),
                    capacity: None,
                    count_diff: 0,
                }),
            };
            if let Err(e) = channel
                .unary::<_, proto::Counter>(proto::path::UPDATE_COUNTER, &request)
                .await
            {
                tracing::warn!(
                    counter = name,
                    error = %e,
                    "Agones: UpdateCounter failed (declare the counters players and matches in the GameServer spec, or set agones.counters = false); counters are no longer sent"
                );
                sent.counters = false;
            }
        }
    }
    if ok {
        sent.state = Some(now);
    }
}

async fn label(channel: &Channel, key: &str, value: &str) -> anyhow::Result<()> {
    let request = KeyValue {
        key: key.to_owned(),
        value: value.to_owned(),
    };
    channel
        .unary::<_, Empty>(proto::path::SET_LABEL, &request)
        .await
        .map(|_| ())
}

/// Watches the `GameServer`: logs its state changes, `Allocated` at info.
async fn watch(channel: Channel, seen: Arc<Mutex<Option<String>>>) {
    let mut stream = match channel
        .server_stream(proto::path::WATCH_GAME_SERVER, &Empty {})
        .await
    {
        Ok(stream) => stream,
        Err(e) => {
            tracing::warn!(error = %e, "Agones: WatchGameServer failed");
            return;
        }
    };
    loop {
        match stream.next::<GameServer>().await {
            Ok(Some(game_server)) => {
                let state = game_server.status.map(|s| s.state).unwrap_or_default();
                let name = game_server.object_meta.map(|m| m.name).unwrap_or_default();
                let changed = seen.lock().as_deref() != Some(state.as_str());
                if changed {
                    if state == "Allocated" {
                        tracing::info!(game_server = %name, "Agones: allocated");
                    } else {
                        tracing::info!(game_server = %name, %state, "Agones: GameServer state");
                    }
                    *seen.lock() = Some(state);
                }
            }
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "Agones: WatchGameServer ended");
                return;
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests: a panic is the failure report
mod tests {
    use super::*;

    #[test]
    fn label_values_are_what_kubernetes_accepts() {
        assert_eq!(label_value("metafi-1"), "metafi-1");
        assert_eq!(label_value("node one/eu"), "node-one-eu");
        assert_eq!(label_value("-x-"), "x");
        assert_eq!(label_value(&"a".repeat(80)).len(), 63);
    }

    #[test]
    fn frames_split_a_byte_stream() {
        let a = grpc::frame(&KeyValue {
            key: "k".into(),
            value: "v".into(),
        });
        let b = grpc::frame(&Empty {});
        let mut frames = grpc::Frames::default();
        let mut all = a.to_vec();
        all.extend_from_slice(&b);
        frames.push(&all[..3]);
        assert!(frames.next_message().unwrap().is_none());
        frames.push(&all[3..]);
        let first = frames.next_message().unwrap().unwrap();
        assert_eq!(
            <KeyValue as prost::Message>::decode(first).unwrap().value,
            "v"
        );
        assert_eq!(frames.next_message().unwrap().unwrap().len(), 0);
        assert!(frames.next_message().unwrap().is_none());
    }

    #[test]
    fn a_frame_announcing_a_huge_message_is_refused_not_buffered() {
        let mut frames = grpc::Frames::default();
        frames.push(&[0, 0xff, 0xff, 0xff, 0xff]);
        assert!(frames.next_message().is_err());
    }
}
