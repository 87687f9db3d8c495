//! The reply (snapshot) phase of the baselines: the same interest rules, tiers and delta codec as
//! the world, with candidates found through the areanode tree instead of the grid.

use metafi_world::client::ClientTable;
use metafi_world::interest::{Filter, InterestScratch, apply_tiers, keep_nearest};
use metafi_world::item::ItemState;
use metafi_world::snapshot::{
    EntityKind, NetEntity, PlayerView, dequantize3, entity_key, kind_of, quantize3,
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
    /// `(key, index into net)` sorted by key, to find a rocket a client already follows.
    pub by_key: Vec<(u32, u32)>,
}

impl ProjectileFrame {
    pub fn refile(&mut self, tree: &AreaTree) {
        self.nodes.resize(tree.nodes.len(), Vec::new());
        self.nodes.iter_mut().for_each(Vec::clear);
        self.net.clear();
        self.by_key.clear();
        for (i, p) in self.list.iter().enumerate() {
            let n = tree.node_for(&Aabb::around(p.origin, Vec3::splat(1.0)));
            self.nodes[n as usize].push(i as u32);
            let e = NetEntity::of_projectile(p);
            self.by_key.push((e.key, i as u32));
            self.net.push(e);
        }
        self.by_key.sort_unstable();
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

/// How the reply reads the state it does not own: the players linked to an areanode, one
/// player by id, one item by index.
pub struct ReplySources<'a, 'b> {
    pub players_in: &'a mut NodePlayers<'b>,
    pub player: &'a dyn Fn(u32) -> NetEntity,
    pub item: &'a dyn Fn(u32) -> ItemState,
}

/// Builds and encodes the snapshot of client `i` of `clients` (whose player is `viewer`).
/// Between interest refreshes the client keeps its previous set, as the world does. Returns
/// (bytes, entities).
pub fn reply(
    viewer: &PlayerState,
    tick: u32,
    clients: &mut ClientTable,
    i: usize,
    ctx: &ReplyCtx<'_>,
    src: &mut ReplySources<'_, '_>,
    scratch: &mut InterestScratch,
) -> (u64, u64) {
    let at = dequantize3(quantize3(viewer.origin));
    let row = ctx.map.vis().row(viewer.origin);
    let filter = Filter::new(at, &row, ctx.cfg);
    let refresh = ctx.cfg.refreshes(tick, viewer.id.0);
    let mut sent = 0;
    let bytes = clients.send(i, tick, |prev, view, out| {
        *view = PlayerView::of(viewer);
        match prev {
            Some(prev) if !refresh => keep(prev.entities, &filter, ctx, src, scratch),
            _ => choose(viewer, at, &filter, ctx, src, scratch),
        }
        sent = scratch.chosen.len() as u64;
        apply_tiers(tick, &scratch.chosen, &scratch.pool, prev, out)
    });
    (bytes as u64, sent)
}

/// A refresh: candidates through the areanode tree, then the nearest `max_entities`.
fn choose(
    viewer: &PlayerState,
    at: Vec3,
    filter: &Filter<'_>,
    ctx: &ReplyCtx<'_>,
    src: &mut ReplySources<'_, '_>,
    scratch: &mut InterestScratch,
) {
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
        (src.players_in)(node, &mut |e| {
            if e.key != me {
                offer(e);
            }
        });
        for &j in &ctx.projectiles.nodes[node as usize] {
            offer(ctx.projectiles.net[j as usize]);
        }
    });
    ctx.map
        .items_near(&area, |i| offer(NetEntity::of_item(i, &(src.item)(i))));
    keep_nearest(scratch, ctx.cfg);
}

/// Between refreshes: the previous snapshot's entities that still exist and are still of
/// interest, with current states (the world's `interest::keep`, over this server's stores).
fn keep(
    prev: &[NetEntity],
    filter: &Filter<'_>,
    ctx: &ReplyCtx<'_>,
    src: &mut ReplySources<'_, '_>,
    scratch: &mut InterestScratch,
) {
    scratch.chosen.clear();
    scratch.pool.clear();
    for e in prev {
        let id = e.key & 0x3fff_ffff;
        let now = match kind_of(e.key) {
            k if k == EntityKind::Player as u32 => Some((src.player)(id)),
            k if k == EntityKind::Item as u32 => Some(NetEntity::of_item(id, &(src.item)(id))),
            _ => {
                let frame = ctx.projectiles;
                let at = frame.by_key.binary_search_by_key(&e.key, |k| k.0).ok();
                at.map(|a| frame.net[frame.by_key[a].1 as usize])
            }
        };
        if let Some((now, d2)) = now.and_then(|n| Some((n, filter.admits(&n)?))) {
            let tier = ctx.cfg.tier(f32::from_bits(d2));
            let index = scratch.pool.len() as u64;
            scratch
                .chosen
                .push(u64::from(e.key) << 32 | u64::from(tier) << 30 | index);
            scratch.pool.push(now);
        }
    }
}
