//! Pickups: health and ammunition boxes that respawn after being taken.

use crate::map::ItemSpot;
use crate::map_spec::ItemKind;
use crate::math::{Aabb, Vec3};
use crate::player::PlayerState;
use crate::rules::{ITEM_HALF, Rules};

/// A pickup's changing state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ItemState {
    pub kind: ItemKind,
    pub origin: Vec3,
    /// Milliseconds until the item is back; `0` when it can be taken.
    pub respawn_ms: i32,
}

impl ItemState {
    pub fn new(spot: &ItemSpot) -> ItemState {
        ItemState {
            kind: spot.kind,
            origin: spot.origin,
            respawn_ms: 0,
        }
    }

    pub fn available(&self) -> bool {
        self.respawn_ms <= 0
    }

    pub fn bbox(&self) -> Aabb {
        Aabb::around(self.origin, ITEM_HALF)
    }

    /// Counts the respawn timer down by one tick.
    pub fn advance(&mut self, dt_ms: i32) {
        if self.respawn_ms > 0 {
            self.respawn_ms = (self.respawn_ms - dt_ms).max(0);
        }
    }

    /// Gives the item to `p` and starts the respawn timer.
    pub fn give(&mut self, p: &mut PlayerState, rules: &Rules) {
        let amount = rules.pickup_amount(self.kind);
        match self.kind {
            ItemKind::Health => p.health = (p.health + amount).min(rules.max_health),
            ItemKind::Bullets => p.ammo[0] = (p.ammo[0] + amount).min(rules.max_ammo[0]),
            ItemKind::Rockets => p.ammo[1] = (p.ammo[1] + amount).min(rules.max_ammo[1]),
        }
        self.respawn_ms = rules.item_respawn_ms;
    }
}

/// Whether `p` would take an item of this kind (Quake leaves health on the floor for players
/// at full health, and ammo for players who are full).
pub fn wants(p: &PlayerState, kind: ItemKind, rules: &Rules) -> bool {
    p.alive()
        && match kind {
            ItemKind::Health => p.health < rules.max_health,
            ItemKind::Bullets => p.ammo[0] < rules.max_ammo[0],
            ItemKind::Rockets => p.ammo[1] < rules.max_ammo[1],
        }
}
