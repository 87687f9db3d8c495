//! Player movement: QuakeWorld's `PM_PlayerMove` reduced to box brushes.
//!
//! Friction and acceleration on the ground, limited air control, gravity, jumping, sliding along
//! walls and climbing steps up to [`Rules::step_height`]. Other players are solid boxes passed in
//! by the caller (their positions at the start of the tick, so the result does not depend on the
//! order players are moved in).

use crate::command::{Buttons, UserCmd};
use crate::map::Map;
use crate::math::{Aabb, Vec3, view_vectors};
use crate::player::{PlayerState, flags};
use crate::rules::{PLAYER_HALF, Rules};

/// Pitch limit: 89° in angle units, so the view never flips over the vertical.
pub const MAX_PITCH: i16 = 16_202;
/// How far below the feet a floor still counts as "standing on it".
const GROUND_PROBE: f32 = 0.25;
const MAX_BUMPS: usize = 4;

/// Runs one command's movement for `p`.
///
/// `others` are the boxes of other living players near the move. Dead players only turn their
/// view. A player that leaves the map's bounds dies (it fell out of the world).
pub fn pmove(p: &mut PlayerState, cmd: &UserCmd, map: &Map, others: &[Aabb], rules: &Rules) {
    p.yaw = cmd.yaw;
    p.pitch = cmd.pitch.clamp(-MAX_PITCH, MAX_PITCH);
    if !p.alive() || cmd.msec == 0 {
        return;
    }
    let dt = f32::from(cmd.msec) / 1000.0;
    let (fwd, right) = view_vectors(cmd.yaw, 0);
    let mut wish = fwd * f32::from(cmd.forward) + right * f32::from(cmd.side);
    wish.z = 0.0;
    let wish_speed = wish.length().min(rules.max_speed);
    let wish_dir = wish.normalized();

    let mut grounded = on_ground(p.origin, map, others);
    let jump = cmd.buttons.contains(Buttons::JUMP);
    if jump && grounded && !p.has(flags::JUMP_HELD) {
        p.velocity.z = rules.jump_velocity;
        grounded = false;
    }
    p.set(flags::JUMP_HELD, jump);

    if grounded {
        p.velocity.z = 0.0;
        friction(&mut p.velocity, dt, rules);
        accelerate(&mut p.velocity, wish_dir, wish_speed, rules.accelerate, dt);
    } else {
        accelerate(
            &mut p.velocity,
            wish_dir,
            wish_speed.min(rules.air_wish_speed),
            rules.air_accelerate,
            dt,
        );
        p.velocity.z -= rules.gravity * dt;
    }
    clamp_velocity(&mut p.velocity, rules.max_velocity);

    step_slide_move(p, dt, grounded, map, others, rules);

    let landed = on_ground(p.origin, map, others) && p.velocity.z <= 0.0;
    if landed {
        p.velocity.z = 0.0;
    }
    p.set(flags::ON_GROUND, landed);
    if !map.bounds().contains_point(p.origin) {
        p.die(rules);
    }
}

/// True if a floor is within a quarter unit below the box at `origin`.
pub fn on_ground(origin: Vec3, map: &Map, others: &[Aabb]) -> bool {
    let tr = map.trace_box(
        origin,
        origin - Vec3::new(0.0, 0.0, GROUND_PROBE),
        PLAYER_HALF,
        others,
    );
    tr.hit() && tr.normal.z > 0.7
}

fn friction(v: &mut Vec3, dt: f32, rules: &Rules) {
    let speed = v.length_xy();
    if speed < 1.0 {
        v.x = 0.0;
        v.y = 0.0;
        return;
    }
    let control = speed.max(rules.stop_speed);
    let new_speed = (speed - control * rules.friction * dt).max(0.0);
    let scale = new_speed / speed;
    v.x *= scale;
    v.y *= scale;
}

fn accelerate(v: &mut Vec3, wish_dir: Vec3, wish_speed: f32, accel: f32, dt: f32) {
    let current = v.dot(wish_dir);
    let add = wish_speed - current;
    if add <= 0.0 {
        return;
    }
    let step = (accel * dt * wish_speed).min(add);
    *v += wish_dir * step;
}

fn clamp_velocity(v: &mut Vec3, max: f32) {
    v.x = v.x.clamp(-max, max);
    v.y = v.y.clamp(-max, max);
    v.z = v.z.clamp(-max, max);
}

/// Slides along walls; if a walking player is blocked, also tries the move from one step higher
/// and keeps whichever went further (how players climb stairs without jumping).
fn step_slide_move(
    p: &mut PlayerState,
    dt: f32,
    on_ground: bool,
    map: &Map,
    others: &[Aabb],
    rules: &Rules,
) {
    let start = p.origin;
    let (low_end, low_vel, blocked) = slide_move(start, p.velocity, dt, map, others);
    if !blocked || !on_ground {
        p.origin = low_end;
        p.velocity = low_vel;
        return;
    }
    let up = map.trace_box(
        start,
        start + Vec3::new(0.0, 0.0, rules.step_height),
        PLAYER_HALF,
        others,
    );
    let (high, high_vel, _) = slide_move(up.end, p.velocity, dt, map, others);
    let lift = up.end.z - start.z;
    let down = map.trace_box(high, high - Vec3::new(0.0, 0.0, lift), PLAYER_HALF, others);
    let high_end = down.end;
    let gained = |e: Vec3| (e - start).length_xy();
    if down.hit() && down.normal.z > 0.7 && gained(high_end) > gained(low_end) + 0.01 {
        p.origin = high_end;
        p.velocity = Vec3::new(high_vel.x, high_vel.y, 0.0);
    } else {
        p.origin = low_end;
        p.velocity = low_vel;
    }
}

/// Moves `origin` by `velocity · dt`, clipping velocity against each surface hit.
/// Returns the end, the clipped velocity and whether a wall (non-floor) blocked the move.
fn slide_move(
    mut origin: Vec3,
    mut velocity: Vec3,
    dt: f32,
    map: &Map,
    others: &[Aabb],
) -> (Vec3, Vec3, bool) {
    let mut time_left = dt;
    let mut planes = [Vec3::ZERO; MAX_BUMPS];
    let mut blocked = false;
    for bump in 0..MAX_BUMPS {
        if velocity == Vec3::ZERO || time_left <= 0.0 {
            break;
        }
        let tr = map.trace_box(origin, origin + velocity * time_left, PLAYER_HALF, others);
        origin = tr.end;
        if !tr.hit() {
            break;
        }
        if tr.normal.z == 0.0 {
            blocked = true;
        }
        time_left -= time_left * tr.fraction;
        planes[bump] = tr.normal;
        // Box brushes have axis-aligned normals, so clipping against every plane touched so far
        // is removing the velocity components that point into them.
        for plane in &planes[..=bump] {
            let into = velocity.dot(*plane);
            if into < 0.0 {
                velocity = velocity - *plane * into;
            }
        }
    }
    (origin, velocity, blocked)
}
