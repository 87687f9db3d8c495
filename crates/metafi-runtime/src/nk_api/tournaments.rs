//! Tournaments: `tournament_create`, `tournament_delete`, `tournament_add_attempt`,
//! `tournament_join`, `tournament_list`, `tournament_ranks_disable`, `tournaments_get_id`,
//! `tournament_records_list`, `tournament_record_write`, `tournament_record_delete`,
//! `tournament_records_haystack`, over the tournament calls of `metafi_core::Leaderboards`
//! (the service the REST calls use), with the arguments, defaults, errors and result shapes
//! of Nakama's `runtime_lua_nakama.go` and `runtime_javascript_nakama.go`. Server code writes
//! as the server: authoritative tournaments accept its writes, for any owner.

use metafi_core::leaderboards::{NewTournament, Submission, TournamentFilter, TournamentView};
use metafi_storage::{Operator, SortOrder};
use uuid::Uuid;

use super::leaderboards::{
    json_object, list_value, metadata, opt_bool, opt_str, owner_ids, record_value,
};
use super::{Arg, NkArgs, NkCall, NkError, NkFunction, NkFuture, NkMap, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    row("tournament_create", "tournamentCreate", create),
    row("tournament_delete", "tournamentDelete", delete),
    row(
        "tournament_add_attempt",
        "tournamentAddAttempt",
        add_attempt,
    ),
    row("tournament_join", "tournamentJoin", join),
    row("tournament_list", "tournamentList", list),
    // Nakama's one irregular JavaScript name.
    row(
        "tournament_ranks_disable",
        "tournamentsRanksDisable",
        ranks_disable,
    ),
    row("tournaments_get_id", "tournamentsGetId", get_id),
    row(
        "tournament_records_list",
        "tournamentRecordsList",
        records_list,
    ),
    row("tournament_record_write", "tournamentRecordWrite", write),
    row(
        "tournament_record_delete",
        "tournamentRecordDelete",
        record_delete,
    ),
    row(
        "tournament_records_haystack",
        "tournamentRecordsHaystack",
        haystack,
    ),
];

const fn row(lua: &'static str, js: &'static str, call: fn(Nk, NkArgs) -> NkFuture) -> NkFunction {
    NkFunction {
        lua: Some(lua),
        js: Some(js),
        call: NkCall::Async(call),
    }
}

/// The type error of a non-number argument in each language.
fn int_message(args: &NkArgs) -> &'static str {
    if args.is_js() {
        "expects number"
    } else {
        "number expected"
    }
}

fn opt_int(args: &NkArgs, position: usize) -> Result<Option<i64>, NkError> {
    args.at(position).opt_integer(int_message(args))
}

/// An `i32` argument; Nakama reads these as Go `int`s, so a value beyond `i32` is refused
/// with the argument's range message.
fn small(arg: &Arg<'_>, value: i64, message: &'static str) -> Result<i32, NkError> {
    i32::try_from(value).map_err(|_| arg.error(message))
}

/// `(id, authoritative=true, sort_order="desc", operator="best", duration, reset_schedule="",
/// metadata={}, title="", description="", category=0, start_time=0, end_time=0, max_size=0,
/// max_num_score=0, join_required=false, enable_ranks=false)`.
fn create(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let id = args.at(1).non_empty("expects a tournament ID string")?;
        let authoritative = opt_bool(&args.at(2))?.unwrap_or(true);
        let sort_order = match opt_str(&args.at(3))?.unwrap_or("desc") {
            "asc" | "ascending" => SortOrder::Ascending,
            "desc" | "descending" => SortOrder::Descending,
            _ => return Err(args.at(3).error("expects sort order to be 'asc' or 'desc'")),
        };
        let operator = match opt_str(&args.at(4))?.unwrap_or("best") {
            "best" => Operator::Best,
            "set" => Operator::Set,
            "incr" | "increment" => Operator::Increment,
            "decr" | "decrement" => Operator::Decrement,
            _ => {
                return Err(args
                    .at(4)
                    .error("expects operator to be 'best', 'set', 'decr' or 'incr'"));
            }
        };
        let duration = opt_int(&args, 5)?.unwrap_or(0);
        if duration <= 0 {
            return Err(args.at(5).error("duration must be > 0"));
        }
        let duration = small(&args.at(5), duration, "duration must be > 0")?;
        let reset_schedule = opt_str(&args.at(6))?.unwrap_or("").to_owned();
        if !reset_schedule.is_empty()
            && metafi_core::cron::Schedule::parse(&reset_schedule).is_err()
        {
            return Err(args
                .at(6)
                .error("expects reset schedule to be a valid CRON expression"));
        }
        let metadata = metadata(&args, 7)?.unwrap_or_else(|| "{}".to_owned());
        let title = opt_str(&args.at(8))?.unwrap_or("").to_owned();
        let description = opt_str(&args.at(9))?.unwrap_or("").to_owned();
        let category = opt_int(&args, 10)?.unwrap_or(0);
        if !(0..128).contains(&category) {
            return Err(args.at(10).error("category must be 0-127"));
        }
        let start_time = opt_int(&args, 11)?.unwrap_or(0);
        if start_time < 0 {
            return Err(args.at(11).error("startTime must be >= 0."));
        }
        let end_time = opt_int(&args, 12)?.unwrap_or(0);
        if end_time != 0 && end_time <= start_time {
            return Err(args.at(12).error(
                "endTime must be > startTime. Use 0 to indicate a tournament that never ends.",
            ));
        }
        let max_size = opt_int(&args, 13)?.unwrap_or(0);
        if max_size < 0 {
            return Err(args.at(13).error("maxSize must be >= 0"));
        }
        let max_size = small(&args.at(13), max_size, "maxSize must be >= 0")?;
        let max_num_score = opt_int(&args, 14)?.unwrap_or(0);
        if max_num_score < 0 {
            return Err(args.at(14).error("maxNumScore must be >= 0"));
        }
        let max_num_score = small(&args.at(14), max_num_score, "maxNumScore must be >= 0")?;
        let join_required = opt_bool(&args.at(15))?.unwrap_or(false);
        let enable_ranks = opt_bool(&args.at(16))?.unwrap_or(false);
        nk.leaderboards("tournament_create")?
            .create_tournament(NewTournament {
                id: id.to_owned(),
                authoritative,
                sort_order,
                operator,
                reset_schedule,
                metadata,
                title,
                description,
                // In range by the check above.
                category: category as i32,
                start_time,
                end_time,
                duration,
                max_size,
                max_num_score,
                join_required,
                enable_ranks,
            })
            .await
            .map_err(|e| NkError::failed(format!("error creating tournament: {e}")))?;
        Ok(NkValue::Nil)
    })
}

fn delete(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let id = args.at(1).non_empty("expects a tournament ID string")?;
        nk.leaderboards("tournament_delete")?
            .delete_tournament(id)
            .await
            .map_err(|e| NkError::failed(format!("error deleting tournament: {e}")))?;
        Ok(NkValue::Nil)
    })
}

/// `(id, owner_id, count)`: `count` (not 0, may be negative) more attempts for the owner.
fn add_attempt(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let id = args.at(1).non_empty("expects a tournament ID string")?;
        let owner = owner_arg(
            &args,
            2,
            "expects an owner ID string",
            "expects owner ID to be a valid identifier",
        )?;
        let count = args.at(3).integer(int_message(&args))?;
        if count == 0 {
            return Err(args.at(3).error("expects an attempt count number != 0"));
        }
        let count = small(&args.at(3), count, "expects an attempt count number != 0")?;
        nk.leaderboards("tournament_add_attempt")?
            .add_tournament_attempt(id, owner, count)
            .await
            .map_err(|e| NkError::failed(format!("error adding tournament attempts: {e}")))?;
        Ok(NkValue::Nil)
    })
}

/// `(id, user_id, username)`.
fn join(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let id = args.at(1).non_empty("expects a tournament ID string")?;
        let owner = owner_arg(
            &args,
            2,
            "expects a user ID string",
            "expects user ID to be a valid identifier",
        )?;
        let username = args.at(3).non_empty("expects a username string")?;
        nk.leaderboards("tournament_join")?
            .join_tournament(id, owner, username)
            .await
            .map_err(|e| NkError::failed(format!("error joining tournament: {e}")))?;
        Ok(NkValue::Nil)
    })
}

/// A non-empty id string that is a UUID.
fn owner_arg(
    args: &NkArgs,
    position: usize,
    missing: &'static str,
    invalid: &'static str,
) -> Result<Uuid, NkError> {
    let arg = args.at(position);
    let text = arg.non_empty(missing)?;
    Uuid::parse_str(text).map_err(|_| arg.error(invalid))
}

/// `(category_start=0, category_end=0, start_time, end_time, limit=10, cursor="")`. Lua
/// refuses a missing start or end time (Nakama reads them as -1, then requires >= 0);
/// JavaScript reads them as "not given". Lua returns `(tournaments, cursor)`, JavaScript
/// `{tournaments, cursor}`.
fn list(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let category_start = opt_int(&args, 1)?.unwrap_or(0);
        if !(0..128).contains(&category_start) {
            return Err(args.at(1).error(if js {
                "category start must be 0-127"
            } else {
                "categoryStart must be 0-127"
            }));
        }
        let category_end = opt_int(&args, 2)?.unwrap_or(0);
        if !(0..128).contains(&category_end) {
            return Err(args.at(2).error(if js {
                "category end must be 0-127"
            } else {
                "categoryEnd must be 0-127"
            }));
        }
        if category_start > category_end {
            return Err(args.at(2).error(if js {
                "category end must be >= category start"
            } else {
                "categoryEnd must be >= categoryStart"
            }));
        }
        let start_time = opt_int(&args, 3)?.unwrap_or(-1);
        let end_time = opt_int(&args, 4)?.unwrap_or(-1);
        if js {
            if !args.at(3).is_nil() && start_time < 0 {
                return Err(args.at(3).error("start time must be >= 0"));
            }
            if !args.at(4).is_nil() && end_time < 0 {
                return Err(args.at(4).error("end time must be >= 0"));
            }
            if start_time > end_time {
                return Err(args.at(4).error("end time must be >= start time"));
            }
        } else {
            if start_time < 0 {
                return Err(args.at(3).error("startTime must be >= -1"));
            }
            if end_time < 0 {
                return Err(args.at(4).error("endTime must be >= -1"));
            }
            if start_time > end_time {
                return Err(args.at(4).error("endTime must be >= startTime"));
            }
        }
        let limit = opt_int(&args, 5)?.unwrap_or(10);
        if !(1..=100).contains(&limit) {
            return Err(args.at(5).error("limit must be 1-100"));
        }
        let cursor = opt_str(&args.at(6))?.unwrap_or("").to_owned();
        let service = nk.leaderboards("tournament_list")?;
        let page = service
            .list_tournaments(&TournamentFilter {
                // In range by the checks above.
                category_start: category_start as i32,
                category_end: category_end as i32,
                start_time,
                end_time,
                limit: limit as usize,
                cursor,
            })
            .await
            .map_err(|e| match e {
                metafi_core::leaderboards::TournamentError::InvalidCursor => {
                    args.at(6).error("expects cursor to be valid when provided")
                }
                e => NkError::failed(format!("error listing tournaments: {e}")),
            })?;
        let tournaments: Vec<NkValue> = page
            .tournaments
            .iter()
            .map(|t| tournament_value(t, js))
            .collect();
        let cursor = if page.cursor.is_empty() {
            NkValue::Nil
        } else {
            NkValue::from(page.cursor)
        };
        Ok(if js {
            NkMap::new()
                .with("tournaments", tournaments)
                .with("cursor", cursor)
                .into()
        } else {
            NkValue::Multi(vec![tournaments.into(), cursor])
        })
    })
}

/// Lua's `tournament_ranks_disable` calls Nakama's leaderboard function, which refuses
/// tournaments (so it only disables a plain leaderboard's ranks); JavaScript's disables a
/// tournament's.
fn ranks_disable(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let service = nk.leaderboards("tournament_ranks_disable")?;
        if args.is_js() {
            let id = opt_str(&args.at(1))?.unwrap_or("");
            service
                .disable_tournament_ranks(id)
                .await
                .map_err(|e| NkError::failed(e.to_string()))?;
        } else {
            let id = args.at(1).non_empty("expects a tournament id string")?;
            service
                .disable_ranks(id)
                .await
                .map_err(|e| NkError::failed(format!("error disabling tournament ranks: {e}")))?;
        }
        Ok(NkValue::Nil)
    })
}

/// `(ids)`: the tournaments among `ids`.
fn get_id(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let arg = args.at(1);
        if arg.is_nil() {
            return Err(arg.error(if js {
                "expects an array of tournament ids"
            } else {
                "invalid tournament id list"
            }));
        }
        if !js && arg.value.as_map().is_some_and(NkMap::is_empty) {
            return Ok(NkValue::List(Vec::new()));
        }
        let items = arg.list(if js {
            "expects an array of strings"
        } else {
            "invalid tournament id data"
        })?;
        let mut ids = Vec::with_capacity(items.len());
        for item in items {
            match item.value.as_str() {
                Some(id) if js || !id.is_empty() => ids.push(id.to_owned()),
                _ => {
                    return Err(arg.error(if js {
                        "expects an array of strings"
                    } else {
                        "each tournament id must be a string"
                    }));
                }
            }
        }
        if ids.is_empty() {
            return Ok(NkValue::List(Vec::new()));
        }
        let views = nk
            .leaderboards("tournaments_get_id")?
            .tournaments_by_id(&ids)
            .await
            .map_err(|e| NkError::failed(format!("failed to get tournaments: {e}")))?;
        Ok(views
            .iter()
            .map(|t| tournament_value(t, js))
            .collect::<Vec<_>>()
            .into())
    })
}

/// `(id, owner_ids, limit=0, cursor="", expiry_override=0)`: without a limit only the owners'
/// records. Lua returns `(records, owner_records, next_cursor, prev_cursor, rank_count)` (one
/// empty table for an empty owner list, as Nakama); JavaScript an object.
fn records_list(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let id = args.at(1).non_empty("expects a tournament ID string")?;
        let Some(owners) = owner_ids(&args.at(2), js)? else {
            // Lua's empty owner list: one empty table, as Nakama answers.
            return Ok(NkValue::List(Vec::new()));
        };
        let limit = opt_int(&args, 3)?.unwrap_or(0);
        if !js && !(0..=10_000).contains(&limit) {
            return Err(args.at(3).error("expects limit to be 0-10000"));
        }
        let limit = usize::try_from(limit).ok().filter(|l| *l != 0);
        let cursor = opt_str(&args.at(4))?.unwrap_or("");
        let expiry = opt_int(&args, 5)?.unwrap_or(0);
        let list = nk
            .leaderboards("tournament_records_list")?
            .tournament_records(id, limit, cursor, &owners, expiry)
            .await
            .map_err(|e| NkError::failed(format!("error listing tournament records: {e}")))?;
        Ok(list_value(list, js, false))
    })
}

/// `(id, owner_id, username="", score=0, subscore=0, metadata, operator)`.
fn write(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let id = args.at(1).non_empty("expects a tournament ID string")?;
        let owner_text = opt_str(&args.at(2))?.unwrap_or("");
        let owner = Uuid::parse_str(owner_text)
            .map_err(|_| args.at(2).error("expects user ID to be a valid identifier"))?;
        let username = opt_str(&args.at(3))?.filter(|u| !u.is_empty());
        let score = opt_int(&args, 4)?.unwrap_or(0);
        let subscore = opt_int(&args, 5)?.unwrap_or(0);
        let metadata = metadata(&args, 6)?;
        // Nakama reads the operator as an `api.Operator` name, any case.
        let operator = match opt_str(&args.at(7))?.map(str::to_uppercase).as_deref() {
            None | Some("NO_OVERRIDE") => None,
            Some("BEST") => Some(Operator::Best),
            Some("SET") => Some(Operator::Set),
            Some("INCREMENT") => Some(Operator::Increment),
            Some("DECREMENT") => Some(Operator::Decrement),
            Some(_) => return Err(args.at(7).error("invalid operator")),
        };
        let record = nk
            .leaderboards("tournament_record_write")?
            .write_tournament(
                None,
                id,
                Submission {
                    owner_id: owner,
                    username: username.map(str::to_owned),
                    score,
                    subscore,
                    metadata,
                    operator,
                },
            )
            .await
            .map_err(|e| NkError::failed(format!("error writing tournament record: {e}")))?;
        Ok(record_value(&record))
    })
}

fn record_delete(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let id = args.at(1).non_empty("expects a tournament ID string")?;
        let owner_text = opt_str(&args.at(2))?.unwrap_or("");
        let owner = Uuid::parse_str(owner_text).map_err(|_| {
            args.at(2)
                .error("expects owner ID to be a valid identifier")
        })?;
        nk.leaderboards("tournament_record_delete")?
            .delete_tournament_record(None, id, owner)
            .await
            .map_err(|e| NkError::failed(format!("error deleting tournament record: {e}")))?;
        Ok(NkValue::Nil)
    })
}

/// `(id, owner_id, limit=10, cursor="", expiry=0)`. Lua returns `(records, next_cursor,
/// prev_cursor, rank_count)` (the previous cursor is the next one, as Nakama's); JavaScript
/// an object.
fn haystack(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let id = args.at(1).non_empty("expects a tournament ID string")?;
        let owner_text = opt_str(&args.at(2))?.unwrap_or("");
        let owner = Uuid::parse_str(owner_text)
            .map_err(|_| args.at(2).error("expects user ID to be a valid identifier"))?;
        let limit = opt_int(&args, 3)?.unwrap_or(10);
        if !(1..=100).contains(&limit) {
            return Err(args.at(3).error("limit must be 1-100"));
        }
        let cursor = opt_str(&args.at(4))?.unwrap_or("");
        let expiry = opt_int(&args, 5)?.unwrap_or(0);
        if expiry < 0 {
            return Err(args.at(5).error(
                "expiry should be time since epoch in seconds and has to be a positive integer",
            ));
        }
        let list = nk
            .leaderboards("tournament_records_haystack")?
            // In range by the check above.
            .tournament_haystack(id, owner, limit as usize, cursor, expiry)
            .await
            .map_err(|e| {
                NkError::failed(format!("error listing tournament records haystack: {e}"))
            })?;
        Ok(list_value(list, js, true))
    })
}

/// A tournament as Nakama's runtimes show it: Lua's `sort_order` is a string, JavaScript's a
/// number; resets and the end time only when there are some; no `authoritative`.
fn tournament_value(view: &TournamentView, js: bool) -> NkValue {
    let row = &view.board.row;
    let mut map = NkMap::with_capacity(20);
    map.insert("id", row.id.as_str());
    map.insert("title", row.title.as_str());
    map.insert("description", row.description.as_str());
    map.insert("category", i64::from(row.category));
    let order = i64::from(row.sort_order.code());
    if js {
        map.insert("sort_order", order);
    } else {
        map.insert("sort_order", order.to_string());
    }
    map.insert("size", i64::from(view.size));
    map.insert("max_size", i64::from(row.max_size));
    map.insert("max_num_score", i64::from(row.max_num_score));
    map.insert("duration", i64::from(row.duration));
    let unsigned = |v: i64| i64::from(u32::try_from(v).unwrap_or(0));
    map.insert("start_active", unsigned(view.start_active));
    map.insert("end_active", unsigned(view.end_active));
    map.insert("can_enter", view.can_enter);
    if view.next_reset != 0 {
        map.insert("next_reset", unsigned(view.next_reset));
    }
    if view.prev_reset != 0 {
        map.insert("prev_reset", unsigned(view.prev_reset));
    }
    map.insert("metadata", json_object(&row.metadata));
    map.insert("create_time", row.create_time_ms.div_euclid(1000));
    map.insert("start_time", row.start_time);
    map.insert(
        "end_time",
        if row.end_time > 0 {
            NkValue::from(row.end_time)
        } else {
            NkValue::Nil
        },
    );
    map.insert(
        "operator",
        match row.operator {
            Operator::Best => "best",
            Operator::Set => "set",
            Operator::Increment => "increment",
            Operator::Decrement => "decrement",
        },
    );
    map.insert(
        "join_required",
        view.show_join_required && row.join_required,
    );
    map.into()
}

#[cfg(test)]
mod tests;
