//! Wallets: `wallet_update`, `wallets_update`, `wallet_ledger_update`, `wallet_ledger_list`,
//! and `multi_update` (accounts, storage objects and wallets in one transaction), over
//! `metafi_core::wallets::Wallets`. Arguments, results and errors are Nakama's
//! (`runtime_lua_nakama.go`, `runtime_javascript_nakama.go`), which differ per language.

use metafi_core::wallets::{LedgerList, MultiUpdateInput, WalletUpdate};
use metafi_storage::{AccountUpdate, Balances, LedgerItem, MultiResult, ObjectAck, WalletResult};
use uuid::Uuid;

use super::storage::{delete_input, entries, ready, write_input};
use super::{Arg, MapArg, NkArgs, NkCall, NkError, NkFunction, NkFuture, NkKey, NkMap, NkValue};
use crate::nk::Nk;

pub(super) const FUNCTIONS: &[NkFunction] = &[
    NkFunction {
        lua: Some("wallet_update"),
        js: Some("walletUpdate"),
        call: NkCall::Async(wallet_update),
    },
    NkFunction {
        lua: Some("wallets_update"),
        js: Some("walletsUpdate"),
        call: NkCall::Async(wallets_update),
    },
    NkFunction {
        lua: Some("wallet_ledger_update"),
        js: Some("walletLedgerUpdate"),
        call: NkCall::Async(wallet_ledger_update),
    },
    NkFunction {
        lua: Some("wallet_ledger_list"),
        js: Some("walletLedgerList"),
        call: NkCall::Async(wallet_ledger_list),
    },
    NkFunction {
        lua: Some("multi_update"),
        js: Some("multiUpdate"),
        call: NkCall::Async(multi_update),
    },
];

/// `(user_id, changeset, metadata?, update_ledger?)`. Lua returns `updated, previous`;
/// JavaScript `{updated, previous, userId}`.
fn wallet_update(nk: Nk, args: NkArgs) -> NkFuture {
    let js = args.is_js();
    let parsed = (|| {
        let user_id = args.at(1).uuid("expects a valid user id")?;
        let changeset = changeset(
            &args.at(2),
            if js {
                "expects a changeset object"
            } else {
                "expects a table as changeset value"
            },
        )?;
        let metadata = metadata(
            &args.at(3),
            if js {
                "expects metadata to be a key value object"
            } else {
                "expects a table as metadata value"
            },
        )?;
        let ledger = args.at(4).opt_bool("expects a boolean")?.unwrap_or(false);
        Ok((
            WalletUpdate {
                user_id,
                changeset,
                metadata,
            },
            ledger,
        ))
    })();
    let (update, ledger) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let wallets = nk.wallets("wallet_update")?;
        let result = wallets
            .update(vec![update], ledger)
            .await
            .map_err(|e| NkError::core("failed to update user wallet", e))?;
        let Some(result) = result.into_iter().next() else {
            return Err(if js {
                args.at(1).error("user not found")
            } else {
                NkError::failed("user not found")
            });
        };
        Ok(if js {
            result_value(&result)
        } else {
            NkValue::Multi(vec![
                balances_value(&result.updated),
                balances_value(&result.previous),
            ])
        })
    })
}

/// `(updates, update_ledger?)`: a list of `{user_id, changeset, metadata?}`; the results in
/// order, updates of unknown users skipped. Lua returns nothing for an empty list.
fn wallets_update(nk: Nk, args: NkArgs) -> NkFuture {
    let js = args.is_js();
    let parsed = (|| {
        let message = if js {
            "expects an array of wallet update objects"
        } else {
            "expects a valid set of updates"
        };
        let updates = update_list(&args, 1, message)?;
        let ledger = args.at(2).opt_bool("expects a boolean")?.unwrap_or(false);
        Ok((updates, ledger))
    })();
    let (updates, ledger) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return ready(Err(e)),
    };
    if updates.is_empty() && !js {
        return ready(Ok(NkValue::Multi(Vec::new())));
    }
    Box::pin(async move {
        let wallets = nk.wallets("wallets_update")?;
        let results = wallets
            .update(updates, ledger)
            .await
            .map_err(|e| NkError::core("failed to update user wallet", e))?;
        Ok(results.iter().map(result_value).collect::<Vec<_>>().into())
    })
}

/// `(id, metadata)`: merges the metadata into a ledger item's. The result has the id passed
/// in, the item's user, times and changeset, and — as in Nakama — the metadata argument as
/// given (Lua), or that argument as `changeset` and no metadata (JavaScript).
fn wallet_ledger_update(nk: Nk, args: NkArgs) -> NkFuture {
    let js = args.is_js();
    let parsed = (|| {
        let id_arg = args.at(1);
        let id_text = id_arg.non_empty("expects a valid id")?;
        let id = Uuid::parse_str(id_text).map_err(|_| id_arg.error("expects a valid id"))?;
        let message = if js {
            "expects metadata object"
        } else {
            "expects a table as metadata value"
        };
        let metadata_arg = args.at(2);
        if metadata_arg.is_nil() {
            return Err(metadata_arg.error(message));
        }
        let text = metadata(&metadata_arg, message)?;
        Ok((id_text.to_owned(), id, text, metadata_arg.value.clone()))
    })();
    let (id_text, id, text, given) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let wallets = nk.wallets("wallet_ledger_update")?;
        let item = wallets
            .ledger_update(id, text)
            .await
            .map_err(|e| NkError::core("failed to update user wallet ledger", e))?;
        let given = match given {
            NkValue::List(items) if items.is_empty() => NkMap::new().into(),
            other => other,
        };
        let mut map = NkMap::with_capacity(6)
            .with("id", id_text)
            .with("user_id", item.user_id.to_string())
            .with("create_time", item.create_time_ms / 1000)
            .with("update_time", item.update_time_ms / 1000);
        if js {
            map.insert("changeset", given);
            map.insert("metadata", NkValue::Nil);
        } else {
            map.insert("changeset", balances_value(&item.changeset));
            map.insert("metadata", given);
        }
        Ok(map.into())
    })
}

/// `(user_id, limit = 100, cursor = "")`: newest first. Lua returns `items, cursor` (`""`
/// on the last page); JavaScript `{items, cursor}` (`null` on the last page).
fn wallet_ledger_list(nk: Nk, args: NkArgs) -> NkFuture {
    let js = args.is_js();
    let parsed = (|| {
        let user_id = args.at(1).uuid("expects a valid user id")?;
        let limit = match args.at(2).value {
            NkValue::Nil => 100,
            _ if js => args.at(2).integer("expects number")?.max(0),
            value => {
                let limit = value
                    .as_f64()
                    .ok_or_else(|| args.at(2).error("number expected"))?
                    as i64;
                if !(0..=100).contains(&limit) {
                    // Nakama names the first argument here.
                    return Err(args.at(1).error("expects limit to be 0-100"));
                }
                limit
            }
        };
        let cursor = args
            .at(3)
            .opt_string(if js {
                "expects string"
            } else {
                "string expected"
            })?
            .unwrap_or("")
            .to_owned();
        Ok((user_id, usize::try_from(limit).unwrap_or(0), cursor))
    })();
    let (user_id, limit, cursor) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let wallets = nk.wallets("wallet_ledger_list")?;
        let LedgerList { items, cursor } = wallets
            .ledger_list(user_id, limit, &cursor)
            .await
            .map_err(|e| NkError::core("failed to retrieve user wallet ledger", e))?;
        let items: NkValue = items.iter().map(item_value).collect::<Vec<_>>().into();
        Ok(if js {
            NkMap::new()
                .with("items", items)
                .with("cursor", cursor)
                .into()
        } else {
            NkValue::Multi(vec![items, cursor.unwrap_or_default().into()])
        })
    })
}

/// `(account_updates, storage_writes, storage_deletes, wallet_updates, update_ledger?)`,
/// each list optional. Lua returns `acks, results` (nil when empty); JavaScript
/// `{storageWriteAcks, walletUpdateAcks}`.
fn multi_update(nk: Nk, args: NkArgs) -> NkFuture {
    let js = args.is_js();
    let parsed = (|| {
        let mut input = MultiUpdateInput::default();
        if !args.at(1).is_nil() {
            let message = if js {
                "expects an array of account updates"
            } else {
                "expects a valid set of account update data"
            };
            for entry in entries(&args, 1, message)? {
                input.accounts.push(account_update(&entry)?);
            }
        }
        let data_message = if js {
            "expects a valid array of data"
        } else {
            "expects a valid set of storage data"
        };
        if !args.at(2).is_nil() {
            for entry in entries(&args, 2, data_message)? {
                input.writes.push(write_input(&entry)?);
            }
        }
        if !args.at(3).is_nil() {
            for entry in entries(&args, 3, data_message)? {
                input.deletes.push(delete_input(&entry)?);
            }
        }
        if !args.at(4).is_nil() {
            let message = if js {
                "expects an array of wallet update objects"
            } else {
                "expects a valid set of updates"
            };
            input.wallets = update_list(&args, 4, message)?;
        }
        input.ledger = args.at(5).opt_bool("expects a boolean")?.unwrap_or(false);
        Ok(input)
    })();
    let input = match parsed {
        Ok(input) => input,
        Err(e) => return ready(Err(e)),
    };
    Box::pin(async move {
        let wallets = nk.wallets("multi_update")?;
        let MultiResult {
            acks,
            wallets: results,
        } = wallets
            .multi_update(input)
            .await
            .map_err(|e| NkError::core("error running multi update", e))?;
        let acks: Vec<NkValue> = acks.iter().map(ack_value).collect();
        let results: Vec<NkValue> = results.iter().map(result_value).collect();
        Ok(if js {
            NkMap::new()
                .with("storage_write_acks", acks)
                .with("wallet_update_acks", results)
                .into()
        } else {
            let or_nil = |list: Vec<NkValue>| {
                if list.is_empty() {
                    NkValue::Nil
                } else {
                    list.into()
                }
            };
            NkValue::Multi(vec![or_nil(acks), or_nil(results)])
        })
    })
}

/// One account update of `multi_update`: `user_id` and the profile fields to change.
fn account_update(entry: &MapArg<'_>) -> Result<(Uuid, AccountUpdate), NkError> {
    let js = entry.naming == super::Naming::Camel;
    let user_id = match entry.get("user_id").value {
        NkValue::Nil => Uuid::nil(),
        NkValue::Str(text) => Uuid::parse_str(text).map_err(|_| {
            entry.error(if js {
                "expects 'userId' value to be a valid id"
            } else {
                "expects user_id to be a valid ID"
            })
        })?,
        _ => {
            return Err(entry.error(if js {
                "expects 'userId' value to be a string"
            } else {
                "expects user_id to be string"
            }));
        }
    };
    if user_id.is_nil() {
        return Err(entry.error("expects a valid user ID"));
    }
    let text = |field: &'static str, lua_name: &'static str| -> Result<Option<String>, NkError> {
        match entry.get(field).value {
            NkValue::Nil => Ok(None),
            NkValue::Str(s) => Ok(Some(s.clone())),
            _ if js => Err(entry.error("expects a string")),
            _ => Err(entry.error(format!("expects {lua_name} to be string"))),
        }
    };
    let metadata = match entry.get("metadata") {
        arg if arg.is_nil() => None,
        arg => Some(metadata(
            &arg,
            if js {
                "expects metadata to be a key value object"
            } else {
                "expects metadata to be table"
            },
        )?),
    };
    Ok((
        user_id,
        AccountUpdate {
            // Nakama leaves the username alone when it is empty.
            username: text("username", "username")?.filter(|u| !u.is_empty()),
            display_name: text("display_name", "display name")?,
            timezone: text("timezone", "timezone")?,
            location: text("location", "location")?,
            lang_tag: text("lang_tag", "lang tag")?,
            avatar_url: text("avatar_url", "avatar url")?,
            metadata,
            wallet: None,
        },
    ))
}

/// A list of `{user_id, changeset, metadata?}` at `position`.
fn update_list(
    args: &NkArgs,
    position: usize,
    message: &'static str,
) -> Result<Vec<WalletUpdate>, NkError> {
    let js = args.is_js();
    let mut updates = Vec::new();
    for entry in entries(args, position, message)? {
        let user_id = match entry.get("user_id").value {
            NkValue::Str(text) => Uuid::parse_str(text).map_err(|_| {
                entry.error(if js {
                    "expects a valid user id"
                } else {
                    "expects user_id to be a valid ID"
                })
            })?,
            NkValue::Nil if js => return Err(entry.error("expects a user id")),
            // Lua: a missing user_id is the nil UUID, which no user has (skipped).
            NkValue::Nil => Uuid::nil(),
            _ => {
                return Err(entry.error(if js {
                    "expects a valid user id"
                } else {
                    "expects user_id to be string"
                }));
            }
        };
        let changeset_arg = entry.get("changeset");
        if changeset_arg.is_nil() {
            return Err(entry.error(if js {
                "expects changeset object"
            } else {
                "expects changeset to be supplied"
            }));
        }
        let changeset = changeset(
            &changeset_arg,
            if js {
                "expects changeset object"
            } else {
                "expects changeset to be table"
            },
        )?;
        let metadata = match entry.get("metadata") {
            arg if arg.is_nil() => "{}".to_owned(),
            arg => metadata(
                &arg,
                if js {
                    "expects metadata object"
                } else {
                    "expects metadata to be table"
                },
            )?,
        };
        updates.push(WalletUpdate {
            user_id,
            changeset,
            metadata,
        });
    }
    Ok(updates)
}

/// A changeset: a map of whole numbers (an empty Lua table counts).
fn changeset(arg: &Arg<'_>, message: &'static str) -> Result<Balances, NkError> {
    let map = match arg.value {
        NkValue::Map(map) => map,
        NkValue::List(items) if items.is_empty() => return Ok(Balances::new()),
        _ => return Err(arg.error(message)),
    };
    let mut balances = Balances::new();
    for (key, value) in map.iter() {
        let amount = value
            .as_i64()
            .ok_or_else(|| arg.error("expects changeset values to be whole numbers"))?;
        balances.insert(key.spelled(arg.naming).into_owned(), amount);
    }
    Ok(balances)
}

/// Metadata as JSON object text: `{}` for nil or an empty table; `message` for a non-map.
fn metadata(arg: &Arg<'_>, message: &'static str) -> Result<String, NkError> {
    match arg.value {
        NkValue::Nil => Ok("{}".to_owned()),
        NkValue::List(items) if items.is_empty() => Ok("{}".to_owned()),
        NkValue::Map(_) => arg
            .value
            .to_go_json(arg.naming)
            .map(|json| json.to_string())
            .map_err(|e| arg.error(format!("failed to convert metadata: {e}"))),
        _ => Err(arg.error(message)),
    }
}

/// Balances as a map of whole numbers (keys are data, never renamed).
fn balances_value(balances: &Balances) -> NkValue {
    NkValue::Map(NkMap(
        balances
            .iter()
            .map(|(k, v)| (NkKey::Data(k.clone()), NkValue::Int(*v)))
            .collect(),
    ))
}

fn result_value(result: &WalletResult) -> NkValue {
    NkMap::with_capacity(3)
        .with("user_id", result.user_id.to_string())
        .with("previous", balances_value(&result.previous))
        .with("updated", balances_value(&result.updated))
        .into()
}

fn item_value(item: &LedgerItem) -> NkValue {
    NkMap::with_capacity(6)
        .with("id", item.id.to_string())
        .with("user_id", item.user_id.to_string())
        .with("create_time", item.create_time_ms / 1000)
        .with("update_time", item.update_time_ms / 1000)
        .with("changeset", balances_value(&item.changeset))
        .with("metadata", NkValue::from_json_text(&item.metadata))
        .into()
}

/// A multi update's write acknowledgement.
fn ack_value(ack: &ObjectAck) -> NkValue {
    NkMap::with_capacity(4)
        .with("key", ack.key.as_str())
        .with("collection", ack.collection.as_str())
        .with("user_id", ack.user_id.to_string())
        .with("version", ack.version.as_str())
        .into()
}

#[cfg(test)]
#[path = "wallets_tests.rs"]
mod tests;
