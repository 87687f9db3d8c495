//! The console's wiring: what the node shows it (sockets, peers, metrics, what the modules
//! registered, the configuration without secrets) and the console users seeded at start.

use std::sync::Arc;

use anyhow::Context;
use metafi_console::{ConsoleState, LiveSession, NodeProbe, RuntimeInfo};
use metafi_realtime::SessionRegistry;

use crate::config::{Config, ConsoleSettings};
use crate::telemetry;

/// The node as the console's status page sees it.
struct Probe {
    registry: Arc<SessionRegistry>,
    /// This node's name (every session of the registry is connected here).
    node: String,
    peers: Option<metafi_cluster::Calls>,
}

impl NodeProbe for Probe {
    fn sockets(&self) -> usize {
        self.registry.len()
    }

    fn peers(&self) -> Vec<String> {
        self.peers.as_ref().map(|c| c.peers()).unwrap_or_default()
    }

    fn metrics_text(&self) -> String {
        telemetry::metrics_handle().render()
    }

    fn sessions_of(&self, user_id: uuid::Uuid) -> Vec<LiveSession> {
        let mut found = Vec::new();
        let ids = self.registry.user_session_ids(user_id);
        self.registry.for_each_of(&ids, |s| {
            found.push(LiveSession {
                session_id: s.id(),
                node: self.node.clone(),
                started_ms: s.started_ms(),
                client_address: s.client_ip().map(|ip| ip.to_string()),
                expires_at: s.expires_at(),
                format: match s.format() {
                    metafi_proto::realtime::Format::Json => "json",
                    metafi_proto::realtime::Format::Protobuf => "protobuf",
                }
                .to_owned(),
            });
        });
        found.sort_by(|a, b| {
            a.started_ms
                .cmp(&b.started_ms)
                .then(a.session_id.cmp(&b.session_id))
        });
        found
    }

    fn disconnect(&self, user_id: uuid::Uuid, session_id: uuid::Uuid) -> bool {
        match self.registry.get(session_id) {
            Some(session) if session.user_id() == user_id => {
                session.close(metafi_realtime::CloseReason::ServerDisconnect {
                    presence_reason: metafi_match::PresenceReason::Disconnect,
                });
                true
            }
            _ => false,
        }
    }
}

/// Builds the console's router and adds the configured console users that do not exist yet.
#[allow(clippy::too_many_arguments)] // one argument per part of the node the console shows
pub(crate) async fn build(
    config: &Config,
    settings: &ConsoleSettings,
    api: metafi_api::ApiState,
    store: Arc<dyn metafi_storage::Storage>,
    clock: Arc<dyn metafi_core::Clock>,
    registry: Arc<SessionRegistry>,
    cluster: Option<&metafi_cluster::Cluster>,
    runtime: &metafi_runtime::Runtime,
    worlds: metafi_world_server::Worlds,
) -> anyhow::Result<axum::Router> {
    let mut modules = Vec::new();
    if let Ok(found) = metafi_runtime::modules::discover(&config.runtime.path, &["lua", "js"]) {
        for module in found {
            let path = module.path.display().to_string();
            let kind = if path.ends_with(".js") { "js" } else { "lua" };
            modules.push((path, kind.to_owned()));
        }
    }
    let info = RuntimeInfo {
        rpcs: runtime
            .rpc_ids()
            .into_iter()
            .map(|(id, runtime)| (id, runtime.to_owned()))
            .collect(),
        match_handlers: Vec::new(),
        modules,
    };
    let probe = Probe {
        registry,
        node: config.name.clone(),
        peers: cluster.map(|c| c.calls().clone()),
    };
    let hasher = metafi_core::PasswordHasher::new(
        config.accounts.bcrypt_cost,
        config.accounts.max_concurrent_hashes,
    );
    let state = ConsoleState::new(
        settings.config.clone(),
        api,
        store,
        hasher,
        Arc::new(metafi_core::SignInThrottle::new(
            config.signin_throttle.clone(),
            clock.clone(),
        )),
        clock,
        &config.name,
        Arc::new(probe),
        info,
        serde_json::to_value(config.raw.redacted()).unwrap_or_default(),
    )
    .with_module_errors(runtime.errors().clone())
    .with_worlds(Arc::new(crate::worlds::ConsoleWorlds(worlds)));
    let added = metafi_console::seed_users(&state)
        .await
        .context("adding the configured console users")?;
    if added > 0 {
        tracing::info!(added, "console users added from the configuration");
    }
    Ok(metafi_console::router(state))
}
