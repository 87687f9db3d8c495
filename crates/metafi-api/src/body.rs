//! Request parsing: JSON bodies and query strings, with Nakama's rules and our error shape.

use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use bytes::Bytes;
use http_body_util::LengthLimitError;
use metafi_proto::Code;
use serde::de::DeserializeOwned;

use crate::request_limits::{BodyDeadlineElapsed, caused_by};
use crate::{ApiError, ApiState};

/// Reads a whole request body under the size limit and the body deadline, with the error the
/// client should see: 413 over the limit, 408 past the deadline, 400 when the body broke off.
pub(crate) async fn read_body(body: Body, state: &ApiState) -> Result<Bytes, ApiError> {
    let limit = state.config.max_request_size_bytes;
    axum::body::to_bytes(body, limit).await.map_err(|e| {
        if caused_by::<LengthLimitError>(&e) {
            ApiError::body_too_large(limit)
        } else if caused_by::<BodyDeadlineElapsed>(&e) {
            ApiError::body_timeout(state.config.http.body_read_timeout)
        } else {
            ApiError::new(Code::InvalidArgument, "Could not read the request body.")
        }
    })
}

/// A JSON request body. An empty body reads as `{}` (as with Nakama's gateway); unknown fields
/// are ignored; a body over the configured size is refused with 413.
#[derive(Debug)]
pub(crate) struct JsonBody<T>(pub T);

impl<T: DeserializeOwned> FromRequest<ApiState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &ApiState) -> Result<Self, ApiError> {
        let bytes = read_body(req.into_body(), state).await?;
        let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &bytes
        };
        serde_json::from_slice(text).map(JsonBody).map_err(|e| {
            ApiError::new(
                Code::InvalidArgument,
                format!("Request body is not valid JSON for this call: {e}."),
            )
        })
    }
}

/// Query parameters, deserialized leniently (unknown parameters ignored). A parameter whose
/// percent-decoded bytes are not UTF-8 is refused, never read with replacement characters.
#[derive(Debug)]
pub(crate) struct QueryParams<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        query_pairs(query)?;
        serde_urlencoded_from_str(query).map(QueryParams)
    }
}

/// Path parameters. A segment that is not UTF-8 once percent-decoded (or otherwise does not fit)
/// is refused in Nakama's error shape with InvalidArgument, not axum's plain-text rejection.
#[derive(Debug)]
pub(crate) struct PathParams<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for PathParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(value)) => Ok(PathParams(value)),
            Err(rejection) => Err(ApiError::new(
                Code::InvalidArgument,
                format!("Invalid path: {}.", rejection.body_text()),
            )),
        }
    }
}

/// Every `name=value` pair of a query string in order, percent-decoded (`+` is a space), so
/// repeated names (`?ids=a&ids=b`) are all kept. Bytes that do not decode to UTF-8 are refused
/// with InvalidArgument naming the parameter.
pub(crate) fn query_pairs(query: &str) -> Result<Vec<(String, String)>, ApiError> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let name = String::from_utf8(percent_decode(name)).map_err(|_| {
                ApiError::new(
                    Code::InvalidArgument,
                    "Query parameter names must be valid UTF-8.",
                )
            })?;
            let value = String::from_utf8(percent_decode(value)).map_err(|_| {
                ApiError::new(
                    Code::InvalidArgument,
                    format!("Query parameter '{name}' must be valid UTF-8 once percent-decoded."),
                )
            })?;
            Ok((name, value))
        })
        .collect()
}

/// The [`query_pairs`] of a request's URI (none without a query string).
pub(crate) fn query_of(uri: &axum::http::Uri) -> Result<Vec<(String, String)>, ApiError> {
    query_pairs(uri.query().unwrap_or_default())
}

/// An integer query parameter: absent or empty is unset; anything that does not parse is
/// refused with the call's own error, `invalid()`.
pub(crate) fn int_param<N: std::str::FromStr>(
    value: Option<&str>,
    invalid: impl FnOnce() -> ApiError,
) -> Result<Option<N>, ApiError> {
    match value {
        None | Some("") => Ok(None),
        Some(text) => text.parse().map(Some).map_err(|_| invalid()),
    }
}

/// An integer query parameter of a call whose gateway names the parameter and the text when
/// it does not parse.
pub(crate) fn integer_param<N: std::str::FromStr>(
    name: &str,
    value: Option<&str>,
) -> Result<Option<N>, ApiError> {
    int_param(value, || {
        ApiError::new(
            Code::InvalidArgument,
            format!(
                "Query parameter '{name}' must be an integer, got '{}'.",
                value.unwrap_or_default()
            ),
        )
    })
}

/// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a byte; a `%` not
/// followed by two hex digits stays as it is (as browsers and Go's decoder leave it).
fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let digit = |at: usize| bytes.get(at).copied().and_then(hex);
                match (digit(i + 1), digit(i + 2)) {
                    (Some(high), Some(low)) => {
                        out.push(high << 4 | low);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        i += 1;
    }
    out
}

fn hex(byte: u8) -> Option<u8> {
    char::from(byte)
        .to_digit(16)
        .and_then(|d| u8::try_from(d).ok())
}

fn serde_urlencoded_from_str<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    axum::extract::Query::<T>::try_from_uri(
        &format!("/?{query}")
            .parse()
            .map_err(|_| ApiError::new(Code::InvalidArgument, "Malformed query string."))?,
    )
    .map(|q| q.0)
    .map_err(|e| {
        ApiError::new(
            Code::InvalidArgument,
            format!("Invalid query parameters: {e}."),
        )
    })
}

/// Parses a boolean query parameter the way Go's `strconv.ParseBool` does (Nakama's gateway
/// uses it): `1 t T TRUE true True` and `0 f F FALSE false False`.
pub(crate) fn parse_bool(name: &str, value: Option<&str>) -> Result<Option<bool>, ApiError> {
    match value {
        None | Some("") => Ok(None),
        Some("1" | "t" | "T" | "TRUE" | "true" | "True") => Ok(Some(true)),
        Some("0" | "f" | "F" | "FALSE" | "false" | "False") => Ok(Some(false)),
        Some(other) => Err(ApiError::new(
            Code::InvalidArgument,
            format!("Query parameter '{name}' must be true or false, got '{other}'."),
        )),
    }
}

/// The text of a body that is one JSON string (`"…"`, as Nakama's clients send an RPC payload),
/// or `None` when it is not one. The usual string, with only the short escapes (`\"`, `\\`,
/// `\n`, …), is unescaped here in one pass into one allocation; anything else (`\u` escapes,
/// or a body that is not a well-formed string) goes through `serde_json`, so what is accepted
/// and what is refused stays exactly `serde_json`'s (a REST RPC's decode was ≈ 4 % of its
/// instructions with `serde_json` alone: docs/HTTP.md, "The REST hot path").
pub(crate) fn json_string(body: &[u8]) -> Option<String> {
    short_escapes_only(body).or_else(|| serde_json::from_slice::<String>(body).ok())
}

/// [`json_string`]'s fast path: `None` for anything it does not handle, never for a wrong reason
/// to accept.
fn short_escapes_only(body: &[u8]) -> Option<String> {
    let json_space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let start = body.iter().position(|b| !json_space(b))?;
    let end = body.iter().rposition(|b| !json_space(b))?;
    let inner = body
        .get(start..=end)?
        .strip_prefix(b"\"")?
        .strip_suffix(b"\"")?;
    let mut text = Vec::with_capacity(inner.len());
    let mut rest = inner;
    loop {
        // Control characters and a bare quote are errors for serde_json to report.
        let Some(at) = rest
            .iter()
            .position(|&b| b == b'\\' || b == b'"' || b < 0x20)
        else {
            text.extend_from_slice(rest);
            break;
        };
        text.extend_from_slice(&rest[..at]);
        let unescaped = match (rest[at], rest.get(at + 1)?) {
            (b'\\', b'"') => b'"',
            (b'\\', b'\\') => b'\\',
            (b'\\', b'/') => b'/',
            (b'\\', b'b') => 0x08,
            (b'\\', b'f') => 0x0c,
            (b'\\', b'n') => b'\n',
            (b'\\', b'r') => b'\r',
            (b'\\', b't') => b'\t',
            _ => return None,
        };
        text.push(unescaped);
        rest = &rest[at + 2..];
    }
    // The escapes wrote ASCII only, between whole characters, so the text is UTF-8 exactly
    // when the body's characters are.
    String::from_utf8(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_pairs_decode_and_keep_repeats() {
        let pairs = query_pairs("ids=a&ids=b&username=caf%C3%A9+x&flag&bad=%zz").unwrap();
        let pairs: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("ids", "a"),
                ("ids", "b"),
                ("username", "café x"),
                ("flag", ""),
                ("bad", "%zz")
            ]
        );
    }

    /// `?username=%FF` read as U+FFFD before: a name the client never sent.
    #[test]
    fn query_with_invalid_utf8_is_refused() {
        for query in [
            "username=%FF",
            "username=a%C3",
            "%FE=1",
            "create=true&username=%C0%AF",
        ] {
            let error = query_pairs(query).unwrap_err();
            assert_eq!(error.code(), Code::InvalidArgument, "{query}");
        }
    }

    #[test]
    fn int_params_are_unset_when_empty_and_refused_when_not_numbers() {
        let invalid = || ApiError::new(Code::InvalidArgument, "bad");
        assert_eq!(int_param::<i32>(None, invalid).unwrap(), None);
        assert_eq!(int_param::<i32>(Some(""), invalid).unwrap(), None);
        assert_eq!(int_param::<i64>(Some("-7"), invalid).unwrap(), Some(-7));
        assert_eq!(
            int_param::<i32>(Some("x"), invalid).unwrap_err().code(),
            Code::InvalidArgument
        );
        let error = integer_param::<i32>("limit", Some("ten")).unwrap_err();
        let text = format!("{error:?}");
        assert!(
            text.contains("'limit' must be an integer, got 'ten'"),
            "{text}"
        );
    }

    #[test]
    fn parse_bool_accepts_go_forms() {
        assert_eq!(parse_bool("create", Some("true")).unwrap(), Some(true));
        assert_eq!(parse_bool("create", Some("F")).unwrap(), Some(false));
        assert_eq!(parse_bool("create", None).unwrap(), None);
        assert!(parse_bool("create", Some("yes")).is_err());
    }
    /// Every body gives what `serde_json` gives: the same text, or a refusal for the same
    /// bodies. The short escapes are unescaped without `serde_json`; the rest falls back to it.
    #[test]
    fn json_string_reads_what_serde_json_reads() {
        let bodies: &[&[u8]] = &[
            br#""{\"message\":\"hello\"}""#,
            br#""plain text, no escapes""#,
            br#"  "spaces around"  "#,
            b"\t\r\n\"x\"\n",
            br#""every short escape: \" \\ \/ \b \f \n \r \t""#,
            br#""a \u00e9 and a pair \ud83d\ude00""#,
            "\"caf\u{e9} \u{1f600}\"".as_bytes(),
            br#""""#,
            // Refused, by serde_json's rules:
            b"",
            br#"""#,
            br#""unterminated"#,
            br#""bare " quote""#,
            br#""ends in a backslash \""#,
            br#""unknown escape \x""#,
            br#""a\"b"c""#,
            b"\"tab\tinside\"",
            b"\"line\nbreak\"",
            b"\"\xff not UTF-8\"",
            b"\"cut \xc3\"",
            br#"{"payload":"not a string"}"#,
            br#""two" "strings""#,
            b"42",
        ];
        for body in bodies {
            assert_eq!(
                json_string(body),
                serde_json::from_slice::<String>(body).ok(),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    /// The payloads Nakama's clients send (a JSON object encoded as a string) take the fast
    /// path, with escapes or without.
    #[test]
    fn a_payload_with_escapes_and_one_without_are_read_without_serde_json() {
        assert_eq!(
            short_escapes_only(br#""{\"id\":7,\"name\":\"a\\b\"}""#).as_deref(),
            Some(r#"{"id":7,"name":"a\b"}"#)
        );
        assert_eq!(
            short_escapes_only(br#""no escapes""#).as_deref(),
            Some("no escapes")
        );
        assert_eq!(short_escapes_only(br#""\u00e9""#), None);
    }
}
