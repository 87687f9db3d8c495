//! Functions of features other issues build (notifications, wallets, leaderboards, tournaments,
//! groups, friends, storage indexes): rows that let modules load and fail at call time
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
    // Both take more than values: multi_update writes wallets (the economy issue) in the
    // same transaction as accounts and storage; storage_write_retry calls a script function
    // back between attempts, which the binding table cannot carry yet.
    later("multi_update", "multiUpdate", "wallets (multi_update)"),
    later(
        "storage_write_retry",
        "storageWriteRetry",
        "storage_write_retry (a function taking a callback)",
    ),
    later("users_get_friend_status", "usersGetFriendStatus", "friends"),
    later("notification_send", "notificationSend", "notifications"),
    later("notifications_send", "notificationsSend", "notifications"),
    later(
        "notification_send_all",
        "notificationSendAll",
        "notifications",
    ),
    later("notifications_list", "notificationsList", "notifications"),
    later(
        "notifications_delete",
        "notificationsDelete",
        "notifications",
    ),
    later(
        "notifications_get_id",
        "notificationsGetId",
        "notifications",
    ),
    later(
        "notifications_delete_id",
        "notificationsDeleteId",
        "notifications",
    ),
    later(
        "notifications_update",
        "notificationsUpdate",
        "notifications",
    ),
    later("wallet_update", "walletUpdate", "wallets"),
    later("wallets_update", "walletsUpdate", "wallets"),
    later("wallet_ledger_update", "walletLedgerUpdate", "wallets"),
    later("wallet_ledger_list", "walletLedgerList", "wallets"),
    later("leaderboard_create", "leaderboardCreate", "leaderboards"),
    later("leaderboard_delete", "leaderboardDelete", "leaderboards"),
    later("leaderboard_list", "leaderboardList", "leaderboards"),
    later(
        "leaderboard_ranks_disable",
        "leaderboardRanksDisable",
        "leaderboards",
    ),
    later(
        "leaderboard_records_list",
        "leaderboardRecordsList",
        "leaderboards",
    ),
    later(
        "leaderboard_records_list_cursor_from_rank",
        "leaderboardRecordsListCursorFromRank",
        "leaderboards",
    ),
    later(
        "leaderboard_record_write",
        "leaderboardRecordWrite",
        "leaderboards",
    ),
    later(
        "leaderboard_records_haystack",
        "leaderboardRecordsHaystack",
        "leaderboards",
    ),
    later(
        "leaderboard_record_delete",
        "leaderboardRecordDelete",
        "leaderboards",
    ),
    later("leaderboards_get_id", "leaderboardsGetId", "leaderboards"),
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
    later("groups_get_id", "groupsGetId", "groups"),
    later("group_create", "groupCreate", "groups"),
    later("group_update", "groupUpdate", "groups"),
    later("group_delete", "groupDelete", "groups"),
    later("group_user_join", "groupUserJoin", "groups"),
    later("group_user_leave", "groupUserLeave", "groups"),
    later("group_users_add", "groupUsersAdd", "groups"),
    later("group_users_ban", "groupUsersBan", "groups"),
    later("group_users_promote", "groupUsersPromote", "groups"),
    later("group_users_demote", "groupUsersDemote", "groups"),
    later("group_users_list", "groupUsersList", "groups"),
    later("group_users_kick", "groupUsersKick", "groups"),
    later("groups_list", "groupsList", "groups"),
    later("groups_get_random", "groupsGetRandom", "groups"),
    later("user_groups_list", "userGroupsList", "groups"),
    later("friend_metadata_update", "friendMetadataUpdate", "friends"),
    later("friends_list", "friendsList", "friends"),
    later("friends_of_friends_list", "friendsOfFriendsList", "friends"),
    later("friends_add", "friendsAdd", "friends"),
    later("friends_delete", "friendsDelete", "friends"),
    later("friends_block", "friendsBlock", "friends"),
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
            58,
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
