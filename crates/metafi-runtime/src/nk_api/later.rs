//! Functions of features other issues build (tournaments, storage indexes): rows that let
//! modules load and fail at call time
//! naming the feature. A feature that lands replaces its rows here with served ones.

use super::{NkCall, NkFunction, Unserved};

const fn later(lua: &'static str, js: &'static str, feature: &'static str) -> NkFunction {
    NkFunction {
        lua: Some(lua),
        js: Some(js),
        call: NkCall::Unserved(Unserved::Later { feature }),
    }
}

pub(super) const FUNCTIONS: &[NkFunction] = &[
    // storage_write_retry calls a script function back between attempts, which the binding
    // table cannot carry yet.
    later(
        "storage_write_retry",
        "storageWriteRetry",
        "storage_write_retry (a function taking a callback)",
    ),
    later("tournament_create", "tournamentCreate", "tournaments"),
    later("tournament_delete", "tournamentDelete", "tournaments"),
    later(
        "tournament_add_attempt",
        "tournamentAddAttempt",
        "tournaments",
    ),
    later("tournament_join", "tournamentJoin", "tournaments"),
    later("tournament_list", "tournamentList", "tournaments"),
    later(
        "tournament_ranks_disable",
        "tournamentsRanksDisable",
        "tournaments",
    ),
    later("tournaments_get_id", "tournamentsGetId", "tournaments"),
    later(
        "tournament_records_list",
        "tournamentRecordsList",
        "tournaments",
    ),
    later(
        "tournament_record_write",
        "tournamentRecordWrite",
        "tournaments",
    ),
    later(
        "tournament_record_delete",
        "tournamentRecordDelete",
        "tournaments",
    ),
    later(
        "tournament_records_haystack",
        "tournamentRecordsHaystack",
        "tournaments",
    ),
    later("storage_index_list", "storageIndexList", "storage indexes"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nk_api::camel_case;

    #[test]
    fn every_row_names_its_feature_and_the_js_name_is_nakamas() {
        assert_eq!(
            FUNCTIONS.len(),
            13,
            "Nakama's not-yet-served social/economy functions"
        );
        for row in FUNCTIONS {
            let (Some(lua), Some(js)) = (row.lua, row.js) else {
                panic!("{row:?} lacks a name");
            };
            // Nakama's one irregular JS name: tournament_ranks_disable is tournamentsRanksDisable.
            if lua != "tournament_ranks_disable" {
                assert_eq!(camel_case(lua), js, "{lua}");
            }
            let NkCall::Unserved(why) = row.call else {
                panic!("{lua} is served");
            };
            let message = why.error(js).lua_message(js);
            assert!(
                message.starts_with(&format!(
                    "nk.{js} is not available yet: this server does not serve "
                )),
                "{message}"
            );
        }
    }
}
