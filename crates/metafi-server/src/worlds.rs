//! Served worlds (docs/WORLD.md, "Serving the world"): the node's world service, the world
//! created at start (`[world] enabled`), `nk.world_create` and `GET /debug/worlds`.

use futures_util::future::BoxFuture;
use metafi_world_server::{WorldSettings, Worlds};
use serde_json::{Map, Value};

/// `nk.world_create` over the node's worlds, starting from the `[world]` settings.
#[derive(Debug)]
pub(crate) struct WorldHostImpl {
    pub(crate) worlds: Worlds,
    pub(crate) defaults: WorldSettings,
}

impl metafi_runtime::WorldHost for WorldHostImpl {
    fn create_world(
        &self,
        map: String,
        options: Map<String, Value>,
    ) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async move {
            let settings = WorldSettings {
                map,
                ..self.defaults.clone()
            }
            .with_options(&options)?;
            self.worlds
                .create(settings)
                .await
                .map_err(|e| e.to_string())
        })
    }
}

/// `GET /debug/worlds` on the metrics listener: every running world's counters by match id.
pub(crate) fn debug_router(worlds: Worlds) -> axum::Router {
    axum::Router::new().route(
        "/debug/worlds",
        axum::routing::get(move || {
            let worlds = worlds.clone();
            async move { axum::Json(serde_json::json!({ "worlds": worlds.stats() })) }
        }),
    )
}
