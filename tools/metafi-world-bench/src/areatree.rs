//! Quake's areanode tree (`SV_CreateAreaNode`), the spatial index of the seed's servers.
//!
//! The map's ground rectangle is halved recursively along its longer axis to a fixed depth. An
//! object is linked to the deepest node whose region contains its whole box: a leaf, or the
//! parent whose dividing plane it straddles. Only the geometry lives here; each baseline keeps
//! the per-node object lists in its own way (plain vectors, or vectors behind locks).

use metafi_world::Aabb;

/// One node's region and split.
#[derive(Clone, Copy, Debug)]
pub struct AreaNode {
    pub min: [f32; 2],
    pub max: [f32; 2],
    /// Split axis (0 = x, 1 = y) and plane, or `None` for a leaf.
    pub split: Option<(usize, f32)>,
}

/// A complete binary tree in heap order: children of `i` are `2i + 1` and `2i + 2`.
#[derive(Clone, Debug)]
pub struct AreaTree {
    pub nodes: Vec<AreaNode>,
}

impl AreaTree {
    /// A tree of `depth` levels below the root (Quake's default is 4: 31 nodes, 16 leaves).
    pub fn new(bounds: &Aabb, depth: u32) -> AreaTree {
        let count = (1usize << (depth + 1)) - 1;
        let mut nodes = Vec::with_capacity(count);
        nodes.push(AreaNode {
            min: [bounds.min.x, bounds.min.y],
            max: [bounds.max.x, bounds.max.y],
            split: None,
        });
        for i in 0..count {
            let n = nodes[i];
            if 2 * i + 1 >= count {
                continue;
            }
            let axis = if n.max[0] - n.min[0] >= n.max[1] - n.min[1] {
                0
            } else {
                1
            };
            let dist = (n.min[axis] + n.max[axis]) * 0.5;
            nodes[i].split = Some((axis, dist));
            let (mut hi, mut lo) = (n, n);
            hi.min[axis] = dist;
            lo.max[axis] = dist;
            hi.split = None;
            lo.split = None;
            nodes.push(hi);
            nodes.push(lo);
        }
        AreaTree { nodes }
    }

    /// The depth that gives leaves of roughly `leaf` units on a side, at least Quake's 4.
    pub fn depth_for(bounds: &Aabb, leaf: f32) -> u32 {
        let cells = ((bounds.max.x - bounds.min.x) / leaf).max(1.0)
            * ((bounds.max.y - bounds.min.y) / leaf).max(1.0);
        (cells.log2().ceil() as u32).clamp(4, 14)
    }

    /// The node an object with box `b` is linked to.
    pub fn node_for(&self, b: &Aabb) -> u32 {
        let mut i = 0usize;
        loop {
            let Some((axis, dist)) = self.nodes[i].split else {
                return i as u32;
            };
            let (lo, hi) = if axis == 0 {
                (b.min.x, b.max.x)
            } else {
                (b.min.y, b.max.y)
            };
            if lo > dist {
                i = 2 * i + 1;
            } else if hi < dist {
                i = 2 * i + 2;
            } else {
                return i as u32;
            }
        }
    }

    /// Calls `f(node, is_leaf)` for every node whose region overlaps `area`, parents before
    /// children (and leaves in ascending index order, the lock order).
    pub fn visit(&self, area: &Aabb, f: &mut impl FnMut(u32, bool)) {
        self.visit_from(0, area, f);
    }

    fn visit_from(&self, i: usize, area: &Aabb, f: &mut impl FnMut(u32, bool)) {
        let n = &self.nodes[i];
        match n.split {
            None => f(i as u32, true),
            Some((axis, dist)) => {
                f(i as u32, false);
                let (lo, hi) = if axis == 0 {
                    (area.min.x, area.max.x)
                } else {
                    (area.min.y, area.max.y)
                };
                // Children in heap order: 2i+1 is the high side, 2i+2 the low side; ascending
                // leaf indices follow from visiting 2i+1 first.
                if hi >= dist {
                    self.visit_from(2 * i + 1, area, f);
                }
                if lo <= dist {
                    self.visit_from(2 * i + 2, area, f);
                }
            }
        }
    }

    /// Leaves overlapping `area`, ascending.
    pub fn leaves(&self, area: &Aabb, out: &mut Vec<u32>) {
        out.clear();
        self.visit(area, &mut |n, leaf| {
            if leaf {
                out.push(n);
            }
        });
        out.sort_unstable();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use metafi_world::Vec3;

    fn tree() -> AreaTree {
        AreaTree::new(&Aabb::new(Vec3::ZERO, Vec3::new(1024.0, 1024.0, 100.0)), 4)
    }

    #[test]
    fn quake_default_has_31_nodes_and_16_leaves() {
        let t = tree();
        assert_eq!(t.nodes.len(), 31);
        assert_eq!(t.nodes.iter().filter(|n| n.split.is_none()).count(), 16);
    }

    #[test]
    fn objects_straddling_the_root_plane_link_to_the_root() {
        let t = tree();
        let b = |x: f32, y: f32| Aabb::around(Vec3::new(x, y, 10.0), Vec3::new(16.0, 16.0, 16.0));
        assert_eq!(t.node_for(&b(512.0, 100.0)), 0);
        let leaf = t.node_for(&b(100.0, 100.0));
        assert!(t.nodes[leaf as usize].split.is_none());
        let mut leaves = Vec::new();
        t.leaves(&b(100.0, 100.0), &mut leaves);
        assert_eq!(leaves, vec![leaf]);
    }

    #[test]
    fn depth_gives_roughly_the_wanted_leaf_size() {
        let big = Aabb::new(Vec3::ZERO, Vec3::new(51_200.0, 51_200.0, 100.0));
        assert_eq!(AreaTree::depth_for(&big, 1024.0), 12);
        let arena = Aabb::new(Vec3::ZERO, Vec3::new(3072.0, 3072.0, 100.0));
        assert_eq!(AreaTree::depth_for(&arena, 1024.0), 4);
    }
}
