//! Interest management: what each client is told about, and how often.

mod common;

use common::*;
use metafi_world::snapshot::{EntityKind, entity_key};
use metafi_world::{PlayerId, Snapshot, WorldConfig};

fn key(id: PlayerId) -> u32 {
    entity_key(EntityKind::Player, id.0)
}

fn sees(s: &Snapshot, id: PlayerId) -> bool {
    s.entities.iter().any(|e| e.key == key(id))
}

#[test]
fn near_players_are_sent_even_behind_a_wall() {
    let wall = boxed([650.0, 0.0, 0.0], [682.0, 2048.0, 512.0]);
    let mut w = world(room(&[wall], &[]));
    let p = pool(2);
    let viewer = w.join_at(at(500.0, 1000.0), 0).expect("join");
    let other = w.join_at(at(850.0, 1000.0), 0).expect("join");
    let mut m = [(viewer, Mirror::default())];
    let snaps = tick_and_receive(&mut w, &p, &[], &mut m);
    assert!(
        sees(&snaps[0], other),
        "within the near radius: heard through the wall"
    );
}

#[test]
fn far_players_behind_a_wall_are_hidden_but_visible_ones_are_sent() {
    let wall = boxed([1000.0, 0.0, 0.0], [1032.0, 2048.0, 1000.0]);
    let mut w = world(room(&[wall], &[]));
    let p = pool(2);
    let viewer = w.join_at(at(300.0, 1000.0), 0).expect("join");
    let hidden = w.join_at(at(1500.0, 1000.0), 0).expect("join");
    let visible = w.join_at(at(300.0, 1800.0), 0).expect("join");
    let mut m = [(viewer, Mirror::default())];
    let snaps = tick_and_receive(&mut w, &p, &[], &mut m);
    assert!(!sees(&snaps[0], hidden));
    assert!(sees(&snaps[0], visible));
}

#[test]
fn the_cap_keeps_the_nearest_entities() {
    let mut w = world(room(&[], &[]));
    let p = pool(2);
    let viewer = w.join_at(at(100.0, 1000.0), 0).expect("join");
    let line: Vec<PlayerId> = (0..60)
        .map(|i| {
            w.join_at(at(160.0 + 30.0 * i as f32, 1000.0), 0)
                .expect("join")
        })
        .collect();
    let mut m = [(viewer, Mirror::default())];
    let snaps = tick_and_receive(&mut w, &p, &[], &mut m);
    let cap = WorldConfig::default().interest.max_entities;
    assert_eq!(snaps[0].entities.len(), cap);
    assert!(
        line[..cap].iter().all(|&id| sees(&snaps[0], id)),
        "the {cap} nearest are the ones sent"
    );
    assert!(!sees(&snaps[0], line[cap]));
}

#[test]
fn far_players_are_updated_less_often_than_near_ones() {
    let mut w = world(room(&[], &[]));
    let p = pool(2);
    let viewer = w.join_at(at(200.0, 200.0), 0).expect("join");
    let near = w.join_at(at(300.0, 400.0), 0).expect("join");
    let far = w.join_at(at(200.0, 1700.0), 0).expect("join");
    let mut m = [(viewer, Mirror::default())];
    // Both run back and forth so their positions change every tick.
    let mut changes = [0, 0];
    let mut last: Option<Snapshot> = None;
    for t in 0..40 {
        let dir = if t % 10 < 5 { 0.0 } else { 180.0 };
        let snaps = tick_and_receive(
            &mut w,
            &p,
            &[(near, walk(dir, 320)), (far, walk(dir, 320))],
            &mut m,
        );
        let s = &snaps[0];
        if let Some(prev) = &last {
            for (k, id) in [near, far].into_iter().enumerate() {
                let pos = |s: &Snapshot| {
                    s.entities
                        .iter()
                        .find(|e| e.key == key(id))
                        .map(|e| e.origin)
                };
                changes[k] += usize::from(pos(prev) != pos(s));
            }
        }
        last = Some(s.clone());
    }
    assert!(changes[0] >= 35, "near: every tick ({})", changes[0]);
    assert!(
        changes[1] <= 12 && changes[1] >= 6,
        "far: every fourth tick ({})",
        changes[1]
    );
}

#[test]
fn the_own_player_is_in_the_view_not_in_the_entity_list() {
    let mut w = world(room(&[], &[]));
    let p = pool(1);
    let viewer = w.join_at(at(400.0, 400.0), 0).expect("join");
    let mut m = [(viewer, Mirror::default())];
    let snaps = tick_and_receive(&mut w, &p, &[], &mut m);
    assert!(!sees(&snaps[0], viewer));
    assert_eq!(snaps[0].view.health, 100);
    assert_eq!(snaps[0].view.origin[0], 400 * 8);
}
