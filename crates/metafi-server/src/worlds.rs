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

/// The console's view of the node's worlds (the Worlds pages, `/world/{id}`).
#[derive(Debug)]
pub(crate) struct ConsoleWorlds(pub(crate) Worlds);

impl metafi_console::WorldSource for ConsoleWorlds {
    fn ids(&self) -> Vec<String> {
        self.0.ids()
    }

    fn stats(&self, id: &str) -> Option<Value> {
        self.0.stats_of(id)
    }

    fn map(&self, id: &str) -> Option<Value> {
        self.0.view(id).map(|v| v.map_json())
    }

    fn frame(&self, id: &str, since: Option<u32>) -> Option<Option<Vec<u8>>> {
        self.0.view(id).map(|v| v.frame(since))
    }
}
