//! A player's state as atomics, for the region-lock baseline.
//!
//! The seed's C server kept game objects in plain shared memory and relied on region locks for
//! exclusion. Safe Rust needs interior mutability to do the same; relaxed atomic words compile to
//! plain loads and stores on x86, so this costs what the C code paid and no more. Exclusion still
//! comes from the region locks, exactly as in the seed (and so do its races, for objects linked
//! to parent nodes).

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use metafi_world::PlayerState;
use metafi_world::player::PLAYER_WORDS;
use metafi_world::snapshot::NetEntity;

/// Word indices [`SharedPlayer::glance`] reads: id, origin, angles, weapon and flags.
const GLANCE: [usize; 6] = [0, 1, 2, 3, 7, 11];

#[derive(Debug)]
pub struct SharedPlayer([AtomicU32; PLAYER_WORDS]);

impl SharedPlayer {
    pub fn new(p: &PlayerState) -> SharedPlayer {
        SharedPlayer(p.to_words().map(AtomicU32::new))
    }

    pub fn load(&self) -> PlayerState {
        PlayerState::from_words(&std::array::from_fn(|k| self.0[k].load(Relaxed)))
    }

    pub fn store(&self, p: &PlayerState) {
        for (cell, w) in self.0.iter().zip(p.to_words()) {
            cell.store(w, Relaxed);
        }
    }

    /// Only what collision, hit tests and snapshots of others need (id, origin, angles, weapon,
    /// flags); the other fields are zero.
    pub fn glance(&self) -> PlayerState {
        let mut w = [0u32; PLAYER_WORDS];
        for k in GLANCE {
            w[k] = self.0[k].load(Relaxed);
        }
        PlayerState::from_words(&w)
    }
}

/// A player's wire state as atomics: written by the owning thread at the end of its requests,
/// read by every thread's replies, so each player is converted once per frame, not per client.
#[derive(Debug, Default)]
pub struct SharedNet([AtomicU32; 6]);

impl SharedNet {
    pub fn store(&self, e: &NetEntity) {
        let w = [
            e.key,
            e.origin[0] as u32,
            e.origin[1] as u32,
            e.origin[2] as u32,
            u32::from(e.yaw) | u32::from(e.pitch as u16) << 16,
            u32::from(e.flags) | u32::from(e.model) << 8,
        ];
        for (cell, v) in self.0.iter().zip(w) {
            cell.store(v, Relaxed);
        }
    }

    pub fn load(&self) -> NetEntity {
        let w: [u32; 6] = std::array::from_fn(|k| self.0[k].load(Relaxed));
        NetEntity {
            key: w[0],
            origin: [w[1] as i32, w[2] as i32, w[3] as i32],
            yaw: w[4] as u16,
            pitch: (w[4] >> 16) as u16 as i16,
            flags: w[5] as u8,
            model: (w[5] >> 8) as u8,
        }
    }
}
