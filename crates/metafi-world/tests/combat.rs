//! Weapons, damage, death, respawn and pickups.

mod common;

use common::*;
use metafi_world::{ItemKind, UserCmd, Weapon};

fn idle() -> UserCmd {
    walk(0.0, 0)
}

#[test]
fn hitscan_damages_the_player_in_front() {
    let mut w = world(room(&[], &[]));
    let p = pool(2);
    let a = w.join_at(at(500.0, 1000.0), 0).expect("join");
    let b = w.join_at(at(900.0, 1000.0), 0).expect("join");
    run(
        &mut w,
        &p,
        10,
        &[(a, shoot(0.0, Weapon::MachineGun)), (b, idle())],
    );
    let shots = w.player(a).expect("a").shots as i32;
    assert!(shots >= 4, "fired every 100 ms: {shots}");
    assert_eq!(w.player(b).expect("b").health, 100 - 8 * shots);
}

#[test]
fn hitscan_through_a_wall_does_no_damage() {
    let wall = boxed([700.0, 0.0, 0.0], [732.0, 2048.0, 256.0]);
    let mut w = world(room(&[wall], &[]));
    let p = pool(2);
    let a = w.join_at(at(500.0, 1000.0), 0).expect("join");
    let b = w.join_at(at(900.0, 1000.0), 0).expect("join");
    run(
        &mut w,
        &p,
        10,
        &[(a, shoot(0.0, Weapon::MachineGun)), (b, idle())],
    );
    assert!(w.player(a).expect("a").shots > 0);
    assert_eq!(w.player(b).expect("b").health, 100);
}

#[test]
fn the_nearest_player_on_the_line_of_fire_takes_the_bullet() {
    let mut w = world(room(&[], &[]));
    let p = pool(2);
    let a = w.join_at(at(300.0, 1000.0), 0).expect("join");
    let near = w.join_at(at(600.0, 1000.0), 0).expect("join");
    let far = w.join_at(at(900.0, 1000.0), 0).expect("join");
    run(
        &mut w,
        &p,
        4,
        &[
            (a, shoot(0.0, Weapon::MachineGun)),
            (near, idle()),
            (far, idle()),
        ],
    );
    assert!(w.player(near).expect("near").health < 100);
    assert_eq!(w.player(far).expect("far").health, 100);
}

#[test]
fn a_direct_rocket_kills_credits_a_frag_and_the_victim_respawns() {
    let mut w = world(room(&[], &[]));
    let p = pool(2);
    let a = w.join_at(at(300.0, 500.0), 0).expect("join");
    let b = w.join_at(at(700.0, 500.0), 0).expect("join");
    run(
        &mut w,
        &p,
        12,
        &[(a, shoot(0.0, Weapon::RocketLauncher)), (b, idle())],
    );
    let victim = *w.player(b).expect("b");
    assert!(!victim.alive(), "{victim:?}");
    assert_eq!((victim.deaths, w.player(a).expect("a").frags), (1, 1));
    run(&mut w, &p, 45, &[(a, idle()), (b, idle())]);
    let back = w.player(b).expect("b");
    assert!(back.alive() && back.health == 100, "{back:?}");
    assert!(
        (back.origin.x - 1000.0).abs() < 40.0,
        "respawned at the spawn point: {:?}",
        back.origin
    );
}

#[test]
fn splash_damage_falls_off_with_distance_and_stops_at_walls() {
    let wall = boxed([1000.0, 0.0, 0.0], [1032.0, 1900.0, 256.0]);
    let mut w = world(room(&[wall], &[]));
    let p = pool(2);
    let a = w.join_at(at(500.0, 1000.0), 0).expect("join");
    let close = w.join_at(at(950.0, 1060.0), 0).expect("join");
    let farther = w.join_at(at(900.0, 1120.0), 0).expect("join");
    let behind = w.join_at(at(1060.0, 1000.0), 0).expect("join");
    let away = w.join_at(at(500.0, 1700.0), 0).expect("join");
    let fire = UserCmd {
        msec: 25,
        ..shoot(0.0, Weapon::RocketLauncher)
    };
    w.tick(
        &p,
        50,
        &[metafi_world::Command {
            player: a,
            cmd: fire,
        }],
    );
    run(&mut w, &p, 14, &[]);
    let hp = |id| w.player(id).expect("player").health;
    assert!(hp(close) < hp(farther), "{} vs {}", hp(close), hp(farther));
    assert!(hp(farther) < 100);
    assert_eq!(hp(behind), 100, "the wall shields from the blast");
    assert_eq!(hp(away), 100);
    assert!(w.projectiles().is_empty());
}

#[test]
fn rocket_jumping_hurts_yourself_for_half() {
    let wall = boxed([1000.0, 0.0, 0.0], [1032.0, 2048.0, 256.0]);
    let mut w = world(room(&[wall], &[]));
    let p = pool(1);
    let a = w.join_at(at(960.0, 1000.0), 0).expect("join");
    let fire = UserCmd {
        msec: 25,
        ..shoot(0.0, Weapon::RocketLauncher)
    };
    w.tick(
        &p,
        50,
        &[metafi_world::Command {
            player: a,
            cmd: fire,
        }],
    );
    run(&mut w, &p, 3, &[]);
    let s = w.player(a).expect("a");
    assert!(s.alive() && s.health >= 50 && s.health < 70, "{}", s.health);
    assert!(
        s.velocity.x < 0.0,
        "knocked back from the wall: {:?}",
        s.velocity
    );
}

#[test]
fn health_pickup_heals_disappears_and_respawns() {
    let mut w = world(room(&[], &[(ItemKind::Health, [600.0, 1000.0, 16.1])]));
    let p = pool(1);
    let hurt = w.join_at(at(400.0, 1000.0), 0).expect("join");
    w.player_mut(hurt).expect("player").health = 50;
    run(&mut w, &p, 20, &[(hurt, walk(0.0, 320))]);
    assert_eq!(w.player(hurt).expect("player").health, 75);
    assert!(!w.items()[0].available());
    run(&mut w, &p, 301, &[(hurt, idle())]);
    assert!(w.items()[0].available(), "back after 15 s");
}

#[test]
fn full_health_players_leave_health_on_the_floor() {
    let mut w = world(room(&[], &[(ItemKind::Health, [600.0, 1000.0, 16.1])]));
    let p = pool(1);
    let fine = w.join_at(at(400.0, 1000.0), 0).expect("join");
    run(&mut w, &p, 20, &[(fine, walk(0.0, 320))]);
    assert!(w.items()[0].available());
}

#[test]
fn a_contested_item_goes_to_exactly_one_player() {
    let mut w = world(room(&[], &[(ItemKind::Health, [1000.0, 1000.0, 16.1])]));
    let p = pool(4);
    let a = w.join_at(at(990.0, 1000.0), 0).expect("join");
    let b = w.join_at(at(1010.0, 1000.0), 0).expect("join");
    w.player_mut(a).expect("a").health = 50;
    w.player_mut(b).expect("b").health = 50;
    run(&mut w, &p, 1, &[(a, idle()), (b, idle())]);
    let (ha, hb) = (
        w.player(a).expect("a").health,
        w.player(b).expect("b").health,
    );
    assert_eq!((ha, hb), (75, 50), "the lower id wins the tie");
}
