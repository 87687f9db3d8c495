//! Tournaments: joins take places up to the max size (also under concurrent joins), writes
//! count every attempt up to the record's limit, join-required tournaments only update joined
//! owners' records, deletes free places, attempts can be added.

use std::sync::Arc;

use uuid::Uuid;

use super::{Fixture, NOW};
use crate::{
    JoinOutcome, Leaderboard, Operator, RecordWrite, SortOrder, Storage, StorageError,
    TournamentRefusal, TournamentWrite,
};

const EXPIRY: i64 = 1_700_003_600;

async fn tournament(store: &dyn Storage, id: &str, max_size: i32, max_num_score: i32) {
    let board = Leaderboard {
        create_time_ms: NOW,
        duration: 3600,
        max_size,
        max_num_score,
        ..Leaderboard::new(id, SortOrder::Descending, Operator::Best)
    };
    store.create_leaderboard(board).await.expect("create");
}

fn submit(id: &str, owner: Uuid, score: i64, join_required: bool, max: i32) -> TournamentWrite {
    TournamentWrite {
        write: RecordWrite {
            leaderboard_id: id.into(),
            owner_id: owner,
            username: Some("u".into()),
            score,
            subscore: 0,
            metadata: None,
            operator: Operator::Best,
            sort_order: SortOrder::Descending,
            expiry_time: EXPIRY,
            now_ms: NOW,
        },
        join_required,
        max_num_score: max,
        has_max_size: true,
    }
}

async fn size(store: &dyn Storage, id: &str) -> i32 {
    store
        .tournament_sizes(&[id.to_owned()])
        .await
        .expect("sizes")[id]
}

async fn join(store: &dyn Storage, id: &str, owner: Uuid) -> JoinOutcome {
    join_with_limit(store, id, owner, 2).await
}

async fn join_with_limit(store: &dyn Storage, id: &str, owner: Uuid, max: i32) -> JoinOutcome {
    store
        .join_tournament(id, EXPIRY, owner, Some("u".into()), max, true, NOW)
        .await
        .expect("join")
}

pub async fn tournament_joins_fill_up_to_the_max_size(f: &dyn Fixture) {
    let store = f.open().await;
    tournament(&*store, "t", 2, 2).await;
    let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    assert_eq!(join(&*store, "t", a).await, JoinOutcome::Joined);
    assert_eq!(join(&*store, "t", a).await, JoinOutcome::AlreadyJoined);
    assert_eq!(join(&*store, "t", b).await, JoinOutcome::Joined);
    assert_eq!(join(&*store, "t", c).await, JoinOutcome::Full);
    assert_eq!(size(&*store, "t").await, 2);
    let joined = store
        .records_of_owners("t", EXPIRY, &[a, c])
        .await
        .expect("read");
    assert_eq!(joined.len(), 1, "a full tournament made no record");
    assert_eq!(
        (
            joined[0].score,
            joined[0].num_score,
            joined[0].max_num_score
        ),
        (0, 0, 2)
    );
    // Deleting a record frees its place; a new period starts empty.
    assert!(
        store
            .delete_tournament_record("t", EXPIRY, a, true)
            .await
            .expect("delete")
    );
    assert_eq!(size(&*store, "t").await, 1);
    assert_eq!(join(&*store, "t", c).await, JoinOutcome::Joined);
    store.reset_tournament_size("t").await.expect("reset");
    assert_eq!(size(&*store, "t").await, 0);
    assert!(
        store
            .tournament_sizes(&["missing".to_owned()])
            .await
            .expect("sizes")
            .is_empty()
    );
}

pub async fn tournament_writes_count_attempts(f: &dyn Fixture) {
    let store = f.open().await;
    tournament(&*store, "t", 1, 2).await;
    let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
    let first = store
        .write_tournament_record(submit("t", a, 5, false, 2))
        .await
        .expect("write")
        .expect("written");
    assert_eq!(
        (first.score, first.num_score, first.max_num_score),
        (5, 1, 2)
    );
    assert_eq!(size(&*store, "t").await, 1);
    // A worse score still counts.
    let second = store
        .write_tournament_record(submit("t", a, 3, false, 2))
        .await
        .expect("write")
        .expect("written");
    assert_eq!((second.score, second.num_score), (5, 2));
    assert_eq!(
        store
            .write_tournament_record(submit("t", a, 9, false, 2))
            .await
            .expect("write"),
        Err(TournamentRefusal::MaxNumScoreReached)
    );
    // More attempts for this owner.
    assert!(
        store
            .add_tournament_attempts("t", EXPIRY, a, 1)
            .await
            .expect("add")
    );
    let third = store
        .write_tournament_record(submit("t", a, 9, false, 2))
        .await
        .expect("write")
        .expect("written");
    assert_eq!(
        (third.score, third.num_score, third.max_num_score),
        (9, 3, 3)
    );
    // The tournament is full for a new owner, and nothing was written for them.
    assert_eq!(
        store
            .write_tournament_record(submit("t", b, 1, false, 2))
            .await
            .expect("write"),
        Err(TournamentRefusal::MaxSizeReached)
    );
    assert!(
        store
            .records_of_owners("t", EXPIRY, &[b])
            .await
            .expect("read")
            .is_empty()
    );
    assert_eq!(size(&*store, "t").await, 1);
    // Scores below zero are refused as on leaderboards.
    tournament(&*store, "n", 0, 0).await;
    let mut negative = submit("n", a, -1, false, 0);
    negative.has_max_size = false;
    negative.write.operator = Operator::Set;
    assert!(matches!(
        store.write_tournament_record(negative).await,
        Err(StorageError::Invalid { .. })
    ));
}

pub async fn tournament_join_required_writes(f: &dyn Fixture) {
    let store = f.open().await;
    tournament(&*store, "j", 10, 1).await;
    let a = Uuid::new_v4();
    assert_eq!(
        store
            .write_tournament_record(submit("j", a, 5, true, 1))
            .await
            .expect("write"),
        Err(TournamentRefusal::JoinRequired)
    );
    assert_eq!(
        join_with_limit(&*store, "j", a, 1).await,
        JoinOutcome::Joined
    );
    let written = store
        .write_tournament_record(submit("j", a, 5, true, 1))
        .await
        .expect("write")
        .expect("written");
    assert_eq!((written.score, written.num_score), (5, 1));
    // At the limit a joined owner's write changes nothing and is not refused (Nakama).
    let kept = store
        .write_tournament_record(submit("j", a, 8, true, 1))
        .await
        .expect("write")
        .expect("kept");
    assert_eq!((kept.score, kept.num_score), (5, 1));
    assert_eq!(size(&*store, "j").await, 1, "only the join took a place");
}

pub async fn tournament_concurrent_joins_respect_the_max_size(f: &dyn Fixture) {
    let store = f.open().await;
    tournament(&*store, "race", 5, 0).await;
    let tasks: Vec<_> = (0..30)
        .map(|i| {
            let store: Arc<dyn Storage> = Arc::clone(&store);
            tokio::spawn(async move {
                let owner = Uuid::new_v4();
                if i % 2 == 0 {
                    join(&*store, "race", owner).await == JoinOutcome::Joined
                } else {
                    store
                        .write_tournament_record(submit("race", owner, i, false, 0))
                        .await
                        .expect("write")
                        .is_ok()
                }
            })
        })
        .collect();
    let mut entered = 0;
    for task in tasks {
        if task.await.expect("task") {
            entered += 1;
        }
    }
    assert_eq!(entered, 5);
    assert_eq!(size(&*store, "race").await, 5);
}
