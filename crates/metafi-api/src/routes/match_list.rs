//! `GET /v2/match`: running matches, filtered as Nakama's `ListMatches` (limit, authoritative,
//! label, min_size, max_size, query). The listing is answered from the match engine's index,
//! which follows joins, leaves and label changes at once.

use axum::Json;
use axum::extract::State;
use metafi_core::Hook;
use metafi_match::{ListQuery, MatchInfo};
use metafi_proto::Code;
use serde::{Deserialize, Serialize};

use crate::body::{QueryParams, integer_param, parse_bool};
use crate::client_address::ClientAddress;
use crate::hooks;
use crate::{ApiError, ApiState, SessionAuth};

#[derive(Debug, Deserialize)]
pub(super) struct ListParams {
    limit: Option<String>,
    authoritative: Option<String>,
    label: Option<String>,
    min_size: Option<String>,
    max_size: Option<String>,
    query: Option<String>,
}

/// `api.MatchList` as JSON (proto field names; defaults omitted, as Nakama's gateway does).
#[derive(Debug, Clone, Serialize)]
pub(super) struct MatchList {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    matches: Vec<ApiMatch>,
}

#[derive(Debug, Clone, Serialize)]
struct ApiMatch {
    match_id: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    authoritative: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<String>,
    #[serde(skip_serializing_if = "is_zero")]
    size: i32,
    #[serde(skip_serializing_if = "is_zero")]
    tick_rate: i32,
    #[serde(skip_serializing_if = "String::is_empty")]
    handler_name: String,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

impl From<MatchInfo> for ApiMatch {
    fn from(m: MatchInfo) -> ApiMatch {
        ApiMatch {
            match_id: m.match_id,
            authoritative: m.authoritative,
            label: m.label,
            size: m.size,
            tick_rate: m.tick_rate.unwrap_or(0),
            handler_name: m.handler_name.unwrap_or_default(),
        }
    }
}

fn invalid(message: &str) -> ApiError {
    ApiError::new(Code::InvalidArgument, message)
}

/// Lists matches. Limit 1–100 (default 10); label and query filters only apply to
/// authoritative matches; sizes must be non-negative and ordered.
pub(super) async fn list(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    QueryParams(params): QueryParams<ListParams>,
) -> Result<Json<MatchList>, ApiError> {
    let request = hooks::ListMatchesRequest {
        limit: integer_param("limit", params.limit.as_deref())?,
        authoritative: parse_bool("authoritative", params.authoritative.as_deref())?,
        label: params.label,
        min_size: integer_param("min_size", params.min_size.as_deref())?,
        max_size: integer_param("max_size", params.max_size.as_deref())?,
        query: params.query,
    };
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around(&state, Hook::ListMatches, ctx, request, async |request| {
        let hooks::ListMatchesRequest {
            limit,
            authoritative,
            label,
            min_size,
            max_size,
            query,
        } = request;
        let limit = match limit {
            None => 10,
            Some(limit @ 1..=100) => limit as usize,
            Some(_) => return Err(invalid("Invalid limit - limit must be between 1 and 100.")),
        };
        if label.is_some() && authoritative == Some(false) {
            return Err(invalid(
                "Label filtering is not supported for non-authoritative matches.",
            ));
        }
        if query.is_some() && authoritative == Some(false) {
            return Err(invalid(
                "Query filtering is not supported for non-authoritative matches.",
            ));
        }
        if min_size.is_some_and(|s| s < 0) {
            return Err(invalid("Minimum size must be 0 or above."));
        }
        if max_size.is_some_and(|s| s < 0) {
            return Err(invalid("Maximum size must be 0 or above."));
        }
        if let (Some(min), Some(max)) = (min_size, max_size)
            && min > max
        {
            return Err(invalid(
                "Maximum size must be greater than or equal to minimum size when both are specified.",
            ));
        }
        let query = ListQuery {
            limit,
            authoritative,
            label,
            min_size,
            max_size,
            query,
        };
        let matches = state
            .matches
            .list(&query)
            .map_err(|e| ApiError::new(e.code(), e.to_string()))?;
        Ok(MatchList {
            matches: matches.into_iter().map(ApiMatch::from).collect(),
        })
    })
    .await
}
