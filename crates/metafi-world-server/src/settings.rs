//! What a world is made of: its map, tick rate, capacity and threads.

use metafi_world::map_gen;
use metafi_world::{MapError, MapSpec};

/// A world's parameters (`[world]` in the server configuration, or `nk.world_create`).
#[derive(Clone, Debug, PartialEq)]
pub struct WorldSettings {
    /// `arena` (the 3072 × 3072 dense arena), `open` (an open map sized for `max_players` at the
    /// benchmark's density), `open:N` (sized for N players) or a path to a `metafi-map/1` JSON
    /// file.
    pub map: String,
    /// Seed of a generated map.
    pub seed: u64,
    /// Ticks per second (1 to 128).
    pub tick_rate: u32,
    /// Most players at once; joins beyond are refused with "World is full".
    pub max_players: usize,
    /// Threads of the world's own pool (tick and per-client encoding and sending).
    pub threads: usize,
    /// A client whose outbox holds more than this many messages is behind: its snapshot of a
    /// tick is dropped (counted) rather than queued.
    pub max_outbox_messages: usize,
    /// Frames per second of the console's top-down view of the world (`/world/{id}`), made
    /// only while someone watches; 0: the view is off.
    pub view_rate: u32,
    /// Whether the world's members get Nakama's match presence events when others join or
    /// leave (every join is then a message to every member: O(n²) over a ramp). Off: a
    /// joining client still gets its own join answer; who is near comes with the snapshots.
    pub presence_events: bool,
}

impl Default for WorldSettings {
    fn default() -> WorldSettings {
        WorldSettings {
            map: "arena".into(),
            seed: 1,
            tick_rate: 20,
            max_players: 1000,
            threads: 2,
            max_outbox_messages: 8,
            view_rate: 10,
            presence_events: false,
        }
    }
}

/// Why a world could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("world tick rate {0} must be between 1 and 128")]
    TickRate(u32),
    #[error("world max players {0} must be between 1 and 100000")]
    MaxPlayers(usize),
    #[error("world threads {0} must be between 1 and 64")]
    Threads(usize),
    #[error("world view rate {0} must be between 0 and 60")]
    ViewRate(u32),
    #[error("world map {name:?}: {reason}")]
    Map { name: String, reason: String },
}

impl WorldSettings {
    pub fn validate(&self) -> Result<(), SettingsError> {
        if !(1..=128).contains(&self.tick_rate) {
            return Err(SettingsError::TickRate(self.tick_rate));
        }
        if !(1..=100_000).contains(&self.max_players) {
            return Err(SettingsError::MaxPlayers(self.max_players));
        }
        if !(1..=64).contains(&self.threads) {
            return Err(SettingsError::Threads(self.threads));
        }
        if self.view_rate > 60 {
            return Err(SettingsError::ViewRate(self.view_rate));
        }
        Ok(())
    }

    /// The map this world runs on (generated, or read from a file).
    pub fn map_spec(&self) -> Result<MapSpec, SettingsError> {
        let bad = |reason: String| SettingsError::Map {
            name: self.map.clone(),
            reason,
        };
        match self.map.as_str() {
            "arena" => Ok(map_gen::arena(self.seed)),
            "open" => Ok(map_gen::open_for_players(
                self.max_players,
                map_gen::AREA_PER_PLAYER,
                self.seed,
            )),
            other => {
                if let Some(n) = other.strip_prefix("open:") {
                    let players: usize = n
                        .parse()
                        .ok()
                        .filter(|p| (1..=100_000).contains(p))
                        .ok_or_else(|| bad("open:N needs N between 1 and 100000".into()))?;
                    return Ok(map_gen::open_for_players(
                        players,
                        map_gen::AREA_PER_PLAYER,
                        self.seed,
                    ));
                }
                let text = std::fs::read_to_string(other).map_err(|e| bad(e.to_string()))?;
                MapSpec::from_json(&text).map_err(|e: MapError| bad(e.to_string()))
            }
        }
    }

    /// Applies `nk.world_create`'s options (`tick_rate`, `max_players`, `seed`); unknown keys
    /// and values of the wrong type are errors.
    pub fn with_options(
        mut self,
        options: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<WorldSettings, String> {
        for (key, value) in options {
            let n = value
                .as_u64()
                .ok_or_else(|| format!("world option {key} must be a non-negative integer"))?;
            match key.as_str() {
                "tick_rate" => self.tick_rate = u32::try_from(n).unwrap_or(u32::MAX),
                "max_players" => self.max_players = usize::try_from(n).unwrap_or(usize::MAX),
                "seed" => self.seed = n,
                _ => return Err(format!("unknown world option {key}")),
            }
        }
        self.validate().map_err(|e| e.to_string())?;
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_override_and_are_checked() {
        let base = WorldSettings::default();
        let opts = serde_json::json!({ "tick_rate": 10, "max_players": 5, "seed": 7 });
        let s = base
            .clone()
            .with_options(opts.as_object().expect("object"))
            .expect("valid");
        assert_eq!((s.tick_rate, s.max_players, s.seed), (10, 5, 7));
        let bad = serde_json::json!({ "tick_rate": 0 });
        assert!(
            base.clone()
                .with_options(bad.as_object().expect("o"))
                .is_err()
        );
        let unknown = serde_json::json!({ "colour": 1 });
        assert_eq!(
            base.clone().with_options(unknown.as_object().expect("o")),
            Err("unknown world option colour".into())
        );
        let typed = serde_json::json!({ "seed": "x" });
        assert!(base.with_options(typed.as_object().expect("o")).is_err());
    }

    #[test]
    fn maps_by_name() {
        let mut s = WorldSettings::default();
        assert_eq!(s.map_spec().expect("arena").name, "arena");
        s.map = "open:10".into();
        assert!(s.map_spec().is_ok());
        s.map = "open:0".into();
        assert!(s.map_spec().is_err());
        s.map = "/nonexistent/map.json".into();
        assert!(s.map_spec().is_err());
    }
}
