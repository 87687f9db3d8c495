//! `GET /v2/matchmaker/stats`: the matchmaker's tickets waiting, its oldest ticket, and its
//! ten most recent completions (Nakama's `GetMatchmakerStats`).

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use metafi_core::Hook;
use metafi_proto::api::{MatchmakerCompletionStats, MatchmakerStats};
use metafi_proto::wkt::Timestamp;

use crate::client_address::ClientAddress;
use crate::hooks;
use crate::{ApiError, ApiState, SessionAuth};

pub(crate) fn routes() -> Router<ApiState> {
    Router::new().route("/v2/matchmaker/stats", get(stats))
}

async fn stats(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
) -> Result<Json<MatchmakerStats>, ApiError> {
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around_without_input(&state, Hook::GetMatchmakerStats, ctx, async || {
        let stats = state.matchmaking.stats();
        Ok(MatchmakerStats {
            ticket_count: i32::try_from(stats.tickets).unwrap_or(i32::MAX),
            oldest_ticket_create_time: stats.oldest_created_ms.map(Timestamp::from_millis),
            completions: stats
                .completions
                .iter()
                .map(|c| MatchmakerCompletionStats {
                    create_time: Some(Timestamp::from_millis(c.created_ms)),
                    complete_time: Some(Timestamp::from_millis(c.completed_ms)),
                })
                .collect(),
        })
    })
    .await
}
