//! Criterion micro-benchmarks: the delta codec and one full world tick.
//!
//! `cargo bench -p metafi-world` — the scaling benchmark is `metafi-world-bench`.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use metafi_world::bots::{Behaviour, BotSpec, generate};
use metafi_world::delta::{decode, encode};
use metafi_world::snapshot::{NetEntity, PlayerView};
use metafi_world::{Command, Map, Snapshot, World, WorldConfig, map_gen};

/// Snapshot pairs two ticks apart, like the world's: 32 entities, about a third unchanged, the
/// rest moved by one- or two-byte deltas, over half of them turned, a few jumping or changing
/// weapon, one or two entering and leaving. Many different pairs, so the branch predictor
/// cannot learn one (a single repeated pair makes a branchy encoder look faster than it is).
fn snapshot_pairs() -> Vec<(Snapshot, Snapshot)> {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u32| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % u64::from(n)) as i32
    };
    (0..256)
        .map(|_| {
            let old: Vec<NetEntity> = (0..34)
                .map(|k| NetEntity {
                    key: k * 37 + next(30) as u32,
                    origin: [8000 + next(4000), 9000 + next(4000), 224 + next(64)],
                    yaw: next(65536) as u16,
                    pitch: (next(4000) - 2000) as i16,
                    flags: 4,
                    model: 1,
                })
                .collect();
            let mut new: Vec<NetEntity> = old[2..]
                .iter()
                .map(|&o| {
                    let mut e = o;
                    if next(3) > 0 {
                        e.origin[0] += next(600) - 300;
                        e.origin[1] += next(600) - 300;
                        if next(5) == 0 {
                            e.origin[2] += next(40);
                        }
                        if next(5) < 3 {
                            e.yaw = e.yaw.wrapping_add(next(4000) as u16);
                            e.pitch = e.pitch.wrapping_add(next(200) as i16);
                        }
                        if next(20) == 0 {
                            e.model = 2;
                        }
                    }
                    e
                })
                .collect();
            new.truncate(31);
            new.push(NetEntity {
                key: 40 * 37,
                origin: [8100, 9100, 224],
                ..NetEntity::default()
            });
            let snap = |tick, entities| Snapshot {
                tick,
                view: PlayerView::default(),
                entities,
            };
            (snap(10, old), snap(12, new))
        })
        .collect()
}

fn codec(c: &mut Criterion) {
    let pairs = snapshot_pairs();
    let mut out = Vec::with_capacity(512);
    c.bench_function("delta encode 32 entities (256 pairs)", |bench| {
        bench.iter(|| {
            for (a, b) in &pairs {
                out.clear();
                encode(Some(black_box(a)), black_box(b), &mut out);
            }
        })
    });
    let (a, b) = &pairs[0];
    out.clear();
    encode(Some(a), b, &mut out);
    c.bench_function("delta decode 32 entities", |bench| {
        bench.iter(|| decode(Some(black_box(a)), black_box(&out)))
    });
}

fn tick(c: &mut Criterion) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let map = Arc::new(
        Map::build(
            map_gen::open_for_players(1000, map_gen::AREA_PER_PLAYER, 1),
            &pool,
        )
        .expect("map"),
    );
    let spec = BotSpec {
        behaviour: Behaviour::Mixed,
        bots: 1000,
        duration_ms: 60_000,
        command_ms: 30,
        seed: 1,
    };
    let actions = generate(&map, &spec, &pool);
    let mut world = World::new(map, WorldConfig::default()).expect("world");
    let ids: Vec<_> = actions
        .bots
        .iter()
        .map(|b| world.join_at(b.spawn, b.yaw).expect("join"))
        .collect();
    let mut cursors = vec![0; ids.len()];
    let mut t = 0u32;
    c.bench_function("world tick, 1000 players, 1 thread", |bench| {
        bench.iter(|| {
            t += 1;
            let mut cmds = Vec::new();
            for (i, bot) in actions.bots.iter().enumerate() {
                let until = (t * 50) % 60_000;
                if until < 50 {
                    cursors[i] = 0;
                }
                cmds.extend(bot.due(&mut cursors[i], until).iter().map(|c| Command {
                    player: ids[i],
                    cmd: c.cmd,
                }));
            }
            world.tick(&pool, u64::from(t) * 50, &cmds)
        })
    });
}

criterion_group!(benches, codec, tick);
criterion_main!(benches);
