//! Matches: the listing with label, size and tick rate, and for this node's authoritative
//! matches their tick health (last and worst tick time and lateness, overruns, skipped ticks,
//! input queue depth) from the match engine's own counters; a match's signal.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use metafi_api::ApiError;
use metafi_match::{ListQuery, MatchError, MatchStatsSnapshot};
use metafi_proto::Code;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::body;
use crate::auth::Session;
use crate::{ConsoleState, Perm, audit};

const MAX_LISTED: usize = 1000;

/// `GET /v2/console/match`: Nakama's `MatchList` (`matches` of `{api_match, node}`), each
/// with MetaFi's `stats` when the match is an authoritative one of this node.
pub(crate) async fn list(
    State(state): State<ConsoleState>,
    session: Session,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Read)?;
    Ok(Json(listing(&state)?))
}

pub(crate) fn listing(state: &ConsoleState) -> Result<Value, ApiError> {
    let matches = &state.api.matches;
    let listed = matches
        .list(&ListQuery {
            limit: MAX_LISTED,
            ..ListQuery::default()
        })
        .map_err(match_error)?;
    let stats = matches.stats();
    let entries: Vec<Value> = listed
        .iter()
        .map(|m| {
            let node = m
                .match_id
                .split_once('.')
                .map(|(_, node)| node)
                .unwrap_or_default();
            json!({
                "api_match": {
                    "match_id": m.match_id,
                    "authoritative": m.authoritative,
                    "label": m.label.clone().unwrap_or_default(),
                    "size": m.size,
                    "tick_rate": m.tick_rate.unwrap_or_default(),
                    "handler_name": m.handler_name.clone().unwrap_or_default(),
                },
                "node": node,
                "stats": stats.iter().find(|s| s.match_id == m.match_id).map(stats_json),
            })
        })
        .collect();
    Ok(json!({ "matches": entries }))
}

/// `GET /v2/console/match/{id}` (MetaFi): the match's listing entry and tick statistics.
pub(crate) async fn get(
    State(state): State<ConsoleState>,
    session: Session,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Read)?;
    let info = state
        .api
        .matches
        .get(&id)
        .map_err(match_error)?
        .ok_or_else(|| ApiError::new(Code::NotFound, "Match not found."))?;
    let stats = state
        .api
        .matches
        .stats()
        .into_iter()
        .find(|s| s.match_id == info.match_id);
    Ok(Json(json!({
        "api_match": {
            "match_id": info.match_id,
            "authoritative": info.authoritative,
            "label": info.label.unwrap_or_default(),
            "size": info.size,
            "tick_rate": info.tick_rate.unwrap_or_default(),
            "handler_name": info.handler_name.unwrap_or_default(),
        },
        "stats": stats.as_ref().map(stats_json),
    })))
}

fn stats_json(s: &MatchStatsSnapshot) -> Value {
    json!({
        "runtime": s.runtime,
        "executor_thread": s.executor_thread,
        "presences": s.presences,
        "pending_joins": s.pending_joins,
        "ticks": s.ticks,
        "last_tick_seconds": s.last_tick_seconds,
        "max_tick_seconds": s.max_tick_seconds,
        "last_lateness_seconds": s.last_lateness_seconds,
        "max_lateness_seconds": s.max_lateness_seconds,
        "overruns": s.overruns,
        "skipped_ticks": s.skipped_ticks,
        "dropped_inputs": s.dropped_inputs,
        "input_queue_depth": s.input_queue_depth,
        "create_time_ms": s.create_time_ms,
    })
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct Signal {
    #[serde(default)]
    data: String,
}

/// `POST /v2/console/match/{id}/signal` (MetaFi): runs the handler's `match_signal` with
/// `data`; answers `{"result": …}`.
pub(crate) async fn signal(
    State(state): State<ConsoleState>,
    session: Session,
    Path(id): Path<String>,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Develop)?;
    let request: Signal = body(&bytes)?;
    let result = state
        .api
        .matches
        .signal(&id, request.data.clone())
        .await
        .map_err(match_error)?;
    audit::record(
        &state,
        &session,
        "match.signal",
        &id,
        json!({ "data": request.data }),
    )
    .await;
    Ok(Json(json!({ "result": result })))
}

/// `GET /v2/console/match/{id}/state`: Nakama's `MatchState` — `presences` (realtime
/// `UserPresence`: `user_id`, `session_id`, `username`, plus MetaFi's `node`), `tick` (loop
/// executions so far; `"0"` for a relayed match) and `state` (always `""`: MetaFi's handlers do
/// not expose their state as text). Unlike Nakama, a relayed match lists its members.
pub(crate) async fn state(
    State(state): State<ConsoleState>,
    session: Session,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Read)?;
    let found = state.api.matches.presences(&id).map_err(match_error)?;
    let Some(found) = found else {
        // Nakama's answer for a match that is not (or no longer) running.
        return Err(ApiError::new(
            Code::InvalidArgument,
            "Match not found, or match handler already stopped.",
        ));
    };
    Ok(Json(json!({
        "presences": found.presences.iter().map(|p| json!({
            "user_id": p.user_id.to_string(),
            "session_id": p.session_id.to_string(),
            "username": &*p.username,
            "node": &*p.node,
        })).collect::<Vec<_>>(),
        "tick": found.tick.unwrap_or(0).to_string(),
        "state": "",
    })))
}

/// `DELETE /v2/console/match/{id}` (MetaFi; Nakama's console cannot end a match): ends the
/// match as a graceful stop does — `match_terminate` with `console.match_end_grace_sec`, then
/// its players told they left and the listing without it; a relayed match loses every member at
/// once. Answers once the match was told (an authoritative match may tick on during the grace).
pub(crate) async fn end(
    State(state): State<ConsoleState>,
    session: Session,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    session.require(Perm::Develop)?;
    let grace = state.config.match_end_grace;
    state
        .api
        .matches
        .end(&id, grace)
        .await
        .map_err(match_error)?;
    audit::record(
        &state,
        &session,
        "match.end",
        &id,
        json!({ "grace_seconds": grace.as_secs() }),
    )
    .await;
    Ok(crate::auth::empty())
}

fn match_error(e: MatchError) -> ApiError {
    match e {
        MatchError::NotFound => ApiError::new(Code::NotFound, "Match not found."),
        MatchError::InvalidId => ApiError::new(Code::InvalidArgument, "Invalid match ID."),
        MatchError::InvalidArgument { message } => ApiError::new(Code::InvalidArgument, message),
        other => ApiError::new(Code::Internal, other.to_string()),
    }
}
