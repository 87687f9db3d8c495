//! `GET /v2/party`: parties that are not hidden, as Nakama's `ListParties` (limit 1–100,
//! default 10; `open`; a `query` over the label; `cursor`). Every listing failure (a bad
//! cursor or query) is Nakama's `Error listing matches.` (code 13).

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use metafi_core::{Hook, ListParties};
use metafi_proto::Code;
use metafi_proto::api::PartyList;
use serde::{Deserialize, Serialize};

use crate::body::{QueryParams, integer_param, parse_bool};
use crate::client_address::ClientAddress;
use crate::hooks;
use crate::{ApiError, ApiState, SessionAuth};

pub(crate) fn routes() -> Router<ApiState> {
    Router::new().route("/v2/party", get(list))
}

#[derive(Debug, Deserialize)]
struct ListParams {
    limit: Option<String>,
    open: Option<String>,
    query: Option<String>,
    cursor: Option<String>,
}

/// `ListPartiesRequest`, as hooks see it (wrapper fields: `null` when not given).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct ListPartiesRequest {
    limit: Option<i32>,
    open: Option<bool>,
    query: Option<String>,
    cursor: Option<String>,
}

async fn list(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    QueryParams(params): QueryParams<ListParams>,
) -> Result<Json<PartyList>, ApiError> {
    let request = ListPartiesRequest {
        limit: integer_param("limit", params.limit.as_deref())?,
        open: parse_bool("open", params.open.as_deref())?,
        query: params.query,
        cursor: params.cursor,
    };
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around(&state, Hook::ListParties, ctx, request, async |request| {
        let limit = match request.limit {
            None => 10,
            Some(limit @ 1..=100) => limit as usize,
            Some(_) => {
                return Err(ApiError::new(
                    Code::InvalidArgument,
                    "Invalid limit - limit must be between 1 and 100.",
                ));
            }
        };
        state
            .parties
            .list_parties(&ListParties {
                limit,
                open: request.open,
                show_hidden: false,
                query: request.query.unwrap_or_default(),
                cursor: request.cursor.unwrap_or_default(),
            })
            .map_err(|error| {
                tracing::debug!(%error, "party listing failed");
                ApiError::new(Code::Internal, "Error listing matches.")
            })
    })
    .await
}
