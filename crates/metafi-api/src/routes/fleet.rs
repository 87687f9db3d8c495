//! MetaFi's fleet calls (not Nakama's), authenticated with the server key (HTTP basic auth, as
//! the authenticate calls): `POST /v2/metafi/drain` asks the node to drain — no new matches or
//! sockets, running matches get `match_terminate` with `shutdown.grace_period_sec`, then the
//! process exits, exactly as on SIGTERM — and `GET /v2/metafi/load` reports the node's load
//! against its latency objective (`docs/MATCHES.md`, "Objective, placement, admission" and
//! "Drain").

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};

use crate::{ApiState, ServerKeyAuth};

pub(crate) fn routes() -> Router<ApiState> {
    Router::new()
        .route("/v2/metafi/drain", post(drain))
        .route("/v2/metafi/load", get(load))
}

async fn drain(
    _key: ServerKeyAuth,
    State(state): State<ApiState>,
) -> (StatusCode, Json<serde_json::Value>) {
    let first = state.matches.request_drain();
    if first {
        tracing::info!(
            matches = state.matches.count(),
            "drain requested: no new matches; the node stops gracefully"
        );
    }
    (
        StatusCode::ACCEPTED,
        Json(serde_json::json!({
            "draining": true,
            "matches": state.matches.count(),
        })),
    )
}

async fn load(_key: ServerKeyAuth, State(state): State<ApiState>) -> Json<serde_json::Value> {
    let load = state.matches.load();
    Json(serde_json::json!({
        "cpu": load.cpu,
        "cpu_objective": load.cpu_objective,
        "late_threads": load.late_threads,
        "late_threads_by_others": load.late_threads_by_others,
        "threads": load.threads,
        "matches": load.matches,
        "relayed": state.matches.relayed_count(),
        "full": load.full,
        "draining": load.draining,
        "moves": load.moves,
        "moves_refused_not_movable": load.moves_refused_not_movable,
        "moves_refused_no_room": load.moves_refused_no_room,
    }))
}
