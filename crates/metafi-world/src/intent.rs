//! Intents: effects one entity has on another, collected during a parallel phase and applied in
//! a deterministic merge.
//!
//! A parallel phase never writes another entity's state. It records what it wants (damage, a
//! pickup, a rocket launch); the merge sorts the intents by a key that is unique within a tick
//! and applies them in that order. Which thread found an intent, and when, cannot change the
//! result.

use crate::command::PlayerId;
use crate::item::ItemState;
use crate::math::Vec3;
use crate::player::PlayerState;
use crate::rules::Rules;

/// Damage to a player.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    pub target: PlayerId,
    pub attacker: PlayerId,
    /// Unique per attacker within a tick: the shot number for hitscan, the projectile id for
    /// explosions.
    pub order: u32,
    pub damage: i32,
    /// Added to the target's velocity.
    pub knockback: Vec3,
}

/// A player touching an available item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    pub item: u32,
    pub player: PlayerId,
}

/// A projectile to create.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Launch {
    pub owner: PlayerId,
    /// The owner's shot number; with the owner it orders launches.
    pub order: u32,
    pub origin: Vec3,
    pub velocity: Vec3,
}

/// Everything a phase produced for the merge. Concatenating two `Effects` in any order and then
/// sorting each list ([`sort_hits`], [`sort_claims`], [`sort_launches`]) gives the same result.
#[derive(Clone, Debug, Default)]
pub struct Effects {
    pub hits: Vec<Hit>,
    pub claims: Vec<Claim>,
    pub launches: Vec<Launch>,
}

impl Effects {
    pub fn clear(&mut self) {
        self.hits.clear();
        self.claims.clear();
        self.launches.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.hits.is_empty() && self.claims.is_empty() && self.launches.is_empty()
    }

    /// Concatenates two collections (rayon's `reduce`); order does not matter: the merge puts each list in its canonical order ([`sort_hits`],
    /// [`sort_claims`], [`sort_launches`]; keys are unique, so unstable sorts are exact).
    pub fn merge(mut a: Effects, mut b: Effects) -> Effects {
        if a.is_empty() {
            return b;
        }
        a.hits.append(&mut b.hits);
        a.claims.append(&mut b.claims);
        a.launches.append(&mut b.launches);
        a
    }
}

/// Hits in their canonical order, `(target, attacker, order)`: the order [`apply_hits`] needs.
pub fn sort_hits(hits: &mut [Hit]) {
    hits.sort_unstable_by_key(|h| (h.target, h.attacker, h.order));
}

/// Claims in their canonical order, `(item, player)`: the order [`resolve_claims`] needs.
pub fn sort_claims(claims: &mut [Claim]) {
    claims.sort_unstable_by_key(|c| (c.item, c.player));
}

/// Launches in their canonical order, `(owner, order)`, in which rockets get their ids.
pub fn sort_launches(launches: &mut [Launch]) {
    launches.sort_unstable_by_key(|l| (l.owner, l.order));
}

/// Applies one hit. Returns the attacker to credit with a frag if the hit killed another player.
pub fn apply_hit(target: &mut PlayerState, hit: &Hit, rules: &Rules) -> Option<PlayerId> {
    if !target.alive() {
        return None;
    }
    target.health -= hit.damage;
    target.velocity += hit.knockback;
    if target.health > 0 {
        return None;
    }
    target.die(rules);
    (hit.attacker != target.id).then_some(hit.attacker)
}

/// Applies sorted hits to `players` (found through `index`), crediting frags. Returns the kills.
pub fn apply_hits(
    hits: &[Hit],
    players: &mut [PlayerState],
    index: impl Fn(PlayerId) -> Option<usize>,
    rules: &Rules,
) -> usize {
    let mut kills = 0;
    for h in hits {
        let Some(t) = index(h.target) else { continue };
        if let Some(attacker) = apply_hit(&mut players[t], h, rules) {
            kills += 1;
            if let Some(a) = index(attacker) {
                players[a].frags += 1;
            }
        }
    }
    kills
}

/// Resolves sorted claims: each available item goes to its first claimant (lowest id), which is
/// given the pickup. Returns the number of pickups.
pub fn resolve_claims(
    claims: &[Claim],
    items: &mut [ItemState],
    players: &mut [PlayerState],
    index: impl Fn(PlayerId) -> Option<usize>,
    rules: &Rules,
) -> usize {
    let mut taken = 0;
    for c in claims {
        let Some(item) = items.get_mut(c.item as usize) else {
            continue;
        };
        let Some(p) = index(c.player) else { continue };
        if item.available() && players[p].alive() {
            item.give(&mut players[p], rules);
            taken += 1;
        }
    }
    taken
}
