//! `/v2/notification`: a user lists (`GET`, Nakama's cacheable cursor) and deletes (`DELETE`)
//! their own notifications.

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::Uri;
use axum::routing::get;
use metafi_core::{CoreError, Hook};
use metafi_proto::Code;
use metafi_proto::api::NotificationList;
use uuid::Uuid;

use crate::body::{int_param, query_of};
use crate::client_address::ClientAddress;
use crate::hooks::{self, DeleteNotificationsRequest, ListNotificationsRequest};
use crate::{ApiError, ApiState, SessionAuth};

pub(crate) fn routes() -> Router<ApiState> {
    Router::new().route("/v2/notification", get(list).delete(delete))
}

/// `GET /v2/notification?limit=&cacheable_cursor=`: one notification when no limit is given,
/// as Nakama.
async fn list(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    uri: Uri,
) -> Result<Json<NotificationList>, ApiError> {
    let mut request = ListNotificationsRequest::default();
    for (name, value) in query_of(&uri)? {
        match name.as_str() {
            "limit" => request.limit = int_param(Some(&value), invalid_limit)?,
            "cacheable_cursor" => request.cacheable_cursor = value,
            _ => {}
        }
    }
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around(
        &state,
        Hook::ListNotifications,
        ctx,
        request,
        async |request| {
            let limit = match request.limit {
                None => 1,
                Some(limit @ 1..=100) => limit as usize,
                Some(_) => return Err(invalid_limit()),
            };
            let page = state
                .notifications
                .list(claims.user_id, limit, &request.cacheable_cursor, true)
                .await
                .map_err(|e| match e {
                    // Nakama answers any failure of the listing, a malformed cursor included, so.
                    CoreError::InvalidArgument { .. } => {
                        ApiError::new(Code::Internal, "Error retrieving notifications.")
                    }
                    other => other.into(),
                })?;
            let list = NotificationList {
                notifications: page.notifications,
                cacheable_cursor: page.cursor,
            };
            Ok(list)
        },
    )
    .await
}

/// `DELETE /v2/notification?ids=…&ids=…`: only the caller's own; other ids are ignored.
async fn delete(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    uri: Uri,
) -> Result<Json<serde_json::Value>, ApiError> {
    let mut request = DeleteNotificationsRequest::default();
    for (name, value) in query_of(&uri)? {
        if name == "ids" {
            request.ids.push(value);
        }
    }
    let hook = Hook::DeleteNotifications;
    let ctx = || hooks::signed_in(&claims, &client);
    let request = hooks::before(&state, hook, ctx, request).await?;
    if request.ids.is_empty() {
        // Nakama returns before the after hook when there is nothing to delete.
        return Ok(Json(serde_json::json!({})));
    }
    let kept = hooks::keep_for_after(&state, hook, &request);
    // Nakama hands the ids to the database as UUIDs: one that is not fails the whole call.
    let ids = request
        .ids
        .iter()
        .map(|id| Uuid::parse_str(id))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| ApiError::new(Code::Internal, "Error while deleting notifications."))?;
    if ids.len() > state.notifications.config().max_per_send {
        return Err(ApiError::new(
            Code::InvalidArgument,
            format!(
                "Too many notification ids: at most {} per call (notification.max_per_send).",
                state.notifications.config().max_per_send
            ),
        ));
    }
    state
        .notifications
        .delete(claims.user_id, &ids)
        .await
        .map_err(|e| {
            if e.is_server_fault() {
                tracing::error!(error = %e, "deleting notifications failed");
            }
            ApiError::new(Code::Internal, "Error while deleting notifications.")
        })?;
    hooks::after::<()>(&state, hook, ctx, None, kept).await;
    Ok(Json(serde_json::json!({})))
}

fn invalid_limit() -> ApiError {
    ApiError::new(
        Code::InvalidArgument,
        "Invalid limit - limit must be between 1 and 100.",
    )
}
