//! What an envelope's protobuf bytes say about it without decoding them: whether it has a
//! `cid`, and which message it carries (the `oneof` member's field number), read from its
//! top-level field keys and lengths only. An envelope from another node of a cluster goes to
//! this node's sockets as the bytes it came in; this is all the way there needs of it (the
//! name for the metrics, and whether it is a presence event the outboxes may merge).

use std::sync::OnceLock;

use metafi_proto::realtime::Format;

/// Field numbers of the envelope's `oneof` members whose merge key the outboxes read.
pub(crate) const CHANNEL_PRESENCE_EVENT: u32 = 10;
pub(crate) const MATCH_PRESENCE_EVENT: u32 = 18;
pub(crate) const STATUS_PRESENCE_EVENT: u32 = 27;

/// The envelope's field number of its `cid`.
const CID: u32 = 1;

/// Field numbers above this are no message of the envelope's `oneof` (ignored on decoding, as
/// unknown fields are).
const LAST_MESSAGE: u32 = 63;

/// Protobuf wire types.
const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LENGTH_DELIMITED: u32 = 2;
const FIXED32: u32 = 5;

/// An envelope's top level, as its bytes say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TopLevel {
    pub cid_is_empty: bool,
    /// The field number of the message it carries (the last one, as a decoder takes it); 0
    /// for none (a bare acknowledgement).
    pub message_tag: u32,
}

/// Walks the top-level fields of `bytes`; `None` if they do not parse as protobuf (a key or a
/// length past the end, a wire type that is not one, a message field that is not a message).
pub(crate) fn top_level(bytes: &[u8]) -> Option<TopLevel> {
    let mut top = TopLevel {
        cid_is_empty: true,
        message_tag: 0,
    };
    let mut rest = bytes;
    while !rest.is_empty() {
        let key = varint(&mut rest)?;
        let field = u32::try_from(key >> 3).ok()?;
        let wire_type = (key & 7) as u32;
        if field == 0 {
            return None;
        }
        let len = match wire_type {
            VARINT => {
                varint(&mut rest)?;
                0
            }
            FIXED64 => 8,
            FIXED32 => 4,
            LENGTH_DELIMITED => usize::try_from(varint(&mut rest)?).ok()?,
            _ => return None,
        };
        let value = rest.get(..len)?;
        rest = &rest[len..];
        match field {
            CID if wire_type == LENGTH_DELIMITED => top.cid_is_empty = value.is_empty(),
            CID => return None,
            2..=LAST_MESSAGE if message_name(field) != UNKNOWN => {
                if wire_type != LENGTH_DELIMITED {
                    return None;
                }
                top.message_tag = field;
            }
            _ => {}
        }
    }
    Some(top)
}

/// The name `Envelope::name` gives the message with field number `tag` ("none" for 0).
pub(crate) fn message_name(tag: u32) -> &'static str {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        // Each member's name, from the envelope that carries it empty: the proto crate's one
        // table of members, read once, not a second copy of it here.
        (0..=LAST_MESSAGE)
            .map(|tag| {
                if tag == 0 {
                    return "none";
                }
                let mut bytes = Vec::with_capacity(3);
                let mut key = u64::from(tag << 3 | LENGTH_DELIMITED);
                while key >= 0x80 {
                    bytes.push((key as u8) | 0x80);
                    key >>= 7;
                }
                bytes.push(key as u8);
                bytes.push(0);
                match Format::Protobuf.decode(&bytes) {
                    Ok(envelope) if envelope.message.is_some() => envelope.name(),
                    _ => UNKNOWN,
                }
            })
            .collect()
    });
    usize::try_from(tag)
        .ok()
        .and_then(|tag| names.get(tag))
        .copied()
        .unwrap_or(UNKNOWN)
}

/// A field number that names no message.
const UNKNOWN: &str = "unknown";

fn varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (i, byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            *bytes = &bytes[i + 1..];
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use metafi_proto::realtime::{
        ChannelPresenceEvent, Envelope, MatchData, Message, Ping, UserPresence,
    };

    use super::*;

    fn peek(envelope: &Envelope) -> Option<TopLevel> {
        top_level(&Format::Protobuf.encode(envelope))
    }

    #[test]
    fn the_top_level_tells_the_message_and_the_cid_as_a_decoder_does() {
        let data = Message::MatchData(MatchData {
            match_id: "m.n1".into(),
            presence: Some(UserPresence {
                user_id: "u".into(),
                session_id: "s".into(),
                username: "name".into(),
                ..Default::default()
            }),
            op_code: 3,
            data: vec![0xff; 300].into(),
            reliable: true,
            delivery: None,
        });
        let presences = Message::ChannelPresenceEvent(ChannelPresenceEvent {
            channel_id: "2...room".into(),
            ..Default::default()
        });
        for (envelope, cid_is_empty) in [
            (Envelope::new("", data.clone()), true),
            (Envelope::new("7", data), false),
            (Envelope::new("", presences), true),
            (Envelope::new("12", Message::Ping(Ping {})), false),
            (Envelope::ack("3"), false),
            (Envelope::default(), true),
        ] {
            let top = peek(&envelope).expect("parses");
            assert_eq!(top.cid_is_empty, cid_is_empty, "{envelope:?}");
            assert_eq!(message_name(top.message_tag), envelope.name());
        }
        assert_eq!(
            peek(&Envelope::new(
                "",
                Message::ChannelPresenceEvent(Default::default())
            ))
            .map(|top| top.message_tag),
            Some(CHANNEL_PRESENCE_EVENT)
        );
    }

    #[test]
    fn every_member_of_the_oneof_has_its_name_and_tag() {
        // Every field number that decodes as a message names it, and the presence events'
        // numbers are the ones the merge rule checks.
        let named: Vec<&str> = (2..=LAST_MESSAGE)
            .map(message_name)
            .filter(|name| *name != UNKNOWN)
            .collect();
        assert_eq!(named.len(), 50, "{named:?}");
        assert_eq!(
            message_name(CHANNEL_PRESENCE_EVENT),
            "channel_presence_event"
        );
        assert_eq!(message_name(MATCH_PRESENCE_EVENT), "match_presence_event");
        assert_eq!(message_name(STATUS_PRESENCE_EVENT), "status_presence_event");
        assert_eq!(message_name(0), "none");
        assert_eq!(message_name(1), UNKNOWN);
        assert_eq!(message_name(1_000), UNKNOWN);
    }

    #[test]
    fn unknown_fields_are_skipped_and_garbage_is_refused_without_panicking() {
        let mut bytes = Format::Protobuf.encode(&Envelope::new(
            "",
            Message::MatchData(MatchData {
                match_id: "m".into(),
                data: vec![1, 2, 3].into(),
                ..Default::default()
            }),
        ));
        // An unknown varint field (100) and fixed32 field (101) after it.
        bytes.extend_from_slice(&[0xa0, 0x06, 0x05, 0xad, 0x06, 1, 2, 3, 4]);
        assert_eq!(
            top_level(&bytes).map(|top| message_name(top.message_tag)),
            Some("match_data")
        );
        assert!(
            top_level(&[0x72, 0x05, 0x00]).is_none(),
            "a length past the end"
        );
        assert!(top_level(&[0x70, 0x01]).is_none(), "a message as a varint");
        assert!(top_level(&[0x0b]).is_none(), "a group wire type");
        assert!(top_level(&[0x00, 0x00]).is_none(), "field number 0");
        assert!(top_level(&[0xff; 12]).is_none(), "a varint too long");
        // Every prefix and every single-byte change of an envelope either parses or not, and
        // never panics.
        for end in 0..bytes.len() {
            let _ = top_level(&bytes[..end]);
        }
        for at in 0..bytes.len() {
            for value in [0x00, 0x07, 0x80, 0xff] {
                let mut changed = bytes.clone();
                changed[at] = value;
                let _ = top_level(&changed);
            }
        }
    }
}
