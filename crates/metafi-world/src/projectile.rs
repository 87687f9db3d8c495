//! Rockets in flight.

use crate::combat::explode;
use crate::command::PlayerId;
use crate::intent::{Hit, Launch};
use crate::map::Map;
use crate::math::Vec3;
use crate::neighbourhood::Neighbourhood;
use crate::rules::Rules;

/// A rocket.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Projectile {
    /// Assigned at launch in merge order; also orders this rocket's hits.
    pub id: u32,
    pub owner: PlayerId,
    pub origin: Vec3,
    pub velocity: Vec3,
    /// Milliseconds before it explodes in the air.
    pub life_ms: i32,
}

impl Projectile {
    pub fn launched(id: u32, l: &Launch, rules: &Rules) -> Projectile {
        Projectile {
            id,
            owner: l.owner,
            origin: l.origin,
            velocity: l.velocity,
            life_ms: rules.rocket_life_ms,
        }
    }

    /// Flies for `dt_ms`. Returns the rocket if still flying; otherwise it exploded (on a wall,
    /// a player, or at the end of its life) and its damage is in `hits`.
    pub fn advance(
        &self,
        dt_ms: i32,
        map: &Map,
        world: &impl Neighbourhood,
        rules: &Rules,
        hits: &mut Vec<Hit>,
    ) -> Option<Projectile> {
        let end = self.origin + self.velocity * (dt_ms as f32 / 1000.0);
        let wall = map.trace_ray(self.origin, end);
        let stop = self.origin + (end - self.origin) * wall;
        let direct = world.first_hit(self.origin, stop, self.owner);
        let life_ms = self.life_ms - dt_ms;
        let at = match direct {
            Some((_, f)) => self.origin + (stop - self.origin) * f,
            None if wall < 1.0 || life_ms <= 0 || !map.bounds().contains_point(end) => stop,
            None => {
                return Some(Projectile {
                    origin: end,
                    life_ms,
                    ..*self
                });
            }
        };
        // Step back from the surface so the blast's line-of-sight rays start in open space.
        let at = at - self.velocity.normalized();
        explode(self, at, direct.map(|d| d.0), map, world, rules, hits);
        None
    }
}
