//! The potentially-visible set: which coarse cells can see which, computed once per map.
//!
//! Quake answers "can this client see that entity?" with a PVS precomputed from its BSP; we do
//! the same over a coarse grid. Each vis cell keeps one bit per neighbour cell within
//! [`VIS_RADIUS_CELLS`], set if any of a few sample rays between the two cells passes no brush.
//! Beyond that reach nothing is visible, which bounds both the table and the interest query.

use rayon::ThreadPool;
use rayon::prelude::*;

use crate::cells::CellGeom;
use crate::map::Solids;
use crate::math::{Aabb, Vec3};

/// Side of a vis cell in units.
pub const VIS_CELL: f32 = 512.0;
/// How many vis cells away visibility is tracked: 4 × 512 = 2048 units, the longest view radius.
pub const VIS_RADIUS_CELLS: i32 = 4;
/// The longest view distance the table can answer for.
pub const VIS_REACH: f32 = VIS_CELL * VIS_RADIUS_CELLS as f32;
const SPAN: i32 = 2 * VIS_RADIUS_CELLS + 1;
/// Sample heights above the ground found under a cell centre: crouching eye and a platform eye.
const EYE_HEIGHTS: [f32; 2] = [48.0, 144.0];

/// Cell-to-cell visibility within [`VIS_REACH`].
#[derive(Clone, Debug)]
pub struct VisTable {
    geom: CellGeom,
    /// Per vis cell: bit `(dy + R) * SPAN + (dx + R)` is set if the cell at offset `(dx, dy)` is
    /// potentially visible.
    bits: Vec<u128>,
}

/// Visibility from one cell, hoisted out of a per-entity loop.
#[derive(Clone, Copy, Debug)]
pub struct VisRow<'a> {
    table: &'a VisTable,
    /// Column and row of the reach's first cell (`cx - R`, `cy - R`, wrapping below 0), so
    /// that an offset into the reach is one wrapping subtraction and one unsigned compare.
    x0: u32,
    y0: u32,
    /// The row's bits as two words (bit `i` in `words[i / 64]`): a bit test is a plain
    /// 64-bit shift, not a 128-bit one.
    words: [u64; 2],
}

impl VisTable {
    /// Samples rays between every pair of cells within reach, in `pool`.
    pub fn build(solids: &Solids, bounds: &Aabb, pool: &ThreadPool) -> VisTable {
        let geom = CellGeom::covering(bounds, VIS_CELL);
        let ground: Vec<f32> = pool.install(|| {
            (0..geom.count() as u32)
                .into_par_iter()
                .map(|c| ground_under(solids, bounds, &geom, c))
                .collect()
        });
        // Each cell tests the half of its neighbourhood that comes "after" it; the mirror half
        // is filled below, so every pair is traced once and the result is symmetric.
        let forward: Vec<u128> = pool.install(|| {
            (0..geom.count() as u32)
                .into_par_iter()
                .map(|c| forward_bits(solids, &geom, &ground, c))
                .collect()
        });
        let mut bits = forward.clone();
        for (c, &fwd) in forward.iter().enumerate() {
            let (cx, cy) = ((c as u32 % geom.nx) as i32, (c as u32 / geom.nx) as i32);
            for dy in -VIS_RADIUS_CELLS..=VIS_RADIUS_CELLS {
                for dx in -VIS_RADIUS_CELLS..=VIS_RADIUS_CELLS {
                    if fwd & bit(dx, dy) != 0 {
                        let other = geom.index((cx + dx) as u32, (cy + dy) as u32) as usize;
                        bits[other] |= bit(-dx, -dy);
                    }
                }
            }
        }
        VisTable { geom, bits }
    }

    /// Visibility row of the cell containing `from`.
    pub fn row(&self, from: Vec3) -> VisRow<'_> {
        let (cx, cy) = self.geom.cell_xy(from.x, from.y);
        let bits = self.bits[self.geom.index(cx, cy) as usize];
        VisRow {
            table: self,
            x0: cx.wrapping_sub(VIS_RADIUS_CELLS as u32),
            y0: cy.wrapping_sub(VIS_RADIUS_CELLS as u32),
            words: [bits as u64, (bits >> 64) as u64],
        }
    }

    /// The vis grid (cells of [`VIS_CELL`] units over the map's bounds).
    pub fn geom(&self) -> &CellGeom {
        &self.geom
    }

    /// Vis cell coordinates of a point, packed `x | y << 16` (grids are under 65536 cells wide).
    pub fn cell_of(&self, p: Vec3) -> u32 {
        let (x, y) = self.geom.cell_xy(p.x, p.y);
        x | y << 16
    }

    pub fn visible(&self, from: Vec3, to: Vec3) -> bool {
        self.row(from).sees(to)
    }

    /// Fraction of in-reach cell pairs that are visible, for reports.
    pub fn density(&self) -> f64 {
        let set: u64 = self.bits.iter().map(|b| u64::from(b.count_ones())).sum();
        set as f64 / (self.bits.len() as f64 * f64::from(SPAN * SPAN))
    }
}

impl VisRow<'_> {
    pub fn sees(&self, to: Vec3) -> bool {
        self.sees_cell(self.table.cell_of(to))
    }

    /// Whether the vis cell `packed` (from [`VisTable::cell_of`]) is potentially visible.
    #[inline]
    pub fn sees_cell(&self, packed: u32) -> bool {
        // Offsets from the reach's first cell: out of reach on either side is `>= SPAN`.
        let dx = (packed & 0xffff).wrapping_sub(self.x0);
        let dy = (packed >> 16).wrapping_sub(self.y0);
        let span = SPAN as u32;
        if dx >= span || dy >= span {
            return false;
        }
        // The bit of `bit(dx - R, dy - R)`.
        let i = dy * span + dx;
        (self.words[(i >> 6) as usize & 1] >> (i & 63)) & 1 != 0
    }

    /// Whether every cell of vis row `vy` from column `vx0` to `vx1` (inclusive) is potentially
    /// visible (false if any is out of reach).
    #[inline]
    pub fn sees_all(&self, vy: u32, vx0: u32, vx1: u32) -> bool {
        let span = SPAN as u32;
        let dy = vy.wrapping_sub(self.y0);
        let (lo, hi) = (vx0.wrapping_sub(self.x0), vx1.wrapping_sub(self.x0));
        if dy >= span || lo > hi || hi >= span {
            return false;
        }
        let first = dy * span + lo;
        let want = (1u64 << (hi - lo + 1)) - 1;
        let bits = (u128::from(self.words[1]) << 64 | u128::from(self.words[0])) >> first;
        bits as u64 & want == want
    }
}

fn bit(dx: i32, dy: i32) -> u128 {
    1u128 << ((dy + VIS_RADIUS_CELLS) * SPAN + dx + VIS_RADIUS_CELLS)
}

fn centre(geom: &CellGeom, c: u32) -> (f32, f32) {
    let (x, y) = geom.cell_min(c % geom.nx, c / geom.nx);
    (x + geom.size * 0.5, y + geom.size * 0.5)
}

/// Height of the first surface below the top of the map at the cell centre.
fn ground_under(solids: &Solids, bounds: &Aabb, geom: &CellGeom, c: u32) -> f32 {
    let (x, y) = centre(geom, c);
    let top = Vec3::new(x, y, bounds.max.z - 1.0);
    let bottom = Vec3::new(x, y, bounds.min.z);
    let f = solids.trace_ray(top, bottom);
    top.z + (bottom.z - top.z) * f
}

fn forward_bits(solids: &Solids, geom: &CellGeom, ground: &[f32], c: u32) -> u128 {
    let (cx, cy) = ((c % geom.nx) as i32, (c / geom.nx) as i32);
    let mut out = 0u128;
    for dy in 0..=VIS_RADIUS_CELLS {
        for dx in -VIS_RADIUS_CELLS..=VIS_RADIUS_CELLS {
            if dy == 0 && dx <= 0 {
                if dx == 0 {
                    out |= bit(0, 0);
                }
                continue;
            }
            let (ox, oy) = (cx + dx, cy + dy);
            if ox < 0 || oy < 0 || ox >= geom.nx as i32 || oy >= geom.ny as i32 {
                continue;
            }
            let other = geom.index(ox as u32, oy as u32);
            // Neighbours always see each other: the near radius covers them anyway, and a wall
            // on the boundary must not hide a player standing next to it.
            let adjacent = dx.abs() <= 1 && dy <= 1;
            if adjacent || sample_visible(solids, geom, ground, c, other) {
                out |= bit(dx, dy);
            }
        }
    }
    out
}

fn sample_visible(solids: &Solids, geom: &CellGeom, ground: &[f32], a: u32, b: u32) -> bool {
    let q = geom.size * 0.3;
    let from_offsets = [(0.0, 0.0), (-q, -q), (q, q), (-q, q), (q, -q)];
    let to_offsets = [(0.0, 0.0), (q, -q), (-q, q), (q, q), (-q, -q)];
    let (ax, ay) = centre(geom, a);
    let (bx, by) = centre(geom, b);
    let (ga, gb) = (ground[a as usize], ground[b as usize]);
    for h in EYE_HEIGHTS {
        for (fo, to) in from_offsets.iter().zip(&to_offsets) {
            let p = Vec3::new(ax + fo.0, ay + fo.1, ga + h);
            let q = Vec3::new(bx + to.0, by + to.1, gb + h);
            if solids.trace_ray(p, q) >= 1.0 {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("pool")
    }

    /// A square map of `side` units: a floor and one wall.
    fn floor_and_wall(side: f32, wall: Aabb) -> VisTable {
        let bounds = Aabb::new(Vec3::new(0.0, 0.0, -64.0), Vec3::new(side, side, 512.0));
        let floor = Aabb::new(bounds.min, Vec3::new(side, side, 0.0));
        VisTable::build(&Solids::new(vec![floor, wall], &bounds), &bounds, &pool())
    }

    #[test]
    fn tall_wall_hides_far_side_but_open_floor_is_visible() {
        let wall = Aabb::new(
            Vec3::new(2048.0, 0.0, 0.0),
            Vec3::new(2080.0, 4096.0, 512.0),
        );
        let vis = floor_and_wall(4096.0, wall);
        let p = |x, y| Vec3::new(x, y, 40.0);
        assert!(vis.visible(p(300.0, 300.0), p(1800.0, 1500.0)));
        assert!(!vis.visible(p(1300.0, 300.0), p(2800.0, 300.0)));
        assert!(
            !vis.visible(p(2800.0, 300.0), p(1300.0, 300.0)),
            "symmetric"
        );
        assert!(
            !vis.visible(p(100.0, 100.0), p(4000.0, 4000.0)),
            "beyond reach"
        );
    }

    /// The fast bit test agrees with the offset arithmetic it replaces, for viewers at the
    /// grid's corners (where the reach starts below 0) and inside, and cells in and out of
    /// reach on every side; a row-segment test agrees with testing each cell.
    #[test]
    fn sees_cell_matches_the_offset_definition() {
        let wall = Aabb::new(
            Vec3::new(2000.0, 500.0, 0.0),
            Vec3::new(2040.0, 7000.0, 400.0),
        );
        let vis = floor_and_wall(8192.0, wall);
        let n = vis.geom.nx as i32;
        let mut seen = 0;
        for (cx, cy) in [(0, 0), (1, 3), (3, 3), (7, 2), (n - 1, n - 1), (n - 2, 5)] {
            let row = vis.row(Vec3::new(
                cx as f32 * VIS_CELL + 10.0,
                cy as f32 * VIS_CELL + 10.0,
                40.0,
            ));
            let bits = vis.bits[vis.geom.index(cx as u32, cy as u32) as usize];
            for y in 0..n {
                for x in 0..n {
                    let (dx, dy) = (x - cx, y - cy);
                    let want = dx.abs() <= VIS_RADIUS_CELLS
                        && dy.abs() <= VIS_RADIUS_CELLS
                        && bits & bit(dx, dy) != 0;
                    let got = row.sees_cell(x as u32 | (y as u32) << 16);
                    assert_eq!(got, want, "from ({cx}, {cy}) to ({x}, {y})");
                    seen += usize::from(got);
                }
                for x0 in 0..n {
                    for x1 in x0..n.min(x0 + 12) {
                        let want = (x0..=x1).all(|x| row.sees_cell(x as u32 | (y as u32) << 16));
                        let got = row.sees_all(y as u32, x0 as u32, x1 as u32);
                        assert_eq!(got, want, "from ({cx}, {cy}) row {y} {x0}..={x1}");
                    }
                }
            }
        }
        assert!(seen > 0);
    }

    #[test]
    fn same_table_whatever_the_pool_size() {
        let bounds = Aabb::new(Vec3::new(0.0, 0.0, -64.0), Vec3::new(3000.0, 3000.0, 512.0));
        let floor = Aabb::new(bounds.min, Vec3::new(3000.0, 3000.0, 0.0));
        let wall = Aabb::new(
            Vec3::new(900.0, 700.0, 0.0),
            Vec3::new(940.0, 2600.0, 300.0),
        );
        let solids = Solids::new(vec![floor, wall], &bounds);
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool");
        let a = VisTable::build(&solids, &bounds, &one);
        let b = VisTable::build(&solids, &bounds, &pool());
        assert_eq!(a.bits, b.bits);
    }
}
