//! What leaderboard calls fail with. Each edge words these its own way (Nakama's REST
//! messages differ per call, its runtime functions wrap its internal texts), so this enum
//! stays close to Nakama's internal errors and the edges map it.

use metafi_storage::StorageError;
use thiserror::Error;

use crate::CoreError;

#[derive(Debug, Error)]
pub enum LeaderboardError {
    /// Nakama's `ErrLeaderboardNotFound`.
    #[error("leaderboard not found")]
    NotFound,
    /// Nakama's `ErrLeaderboardAuthoritative`: a client wrote to an authoritative board.
    #[error("leaderboard only allows authoritative submissions")]
    Authoritative,
    /// Nakama's `ErrLeaderboardInvalidCursor`.
    #[error("leaderboard cursor invalid")]
    InvalidCursor,
    /// A reset schedule that is not a cron expression.
    #[error("expects reset schedule to be a valid CRON expression")]
    Schedule,
    /// No ranks for that rank (ranks disabled, or past the last record).
    #[error("{0}")]
    Rank(String),
    /// Storage failed or refused the input.
    #[error("{0}")]
    Storage(#[source] CoreError),
}

impl LeaderboardError {
    pub(crate) fn storage(operation: &'static str, e: StorageError) -> Self {
        LeaderboardError::Storage(CoreError::storage(operation, e))
    }

    /// The error as a REST call reports it, with Nakama's texts for that call: `call` picks
    /// the wording of the permission and internal errors.
    pub fn into_core(self, call: RestCall) -> CoreError {
        match self {
            LeaderboardError::NotFound => CoreError::not_found("Leaderboard not found."),
            LeaderboardError::Authoritative => CoreError::permission_denied(match call {
                RestCall::Delete => "Leaderboard only allows authoritative score deletions.",
                _ => "Leaderboard only allows authoritative score submissions.",
            }),
            LeaderboardError::InvalidCursor if call == RestCall::List => {
                CoreError::invalid("Cursor is invalid or expired.")
            }
            // Nakama answers a refused score (below zero) as an internal error too.
            LeaderboardError::Storage(e @ CoreError::Unavailable { .. }) => e,
            other => CoreError::Status {
                code: metafi_proto::Code::Internal,
                message: match call {
                    RestCall::Delete => "Error deleting score from leaderboard.",
                    RestCall::List => "Error listing records from leaderboard.",
                    RestCall::Write => "Error writing score to leaderboard.",
                    RestCall::AroundOwner => "Error querying records from leaderboard.",
                }
                .to_owned(),
            }
            .with_cause_logged(&other),
        }
    }
}

/// Which REST call an error is reported for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestCall {
    Write,
    Delete,
    List,
    AroundOwner,
}

trait LogCause {
    fn with_cause_logged(self, cause: &LeaderboardError) -> Self;
}

impl LogCause for CoreError {
    fn with_cause_logged(self, cause: &LeaderboardError) -> Self {
        tracing::error!(error = %cause, source = ?std::error::Error::source(cause), "leaderboard call failed");
        self
    }
}
