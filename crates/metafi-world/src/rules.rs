//! Game rules: the numbers behind movement, weapons, pickups and respawning.
//!
//! Defaults follow QuakeWorld (`sv_gravity 800`, `sv_maxspeed 320`, `sv_accelerate 10`,
//! `sv_friction 4`, 18-unit steps) so the simulation feels like the game the seeds measured.

use crate::map_spec::ItemKind;
use crate::math::Vec3;

/// Half-size of a player's collision box; the player's origin is its centre.
pub const PLAYER_HALF: Vec3 = Vec3::new(16.0, 16.0, 28.0);
/// Eye height above the player's centre: where shots start and views are taken from.
pub const EYE_HEIGHT: f32 = 20.0;
/// Half-size of a pickup's touch box.
pub const ITEM_HALF: Vec3 = Vec3::new(16.0, 16.0, 16.0);

/// Tunable rules; every scheduler (ours and the benchmark baselines) uses the same values.
#[derive(Clone, Debug, PartialEq)]
pub struct Rules {
    /// Downward acceleration, units/s².
    pub gravity: f32,
    /// Top running speed, units/s.
    pub max_speed: f32,
    /// Ground acceleration factor (Quake `sv_accelerate`).
    pub accelerate: f32,
    /// Air acceleration factor; air control is capped at [`Rules::air_wish_speed`].
    pub air_accelerate: f32,
    /// Largest wished speed in the air (QuakeWorld's 30 units/s air control).
    pub air_wish_speed: f32,
    /// Ground friction factor.
    pub friction: f32,
    /// Below this speed friction acts as if moving this fast, so players stop quickly.
    pub stop_speed: f32,
    /// Upward speed given by a jump.
    pub jump_velocity: f32,
    /// Tallest ledge a walking player climbs without jumping.
    pub step_height: f32,
    /// Any velocity component is clamped to this (Quake `sv_maxvelocity`).
    pub max_velocity: f32,
    /// Milliseconds of commands one player may run per tick; more are dropped (speed-hack guard).
    pub max_command_ms_per_tick: u32,
    pub max_health: i32,
    pub respawn_ms: i32,
    /// Ammunition per weapon at spawn and its cap: `[bullets, rockets]`.
    pub spawn_ammo: [i32; 2],
    pub max_ammo: [i32; 2],
    pub hitscan_damage: i32,
    pub hitscan_refire_ms: i32,
    pub hitscan_range: f32,
    pub hitscan_knockback: f32,
    pub rocket_speed: f32,
    pub rocket_refire_ms: i32,
    pub rocket_life_ms: i32,
    /// Damage to a player the rocket touches.
    pub rocket_direct_damage: i32,
    /// Damage at the centre of the explosion, falling linearly to zero at the radius.
    pub rocket_splash_damage: f32,
    pub rocket_splash_radius: f32,
    /// Knockback speed per point of damage.
    pub knockback_per_damage: f32,
    pub health_pickup: i32,
    pub bullets_pickup: i32,
    pub rockets_pickup: i32,
    pub item_respawn_ms: i32,
}

impl Default for Rules {
    fn default() -> Rules {
        Rules {
            gravity: 800.0,
            max_speed: 320.0,
            accelerate: 10.0,
            air_accelerate: 10.0,
            air_wish_speed: 30.0,
            friction: 4.0,
            stop_speed: 100.0,
            jump_velocity: 270.0,
            step_height: 18.0,
            max_velocity: 2000.0,
            max_command_ms_per_tick: 120,
            max_health: 100,
            respawn_ms: 2000,
            spawn_ammo: [100, 10],
            max_ammo: [200, 50],
            hitscan_damage: 8,
            hitscan_refire_ms: 100,
            hitscan_range: 4096.0,
            hitscan_knockback: 2.0,
            rocket_speed: 900.0,
            rocket_refire_ms: 800,
            rocket_life_ms: 4000,
            rocket_direct_damage: 100,
            rocket_splash_damage: 100.0,
            rocket_splash_radius: 160.0,
            knockback_per_damage: 4.0,
            health_pickup: 25,
            bullets_pickup: 50,
            rockets_pickup: 5,
            item_respawn_ms: 15_000,
        }
    }
}

impl Rules {
    /// Splash damage at `distance` from the explosion (distance to the target's box).
    pub fn splash_damage(&self, distance: f32) -> f32 {
        if distance >= self.rocket_splash_radius {
            return 0.0;
        }
        self.rocket_splash_damage * (1.0 - distance.max(0.0) / self.rocket_splash_radius)
    }

    pub fn pickup_amount(&self, kind: ItemKind) -> i32 {
        match kind {
            ItemKind::Health => self.health_pickup,
            ItemKind::Bullets => self.bullets_pickup,
            ItemKind::Rockets => self.rockets_pickup,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splash_damage_falls_off_linearly_to_zero_at_radius() {
        let r = Rules::default();
        assert_eq!(r.splash_damage(0.0), 100.0);
        assert_eq!(r.splash_damage(80.0), 50.0);
        assert_eq!(r.splash_damage(160.0), 0.0);
        assert!(r.splash_damage(40.0) > r.splash_damage(120.0));
    }
}
