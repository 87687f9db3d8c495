//! Encodings and random bytes: `base64_*`, `base64url_*`, `base16_*`, JavaScript's
//! `binaryToString`/`stringToBinary`, Lua's `uuid_bytes_to_string`/`uuid_string_to_bytes`,
//! `secure_random_bytes`.
//!
//! Nakama's two APIs differ here and each is kept: Lua refuses empty input and returns decoded
//! data as a (binary) string with `not a valid base64 string: …` errors; JavaScript accepts an
//! `ArrayBuffer` to encode, returns decoded data as an `ArrayBuffer` and fails with
//! `Failed to decode string: <input>`.

use base64::Engine;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use ring::rand::{SecureRandom, SystemRandom};
use uuid::Uuid;

use super::{Arg, NkArgs, NkCall, NkError, NkFunction, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("base64_encode"),
        js: Some("base64Encode"),
        call: NkCall::Sync(base64_encode),
    },
    NkFunction {
        lua: Some("base64_decode"),
        js: Some("base64Decode"),
        call: NkCall::Sync(base64_decode),
    },
    NkFunction {
        lua: Some("base64url_encode"),
        js: Some("base64UrlEncode"),
        call: NkCall::Sync(base64url_encode),
    },
    NkFunction {
        lua: Some("base64url_decode"),
        js: Some("base64UrlDecode"),
        call: NkCall::Sync(base64url_decode),
    },
    NkFunction {
        lua: Some("base16_encode"),
        js: Some("base16Encode"),
        call: NkCall::Sync(base16_encode),
    },
    NkFunction {
        lua: Some("base16_decode"),
        js: Some("base16Decode"),
        call: NkCall::Sync(base16_decode),
    },
    NkFunction {
        lua: None,
        js: Some("binaryToString"),
        call: NkCall::Sync(binary_to_string),
    },
    NkFunction {
        lua: None,
        js: Some("stringToBinary"),
        call: NkCall::Sync(string_to_binary),
    },
    NkFunction {
        lua: Some("uuid_bytes_to_string"),
        js: None,
        call: NkCall::Sync(uuid_bytes_to_string),
    },
    NkFunction {
        lua: Some("uuid_string_to_bytes"),
        js: None,
        call: NkCall::Sync(uuid_string_to_bytes),
    },
    NkFunction {
        lua: Some("secure_random_bytes"),
        js: Some("secureRandomBytes"),
        call: NkCall::Sync(secure_random_bytes),
    },
];

/// Most bytes one `secure_random_bytes` call returns (Nakama's bound).
const MAX_RANDOM_BYTES: i64 = 1000;

/// Decoding as Go's `encoding/base64` does: padding required, trailing bits tolerated.
const DECODE: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_decode_padding_mode(DecodePaddingMode::RequireCanonical)
    .with_decode_allow_trailing_bits(true);
const STD_DECODE: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, DECODE);
const URL_DECODE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, DECODE);

#[derive(Clone, Copy)]
enum Alphabet {
    Standard,
    Url,
}

fn base64_encode(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    encode64(&args, Alphabet::Standard)
}

fn base64url_encode(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    encode64(&args, Alphabet::Url)
}

/// `(input, padding = true)`.
fn encode64(args: &NkArgs, alphabet: Alphabet) -> Result<NkValue, NkError> {
    let input = input_bytes(args)?;
    let padding = args.at(2).opt_bool("expects boolean")?.unwrap_or(true);
    let engine = match (alphabet, padding) {
        (Alphabet::Standard, true) => &base64::engine::general_purpose::STANDARD,
        (Alphabet::Standard, false) => &base64::engine::general_purpose::STANDARD_NO_PAD,
        (Alphabet::Url, true) => &base64::engine::general_purpose::URL_SAFE,
        (Alphabet::Url, false) => &base64::engine::general_purpose::URL_SAFE_NO_PAD,
    };
    Ok(engine.encode(input).into())
}

/// `(input, padding = true)`: with `padding` the input is padded with `=` to a multiple of four
/// first, so padding is optional (Nakama's reading of the flag).
fn base64_decode(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let input = decode_input(&args)?;
    let padding = args.at(2).opt_bool("expects boolean")?.unwrap_or(true);
    decode64(&args, input, padding, Alphabet::Standard)
}

/// `(input, padding)`: Lua pads missing `=` unless `padding` is true (default false);
/// JavaScript's default is true, so its input must carry its padding unless told otherwise.
fn base64url_decode(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let input = decode_input(&args)?;
    let padded = args
        .at(2)
        .opt_bool("expects boolean")?
        .unwrap_or(args.is_js());
    decode64(&args, input, !padded, Alphabet::Url)
}

fn decode64(
    args: &NkArgs,
    input: &str,
    add_padding: bool,
    alphabet: Alphabet,
) -> Result<NkValue, NkError> {
    // Go skips line breaks in base64 input.
    let mut text: String = input.chars().filter(|c| *c != '\r' && *c != '\n').collect();
    if add_padding && !text.len().is_multiple_of(4) {
        let missing = 4 - text.len() % 4;
        text.extend(std::iter::repeat_n('=', missing));
    }
    let engine = match alphabet {
        Alphabet::Standard => &STD_DECODE,
        Alphabet::Url => &URL_DECODE,
    };
    match engine.decode(text.as_bytes()) {
        Ok(bytes) => Ok(NkValue::Bytes(bytes)),
        Err(_) if args.is_js() => Err(NkError::failed(format!("Failed to decode string: {input}"))),
        Err(error) => {
            let what = match alphabet {
                Alphabet::Standard => "base64",
                Alphabet::Url => "base64 url",
            };
            Err(NkError::failed(format!(
                "not a valid {what} string: {}",
                base64_error(&error, text.len())
            )))
        }
    }
}

/// Go's wording: `illegal base64 data at input byte N`.
fn base64_error(error: &base64::DecodeError, len: usize) -> String {
    let at = match error {
        base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _) => {
            *at
        }
        base64::DecodeError::InvalidLength(_) | base64::DecodeError::InvalidPadding => {
            len.saturating_sub(len % 4).min(len.saturating_sub(1))
        }
    };
    format!("illegal base64 data at input byte {at}")
}

fn base16_encode(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let input = input_bytes(&args)?;
    Ok(hex_encode(input).into())
}

fn base16_decode(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let input = decode_input(&args)?;
    match hex_decode(input.as_bytes()) {
        Ok(bytes) => Ok(NkValue::Bytes(bytes)),
        Err(_) if args.is_js() => Err(NkError::failed(format!("Failed to decode string: {input}"))),
        Err(reason) => Err(NkError::failed(format!(
            "not a valid base16 string: {reason}"
        ))),
    }
}

fn binary_to_string(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let arg = args.at(1);
    let NkValue::Bytes(bytes) = arg.value else {
        return Err(arg.error("expects a ArrayBuffer object"));
    };
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(text.into()),
        Err(_) => Err(arg.error("expects data to be UTF-8 encoded")),
    }
}

fn string_to_binary(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let text = args.at(1).string("expects a string")?;
    Ok(NkValue::Bytes(text.as_bytes().to_vec()))
}

fn uuid_bytes_to_string(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let arg = args.at(1);
    let bytes = non_empty_bytes(&arg, "expects a UUID byte string")?;
    let uuid = Uuid::from_slice(bytes).map_err(|_| arg.error("not a valid UUID byte string"))?;
    Ok(uuid.to_string().into())
}

fn uuid_string_to_bytes(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let arg = args.at(1);
    let text = arg.non_empty("expects a UUID string")?;
    let uuid = Uuid::parse_str(text).map_err(|_| arg.error("not a valid UUID string"))?;
    Ok(NkValue::Bytes(uuid.as_bytes().to_vec()))
}

/// `(count)`: 1 to 1000 bytes from the operating system's generator.
fn secure_random_bytes(_: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let arg = args.at(1);
    let count = arg.integer("expects number")?;
    if !(1..=MAX_RANDOM_BYTES).contains(&count) {
        return Err(arg.error("count must be 1-1000"));
    }
    // In range 1..=1000 by the check above.
    let mut bytes = vec![0u8; count as usize];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| NkError::failed("failed to read random bytes: no system randomness"))?;
    Ok(NkValue::Bytes(bytes))
}

/// The data to encode: Lua a non-empty string; JavaScript a string or an `ArrayBuffer`.
fn input_bytes(args: &NkArgs) -> Result<&[u8], NkError> {
    let arg = args.at(1);
    if args.is_js() {
        return arg.bytes("expects a string or ArrayBuffer object");
    }
    non_empty_bytes(&arg, "expects string")
}

/// The text to decode: a string (Lua: non-empty).
fn decode_input(args: &NkArgs) -> Result<&str, NkError> {
    let arg = args.at(1);
    if args.is_js() {
        return arg.string("expects string");
    }
    match arg.value {
        NkValue::Str(s) if !s.is_empty() => Ok(s),
        // Binary input cannot be base64 or hex; report it as Go reports the first bad byte.
        NkValue::Bytes(b) if !b.is_empty() => Err(NkError::failed(
            "not a valid encoded string: input is not text",
        )),
        _ => Err(arg.error("expects string")),
    }
}

pub(super) fn non_empty_bytes<'a>(
    arg: &Arg<'a>,
    message: &'static str,
) -> Result<&'a [u8], NkError> {
    match arg.value.as_bytes() {
        Some(bytes) if !bytes.is_empty() => Ok(bytes),
        _ => Err(arg.error(message)),
    }
}

/// Lowercase hex, as Go's `hex.EncodeToString` and `%x`.
pub(super) fn hex_encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

/// Hex of either case; errors in Go's wording (`encoding/hex: invalid byte: U+0067 'g'`,
/// `encoding/hex: odd length hex string`), checked in Go's order.
fn hex_decode(text: &[u8]) -> Result<Vec<u8>, String> {
    fn nibble(c: u8) -> Result<u8, String> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => {
                let shown = if c.is_ascii_graphic() || c == b' ' {
                    format!("U+{:04X} '{}'", c, char::from(c))
                } else {
                    format!("U+{c:04X}")
                };
                Err(format!("encoding/hex: invalid byte: {shown}"))
            }
        }
    }
    let mut out = Vec::with_capacity(text.len() / 2);
    let mut pairs = text.chunks_exact(2);
    for pair in pairs.by_ref() {
        out.push((nibble(pair[0])? << 4) | nibble(pair[1])?);
    }
    if let [last] = pairs.remainder() {
        nibble(*last)?;
        return Err("encoding/hex: odd length hex string".to_owned());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nk_api::test_support::{call, js, lua};

    #[tokio::test]
    async fn base64_matches_go_with_and_without_padding() {
        assert_eq!(
            lua("base64_encode", vec!["hello".into()]).await,
            Ok("aGVsbG8=".into())
        );
        assert_eq!(
            lua("base64_encode", vec!["hello".into(), false.into()]).await,
            Ok("aGVsbG8".into())
        );
        assert_eq!(
            js("base64Encode", vec![NkValue::Bytes(vec![0xff, 0xfe])]).await,
            Ok("//4=".into())
        );
        // Lua pads missing `=` by default; JavaScript too.
        assert_eq!(
            lua("base64_decode", vec!["aGVsbG8".into()]).await,
            Ok(NkValue::Bytes(b"hello".to_vec()))
        );
        assert_eq!(
            js("base64Decode", vec!["aGVsbG8=".into()]).await,
            Ok(NkValue::Bytes(b"hello".to_vec()))
        );
    }

    #[tokio::test]
    async fn base64_errors_are_nakamas() {
        assert_eq!(
            lua("base64_encode", vec!["".into()]).await,
            Err(NkError::Arg {
                position: 1,
                message: "expects string".into()
            })
        );
        assert_eq!(
            lua("base64_decode", vec!["a*bc".into()]).await,
            Err(NkError::failed(
                "not a valid base64 string: illegal base64 data at input byte 1"
            ))
        );
        assert_eq!(
            js("base64Decode", vec!["a*bc".into()]).await,
            Err(NkError::failed("Failed to decode string: a*bc"))
        );
        assert_eq!(
            js("base64Encode", vec![NkValue::Int(1)]).await,
            Err(NkError::Arg {
                position: 1,
                message: "expects a string or ArrayBuffer object".into()
            })
        );
    }

    #[tokio::test]
    async fn base64url_defaults_differ_between_lua_and_js_as_in_nakama() {
        // "??>" encodes to "Pz8-" in the URL alphabet; "Pz8+" in the standard one.
        assert_eq!(
            lua("base64url_encode", vec!["??>".into()]).await,
            Ok("Pz8-".into())
        );
        assert_eq!(
            lua("base64url_encode", vec!["hi".into(), false.into()]).await,
            Ok("aGk".into())
        );
        // Lua adds missing padding by default.
        assert_eq!(
            lua("base64url_decode", vec!["aGk".into()]).await,
            Ok(NkValue::Bytes(b"hi".to_vec()))
        );
        // JavaScript requires it unless `padding` is false.
        assert_eq!(
            js("base64UrlDecode", vec!["aGk".into()]).await,
            Err(NkError::failed("Failed to decode string: aGk"))
        );
        assert_eq!(
            js("base64UrlDecode", vec!["aGk".into(), false.into()]).await,
            Ok(NkValue::Bytes(b"hi".to_vec()))
        );
    }

    #[tokio::test]
    async fn base16_round_trips_and_reports_go_errors() {
        assert_eq!(
            lua("base16_encode", vec![NkValue::Bytes(vec![0, 0xab, 0x10])]).await,
            Ok("00ab10".into())
        );
        assert_eq!(
            lua("base16_decode", vec!["00AB10".into()]).await,
            Ok(NkValue::Bytes(vec![0, 0xab, 0x10]))
        );
        assert_eq!(
            lua("base16_decode", vec!["0g".into()]).await,
            Err(NkError::failed(
                "not a valid base16 string: encoding/hex: invalid byte: U+0067 'g'"
            ))
        );
        assert_eq!(
            lua("base16_decode", vec!["abc".into()]).await,
            Err(NkError::failed(
                "not a valid base16 string: encoding/hex: odd length hex string"
            ))
        );
        assert_eq!(
            js("base16Decode", vec!["abc".into()]).await,
            Err(NkError::failed("Failed to decode string: abc"))
        );
    }

    #[tokio::test]
    async fn binary_and_string_convert_in_javascript() {
        assert_eq!(
            js("stringToBinary", vec!["hé".into()]).await,
            Ok(NkValue::Bytes("hé".as_bytes().to_vec()))
        );
        assert_eq!(
            js("binaryToString", vec![NkValue::Bytes(b"ok".to_vec())]).await,
            Ok("ok".into())
        );
        assert_eq!(
            js("binaryToString", vec![NkValue::Bytes(vec![0xff])]).await,
            Err(NkError::Arg {
                position: 1,
                message: "expects data to be UTF-8 encoded".into()
            })
        );
        assert_eq!(
            js("binaryToString", vec!["text".into()]).await,
            Err(NkError::Arg {
                position: 1,
                message: "expects a ArrayBuffer object".into()
            })
        );
    }

    #[tokio::test]
    async fn uuids_convert_between_text_and_bytes() {
        let text = "6ba7b810-9dad-11d1-80b4-00c04fd430c8";
        let bytes = lua("uuid_string_to_bytes", vec![text.into()])
            .await
            .unwrap();
        assert_eq!(
            bytes,
            NkValue::Bytes(Uuid::parse_str(text).unwrap().as_bytes().to_vec())
        );
        assert_eq!(
            lua("uuid_bytes_to_string", vec![bytes]).await,
            Ok(text.into())
        );
        assert_eq!(
            lua("uuid_bytes_to_string", vec![NkValue::Bytes(vec![1, 2, 3])]).await,
            Err(NkError::Arg {
                position: 1,
                message: "not a valid UUID byte string".into()
            })
        );
        assert_eq!(
            lua("uuid_string_to_bytes", vec!["nope".into()]).await,
            Err(NkError::Arg {
                position: 1,
                message: "not a valid UUID string".into()
            })
        );
    }

    #[tokio::test]
    async fn secure_random_bytes_are_bounded_and_random() {
        let Ok(NkValue::Bytes(a)) = lua("secure_random_bytes", vec![32i64.into()]).await else {
            panic!("expected bytes");
        };
        let Ok(NkValue::Bytes(b)) = js("secureRandomBytes", vec![32i64.into()]).await else {
            panic!("expected bytes");
        };
        assert_eq!((a.len(), b.len()), (32, 32));
        assert_ne!(a, b, "two draws of 256 bits are equal");
        for count in [0i64, 1001] {
            assert_eq!(
                call("secure_random_bytes", vec![count.into()]).await,
                Err(NkError::Arg {
                    position: 1,
                    message: "count must be 1-1000".into()
                })
            );
        }
    }
}
