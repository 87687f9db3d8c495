//! A player's simulated state.

use crate::command::{PlayerId, Weapon};
use crate::map::Map;
use crate::math::{Aabb, Vec3};
use crate::rules::{EYE_HEIGHT, PLAYER_HALF, Rules};

/// Bits of [`PlayerState::flags`].
pub mod flags {
    /// Standing on a floor: friction applies and jumping is possible.
    pub const ON_GROUND: u8 = 1;
    /// Dead, waiting to respawn: not solid, not a target, commands are dropped.
    pub const DEAD: u8 = 2;
    /// Jump was held in the last command: jumping again needs a release (no bunny-hop by holding).
    pub const JUMP_HELD: u8 = 4;
    /// Fired during this tick; shown to other clients as a muzzle flash.
    pub const FIRED: u8 = 8;
}

/// Everything the world remembers about one player between ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PlayerState {
    pub id: PlayerId,
    /// Centre of the collision box.
    pub origin: Vec3,
    pub velocity: Vec3,
    pub yaw: u16,
    pub pitch: i16,
    pub health: i32,
    /// `[bullets, rockets]`.
    pub ammo: [i32; 2],
    pub weapon: Weapon,
    pub flags: u8,
    /// Milliseconds until the weapon may fire again (≤ 0: ready).
    pub cooldown_ms: i32,
    /// Milliseconds until a dead player respawns.
    pub respawn_ms: i32,
    pub frags: i32,
    pub deaths: i32,
    /// Shots fired so far; numbers this player's intents so merges have a total order.
    pub shots: u32,
}

/// Number of 32-bit words in [`PlayerState::to_words`].
pub const PLAYER_WORDS: usize = 17;

impl PlayerState {
    /// A fresh player at `origin`.
    pub fn spawned(id: PlayerId, origin: Vec3, yaw: u16, rules: &Rules) -> PlayerState {
        PlayerState {
            id,
            origin,
            yaw,
            health: rules.max_health,
            ammo: rules.spawn_ammo,
            ..PlayerState::default()
        }
    }

    pub fn alive(&self) -> bool {
        self.flags & flags::DEAD == 0
    }

    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    pub fn set(&mut self, flag: u8, on: bool) {
        if on {
            self.flags |= flag;
        } else {
            self.flags &= !flag;
        }
    }

    pub fn bbox(&self) -> Aabb {
        Aabb::around(self.origin, PLAYER_HALF)
    }

    pub fn eye(&self) -> Vec3 {
        self.origin + Vec3::new(0.0, 0.0, EYE_HEIGHT)
    }

    /// Brings a dead player back at a spawn point chosen from its id and death count, so the
    /// choice is the same whichever thread runs it.
    pub fn respawn(&mut self, map: &Map, rules: &Rules) {
        let spawns = map.spawns();
        let pick =
            mix(u64::from(self.id.0) << 32 | u64::from(self.deaths as u32)) % spawns.len() as u64;
        let spawn = spawns[pick as usize];
        let keep = (self.frags, self.deaths, self.shots);
        *self = PlayerState::spawned(self.id, spawn.origin, spawn.yaw, rules);
        (self.frags, self.deaths, self.shots) = keep;
    }

    /// Kills the player (damage, or falling out of the map).
    pub fn die(&mut self, rules: &Rules) {
        self.set(flags::DEAD, true);
        self.set(flags::ON_GROUND, false);
        self.health = self.health.min(0);
        self.velocity = Vec3::ZERO;
        self.respawn_ms = rules.respawn_ms;
        self.deaths += 1;
    }

    /// The state as words, bit-exact: hashed for determinism checks and mirrored atomically by
    /// the lock-based benchmark baseline.
    pub fn to_words(&self) -> [u32; PLAYER_WORDS] {
        [
            self.id.0,
            self.origin.x.to_bits(),
            self.origin.y.to_bits(),
            self.origin.z.to_bits(),
            self.velocity.x.to_bits(),
            self.velocity.y.to_bits(),
            self.velocity.z.to_bits(),
            u32::from(self.yaw) | (u32::from(self.pitch as u16) << 16),
            self.health as u32,
            self.ammo[0] as u32,
            self.ammo[1] as u32,
            self.weapon.index() as u32 | (u32::from(self.flags) << 8),
            self.cooldown_ms as u32,
            self.respawn_ms as u32,
            self.frags as u32,
            self.deaths as u32,
            self.shots,
        ]
    }

    /// Inverse of [`PlayerState::to_words`].
    pub fn from_words(w: &[u32; PLAYER_WORDS]) -> PlayerState {
        PlayerState {
            id: PlayerId(w[0]),
            origin: Vec3::new(
                f32::from_bits(w[1]),
                f32::from_bits(w[2]),
                f32::from_bits(w[3]),
            ),
            velocity: Vec3::new(
                f32::from_bits(w[4]),
                f32::from_bits(w[5]),
                f32::from_bits(w[6]),
            ),
            yaw: w[7] as u16,
            pitch: (w[7] >> 16) as u16 as i16,
            health: w[8] as i32,
            ammo: [w[9] as i32, w[10] as i32],
            weapon: Weapon::from_index(w[11] as u8),
            flags: (w[11] >> 8) as u8,
            cooldown_ms: w[12] as i32,
            respawn_ms: w[13] as i32,
            frags: w[14] as i32,
            deaths: w[15] as i32,
            shots: w[16],
        }
    }
}

/// SplitMix64 finaliser: a cheap, well-mixed hash of one word.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip_bit_exact() {
        let mut p = PlayerState::spawned(
            PlayerId(7),
            Vec3::new(1.5, -2.25, 3.0),
            1234,
            &Rules::default(),
        );
        p.velocity = Vec3::new(-0.0, 1e-30, 320.0);
        p.pitch = -300;
        p.weapon = Weapon::RocketLauncher;
        p.flags = flags::FIRED | flags::ON_GROUND;
        p.cooldown_ms = -5;
        let back = PlayerState::from_words(&p.to_words());
        assert_eq!(back.to_words(), p.to_words());
        assert_eq!(back, p);
    }
}
