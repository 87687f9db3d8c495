//! Deleting an account removes its records from every board (Nakama's `DeleteAccount`), and
//! the ranks are right at once: the records below it move up, the counts drop.

use std::sync::Arc;

use metafi_storage::{NewIdentity, NewUser, Operator, SortOrder, Storage};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use uuid::Uuid;

use super::*;
use crate::{
    Accounts, AccountsConfig, ManualClock, NoSockets, Revocations, Sessions, SessionsConfig,
    TokenKeys,
};

const NOW_MS: i64 = 1_700_000_000_000;

fn board(id: &str, reset_schedule: &str) -> NewBoard {
    NewBoard {
        id: id.into(),
        authoritative: false,
        sort_order: SortOrder::Descending,
        operator: Operator::Best,
        reset_schedule: reset_schedule.into(),
        metadata: "{}".into(),
        enable_ranks: true,
    }
}

async fn user(store: &Arc<dyn Storage>, name: &str) -> Uuid {
    let id = Uuid::new_v4();
    store
        .create_user(NewUser {
            id,
            username: name.into(),
            identity: NewIdentity::Device {
                id: format!("device-{name}"),
            },
            now_ms: NOW_MS,
        })
        .await
        .expect("user");
    id
}

/// (owner, rank) of the board's current page, and its rank count.
async fn ranks(boards: &Leaderboards, id: &str) -> (Vec<(Uuid, i64)>, i64) {
    let list = boards
        .list_records(id, Some(100), "", &[], 0)
        .await
        .expect("list");
    (
        list.records
            .iter()
            .map(|r| (r.record.owner_id, r.rank))
            .collect(),
        list.rank_count,
    )
}

#[tokio::test]
async fn deleting_an_account_removes_its_records_and_moves_the_others_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store: Arc<dyn Storage> = Arc::new(
        SqliteStorage::open(SqliteConfig {
            path: dir.path().join("delete.db"),
            readers: 1,
            ..SqliteConfig::default()
        })
        .expect("open"),
    );
    let clock = Arc::new(ManualClock::new(NOW_MS));
    let boards = Arc::new(
        Leaderboards::load(store.clone(), clock.clone())
            .await
            .expect("load"),
    );
    let sessions = Sessions::new(
        TokenKeys::new(b"session-key", b"refresh-key"),
        SessionsConfig {
            token_expiry_sec: 60,
            refresh_token_expiry_sec: 3600,
        },
        Revocations::load(store.clone(), NOW_MS)
            .await
            .expect("revocations"),
        store.clone(),
        clock.clone(),
    );
    let accounts = Accounts::new(
        store.clone(),
        &AccountsConfig {
            bcrypt_cost: 4,
            max_concurrent_hashes: 1,
            max_exported_objects: 10,
        },
        clock.clone(),
    )
    .with_leaderboards(boards.clone());
    let (first, second, third) = (
        user(&store, "first").await,
        user(&store, "second").await,
        user(&store, "third").await,
    );
    for (id, schedule) in [("alltime", ""), ("daily", "0 0 * * *")] {
        boards.create(board(id, schedule)).await.expect("board");
        for (owner, score) in [(first, 30), (second, 20), (third, 10)] {
            let submission = Submission {
                owner_id: owner,
                username: None,
                score,
                subscore: 0,
                metadata: None,
                operator: None,
            };
            boards.write(None, id, submission).await.expect("write");
        }
        assert_eq!(
            ranks(&boards, id).await,
            (vec![(first, 1), (second, 2), (third, 3)], 3)
        );
    }

    accounts
        .delete(&sessions, &NoSockets, first)
        .await
        .expect("delete");

    for id in ["alltime", "daily"] {
        assert_eq!(
            ranks(&boards, id).await,
            (vec![(second, 1), (third, 2)], 2),
            "{id}: the deleted owner's record is gone and the others moved up"
        );
        let owner = boards
            .list_records(id, None, "", &[first], 0)
            .await
            .expect("owner records");
        assert!(owner.owner_records.is_empty(), "{id}");
    }
    // Storage agrees: ranks rebuilt from it are the same.
    let reloaded = Leaderboards::load(store.clone(), clock.clone())
        .await
        .expect("reload");
    for id in ["alltime", "daily"] {
        assert_eq!(
            ranks(&reloaded, id).await,
            (vec![(second, 1), (third, 2)], 2)
        );
    }
}
