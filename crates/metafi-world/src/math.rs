//! Small vector and box maths in Quake units (1 unit ≈ 1 inch, z is up).
//!
//! `f32` throughout: every value is computed by one thread from inputs that do not depend on the
//! thread count, and every cross-entity sum is taken in a fixed order, so results are bit-identical
//! whatever the pool size (see the crate docs).

use std::ops::{Add, AddAssign, Mul, Neg, Sub};

/// A point or direction in world space.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Vec3 {
    pub x: f32,
    pub y: f32,
    pub z: f32,
}

impl Vec3 {
    pub const ZERO: Vec3 = Vec3::new(0.0, 0.0, 0.0);

    pub const fn new(x: f32, y: f32, z: f32) -> Vec3 {
        Vec3 { x, y, z }
    }

    pub fn splat(v: f32) -> Vec3 {
        Vec3::new(v, v, v)
    }

    pub fn dot(self, o: Vec3) -> f32 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    pub fn length_squared(self) -> f32 {
        self.dot(self)
    }

    pub fn length(self) -> f32 {
        self.length_squared().sqrt()
    }

    /// Horizontal (xy) length, used by ground friction and speed caps.
    pub fn length_xy(self) -> f32 {
        (self.x * self.x + self.y * self.y).sqrt()
    }

    /// Unit vector, or zero for a zero vector (never NaN).
    pub fn normalized(self) -> Vec3 {
        let len = self.length();
        if len > 0.0 {
            self * (1.0 / len)
        } else {
            Vec3::ZERO
        }
    }

    pub fn axis(self, a: usize) -> f32 {
        match a {
            0 => self.x,
            1 => self.y,
            _ => self.z,
        }
    }

    pub fn set_axis(&mut self, a: usize, v: f32) {
        match a {
            0 => self.x = v,
            1 => self.y = v,
            _ => self.z = v,
        }
    }

    pub fn min(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x.min(o.x), self.y.min(o.y), self.z.min(o.z))
    }

    pub fn max(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x.max(o.x), self.y.max(o.y), self.z.max(o.z))
    }

    pub fn is_finite(self) -> bool {
        self.x.is_finite() && self.y.is_finite() && self.z.is_finite()
    }
}

impl Add for Vec3 {
    type Output = Vec3;
    fn add(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x + o.x, self.y + o.y, self.z + o.z)
    }
}

impl AddAssign for Vec3 {
    fn add_assign(&mut self, o: Vec3) {
        *self = *self + o;
    }
}

impl Sub for Vec3 {
    type Output = Vec3;
    fn sub(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x - o.x, self.y - o.y, self.z - o.z)
    }
}

impl Mul<f32> for Vec3 {
    type Output = Vec3;
    fn mul(self, s: f32) -> Vec3 {
        Vec3::new(self.x * s, self.y * s, self.z * s)
    }
}

impl Neg for Vec3 {
    type Output = Vec3;
    fn neg(self) -> Vec3 {
        Vec3::new(-self.x, -self.y, -self.z)
    }
}

/// An axis-aligned box; `min <= max` on every axis.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Aabb {
    pub min: Vec3,
    pub max: Vec3,
}

impl Aabb {
    pub const fn new(min: Vec3, max: Vec3) -> Aabb {
        Aabb { min, max }
    }

    /// The box of half-size `half` centred on `center`.
    pub fn around(center: Vec3, half: Vec3) -> Aabb {
        Aabb::new(center - half, center + half)
    }

    /// Strict overlap: boxes that only touch do not overlap, so a player resting against a wall
    /// is not "inside" it.
    pub fn overlaps(&self, o: &Aabb) -> bool {
        self.min.x < o.max.x
            && self.max.x > o.min.x
            && self.min.y < o.max.y
            && self.max.y > o.min.y
            && self.min.z < o.max.z
            && self.max.z > o.min.z
    }

    pub fn contains_point(&self, p: Vec3) -> bool {
        p.x > self.min.x
            && p.x < self.max.x
            && p.y > self.min.y
            && p.y < self.max.y
            && p.z > self.min.z
            && p.z < self.max.z
    }

    pub fn expanded(&self, by: Vec3) -> Aabb {
        Aabb::new(self.min - by, self.max + by)
    }

    pub fn union(&self, o: &Aabb) -> Aabb {
        Aabb::new(self.min.min(o.min), self.max.max(o.max))
    }

    pub fn center(&self) -> Vec3 {
        (self.min + self.max) * 0.5
    }

    /// Distance from `p` to the closest point of the box (0 inside).
    pub fn distance_to(&self, p: Vec3) -> f32 {
        let c = p.max(self.min).min(self.max);
        (p - c).length()
    }
}

/// Angle units on the wire and in commands: 65536 per full turn, as Quake's short angles.
pub const ANGLE_UNITS: f32 = 65536.0;

/// Converts a yaw in angle units to radians.
pub fn yaw_radians(yaw: u16) -> f32 {
    f32::from(yaw) * (std::f32::consts::TAU / ANGLE_UNITS)
}

/// Converts a pitch in angle units (positive looks down, as Quake) to radians.
pub fn pitch_radians(pitch: i16) -> f32 {
    f32::from(pitch) * (std::f32::consts::TAU / ANGLE_UNITS)
}

/// Yaw in angle units that looks from `from` towards `to` in the horizontal plane.
pub fn yaw_towards(from: Vec3, to: Vec3) -> u16 {
    let d = to - from;
    let rad = d.y.atan2(d.x);
    let units = (rad / std::f32::consts::TAU * ANGLE_UNITS).round() as i64;
    units.rem_euclid(65536) as u16
}

/// Pitch in angle units that looks from `from` towards `to` (positive is down).
pub fn pitch_towards(from: Vec3, to: Vec3) -> i16 {
    let d = to - from;
    let rad = (-d.z).atan2(d.length_xy());
    (rad / std::f32::consts::TAU * ANGLE_UNITS)
        .round()
        .clamp(-16000.0, 16000.0) as i16
}

/// Forward and right unit vectors for a view; forward includes pitch, right is horizontal.
pub fn view_vectors(yaw: u16, pitch: i16) -> (Vec3, Vec3) {
    let (sy, cy) = yaw_radians(yaw).sin_cos();
    let (sp, cp) = pitch_radians(pitch).sin_cos();
    let forward = Vec3::new(cp * cy, cp * sy, -sp);
    let right = Vec3::new(sy, -cy, 0.0);
    (forward, right)
}

/// Slab test of the segment `from + t·delta`, `t ∈ [0, 1]`, against `b`.
///
/// Returns the entry fraction and the axis of the entry face, or `None` if the segment misses or
/// starts inside (a segment that starts inside a box is allowed to leave it).
pub fn segment_enters(from: Vec3, delta: Vec3, b: &Aabb) -> Option<(f32, usize)> {
    Segment::new(from, delta).enters(b)
}

/// A segment `from + t·delta`, `t ∈ [0, 1]`, prepared for slab tests against many boxes: the
/// reciprocals of `delta` are taken once, not once per box (the same `1 / d`, so the same bits
/// as [`segment_enters`]).
#[derive(Clone, Copy, Debug)]
pub struct Segment {
    pub from: Vec3,
    pub delta: Vec3,
    /// `1 / delta` per axis (infinite on an axis the segment does not move along; unused there).
    inv: Vec3,
}

impl Segment {
    pub fn new(from: Vec3, delta: Vec3) -> Segment {
        Segment {
            from,
            delta,
            inv: Vec3::new(1.0 / delta.x, 1.0 / delta.y, 1.0 / delta.z),
        }
    }

    /// [`segment_enters`] for this segment.
    // Always inlined: it is the inner loop of every ray and box sweep, and a call per box
    // costs more than the test.
    #[inline(always)]
    pub fn enters(&self, b: &Aabb) -> Option<(f32, usize)> {
        let mut slabs = Slabs {
            t_enter: f32::NEG_INFINITY,
            t_exit: f32::INFINITY,
            axis: 0,
        };
        // The axes one by one, spelled out rather than looped: an index into `Vec3` per axis
        // cost more than the slab arithmetic.
        let (p, d, inv) = (self.from, self.delta, self.inv);
        if !(slabs.clip(0, p.x, d.x, inv.x, b.min.x, b.max.x)
            && slabs.clip(1, p.y, d.y, inv.y, b.min.y, b.max.y)
            && slabs.clip(2, p.z, d.z, inv.z, b.min.z, b.max.z))
        {
            return None;
        }
        let Slabs {
            t_enter,
            t_exit,
            axis,
        } = slabs;
        if t_enter < 0.0 || t_enter >= t_exit || t_enter > 1.0 {
            return None;
        }
        Some((t_enter, axis))
    }
}

/// The part of a segment inside the slabs of the axes clipped so far: `t_enter..t_exit`, entered
/// through the face of `axis`.
struct Slabs {
    t_enter: f32,
    t_exit: f32,
    axis: usize,
}

impl Slabs {
    /// Clips to the slab `lo..hi` of `axis`, along which the segment starts at `p` and moves by
    /// `d` (`inv` = `1 / d`). False if a segment that does not move along this axis lies
    /// outside the slab.
    #[inline(always)]
    fn clip(&mut self, axis: usize, p: f32, d: f32, inv: f32, lo: f32, hi: f32) -> bool {
        if d == 0.0 {
            return !(p <= lo || p >= hi);
        }
        let (t0, t1) = if d > 0.0 {
            ((lo - p) * inv, (hi - p) * inv)
        } else {
            ((hi - p) * inv, (lo - p) * inv)
        };
        if t0 > self.t_enter {
            self.t_enter = t0;
            self.axis = axis;
        }
        self.t_exit = self.t_exit.min(t1);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slab test as a loop over the axes, as it was written before the axes were spelled
    /// out.
    fn plain_enters(from: Vec3, delta: Vec3, b: &Aabb) -> Option<(f32, usize)> {
        let mut t_enter = f32::NEG_INFINITY;
        let mut t_exit = f32::INFINITY;
        let mut axis = 0;
        for a in 0..3 {
            let p = from.axis(a);
            let d = delta.axis(a);
            let (lo, hi) = (b.min.axis(a), b.max.axis(a));
            if d == 0.0 {
                if p <= lo || p >= hi {
                    return None;
                }
                continue;
            }
            let inv = 1.0 / d;
            let (t0, t1) = if d > 0.0 {
                ((lo - p) * inv, (hi - p) * inv)
            } else {
                ((hi - p) * inv, (lo - p) * inv)
            };
            if t0 > t_enter {
                t_enter = t0;
                axis = a;
            }
            t_exit = t_exit.min(t1);
        }
        if t_enter < 0.0 || t_enter >= t_exit || t_enter > 1.0 {
            return None;
        }
        Some((t_enter, axis))
    }

    /// The slab test gives the plain loop's answer bit for bit on varied segments and boxes:
    /// points on the box's faces and lattice, axes the segment does not move along, segments
    /// starting inside, ties between faces.
    #[test]
    fn slab_test_matches_the_plain_loop() {
        let mut rng = crate::rng::Rng::new(5);
        let coord = |rng: &mut crate::rng::Rng| match rng.below(3) {
            0 => 16.0 * rng.below(8) as f32,
            1 => 128.0 * rng.unit(),
            _ => 16.0 * rng.below(8) as f32 + rng.unit() - 0.5,
        };
        let v = |rng: &mut crate::rng::Rng| Vec3::new(coord(rng), coord(rng), coord(rng));
        let mut hits = 0;
        for _ in 0..20_000 {
            let (a, c) = (v(&mut rng), v(&mut rng));
            let b = Aabb::new(a.min(c), a.max(c));
            let from = v(&mut rng);
            let mut delta = v(&mut rng) - from;
            for axis in 0..3 {
                if rng.chance(0.25) {
                    delta.set_axis(axis, 0.0);
                }
            }
            let got = Segment::new(from, delta).enters(&b);
            let want = plain_enters(from, delta, &b);
            let bits = |e: Option<(f32, usize)>| e.map(|(t, axis)| (t.to_bits(), axis));
            assert_eq!(bits(got), bits(want), "{from:?} + {delta:?} into {b:?}");
            hits += usize::from(got.is_some());
        }
        assert!(hits > 1000, "too few segments entered their box: {hits}");
    }

    #[test]
    fn yaw_towards_round_trips_through_view_vectors() {
        let from = Vec3::new(10.0, 10.0, 0.0);
        let to = Vec3::new(-50.0, 70.0, 0.0);
        let (fwd, _) = view_vectors(yaw_towards(from, to), 0);
        let want = (to - from).normalized();
        assert!((fwd - want).length() < 1e-3, "{fwd:?} vs {want:?}");
    }

    #[test]
    fn pitch_towards_looks_down_at_lower_points() {
        let p = pitch_towards(Vec3::ZERO, Vec3::new(100.0, 0.0, -100.0));
        let (fwd, _) = view_vectors(0, p);
        assert!(fwd.z < -0.7 && fwd.x > 0.7, "{fwd:?}");
    }

    #[test]
    fn segment_hits_box_face_and_reports_axis() {
        let b = Aabb::new(Vec3::new(10.0, -5.0, -5.0), Vec3::new(20.0, 5.0, 5.0));
        let hit = segment_enters(Vec3::ZERO, Vec3::new(40.0, 0.0, 0.0), &b);
        assert_eq!(hit, Some((0.25, 0)));
        assert_eq!(
            segment_enters(Vec3::new(0.0, 6.0, 0.0), Vec3::new(40.0, 0.0, 0.0), &b),
            None
        );
    }

    #[test]
    fn segment_starting_inside_may_leave() {
        let b = Aabb::new(Vec3::splat(-1.0), Vec3::splat(1.0));
        assert_eq!(
            segment_enters(Vec3::ZERO, Vec3::new(5.0, 0.0, 0.0), &b),
            None
        );
    }
}
