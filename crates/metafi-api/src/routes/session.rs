//! `POST /v2/account/session/refresh` and `POST /v2/session/logout`.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use metafi_core::Hook;
use metafi_proto::api::{Session, SessionLogoutRequest, SessionRefreshRequest};

use crate::body::JsonBody;
use crate::client_address::ClientAddress;
use crate::hooks;
use crate::{ApiError, ApiState, ServerKeyAuth, SessionAuth};

pub(super) async fn refresh(
    State(state): State<ApiState>,
    _key: ServerKeyAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<SessionRefreshRequest>,
) -> Result<SessionAnswer, ApiError> {
    let hook = Hook::SessionRefresh;
    if !state.hooks.has_before(hook) && !state.hooks.has_after(hook) {
        return Ok(SessionAnswer(
            state.sessions.refresh(&body.token, body.vars).await?,
        ));
    }
    let request = hooks::SessionRefreshRequest {
        token: body.token,
        vars: body.vars.unwrap_or_default(),
    };
    let ctx = || hooks::anonymous(&client);
    hooks::around(&state, hook, ctx, request, async |request| {
        // Protobuf cannot tell an empty map from none: both keep the session's variables.
        let vars = (!request.vars.is_empty()).then_some(request.vars);
        Ok(state.sessions.refresh(&request.token, vars).await?)
    })
    .await
    .map(|Json(session)| SessionAnswer(session))
}

/// A session as the client receives it, the answer of every sign-in and refresh: the bytes
/// `Json(session)` gives, written without serde_json when neither token needs an escape
/// (tokens are base64url and dots): the tokens copied whole into a buffer of the answer's
/// size, where serde_json checks them byte by byte for escapes and grows its buffer from 128
/// bytes to the ≈ 600 of a session (the biggest user-space cost of a sign-in after the tokens'
/// signing, docs/BENCHMARKS.md "The sign-in row on PostgreSQL").
pub(super) struct SessionAnswer(pub(super) Session);

impl IntoResponse for SessionAnswer {
    fn into_response(self) -> Response {
        let Session {
            created,
            token,
            refresh_token,
        } = &self.0;
        if needs_escape(token) || needs_escape(refresh_token) {
            return Json(self.0).into_response();
        }
        // `created` is left out when false, as the derived `Serialize` does.
        let head = if *created {
            r#"{"created":true,"token":""#
        } else {
            r#"{"token":""#
        };
        const MIDDLE: &str = r#"","refresh_token":""#;
        const TAIL: &str = r#""}"#;
        let mut body = Vec::with_capacity(
            head.len() + token.len() + MIDDLE.len() + refresh_token.len() + TAIL.len(),
        );
        for part in [head, token, MIDDLE, refresh_token, TAIL] {
            body.extend_from_slice(part.as_bytes());
        }
        let json = HeaderValue::from_static("application/json");
        ([(header::CONTENT_TYPE, json)], body).into_response()
    }
}

/// Whether serde_json escapes anything in `text`: a quote, a backslash, a control character.
fn needs_escape(text: &str) -> bool {
    text.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20)
}

pub(super) async fn logout(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    JsonBody(body): JsonBody<SessionLogoutRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let ctx = || hooks::signed_in(&claims, &client);
    let request = hooks::SessionLogoutRequest {
        token: body.token,
        refresh_token: body.refresh_token,
    };
    hooks::around_empty(&state, Hook::SessionLogout, ctx, request, async |request| {
        let (token, refresh_token) = (&request.token, &request.refresh_token);
        Ok(state.sessions.logout(&claims, token, refresh_token).await?)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn answer(response: Response) -> (Vec<(String, String)>, Vec<u8>) {
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_str().unwrap().to_string()))
            .collect();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (headers, body.to_vec())
    }

    /// The answer written out is `Json`'s, header for header and byte for byte: created or
    /// not, and for tokens that need escapes (written by serde_json then).
    #[tokio::test]
    async fn a_session_answer_is_what_json_gives() {
        let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ0aWQiOiIxIn0.c2lnbmF0dXJlLV9fLQ";
        for created in [false, true] {
            for (token, refresh_token) in [
                (jwt, jwt),
                ("", ""),
                ("a\"quote", jwt),
                (jwt, "back\\slash\n\u{1}é"),
            ] {
                let session = Session {
                    created,
                    token: token.to_string(),
                    refresh_token: refresh_token.to_string(),
                };
                let ours = answer(SessionAnswer(session.clone()).into_response()).await;
                let json = answer(Json(session).into_response()).await;
                assert_eq!(
                    String::from_utf8_lossy(&ours.1),
                    String::from_utf8_lossy(&json.1)
                );
                assert_eq!(ours, json);
            }
        }
    }
}
