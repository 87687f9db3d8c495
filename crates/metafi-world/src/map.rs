//! The static world: solid brushes indexed by ground column, spawn points, item spots and the
//! potentially-visible set. Built once from a validated [`MapSpec`]; immutable and shared by every
//! thread afterwards.

use rayon::ThreadPool;

use crate::cells::{Buckets, CellGeom, CellRect};
use crate::map_spec::{ItemKind, MapError, MapSpec, vec3};
use crate::math::{Aabb, Segment, Vec3};
use crate::vis::VisTable;

/// Side of a map column in units. Small enough that a column holds a handful of brushes, large
/// enough that a player's move touches one to four columns.
pub const COLUMN_SIZE: f32 = 256.0;
/// Distance kept between a moving box and any surface, as Quake's `DIST_EPSILON`: a box that
/// stops short of a wall starts its next move outside it even after f32 rounding.
pub const TRACE_EPSILON: f32 = 1.0 / 32.0;

/// Where a player may appear.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spawn {
    pub origin: Vec3,
    pub yaw: u16,
}

/// A pickup's fixed place in the map.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ItemSpot {
    pub kind: ItemKind,
    pub origin: Vec3,
}

/// Result of sweeping a box (or a point) through the world.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Trace {
    /// Fraction of the move completed, `1.0` if nothing was hit.
    pub fraction: f32,
    /// Where the box ended.
    pub end: Vec3,
    /// Unit normal of the surface hit (axis aligned), zero if nothing was hit.
    pub normal: Vec3,
}

impl Trace {
    pub fn hit(&self) -> bool {
        self.fraction < 1.0
    }
}

/// Solid geometry and its column index.
#[derive(Clone, Debug)]
pub struct Solids {
    pub brushes: Vec<Aabb>,
    /// Brushes that lie in every column (a map-wide floor slab), in index order. Kept out of
    /// `columns`: a long ray would test them once per column it visits, a box sweep once per
    /// column under it, and each column's list would be one entry longer.
    spanning: Vec<u32>,
    /// The other brushes by column, in index order within a column.
    columns: Buckets<u32>,
    /// One bit per column, set if `columns` lists a brush there. Most columns of an open map
    /// hold none, and a long ray crosses dozens: the bits of the whole map fit in the L1 cache,
    /// the column starts do not.
    occupied: Vec<u64>,
}

/// A loaded, validated map.
#[derive(Clone, Debug)]
pub struct Map {
    name: String,
    bounds: Aabb,
    solids: Solids,
    spawns: Vec<Spawn>,
    items: Vec<ItemSpot>,
    /// Item indices by column, for "which pickups does this player touch".
    item_cells: Buckets<u32>,
    vis: VisTable,
    spec: MapSpec,
}

impl Map {
    /// Validates `spec` and builds the column index and the visibility table (in `pool`).
    pub fn build(spec: MapSpec, pool: &ThreadPool) -> Result<Map, MapError> {
        spec.validate()?;
        let bounds = spec.bounds.aabb();
        let brushes: Vec<Aabb> = spec.brushes.iter().map(|b| b.aabb()).collect();
        let solids = Solids::new(brushes, &bounds);
        let spawns = spec
            .spawns
            .iter()
            .map(|s| Spawn {
                origin: vec3(s.origin),
                yaw: degrees_to_units(s.yaw),
            })
            .collect();
        let items: Vec<ItemSpot> = spec
            .items
            .iter()
            .map(|i| ItemSpot {
                kind: i.kind,
                origin: vec3(i.origin),
            })
            .collect();
        let geom = CellGeom::covering(&bounds, COLUMN_SIZE);
        let entries: Vec<(u32, u32)> = items
            .iter()
            .enumerate()
            .map(|(i, it)| (geom.cell_of(it.origin), i as u32))
            .collect();
        let mut item_cells = Buckets::new(geom);
        item_cells.rebuild(&entries, &mut Vec::new());
        let vis = VisTable::build(&solids, &bounds, pool);
        Ok(Map {
            name: spec.name.clone(),
            bounds,
            solids,
            spawns,
            items,
            item_cells,
            vis,
            spec,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn bounds(&self) -> &Aabb {
        &self.bounds
    }

    pub fn brushes(&self) -> &[Aabb] {
        &self.solids.brushes
    }

    pub fn spawns(&self) -> &[Spawn] {
        &self.spawns
    }

    pub fn items(&self) -> &[ItemSpot] {
        &self.items
    }

    /// Calls `f` with the index of every item whose centre column overlaps `area` grown by one
    /// item half-size (so every item that can touch `area` is seen), in column order.
    pub fn items_near(&self, area: &Aabb, mut f: impl FnMut(u32)) {
        self.item_cells
            .for_each_in(&area.expanded(crate::rules::ITEM_HALF), |&i| f(i));
    }

    pub fn vis(&self) -> &VisTable {
        &self.vis
    }

    /// The map as it was loaded, for writing back to a file.
    pub fn spec(&self) -> &MapSpec {
        &self.spec
    }

    /// Sweeps a box of half-size `half` from `start` to `end` against the brushes and the extra
    /// boxes `others` (other players). See [`Solids::trace_box`].
    pub fn trace_box(&self, start: Vec3, end: Vec3, half: Vec3, others: &[Aabb]) -> Trace {
        self.solids.trace_box(start, end, half, others)
    }

    /// Fraction of the segment travelled before it enters a brush (`1.0` if clear).
    pub fn trace_ray(&self, start: Vec3, end: Vec3) -> f32 {
        self.solids.trace_ray(start, end)
    }

    /// Whether a box sweep enters any brush or any of `others`. See [`Solids::enters_any`].
    pub fn enters_any(&self, start: Vec3, end: Vec3, half: Vec3, others: &[Aabb]) -> bool {
        self.solids.enters_any(start, end, half, others)
    }

    /// True if `area` overlaps no brush and lies inside the bounds.
    pub fn is_clear(&self, area: &Aabb) -> bool {
        let inside = area.min.x >= self.bounds.min.x
            && area.min.y >= self.bounds.min.y
            && area.max.x <= self.bounds.max.x
            && area.max.y <= self.bounds.max.y;
        inside && self.solids.is_clear(area)
    }
}

impl Solids {
    pub fn new(brushes: Vec<Aabb>, bounds: &Aabb) -> Solids {
        let geom = CellGeom::covering(bounds, COLUMN_SIZE);
        let everywhere = CellRect {
            x0: 0,
            y0: 0,
            x1: geom.nx - 1,
            y1: geom.ny - 1,
        };
        let mut entries = Vec::new();
        let mut spanning = Vec::new();
        for (i, b) in brushes.iter().enumerate() {
            let r = geom.rect(b);
            if r == everywhere {
                spanning.push(i as u32);
                continue;
            }
            for cy in r.y0..=r.y1 {
                for cx in r.x0..=r.x1 {
                    entries.push((geom.index(cx, cy), i as u32));
                }
            }
        }
        let mut occupied = vec![0u64; geom.count().div_ceil(64)];
        for &(c, _) in &entries {
            occupied[c as usize / 64] |= 1 << (c % 64);
        }
        let mut columns = Buckets::new(geom);
        columns.rebuild(&entries, &mut Vec::new());
        Solids {
            brushes,
            spanning,
            columns,
            occupied,
        }
    }

    /// Sweeps a box against brushes and `others`.
    ///
    /// The box stops [`TRACE_EPSILON`] short of the first surface it would enter, so the end
    /// position is always outside every solid it started outside of. A box that starts inside a
    /// solid may move out of it (Quake's behaviour for stuck players).
    ///
    /// Candidates are the brushes of the columns under the swept box, in column order (row by
    /// row) and brush order within a column, then `others`; the earliest entry wins and an
    /// exact tie keeps the first candidate.
    pub fn trace_box(&self, start: Vec3, end: Vec3, half: Vec3, others: &[Aabb]) -> Trace {
        let mut sweep = Sweep::new(start, end, half);
        let geom = &self.columns.geom;
        let r = geom.rect(&sweep.swept);
        // The spanning brushes come where every column used to list them: merged by index
        // into the first column's brushes (later columns only repeated them, and a repeat never
        // wins a strict comparison), so the candidate order, and with it every tie, is as before.
        let first = self.columns.cell(geom.index(r.x0, r.y0));
        sweep.consider_merged(&self.brushes, first, &self.spanning);
        // The rest row by row: a row's columns are one slice, in column order.
        for cy in r.y0..=r.y1 {
            let x0 = if cy == r.y0 { r.x0 + 1 } else { r.x0 };
            if x0 <= r.x1 {
                for &i in self.columns.row(cy, x0, r.x1) {
                    sweep.consider(&self.brushes[i as usize]);
                }
            }
        }
        sweep.finish(others)
    }

    /// Whether the sweep [`Solids::trace_box`] would consider enters any of its candidates: the
    /// same candidates and the same entry test, without finding which is entered first.
    ///
    /// The order no longer matters, so the first candidate entered answers, and the likeliest
    /// come first: the spanning brushes (the floor most players stand on), which need no column
    /// lookup, then `others`, then the brushes of the columns under the swept box.
    pub fn enters_any(&self, start: Vec3, end: Vec3, half: Vec3, others: &[Aabb]) -> bool {
        let sweep = Sweep::new(start, end, half);
        let enters = |b: &Aabb| sweep.entry(b).is_some();
        if self
            .spanning
            .iter()
            .any(|&i| enters(&self.brushes[i as usize]))
            || others.iter().any(enters)
        {
            return true;
        }
        let r = self.columns.geom.rect(&sweep.swept);
        (r.y0..=r.y1).any(|cy| {
            self.columns
                .row(cy, r.x0, r.x1)
                .iter()
                .any(|&i| enters(&self.brushes[i as usize]))
        })
    }

    /// Fraction of the segment travelled before it enters a brush (`1.0` if clear).
    ///
    /// Long rays are walked in column-sized pieces so a 4096-unit shot visits a thin band of
    /// columns, not its whole bounding box. Consecutive pieces share the columns around their
    /// common point; a column is visited only by the first piece that reaches it (pieces move
    /// monotonically along the ray, so a column seen earlier was seen by the previous piece).
    /// The result is the minimum over every brush entered, whatever the visiting order.
    pub fn trace_ray(&self, start: Vec3, end: Vec3) -> f32 {
        let delta = end - start;
        let segment = Segment::new(start, delta);
        let pieces = (delta.length_xy() / COLUMN_SIZE).ceil().max(1.0) as u32;
        let geom = &self.columns.geom;
        let mut best = 1.0f32;
        for &i in &self.spanning {
            if let Some((t, _)) = segment.enters(&self.brushes[i as usize]) {
                best = best.min(t);
            }
        }
        let mut prev: Option<CellRect> = None;
        // Piece k runs from `start + delta · (k / pieces)` to the same with k + 1: each piece
        // starts at the very point (same bits) where the previous one ended.
        let mut a = start;
        for k in 0..pieces {
            let t1 = (k + 1) as f32 / pieces as f32;
            let b = start + delta * t1;
            let r = geom.rect(&Aabb::new(a.min(b), a.max(b)));
            for cy in r.y0..=r.y1 {
                for cx in r.x0..=r.x1 {
                    let c = geom.index(cx, cy);
                    if !self.is_occupied(c) || prev.is_some_and(|p| p.contains(cx, cy)) {
                        continue;
                    }
                    for &i in self.columns.cell(c) {
                        if let Some((t, _)) = segment.enters(&self.brushes[i as usize]) {
                            best = best.min(t);
                        }
                    }
                }
            }
            if best <= t1 {
                break;
            }
            prev = Some(r);
            a = b;
        }
        best
    }

    /// Whether column `c` lists any brush (spanning brushes aside).
    fn is_occupied(&self, c: u32) -> bool {
        self.occupied[c as usize / 64] >> (c % 64) & 1 != 0
    }

    pub fn is_clear(&self, area: &Aabb) -> bool {
        let mut clear = self
            .spanning
            .iter()
            .all(|&i| !self.brushes[i as usize].overlaps(area));
        self.columns
            .for_each_in(area, |&i| clear &= !self.brushes[i as usize].overlaps(area));
        clear
    }
}

/// One box sweep in progress: the candidates seen so far and the earliest entry.
struct Sweep {
    /// The path of the box's centre.
    segment: Segment,
    end: Vec3,
    half: Vec3,
    /// The box at `start` and at `end`, and everything between.
    swept: Aabb,
    /// `swept` grown by [`TRACE_EPSILON`]: a solid that does not overlap it cannot be entered,
    /// so the slab test is skipped for it (most brushes of the visited columns).
    reach: Aabb,
    best: Option<(f32, usize)>,
}

impl Sweep {
    fn new(start: Vec3, end: Vec3, half: Vec3) -> Sweep {
        let swept = swept_box(start, end, half);
        Sweep {
            segment: Segment::new(start, end - start),
            end,
            half,
            swept,
            reach: reach_of(&swept),
            best: None,
        }
    }

    /// Takes `b` as the first solid entered if the box enters it strictly before the best so
    /// far (an exact tie keeps the earlier candidate).
    // Always inlined: called once per candidate, and most candidates fail the first compare.
    #[inline(always)]
    fn consider(&mut self, b: &Aabb) {
        if let Some((t, axis)) = self.entry(b)
            && self.best.is_none_or(|(bt, _)| t < bt)
        {
            self.best = Some((t, axis));
        }
    }

    /// Where and through which axis's face the box enters `b`, if it does.
    #[inline(always)]
    fn entry(&self, b: &Aabb) -> Option<(f32, usize)> {
        if !b.overlaps(&self.reach) {
            return None;
        }
        self.segment.enters(&b.expanded(self.half))
    }

    /// Considers the brushes of two index-sorted, disjoint lists in index order.
    fn consider_merged(&mut self, brushes: &[Aabb], a: &[u32], b: &[u32]) {
        let (mut a, mut b) = (a, b);
        while let (Some(&x), Some(&y)) = (a.first(), b.first()) {
            let i = if x < y {
                a = &a[1..];
                x
            } else {
                b = &b[1..];
                y
            };
            self.consider(&brushes[i as usize]);
        }
        for &i in a.iter().chain(b) {
            self.consider(&brushes[i as usize]);
        }
    }

    /// Considers `others` (after every brush) and returns the trace.
    fn finish(&mut self, others: &[Aabb]) -> Trace {
        for o in others {
            self.consider(o);
        }
        let delta = self.segment.delta;
        match self.best {
            None => Trace {
                fraction: 1.0,
                end: self.end,
                normal: Vec3::ZERO,
            },
            Some((t, axis)) => {
                let along = delta.axis(axis).abs();
                let fraction = ((t * along - TRACE_EPSILON) / along).clamp(0.0, 1.0);
                let mut normal = Vec3::ZERO;
                normal.set_axis(axis, if delta.axis(axis) > 0.0 { -1.0 } else { 1.0 });
                Trace {
                    fraction,
                    end: self.segment.from + delta * fraction,
                    normal,
                }
            }
        }
    }
}

/// Box sweeps for one move, and what the caller knows about its list of other players.
#[derive(Clone, Copy, Debug)]
pub struct MoveClip<'a> {
    pub map: &'a Map,
    /// The area the caller's list of other players covers (every living player overlapping
    /// it is in the list), if known.
    pub others_area: Option<Aabb>,
}

impl<'a> MoveClip<'a> {
    /// Sweeps against the map, with no claim about the list of other players.
    pub fn map(map: &'a Map) -> MoveClip<'a> {
        MoveClip {
            map,
            others_area: None,
        }
    }

    /// Whether everything a sweep from `start` to `end` can enter lies in
    /// [`MoveClip::others_area`] (so the caller's list holds every player the sweep can hit).
    pub fn covers(&self, start: Vec3, end: Vec3, half: Vec3) -> bool {
        self.others_area
            .is_some_and(|a| contains(&a, &reach_of(&swept_box(start, end, half))))
    }

    /// [`Map::trace_box`].
    pub fn trace_box(&self, start: Vec3, end: Vec3, half: Vec3, others: &[Aabb]) -> Trace {
        self.map.trace_box(start, end, half, others)
    }

    /// [`Map::enters_any`].
    pub fn enters_any(&self, start: Vec3, end: Vec3, half: Vec3, others: &[Aabb]) -> bool {
        self.map.enters_any(start, end, half, others)
    }
}

/// The box of half-size `half` at `start` and at `end`, and everything between.
fn swept_box(start: Vec3, end: Vec3, half: Vec3) -> Aabb {
    Aabb::around(start, half).union(&Aabb::around(end, half))
}

/// Everything a sweep through `swept` can enter: see [`Sweep::reach`].
fn reach_of(swept: &Aabb) -> Aabb {
    swept.expanded(Vec3::splat(TRACE_EPSILON))
}

/// `inner` lies inside `outer` (boundaries may touch).
fn contains(outer: &Aabb, inner: &Aabb) -> bool {
    outer.min.x <= inner.min.x
        && outer.min.y <= inner.min.y
        && outer.min.z <= inner.min.z
        && inner.max.x <= outer.max.x
        && inner.max.y <= outer.max.y
        && inner.max.z <= outer.max.z
}

/// Converts degrees (map files) to angle units (commands and state).
pub fn degrees_to_units(deg: f32) -> u16 {
    ((deg / 360.0 * 65536.0).round() as i64).rem_euclid(65536) as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map_spec::{BoxSpec, MAP_FORMAT, SpawnSpec};
    use crate::math::segment_enters;
    use crate::rules::PLAYER_HALF;

    pub fn room() -> Map {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool");
        let b = |min: [f32; 3], max: [f32; 3]| BoxSpec { min, max };
        let spec = MapSpec {
            format: MAP_FORMAT.into(),
            name: "room".into(),
            bounds: b([0.0, 0.0, -64.0], [1024.0, 1024.0, 512.0]),
            brushes: vec![
                b([0.0, 0.0, -64.0], [1024.0, 1024.0, 0.0]),
                b([500.0, 0.0, 0.0], [532.0, 1024.0, 256.0]),
            ],
            spawns: vec![SpawnSpec {
                origin: [100.0, 100.0, 30.0],
                yaw: 0.0,
            }],
            items: vec![],
        };
        Map::build(spec, &pool).expect("valid")
    }

    #[test]
    fn box_sweep_stops_short_of_wall() {
        let map = room();
        let half = Vec3::new(16.0, 16.0, 28.0);
        let tr = map.trace_box(
            Vec3::new(400.0, 300.0, 40.0),
            Vec3::new(600.0, 300.0, 40.0),
            half,
            &[],
        );
        assert!(tr.hit());
        assert_eq!(tr.normal, Vec3::new(-1.0, 0.0, 0.0));
        assert!(tr.end.x < 484.0 && tr.end.x > 483.9, "{:?}", tr.end);
    }

    #[test]
    fn box_sweep_lands_on_floor() {
        let map = room();
        let half = Vec3::new(16.0, 16.0, 28.0);
        let tr = map.trace_box(
            Vec3::new(100.0, 100.0, 100.0),
            Vec3::new(100.0, 100.0, -100.0),
            half,
            &[],
        );
        assert_eq!(tr.normal, Vec3::new(0.0, 0.0, 1.0));
        assert!((tr.end.z - 28.0).abs() < 0.05, "{:?}", tr.end);
    }

    #[test]
    fn ray_is_blocked_by_wall_but_not_over_it() {
        let map = room();
        let f = map.trace_ray(Vec3::new(100.0, 500.0, 50.0), Vec3::new(900.0, 500.0, 50.0));
        assert!((f - 0.5).abs() < 1e-4, "{f}");
        assert_eq!(
            map.trace_ray(
                Vec3::new(100.0, 500.0, 300.0),
                Vec3::new(900.0, 500.0, 300.0)
            ),
            1.0
        );
    }

    /// A seeded random map on a 2048 × 2048 ground (8 × 8 columns): a map-wide floor, a
    /// spanning ceiling slab listed among the other brushes, and boxes on a 16-unit lattice (so
    /// faces line up and sweeps tie), many of them across several columns.
    fn random_solids(seed: u64) -> (Solids, Aabb) {
        let mut rng = crate::rng::Rng::new(seed);
        let bounds = Aabb::new(Vec3::new(0.0, 0.0, -64.0), Vec3::new(2048.0, 2048.0, 512.0));
        let mut lattice = |n: u32| 16.0 * rng.below(n) as f32;
        let mut brushes = vec![Aabb::new(
            Vec3::new(0.0, 0.0, -64.0),
            Vec3::new(2048.0, 2048.0, 0.0),
        )];
        for k in 0..160 {
            let min = Vec3::new(lattice(120), lattice(120), lattice(8));
            let size = Vec3::new(16.0 + lattice(40), 16.0 + lattice(40), 16.0 + lattice(16));
            brushes.push(Aabb::new(min, min + size));
            if k == 120 {
                brushes.push(Aabb::new(
                    Vec3::new(0.0, 0.0, 320.0),
                    Vec3::new(2048.0, 2048.0, 336.0),
                ));
            }
        }
        (Solids::new(brushes, &bounds), bounds)
    }

    /// The trace as it was before spanning brushes were split out of the columns: every brush
    /// listed in every column it covers, candidates in column order, then `others`.
    fn plain_trace_box(solids: &Solids, start: Vec3, end: Vec3, others: &[Aabb]) -> Trace {
        let geom = &solids.columns.geom;
        let mut sweep = Sweep::new(start, end, PLAYER_HALF);
        let r = geom.rect(&sweep.swept);
        for cy in r.y0..=r.y1 {
            for cx in r.x0..=r.x1 {
                for b in solids
                    .brushes
                    .iter()
                    .filter(|b| geom.rect(b).contains(cx, cy))
                {
                    sweep.consider(b);
                }
            }
        }
        sweep.finish(others)
    }

    fn trace_bits(t: &Trace) -> [u32; 7] {
        [
            t.fraction.to_bits(),
            t.end.x.to_bits(),
            t.end.y.to_bits(),
            t.end.z.to_bits(),
            t.normal.x.to_bits(),
            t.normal.y.to_bits(),
            t.normal.z.to_bits(),
        ]
    }

    /// Box sweeps and rays through the column index give exactly (bit for bit) what the plain
    /// walk over every brush gives, on varied maps, moves and rays.
    #[test]
    fn traces_match_the_plain_walk_over_every_brush() {
        let mut hits = 0;
        for seed in 0..20 {
            let (solids, _) = random_solids(seed);
            let mut rng = crate::rng::Rng::new(1000 + seed);
            // Points on the lattice or just off it, with the box's top on the lattice: faces
            // are met exactly, and often two at once.
            let mut point = |z_max: u32| {
                let jitter = if rng.chance(0.5) { 0.0 } else { rng.unit() };
                Vec3::new(
                    16.0 * rng.below(128) as f32 + jitter,
                    16.0 * rng.below(128) as f32,
                    4.0 + 16.0 * rng.below(z_max) as f32,
                )
            };
            for k in 0..300 {
                let start = point(16);
                let mut move_to = point(16);
                // Many moves are short, horizontal or climbing at 45° (ties between a wall
                // and the ceiling), as players' are.
                let rise = 16.0 * (k % 20 + 1) as f32;
                match k % 4 {
                    0 => move_to = start + (move_to - start) * (1.0 / 16.0),
                    1 => move_to.z = start.z,
                    2 => move_to = start + Vec3::new(rise, 0.0, rise),
                    _ => {}
                }
                let others = [Aabb::around(point(4), PLAYER_HALF)];
                let got = solids.trace_box(start, move_to, PLAYER_HALF, &others);
                let want = plain_trace_box(&solids, start, move_to, &others);
                assert_eq!(
                    trace_bits(&got),
                    trace_bits(&want),
                    "{start:?} -> {move_to:?}"
                );
                hits += usize::from(got.hit());

                let ray_end = point(32);
                let plain = solids
                    .brushes
                    .iter()
                    .filter_map(|b| segment_enters(start, ray_end - start, b))
                    .fold(1.0f32, |best, (t, _)| best.min(t));
                let got = solids.trace_ray(start, ray_end);
                assert_eq!(got.to_bits(), plain.to_bits(), "{start:?} -> {ray_end:?}");
            }
        }
        assert!(hits > 1000, "too few sweeps hit anything: {hits}");
    }

    /// `enters_any` says whether `trace_box` hits, on varied maps: for ground probes (straight
    /// down a quarter unit from where players stand, just above or on a brush's or another
    /// player's top, and from mid-air), with an upward normal; and for sweeps in every direction.
    #[test]
    fn enters_any_answers_whether_the_trace_hits() {
        let (mut probes_on_ground, mut sweeps_hit) = (0, 0);
        for seed in 0..20 {
            let (solids, _) = random_solids(seed);
            let mut rng = crate::rng::Rng::new(2000 + seed);
            // Above a lattice height (brush tops are on the lattice) by a player's half height
            // plus nothing, the trace's gap, a fraction of a unit or more than the probe.
            let gaps = [0.0, TRACE_EPSILON, 0.1, 0.25, 0.3, 5.0];
            for k in 0..400 {
                let lattice = |rng: &mut crate::rng::Rng, n: u32| 16.0 * rng.below(n) as f32;
                let gap = gaps[k % gaps.len()];
                let jitter = if rng.chance(0.5) { 0.0 } else { rng.unit() };
                let start = Vec3::new(
                    lattice(&mut rng, 128) + jitter,
                    lattice(&mut rng, 128),
                    lattice(&mut rng, 16) + PLAYER_HALF.z + gap,
                );
                let mut other = Vec3::new(
                    start.x + 16.0 * (rng.unit() - 0.5),
                    start.y + 16.0 * (rng.unit() - 0.5),
                    0.0,
                );
                other.z = start.z - 2.0 * PLAYER_HALF.z - gap * rng.unit();
                let others = [Aabb::around(other, PLAYER_HALF)];
                let others = &others[..k % 2];

                let probe_end = start - Vec3::new(0.0, 0.0, 0.25);
                let tr = solids.trace_box(start, probe_end, PLAYER_HALF, others);
                let on_ground = tr.hit() && tr.normal.z > 0.7;
                let any = solids.enters_any(start, probe_end, PLAYER_HALF, others);
                assert_eq!(any, on_ground, "probe from {start:?}, others {others:?}");
                probes_on_ground += usize::from(on_ground);

                let end =
                    start + Vec3::new(rng.unit() - 0.5, rng.unit() - 0.5, rng.unit() - 0.5) * 256.0;
                let tr = solids.trace_box(start, end, PLAYER_HALF, others);
                let any = solids.enters_any(start, end, PLAYER_HALF, others);
                assert_eq!(any, tr.hit(), "{start:?} -> {end:?}, others {others:?}");
                sweeps_hit += usize::from(tr.hit());
            }
        }
        // Both answers occur often, so the comparison is not one-sided.
        assert!(
            (1000..7000).contains(&probes_on_ground),
            "{probes_on_ground} of 8000 probes on ground"
        );
        assert!(
            (1000..7000).contains(&sweeps_hit),
            "{sweeps_hit} of 8000 sweeps hit"
        );
    }

    /// `items_near` (which reads rows of columns as slices) calls back with what a walk column
    /// by column finds, in the same order, on a generated map with items.
    #[test]
    fn items_near_reads_rows_as_the_column_walk() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool");
        let map = Map::build(
            crate::map_gen::open_for_players(400, 512.0 * 512.0, 3),
            &pool,
        )
        .expect("valid");
        let bounds = *map.bounds();
        let mut rng = crate::rng::Rng::new(9);
        let mut found = 0;
        for _ in 0..2000 {
            let at = Vec3::new(
                bounds.min.x + (bounds.max.x - bounds.min.x) * rng.unit(),
                bounds.min.y + (bounds.max.y - bounds.min.y) * rng.unit(),
                24.0,
            );
            let area = Aabb::around(at, Vec3::splat(600.0 * rng.unit()));
            let mut got = Vec::new();
            map.items_near(&area, |i| got.push(i));
            let (cells, mut want) = (&map.item_cells, Vec::new());
            let r = cells.geom.rect(&area.expanded(crate::rules::ITEM_HALF));
            for cy in r.y0..=r.y1 {
                for cx in r.x0..=r.x1 {
                    want.extend_from_slice(cells.cell(cells.geom.index(cx, cy)));
                }
            }
            assert_eq!(got, want, "{area:?}");
            found += got.len();
        }
        assert!(found > 300, "too few items found: {found}");
    }

    #[test]
    fn other_boxes_block_sweeps() {
        let map = room();
        let half = Vec3::new(16.0, 16.0, 28.0);
        let other = Aabb::around(Vec3::new(200.0, 100.0, 30.0), half);
        let tr = map.trace_box(
            Vec3::new(100.0, 100.0, 30.0),
            Vec3::new(300.0, 100.0, 30.0),
            half,
            &[other],
        );
        assert!(tr.end.x < 168.0 && tr.end.x > 167.9, "{:?}", tr.end);
    }
}
