//! Digests: what a node announced, summed up so another node can check it holds the same.
//!
//! A [`Sum`] is a count and an order-free hash (the wrapping sum of each entry's 64-bit hash),
//! so it can be kept up to date entry by entry on the receiving side (add on insert, subtract
//! on remove) and computed in any order on the sending side. The entry hashes are hand-written
//! (FNV-1a over the fields, then a 64-bit finaliser), the same on every node and every build.
//!
//! Every `cluster.digest_interval_ms` a node queues its digest on each peer's sessions subject
//! behind its announcements (same queue, same subject: every receiver applies all that came
//! before it first). A receiver whose sums for that node differ asks it for a snapshot (see
//! `sessions.rs`); the snapshot replaces what it held, so a lost announcement is repaired
//! within about one digest interval plus a round trip.

use metafi_realtime::{Presence, StreamKey};
use uuid::Uuid;

use crate::wire::SessionEntry;

/// A count and an order-free hash of a set of entries.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Sum {
    pub count: u64,
    pub hash: u64,
}

impl Sum {
    pub(crate) fn add(&mut self, hash: u64) {
        self.count = self.count.wrapping_add(1);
        self.hash = self.hash.wrapping_add(hash);
    }

    pub(crate) fn remove(&mut self, hash: u64) {
        self.count = self.count.wrapping_sub(1);
        self.hash = self.hash.wrapping_sub(hash);
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(FNV_OFFSET)
    }

    fn bytes(&mut self, bytes: &[u8]) -> &mut Fnv {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(FNV_PRIME);
        }
        self
    }

    /// Text with its length first, so ("ab", "c") and ("a", "bc") differ.
    fn text(&mut self, text: &str) -> &mut Fnv {
        self.bytes(&(text.len() as u64).to_be_bytes())
            .bytes(text.as_bytes())
    }

    fn uuid(&mut self, id: &Uuid) -> &mut Fnv {
        self.bytes(id.as_bytes())
    }

    /// splitmix64's finaliser: sums of hashes stay spread.
    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// One session as announced.
pub(crate) fn session_hash(session_id: &Uuid, user_id: &Uuid, opened_ms: u64) -> u64 {
    Fnv::new()
        .uuid(session_id)
        .uuid(user_id)
        .bytes(&opened_ms.to_be_bytes())
        .finish()
}

pub(crate) fn session_entry_hash(entry: &SessionEntry) -> u64 {
    session_hash(&entry.session_id, &entry.user_id, entry.opened_ms)
}

/// One presence in one stream as announced.
pub(crate) fn presence_hash(stream: &StreamKey, presence: &Presence) -> u64 {
    let meta = &presence.meta;
    let mut h = Fnv::new();
    h.bytes(&[stream.mode.number()])
        .uuid(&stream.subject)
        .uuid(&stream.subcontext)
        .text(&stream.label)
        .uuid(&presence.session_id)
        .uuid(&presence.user_id)
        .text(&meta.username)
        .bytes(&[u8::from(meta.persistence), u8::from(meta.hidden)]);
    match &meta.status {
        Some(status) => h.bytes(&[1]).text(status),
        None => h.bytes(&[0]),
    };
    h.finish()
}

/// One listed match as published (every field a listing search can see).
pub(crate) fn listed_match_hash(m: &metafi_match::ListedMatch) -> u64 {
    let mut h = Fnv::new();
    h.text(&m.match_id).bytes(&[u8::from(m.authoritative)]);
    for text in [&m.label, &m.handler_name] {
        match text {
            Some(text) => h.bytes(&[1]).text(text),
            None => h.bytes(&[0]),
        };
    }
    h.bytes(&m.size.to_be_bytes())
        .bytes(&m.tick_rate.map_or([0xff; 4], i32::to_be_bytes))
        .bytes(&[u8::from(m.tick_rate.is_some())])
        .bytes(&m.create_time_ms.to_be_bytes());
    h.finish()
}

#[cfg(test)]
mod tests {
    use metafi_realtime::{PresenceMeta, StreamMode};

    use super::*;

    fn presence(status: Option<&str>) -> Presence {
        Presence {
            session_id: Uuid::from_u128(1),
            user_id: Uuid::from_u128(2),
            meta: PresenceMeta {
                username: "u".into(),
                persistence: false,
                hidden: false,
                status: status.map(str::to_owned),
            },
        }
    }

    #[test]
    fn sums_ignore_order_and_see_any_field_change() {
        let stream = StreamKey::status(Uuid::from_u128(2));
        let (a, b) = (
            presence_hash(&stream, &presence(None)),
            presence_hash(&stream, &presence(Some(""))),
        );
        assert_ne!(a, b, "no status and an empty status differ");
        let room = StreamKey {
            mode: StreamMode::Room,
            subject: Uuid::nil(),
            subcontext: Uuid::nil(),
            label: "x".into(),
        };
        assert_ne!(a, presence_hash(&room, &presence(None)));
        let (mut one, mut two) = (Sum::default(), Sum::default());
        one.add(a);
        one.add(b);
        two.add(b);
        two.add(a);
        assert_eq!(one, two);
        one.remove(a);
        assert_ne!(one, two);
        two.remove(a);
        assert_eq!(one, two);
        // Pinned (computed independently): every node and build must compute the same hash.
        assert_eq!(
            session_hash(&Uuid::from_u128(1), &Uuid::from_u128(2), 3),
            0xa99a_1009_f90f_d98f
        );
        assert_ne!(
            session_hash(&Uuid::from_u128(1), &Uuid::from_u128(2), 3),
            session_hash(&Uuid::from_u128(1), &Uuid::from_u128(2), 0)
        );
    }
}
