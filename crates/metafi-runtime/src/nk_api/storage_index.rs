//! Storage indexes: `storage_index_list` (Nakama's argument order, bounds and words in each
//! language). The registrations (`register_storage_index`, `…_filter`) are the engines'.

use metafi_core::storage_index::IndexQuery;

use super::storage::{object_value, ready};
use super::{NkArgs, NkCall, NkError, NkFunction, NkFuture, NkMap, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[NkFunction {
    lua: Some("storage_index_list"),
    js: Some("storageIndexList"),
    call: NkCall::Async(storage_index_list),
}];

/// Nakama's bounds of a listing's page.
const MAX_LIMIT: i64 = 10_000;

fn storage_index_list(nk: Nk, args: NkArgs) -> NkFuture {
    let js = args.is_js();
    let request = match list_request(&args) {
        Ok(request) => request,
        Err(e) => return ready(Err(e)),
    };
    let indexes = match nk.storage_indexes(if js {
        "storageIndexList"
    } else {
        "storage_index_list"
    }) {
        Ok(indexes) => indexes.clone(),
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let page = indexes.list(request).await.map_err(|e| {
            NkError::core(
                if js {
                    "failed to lookup storage index"
                } else {
                    "error in storage index list"
                },
                e,
            )
        })?;
        let objects: NkValue = page
            .objects
            .iter()
            .map(object_value)
            .collect::<Vec<_>>()
            .into();
        let cursor: NkValue = page.cursor.into();
        // Lua returns two values (`objects, cursor`), JavaScript one object.
        Ok(if js {
            NkMap::new()
                .with("objects", objects)
                .with("cursor", cursor)
                .into()
        } else {
            NkValue::Multi(vec![objects, cursor])
        })
    })
}

/// `(index, query, limit?, order, caller_id?, cursor?)`; Lua's order is a required table,
/// JavaScript's an optional array.
fn list_request(args: &NkArgs) -> Result<IndexQuery, NkError> {
    let js = args.is_js();
    let string = if js {
        "expects string"
    } else {
        "string expected"
    };
    let index = args.at(1).string(string)?.to_owned();
    let query = args.at(2).string(string)?.to_owned();
    let limit = match args.at(3).opt_integer(if js {
        "expects number"
    } else {
        "number expected"
    })? {
        None => 100,
        Some(n) if (1..=MAX_LIMIT).contains(&n) => n,
        Some(_) => {
            return Err(args.at(3).error(if js {
                "limit must be 1-10000"
            } else {
                "invalid limit: expects value 1-10000"
            }));
        }
    };
    let order_arg = args.at(4);
    let order = if js && order_arg.is_nil() {
        Vec::new()
    } else {
        let items = order_arg.list(if js {
            "expects an array of strings"
        } else {
            "table expected"
        })?;
        items
            .iter()
            .map(|item| {
                item.string(if js {
                    "expects an array of strings"
                } else {
                    "expects each field to be string"
                })
                .map(str::to_owned)
            })
            .collect::<Result<Vec<_>, _>>()?
    };
    let caller = args.at(5).opt_uuid(if js {
        "expects caller id to be valid identifier"
    } else {
        "expects caller ID to be empty or a valid identifier"
    })?;
    let cursor = args
        .at(6)
        .opt_string(if js {
            "expects string"
        } else {
            "string expected"
        })?
        .filter(|c| !c.is_empty())
        .map(str::to_owned);
    Ok(IndexQuery {
        index,
        query,
        limit: limit as usize,
        order,
        caller,
        cursor,
    })
}
