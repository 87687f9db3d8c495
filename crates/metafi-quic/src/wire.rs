//! The bytes on a MetaFi QUIC connection (`docs/TRANSPORT.md`, "Protocol"): QUIC-style
//! variable-length integers, length-prefixed frames, the headers of unidirectional streams and
//! datagrams, and the two handshake messages of the control stream. Pure functions, no IO.
//!
//! ```text
//! control stream (first client bidi stream):  frame*            frame = varint len, bytes
//!     client → server: Hello, then envelopes; server → client: Welcome, then envelopes
//! uni stream, ordered lane:    0x01 lane name_len name   frame*
//! uni stream, unordered:       0x02 id                   envelope (to FIN)
//! uni stream, latest final:    0x03 key seq              envelope (to FIN)
//! datagram, unreliable:        0x01                      envelope
//! datagram, latest:            0x02 key seq              envelope
//! datagram, ordered copy:      0x03 lane index           envelope
//! datagram, unordered copy:    0x04 id                   envelope
//! ```
//! Every number after the kind byte is a varint.

use bytes::{BufMut, Bytes, BytesMut};

/// The ALPN protocol name: a server and a client agree on it or the handshake fails.
pub const ALPN: &[u8] = b"metafi/1";

/// Lane numbers are below this: lane 0 is the control stream, named streams take 1.. (each
/// side numbers its own). A bound the receiver enforces, so a peer cannot make it track more.
pub const LANE_SPACE: u64 = 256;
/// Latest-wins key ids are below this (each side numbers its own keys).
pub const KEY_SPACE: u64 = 4096;

/// QUIC application close codes. Session closes use the WebSocket close codes of
/// `metafi_realtime::CloseReason::code` (1000–1011); refusals before a session exists use
/// 4000 + the gRPC code, as the REST API would answer.
pub mod close_code {
    /// The client closed politely.
    pub const NORMAL: u32 = 1000;
    /// The server is going away (shutting down).
    pub const GOING_AWAY: u32 = 1001;
    /// The peer broke the framing rules (bad header, unknown kind, lane or key out of range).
    pub const PROTOCOL_ERROR: u32 = 1002;
    /// A message larger than the configured limit.
    pub const MESSAGE_TOO_LARGE: u32 = 1009;
    /// Missing, invalid, expired or revoked session token (gRPC 16).
    pub const UNAUTHENTICATED: u32 = 4016;
    /// A malformed handshake message (gRPC 3).
    pub const INVALID_ARGUMENT: u32 = 4003;
}

/// Kind bytes of unidirectional streams.
pub mod uni_kind {
    pub const LANE: u8 = 0x01;
    pub const UNORDERED: u8 = 0x02;
    pub const LATEST_FINAL: u8 = 0x03;
}

/// Kind bytes of datagrams.
pub mod datagram_kind {
    pub const UNRELIABLE: u8 = 0x01;
    pub const LATEST: u8 = 0x02;
    pub const ORDERED_COPY: u8 = 0x03;
    pub const UNORDERED_COPY: u8 = 0x04;
}

/// The first frame a client sends on the control stream.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Hello {
    /// The session token, as `?token=` of `/ws`.
    #[prost(string, tag = "1")]
    pub token: String,
    /// `status=true` of `/ws`: appear online to followers.
    #[prost(bool, tag = "2")]
    pub appear_online: bool,
    /// `lang` of `/ws` (accepted, unused).
    #[prost(string, tag = "3")]
    pub lang: String,
}

/// The server's first frame on the control stream: the session is open.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Welcome {
    /// The realtime session's id (as the session id of presences).
    #[prost(string, tag = "1")]
    pub session_id: String,
}

/// Bytes that break the framing rules. Carries no text: the caller says where it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("truncated header")]
    Truncated,
    #[error("unknown kind byte {0:#04x}")]
    UnknownKind(u8),
    #[error("lane {0} out of range")]
    LaneOutOfRange(u64),
    #[error("key {0} out of range")]
    KeyOutOfRange(u64),
    #[error("stream name is not UTF-8")]
    BadName,
}

/// A datagram, decoded; the envelope is a slice of the datagram's bytes (no copy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Datagram {
    Unreliable {
        envelope: Bytes,
    },
    Latest {
        key: u64,
        seq: u64,
        envelope: Bytes,
    },
    OrderedCopy {
        lane: u64,
        index: u64,
        envelope: Bytes,
    },
    UnorderedCopy {
        id: u64,
        envelope: Bytes,
    },
}

impl Datagram {
    /// The datagram's bytes.
    pub fn encode(&self) -> Bytes {
        let (kind, numbers, envelope): (u8, &[u64], &Bytes) = match self {
            Datagram::Unreliable { envelope } => (datagram_kind::UNRELIABLE, &[], envelope),
            Datagram::Latest { key, seq, envelope } => {
                (datagram_kind::LATEST, &[*key, *seq], envelope)
            }
            Datagram::OrderedCopy {
                lane,
                index,
                envelope,
            } => (datagram_kind::ORDERED_COPY, &[*lane, *index], envelope),
            Datagram::UnorderedCopy { id, envelope } => {
                (datagram_kind::UNORDERED_COPY, &[*id], envelope)
            }
        };
        let mut buf = BytesMut::with_capacity(1 + 16 + envelope.len());
        buf.put_u8(kind);
        for n in numbers {
            put_varint(&mut buf, *n);
        }
        buf.extend_from_slice(envelope);
        buf.freeze()
    }

    /// Decodes a datagram; ranges of lanes and keys are checked.
    pub fn decode(bytes: Bytes) -> Result<Datagram, WireError> {
        let mut cursor: &[u8] = &bytes;
        let kind = *cursor.first().ok_or(WireError::Truncated)?;
        cursor = &cursor[1..];
        let mut number = || get_varint(&mut cursor).ok_or(WireError::Truncated);
        let shape = match kind {
            datagram_kind::UNRELIABLE => Datagram::Unreliable {
                envelope: Bytes::new(),
            },
            datagram_kind::LATEST => Datagram::Latest {
                key: check_key(number()?)?,
                seq: number()?,
                envelope: Bytes::new(),
            },
            datagram_kind::ORDERED_COPY => Datagram::OrderedCopy {
                lane: check_lane(number()?)?,
                index: number()?,
                envelope: Bytes::new(),
            },
            datagram_kind::UNORDERED_COPY => Datagram::UnorderedCopy {
                id: number()?,
                envelope: Bytes::new(),
            },
            other => return Err(WireError::UnknownKind(other)),
        };
        let rest = bytes.slice(bytes.len() - cursor.len()..);
        Ok(match shape {
            Datagram::Unreliable { .. } => Datagram::Unreliable { envelope: rest },
            Datagram::Latest { key, seq, .. } => Datagram::Latest {
                key,
                seq,
                envelope: rest,
            },
            Datagram::OrderedCopy { lane, index, .. } => Datagram::OrderedCopy {
                lane,
                index,
                envelope: rest,
            },
            Datagram::UnorderedCopy { id, .. } => Datagram::UnorderedCopy { id, envelope: rest },
        })
    }

    /// Header bytes a datagram of this shape adds to its envelope (at most).
    pub const MAX_HEADER: usize = 1 + 8 + 8;
}

/// The header that starts a unidirectional stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UniHeader {
    /// A named reliable-ordered stream: frames follow until FIN.
    Lane { lane: u64, name: String },
    /// One reliable-unordered message (the rest of the stream).
    Unordered { id: u64 },
    /// The final value of a latest-wins key, sent reliably (the rest of the stream).
    LatestFinal { key: u64, seq: u64 },
}

impl UniHeader {
    pub fn encode(&self, buf: &mut BytesMut) {
        match self {
            UniHeader::Lane { lane, name } => {
                buf.put_u8(uni_kind::LANE);
                put_varint(buf, *lane);
                put_varint(buf, name.len() as u64);
                buf.extend_from_slice(name.as_bytes());
            }
            UniHeader::Unordered { id } => {
                buf.put_u8(uni_kind::UNORDERED);
                put_varint(buf, *id);
            }
            UniHeader::LatestFinal { key, seq } => {
                buf.put_u8(uni_kind::LATEST_FINAL);
                put_varint(buf, *key);
                put_varint(buf, *seq);
            }
        }
    }
}

/// Appends `value` as a QUIC variable-length integer (1, 2, 4 or 8 bytes). Values of 2^62 and
/// more do not occur here (counters start at 0 and grow by one); they are clamped.
pub fn put_varint(buf: &mut BytesMut, value: u64) {
    let value = value.min((1 << 62) - 1);
    if value < 1 << 6 {
        buf.put_u8(value as u8);
    } else if value < 1 << 14 {
        buf.put_u16(0x4000 | value as u16);
    } else if value < 1 << 30 {
        buf.put_u32(0x8000_0000 | value as u32);
    } else {
        buf.put_u64(0xc000_0000_0000_0000 | value);
    }
}

/// How many bytes a varint starting with `first` takes.
pub fn varint_len(first: u8) -> usize {
    1 << (first >> 6)
}

/// Reads a varint from the front of `cursor`, advancing it; `None` if truncated.
pub fn get_varint(cursor: &mut &[u8]) -> Option<u64> {
    let first = *cursor.first()?;
    let len = varint_len(first);
    if cursor.len() < len {
        return None;
    }
    let mut value = u64::from(first & 0x3f);
    for byte in &cursor[1..len] {
        value = (value << 8) | u64::from(*byte);
    }
    *cursor = &cursor[len..];
    Some(value)
}

/// A length-prefixed frame: varint length, then the bytes.
pub fn frame(payload: &[u8]) -> Bytes {
    let mut buf = BytesMut::with_capacity(payload.len() + 8);
    put_varint(&mut buf, payload.len() as u64);
    buf.extend_from_slice(payload);
    buf.freeze()
}

pub(crate) fn check_lane(lane: u64) -> Result<u64, WireError> {
    if lane < LANE_SPACE {
        Ok(lane)
    } else {
        Err(WireError::LaneOutOfRange(lane))
    }
}

pub(crate) fn check_key(key: u64) -> Result<u64, WireError> {
    if key < KEY_SPACE {
        Ok(key)
    } else {
        Err(WireError::KeyOutOfRange(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_every_width() {
        for value in [
            0,
            63,
            64,
            16_383,
            16_384,
            (1 << 30) - 1,
            1 << 30,
            (1 << 62) - 1,
        ] {
            let mut buf = BytesMut::new();
            put_varint(&mut buf, value);
            assert_eq!(buf.len(), varint_len(buf[0]));
            let mut cursor: &[u8] = &buf;
            assert_eq!(get_varint(&mut cursor), Some(value));
            assert!(cursor.is_empty());
        }
        let mut truncated: &[u8] = &[0x40];
        assert_eq!(get_varint(&mut truncated), None);
    }

    #[test]
    fn datagrams_round_trip() {
        let envelope = Bytes::from_static(b"\x0a\x01x");
        for datagram in [
            Datagram::Unreliable {
                envelope: envelope.clone(),
            },
            Datagram::Latest {
                key: 4095,
                seq: 1 << 40,
                envelope: envelope.clone(),
            },
            Datagram::OrderedCopy {
                lane: 255,
                index: 7,
                envelope: envelope.clone(),
            },
            Datagram::UnorderedCopy {
                id: 70_000,
                envelope: Bytes::new(),
            },
        ] {
            assert_eq!(Datagram::decode(datagram.encode()), Ok(datagram));
        }
    }

    #[test]
    fn bad_datagrams_are_errors_not_panics() {
        assert_eq!(Datagram::decode(Bytes::new()), Err(WireError::Truncated));
        assert_eq!(
            Datagram::decode(Bytes::from_static(&[0x09])),
            Err(WireError::UnknownKind(9))
        );
        assert_eq!(
            Datagram::decode(Bytes::from_static(&[0x02, 0x50])),
            Err(WireError::Truncated)
        );
        let mut big = BytesMut::new();
        big.put_u8(datagram_kind::LATEST);
        put_varint(&mut big, KEY_SPACE);
        put_varint(&mut big, 1);
        assert_eq!(
            Datagram::decode(big.freeze()),
            Err(WireError::KeyOutOfRange(KEY_SPACE))
        );
        // Every prefix of every byte string of length ≤ 3 decodes or errs without panicking.
        for a in 0..=255u8 {
            for b in [0u8, 0x3f, 0x40, 0x80, 0xc0, 0xff] {
                let _ = Datagram::decode(Bytes::copy_from_slice(&[a, b]));
                let _ = Datagram::decode(Bytes::copy_from_slice(&[a, b, b]));
            }
        }
    }
}
