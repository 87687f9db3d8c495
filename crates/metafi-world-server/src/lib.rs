//! A `metafi-world` [`metafi_world::World`] served as an authoritative match of
//! `metafi serve` (docs/WORLD.md, "Serving the world").
//!
//! - [`Worlds`] creates worlds (from the `[world]` configuration or `nk.world_create`): each
//!   is a match whose label says it is a world, listed and joined like any other.
//! - A joined client's match data (op [`codec::OP_COMMAND`]) goes straight to the world's
//!   inbox through the match engine's input seam ([`metafi_match::InputTap`]), not through
//!   the match's tick.
//! - The world ticks on its own thread and rayon pool (apart from the match executor and the
//!   IO threads); each client's snapshot is delta-encoded against the tick it acknowledged,
//!   wrapped and encoded for its socket in parallel on that pool, and queued straight into its
//!   session (op [`codec::OP_SNAPSHOT`]); a client whose outbox is behind loses that tick's
//!   snapshot (counted) instead of queueing it.
//!
//! Key types: [`Worlds`], [`WorldSettings`], [`codec::CommandMsg`], [`WorldStats`].

pub mod codec;
mod handler;
mod runner;
mod settings;
mod stats;
mod view;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use metafi_match::{HandlerError, MatchContext, MatchError, MatchHandler, MatchSpec, Matches};
use metafi_realtime::SessionRegistry;
use metafi_world::{Map, World, WorldConfig};
use parking_lot::Mutex;

pub use settings::{SettingsError, WorldSettings};
pub use stats::{PHASES, WorldStats};
pub use view::WorldView;

use handler::{WorldHandler, WorldTap};
use runner::{Runner, WorldShared};

/// The handler name worlds are listed under.
pub const HANDLER_NAME: &str = "world";

/// Why a world could not be created.
#[derive(Debug, thiserror::Error)]
pub enum WorldCreateError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error("world: {0}")]
    Build(String),
    #[error(transparent)]
    Match(#[from] MatchError),
}

/// Creates and lists this node's worlds. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Worlds {
    matches: Matches,
    registry: Arc<SessionRegistry>,
    /// Running worlds' counters and overhead views by match id.
    running: Arc<Mutex<BTreeMap<String, RunningWorld>>>,
}

/// What the node keeps of a running world.
#[derive(Debug, Clone)]
struct RunningWorld {
    stats: Arc<WorldStats>,
    view: Arc<WorldView>,
}

impl Worlds {
    pub fn new(matches: Matches, registry: Arc<SessionRegistry>) -> Worlds {
        Worlds {
            matches,
            registry,
            running: Arc::default(),
        }
    }

    /// Builds the map and the world, starts its thread and creates its match; returns the
    /// match id. The map is built here, on the world's own pool (an open map for thousands
    /// of players takes a moment).
    pub async fn create(&self, settings: WorldSettings) -> Result<String, WorldCreateError> {
        settings.validate()?;
        let spec = settings.map_spec()?;
        let threads = settings.threads;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|k| format!("metafi-world-{k}"))
            .build()
            .map_err(|e| WorldCreateError::Build(e.to_string()))?;
        let map = Map::build(spec, &pool).map_err(|e| WorldCreateError::Build(e.to_string()))?;
        let map_name = map.name().to_owned();
        let config = WorldConfig {
            tick_ms: 1000 / settings.tick_rate,
            ..WorldConfig::default()
        };
        let map = Arc::new(map);
        let world =
            World::new(map.clone(), config).map_err(|e| WorldCreateError::Build(e.to_string()))?;
        let stats = Arc::new(WorldStats::default());
        let view = Arc::new(WorldView::new(map, settings.tick_rate, settings.view_rate));
        let shared = Arc::new(WorldShared {
            inbox: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            stats: stats.clone(),
            view: view.clone(),
        });
        let label = serde_json::json!({
            "world": true,
            "map": map_name,
            "tick_rate": settings.tick_rate,
            "max_players": settings.max_players,
        })
        .to_string();
        let registry = self.registry.clone();
        let running = self.running.clone();
        let node: Arc<str> = Arc::from(self.matches.node());
        let factory = move |ctx: &MatchContext| -> Result<Box<dyn MatchHandler>, HandlerError> {
            let match_id = ctx.match_id.to_string();
            let runner = Runner::new(
                world,
                pool,
                shared.clone(),
                registry,
                match_id.clone(),
                map_name,
                settings.tick_rate,
                settings.max_outbox_messages,
            );
            let thread = std::thread::Builder::new()
                .name("metafi-world".into())
                .spawn(move || runner.run())
                .map_err(|e| HandlerError::failed(format!("starting the world thread: {e}")))?;
            running
                .lock()
                .insert(match_id.clone(), RunningWorld { stats, view });
            let on_end = {
                let running = running.clone();
                Box::new(move || {
                    running.lock().remove(&match_id);
                }) as Box<dyn FnOnce() + Send>
            };
            Ok(Box::new(WorldHandler {
                tap: Arc::new(WorldTap {
                    shared: shared.clone(),
                }),
                shared,
                thread: Some(thread),
                label,
                tick_rate: settings.tick_rate,
                max_players: settings.max_players,
                presence_events: settings.presence_events,
                node,
                on_end: Some(on_end),
            }))
        };
        let id = self
            .matches
            .create(MatchSpec {
                handler_name: Arc::from(HANDLER_NAME),
                runtime: "native",
                factory: Box::new(factory),
                params: Default::default(),
            })
            .await?;
        Ok(id.to_string())
    }

    /// Every running world's counters, by match id (`GET /debug/worlds`).
    pub fn stats(&self) -> serde_json::Value {
        let running = self.running.lock();
        serde_json::Value::Object(
            running
                .iter()
                .map(|(id, w)| (id.clone(), w.stats.to_json()))
                .collect(),
        )
    }

    /// The match ids of this node's running worlds, sorted.
    pub fn ids(&self) -> Vec<String> {
        self.running.lock().keys().cloned().collect()
    }

    /// A running world's counters as JSON (`None`: no such world on this node).
    pub fn stats_of(&self, match_id: &str) -> Option<serde_json::Value> {
        self.running.lock().get(match_id).map(|w| w.stats.to_json())
    }

    /// A running world's top-down view (the console's `/world/{id}`).
    pub fn view(&self, match_id: &str) -> Option<Arc<WorldView>> {
        self.running.lock().get(match_id).map(|w| w.view.clone())
    }
}
