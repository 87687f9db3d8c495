//! Leaderboards: `leaderboard_create`, `leaderboard_delete`, `leaderboard_list`,
//! `leaderboard_ranks_disable`, `leaderboard_records_list`,
//! `leaderboard_records_list_cursor_from_rank`, `leaderboard_record_write`,
//! `leaderboard_records_haystack`, `leaderboard_record_delete`, `leaderboards_get_id`, over
//! `metafi_core::Leaderboards` (the service the REST calls use), with the arguments, defaults,
//! errors and result shapes of Nakama's `runtime_lua_nakama.go` and
//! `runtime_javascript_nakama.go`. Server code writes as the server: authoritative boards
//! accept its writes, for any owner.

use std::sync::Arc;

use metafi_core::leaderboards::{Board, NewBoard, RankedRecord, RecordList, Submission};
use metafi_storage::{Operator, SortOrder};
use uuid::Uuid;

use super::{Arg, NkArgs, NkCall, NkError, NkFunction, NkFuture, NkMap, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    row("leaderboard_create", "leaderboardCreate", create),
    row("leaderboard_delete", "leaderboardDelete", delete),
    NkFunction {
        lua: Some("leaderboard_list"),
        js: Some("leaderboardList"),
        call: NkCall::Sync(list),
    },
    row(
        "leaderboard_ranks_disable",
        "leaderboardRanksDisable",
        ranks_disable,
    ),
    row(
        "leaderboard_records_list",
        "leaderboardRecordsList",
        records_list,
    ),
    NkFunction {
        lua: Some("leaderboard_records_list_cursor_from_rank"),
        js: Some("leaderboardRecordsListCursorFromRank"),
        call: NkCall::Sync(cursor_from_rank),
    },
    row("leaderboard_record_write", "leaderboardRecordWrite", write),
    row(
        "leaderboard_records_haystack",
        "leaderboardRecordsHaystack",
        haystack,
    ),
    row(
        "leaderboard_record_delete",
        "leaderboardRecordDelete",
        record_delete,
    ),
    NkFunction {
        lua: Some("leaderboards_get_id"),
        js: Some("leaderboardsGetId"),
        call: NkCall::Sync(get_id),
    },
];

const fn row(lua: &'static str, js: &'static str, call: fn(Nk, NkArgs) -> NkFuture) -> NkFunction {
    NkFunction {
        lua: Some(lua),
        js: Some(js),
        call: NkCall::Async(call),
    }
}

/// `(id, authoritative=false, sort_order="desc", operator="best", reset_schedule="",
/// metadata={}, enable_ranks=false)`; creating an existing board is not an error.
fn create(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let id = args.at(1).non_empty("expects a leaderboard ID string")?;
        let authoritative = opt_bool(&args.at(2))?.unwrap_or(false);
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
        let reset_schedule = opt_str(&args.at(5))?.unwrap_or("").to_owned();
        if !reset_schedule.is_empty()
            && metafi_core::cron::Schedule::parse(&reset_schedule).is_err()
        {
            return Err(args
                .at(5)
                .error("expects reset schedule to be a valid CRON expression"));
        }
        let metadata = metadata(&args, 6)?.unwrap_or_else(|| "{}".to_owned());
        let enable_ranks = opt_bool(&args.at(7))?.unwrap_or(false);
        let service = nk.leaderboards("leaderboard_create")?;
        service
            .create(NewBoard {
                id: id.to_owned(),
                authoritative,
                sort_order,
                operator,
                reset_schedule,
                metadata,
                enable_ranks,
            })
            .await
            .map_err(|e| NkError::failed(format!("error creating leaderboard: {e}")))?;
        Ok(NkValue::Nil)
    })
}

fn delete(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let id = args.at(1).non_empty("expects a leaderboard ID string")?;
        nk.leaderboards("leaderboard_delete")?
            .delete(id)
            .await
            .map_err(|e| NkError::failed(format!("error deleting leaderboard: {e}")))?;
        Ok(NkValue::Nil)
    })
}

/// `(limit=10, cursor="")`: Lua returns `(leaderboards, cursor)`, JavaScript
/// `{leaderboards, cursor}`.
fn list(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let limit = args
        .at(1)
        .opt_integer(if args.is_js() {
            "expects number"
        } else {
            "number expected"
        })?
        .unwrap_or(10);
    if !(1..=100).contains(&limit) {
        return Err(args.at(1).error("limit must be 1-100"));
    }
    let cursor = opt_str(&args.at(2))?.unwrap_or("");
    let service = nk.leaderboards("leaderboard_list")?;
    let now_s = service.now_secs();
    // In range by the check above.
    let (boards, next) = service
        .list(limit as usize, cursor)
        .map_err(|_| args.at(2).error("expects cursor to be valid when provided"))?;
    let boards: Vec<NkValue> = boards
        .iter()
        .map(|b| board_value(b, now_s, args.is_js()))
        .collect();
    let cursor = next.map_or(NkValue::Nil, NkValue::from);
    Ok(if args.is_js() {
        NkMap::new()
            .with("leaderboards", boards)
            .with("cursor", cursor)
            .into()
    } else {
        NkValue::Multi(vec![boards.into(), cursor])
    })
}

fn ranks_disable(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let id = if args.is_js() {
            opt_str(&args.at(1))?.unwrap_or("")
        } else {
            args.at(1).non_empty("expects a leaderboard id string")?
        };
        nk.leaderboards("leaderboard_ranks_disable")?
            .disable_ranks(id)
            .await
            .map_err(|e| {
                if args.is_js() {
                    NkError::failed(e.to_string())
                } else {
                    NkError::failed(format!("error disabling leaderboard ranks: {e}"))
                }
            })?;
        Ok(NkValue::Nil)
    })
}

/// `(id, owner_ids, limit, cursor="", expiry_override=0)`. Without a limit only the owners'
/// records are read. Lua returns `(records, owner_records, next_cursor, prev_cursor,
/// rank_count)` (or one empty table for an empty owner list, as Nakama); JavaScript an object.
fn records_list(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let id = args.at(1).non_empty("expects a leaderboard ID string")?;
        let Some(owners) = owner_ids(&args.at(2), js)? else {
            // Lua's empty owner list: one empty table, as Nakama answers.
            return Ok(NkValue::List(Vec::new()));
        };
        let limit = args.at(3).opt_integer("expects number")?.unwrap_or(0);
        if !js && !(0..=10_000).contains(&limit) {
            return Err(args.at(3).error("expects limit to be 0-10000"));
        }
        let limit = usize::try_from(limit).ok().filter(|l| *l != 0);
        let cursor = opt_str(&args.at(4))?.unwrap_or("");
        let expiry = args.at(5).opt_integer("expects number")?.unwrap_or(0);
        let list = nk
            .leaderboards("leaderboard_records_list")?
            .list_records(id, limit, cursor, &owners, expiry)
            .await
            .map_err(|e| NkError::failed(format!("error listing leaderboard records: {e}")))?;
        Ok(list_value(list, js, false))
    })
}

/// `(id, rank, expiry_override=0)`: a cursor that lists from `rank` on ("" for rank 1).
fn cursor_from_rank(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let js = args.is_js();
    let id = args.at(1).non_empty(if js {
        "invalid leaderboard id"
    } else {
        "expects a leaderboard ID string"
    })?;
    let rank = args.at(2).integer("expects number")?;
    if rank < 1 {
        return Err(args.at(2).error("invalid rank - must be > 1"));
    }
    let expiry = args.at(3).opt_integer("expects number")?.unwrap_or(0);
    let service = nk.leaderboards("leaderboard_records_list_cursor_from_rank")?;
    if service.get(id).is_none() {
        return Err(if js {
            args.at(1).error("leaderboard not found")
        } else {
            NkError::failed("error listing leaderboard records: leaderboard not found")
        });
    }
    service
        .cursor_from_rank(id, rank, expiry)
        .map(NkValue::from)
        .map_err(|e| NkError::failed(format!("failed to get cursor from rank: {e}")))
}

/// `(id, owner_id, username="", score=0, subscore=0, metadata, override_operator)`.
fn write(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let id = args.at(1).non_empty("expects a leaderboard ID string")?;
        let owner = args
            .at(2)
            .uuid("expects owner ID to be a valid identifier")?;
        let username = opt_str(&args.at(3))?.filter(|u| !u.is_empty());
        let score = args.at(4).opt_integer("expects number")?.unwrap_or(0);
        if !js && score < 0 {
            return Err(args.at(4).error("expects score to be >= 0"));
        }
        let subscore = args.at(5).opt_integer("expects number")?.unwrap_or(0);
        if !js && subscore < 0 {
            // Nakama names the score's position here.
            return Err(NkError::Arg {
                position: 4,
                message: "expects subscore to be >= 0".into(),
            });
        }
        let metadata = metadata(&args, 6)?;
        let operator = match opt_str(&args.at(7))? {
            None | Some("") => None,
            Some(text) => Some(
                operator(if js {
                    text.to_lowercase()
                } else {
                    text.to_owned()
                })
                .ok_or_else(|| args.at(7).error("invalid operator"))?,
            ),
        };
        let record = nk
            .leaderboards("leaderboard_record_write")?
            .write(
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
            .map_err(|e| NkError::failed(format!("error writing leaderboard record: {e}")))?;
        Ok(record_value(&record))
    })
}

/// `(id, owner_id, limit=10, cursor="", expiry=0)`: the records around an owner. Lua returns
/// `(records, next_cursor, prev_cursor, rank_count)`; JavaScript an object.
fn haystack(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let js = args.is_js();
        let id = args.at(1).non_empty("expects a leaderboard ID string")?;
        let owner = args
            .at(2)
            .uuid("expects user ID to be a valid identifier")?;
        let limit = args.at(3).opt_integer("expects number")?.unwrap_or(10);
        if !(1..=100).contains(&limit) {
            return Err(args.at(3).error("limit must be 1-100"));
        }
        let cursor = opt_str(&args.at(4))?.unwrap_or("");
        let expiry = args.at(5).opt_integer("expects number")?.unwrap_or(0);
        if !js && expiry < 0 {
            return Err(args.at(5).error(
                "expiry should be time since epoch in seconds and has to be a positive integer",
            ));
        }
        let list = nk
            .leaderboards("leaderboard_records_haystack")?
            // In range by the check above.
            .haystack(id, owner, limit as usize, cursor, expiry)
            .await
            .map_err(|e| {
                NkError::failed(if js {
                    format!("error listing leaderboard records around owner: {e}")
                } else {
                    format!("error listing leaderboard records haystack: {e}")
                })
            })?;
        Ok(list_value(list, js, true))
    })
}

fn record_delete(nk: Nk, args: NkArgs) -> NkFuture {
    Box::pin(async move {
        let id = args.at(1).non_empty("expects a leaderboard ID string")?;
        let owner = args
            .at(2)
            .uuid("expects owner ID to be a valid identifier")?;
        nk.leaderboards("leaderboard_record_delete")?
            .delete_record(None, id, owner)
            .await
            .map_err(|e| NkError::failed(format!("error deleting leaderboard record: {e}")))?;
        Ok(NkValue::Nil)
    })
}

/// `(ids)`: the leaderboards (not tournaments) among `ids`, missing ones left out.
fn get_id(nk: &Nk, args: NkArgs) -> Result<NkValue, NkError> {
    let js = args.is_js();
    let arg = args.at(1);
    if arg.is_nil() {
        return Err(arg.error(if js {
            "expects an array of leaderboard ids"
        } else {
            "invalid tournament id list"
        }));
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
                return Err(item.error(if js {
                    "expects an array of strings"
                } else {
                    "each tournament id must be a string"
                }));
            }
        }
    }
    let service = nk.leaderboards("leaderboards_get_id")?;
    let now_s = service.now_secs();
    Ok(service
        .get_many(&ids)
        .iter()
        .map(|b| board_value(b, now_s, js))
        .collect::<Vec<_>>()
        .into())
}

pub(super) fn operator(text: String) -> Option<Operator> {
    match text.as_str() {
        "best" => Some(Operator::Best),
        "set" => Some(Operator::Set),
        "incr" | "increment" => Some(Operator::Increment),
        "decr" | "decrement" => Some(Operator::Decrement),
        _ => None,
    }
}

/// A board as Nakama's runtimes show it: Lua's `sort_order` is a string ("0", "1"),
/// JavaScript's a number; resets only when the board has a schedule.
fn board_value(board: &Arc<Board>, now_s: i64, js: bool) -> NkValue {
    let row = &board.row;
    let mut map = NkMap::with_capacity(8);
    map.insert("id", row.id.as_str());
    map.insert("authoritative", row.authoritative);
    map.insert(
        "operator",
        match row.operator {
            Operator::Best => "best",
            Operator::Set => "set",
            Operator::Increment => "increment",
            Operator::Decrement => "decrement",
        },
    );
    let order = i64::from(row.sort_order.code());
    if js {
        map.insert("sort_order", order);
    } else {
        map.insert("sort_order", order.to_string());
    }
    map.insert("metadata", json_object(&row.metadata));
    map.insert("create_time", row.create_time_ms.div_euclid(1000));
    if board.schedule.is_some() {
        let next = board.expiry_at(now_s);
        if next != 0 {
            map.insert("next_reset", next);
        }
        let prev = board.prev_reset(now_s);
        if prev != 0 {
            map.insert("prev_reset", prev);
        }
    }
    map.into()
}

pub(super) fn record_value(ranked: &RankedRecord) -> NkValue {
    let r = &ranked.record;
    let mut map = NkMap::with_capacity(12);
    map.insert("leaderboard_id", r.leaderboard_id.as_str());
    map.insert("owner_id", r.owner_id.to_string());
    map.insert(
        "username",
        r.username.as_deref().map_or(NkValue::Nil, NkValue::from),
    );
    map.insert("score", r.score);
    map.insert("subscore", r.subscore);
    map.insert("num_score", i64::from(r.num_score));
    map.insert("max_num_score", i64::from(r.max_num_score));
    map.insert("metadata", json_object(&r.metadata));
    map.insert("create_time", r.create_time_ms.div_euclid(1000));
    map.insert("update_time", r.update_time_ms.div_euclid(1000));
    map.insert(
        "expiry_time",
        if r.expiry_time == 0 {
            NkValue::Nil
        } else {
            r.expiry_time.into()
        },
    );
    map.insert("rank", ranked.rank);
    map.into()
}

pub(super) fn list_value(list: RecordList, js: bool, haystack: bool) -> NkValue {
    let records: Vec<NkValue> = list.records.iter().map(record_value).collect();
    let owners: Vec<NkValue> = list.owner_records.iter().map(record_value).collect();
    let cursor = |c: String| {
        if c.is_empty() {
            NkValue::Nil
        } else {
            NkValue::from(c)
        }
    };
    let next = cursor(list.next_cursor);
    let prev = cursor(list.prev_cursor);
    if js {
        return NkMap::new()
            .with("records", records)
            .with("owner_records", owners)
            .with("next_cursor", next)
            .with("prev_cursor", prev)
            .with("rank_count", list.rank_count)
            .into();
    }
    let mut out = vec![NkValue::from(records)];
    if !haystack {
        out.push(owners.into());
    }
    out.extend([next, prev, list.rank_count.into()]);
    NkValue::Multi(out)
}

/// A stored JSON object as a value; an empty map for empty or broken text.
pub(super) fn json_object(text: &str) -> NkValue {
    match NkValue::from_json_text(text) {
        NkValue::Nil => NkValue::Map(NkMap::new()),
        value => value,
    }
}

/// Metadata at `position`: `None` for nil, else a table/object as JSON text.
pub(super) fn metadata(args: &NkArgs, position: usize) -> Result<Option<String>, NkError> {
    let arg = args.at(position);
    if arg.is_nil() {
        return Ok(None);
    }
    let message = if args.is_js() {
        "expects metadata to be an object"
    } else {
        "table expected"
    };
    if arg.value.as_list().is_some_and(<[NkValue]>::is_empty) {
        // An empty Lua table may arrive as an empty list.
        return Ok(Some("{}".to_owned()));
    }
    let map = arg.value.as_map().ok_or_else(|| arg.error(message))?;
    let json = NkValue::Map(map.clone())
        .to_go_json(args.naming())
        .map_err(|e| NkError::failed(format!("error encoding metadata: {e}")))?;
    Ok(Some(json.to_string()))
}
/// The owner ids a records listing takes (boards and tournaments alike): nil for none, a list
/// of UUID strings. `None` for Lua's empty list (an empty Lua table may arrive as an empty map),
/// which Nakama answers with one empty table instead of the usual results.
pub(super) fn owner_ids(arg: &Arg<'_>, js: bool) -> Result<Option<Vec<Uuid>>, NkError> {
    let empty_map = arg.value.as_map().is_some_and(NkMap::is_empty);
    if empty_map && !js {
        return Ok(None);
    }
    let mut owners = Vec::new();
    if arg.is_nil() || empty_map {
        return Ok(Some(owners));
    }
    let (list_message, id_message) = if js {
        ("expects an array of user ids", "expects a valid owner id")
    } else {
        (
            "expects each owner ID to be string",
            "expects each owner ID to be a valid identifier",
        )
    };
    let items = arg.list(list_message)?;
    if items.is_empty() && !js {
        return Ok(None);
    }
    for item in items {
        let text = item.string(list_message)?;
        owners.push(Uuid::parse_str(text).map_err(|_| item.error(id_message))?);
    }
    Ok(Some(owners))
}

pub(super) fn opt_str<'a>(arg: &Arg<'a>) -> Result<Option<&'a str>, NkError> {
    arg.opt_string(if arg.naming == super::Naming::Camel {
        "expects string"
    } else {
        "string expected"
    })
}

pub(super) fn opt_bool(arg: &Arg<'_>) -> Result<Option<bool>, NkError> {
    arg.opt_bool(if arg.naming == super::Naming::Camel {
        "expects boolean"
    } else {
        "boolean expected"
    })
}

#[cfg(test)]
mod tests;
