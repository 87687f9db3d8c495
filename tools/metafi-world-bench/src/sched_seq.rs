//! The seed's sequential server (QuakeWorld): one thread, and per frame world physics, then each
//! request in turn against the live world (effects applied at once), then a reply per client.
//! Objects live in an areanode tree and are relinked after every move.

use std::time::Instant;

use metafi_world::client::ClientTable;
use metafi_world::intent::{Effects, apply_hits, resolve_claims};
use metafi_world::interest::InterestScratch;
use metafi_world::item::ItemState;
use metafi_world::snapshot::NetEntity;
use metafi_world::step::{StepScratch, step_player};
use metafi_world::{Command, PlayerId, PlayerState, Projectile, UserCmd, WorldConfig};

use crate::areatree::AreaTree;
use crate::measure::{RunOutcome, RunPlan, TickSample, fold_hash};
use crate::replies::{ProjectileFrame, ReplyCtx, ReplySources, reply};
use crate::treeview::{NodeLists, TreeView};
use crate::workload::{ACK_DELAY, Feeder, TICK_MS, Workload, acked};

/// Leaf size for the areanode tree: Quake's 16 leaves on an arena, finer on large maps.
pub const LEAF_SIZE: f32 = 1024.0;

struct Lists<'a> {
    tree: &'a AreaTree,
    lists: &'a [Vec<u32>],
    players: &'a [PlayerState],
    items: &'a [ItemState],
}

impl NodeLists for Lists<'_> {
    fn tree(&self) -> &AreaTree {
        self.tree
    }

    fn each_in_node(&self, node: u32, mut f: impl FnMut(&PlayerState)) {
        for &i in &self.lists[node as usize] {
            let p = &self.players[i as usize];
            if p.alive() {
                f(p);
            }
        }
    }

    fn item_available(&self, index: u32) -> bool {
        self.items
            .get(index as usize)
            .is_some_and(ItemState::available)
    }
}

pub fn run(work: &Workload, plan: &RunPlan) -> anyhow::Result<RunOutcome> {
    let map = &*work.map;
    let config = WorldConfig::default();
    let rules = &config.rules;
    let tree = AreaTree::new(map.bounds(), AreaTree::depth_for(map.bounds(), LEAF_SIZE));
    let n = work.actions.bots.len();
    let mut players: Vec<PlayerState> = work
        .actions
        .bots
        .iter()
        .enumerate()
        .map(|(i, b)| PlayerState::spawned(PlayerId(i as u32), b.spawn, b.yaw, rules))
        .collect();
    let mut lists = vec![Vec::new(); tree.nodes.len()];
    let mut linked: Vec<u32> = players.iter().map(|p| tree.node_for(&p.bbox())).collect();
    for (i, &node) in linked.iter().enumerate() {
        lists[node as usize].push(i as u32);
    }
    let mut items: Vec<ItemState> = map.items().iter().map(ItemState::new).collect();
    let mut frame = ProjectileFrame::default();
    let mut net: Vec<NetEntity> = Vec::with_capacity(n);
    let mut next_projectile = 0u32;
    let mut clients = ClientTable::new(n, config.interest.max_entities);
    let mut feeder = Feeder::new(0..n);
    let (mut cmds, mut mine) = (Vec::<Command>::new(), vec![Vec::<UserCmd>::new(); n]);
    let (mut fx, mut scratch, mut interest) = (
        Effects::default(),
        StepScratch::default(),
        InterestScratch::default(),
    );
    let mut out = RunOutcome {
        players: n,
        hash_digest: Some(0),
        ..RunOutcome::default()
    };
    let mut measured_start: Option<Instant> = None;
    let dt = TICK_MS as i32;
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
            for i in 0..n {
                if acked(i, t) {
                    clients.ack(i, t);
                }
            }
        }
        cmds.clear();
        feeder.fill(&work.actions, tick, &mut cmds);
        mine.iter_mut().for_each(Vec::clear);
        let t0 = Instant::now();
        for c in &cmds {
            mine[c.player.0 as usize].push(c.cmd);
        }
        let (mut hits, mut kills) = (0u64, 0u64);

        // P: world physics, rockets exploding straight into the live world.
        let flying = std::mem::take(&mut frame.list);
        for rocket in &flying {
            fx.hits.clear();
            let view = TreeView(Lists {
                tree: &tree,
                lists: &lists,
                players: &players,
                items: &items,
            });
            let next = rocket.advance(dt, map, &view, rules, &mut fx.hits);
            frame.list.extend(next);
            hits += fx.hits.len() as u64;
            kills += apply_hits(&fx.hits, &mut players, |id| Some(id.0 as usize), rules) as u64;
        }
        items.iter_mut().for_each(|it| it.advance(dt));
        let t1 = Instant::now();

        // Rx/E: each request in turn, seeing every earlier move of this frame.
        for i in 0..n {
            fx.clear();
            let view = TreeView(Lists {
                tree: &tree,
                lists: &lists,
                players: &players,
                items: &items,
            });
            let next = step_player(
                &players[i],
                &mine[i],
                dt,
                map,
                rules,
                &view,
                &mut fx,
                &mut scratch,
            );
            players[i] = next;
            let node = tree.node_for(&players[i].bbox());
            if node != linked[i] {
                let old = &mut lists[linked[i] as usize];
                if let Some(k) = old.iter().position(|&j| j == i as u32) {
                    old.swap_remove(k);
                }
                lists[node as usize].push(i as u32);
                linked[i] = node;
            }
            hits += fx.hits.len() as u64;
            kills += apply_hits(&fx.hits, &mut players, |id| Some(id.0 as usize), rules) as u64;
            resolve_claims(
                &fx.claims,
                &mut items,
                &mut players,
                |id| Some(id.0 as usize),
                rules,
            );
            for l in &fx.launches {
                frame
                    .list
                    .push(Projectile::launched(next_projectile, l, rules));
                next_projectile = next_projectile.wrapping_add(1);
            }
        }
        let t2 = Instant::now();

        // T/Tx: a reply per client. Entity states are built once per frame, not per client.
        frame.refile(&tree);
        net.clear();
        net.extend(players.iter().map(NetEntity::of_player));
        let (mut bytes, mut entities) = (0u64, 0u64);
        let ctx = ReplyCtx {
            map,
            cfg: &config.interest,
            tree: &tree,
            projectiles: &frame,
        };
        let mut players_in = |node: u32, f: &mut dyn FnMut(NetEntity)| {
            for &j in &lists[node as usize] {
                f(net[j as usize]);
            }
        };
        let mut src = ReplySources {
            players_in: &mut players_in,
            player: &|id| net[id as usize],
            item: &|k| items[k as usize],
        };
        for (i, viewer) in players.iter().enumerate() {
            let (b, e) = reply(viewer, tick, &mut clients, i, &ctx, &mut src, &mut interest);
            bytes += b;
            entities += e;
        }
        let t3 = Instant::now();

        if tick <= plan.hash_ticks() {
            out.hash_digest = out
                .hash_digest
                .map(|d| fold_hash(d, hash(&players, &frame.list, &items, tick)));
        }
        if measuring {
            let ns = |a: Instant, b: Instant| b.saturating_duration_since(a).as_nanos() as u64;
            out.samples.push(TickSample {
                total_ns: ns(t0, t3),
                phase_ns: [ns(t0, t1), ns(t1, t2), 0, ns(t2, t3)],
                bytes,
                entities,
                ..TickSample::default()
            });
            out.hits += hits;
            out.kills += kills;
        }
    }
    out.thread_ns = out.samples.iter().map(|s| s.total_ns).sum();
    Ok(out)
}

/// Same shape of hash as the world's, for the baseline's own reproducibility check.
fn hash(players: &[PlayerState], rockets: &[Projectile], items: &[ItemState], tick: u32) -> u64 {
    let mut h = u64::from(tick);
    for p in players {
        for w in p.to_words() {
            h = (h ^ u64::from(w)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    for r in rockets {
        h = (h ^ u64::from(r.origin.x.to_bits())).wrapping_mul(0x0000_0100_0000_01b3);
    }
    for it in items {
        h = (h ^ it.respawn_ms as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use metafi_world::bots::Behaviour;

    use super::*;
    use crate::workload::MapKind;

    #[test]
    fn sequential_server_is_reproducible_and_fights() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("pool");
        let work = Workload::build(MapKind::Arena, 64, Behaviour::Hunt, &pool).expect("workload");
        let plan = RunPlan {
            warmup: 5,
            min_ticks: 30,
            max_ticks: 30,
            max_wall: Duration::ZERO,
        };
        let a = run(&work, &plan).expect("run");
        let b = run(&work, &plan).expect("run");
        assert_eq!(a.hash_digest, b.hash_digest);
        assert!(a.hits > 0);
    }
}
