//! Reading records: pages in rank order with cursors both ways, chosen owners' records, the
//! records around an owner (Nakama's "haystack"), and a cursor that starts at a rank.

use metafi_storage::{LeaderboardRecord, RecordQuery, SortOrder};
use uuid::Uuid;

use super::cursor::RecordCursor;
use super::{Board, LeaderboardError, Leaderboards, sort_records};

/// A record and its rank (0 when the board keeps no ranks or the owner is not ranked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankedRecord {
    pub record: LeaderboardRecord,
    pub rank: i64,
}

/// Nakama's `LeaderboardRecordList`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordList {
    pub records: Vec<RankedRecord>,
    pub owner_records: Vec<RankedRecord>,
    /// Empty when there is no next page.
    pub next_cursor: String,
    pub prev_cursor: String,
    /// How many records the period ranks (0 for a board without ranks).
    pub rank_count: i64,
}

impl Leaderboards {
    /// Lists a period's records. `limit: None` lists no page (only `owners`' records);
    /// `override_expiry` 0 means the current period.
    pub async fn list_records(
        &self,
        id: &str,
        limit: Option<usize>,
        cursor: &str,
        owners: &[Uuid],
        override_expiry: i64,
    ) -> Result<RecordList, LeaderboardError> {
        let board = self.get(id).ok_or(LeaderboardError::NotFound)?;
        let expiry = self.period_of(&board, override_expiry);
        let mut list = RecordList::default();
        if let Some(limit) = limit {
            let incoming = if cursor.is_empty() {
                None
            } else {
                Some(
                    RecordCursor::decode(cursor, id, expiry)
                        .ok_or(LeaderboardError::InvalidCursor)?,
                )
            };
            self.page(&board, expiry, limit, incoming, &mut list)
                .await?;
        }
        if !owners.is_empty() {
            let mut records = self
                .store()
                .records_of_owners(id, expiry, owners)
                .await
                .map_err(|e| LeaderboardError::storage("read leaderboard records", e))?;
            sort_records(&mut records, board.row.sort_order);
            list.owner_records = records
                .into_iter()
                .map(|record| RankedRecord { record, rank: 0 })
                .collect();
        }
        list.rank_count = self.fill_ranks(&board, expiry, &mut list.owner_records);
        Ok(list)
    }

    /// One page from `incoming` (or the top), into `list.records` and its cursors.
    async fn page(
        &self,
        board: &Board,
        expiry: i64,
        limit: usize,
        incoming: Option<RecordCursor>,
        list: &mut RecordList,
    ) -> Result<(), LeaderboardError> {
        let ascending_board = board.row.sort_order == SortOrder::Ascending;
        let backward = incoming.as_ref().is_some_and(|c| !c.is_next);
        let mut rows = self
            .store()
            .list_records(RecordQuery {
                leaderboard_id: board.row.id.clone(),
                expiry_time: expiry,
                ascending: ascending_board != backward,
                after: incoming.as_ref().map(RecordCursor::key),
                limit: limit.saturating_add(1),
            })
            .await
            .map_err(|e| LeaderboardError::storage("list leaderboard records", e))?;
        let more = rows.len() > limit;
        rows.truncate(limit);
        let base = incoming.as_ref().map_or(0, |c| c.rank);
        let mut records: Vec<RankedRecord> = rows
            .into_iter()
            .zip(1i64..)
            .map(|(record, step)| RankedRecord {
                record,
                rank: if backward { base - step } else { base + step },
            })
            .collect();
        if backward {
            records.reverse();
        }
        if board.row.enable_ranks && self.ranks.has_period(&board.row.id, expiry) {
            // Ranks from the cache: right even if records moved since the cursor was made.
            // (A period no longer cached, read with an expiry override, keeps positions.)
            self.fill_ranks(board, expiry, &mut records);
        }
        let (next, prev) = if backward {
            (records.last(), records.first().filter(|_| more))
        } else {
            (
                records.last().filter(|_| more),
                records.first().filter(|_| incoming.is_some()),
            )
        };
        list.next_cursor = next.map_or_else(String::new, |r| cursor_at(r, expiry, true));
        list.prev_cursor = prev.map_or_else(String::new, |r| cursor_at(r, expiry, false));
        list.records = records;
        Ok(())
    }

    /// The records around `owner`: those just above, the owner's, those just below, `limit`
    /// in all (Nakama's haystack). With a cursor it is a plain listing.
    pub async fn haystack(
        &self,
        id: &str,
        owner: Uuid,
        limit: usize,
        cursor: &str,
        override_expiry: i64,
    ) -> Result<RecordList, LeaderboardError> {
        let board = self.get(id).ok_or(LeaderboardError::NotFound)?;
        let expiry = self.period_of(&board, override_expiry);
        if !cursor.is_empty() {
            return self
                .list_records(id, Some(limit), cursor, &[], expiry)
                .await;
        }
        let found = self
            .store()
            .records_of_owners(id, expiry, &[owner])
            .await
            .map_err(|e| LeaderboardError::storage("read leaderboard records", e))?;
        let Some(own) = found.into_iter().next() else {
            return Ok(RecordList::default());
        };
        let ascending_board = board.row.sort_order == SortOrder::Ascending;
        let key = Some((own.score, own.subscore, own.owner_id));
        let query = |ascending, limit| RecordQuery {
            leaderboard_id: id.to_owned(),
            expiry_time: expiry,
            ascending,
            after: key,
            limit,
        };
        let fail = |e| LeaderboardError::storage("list leaderboard records", e);
        // Above the owner: walk towards the top, nearest first.
        let mut above = self
            .store()
            .list_records(query(!ascending_board, limit.saturating_add(1)))
            .await
            .map_err(fail)?;
        let mut more_above = above.len() > limit;
        above.truncate(limit);
        above.reverse();
        let mut below_limit = limit / 2;
        if above.len() < below_limit {
            below_limit = limit - above.len();
        }
        let mut below = self
            .store()
            .list_records(query(ascending_board, below_limit.saturating_add(1)))
            .await
            .map_err(fail)?;
        let more_below = below.len() > below_limit;
        below.truncate(below_limit);

        let above_count = above.len();
        let mut all = above;
        all.push(own);
        all.extend(below);
        let total = all.len();
        let start = if total < limit || above_count < below_limit {
            0
        } else {
            total - limit
        };
        let end = (start + limit).min(total);
        if start > 0 {
            more_above = true;
        }
        let mut records: Vec<RankedRecord> = all
            .drain(start..end)
            .map(|record| RankedRecord { record, rank: 0 })
            .collect();
        let rank_count = self.fill_ranks(&board, expiry, &mut records);
        let prev_cursor = records
            .first()
            .filter(|_| more_above)
            .map_or_else(String::new, |r| cursor_at(r, expiry, false));
        let next_cursor = records
            .last()
            .filter(|_| more_below)
            .map_or_else(String::new, |r| cursor_at(r, expiry, true));
        Ok(RecordList {
            records,
            owner_records: Vec::new(),
            next_cursor,
            prev_cursor,
            rank_count,
        })
    }

    /// A listing cursor that starts at `rank` (1-based): "" for rank 1. Needs the board's
    /// ranks.
    pub fn cursor_from_rank(
        &self,
        id: &str,
        rank: i64,
        override_expiry: i64,
    ) -> Result<String, LeaderboardError> {
        let board = self.get(id).ok_or(LeaderboardError::NotFound)?;
        let expiry = self.period_of(&board, override_expiry);
        let before = rank - 1;
        if before <= 0 {
            return Ok(String::new());
        }
        if !board.row.enable_ranks || !self.ranks.has_period(id, expiry) {
            return Err(LeaderboardError::Rank(format!(
                "rank cache for leaderboard {id:?} with expiry {expiry} not found"
            )));
        }
        let key = self.ranks.at_rank(id, expiry, before).ok_or_else(|| {
            LeaderboardError::Rank(format!(
                "rank entry {before} not found for leaderboard {id:?} with expiry {expiry}"
            ))
        })?;
        let (score, subscore, owner_id) = key.decode(board.row.sort_order);
        Ok(RecordCursor {
            is_next: true,
            leaderboard_id: id.to_owned(),
            expiry_time: expiry,
            score,
            subscore,
            owner_id,
            rank: before,
        }
        .encode())
    }

    /// The period a read looks at: the override, or the current one (a tournament's by its
    /// deadlines).
    fn period_of(&self, board: &Board, override_expiry: i64) -> i64 {
        if override_expiry != 0 {
            override_expiry
        } else if board.row.is_tournament() {
            board.deadlines(self.clock.now_secs()).expiry
        } else {
            board.expiry_at(self.clock.now_secs())
        }
    }

    /// Sets ranks from the cache (0 for unranked owners, all 0 for a board without ranks);
    /// returns the period's record count (0 without ranks), as Nakama's `Fill`.
    fn fill_ranks(&self, board: &Board, expiry: i64, records: &mut [RankedRecord]) -> i64 {
        if !board.row.enable_ranks {
            return 0;
        }
        let owners: Vec<Uuid> = records.iter().map(|r| r.record.owner_id).collect();
        let (ranks, count) = self.ranks.ranks(&board.row.id, expiry, &owners);
        for (record, rank) in records.iter_mut().zip(ranks) {
            record.rank = rank;
        }
        count
    }
}

fn cursor_at(record: &RankedRecord, expiry: i64, is_next: bool) -> String {
    RecordCursor {
        is_next,
        leaderboard_id: record.record.leaderboard_id.clone(),
        expiry_time: expiry,
        score: record.record.score,
        subscore: record.record.subscore,
        owner_id: record.record.owner_id,
        rank: record.rank,
    }
    .encode()
}
