//! What a client is sent each tick: its own player in full precision, and the entities it is
//! interested in, quantised to 1/8 unit.

use crate::item::ItemState;
use crate::map_spec::ItemKind;
use crate::math::Vec3;
use crate::player::{PlayerState, flags};
use crate::projectile::Projectile;

/// Position quantum on the wire: 1/8 unit, as Quake 3.
pub const POSITION_SCALE: f32 = 8.0;

/// What an entity key names (top two bits of the key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntityKind {
    Player = 0,
    Projectile = 1,
    Item = 2,
}

/// Entity flag bits on the wire.
pub mod net_flags {
    pub const DEAD: u8 = 1;
    pub const FIRED: u8 = 2;
    pub const ON_GROUND: u8 = 4;
    /// For items: can be picked up.
    pub const AVAILABLE: u8 = 8;
}

/// One entity as a client sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct NetEntity {
    /// Kind in the top two bits, id below; snapshots list entities in key order.
    pub key: u32,
    /// Position in 1/8 units.
    pub origin: [i32; 3],
    pub yaw: u16,
    pub pitch: i16,
    pub flags: u8,
    /// Weapon for players, item kind for items.
    pub model: u8,
}

/// The receiving client's own player.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PlayerView {
    pub origin: [i32; 3],
    pub velocity: [i32; 3],
    pub yaw: u16,
    pub pitch: i16,
    pub health: i32,
    pub ammo: [i32; 2],
    pub weapon: u8,
    pub flags: u8,
    pub frags: i32,
    pub deaths: i32,
}

/// One tick's view for one client.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub tick: u32,
    pub view: PlayerView,
    /// Sorted by key, unique keys.
    pub entities: Vec<NetEntity>,
}

/// A snapshot borrowed from wherever it is kept (the clients' history arena, or an owned
/// [`Snapshot`]): what the delta codec reads.
#[derive(Clone, Copy, Debug)]
pub struct SnapshotRef<'a> {
    pub tick: u32,
    pub view: &'a PlayerView,
    /// Sorted by key, unique keys.
    pub entities: &'a [NetEntity],
}

impl Snapshot {
    pub fn to_ref(&self) -> SnapshotRef<'_> {
        SnapshotRef {
            tick: self.tick,
            view: &self.view,
            entities: &self.entities,
        }
    }
}

impl SnapshotRef<'_> {
    pub fn to_snapshot(&self) -> Snapshot {
        Snapshot {
            tick: self.tick,
            view: *self.view,
            entities: self.entities.to_vec(),
        }
    }
}

pub fn entity_key(kind: EntityKind, id: u32) -> u32 {
    (kind as u32) << 30 | (id & 0x3fff_ffff)
}

pub fn kind_of(key: u32) -> u32 {
    key >> 30
}

/// Quantises a coordinate, rounding half away from zero; saturates far outside the map (never
/// panics, NaN becomes 0).
///
/// The same as `(v * POSITION_SCALE).round() as i32`, without the libm call `round` is on
/// baseline x86-64 (it runs for every entity and viewer every tick): the saturating cast
/// truncates, and the fraction (exact below 2^23, zero above) decides the rounding.
#[inline]
pub fn quantize(v: f32) -> i32 {
    let x = v * POSITION_SCALE;
    let t = x as i32;
    let frac = x - t as f32;
    if frac >= 0.5 {
        t.saturating_add(1)
    } else if frac <= -0.5 {
        t.saturating_sub(1)
    } else {
        t
    }
}

pub fn quantize3(v: Vec3) -> [i32; 3] {
    [quantize(v.x), quantize(v.y), quantize(v.z)]
}

pub fn dequantize3(q: [i32; 3]) -> Vec3 {
    let s = 1.0 / POSITION_SCALE;
    Vec3::new(q[0] as f32 * s, q[1] as f32 * s, q[2] as f32 * s)
}

impl NetEntity {
    pub fn of_player(p: &PlayerState) -> NetEntity {
        let mut f = 0;
        if !p.alive() {
            f |= net_flags::DEAD;
        }
        if p.has(flags::FIRED) {
            f |= net_flags::FIRED;
        }
        if p.has(flags::ON_GROUND) {
            f |= net_flags::ON_GROUND;
        }
        NetEntity {
            key: entity_key(EntityKind::Player, p.id.0),
            origin: quantize3(p.origin),
            yaw: p.yaw,
            pitch: p.pitch,
            flags: f,
            model: p.weapon.index() as u8,
        }
    }

    pub fn of_projectile(r: &Projectile) -> NetEntity {
        let (yaw, pitch) = (crate::math::yaw_towards(Vec3::ZERO, r.velocity), 0);
        NetEntity {
            key: entity_key(EntityKind::Projectile, r.id),
            origin: quantize3(r.origin),
            yaw,
            pitch,
            flags: 0,
            model: 1,
        }
    }

    pub fn of_item(index: u32, it: &ItemState) -> NetEntity {
        let model = match it.kind {
            ItemKind::Health => 0,
            ItemKind::Bullets => 1,
            ItemKind::Rockets => 2,
        };
        let flags = if it.available() {
            net_flags::AVAILABLE
        } else {
            0
        };
        NetEntity {
            key: entity_key(EntityKind::Item, index),
            origin: quantize3(it.origin),
            yaw: 0,
            pitch: 0,
            flags,
            model,
        }
    }
}

impl PlayerView {
    pub fn of(p: &PlayerState) -> PlayerView {
        PlayerView {
            origin: quantize3(p.origin),
            velocity: quantize3(p.velocity),
            yaw: p.yaw,
            pitch: p.pitch,
            health: p.health,
            ammo: p.ammo,
            weapon: p.weapon.index() as u8,
            flags: p.flags,
            frags: p.frags,
            deaths: p.deaths,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantize_rounds_like_round_half_away_from_zero() {
        let edges = [
            0.0,
            -0.0,
            0.0625,
            -0.0625,
            0.03125,
            0.1,
            -0.1,
            2.5 / 8.0,
            -2.5 / 8.0,
            1.0e6,
            -1.0e6,
            1.0e7 + 0.0625,
            3.0e9,
            -3.0e9,
            f32::MAX,
            f32::MIN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            1048575.9,
            -1048575.9,
            268435455.0,
            f32::EPSILON,
        ];
        let steps = (-200_000..200_000).map(|i| i as f32 * 0.015_625 + 0.000_1 * (i % 7) as f32);
        for v in edges.into_iter().chain(steps) {
            assert_eq!(quantize(v), (v * POSITION_SCALE).round() as i32, "{v}");
        }
    }
}
