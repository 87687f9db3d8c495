//! The spatial questions the game rules ask about other players and items.
//!
//! The rules are written once against this trait. The parallel world answers from the grid over
//! the previous tick's immutable state; the benchmark baselines answer from Quake's areanode tree
//! over live state (with or without region locks). Same rules, different scheduling.

use crate::command::PlayerId;
use crate::math::{Aabb, Vec3};

/// Read access to other entities, as the rules need it.
pub trait Neighbourhood {
    /// Appends the boxes of living players other than `me` that overlap `area`.
    fn boxes_near(&self, area: &Aabb, me: PlayerId, out: &mut Vec<Aabb>);

    /// The living player (other than `skip`) whose box the segment `from → to` enters first,
    /// with the entry fraction. Ties go to the lower id.
    fn first_hit(&self, from: Vec3, to: Vec3, skip: PlayerId) -> Option<(PlayerId, f32)>;

    /// Calls `f(id, centre)` for every living player whose box is within `radius` of `center`.
    fn within(&self, center: Vec3, radius: f32, f: &mut dyn FnMut(PlayerId, Vec3));

    /// Whether item `index` can be picked up.
    fn item_available(&self, index: u32) -> bool;
}
