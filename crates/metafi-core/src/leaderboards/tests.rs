//! The service on a real SQLite store: permissions, ranks after writes and deletes, cursors
//! both ways, the haystack, periods and resets, reload from storage.

use std::sync::Arc;

use metafi_storage::{Operator, SortOrder, Storage};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use uuid::Uuid;

use super::*;
use crate::ManualClock;

/// 2023-11-14 22:13:20 UTC.
const NOW_MS: i64 = 1_700_000_000_000;

struct Env {
    _dir: tempfile::TempDir,
    store: Arc<dyn Storage>,
    clock: Arc<ManualClock>,
    service: Leaderboards,
}

async fn env() -> Env {
    let dir = tempfile::tempdir().expect("tempdir");
    let store: Arc<dyn Storage> = Arc::new(
        SqliteStorage::open(SqliteConfig {
            path: dir.path().join("lb.db"),
            readers: 1,
            ..SqliteConfig::default()
        })
        .expect("open"),
    );
    let clock = Arc::new(ManualClock::new(NOW_MS));
    let service = Leaderboards::load(store.clone(), clock.clone())
        .await
        .expect("load");
    Env {
        _dir: dir,
        store,
        clock,
        service,
    }
}

fn new_board(id: &str, order: SortOrder, operator: Operator) -> NewBoard {
    NewBoard {
        id: id.into(),
        authoritative: false,
        sort_order: order,
        operator,
        reset_schedule: String::new(),
        metadata: "{}".into(),
        enable_ranks: true,
    }
}

fn score(owner: Uuid, score: i64) -> Submission {
    Submission {
        owner_id: owner,
        username: None,
        score,
        subscore: 0,
        metadata: None,
        operator: None,
    }
}

fn owners(n: u128) -> Vec<Uuid> {
    (1..=n).map(Uuid::from_u128).collect()
}

fn keys(list: &[RankedRecord]) -> Vec<(i64, i64)> {
    list.iter().map(|r| (r.record.score, r.rank)).collect()
}

#[tokio::test]
async fn authoritative_boards_refuse_clients_but_not_the_server() {
    let env = env().await;
    let mut board = new_board("auth", SortOrder::Descending, Operator::Best);
    board.authoritative = true;
    env.service.create(board).await.expect("create");
    let owner = Uuid::new_v4();
    let by_client = env
        .service
        .write(Some(owner), "auth", score(owner, 1))
        .await;
    assert!(matches!(by_client, Err(LeaderboardError::Authoritative)));
    let by_server = env
        .service
        .write(None, "auth", score(owner, 1))
        .await
        .expect("server");
    assert_eq!(by_server.rank, 1);
    let delete = env.service.delete_record(Some(owner), "auth", owner).await;
    assert!(matches!(delete, Err(LeaderboardError::Authoritative)));
    let missing = env.service.write(None, "nope", score(owner, 1)).await;
    assert!(matches!(missing, Err(LeaderboardError::NotFound)));
}

#[tokio::test]
async fn ranks_follow_every_write_and_delete() {
    let env = env().await;
    env.service
        .create(new_board("r", SortOrder::Descending, Operator::Set))
        .await
        .expect("create");
    let o = owners(3);
    assert_eq!(
        env.service
            .write(None, "r", score(o[0], 10))
            .await
            .unwrap()
            .rank,
        1
    );
    assert_eq!(
        env.service
            .write(None, "r", score(o[1], 20))
            .await
            .unwrap()
            .rank,
        1
    );
    assert_eq!(
        env.service
            .write(None, "r", score(o[2], 15))
            .await
            .unwrap()
            .rank,
        2
    );
    // o[0] overtakes everyone.
    assert_eq!(
        env.service
            .write(None, "r", score(o[0], 30))
            .await
            .unwrap()
            .rank,
        1
    );
    let list = env
        .service
        .list_records("r", None, "", &o, 0)
        .await
        .expect("owners");
    assert_eq!(keys(&list.owner_records), [(30, 1), (20, 2), (15, 3)]);
    assert_eq!(list.rank_count, 3);
    env.service
        .delete_record(None, "r", o[0])
        .await
        .expect("delete");
    let list = env
        .service
        .list_records("r", Some(10), "", &[], 0)
        .await
        .unwrap();
    assert_eq!(keys(&list.records), [(20, 1), (15, 2)]);
    assert_eq!(list.rank_count, 2);
}

#[tokio::test]
async fn pages_walk_forward_and_back_with_cursors() {
    let env = env().await;
    env.service
        .create(new_board("p", SortOrder::Ascending, Operator::Best))
        .await
        .expect("create");
    for (n, owner) in owners(7).into_iter().enumerate() {
        env.service
            .write(None, "p", score(owner, n as i64))
            .await
            .unwrap();
    }
    let first = env
        .service
        .list_records("p", Some(3), "", &[], 0)
        .await
        .unwrap();
    assert_eq!(keys(&first.records), [(0, 1), (1, 2), (2, 3)]);
    assert!(first.prev_cursor.is_empty());
    let second = env
        .service
        .list_records("p", Some(3), &first.next_cursor, &[], 0)
        .await
        .unwrap();
    assert_eq!(keys(&second.records), [(3, 4), (4, 5), (5, 6)]);
    let third = env
        .service
        .list_records("p", Some(3), &second.next_cursor, &[], 0)
        .await
        .unwrap();
    assert_eq!(keys(&third.records), [(6, 7)]);
    assert!(third.next_cursor.is_empty());
    let back = env
        .service
        .list_records("p", Some(3), &third.prev_cursor, &[], 0)
        .await
        .unwrap();
    assert_eq!(keys(&back.records), keys(&second.records));
    let back = env
        .service
        .list_records("p", Some(3), &back.prev_cursor, &[], 0)
        .await
        .unwrap();
    assert_eq!(keys(&back.records), keys(&first.records));
    assert!(back.prev_cursor.is_empty());
    let foreign = env
        .service
        .list_records("p", Some(3), "garbage", &[], 0)
        .await;
    assert!(matches!(foreign, Err(LeaderboardError::InvalidCursor)));
    let cursor = env.service.cursor_from_rank("p", 5, 0).expect("cursor");
    let from_rank = env
        .service
        .list_records("p", Some(2), &cursor, &[], 0)
        .await
        .unwrap();
    assert_eq!(keys(&from_rank.records), [(4, 5), (5, 6)]);
    assert_eq!(env.service.cursor_from_rank("p", 1, 0).expect("first"), "");
}

#[tokio::test]
async fn haystack_centres_on_the_owner() {
    let env = env().await;
    env.service
        .create(new_board("h", SortOrder::Descending, Operator::Best))
        .await
        .expect("create");
    let o = owners(9);
    for (n, owner) in o.iter().enumerate() {
        env.service
            .write(None, "h", score(*owner, 100 - n as i64))
            .await
            .unwrap();
    }
    // o[4] has rank 5; with limit 3 Nakama shows one above and one below.
    let around = env.service.haystack("h", o[4], 3, "", 0).await.unwrap();
    assert_eq!(keys(&around.records), [(97, 4), (96, 5), (95, 6)]);
    assert!(!around.prev_cursor.is_empty() && !around.next_cursor.is_empty());
    // At the top there is nothing above: the page fills from below.
    let top = env.service.haystack("h", o[0], 3, "", 0).await.unwrap();
    assert_eq!(keys(&top.records), [(100, 1), (99, 2), (98, 3)]);
    assert!(top.prev_cursor.is_empty());
    // At the bottom the page fills from above.
    let bottom = env.service.haystack("h", o[8], 3, "", 0).await.unwrap();
    assert_eq!(keys(&bottom.records), [(94, 7), (93, 8), (92, 9)]);
    assert!(bottom.next_cursor.is_empty());
    let nobody = env
        .service
        .haystack("h", Uuid::new_v4(), 3, "", 0)
        .await
        .unwrap();
    assert!(nobody.records.is_empty());
    let next = env
        .service
        .haystack("h", o[4], 3, &around.next_cursor, 0)
        .await
        .unwrap();
    assert_eq!(keys(&next.records), [(94, 7), (93, 8), (92, 9)]);
}

#[tokio::test]
async fn periods_reset_on_schedule_and_ranks_reload() {
    let env = env().await;
    let mut board = new_board("daily", SortOrder::Descending, Operator::Increment);
    board.reset_schedule = "0 0 * * *".into();
    env.service.create(board).await.expect("create");
    let owner = Uuid::new_v4();
    let first = env
        .service
        .write(None, "daily", score(owner, 5))
        .await
        .unwrap();
    // The next midnight after 2023-11-14 22:13:20.
    assert_eq!(first.record.expiry_time, 1_700_006_400);
    assert_eq!(
        env.service.due_resets(1_700_000_000, 1_700_006_399).len(),
        0
    );
    let due = env.service.due_resets(1_700_000_000, 1_700_006_400);
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].1, 1_700_006_400);
    // A day later the same owner starts a new period from zero.
    env.clock.advance_ms(86_400_000);
    let second = env
        .service
        .write(None, "daily", score(owner, 1))
        .await
        .unwrap();
    assert_eq!((second.record.score, second.rank), (1, 1));
    assert_eq!(second.record.expiry_time, 1_700_092_800);
    let old = env
        .service
        .list_records("daily", Some(10), "", &[], 1_700_006_400)
        .await
        .unwrap();
    assert_eq!(
        keys(&old.records),
        [(5, 1)],
        "the ended period is still readable"
    );
    // Ranks rebuild from storage for the live period only.
    let reloaded = Leaderboards::load(env.store.clone(), env.clock.clone())
        .await
        .unwrap();
    assert_eq!(reloaded.ranks.count("daily", 1_700_092_800), 1);
    assert_eq!(reloaded.ranks.count("daily", 1_700_006_400), 0);
}

#[tokio::test]
async fn create_is_idempotent_and_lists_skip_nothing() {
    let env = env().await;
    let (_, created) = env
        .service
        .create(new_board("a", SortOrder::Descending, Operator::Best))
        .await
        .unwrap();
    assert!(created);
    let (board, created) = env
        .service
        .create(new_board("a", SortOrder::Ascending, Operator::Set))
        .await
        .unwrap();
    assert!(!created);
    assert_eq!(board.row.sort_order, SortOrder::Descending);
    for id in ["b", "c"] {
        env.service
            .create(new_board(id, SortOrder::Descending, Operator::Best))
            .await
            .unwrap();
    }
    let (page, next) = env.service.list(2, "").unwrap();
    assert_eq!(page.len(), 2);
    let (rest, end) = env.service.list(2, &next.expect("cursor")).unwrap();
    assert_eq!(rest[0].row.id, "c");
    assert!(end.is_none());
    let mut bad = new_board("bad", SortOrder::Descending, Operator::Best);
    bad.reset_schedule = "not cron".into();
    assert!(matches!(
        env.service.create(bad).await,
        Err(LeaderboardError::Schedule)
    ));
    assert!(env.service.delete("a").await.unwrap());
    assert!(!env.service.delete("a").await.unwrap());
    assert_eq!(env.service.get_many(&["a".into(), "b".into()]).len(), 1);
    env.service.disable_ranks("b").await.unwrap();
    let o = Uuid::new_v4();
    assert_eq!(
        env.service
            .write(None, "b", score(o, 3))
            .await
            .unwrap()
            .rank,
        0
    );
    assert!(env.service.cursor_from_rank("b", 2, 0).is_err());
}

/// Concurrent writes of many owners leave every rank right (the owner locks order cache
/// updates like the commits).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_leave_ranks_right() {
    let env = env().await;
    let service = Arc::new(env.service);
    service
        .create(new_board("c", SortOrder::Descending, Operator::Increment))
        .await
        .unwrap();
    let o = owners(8);
    let tasks: Vec<_> = (0..64)
        .map(|n| {
            let service = Arc::clone(&service);
            let owner = o[n % o.len()];
            tokio::spawn(async move {
                service
                    .write(None, "c", score(owner, (n % 5) as i64 + 1))
                    .await
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let list = service
        .list_records("c", Some(100), "", &[], 0)
        .await
        .unwrap();
    assert_eq!(list.records.len(), 8);
    for (n, record) in list.records.iter().enumerate() {
        assert_eq!(record.rank, n as i64 + 1, "rank matches the stored order");
    }
}

struct Recorder(tokio::sync::mpsc::UnboundedSender<(String, i64)>);

#[async_trait::async_trait]
impl ResetListener for Recorder {
    async fn leaderboard_reset(&self, board: Arc<Board>, reset: i64) {
        let _ = self.0.send((board.row.id.clone(), reset));
    }
}

/// The scheduler sleeps until the period ends, then calls the listener with the board and the
/// end of the period; boards without a schedule never reset.
#[tokio::test(start_paused = true)]
async fn the_scheduler_calls_the_listener_when_a_period_ends() {
    let env = env().await;
    let mut board = new_board("minutely", SortOrder::Descending, Operator::Best);
    board.reset_schedule = "* * * * *".into();
    env.service.create(board).await.unwrap();
    env.service
        .create(new_board("never", SortOrder::Descending, Operator::Best))
        .await
        .unwrap();
    let service = Arc::new(env.service);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let task = spawn_scheduler(service.clone(), Some(Arc::new(Recorder(tx))));
    tokio::task::yield_now().await;
    // 22:13:20 → the minute ends at 22:14:00, 40 s later.
    env.clock.advance_ms(40_000);
    tokio::time::advance(std::time::Duration::from_secs(41)).await;
    let (id, reset) = rx.recv().await.expect("a reset");
    assert_eq!((id.as_str(), reset), ("minutely", 1_700_000_040));
    assert!(rx.try_recv().is_err(), "one call per ended period");
    task.abort();
}
