//! What the console's handlers share.

use std::fmt;
use std::sync::Arc;

use metafi_api::ApiState;
use metafi_core::{Clock, PasswordHasher, SignInThrottle};
use metafi_storage::Storage;

use crate::ConsoleConfig;

/// What the node tells the status page about itself beyond the services.
pub trait NodeProbe: Send + Sync {
    /// Realtime sockets open on this node.
    fn sockets(&self) -> usize;
    /// The other nodes of the cluster this node sees (empty without a cluster).
    fn peers(&self) -> Vec<String>;
    /// The process's metrics in Prometheus' text format (request counts and latencies per
    /// route come from here).
    fn metrics_text(&self) -> String;
    /// The user's live socket sessions on this node, oldest first.
    fn sessions_of(&self, _user_id: uuid::Uuid) -> Vec<LiveSession> {
        Vec::new()
    }
    /// Closes one socket session of `user_id` on this node, as a server-side disconnect (its
    /// client is told, its matches and parties see it leave); false when this node has no
    /// such session of that user.
    fn disconnect(&self, _user_id: uuid::Uuid, _session_id: uuid::Uuid) -> bool {
        false
    }
}

/// A live socket session, as the account page lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveSession {
    pub session_id: uuid::Uuid,
    /// The node it is connected to.
    pub node: String,
    /// When the socket was accepted, ms since the Unix epoch.
    pub started_ms: i64,
    /// The client's address as the server saw it, if known.
    pub client_address: Option<String>,
    /// When its session token expires, seconds since the Unix epoch.
    pub expires_at: i64,
    /// `json` or `protobuf`.
    pub format: String,
}

/// What the runtime's modules registered, fixed once they have loaded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeInfo {
    /// RPC ids with the runtime serving each (`lua`, `javascript`, `native`), sorted.
    pub rpcs: Vec<(String, String)>,
    /// Match handler names the modules registered.
    pub match_handlers: Vec<String>,
    /// Module files loaded, with their runtime.
    pub modules: Vec<(String, String)>,
}

/// Shared state of every console handler; cheap to clone.
#[derive(Clone)]
pub struct ConsoleState {
    pub config: Arc<ConsoleConfig>,
    /// The client API's services: the console acts through them, so a rule holds the same
    /// way from both.
    pub api: ApiState,
    pub store: Arc<dyn Storage>,
    /// Hashes console passwords on the blocking pool.
    pub hasher: PasswordHasher,
    /// Failed console sign-ins per username and address (`[signin_throttle]`'s limits,
    /// counted apart from the client API's).
    pub throttle: Arc<SignInThrottle>,
    pub clock: Arc<dyn Clock>,
    /// This node's name.
    pub node: Arc<str>,
    /// When the node started, ms since the epoch.
    pub started_ms: i64,
    pub probe: Arc<dyn NodeProbe>,
    pub runtime: Arc<RuntimeInfo>,
    /// The effective configuration with every secret replaced (`GET /v2/console/config`).
    pub effective_config: Arc<serde_json::Value>,
    /// The last errors of each module (the runtime's record; empty until the node sets it).
    pub module_errors: Arc<metafi_core::ModuleErrors>,
    /// The node's served worlds (the Worlds pages); `None`: none can run here.
    pub worlds: Option<Arc<dyn crate::WorldSource>>,
    /// A hash verified against when the username is unknown, so a sign-in takes as long
    /// whether or not the user exists.
    pub(crate) dummy_hash: Arc<tokio::sync::OnceCell<String>>,
}

impl fmt::Debug for ConsoleState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConsoleState")
            .field("node", &self.node)
            .field("runtime", &self.runtime)
            .finish_non_exhaustive()
    }
}

impl ConsoleState {
    /// The state with nothing signed out yet.
    #[allow(clippy::too_many_arguments)] // one value per part the node hands over
    pub fn new(
        config: ConsoleConfig,
        api: ApiState,
        store: Arc<dyn Storage>,
        hasher: PasswordHasher,
        throttle: Arc<SignInThrottle>,
        clock: Arc<dyn Clock>,
        node: &str,
        probe: Arc<dyn NodeProbe>,
        runtime: RuntimeInfo,
        effective_config: serde_json::Value,
    ) -> ConsoleState {
        let clock_for_errors = clock.clone();
        ConsoleState {
            config: Arc::new(config),
            api,
            store,
            hasher,
            throttle,
            started_ms: clock.now_ms(),
            clock,
            node: Arc::from(node),
            probe,
            runtime: Arc::new(runtime),
            effective_config: Arc::new(effective_config),
            module_errors: Arc::new(metafi_core::ModuleErrors::new(0, clock_for_errors)),
            worlds: None,
            dummy_hash: Arc::default(),
        }
    }

    /// Shows the runtime's last errors per module (the same record the runtime writes to).
    pub fn with_module_errors(mut self, errors: Arc<metafi_core::ModuleErrors>) -> ConsoleState {
        self.module_errors = errors;
        self
    }

    /// The state with the node's worlds shown (the Worlds pages, `/world/{id}`).
    pub fn with_worlds(mut self, worlds: Arc<dyn crate::WorldSource>) -> ConsoleState {
        self.worlds = Some(worlds);
        self
    }
}
