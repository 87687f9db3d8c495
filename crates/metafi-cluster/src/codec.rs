//! The compact binary forms of the hot cluster messages, and the batch frame.
//!
//! - Session announcements (`<prefix>.cluster.node.NAME.sessions`, among the deliveries: opens,
//!   closes, tracks, untracks, snapshots, digests) are a fixed layout: a kind byte, then the
//!   fields in order — ids as 16 raw bytes, integers big-endian, the node name with a one-byte
//!   length, other text with a four-byte length, an optional text as a presence byte then the
//!   text. No field names, no text parsing on the receiver.
//! - Match data casts (the per-message hot path of a player on another node than its match)
//!   are a fixed layout too (see [`encode_match_data`]); other calls and casts stay JSON.
//! - A batch (see `outgoing.rs`): [`BATCH`], a count (u32), then each message as its length
//!   (u32) and bytes. A receiver of a batched subject hands each part to the same code a single
//!   message goes to ([`unbatch`]), in order.
//!
//! Every decoder refuses what does not fit (`None`), never panics on input.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use metafi_proto::realtime::{Delivery, DeliveryClass};
use uuid::Uuid;

use crate::wire::{MatchDataCast, PresenceEntry, SessionEntry, SessionMessage, WireStream};

/// First byte of a batch frame. No single message starts with it: session announcements start
/// with their kind (1–9), deliveries with `wire::DELIVER` (0x10), call frames with the high
/// byte of a JSON length (0 below 16 MiB) or [`MATCH_DATA`].
pub(crate) const BATCH: u8 = 0xB0;

/// First byte of a binary match data cast.
pub(crate) const MATCH_DATA: u8 = 0xB1;

const OPEN: u8 = 1;
const CLOSE: u8 = 2;
const SNAPSHOT: u8 = 3;
const TRACK: u8 = 4;
const UNTRACK: u8 = 5;
const UNTRACK_ALL: u8 = 6;
const PRESENCES: u8 = 7;
const DIGEST: u8 = 8;
const ASK: u8 = 9;

/// Bytes of a batch's header and of each part's length.
pub(crate) const BATCH_HEADER: usize = 5;
pub(crate) const PART_HEADER: usize = 4;

/// One batch frame around `parts` (each is one message of the subject, in order).
pub(crate) fn encode_batch(parts: &[Bytes]) -> Bytes {
    let len = BATCH_HEADER + parts.iter().map(|p| PART_HEADER + p.len()).sum::<usize>();
    let mut frame = BytesMut::with_capacity(len);
    frame.put_u8(BATCH);
    frame.put_u32(u32::try_from(parts.len()).unwrap_or(u32::MAX));
    for part in parts {
        frame.put_u32(u32::try_from(part.len()).unwrap_or(u32::MAX));
        frame.put_slice(part);
    }
    frame.freeze()
}

/// The messages a payload carries: the parts of a batch (without copying), or the payload
/// itself. A batch that does not fit its header yields the parts that do, then stops.
pub(crate) fn unbatch(payload: &Bytes) -> Vec<Bytes> {
    if payload.first() != Some(&BATCH) {
        return vec![payload.clone()];
    }
    let mut parts = Vec::new();
    let Some(count) = payload.get(1..5) else {
        return parts;
    };
    let count = u32::from_be_bytes([count[0], count[1], count[2], count[3]]) as usize;
    let mut at = BATCH_HEADER;
    for _ in 0..count {
        let Some(len) = payload.get(at..at + PART_HEADER) else {
            break;
        };
        let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
        let start = at + PART_HEADER;
        let Some(end) = start.checked_add(len).filter(|end| *end <= payload.len()) else {
            break;
        };
        parts.push(payload.slice(start..end));
        at = end;
    }
    parts
}

struct Writer(BytesMut);

impl Writer {
    fn new(kind: u8, capacity: usize) -> Writer {
        let mut buf = BytesMut::with_capacity(capacity);
        buf.put_u8(kind);
        Writer(buf)
    }

    fn uuid(&mut self, id: &Uuid) {
        self.0.put_slice(id.as_bytes());
    }

    fn node(&mut self, node: &str) {
        // Node names are at most 64 bytes (`valid_node_name`).
        let bytes = &node.as_bytes()[..node.len().min(255)];
        self.0.put_u8(bytes.len() as u8);
        self.0.put_slice(bytes);
    }

    fn text(&mut self, text: &str) {
        self.0
            .put_u32(u32::try_from(text.len()).unwrap_or(u32::MAX));
        self.0.put_slice(text.as_bytes());
    }

    fn flag(&mut self, flag: bool) {
        self.0.put_u8(u8::from(flag));
    }

    fn stream(&mut self, stream: &WireStream) {
        self.0.put_u8(stream.mode);
        self.uuid(&stream.subject);
        self.uuid(&stream.subcontext);
        self.text(&stream.label);
    }

    fn session(&mut self, session: &SessionEntry) {
        self.uuid(&session.session_id);
        self.uuid(&session.user_id);
        self.0.put_u64(session.opened_ms);
    }

    fn presence(&mut self, entry: &PresenceEntry) {
        self.stream(&entry.stream);
        self.uuid(&entry.session_id);
        self.uuid(&entry.user_id);
        self.text(&entry.username);
        self.flag(entry.persistence);
        self.flag(entry.hidden);
        match &entry.status {
            Some(status) => {
                self.flag(true);
                self.text(status);
            }
            None => self.flag(false),
        }
    }

    fn count(&mut self, count: usize) {
        self.0.put_u32(u32::try_from(count).unwrap_or(u32::MAX));
    }

    fn done(self) -> Bytes {
        self.0.freeze()
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn u32(&mut self) -> Option<u32> {
        let mut b = self.take(4)?;
        Some(b.get_u32())
    }

    fn u64(&mut self) -> Option<u64> {
        let mut b = self.take(8)?;
        Some(b.get_u64())
    }

    fn i64(&mut self) -> Option<i64> {
        let mut b = self.take(8)?;
        Some(b.get_i64())
    }

    fn uuid(&mut self) -> Option<Uuid> {
        Uuid::from_slice(self.take(16)?).ok()
    }

    fn flag(&mut self) -> Option<bool> {
        match self.u8()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    fn node(&mut self) -> Option<String> {
        let len = self.u8()? as usize;
        String::from_utf8(self.take(len)?.to_vec()).ok()
    }

    fn text(&mut self) -> Option<String> {
        let len = self.u32()? as usize;
        String::from_utf8(self.take(len)?.to_vec()).ok()
    }

    /// A count of items at least `min_size` bytes each: refused when the rest cannot hold them
    /// (no allocation from a forged count).
    fn count(&mut self, min_size: usize) -> Option<usize> {
        let count = self.u32()? as usize;
        (count.checked_mul(min_size)? <= self.0.len()).then_some(count)
    }

    fn stream(&mut self) -> Option<WireStream> {
        Some(WireStream {
            mode: self.u8()?,
            subject: self.uuid()?,
            subcontext: self.uuid()?,
            label: self.text()?,
        })
    }

    fn session(&mut self) -> Option<SessionEntry> {
        Some(SessionEntry {
            session_id: self.uuid()?,
            user_id: self.uuid()?,
            opened_ms: self.u64()?,
        })
    }

    fn presence(&mut self) -> Option<PresenceEntry> {
        let stream = self.stream()?;
        let session_id = self.uuid()?;
        let user_id = self.uuid()?;
        let username = self.text()?;
        let persistence = self.flag()?;
        let hidden = self.flag()?;
        let status = if self.flag()? {
            Some(self.text()?)
        } else {
            None
        };
        Some(PresenceEntry {
            stream,
            session_id,
            user_id,
            username,
            persistence,
            hidden,
            status,
        })
    }

    /// The whole input was read.
    fn end<T>(self, value: T) -> Option<T> {
        self.0.is_empty().then_some(value)
    }
}

/// Smallest encoded session entry and presence entry (for count checks).
const SESSION_SIZE: usize = 40;
const PRESENCE_SIZE: usize = 1 + 32 + 4 + 32 + 4 + 3;

/// The binary form of a session announcement.
pub(crate) fn encode_session_message(message: &SessionMessage) -> Bytes {
    match message {
        SessionMessage::Open { node, session } => {
            let mut w = Writer::new(OPEN, 2 + node.len() + SESSION_SIZE);
            w.node(node);
            w.session(session);
            w.done()
        }
        SessionMessage::Close {
            node,
            session_id,
            user_id,
        } => {
            let mut w = Writer::new(CLOSE, 2 + node.len() + 32);
            w.node(node);
            w.uuid(session_id);
            w.uuid(user_id);
            w.done()
        }
        SessionMessage::Snapshot {
            node,
            first,
            sessions,
        } => {
            let mut w = Writer::new(SNAPSHOT, 7 + node.len() + sessions.len() * SESSION_SIZE);
            w.node(node);
            w.flag(*first);
            w.count(sessions.len());
            for session in sessions {
                w.session(session);
            }
            w.done()
        }
        SessionMessage::Track { node, entry } => {
            let mut w = Writer::new(TRACK, 2 + node.len() + PRESENCE_SIZE + 32);
            w.node(node);
            w.presence(entry);
            w.done()
        }
        SessionMessage::Untrack {
            node,
            session_id,
            stream,
        } => {
            let mut w = Writer::new(UNTRACK, 2 + node.len() + 16 + 37 + stream.label.len());
            w.node(node);
            w.uuid(session_id);
            w.stream(stream);
            w.done()
        }
        SessionMessage::UntrackAll { node, session_id } => {
            let mut w = Writer::new(UNTRACK_ALL, 2 + node.len() + 16);
            w.node(node);
            w.uuid(session_id);
            w.done()
        }
        SessionMessage::Presences {
            node,
            first,
            presences,
        } => {
            let mut w = Writer::new(
                PRESENCES,
                7 + node.len() + presences.len() * (PRESENCE_SIZE + 16),
            );
            w.node(node);
            w.flag(*first);
            w.count(presences.len());
            for entry in presences {
                w.presence(entry);
            }
            w.done()
        }
        SessionMessage::Digest {
            node,
            sessions,
            presences,
        } => {
            let mut w = Writer::new(DIGEST, 2 + node.len() + 32);
            w.node(node);
            w.0.put_u64(sessions.count);
            w.0.put_u64(sessions.hash);
            w.0.put_u64(presences.count);
            w.0.put_u64(presences.hash);
            w.done()
        }
        SessionMessage::Ask { node, of } => {
            let mut w = Writer::new(ASK, 3 + node.len() + of.len());
            w.node(node);
            w.node(of);
            w.done()
        }
    }
}

/// A session announcement from its binary form; `None` for anything else.
pub(crate) fn decode_session_message(bytes: &[u8]) -> Option<SessionMessage> {
    let mut r = Reader(bytes);
    let kind = r.u8()?;
    let node = r.node()?;
    let message = match kind {
        OPEN => SessionMessage::Open {
            node,
            session: r.session()?,
        },
        CLOSE => SessionMessage::Close {
            node,
            session_id: r.uuid()?,
            user_id: r.uuid()?,
        },
        SNAPSHOT => {
            let first = r.flag()?;
            let count = r.count(SESSION_SIZE)?;
            let mut sessions = Vec::with_capacity(count);
            for _ in 0..count {
                sessions.push(r.session()?);
            }
            SessionMessage::Snapshot {
                node,
                first,
                sessions,
            }
        }
        TRACK => SessionMessage::Track {
            node,
            entry: r.presence()?,
        },
        UNTRACK => SessionMessage::Untrack {
            node,
            session_id: r.uuid()?,
            stream: r.stream()?,
        },
        UNTRACK_ALL => SessionMessage::UntrackAll {
            node,
            session_id: r.uuid()?,
        },
        PRESENCES => {
            let first = r.flag()?;
            let count = r.count(PRESENCE_SIZE)?;
            let mut presences = Vec::with_capacity(count);
            for _ in 0..count {
                presences.push(r.presence()?);
            }
            SessionMessage::Presences {
                node,
                first,
                presences,
            }
        }
        DIGEST => SessionMessage::Digest {
            node,
            sessions: crate::digest::Sum {
                count: r.u64()?,
                hash: r.u64()?,
            },
            presences: crate::digest::Sum {
                count: r.u64()?,
                hash: r.u64()?,
            },
        },
        ASK => SessionMessage::Ask {
            node,
            of: r.node()?,
        },
        _ => return None,
    };
    r.end(message)
}

/// A match data cast: [`MATCH_DATA`], the match id (u16 length, text), the sender's session
/// (16 bytes), the op code (i64), reliable (1 byte), the sender's delivery extension (its class
/// number as one byte, 0 for none, then its lane: u32 length, text), the recipients (u32 count,
/// 16 bytes each), then the data as they are.
pub(crate) fn encode_match_data(cast: &MatchDataCast, data: &[u8]) -> Bytes {
    let (class, lane) = cast
        .delivery
        .as_ref()
        .map_or((0, ""), |d| (d.class, d.lane.as_str()));
    let mut frame = BytesMut::with_capacity(
        1 + 2
            + cast.match_id.len()
            + 16
            + 8
            + 1
            + 5
            + lane.len()
            + 4
            + cast.to.len() * 16
            + data.len(),
    );
    frame.put_u8(MATCH_DATA);
    let id = &cast.match_id.as_bytes()[..cast.match_id.len().min(usize::from(u16::MAX))];
    frame.put_u16(id.len() as u16);
    frame.put_slice(id);
    frame.put_slice(cast.session_id.as_bytes());
    frame.put_i64(cast.op_code);
    frame.put_u8(u8::from(cast.reliable));
    // Only named classes (1–4) are sent (`match_requests` drops an unknown one); a lane is
    // far below 4 GiB (a frame is at most NATS's payload limit).
    frame.put_u8(u8::try_from(class).unwrap_or(0));
    frame.put_u32(lane.len() as u32);
    frame.put_slice(lane.as_bytes());
    frame.put_u32(u32::try_from(cast.to.len()).unwrap_or(u32::MAX));
    for id in &cast.to {
        frame.put_slice(id.as_bytes());
    }
    frame.put_slice(data);
    frame.freeze()
}

/// A match data cast and its data (a slice of `frame`, not a copy).
pub(crate) fn decode_match_data(frame: &Bytes) -> Option<(MatchDataCast, Bytes)> {
    let mut r = Reader(frame.get(1..)?);
    let id_len = {
        let mut b = r.take(2)?;
        b.get_u16() as usize
    };
    let match_id = String::from_utf8(r.take(id_len)?.to_vec()).ok()?;
    let session_id = r.uuid()?;
    let op_code = r.i64()?;
    let reliable = r.flag()?;
    let class = r.u8()?;
    let lane = r.text()?;
    // An unknown class (a newer node's) is no class: `reliable` decides, as for a client's.
    let delivery =
        (DeliveryClass::from_parts(i32::from(class), &lane).is_some()).then(|| Delivery {
            class: i32::from(class),
            lane,
        });
    let count = r.count(16)?;
    let mut to = Vec::with_capacity(count);
    for _ in 0..count {
        to.push(r.uuid()?);
    }
    let data_start = frame.len() - r.0.len();
    Some((
        MatchDataCast {
            match_id,
            session_id,
            op_code,
            reliable,
            delivery,
            to,
        },
        frame.slice(data_start..),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::Sum;

    fn stream() -> WireStream {
        WireStream {
            mode: 2,
            subject: Uuid::new_v4(),
            subcontext: Uuid::nil(),
            label: "lobby".into(),
        }
    }

    fn entry(status: Option<&str>) -> PresenceEntry {
        PresenceEntry {
            stream: stream(),
            session_id: Uuid::new_v4(),
            user_id: Uuid::new_v4(),
            username: "ünïcode".into(),
            persistence: true,
            hidden: false,
            status: status.map(str::to_owned),
        }
    }

    fn session() -> SessionEntry {
        SessionEntry {
            session_id: Uuid::new_v4(),
            user_id: Uuid::new_v4(),
            opened_ms: 1_700_000_000_123,
        }
    }

    #[test]
    fn every_session_message_round_trips_and_truncations_are_refused() {
        let node = "node-1".to_owned();
        let messages = vec![
            SessionMessage::Open {
                node: node.clone(),
                session: session(),
            },
            SessionMessage::Close {
                node: node.clone(),
                session_id: Uuid::new_v4(),
                user_id: Uuid::new_v4(),
            },
            SessionMessage::Snapshot {
                node: node.clone(),
                first: true,
                sessions: vec![session(), session()],
            },
            SessionMessage::Snapshot {
                node: node.clone(),
                first: false,
                sessions: Vec::new(),
            },
            SessionMessage::Track {
                node: node.clone(),
                entry: entry(Some("busy")),
            },
            SessionMessage::Untrack {
                node: node.clone(),
                session_id: Uuid::new_v4(),
                stream: stream(),
            },
            SessionMessage::UntrackAll {
                node: node.clone(),
                session_id: Uuid::new_v4(),
            },
            SessionMessage::Presences {
                node: node.clone(),
                first: true,
                presences: vec![entry(None), entry(Some(""))],
            },
            SessionMessage::Digest {
                node: node.clone(),
                sessions: Sum { count: 3, hash: 9 },
                presences: Sum {
                    count: 1,
                    hash: u64::MAX,
                },
            },
            SessionMessage::Ask {
                node: node.clone(),
                of: "n2".into(),
            },
        ];
        for message in messages {
            let bytes = encode_session_message(&message);
            assert_eq!(
                decode_session_message(&bytes).as_ref(),
                Some(&message),
                "{message:?}"
            );
            for cut in 0..bytes.len() {
                assert_eq!(
                    decode_session_message(&bytes[..cut]),
                    None,
                    "{message:?} cut {cut}"
                );
            }
            let mut longer = bytes.to_vec();
            longer.push(0);
            assert_eq!(decode_session_message(&longer), None, "trailing byte");
        }
        // A forged count cannot make the decoder allocate for items that are not there.
        let mut forged = vec![SNAPSHOT, 1, b'n', 1];
        forged.extend_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(decode_session_message(&forged), None);
        assert_eq!(decode_session_message(&[77, 0]), None);
    }

    #[test]
    fn a_binary_track_is_far_smaller_than_its_json() {
        let message = SessionMessage::Track {
            node: "n1".into(),
            entry: entry(Some("")),
        };
        let binary = encode_session_message(&message).len();
        let json = serde_json::to_vec(&message).expect("encodes").len();
        assert!(binary * 2 < json, "binary {binary} bytes, JSON {json}");
    }

    #[test]
    fn batches_split_back_into_their_parts_and_single_messages_pass_through() {
        let parts = vec![
            Bytes::from_static(b"one"),
            Bytes::new(),
            Bytes::from_static(&[BATCH, 1, 2]),
        ];
        let frame = encode_batch(&parts);
        assert_eq!(unbatch(&frame), parts);
        let single = Bytes::from_static(&[1, 2, 3]);
        assert_eq!(unbatch(&single), vec![single.clone()]);
        // A truncated batch yields the whole parts before the cut.
        let cut = frame.slice(..frame.len() - 1);
        assert_eq!(unbatch(&cut), parts[..2].to_vec());
        assert!(unbatch(&Bytes::from_static(&[BATCH, 0])).is_empty());
    }

    #[test]
    fn match_data_round_trips_with_its_raw_bytes() {
        let to = vec![Uuid::new_v4(), Uuid::new_v4()];
        let sender = Uuid::new_v4();
        for delivery in [
            None,
            Some(DeliveryClass::ReliableUnordered.to_wire()),
            Some(DeliveryClass::latest("pos").to_wire()),
        ] {
            let cast = MatchDataCast {
                match_id: "abc.n1".into(),
                session_id: sender,
                op_code: -7,
                reliable: true,
                delivery,
                to: to.clone(),
            };
            let frame = encode_match_data(&cast, b"\x00data");
            let (data, raw) = decode_match_data(&frame).expect("decodes");
            assert_eq!(data, cast);
            assert_eq!(&raw[..], b"\x00data");
            for cut in 0..frame.len() - 5 {
                assert!(
                    decode_match_data(&frame.slice(..cut)).is_none(),
                    "cut {cut}"
                );
            }
        }
    }
}
