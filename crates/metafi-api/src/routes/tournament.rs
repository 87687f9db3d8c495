//! `/v2/tournament`: list tournaments (`GET /v2/tournament`), list a tournament's records
//! (`GET …/{id}`), write a record (`PUT`/`POST …/{id}`), delete one's own record
//! (`DELETE …/{id}`), join (`POST …/{id}/join`) and list around an owner
//! (`GET …/{id}/owner/{owner_id}`), with Nakama's checks and messages
//! (`server/api_tournament.go`).

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::Uri;
use axum::routing::{get, post};
use metafi_core::Hook;
use metafi_core::leaderboards::{RecordList, TournamentCall, TournamentFilter, TournamentView};
use metafi_proto::Code;
use metafi_proto::api::{
    LeaderboardRecord, LeaderboardRecordWrite, Tournament, TournamentList, TournamentRecordList,
};
use metafi_proto::wkt::Timestamp;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::leaderboard::{RecordWrite, haystack_owner, record_view, submission};
use crate::body::{JsonBody, PathParams, query_pairs};
use crate::client_address::ClientAddress;
use crate::hooks;
use crate::{ApiError, ApiState, SessionAuth};

pub(crate) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/v2/tournament", get(list))
        .route(
            "/v2/tournament/{tournament_id}",
            get(list_records)
                .put(write)
                .post(write)
                .delete(delete_record),
        )
        .route("/v2/tournament/{tournament_id}/join", post(join))
        .route(
            "/v2/tournament/{tournament_id}/owner/{owner_id}",
            get(around_owner),
        )
}

/// `ListTournamentsRequest`, as hooks see it.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct ListRequest {
    category_start: Option<i64>,
    category_end: Option<i64>,
    start_time: Option<i64>,
    end_time: Option<i64>,
    limit: Option<i64>,
    cursor: String,
}

/// `ListTournamentRecordsRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct ListRecordsRequest {
    tournament_id: String,
    owner_ids: Vec<String>,
    limit: Option<i64>,
    cursor: String,
    expiry: Option<i64>,
}

/// `WriteTournamentRecordRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct WriteRequest {
    tournament_id: String,
    record: Option<RecordWrite>,
}

/// `JoinTournamentRequest` and `DeleteTournamentRecordRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct TournamentIdRequest {
    tournament_id: String,
}

/// `ListTournamentRecordsAroundOwnerRequest`.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
#[serde(default)]
struct AroundOwnerRequest {
    tournament_id: String,
    limit: Option<i64>,
    owner_id: String,
    expiry: Option<i64>,
    cursor: String,
}

async fn list(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    uri: Uri,
) -> Result<Json<TournamentList>, ApiError> {
    let mut request = ListRequest::default();
    for (name, value) in query_pairs(uri.query().unwrap_or_default())? {
        match name.as_str() {
            "category_start" => request.category_start = Some(unsigned(&name, &value)?),
            "category_end" => request.category_end = Some(unsigned(&name, &value)?),
            "start_time" => request.start_time = Some(unsigned(&name, &value)?),
            "end_time" => request.end_time = Some(unsigned(&name, &value)?),
            "limit" => request.limit = Some(signed(&name, &value)?),
            "cursor" => request.cursor = value,
            _ => {}
        }
    }
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around(
        &state,
        Hook::ListTournaments,
        ctx,
        request,
        async |request| {
            let category_start = request.category_start.unwrap_or(0);
            let mut category_end = 127;
            if let Some(end) = request.category_end {
                category_end = end;
                if end >= 128 {
                    return Err(ApiError::new(
                        Code::InvalidArgument,
                        "Tournament category end must be >=0 and <128.",
                    ));
                }
                if end < category_start {
                    return Err(ApiError::new(
                        Code::InvalidArgument,
                        "Tournament category end must be greater than category start.",
                    ));
                }
            }
            let start_time = request.start_time.unwrap_or(-1);
            let mut end_time = -1;
            if let Some(end) = request.end_time {
                end_time = end;
                if end != 0 && end < start_time {
                    return Err(ApiError::new(
                        Code::InvalidArgument,
                        "Tournament end time must be greater than start time.",
                    ));
                }
            }
            let limit = match request.limit {
                None => 100,
                // In range by the guard.
                Some(limit) if (1..=100).contains(&limit) => limit as usize,
                Some(_) => {
                    return Err(ApiError::new(
                        Code::InvalidArgument,
                        "Limit must be between 1 and 100.",
                    ));
                }
            };
            let page = state
                .leaderboards
                .list_tournaments(&TournamentFilter {
                    category_start: clamp_i32(category_start),
                    category_end: clamp_i32(category_end),
                    start_time,
                    end_time,
                    limit,
                    cursor: request.cursor.clone(),
                })
                .await
                .map_err(|e| e.into_core(TournamentCall::List))?;
            let list = TournamentList {
                tournaments: page.tournaments.iter().map(tournament_view).collect(),
                cursor: page.cursor,
            };
            Ok(list)
        },
    )
    .await
}

async fn list_records(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    PathParams(tournament_id): PathParams<String>,
    uri: Uri,
) -> Result<Json<TournamentRecordList>, ApiError> {
    let mut request = ListRecordsRequest {
        tournament_id,
        ..ListRecordsRequest::default()
    };
    for (name, value) in query_pairs(uri.query().unwrap_or_default())? {
        match name.as_str() {
            "owner_ids" => request.owner_ids.push(value),
            "limit" => request.limit = Some(signed(&name, &value)?),
            "cursor" => request.cursor = value,
            "expiry" => request.expiry = Some(signed(&name, &value)?),
            _ => {}
        }
    }
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around(
        &state,
        Hook::ListTournamentRecords,
        ctx,
        request,
        async |request| {
            if request.tournament_id.is_empty() {
                return Err(ApiError::new(
                    Code::InvalidArgument,
                    "Tournament ID must be provided",
                ));
            }
            let owners = request
                .owner_ids
                .iter()
                .map(|id| Uuid::parse_str(id))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| {
                    ApiError::new(Code::InvalidArgument, "One or more owner IDs are invalid.")
                })?;
            let limit = match request.limit {
                Some(limit) if !(1..=100).contains(&limit) => {
                    return Err(ApiError::new(
                        Code::InvalidArgument,
                        "Invalid limit - limit must be between 1 and 100.",
                    ));
                }
                // In range by the check above.
                Some(limit) => Some(limit as usize),
                None if owners.is_empty() || request.cursor.is_empty() => Some(10),
                None => None,
            };
            let list = state
                .leaderboards
                .tournament_records(
                    &request.tournament_id,
                    limit,
                    &request.cursor,
                    &owners,
                    request.expiry.unwrap_or(0),
                )
                .await
                .map_err(|e| e.into_core(TournamentCall::ListRecords))?;
            let list = records_view(list);
            Ok(list)
        },
    )
    .await
}

async fn write(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    PathParams(tournament_id): PathParams<String>,
    JsonBody(body): JsonBody<LeaderboardRecordWrite>,
) -> Result<Json<LeaderboardRecord>, ApiError> {
    let request = WriteRequest {
        tournament_id,
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
        Hook::WriteTournamentRecord,
        ctx,
        request,
        async |request| {
            if request.tournament_id.is_empty() {
                return Err(ApiError::new(
                    Code::InvalidArgument,
                    "Tournament ID must be provided.",
                ));
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
            // Nakama looks the id up among all boards here, then refuses an ended tournament.
            let Some(board) = state.leaderboards.get(&request.tournament_id) else {
                return Err(ApiError::new(Code::NotFound, "Tournament not found."));
            };
            if board.row.end_time > 0 && board.row.end_time <= state.leaderboards.now_secs() {
                return Err(ApiError::new(
                    Code::NotFound,
                    "Tournament not found or has ended.",
                ));
            }
            let submission = submission(&claims, record, "Error writing score to tournament.")?;
            let written = state
                .leaderboards
                .write_tournament(Some(claims.user_id), &request.tournament_id, submission)
                .await
                .map_err(|e| e.into_core(TournamentCall::Write))?;
            let record = record_view(written);
            Ok(record)
        },
    )
    .await
}

async fn delete_record(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    PathParams(tournament_id): PathParams<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let request = TournamentIdRequest { tournament_id };
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around_empty(
        &state,
        Hook::DeleteTournamentRecord,
        ctx,
        request,
        async |request| {
            if request.tournament_id.is_empty() {
                return Err(ApiError::new(
                    Code::InvalidArgument,
                    "Invalid tournament ID.",
                ));
            }
            state
                .leaderboards
                .delete_tournament_record(
                    Some(claims.user_id),
                    &request.tournament_id,
                    claims.user_id,
                )
                .await
                .map_err(|e| e.into_core(TournamentCall::DeleteRecord))?;
            Ok(())
        },
    )
    .await
}

async fn join(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    PathParams(tournament_id): PathParams<String>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let request = TournamentIdRequest { tournament_id };
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around_empty(
        &state,
        Hook::JoinTournament,
        ctx,
        request,
        async |request| {
            state
                .leaderboards
                .join_tournament(&request.tournament_id, claims.user_id, &claims.username)
                .await
                .map_err(|e| e.into_core(TournamentCall::Join))?;
            Ok(())
        },
    )
    .await
}

async fn around_owner(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    PathParams((tournament_id, owner_id)): PathParams<(String, String)>,
    uri: Uri,
) -> Result<Json<TournamentRecordList>, ApiError> {
    let mut request = AroundOwnerRequest {
        tournament_id,
        owner_id,
        ..AroundOwnerRequest::default()
    };
    for (name, value) in query_pairs(uri.query().unwrap_or_default())? {
        match name.as_str() {
            "limit" => request.limit = Some(unsigned(&name, &value)?),
            "cursor" => request.cursor = value,
            "expiry" => request.expiry = Some(signed(&name, &value)?),
            _ => {}
        }
    }
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around(
        &state,
        Hook::ListTournamentRecordsAroundOwner,
        ctx,
        request,
        async |request| {
            if request.tournament_id.is_empty() {
                return Err(ApiError::new(
                    Code::InvalidArgument,
                    "Invalid tournament ID.",
                ));
            }
            let limit = match request.limit {
                None => 100,
                // In range by the guard.
                Some(limit) if (1..=100).contains(&limit) => limit as usize,
                Some(_) => {
                    return Err(ApiError::new(
                        Code::InvalidArgument,
                        "Invalid limit - limit must be between 1 and 100.",
                    ));
                }
            };
            let owner = haystack_owner(&request.owner_id)?;
            let list = state
                .leaderboards
                .tournament_haystack(
                    &request.tournament_id,
                    owner,
                    limit,
                    &request.cursor,
                    request.expiry.unwrap_or(0),
                )
                .await
                .map_err(|e| e.into_core(TournamentCall::AroundOwner))?;
            let list = records_view(list);
            Ok(list)
        },
    )
    .await
}

/// A tournament as Nakama sends it (`api.Tournament`).
pub(crate) fn tournament_view(view: &TournamentView) -> Tournament {
    let row = &view.board.row;
    let seconds = |s: i64| {
        Some(Timestamp {
            seconds: s,
            nanos: 0,
        })
    };
    let unsigned = |v: i64| u32::try_from(v).unwrap_or(0);
    Tournament {
        id: row.id.clone(),
        title: row.title.clone(),
        description: row.description.clone(),
        category: u32::try_from(row.category).unwrap_or(0),
        sort_order: u32::from(row.sort_order.code() != 0),
        size: u32::try_from(view.size).unwrap_or(0),
        max_size: u32::try_from(row.max_size).unwrap_or(0),
        max_num_score: u32::try_from(row.max_num_score).unwrap_or(0),
        can_enter: view.can_enter,
        end_active: unsigned(view.end_active),
        next_reset: unsigned(view.next_reset),
        metadata: row.metadata.clone(),
        create_time: seconds(row.create_time_ms.div_euclid(1000)),
        start_time: seconds(row.start_time),
        end_time: (row.end_time > 0).then_some(Timestamp {
            seconds: row.end_time,
            nanos: 0,
        }),
        duration: u32::try_from(row.duration).unwrap_or(0),
        start_active: unsigned(view.start_active),
        prev_reset: unsigned(view.prev_reset),
        operator: i32::from(row.operator.code()) + 1,
        authoritative: view.show_authoritative && row.authoritative,
        join_required: view.show_join_required && row.join_required,
    }
}

fn records_view(list: RecordList) -> TournamentRecordList {
    TournamentRecordList {
        records: list.records.into_iter().map(record_view).collect(),
        owner_records: list.owner_records.into_iter().map(record_view).collect(),
        next_cursor: list.next_cursor,
        prev_cursor: list.prev_cursor,
        rank_count: list.rank_count,
    }
}

fn clamp_i32(value: i64) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

/// Nakama's test: valid JSON whose first non-space byte is `{`.
fn is_json_object(text: &str) -> bool {
    text.trim_start().starts_with('{') && serde_json::from_str::<serde_json::Value>(text).is_ok()
}

/// A query parameter of an unsigned wrapper type (`UInt32Value`).
fn unsigned(name: &str, value: &str) -> Result<i64, ApiError> {
    value
        .parse::<u32>()
        .map(i64::from)
        .map_err(|_| bad_number(name, value))
}

/// A query parameter of a signed wrapper type (`Int32Value`, `Int64Value`).
fn signed(name: &str, value: &str) -> Result<i64, ApiError> {
    value.parse::<i64>().map_err(|_| bad_number(name, value))
}

fn bad_number(name: &str, value: &str) -> ApiError {
    ApiError::new(
        Code::InvalidArgument,
        format!("Query parameter '{name}' must be a number, got '{value}'."),
    )
}
