//! Interest management: which entities a client hears about, and how often.
//!
//! An entity is of interest if it is within the near radius (heard, or about to be seen), or
//! within the view radius and in a cell the viewer's cell can see (the PVS). At most
//! `max_entities` are sent, nearest first. Distance tiers thin out updates: near entities every
//! tick, mid-range players every second tick, far players every fourth; between updates the
//! client keeps the value it has (the baseline's), so the delta sends nothing for them.

use crate::cells::{Buckets, CellGeom};
use crate::math::Vec3;
use crate::snapshot::{EntityKind, NetEntity, Snapshot, dequantize3, kind_of};
use crate::vis::{VIS_REACH, VisRow, VisTable};

/// Interest parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct InterestConfig {
    /// Always of interest inside this distance, visible or not.
    pub near_radius: f32,
    /// Players beyond this distance are updated every second tick.
    pub mid_radius: f32,
    /// Nothing beyond this distance; at most [`VIS_REACH`].
    pub view_radius: f32,
    /// Cap on entities per snapshot (nearest kept).
    pub max_entities: usize,
}

impl Default for InterestConfig {
    fn default() -> InterestConfig {
        InterestConfig {
            near_radius: 512.0,
            mid_radius: 1024.0,
            view_radius: VIS_REACH,
            max_entities: 32,
        }
    }
}

impl InterestConfig {
    /// Distance tier at squared distance `d2`: 0 near, 1 mid, 2 far (update every `1 << tier`
    /// ticks).
    pub fn tier(&self, d2: f32) -> u32 {
        if d2 <= self.near_radius * self.near_radius {
            0
        } else if d2 <= self.mid_radius * self.mid_radius {
            1
        } else {
            2
        }
    }
}

/// A candidate: `(squared distance bits << 32 | key, index)`. Non-negative floats order like
/// their bits, so the high word sorts by distance with the key breaking ties. `index` is the
/// entity's position in the array it was found in.
pub type Candidate = (u64, u32);

/// Reusable buffers for one thread's interest queries.
#[derive(Debug, Default)]
pub struct InterestScratch {
    pub candidates: Vec<Candidate>,
    /// The result: `key << 32 | tier << 30 | index`, sorted by key (plain integers sort fast).
    pub chosen: Vec<u64>,
    /// Entities built on the fly by callers that have no entity array (the baselines).
    pub pool: Vec<NetEntity>,
}

/// All entities of a tick, bucketed by grid cell, with what the per-viewer scan needs laid out
/// flat beside them, so the scan's inner loop reads one small record and converts nothing.
#[derive(Clone, Debug)]
pub struct EntityIndex {
    pub buckets: Buckets<NetEntity>,
    scan: Vec<ScanEntry>,
}

/// Per entity, aligned with `buckets.values()`: dequantised position, vis cell, key.
#[derive(Clone, Copy, Debug)]
struct ScanEntry {
    pos: Vec3,
    vcell: u32,
    key: u32,
}

impl EntityIndex {
    pub fn new(geom: CellGeom) -> EntityIndex {
        EntityIndex {
            buckets: Buckets::new(geom),
            scan: Vec::new(),
        }
    }

    /// Refills from `(cell, entity)` pairs.
    pub fn rebuild(
        &mut self,
        entries: &[(u32, NetEntity)],
        vis: &VisTable,
        cells: &mut Vec<u32>,
        order: &mut Vec<u32>,
    ) {
        self.buckets.rebuild(entries, cells, order);
        self.scan.clear();
        self.scan.extend(self.buckets.values().iter().map(|e| {
            let pos = dequantize3(e.origin);
            ScanEntry {
                pos,
                vcell: vis.cell_of(pos),
                key: e.key,
            }
        }));
    }

    pub fn values(&self) -> &[NetEntity] {
        self.buckets.values()
    }
}

/// Collects the entities of interest to a viewer at `eye` (quantised units), nearest first,
/// capped, into `scratch.chosen` sorted by key.
///
/// Scans a square around the viewer sized from the local density, then doubles it until no
/// unscanned cell can hold anything nearer than the current `max_entities`-th candidate: a crowd
/// costs a few cells, an open field one pass over the radius. Each row of cells is trimmed to the view circle and
/// read as one contiguous slice.
pub fn gather(
    eye: [i32; 3],
    self_key: u32,
    index: &EntityIndex,
    vis: &VisRow<'_>,
    cfg: &InterestConfig,
    scratch: &mut InterestScratch,
) {
    let cands = &mut scratch.candidates;
    cands.clear();
    let geom = &index.buckets.geom;
    let at = dequantize3(eye);
    let (cx, cy) = geom.cell_xy(at.x, at.y);
    let (x0, y0) = geom.cell_min(cx, cy);
    let edge = (at.x - x0)
        .min(at.y - y0)
        .min(x0 + geom.size - at.x)
        .min(y0 + geom.size - at.y)
        .max(0.0);
    let (near2, view2) = (
        cfg.near_radius * cfg.near_radius,
        cfg.view_radius * cfg.view_radius,
    );
    let scan_row = |y: u32, x0: i64, x1: i64, cands: &mut Vec<Candidate>| {
        let (_, my) = geom.cell_min(0, y);
        let dy = (my - at.y).max(at.y - my - geom.size).max(0.0);
        let room = view2 - dy * dy;
        if room < 0.0 {
            return;
        }
        let half = room.sqrt();
        let (lo, _) = geom.cell_xy(at.x - half, at.y);
        let (hi, _) = geom.cell_xy(at.x + half, at.y);
        let (a, b) = (x0.max(i64::from(lo)), x1.min(i64::from(hi)));
        if a > b {
            return;
        }
        let range = index.buckets.row_range(y, a as u32, b as u32);
        let first = range.start as u32;
        for (k, e) in index.scan[range].iter().enumerate() {
            let d = e.pos - at;
            let d2 = d.dot(d);
            if d2 <= view2 && (d2 <= near2 || vis.sees_cell(e.vcell)) && e.key != self_key {
                cands.push((
                    u64::from(d2.to_bits()) << 32 | u64::from(e.key),
                    first + k as u32,
                ));
            }
        }
    };
    // Everything within `view_radius` lies within this many cells of the viewer's cell.
    let max_r = (cfg.view_radius * geom.inv_size).ceil() as i64;
    let cap = cfg.max_entities;
    // First square: large enough to hold about 2 × cap entities at the density of the 3 × 3
    // cells around the viewer, so open ground is one pass and a crowd a few cells.
    let (ix, iy) = (i64::from(cx), i64::from(cy));
    let mut near = 0usize;
    for y in (iy - 1).max(0)..=(iy + 1).min(i64::from(geom.ny) - 1) {
        let (a, b) = (
            (ix - 1).max(0) as u32,
            (ix + 1).min(i64::from(geom.nx) - 1) as u32,
        );
        near += index.buckets.row_range(y as u32, a, b).len();
    }
    let wanted = 2 * cap.max(1);
    let first = if near == 0 {
        max_r
    } else {
        ((1.5 * (wanted as f32 / near as f32).sqrt()).ceil() as i64).max(1)
    };
    let (mut inner, mut r) = (-1i64, first.min(max_r));
    loop {
        for_annulus(geom.ny, cx, cy, inner, r, &mut |y, x0, x1| {
            scan_row(y, x0, x1, cands)
        });
        if r >= max_r {
            break;
        }
        if cap > 0 && cands.len() >= cap {
            let (_, kth, _) = cands.select_nth_unstable_by_key(cap - 1, |c| c.0);
            // Unscanned cells are at least r cells plus the viewer's distance to its own cell's
            // edge away.
            let bound = r as f32 * geom.size + edge;
            if f32::from_bits((kth.0 >> 32) as u32) <= bound * bound {
                break;
            }
        }
        (inner, r) = (r, (r * 2).min(max_r));
    }
    keep_nearest(scratch, cfg);
}

/// Visits the cells at Chebyshev distance `inner + 1 ..= outer` from `(cx, cy)` as row segments
/// `f(y, x0, x1)` (at most two per row; `x` may fall outside the grid, the caller clamps).
fn for_annulus(
    ny: u32,
    cx: u32,
    cy: u32,
    inner: i64,
    outer: i64,
    f: &mut impl FnMut(u32, i64, i64),
) {
    let (ny, cx, cy) = (i64::from(ny), i64::from(cx), i64::from(cy));
    for y in (cy - outer).max(0)..=(cy + outer).min(ny - 1) {
        if (y - cy).abs() > inner {
            f(y as u32, cx - outer, cx + outer);
        } else {
            f(y as u32, cx - outer, cx - inner - 1);
            f(y as u32, cx + inner + 1, cx + outer);
        }
    }
}

/// The admission test for callers that build entities one by one (the benchmark baselines):
/// the same rule as [`gather`] applies — near, or within view and in the PVS.
#[derive(Clone, Copy, Debug)]
pub struct Filter<'a> {
    at: Vec3,
    vis: &'a VisRow<'a>,
    near2: f32,
    view2: f32,
}

impl<'a> Filter<'a> {
    pub fn new(at: Vec3, vis: &'a VisRow<'a>, cfg: &InterestConfig) -> Filter<'a> {
        Filter {
            at,
            vis,
            near2: cfg.near_radius * cfg.near_radius,
            view2: cfg.view_radius * cfg.view_radius,
        }
    }

    /// Squared distance (as bits) if `e` is of interest.
    pub fn admits(&self, e: &NetEntity) -> Option<u32> {
        let d = dequantize3(e.origin) - self.at;
        let d2 = d.dot(d);
        if d2 > self.view2 || (d2 > self.near2 && !self.vis.sees(self.at + d)) {
            return None;
        }
        Some(d2.to_bits())
    }
}

/// Keeps the `max_entities` nearest of `scratch.candidates` (ties by key) and writes them to
/// `scratch.chosen`, sorted by key, with their distance tier.
pub fn keep_nearest(scratch: &mut InterestScratch, cfg: &InterestConfig) {
    let (cands, chosen) = (&mut scratch.candidates, &mut scratch.chosen);
    let cap = cfg.max_entities;
    if cands.len() > cap {
        cands.select_nth_unstable_by_key(cap, |c| c.0);
        cands.truncate(cap);
    }
    chosen.clear();
    chosen.extend(cands.iter().map(|&(order, index)| {
        let tier = cfg.tier(f32::from_bits((order >> 32) as u32));
        (order & 0xffff_ffff) << 32 | u64::from(tier) << 30 | u64::from(index)
    }));
    chosen.sort_unstable();
}

/// Fills `out` with the chosen entities (from `entities`), applying distance tiers against
/// `base` (the snapshot the client acknowledged): a mid or far player not due this tick keeps
/// its baseline value.
pub fn apply_tiers(
    tick: u32,
    chosen: &[u64],
    entities: &[NetEntity],
    base: Option<&Snapshot>,
    out: &mut Vec<NetEntity>,
) {
    out.clear();
    let old: &[NetEntity] = base.map_or(&[], |b| &b.entities);
    let mut i = 0;
    for &c in chosen {
        let (key, tier, index) = (
            (c >> 32) as u32,
            (c >> 30) as u32 & 3,
            c as u32 & 0x3fff_ffff,
        );
        while i < old.len() && old[i].key < key {
            i += 1;
        }
        let period = 1u32 << tier;
        let due = kind_of(key) != EntityKind::Player as u32 || tick.wrapping_add(key) % period == 0;
        match old.get(i) {
            Some(o) if !due && o.key == key => out.push(*o),
            _ => out.push(entities[index as usize]),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use rayon::ThreadPoolBuilder;

    use super::*;
    use crate::cells::CellGeom;
    use crate::map::Solids;
    use crate::math::Aabb;
    use crate::snapshot::{EntityKind, entity_key, quantize3};

    fn world_bounds() -> Aabb {
        Aabb::new(Vec3::new(0.0, 0.0, -64.0), Vec3::new(8192.0, 8192.0, 512.0))
    }

    fn vis() -> &'static VisTable {
        static VIS: std::sync::OnceLock<VisTable> = std::sync::OnceLock::new();
        VIS.get_or_init(|| {
            let b = world_bounds();
            let floor = Aabb::new(b.min, Vec3::new(8192.0, 8192.0, 0.0));
            let wall = Aabb::new(
                Vec3::new(3000.0, 1000.0, 0.0),
                Vec3::new(3032.0, 7000.0, 512.0),
            );
            let pool = ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .expect("pool");
            VisTable::build(&Solids::new(vec![floor, wall], &b), &b, &pool)
        })
    }

    proptest! {
        /// The ring search with early exit picks exactly what filtering every entity and keeping
        /// the nearest would pick — in a sparse field and in a crowd.
        #[test]
        fn gather_equals_brute_force(
            points in prop::collection::vec((0f32..8192.0, 0f32..8192.0), 1..300),
            crowd in any::<bool>(),
            viewer in (100f32..8000.0, 100f32..8000.0),
        ) {
            let vis = vis();
            let cfg = InterestConfig::default();
            let squeeze = if crowd { 0.1 } else { 1.0 };
            let entities: Vec<NetEntity> = points
                .iter()
                .enumerate()
                .map(|(i, &(x, y))| {
                    let (x, y) = (viewer.0 + (x - 4096.0) * squeeze, viewer.1 + (y - 4096.0) * squeeze);
                    NetEntity { key: entity_key(EntityKind::Player, i as u32), origin: quantize3(Vec3::new(x, y, 28.0)), ..NetEntity::default() }
                })
                .collect();
            let geom = CellGeom::covering(&world_bounds(), 256.0);
            let entries: Vec<(u32, NetEntity)> =
                entities.iter().map(|e| (geom.cell_of(dequantize3(e.origin)), *e)).collect();
            let mut index = EntityIndex::new(geom);
            index.rebuild(&entries, vis, &mut Vec::new(), &mut Vec::new());
            let eye = quantize3(Vec3::new(viewer.0, viewer.1, 28.0));
            let row = vis.row(dequantize3(eye));
            let mut fast = InterestScratch::default();
            gather(eye, u32::MAX, &index, &row, &cfg, &mut fast);
            let got: Vec<u32> = fast.chosen.iter().map(|c| (c >> 32) as u32).collect();

            let filter = Filter::new(dequantize3(eye), &row, &cfg);
            let mut slow = InterestScratch::default();
            for (i, e) in entities.iter().enumerate() {
                if let Some(d2) = filter.admits(e) {
                    slow.candidates.push((u64::from(d2) << 32 | u64::from(e.key), i as u32));
                }
            }
            keep_nearest(&mut slow, &cfg);
            let want: Vec<u32> = slow.chosen.iter().map(|c| (c >> 32) as u32).collect();
            prop_assert_eq!(got, want);
        }
    }
}
