//! Weapons: hitscan shots, rocket launches and explosions with splash damage.

use crate::command::{Buttons, UserCmd, Weapon};
use crate::intent::{Effects, Hit, Launch};
use crate::map::Map;
use crate::math::{Vec3, view_vectors};
use crate::neighbourhood::Neighbourhood;
use crate::player::{PlayerState, flags};
use crate::projectile::Projectile;
use crate::rules::Rules;

/// The weapon this command will fire, if any: the same test [`fire`] applies, so a scheduler
/// can take long-range locks only for the commands that need them.
pub fn will_fire(p: &PlayerState, cmd: &UserCmd) -> Option<Weapon> {
    let ready = (p.cooldown_ms - i32::from(cmd.msec)).max(-100) <= 0;
    let armed = p.ammo[cmd.weapon.index()] > 0;
    (p.alive() && cmd.buttons.contains(Buttons::ATTACK) && ready && armed).then_some(cmd.weapon)
}

/// Runs the fire part of one command: selects the weapon, counts the refire timer down and, if
/// attack is held and the weapon is ready, fires.
///
/// A hitscan shot is a ray from the eye: it stops at the first wall, and damages the first
/// player in front of that wall. A rocket becomes a [`Launch`] intent.
pub fn fire(
    p: &mut PlayerState,
    cmd: &UserCmd,
    map: &Map,
    world: &impl Neighbourhood,
    rules: &Rules,
    fx: &mut Effects,
) {
    if !p.alive() {
        return;
    }
    p.weapon = cmd.weapon;
    // Bounded below so a long idle period does not bank several instant shots.
    p.cooldown_ms = (p.cooldown_ms - i32::from(cmd.msec)).max(-100);
    let slot = p.weapon.index();
    if !cmd.buttons.contains(Buttons::ATTACK) || p.cooldown_ms > 0 || p.ammo[slot] <= 0 {
        return;
    }
    p.ammo[slot] -= 1;
    p.shots = p.shots.wrapping_add(1);
    p.set(flags::FIRED, true);
    let eye = p.eye();
    let (dir, _) = view_vectors(p.yaw, p.pitch);
    match p.weapon {
        Weapon::MachineGun => {
            p.cooldown_ms = p.cooldown_ms.max(0) + rules.hitscan_refire_ms;
            let end = eye + dir * rules.hitscan_range;
            let wall = map.trace_ray(eye, end);
            let stop = eye + dir * (rules.hitscan_range * wall);
            if let Some((target, _)) = world.first_hit(eye, stop, p.id) {
                fx.hits.push(Hit {
                    target,
                    attacker: p.id,
                    order: p.shots,
                    damage: rules.hitscan_damage,
                    knockback: dir * rules.hitscan_knockback * rules.hitscan_damage as f32,
                });
            }
        }
        Weapon::RocketLauncher => {
            p.cooldown_ms = p.cooldown_ms.max(0) + rules.rocket_refire_ms;
            fx.launches.push(Launch {
                owner: p.id,
                order: p.shots,
                origin: eye,
                velocity: dir * rules.rocket_speed,
            });
        }
    }
}

/// Damage from a rocket exploding at `at`: the direct target takes direct damage, everyone else
/// whose box is within the splash radius and in line of sight of the blast takes damage falling
/// off linearly with distance (halved for the owner, as Quake).
pub fn explode(
    rocket: &Projectile,
    at: Vec3,
    direct: Option<crate::command::PlayerId>,
    map: &Map,
    world: &impl Neighbourhood,
    rules: &Rules,
    hits: &mut Vec<Hit>,
) {
    let dir = rocket.velocity.normalized();
    if let Some(target) = direct {
        hits.push(Hit {
            target,
            attacker: rocket.owner,
            order: rocket.id,
            damage: rules.rocket_direct_damage,
            knockback: dir * rules.knockback_per_damage * rules.rocket_direct_damage as f32,
        });
    }
    world.within(at, rules.rocket_splash_radius, &mut |id, centre| {
        if Some(id) == direct {
            return;
        }
        let half = crate::rules::PLAYER_HALF;
        let dist = crate::math::Aabb::around(centre, half).distance_to(at);
        let mut damage = rules.splash_damage(dist);
        if id == rocket.owner {
            damage *= 0.5;
        }
        if damage < 1.0 || map.trace_ray(at, centre) < 1.0 {
            return;
        }
        let push = (centre - at).normalized();
        hits.push(Hit {
            target: id,
            attacker: rocket.owner,
            order: rocket.id,
            damage: damage as i32,
            knockback: push * rules.knockback_per_damage * damage,
        });
    });
}
