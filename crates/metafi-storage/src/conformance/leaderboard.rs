//! Leaderboards: idempotent creation, operators as Nakama's, rank-order paging, periods,
//! cascading deletion, concurrent increments.

use std::sync::Arc;

use uuid::Uuid;

use super::{Fixture, NOW};
use crate::{
    Leaderboard, LeaderboardRecord, Operator, RecordQuery, RecordWrite, SortOrder, Storage,
    StorageError,
};

fn board(id: &str, order: SortOrder, operator: Operator) -> Leaderboard {
    Leaderboard {
        create_time_ms: NOW,
        ..Leaderboard::new(id, order, operator)
    }
}

fn submit(board: &Leaderboard, owner: Uuid, score: i64, subscore: i64) -> RecordWrite {
    RecordWrite {
        leaderboard_id: board.id.clone(),
        owner_id: owner,
        username: None,
        score,
        subscore,
        metadata: None,
        operator: board.operator,
        sort_order: board.sort_order,
        expiry_time: 0,
        now_ms: NOW,
    }
}

async fn page(
    store: &dyn Storage,
    id: &str,
    ascending: bool,
    after: Option<(i64, i64, Uuid)>,
    limit: usize,
) -> Vec<LeaderboardRecord> {
    store
        .list_records(RecordQuery {
            leaderboard_id: id.into(),
            expiry_time: 0,
            ascending,
            after,
            limit,
        })
        .await
        .expect("list")
}

pub async fn leaderboard_create_is_idempotent_and_listed(f: &dyn Fixture) {
    let store = f.open().await;
    let mut first = board("b", SortOrder::Ascending, Operator::Set);
    first.authoritative = true;
    first.reset_schedule = "0 0 * * *".into();
    first.metadata = "{\"a\":1}".into();
    first.enable_ranks = true;
    let (stored, created) = store
        .create_leaderboard(first.clone())
        .await
        .expect("create");
    assert!(created);
    assert_eq!(stored, first);
    let again = board("b", SortOrder::Descending, Operator::Best);
    let (stored, created) = store.create_leaderboard(again).await.expect("create again");
    assert!(!created, "a second create keeps the first board");
    assert_eq!(stored, first);
    let mut later = board("a", SortOrder::Descending, Operator::Best);
    later.create_time_ms = NOW + 1;
    store.create_leaderboard(later).await.expect("create a");
    let all = store.leaderboards().await.expect("list");
    let ids: Vec<&str> = all.iter().map(|b| b.id.as_str()).collect();
    assert_eq!(ids, ["b", "a"], "oldest first");
    assert!(store.disable_leaderboard_ranks("b").await.expect("disable"));
    assert!(
        !store
            .disable_leaderboard_ranks("nope")
            .await
            .expect("disable")
    );
    let all = store.leaderboards().await.expect("list");
    assert!(!all[0].enable_ranks);
}

/// An operator, an order, three submissions and the `(score, subscore, num_score)` after each.
type OperatorCase = (Operator, SortOrder, [(i64, i64); 3], [(i64, i64, i32); 3]);

pub async fn leaderboard_operators_follow_nakama(f: &dyn Fixture) {
    let store = f.open().await;
    let owner = Uuid::new_v4();
    let cases: [OperatorCase; 5] = [
        (
            Operator::Best,
            SortOrder::Descending,
            [(10, 5), (8, 9), (7, 1)],
            [(10, 5, 1), (10, 9, 2), (10, 9, 2)],
        ),
        (
            Operator::Best,
            SortOrder::Ascending,
            [(10, 5), (12, 1), (11, 3)],
            [(10, 5, 1), (10, 1, 2), (10, 1, 2)],
        ),
        (
            Operator::Set,
            SortOrder::Descending,
            [(10, 5), (3, 4), (3, 4)],
            [(10, 5, 1), (3, 4, 2), (3, 4, 2)],
        ),
        (
            Operator::Increment,
            SortOrder::Descending,
            [(10, 5), (3, 0), (0, 0)],
            [(10, 5, 1), (13, 5, 2), (13, 5, 2)],
        ),
        (
            Operator::Decrement,
            SortOrder::Descending,
            [(10, 5), (3, 1), (1, 9)],
            [(0, 0, 1), (0, 0, 2), (0, 0, 3)],
        ),
    ];
    for (n, (operator, order, submissions, expected)) in cases.into_iter().enumerate() {
        let b = board(&format!("op{n}"), order, operator);
        store.create_leaderboard(b.clone()).await.expect("create");
        for (step, ((score, subscore), want)) in submissions.into_iter().zip(expected).enumerate() {
            let written = store
                .write_record(submit(&b, owner, score, subscore))
                .await
                .expect("write");
            let got = (
                written.record.score,
                written.record.subscore,
                written.record.num_score,
            );
            assert_eq!(got, want, "{operator:?} {order:?} step {step}");
            assert_eq!(written.changed, step == 0 || want.2 as usize == step + 1);
        }
    }
}

pub async fn leaderboard_write_keeps_username_and_metadata_unless_given(f: &dyn Fixture) {
    let store = f.open().await;
    let b = board("meta", SortOrder::Descending, Operator::Set);
    store.create_leaderboard(b.clone()).await.expect("create");
    let owner = Uuid::new_v4();
    let mut first = submit(&b, owner, 1, 0);
    first.username = Some("alice".into());
    let written = store.write_record(first).await.expect("write");
    assert_eq!(written.record.metadata, "{}");
    assert_eq!(written.record.username.as_deref(), Some("alice"));
    let mut second = submit(&b, owner, 2, 0);
    second.metadata = Some("{\"m\":1}".into());
    second.now_ms = NOW + 5;
    let written = store.write_record(second).await.expect("write");
    assert_eq!(written.record.username.as_deref(), Some("alice"));
    assert_eq!(written.record.metadata, "{\"m\":1}");
    assert_eq!(written.record.create_time_ms, NOW);
    assert_eq!(written.record.update_time_ms, NOW + 5);
    let read = store
        .records_of_owners("meta", 0, &[owner, Uuid::new_v4()])
        .await
        .expect("read");
    assert_eq!(read, vec![written.record]);
}

pub async fn leaderboard_negative_scores_are_refused(f: &dyn Fixture) {
    let store = f.open().await;
    let b = board("neg", SortOrder::Descending, Operator::Increment);
    store.create_leaderboard(b.clone()).await.expect("create");
    let owner = Uuid::new_v4();
    assert!(store.write_record(submit(&b, owner, -1, 0)).await.is_err());
    store
        .write_record(submit(&b, owner, 2, 0))
        .await
        .expect("write");
    assert!(store.write_record(submit(&b, owner, -5, 0)).await.is_err());
    let read = store
        .records_of_owners("neg", 0, &[owner])
        .await
        .expect("read");
    assert_eq!(read[0].score, 2, "a refused write changes nothing");
}

pub async fn leaderboard_pages_in_rank_order(f: &dyn Fixture) {
    let store = f.open().await;
    let b = board("rank", SortOrder::Descending, Operator::Set);
    store.create_leaderboard(b.clone()).await.expect("create");
    let mut keys = Vec::new();
    for n in 0..25 {
        let owner = Uuid::new_v4();
        // Ties on score and subscore so that the owner id breaks them.
        let (score, subscore) = (n / 5, n % 2);
        store
            .write_record(submit(&b, owner, score, subscore))
            .await
            .expect("write");
        keys.push((score, subscore, owner));
    }
    keys.sort();
    for ascending in [true, false] {
        let mut want = keys.clone();
        if !ascending {
            want.reverse();
        }
        let mut got = Vec::new();
        let mut after = None;
        loop {
            let records = page(&*store, "rank", ascending, after, 7).await;
            if records.is_empty() {
                break;
            }
            got.extend(records.iter().map(|r| (r.score, r.subscore, r.owner_id)));
            after = got.last().copied();
        }
        assert_eq!(got, want, "ascending: {ascending}");
    }
    let entries = store.rank_entries("rank", NOW / 1000).await.expect("ranks");
    assert_eq!(entries.len(), 25);
}

pub async fn leaderboard_periods_are_separate(f: &dyn Fixture) {
    let store = f.open().await;
    let b = board("period", SortOrder::Descending, Operator::Increment);
    store.create_leaderboard(b.clone()).await.expect("create");
    let owner = Uuid::new_v4();
    let now_s = NOW / 1000;
    for expiry in [now_s - 10, now_s + 10] {
        let mut w = submit(&b, owner, 5, 0);
        w.expiry_time = expiry;
        store.write_record(w.clone()).await.expect("write");
        let written = store.write_record(w).await.expect("write");
        assert_eq!(written.record.score, 10);
    }
    let live = store.rank_entries("period", now_s).await.expect("ranks");
    assert_eq!(live.len(), 1, "only the period that has not ended");
    assert_eq!(live[0].expiry_time, now_s + 10);
    assert!(
        store
            .delete_record("period", now_s + 10, owner)
            .await
            .expect("delete")
    );
    assert!(
        !store
            .delete_record("period", now_s + 10, owner)
            .await
            .expect("delete")
    );
    let old = store
        .records_of_owners("period", now_s - 10, &[owner])
        .await
        .expect("read");
    assert_eq!(
        old.len(),
        1,
        "deleting one period's record keeps the others"
    );
}

pub async fn leaderboard_delete_removes_records(f: &dyn Fixture) {
    let store = f.open().await;
    let b = board("gone", SortOrder::Descending, Operator::Best);
    store.create_leaderboard(b.clone()).await.expect("create");
    let owner = Uuid::new_v4();
    store
        .write_record(submit(&b, owner, 1, 1))
        .await
        .expect("write");
    assert!(store.delete_leaderboard("gone").await.expect("delete"));
    assert!(!store.delete_leaderboard("gone").await.expect("delete"));
    assert!(store.leaderboards().await.expect("list").is_empty());
    store
        .create_leaderboard(b.clone())
        .await
        .expect("create again");
    let read = store
        .records_of_owners("gone", 0, &[owner])
        .await
        .expect("read");
    assert!(read.is_empty(), "records went with the board");
    let bad = store
        .create_leaderboard(board("x\0", SortOrder::Ascending, Operator::Best))
        .await;
    assert!(
        matches!(bad, Err(StorageError::NulCharacter { .. })),
        "{bad:?}"
    );
}

/// Concurrent increments of one record all land: the read-combine-write is atomic.
pub async fn leaderboard_concurrent_increments_all_count(f: &dyn Fixture) {
    let store = f.open().await;
    let b = board("race", SortOrder::Descending, Operator::Increment);
    store.create_leaderboard(b.clone()).await.expect("create");
    let owner = Uuid::new_v4();
    let tasks: Vec<_> = (0..40)
        .map(|_| {
            let store: Arc<dyn Storage> = Arc::clone(&store);
            let w = submit(&b, owner, 1, 2);
            tokio::spawn(async move { store.write_record(w).await })
        })
        .collect();
    for task in tasks {
        task.await.expect("join").expect("write");
    }
    let read = store
        .records_of_owners("race", 0, &[owner])
        .await
        .expect("read");
    assert_eq!(
        (read[0].score, read[0].subscore, read[0].num_score),
        (40, 80, 40)
    );
}
