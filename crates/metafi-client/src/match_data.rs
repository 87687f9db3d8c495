//! A fast path for match data in JSON text frames, for load tools that receive tens of
//! thousands of `match_data` pushes a second: [`MatchDataView`] reads the op code and the
//! payload's base64 text straight out of the frame (borrowed, no `Envelope`, no allocation) and
//! decodes only the payload bytes the caller asks for; [`MatchDataSendJson`] writes a
//! `match_data_send` envelope for one match from pre-built parts, byte for byte what
//! [`Format::Json`](crate::Format) encodes for the same message. Anything else (answers,
//! presence events, protobuf frames) goes through the full decoder
//! ([`Format::decode`](crate::Format::decode)).

use std::borrow::Cow;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use metafi_proto::realtime::{Envelope, Format, MatchDataSend, Message};
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer};

/// A `match_data` push, borrowed from its JSON frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchDataView<'a> {
    pub op_code: i64,
    /// The payload as the frame carries it: base64 text.
    data: Cow<'a, str>,
}

impl<'a> MatchDataView<'a> {
    /// Reads a JSON envelope whose message is `match_data`; `None` when the frame holds another
    /// message or is not JSON this fast path understands (the full decoder then decides).
    pub fn parse_json(frame: &'a [u8]) -> Option<MatchDataView<'a>> {
        let push: Push<'a> = serde_json::from_slice(frame).ok()?;
        let data = push.match_data?;
        Some(MatchDataView {
            op_code: data.op_code.map_or(0, |OpCode(op)| op),
            data: data.data.unwrap_or(Cow::Borrowed("")),
        })
    }

    /// Decodes the first `out.len()` bytes of the payload into `out`, which must hold a
    /// multiple of 3 bytes (whole base64 groups). `None` when the payload is shorter, is not
    /// standard base64, or `out.len()` is not a multiple of 3.
    pub fn data_prefix(&self, out: &mut [u8]) -> Option<()> {
        if !out.len().is_multiple_of(3) {
            return None;
        }
        let text = self.data.as_bytes().get(..out.len() / 3 * 4)?;
        // within whole groups there is no padding, so this is the start of the payload
        let written = STANDARD.decode_slice(text, out).ok()?;
        (written == out.len()).then_some(())
    }

    /// The whole payload, decoded (tests compare it; the load tool reads only the prefix and
    /// leaves other encodings to the full decoder).
    #[cfg(test)]
    fn data(&self) -> Option<Vec<u8>> {
        STANDARD.decode(self.data.as_bytes()).ok()
    }
}

/// `match_data_send` envelopes for one match, opcode and reliability: only the payload changes
/// between messages, so the rest is written once.
#[derive(Debug, Clone)]
pub struct MatchDataSendJson {
    head: String,
    tail: String,
}

/// Marks where the payload goes in the template envelope (base64 of it never appears elsewhere).
const MARK: &[u8] = b"\x00metafi-payload-mark\x00";

impl MatchDataSendJson {
    /// The template for `op_code` in `match_id`, `reliable` as Nakama's clients send it.
    pub fn new(match_id: &str, op_code: i64, reliable: bool) -> MatchDataSendJson {
        let message = Message::MatchDataSend(MatchDataSend {
            match_id: match_id.to_owned(),
            op_code,
            data: bytes::Bytes::from_static(MARK),
            presences: Vec::new(),
            reliable,
            delivery: None,
        });
        let text = String::from_utf8(Format::Json.encode(&Envelope::new(String::new(), message)))
            // invariant: the JSON encoder writes UTF-8
            .unwrap_or_default();
        let mark = STANDARD.encode(MARK);
        let (head, tail) = text.split_once(&mark).unwrap_or((&text, ""));
        MatchDataSendJson {
            head: head.to_owned(),
            tail: tail.to_owned(),
        }
    }

    /// The envelope carrying `payload`, as JSON text.
    pub fn encode(&self, payload: &[u8]) -> String {
        let mut text = String::with_capacity(
            self.head.len() + payload.len().div_ceil(3) * 4 + self.tail.len(),
        );
        text.push_str(&self.head);
        STANDARD.encode_string(payload, &mut text);
        text.push_str(&self.tail);
        text
    }
}

/// The envelope, reduced to the one message this fast path reads; other keys are skipped.
#[derive(Deserialize)]
struct Push<'a> {
    #[serde(borrow, default, alias = "matchData")]
    match_data: Option<DataRef<'a>>,
}

#[derive(Deserialize)]
struct DataRef<'a> {
    #[serde(default, alias = "opCode")]
    op_code: Option<OpCode>,
    #[serde(borrow, default)]
    data: Option<Cow<'a, str>>,
    // match_id, presence, reliable, delivery: unknown to this struct, so serde skips them
    // (IgnoredAny) without allocating
}

/// An int64 op code: a string in protobuf JSON, a number from lenient writers.
struct OpCode(i64);

impl<'de> Deserialize<'de> for OpCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = OpCode;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an int64 as a string or a number")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<OpCode, E> {
                Ok(OpCode(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<OpCode, E> {
                i64::try_from(v)
                    .map(OpCode)
                    .map_err(|_| E::custom("op code out of range"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<OpCode, E> {
                v.parse().map(OpCode).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use metafi_proto::realtime::{MatchData, UserPresence};

    use super::*;

    fn pushed(op_code: i64, data: &'static [u8]) -> Vec<u8> {
        Format::Json.encode(&Envelope::new(
            String::new(),
            Message::MatchData(MatchData {
                match_id: "4c2f7a.node1".into(),
                presence: Some(UserPresence {
                    user_id: "u1".into(),
                    session_id: "s1".into(),
                    username: "name \"quoted\"".into(),
                    ..UserPresence::default()
                }),
                op_code,
                data: Bytes::from_static(data),
                reliable: true,
                delivery: None,
            }),
        ))
    }

    #[test]
    fn match_data_pushes_are_read_as_the_full_decoder_reads_them() {
        let payload = b"0000000000001234000000ff....................";
        let frame = pushed(2, payload);
        let view = MatchDataView::parse_json(&frame).expect("a match_data push");
        assert_eq!(view.op_code, 2);
        assert_eq!(view.data().as_deref(), Some(&payload[..]));
        let mut head = [0u8; 24];
        view.data_prefix(&mut head).expect("24 bytes");
        assert_eq!(&head, &payload[..24]);
        // a prefix longer than the payload, or not whole base64 groups, is refused
        assert_eq!(view.data_prefix(&mut [0u8; 48]), None);
        assert_eq!(view.data_prefix(&mut [0u8; 10]), None);
    }

    #[test]
    fn other_messages_and_garbage_are_left_to_the_full_decoder() {
        let answer = Format::Json.encode(&Envelope::new(
            "1",
            Message::MatchDataSend(MatchDataSend::default()),
        ));
        assert_eq!(MatchDataView::parse_json(&answer), None);
        assert_eq!(
            MatchDataView::parse_json(br#"{"cid":"1","rpc":{"id":"x"}}"#),
            None
        );
        assert_eq!(MatchDataView::parse_json(b"not json"), None);
        assert_eq!(MatchDataView::parse_json(b""), None);
        assert_eq!(
            MatchDataView::parse_json(br#"{"match_data":{"op_code":"x"}}"#),
            None
        );
    }

    #[test]
    fn lenient_json_is_read_too() {
        // a number op code, camelCase names, an escaped character in the base64 text
        let view = MatchDataView::parse_json(br#"{"matchData":{"opCode":7,"data":"aGVs\/G8="}}"#)
            .expect("read");
        assert_eq!(view.op_code, 7);
        assert_eq!(view.data().as_deref(), Some(&b"hel\xfco"[..]));
    }

    #[test]
    fn templated_sends_are_the_bytes_the_json_encoder_writes() {
        for (match_id, op_code, reliable, payload) in [
            (
                "4c2f7a.node1",
                1,
                true,
                &b"0000000000001234000000ff...................."[..],
            ),
            ("m \"odd\" id", 2, false, &b"x"[..]),
            ("m", 9_007_199_254_740_993, true, &b"\x00\xff binary"[..]),
        ] {
            let template = MatchDataSendJson::new(match_id, op_code, reliable);
            let expected = Format::Json.encode(&Envelope::new(
                String::new(),
                Message::MatchDataSend(MatchDataSend {
                    match_id: match_id.to_owned(),
                    op_code,
                    data: Bytes::copy_from_slice(payload),
                    presences: Vec::new(),
                    reliable,
                    delivery: None,
                }),
            ));
            assert_eq!(
                template.encode(payload),
                String::from_utf8(expected).expect("utf-8")
            );
        }
    }
}
