//! Leaderboards: boards created by server code, records written by clients and the server
//! with Nakama's operators, listings in rank order with cursors, records around an owner, and
//! periodic resets by cron schedule.
//!
//! Boards live in storage and in memory ([`Leaderboards`] loads them at start); ranks of
//! boards with `enable_ranks` live in a [`RankCache`] rebuilt from storage at start and
//! updated on every write and delete, so a rank is right after any sequence of writes. A
//! board with a reset schedule keeps one set of records per period, keyed by the period's end
//! (`expiry_time`, Unix seconds); [`scheduler`] runs the reset hooks when a period ends.
//!
//! Tournaments (`tournaments.rs`) are boards with a duration: the row carries their columns,
//! this service leaves them out of leaderboard listings as Nakama does, and they share the
//! boards, storage and rank cache; [`deadlines`] computes their active windows.

mod cursor;
pub mod deadlines;
mod error;
mod order_set;
mod ranks;
mod records;
pub mod scheduler;
mod tournament_error;
mod tournaments;

use std::collections::HashMap;
use std::hash::{Hash as _, Hasher as _};
use std::sync::Arc;

use metafi_storage::{Leaderboard, LeaderboardRecord, Operator, SortOrder, Storage};
use parking_lot::RwLock;
use uuid::Uuid;

use crate::Clock;
use crate::cron::Schedule;

pub use error::{LeaderboardError, RestCall};
pub use order_set::OrderSet;
pub use ranks::RankCache;
pub use records::{RankedRecord, RecordList};
pub use scheduler::{ResetListener, TournamentEvent, spawn_scheduler};
pub use tournament_error::{TournamentCall, TournamentError};
pub use tournaments::{NewTournament, TournamentFilter, TournamentPage, TournamentView};

/// Owner locks: a record's write and its rank update happen under one of these, picked by
/// hashing `(board, owner)`, so updates of one owner reach the cache in commit order.
const OWNER_LOCKS: usize = 1024;

/// A board in memory: its row and its parsed schedule.
#[derive(Debug, Clone)]
pub struct Board {
    pub row: Leaderboard,
    pub schedule: Option<Schedule>,
}

impl Board {
    fn new(row: Leaderboard) -> Result<Self, LeaderboardError> {
        let schedule = if row.reset_schedule.is_empty() {
            None
        } else {
            Some(Schedule::parse(&row.reset_schedule).map_err(|_| LeaderboardError::Schedule)?)
        };
        Ok(Board { row, schedule })
    }

    /// The end of the period containing `now_s`: the schedule's next time, 0 without one (or
    /// when the schedule never matches again).
    pub fn expiry_at(&self, now_s: i64) -> i64 {
        self.schedule
            .as_ref()
            .and_then(|s| s.next_after(now_s))
            .unwrap_or(0)
    }

    /// Nakama's `prev_reset`: the schedule's last time before now, 0 without one.
    pub fn prev_reset(&self, now_s: i64) -> i64 {
        if self.row.create_time_ms.div_euclid(1000) > now_s {
            return 0;
        }
        self.schedule
            .as_ref()
            .and_then(|s| s.last_before(now_s))
            .unwrap_or(0)
    }
}

/// What server code passes to create a board.
#[derive(Debug, Clone)]
pub struct NewBoard {
    pub id: String,
    pub authoritative: bool,
    pub sort_order: SortOrder,
    pub operator: Operator,
    pub reset_schedule: String,
    /// JSON object text.
    pub metadata: String,
    pub enable_ranks: bool,
}

/// A submission.
#[derive(Debug, Clone)]
pub struct Submission {
    pub owner_id: Uuid,
    /// `None` keeps the stored username.
    pub username: Option<String>,
    pub score: i64,
    pub subscore: i64,
    /// JSON object text; `None` keeps the stored metadata.
    pub metadata: Option<String>,
    /// Replaces the board's operator for this write.
    pub operator: Option<Operator>,
}

#[derive(Debug, Default)]
struct Boards {
    by_id: HashMap<String, Arc<Board>>,
    /// Every board in creation order, for paged listing.
    ordered: Vec<Arc<Board>>,
}

/// The leaderboard service.
pub struct Leaderboards {
    store: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    boards: RwLock<Boards>,
    ranks: RankCache,
    owner_locks: Vec<tokio::sync::Mutex<()>>,
    /// Wakes the reset scheduler when boards change.
    changed: tokio::sync::Notify,
}

impl std::fmt::Debug for Leaderboards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leaderboards").finish_non_exhaustive()
    }
}

impl Leaderboards {
    /// Loads every board and rebuilds the ranks of ranked boards' live periods.
    pub async fn load(
        store: Arc<dyn Storage>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, LeaderboardError> {
        let service = Leaderboards {
            store,
            clock,
            boards: RwLock::new(Boards::default()),
            ranks: RankCache::default(),
            owner_locks: (0..OWNER_LOCKS)
                .map(|_| tokio::sync::Mutex::new(()))
                .collect(),
            changed: tokio::sync::Notify::new(),
        };
        let rows = service
            .store
            .leaderboards()
            .await
            .map_err(|e| LeaderboardError::storage("load leaderboards", e))?;
        let now_s = service.clock.now_secs();
        for row in rows {
            let board = match Board::new(row) {
                Ok(board) => Arc::new(board),
                Err(_) => {
                    tracing::warn!("skipping a stored leaderboard whose schedule does not parse");
                    continue;
                }
            };
            if board.row.enable_ranks {
                service.rebuild_ranks(&board, now_s).await?;
            }
            let mut boards = service.boards.write();
            boards
                .by_id
                .insert(board.row.id.clone(), Arc::clone(&board));
            boards.ordered.push(board);
        }
        Ok(service)
    }

    async fn rebuild_ranks(&self, board: &Board, now_s: i64) -> Result<(), LeaderboardError> {
        let entries = self
            .store
            .rank_entries(&board.row.id, now_s)
            .await
            .map_err(|e| LeaderboardError::storage("load leaderboard ranks", e))?;
        let mut periods: HashMap<i64, Vec<_>> = HashMap::new();
        for e in entries {
            let key = ranks::RankKey::new(board.row.sort_order, e.score, e.subscore, e.owner_id);
            periods
                .entry(e.expiry_time)
                .or_default()
                .push((e.owner_id, key));
        }
        for (expiry, keys) in periods {
            self.ranks.fill_period(&board.row.id, expiry, keys);
        }
        Ok(())
    }

    /// Creates a board; idempotent (an existing board is returned unchanged). Returns the
    /// board and whether this call created it.
    pub async fn create(&self, new: NewBoard) -> Result<(Arc<Board>, bool), LeaderboardError> {
        if let Some(board) = self.get(&new.id) {
            return Ok((board, false));
        }
        let row = Leaderboard {
            authoritative: new.authoritative,
            reset_schedule: new.reset_schedule,
            metadata: new.metadata,
            create_time_ms: self.clock.now_ms(),
            enable_ranks: new.enable_ranks,
            ..Leaderboard::new(new.id, new.sort_order, new.operator)
        };
        self.insert_row(row).await
    }

    /// Stores a new board row (leaderboard or tournament) and adds it to memory; an existing
    /// row with the id is returned instead, with `false`.
    async fn insert_row(&self, row: Leaderboard) -> Result<(Arc<Board>, bool), LeaderboardError> {
        // Parse before storing: a board whose schedule does not parse is never written.
        Board::new(row.clone())?;
        let (stored, created) = self
            .store
            .create_leaderboard(row)
            .await
            .map_err(|e| LeaderboardError::storage("create leaderboard", e))?;
        let board = Arc::new(Board::new(stored)?);
        let mut boards = self.boards.write();
        if let Some(existing) = boards.by_id.get(&board.row.id) {
            return Ok((Arc::clone(existing), false));
        }
        boards
            .by_id
            .insert(board.row.id.clone(), Arc::clone(&board));
        boards.ordered.push(Arc::clone(&board));
        drop(boards);
        self.changed.notify_one();
        Ok((board, created))
    }

    /// Deletes a board and its records; deleting a missing board is not an error.
    pub async fn delete(&self, id: &str) -> Result<bool, LeaderboardError> {
        if self.get(id).is_none() {
            return Ok(false);
        }
        let existed = self
            .store
            .delete_leaderboard(id)
            .await
            .map_err(|e| LeaderboardError::storage("delete leaderboard", e))?;
        let mut boards = self.boards.write();
        boards.by_id.remove(id);
        boards.ordered.retain(|b| b.row.id != id);
        drop(boards);
        self.ranks.remove_board(id);
        self.changed.notify_one();
        Ok(existed)
    }

    /// A board (or tournament) by id.
    pub fn get(&self, id: &str) -> Option<Arc<Board>> {
        self.boards.read().by_id.get(id).cloned()
    }

    /// Leaderboards (not tournaments) by id, in the order asked, missing ones skipped.
    pub fn get_many(&self, ids: &[String]) -> Vec<Arc<Board>> {
        let boards = self.boards.read();
        ids.iter()
            .filter_map(|id| boards.by_id.get(id))
            .filter(|b| !b.row.is_tournament())
            .cloned()
            .collect()
    }

    /// A page of leaderboards (not tournaments) in creation order, and the cursor of the next
    /// page.
    pub fn list(
        &self,
        limit: usize,
        cursor: &str,
    ) -> Result<(Vec<Arc<Board>>, Option<String>), LeaderboardError> {
        let start = if cursor.is_empty() {
            0
        } else {
            cursor::decode_offset(cursor).ok_or(LeaderboardError::InvalidCursor)?
        };
        let boards = self.boards.read();
        let mut page = Vec::with_capacity(limit.min(100));
        let mut next = None;
        for (index, board) in boards.ordered.iter().enumerate().skip(start) {
            if board.row.is_tournament() {
                continue;
            }
            if page.len() >= limit {
                next = Some(cursor::encode_offset(index));
                break;
            }
            page.push(Arc::clone(board));
        }
        Ok((page, next))
    }

    /// Stops keeping ranks for a board (a no-op when already off).
    pub async fn disable_ranks(&self, id: &str) -> Result<(), LeaderboardError> {
        self.get(id)
            .filter(|b| !b.row.is_tournament())
            .ok_or(LeaderboardError::NotFound)?;
        self.set_ranks_off(id).await
    }

    /// Turns a board's ranks off in storage and memory and drops its cached ranks.
    async fn set_ranks_off(&self, id: &str) -> Result<(), LeaderboardError> {
        let board = self.get(id).ok_or(LeaderboardError::NotFound)?;
        self.store
            .disable_leaderboard_ranks(id)
            .await
            .map_err(|e| LeaderboardError::storage("disable leaderboard ranks", e))?;
        let updated = Arc::new(Board {
            row: Leaderboard {
                enable_ranks: false,
                ..board.row.clone()
            },
            schedule: board.schedule.clone(),
        });
        let mut boards = self.boards.write();
        if let Some(slot) = boards.by_id.get_mut(id) {
            *slot = Arc::clone(&updated);
        }
        for slot in boards.ordered.iter_mut().filter(|b| b.row.id == id) {
            *slot = Arc::clone(&updated);
        }
        drop(boards);
        self.ranks.remove_board(id);
        Ok(())
    }

    /// Writes a submission. `caller` is the client writing (None for server code, which may
    /// write to authoritative boards and for any owner).
    pub async fn write(
        &self,
        caller: Option<Uuid>,
        id: &str,
        submission: Submission,
    ) -> Result<RankedRecord, LeaderboardError> {
        let board = self.get(id).ok_or(LeaderboardError::NotFound)?;
        if board.row.authoritative && caller.is_some() {
            return Err(LeaderboardError::Authoritative);
        }
        let now_ms = self.clock.now_ms();
        let expiry = board.expiry_at(now_ms.div_euclid(1000));
        let owner = submission.owner_id;
        let _owner_lock = self.owner_lock(id, owner).lock().await;
        let written = self
            .store
            .write_record(metafi_storage::RecordWrite {
                leaderboard_id: id.to_owned(),
                owner_id: owner,
                username: submission.username,
                score: submission.score,
                subscore: submission.subscore,
                metadata: submission.metadata,
                operator: submission.operator.unwrap_or(board.row.operator),
                sort_order: board.row.sort_order,
                expiry_time: expiry,
                now_ms,
            })
            .await
            .map_err(|e| LeaderboardError::storage("write leaderboard record", e))?;
        let rank = if !self.ranked(id) {
            0
        } else if written.changed {
            self.ranks.insert(
                id,
                expiry,
                board.row.sort_order,
                owner,
                written.record.score,
                written.record.subscore,
            )
        } else {
            self.ranks.rank(id, expiry, owner)
        };
        Ok(RankedRecord {
            record: written.record,
            rank,
        })
    }

    /// Deletes an owner's record of the current period. Tournaments are refused here (they
    /// have their own call), as in Nakama.
    pub async fn delete_record(
        &self,
        caller: Option<Uuid>,
        id: &str,
        owner: Uuid,
    ) -> Result<(), LeaderboardError> {
        let board = self
            .get(id)
            .filter(|b| !b.row.is_tournament())
            .ok_or(LeaderboardError::NotFound)?;
        if board.row.authoritative && caller.is_some() {
            return Err(LeaderboardError::Authoritative);
        }
        let expiry = board.expiry_at(self.clock.now_secs());
        let _owner_lock = self.owner_lock(id, owner).lock().await;
        self.store
            .delete_record(id, expiry, owner)
            .await
            .map_err(|e| LeaderboardError::storage("delete leaderboard record", e))?;
        self.ranks.remove(id, expiry, owner);
        Ok(())
    }

    /// After an account deletion removed the owner's records from storage (every board and
    /// period, as Nakama's `LeaderboardRecordsDeleteAll`): takes the owner out of the ranks,
    /// so the records below it move up at once.
    pub fn forget_owner(&self, owner: Uuid) {
        self.ranks.remove_owner(owner);
    }

    /// Forgets the ranks of periods that have ended (the scheduler calls this).
    pub fn trim_expired_ranks(&self) {
        self.ranks.trim_expired(self.clock.now_secs());
    }

    /// The clock the service reads.
    pub fn now_secs(&self) -> i64 {
        self.clock.now_secs()
    }

    /// Whether the board still exists with ranks on (checked after the write, so a board
    /// whose ranks were disabled meanwhile gets no new cache entries).
    fn ranked(&self, id: &str) -> bool {
        self.get(id).is_some_and(|b| b.row.enable_ranks)
    }

    fn owner_lock(&self, id: &str, owner: Uuid) -> &tokio::sync::Mutex<()> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        id.hash(&mut hasher);
        owner.hash(&mut hasher);
        // The modulo keeps the index in range.
        &self.owner_locks[(hasher.finish() % OWNER_LOCKS as u64) as usize]
    }

    fn store(&self) -> &dyn Storage {
        &*self.store
    }
}

/// The record as Nakama lists it for owners of a board, sorted by the board's order.
fn sort_records(records: &mut [LeaderboardRecord], order: SortOrder) {
    records.sort_by(|a, b| {
        let ka = (a.score, a.subscore, a.owner_id);
        let kb = (b.score, b.subscore, b.owner_id);
        match order {
            SortOrder::Ascending => ka.cmp(&kb),
            SortOrder::Descending => kb.cmp(&ka),
        }
    });
}

#[cfg(test)]
mod account_delete_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tournament_tests;
