//! What tournament calls fail with: Nakama's internal tournament errors (their texts are what
//! server code sees), and each REST call's wording of them (`server/api_tournament.go`).

use metafi_proto::Code;
use thiserror::Error;

use super::LeaderboardError;
use crate::CoreError;

#[derive(Debug, Error)]
pub enum TournamentError {
    /// Nakama's `ErrTournamentNotFound`.
    #[error("tournament not found")]
    NotFound,
    /// Nakama's `ErrLeaderboardNotFound`, which its haystack reports for a tournament.
    #[error("leaderboard not found")]
    LeaderboardNotFound,
    /// Nakama's `ErrTournamentAuthoritative`.
    #[error("tournament only allows authoritative submissions")]
    Authoritative,
    /// Nakama's `ErrTournamentMaxSizeReached`.
    #[error("tournament max size reached")]
    MaxSizeReached,
    /// Nakama's `ErrTournamentOutsideDuration`.
    #[error("tournament outside of duration")]
    OutsideDuration,
    /// Nakama's `ErrTournamentWriteMaxNumScoreReached`.
    #[error("max number score count reached")]
    MaxNumScoreReached,
    /// Nakama's `ErrTournamentWriteJoinRequired`.
    #[error("required to join before writing tournament record")]
    JoinRequired,
    /// A leaderboard (not a tournament) has the id.
    #[error("cannot create tournament as leaderboard is already in use")]
    InUse,
    /// A creation setting Nakama refuses (`checkTournamentConfig`'s texts).
    #[error("{0}")]
    Config(String),
    /// Nakama's `ErrLeaderboardInvalidCursor`.
    #[error("leaderboard cursor invalid")]
    InvalidCursor,
    /// No ranks for that rank.
    #[error("{0}")]
    Rank(String),
    /// Storage failed or refused the input.
    #[error("{0}")]
    Storage(#[source] CoreError),
}

impl From<LeaderboardError> for TournamentError {
    fn from(e: LeaderboardError) -> Self {
        match e {
            LeaderboardError::NotFound => TournamentError::NotFound,
            LeaderboardError::InvalidCursor => TournamentError::InvalidCursor,
            LeaderboardError::Rank(message) => TournamentError::Rank(message),
            LeaderboardError::Storage(e) => TournamentError::Storage(e),
            LeaderboardError::Authoritative => TournamentError::Authoritative,
            e @ LeaderboardError::Schedule => TournamentError::Config(e.to_string()),
        }
    }
}

/// Which REST call an error is reported for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TournamentCall {
    List,
    ListRecords,
    Write,
    Join,
    AroundOwner,
    DeleteRecord,
}

impl TournamentError {
    /// The error as a REST call reports it, with Nakama's status and text for that call.
    pub fn into_core(self, call: TournamentCall) -> CoreError {
        use TournamentCall as C;
        use TournamentError as E;
        if let E::Storage(e @ CoreError::Unavailable { .. }) = self {
            return e;
        }
        let (code, message) = match (call, &self) {
            (C::List, E::InvalidCursor) => (Code::Unknown, "leaderboard cursor invalid"),
            (C::List, _) => (Code::Internal, "Error listing tournaments."),
            (C::ListRecords, E::NotFound) => (Code::NotFound, "Tournament not found."),
            (C::ListRecords, E::OutsideDuration) => (Code::NotFound, "Tournament has ended."),
            (C::ListRecords, E::InvalidCursor) => {
                (Code::InvalidArgument, "Cursor is invalid or expired.")
            }
            (C::ListRecords, _) => (Code::Internal, "Error listing records from tournament."),
            (C::Write, E::MaxSizeReached) => {
                (Code::FailedPrecondition, "Tournament has reached max size.")
            }
            (C::Write, E::Authoritative) => (
                Code::PermissionDenied,
                "Tournament only allows authoritative score submissions.",
            ),
            (C::Write, E::MaxNumScoreReached) => (
                Code::FailedPrecondition,
                "Reached allowed max number of score attempts.",
            ),
            (C::Write, E::JoinRequired) => (
                Code::FailedPrecondition,
                "Must join tournament before attempting to write value.",
            ),
            (C::Write, E::OutsideDuration) => (
                Code::FailedPrecondition,
                "Tournament is not active and cannot accept new scores.",
            ),
            (C::Write, _) => (Code::Internal, "Error writing score to tournament."),
            (C::Join, E::NotFound) => (Code::NotFound, "Tournament not found."),
            (C::Join, E::MaxSizeReached) => (
                Code::InvalidArgument,
                "Tournament cannot be joined as it has reached its max size.",
            ),
            (C::Join, E::OutsideDuration) => (
                Code::InvalidArgument,
                "Tournament is not active and cannot accept new joins.",
            ),
            (C::Join, _) => (Code::Internal, "Error while trying to join tournament."),
            (C::AroundOwner, E::LeaderboardNotFound) => (Code::NotFound, "Tournament not found."),
            (C::AroundOwner, _) => (Code::Internal, "Error querying records from leaderboard."),
            // Nakama's delete call compares its leaderboard errors, which the tournament code
            // never returns: every failure reads as this internal error.
            (C::DeleteRecord, _) => (Code::Internal, "Error deleting score from tournament."),
        };
        if code == Code::Internal {
            tracing::error!(error = %self, source = ?std::error::Error::source(&self), "tournament call failed");
        }
        CoreError::Status {
            code,
            message: message.to_owned(),
        }
    }
}
