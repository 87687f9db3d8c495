//! `/v2/leaderboard/{id}`: write (`POST`), delete own record (`DELETE`), list (`GET`) and
//! list around an owner (`GET …/owner/{owner_id}`), with Nakama's checks and messages
//! (`server/api_leaderboard.go`).

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::Uri;
use axum::routing::get;
use metafi_core::leaderboards::{RankedRecord, RecordList, RestCall, Submission};
use metafi_core::{Hook, SessionClaims};
use metafi_proto::Code;
use metafi_proto::api::{LeaderboardRecord, LeaderboardRecordList, LeaderboardRecordWrite};
use metafi_proto::wkt::{Timestamp, string_value};
use metafi_storage::Operator;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::body::{JsonBody, PathParams, query_of};
use crate::client_address::ClientAddress;
use crate::hooks;
use crate::{ApiError, ApiState, SessionAuth};

pub(crate) fn routes() -> Router<ApiState> {
    Router::new()
        .route(
            "/v2/leaderboard/{leaderboard_id}",
            get(list).post(write).delete(delete),
        )
        .route(
            "/v2/leaderboard/{leaderboard_id}/owner/{owner_id}",
            get(around_owner),
        )
}

/// `WriteLeaderboardRecordRequest`, as hooks see it.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct WriteRequest {
    leaderboard_id: String,
    record: Option<RecordWrite>,
}

/// `WriteLeaderboardRecordRequest.LeaderboardRecordWrite`, and the tournament's
/// `WriteTournamentRecordRequest.TournamentRecordWrite` (the same fields).
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
pub(super) struct RecordWrite {
    pub(super) score: i64,
    pub(super) subscore: i64,
    pub(super) metadata: String,
    pub(super) operator: i32,
}

/// The owner of a records-around-owner query (boards and tournaments), with Nakama's errors.
pub(super) fn haystack_owner(owner_id: &str) -> Result<Uuid, ApiError> {
    if owner_id.is_empty() {
        return Err(ApiError::new(
            Code::InvalidArgument,
            "Owner ID must be provided for a haystack query.",
        ));
    }
    Uuid::parse_str(owner_id)
        .map_err(|_| ApiError::new(Code::InvalidArgument, "Invalid owner ID provided."))
}

/// The caller's submission of `record`. An operator Nakama does not know is its
/// ErrInvalidOperator, reported as the call's write error (`write_error`).
pub(super) fn submission(
    claims: &SessionClaims,
    record: &RecordWrite,
    write_error: &'static str,
) -> Result<Submission, ApiError> {
    let operator = match record.operator {
        0 => None,
        1 => Some(Operator::Best),
        2 => Some(Operator::Set),
        3 => Some(Operator::Increment),
        4 => Some(Operator::Decrement),
        _ => return Err(ApiError::new(Code::Internal, write_error)),
    };
    Ok(Submission {
        owner_id: claims.user_id,
        username: Some(claims.username.clone()).filter(|u| !u.is_empty()),
        score: record.score,
        subscore: record.subscore,
        metadata: Some(record.metadata.clone()).filter(|m| !m.is_empty()),
        operator,
    })
}

/// `DeleteLeaderboardRecordRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct DeleteRequest {
    leaderboard_id: String,
}

/// `ListLeaderboardRecordsRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct ListRequest {
    leaderboard_id: String,
    owner_ids: Vec<String>,
    limit: Option<i64>,
    cursor: String,
    expiry: Option<i64>,
}

/// `ListLeaderboardRecordsAroundOwnerRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct AroundOwnerRequest {
    leaderboard_id: String,
    limit: Option<i64>,
    owner_id: String,
    expiry: Option<i64>,
    cursor: String,
}

async fn write(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    PathParams(leaderboard_id): PathParams<String>,
    JsonBody(body): JsonBody<LeaderboardRecordWrite>,
) -> Result<Json<LeaderboardRecord>, ApiError> {
    let request = WriteRequest {
        leaderboard_id,
        record: Some(RecordWrite {
            score: body.score,
            subscore: body.subscore,
            metadata: body.metadata,
            operator: body.operator,
        }),
    };
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around(
        &state,
        Hook::WriteLeaderboardRecord,
        ctx,
        request,
        async |request| {
            if request.leaderboard_id.is_empty() {
                return Err(invalid_id());
            }
            let Some(record) = &request.record else {
                return Err(ApiError::new(
                    Code::InvalidArgument,
                    "Invalid input, record score value is required.",
                ));
            };
            if !record.metadata.is_empty() && !is_json_object(&record.metadata) {
                return Err(ApiError::new(
                    Code::InvalidArgument,
                    "Metadata value must be JSON, if provided.",
                ));
            }
            let submission = submission(&claims, record, "Error writing score to leaderboard.")?;
            let written = state
                .leaderboards
                .write(Some(claims.user_id), &request.leaderboard_id, submission)
                .await
                .map_err(|e| e.into_core(RestCall::Write))?;
            let record = record_view(written);
            Ok(record)
        },
    )
    .await
}

async fn delete(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    PathParams(leaderboard_id): PathParams<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let request = DeleteRequest { leaderboard_id };
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around_empty(
        &state,
        Hook::DeleteLeaderboardRecord,
        ctx,
        request,
        async |request| {
            if request.leaderboard_id.is_empty() {
                return Err(invalid_id());
            }
            state
                .leaderboards
                .delete_record(
                    Some(claims.user_id),
                    &request.leaderboard_id,
                    claims.user_id,
                )
                .await
                .map_err(|e| e.into_core(RestCall::Delete))?;
            Ok(())
        },
    )
    .await
}

async fn list(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    PathParams(leaderboard_id): PathParams<String>,
    uri: Uri,
) -> Result<Json<LeaderboardRecordList>, ApiError> {
    let mut request = ListRequest {
        leaderboard_id,
        ..ListRequest::default()
    };
    for (name, value) in query_of(&uri)? {
        match name.as_str() {
            "owner_ids" => request.owner_ids.push(value),
            "limit" => request.limit = Some(number(&value, invalid_list_limit)?),
            "cursor" => request.cursor = value,
            "expiry" => request.expiry = Some(number(&value, invalid_expiry)?),
            _ => {}
        }
    }
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around(
        &state,
        Hook::ListLeaderboardRecords,
        ctx,
        request,
        async |request| {
            if request.leaderboard_id.is_empty() {
                return Err(invalid_id());
            }
            let limit = match request.limit {
                Some(limit) if !(1..=1000).contains(&limit) => return Err(invalid_list_limit()),
                // In range by the check above.
                Some(limit) => Some(limit as usize),
                None if request.owner_ids.is_empty() || !request.cursor.is_empty() => Some(1),
                None => None,
            };
            let owners = request
                .owner_ids
                .iter()
                .map(|id| Uuid::parse_str(id))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| {
                    ApiError::new(Code::InvalidArgument, "One or more owner IDs are invalid.")
                })?;
            let list = state
                .leaderboards
                .list_records(
                    &request.leaderboard_id,
                    limit,
                    &request.cursor,
                    &owners,
                    request.expiry.unwrap_or(0),
                )
                .await
                .map_err(|e| e.into_core(RestCall::List))?;
            let list = list_view(list);
            Ok(list)
        },
    )
    .await
}

async fn around_owner(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    PathParams((leaderboard_id, owner_id)): PathParams<(String, String)>,
    uri: Uri,
) -> Result<Json<LeaderboardRecordList>, ApiError> {
    let mut request = AroundOwnerRequest {
        leaderboard_id,
        owner_id,
        ..AroundOwnerRequest::default()
    };
    for (name, value) in query_of(&uri)? {
        match name.as_str() {
            "limit" => request.limit = Some(number(&value, invalid_around_limit)?),
            "cursor" => request.cursor = value,
            "expiry" => request.expiry = Some(number(&value, invalid_expiry)?),
            _ => {}
        }
    }
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around(
        &state,
        Hook::ListLeaderboardRecordsAroundOwner,
        ctx,
        request,
        async |request| {
            if request.leaderboard_id.is_empty() {
                return Err(invalid_id());
            }
            let limit = match request.limit {
                None => 1,
                Some(limit) if (1..=100).contains(&limit) => limit as usize,
                Some(_) => return Err(invalid_around_limit()),
            };
            let owner = haystack_owner(&request.owner_id)?;
            let list = state
                .leaderboards
                .haystack(
                    &request.leaderboard_id,
                    owner,
                    limit,
                    &request.cursor,
                    request.expiry.unwrap_or(0),
                )
                .await
                .map_err(|e| e.into_core(RestCall::AroundOwner))?;
            let list = list_view(list);
            Ok(list)
        },
    )
    .await
}

/// A record as Nakama sends it: times in whole seconds, no expiry for a board that never
/// resets.
pub(crate) fn record_view(ranked: RankedRecord) -> LeaderboardRecord {
    let r = ranked.record;
    let seconds = |ms: i64| {
        Some(Timestamp {
            seconds: ms.div_euclid(1000),
            nanos: 0,
        })
    };
    LeaderboardRecord {
        leaderboard_id: r.leaderboard_id,
        owner_id: r.owner_id.to_string(),
        username: r.username.and_then(string_value),
        score: r.score,
        subscore: r.subscore,
        num_score: r.num_score,
        metadata: r.metadata,
        create_time: seconds(r.create_time_ms),
        update_time: seconds(r.update_time_ms),
        expiry_time: (r.expiry_time != 0).then_some(Timestamp {
            seconds: r.expiry_time,
            nanos: 0,
        }),
        rank: ranked.rank,
        max_num_score: u32::try_from(r.max_num_score).unwrap_or(0),
    }
}

fn list_view(list: RecordList) -> LeaderboardRecordList {
    LeaderboardRecordList {
        records: list.records.into_iter().map(record_view).collect(),
        owner_records: list.owner_records.into_iter().map(record_view).collect(),
        next_cursor: list.next_cursor,
        prev_cursor: list.prev_cursor,
        rank_count: list.rank_count,
    }
}

/// Nakama's test: valid JSON whose first non-space byte is `{`.
fn is_json_object(text: &str) -> bool {
    text.trim_start().starts_with('{') && serde_json::from_str::<serde_json::Value>(text).is_ok()
}

fn number(text: &str, error: fn() -> ApiError) -> Result<i64, ApiError> {
    text.parse().map_err(|_| error())
}

fn invalid_id() -> ApiError {
    ApiError::new(Code::InvalidArgument, "Invalid leaderboard ID.")
}

fn invalid_list_limit() -> ApiError {
    ApiError::new(
        Code::InvalidArgument,
        "Invalid limit - limit must be between 1 and 1000.",
    )
}

fn invalid_around_limit() -> ApiError {
    ApiError::new(
        Code::InvalidArgument,
        "Invalid limit - limit must be between 1 and 100.",
    )
}

fn invalid_expiry() -> ApiError {
    ApiError::new(Code::InvalidArgument, "Invalid expiry.")
}
