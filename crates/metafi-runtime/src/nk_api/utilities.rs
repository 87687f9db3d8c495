//! [`UtilityConfig`]: the limits and settings of the utility functions (the server fills it
//! from `[runtime]`), and [`UtilityState`]: what those functions keep per process — the local
//! caches, the HTTP clients, the custom metric series seen so far.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value as Json;
use tokio::sync::Semaphore;

use super::cache::LocalCache;
use super::http::HttpClients;
use super::metrics_events::SeriesLimit;

/// Limits and settings of the utility functions. `Default` holds the documented defaults.
#[derive(Debug, Clone)]
pub struct UtilityConfig {
    /// The directory `nk.file_read` may read under; `None`: the runtime's module directory
    /// (`runtime.path`, set when the runtime starts).
    pub modules_root: Option<PathBuf>,
    /// Most entries of each local cache (`runtime.local_cache_max_entries`); a put of a new
    /// key into a full cache drops the expired entries, then the oldest written.
    pub local_cache_max_entries: usize,
    /// Bytes of values each local cache holds, estimated (`runtime.local_cache_max_bytes`);
    /// puts evict the oldest entries past it.
    pub local_cache_max_bytes: usize,
    /// Largest response body `nk.http_request` reads (`runtime.http_request_max_bytes`).
    pub http_request_max_bytes: usize,
    /// Largest file `nk.file_read` reads (`runtime.file_read_max_bytes`).
    pub file_read_max_bytes: usize,
    /// Most distinct custom metric series (name and labels) scripts may create
    /// (`runtime.metrics_custom_series_max`); later new series are dropped and counted.
    pub metrics_custom_series_max: usize,
    /// bcrypt cost of `nk.bcrypt_hash` (the server uses `accounts.bcrypt_cost`).
    pub bcrypt_cost: u32,
    /// What `nk.get_config` returns (Nakama's shape, built by the server); `None`: the call
    /// fails saying the server gave none.
    pub server_config: Option<Arc<Json>>,
}

impl UtilityConfig {
    pub const DEFAULT_LOCAL_CACHE_MAX_ENTRIES: usize = 10_000;
    pub const DEFAULT_LOCAL_CACHE_MAX_BYTES: usize = 64 << 20;
    pub const DEFAULT_HTTP_REQUEST_MAX_BYTES: usize = 4 << 20;
    pub const DEFAULT_FILE_READ_MAX_BYTES: usize = 16 << 20;
    pub const DEFAULT_METRICS_CUSTOM_SERIES_MAX: usize = 1_000;
    /// Nakama's cost for `nk.bcrypt_hash` (its recommended minimum).
    pub const DEFAULT_BCRYPT_COST: u32 = 13;
}

impl Default for UtilityConfig {
    fn default() -> UtilityConfig {
        UtilityConfig {
            modules_root: None,
            local_cache_max_entries: Self::DEFAULT_LOCAL_CACHE_MAX_ENTRIES,
            local_cache_max_bytes: Self::DEFAULT_LOCAL_CACHE_MAX_BYTES,
            http_request_max_bytes: Self::DEFAULT_HTTP_REQUEST_MAX_BYTES,
            file_read_max_bytes: Self::DEFAULT_FILE_READ_MAX_BYTES,
            metrics_custom_series_max: Self::DEFAULT_METRICS_CUSTOM_SERIES_MAX,
            bcrypt_cost: Self::DEFAULT_BCRYPT_COST,
            server_config: None,
        }
    }
}

/// Per-process state of the utility functions, owned by [`crate::Nk`].
#[derive(Debug)]
pub struct UtilityState {
    pub(super) config: UtilityConfig,
    /// Lua's (and native Rust's, which spells as Lua does) cache. Nakama keeps one per
    /// runtime: Lua and JavaScript do not see each other's entries (Lua may store tables,
    /// JavaScript only scalars).
    pub(super) lua_cache: LocalCache,
    /// JavaScript's cache.
    pub(super) js_cache: LocalCache,
    pub(super) http: HttpClients,
    pub(super) series: SeriesLimit,
    /// Bounds the CPU-heavy calls (bcrypt, RSA) running at once on the blocking pool to one
    /// per core, so a flood of them queues instead of taking every blocking thread (as
    /// `metafi_core::PasswordHasher` does for account passwords).
    pub(super) cpu_permits: Arc<Semaphore>,
}

impl UtilityState {
    pub fn new(config: &UtilityConfig) -> UtilityState {
        UtilityState {
            lua_cache: LocalCache::new(
                config.local_cache_max_entries,
                config.local_cache_max_bytes,
            ),
            js_cache: LocalCache::new(config.local_cache_max_entries, config.local_cache_max_bytes),
            http: HttpClients::default(),
            series: SeriesLimit::new(config.metrics_custom_series_max),
            cpu_permits: Arc::new(Semaphore::new(
                std::thread::available_parallelism().map_or(1, usize::from),
            )),
            config: config.clone(),
        }
    }
}
