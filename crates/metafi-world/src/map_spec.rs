//! The map file format: JSON, one axis-aligned solid box per brush.
//!
//! ```json
//! { "format": "metafi-map/1", "name": "arena",
//!   "bounds":  { "min": [0, 0, -64], "max": [3072, 3072, 512] },
//!   "brushes": [ { "min": [0, 0, -64], "max": [3072, 3072, 0] } ],
//!   "spawns":  [ { "origin": [128, 128, 28.1], "yaw": 90 } ],
//!   "items":   [ { "kind": "health", "origin": [512, 512, 16] } ] }
//! ```
//!
//! Brushes are solid boxes (walls, floors, platforms, steps); there is no implicit floor. Spawn
//! origins are player centres. Everything read from a file is validated before a `Map` exists.

use serde::{Deserialize, Serialize};

use crate::math::{Aabb, Vec3};

/// The format tag every map file carries.
pub const MAP_FORMAT: &str = "metafi-map/1";
/// Largest absolute coordinate: keeps f32 resolution (≤ 1/64 unit) well under the collision
/// epsilon so positions never tunnel through walls by rounding.
pub const MAX_COORD: f32 = 131_072.0;
const MAX_BRUSHES: usize = 1 << 20;
const MAX_POINTS: usize = 1 << 17;

/// A map as written in a file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapSpec {
    /// Must be [`MAP_FORMAT`].
    pub format: String,
    /// Human-readable name, shown in reports.
    pub name: String,
    /// The playable volume; players, projectiles and the spatial grids live inside it.
    pub bounds: BoxSpec,
    /// Solid boxes.
    pub brushes: Vec<BoxSpec>,
    /// Where players appear; at least one.
    pub spawns: Vec<SpawnSpec>,
    /// Pickups that respawn after being taken.
    #[serde(default)]
    pub items: Vec<ItemSpec>,
}

/// An axis-aligned box given by two corners.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoxSpec {
    pub min: [f32; 3],
    pub max: [f32; 3],
}

/// A spawn point: a player centre and a view yaw in degrees.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpawnSpec {
    pub origin: [f32; 3],
    #[serde(default)]
    pub yaw: f32,
}

/// What a pickup gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ItemKind {
    Health,
    Bullets,
    Rockets,
}

/// A pickup's kind and position (the centre of its small touch box).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemSpec {
    pub kind: ItemKind,
    pub origin: [f32; 3],
}

/// Why a map file was rejected.
#[derive(Debug, thiserror::Error)]
pub enum MapError {
    #[error("map is not valid JSON for the map format")]
    Json {
        #[source]
        source: serde_json::Error,
    },
    #[error("unknown map format {found:?}, expected {MAP_FORMAT:?}")]
    Format { found: String },
    #[error("{what} #{index}: {reason}")]
    Invalid {
        what: &'static str,
        index: usize,
        reason: &'static str,
    },
    #[error("map has no spawn points")]
    NoSpawns,
    #[error("map has {count} {what}, more than the limit of {limit}")]
    TooMany {
        what: &'static str,
        count: usize,
        limit: usize,
    },
}

impl MapSpec {
    /// Parses and validates a JSON map.
    pub fn from_json(text: &str) -> Result<MapSpec, MapError> {
        let spec: MapSpec =
            serde_json::from_str(text).map_err(|source| MapError::Json { source })?;
        spec.validate()?;
        Ok(spec)
    }

    /// Serialises the map as pretty JSON.
    pub fn to_json(&self) -> String {
        // Serialising plain structs of numbers and strings cannot fail; fall back to empty text
        // rather than panic if serde_json ever disagrees.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Checks everything `Map::build` relies on.
    pub fn validate(&self) -> Result<(), MapError> {
        if self.format != MAP_FORMAT {
            return Err(MapError::Format {
                found: self.format.clone(),
            });
        }
        check_box(&self.bounds, "bounds", 0)?;
        limit("brushes", self.brushes.len(), MAX_BRUSHES)?;
        limit("spawns", self.spawns.len(), MAX_POINTS)?;
        limit("items", self.items.len(), MAX_POINTS)?;
        for (i, b) in self.brushes.iter().enumerate() {
            check_box(b, "brush", i)?;
        }
        if self.spawns.is_empty() {
            return Err(MapError::NoSpawns);
        }
        let bounds = self.bounds.aabb();
        for (i, s) in self.spawns.iter().enumerate() {
            check_point(s.origin, &bounds, "spawn", i)?;
            if !s.yaw.is_finite() {
                return Err(MapError::Invalid {
                    what: "spawn",
                    index: i,
                    reason: "yaw is not finite",
                });
            }
        }
        for (i, it) in self.items.iter().enumerate() {
            check_point(it.origin, &bounds, "item", i)?;
        }
        Ok(())
    }
}

impl BoxSpec {
    pub fn aabb(&self) -> Aabb {
        Aabb::new(vec3(self.min), vec3(self.max))
    }

    pub fn from_aabb(b: &Aabb) -> BoxSpec {
        BoxSpec {
            min: [b.min.x, b.min.y, b.min.z],
            max: [b.max.x, b.max.y, b.max.z],
        }
    }
}

pub fn vec3(a: [f32; 3]) -> Vec3 {
    Vec3::new(a[0], a[1], a[2])
}

fn limit(what: &'static str, count: usize, limit: usize) -> Result<(), MapError> {
    if count > limit {
        Err(MapError::TooMany { what, count, limit })
    } else {
        Ok(())
    }
}

fn check_box(b: &BoxSpec, what: &'static str, index: usize) -> Result<(), MapError> {
    let bad = |reason| {
        Err(MapError::Invalid {
            what,
            index,
            reason,
        })
    };
    for a in 0..3 {
        let (lo, hi) = (b.min[a], b.max[a]);
        if !lo.is_finite() || !hi.is_finite() {
            return bad("coordinate is not finite");
        }
        if lo.abs() > MAX_COORD || hi.abs() > MAX_COORD {
            return bad("coordinate is out of range");
        }
        if lo >= hi {
            return bad("min is not below max");
        }
    }
    Ok(())
}

fn check_point(
    p: [f32; 3],
    bounds: &Aabb,
    what: &'static str,
    index: usize,
) -> Result<(), MapError> {
    let v = vec3(p);
    if !v.is_finite() || !bounds.contains_point(v) {
        return Err(MapError::Invalid {
            what,
            index,
            reason: "origin is outside the bounds",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"{ "format": "metafi-map/1", "name": "t",
        "bounds": { "min": [0, 0, -64], "max": [1024, 1024, 512] },
        "brushes": [ { "min": [0, 0, -64], "max": [1024, 1024, 0] } ],
        "spawns": [ { "origin": [100, 100, 30] } ],
        "items": [ { "kind": "rockets", "origin": [500, 500, 16] } ] }"#;

    #[test]
    fn parses_documented_example_and_round_trips() {
        let spec = MapSpec::from_json(SMALL).expect("valid map");
        assert_eq!(spec.items[0].kind, ItemKind::Rockets);
        let again = MapSpec::from_json(&spec.to_json()).expect("round trip");
        assert_eq!(again, spec);
    }

    #[test]
    fn rejects_inverted_brush_and_missing_spawns() {
        let bad = SMALL.replace(r#""max": [1024, 1024, 0]"#, r#""max": [1024, 1024, -100]"#);
        assert!(matches!(
            MapSpec::from_json(&bad),
            Err(MapError::Invalid { what: "brush", .. })
        ));
        let none = SMALL.replace(r#"[ { "origin": [100, 100, 30] } ]"#, "[]");
        assert!(matches!(MapSpec::from_json(&none), Err(MapError::NoSpawns)));
    }

    #[test]
    fn rejects_unknown_fields_and_formats() {
        let extra = SMALL.replace(r#""name": "t","#, r#""name": "t", "gravity": 1,"#);
        assert!(matches!(
            MapSpec::from_json(&extra),
            Err(MapError::Json { .. })
        ));
        let fmt = SMALL.replace("metafi-map/1", "quake-bsp");
        assert!(matches!(
            MapSpec::from_json(&fmt),
            Err(MapError::Format { .. })
        ));
    }
}
