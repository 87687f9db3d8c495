//! One player's tick: respawn, then each queued command's movement, fire and pickups.
//!
//! This is the unit of work the parallel world schedules by cell, and the unit the benchmark
//! baselines run under their own synchronisation; it reads the world only through
//! [`Neighbourhood`] and writes only the player it returns and the intents it records.

use crate::combat::fire;
use crate::command::UserCmd;
use crate::intent::{Claim, Effects};
use crate::item::wants;
use crate::map::{Map, MoveClip};
use crate::math::{Aabb, Vec3};
use crate::movement::{GroundMemo, pmove_clip};
use crate::neighbourhood::Neighbourhood;
use crate::player::{PlayerState, flags};
use crate::rules::{ITEM_HALF, Rules};

/// Reusable per-thread buffers for [`step_player`].
#[derive(Debug, Default)]
pub struct StepScratch {
    boxes: Vec<Aabb>,
}

/// Advances one player by one tick of `dt_ms` given its queued commands (in order).
///
/// Commands beyond [`Rules::max_command_ms_per_tick`] are dropped. A dead player's commands are
/// dropped until it respawns.
#[allow(clippy::too_many_arguments)] // the rule inputs are all distinct; a struct would only rename them
pub fn step_player(
    prev: &PlayerState,
    cmds: &[UserCmd],
    dt_ms: i32,
    map: &Map,
    rules: &Rules,
    world: &impl Neighbourhood,
    fx: &mut Effects,
    scratch: &mut StepScratch,
) -> PlayerState {
    let mut p = *prev;
    if !begin_tick(&mut p, dt_ms, map, rules) {
        return p;
    }
    let mut budget = rules.max_command_ms_per_tick as i32;
    let claims_before = fx.claims.len();
    let mut ground = GroundMemo::default();
    for cmd in cmds {
        let Some(cmd) = clip_command(cmd, &mut budget) else {
            break;
        };
        let area = move_area(&p, cmd.msec, rules);
        scratch.boxes.clear();
        world.boxes_near(&area, p.id, &mut scratch.boxes);
        let clip = MoveClip {
            map,
            others_area: Some(area),
        };
        pmove_clip(&mut p, &cmd, &clip, &scratch.boxes, rules, &mut ground);
        fire(&mut p, &cmd, map, world, rules, fx);
        touch_items(&p, map, rules, world, fx, claims_before);
        if !p.alive() {
            break;
        }
    }
    p
}

/// Start-of-tick bookkeeping: clears the muzzle flash, counts a dead player's respawn timer down
/// and respawns it when due. Returns whether the player runs commands this tick.
pub fn begin_tick(p: &mut PlayerState, dt_ms: i32, map: &Map, rules: &Rules) -> bool {
    p.set(flags::FIRED, false);
    if !p.alive() {
        p.respawn_ms -= dt_ms;
        if p.respawn_ms > 0 {
            return false;
        }
        p.respawn(map, rules);
    }
    true
}

/// Charges a command against the per-tick time budget; `None` once the budget is spent.
pub fn clip_command(cmd: &UserCmd, budget: &mut i32) -> Option<UserCmd> {
    let msec = i32::from(cmd.msec).min(*budget);
    if msec <= 0 {
        return None;
    }
    *budget -= msec;
    Some(UserCmd {
        msec: msec as u8,
        ..*cmd
    })
}

/// The seed's move bounding box: everything one command of `msec` could reach.
pub fn move_area(p: &PlayerState, msec: u8, rules: &Rules) -> Aabb {
    let reach = (p.velocity.length() + rules.max_speed + rules.jump_velocity)
        * (f32::from(msec) / 1000.0)
        + rules.step_height
        + 1.0;
    p.bbox().expanded(Vec3::splat(reach))
}

/// Records claims on the available items `p` touches and wants (at most one per item since
/// `from`, the index of this player's first claim in `fx`).
pub fn touch_items(
    p: &PlayerState,
    map: &Map,
    rules: &Rules,
    world: &impl Neighbourhood,
    fx: &mut Effects,
    from: usize,
) {
    if !p.alive() {
        return;
    }
    let me = p.bbox();
    map.items_near(&me, |i| {
        let spot = &map.items()[i as usize];
        let already = fx.claims[from..].iter().any(|c| c.item == i);
        if !already
            && world.item_available(i)
            && Aabb::around(spot.origin, ITEM_HALF).overlaps(&me)
            && wants(p, spot.kind, rules)
        {
            fx.claims.push(Claim {
                item: i,
                player: p.id,
            });
        }
    });
}
