//! Tournaments: a tournament is a leaderboard row with a duration (see
//! [`Leaderboard`](crate::Leaderboard)); its records live in `leaderboard_record` as any board's.
//! What differs is the write: every submission counts towards `num_score` (limited by the
//! record's `max_num_score`), a tournament with `join_required` only updates records made by
//! a join, and a tournament with a max size counts its entrants in the row's `size` column
//! (Nakama's `leaderboard.size`), refusing new entrants once full.
//!
//! Both backends decide with [`plan_tournament_write`], so the rules mean one thing.

use std::collections::HashMap;

use async_trait::async_trait;
use uuid::Uuid;

use crate::leaderboard::{apply_operator, initial_scores};
use crate::{LeaderboardRecord, RecordWrite, StorageError};

/// Nakama's "no max size": `max_size` holds `i32::MAX` when a tournament was created without
/// one.
pub const NO_MAX_SIZE: i32 = i32::MAX;

/// Whether a tournament counts entrants (Nakama's `HasMaxSize`).
pub fn has_max_size(max_size: i32) -> bool {
    max_size > 0 && max_size != NO_MAX_SIZE
}

/// A submission to a tournament.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TournamentWrite {
    /// The record write (its `expiry_time` is the tournament period's).
    pub write: RecordWrite,
    /// Only an owner who joined (has a record in the period) may write.
    pub join_required: bool,
    /// The tournament's `max_num_score`, copied into a new record.
    pub max_num_score: i32,
    /// Whether a new entrant needs room (`size < max_size`) and counts in `size`.
    pub has_max_size: bool,
}

/// Why a tournament write was refused; nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TournamentRefusal {
    /// Nakama's `ErrTournamentWriteJoinRequired`.
    JoinRequired,
    /// Nakama's `ErrTournamentWriteMaxNumScoreReached`.
    MaxNumScoreReached,
    /// Nakama's `ErrTournamentMaxSizeReached`.
    MaxSizeReached,
}

/// What a tournament write did: the record as stored now, or a refusal.
pub type TournamentWritten = Result<LeaderboardRecord, TournamentRefusal>;

/// What a join did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinOutcome {
    /// A record with no score was made for the owner.
    Joined,
    /// The owner already had a record in the period; nothing changed.
    AlreadyJoined,
    /// The tournament is full; nothing changed.
    Full,
}

/// What a backend does with a submission, given the owner's current record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TournamentPlan {
    /// Insert a new record with these scores (`num_score` 1).
    Insert {
        score: i64,
        subscore: i64,
        /// Take a place first (`size < max_size`), refusing with `MaxSizeReached` when full.
        grow_size: bool,
    },
    /// Update the record: these scores, `num_score` + 1, username and metadata when given.
    Update {
        score: i64,
        subscore: i64,
        grow_size: bool,
    },
    /// Leave the record as it is and return it (a joined owner at the attempt limit: Nakama's
    /// update matches no row and the record is read back unchanged).
    Keep,
    /// Refuse.
    Refuse(TournamentRefusal),
}

/// Nakama's tournament write rules (`TournamentRecordWrite`): `current` is the owner's
/// record in the period as `(score, subscore, num_score, max_num_score)`.
pub fn plan_tournament_write(
    w: &TournamentWrite,
    current: Option<(i64, i64, i32, i32)>,
) -> TournamentPlan {
    let submitted = (w.write.score, w.write.subscore);
    let Some((score, subscore, num_score, max_num_score)) = current else {
        if w.join_required {
            return TournamentPlan::Refuse(TournamentRefusal::JoinRequired);
        }
        let (score, subscore) = initial_scores(w.write.operator, submitted);
        return TournamentPlan::Insert {
            score,
            subscore,
            grow_size: w.has_max_size,
        };
    };
    // Every submission counts, even one that leaves the scores as they are.
    let (score, subscore) = apply_operator(
        w.write.operator,
        w.write.sort_order,
        (score, subscore),
        submitted,
    )
    .unwrap_or((score, subscore));
    if w.join_required {
        if max_num_score == 0 || num_score < max_num_score {
            return TournamentPlan::Update {
                score,
                subscore,
                grow_size: false,
            };
        }
        return TournamentPlan::Keep;
    }
    let counted = i64::from(num_score) + 1;
    if max_num_score > 0 && counted > i64::from(max_num_score) {
        return TournamentPlan::Refuse(TournamentRefusal::MaxNumScoreReached);
    }
    TournamentPlan::Update {
        score,
        subscore,
        grow_size: w.has_max_size && counted <= 1,
    }
}

/// Tournament-only operations on the leaderboard tables.
#[async_trait]
pub trait TournamentStore: Send + Sync {
    /// Joins an owner to a tournament's period: a record with no score, `num_score` 0 and the
    /// tournament's `max_num_score`. With `has_max_size`, takes a place (`size < max_size`)
    /// first; a full tournament is left unchanged.
    #[allow(clippy::too_many_arguments)]
    async fn join_tournament(
        &self,
        tournament_id: &str,
        expiry_time: i64,
        owner_id: Uuid,
        username: Option<String>,
        max_num_score: i32,
        has_max_size: bool,
        now_ms: i64,
    ) -> Result<JoinOutcome, StorageError>;

    /// Writes a submission atomically following [`plan_tournament_write`]. A score below
    /// zero is refused as on leaderboards (`StorageError::Invalid`), nothing written.
    async fn write_tournament_record(
        &self,
        write: TournamentWrite,
    ) -> Result<TournamentWritten, StorageError>;

    /// Adds `count` (may be negative) to the `max_num_score` of an owner's record in a
    /// period. A missing record is not an error. Returns whether a record changed.
    async fn add_tournament_attempts(
        &self,
        tournament_id: &str,
        expiry_time: i64,
        owner_id: Uuid,
        count: i32,
    ) -> Result<bool, StorageError>;

    /// Deletes an owner's record of a period; with `has_max_size` a deleted record frees its
    /// place (`size` - 1). Returns whether it existed.
    async fn delete_tournament_record(
        &self,
        tournament_id: &str,
        expiry_time: i64,
        owner_id: Uuid,
        has_max_size: bool,
    ) -> Result<bool, StorageError>;

    /// The `size` of these tournaments (missing ids are left out).
    async fn tournament_sizes(&self, ids: &[String]) -> Result<HashMap<String, i32>, StorageError>;

    /// Sets a tournament's `size` back to 0 (a new period starts empty).
    async fn reset_tournament_size(&self, tournament_id: &str) -> Result<(), StorageError>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Operator, SortOrder};

    fn write(operator: Operator, score: i64, join_required: bool) -> TournamentWrite {
        TournamentWrite {
            write: RecordWrite {
                leaderboard_id: "t".into(),
                owner_id: Uuid::nil(),
                username: None,
                score,
                subscore: 0,
                metadata: None,
                operator,
                sort_order: SortOrder::Descending,
                expiry_time: 0,
                now_ms: 0,
            },
            join_required,
            max_num_score: 2,
            has_max_size: true,
        }
    }

    #[test]
    fn a_first_write_inserts_and_takes_a_place() {
        assert_eq!(
            plan_tournament_write(&write(Operator::Best, 5, false), None),
            TournamentPlan::Insert {
                score: 5,
                subscore: 0,
                grow_size: true
            }
        );
        assert_eq!(
            plan_tournament_write(&write(Operator::Decrement, 5, false), None),
            TournamentPlan::Insert {
                score: 0,
                subscore: 0,
                grow_size: true
            }
        );
    }

    #[test]
    fn join_required_needs_a_record() {
        assert_eq!(
            plan_tournament_write(&write(Operator::Best, 5, true), None),
            TournamentPlan::Refuse(TournamentRefusal::JoinRequired)
        );
        // A joined record (num_score 0) is updated without taking another place.
        assert_eq!(
            plan_tournament_write(&write(Operator::Best, 5, true), Some((0, 0, 0, 2))),
            TournamentPlan::Update {
                score: 5,
                subscore: 0,
                grow_size: false
            }
        );
        // At the limit a joined owner's write changes nothing, without an error (Nakama).
        assert_eq!(
            plan_tournament_write(&write(Operator::Best, 5, true), Some((1, 0, 2, 2))),
            TournamentPlan::Keep
        );
    }

    #[test]
    fn every_attempt_counts_up_to_the_limit() {
        // A worse score still counts as an attempt.
        assert_eq!(
            plan_tournament_write(&write(Operator::Best, 1, false), Some((9, 0, 1, 2))),
            TournamentPlan::Update {
                score: 9,
                subscore: 0,
                grow_size: false
            }
        );
        assert_eq!(
            plan_tournament_write(&write(Operator::Best, 10, false), Some((9, 0, 2, 2))),
            TournamentPlan::Refuse(TournamentRefusal::MaxNumScoreReached)
        );
        // No limit.
        assert_eq!(
            plan_tournament_write(&write(Operator::Increment, 1, false), Some((9, 0, 7, 0))),
            TournamentPlan::Update {
                score: 10,
                subscore: 0,
                grow_size: false
            }
        );
    }

    #[test]
    fn sizes() {
        assert!(!has_max_size(NO_MAX_SIZE));
        assert!(!has_max_size(0));
        assert!(has_max_size(3));
    }
}
