//! Same inputs, same world, whatever the number of threads.

mod common;

use std::sync::Arc;

use common::pool;
use metafi_world::bots::{Behaviour, BotSpec, generate};
use metafi_world::{ActionFile, Command, Map, World, WorldConfig, map_gen};

struct Run {
    hashes: Vec<u64>,
    bytes: Vec<u64>,
    hits: usize,
    kills: usize,
    launches: usize,
    pickups: usize,
}

fn replay(map: &Arc<Map>, actions: &ActionFile, threads: usize, ticks: u32) -> Run {
    let p = pool(threads);
    let mut w = World::new(map.clone(), WorldConfig::default()).expect("world");
    let ids: Vec<_> = actions
        .bots
        .iter()
        .map(|b| w.join_at(b.spawn, b.yaw).expect("join"))
        .collect();
    let mut cursors = vec![0; ids.len()];
    let mut run = Run {
        hashes: Vec::new(),
        bytes: Vec::new(),
        hits: 0,
        kills: 0,
        launches: 0,
        pickups: 0,
    };
    for t in 1..=ticks {
        let mut cmds = Vec::new();
        for (i, bot) in actions.bots.iter().enumerate() {
            cmds.extend(bot.due(&mut cursors[i], t * 50).iter().map(|c| Command {
                player: ids[i],
                cmd: c.cmd,
            }));
        }
        let sum = w.tick(&p, u64::from(t) * 50, &cmds);
        for (i, &id) in ids.iter().enumerate() {
            if !(t as usize + i).is_multiple_of(4) {
                w.ack(id, t).expect("ack");
            }
        }
        run.hashes.push(w.state_hash());
        run.bytes.push(sum.snapshot_bytes);
        run.hits += sum.hits;
        run.kills += sum.kills;
        run.launches += sum.launches;
        run.pickups += sum.pickups;
    }
    run
}

#[test]
fn state_hash_is_identical_for_1_2_and_4_threads_over_hundreds_of_ticks_with_combat() {
    let build = pool(2);
    let map = Arc::new(Map::build(map_gen::arena(11), &build).expect("map"));
    let spec = BotSpec {
        behaviour: Behaviour::Mixed,
        bots: 96,
        duration_ms: 20_000,
        command_ms: 30,
        seed: 42,
    };
    let actions = generate(&map, &spec, &build);
    let ticks = 300;
    let one = replay(&map, &actions, 1, ticks);
    assert!(
        one.hits > 100 && one.kills > 5 && one.launches > 20,
        "combat happened: {} hits, {} kills",
        one.hits,
        one.kills
    );
    assert!(one.pickups > 0, "pickups happened");
    for threads in [2, 4] {
        let other = replay(&map, &actions, threads, ticks);
        let first_diff = one
            .hashes
            .iter()
            .zip(&other.hashes)
            .position(|(a, b)| a != b);
        assert_eq!(first_diff, None, "{threads} threads diverged");
        assert_eq!(
            one.bytes, other.bytes,
            "{threads} threads sent different snapshots"
        );
    }
}

#[test]
fn converging_crowd_is_deterministic_too() {
    let build = pool(2);
    let map = Arc::new(Map::build(map_gen::open(8192.0, 3), &build).expect("map"));
    let spec = BotSpec {
        behaviour: Behaviour::Converge,
        bots: 300,
        duration_ms: 12_000,
        command_ms: 30,
        seed: 7,
    };
    let actions = generate(&map, &spec, &build);
    let one = replay(&map, &actions, 1, 200);
    let two = replay(&map, &actions, 2, 200);
    assert_eq!(one.hashes, two.hashes);
    assert!(one.hits > 0);
}
