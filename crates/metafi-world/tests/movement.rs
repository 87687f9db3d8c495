#![allow(clippy::unwrap_used)] // tests: a panic is the failure report
//! Movement and collision as a player would notice them.

mod common;

use common::*;
use metafi_world::player::flags;
use metafi_world::{Buttons, UserCmd};

#[test]
fn walking_into_a_wall_stops_at_the_wall() {
    let map = room(&[boxed([1200.0, 0.0, 0.0], [1232.0, 2048.0, 256.0])], &[]);
    let mut w = world(map);
    let p = pool(2);
    let id = w.join_at(at(1000.0, 1000.0), 0).expect("join");
    run(&mut w, &p, 60, &[(id, walk(0.0, 320))]);
    let s = w.player(id).expect("player");
    // Box half-width 16: the face is at 1200, so the centre stops just short of 1184.
    assert!(
        s.origin.x < 1184.0 && s.origin.x > 1183.5,
        "stopped at {:?}",
        s.origin
    );
    assert!(
        s.velocity.x.abs() < 1.0,
        "no speed into the wall: {:?}",
        s.velocity
    );
}

#[test]
fn running_accelerates_to_max_speed_and_friction_stops_the_player() {
    let mut w = world(room(&[], &[]));
    let p = pool(1);
    let id = w.join_at(at(300.0, 1000.0), 0).expect("join");
    run(&mut w, &p, 20, &[(id, walk(0.0, 320))]);
    let s = *w.player(id).expect("player");
    assert!((s.velocity.x - 320.0).abs() < 1.0, "{:?}", s.velocity);
    assert!(s.has(flags::ON_GROUND));
    run(&mut w, &p, 20, &[(id, walk(0.0, 0))]);
    let stopped = *w.player(id).expect("player");
    assert_eq!(stopped.velocity.x, 0.0);
    assert!(
        stopped.origin.x > s.origin.x && stopped.origin.x < s.origin.x + 200.0,
        "slid {:?}",
        stopped.origin
    );
}

#[test]
fn sliding_along_a_wall_keeps_the_parallel_speed() {
    let map = room(&[boxed([1200.0, 0.0, 0.0], [1232.0, 2048.0, 256.0])], &[]);
    let mut w = world(map);
    let p = pool(1);
    let id = w.join_at(at(1180.0, 1000.0), 0).expect("join");
    // Run diagonally into the wall: x is blocked, y keeps going.
    run(&mut w, &p, 20, &[(id, walk(45.0, 320))]);
    let s = w.player(id).expect("player");
    assert!(s.origin.x < 1184.0);
    assert!(s.origin.y > 1150.0, "slid along the wall to {:?}", s.origin);
}

#[test]
fn gravity_pulls_a_player_down_onto_the_floor() {
    let mut w = world(room(&[], &[]));
    let p = pool(1);
    let id = w
        .join_at(metafi_world::Vec3::new(500.0, 500.0, 300.0), 0)
        .expect("join");
    run(&mut w, &p, 4, &[(id, walk(0.0, 0))]);
    let falling = *w.player(id).expect("player");
    assert!(falling.origin.z < 300.0 && falling.velocity.z < 0.0);
    run(&mut w, &p, 30, &[(id, walk(0.0, 0))]);
    let landed = w.player(id).expect("player");
    assert!(
        (landed.origin.z - STAND_Z).abs() < 0.05,
        "{:?}",
        landed.origin
    );
    assert!(landed.has(flags::ON_GROUND));
}

#[test]
fn jumping_rises_and_lands_and_needs_a_release_to_jump_again() {
    let mut w = world(room(&[], &[]));
    let p = pool(1);
    let id = w.join_at(at(500.0, 500.0), 0).expect("join");
    let jump = UserCmd {
        buttons: Buttons::JUMP,
        ..walk(0.0, 0)
    };
    run(&mut w, &p, 3, &[(id, jump)]);
    let up = *w.player(id).expect("player");
    assert!(up.origin.z > STAND_Z + 10.0, "{:?}", up.origin);
    run(&mut w, &p, 30, &[(id, jump)]);
    let held = w.player(id).expect("player");
    assert!(
        (held.origin.z - STAND_Z).abs() < 0.05,
        "holding jump does not bounce: {:?}",
        held.origin
    );
}

#[test]
fn players_climb_16_unit_steps_but_not_a_32_unit_ledge() {
    let steps = [
        boxed([600.0, 400.0, 0.0], [632.0, 600.0, 16.0]),
        boxed([632.0, 400.0, 0.0], [664.0, 600.0, 32.0]),
        boxed([664.0, 400.0, 0.0], [900.0, 600.0, 48.0]),
        boxed([600.0, 1400.0, 0.0], [900.0, 1600.0, 32.0]),
    ];
    let mut w = world(room(&steps, &[]));
    let p = pool(1);
    let stairs = w.join_at(at(500.0, 500.0), 0).expect("join");
    let ledge = w.join_at(at(500.0, 1500.0), 0).expect("join");
    run(
        &mut w,
        &p,
        18,
        &[(stairs, walk(0.0, 320)), (ledge, walk(0.0, 320))],
    );
    let s = w.player(stairs).expect("player");
    assert!(
        s.origin.x > 700.0 && (s.origin.z - (48.0 + STAND_Z)).abs() < 0.1,
        "on the platform: {:?}",
        s.origin
    );
    let l = w.player(ledge).expect("player");
    assert!(
        l.origin.x < 585.0 && (l.origin.z - STAND_Z).abs() < 0.1,
        "stopped at the ledge: {:?}",
        l.origin
    );
}

#[test]
fn players_are_solid_to_each_other() {
    let mut w = world(room(&[], &[]));
    let p = pool(2);
    let runner = w.join_at(at(800.0, 1000.0), 0).expect("join");
    let stander = w.join_at(at(1000.0, 1000.0), 0).expect("join");
    run(
        &mut w,
        &p,
        40,
        &[(runner, walk(0.0, 320)), (stander, walk(0.0, 0))],
    );
    let r = w.player(runner).expect("player");
    let s = w.player(stander).expect("player");
    assert!(
        s.origin.x - r.origin.x >= 31.9,
        "boxes do not overlap: {:?} {:?}",
        r.origin,
        s.origin
    );
    assert!(
        r.origin.x > 960.0,
        "runner reached the other player: {:?}",
        r.origin
    );
}

#[test]
fn a_fast_player_does_not_tunnel_through_a_thin_wall() {
    let map = room(&[boxed([1200.0, 0.0, 0.0], [1204.0, 2048.0, 256.0])], &[]);
    let mut w = world(map);
    let p = pool(1);
    let id = w.join_at(at(1100.0, 1000.0), 0).expect("join");
    w.player_mut(id).expect("player").velocity.x = 2000.0;
    run(&mut w, &p, 10, &[(id, walk(0.0, 320))]);
    assert!(w.player(id).expect("player").origin.x < 1184.0);
}

#[test]
fn command_time_beyond_the_per_tick_budget_is_dropped() {
    let mut w = world(room(&[], &[]));
    let p = pool(1);
    let honest = w.join_at(at(300.0, 600.0), 0).expect("join");
    let cheat = w.join_at(at(300.0, 1200.0), 0).expect("join");
    let cmd = UserCmd {
        msec: 250,
        ..walk(0.0, 320)
    };
    for t in 1..=20u64 {
        let mut cmds = vec![
            metafi_world::Command {
                player: honest,
                cmd: walk(0.0, 320)
            };
            2
        ];
        cmds.extend(std::iter::repeat_n(
            metafi_world::Command { player: cheat, cmd },
            10,
        ));
        w.tick(&p, t * 50, &cmds);
    }
    let h = w.player(honest).expect("player").origin.x - 300.0;
    let c = w.player(cheat).expect("player").origin.x - 300.0;
    assert!(c < h * 2.6, "cheat capped at 120 ms/tick vs 50: {c} vs {h}");
}

/// Reusing a command's last ground probe as the next command's first (what `step_player` does)
/// gives bit-identical movement to probing again, among crates, steps and other players, when
/// each command's list of others is every box overlapping its move area; and a player that
/// stood still, whose last probe is its first one, ends on the ground exactly when a fresh probe
/// finds ground.
#[test]
fn reusing_the_ground_probe_changes_nothing() {
    use metafi_world::map::MoveClip;
    use metafi_world::movement::{GroundMemo, on_ground, pmove, pmove_clip};
    use metafi_world::player::mix;
    use metafi_world::rules::{PLAYER_HALF, Rules};
    use metafi_world::step::move_area;
    use metafi_world::{Aabb, PlayerId, PlayerState};

    let map = room(
        &[
            boxed([900.0, 900.0, 0.0], [964.0, 964.0, 32.0]),
            boxed([1000.0, 800.0, 0.0], [1064.0, 1200.0, 16.0]),
            boxed([1064.0, 800.0, 0.0], [1128.0, 1200.0, 48.0]),
            boxed([800.0, 1100.0, 0.0], [832.0, 1400.0, 128.0]),
        ],
        &[],
    );
    let rules = Rules::default();
    let mut seed = 11u64;
    let mut next = |n: u64| {
        seed = mix(seed);
        (seed % n) as f32
    };
    let players: Vec<Aabb> = (0..40)
        .map(|_| {
            let c = at(850.0 + next(400), 850.0 + next(400));
            Aabb::around(
                c + metafi_world::Vec3::new(0.0, 0.0, next(3) * 20.0),
                PLAYER_HALF,
            )
        })
        .collect();
    let near = |area: &Aabb| -> Vec<Aabb> {
        players
            .iter()
            .filter(|b| b.overlaps(area))
            .copied()
            .collect()
    };
    let (mut reused, mut probed_on_ground, mut stood_still) = (0, 0, 0);
    for trial in 0..300 {
        let start = at(850.0 + next(400), 850.0 + next(400));
        let mut a = PlayerState::spawned(PlayerId(trial), start, 0, &rules);
        // A third of the players stand still (campers), some of them in the air.
        let still = trial % 3 == 0;
        if !still {
            a.velocity = metafi_world::Vec3::new(next(600) - 300.0, next(600) - 300.0, 0.0);
        } else if trial % 2 == 0 {
            a.origin.z += next(3) * 0.125;
        }
        let mut b = a;
        let mut memo = GroundMemo::default();
        for _ in 0..4 {
            let mut cmd = walk(next(360), if still { 0 } else { 320 });
            cmd.msec = 30;
            if next(4) == 0.0 {
                cmd.buttons = metafi_world::Buttons::JUMP;
            }
            let area = move_area(&a, cmd.msec, &rules);
            let others = near(&area);
            pmove(&mut a, &cmd, &map, &others, &rules);
            let clip = MoveClip {
                map: &map,
                others_area: Some(move_area(&b, cmd.msec, &rules)),
            };
            reused += usize::from(memo.would_reuse(b.origin));
            let before = b.origin;
            let others = near(&clip.others_area.unwrap());
            pmove_clip(&mut b, &cmd, &clip, &others, &rules, &mut memo);
            probed_on_ground += usize::from(a.has(flags::ON_GROUND));
            assert_eq!(a.to_words(), b.to_words(), "trial {trial}");
            stood_still += usize::from(before == b.origin);
            let fresh = on_ground(b.origin, &map, &others) && b.velocity.z <= 0.0;
            assert_eq!(b.has(flags::ON_GROUND), fresh, "trial {trial}");
        }
    }
    // The memo was actually used, on and off the ground, and players stood still.
    assert!(reused > 600, "reused {reused}");
    assert!(probed_on_ground > 300, "{probed_on_ground}");
    assert!(stood_still > 100, "{stood_still}");
}
