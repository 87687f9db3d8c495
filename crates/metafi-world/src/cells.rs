//! Uniform 2D grids over the map's ground plane and the counting sort that fills them.
//!
//! Every spatial index in the crate (map columns, the player grid, the snapshot entity grid) is a
//! `CellGeom` plus one flat array sorted by cell: building it is O(n + cells) with no per-cell
//! allocation, and a cell's contents are one contiguous slice, which is what makes a cell a cheap
//! unit of parallel work.

use rayon::prelude::*;

use crate::math::{Aabb, Vec3};

/// Smallest run of a parallel gather (values into cell order, players or clients into grid
/// order): a few microseconds of copying, so splitting finer costs more in scheduling than it
/// saves.
pub(crate) const GATHER_MIN: usize = 1024;
/// Largest run of a parallel gather. Rayon's adaptive splitting stops at a few runs per thread,
/// and the last run, copied by one thread while the other waits, could be a quarter of the
/// gather; runs of at most twice the smallest keep that tail to a few microseconds.
pub(crate) const GATHER_MAX: usize = 2 * GATHER_MIN;

/// Geometry of a uniform grid of square cells covering the map's xy extent.
#[derive(Clone, Debug, PartialEq)]
pub struct CellGeom {
    pub min_x: f32,
    pub min_y: f32,
    pub size: f32,
    /// `1 / size`; sizes are powers of two, so multiplying is exact and matches dividing.
    pub inv_size: f32,
    pub nx: u32,
    pub ny: u32,
}

/// Inclusive cell rectangle `x0..=x1`, `y0..=y1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellRect {
    pub x0: u32,
    pub y0: u32,
    pub x1: u32,
    pub y1: u32,
}

impl CellRect {
    /// Whether cell `(cx, cy)` is in the rectangle.
    pub fn contains(&self, cx: u32, cy: u32) -> bool {
        (self.x0..=self.x1).contains(&cx) && (self.y0..=self.y1).contains(&cy)
    }
}

impl CellGeom {
    /// A grid of `size`-sided cells that covers `bounds` (at least one cell).
    pub fn covering(bounds: &Aabb, size: f32) -> CellGeom {
        let w = (bounds.max.x - bounds.min.x).max(size);
        let h = (bounds.max.y - bounds.min.y).max(size);
        CellGeom {
            min_x: bounds.min.x,
            min_y: bounds.min.y,
            size,
            inv_size: 1.0 / size,
            nx: (w / size).ceil() as u32,
            ny: (h / size).ceil() as u32,
        }
    }

    pub fn count(&self) -> usize {
        self.nx as usize * self.ny as usize
    }

    /// Cell coordinates of a point, clamped to the grid so outliers land in border cells.
    pub fn cell_xy(&self, x: f32, y: f32) -> (u32, u32) {
        (
            clamp_cell((x - self.min_x) * self.inv_size, self.nx),
            clamp_cell((y - self.min_y) * self.inv_size, self.ny),
        )
    }

    pub fn cell_of(&self, p: Vec3) -> u32 {
        let (cx, cy) = self.cell_xy(p.x, p.y);
        self.index(cx, cy)
    }

    pub fn index(&self, cx: u32, cy: u32) -> u32 {
        cy * self.nx + cx
    }

    /// Cells overlapping the xy extent of `area`.
    pub fn rect(&self, area: &Aabb) -> CellRect {
        let (x0, y0) = self.cell_xy(area.min.x, area.min.y);
        let (x1, y1) = self.cell_xy(area.max.x, area.max.y);
        CellRect { x0, y0, x1, y1 }
    }

    /// Lower-left corner of a cell.
    pub fn cell_min(&self, cx: u32, cy: u32) -> (f32, f32) {
        (
            self.min_x + cx as f32 * self.size,
            self.min_y + cy as f32 * self.size,
        )
    }
}

fn clamp_cell(v: f32, n: u32) -> u32 {
    if v.is_nan() || v <= 0.0 {
        0
    } else {
        (v as u32).min(n - 1)
    }
}

/// Stable counting sort of `cells` (one cell index per item): fills `starts` (len `ncells + 1`)
/// and `order` (item indices grouped by cell, input order kept inside a cell).
pub fn counting_sort(cells: &[u32], ncells: usize, starts: &mut Vec<u32>, order: &mut Vec<u32>) {
    counting_sort_by(cells.len(), |i| cells[i], ncells, starts, order);
}

/// [`counting_sort`] of `len` items whose cells are `cell(i)`, so callers holding the cells
/// inside larger records need not copy them out first.
pub fn counting_sort_by(
    len: usize,
    cell: impl Fn(usize) -> u32,
    ncells: usize,
    starts: &mut Vec<u32>,
    order: &mut Vec<u32>,
) {
    starts.clear();
    starts.resize(ncells + 1, 0);
    for i in 0..len {
        starts[cell(i) as usize + 1] += 1;
    }
    for i in 0..ncells {
        starts[i + 1] += starts[i];
    }
    order.clear();
    order.resize(len, 0);
    // `starts[c]` walks cell c's slot range as its items are placed, ending where cell c + 1
    // starts; shifting the array by one then restores the starts (no scratch cursor array).
    for i in 0..len {
        let slot = &mut starts[cell(i) as usize];
        order[*slot as usize] = i as u32;
        *slot += 1;
    }
    starts.copy_within(0..ncells, 1);
    starts[0] = 0;
}

/// Values bucketed by cell in one flat array.
#[derive(Clone, Debug)]
pub struct Buckets<T> {
    pub geom: CellGeom,
    starts: Vec<u32>,
    values: Vec<T>,
}

impl<T: Copy> Buckets<T> {
    pub fn new(geom: CellGeom) -> Buckets<T> {
        let starts = vec![0; geom.count() + 1];
        Buckets {
            geom,
            starts,
            values: Vec::new(),
        }
    }

    /// Refills the buckets from `(cell, value)` pairs, reusing the allocations.
    pub fn rebuild(&mut self, entries: &[(u32, T)], scratch_order: &mut Vec<u32>) {
        counting_sort_by(
            entries.len(),
            |i| entries[i].0,
            self.geom.count(),
            &mut self.starts,
            scratch_order,
        );
        self.values.clear();
        self.values
            .extend(scratch_order.iter().map(|&i| entries[i as usize].1));
    }

    /// [`Buckets::rebuild`] that also fills `side[k] = f(&values()[k])`, gathering both in
    /// parallel in the current rayon pool (the result does not depend on its size); only the
    /// counting sort is sequential. `beside(order)` (`order[k]`: the index in `entries` of
    /// value `k`) runs alongside the gather; its result is returned.
    pub fn rebuild_with<U: Send, R: Send>(
        &mut self,
        entries: &[(u32, T)],
        scratch_order: &mut Vec<u32>,
        side: &mut Vec<U>,
        f: impl Fn(&T) -> U + Sync,
        beside: impl FnOnce(&[u32]) -> R + Send,
    ) -> R
    where
        T: Send + Sync,
    {
        let ncells = self.geom.count();
        counting_sort_by(
            entries.len(),
            |i| entries[i].0,
            ncells,
            &mut self.starts,
            scratch_order,
        );
        let (order, values) = (&scratch_order[..], &mut self.values);
        let ((), r) = rayon::join(
            || {
                order
                    .par_iter()
                    .with_min_len(GATHER_MIN)
                    .with_max_len(GATHER_MAX)
                    .map(|&i| {
                        let v = entries[i as usize].1;
                        (v, f(&v))
                    })
                    .unzip_into_vecs(values, side)
            },
            || beside(order),
        );
        r
    }

    pub fn cell(&self, c: u32) -> &[T] {
        &self.values[self.cell_range(c)]
    }

    /// Indices into [`Buckets::values`] of cell `c`.
    pub fn cell_range(&self, c: u32) -> std::ops::Range<usize> {
        let c = c as usize;
        self.starts[c] as usize..self.starts[c + 1] as usize
    }

    /// Values of the cells `x0..=x1` in row `y`: one contiguous slice, since cells are stored
    /// row by row.
    pub fn row(&self, y: u32, x0: u32, x1: u32) -> &[T] {
        &self.values[self.row_range(y, x0, x1)]
    }

    /// Indices into [`Buckets::values`] of [`Buckets::row`].
    pub fn row_range(&self, y: u32, x0: u32, x1: u32) -> std::ops::Range<usize> {
        let a = self.geom.index(x0, y) as usize;
        let b = self.geom.index(x1, y) as usize + 1;
        self.starts[a] as usize..self.starts[b] as usize
    }

    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// Calls `f` with every value in the cells overlapping `area`, cell by cell in row order (a
    /// value stored in several cells is seen once per cell). Each row of cells is one slice
    /// ([`Buckets::row`]), read at once rather than cell by cell: most cells are empty.
    pub fn for_each_in(&self, area: &Aabb, mut f: impl FnMut(&T)) {
        let r = self.geom.rect(area);
        for cy in r.y0..=r.y1 {
            self.row(cy, r.x0, r.x1).iter().for_each(&mut f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counting_sort_groups_by_cell_and_keeps_order() {
        let mut starts = Vec::new();
        let mut order = Vec::new();
        counting_sort(&[2, 0, 2, 1, 0], 3, &mut starts, &mut order);
        assert_eq!(starts, vec![0, 2, 3, 5]);
        assert_eq!(order, vec![1, 4, 3, 0, 2]);
    }

    #[test]
    fn points_outside_the_grid_clamp_to_border_cells() {
        let g = CellGeom::covering(&Aabb::new(Vec3::ZERO, Vec3::new(100.0, 100.0, 10.0)), 10.0);
        assert_eq!((g.nx, g.ny), (10, 10));
        assert_eq!(g.cell_xy(-5.0, 1000.0), (0, 9));
        assert_eq!(g.cell_xy(f32::NAN, 55.0), (0, 5));
    }

    #[test]
    fn buckets_find_values_by_area() {
        let g = CellGeom::covering(&Aabb::new(Vec3::ZERO, Vec3::new(100.0, 100.0, 10.0)), 10.0);
        let mut b = Buckets::new(g.clone());
        let entries = [
            (g.cell_of(Vec3::new(5.0, 5.0, 0.0)), 'a'),
            (g.cell_of(Vec3::new(95.0, 95.0, 0.0)), 'b'),
        ];
        b.rebuild(&entries, &mut Vec::new());
        let mut seen = Vec::new();
        b.for_each_in(&Aabb::new(Vec3::ZERO, Vec3::new(20.0, 20.0, 0.0)), |v| {
            seen.push(*v)
        });
        assert_eq!(seen, vec!['a']);
    }
}
