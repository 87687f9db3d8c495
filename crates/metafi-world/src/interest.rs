//! Interest management: which entities a client hears about, and how often.
//!
//! An entity is of interest if it is within the near radius (heard, or about to be seen), or
//! within the view radius and in a cell the viewer's cell can see (the PVS). At most
//! `max_entities` are sent, nearest first. Distance tiers thin out updates: near entities every
//! tick, mid-range players every second tick, far players every fourth; between updates the
//! snapshot repeats the value the previous tick's snapshot had, so a tiered entity changes only
//! on its due ticks.
//!
//! **Refresh period.** Choosing the set (the scan, the nearest-first cut) is the expensive part;
//! with `refresh_ticks = n` a client's set is chosen afresh every `n`th tick (staggered by
//! client, so 1/n of the clients refresh on any tick). In between, the set is the previous
//! tick's, with current states, minus entities that left interest or the world. So an entity
//! that becomes interesting appears up to `n - 1` ticks late; one that stops being interesting
//! goes at once.

use crate::cells::{Buckets, CellGeom};
use crate::math::Vec3;
use crate::snapshot::{EntityKind, NetEntity, SnapshotRef, dequantize3, kind_of};
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
    /// A client's interest set is chosen afresh every this many ticks (staggered by client);
    /// in between it keeps the previous tick's set with current states. 1: every tick.
    pub refresh_ticks: u32,
}

impl Default for InterestConfig {
    fn default() -> InterestConfig {
        InterestConfig {
            near_radius: 512.0,
            mid_radius: 1024.0,
            view_radius: VIS_REACH,
            max_entities: 32,
            refresh_ticks: 2,
        }
    }
}

impl InterestConfig {
    /// Whether the client of player `id` chooses its interest set afresh at `tick`.
    pub fn refreshes(&self, tick: u32, id: u32) -> bool {
        self.refresh_ticks <= 1 || tick.wrapping_add(id).is_multiple_of(self.refresh_ticks)
    }

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
    /// Where [`gather`]'s scan writes its candidates before they move to `candidates`: kept at
    /// least as long as the entity index, so a write is one bounds check with no growth test.
    found: Vec<Candidate>,
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
    /// Key → index in `values()`, for the ticks a client keeps its set: one table per entity
    /// kind, indexed by `(id - base) & ID_MASK`. Player ids and item indices are dense from 0;
    /// projectile ids are handed out in sequence, so the live ones form a short window (which
    /// may straddle the id counter's wrap, hence the mask).
    tables: [KeyTable; 4],
    /// Projectiles as `(key, index)` sorted by key, when their ids do not form a window.
    scattered: Vec<(u32, u32)>,
    /// When every grid cell lies inside one vis cell (see [`vis_shift`]): vis cells are
    /// `1 << shift` grid cells wide, and the scan can test a whole row of cells for visibility
    /// at once. `None`: tested per entity only.
    vis_shift: Option<u32>,
}

/// How many times wider (as a power of two) a vis cell is than a grid cell, if every grid cell
/// lies inside one vis cell, so that an entity's vis cell follows from its grid cell: both grids
/// start at the same corner and both sizes are powers of two (so `cell_xy`'s scaling is exact
/// and a grid cell coordinate shifted right is the vis cell coordinate, clamping included).
fn vis_shift(grid: &CellGeom, vis: &CellGeom) -> Option<u32> {
    let pow2 = |v: f32| v.is_normal() && v > 0.0 && v.to_bits() & 0x7f_ffff == 0;
    let aligned = grid.min_x == vis.min_x && grid.min_y == vis.min_y;
    if !aligned || !pow2(grid.size) || !pow2(vis.size) || vis.size < grid.size {
        return None;
    }
    Some(((vis.size / grid.size) as u32).trailing_zeros())
}

/// Fills the key tables from the keys of the index's values, in value order.
fn fill_tables(
    tables: &mut [KeyTable; 4],
    scattered: &mut Vec<(u32, u32)>,
    keys: impl Iterator<Item = u32>,
) {
    for t in tables.iter_mut() {
        t.slots.fill(NONE);
    }
    scattered.clear();
    for (j, key) in keys.enumerate() {
        let kind = kind_of(key);
        if kind == EntityKind::Projectile as u32 {
            scattered.push((key, j as u32));
            continue;
        }
        let t = &mut tables[kind as usize];
        let id = (key & ID_MASK) as usize;
        if t.slots.len() <= id {
            t.slots.resize(id + 1, NONE);
        }
        t.slots[id] = j as u32;
    }
    table_projectiles(&mut tables[EntityKind::Projectile as usize], scattered);
}

/// Tables the projectiles by id if their ids form a window: the window starts after the largest
/// gap between consecutive ids, counting the gap across the counter's wrap.
fn table_projectiles(table: &mut KeyTable, ids: &mut [(u32, u32)]) {
    table.slots.clear();
    ids.sort_unstable();
    let (Some(first), Some(last)) = (ids.first(), ids.last()) else {
        return;
    };
    let id = |k: u32| (k & ID_MASK) as usize;
    let ring = ID_MASK as usize + 1;
    let (mut base, mut gap) = (id(first.0), id(first.0) + ring - id(last.0));
    for w in ids.windows(2) {
        let g = id(w[1].0) - id(w[0].0);
        if g > gap {
            (base, gap) = (id(w[1].0), g);
        }
    }
    let span = ring - gap + 1;
    if span > WINDOW_SLACK * ids.len() + 64 {
        return;
    }
    table.base = base as u32;
    table.slots.resize(span, NONE);
    for &(key, j) in ids.iter() {
        table.slots[(id(key) + ring - base) % ring] = j;
    }
}

/// Indices of one kind's entities by id.
#[derive(Clone, Debug, Default)]
struct KeyTable {
    base: u32,
    slots: Vec<u32>,
}

const ID_MASK: u32 = 0x3fff_ffff;
/// A projectile window longer than this many slots per live projectile (plus a constant) is
/// not tabled: lookups binary-search `scattered` instead.
const WINDOW_SLACK: usize = 4;

const NONE: u32 = u32::MAX;

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
            tables: Default::default(),
            scattered: Vec::new(),
            vis_shift: None,
        }
    }

    /// Refills from `(cell, entity)` pairs. The entities and their scan records are gathered
    /// in parallel in the current rayon pool (the result does not depend on its size).
    pub fn rebuild(&mut self, entries: &[(u32, NetEntity)], vis: &VisTable, order: &mut Vec<u32>) {
        let (tables, scattered) = (&mut self.tables, &mut self.scattered);
        // The key tables need only the order, so they are built beside the gather.
        let scan_record = |e: &NetEntity| {
            let pos = dequantize3(e.origin);
            ScanEntry {
                pos,
                vcell: vis.cell_of(pos),
                key: e.key,
            }
        };
        self.buckets
            .rebuild_with(entries, order, &mut self.scan, scan_record, |order| {
                let keys = order.iter().map(|&i| entries[i as usize].1.key);
                fill_tables(tables, scattered, keys)
            });
        self.vis_shift = vis_shift(&self.buckets.geom, vis.geom());
    }

    pub fn values(&self) -> &[NetEntity] {
        self.buckets.values()
    }

    /// Index in [`EntityIndex::values`] of the entity with `key`, if it exists this tick.
    #[inline]
    pub fn find(&self, key: u32) -> Option<u32> {
        let t = &self.tables[kind_of(key) as usize];
        let slot = ((key & ID_MASK).wrapping_sub(t.base) & ID_MASK) as usize;
        match t.slots.get(slot) {
            Some(&j) => (j != NONE).then_some(j),
            None if kind_of(key) == EntityKind::Projectile as u32 && t.slots.is_empty() => {
                let at = self.scattered.binary_search_by_key(&key, |o| o.0).ok();
                at.map(|a| self.scattered[a].1)
            }
            None => None,
        }
    }
}

/// Collects the entities of interest to a viewer at `eye` (quantised units), nearest first,
/// capped, into `scratch.chosen` sorted by key.
///
/// Scans a square around the viewer sized from the local density, then doubles it until no
/// unscanned cell can hold anything nearer than the current `max_entities`-th candidate: a crowd
/// costs a few cells, an open field one pass over the radius. Each row of cells is trimmed to
/// the view circle and read as one contiguous slice.
///
/// `guess` is a squared distance likely to hold `max_entities` entities of interest (from the
/// client's previous set, see [`refresh`]). The disc it describes is scanned first; if it does
/// hold that many, the nearest ones are among them and the search ends there, otherwise a disc
/// `RETRY_AREA` times larger is tried the same way, then the full search runs. A guess at or
/// beyond the view radius scans the whole view in one pass, which is the answer whatever it
/// holds. So any guess gives the same result; a good one saves most of the scan.
pub fn gather(
    eye: [i32; 3],
    self_key: u32,
    index: &EntityIndex,
    vis: &VisRow<'_>,
    cfg: &InterestConfig,
    guess: Option<f32>,
    scratch: &mut InterestScratch,
) {
    let entities = index.values().len();
    if scratch.found.len() < entities {
        scratch.found.resize(entities, (0, 0));
    }
    let cands = &mut Found {
        buf: &mut scratch.found,
        len: 0,
    };
    let geom = &index.buckets.geom;
    let at = dequantize3(eye);
    let (cx, cy) = geom.cell_xy(at.x, at.y);
    let (x0, y0) = geom.cell_min(cx, cy);
    let edge = (at.x - x0)
        .min(at.y - y0)
        .min(x0 + geom.size - at.x)
        .min(y0 + geom.size - at.y)
        .max(0.0);
    let view2 = cfg.view_radius * cfg.view_radius;
    let scan = Scan {
        index,
        at,
        near2: cfg.near_radius * cfg.near_radius,
        vis,
        self_key,
    };
    // Cells within this many of the viewer's cell hold everything within squared distance d2.
    let reach = |d2: f32| ((d2.sqrt() + 1.0) * geom.inv_size).ceil() as i64;
    let cap = cfg.max_entities;
    if let Some(g) = guess.filter(|&g| g >= 0.0).map(|g| g.min(view2)) {
        let (ix, iy) = (i64::from(cx), i64::from(cy));
        for g in [g, (g * RETRY_AREA).min(view2)] {
            let r = reach(g);
            scan.rows(iy - r..=iy + r, ix - r, ix + r, g, cands);
            if cands.len >= cap || g >= view2 {
                let found = cands.len;
                keep_found(scratch, found, cfg);
                return;
            }
            cands.len = 0;
        }
    }
    let max_r = reach(view2);
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
        for_annulus(cx, cy, inner, r, &mut |y, x0, x1| {
            scan.rows(y..=y, x0, x1, view2, cands)
        });
        if r >= max_r {
            break;
        }
        if cap > 0 && cands.len >= cap {
            let (_, kth, _) = cands.found().select_nth_unstable_by_key(cap - 1, |c| c.0);
            // Unscanned cells are at least r cells plus the viewer's distance to its own cell's
            // edge away.
            let bound = r as f32 * geom.size + edge;
            if f32::from_bits((kth.0 >> 32) as u32) <= bound * bound {
                break;
            }
        }
        (inner, r) = (r, (r * 2).min(max_r));
    }
    let found = cands.len;
    keep_found(scratch, found, cfg);
}

/// [`keep_nearest`] of the first `found` candidates of `scratch.found`.
fn keep_found(scratch: &mut InterestScratch, found: usize, cfg: &InterestConfig) {
    scratch.candidates.clear();
    scratch
        .candidates
        .extend_from_slice(&scratch.found[..found]);
    keep_nearest(scratch, cfg);
}

/// A scan's candidates, written into a buffer with room for every entity of the index: a scan
/// pass lists each entity at most once, so the buffer cannot overflow.
struct Found<'a> {
    buf: &'a mut [Candidate],
    len: usize,
}

impl Found<'_> {
    fn found(&mut self) -> &mut [Candidate] {
        &mut self.buf[..self.len]
    }
}

/// A tick between refreshes: the entities of `prev` (the client's previous snapshot, sorted by
/// key) that still exist and are still of interest, written to `out` in the same order with
/// distance tiers applied (see [`apply_tiers`]: a tiered player not due keeps its `prev`
/// value). Returns how many were written.
///
/// `prev` is sorted by key and the kind is the key's top bits, so each kind's entities are one
/// run: each run is looked up in its kind's table with the kind's branches (which table, the
/// projectiles' fallback search, tiers, which only players have) decided once per run rather
/// than once per entity.
pub fn keep(
    tick: u32,
    eye: [i32; 3],
    prev: &[NetEntity],
    index: &EntityIndex,
    vis: &VisRow<'_>,
    cfg: &InterestConfig,
    out: &mut [NetEntity],
) -> usize {
    let test = KeepTest::new(tick, eye, index, vis, cfg);
    let (players, rest) = split_after_kind(prev, EntityKind::Player);
    let (projectiles, items) = split_after_kind(rest, EntityKind::Projectile);
    let room = out.len();
    let mut slots = out.iter_mut();
    test.run::<true>(
        players,
        find_in_table(index, EntityKind::Player),
        &mut slots,
    );
    let find_projectile = |key| index.find(key).unwrap_or(NONE);
    test.run::<false>(projectiles, find_projectile, &mut slots);
    test.run::<false>(items, find_in_table(index, EntityKind::Item), &mut slots);
    room - slots.len()
}

/// Splits entities sorted by key after the last one of `kind` (or of a kind before it).
fn split_after_kind(sorted: &[NetEntity], kind: EntityKind) -> (&[NetEntity], &[NetEntity]) {
    sorted.split_at(sorted.partition_point(|e| kind_of(e.key) <= kind as u32))
}

/// [`EntityIndex::find`] for keys of one `kind` whose table is always filled (players, items:
/// never the projectiles' fallback search), with the table chosen once; `NONE` if absent.
#[inline]
fn find_in_table(index: &EntityIndex, kind: EntityKind) -> impl Fn(u32) -> u32 + '_ {
    let t = &index.tables[kind as usize];
    move |key| {
        debug_assert_eq!(kind_of(key), kind as u32);
        let slot = ((key & ID_MASK).wrapping_sub(t.base) & ID_MASK) as usize;
        t.slots.get(slot).copied().unwrap_or(NONE)
    }
}

/// [`keep`]'s interest test and tiers for one viewer.
struct KeepTest<'a> {
    tick: u32,
    at: Vec3,
    /// Within this squared distance: of interest (the near radius, capped by the view radius)
    /// and tier 0, so always due.
    near2: f32,
    mid2: f32,
    view2: f32,
    vis: &'a VisRow<'a>,
    scan: &'a [ScanEntry],
    /// The index's values, cut to the length of `scan` (which they match) so that one bounds
    /// check covers both.
    values: &'a [NetEntity],
}

impl<'a> KeepTest<'a> {
    fn new(
        tick: u32,
        eye: [i32; 3],
        index: &'a EntityIndex,
        vis: &'a VisRow<'a>,
        cfg: &InterestConfig,
    ) -> KeepTest<'a> {
        let view2 = cfg.view_radius * cfg.view_radius;
        KeepTest {
            tick,
            at: dequantize3(eye),
            near2: (cfg.near_radius * cfg.near_radius).min(view2),
            mid2: cfg.mid_radius * cfg.mid_radius,
            view2,
            vis,
            scan: &index.scan,
            values: &index.values()[..index.scan.len()],
        }
    }

    /// Keeps the entities of `run` (one kind's; `TIERED`: players) that `find` locates (an
    /// index in `values`, or `NONE`) and that are still of interest, writing them to `slots`
    /// until it runs out.
    #[inline(always)]
    fn run<const TIERED: bool>(
        &self,
        run: &[NetEntity],
        find: impl Fn(u32) -> u32,
        slots: &mut std::slice::IterMut<'_, NetEntity>,
    ) {
        for e in run {
            let j = find(e.key) as usize;
            // `NONE` is out of range too: one test for "absent" and for the bounds.
            let Some(s) = self.scan.get(j) else {
                continue;
            };
            let d = s.pos - self.at;
            let d2 = d.dot(d);
            let near = d2 <= self.near2;
            let seen = near || (d2 <= self.view2 && self.vis.sees_cell(s.vcell));
            if !seen {
                continue;
            }
            let Some(slot) = slots.next() else {
                return;
            };
            *slot = if !TIERED || near || self.player_due(e.key, d2) {
                self.values[j]
            } else {
                *e
            };
        }
    }

    /// [`due`] for a player of interest beyond the near radius: tier 1 within the mid radius,
    /// else 2.
    #[inline(always)]
    fn player_due(&self, key: u32, d2: f32) -> bool {
        let tier = if d2 <= self.mid2 { 1 } else { 2 };
        player_due(self.tick, key, tier)
    }
}

/// Whether an entity at distance tier `tier` gets its current value this tick: always for
/// near entities and for anything but players, every `2^tier`th tick (staggered by key) for
/// mid and far players.
#[inline]
fn due(tick: u32, key: u32, tier: u32) -> bool {
    tier == 0 || kind_of(key) != EntityKind::Player as u32 || player_due(tick, key, tier)
}

/// [`due`] for a player: every `2^tier`th tick, staggered by key.
#[inline]
fn player_due(tick: u32, key: u32, tier: u32) -> bool {
    tick.wrapping_add(key).is_multiple_of(1u32 << tier)
}

/// A refresh: the client's set chosen afresh by [`gather`], guessing the scan's extent from
/// where the previous set's entities were (plus room for a tick of movement) when that set was
/// full. When it was not full, fewer than `max_entities` were in view, as there most likely
/// still are: the guess is the whole view, scanned in one pass (the ring search would end up
/// scanning it all anyway, in several passes with more row segments).
pub fn refresh(
    eye: [i32; 3],
    self_key: u32,
    prev: Option<&[NetEntity]>,
    index: &EntityIndex,
    vis: &VisRow<'_>,
    cfg: &InterestConfig,
    scratch: &mut InterestScratch,
) {
    let at = dequantize3(eye);
    let guess = prev.map(|p| {
        if p.len() < cfg.max_entities {
            return f32::INFINITY;
        }
        let farthest = p.iter().fold(0.0f32, |m, e| {
            let d = dequantize3(e.origin) - at;
            m.max(d.dot(d))
        });
        let r = farthest.sqrt() + GUESS_SLACK;
        r * r
    });
    gather(eye, self_key, index, vis, cfg, guess, scratch);
}

/// Room added to the previous set's radius for what moved since (units): about two ticks of a
/// running player's travel.
const GUESS_SLACK: f32 = 48.0;

/// A guessed disc that holds too few candidates is retried this many times larger in area
/// before the full search: a guess usually misses by a few entities that moved just outside
/// it, and the full search would rescan the guessed disc in several passes.
const RETRY_AREA: f32 = 2.25;

/// Visits the cells at Chebyshev distance `inner + 1 ..= outer` from `(cx, cy)` as row segments
/// `f(y, x0, x1)` (at most two per row; `x` and `y` may fall outside the grid, the callee
/// clamps).
#[inline]
fn for_annulus(cx: u32, cy: u32, inner: i64, outer: i64, f: &mut impl FnMut(i64, i64, i64)) {
    let (cx, cy) = (i64::from(cx), i64::from(cy));
    for y in cy - outer..=cy + outer {
        if (y - cy).abs() > inner {
            f(y, cx - outer, cx + outer);
        } else {
            f(y, cx - outer, cx - inner - 1);
            f(y, cx + inner + 1, cx + outer);
        }
    }
}

/// `v` clamped to `lo..=hi` (`lo <= hi`) by plain comparisons, one instruction each
/// (`f32::clamp` also checks its bounds and handles NaN, which cannot occur here).
#[inline(always)]
fn clamp_plain(v: f32, lo: f32, hi: f32) -> f32 {
    let v = if v > lo { v } else { lo };
    if v < hi { v } else { hi }
}

/// One viewer's scan over the entity index.
struct Scan<'a> {
    index: &'a EntityIndex,
    at: Vec3,
    near2: f32,
    vis: &'a VisRow<'a>,
    self_key: u32,
}

impl Scan<'_> {
    /// Candidates within squared distance `lim2` in the cells `x0..=x1` of the rows `ys`
    /// (clamped to the grid), each row trimmed to the circle and read as one slice. At a few
    /// entities per row the per-row work matters as much as the per-entity work, so it is kept
    /// to a handful of arithmetic operations.
    #[inline]
    fn rows(
        &self,
        ys: std::ops::RangeInclusive<i64>,
        x0: i64,
        x1: i64,
        lim2: f32,
        cands: &mut Found<'_>,
    ) {
        let (index, at) = (self.index, self.at);
        let geom = &index.buckets.geom;
        let (nx, ny) = (i64::from(geom.nx), i64::from(geom.ny));
        let (x0, x1) = (x0.max(0), x1.min(nx - 1));
        if x0 > x1 {
            return;
        }
        // The viewer's offset from the grid origin, in cells.
        let (ux, uy) = (
            (at.x - geom.min_x) * geom.inv_size,
            (at.y - geom.min_y) * geom.inv_size,
        );
        for y in (*ys.start()).max(0)..=(*ys.end()).min(ny - 1) {
            // Distance in y from the viewer to the row (0 inside it), less a unit of slack so
            // rounding never skips a row that holds a candidate. Plain comparisons rather than
            // `f32::max`: nothing here is NaN, and they compile to one instruction each.
            let (above, below) = (y as f32 - uy, uy - (y + 1) as f32);
            let cells = if above > below { above } else { below };
            let gap = cells * geom.size - 1.0;
            let dy = if gap > 0.0 { gap } else { 0.0 };
            let room = lim2 - dy * dy;
            if room < 0.0 {
                continue;
            }
            // A unit of slack, so rounding in the trim can only add a cell, never miss one.
            // Truncating casts floor the non-negative values and send negative ones (and NaN)
            // to 0, the first column. Clamped first to one column past the wanted ones (small
            // integers as floats), which keeps a chord that misses them missing them.
            let half = (room.sqrt() + 1.0) * geom.inv_size;
            let a = clamp_plain(ux - half, x0 as f32, (x1 + 1) as f32) as i64;
            let b = clamp_plain(ux + half, (x0 - 1) as f32, x1 as f32) as i64;
            if a > b {
                continue;
            }
            let range = index.buckets.row_range(y as u32, a as u32, b as u32);
            let first = range.start as u32;
            // A row whose cells are all visible needs no per-entity visibility test.
            let seen = index.vis_shift.is_some_and(|s| {
                let (y, a, b) = (y as u32 >> s, a as u32 >> s, b as u32 >> s);
                self.vis.sees_all(y, a, b)
            });
            let row = &index.scan[range];
            if seen {
                self.push_row::<true>(row, first, lim2, cands);
            } else {
                self.push_row::<false>(row, first, lim2, cands);
            }
        }
    }

    /// Candidates among one row's scan records (`first` is the index of `row[0]`).
    /// `ALL_VISIBLE`: every cell of the row is in the PVS, so the per-entity test is skipped;
    /// a const parameter, so each variant compiles to its own tight loop.
    #[inline(always)]
    fn push_row<const ALL_VISIBLE: bool>(
        &self,
        row: &[ScanEntry],
        first: u32,
        lim2: f32,
        cands: &mut Found<'_>,
    ) {
        let at = self.at;
        // The count is kept in a local for the loop: kept in `cands`, it is stored back after
        // every candidate, since a panicking bounds check could observe it.
        let (buf, mut len) = (&mut *cands.buf, cands.len);
        for (k, e) in row.iter().enumerate() {
            let d = e.pos - at;
            let d2 = d.dot(d);
            if d2 <= lim2
                && (ALL_VISIBLE || d2 <= self.near2 || self.vis.sees_cell(e.vcell))
                && e.key != self.self_key
            {
                buf[len] = (
                    u64::from(d2.to_bits()) << 32 | u64::from(e.key),
                    first + k as u32,
                );
                len += 1;
            }
        }
        cands.len = len;
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
    keep_smallest(cands, cap);
    chosen.clear();
    chosen.extend(cands.iter().map(|&(order, index)| {
        let tier = cfg.tier(f32::from_bits((order >> 32) as u32));
        (order & 0xffff_ffff) << 32 | u64::from(tier) << 30 | u64::from(index)
    }));
    chosen.sort_unstable();
}

/// At most this many candidates over the cap are dropped by [`keep_smallest`]'s single pass;
/// more, by a selection.
const FEW_OVER: usize = 16;

/// Keeps (in some order) the `cap` candidates with the smallest orders, which are distinct (an
/// entity's key is in its order and a scan lists an entity once).
///
/// Usually only a few candidates are over the cap (a bounded refresh scans just past it): one
/// pass then finds the smallest of the `over` largest orders — kept ascending in a small array
/// — and drops it and everything above it. Many over: `select_nth_unstable`, whose partitions
/// cost more on a few dozen candidates.
fn keep_smallest(cands: &mut Vec<Candidate>, cap: usize) {
    let over = cands.len().saturating_sub(cap);
    if over == 0 {
        return;
    }
    if over > FEW_OVER {
        cands.select_nth_unstable_by_key(cap, |c| c.0);
        cands.truncate(cap);
        return;
    }
    let mut buf = [0u64; FEW_OVER];
    let top = &mut buf[..over];
    for (t, c) in top.iter_mut().zip(&cands[..over]) {
        *t = c.0;
    }
    top.sort_unstable();
    for c in &cands[over..] {
        if c.0 > top[0] {
            // Insert c, dropping the smallest: shift down the entries below c's place.
            let mut j = 0;
            while j + 1 < over && top[j + 1] < c.0 {
                top[j] = top[j + 1];
                j += 1;
            }
            top[j] = c.0;
        }
    }
    let cut = top[0];
    cands.retain(|c| c.0 < cut);
    debug_assert_eq!(cands.len(), cap, "candidate orders must be distinct");
}

/// Writes the chosen entities (from `entities`) to `out`, applying distance tiers: a mid or far
/// player not due this tick keeps the value it had in `prev`, the snapshot sent the tick
/// before, so its value changes only on due ticks. Returns how many were written (`out` must
/// have room for all of `chosen`).
pub fn apply_tiers(
    tick: u32,
    chosen: &[u64],
    entities: &[NetEntity],
    prev: Option<SnapshotRef<'_>>,
    out: &mut [NetEntity],
) -> usize {
    let old: &[NetEntity] = prev.map_or(&[], |p| p.entities);
    let mut i = 0;
    for (slot, &c) in out.iter_mut().zip(chosen) {
        let (key, tier, index) = (
            (c >> 32) as u32,
            (c >> 30) as u32 & 3,
            c as u32 & 0x3fff_ffff,
        );
        if !due(tick, key, tier) {
            while i < old.len() && old[i].key < key {
                i += 1;
            }
            if let Some(o) = old.get(i).filter(|o| o.key == key) {
                *slot = *o;
                continue;
            }
        }
        *slot = entities[index as usize];
    }
    chosen.len().min(out.len())
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

    /// Keys are found whatever the kind, including projectile ids that straddle the id
    /// counter's wrap, and ids too scattered for a table.
    #[test]
    fn find_locates_every_entity_by_key() {
        let geom = CellGeom::covering(&world_bounds(), 256.0);
        let wrap = ID_MASK;
        for rockets in [
            vec![7],
            vec![wrap - 2, wrap - 1, wrap, 0, 1, 5],
            vec![100, 101, 105, 180],
            vec![3, 1 << 29],
        ] {
            let mut entities: Vec<NetEntity> = rockets
                .iter()
                .map(|&id| NetEntity {
                    key: entity_key(EntityKind::Projectile, id),
                    ..NetEntity::default()
                })
                .collect();
            entities.push(NetEntity {
                key: entity_key(EntityKind::Player, 4),
                ..NetEntity::default()
            });
            entities.push(NetEntity {
                key: entity_key(EntityKind::Item, 2),
                ..NetEntity::default()
            });
            let entries: Vec<(u32, NetEntity)> = entities
                .iter()
                .enumerate()
                .map(|(i, e)| ((i * 37 % 50) as u32, *e))
                .collect();
            let mut index = EntityIndex::new(geom.clone());
            index.rebuild(&entries, vis(), &mut Vec::new());
            for e in &entities {
                let j = index.find(e.key).expect("present");
                assert_eq!(index.values()[j as usize].key, e.key);
            }
            for absent in [
                entity_key(EntityKind::Projectile, 6),
                entity_key(EntityKind::Projectile, wrap - 3),
                entity_key(EntityKind::Player, 3),
                entity_key(EntityKind::Item, 9),
            ] {
                assert_eq!(index.find(absent), None, "{rockets:?} {absent:#x}");
            }
        }
    }

    /// `keep` as one plain loop over `prev`: each entity looked up by [`EntityIndex::find`],
    /// tested and tiered on its own. What the per-kind runs must reproduce.
    fn keep_plain(
        tick: u32,
        eye: [i32; 3],
        prev: &[NetEntity],
        index: &EntityIndex,
        vis: &VisRow<'_>,
        cfg: &InterestConfig,
        out: &mut [NetEntity],
    ) -> usize {
        let at = dequantize3(eye);
        let (near2, view2) = (
            cfg.near_radius * cfg.near_radius,
            cfg.view_radius * cfg.view_radius,
        );
        let mut n = 0;
        for e in prev {
            let Some(j) = index.find(e.key) else {
                continue;
            };
            let s = &index.scan[j as usize];
            let d = s.pos - at;
            let d2 = d.dot(d);
            let near = d2 <= near2.min(view2);
            if near || (d2 <= view2 && vis.sees_cell(s.vcell)) {
                let Some(slot) = out.get_mut(n) else {
                    break;
                };
                let fresh = near || due(tick, e.key, cfg.tier(d2));
                *slot = if fresh {
                    index.values()[j as usize]
                } else {
                    *e
                };
                n += 1;
            }
        }
        n
    }

    proptest! {
        /// `keep_smallest` keeps exactly the `cap` smallest distinct orders, through its
        /// few-over pass (up to `FEW_OVER` over the cap) and its selection (more).
        #[test]
        fn keep_smallest_keeps_the_cap_smallest(
            orders in prop::collection::hash_set(0u64..1 << 40, 0..120),
            cap in 0usize..80,
        ) {
            let mut cands: Vec<Candidate> =
                orders.iter().enumerate().map(|(i, &o)| (o, i as u32)).collect();
            let mut want = cands.clone();
            want.sort_unstable();
            want.truncate(cap);
            keep_smallest(&mut cands, cap);
            cands.sort_unstable();
            prop_assert_eq!(cands, want);
        }

        /// `keep` keeps exactly what the plain per-entity loop keeps, with the same values:
        /// players (tiered, at every distance and tick parity), projectiles whose ids form a
        /// window or are scattered (the fallback search), items, keys gone from the world, and
        /// an output too small for all of them.
        #[test]
        fn keep_equals_the_plain_loop(
            points in prop::collection::vec((0u8..3, 0u32..400, -2500f32..2500.0, -2500f32..2500.0), 0..120),
            gone in prop::collection::vec((0u8..3, 0u32..400), 0..20),
            scattered in any::<bool>(),
            viewer in (600f32..7600.0, 600f32..7600.0),
            tick in any::<u32>(),
            room in 0usize..48,
            moved in -64i32..64,
        ) {
            let kinds = [EntityKind::Player, EntityKind::Projectile, EntityKind::Item];
            // Scattered projectile ids are too far apart for a table.
            let spread = if scattered { 1 << 20 } else { 1 };
            let key = |kind: u8, id: u32| {
                let id = if kind == 1 { id * spread } else { id };
                entity_key(kinds[kind as usize], id)
            };
            let mut entities: Vec<NetEntity> = points
                .iter()
                .map(|&(kind, id, dx, dy)| NetEntity {
                    key: key(kind, id),
                    origin: quantize3(Vec3::new(viewer.0 + dx, viewer.1 + dy, 28.0)),
                    yaw: id as u16,
                    ..NetEntity::default()
                })
                .collect();
            entities.sort_by_key(|e| e.key);
            entities.dedup_by_key(|e| e.key);
            let geom = CellGeom::covering(&world_bounds(), 512.0);
            let entries: Vec<(u32, NetEntity)> =
                entities.iter().map(|e| (geom.cell_of(dequantize3(e.origin)), *e)).collect();
            let mut index = EntityIndex::new(geom);
            index.rebuild(&entries, vis(), &mut Vec::new());
            // The previous set: every entity as it was a tick ago (moved, so a stale value is
            // told apart from a current one), plus keys no longer in the world.
            let mut prev: Vec<NetEntity> = entities
                .iter()
                .map(|e| NetEntity { origin: [e.origin[0] + moved, e.origin[1], e.origin[2]], flags: 1, ..*e })
                .chain(gone.iter().map(|&(kind, id)| NetEntity { key: key(kind, id + 400), ..NetEntity::default() }))
                .collect();
            prev.sort_by_key(|e| e.key);
            prev.dedup_by_key(|e| e.key);
            let eye = quantize3(Vec3::new(viewer.0, viewer.1, 28.0));
            let row = vis().row(dequantize3(eye));
            let cfg = InterestConfig::default();
            let (mut fast, mut slow) = (vec![NetEntity::default(); room], vec![NetEntity::default(); room]);
            let n = keep(tick, eye, &prev, &index, &row, &cfg, &mut fast);
            let want = keep_plain(tick, eye, &prev, &index, &row, &cfg, &mut slow);
            prop_assert_eq!(&fast[..n], &slow[..want]);
        }

        /// The ring search with early exit, a search starting from a guessed disc, and a refresh
        /// guessing from the previous set pick exactly what filtering every entity and keeping
        /// the nearest would pick — in a sparse field and in a crowd, with index cells that nest
        /// in the vis cells (whole rows tested for visibility at once) and cells that do not
        /// (384 units: every entity tested).
        #[test]
        fn gather_equals_brute_force(
            points in prop::collection::vec((0f32..8192.0, 0f32..8192.0), 1..300),
            crowd in any::<bool>(),
            viewer in (100f32..8000.0, 100f32..8000.0),
            picks in prop::collection::vec(prop::bool::weighted(0.3), 300),
            guess in 0f32..2500.0,
            cell in prop::sample::select(vec![128.0f32, 256.0, 512.0, 384.0]),
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
            let geom = CellGeom::covering(&world_bounds(), cell);
            prop_assert_eq!(vis_shift(&geom, vis.geom()).is_some(), cell != 384.0);
            let entries: Vec<(u32, NetEntity)> =
                entities.iter().map(|e| (geom.cell_of(dequantize3(e.origin)), *e)).collect();
            let mut index = EntityIndex::new(geom);
            index.rebuild(&entries, vis, &mut Vec::new());
            let eye = quantize3(Vec3::new(viewer.0, viewer.1, 28.0));
            let row = vis.row(dequantize3(eye));
            let mut fast = InterestScratch::default();
            gather(eye, u32::MAX, &index, &row, &cfg, None, &mut fast);
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
            prop_assert_eq!(&got, &want);

            // A refresh bounded by a previous set picks the same: the previous set being the
            // answer itself (the tightest bound) or any subset (sometimes full and bounding the
            // scan, sometimes not).
            let by_key = |k: u32| entities[(k & 0x3fff_ffff) as usize];
            let exact: Vec<NetEntity> = want.iter().map(|&k| by_key(k)).collect();
            let mut subset: Vec<NetEntity> = entities
                .iter()
                .zip(&picks)
                .filter(|&(_, &p)| p)
                .map(|(e, _)| *e)
                .collect();
            subset.sort_by_key(|e| e.key);
            for prev in [exact, subset] {
                let mut bounded = InterestScratch::default();
                refresh(eye, u32::MAX, Some(&prev), &index, &row, &cfg, &mut bounded);
                let got: Vec<u32> = bounded.chosen.iter().map(|c| (c >> 32) as u32).collect();
                prop_assert_eq!(&got, &want);
            }
            // And so does any guess at all.
            let mut guessed = InterestScratch::default();
            gather(eye, u32::MAX, &index, &row, &cfg, Some(guess * guess), &mut guessed);
            let got: Vec<u32> = guessed.chosen.iter().map(|c| (c >> 32) as u32).collect();
            prop_assert_eq!(&got, &want);
        }
    }
}
