//! The message a match's players send most — `match_data_send` in JSON — read without serde's
//! generic path, which cost ≈ 5,300 instructions a message on the seed match (the envelope's
//! and the message's visitors, every key through an identifier visitor, the payload's base64
//! through an owned `String`, every string's UTF-8 checked again). Only its plain form is read
//! here: anything else — a `cid`, a string with an escape, `presences` with entries,
//! `delivery`, an unknown or repeated key, anything malformed — returns `None` and is left to
//! serde, which gives the same envelope, or the same error, as before. The twin of
//! `metafi-realtime`'s `match_data_json` (the writer of `match_data`).

use crate::json::base64_bytes;
use crate::realtime::{Envelope, MatchDataSend, Message};

/// The envelope of a plain `match_data_send` (`{"match_data_send": {…}}`, either spelling of
/// each key); `None`: read it the generic way.
pub(crate) fn parse(text: &[u8]) -> Option<Envelope> {
    let mut reader = Reader { text, at: 0 };
    reader.byte(b'{')?;
    let key = reader.string()?;
    if key != b"match_data_send" && key != b"matchDataSend" {
        return None;
    }
    reader.byte(b':')?;
    let message = reader.match_data_send()?;
    reader.byte(b'}')?;
    reader.end()?;
    Some(Envelope {
        cid: String::new(),
        message: Some(Message::MatchDataSend(message)),
    })
}

/// A position in the text; every read skips JSON's whitespace first.
struct Reader<'a> {
    text: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.text.get(self.at) {
            self.at += 1;
        }
    }

    /// Consumes `expected` if it comes next.
    fn byte(&mut self, expected: u8) -> Option<()> {
        self.skip_whitespace();
        (self.text.get(self.at) == Some(&expected)).then(|| self.at += 1)
    }

    fn end(&mut self) -> Option<()> {
        self.skip_whitespace();
        (self.at == self.text.len()).then_some(())
    }

    /// Consumes `word` if it comes next (`true`, `false`, `null`: what follows it is checked by
    /// the next read, so `nullx` fails there).
    fn literal(&mut self, word: &[u8]) -> bool {
        self.skip_whitespace();
        let found = self.text[self.at..].starts_with(word);
        if found {
            self.at += word.len();
        }
        found
    }

    /// A string's bytes, when it has no escape and no control character.
    fn string(&mut self) -> Option<&'a [u8]> {
        self.byte(b'"')?;
        let rest = &self.text[self.at..];
        let len = rest
            .iter()
            .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
        if rest[len] != b'"' {
            return None;
        }
        self.at += len + 1;
        Some(&rest[..len])
    }

    /// A string's bytes up to the next quote, found with `memchr`, unchecked: only for a
    /// base64 payload, whose decoder refuses a backslash or control character (so a string
    /// with an escape still goes to serde), and which may be long (scanning it byte by byte
    /// for escapes cost as much as decoding it).
    fn base64_string(&mut self) -> Option<&'a [u8]> {
        self.byte(b'"')?;
        let rest = &self.text[self.at..];
        let len = memchr::memchr(b'"', rest)?;
        self.at += len + 1;
        Some(&rest[..len])
    }

    fn match_data_send(&mut self) -> Option<MatchDataSend> {
        self.byte(b'{')?;
        let mut message = MatchDataSend::default();
        if self.byte(b'}').is_some() {
            return Some(message);
        }
        // serde refuses a field given twice (under either spelling): left to it.
        let mut seen = [false; 5];
        loop {
            let field = match self.string()? {
                b"match_id" | b"matchId" => 0,
                b"op_code" | b"opCode" => 1,
                b"data" => 2,
                b"presences" => 3,
                b"reliable" => 4,
                _ => return None,
            };
            if std::mem::replace(&mut seen[field], true) {
                return None;
            }
            self.byte(b':')?;
            // `null` is the field's default, as `json::nullable` reads it.
            if !self.literal(b"null") {
                match field {
                    0 => message.match_id = std::str::from_utf8(self.string()?).ok()?.to_owned(),
                    1 => message.op_code = self.integer()?,
                    2 => message.data = base64_bytes::decode(self.base64_string()?)?,
                    3 => {
                        self.byte(b'[')?;
                        self.byte(b']')?;
                    }
                    _ if self.literal(b"true") => message.reliable = true,
                    _ if self.literal(b"false") => message.reliable = false,
                    _ => return None,
                }
            }
            if self.byte(b',').is_none() {
                self.byte(b'}')?;
                return Some(message);
            }
        }
    }

    /// An `int64`: a string of digits (protobuf JSON's form) or a plain integer number, each an
    /// optional `-` and at most 18 digits (so always in range); fractions, exponents, leading
    /// zeros of a number and spaces inside a string are left to serde.
    fn integer(&mut self) -> Option<i64> {
        self.skip_whitespace();
        if self.text.get(self.at) == Some(&b'"') {
            return digits(self.string()?);
        }
        let rest = &self.text[self.at..];
        let len = rest
            .iter()
            .position(|&b| b != b'-' && !b.is_ascii_digit())
            .unwrap_or(rest.len());
        let number = &rest[..len];
        let body = number.strip_prefix(b"-").unwrap_or(number);
        if body.len() > 1 && body[0] == b'0' {
            return None;
        }
        self.at += len;
        digits(number)
    }
}

fn digits(text: &[u8]) -> Option<i64> {
    let body = text.strip_prefix(b"-").unwrap_or(text);
    if body.is_empty() || body.len() > 18 || !body.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(text).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn serde(text: &str) -> Option<Envelope> {
        serde_json::from_slice(text.as_bytes()).ok()
    }

    /// What clients send (nakama-js: `JSON.stringify` of `{match_data_send: {…}}`, op code as a
    /// number or a string) is read here, to the envelope serde reads.
    #[test]
    fn the_plain_forms_are_read_as_serde_reads_them() {
        for text in [
            r#"{"match_data_send":{"match_id":"4c0f6c0e-2d7e-4b8e-9f1a-6b0e2f3a4b5c.node1","op_code":"1","data":"aGVsbG8=","reliable":true}}"#,
            r#"{"match_data_send":{"match_id":"m.n","op_code":2,"data":"aGk","presences":[],"reliable":false}}"#,
            r#"{ "matchDataSend" : { "matchId" : "m" , "opCode" : -7 , "data" : null , "presences" : null } }"#,
            r#"{"match_data_send":{}}"#,
            r#"{"match_data_send":{"op_code":"-123456789012345678","data":"-_-_"}}"#,
            "{\"match_data_send\":{\"match_id\":\"é\",\"op_code\":0,\"reliable\":null}}\n",
        ] {
            let fast = parse(text.as_bytes());
            assert!(fast.is_some(), "read here: {text}");
            assert_eq!(fast, serde(text), "{text}");
        }
    }

    /// Everything else is left to serde (its envelope or its error stays what it was).
    #[test]
    fn other_forms_are_left_to_serde() {
        for text in [
            r#"{"cid":"1","match_data_send":{"op_code":1}}"#,
            r#"{"match_data_send":{"op_code":1},"cid":"1"}"#,
            r#"{"match_data_send":{"match_id":"a\"b"}}"#,
            r#"{"match_data_send":{"match_id":"a","matchId":"b"}}"#,
            r#"{"match_data_send":{"op_code":1.0}}"#,
            r#"{"match_data_send":{"op_code":1e2}}"#,
            r#"{"match_data_send":{"op_code":01}}"#,
            r#"{"match_data_send":{"op_code":"12345678901234567890"}}"#,
            r#"{"match_data_send":{"op_code":" 1"}}"#,
            r#"{"match_data_send":{"presences":[{"user_id":"u"}]}}"#,
            r#"{"match_data_send":{"delivery":{"class":1}}}"#,
            r#"{"match_data_send":{"data":"!!"}}"#,
            r#"{"match_data_send":{"data":"aGVs\"bG8="}}"#,
            r#"{"match_data_send":{"data":"aGVs\\bG8="}}"#,
            r#"{"match_data_send":{"data":"aGVs\u0041bG8="}}"#,
            "{\"match_data_send\":{\"data\":\"aGVs\tbG8=\"}}",
            r#"{"match_data_send":{"data":"aGVsbG8=}}"#,
            r#"{"match_data_send":{"unknown":1}}"#,
            r#"{"match_data_send":null}"#,
            r#"{"match_data_send":{"reliable":nullx}}"#,
            r#"{"match_data_send":{"reliable":1}}"#,
            r#"{"match_data_send":{}} x"#,
            r#"{"match_data":{}}"#,
            "",
        ] {
            assert_eq!(parse(text.as_bytes()), None, "left to serde: {text}");
        }
    }

    fn key(names: &'static [&'static str]) -> impl Strategy<Value = String> {
        prop::sample::select(names).prop_map(|name| format!("\"{name}\""))
    }

    fn spaces() -> impl Strategy<Value = String> {
        prop::sample::select(&["", " ", "\n\t", "\r "][..]).prop_map(str::to_owned)
    }

    /// A member of the message object: a key (either spelling, or another) and a value that
    /// may fit it or not.
    fn member() -> impl Strategy<Value = String> {
        let keys = key(&[
            "match_id",
            "matchId",
            "op_code",
            "opCode",
            "data",
            "presences",
            "reliable",
            "delivery",
            "other",
        ]);
        let values = prop::sample::select(
            &[
                "null",
                "true",
                "false",
                "0",
                "-0",
                "7",
                "-42",
                "01",
                "1.5",
                "2e3",
                "\"7\"",
                "\"-7\"",
                "\"007\"",
                "\" 7\"",
                "\"x\"",
                "\"aGVsbG8=\"",
                "\"aGk\"",
                "\"-_8=\"",
                "\"!\"",
                "\"a\\\"b\"",
                "\"m.node\"",
                "[]",
                "[ ]",
                "[1]",
                "{}",
                "9223372036854775807",
                "\"-9223372036854775808\"",
                "123456789012345678",
            ][..],
        );
        (keys, spaces(), values, spaces())
            .prop_map(|(key, space, value, after)| format!("{key}{space}:{space}{value}{after}"))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Whatever it reads, it reads as serde does: generated messages of every key, value
        /// and spacing, repeated keys included.
        #[test]
        fn whatever_is_read_here_serde_reads_the_same(
            members in prop::collection::vec(member(), 0..6),
            outer in key(&["match_data_send", "matchDataSend", "match_data", "cid"]),
            space in spaces(),
        ) {
            let text = format!("{space}{{{space}{outer}:{{{}}}{space}}}{space}", members.join(","));
            if let Some(fast) = parse(text.as_bytes()) {
                prop_assert_eq!(Some(fast), serde(&text), "{}", text);
            }
        }
    }
}
