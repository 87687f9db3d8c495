//! The player grid: players stored in cell order, so a cell is a contiguous slice.
//!
//! Rebuilt once per tick by a counting sort after commands move players (players that changed
//! cell "migrate" here, in one deterministic pass). Cells are [`GRID_CELL`] units wide — many
//! more cells than cores — and consecutive occupied cells are grouped into tasks for the
//! work-stealing pool.

use std::ops::Range;

use crate::cells::{CellGeom, counting_sort};
use crate::command::PlayerId;
use crate::item::ItemState;
use crate::math::{Aabb, Vec3, segment_enters};
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

    /// Writes `src` into `dst` in cell order (stable within a cell) and indexes the cells.
    pub fn sort_into(
        &mut self,
        src: &[PlayerState],
        dst: &mut Vec<PlayerState>,
        cells: &mut Vec<u32>,
        order: &mut Vec<u32>,
    ) {
        cells.clear();
        cells.extend(src.iter().map(|p| self.geom.cell_of(p.origin)));
        counting_sort(cells, self.geom.count(), &mut self.starts, order);
        dst.clear();
        dst.extend(order.iter().map(|&i| src[i as usize]));
    }

    pub fn cell(&self, c: u32) -> Range<usize> {
        self.starts[c as usize] as usize..self.starts[c as usize + 1] as usize
    }

    /// Splits the player array into work items: runs of whole cells with at least `min_len`
    /// players each (the last may be shorter).
    pub fn tasks(&self, min_len: usize, out: &mut Vec<Range<usize>>) {
        out.clear();
        let total = *self.starts.last().unwrap_or(&0) as usize;
        let mut begin = 0usize;
        for c in 0..self.geom.count() {
            let end = self.starts[c + 1] as usize;
            if end - begin >= min_len {
                out.push(begin..end);
                begin = end;
            }
        }
        if begin < total {
            out.push(begin..total);
        }
    }
}

/// The neighbourhood as seen from the grid over one immutable player array.
#[derive(Clone, Copy, Debug)]
pub struct GridView<'a> {
    pub grid: &'a PlayerGrid,
    pub players: &'a [PlayerState],
    pub items: &'a [ItemState],
}

impl GridView<'_> {
    fn for_each_in(&self, area: &Aabb, mut f: impl FnMut(&PlayerState)) {
        // Players are filed under their centre's cell: grow the area by a player half-size so
        // every box overlapping it is visited.
        let r = self.grid.geom.rect(&area.expanded(PLAYER_HALF));
        for cy in r.y0..=r.y1 {
            for cx in r.x0..=r.x1 {
                for p in &self.players[self.grid.cell(self.grid.geom.index(cx, cy))] {
                    if p.alive() {
                        f(p);
                    }
                }
            }
        }
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
        let pieces = (delta.length_xy() / GRID_CELL).ceil().max(1.0) as u32;
        let mut best: Option<(f32, PlayerId)> = None;
        for k in 0..pieces {
            let t1 = (k + 1) as f32 / pieces as f32;
            let a = from + delta * (k as f32 / pieces as f32);
            let b = from + delta * t1;
            self.for_each_in(&Aabb::new(a.min(b), a.max(b)), |p| {
                if p.id == skip {
                    return;
                }
                if let Some((t, _)) = segment_enters(from, delta, &p.bbox())
                    && best.is_none_or(|bb| (t, p.id) < bb)
                {
                    best = Some((t, p.id));
                }
            });
            // Anything entered before t1 has its cell inside the pieces walked so far.
            if best.is_some_and(|(t, _)| t <= t1) {
                break;
            }
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
