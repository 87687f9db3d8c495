//! Match data (`rtapi.MatchData`) in JSON, written straight into one buffer of the right size:
//! the same bytes as `Envelope::to_json`, which is serde's generic path. That path cost about
//! 5,400 instructions a message on the seed match (escaping every string byte by byte,
//! `op_code` through `fmt`, the payload's base64 in a `String` of its own, the buffer grown
//! several times), a tenth of the server's user-space instructions per delivered message
//! (docs/BENCHMARKS.md, "The match data's JSON written once, directly"). Any envelope this
//! does not cover (a `cid`, a delivery class, a presence with a status) goes the generic way.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use metafi_proto::realtime::{Envelope, MatchData, Message, UserPresence};

/// The JSON of `envelope` if it is match data this writer covers; `None`: use the generic
/// encoder.
pub(crate) fn encode(envelope: &Envelope) -> Option<Vec<u8>> {
    if !envelope.cid.is_empty() {
        return None;
    }
    let Some(Message::MatchData(data)) = &envelope.message else {
        return None;
    };
    if data.delivery.is_some() || data.presence.as_ref().is_some_and(|p| p.status.is_some()) {
        return None;
    }
    let encoded_len = base64::encoded_len(data.data.len(), true)?;
    let mut out = Vec::with_capacity(capacity(data, encoded_len));
    out.extend_from_slice(b"{\"match_data\":{");
    let mut object = Object::new(&mut out);
    if !data.match_id.is_empty() {
        object.key(b"match_id");
        string(object.out, &data.match_id);
    }
    if let Some(presence) = &data.presence {
        object.key(b"presence");
        write_presence(object.out, presence);
    }
    if data.op_code != 0 {
        object.key(b"op_code");
        // An int64 is a string in protobuf JSON.
        object.out.push(b'"');
        object
            .out
            .extend_from_slice(itoa::Buffer::new().format(data.op_code).as_bytes());
        object.out.push(b'"');
    }
    if !data.data.is_empty() {
        object.key(b"data");
        object.out.push(b'"');
        // The standard alphabet with padding (as `metafi_proto`'s `base64_bytes`): nothing in
        // it needs escaping.
        let start = object.out.len();
        object.out.resize(start + encoded_len, 0);
        let written = STANDARD
            .encode_slice(&data.data, &mut object.out[start..])
            .ok()?;
        object.out.truncate(start + written);
        object.out.push(b'"');
    }
    if data.reliable {
        object.key(b"reliable");
        object.out.extend_from_slice(b"true");
    }
    out.extend_from_slice(b"}}");
    Some(out)
}

/// A JSON object being written: a comma before every key but the first.
struct Object<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Object<'a> {
    fn new(out: &'a mut Vec<u8>) -> Object<'a> {
        Object { out, first: true }
    }

    /// `key` must need no escaping (the field names here).
    fn key(&mut self, key: &[u8]) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(key);
        self.out.extend_from_slice(b"\":");
    }
}

fn write_presence(out: &mut Vec<u8>, presence: &UserPresence) {
    out.push(b'{');
    let mut object = Object::new(out);
    for (key, value) in [
        (&b"user_id"[..], &presence.user_id),
        (b"session_id", &presence.session_id),
        (b"username", &presence.username),
    ] {
        if !value.is_empty() {
            object.key(key);
            string(object.out, value);
        }
    }
    if presence.persistence {
        object.key(b"persistence");
        object.out.extend_from_slice(b"true");
    }
    out.push(b'}');
}

/// A JSON string as serde_json writes it: copied as is when nothing in it needs escaping (the
/// usual case: ids, names), else through serde_json's own escaping.
fn string(out: &mut Vec<u8>, text: &str) {
    let plain = text.as_bytes().iter().fold(true, |plain, &b| {
        plain & (b >= 0x20 && b != b'"' && b != b'\\')
    });
    if plain {
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        // Invariant: serializing a `str` into a `Vec` cannot fail.
        serde_json::to_writer(&mut *out, text).expect("a string always serializes to JSON");
    }
}

/// An upper bound of the encoded size when no string needs escaping (else the buffer grows).
fn capacity(data: &MatchData, encoded_len: usize) -> usize {
    let presence = data.presence.as_ref().map_or(0, |p| {
        64 + p.user_id.len() + p.session_id.len() + p.username.len()
    });
    64 + data.match_id.len() + presence + 24 + encoded_len + 16
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use metafi_proto::realtime::{Delivery, Pong};
    use metafi_proto::wkt::StringValue;

    use super::*;

    fn presence(user: &str, session: &str, name: &str) -> UserPresence {
        UserPresence {
            user_id: user.into(),
            session_id: session.into(),
            username: name.into(),
            persistence: false,
            status: None,
        }
    }

    fn envelope(data: MatchData) -> Envelope {
        Envelope::new("", Message::MatchData(data))
    }

    /// Every combination of present and absent fields, and strings that need escaping, give
    /// the generic encoder's bytes.
    #[test]
    fn writes_what_serde_writes() {
        let names = [
            "",
            "player-1",
            "quote\"back\\slash",
            "tab\tnew\nline\u{1}",
            "ünïcödé 🎮",
            "\u{7f}del",
        ];
        let payloads = [
            Bytes::new(),
            Bytes::from_static(b"x"),
            Bytes::from_static(b"xy"),
            Bytes::from_static(b"xyz"),
            Bytes::from((0..=255u8).collect::<Vec<u8>>()),
        ];
        let mut checked = 0;
        for name in names {
            for payload in &payloads {
                for op_code in [0, 1, -7, i64::MAX, i64::MIN] {
                    for reliable in [false, true] {
                        for with_presence in [false, true] {
                            for match_id in
                                ["", "8f7c3a52-1d2b-4c6e-9a0f-3b5d7e9f1a2c.node-1", name]
                            {
                                let data = MatchData {
                                    match_id: match_id.into(),
                                    presence: with_presence.then(|| {
                                        let mut p = presence(
                                            "0a6c3d1e-2f4b-4c5d-8e9f-a0b1c2d3e4f5",
                                            name,
                                            name,
                                        );
                                        p.persistence = reliable;
                                        p
                                    }),
                                    op_code,
                                    data: payload.clone(),
                                    reliable,
                                    delivery: None,
                                };
                                let envelope = envelope(data);
                                let fast = encode(&envelope).expect("covered");
                                assert_eq!(
                                    String::from_utf8_lossy(&fast),
                                    String::from_utf8_lossy(&envelope.to_json())
                                );
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 6 * 5 * 5 * 2 * 2 * 3);
    }

    #[test]
    fn leaves_what_it_does_not_cover_to_the_generic_encoder() {
        let data = MatchData {
            match_id: "m.".into(),
            op_code: 1,
            ..MatchData::default()
        };
        let mut with_cid = envelope(data.clone());
        with_cid.cid = "7".into();
        assert!(encode(&with_cid).is_none());
        let with_delivery = envelope(MatchData {
            delivery: Some(Delivery::default()),
            ..data.clone()
        });
        assert!(encode(&with_delivery).is_none());
        let mut with_status = presence("u", "s", "n");
        with_status.status = Some(StringValue {
            value: "away".into(),
        });
        let with_status = envelope(MatchData {
            presence: Some(with_status),
            ..data.clone()
        });
        assert!(encode(&with_status).is_none());
        assert!(encode(&Envelope::new("", Message::Pong(Pong::default()))).is_none());
        assert!(encode(&envelope(data)).is_some());
    }
}
