//! The conformance suite every backend must pass, and a throughput bench they share.
//!
//! Each behaviour is one public async function taking a [`Fixture`], which opens the backend's
//! store (empty at first, the same data after a close). A backend runs them all with
//! [`conformance_tests!`](crate::conformance_tests), one `#[tokio::test]` per case:
//!
//! ```ignore
//! async fn fixture() -> Option<MyFixture> { Some(MyFixture::new()) }
//! metafi_storage::conformance_tests!(fixture());
//! ```
//!
//! A fixture factory returns `None` to skip (for example PostgreSQL without a server); it says
//! why itself.

mod account;
mod account_delete;
pub mod bench;
mod console;
mod console_users;
mod durability;
mod friend;
mod friend_import;
mod friend_metadata;
mod group;
mod identity;
mod leaderboard;
mod message;
mod notification;
mod object;
mod object_retry;
mod purchase;
mod session;
mod social;
mod text;
mod tournament;
mod wallet;
mod wallet_replace;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use async_trait::async_trait;
use futures_util::FutureExt as _;

pub use account::*;
pub use account_delete::*;
pub use console::*;
pub use console_users::*;
pub use durability::*;
pub use friend::*;
pub use friend_import::*;
pub use friend_metadata::*;
pub use group::*;
pub use identity::*;
pub use leaderboard::*;
pub use message::*;
pub use notification::*;
pub use object::*;
pub use object_retry::*;
pub use purchase::*;
pub use session::*;
pub use social::*;
pub use text::*;
pub use tournament::*;
pub use wallet::*;
pub use wallet_replace::*;

use crate::Storage;

/// A place where one test's store lives: a temporary file, a fresh database.
#[async_trait]
pub trait Fixture: Send + Sync {
    /// Opens the store: empty the first time, with everything durable so far after a close.
    async fn open(&self) -> Arc<dyn Storage>;

    /// Removes what the fixture created. Runs after every case, passed or failed.
    async fn teardown(&self);
}

/// Runs one case against a fixture, tearing the fixture down even when the case panics.
pub async fn run<'a, F, Fut>(fixture: &'a F, case: impl FnOnce(&'a dyn Fixture) -> Fut)
where
    F: Fixture,
    Fut: Future<Output = ()> + 'a,
{
    let outcome = AssertUnwindSafe(case(fixture)).catch_unwind().await;
    fixture.teardown().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// The instant the suite pretends it is, in ms since the epoch.
pub const NOW: i64 = 1_700_000_000_000;

/// Generates one `#[tokio::test]` per conformance case. The argument is an expression that
/// evaluates to a future of `Option<impl Fixture>` (`None` skips the case).
#[macro_export]
macro_rules! conformance_tests {
    ($fixture:expr) => {
        $crate::conformance_tests!(@cases $fixture;
            create_and_find_device,
            create_and_find_custom,
            create_and_find_email,
            find_by_username,
            find_unknown_is_none,
            username_conflict_writes_nothing,
            device_conflict_writes_nothing,
            custom_conflict_writes_nothing,
            email_conflict_writes_nothing,
            identity_conflict_wins_over_username_conflict,
            concurrent_creates_same_device_one_wins,
            account_device_ids_are_sorted,
            link_device_conflicts_and_not_found,
            update_account_partial_fields,
            update_account_username_conflict,
            update_account_not_found,
            users_by_id_and_username,
            link_custom_and_email_conflicts_and_not_found,
            unlink_never_removes_the_last_identity,
            delete_user_removes_identities_and_objects,
            disable_time_bans_and_clears,
            users_after_and_objects_of_user_in_order,
            revoke_twice_is_ok,
            active_revocations_filter_by_expiry,
            purge_removes_expired_revocations,
            user_revocation_keeps_the_later_values,
            purge_removes_expired_user_revocations,
            object_version_is_md5_of_value,
            object_version_checks,
            object_user_cannot_write_others,
            object_write_permission_zero_blocks_clients,
            object_read_visibility,
            object_list_pages_without_gaps_or_dupes,
            object_list_owner_filter_and_visibility,
            object_list_invalid_cursor,
            object_delete_rules,
            object_write_batch_is_atomic,
            object_delete_batch_is_atomic,
            object_concurrent_retry_writers_lose_nothing,
            object_batch_validation,
            object_client_delete_of_missing_object_is_refused,
            object_list_in_nakama_order,
            object_text_with_nul_is_refused,
            object_text_over_nakama_columns_is_refused,
            account_text_with_nul_is_refused,
            account_text_over_nakama_columns_is_refused,
            message_text_with_nul_is_refused,
            message_update_and_remove_by_sender_only,
            message_list_forward_and_backward,
            message_paging_both_ways,
            message_invalid_cursor,
            notification_list_in_order_and_resume_after_a_position,
            notification_insert_is_all_or_nothing,
            notification_get_and_delete_by_id_scoped_to_owner,
            notification_update_changes_only_given_fields,
            notification_goes_with_the_account,
            notification_text_and_code_are_checked,
            data_survives_close_and_reopen,
            writes_after_close_fail,
            group_commit_shares_commits,
            wallet_update_applies_and_records_the_ledger,
            wallet_below_zero_is_refused_and_changes_nothing,
            wallet_changes_of_unknown_users_are_skipped,
            wallet_concurrent_changes_lose_nothing,
            wallet_concurrent_spends_never_overdraw,
            wallet_ledger_pages_newest_first,
            wallet_ledger_update_merges_metadata,
            wallet_ledger_goes_with_its_user,
            multi_update_applies_everything_together,
            multi_update_is_all_or_nothing,
        );
        $crate::conformance_tests!(@cases $fixture;
            friend_invite_then_accept,
            console_users_are_seeded_once,
            console_users_are_managed_and_an_admin_is_kept,
            console_admins_removing_each_other_at_once_keep_one,
            console_mfa_setup_reset_and_recovery_codes,
            console_sign_outs_are_kept_until_they_expire,
            audit_log_pages_newest_first,
            storage_collections_are_listed_once_each,
            friend_accept_merges_top_level_metadata,
            friend_add_leaves_unknown_and_blocked_users_alone,
            friend_block_replaces_edge_and_removes_the_other_side,
            friend_delete_removes_both_sides,
            friend_list_pages_in_state_order,
            friend_edge_limit_refuses_new_edges,
            friend_edges_cascade_on_user_delete,
            friend_states_by_id,
            friends_of_friends_pages,
            friend_concurrent_mutual_adds_end_as_friends,
            group_create_and_name_conflict,
            group_update_fields_conflict_and_missing,
            group_membership_transitions_keep_the_count,
            group_last_superadmin_is_kept,
            group_full_refuses_the_whole_batch,
            group_concurrent_joins_never_exceed_max_count,
            group_members_and_user_groups_page_in_state_order,
            group_list_filters_and_pages,
            group_delete_removes_memberships,
            group_user_deletion_follows_nakama,
            leaderboard_create_is_idempotent_and_listed,
            leaderboard_operators_follow_nakama,
            leaderboard_write_keeps_username_and_metadata_unless_given,
            leaderboard_negative_scores_are_refused,
            leaderboard_pages_in_rank_order,
            leaderboard_periods_are_separate,
            leaderboard_delete_removes_records,
            leaderboard_concurrent_increments_all_count,
            tournament_joins_fill_up_to_the_max_size,
            tournament_writes_count_attempts,
            tournament_join_required_writes,
            tournament_concurrent_joins_respect_the_max_size,
            social_create_find_and_conflicts,
            social_link_conflicts_and_profile,
            social_unlink_keeps_a_way_to_sign_in,
            social_concurrent_creates_same_id_one_wins,
            account_deletion_removes_leaderboard_records,
            friend_metadata_update_replaces_one_edge,
        );
        // Social ids looked up, friends imported from a provider.
        $crate::conformance_tests!(@cases $fixture;
            social_users_found_by_facebook_id,
            friend_import_befriends_linked_users_and_accepts_invites,
            friend_import_reset_keeps_blocks,
            friend_import_respects_the_edge_limit,
            friend_import_concurrent_mutual_imports_end_as_friends,
        );
        // The console's wallet edit: a wallet replaced with an account update.
        $crate::conformance_tests!(@cases $fixture;
            account_update_replaces_the_wallet_without_a_ledger_row,
            account_update_with_a_wallet_is_all_or_nothing,
            wallet_replace_and_concurrent_changes_lose_nothing,
        );
    };
    (@cases $fixture:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                if let Some(fixture) = $fixture.await {
                    $crate::conformance::run(&fixture, $crate::conformance::$case).await;
                }
            }
        )*
    };
}
