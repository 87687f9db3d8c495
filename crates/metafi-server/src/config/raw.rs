//! The configuration as written: every key, its default, no cross-field validation yet.
//! The documentation of each key lives in `default.toml`, which is what users read.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawConfig {
    pub name: String,
    pub data_dir: String,
    pub socket: RawSocket,
    pub session: RawSession,
    pub database: RawDatabase,
    pub accounts: RawAccounts,
    pub logger: RawLogger,
    pub metrics: RawMetrics,
    pub shutdown: RawShutdown,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawSocket {
    pub address: String,
    pub port: i64,
    pub server_key: String,
    pub max_request_size_bytes: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawSession {
    pub encryption_key: String,
    pub refresh_encryption_key: String,
    pub token_expiry_sec: i64,
    pub refresh_token_expiry_sec: i64,
    pub revocation_purge_interval_sec: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawDatabase {
    pub url: String,
    pub sqlite_readers: i64,
    pub postgres_pool_size: i64,
    pub max_write_batch: i64,
    pub write_queue_capacity: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawAccounts {
    pub bcrypt_cost: i64,
    pub max_concurrent_hashes: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawLogger {
    pub level: String,
    pub format: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawMetrics {
    pub enabled: bool,
    pub address: String,
    pub port: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawShutdown {
    pub grace_period_sec: i64,
}

impl Default for RawConfig {
    fn default() -> Self {
        RawConfig {
            name: "metafi".into(),
            data_dir: "./data".into(),
            socket: RawSocket::default(),
            session: RawSession::default(),
            database: RawDatabase::default(),
            accounts: RawAccounts::default(),
            logger: RawLogger::default(),
            metrics: RawMetrics::default(),
            shutdown: RawShutdown::default(),
        }
    }
}

impl Default for RawSocket {
    fn default() -> Self {
        RawSocket {
            address: "127.0.0.1".into(),
            port: 7350,
            server_key: "defaultkey".into(),
            max_request_size_bytes: 262_144,
        }
    }
}

impl Default for RawSession {
    fn default() -> Self {
        RawSession {
            encryption_key: "defaultencryptionkey".into(),
            refresh_encryption_key: "defaultrefreshencryptionkey".into(),
            token_expiry_sec: 60,
            refresh_token_expiry_sec: 3600,
            revocation_purge_interval_sec: 600,
        }
    }
}

impl Default for RawDatabase {
    fn default() -> Self {
        RawDatabase {
            url: String::new(),
            sqlite_readers: 4,
            postgres_pool_size: 16,
            max_write_batch: 512,
            write_queue_capacity: 16_384,
        }
    }
}

impl Default for RawAccounts {
    fn default() -> Self {
        RawAccounts {
            bcrypt_cost: 10,
            max_concurrent_hashes: 0,
        }
    }
}

impl Default for RawLogger {
    fn default() -> Self {
        RawLogger {
            level: "info".into(),
            format: "text".into(),
        }
    }
}

impl Default for RawMetrics {
    fn default() -> Self {
        RawMetrics {
            enabled: true,
            address: "127.0.0.1".into(),
            port: 9100,
        }
    }
}

impl Default for RawShutdown {
    fn default() -> Self {
        RawShutdown {
            grace_period_sec: 10,
        }
    }
}
