//! `GET /v2/channel/{channel_id}`: a page of a chat channel's history.

use axum::Json;
use axum::extract::State;
use metafi_proto::Code;
use metafi_proto::api::ChannelMessageList;
use serde::Deserialize;

use crate::body::{PathParams, QueryParams, parse_bool};
use crate::{ApiError, ApiState, SessionAuth};

#[derive(Debug, Deserialize)]
pub(super) struct ListQuery {
    limit: Option<String>,
    forward: Option<String>,
    cursor: Option<String>,
}

/// `?limit=` (1–100, default 1), `?forward=` (default true), `?cursor=`. Direct chats are
/// readable by their two users only, group chats by members (none yet: MetaFi has no groups).
pub(super) async fn list(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    PathParams(channel_id): PathParams<String>,
    QueryParams(query): QueryParams<ListQuery>,
) -> Result<Json<ChannelMessageList>, ApiError> {
    let limit = match query.limit.as_deref() {
        None | Some("") => None,
        Some(text) => Some(text.parse::<i64>().map_err(|_| {
            ApiError::new(
                Code::InvalidArgument,
                "Invalid limit - limit must be between 1 and 100.",
            )
        })?),
    };
    let forward = parse_bool("forward", query.forward.as_deref())?;
    let page = state
        .channels
        .list_messages(
            claims.user_id,
            &channel_id,
            limit,
            forward,
            query.cursor.as_deref(),
        )
        .await?;
    Ok(Json(page))
}
