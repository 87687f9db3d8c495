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

fn snapshots() -> (Snapshot, Snapshot) {
    let e = |key: u32, dx: i32| NetEntity {
        key,
        origin: [8000 + dx, 9000 - dx, 224],
        yaw: key as u16,
        ..NetEntity::default()
    };
    let a = Snapshot {
        tick: 10,
        view: PlayerView::default(),
        entities: (0..32).map(|k| e(k * 7, 0)).collect(),
    };
    let b = Snapshot {
        tick: 12,
        view: PlayerView::default(),
        entities: (2..34).map(|k| e(k * 7, k as i32)).collect(),
    };
    (a, b)
}

fn codec(c: &mut Criterion) {
    let (a, b) = snapshots();
    let mut out = Vec::with_capacity(512);
    c.bench_function("delta encode 32 entities", |bench| {
        bench.iter(|| {
            out.clear();
            encode(Some(black_box(&a)), black_box(&b), &mut out);
        })
    });
    out.clear();
    encode(Some(&a), &b, &mut out);
    c.bench_function("delta decode 32 entities", |bench| {
        bench.iter(|| decode(Some(black_box(&a)), black_box(&out)))
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
