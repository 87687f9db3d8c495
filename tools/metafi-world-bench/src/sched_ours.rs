//! Our design: `metafi_world::World` on a work-stealing pool.

use std::time::Instant;

use metafi_world::{Phase, World, WorldConfig};
use rayon::ThreadPool;

use crate::measure::{RunOutcome, RunPlan, TickSample, TickWork, fold_hash};
use crate::workload::{ACK_DELAY, Feeder, TICK_MS, Workload, acked};

pub fn run(
    work: &Workload,
    pool: &ThreadPool,
    plan: &RunPlan,
    config: WorldConfig,
) -> anyhow::Result<RunOutcome> {
    let mut world = World::new(work.map.clone(), config)?;
    for bot in &work.actions.bots {
        world.join_at(bot.spawn, bot.yaw)?;
    }
    let players = work.actions.bots.len();
    let ids: Vec<_> = world.players().iter().map(|p| p.id).collect();
    let mut feeder = Feeder::new(0..players);
    let mut cmds = Vec::new();
    let mut out = RunOutcome {
        players,
        hash_digest: Some(0),
        ..RunOutcome::default()
    };
    let mut measured_start: Option<Instant> = None;
    let mut tick = 0u32;
    loop {
        tick += 1;
        let measuring = tick > plan.warmup;
        if measuring {
            let start = *measured_start.get_or_insert_with(Instant::now);
            if plan.done(tick - plan.warmup - 1, start.elapsed()) {
                break;
            }
        }
        if let Some(t) = tick.checked_sub(ACK_DELAY).filter(|&t| t > 0) {
            for &id in &ids {
                if acked(id.0 as usize, t) {
                    world.ack(id, t)?;
                }
            }
        }
        cmds.clear();
        feeder.fill(&work.actions, tick, &mut cmds);
        let mut marks = [Instant::now(); 5];
        let begin = Instant::now();
        let sum = world.tick_observed(
            pool,
            u64::from(tick) * u64::from(TICK_MS),
            &cmds,
            &mut |phase| {
                let k = match phase {
                    Phase::Physics => 0,
                    Phase::Commands => 1,
                    Phase::Merge => 2,
                    Phase::Snapshots => 3,
                    Phase::Done => 4,
                };
                marks[k] = Instant::now();
            },
        );
        let end = Instant::now();
        if tick <= plan.hash_ticks() {
            out.hash_digest = out.hash_digest.map(|d| fold_hash(d, world.state_hash()));
        }
        if measuring {
            let ns = |a: Instant, b: Instant| b.saturating_duration_since(a).as_nanos() as u64;
            out.samples.push(TickSample {
                total_ns: ns(begin, end),
                phase_ns: [
                    ns(marks[0], marks[1]),
                    ns(marks[1], marks[2]),
                    ns(marks[2], marks[3]),
                    ns(marks[3], marks[4]),
                ],
                bytes: sum.snapshot_bytes,
                entities: sum.entities_sent,
                work: TickWork {
                    commands: sum.commands as u32,
                    hits: sum.hits as u32,
                    kills: sum.kills as u32,
                    launches: sum.launches as u32,
                    projectiles: sum.projectiles as u32,
                },
            });
            out.hits += sum.hits as u64;
            out.kills += sum.kills as u64;
        }
    }
    let wall: u64 = out.samples.iter().map(|s| s.total_ns).sum();
    out.thread_ns = wall * pool.current_num_threads() as u64;
    Ok(out)
}
