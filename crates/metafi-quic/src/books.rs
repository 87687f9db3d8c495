//! The sans-IO bookkeeping of delivery classes: which latest-wins keys a sender tracks and
//! what their last values are ([`LatestKeys`]), which sequence numbers a receiver has seen
//! ([`LatestFilter`]), which unordered messages it delivered ([`Dedupe`]) and how far each
//! ordered lane got ([`Lanes`]). Every table is bounded.

use std::collections::{HashMap, HashSet, VecDeque};

use bytes::Bytes;
use metafi_proto::realtime::Lane;

use crate::wire::{KEY_SPACE, LANE_SPACE};

/// A latest-wins value to send reliably now: its key was evicted before it settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Final {
    pub key: u64,
    pub seq: u64,
    pub value: Bytes,
}

/// The sender's latest-wins keys: names interned as small ids (what datagrams carry), and the
/// last value of each, kept until it is settled (sent reliably after the key went quiet).
///
/// Sequence numbers are one counter for the whole connection, so an id freed by eviction can
/// be reused: the new key's numbers are above everything the receiver saw under that id.
#[derive(Debug)]
pub(crate) struct LatestKeys {
    ids: HashMap<Lane, u64>,
    slots: Vec<Slot>,
    capacity: usize,
    /// Use counter for least-recently-used eviction.
    clock: u64,
}

#[derive(Debug)]
struct Slot {
    name: Lane,
    seq: u64,
    /// The last value until it is settled; `None` after.
    value: Option<Bytes>,
    used: u64,
}

impl LatestKeys {
    pub fn new(capacity: usize) -> LatestKeys {
        LatestKeys {
            ids: HashMap::new(),
            slots: Vec::new(),
            capacity: capacity.clamp(1, KEY_SPACE as usize),
            clock: 0,
        }
    }

    /// Records `value` as the newest of `name` with sequence number `seq`; returns the key's
    /// id, and the unsettled final value of a key evicted to make room (send it reliably).
    pub fn record(&mut self, name: &Lane, seq: u64, value: Bytes) -> (u64, Option<Final>) {
        self.clock += 1;
        if let Some(&id) = self.ids.get(name) {
            let slot = &mut self.slots[id as usize];
            slot.seq = seq;
            slot.value = Some(value);
            slot.used = self.clock;
            return (id, None);
        }
        let mut evicted = None;
        let id = if self.slots.len() < self.capacity {
            self.slots.push(Slot {
                name: name.clone(),
                seq: 0,
                value: None,
                used: 0,
            });
            (self.slots.len() - 1) as u64
        } else {
            // The table is full (capacity ≥ 1), so there is a least recently used slot.
            let id = (0..self.slots.len())
                .min_by_key(|&i| self.slots[i].used)
                .unwrap_or(0);
            let old = &mut self.slots[id];
            self.ids.remove(&old.name);
            evicted = old.value.take().map(|value| Final {
                key: id as u64,
                seq: old.seq,
                value,
            });
            id as u64
        };
        self.ids.insert(name.clone(), id);
        self.slots[id as usize] = Slot {
            name: name.clone(),
            seq,
            value: Some(value),
            used: self.clock,
        };
        (id, evicted)
    }

    /// The value to send reliably when key `id` has been quiet since `seq`; `None` if a newer
    /// value came meanwhile or it was settled already.
    pub fn settle(&mut self, id: u64, seq: u64) -> Option<Bytes> {
        let slot = self.slots.get_mut(id as usize)?;
        if slot.seq != seq {
            return None;
        }
        slot.value.take()
    }

    /// Keys tracked.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.ids.len()
    }
}

/// The receiver's latest-wins filter: per key id, the highest sequence number delivered.
#[derive(Debug, Default)]
pub(crate) struct LatestFilter {
    last: HashMap<u64, u64>,
}

impl LatestFilter {
    /// Whether `(key, seq)` is newer than everything delivered under `key`; if so it becomes
    /// the newest. Keys are below [`KEY_SPACE`] (checked by the wire decoder), so the table is
    /// bounded.
    pub fn accept(&mut self, key: u64, seq: u64) -> bool {
        let last = self.last.entry(key).or_insert(0);
        if seq > *last {
            *last = seq;
            true
        } else {
            false
        }
    }
}

/// The receiver's record of delivered reliable-unordered messages, so a message that arrives
/// both as a redundant copy and on its stream is delivered once. Remembers the last `capacity`
/// ids; a copy that trails its original by more than that is delivered twice (never lost).
#[derive(Debug)]
pub(crate) struct Dedupe {
    seen: HashSet<u64>,
    order: VecDeque<u64>,
    capacity: usize,
}

impl Dedupe {
    pub fn new(capacity: usize) -> Dedupe {
        Dedupe {
            seen: HashSet::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// True the first time `id` is seen.
    pub fn first(&mut self, id: u64) -> bool {
        if !self.seen.insert(id) {
            return false;
        }
        self.order.push_back(id);
        if self.order.len() > self.capacity
            && let Some(old) = self.order.pop_front()
        {
            self.seen.remove(&old);
        }
        true
    }
}

/// The receiver's ordered lanes: for each, the index of the next message to deliver. A lane's
/// stream delivers its messages in order and skips those a redundant copy delivered first; a
/// copy is delivered only if it is exactly the next one.
#[derive(Debug, Default)]
pub(crate) struct Lanes {
    next: HashMap<u64, u64>,
}

impl Lanes {
    /// The stream of `lane` read message `index`: deliver it unless a copy did.
    pub fn stream_read(&mut self, lane: u64, index: u64) -> bool {
        debug_assert!(lane < LANE_SPACE);
        let next = self.next.entry(lane).or_insert(0);
        if index < *next {
            return false;
        }
        *next = index + 1;
        true
    }

    /// A copy of message `index` of `lane` arrived: deliver it if it is the next one.
    pub fn copy_arrived(&mut self, lane: u64, index: u64) -> bool {
        let next = self.next.entry(lane).or_insert(0);
        if index == *next {
            *next += 1;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(name: &str) -> Lane {
        Lane::from(name)
    }

    #[test]
    fn latest_keys_settle_only_the_last_value() {
        let mut keys = LatestKeys::new(4);
        let (id, _) = keys.record(&lane("pos"), 1, Bytes::from_static(b"a"));
        let (same, _) = keys.record(&lane("pos"), 2, Bytes::from_static(b"b"));
        assert_eq!(id, same);
        assert_eq!(keys.settle(id, 1), None, "a newer value came after 1");
        assert_eq!(keys.settle(id, 2), Some(Bytes::from_static(b"b")));
        assert_eq!(keys.settle(id, 2), None, "settled once");
    }

    #[test]
    fn a_full_table_evicts_the_least_recently_used_key_and_hands_back_its_final_value() {
        let mut keys = LatestKeys::new(2);
        let (a, _) = keys.record(&lane("a"), 1, Bytes::from_static(b"a1"));
        let (b, _) = keys.record(&lane("b"), 2, Bytes::from_static(b"b1"));
        keys.record(&lane("a"), 3, Bytes::from_static(b"a2"));
        let (c, evicted) = keys.record(&lane("c"), 4, Bytes::from_static(b"c1"));
        assert_eq!(c, b, "b was least recently used");
        assert_eq!(
            evicted,
            Some(Final {
                key: b,
                seq: 2,
                value: Bytes::from_static(b"b1")
            })
        );
        assert_eq!(keys.len(), 2);
        // A settled key evicted later has nothing left to send.
        assert!(keys.settle(a, 3).is_some());
        let (_, evicted) = keys.record(&lane("d"), 5, Bytes::from_static(b"d1"));
        assert_eq!(evicted, None);
    }

    #[test]
    fn the_filter_drops_stale_and_duplicate_sequence_numbers() {
        let mut filter = LatestFilter::default();
        assert!(filter.accept(1, 5));
        assert!(!filter.accept(1, 4), "stale");
        assert!(
            !filter.accept(1, 5),
            "duplicate (datagram and its reliable resend)"
        );
        assert!(filter.accept(2, 1), "keys are independent");
        assert!(filter.accept(1, 9));
    }

    #[test]
    fn dedupe_remembers_a_bounded_window() {
        let mut dedupe = Dedupe::new(2);
        assert!(dedupe.first(1));
        assert!(!dedupe.first(1));
        assert!(dedupe.first(2));
        assert!(dedupe.first(3));
        assert!(
            dedupe.first(1),
            "forgotten: delivered again rather than lost"
        );
        assert!(dedupe.seen.len() <= 2);
    }

    #[test]
    fn lanes_deliver_each_index_once_from_stream_or_copy() {
        let mut lanes = Lanes::default();
        assert!(lanes.copy_arrived(1, 0));
        assert!(
            !lanes.copy_arrived(1, 2),
            "not the next one: the stream will bring it"
        );
        assert!(!lanes.stream_read(1, 0), "the copy delivered it");
        assert!(lanes.stream_read(1, 1));
        assert!(lanes.copy_arrived(1, 2));
        assert!(!lanes.stream_read(1, 2));
        assert!(lanes.stream_read(1, 3));
        assert!(lanes.stream_read(2, 0), "lanes are independent");
    }
}
