//! Header names as Nakama's Go code sees them: Go's `net/http` keeps header names in their
//! canonical form (`textproto.CanonicalMIMEHeaderKey`), so server code reads
//! `ctx.headers["Content-Type"]` and `http_request`'s answer headers the same way. One rule for
//! every place MetaFi hands header names to scripts: [`canonical_header_key`] for a name,
//! [`RequestHeaders`] for a REST call's `ctx.headers`.

use http::header::{HOST, HeaderMap, HeaderName, HeaderValue};
use serde::ser::{Serialize, SerializeMap, Serializer};

/// The headers of a REST call, as an RPC's `ctx.headers` shows them. They are kept as the
/// HTTP library parsed them (the request's own map, moved, not copied) and given Nakama's form
/// only when read: most calls never read them (a native function that does not ask, a socket
/// call), and building the Go-named map for every call was about a tenth of a native REST
/// RPC's instructions (docs/HTTP.md, "The REST hot path").
///
/// Nakama's view (`server/api_rpc.go`): names as Go writes them (`Content-Type`), every value
/// of a repeated header in order, without `Host` (Go moves it to the request's own field) and
/// `Grpc-Timeout` (Nakama drops it). A value that is not visible ASCII is left out, and a name
/// none of whose values is left is not shown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestHeaders(HeaderMap);

impl RequestHeaders {
    /// Headers from `(name, value)` pairs, for callers that do not start from a parsed
    /// request (tests, tools); a name may be written in any case.
    pub fn from_pairs<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<RequestHeaders, http::Error> {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_bytes(name.as_bytes())?,
                HeaderValue::from_str(value)?,
            );
        }
        Ok(RequestHeaders(map))
    }

    /// True when scripts would see no header (always so over the socket).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many names scripts see.
    pub fn len(&self) -> usize {
        self.0
            .keys()
            .filter(|name| shown(name) && self.0.get_all(*name).iter().any(visible))
            .count()
    }

    /// The values of header `name` (any case: `x-game-build` or `X-Game-Build`) that scripts
    /// see, in the request's order; empty when the request has none or Nakama hides it.
    pub fn get(&self, name: &str) -> Vec<&str> {
        match HeaderName::from_bytes(name.as_bytes()) {
            Ok(name) if shown(&name) => values(&self.0, &name),
            _ => Vec::new(),
        }
    }

    /// Nakama's view, name by name: the Go-written name and its values. Each name is
    /// written (allocated) here, when read.
    pub fn iter(&self) -> impl Iterator<Item = (String, Vec<&str>)> + '_ {
        self.0.keys().filter(|name| shown(name)).filter_map(|name| {
            let values = values(&self.0, name);
            (!values.is_empty()).then(|| (canonical_header_key(name.as_str()), values))
        })
    }
}

impl From<HeaderMap> for RequestHeaders {
    fn from(map: HeaderMap) -> RequestHeaders {
        RequestHeaders(map)
    }
}

/// Nakama's view as a JSON object of string lists (`{"Content-Type": ["application/json"]}`).
impl Serialize for RequestHeaders {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (name, values) in self.iter() {
            map.serialize_entry(&name, &values)?;
        }
        map.end()
    }
}

/// `content-type` → `Content-Type`, `x-api-KEY` → `X-Api-Key`: the first letter and each
/// letter after a `-` upper case, every other letter lower case. (Go leaves a name with a byte
/// that is not a token character as it is; header names that reach here were already
/// validated as tokens by the HTTP library.)
pub fn canonical_header_key(name: &str) -> String {
    let mut upper = true;
    name.chars()
        .map(|c| {
            let out = if upper {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            };
            upper = c == '-';
            out
        })
        .collect()
}

fn shown(name: &HeaderName) -> bool {
    *name != HOST && name.as_str() != "grpc-timeout"
}

fn visible(value: &HeaderValue) -> bool {
    value.to_str().is_ok()
}

fn values<'a>(map: &'a HeaderMap, name: &HeaderName) -> Vec<&'a str> {
    map.get_all(name)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn names_are_written_as_go_writes_them() {
        for (name, go) in [
            ("content-type", "Content-Type"),
            ("authorization", "Authorization"),
            ("x-api-KEY", "X-Api-Key"),
            ("grpc-timeout", "Grpc-Timeout"),
            ("a--b", "A--B"),
            ("x1-2y", "X1-2y"),
        ] {
            assert_eq!(canonical_header_key(name), go);
        }
    }

    fn request() -> RequestHeaders {
        let mut map = HeaderMap::new();
        map.insert("host", "127.0.0.1:7350".parse().unwrap());
        map.insert("grpc-timeout", "5S".parse().unwrap());
        map.insert("content-type", "application/json".parse().unwrap());
        map.append("x-game-build", "41".parse().unwrap());
        map.append("x-game-build", "42".parse().unwrap());
        map.append("x-game-build", HeaderValue::from_bytes(b"caf\xe9").unwrap());
        map.insert("x-latin", HeaderValue::from_bytes(b"\xe9t\xe9").unwrap());
        RequestHeaders::from(map)
    }

    #[test]
    fn headers_reach_scripts_as_nakama_gives_them() {
        let headers = request();
        let view: HashMap<String, Vec<&str>> = headers.iter().collect();
        assert_eq!(
            view,
            HashMap::from([
                ("Content-Type".to_owned(), vec!["application/json"]),
                ("X-Game-Build".to_owned(), vec!["41", "42"]),
            ])
        );
        assert_eq!(headers.len(), 2);
        assert!(!headers.is_empty());
        assert!(RequestHeaders::default().is_empty());
        assert_eq!(
            serde_json::to_value(&headers).unwrap(),
            serde_json::json!({"Content-Type": ["application/json"], "X-Game-Build": ["41", "42"]})
        );
    }

    #[test]
    fn a_header_is_read_by_any_spelling_of_its_name() {
        let headers = request();
        assert_eq!(headers.get("X-Game-Build"), ["41", "42"]);
        assert_eq!(headers.get("x-GAME-build"), ["41", "42"]);
        assert!(headers.get("Host").is_empty(), "Nakama hides Host");
        assert!(
            headers.get("Grpc-Timeout").is_empty(),
            "Nakama hides Grpc-Timeout"
        );
        assert!(headers.get("X-Latin").is_empty(), "no visible value");
        assert!(headers.get("not a name").is_empty());
    }

    #[test]
    fn pairs_make_the_same_headers_as_a_parsed_request() {
        let headers =
            RequestHeaders::from_pairs([("X-Test", "yes"), ("x-test", "no"), ("Host", "h")])
                .unwrap();
        let view: Vec<(String, Vec<&str>)> = headers.iter().collect();
        assert_eq!(view, [("X-Test".to_owned(), vec!["yes", "no"])]);
        assert!(RequestHeaders::from_pairs([("bad name", "x")]).is_err());
        assert!(RequestHeaders::from_pairs([("x-a", "line\nbreak")]).is_err());
    }
}
