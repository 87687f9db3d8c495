//! `POST /v2/rpc/{id}` and `GET /v2/rpc/{id}`: calls a server function (Lua, JS or native)
//! with Nakama's HTTP semantics.
//!
//! - Authorised by a session token (`Authorization: Bearer …`) or by the HTTP key
//!   (`?http_key=…`, or as the basic-auth username) for server-to-server calls without a user.
//! - `POST`: the body is the payload JSON-encoded as a string (`"\"{…}\""`); with `?unwrap` the
//!   body is the payload itself and the answer is the raw result with the request's
//!   content type.
//! - `GET`: the payload is the `payload` query parameter (what nakama-js' `rpcHttpKey` sends).
//! - The answer is `{"payload": result}`; errors use the usual Nakama error body with the code
//!   the function chose.

use std::collections::HashMap;
use std::net::SocketAddr;

use axum::Json;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::{HeaderValue, Method};
use axum::response::{IntoResponse, Response};
use metafi_core::{RequestHeaders, RpcContext, RpcUser};
use metafi_proto::Code;
use uuid::Uuid;

use crate::auth::{basic_username, constant_time_eq};
use crate::body::{PathParams, query_pairs};
use crate::{ApiError, ApiState};

/// `/v2/rpc/{id}`.
pub(super) async fn call(
    State(state): State<ApiState>,
    PathParams(id): PathParams<String>,
    request: Request,
) -> Result<Response, ApiError> {
    run(state, id, request).await
}

/// `/v2/rpc/` without an id.
pub(super) async fn missing_id(
    State(state): State<ApiState>,
    request: Request,
) -> Result<Response, ApiError> {
    run(state, String::new(), request).await
}

async fn run(state: ApiState, id: String, request: Request) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let mut query = query_params(parts.uri.query().unwrap_or_default())?;
    let user = authorise(&state, &parts.headers, &query)?;
    if id.is_empty() {
        return Err(ApiError::new(Code::InvalidArgument, "RPC ID must be set"));
    }
    let unwrap = query.contains_key("unwrap");
    let payload = if parts.method == Method::POST {
        let bytes = crate::body::read_body(body, &state).await?;
        if bytes.is_empty() || unwrap {
            String::from_utf8(bytes.to_vec()).map_err(|_| {
                ApiError::new(Code::InvalidArgument, "The RPC payload must be UTF-8 text.")
            })?
        } else {
            crate::body::json_string(&bytes).ok_or_else(|| {
                ApiError::new(
                    Code::InvalidArgument,
                    "The request body must be the payload encoded as a JSON string, or add ?unwrap to send the payload as is.",
                )
            })?
        }
    } else {
        query
            .get("payload")
            .and_then(|values| values.first())
            .cloned()
            .unwrap_or_default()
    };
    query.remove("http_key");
    let content_type = unwrap.then(|| {
        parts
            .headers
            .get(CONTENT_TYPE)
            .cloned()
            .unwrap_or(HeaderValue::from_static("text/plain"))
    });

    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0);
    let ctx = RpcContext {
        user,
        client_ip: peer.map(|peer| peer.ip()),
        client_port: peer.map(|peer| peer.port()),
        trace_id: Some(metafi_core::new_trace_id()),
        lang: None,
        query,
        // Moved, not converted: Nakama's names are written only if the function reads them.
        headers: RequestHeaders::from(parts.headers),
        rest_rpc: true,
    };
    let id = if id.bytes().any(|b| b.is_ascii_uppercase()) || !id.is_ascii() {
        id.to_lowercase()
    } else {
        id
    };
    let result = state.rpc.call(&id, ctx, payload).await?;
    if let Some(content_type) = content_type {
        let mut response = Response::new(Body::from(result));
        response.headers_mut().insert(CONTENT_TYPE, content_type);
        return Ok(response);
    }
    Ok(Json(Answer { payload: &result }).into_response())
}

/// `{"payload": result}`, serialized straight from the result (no intermediate JSON value).
#[derive(serde::Serialize)]
struct Answer<'a> {
    payload: &'a str,
}

/// The caller: a signed-in user, or `None` for a call made with the HTTP key.
fn authorise(
    state: &ApiState,
    headers: &axum::http::HeaderMap,
    query: &HashMap<String, Vec<String>>,
) -> Result<Option<RpcUser>, ApiError> {
    let invalid_key = || ApiError::new(Code::Unauthenticated, "HTTP key invalid");
    if let Some(key) = query
        .get("http_key")
        .and_then(|values| values.first())
        .filter(|key| !key.is_empty())
    {
        return if constant_time_eq(key.as_bytes(), state.config.http_key.as_bytes()) {
            Ok(None)
        } else {
            Err(invalid_key())
        };
    }
    let Some(header) = headers.get(AUTHORIZATION).and_then(|h| h.to_str().ok()) else {
        return Err(ApiError::new(
            Code::Unauthenticated,
            "Auth token or HTTP key required",
        ));
    };
    if header.starts_with("Basic ") {
        let key = basic_username(header).ok_or_else(invalid_key)?;
        return if constant_time_eq(key.as_bytes(), state.config.http_key.as_bytes()) {
            Ok(None)
        } else {
            Err(invalid_key())
        };
    }
    let token_invalid = || ApiError::new(Code::Unauthenticated, "Auth token invalid");
    let token = header.strip_prefix("Bearer ").ok_or_else(token_invalid)?;
    let claims = state.sessions.verify(token).map_err(|_| token_invalid())?;
    Ok(Some(RpcUser {
        user_id: claims.user_id,
        username: claims.username,
        // HTTP calls have no socket session; scripts see no `session_id`, as with Nakama.
        session_id: Uuid::nil(),
        vars: claims.vars,
        expires_at: claims.expires_at,
    }))
}

fn query_params(query: &str) -> Result<HashMap<String, Vec<String>>, ApiError> {
    if query.is_empty() {
        // The common case (session-token calls): no URI to build and parse.
        return Ok(HashMap::new());
    }
    // Strict decoding: a parameter that is not UTF-8 is refused, not read with U+FFFD.
    let pairs = query_pairs(query)?;
    let mut params: HashMap<String, Vec<String>> = HashMap::new();
    for (key, value) in pairs {
        params.entry(key).or_default().push(value);
    }
    Ok(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_query_parameters_are_kept() {
        let params = query_params("a=1&a=2&b=x%20y&unwrap").unwrap();
        assert_eq!(params["a"], vec!["1", "2"]);
        assert_eq!(params["b"], vec!["x y"]);
        assert!(params.contains_key("unwrap"));
    }

    #[test]
    fn a_query_that_is_not_utf8_is_refused() {
        let error = query_params("payload=%FF").unwrap_err();
        assert_eq!(error.code(), Code::InvalidArgument);
    }

    #[test]
    fn an_empty_query_has_no_parameters() {
        assert!(query_params("").unwrap().is_empty());
        assert_eq!(query_params("unwrap").unwrap().len(), 1);
    }
}
