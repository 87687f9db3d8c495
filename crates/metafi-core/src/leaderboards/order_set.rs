//! An ordered set with rank queries: a sorted sequence cut into blocks of at most
//! [`MAX_BLOCK`] keys. Insert and remove touch one block (a binary search over block ends, a
//! shift inside one block); the rank of a key sums the lengths of the blocks before it
//! (≈1,000 additions at 1,000,000 keys) and the key at a rank walks the same lengths.
//! Simpler than a balanced order-statistic tree and fast enough for the ≤ 1 ms budget of a
//! rank lookup at a million records; checked against `BTreeSet` by property tests.

/// Blocks split in two above this many keys.
const MAX_BLOCK: usize = 1024;

/// A set of distinct keys in ascending order with rank and select.
#[derive(Debug, Clone)]
pub struct OrderSet<K> {
    /// Non-empty blocks, each sorted, every key of a block below every key of the next.
    blocks: Vec<Vec<K>>,
    len: usize,
}

impl<K: Ord + Copy> Default for OrderSet<K> {
    fn default() -> Self {
        OrderSet {
            blocks: Vec::new(),
            len: 0,
        }
    }
}

impl<K: Ord + Copy> OrderSet<K> {
    /// Builds a set from keys in any order (duplicates kept once).
    pub fn from_keys(mut keys: Vec<K>) -> Self {
        keys.sort_unstable();
        keys.dedup();
        let len = keys.len();
        let blocks = keys
            .chunks(MAX_BLOCK / 2)
            .map(<[K]>::to_vec)
            .collect::<Vec<_>>();
        OrderSet { blocks, len }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds a key; false if it was there.
    pub fn insert(&mut self, key: K) -> bool {
        if self.blocks.is_empty() {
            self.blocks.push(vec![key]);
            self.len = 1;
            return true;
        }
        let b = self.block_of(&key).min(self.blocks.len() - 1);
        let block = &mut self.blocks[b];
        match block.binary_search(&key) {
            Ok(_) => return false,
            Err(i) => block.insert(i, key),
        }
        self.len += 1;
        if block.len() > MAX_BLOCK {
            let tail = block.split_off(block.len() / 2);
            self.blocks.insert(b + 1, tail);
        }
        true
    }

    /// Removes a key; false if it was not there.
    pub fn remove(&mut self, key: &K) -> bool {
        let b = self.block_of(key);
        let Some(block) = self.blocks.get_mut(b) else {
            return false;
        };
        let Ok(i) = block.binary_search(key) else {
            return false;
        };
        block.remove(i);
        self.len -= 1;
        if block.is_empty() {
            self.blocks.remove(b);
        }
        true
    }

    /// How many keys are below `key` (its 0-based position when present).
    pub fn rank(&self, key: &K) -> usize {
        let b = self.block_of(key);
        let before: usize = self.blocks[..b].iter().map(Vec::len).sum();
        let inside = self
            .blocks
            .get(b)
            .map_or(0, |block| block.partition_point(|k| k < key));
        before + inside
    }

    /// Whether `key` is in the set.
    pub fn contains(&self, key: &K) -> bool {
        self.blocks
            .get(self.block_of(key))
            .is_some_and(|block| block.binary_search(key).is_ok())
    }

    /// The key at 0-based position `index`.
    pub fn nth(&self, mut index: usize) -> Option<K> {
        for block in &self.blocks {
            if index < block.len() {
                return Some(block[index]);
            }
            index -= block.len();
        }
        None
    }

    /// The first block whose last key is not below `key` (`blocks.len()` if none).
    fn block_of(&self, key: &K) -> usize {
        self.blocks
            // Blocks are never empty (an emptied block is removed at once).
            .partition_point(|block| block.last().is_some_and(|last| last < key))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u16),
        Remove(u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            3 => any::<u16>().prop_map(Op::Insert),
            1 => any::<u16>().prop_map(Op::Remove),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Any sequence of inserts and removes leaves the same set, ranks and selects as
        /// `BTreeSet` (thousands of keys, so blocks split and empty).
        #[test]
        fn matches_btreeset(seed in proptest::collection::vec(any::<u16>(), 0..3000),
                            ops in proptest::collection::vec(op(), 0..3000),
                            probes in proptest::collection::vec(any::<u16>(), 1..50)) {
            let mut set = OrderSet::from_keys(seed.clone());
            let mut model: BTreeSet<u16> = seed.into_iter().collect();
            for op in ops {
                match op {
                    Op::Insert(k) => prop_assert_eq!(set.insert(k), model.insert(k)),
                    Op::Remove(k) => prop_assert_eq!(set.remove(&k), model.remove(&k)),
                }
            }
            prop_assert_eq!(set.len(), model.len());
            for probe in probes {
                prop_assert_eq!(set.rank(&probe), model.range(..probe).count());
                prop_assert_eq!(set.contains(&probe), model.contains(&probe));
                let index = usize::from(probe) % (model.len() + 1);
                prop_assert_eq!(set.nth(index), model.iter().nth(index).copied());
            }
        }
    }

    #[test]
    fn many_keys_split_into_blocks_and_keep_order() {
        let mut set = OrderSet::default();
        for k in (0..10_000u32).rev() {
            assert!(set.insert(k * 2));
        }
        assert!(set.blocks.len() > 10);
        assert_eq!(set.rank(&5_000), 2_500);
        assert_eq!(set.nth(9_999), Some(19_998));
        for k in 0..10_000u32 {
            assert!(set.remove(&(k * 2)));
        }
        assert!(set.is_empty() && set.blocks.is_empty());
    }
}
