//! Seeded map generators: a small dense arena (the seeds' crowded deathmatch) and a large open
//! map sized for a player count at a fixed density.
//!
//! Maps are built from the same brush kinds a hand-made map would use: a floor slab, perimeter
//! walls, free-standing walls, pillars, crates (16 units: walk up; 32: jump onto), raised
//! platforms reached by 16-unit stairs, and (open map) rooms with doorways. Spawn points and
//! items are placed on clear floor.

use crate::map_spec::{BoxSpec, ItemKind, ItemSpec, MAP_FORMAT, MapSpec, SpawnSpec};
use crate::math::{Aabb, Vec3};
use crate::rng::Rng;
use crate::rules::{ITEM_HALF, PLAYER_HALF};

/// Side of the small dense arena.
pub const ARENA_SIDE: f32 = 3072.0;
/// Default floor area per player for [`open_for_players`] (a 512 × 512 square).
pub const AREA_PER_PLAYER: f32 = 512.0 * 512.0;
const WALL: f32 = 64.0;
const CEILING: f32 = 1024.0;
const STEP: f32 = 16.0;

/// The small dense arena: 3072 × 3072 with walls, pillars, crates and platforms every few
/// hundred units.
pub fn arena(seed: u64) -> MapSpec {
    let mut g = Builder::new("arena", ARENA_SIDE, seed);
    for _ in 0..28 {
        g.wall();
    }
    for _ in 0..16 {
        g.pillar();
    }
    for _ in 0..8 {
        g.platform();
    }
    for _ in 0..24 {
        g.crate_box();
    }
    g.place_points(48, 24);
    g.finish()
}

/// A large open map of `side × side` units: one feature (room, wall, platform, pillars, crates)
/// per 1024-unit block on average, one spawn point per 512-unit block and an item per ~3 blocks.
pub fn open(side: f32, seed: u64) -> MapSpec {
    let side = (side / 512.0).ceil().max(8.0) * 512.0;
    let mut g = Builder::new("open", side, seed);
    let blocks = ((side / 1024.0) as u32).pow(2);
    for _ in 0..blocks {
        match g.rng.below(10) {
            0 | 1 => g.room(),
            2 | 3 => g.wall(),
            4 => g.platform(),
            5 => (0..3).for_each(|_| g.pillar()),
            6 | 7 => (0..3).for_each(|_| g.crate_box()),
            _ => {}
        }
    }
    let spawns = ((side / 512.0) as usize).pow(2);
    g.place_points(spawns, (blocks / 3).max(8) as usize);
    g.finish()
}

/// An open map whose floor area gives each of `players` about `area_per_player` units².
pub fn open_for_players(players: usize, area_per_player: f32, seed: u64) -> MapSpec {
    open((players as f32 * area_per_player).sqrt().max(4096.0), seed)
}

struct Builder {
    name: &'static str,
    side: f32,
    rng: Rng,
    brushes: Vec<Aabb>,
    spawns: Vec<SpawnSpec>,
    items: Vec<ItemSpec>,
}

impl Builder {
    fn new(name: &'static str, side: f32, seed: u64) -> Builder {
        let mut b = Builder {
            name,
            side,
            rng: Rng::new(seed),
            brushes: Vec::new(),
            spawns: Vec::new(),
            items: Vec::new(),
        };
        b.add([0.0, 0.0, -64.0], [side, side, 0.0]);
        b.add([0.0, 0.0, 0.0], [side, WALL, CEILING - 1.0]);
        b.add([0.0, side - WALL, 0.0], [side, side, CEILING - 1.0]);
        b.add([0.0, WALL, 0.0], [WALL, side - WALL, CEILING - 1.0]);
        b.add([side - WALL, WALL, 0.0], [side, side - WALL, CEILING - 1.0]);
        b
    }

    fn add(&mut self, min: [f32; 3], max: [f32; 3]) {
        self.brushes.push(Aabb::new(
            Vec3::new(min[0], min[1], min[2]),
            Vec3::new(max[0], max[1], max[2]),
        ));
    }

    /// A lattice point at least `margin` inside the perimeter.
    fn spot(&mut self, margin: f32) -> (f32, f32) {
        let lo = WALL + margin;
        let cells = ((self.side - 2.0 * lo) / 64.0).max(1.0) as u32;
        let x = lo + 64.0 * self.rng.below(cells) as f32;
        let y = lo + 64.0 * self.rng.below(cells) as f32;
        (x, y)
    }

    fn wall(&mut self) {
        let (x, y) = self.spot(128.0);
        let len = 256.0 * (1 + self.rng.below(4)) as f32;
        let h = 128.0 + 64.0 * self.rng.below(4) as f32;
        if self.rng.chance(0.5) {
            self.add([x, y, 0.0], [(x + len).min(self.side - WALL), y + 32.0, h]);
        } else {
            self.add([x, y, 0.0], [x + 32.0, (y + len).min(self.side - WALL), h]);
        }
    }

    fn pillar(&mut self) {
        let (x, y) = self.spot(128.0);
        self.add([x, y, 0.0], [x + 64.0, y + 64.0, 256.0]);
    }

    fn crate_box(&mut self) {
        let (x, y) = self.spot(128.0);
        let h = if self.rng.chance(0.5) { STEP } else { 32.0 };
        self.add([x, y, 0.0], [x + 64.0, y + 64.0, h]);
    }

    /// A raised block with a staircase of 16-unit steps up one side.
    fn platform(&mut self) {
        let (x, y) = self.spot(384.0);
        let steps = 4 + self.rng.below(5);
        let h = STEP * steps as f32;
        self.add([x, y, 0.0], [x + 256.0, y + 256.0, h]);
        for i in 1..steps {
            let x1 = x - 32.0 * (steps - i - 1) as f32;
            self.add([x1 - 32.0, y + 64.0, 0.0], [x1, y + 192.0, STEP * i as f32]);
        }
    }

    /// Four walls with a doorway in each.
    fn room(&mut self) {
        let (x, y) = self.spot(128.0);
        let w = (384.0 + 128.0 * self.rng.below(4) as f32).min(self.side - WALL - 64.0 - x);
        let d = (384.0 + 128.0 * self.rng.below(4) as f32).min(self.side - WALL - 64.0 - y);
        if w < 256.0 || d < 256.0 {
            return;
        }
        let (h, t, door) = (192.0, 32.0, 128.0);
        let (mx, my) = (x + w / 2.0, y + d / 2.0);
        self.add([x, y, 0.0], [mx - door / 2.0, y + t, h]);
        self.add([mx + door / 2.0, y, 0.0], [x + w, y + t, h]);
        self.add([x, y + d - t, 0.0], [mx - door / 2.0, y + d, h]);
        self.add([mx + door / 2.0, y + d - t, 0.0], [x + w, y + d, h]);
        self.add([x, y + t, 0.0], [x + t, my - door / 2.0, h]);
        self.add([x, my + door / 2.0, 0.0], [x + t, y + d - t, h]);
        self.add([x + w - t, y + t, 0.0], [x + w, my - door / 2.0, h]);
        self.add([x + w - t, my + door / 2.0, 0.0], [x + w, y + d - t, h]);
    }

    fn clear(&self, area: &Aabb) -> bool {
        !self.brushes[1..].iter().any(|b| b.overlaps(area))
    }

    /// Spawns and items on clear floor; gives up on a point after a few tries.
    fn place_points(&mut self, spawns: usize, items: usize) {
        let kinds = [ItemKind::Health, ItemKind::Bullets, ItemKind::Rockets];
        for i in 0..spawns + items {
            for _ in 0..16 {
                let (x, y) = self.spot(32.0);
                let (x, y) = (x + 32.0, y + 32.0);
                if i < spawns {
                    let z = PLAYER_HALF.z + 1.0 / 16.0;
                    let c = Vec3::new(x, y, z);
                    if self.clear(&Aabb::around(c, PLAYER_HALF + Vec3::splat(8.0))) {
                        self.spawns.push(SpawnSpec {
                            origin: [x, y, z],
                            yaw: self.rng.range(0.0, 360.0).floor(),
                        });
                        break;
                    }
                } else {
                    let z = ITEM_HALF.z + 1.0 / 16.0;
                    if self.clear(&Aabb::around(
                        Vec3::new(x, y, z),
                        ITEM_HALF + Vec3::splat(8.0),
                    )) {
                        self.items.push(ItemSpec {
                            kind: kinds[i % 3],
                            origin: [x, y, z],
                        });
                        break;
                    }
                }
            }
        }
        if self.spawns.is_empty() {
            // The perimeter margin is always clear of features placed on the lattice.
            self.spawns.push(SpawnSpec {
                origin: [WALL + 40.0, WALL + 40.0, PLAYER_HALF.z + 1.0 / 16.0],
                yaw: 0.0,
            });
        }
    }

    fn finish(self) -> MapSpec {
        MapSpec {
            format: MAP_FORMAT.into(),
            name: self.name.into(),
            bounds: BoxSpec {
                min: [0.0, 0.0, -64.0],
                max: [self.side, self.side, CEILING],
            },
            brushes: self.brushes.iter().map(BoxSpec::from_aabb).collect(),
            spawns: self.spawns,
            items: self.items,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generators_are_seeded_and_valid() {
        assert_eq!(arena(7), arena(7));
        assert_ne!(arena(7), arena(8));
        arena(7).validate().expect("arena is valid");
        let big = open_for_players(2000, AREA_PER_PLAYER, 3);
        big.validate().expect("open map is valid");
        assert!(big.bounds.max[0] >= 22_000.0);
        assert!(big.spawns.len() > 1000);
    }
}
