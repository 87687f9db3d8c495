//! The script host: native modules compiled in, then every script under `runtime.path`.

use std::sync::Arc;

use anyhow::Context;
use metafi_runtime::nk_api::UtilityConfig;
use metafi_runtime::{Runtime, RuntimeBuilder, RuntimeServices};
use metafi_runtime_lua::LuaEngine;

use crate::config::Config;
use crate::config_view;
use crate::examples::ExampleModules;
use crate::telemetry;

/// Loads the server modules. A module that fails to load is an error naming its file and line;
/// the node does not start.
// One call site (`node.rs`). Each feature's service is one more argument until they are
// gathered in one struct, which is best done once every feature's service has landed.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn start_runtime(
    config: &Config,
    services: RuntimeServices,
    errors: Arc<metafi_core::ModuleErrors>,
) -> anyhow::Result<Runtime> {
    // Install the metrics recorder first: VM threads report queue depth from their start.
    let _ = telemetry::metrics_handle();
    let utilities = UtilityConfig {
        // `nk.bcrypt_hash` hashes as account passwords are hashed.
        bcrypt_cost: config.accounts.bcrypt_cost,
        server_config: Some(Arc::new(config_view::nakama_view(config))),
        ..config.runtime_utilities.clone()
    };
    let services = services.with_utilities(utilities);
    let runtime = RuntimeBuilder::new(config.runtime.clone(), services)
        .watchdog_grace(config.runtime_watchdog_grace)
        .inline_vms(config.runtime_inline_vms)
        .log_limit(config.script_log_limit)
        .error_log(errors)
        .example_modules()
        .engine(Arc::new(LuaEngine::new().with_match_vms(config.match_vms)))
        .engine(Arc::new(
            metafi_runtime_js::JsEngine::new()
                .with_match_vms(config.match_vms)
                .with_read_only_globals(config.raw.runtime.js_read_only_globals),
        ))
        .start()
        .await
        .with_context(|| {
            format!(
                "loading server modules from {} (runtime.path)",
                config.runtime.path.display()
            )
        })?;
    tracing::info!(rpcs = ?runtime.rpc_ids(), "runtime ready");
    Ok(runtime)
}
