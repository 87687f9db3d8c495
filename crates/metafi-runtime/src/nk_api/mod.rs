//! The `nk` API as one table: every function of Nakama's Lua and JavaScript server APIs is a
//! row ([`NkFunction`]) naming it in each language and pointing at one Rust function over
//! [`NkValue`]s. Engines bind the whole table generically (`metafi-runtime-lua`,
//! `metafi-runtime-js`), so a new function is one Rust function plus one row, and Lua and
//! JavaScript cannot drift apart.
//!
//! Rows live with their feature, one file per group (`basics.rs`, `storage.rs`, …); add a
//! group's rows to [`functions`]. Functions that need engine state (registrations, `run_once`,
//! the logger) are bound by each engine itself and listed in `docs/RUNTIME.md`.

mod accounts;
mod args;
mod authenticate;
mod basics;
mod cache;
mod channels;
mod config;
mod cron;
mod crypto;
mod encoding;
mod files;
mod friends;
mod function;
mod groups;
#[cfg(test)]
mod groups_tests;
mod http;
pub mod json;
mod leaderboards;
mod links;
mod matches;
mod metrics_events;
pub mod nakama_names;
mod notifications;
#[cfg(test)]
mod notifications_tests;
mod parties;
mod purchases;
mod seats;
mod sessions;
mod social;
mod status;
mod storage;
mod storage_index;
pub mod storage_retry;
mod streams;
#[cfg(test)]
mod test_realtime;
mod tournaments;
mod unserved;
mod users;
mod utilities;
mod value;
mod wallets;
mod worlds;

#[cfg(test)]
mod test_support;

pub use args::{Arg, MapArg, NkArgs};
pub use cache::LocalCache;
pub use function::{NkCall, NkError, NkFunction, NkFuture, Unserved};
pub use purchases::{purchase_payload, subscription_payload};
pub use utilities::{UtilityConfig, UtilityState};
pub use value::{MAX_CONVERTED_VALUES, Naming, NkKey, NkMap, NkValue, ValueBudget, camel_case};

use crate::nk::Nk;

/// Every row of the binding table, group by group.
pub fn functions() -> impl Iterator<Item = &'static NkFunction> {
    [
        basics::FUNCTIONS,
        json::FUNCTIONS,
        storage::FUNCTIONS,
        storage_index::FUNCTIONS,
        matches::FUNCTIONS,
        encoding::FUNCTIONS,
        crypto::FUNCTIONS,
        cron::FUNCTIONS,
        cache::FUNCTIONS,
        metrics_events::FUNCTIONS,
        http::FUNCTIONS,
        files::FUNCTIONS,
        config::FUNCTIONS,
        unserved::FUNCTIONS,
        streams::FUNCTIONS,
        channels::FUNCTIONS,
        status::FUNCTIONS,
        sessions::FUNCTIONS,
        accounts::FUNCTIONS,
        users::FUNCTIONS,
        authenticate::FUNCTIONS,
        links::FUNCTIONS,
        notifications::FUNCTIONS,
        friends::FUNCTIONS,
        groups::FUNCTIONS,
        wallets::FUNCTIONS,
        leaderboards::FUNCTIONS,
        tournaments::FUNCTIONS,
        social::FUNCTIONS,
        parties::FUNCTIONS,
        purchases::FUNCTIONS,
        seats::FUNCTIONS,
        worlds::FUNCTIONS,
        TEST_ROWS,
    ]
    .into_iter()
    .flatten()
}

/// Rows only test builds have (feature `test-util`): `test_echo` / `testEcho` returns its first
/// argument, so engine tests can check value conversion both ways (binary data included).
#[cfg(feature = "test-util")]
const TEST_ROWS: &[NkFunction] = &[NkFunction {
    lua: Some("test_echo"),
    js: Some("testEcho"),
    call: NkCall::Sync(|_, mut args| Ok(args.take(1))),
}];
#[cfg(not(feature = "test-util"))]
const TEST_ROWS: &[NkFunction] = &[];

/// The row Lua calls `name`.
pub fn lua_function(name: &str) -> Option<&'static NkFunction> {
    functions().find(|f| f.lua == Some(name))
}

/// The row JavaScript calls `name`.
pub fn js_function(name: &str) -> Option<&'static NkFunction> {
    functions().find(|f| f.js == Some(name))
}

/// Calls the function Lua names `name` with snake_case arguments: how native Rust modules
/// reach any `nk` function of the table (typed methods on [`Nk`] exist for the common ones).
pub async fn call(nk: &Nk, name: &str, args: Vec<NkValue>) -> Result<NkValue, NkError> {
    let Some(function) = lua_function(name) else {
        return Err(NkError::failed(format!("nk.{name} does not exist")));
    };
    let args = NkArgs::new(Naming::Snake, args);
    match function.call {
        NkCall::Sync(f) => f(nk, args),
        NkCall::Async(f) => f(nk.clone(), args).await,
        NkCall::Unserved(why) => Err(why.error(name)),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn no_name_is_bound_twice_in_a_language() {
        let mut lua = HashSet::new();
        let mut js = HashSet::new();
        for f in functions() {
            if let Some(name) = f.lua {
                assert!(lua.insert(name), "Lua name {name} is in two rows");
            }
            if let Some(name) = f.js {
                assert!(js.insert(name), "JS name {name} is in two rows");
            }
            assert!(f.lua.is_some() || f.js.is_some(), "a row without a name");
        }
    }
}
