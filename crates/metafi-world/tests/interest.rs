//! Interest management: what each client is told about, and how often.

mod common;

use common::*;
use metafi_world::snapshot::{EntityKind, entity_key};
use metafi_world::{Command, PlayerId, Snapshot, WorldConfig};

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

/// Regression: a tiered player not due on a tick used to repeat the value of the client's
/// baseline. With acknowledgements arriving two ticks late (a 100 ms round trip) the baseline of
/// every other tick was itself a non-due copy, so the client saw the player jump back to where
/// it was when it first came into view. Now a non-due player repeats the previous tick's value
/// and only ever moves forward.
#[test]
fn tiered_players_never_jump_back_when_acks_arrive_two_ticks_late() {
    let mut w = world(room(&[], &[]));
    let p = pool(2);
    let viewer = w.join_at(at(200.0, 200.0), 0).expect("join");
    let mid = w.join_at(at(200.0, 900.0), 0).expect("join");
    let far = w.join_at(at(200.0, 1500.0), 0).expect("join");
    let mut mirror = Mirror::default();
    let mut seen: [Vec<i32>; 2] = [Vec::new(), Vec::new()];
    for t in 1..=40u32 {
        let now = u64::from(t) * 50;
        let cmds: Vec<Command> = [mid, far]
            .iter()
            .flat_map(|&player| {
                [Command {
                    player,
                    cmd: walk(0.0, 320),
                }; 2]
            })
            .collect();
        w.tick(&p, now, &cmds);
        let snap = mirror.receive(w.packet(viewer).expect("packet"));
        if t > 2 {
            w.ack(viewer, t - 2).expect("ack");
        }
        for (k, id) in [mid, far].into_iter().enumerate() {
            let x = snap
                .entities
                .iter()
                .find(|e| e.key == key(id))
                .map(|e| e.origin[0]);
            seen[k].push(x.expect("in view all along"));
        }
    }
    for (k, xs) in seen.iter().enumerate() {
        let backwards = xs.windows(2).filter(|w| w[1] < w[0]).count();
        assert_eq!(backwards, 0, "entity {k} went back: {xs:?}");
        let moves = xs.windows(2).filter(|w| w[1] > w[0]).count();
        let least = [15, 7][k];
        assert!(moves >= least, "entity {k} moved {moves} times: {xs:?}");
    }
}

fn world_refreshing_every(ticks: u32) -> metafi_world::World {
    let mut config = WorldConfig::default();
    config.interest.refresh_ticks = ticks;
    metafi_world::World::new(room(&[], &[]), config).expect("valid config")
}

/// Between refreshes a client keeps its set: a newcomer shows up on the client's next refresh
/// tick (staggered by client), never later; with a period of 1 it shows up at once.
#[test]
fn a_newcomer_appears_on_the_next_refresh_and_a_leaver_goes_at_once() {
    for period in [1, 2, 4] {
        let mut w = world_refreshing_every(period);
        let p = pool(2);
        let viewer = w.join_at(at(200.0, 200.0), 0).expect("join");
        let mut m = [(viewer, Mirror::default())];
        for _ in 0..5 {
            tick_and_receive(&mut w, &p, &[], &mut m);
        }
        let joined_after = w.current_tick();
        let newcomer = w.join_at(at(400.0, 300.0), 0).expect("join");
        let mut appeared = None;
        for _ in 0..period {
            let snap = tick_and_receive(&mut w, &p, &[], &mut m).remove(0);
            if sees(&snap, newcomer) {
                appeared = Some(snap.tick);
                break;
            }
        }
        let cfg = &w.config().interest;
        let due = (joined_after + 1..).find(|&t| cfg.refreshes(t, viewer.0));
        assert_eq!(appeared, due, "period {period}");
        w.leave(newcomer).expect("leave");
        let snap = tick_and_receive(&mut w, &p, &[], &mut m).remove(0);
        assert!(!sees(&snap, newcomer), "period {period}: gone at once");
    }
}

/// Between refreshes the kept set still obeys the interest rule: a player that walks out of
/// the view radius is dropped on the next tick, refresh or not.
#[test]
fn a_player_leaving_the_view_radius_is_dropped_between_refreshes() {
    let mut w = world_refreshing_every(8);
    let p = pool(1);
    let viewer = w.join_at(at(100.0, 100.0), 0).expect("join");
    let runner = w.join_at(at(1500.0, 1500.0), 0).expect("join");
    let mut m = [(viewer, Mirror::default())];
    let snap = tick_and_receive(&mut w, &p, &[], &mut m).remove(0);
    assert!(sees(&snap, runner), "first tick refreshes: in view");
    // Move the runner beyond the 2048 view radius without a refresh of the viewer's set.
    w.player_mut(runner).expect("runner").origin = at(1950.0, 1950.0);
    let snap = tick_and_receive(&mut w, &p, &[], &mut m).remove(0);
    assert!(!w.config().interest.refreshes(snap.tick, viewer.0));
    assert!(!sees(&snap, runner), "beyond the view radius: dropped");
}

#[test]
fn a_refresh_period_of_zero_is_refused() {
    let mut config = WorldConfig::default();
    config.interest.refresh_ticks = 0;
    assert!(metafi_world::World::new(room(&[], &[]), config).is_err());
}
