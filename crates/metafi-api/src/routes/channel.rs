//! `GET /v2/channel/{channel_id}`: a page of a chat channel's history.

use axum::Json;
use axum::extract::State;
use metafi_core::Hook;
use metafi_proto::Code;
use metafi_proto::api::ChannelMessageList;
use serde::Deserialize;

use crate::body::{PathParams, QueryParams, int_param, parse_bool};
use crate::client_address::ClientAddress;
use crate::hooks;
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
    client: ClientAddress,
    PathParams(channel_id): PathParams<String>,
    QueryParams(query): QueryParams<ListQuery>,
) -> Result<Json<ChannelMessageList>, ApiError> {
    let limit = int_param(query.limit.as_deref(), || {
        ApiError::new(
            Code::InvalidArgument,
            "Invalid limit - limit must be between 1 and 100.",
        )
    })?;
    let forward = parse_bool("forward", query.forward.as_deref())?;
    let request = hooks::ListChannelMessagesRequest {
        channel_id,
        limit,
        forward,
        cursor: query.cursor,
    };
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around(
        &state,
        Hook::ListChannelMessages,
        ctx,
        request,
        async |request| {
            let page = state
                .channels
                .list_messages(
                    claims.user_id,
                    &request.channel_id,
                    request.limit,
                    request.forward,
                    request.cursor.as_deref(),
                )
                .await?;
            Ok(page)
        },
    )
    .await
}
