//! Configuration in two stages: [`RawConfig`] is what the layers say (see `layers`), [`Config`]
//! is what the server runs with, every value checked and turned into the type its component
//! takes. Each component receives only its own section.

mod http;
mod layers;
mod matches;
mod quic;
mod raw;
mod script_log;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::bail;
use metafi_api::ApiConfig;
use metafi_core::{AccountsConfig, SessionsConfig, SignInThrottleConfig};
use metafi_realtime::{OutboxLimits, RealtimeConfig};
use metafi_runtime::{PoolConfig, RuntimeConfig};

use metafi_transport::SocketConfig;

pub use layers::{Sources, env_name, load};
pub use quic::{CertSource, QuicSettings};
pub use raw::RawConfig;

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
    /// Authoritative matches: queues, executor threads, budgets (`[match]`).
    pub matches: metafi_match::MatchConfig,
    /// The matchmaker (`[matchmaker]`).
    pub matchmaker: metafi_match::MatchmakerConfig,
    /// Where script match handlers' VMs live (`match.vm_per_match`).
    pub match_vms: metafi_runtime::MatchVms,
    /// The per-module log rate limit of server code (`runtime.log_*`).
    pub script_log_limit: metafi_runtime::LogLimit,
    /// The QUIC transport (`[quic]`); `None` when disabled.
    pub quic: Option<QuicSettings>,
    /// Failed sign-ins per account and address (`[signin_throttle]`).
    pub signin_throttle: SignInThrottleConfig,
    /// The raw values, for `metafi config show` and the startup log.
    pub raw: RawConfig,
}

#[derive(Debug, Clone)]
pub struct SessionSettings {
    pub encryption_key: String,
    pub refresh_encryption_key: String,
    pub lifetimes: SessionsConfig,
    pub revocation_purge_interval: Duration,
}

/// Which database, and how to use it.
#[derive(Debug, Clone)]
pub struct DatabaseConfig {
    pub backend: DatabaseBackend,
    pub sqlite_readers: usize,
    pub postgres_pool_size: usize,
    pub max_write_batch: usize,
    pub write_queue_capacity: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseBackend {
    Sqlite { path: PathBuf },
    Postgres { url: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggerConfig {
    pub level: String,
    pub json: bool,
}

impl TryFrom<RawConfig> for Config {
    type Error = anyhow::Error;

    /// Checks every value; reports all problems at once, one per line.
    fn try_from(raw: RawConfig) -> anyhow::Result<Config> {
        let mut problems: Vec<String> = Vec::new();
        let mut range = |key: &str, value: i64, min: i64, max: i64| -> i64 {
            if value < min || value > max {
                problems.push(format!("{key} = {value}: must be between {min} and {max}"));
                min
            } else {
                value
            }
        };

        let port = range("socket.port", raw.socket.port, 0, 65_535) as u16;
        let max_request = range(
            "socket.max_request_size_bytes",
            raw.socket.max_request_size_bytes,
            64,
            64 << 20,
        );
        let token_expiry = range(
            "session.token_expiry_sec",
            raw.session.token_expiry_sec,
            1,
            10 * 365 * 86_400,
        );
        let refresh_expiry = range(
            "session.refresh_token_expiry_sec",
            raw.session.refresh_token_expiry_sec,
            1,
            10 * 365 * 86_400,
        );
        let purge = range(
            "session.revocation_purge_interval_sec",
            raw.session.revocation_purge_interval_sec,
            1,
            86_400,
        );
        let readers = range(
            "database.sqlite_readers",
            raw.database.sqlite_readers,
            1,
            256,
        );
        let pool = range(
            "database.postgres_pool_size",
            raw.database.postgres_pool_size,
            1,
            1024,
        );
        let batch = range(
            "database.max_write_batch",
            raw.database.max_write_batch,
            1,
            65_536,
        );
        let queue = range(
            "database.write_queue_capacity",
            raw.database.write_queue_capacity,
            1,
            1 << 24,
        );
        let cost = range("accounts.bcrypt_cost", raw.accounts.bcrypt_cost, 4, 31);
        let hashes = range(
            "accounts.max_concurrent_hashes",
            raw.accounts.max_concurrent_hashes,
            0,
            1024,
        );
        let metrics_port = range("metrics.port", raw.metrics.port, 0, 65_535) as u16;
        let grace = range(
            "shutdown.grace_period_sec",
            raw.shutdown.grace_period_sec,
            0,
            3600,
        );

        let call_timeout = range(
            "runtime.call_timeout_ms",
            raw.runtime.call_timeout_ms,
            1,
            600_000,
        );
        let load_timeout = range(
            "runtime.load_timeout_ms",
            raw.runtime.load_timeout_ms,
            1,
            600_000,
        );
        let memory_mb = range(
            "runtime.memory_limit_mb",
            raw.runtime.memory_limit_mb,
            4,
            65_536,
        );
        let watchdog_grace = range(
            "runtime.watchdog_grace_ms",
            raw.runtime.watchdog_grace_ms,
            10,
            600_000,
        );
        let lua_vms = range("runtime.lua_vms", raw.runtime.lua_vms, 0, 1024);
        let lua_calls = range(
            "runtime.lua_max_calls_per_vm",
            raw.runtime.lua_max_calls_per_vm,
            1,
            100_000,
        );
        let lua_queue = range(
            "runtime.lua_queue_capacity",
            raw.runtime.lua_queue_capacity,
            1,
            1 << 20,
        );
        let js_vms = range("runtime.js_vms", raw.runtime.js_vms, 0, 1024);
        let js_calls = range(
            "runtime.js_max_calls_per_vm",
            raw.runtime.js_max_calls_per_vm,
            1,
            100_000,
        );
        let js_queue = range(
            "runtime.js_queue_capacity",
            raw.runtime.js_queue_capacity,
            1,
            1 << 20,
        );

        let (realtime, socket) = realtime_settings(&raw, &mut problems);
        let (matches, matchmaker, match_vms) = matches::match_settings(&raw, &mut problems);
        let script_log_limit = script_log::log_limit(&raw, &mut problems);
        let address = parse_ip("socket.address", &raw.socket.address, &mut problems);
        let metrics_address = parse_ip("metrics.address", &raw.metrics.address, &mut problems);
        let quic = quic::quic_settings(&raw, address, &socket, &mut problems);
        let http_edge = http::http_settings(&raw, &mut problems);
        let signin_throttle = http::signin_throttle_settings(&raw, &mut problems);

        if raw.name.trim().is_empty() {
            problems.push("name: must not be empty".into());
        }
        if raw.data_dir.trim().is_empty() {
            problems.push("data_dir: must not be empty".into());
        }
        if raw.socket.server_key.is_empty() {
            problems.push("socket.server_key: must not be empty".into());
        }
        if raw.runtime.http_key.is_empty() {
            problems.push("runtime.http_key: must not be empty".into());
        }
        let mut script_env = std::collections::HashMap::new();
        for entry in &raw.runtime.env {
            match entry.split_once('=') {
                Some((key, value)) if !key.trim().is_empty() => {
                    script_env.insert(key.trim().to_owned(), value.to_owned());
                }
                _ => problems.push(format!(
                    "runtime.env entry \"{entry}\": expected \"KEY=VALUE\""
                )),
            }
        }
        if raw.session.encryption_key.is_empty() || raw.session.refresh_encryption_key.is_empty() {
            problems.push(
                "session.encryption_key and session.refresh_encryption_key: must not be empty"
                    .into(),
            );
        } else if raw.session.encryption_key == raw.session.refresh_encryption_key {
            problems.push(
                "session.refresh_encryption_key: must differ from session.encryption_key, or a refresh token would pass as a session token".into(),
            );
        }
        if !["trace", "debug", "info", "warn", "error"].contains(&raw.logger.level.as_str()) {
            problems.push(format!(
                "logger.level = \"{}\": must be one of trace, debug, info, warn, error",
                raw.logger.level
            ));
        }
        if !["text", "json"].contains(&raw.logger.format.as_str()) {
            problems.push(format!(
                "logger.format = \"{}\": must be \"text\" or \"json\"",
                raw.logger.format
            ));
        }

        let data_dir = PathBuf::from(&raw.data_dir);
        let module_path = if raw.runtime.path.is_empty() {
            data_dir.join("modules")
        } else {
            PathBuf::from(&raw.runtime.path)
        };
        let backend = match database_backend(&raw.database.url, &data_dir) {
            Ok(backend) => Some(backend),
            Err(problem) => {
                problems.push(problem);
                None
            }
        };

        if !problems.is_empty() {
            bail!("invalid configuration:\n  - {}", problems.join("\n  - "));
        }
        let (Some(address), Some(metrics_address), Some(backend)) =
            (address, metrics_address, backend)
        else {
            bail!("invalid configuration");
        };

        Ok(Config {
            name: raw.name.clone(),
            data_dir,
            listen: SocketAddr::new(address, port),
            api: ApiConfig {
                server_key: raw.socket.server_key.clone(),
                max_request_size_bytes: max_request as usize,
                http_key: raw.runtime.http_key.clone(),
                http: http_edge,
            },
            session: SessionSettings {
                encryption_key: raw.session.encryption_key.clone(),
                refresh_encryption_key: raw.session.refresh_encryption_key.clone(),
                lifetimes: SessionsConfig {
                    token_expiry_sec: token_expiry,
                    refresh_token_expiry_sec: refresh_expiry,
                },
                revocation_purge_interval: Duration::from_secs(purge as u64),
            },
            database: DatabaseConfig {
                backend,
                sqlite_readers: readers as usize,
                postgres_pool_size: pool as usize,
                max_write_batch: batch as usize,
                write_queue_capacity: queue as usize,
            },
            accounts: AccountsConfig {
                bcrypt_cost: cost as u32,
                max_concurrent_hashes: if hashes == 0 {
                    std::thread::available_parallelism().map_or(1, usize::from)
                } else {
                    hashes as usize
                },
            },
            logger: LoggerConfig {
                level: raw.logger.level.clone(),
                json: raw.logger.format == "json",
            },
            metrics: raw
                .metrics
                .enabled
                .then(|| SocketAddr::new(metrics_address, metrics_port)),
            shutdown_grace: Duration::from_secs(grace as u64),
            realtime,
            socket,
            matches,
            matchmaker,
            match_vms,
            script_log_limit,
            quic,
            runtime_watchdog_grace: Duration::from_millis(watchdog_grace as u64),
            signin_throttle,
            runtime: RuntimeConfig {
                path: module_path,
                node: raw.name.clone(),
                env: script_env,
                call_timeout: Duration::from_millis(call_timeout as u64),
                load_timeout: Duration::from_millis(load_timeout as u64),
                memory_limit_bytes: (memory_mb as usize) << 20,
                pools: std::collections::HashMap::from([
                    (
                        "lua".to_owned(),
                        PoolConfig {
                            vms: if lua_vms == 0 {
                                std::thread::available_parallelism().map_or(1, usize::from)
                            } else {
                                lua_vms as usize
                            },
                            max_calls_per_vm: lua_calls as usize,
                            queue_capacity: lua_queue as usize,
                        },
                    ),
                    (
                        "js".to_owned(),
                        PoolConfig {
                            // 0: four per core. A JavaScript VM blocked in an `nk` call uses no
                            // CPU (docs/RUNTIME.md, "JavaScript engine").
                            vms: if js_vms == 0 {
                                4 * std::thread::available_parallelism().map_or(1, usize::from)
                            } else {
                                js_vms as usize
                            },
                            max_calls_per_vm: js_calls as usize,
                            queue_capacity: js_queue as usize,
                        },
                    ),
                ]),
            },
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
        found
    }
}

/// The `socket.*` realtime keys and `session.single_socket`, checked.
fn realtime_settings(
    raw: &RawConfig,
    problems: &mut Vec<String>,
) -> (RealtimeConfig, SocketConfig) {
    let mut range = |key: &str, value: i64, min: i64, max: i64| -> u64 {
        if value < min || value > max {
            problems.push(format!("{key} = {value}: must be between {min} and {max}"));
            min as u64
        } else {
            value as u64
        }
    };
    let s = &raw.socket;
    const HOUR_MS: i64 = 3_600_000;
    let max_message = range(
        "socket.max_message_size_bytes",
        s.max_message_size_bytes,
        64,
        64 << 20,
    );
    let read_buffer = range(
        "socket.read_buffer_size_bytes",
        s.read_buffer_size_bytes,
        64,
        16 << 20,
    );
    let write_buffer = range(
        "socket.write_buffer_size_bytes",
        s.write_buffer_size_bytes,
        0,
        16 << 20,
    );
    let queue = range(
        "socket.outgoing_queue_size",
        s.outgoing_queue_size,
        1,
        1 << 20,
    );
    let queue_bytes = range(
        "socket.outgoing_queue_bytes",
        s.outgoing_queue_bytes,
        4096,
        1 << 30,
    );
    let queue_age = range(
        "socket.outgoing_queue_max_age_ms",
        s.outgoing_queue_max_age_ms,
        100,
        HOUR_MS,
    );
    let ping = range("socket.ping_period_ms", s.ping_period_ms, 10, HOUR_MS);
    let pong = range("socket.pong_wait_ms", s.pong_wait_ms, 20, HOUR_MS);
    let write_wait = range("socket.write_wait_ms", s.write_wait_ms, 10, HOUR_MS);
    let close_ack = range("socket.close_ack_wait_ms", s.close_ack_wait_ms, 0, HOUR_MS);
    let idle = range("socket.idle_timeout_ms", s.idle_timeout_ms, 0, 24 * HOUR_MS);
    let channels = range(
        "socket.max_channels_per_session",
        s.max_channels_per_session,
        1,
        1 << 16,
    );
    let follows = range(
        "socket.max_followed_users",
        s.max_followed_users,
        0,
        1 << 20,
    );
    if s.ping_period_ms >= s.pong_wait_ms {
        problems.push(format!(
            "socket.ping_period_ms = {} must be less than socket.pong_wait_ms = {}, or live clients would time out before being pinged",
            s.ping_period_ms, s.pong_wait_ms
        ));
    }
    let realtime = RealtimeConfig {
        outbox: OutboxLimits {
            max_bytes: queue_bytes as usize,
            max_messages: queue as usize,
            max_age: Duration::from_millis(queue_age),
        },
        single_socket: raw.session.single_socket,
        max_channels_per_session: channels as usize,
        max_followed_users: follows as usize,
    };
    let socket = SocketConfig {
        max_message_size_bytes: max_message as usize,
        read_buffer_size_bytes: read_buffer as usize,
        write_buffer_size_bytes: write_buffer as usize,
        ping_period: Duration::from_millis(ping),
        pong_wait: Duration::from_millis(pong),
        write_wait: Duration::from_millis(write_wait),
        close_ack_wait: Duration::from_millis(close_ack),
        idle_timeout: (idle > 0).then(|| Duration::from_millis(idle)),
    };
    (realtime, socket)
}

fn parse_ip(key: &str, text: &str, problems: &mut Vec<String>) -> Option<IpAddr> {
    match text.parse() {
        Ok(ip) => Some(ip),
        Err(_) => {
            problems.push(format!(
                "{key} = \"{text}\": not an IP address (for example 127.0.0.1 or 0.0.0.0)"
            ));
            None
        }
    }
}

fn database_backend(url: &str, data_dir: &std::path::Path) -> Result<DatabaseBackend, String> {
    if url.is_empty() {
        return Ok(DatabaseBackend::Sqlite {
            path: data_dir.join("metafi.db"),
        });
    }
    if let Some(path) = url.strip_prefix("sqlite:") {
        let path = path.trim_start_matches("//");
        if path.is_empty() {
            return Err(
                "database.url = \"sqlite:\": give a file path, e.g. sqlite:./data/metafi.db".into(),
            );
        }
        return Ok(DatabaseBackend::Sqlite { path: path.into() });
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(DatabaseBackend::Postgres {
            url: url.to_owned(),
        });
    }
    Err(format!(
        "database.url: unsupported scheme in '{}'; use empty (embedded SQLite), sqlite:<path> or postgres://…",
        redact_url(url)
    ))
}

/// A database URL with its password replaced, for logs and error messages.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((userinfo, host)) = rest.split_once('@') else {
        return url.to_owned();
    };
    match userinfo.split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests;
