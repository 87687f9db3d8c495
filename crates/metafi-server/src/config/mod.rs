//! Configuration in two stages: [`RawConfig`] is what the layers say (see `layers`), [`Config`]
//! is what the server runs with, every value checked and turned into the type its component
//! takes. Each component receives only its own section.

mod accounts;
mod agones;
mod check;
mod cluster;
mod console;
mod database;
mod friends;
mod http;
mod iap;
mod layers;
mod logger;
mod match_section;
mod matchmaker;
mod metrics;
mod notification;
mod party;
mod quic;
mod raw;
mod runtime;
mod script_log;
mod session;
mod shutdown;
mod signin_throttle;
mod social;
mod socket;
mod world;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use metafi_api::ApiConfig;
use metafi_core::{
    AccountsConfig, FriendsConfig, NotificationsConfig, SignInThrottleConfig, SocialConfig,
};
use metafi_realtime::RealtimeConfig;
use metafi_runtime::RuntimeConfig;
use metafi_transport::SocketConfig;

pub use agones::{AgonesSettings, RawAgones, SDK_PORT_ENV};
pub use console::{ConsoleSettings, RawConsole, RawConsoleUser};
pub use database::{DatabaseBackend, DatabaseConfig, redact_url};
pub use layers::{Sources, env_name, load};
pub use logger::LoggerConfig;
pub use quic::{CertSource, QuicSettings};
pub use raw::RawConfig;
pub use session::SessionSettings;

use check::Checker;

/// The annotated defaults printed by `metafi config default`.
pub const DEFAULT_TOML: &str = include_str!("default.toml");

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub name: String,
    pub data_dir: PathBuf,
    /// Where the API and realtime socket listen.
    pub listen: SocketAddr,
    pub api: ApiConfig,
    pub session: SessionSettings,
    pub database: DatabaseConfig,
    pub accounts: AccountsConfig,
    pub logger: LoggerConfig,
    /// Where Prometheus metrics are served; `None` when disabled.
    pub metrics: Option<SocketAddr>,
    /// How long in-flight work may take to finish after a shutdown signal.
    pub shutdown_grace: Duration,
    /// Realtime sessions: outgoing queue, per-socket limits, single socket.
    pub realtime: RealtimeConfig,
    /// The WebSocket transport: message size, buffers, keep-alive deadlines.
    pub socket: SocketConfig,
    /// Script host: module directory, budgets, VM pools.
    pub runtime: RuntimeConfig,
    /// `runtime.watchdog_grace_ms`: how long past its deadline a call may keep its VM busy
    /// before the VM is replaced.
    pub runtime_watchdog_grace: Duration,
    /// `runtime.inline_calls` / `runtime.inline_vms`: most VMs per script engine on IO
    /// threads; 0 = every call takes the VM pool.
    pub runtime_inline_vms: usize,
    /// `runtime.errors_per_module`: last errors kept per module (the console's runtime page).
    pub runtime_errors_per_module: usize,
    /// Authoritative matches: queues, executor threads, budgets (`[match]`).
    pub matches: metafi_match::MatchConfig,
    /// The matchmaker (`[matchmaker]`).
    pub matchmaker: metafi_match::MatchmakerConfig,
    /// Parties (`[party]`).
    pub party: metafi_realtime::PartyConfig,
    /// The event queue (`runtime.event_queue_size`, `runtime.event_queue_workers`).
    pub events: metafi_core::EventConfig,
    /// Where script match handlers' VMs live (`match.vm_per_match`).
    pub match_vms: metafi_runtime::MatchVms,
    /// The per-module log rate limit of server code (`runtime.log_*`).
    pub script_log_limit: metafi_runtime::LogLimit,
    /// Limits of the `nk` utility functions (`runtime.local_cache_max_entries`,
    /// `runtime.http_request_max_bytes`, `runtime.file_read_max_bytes`,
    /// `runtime.metrics_custom_series_max`).
    pub runtime_utilities: metafi_runtime::nk_api::UtilityConfig,
    /// The QUIC transport (`[quic]`); `None` when disabled.
    pub quic: Option<QuicSettings>,
    /// Failed sign-ins per account and address (`[signin_throttle]`).
    pub signin_throttle: SignInThrottleConfig,
    /// Bounds of the notifications service (`[notification]`).
    pub notifications: NotificationsConfig,
    /// Friends' limits (`[friends]`).
    pub friends: FriendsConfig,
    /// Social sign-in: app ids, secrets, provider endpoints (`[social]`).
    pub social: SocialConfig,
    /// In-app purchase validation: the stores' credentials and endpoints (`[iap]`).
    pub iap: metafi_core::IapConfig,
    /// The cluster this node joins (`[cluster]`, docs/CLUSTER.md); `None`: a single node.
    pub cluster: Option<metafi_cluster::ClusterConfig>,
    /// The console listener (`[console]`, docs/CONSOLE.md); `None` when disabled.
    pub console: Option<ConsoleSettings>,
    /// Worlds' settings (`[world]`, docs/WORLD.md): `nk.world_create` starts from them.
    pub world: metafi_world_server::WorldSettings,
    /// Whether a world is created at start (`world.enabled`).
    pub world_at_start: bool,
    /// The Agones SDK (`[agones]`, docs/MATCHES.md "Agones"); `None` when disabled.
    pub agones: Option<AgonesSettings>,
    /// The raw values, for `metafi config show` and the startup log.
    pub raw: RawConfig,
}

impl TryFrom<RawConfig> for Config {
    type Error = anyhow::Error;

    /// Checks every value, section by section; reports all problems at once, one per line.
    fn try_from(raw: RawConfig) -> anyhow::Result<Config> {
        let mut check = Checker::default();
        if raw.name.trim().is_empty() {
            check.problem("name: must not be empty");
        }
        if raw.data_dir.trim().is_empty() {
            check.problem("data_dir: must not be empty");
        }
        let data_dir = PathBuf::from(&raw.data_dir);
        let socket = socket::validate(&raw.socket, raw.session.single_socket, &mut check);
        let session = session::validate(&raw.session, &mut check);
        let database = database::validate(&raw.database, &data_dir, &mut check);
        let accounts = accounts::validate(&raw.accounts, &mut check);
        let logger = logger::validate(&raw.logger, &mut check);
        let metrics = metrics::validate(&raw.metrics, &mut check);
        let shutdown_grace = shutdown::validate(&raw.shutdown, &mut check);
        let runtime = runtime::validate(&raw.runtime, &raw.name, &data_dir, &mut check);
        let (matches, match_vms) = match_section::validate(&raw.matches, &mut check);
        let matchmaker = matchmaker::validate(&raw.matchmaker, &mut check);
        let party = party::validate(&raw.party, &mut check);
        let events = party::validate_events(&raw.runtime, &mut check);
        let quic = quic::validate(&raw.quic, &socket, raw.socket.port, &data_dir, &mut check);
        let http = http::validate(&raw.http, &mut check);
        let signin_throttle = signin_throttle::validate(&raw.signin_throttle, &mut check);
        let notifications = notification::validate(&raw.notification, &mut check);
        let friends = friends::validate(&raw.friends, &mut check);
        let social = social::validate(&raw.social, &mut check);
        let iap = iap::validate(&raw.iap, &mut check);
        let cluster = cluster::validate(
            &raw.cluster,
            &raw.name,
            database.as_ref().map(|d| &d.backend),
            &mut check,
        );
        let console = console::validate(&raw.console, &http, &mut check);
        let (world, world_at_start) = world::validate(&raw.world, &mut check);
        // The pod's AGONES_SDK_GRPC_PORT is read only when Agones is on.
        let sdk_port = if raw.agones.enabled {
            std::env::var(SDK_PORT_ENV).ok()
        } else {
            None
        };
        let agones = agones::validate(&raw.agones, sdk_port.as_deref(), &mut check);
        check.finish()?;
        // Each is `None` only with a problem recorded, which `finish` reported.
        let (Some(ip), Some(database)) = (socket.ip, database) else {
            bail!("invalid configuration");
        };

        Ok(Config {
            name: raw.name.clone(),
            data_dir,
            listen: SocketAddr::new(ip, socket.port.get()),
            api: ApiConfig {
                server_key: socket.server_key,
                max_request_size_bytes: socket.max_request_size_bytes,
                http_key: runtime.http_key,
                http,
            },
            session,
            database,
            accounts,
            logger,
            metrics,
            shutdown_grace,
            realtime: socket.realtime,
            socket: socket.transport,
            runtime: runtime.runtime,
            runtime_watchdog_grace: runtime.watchdog_grace,
            runtime_inline_vms: runtime.inline_vms,
            runtime_errors_per_module: runtime.errors_per_module,
            matches,
            matchmaker,
            party,
            events,
            match_vms,
            script_log_limit: runtime.log_limit,
            runtime_utilities: runtime.utilities,
            quic,
            signin_throttle,
            notifications,
            friends,
            social,
            iap,
            cluster,
            console,
            world,
            world_at_start,
            agones,
            raw,
        })
    }
}

impl Config {
    /// Keys still at their published defaults that must be changed before production.
    pub fn insecure_defaults(&self) -> Vec<&'static str> {
        let defaults = RawConfig::default();
        let mut found = Vec::new();
        if self.raw.socket.server_key == defaults.socket.server_key {
            found.push("socket.server_key");
        }
        if self.raw.session.encryption_key == defaults.session.encryption_key {
            found.push("session.encryption_key");
        }
        if self.raw.session.refresh_encryption_key == defaults.session.refresh_encryption_key {
            found.push("session.refresh_encryption_key");
        }
        if self.raw.runtime.http_key == defaults.runtime.http_key {
            found.push("runtime.http_key");
        }
        if self.console.is_some() {
            if self.raw.console.signing_key == defaults.console.signing_key {
                found.push("console.signing_key");
            }
            if self.raw.console.users == defaults.console.users {
                found.push("console.users (admin/password)");
            }
            if self.raw.console.mfa_storage_encryption_key
                == defaults.console.mfa_storage_encryption_key
            {
                found.push("console.mfa_storage_encryption_key");
            }
        }
        found
    }
}

impl RawConfig {
    /// The configuration with every secret replaced by `***` and credentials taken out of
    /// URLs: what `metafi config show` prints and the console shows.
    pub fn redacted(&self) -> RawConfig {
        let mut raw = self.clone();
        let hide = |value: &mut String| {
            if !value.is_empty() {
                *value = "***".into();
            }
        };
        hide(&mut raw.socket.server_key);
        hide(&mut raw.session.encryption_key);
        hide(&mut raw.session.refresh_encryption_key);
        hide(&mut raw.runtime.http_key);
        hide(&mut raw.console.signing_key);
        hide(&mut raw.console.mfa_storage_encryption_key);
        for user in &mut raw.console.users {
            hide(&mut user.password);
        }
        hide(&mut raw.iap.apple.shared_password);
        hide(&mut raw.iap.google.private_key);
        hide(&mut raw.iap.huawei.client_secret);
        hide(&mut raw.iap.huawei.public_key);
        hide(&mut raw.iap.facebook_instant.app_secret);
        hide(&mut raw.social.facebook_instant_game.app_secret);
        hide(&mut raw.social.steam.publisher_key);
        raw.database.url = redact_url(&raw.database.url);
        raw.cluster.url = redact_url(&raw.cluster.url);
        raw
    }
}

#[cfg(test)]
mod tests;
