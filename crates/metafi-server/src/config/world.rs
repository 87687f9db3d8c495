//! The `[world]` keys (docs/WORLD.md, "Serving the world"): a world created when the node
//! starts, served as an authoritative match. Off by default.

use metafi_world_server::WorldSettings;
use serde::{Deserialize, Serialize};

use super::check::Checker;

/// `[world]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawWorld {
    /// Create a world at start.
    pub enabled: bool,
    /// `arena`, `open`, `open:N` or a path to a map file.
    pub map: String,
    pub seed: i64,
    pub tick_rate: i64,
    pub max_players: i64,
    /// Threads of each world's own pool (0: one per core).
    pub threads: i64,
    /// Messages a client's outbox may hold before its snapshots are dropped.
    pub max_outbox_messages: i64,
    /// Frames per second of the console's top-down view (0: off).
    pub view_rate: i64,
    /// Match presence events to every member on each join and leave.
    pub presence_events: bool,
}

impl Default for RawWorld {
    fn default() -> Self {
        let d = WorldSettings::default();
        RawWorld {
            enabled: false,
            map: d.map,
            seed: d.seed as i64,
            tick_rate: i64::from(d.tick_rate),
            max_players: d.max_players as i64,
            threads: 0,
            max_outbox_messages: d.max_outbox_messages as i64,
            view_rate: i64::from(d.view_rate),
            presence_events: d.presence_events,
        }
    }
}

/// The settings of every world of this node (`nk.world_create` starts from them too), and
/// whether one is created at start.
pub(super) fn validate(world: &RawWorld, check: &mut Checker) -> (WorldSettings, bool) {
    let threads = match world.threads {
        0 => super::check::cores().min(64),
        n => check.count("world.threads", n, 0, 64),
    };
    if world.map.trim().is_empty() {
        check.problem("world.map: must not be empty");
    }
    let settings = WorldSettings {
        map: world.map.clone(),
        seed: check.range("world.seed", world.seed, 0, i64::MAX) as u64,
        tick_rate: check.count_u32("world.tick_rate", world.tick_rate, 1, 128),
        max_players: check.count("world.max_players", world.max_players, 1, 100_000),
        threads: threads.max(1),
        max_outbox_messages: check.count(
            "world.max_outbox_messages",
            world.max_outbox_messages,
            1,
            1_000_000,
        ),
        view_rate: check.range("world.view_rate", world.view_rate, 0, 60) as u32,
        presence_events: world.presence_events,
    };
    (settings, world.enabled)
}
