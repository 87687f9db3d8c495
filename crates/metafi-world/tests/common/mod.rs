//! Fixtures shared by the integration tests: small hand-built maps, pools and worlds.
#![allow(dead_code)] // each test binary uses a different subset

use std::sync::Arc;

use metafi_world::map_spec::{BoxSpec, ItemSpec, MAP_FORMAT, SpawnSpec};
use metafi_world::rules::PLAYER_HALF;
use metafi_world::{
    Buttons, Command, ItemKind, Map, MapSpec, PlayerId, UserCmd, Vec3, Weapon, World, WorldConfig,
};
use rayon::ThreadPool;

/// Height of a standing player's centre above a floor at z = 0 (with the trace epsilon gap).
pub const STAND_Z: f32 = PLAYER_HALF.z + 1.0 / 32.0;

pub fn pool(threads: usize) -> ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool")
}

pub fn boxed(min: [f32; 3], max: [f32; 3]) -> BoxSpec {
    BoxSpec { min, max }
}

/// A 2048 × 2048 room: floor at z = 0, perimeter walls, plus `extra` brushes and `items`.
pub fn room(extra: &[BoxSpec], items: &[(ItemKind, [f32; 3])]) -> Arc<Map> {
    let mut brushes = vec![
        boxed([0.0, 0.0, -64.0], [2048.0, 2048.0, 0.0]),
        boxed([0.0, 0.0, 0.0], [2048.0, 32.0, 512.0]),
        boxed([0.0, 2016.0, 0.0], [2048.0, 2048.0, 512.0]),
        boxed([0.0, 0.0, 0.0], [32.0, 2048.0, 512.0]),
        boxed([2016.0, 0.0, 0.0], [2048.0, 2048.0, 512.0]),
    ];
    brushes.extend_from_slice(extra);
    let spec = MapSpec {
        format: MAP_FORMAT.into(),
        name: "test-room".into(),
        bounds: boxed([0.0, 0.0, -64.0], [2048.0, 2048.0, 1024.0]),
        brushes,
        spawns: vec![SpawnSpec {
            origin: [1000.0, 1000.0, STAND_Z],
            yaw: 0.0,
        }],
        items: items
            .iter()
            .map(|&(kind, origin)| ItemSpec { kind, origin })
            .collect(),
    };
    Arc::new(Map::build(spec, &pool(1)).expect("test map is valid"))
}

pub fn world(map: Arc<Map>) -> World {
    World::new(map, WorldConfig::default()).expect("default config is valid")
}

/// Yaw in angle units from degrees.
pub fn deg(d: f32) -> u16 {
    ((d / 360.0 * 65536.0).round() as i64).rem_euclid(65536) as u16
}

pub fn walk(yaw_deg: f32, forward: i16) -> UserCmd {
    UserCmd {
        msec: 25,
        yaw: deg(yaw_deg),
        forward,
        ..UserCmd::default()
    }
}

pub fn shoot(yaw_deg: f32, weapon: Weapon) -> UserCmd {
    UserCmd {
        msec: 25,
        yaw: deg(yaw_deg),
        buttons: Buttons::ATTACK,
        weapon,
        ..UserCmd::default()
    }
}

/// Runs `ticks` ticks of 50 ms, giving `player` two copies of `cmd` per tick.
pub fn run(world: &mut World, pool: &ThreadPool, ticks: u32, inputs: &[(PlayerId, UserCmd)]) {
    for _ in 0..ticks {
        let now = u64::from(world.current_tick() + 1) * 50;
        let cmds: Vec<Command> = inputs
            .iter()
            .flat_map(|&(player, cmd)| [Command { player, cmd }; 2])
            .collect();
        world.tick(pool, now, &cmds);
    }
}

pub fn at(x: f32, y: f32) -> Vec3 {
    Vec3::new(x, y, STAND_Z)
}

/// A client's side of the snapshot stream: decodes packets against the baselines it kept.
#[derive(Default)]
pub struct Mirror {
    pub history: std::collections::HashMap<u32, metafi_world::Snapshot>,
}

impl Mirror {
    pub fn receive(&mut self, packet: &[u8]) -> metafi_world::Snapshot {
        let base_tick = metafi_world::delta::baseline_tick(packet).expect("header");
        let base = base_tick.map(|t| self.history.get(&t).expect("client kept the baseline"));
        let snap = metafi_world::delta::decode(base, packet).expect("server packets decode");
        self.history.insert(snap.tick, snap.clone());
        snap
    }
}

/// Ticks once with `inputs`, then has every listed client receive and acknowledge its packet.
pub fn tick_and_receive(
    world: &mut World,
    pool: &ThreadPool,
    inputs: &[(PlayerId, UserCmd)],
    mirrors: &mut [(PlayerId, Mirror)],
) -> Vec<metafi_world::Snapshot> {
    let now = u64::from(world.current_tick() + 1) * 50;
    let cmds: Vec<Command> = inputs
        .iter()
        .flat_map(|&(player, cmd)| [Command { player, cmd }; 2])
        .collect();
    let tick = world.tick(pool, now, &cmds).tick;
    mirrors
        .iter_mut()
        .map(|(id, m)| {
            let snap = m.receive(world.packet(*id).expect("client exists"));
            world.ack(*id, tick).expect("client exists");
            snap
        })
        .collect()
}
