//! The player grid: players stored in cell order, so a cell is a contiguous slice.
//!
//! Rebuilt once per tick by a counting sort after commands move players (players that changed
//! cell "migrate" here, in one deterministic pass). Cells are [`GRID_CELL`] units wide — many
//! more cells than cores — and consecutive occupied cells are grouped into tasks for the
//! work-stealing pool.

use std::ops::Range;

use rayon::ThreadPool;
use rayon::prelude::*;

use crate::cells::{CellGeom, CellRect, GATHER_MAX, GATHER_MIN, counting_sort};
use crate::command::PlayerId;
use crate::item::ItemState;
use crate::math::{Aabb, Segment, Vec3};
use crate::neighbourhood::Neighbourhood;
use crate::player::PlayerState;
use crate::rules::PLAYER_HALF;

/// Side of a player-grid cell in units.
pub const GRID_CELL: f32 = 256.0;

/// Cell index over a cell-ordered player array.
#[derive(Clone, Debug)]
pub struct PlayerGrid {
    pub geom: CellGeom,
    /// `starts[c]..starts[c + 1]` are the indices of the players in cell `c`.
    starts: Vec<u32>,
}

impl PlayerGrid {
    pub fn new(bounds: &Aabb) -> PlayerGrid {
        let geom = CellGeom::covering(bounds, GRID_CELL);
        let starts = vec![0; geom.count() + 1];
        PlayerGrid { geom, starts }
    }

    /// `cells[i]`: the cell of `players[i]`, computed in `pool`.
    pub fn cells_of(&self, pool: &ThreadPool, players: &[PlayerState], cells: &mut Vec<u32>) {
        let geom = &self.geom;
        pool.install(|| {
            players
                .par_iter()
                .with_min_len(GATHER_MIN)
                .with_max_len(GATHER_MAX)
                .map(|p| geom.cell_of(p.origin))
                .collect_into_vec(cells)
        });
    }

    /// Indexes the cells of players whose cells are `cells` (one per player) and fills
    /// `order`: `order[k]` is the index of the player that goes to place `k` in grid order
    /// (stable within a cell). A sequential counting sort, O(players + cells); only the
    /// cells, not the players, are read, so it can run while the players are still changed.
    pub fn file(&mut self, cells: &[u32], order: &mut Vec<u32>) {
        counting_sort(cells, self.geom.count(), &mut self.starts, order);
    }

    pub fn cell(&self, c: u32) -> Range<usize> {
        self.starts[c as usize] as usize..self.starts[c as usize + 1] as usize
    }

    /// Splits the player array into work items: runs of whole cells with at least `min_len`
    /// players each (the last may be shorter).
    ///
    /// Each item ends at the first cell boundary at least `min_len` players after its start,
    /// found by binary search over the cells' start offsets (they only grow): the cost is per
    /// item, not per cell, so a large sparse map's empty cells cost nothing.
    pub fn tasks(&self, min_len: usize, out: &mut Vec<Range<usize>>) {
        out.clear();
        let total = *self.starts.last().unwrap_or(&0) as usize;
        let ends = &self.starts[1..];
        let min_len = min_len.max(1);
        let mut begin = 0usize;
        while begin < total {
            let want = begin + min_len;
            let c = ends.partition_point(|&e| (e as usize) < want);
            let end = ends.get(c).map_or(total, |&e| e as usize);
            out.push(begin..end);
            begin = end;
        }
    }
}

/// `dst[k] = src[order[k]]`, gathered in `pool` (`order` from [`PlayerGrid::file`]).
pub fn gather(pool: &ThreadPool, src: &[PlayerState], order: &[u32], dst: &mut Vec<PlayerState>) {
    pool.install(|| {
        order
            .par_iter()
            .with_min_len(GATHER_MIN)
            .with_max_len(GATHER_MAX)
            .map(|&i| src[i as usize])
            .collect_into_vec(dst)
    });
}

/// The neighbourhood as seen from the grid over one immutable player array.
#[derive(Clone, Copy, Debug)]
pub struct GridView<'a> {
    pub grid: &'a PlayerGrid,
    pub players: &'a [PlayerState],
    pub items: &'a [ItemState],
}

impl GridView<'_> {
    /// Cells holding every player whose box can overlap `area`: players are filed under their
    /// centre's cell, so the area is grown by a player half-size.
    fn cells_for(&self, area: &Aabb) -> CellRect {
        self.grid.geom.rect(&area.expanded(PLAYER_HALF))
    }

    fn for_each_in(&self, area: &Aabb, f: impl FnMut(&PlayerState)) {
        self.for_each_in_cells(self.cells_for(area), None, f);
    }

    /// Calls `f` with every living player filed in a cell of `r` but not of `skip`, in
    /// player-array order.
    ///
    /// The cells of one row of `r` are consecutive in the array, so their players are one
    /// slice, or two around the cells `skip` takes out of the row: a slice per row costs two
    /// lookups, where a cell at a time cost two per cell.
    fn for_each_in_cells(
        &self,
        r: CellRect,
        skip: Option<CellRect>,
        mut f: impl FnMut(&PlayerState),
    ) {
        let mut visit = |cy: u32, x0: u32, x1: u32| {
            for p in self.row(cy, x0, x1) {
                if p.alive() {
                    f(p);
                }
            }
        };
        for cy in r.y0..=r.y1 {
            match skip {
                Some(s) if (s.y0..=s.y1).contains(&cy) && s.x0 <= r.x1 && r.x0 <= s.x1 => {
                    if r.x0 < s.x0 {
                        visit(cy, r.x0, s.x0 - 1);
                    }
                    if s.x1 < r.x1 {
                        visit(cy, s.x1 + 1, r.x1);
                    }
                }
                _ => visit(cy, r.x0, r.x1),
            }
        }
    }

    /// The players filed in cells `x0..=x1` of row `cy`.
    // Always inlined: every row of every neighbourhood query reads one, and as a call it cost
    // more than its two lookups (0.3 M instructions per tick at 10,000 players).
    #[inline(always)]
    fn row(&self, cy: u32, x0: u32, x1: u32) -> &[PlayerState] {
        let geom = &self.grid.geom;
        let start = self.grid.cell(geom.index(x0, cy)).start;
        let end = self.grid.cell(geom.index(x1, cy)).end;
        &self.players[start..end]
    }
}

impl Neighbourhood for GridView<'_> {
    fn boxes_near(&self, area: &Aabb, me: PlayerId, out: &mut Vec<Aabb>) {
        self.for_each_in(area, |p| {
            let b = p.bbox();
            if p.id != me && b.overlaps(area) {
                out.push(b);
            }
        });
    }

    fn first_hit(&self, from: Vec3, to: Vec3, skip: PlayerId) -> Option<(PlayerId, f32)> {
        let delta = to - from;
        let segment = Segment::new(from, delta);
        let pieces = (delta.length_xy() / GRID_CELL).ceil().max(1.0) as u32;
        let mut best: Option<(f32, PlayerId)> = None;
        // Consecutive pieces share cells; pieces move monotonically along the segment, so a
        // cell seen before was seen by the previous piece and is skipped (the minimum over the
        // players visited does not depend on the order).
        let mut prev: Option<CellRect> = None;
        // Each piece starts at the very point (same bits) where the previous one ended.
        let mut a = from;
        for k in 0..pieces {
            let t1 = (k + 1) as f32 / pieces as f32;
            let b = from + delta * t1;
            let r = self.cells_for(&Aabb::new(a.min(b), a.max(b)));
            self.for_each_in_cells(r, prev, |p| {
                if p.id == skip {
                    return;
                }
                if let Some((t, _)) = segment.enters(&p.bbox())
                    && best.is_none_or(|bb| (t, p.id) < bb)
                {
                    best = Some((t, p.id));
                }
            });
            // Anything entered before t1 has its cell inside the pieces walked so far.
            if best.is_some_and(|(t, _)| t <= t1) {
                break;
            }
            prev = Some(r);
            a = b;
        }
        best.map(|(t, id)| (id, t))
    }

    fn within(&self, center: Vec3, radius: f32, f: &mut dyn FnMut(PlayerId, Vec3)) {
        self.for_each_in(&Aabb::around(center, Vec3::splat(radius)), |p| {
            if p.bbox().distance_to(center) <= radius {
                f(p.id, p.origin);
            }
        });
    }

    fn item_available(&self, index: u32) -> bool {
        self.items
            .get(index as usize)
            .is_some_and(ItemState::available)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::player::PlayerState;

    /// `players` in grid order as the tick files them (cells, counting sort, gather on a pool
    /// of `threads`), and `order[k]`: the index in `players` of the k-th.
    fn filed(
        grid: &mut PlayerGrid,
        threads: usize,
        players: &[PlayerState],
    ) -> (Vec<PlayerState>, Vec<u32>) {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool");
        let (mut sorted, mut cells, mut order) = (Vec::new(), Vec::new(), Vec::new());
        grid.cells_of(&pool, players, &mut cells);
        grid.file(&cells, &mut order);
        gather(&pool, players, &order, &mut sorted);
        (sorted, order)
    }

    /// Walking a row of cells as one slice visits the players a walk cell by cell visits, in
    /// the same order, with and without cells to skip (overlapping the rectangle or not).
    #[test]
    fn rows_of_cells_visit_what_single_cells_visit() {
        let bounds = Aabb::new(Vec3::new(0.0, 0.0, -64.0), Vec3::new(2048.0, 2048.0, 512.0));
        let mut grid = PlayerGrid::new(&bounds);
        let mut rng = crate::rng::Rng::new(11);
        let players: Vec<PlayerState> = (0..300)
            .map(|i| {
                let mut p = PlayerState {
                    id: PlayerId(i),
                    origin: Vec3::new(2048.0 * rng.unit(), 2048.0 * rng.unit(), 24.0),
                    ..PlayerState::default()
                };
                p.set(crate::player::flags::DEAD, rng.chance(0.2));
                p
            })
            .collect();
        let (sorted, _) = filed(&mut grid, 1, &players);
        let view = GridView {
            grid: &grid,
            players: &sorted,
            items: &[],
        };
        let n = grid.geom.nx;
        let rect = |rng: &mut crate::rng::Rng| {
            let (x0, y0) = (rng.below(n), rng.below(n));
            CellRect {
                x0,
                y0,
                x1: x0 + rng.below(n - x0),
                y1: y0 + rng.below(n - y0),
            }
        };
        let mut seen = 0;
        for _ in 0..2000 {
            let r = rect(&mut rng);
            let skip = rng.chance(0.8).then(|| rect(&mut rng));
            let mut got = Vec::new();
            view.for_each_in_cells(r, skip, |p| got.push(p.id));
            let mut want = Vec::new();
            for cy in r.y0..=r.y1 {
                for cx in r.x0..=r.x1 {
                    if skip.is_some_and(|s| s.contains(cx, cy)) {
                        continue;
                    }
                    let cell = &sorted[grid.cell(grid.geom.index(cx, cy))];
                    want.extend(cell.iter().filter(|p| p.alive()).map(|p| p.id));
                }
            }
            assert_eq!(got, want, "{r:?} skipping {skip:?}");
            seen += got.len();
        }
        assert!(seen > 10_000, "too few players visited: {seen}");
    }

    /// Work items are whole cells with at least `min_len` players (the last may be shorter),
    /// cover every player once, and match a walk over every cell.
    #[test]
    fn tasks_are_runs_of_whole_cells_covering_every_player() {
        let bounds = Aabb::new(Vec3::new(0.0, 0.0, -64.0), Vec3::new(8192.0, 8192.0, 512.0));
        let mut grid = PlayerGrid::new(&bounds);
        let mut seed = 7u64;
        let mut next = || {
            seed = crate::player::mix(seed);
            (seed % 8192) as f32
        };
        let players: Vec<PlayerState> = (0..900)
            .map(|i| PlayerState {
                id: PlayerId(i),
                origin: Vec3::new(next(), next() / 4.0, 24.0),
                ..PlayerState::default()
            })
            .collect();
        let (sorted, order) = filed(&mut grid, 2, &players);
        // Grouped by cell, stable within a cell, and `order` names each player's source.
        let cell = |p: &PlayerState| grid.geom.cell_of(p.origin);
        for (k, w) in sorted.windows(2).enumerate() {
            let (a, b) = (cell(&w[0]), cell(&w[1]));
            assert!(a < b || (a == b && order[k] < order[k + 1]), "at {k}");
        }
        for (k, &i) in order.iter().enumerate() {
            assert_eq!(sorted[k].id, players[i as usize].id);
        }
        for min_len in [1, 5, 32, 100, 2000] {
            let mut got = Vec::new();
            grid.tasks(min_len, &mut got);
            let mut want = Vec::new();
            let mut begin = 0;
            for c in 0..grid.geom.count() as u32 {
                let end = grid.cell(c).end;
                if end - begin >= min_len {
                    want.push(begin..end);
                    begin = end;
                }
            }
            if begin < players.len() {
                want.push(begin..players.len());
            }
            assert_eq!(got, want, "min_len {min_len}");
        }
    }
}
