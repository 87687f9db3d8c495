//! The rules' view of other players through an areanode tree, shared by both baselines.
//!
//! Queries visit every node whose region overlaps the query box (the seed's "move bounding box"
//! and, for shots, its directional box) and test the objects linked there.

use metafi_world::math::segment_enters;
use metafi_world::rules::PLAYER_HALF;
use metafi_world::{Aabb, Neighbourhood, PlayerId, PlayerState, Vec3};

use crate::areatree::AreaTree;

/// How a baseline stores the objects linked to each node.
pub trait NodeLists {
    fn tree(&self) -> &AreaTree;
    /// Calls `f` with each living player linked to `node` (only `id`, `origin` and `flags` need
    /// be filled in).
    fn each_in_node(&self, node: u32, f: impl FnMut(&PlayerState));
    fn item_available(&self, index: u32) -> bool;
}

/// Adapts [`NodeLists`] to the rules' [`Neighbourhood`].
pub struct TreeView<L>(pub L);

impl<L: NodeLists> TreeView<L> {
    fn each_in(&self, area: &Aabb, mut f: impl FnMut(&PlayerState)) {
        self.0
            .tree()
            .visit(area, &mut |node, _| self.0.each_in_node(node, &mut f));
    }
}

impl<L: NodeLists> Neighbourhood for TreeView<L> {
    fn boxes_near(&self, area: &Aabb, me: PlayerId, out: &mut Vec<Aabb>) {
        self.each_in(area, |p| {
            let b = p.bbox();
            if p.id != me && b.overlaps(area) {
                out.push(b);
            }
        });
    }

    fn first_hit(&self, from: Vec3, to: Vec3, skip: PlayerId) -> Option<(PlayerId, f32)> {
        let delta = to - from;
        let mut best: Option<(f32, PlayerId)> = None;
        let area = Aabb::new(from.min(to), from.max(to)).expanded(PLAYER_HALF);
        self.each_in(&area, |p| {
            if p.id == skip {
                return;
            }
            if let Some((t, _)) = segment_enters(from, delta, &p.bbox())
                && best.is_none_or(|b| (t, p.id) < b)
            {
                best = Some((t, p.id));
            }
        });
        best.map(|(t, id)| (id, t))
    }

    fn within(&self, center: Vec3, radius: f32, f: &mut dyn FnMut(PlayerId, Vec3)) {
        let area = Aabb::around(center, Vec3::splat(radius)).expanded(PLAYER_HALF);
        self.each_in(&area, |p| {
            if p.bbox().distance_to(center) <= radius {
                f(p.id, p.origin);
            }
        });
    }

    fn item_available(&self, index: u32) -> bool {
        self.0.item_available(index)
    }
}
