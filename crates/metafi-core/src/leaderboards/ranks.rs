//! The in-memory ranks of every ranked board and live period: an [`OrderSet`] of rank keys
//! plus each owner's current key, so a rank is one map lookup and one [`OrderSet::rank`].
//! Rebuilt from storage at start, updated after every write and delete (the service holds
//! the owner's lock across the write and the update, so the cache never applies an older
//! value after a newer one).

use std::collections::HashMap;
use std::sync::Arc;

use metafi_storage::SortOrder;
use parking_lot::{Mutex, RwLock};
use uuid::Uuid;

use super::order_set::OrderSet;

/// A record's place, encoded so that ascending key order is the board's rank order: a
/// descending board stores every component bit-inverted (`!x` reverses order, no overflow).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct RankKey {
    score: i64,
    subscore: i64,
    owner: [u8; 16],
}

impl RankKey {
    pub(crate) fn new(order: SortOrder, score: i64, subscore: i64, owner: Uuid) -> Self {
        let bytes = *owner.as_bytes();
        match order {
            SortOrder::Ascending => RankKey {
                score,
                subscore,
                owner: bytes,
            },
            SortOrder::Descending => RankKey {
                score: !score,
                subscore: !subscore,
                owner: bytes.map(|b| !b),
            },
        }
    }

    /// `(score, subscore, owner)` back from the key.
    pub(crate) fn decode(self, order: SortOrder) -> (i64, i64, Uuid) {
        match order {
            SortOrder::Ascending => (self.score, self.subscore, Uuid::from_bytes(self.owner)),
            SortOrder::Descending => (
                !self.score,
                !self.subscore,
                Uuid::from_bytes(self.owner.map(|b| !b)),
            ),
        }
    }
}

#[derive(Debug, Default)]
struct Period {
    set: OrderSet<RankKey>,
    owners: HashMap<Uuid, RankKey>,
}

/// One period's ranks, locked on its own so periods do not contend.
type SharedPeriod = Arc<Mutex<Period>>;

/// Ranks per `(board id, expiry)`.
#[derive(Debug, Default)]
pub struct RankCache {
    periods: RwLock<HashMap<(String, i64), SharedPeriod>>,
}

impl RankCache {
    /// Sets an owner's score and returns the 1-based rank.
    pub(crate) fn insert(
        &self,
        board: &str,
        expiry: i64,
        order: SortOrder,
        owner: Uuid,
        score: i64,
        subscore: i64,
    ) -> i64 {
        let period = self.period_or_new(board, expiry);
        let mut period = period.lock();
        let key = RankKey::new(order, score, subscore, owner);
        if let Some(old) = period.owners.insert(owner, key) {
            period.set.remove(&old);
        }
        period.set.insert(key);
        rank_number(period.set.rank(&key))
    }

    /// Loads a period's keys at once (start-up).
    pub(crate) fn fill_period(&self, board: &str, expiry: i64, keys: Vec<(Uuid, RankKey)>) {
        let set = OrderSet::from_keys(keys.iter().map(|(_, k)| *k).collect());
        let owners = keys.into_iter().collect();
        self.periods.write().insert(
            (board.to_owned(), expiry),
            Arc::new(Mutex::new(Period { set, owners })),
        );
    }

    /// An owner's 1-based rank, 0 when not ranked.
    pub(crate) fn rank(&self, board: &str, expiry: i64, owner: Uuid) -> i64 {
        let Some(period) = self.period(board, expiry) else {
            return 0;
        };
        let period = period.lock();
        period
            .owners
            .get(&owner)
            .map_or(0, |key| rank_number(period.set.rank(key)))
    }

    /// Ranks of several owners under one lock, and the period's record count.
    pub(crate) fn ranks(&self, board: &str, expiry: i64, owners: &[Uuid]) -> (Vec<i64>, i64) {
        let Some(period) = self.period(board, expiry) else {
            return (vec![0; owners.len()], 0);
        };
        let period = period.lock();
        let ranks = owners
            .iter()
            .map(|owner| {
                period
                    .owners
                    .get(owner)
                    .map_or(0, |key| rank_number(period.set.rank(key)))
            })
            .collect();
        (ranks, count(period.set.len()))
    }

    /// The key at a 1-based rank.
    pub(crate) fn at_rank(&self, board: &str, expiry: i64, rank: i64) -> Option<RankKey> {
        let index = usize::try_from(rank.checked_sub(1)?).ok()?;
        self.period(board, expiry)?.lock().set.nth(index)
    }

    /// Whether the period has ranks in memory.
    pub(crate) fn has_period(&self, board: &str, expiry: i64) -> bool {
        self.period(board, expiry).is_some()
    }

    /// How many records a period ranks.
    #[cfg(test)]
    pub(crate) fn count(&self, board: &str, expiry: i64) -> i64 {
        self.period(board, expiry)
            .map_or(0, |period| count(period.lock().set.len()))
    }

    pub(crate) fn remove(&self, board: &str, expiry: i64, owner: Uuid) {
        if let Some(period) = self.period(board, expiry) {
            let mut period = period.lock();
            if let Some(key) = period.owners.remove(&owner) {
                period.set.remove(&key);
            }
        }
    }

    /// Takes an owner out of every period (its account was deleted with its records).
    pub(crate) fn remove_owner(&self, owner: Uuid) {
        let periods: Vec<SharedPeriod> = self.periods.read().values().cloned().collect();
        for period in periods {
            let mut period = period.lock();
            if let Some(key) = period.owners.remove(&owner) {
                period.set.remove(&key);
            }
        }
    }

    /// Forgets every period of a board.
    pub(crate) fn remove_board(&self, board: &str) {
        self.periods.write().retain(|(id, _), _| id != board);
    }

    /// Forgets periods that ended at or before `now_s`.
    pub(crate) fn trim_expired(&self, now_s: i64) {
        self.periods
            .write()
            .retain(|(_, expiry), _| *expiry == 0 || *expiry > now_s);
    }

    fn period(&self, board: &str, expiry: i64) -> Option<SharedPeriod> {
        self.periods
            .read()
            .get(&(board.to_owned(), expiry))
            .cloned()
    }

    fn period_or_new(&self, board: &str, expiry: i64) -> SharedPeriod {
        if let Some(period) = self.period(board, expiry) {
            return period;
        }
        Arc::clone(
            self.periods
                .write()
                .entry((board.to_owned(), expiry))
                .or_default(),
        )
    }
}

fn rank_number(index: usize) -> i64 {
    i64::try_from(index).map_or(i64::MAX, |i| i + 1)
}

fn count(len: usize) -> i64 {
    i64::try_from(len).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;

    /// The brute-force model: sort every owner's record the way Nakama's SQL does.
    fn model_rank(records: &HashMap<Uuid, (i64, i64)>, order: SortOrder, owner: Uuid) -> i64 {
        let mut all: Vec<(i64, i64, Uuid)> =
            records.iter().map(|(o, (s, ss))| (*s, *ss, *o)).collect();
        all.sort();
        if order == SortOrder::Descending {
            all.reverse();
        }
        all.iter()
            .position(|(_, _, o)| *o == owner)
            .map_or(0, |i| i as i64 + 1)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// After any sequence of score changes and deletions, every owner's rank equals its
        /// position in the sorted records, for both orders.
        #[test]
        fn ranks_match_brute_force(ops in proptest::collection::vec((0u8..40, 0i64..20, 0i64..3, any::<bool>()), 1..400),
                                   descending in any::<bool>()) {
            let order = if descending { SortOrder::Descending } else { SortOrder::Ascending };
            let owners: Vec<Uuid> = (0..40u128).map(|n| Uuid::from_u128(n * 0x0101_0101_0101_0101)).collect();
            let cache = RankCache::default();
            let mut model = HashMap::new();
            for (who, score, subscore, delete) in ops {
                let owner = owners[usize::from(who)];
                if delete {
                    cache.remove("b", 0, owner);
                    model.remove(&owner);
                } else {
                    let rank = cache.insert("b", 0, order, owner, score, subscore);
                    model.insert(owner, (score, subscore));
                    prop_assert_eq!(rank, model_rank(&model, order, owner));
                }
            }
            for owner in &owners {
                prop_assert_eq!(cache.rank("b", 0, *owner), model_rank(&model, order, *owner));
            }
            prop_assert_eq!(cache.count("b", 0), model.len() as i64);
            for rank in 1..=model.len() as i64 {
                let (_, _, owner) = cache.at_rank("b", 0, rank).expect("rank").decode(order);
                prop_assert_eq!(model_rank(&model, order, owner), rank);
            }
        }
    }

    #[test]
    fn keys_decode_to_what_was_encoded() {
        let owner = Uuid::new_v4();
        for order in [SortOrder::Ascending, SortOrder::Descending] {
            for (score, subscore) in [(0, 0), (i64::MAX, 7), (5, i64::MAX)] {
                let key = RankKey::new(order, score, subscore, owner);
                assert_eq!(key.decode(order), (score, subscore, owner));
            }
        }
    }

    #[test]
    fn periods_are_separate_and_trimmed() {
        let cache = RankCache::default();
        let owner = Uuid::new_v4();
        cache.insert("b", 100, SortOrder::Descending, owner, 1, 0);
        cache.insert("b", 200, SortOrder::Descending, owner, 1, 0);
        cache.insert("b", 0, SortOrder::Descending, owner, 1, 0);
        cache.trim_expired(150);
        assert_eq!(cache.rank("b", 100, owner), 0);
        assert_eq!(cache.rank("b", 200, owner), 1);
        assert_eq!(cache.rank("b", 0, owner), 1);
        cache.remove_board("b");
        assert_eq!(cache.count("b", 200), 0);
    }
}
