//! Tournaments: boards with a duration, start and end time, a max size, an attempt limit and
//! an optional join (Nakama's `core_tournament.go`). They share the leaderboard service's
//! boards, storage and rank cache; what is theirs is the active window ([`Deadlines`]), the
//! period their records belong to (its expiry), joins, attempt counting and the size limit.

use std::collections::HashSet;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE;
use metafi_storage::{
    JoinOutcome, Leaderboard, NO_MAX_SIZE, Operator, SortOrder, TournamentRefusal, TournamentWrite,
    has_max_size,
};
use uuid::Uuid;

use super::deadlines::{Deadlines, prev_reset, tournament_deadlines};
use super::{Board, Leaderboards, RankedRecord, RecordList, Submission, TournamentError};
use crate::cron::Schedule;

/// What server code passes to create a tournament (Nakama's `TournamentCreate` arguments).
#[derive(Debug, Clone)]
pub struct NewTournament {
    pub id: String,
    pub authoritative: bool,
    pub sort_order: SortOrder,
    pub operator: Operator,
    pub reset_schedule: String,
    /// JSON object text.
    pub metadata: String,
    pub title: String,
    pub description: String,
    pub category: i32,
    /// Unix seconds; 0 starts now.
    pub start_time: i64,
    /// Unix seconds; 0 never ends.
    pub end_time: i64,
    /// Seconds each run is active; must be above 0.
    pub duration: i32,
    /// 0 for no limit.
    pub max_size: i32,
    /// 0 for no limit.
    pub max_num_score: i32,
    pub join_required: bool,
    pub enable_ranks: bool,
}

/// A tournament as Nakama shows it (`api.Tournament`): the board and what is computed now.
#[derive(Debug, Clone)]
pub struct TournamentView {
    pub board: Arc<Board>,
    /// Entrants of the current period (0 for a tournament without a max size).
    pub size: i32,
    pub can_enter: bool,
    pub start_active: i64,
    pub end_active: i64,
    pub prev_reset: i64,
    /// The current period's expiry.
    pub next_reset: i64,
    /// Whether `authoritative` is shown: Nakama's lookups leave it (and `join_required`)
    /// out of tournaments read back from the database (those with a max size).
    pub show_authoritative: bool,
    pub show_join_required: bool,
}

/// Nakama's `ListTournaments` filter. `start_time`/`end_time` -1 for "not given".
#[derive(Debug, Clone)]
pub struct TournamentFilter {
    pub category_start: i32,
    pub category_end: i32,
    pub start_time: i64,
    pub end_time: i64,
    pub limit: usize,
    pub cursor: String,
}

/// A page of tournaments and the cursor of the next one (empty at the end).
#[derive(Debug, Clone, Default)]
pub struct TournamentPage {
    pub tournaments: Vec<TournamentView>,
    pub cursor: String,
}

impl Board {
    /// The tournament's active window and period at `now`.
    pub fn deadlines(&self, now: i64) -> Deadlines {
        tournament_deadlines(
            self.row.start_time,
            self.row.end_time,
            i64::from(self.row.duration),
            self.schedule.as_ref(),
            now,
        )
    }

    fn has_max_size(&self) -> bool {
        has_max_size(self.row.max_size)
    }
}

/// Nakama's `checkTournamentConfig`, with its texts.
fn check_config(new: &NewTournament) -> Result<Option<Schedule>, TournamentError> {
    let fail = |m: &str| Err(TournamentError::Config(m.to_owned()));
    if new.start_time < 0 {
        return fail("tournament start time must be a unix UTC time in the future");
    }
    if new.duration <= 0 {
        return fail("tournament duration must be greater than zero");
    }
    if new.max_size < 0 {
        return fail("tournament max must be greater than zero");
    }
    if new.max_num_score < 0 {
        return fail("tournament m num score must be greater than zero");
    }
    if new.end_time > 0 && new.end_time < new.start_time {
        return fail("tournament end time cannot be before start time");
    }
    if new.reset_schedule.is_empty() {
        return Ok(None);
    }
    // Nakama appends its cron parser's text; ours has none (nk checks the schedule first).
    let schedule = Schedule::parse(&new.reset_schedule).map_err(|_| {
        TournamentError::Config("could not parse reset schedule: invalid cron expression".into())
    })?;
    let first_reset = schedule
        .next_after(new.start_time)
        .unwrap_or(crate::cron::NO_MATCH);
    if new.end_time > 0 && new.end_time <= first_reset {
        return fail(
            "tournament end time cannot be before first reset schedule - either increase end \
             time or change/disable reset schedule",
        );
    }
    Ok(Some(schedule))
}

fn encode_list_cursor(id: &str) -> String {
    URL_SAFE.encode(format!("t:{id}"))
}

fn decode_list_cursor(cursor: &str) -> Option<String> {
    let bytes = URL_SAFE.decode(cursor).ok()?;
    String::from_utf8(bytes)
        .ok()?
        .strip_prefix("t:")
        .map(str::to_owned)
}

/// Nakama's tournament order: start time, later end first, category, id.
fn tournament_order(a: &Leaderboard, b: &Leaderboard) -> std::cmp::Ordering {
    a.start_time
        .cmp(&b.start_time)
        .then(b.end_time.cmp(&a.end_time))
        .then(a.category.cmp(&b.category))
        .then(a.id.cmp(&b.id))
}

impl Leaderboards {
    /// A tournament by id (`None` for a missing id or a plain leaderboard).
    pub fn tournament(&self, id: &str) -> Option<Arc<Board>> {
        self.get(id).filter(|b| b.row.is_tournament())
    }

    fn require(&self, id: &str) -> Result<Arc<Board>, TournamentError> {
        self.tournament(id).ok_or(TournamentError::NotFound)
    }

    /// Creates a tournament; idempotent (an existing tournament is returned unchanged, a
    /// leaderboard with the id is an error). Returns the board and whether this call made it.
    pub async fn create_tournament(
        &self,
        new: NewTournament,
    ) -> Result<(Arc<Board>, bool), TournamentError> {
        check_config(&new)?;
        if let Some(existing) = self.get(&new.id) {
            if existing.row.is_tournament() {
                return Ok((existing, false));
            }
            return Err(TournamentError::InUse);
        }
        let now_ms = self.clock.now_ms();
        let row = Leaderboard {
            authoritative: new.authoritative,
            reset_schedule: new.reset_schedule,
            metadata: new.metadata,
            create_time_ms: now_ms,
            enable_ranks: new.enable_ranks,
            category: new.category.max(0),
            description: new.description,
            duration: new.duration,
            start_time: if new.start_time > 0 {
                new.start_time
            } else {
                now_ms.div_euclid(1000)
            },
            end_time: new.end_time.max(0),
            join_required: new.join_required,
            max_size: if new.max_size == 0 {
                NO_MAX_SIZE
            } else {
                new.max_size
            },
            max_num_score: new.max_num_score,
            title: new.title,
            ..Leaderboard::new(new.id, new.sort_order, new.operator)
        };
        let (board, created) = self.insert_row(row).await?;
        if !board.row.is_tournament() {
            return Err(TournamentError::InUse);
        }
        Ok((board, created))
    }

    /// Deletes a tournament and its records; a missing one (or a leaderboard) is success.
    pub async fn delete_tournament(&self, id: &str) -> Result<(), TournamentError> {
        if self.tournament(id).is_none() {
            return Ok(());
        }
        self.delete(id).await?;
        Ok(())
    }

    /// Adds `count` attempts to an owner's record of the current period (Nakama's
    /// `TournamentAddAttempt`): a no-op for 0, refused once the active window has ended.
    pub async fn add_tournament_attempt(
        &self,
        id: &str,
        owner: Uuid,
        count: i32,
    ) -> Result<(), TournamentError> {
        if count == 0 {
            return Ok(());
        }
        let board = self.require(id)?;
        let now = self.clock.now_secs();
        let deadlines = board.deadlines(now);
        if deadlines.end_active <= now {
            return Err(TournamentError::OutsideDuration);
        }
        self.store()
            .add_tournament_attempts(id, deadlines.expiry, owner, count)
            .await
            .map_err(|e| storage("add tournament attempts", e))?;
        Ok(())
    }

    /// Joins an owner (Nakama's `TournamentJoin`): nothing to do unless the tournament
    /// requires joins; idempotent; refused after the active window or when full.
    pub async fn join_tournament(
        &self,
        id: &str,
        owner: Uuid,
        username: &str,
    ) -> Result<(), TournamentError> {
        let board = self.require(id)?;
        if !board.row.join_required {
            return Ok(());
        }
        let now_ms = self.clock.now_ms();
        let now = now_ms.div_euclid(1000);
        let deadlines = board.deadlines(now);
        if deadlines.end_active <= now {
            return Err(TournamentError::OutsideDuration);
        }
        let _owner_lock = self.owner_lock(id, owner).lock().await;
        let outcome = self
            .store()
            .join_tournament(
                id,
                deadlines.expiry,
                owner,
                Some(username.to_owned()).filter(|u| !u.is_empty()),
                board.row.max_num_score,
                board.has_max_size(),
                now_ms,
            )
            .await
            .map_err(|e| storage("join tournament", e))?;
        match outcome {
            JoinOutcome::Full => Err(TournamentError::MaxSizeReached),
            JoinOutcome::AlreadyJoined => Ok(()),
            JoinOutcome::Joined => {
                if self.ranked(id) {
                    self.ranks
                        .insert(id, deadlines.expiry, board.row.sort_order, owner, 0, 0);
                }
                Ok(())
            }
        }
    }

    /// Tournaments by id, as Nakama's `TournamentsGet`: duplicates and non-tournaments
    /// skipped; those without a max size first, then those read back with their size.
    pub async fn tournaments_by_id(
        &self,
        ids: &[String],
    ) -> Result<Vec<TournamentView>, TournamentError> {
        let now = self.clock.now_secs();
        let mut seen = HashSet::new();
        let mut plain = Vec::new();
        let mut sized = Vec::new();
        for id in ids {
            if !seen.insert(id.as_str()) {
                continue;
            }
            let Some(board) = self.tournament(id) else {
                continue;
            };
            if board.has_max_size() {
                sized.push(board);
            } else {
                plain.push(board);
            }
        }
        let sizes = self.sizes(&sized).await?;
        let mut views: Vec<TournamentView> = plain
            .into_iter()
            .map(|board| {
                let mut view = view(board, now, 0);
                view.show_join_required = false;
                view
            })
            .collect();
        for board in sized {
            let size = sizes.get(&board.row.id).copied().unwrap_or(0);
            let mut view = view(board, now, size);
            view.show_authoritative = false;
            view.show_join_required = false;
            views.push(view);
        }
        Ok(views)
    }

    /// A page of tournaments (Nakama's `TournamentList`).
    pub async fn list_tournaments(
        &self,
        filter: &TournamentFilter,
    ) -> Result<TournamentPage, TournamentError> {
        let resume = if filter.cursor.is_empty() {
            None
        } else {
            Some(decode_list_cursor(&filter.cursor).ok_or(TournamentError::InvalidCursor)?)
        };
        let now = self.clock.now_secs();
        let mut all: Vec<Arc<Board>> = self
            .boards
            .read()
            .ordered
            .iter()
            .filter(|b| b.row.is_tournament())
            .cloned()
            .collect();
        all.sort_by(|a, b| tournament_order(&a.row, &b.row));
        let mut skip = resume.is_some();
        let mut page: Vec<Arc<Board>> = Vec::new();
        let mut cursor = String::new();
        for board in all {
            let t = &board.row;
            if skip {
                if Some(&t.id) == resume.as_ref() {
                    skip = false;
                }
                continue;
            }
            if t.category < filter.category_start || t.category > filter.category_end {
                continue;
            }
            if t.start_time < filter.start_time {
                continue;
            }
            let end = filter.end_time;
            if (end == 0 && t.end_time != 0)
                || (end == -1 && t.end_time != 0 && t.end_time < now)
                || (end > 0 && (t.end_time == 0 || t.end_time > end))
            {
                continue;
            }
            if page.len() >= filter.limit {
                if let Some(last) = page.last() {
                    cursor = encode_list_cursor(&last.row.id);
                }
                break;
            }
            page.push(board);
        }
        let sized: Vec<Arc<Board>> = page.iter().filter(|b| b.has_max_size()).cloned().collect();
        let sizes = self.sizes(&sized).await?;
        let tournaments = page
            .into_iter()
            .map(|board| {
                let size = sizes.get(&board.row.id).copied().unwrap_or(0);
                view(board, now, size)
            })
            .collect();
        Ok(TournamentPage {
            tournaments,
            cursor,
        })
    }

    async fn sizes(
        &self,
        boards: &[Arc<Board>],
    ) -> Result<std::collections::HashMap<String, i32>, TournamentError> {
        let ids: Vec<String> = boards.iter().map(|b| b.row.id.clone()).collect();
        self.store()
            .tournament_sizes(&ids)
            .await
            .map_err(|e| storage("read tournament sizes", e))
    }

    /// Lists a tournament's records (Nakama's `TournamentRecordsList`): refused once the
    /// tournament has ended unless an expiry is given; an ended period lists nothing.
    pub async fn tournament_records(
        &self,
        id: &str,
        limit: Option<usize>,
        cursor: &str,
        owners: &[Uuid],
        override_expiry: i64,
    ) -> Result<RecordList, TournamentError> {
        let board = self.require(id)?;
        let now = self.clock.now_secs();
        if override_expiry == 0 && board.row.end_time > 0 && board.row.end_time <= now {
            return Err(TournamentError::OutsideDuration);
        }
        if override_expiry == 0 {
            let expiry = board.deadlines(now).expiry;
            if expiry != 0 && expiry <= now {
                return Ok(RecordList::default());
            }
        }
        Ok(self
            .list_records(id, limit, cursor, owners, override_expiry)
            .await?)
    }

    /// Writes a submission (Nakama's `TournamentRecordWrite`). `caller` is the client
    /// writing (None for server code).
    pub async fn write_tournament(
        &self,
        caller: Option<Uuid>,
        id: &str,
        submission: Submission,
    ) -> Result<RankedRecord, TournamentError> {
        let board = self.require(id)?;
        if board.row.authoritative && caller.is_some() {
            return Err(TournamentError::Authoritative);
        }
        let now_ms = self.clock.now_ms();
        let deadlines = board.deadlines(now_ms.div_euclid(1000));
        if !deadlines.active_at(now_ms.div_euclid(1000)) {
            return Err(TournamentError::OutsideDuration);
        }
        let owner = submission.owner_id;
        let _owner_lock = self.owner_lock(id, owner).lock().await;
        let written = self
            .store()
            .write_tournament_record(TournamentWrite {
                write: metafi_storage::RecordWrite {
                    leaderboard_id: id.to_owned(),
                    owner_id: owner,
                    username: submission.username,
                    score: submission.score,
                    subscore: submission.subscore,
                    metadata: submission.metadata,
                    operator: submission.operator.unwrap_or(board.row.operator),
                    sort_order: board.row.sort_order,
                    expiry_time: deadlines.expiry,
                    now_ms,
                },
                join_required: board.row.join_required,
                max_num_score: board.row.max_num_score,
                has_max_size: board.has_max_size(),
            })
            .await
            .map_err(|e| storage("write tournament record", e))?;
        let record = written.map_err(|refusal| match refusal {
            TournamentRefusal::JoinRequired => TournamentError::JoinRequired,
            TournamentRefusal::MaxNumScoreReached => TournamentError::MaxNumScoreReached,
            TournamentRefusal::MaxSizeReached => TournamentError::MaxSizeReached,
        })?;
        let rank = if self.ranked(id) {
            self.ranks.insert(
                id,
                deadlines.expiry,
                board.row.sort_order,
                owner,
                record.score,
                record.subscore,
            )
        } else {
            0
        };
        Ok(RankedRecord { record, rank })
    }

    /// Deletes an owner's record of the current period, freeing its place.
    pub async fn delete_tournament_record(
        &self,
        caller: Option<Uuid>,
        id: &str,
        owner: Uuid,
    ) -> Result<(), TournamentError> {
        let board = self.require(id)?;
        if board.row.authoritative && caller.is_some() {
            return Err(TournamentError::Authoritative);
        }
        let expiry = board.deadlines(self.clock.now_secs()).expiry;
        let _owner_lock = self.owner_lock(id, owner).lock().await;
        self.store()
            .delete_tournament_record(id, expiry, owner, board.has_max_size())
            .await
            .map_err(|e| storage("delete tournament record", e))?;
        self.ranks.remove(id, expiry, owner);
        Ok(())
    }

    /// The records around an owner (Nakama's `TournamentRecordsHaystack`, whose previous
    /// cursor is the next one).
    pub async fn tournament_haystack(
        &self,
        id: &str,
        owner: Uuid,
        limit: usize,
        cursor: &str,
        override_expiry: i64,
    ) -> Result<RecordList, TournamentError> {
        let board = self
            .tournament(id)
            .ok_or(TournamentError::LeaderboardNotFound)?;
        if override_expiry == 0 {
            let now = self.clock.now_secs();
            let expiry = board.deadlines(now).expiry;
            if expiry != 0 && expiry <= now {
                return Ok(RecordList::default());
            }
        }
        let mut list = self
            .haystack(id, owner, limit, cursor, override_expiry)
            .await?;
        list.prev_cursor = list.next_cursor.clone();
        list.owner_records.clear();
        Ok(list)
    }

    /// A tournament as Nakama's scheduler reads it back for its callbacks (size from
    /// storage, `authoritative` and `join_required` left out), at `now`.
    pub async fn view_at(
        &self,
        board: Arc<Board>,
        now: i64,
    ) -> Result<TournamentView, TournamentError> {
        let sizes = self.sizes(std::slice::from_ref(&board)).await?;
        let size = sizes.get(&board.row.id).copied().unwrap_or(0);
        let mut view = view(board, now, size);
        view.show_authoritative = false;
        view.show_join_required = false;
        Ok(view)
    }

    /// Stops keeping ranks for a tournament.
    pub async fn disable_tournament_ranks(&self, id: &str) -> Result<(), TournamentError> {
        self.require(id)?;
        self.set_ranks_off(id).await?;
        Ok(())
    }
}

/// The computed fields of a tournament at `now` (Nakama's `TournamentList` record).
fn view(board: Arc<Board>, now: i64, size: i32) -> TournamentView {
    let d = board.deadlines(now);
    let mut can_enter = !(d.start_active > now || d.end_active < now);
    if can_enter && size >= board.row.max_size {
        can_enter = false;
    }
    let prev = prev_reset(board.schedule.as_ref(), board.row.start_time, now);
    TournamentView {
        size,
        can_enter,
        start_active: d.start_active,
        end_active: d.end_active,
        prev_reset: prev,
        next_reset: d.expiry,
        show_authoritative: true,
        show_join_required: true,
        board,
    }
}

fn storage(operation: &'static str, e: metafi_storage::StorageError) -> TournamentError {
    TournamentError::Storage(crate::CoreError::storage(operation, e))
}
