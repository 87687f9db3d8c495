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

/// Query parameters, deserialized leniently (unknown parameters ignored).
#[derive(Debug)]
pub(crate) struct QueryParams<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        serde_urlencoded_from_str(query).map(QueryParams)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_bool_accepts_go_forms() {
        assert_eq!(parse_bool("create", Some("true")).unwrap(), Some(true));
        assert_eq!(parse_bool("create", Some("F")).unwrap(), Some(false));
        assert_eq!(parse_bool("create", None).unwrap(), None);
        assert!(parse_bool("create", Some("yes")).is_err());
    }
}
