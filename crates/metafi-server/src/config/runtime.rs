//! The `[runtime]` keys, checked: the script host's module directory, budgets and VM pools, the
//! server-to-server key and the VM watchdog. The `runtime.log_*` keys are in `script_log`.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use metafi_runtime::nk_api::UtilityConfig;
use metafi_runtime::{LogLimit, PoolConfig, RuntimeConfig};

use super::check::{Checker, cores};
use super::raw::RawRuntime;
use super::script_log;

/// The longest budget of one call or load, milliseconds (ten minutes).
const MAX_BUDGET_MS: i64 = 600_000;

/// The validated `[runtime]` section.
pub(super) struct RuntimeSettings {
    pub runtime: RuntimeConfig,
    pub http_key: String,
    pub watchdog_grace: Duration,
    /// `runtime.inline_calls` and `runtime.inline_vms`: most VMs per engine on IO threads,
    /// 0 when calls always take the VM pool.
    pub inline_vms: usize,
    /// `runtime.errors_per_module`: last errors kept per module for the console.
    pub errors_per_module: usize,
    pub log_limit: LogLimit,
    /// The utility functions' limits (`runtime.local_cache_max_entries`, …); the server adds
    /// the bcrypt cost and the `get_config` view when it starts the runtime.
    pub utilities: UtilityConfig,
}

/// `node` is the node's name (`name`); an empty `runtime.path` means `<data_dir>/modules`.
pub(super) fn validate(
    r: &RawRuntime,
    node: &str,
    data_dir: &Path,
    check: &mut Checker,
) -> RuntimeSettings {
    let call_timeout = check.millis(
        "runtime.call_timeout_ms",
        r.call_timeout_ms,
        1,
        MAX_BUDGET_MS,
    );
    let load_timeout = check.millis(
        "runtime.load_timeout_ms",
        r.load_timeout_ms,
        1,
        MAX_BUDGET_MS,
    );
    let memory_mb = check.count("runtime.memory_limit_mb", r.memory_limit_mb, 4, 65_536);
    let watchdog_grace = check.millis(
        "runtime.watchdog_grace_ms",
        r.watchdog_grace_ms,
        10,
        MAX_BUDGET_MS,
    );
    let lua = pool(
        check,
        ("runtime.lua_vms", r.lua_vms, cores()),
        ("runtime.lua_max_calls_per_vm", r.lua_max_calls_per_vm),
        ("runtime.lua_queue_capacity", r.lua_queue_capacity),
    );
    // 0 VMs: four per core. A JavaScript VM blocked in an `nk` call uses no CPU
    // (docs/RUNTIME.md, "JavaScript engine").
    let js = pool(
        check,
        ("runtime.js_vms", r.js_vms, 4 * cores()),
        ("runtime.js_max_calls_per_vm", r.js_max_calls_per_vm),
        ("runtime.js_queue_capacity", r.js_queue_capacity),
    );
    let inline_vms = check.count("runtime.inline_vms", r.inline_vms, 0, 4096);
    let inline_vms = match (r.inline_calls, inline_vms) {
        (false, _) => 0,
        (true, 0) => 2 * cores(),
        (true, n) => n,
    };
    let errors_per_module = check.count("runtime.errors_per_module", r.errors_per_module, 0, 1000);
    let log_limit = script_log::validate(r, check);
    if r.http_key.is_empty() {
        check.problem("runtime.http_key: must not be empty");
    }
    let mut env = HashMap::new();
    for entry in &r.env {
        match entry.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                env.insert(key.trim().to_owned(), value.to_owned());
            }
            _ => check.problem(format!(
                "runtime.env entry \"{entry}\": expected \"KEY=VALUE\""
            )),
        }
    }
    let utilities = UtilityConfig {
        local_cache_max_entries: check.count(
            "runtime.local_cache_max_entries",
            r.local_cache_max_entries,
            1,
            10_000_000,
        ),
        local_cache_max_bytes: check.count(
            "runtime.local_cache_max_bytes",
            r.local_cache_max_bytes,
            1,
            1 << 40,
        ),
        http_request_max_bytes: check.count(
            "runtime.http_request_max_bytes",
            r.http_request_max_bytes,
            1,
            1 << 30,
        ),
        file_read_max_bytes: check.count(
            "runtime.file_read_max_bytes",
            r.file_read_max_bytes,
            1,
            1 << 30,
        ),
        metrics_custom_series_max: check.count(
            "runtime.metrics_custom_series_max",
            r.metrics_custom_series_max,
            0,
            1_000_000,
        ),
        ..UtilityConfig::default()
    };
    let path = if r.path.is_empty() {
        data_dir.join("modules")
    } else {
        r.path.clone().into()
    };
    RuntimeSettings {
        runtime: RuntimeConfig {
            path,
            node: node.to_owned(),
            env,
            call_timeout,
            load_timeout,
            memory_limit_bytes: memory_mb << 20,
            pools: HashMap::from([("lua".to_owned(), lua), ("js".to_owned(), js)]),
        },
        http_key: r.http_key.clone(),
        watchdog_grace,
        inline_vms,
        errors_per_module,
        log_limit,
        utilities,
    }
}

/// One engine's VM pool: `(key, value, what 0 means)` for its VM count, then its calls per VM
/// and queue capacity keys.
fn pool(
    check: &mut Checker,
    (vms_key, vms, vms_when_zero): (&str, i64, usize),
    (calls_key, calls): (&str, i64),
    (queue_key, queue): (&str, i64),
) -> PoolConfig {
    let vms = check.count(vms_key, vms, 0, 1024);
    PoolConfig {
        vms: if vms == 0 { vms_when_zero } else { vms },
        max_calls_per_vm: check.count(calls_key, calls, 1, 100_000),
        queue_capacity: check.count(queue_key, queue, 1, 1 << 20),
    }
}
