//! The snapshot delta codec: round trips, hostile input, and the world's own packet stream.

mod common;

use common::*;
use metafi_world::bots::{Behaviour, BotSpec, generate};
use metafi_world::delta::{DecodeError, baseline_tick, decode, encode};
use metafi_world::snapshot::{NetEntity, PlayerView};
use metafi_world::{Command, Map, Snapshot, World, WorldConfig, map_gen};
use proptest::prelude::*;

fn view() -> impl Strategy<Value = PlayerView> {
    (
        any::<[i32; 3]>(),
        any::<[i32; 3]>(),
        any::<(u16, i16, i32)>(),
        any::<[i32; 2]>(),
        any::<(u8, u8, i32, i32)>(),
    )
        .prop_map(
            |(origin, velocity, (yaw, pitch, health), ammo, (weapon, flags, frags, deaths))| {
                PlayerView {
                    origin,
                    velocity,
                    yaw,
                    pitch,
                    health,
                    ammo,
                    weapon,
                    flags,
                    frags,
                    deaths,
                }
            },
        )
}

fn entity() -> impl Strategy<Value = NetEntity> {
    (any::<u32>(), any::<[i32; 3]>(), any::<(u16, i16, u8, u8)>()).prop_map(
        |(key, origin, (yaw, pitch, flags, model))| NetEntity {
            key,
            origin,
            yaw,
            pitch,
            flags,
            model,
        },
    )
}

/// Two related snapshots: a shared pool of entities, each present in either or both, some moved.
fn pair() -> impl Strategy<Value = (Snapshot, Snapshot)> {
    let item = (entity(), 0u8..3, any::<bool>(), any::<[i8; 3]>());
    (
        1u32..1000,
        1u32..20,
        view(),
        view(),
        prop::collection::vec(item, 0..80),
    )
        .prop_map(|(base_tick, gap, va, vb, items)| {
            let (mut ea, mut eb) = (Vec::new(), Vec::new());
            for (e, presence, moved, d) in items {
                if presence != 1 {
                    ea.push(e);
                }
                if presence != 0 {
                    let mut e2 = e;
                    if moved {
                        for (o, dk) in e2.origin.iter_mut().zip(d) {
                            *o = o.wrapping_add(i32::from(dk));
                        }
                    }
                    eb.push(e2);
                }
            }
            for list in [&mut ea, &mut eb] {
                list.sort_by_key(|e| e.key);
                list.dedup_by_key(|e| e.key);
            }
            (
                Snapshot {
                    tick: base_tick,
                    view: va,
                    entities: ea,
                },
                Snapshot {
                    tick: base_tick + gap,
                    view: vb,
                    entities: eb,
                },
            )
        })
}

proptest! {
    #[test]
    fn decode_of_encode_against_a_baseline_is_the_snapshot((a, b) in pair()) {
        let mut bytes = Vec::new();
        encode(Some(&a), &b, &mut bytes);
        prop_assert_eq!(baseline_tick(&bytes), Ok(Some(a.tick)));
        prop_assert_eq!(decode(Some(&a), &bytes), Ok(b));
    }

    #[test]
    fn decode_of_a_full_encode_is_the_snapshot((_, b) in pair()) {
        let mut bytes = Vec::new();
        encode(None, &b, &mut bytes);
        prop_assert_eq!(decode(None, &bytes), Ok(b));
    }

    #[test]
    fn garbage_never_panics_the_decoder(bytes in prop::collection::vec(any::<u8>(), 0..600), (a, _) in pair()) {
        let _ = decode(None, &bytes);
        let _ = decode(Some(&a), &bytes);
        let _ = baseline_tick(&bytes);
    }

    #[test]
    fn corrupted_packets_never_panic_the_decoder((a, b) in pair(), flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
        let mut bytes = Vec::new();
        encode(Some(&a), &b, &mut bytes);
        for (i, v) in flips {
            let i = i.index(bytes.len());
            bytes[i] ^= v | 1;
        }
        let _ = decode(Some(&a), &bytes);
        bytes.truncate(bytes.len() / 2);
        let _ = decode(Some(&a), &bytes);
    }
}

#[test]
fn unchanged_entities_cost_nothing() {
    let e = |key| NetEntity {
        key,
        origin: [800, 900, 224],
        ..NetEntity::default()
    };
    let a = Snapshot {
        tick: 1,
        view: PlayerView::default(),
        entities: (0..30).map(e).collect(),
    };
    let b = Snapshot {
        tick: 2,
        ..a.clone()
    };
    let (mut full, mut delta) = (Vec::new(), Vec::new());
    encode(None, &b, &mut full);
    encode(Some(&a), &b, &mut delta);
    assert!(delta.len() <= 4, "{} bytes", delta.len());
    assert!(full.len() > 200);
}

#[test]
fn a_packet_for_another_baseline_is_refused() {
    let a = Snapshot {
        tick: 3,
        ..Snapshot::default()
    };
    let b = Snapshot {
        tick: 5,
        ..Snapshot::default()
    };
    let other = Snapshot {
        tick: 4,
        ..Snapshot::default()
    };
    let mut bytes = Vec::new();
    encode(Some(&a), &b, &mut bytes);
    assert_eq!(
        decode(Some(&other), &bytes),
        Err(DecodeError::Baseline {
            wanted: Some(3),
            given: Some(4)
        })
    );
    assert!(matches!(
        decode(None, &bytes),
        Err(DecodeError::Baseline { .. })
    ));
}

/// The world's packets, decoded by a client that acknowledges only some of them, rebuild exactly
/// the snapshots the server recorded as sent.
#[test]
fn world_packets_decode_to_the_snapshots_the_server_sent() {
    let p = pool(2);
    let map = std::sync::Arc::new(Map::build(map_gen::arena(5), &p).expect("map"));
    let spec = BotSpec {
        behaviour: Behaviour::Hunt,
        bots: 40,
        duration_ms: 6000,
        command_ms: 30,
        seed: 1,
    };
    let actions = generate(&map, &spec, &p);
    let mut w = World::new(map, WorldConfig::default()).expect("world");
    let ids: Vec<_> = actions
        .bots
        .iter()
        .map(|b| w.join_at(b.spawn, b.yaw).expect("join"))
        .collect();
    let mut cursors = vec![0; ids.len()];
    let mut mirrors: Vec<Mirror> = ids.iter().map(|_| Mirror::default()).collect();
    let (mut delta_bytes, mut full_bytes) = (0usize, 0usize);
    for t in 1..=100u32 {
        let mut cmds = Vec::new();
        for (i, bot) in actions.bots.iter().enumerate() {
            cmds.extend(bot.due(&mut cursors[i], t * 50).iter().map(|c| Command {
                player: ids[i],
                cmd: c.cmd,
            }));
        }
        w.tick(&p, u64::from(t) * 50, &cmds);
        for (i, &id) in ids.iter().enumerate() {
            let packet = w.packet(id).expect("packet");
            let snap = mirrors[i].receive(packet);
            assert_eq!(Some(snap), w.sent(id, t));
            if baseline_tick(packet).expect("header").is_some() {
                delta_bytes += packet.len();
            } else {
                full_bytes += packet.len();
            }
            // Lossy, late acknowledgements: every client skips some, by id.
            if !(t + i as u32).is_multiple_of(3) {
                w.ack(id, t).expect("ack");
            }
        }
    }
    assert!(delta_bytes > 0 && full_bytes > 0);
}

/// History rows are reused as players re-sort by cell, leave and join (ids are reused too):
/// every client still decodes exactly what the server recorded as sent, and a newcomer that
/// inherits a departed player's id starts from a full snapshot, never from the old baseline.
#[test]
fn packets_stay_exact_while_players_move_leave_and_join() {
    let p = pool(2);
    let map = std::sync::Arc::new(Map::build(map_gen::arena(9), &p).expect("map"));
    let spec = BotSpec {
        behaviour: Behaviour::Roam,
        bots: 48,
        duration_ms: 8000,
        command_ms: 30,
        seed: 3,
    };
    let actions = generate(&map, &spec, &p);
    let mut w = World::new(map, WorldConfig::default()).expect("world");
    let mut ids: Vec<_> = actions
        .bots
        .iter()
        .map(|b| w.join_at(b.spawn, b.yaw).expect("join"))
        .collect();
    let mut cursors = vec![0; ids.len()];
    let mut mirrors: Vec<Mirror> = ids.iter().map(|_| Mirror::default()).collect();
    for t in 1..=120u32 {
        if t % 20 == 0 {
            // Five players leave and five join; the newcomers get the freed ids.
            for k in 0..5 {
                let slot = (t as usize / 20 * 7 + k * 9) % ids.len();
                w.leave(ids[slot]).expect("leave");
                ids[slot] = w.join().expect("join");
                mirrors[slot] = Mirror::default();
            }
        }
        let mut cmds = Vec::new();
        for (i, bot) in actions.bots.iter().enumerate() {
            cmds.extend(bot.due(&mut cursors[i], t * 50).iter().map(|c| Command {
                player: ids[i],
                cmd: c.cmd,
            }));
        }
        w.tick(&p, u64::from(t) * 50, &cmds);
        for (i, &id) in ids.iter().enumerate() {
            let packet = w.packet(id).expect("packet");
            let snap = mirrors[i].receive(packet);
            assert_eq!(Some(snap), w.sent(id, t), "client {i} at tick {t}");
            if t > 2 && !(t + i as u32).is_multiple_of(5) {
                w.ack(id, t - 2).expect("ack");
            }
        }
    }
}

/// Packets with 128 records or more need a longer record count than the one byte the encoder
/// reserves first; they round-trip too, up to the decoder's limit.
#[test]
fn snapshots_with_many_records_round_trip() {
    let e = |key: u32, x: i32| NetEntity {
        key,
        origin: [x, -x, 7],
        yaw: key as u16,
        ..NetEntity::default()
    };
    for n in [127u32, 128, 300, 4096] {
        let a = Snapshot {
            tick: 1,
            view: PlayerView::default(),
            entities: (0..n).map(|k| e(k * 2, 1)).collect(),
        };
        let b = Snapshot {
            tick: 2,
            view: PlayerView::default(),
            entities: (0..n).map(|k| e(k * 2 + (k % 2), 5)).collect(),
        };
        let mut bytes = Vec::new();
        encode(None, &b, &mut bytes);
        assert_eq!(decode(None, &bytes), Ok(b.clone()), "{n} full");
        bytes.clear();
        encode(Some(&a), &b, &mut bytes);
        assert_eq!(decode(Some(&a), &bytes), Ok(b), "{n} delta");
    }
}

/// Deterministic pseudo-random snapshot pairs over the whole value range: one-, two- and
/// five-byte varints, adds, removes, changes of every field combination, big key gaps, full
/// and delta packets. The pinned digests below were taken from the byte-loop encoder, so any
/// rewrite of the encoder must produce exactly the same bytes.
fn pinned_packets() -> Vec<Vec<u8>> {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut packets = Vec::new();
    for round in 0..600u32 {
        let scale = [0x7f_u64, 0x3fff, 0x1f_ffff, 0xffff_ffff][(round % 4) as usize];
        // Wrapping, as the digest was taken in release mode (where the full-range case wraps).
        let small =
            |n: &mut dyn FnMut() -> u64| ((n() & scale) as i32).wrapping_sub((scale / 2) as i32);
        let view = |n: &mut dyn FnMut() -> u64| PlayerView {
            origin: [n() as i32, n() as i32 >> 20, 7],
            velocity: [(n() % 300) as i32, 0, -(n() as i32 >> 25)],
            yaw: n() as u16,
            pitch: n() as i16,
            health: (n() % 200) as i32,
            ammo: [(n() % 50) as i32, 3],
            weapon: (n() % 3) as u8,
            flags: (n() % 2) as u8,
            frags: (n() % 4) as i32,
            deaths: 0,
        };
        let va = view(&mut next);
        let vb = if round % 3 == 0 { va } else { view(&mut next) };
        let mut old = Vec::new();
        let mut new = Vec::new();
        let mut key = 0u32;
        let count = next() % 50;
        for _ in 0..count {
            key += 1 + (next() % [3, 40, 300, 70_000][(round % 4) as usize]) as u32;
            let e = NetEntity {
                key,
                origin: [next() as i32 >> 8, next() as i32, (next() % 512) as i32],
                yaw: next() as u16,
                pitch: next() as i16,
                flags: (next() % 4) as u8,
                model: (next() % 3) as u8,
            };
            let presence = next() % 5;
            if presence != 0 {
                old.push(e);
            }
            if presence != 1 {
                let mut e2 = e;
                let bits = next();
                for k in 0..3 {
                    if bits >> k & 1 != 0 {
                        e2.origin[k] = e2.origin[k].wrapping_add(small(&mut next));
                    }
                }
                if bits & 8 != 0 {
                    e2.yaw = e2.yaw.wrapping_add(small(&mut next) as u16);
                }
                if bits & 16 != 0 {
                    e2.pitch = e2.pitch.wrapping_add(small(&mut next) as i16);
                }
                if bits & 32 != 0 {
                    e2.flags ^= 1;
                }
                if bits & 64 != 0 {
                    e2.model ^= 2;
                }
                new.push(e2);
            }
        }
        let a = Snapshot {
            tick: 1000 + round,
            view: va,
            entities: old,
        };
        let b = Snapshot {
            tick: 1002 + round,
            view: vb,
            entities: new,
        };
        let mut bytes = Vec::new();
        encode(Some(&a), &b, &mut bytes);
        assert_eq!(decode(Some(&a), &bytes), Ok(b.clone()), "round {round}");
        packets.push(bytes);
        let mut full = Vec::new();
        encode(None, &b, &mut full);
        packets.push(full);
    }
    packets
}

/// The encoder's output is pinned byte for byte: a digest over many packets, and the exact
/// bytes of one small one.
#[test]
fn encoder_output_is_pinned() {
    let packets = pinned_packets();
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    let mut total = 0usize;
    for p in &packets {
        for &b in p.iter().chain(&(p.len() as u32).to_le_bytes()) {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        total += p.len();
    }
    assert_eq!(
        (total, hash),
        (439_077, 10_315_557_778_340_924_132),
        "encoder output changed"
    );

    let e = |key: u32, x: i32, yaw: u16| NetEntity {
        key,
        origin: [x, 2 * x, 3],
        yaw,
        pitch: -5,
        flags: 1,
        model: 2,
    };
    let a = Snapshot {
        tick: 300,
        view: PlayerView::default(),
        entities: vec![e(1, 10, 0), e(5, 20, 100), e(9, 30, 0), e(200, 1, 1)],
    };
    let mut b = a.clone();
    b.tick = 302;
    b.view.health = 100;
    b.view.origin = [1000, -1000, 70_000];
    b.entities = vec![
        e(1, 10, 0),
        e(5, 21, 65_000),
        e(200, -9000, 1),
        e(300, 8, 8),
    ];
    let mut bytes = Vec::new();
    encode(Some(&a), &b, &mut bytes);
    assert_eq!(
        bytes,
        [
            174, 2, 2, 9, 208, 15, 207, 15, 224, 197, 8, 200, 1, 4, 5, 139, 2, 4, 247, 9, 0, 3, 0,
            190, 1, 131, 209, 140, 1, 163, 153, 2, 99, 95, 16, 32, 6, 16, 9, 1, 2
        ],
        "delta packet changed"
    );
}
