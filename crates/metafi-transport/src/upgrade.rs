//! `GET /ws`: checks the request (format, session token) before upgrading, so a refused client
//! gets an HTTP error in Nakama's shape instead of a socket that closes at once.

use std::net::SocketAddr;

use axum::Json;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{ConnectInfo, FromRequestParts, Query, State};
use axum::http::StatusCode;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use metafi_proto::realtime::Format;
use metafi_proto::{Code, ErrorBody};
use metafi_realtime::SessionParams;
use serde::Deserialize;

use crate::{TransportState, connection, metrics};

/// The longest `lang` a socket keeps for its session's lifetime. Language tags are a few
/// bytes (BCP 47's practical limit is 35); without a bound, a query string as long as the HTTP
/// parser allows (hundreds of kilobytes) would be held per socket.
const MAX_LANG_BYTES: usize = 64;

/// The query parameters Nakama's clients send: `token`, `format`, `status`, `lang`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WsQuery {
    token: String,
    format: String,
    status: String,
    lang: String,
}

pub(crate) async fn ws(State(state): State<TransportState>, mut parts: Parts) -> Response {
    let query = match Query::<WsQuery>::try_from_uri(&parts.uri) {
        Ok(Query(query)) => query,
        Err(_) => {
            return reject(
                "query",
                StatusCode::BAD_REQUEST,
                Code::InvalidArgument,
                "Malformed query string.",
            );
        }
    };
    let Some(format) = Format::from_query(&query.format) else {
        return reject(
            "format",
            StatusCode::BAD_REQUEST,
            Code::InvalidArgument,
            "Invalid format parameter: use format=json (the default) or format=protobuf.",
        );
    };
    if query.lang.len() > MAX_LANG_BYTES {
        return reject(
            "lang",
            StatusCode::BAD_REQUEST,
            Code::InvalidArgument,
            "Invalid lang parameter: a language tag of at most 64 bytes, such as lang=en.",
        );
    }
    let token = match bearer_or_query(&parts, &query) {
        Ok(token) => token,
        Err(message) => {
            return reject(
                "token",
                StatusCode::UNAUTHORIZED,
                Code::Unauthenticated,
                message,
            );
        }
    };
    let claims = match state.sessions.verify(&token) {
        Ok(claims) => claims,
        Err(error) => {
            return reject(
                "token",
                StatusCode::UNAUTHORIZED,
                Code::Unauthenticated,
                error.client_message(),
            );
        }
    };
    let upgrade = match WebSocketUpgrade::from_request_parts(&mut parts, &state).await {
        Ok(upgrade) => upgrade,
        Err(rejection) => {
            return reject(
                "not_websocket",
                rejection.status(),
                Code::InvalidArgument,
                format!("/ws expects a WebSocket upgrade request: {rejection}."),
            );
        }
    };
    let client_addr = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0);
    let params = SessionParams {
        user_id: claims.user_id,
        username: claims.username,
        vars: claims.vars,
        expires_at: claims.expires_at,
        client_addr,
        lang: Some(query.lang),
        format,
        appear_online: parse_go_bool(&query.status),
    };
    let config = &state.config;
    upgrade
        .read_buffer_size(config.read_buffer_size_bytes)
        .write_buffer_size(config.write_buffer_size_bytes)
        .max_message_size(config.max_message_size_bytes)
        .max_frame_size(config.max_message_size_bytes)
        .on_failed_upgrade(|error| {
            tracing::debug!(error = %error, "WebSocket upgrade failed");
        })
        .on_upgrade(move |socket| connection::run(state, socket, params))
}

/// The session token: an `Authorization: Bearer` header if present, else `?token=`.
fn bearer_or_query(parts: &Parts, query: &WsQuery) -> Result<String, &'static str> {
    let token = match parts.headers.get(AUTHORIZATION) {
        Some(header) => header
            .to_str()
            .ok()
            .and_then(|h| h.strip_prefix("Bearer "))
            .ok_or("Auth token invalid")?
            .to_owned(),
        None => query.token.clone(),
    };
    if token.is_empty() {
        return Err("Auth token required: pass the session token as ?token=");
    }
    Ok(token)
}

/// Go's `strconv.ParseBool`, which Nakama uses for `status`; anything else is false.
fn parse_go_bool(text: &str) -> bool {
    matches!(text, "1" | "t" | "T" | "TRUE" | "true" | "True")
}

fn reject(
    reason: &'static str,
    status: StatusCode,
    code: Code,
    message: impl Into<String>,
) -> Response {
    metrics::rejected(reason);
    (status, Json(ErrorBody::new(code, message))).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_parses_like_go() {
        assert!(parse_go_bool("true"));
        assert!(parse_go_bool("1"));
        assert!(!parse_go_bool("yes"));
        assert!(!parse_go_bool(""));
    }
}
