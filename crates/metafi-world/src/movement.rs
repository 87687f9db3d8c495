//! Player movement: QuakeWorld's `PM_PlayerMove` reduced to box brushes.
//!
//! Friction and acceleration on the ground, limited air control, gravity, jumping, sliding along
//! walls and climbing steps up to [`Rules::step_height`]. Other players are solid boxes passed in
//! by the caller (their positions at the start of the tick, so the result does not depend on the
//! order players are moved in).

use crate::command::{Buttons, UserCmd};
use crate::map::{Map, MoveClip};
use crate::math::{Aabb, Vec3, yaw_radians};
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
    pmove_clip(
        p,
        cmd,
        &MoveClip::map(map),
        others,
        rules,
        &mut GroundMemo::default(),
    );
}

/// The last ground probe of one command, reused as the first probe of the player's next
/// command in the same tick.
///
/// Exact: the next command probes from the same origin against the same brushes, and its list of
/// other players holds every player near the probe (its move area contains the player's box);
/// the memo is kept only if this command's list held them all too (the probe lies inside the
/// area that list covers, [`MoveClip::others_area`]). Both lists are in player-array order, so the candidates come in the same
/// order. Start a fresh memo for each player and tick.
///
/// Within a command, the first probe also answers the last one when the player ended where it
/// started (bit for bit; a camper standing still): same origin, same brushes, same list.
#[derive(Clone, Copy, Debug, Default)]
pub struct GroundMemo {
    at: Option<(Vec3, bool)>,
    /// The current command's first probe.
    first: Option<(Vec3, bool)>,
}

impl GroundMemo {
    /// Whether the next probe from `origin` will be answered from the memo.
    pub fn would_reuse(&self, origin: Vec3) -> bool {
        self.at.is_some_and(|(o, _)| same_bits(o, origin))
    }

    fn probe(&mut self, origin: Vec3, clip: &MoveClip<'_>, others: &[Aabb]) -> bool {
        let reuse = self.would_reuse(origin);
        let ground = match self.at.take() {
            Some((_, ground)) if reuse => ground,
            _ => ground_below(origin, clip, others),
        };
        self.first = Some((origin, ground));
        ground
    }

    /// Probes at the end of a move and remembers the result if it may be reused.
    fn probe_and_keep(&mut self, origin: Vec3, clip: &MoveClip<'_>, others: &[Aabb]) -> bool {
        let ground = match self.first.take() {
            Some((o, ground)) if same_bits(o, origin) => ground,
            _ => ground_below(origin, clip, others),
        };
        let (start, end) = ground_probe(origin);
        self.at = clip
            .covers(start, end, PLAYER_HALF)
            .then_some((origin, ground));
        ground
    }
}

/// [`pmove`] reusing the previous command's last ground probe (see [`GroundMemo`]; `clip`
/// says which area `others` covers); the result is the same.
pub fn pmove_clip(
    p: &mut PlayerState,
    cmd: &UserCmd,
    clip: &MoveClip<'_>,
    others: &[Aabb],
    rules: &Rules,
    memo: &mut GroundMemo,
) {
    let map = clip.map;
    p.yaw = cmd.yaw;
    p.pitch = cmd.pitch.clamp(-MAX_PITCH, MAX_PITCH);
    if !p.alive() || cmd.msec == 0 {
        return;
    }
    let dt = f32::from(cmd.msec) / 1000.0;
    // `view_vectors(yaw, 0)` without the pitch's sine and cosine (0 and exactly 1): the same
    // bits for the horizontal wish direction, one libm call instead of two.
    let (sy, cy) = yaw_radians(cmd.yaw).sin_cos();
    let (fwd, right) = (Vec3::new(cy, sy, 0.0), Vec3::new(sy, -cy, 0.0));
    let mut wish = fwd * f32::from(cmd.forward) + right * f32::from(cmd.side);
    wish.z = 0.0;
    let wish_speed = wish.length().min(rules.max_speed);
    let wish_dir = wish.normalized();

    let mut grounded = memo.probe(p.origin, clip, others);
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

    step_slide_move(p, dt, grounded, clip, others, rules);

    let landed = memo.probe_and_keep(p.origin, clip, others) && p.velocity.z <= 0.0;
    if landed {
        p.velocity.z = 0.0;
    }
    p.set(flags::ON_GROUND, landed);
    if !map.bounds().contains_point(p.origin) {
        p.die(rules);
    }
}

/// Whether two points are the same bit for bit (so every query from them gives the same answer).
fn same_bits(a: Vec3, b: Vec3) -> bool {
    let bits = |o: Vec3| (o.x.to_bits(), o.y.to_bits(), o.z.to_bits());
    bits(a) == bits(b)
}

/// True if a floor is within a quarter unit below the box at `origin`.
pub fn on_ground(origin: Vec3, map: &Map, others: &[Aabb]) -> bool {
    ground_below(origin, &MoveClip::map(map), others)
}

/// Whether the ground probe from `origin` hits a floor: `trace_box(probe).hit()` with an upward
/// normal, answered by [`MoveClip::enters_any`] without finding which solid is hit first.
///
/// The same answer: the probe moves straight down (its x and y are `origin`'s, bit for bit), so
/// every solid it enters is entered through its top face, whose normal is up; and the trace
/// reports a hit whenever it enters anything, since the probe is longer than the distance
/// [`crate::map::TRACE_EPSILON`] it stops short.
fn ground_below(origin: Vec3, clip: &MoveClip<'_>, others: &[Aabb]) -> bool {
    let (start, end) = ground_probe(origin);
    clip.enters_any(start, end, PLAYER_HALF, others)
}

/// The sweep of a ground probe from `origin`.
fn ground_probe(origin: Vec3) -> (Vec3, Vec3) {
    (origin, origin - Vec3::new(0.0, 0.0, GROUND_PROBE))
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
    clip: &MoveClip<'_>,
    others: &[Aabb],
    rules: &Rules,
) {
    let start = p.origin;
    let (low_end, low_vel, blocked) = slide_move(start, p.velocity, dt, clip, others);
    if !blocked || !on_ground {
        p.origin = low_end;
        p.velocity = low_vel;
        return;
    }
    let up = clip.trace_box(
        start,
        start + Vec3::new(0.0, 0.0, rules.step_height),
        PLAYER_HALF,
        others,
    );
    let (high, high_vel, _) = slide_move(up.end, p.velocity, dt, clip, others);
    let lift = up.end.z - start.z;
    let down = clip.trace_box(high, high - Vec3::new(0.0, 0.0, lift), PLAYER_HALF, others);
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
    clip: &MoveClip<'_>,
    others: &[Aabb],
) -> (Vec3, Vec3, bool) {
    let mut time_left = dt;
    let mut planes = [Vec3::ZERO; MAX_BUMPS];
    let mut blocked = false;
    for bump in 0..MAX_BUMPS {
        if velocity == Vec3::ZERO || time_left <= 0.0 {
            break;
        }
        let tr = clip.trace_box(origin, origin + velocity * time_left, PLAYER_HALF, others);
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
