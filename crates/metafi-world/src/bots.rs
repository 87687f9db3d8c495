//! Seeded bot behaviours that generate action files.
//!
//! The seeds replayed recorded human input; we generate it. Each bot is simulated with the real
//! movement rules against the map (ignoring other players and combat, which the replayed world
//! adds), decides every command from its own seeded generator and the other bots' positions a
//! step earlier, and the commands it sends are recorded. Behaviours:
//!
//! - **roam**: walk between random waypoints, jump when stuck, shoot at whoever comes close;
//! - **hunt**: chase the nearest bot, strafe when close, shoot it;
//! - **camp**: walk to a spot near the spawn, stay, and shoot whoever is in range;
//! - **converge**: everybody runs to one point of the map and fights there;
//! - **mixed**: a quarter each of roam, hunt, camp and roam again.
//!
//! Every bot's decision depends only on the previous step, so generation runs in parallel and
//! gives the same file for any pool size.

use rayon::ThreadPool;
use rayon::prelude::*;

use crate::actions::{ActionFile, BotTrack, TimedCmd};
use crate::cells::{Buckets, CellGeom};
use crate::command::{Buttons, PlayerId, UserCmd, Weapon};
use crate::map::Map;
use crate::math::{Aabb, Vec3, pitch_towards, view_vectors, yaw_towards};
use crate::movement::pmove;
use crate::player::{PlayerState, mix};
use crate::rng::Rng;
use crate::rules::{EYE_HEIGHT, Rules};

/// What the bots do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Behaviour {
    Roam,
    Hunt,
    Camp,
    Converge,
    Mixed,
}

impl Behaviour {
    pub const ALL: [Behaviour; 5] = [
        Behaviour::Roam,
        Behaviour::Hunt,
        Behaviour::Camp,
        Behaviour::Converge,
        Behaviour::Mixed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Behaviour::Roam => "roam",
            Behaviour::Hunt => "hunt",
            Behaviour::Camp => "camp",
            Behaviour::Converge => "converge",
            Behaviour::Mixed => "mixed",
        }
    }

    pub fn parse(s: &str) -> Option<Behaviour> {
        Behaviour::ALL.into_iter().find(|b| b.name() == s)
    }

    /// The behaviour bot `i` follows.
    fn of_bot(self, i: usize) -> Behaviour {
        match (self, i % 4) {
            (Behaviour::Mixed, 1) => Behaviour::Hunt,
            (Behaviour::Mixed, 2) => Behaviour::Camp,
            (Behaviour::Mixed, _) => Behaviour::Roam,
            (b, _) => b,
        }
    }
}

/// What to generate.
#[derive(Clone, Debug, PartialEq)]
pub struct BotSpec {
    pub behaviour: Behaviour,
    pub bots: usize,
    /// Length of each recording.
    pub duration_ms: u32,
    /// Client frame length; the seeds' clients sent one command every ~30 ms.
    pub command_ms: u8,
    pub seed: u64,
}

const SIGHT: f32 = 2048.0;
const RETARGET_MS: u32 = 500;
const CELL: f32 = 256.0;

#[derive(Clone, Debug)]
struct Bot {
    p: PlayerState,
    role: Behaviour,
    rng: Rng,
    goal: Vec3,
    target: Option<u32>,
    stuck_ms: u32,
    weapon: Weapon,
    strafe: i16,
}

/// Generates one track per bot.
pub fn generate(map: &Map, spec: &BotSpec, pool: &ThreadPool) -> ActionFile {
    let rules = Rules::default();
    let spawns = map.spawns();
    let b = map.bounds();
    let mut meet = Rng::new(spec.seed ^ 0xc0de);
    let meeting = Vec3::new(
        b.min.x + (b.max.x - b.min.x) * meet.range(0.35, 0.65),
        b.min.y + (b.max.y - b.min.y) * meet.range(0.35, 0.65),
        0.0,
    );
    let mut bots: Vec<Bot> = (0..spec.bots)
        .map(|i| {
            let mut rng = Rng::new(spec.seed ^ mix(i as u64));
            let s = spawns[rng.below(spawns.len() as u32) as usize];
            let p = PlayerState::spawned(PlayerId(i as u32), s.origin, s.yaw, &rules);
            let role = spec.behaviour.of_bot(i);
            let goal = match role {
                Behaviour::Converge => meeting,
                Behaviour::Camp => near_point(&mut rng, s.origin, 384.0, b),
                _ => near_point(&mut rng, s.origin, 1500.0, b),
            };
            let weapon = if rng.chance(0.35) {
                Weapon::RocketLauncher
            } else {
                Weapon::MachineGun
            };
            Bot {
                p,
                role,
                rng,
                goal,
                target: None,
                stuck_ms: 0,
                weapon,
                strafe: 320,
            }
        })
        .collect();
    let mut tracks: Vec<BotTrack> = bots
        .iter()
        .map(|bot| BotTrack {
            id: bot.p.id.0,
            behaviour: bot.role.name().into(),
            spawn: bot.p.origin,
            yaw: bot.p.yaw,
            commands: Vec::with_capacity(
                (spec.duration_ms / u32::from(spec.command_ms.max(1))) as usize + 1,
            ),
        })
        .collect();
    let step = u32::from(spec.command_ms.max(1));
    let mut index = Buckets::new(CellGeom::covering(b, CELL));
    let (mut entries, mut order) = (Vec::new(), Vec::new());
    let mut t = 0;
    while t < spec.duration_ms {
        entries.clear();
        entries.extend(
            bots.iter()
                .enumerate()
                .map(|(i, bot)| (index.geom.cell_of(bot.p.origin), i as u32)),
        );
        index.rebuild(&entries, &mut order);
        let positions: Vec<Vec3> = bots.iter().map(|bot| bot.p.origin).collect();
        let retarget = t % RETARGET_MS == 0;
        let cmds: Vec<UserCmd> = pool.install(|| {
            bots.par_iter_mut()
                .enumerate()
                .map(|(i, bot)| {
                    if retarget || bot.target.is_none() {
                        bot.target = nearest(&index, &positions, i as u32, bot.p.origin);
                    }
                    let cmd = decide(bot, &positions, step as u8, map);
                    pmove(&mut bot.p, &cmd, map, &[], &rules);
                    cmd
                })
                .collect()
        });
        for (track, cmd) in tracks.iter_mut().zip(cmds) {
            track.commands.push(TimedCmd { at_ms: t, cmd });
        }
        t += step;
    }
    ActionFile { bots: tracks }
}

fn near_point(rng: &mut Rng, around: Vec3, radius: f32, b: &Aabb) -> Vec3 {
    let x = (around.x + rng.range(-radius, radius)).clamp(b.min.x + 128.0, b.max.x - 128.0);
    let y = (around.y + rng.range(-radius, radius)).clamp(b.min.y + 128.0, b.max.y - 128.0);
    Vec3::new(x, y, around.z)
}

/// Nearest other bot within sight, by a ring search over the position index.
fn nearest(index: &Buckets<u32>, positions: &[Vec3], me: u32, at: Vec3) -> Option<u32> {
    let mut best: Option<(f32, u32)> = None;
    let rings = (SIGHT / CELL) as i32;
    let (cx, cy) = index.geom.cell_xy(at.x, at.y);
    for r in 0..=rings {
        let area = Aabb::around(at, Vec3::new(CELL * r as f32, CELL * r as f32, 0.0));
        let rect = index.geom.rect(&area);
        for y in rect.y0..=rect.y1 {
            for x in rect.x0..=rect.x1 {
                let ring = (x as i32 - cx as i32)
                    .abs()
                    .max((y as i32 - cy as i32).abs());
                if ring != r {
                    continue;
                }
                for &j in index.cell(index.geom.index(x, y)) {
                    let d2 = (positions[j as usize] - at).length_squared();
                    if j != me && d2 < SIGHT * SIGHT && best.is_none_or(|b| (d2, j) < b) {
                        best = Some((d2, j));
                    }
                }
            }
        }
        if best.is_some_and(|(d2, _)| d2 < (CELL * r as f32).powi(2)) {
            break;
        }
    }
    best.map(|(_, j)| j)
}

/// One command for one bot.
fn decide(bot: &mut Bot, positions: &[Vec3], msec: u8, map: &Map) -> UserCmd {
    let at = bot.p.origin;
    let target = bot.target.map(|j| positions[j as usize]);
    let dist = target.map_or(f32::INFINITY, |t| (t - at).length());
    // Where to walk.
    let walk_to = match bot.role {
        Behaviour::Hunt if dist < SIGHT => target,
        Behaviour::Camp if (bot.goal - at).length_xy() < 48.0 => None,
        _ => Some(bot.goal),
    };
    if bot.role == Behaviour::Roam && (bot.goal - at).length_xy() < 96.0 {
        bot.goal = near_point(&mut bot.rng, at, 1500.0, map.bounds());
    }
    let speed = bot.p.velocity.length_xy();
    bot.stuck_ms = if walk_to.is_some() && speed < 60.0 {
        bot.stuck_ms + u32::from(msec)
    } else {
        0
    };
    let mut buttons = Buttons::NONE;
    if bot.stuck_ms > 400 {
        buttons = buttons.with(Buttons::JUMP);
        if bot.stuck_ms > 1200 && bot.role != Behaviour::Converge {
            bot.goal = near_point(&mut bot.rng, at, 1500.0, map.bounds());
            bot.stuck_ms = 0;
        }
    }
    // Where to look: at the target when engaging, else where we walk.
    let engage = match bot.role {
        Behaviour::Roam => 800.0,
        Behaviour::Camp => 2000.0,
        _ => 1500.0,
    };
    let eye = at + Vec3::new(0.0, 0.0, EYE_HEIGHT);
    let (yaw, pitch) = match (target, walk_to) {
        (Some(t), _) if dist < engage => {
            let aim = t + Vec3::new(0.0, 0.0, EYE_HEIGHT - 8.0);
            (yaw_towards(eye, aim), pitch_towards(eye, aim))
        }
        (_, Some(w)) => (yaw_towards(at, w), 0),
        _ => (bot.p.yaw.wrapping_add(bot.rng.below(600) as u16), 0),
    };
    if target.is_some() && dist < engage && bot.rng.chance(0.8) {
        buttons = buttons.with(Buttons::ATTACK);
    }
    // Move relative to the view: forward/side components of the wished world direction.
    let (fwd, right) = view_vectors(yaw, 0);
    let (mut forward, mut side) = (0i16, 0i16);
    if let Some(w) = walk_to {
        let close = bot.role == Behaviour::Hunt && dist < 256.0;
        let wish = (w - at).normalized();
        if !close {
            forward = (wish.dot(fwd) * 320.0) as i16;
            side = (wish.dot(right) * 320.0) as i16;
        }
        if close || (bot.role == Behaviour::Converge && (w - at).length_xy() < 256.0) {
            if bot.rng.chance(0.05) {
                bot.strafe = -bot.strafe;
            }
            side = bot.strafe;
        }
    }
    if bot.rng.chance(0.01) {
        bot.weapon = if bot.weapon == Weapon::MachineGun {
            Weapon::RocketLauncher
        } else {
            Weapon::MachineGun
        };
    }
    UserCmd {
        msec,
        yaw,
        pitch,
        forward,
        side,
        up: 0,
        buttons,
        weapon: bot.weapon,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map_gen;

    fn pool(n: usize) -> ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .expect("pool")
    }

    #[test]
    fn generation_is_seeded_and_independent_of_pool_size() {
        let map = Map::build(map_gen::arena(1), &pool(1)).expect("map");
        let spec = BotSpec {
            behaviour: Behaviour::Mixed,
            bots: 40,
            duration_ms: 3000,
            command_ms: 30,
            seed: 9,
        };
        let a = generate(&map, &spec, &pool(1));
        let b = generate(&map, &spec, &pool(3));
        assert_eq!(a, b);
        assert_eq!(a.bots.len(), 40);
        assert_eq!(a.bots[0].commands.len(), 100);
    }

    #[test]
    fn converging_bots_end_up_closer_together() {
        let map = Map::build(map_gen::arena(2), &pool(1)).expect("map");
        let spec = BotSpec {
            behaviour: Behaviour::Converge,
            bots: 30,
            duration_ms: 8000,
            command_ms: 30,
            seed: 4,
        };
        let file = generate(&map, &spec, &pool(2));
        let rules = Rules::default();
        let spread = |ps: &[Vec3]| {
            let c = ps.iter().fold(Vec3::ZERO, |a, &p| a + p) * (1.0 / ps.len() as f32);
            ps.iter().map(|&p| (p - c).length_xy()).sum::<f32>() / ps.len() as f32
        };
        let start: Vec<Vec3> = file.bots.iter().map(|b| b.spawn).collect();
        let end: Vec<Vec3> = file
            .bots
            .iter()
            .map(|b| {
                let mut p = PlayerState::spawned(PlayerId(b.id), b.spawn, b.yaw, &rules);
                for c in &b.commands {
                    pmove(&mut p, &c.cmd, &map, &[], &rules);
                }
                p.origin
            })
            .collect();
        assert!(
            spread(&end) < spread(&start) * 0.6,
            "{} vs {}",
            spread(&end),
            spread(&start)
        );
    }
}
