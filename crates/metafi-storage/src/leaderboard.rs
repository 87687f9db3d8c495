//! Leaderboards and their records (Nakama's `leaderboard` and `leaderboard_record` tables).
//!
//! A leaderboard row carries the tournament columns too (Nakama stores a tournament as a
//! leaderboard with a duration, a start and an end time): leaderboards leave them at their
//! defaults, tournaments fill them in.
//!
//! Records are keyed by `(leaderboard_id, expiry_time, owner_id)`: a board with a reset
//! schedule starts a fresh set of records every period, and the old ones stay readable with an
//! expiry override, as in Nakama. Rank order is `(score, subscore, owner_id)`, ascending or
//! descending as a whole.

use async_trait::async_trait;
use uuid::Uuid;

use crate::StorageError;

/// Which way a board ranks: Nakama's `sort_order` column (0 ascending, 1 descending).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortOrder {
    /// Lower scores rank first.
    Ascending,
    /// Higher scores rank first (Nakama's default).
    Descending,
}

impl SortOrder {
    /// The stored code.
    pub fn code(self) -> i16 {
        match self {
            SortOrder::Ascending => 0,
            SortOrder::Descending => 1,
        }
    }

    /// From a stored code; anything but 0 is descending, as Nakama reads it.
    pub fn from_code(code: i16) -> SortOrder {
        if code == 0 {
            SortOrder::Ascending
        } else {
            SortOrder::Descending
        }
    }
}

/// How a submission combines with the owner's record: Nakama's `operator` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operator {
    /// Keep the better score and, separately, the better subscore.
    Best,
    /// Replace both.
    Set,
    /// Add to both.
    Increment,
    /// Subtract from both, never below zero.
    Decrement,
}

impl Operator {
    /// The stored code (best 0, set 1, increment 2, decrement 3).
    pub fn code(self) -> i16 {
        match self {
            Operator::Best => 0,
            Operator::Set => 1,
            Operator::Increment => 2,
            Operator::Decrement => 3,
        }
    }

    /// From a stored code; unknown codes read as best, Nakama's default.
    pub fn from_code(code: i16) -> Operator {
        match code {
            1 => Operator::Set,
            2 => Operator::Increment,
            3 => Operator::Decrement,
            _ => Operator::Best,
        }
    }
}

/// A leaderboard (or, with the tournament fields set, a tournament).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaderboard {
    pub id: String,
    /// Only the server may write or delete records.
    pub authoritative: bool,
    pub sort_order: SortOrder,
    pub operator: Operator,
    /// A cron expression, or empty for a board that never resets.
    pub reset_schedule: String,
    /// JSON object text.
    pub metadata: String,
    pub create_time_ms: i64,
    /// Whether the server keeps ranks for it in memory.
    pub enable_ranks: bool,
    /// Tournament columns: zero/empty on a plain leaderboard.
    pub category: i32,
    pub description: String,
    pub duration: i32,
    /// Unix seconds, 0 for none.
    pub start_time: i64,
    /// Unix seconds, 0 for none.
    pub end_time: i64,
    pub join_required: bool,
    pub max_size: i32,
    pub max_num_score: i32,
    pub title: String,
}

impl Leaderboard {
    /// A plain leaderboard with the tournament columns at their defaults.
    pub fn new(id: impl Into<String>, sort_order: SortOrder, operator: Operator) -> Self {
        Leaderboard {
            id: id.into(),
            authoritative: false,
            sort_order,
            operator,
            reset_schedule: String::new(),
            metadata: "{}".to_owned(),
            create_time_ms: 0,
            enable_ranks: false,
            category: 0,
            description: String::new(),
            duration: 0,
            start_time: 0,
            end_time: 0,
            join_required: false,
            max_size: 0,
            max_num_score: 0,
            title: String::new(),
        }
    }

    /// Nakama's test: a tournament has a duration.
    pub fn is_tournament(&self) -> bool {
        self.duration > 0
    }
}

/// One owner's record in one period of a board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderboardRecord {
    pub leaderboard_id: String,
    pub owner_id: Uuid,
    pub username: Option<String>,
    pub score: i64,
    pub subscore: i64,
    /// Submissions that changed the record.
    pub num_score: i32,
    pub max_num_score: i32,
    /// JSON object text.
    pub metadata: String,
    pub create_time_ms: i64,
    pub update_time_ms: i64,
    /// Unix seconds when the period ends; 0 for a board that never resets.
    pub expiry_time: i64,
}

/// A submission to a board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordWrite {
    pub leaderboard_id: String,
    pub owner_id: Uuid,
    /// `None` keeps the stored username.
    pub username: Option<String>,
    pub score: i64,
    pub subscore: i64,
    /// `None` keeps the stored metadata (`{}` for a new record).
    pub metadata: Option<String>,
    pub operator: Operator,
    /// The board's order (what "best" means).
    pub sort_order: SortOrder,
    /// The period the record belongs to (Unix seconds, 0 for none).
    pub expiry_time: i64,
    pub now_ms: i64,
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordWritten {
    /// The record as stored now.
    pub record: LeaderboardRecord,
    /// False when the submission did not change the record (a worse score on a "best" board,
    /// the same score on a "set" board, a zero increment): nothing was written.
    pub changed: bool,
}

/// A page query over a board's period in rank order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordQuery {
    pub leaderboard_id: String,
    pub expiry_time: i64,
    /// Walk `(score, subscore, owner_id)` upwards (true) or downwards.
    pub ascending: bool,
    /// Start strictly after this key in the walking direction.
    pub after: Option<(i64, i64, Uuid)>,
    pub limit: usize,
}

/// The rank key of a record, for rebuilding rank caches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankEntry {
    pub owner_id: Uuid,
    pub score: i64,
    pub subscore: i64,
    pub expiry_time: i64,
}

/// Applies Nakama's operators: the new `(score, subscore)`, or `None` when the submission
/// leaves the record unchanged (Nakama's `WHERE` filter on its upsert). Both backends use it
/// (PostgreSQL in SQL with the same rules), so "best", "set", "increment" and "decrement"
/// mean one thing. Overflow saturates.
pub fn apply_operator(
    operator: Operator,
    order: SortOrder,
    current: (i64, i64),
    submitted: (i64, i64),
) -> Option<(i64, i64)> {
    let (score, subscore) = current;
    let (s, ss) = submitted;
    match operator {
        Operator::Increment | Operator::Decrement if s == 0 && ss == 0 => None,
        Operator::Increment => Some((score.saturating_add(s), subscore.saturating_add(ss))),
        Operator::Decrement => Some((
            score.saturating_sub(s).max(0),
            subscore.saturating_sub(ss).max(0),
        )),
        Operator::Set if current == submitted => None,
        Operator::Set => Some(submitted),
        Operator::Best => match order {
            SortOrder::Ascending if score > s || subscore > ss => {
                Some((score.min(s), subscore.min(ss)))
            }
            SortOrder::Descending if score < s || subscore < ss => {
                Some((score.max(s), subscore.max(ss)))
            }
            _ => None,
        },
    }
}

/// The `(score, subscore)` of a new record: a decrement starts from zero, as in Nakama.
pub fn initial_scores(operator: Operator, submitted: (i64, i64)) -> (i64, i64) {
    match operator {
        Operator::Decrement => (0, 0),
        _ => submitted,
    }
}

/// Persistent leaderboards and records.
#[async_trait]
pub trait LeaderboardStore: Send + Sync {
    /// Creates a board unless one with that id exists. Returns the stored board (the existing
    /// one when it was there: creation is idempotent) and whether this call created it.
    async fn create_leaderboard(
        &self,
        board: Leaderboard,
    ) -> Result<(Leaderboard, bool), StorageError>;

    /// Deletes a board and all its records. Returns whether it existed.
    async fn delete_leaderboard(&self, id: &str) -> Result<bool, StorageError>;

    /// Every board, oldest first (by `create_time`, then id).
    async fn leaderboards(&self) -> Result<Vec<Leaderboard>, StorageError>;

    /// Sets a board's `enable_ranks` to false. Returns whether the board exists.
    async fn disable_leaderboard_ranks(&self, id: &str) -> Result<bool, StorageError>;

    /// Writes a submission atomically (read, combine with [`apply_operator`], write). An
    /// unchanged record is returned as stored with `changed: false`.
    async fn write_record(&self, write: RecordWrite) -> Result<RecordWritten, StorageError>;

    /// Deletes an owner's record of one period. Returns whether it existed.
    async fn delete_record(
        &self,
        leaderboard_id: &str,
        expiry_time: i64,
        owner_id: Uuid,
    ) -> Result<bool, StorageError>;

    /// A page of one period's records in rank-key order (see [`RecordQuery`]).
    async fn list_records(
        &self,
        query: RecordQuery,
    ) -> Result<Vec<LeaderboardRecord>, StorageError>;

    /// The records of these owners in one period (any order; absent owners are skipped).
    async fn records_of_owners(
        &self,
        leaderboard_id: &str,
        expiry_time: i64,
        owners: &[Uuid],
    ) -> Result<Vec<LeaderboardRecord>, StorageError>;

    /// The rank keys of a board's records whose period has not ended at `now_s` (expiry 0 or
    /// later than `now_s`), to rebuild rank caches at start.
    async fn rank_entries(
        &self,
        leaderboard_id: &str,
        now_s: i64,
    ) -> Result<Vec<RankEntry>, StorageError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_follow_nakama() {
        use Operator::*;
        use SortOrder::*;
        // Best takes the better of each column on its own.
        assert_eq!(
            apply_operator(Best, Descending, (10, 5), (8, 9)),
            Some((10, 9))
        );
        assert_eq!(apply_operator(Best, Descending, (10, 5), (8, 1)), None);
        assert_eq!(
            apply_operator(Best, Ascending, (10, 5), (12, 1)),
            Some((10, 1))
        );
        assert_eq!(apply_operator(Best, Ascending, (10, 5), (12, 9)), None);
        assert_eq!(apply_operator(Set, Descending, (10, 5), (10, 5)), None);
        assert_eq!(
            apply_operator(Set, Descending, (10, 5), (1, 2)),
            Some((1, 2))
        );
        assert_eq!(apply_operator(Increment, Descending, (10, 5), (0, 0)), None);
        assert_eq!(
            apply_operator(Increment, Descending, (10, 5), (3, 0)),
            Some((13, 5))
        );
        assert_eq!(
            apply_operator(Decrement, Descending, (10, 5), (3, 9)),
            Some((7, 0))
        );
        assert_eq!(initial_scores(Decrement, (3, 4)), (0, 0));
        assert_eq!(initial_scores(Increment, (3, 4)), (3, 4));
    }
}
