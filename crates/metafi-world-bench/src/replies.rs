//! The reply (snapshot) phase of the baselines: the same interest rules, tiers and delta codec as
//! the world, with candidates found through the areanode tree instead of the grid.

use metafi_world::client::Client;
use metafi_world::interest::{Filter, InterestScratch, apply_tiers, keep_nearest};
use metafi_world::item::ItemState;
use metafi_world::snapshot::{
    EntityKind, NetEntity, PlayerView, dequantize3, entity_key, quantize3,
};
use metafi_world::{Aabb, InterestConfig, Map, PlayerState, Projectile, Vec3};

use crate::areatree::AreaTree;

/// Projectiles as of the reply phase, filed by areanode.
#[derive(Debug, Default)]
pub struct ProjectileFrame {
    pub list: Vec<Projectile>,
    /// What clients are sent for each of `list`, built once per frame.
    pub net: Vec<NetEntity>,
    /// Indices into `list` per areanode.
    pub nodes: Vec<Vec<u32>>,
}

impl ProjectileFrame {
    pub fn refile(&mut self, tree: &AreaTree) {
        self.nodes.resize(tree.nodes.len(), Vec::new());
        self.nodes.iter_mut().for_each(Vec::clear);
        self.net.clear();
        for (i, p) in self.list.iter().enumerate() {
            let n = tree.node_for(&Aabb::around(p.origin, Vec3::splat(1.0)));
            self.nodes[n as usize].push(i as u32);
            self.net.push(NetEntity::of_projectile(p));
        }
    }
}

/// Lists the players linked to an areanode, as the scheduler stores them.
pub type NodePlayers<'a> = dyn FnMut(u32, &mut dyn FnMut(NetEntity)) + 'a;

/// Read access the reply needs.
pub struct ReplyCtx<'a> {
    pub map: &'a Map,
    pub cfg: &'a InterestConfig,
    pub tree: &'a AreaTree,
    pub projectiles: &'a ProjectileFrame,
}

/// Builds and encodes one client's snapshot. `players_in` lists the players linked to a node
/// (as the scheduler stores them) and `item` reads an item's state. Returns (bytes, entities).
#[allow(clippy::too_many_arguments)] // the reply reads several independent stores
pub fn reply(
    viewer: &PlayerState,
    tick: u32,
    client: &mut Client,
    ctx: &ReplyCtx<'_>,
    players_in: &mut NodePlayers<'_>,
    item: &dyn Fn(u32) -> ItemState,
    scratch: &mut InterestScratch,
) -> (u64, u64) {
    let at = dequantize3(quantize3(viewer.origin));
    let row = ctx.map.vis().row(viewer.origin);
    let filter = Filter::new(at, &row, ctx.cfg);
    let me = entity_key(EntityKind::Player, viewer.id.0);
    let r = ctx.cfg.view_radius;
    let area = Aabb::around(at, Vec3::new(r, r, 1.0e6));
    let InterestScratch {
        candidates: cands,
        pool,
        ..
    } = scratch;
    cands.clear();
    pool.clear();
    let mut offer = |e: NetEntity| {
        if let Some(d2) = filter.admits(&e) {
            cands.push((u64::from(d2) << 32 | u64::from(e.key), pool.len() as u32));
            pool.push(e);
        }
    };
    ctx.tree.visit(&area, &mut |node, _| {
        players_in(node, &mut |e| {
            if e.key != me {
                offer(e);
            }
        });
        for &j in &ctx.projectiles.nodes[node as usize] {
            offer(ctx.projectiles.net[j as usize]);
        }
    });
    ctx.map
        .items_near(&area, |i| offer(NetEntity::of_item(i, &item(i))));
    keep_nearest(scratch, ctx.cfg);
    let n = scratch.chosen.len() as u64;
    let bytes = client.send(tick, |base, snap| {
        snap.view = PlayerView::of(viewer);
        apply_tiers(
            tick,
            &scratch.chosen,
            &scratch.pool,
            base,
            &mut snap.entities,
        );
    });
    (bytes as u64, n)
}
