//! What an account deletion takes with it beyond the user row's foreign keys: its leaderboard
//! records on every board and period (Nakama's `DeleteAccount` → `LeaderboardRecordsDeleteAll`).

use uuid::Uuid;

use super::{Fixture, NOW, device, new_user};
use crate::{Leaderboard, Operator, RecordQuery, RecordWrite, SortOrder, Storage};

async fn user(store: &dyn Storage, name: &str) -> Uuid {
    let new = new_user(name, device(&format!("device-{name}")));
    let id = new.id;
    store.create_user(new).await.expect("create user");
    id
}

async fn owners(store: &dyn Storage, board: &str, expiry_time: i64) -> Vec<Uuid> {
    store
        .list_records(RecordQuery {
            leaderboard_id: board.into(),
            expiry_time,
            ascending: false,
            after: None,
            limit: 100,
        })
        .await
        .expect("list")
        .into_iter()
        .map(|r| r.owner_id)
        .collect()
}

pub async fn account_deletion_removes_leaderboard_records(f: &dyn Fixture) {
    let store = f.open().await;
    let gone = user(&*store, "gone").await;
    let stays = user(&*store, "stays").await;
    // Server code may write records for ids that are no user.
    let not_a_user = Uuid::new_v4();
    for id in ["alltime", "weekly"] {
        store
            .create_leaderboard(Leaderboard {
                create_time_ms: NOW,
                ..Leaderboard::new(id, SortOrder::Descending, Operator::Best)
            })
            .await
            .expect("board");
    }
    let write = |board: &str, owner: Uuid, score: i64, expiry_time: i64| RecordWrite {
        leaderboard_id: board.into(),
        owner_id: owner,
        username: None,
        score,
        subscore: 0,
        metadata: None,
        operator: Operator::Best,
        sort_order: SortOrder::Descending,
        expiry_time,
        now_ms: NOW,
    };
    for (board, expiry) in [
        ("alltime", 0),
        ("weekly", 1_700_000_600),
        ("weekly", 1_700_001_200),
    ] {
        for (owner, score) in [(gone, 30), (stays, 20), (not_a_user, 10)] {
            store
                .write_record(write(board, owner, score, expiry))
                .await
                .expect("write");
        }
    }
    assert!(store.delete_user(gone).await.expect("delete"));
    for (board, expiry) in [
        ("alltime", 0),
        ("weekly", 1_700_000_600),
        ("weekly", 1_700_001_200),
    ] {
        assert_eq!(
            owners(&*store, board, expiry).await,
            vec![stays, not_a_user],
            "{board}/{expiry}: the deleted account's record is gone, the others stay"
        );
    }
    // Deleting another account leaves records of ids that are no user alone.
    assert!(store.delete_user(stays).await.expect("delete"));
    assert_eq!(owners(&*store, "alltime", 0).await, vec![not_a_user]);
}
