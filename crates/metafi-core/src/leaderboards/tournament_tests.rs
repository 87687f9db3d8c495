//! Tournaments on a real SQLite store: creation rules, the active window, joins and the max
//! size, attempt limits, listing filters and cursors, lookups, records and the haystack.

use std::sync::Arc;

use metafi_storage::{NO_MAX_SIZE, Operator, SortOrder, Storage};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};
use uuid::Uuid;

use super::*;
use crate::ManualClock;

/// 2023-11-14 22:13:20 UTC.
const NOW_MS: i64 = 1_700_000_000_000;
const NOW: i64 = NOW_MS / 1000;

struct Env {
    _dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    service: Leaderboards,
}

async fn env() -> Env {
    let dir = tempfile::tempdir().expect("tempdir");
    let store: Arc<dyn Storage> = Arc::new(
        SqliteStorage::open(SqliteConfig {
            path: dir.path().join("t.db"),
            readers: 1,
            ..SqliteConfig::default()
        })
        .expect("open"),
    );
    let clock = Arc::new(ManualClock::new(NOW_MS));
    let service = Leaderboards::load(store, clock.clone())
        .await
        .expect("load");
    Env {
        _dir: dir,
        clock,
        service,
    }
}

/// Moves the clock to `ms`.
fn set(clock: &ManualClock, ms: i64) {
    clock.advance_ms(ms - crate::Clock::now_ms(clock));
}

fn new_tournament(id: &str) -> NewTournament {
    NewTournament {
        id: id.into(),
        authoritative: false,
        sort_order: SortOrder::Descending,
        operator: Operator::Best,
        reset_schedule: String::new(),
        metadata: "{}".into(),
        title: "T".into(),
        description: "D".into(),
        category: 1,
        start_time: 0,
        end_time: 0,
        duration: 3600,
        max_size: 0,
        max_num_score: 0,
        join_required: false,
        enable_ranks: true,
    }
}

fn score(owner: Uuid, score: i64) -> Submission {
    Submission {
        owner_id: owner,
        username: Some("u".into()),
        score,
        subscore: 0,
        metadata: None,
        operator: None,
    }
}

fn config_error(e: TournamentError) -> String {
    match e {
        TournamentError::Config(m) => m,
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[tokio::test]
async fn creation_follows_nakama() {
    let env = env().await;
    let (board, created) = env
        .service
        .create_tournament(new_tournament("t"))
        .await
        .expect("create");
    assert!(created);
    assert_eq!(board.row.start_time, NOW, "start 0 starts now");
    assert_eq!(board.row.max_size, NO_MAX_SIZE, "max size 0 is no limit");
    let (_, created) = env
        .service
        .create_tournament(new_tournament("t"))
        .await
        .expect("again");
    assert!(!created, "idempotent");
    let mut bad = new_tournament("x");
    bad.duration = 0;
    assert_eq!(
        config_error(env.service.create_tournament(bad).await.unwrap_err()),
        "tournament duration must be greater than zero"
    );
    let mut bad = new_tournament("x");
    bad.start_time = NOW + 100;
    bad.end_time = NOW + 50;
    assert_eq!(
        config_error(env.service.create_tournament(bad).await.unwrap_err()),
        "tournament end time cannot be before start time"
    );
    let mut bad = new_tournament("x");
    bad.reset_schedule = "0 0 * * *".into();
    bad.start_time = NOW;
    bad.end_time = NOW + 60;
    assert!(
        config_error(env.service.create_tournament(bad).await.unwrap_err())
            .starts_with("tournament end time cannot be before first reset schedule")
    );
    let mut bad = new_tournament("x");
    bad.reset_schedule = "nope".into();
    assert!(
        config_error(env.service.create_tournament(bad).await.unwrap_err())
            .starts_with("could not parse reset schedule")
    );
    // A leaderboard's id is taken.
    env.service
        .create(NewBoard {
            id: "lb".into(),
            authoritative: false,
            sort_order: SortOrder::Descending,
            operator: Operator::Best,
            reset_schedule: String::new(),
            metadata: "{}".into(),
            enable_ranks: false,
        })
        .await
        .expect("leaderboard");
    assert!(matches!(
        env.service.create_tournament(new_tournament("lb")).await,
        Err(TournamentError::InUse)
    ));
    // Tournaments stay out of leaderboard listings.
    let (boards, _) = env.service.list(10, "").expect("list");
    assert_eq!(boards.len(), 1);
}

#[tokio::test]
async fn writes_only_while_active_and_within_the_limits() {
    let env = env().await;
    let mut t = new_tournament("t");
    t.start_time = NOW + 100;
    t.max_num_score = 2;
    t.max_size = 1;
    env.service.create_tournament(t).await.expect("create");
    let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
    assert!(matches!(
        env.service
            .write_tournament(Some(a), "t", score(a, 1))
            .await,
        Err(TournamentError::OutsideDuration)
    ));
    set(&env.clock, NOW_MS + 100_000);
    let first = env
        .service
        .write_tournament(Some(a), "t", score(a, 5))
        .await
        .expect("write");
    assert_eq!(
        (first.record.score, first.record.num_score, first.rank),
        (5, 1, 1)
    );
    assert_eq!(first.record.max_num_score, 2);
    let second = env
        .service
        .write_tournament(Some(a), "t", score(a, 3))
        .await
        .expect("write");
    assert_eq!((second.record.score, second.record.num_score), (5, 2));
    assert!(matches!(
        env.service
            .write_tournament(Some(a), "t", score(a, 9))
            .await,
        Err(TournamentError::MaxNumScoreReached)
    ));
    env.service
        .add_tournament_attempt("t", a, 1)
        .await
        .expect("attempt");
    env.service
        .write_tournament(Some(a), "t", score(a, 9))
        .await
        .expect("one more attempt");
    assert!(matches!(
        env.service
            .write_tournament(Some(b), "t", score(b, 1))
            .await,
        Err(TournamentError::MaxSizeReached)
    ));
    // After the window: refused, and attempts can no longer be added.
    set(&env.clock, NOW_MS + 100_000 + 3_600_000);
    assert!(matches!(
        env.service
            .write_tournament(Some(a), "t", score(a, 1))
            .await,
        Err(TournamentError::OutsideDuration)
    ));
    assert!(matches!(
        env.service.add_tournament_attempt("t", a, 1).await,
        Err(TournamentError::OutsideDuration)
    ));
    assert!(matches!(
        env.service
            .write_tournament(None, "nope", score(a, 1))
            .await,
        Err(TournamentError::NotFound)
    ));
}

#[tokio::test]
async fn authoritative_tournaments_refuse_clients() {
    let env = env().await;
    let mut t = new_tournament("auth");
    t.authoritative = true;
    env.service.create_tournament(t).await.expect("create");
    let a = Uuid::from_u128(1);
    assert!(matches!(
        env.service
            .write_tournament(Some(a), "auth", score(a, 1))
            .await,
        Err(TournamentError::Authoritative)
    ));
    assert!(matches!(
        env.service
            .delete_tournament_record(Some(a), "auth", a)
            .await,
        Err(TournamentError::Authoritative)
    ));
    env.service
        .write_tournament(None, "auth", score(a, 1))
        .await
        .expect("server writes");
}

#[tokio::test]
async fn joins_are_needed_when_required_and_fill_the_tournament() {
    let env = env().await;
    let mut t = new_tournament("j");
    t.join_required = true;
    t.max_size = 2;
    env.service.create_tournament(t).await.expect("create");
    let (a, b, c) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
    assert!(matches!(
        env.service
            .write_tournament(Some(a), "j", score(a, 1))
            .await,
        Err(TournamentError::JoinRequired)
    ));
    env.service
        .join_tournament("j", a, "a")
        .await
        .expect("join");
    env.service
        .join_tournament("j", a, "a")
        .await
        .expect("again");
    env.service
        .join_tournament("j", b, "b")
        .await
        .expect("join b");
    assert!(matches!(
        env.service.join_tournament("j", c, "c").await,
        Err(TournamentError::MaxSizeReached)
    ));
    let written = env
        .service
        .write_tournament(Some(a), "j", score(a, 7))
        .await
        .expect("write");
    assert_eq!((written.record.score, written.record.num_score), (7, 1));
    // A joined owner is ranked from the join.
    let list = env
        .service
        .tournament_records("j", Some(10), "", &[], 0)
        .await
        .expect("list");
    assert_eq!(list.records.len(), 2);
    assert_eq!(list.rank_count, 2);
    // Deleting a record frees a place.
    env.service
        .delete_tournament_record(None, "j", b)
        .await
        .expect("delete");
    env.service
        .join_tournament("j", c, "c")
        .await
        .expect("join c");
    let views = env
        .service
        .tournaments_by_id(&["j".into()])
        .await
        .expect("get");
    assert_eq!((views[0].size, views[0].can_enter), (2, false));
    // Joining a tournament without join_required does nothing.
    env.service
        .create_tournament(new_tournament("open"))
        .await
        .expect("create");
    env.service
        .join_tournament("open", a, "a")
        .await
        .expect("join");
    let list = env
        .service
        .tournament_records("open", Some(10), "", &[], 0)
        .await
        .expect("list");
    assert!(list.records.is_empty());
    assert!(matches!(
        env.service.join_tournament("nope", a, "a").await,
        Err(TournamentError::NotFound)
    ));
}

#[tokio::test]
async fn listing_filters_and_pages_in_nakama_order() {
    let env = env().await;
    for (id, category, start, end) in [
        ("c", 2, NOW, 0),
        ("a", 1, NOW, 0),
        ("b", 1, NOW - 10, NOW + 50),
        ("ended", 1, NOW - 100, NOW - 5),
    ] {
        let mut t = new_tournament(id);
        t.category = category;
        t.start_time = start;
        t.end_time = end;
        set(&env.clock, (start - 1) * 1000);
        env.service.create_tournament(t).await.expect("create");
    }
    set(&env.clock, NOW_MS);
    let ids = |page: &TournamentPage| -> Vec<String> {
        page.tournaments
            .iter()
            .map(|v| v.board.row.id.clone())
            .collect()
    };
    let all = TournamentFilter {
        category_start: 0,
        category_end: 127,
        start_time: -1,
        end_time: -1,
        limit: 100,
        cursor: String::new(),
    };
    let page = env.service.list_tournaments(&all).await.expect("list");
    assert_eq!(ids(&page), ["b", "a", "c"], "the ended one is left out");
    assert!(page.cursor.is_empty());
    let first = env
        .service
        .list_tournaments(&TournamentFilter {
            limit: 2,
            ..all.clone()
        })
        .await
        .expect("list");
    assert_eq!(ids(&first), ["b", "a"]);
    let second = env
        .service
        .list_tournaments(&TournamentFilter {
            limit: 2,
            cursor: first.cursor.clone(),
            ..all.clone()
        })
        .await
        .expect("list");
    assert_eq!(ids(&second), ["c"]);
    let category = env
        .service
        .list_tournaments(&TournamentFilter {
            category_start: 2,
            ..all.clone()
        })
        .await
        .expect("list");
    assert_eq!(ids(&category), ["c"]);
    // End time 0: only tournaments that never end.
    let open = env
        .service
        .list_tournaments(&TournamentFilter {
            end_time: 0,
            ..all.clone()
        })
        .await
        .expect("list");
    assert_eq!(ids(&open), ["a", "c"]);
    // An end time: those ending by then, ended ones included.
    let ending = env
        .service
        .list_tournaments(&TournamentFilter {
            start_time: 0,
            end_time: NOW + 60,
            ..all.clone()
        })
        .await
        .expect("list");
    assert_eq!(ids(&ending), ["ended", "b"]);
    assert!(matches!(
        env.service
            .list_tournaments(&TournamentFilter {
                cursor: "!!".into(),
                ..all
            })
            .await,
        Err(TournamentError::InvalidCursor)
    ));
}

#[tokio::test]
async fn lookups_show_what_nakama_shows() {
    let env = env().await;
    let mut sized = new_tournament("sized");
    sized.max_size = 5;
    sized.authoritative = true;
    sized.join_required = true;
    let mut plain = new_tournament("plain");
    plain.authoritative = true;
    plain.join_required = true;
    env.service.create_tournament(sized).await.expect("create");
    env.service.create_tournament(plain).await.expect("create");
    let views = env
        .service
        .tournaments_by_id(&["sized".into(), "plain".into(), "plain".into(), "x".into()])
        .await
        .expect("get");
    let shown: Vec<(&str, bool, bool)> = views
        .iter()
        .map(|v| {
            (
                v.board.row.id.as_str(),
                v.show_authoritative,
                v.show_join_required,
            )
        })
        .collect();
    assert_eq!(
        shown,
        [("plain", true, false), ("sized", false, false)],
        "plain first, sized read back without authoritative and join_required"
    );
    assert!(views[0].can_enter);
    assert_eq!(views[0].start_active, NOW);
    assert_eq!(views[0].end_active, NOW + 3600);
}

#[tokio::test]
async fn records_follow_the_tournament_period() {
    let env = env().await;
    let mut t = new_tournament("t");
    t.start_time = NOW;
    t.end_time = NOW + 1000;
    env.service.create_tournament(t).await.expect("create");
    for n in 1..=5u128 {
        let owner = Uuid::from_u128(n);
        env.service
            .write_tournament(None, "t", score(owner, n as i64 * 10))
            .await
            .expect("write");
    }
    let list = env
        .service
        .tournament_records("t", Some(2), "", &[Uuid::from_u128(1)], 0)
        .await
        .expect("list");
    assert_eq!(list.records[0].record.score, 50);
    assert_eq!(list.records[0].record.expiry_time, NOW + 1000);
    assert_eq!(list.owner_records[0].rank, 5);
    let around = env
        .service
        .tournament_haystack("t", Uuid::from_u128(3), 3, "", 0)
        .await
        .expect("haystack");
    let scores: Vec<i64> = around.records.iter().map(|r| r.record.score).collect();
    assert_eq!(scores, [40, 30, 20]);
    assert_eq!(around.prev_cursor, around.next_cursor, "Nakama's quirk");
    // After the end: refused without an expiry, readable with one.
    set(&env.clock, (NOW + 1000) * 1000);
    assert!(matches!(
        env.service
            .tournament_records("t", Some(2), "", &[], 0)
            .await,
        Err(TournamentError::OutsideDuration)
    ));
    let old = env
        .service
        .tournament_records("t", Some(10), "", &[], NOW + 1000)
        .await
        .expect("with expiry");
    assert_eq!(old.records.len(), 5);
    let none = env
        .service
        .tournament_haystack("t", Uuid::from_u128(3), 3, "", 0)
        .await
        .expect("haystack");
    assert!(none.records.is_empty());
    assert!(matches!(
        env.service
            .tournament_haystack("nope", Uuid::from_u128(3), 3, "", 0)
            .await,
        Err(TournamentError::LeaderboardNotFound)
    ));
}

#[tokio::test]
async fn delete_and_ranks_disable() {
    let env = env().await;
    env.service
        .create_tournament(new_tournament("t"))
        .await
        .expect("create");
    let a = Uuid::from_u128(1);
    let w = env
        .service
        .write_tournament(None, "t", score(a, 3))
        .await
        .expect("write");
    assert_eq!(w.rank, 1);
    env.service
        .disable_tournament_ranks("t")
        .await
        .expect("off");
    let w = env
        .service
        .write_tournament(None, "t", score(a, 4))
        .await
        .expect("write");
    assert_eq!(w.rank, 0);
    assert!(matches!(
        env.service.disable_tournament_ranks("nope").await,
        Err(TournamentError::NotFound)
    ));
    env.service.delete_tournament("t").await.expect("delete");
    env.service.delete_tournament("t").await.expect("again");
    assert!(env.service.tournament("t").is_none());
}

/// What a listener saw: event, tournament id, size, end, reset.
type Seen = (&'static str, String, i32, i64, i64);

struct Recorder(tokio::sync::mpsc::UnboundedSender<Seen>);

#[async_trait::async_trait]
impl ResetListener for Recorder {
    async fn leaderboard_reset(&self, _board: Arc<Board>, _reset: i64) {}

    async fn tournament_end(&self, t: TournamentView, end: i64, reset: i64) {
        let _ = self
            .0
            .send(("end", t.board.row.id.clone(), t.size, end, reset));
    }

    async fn tournament_reset(&self, t: TournamentView, end: i64, reset: i64) {
        let _ = self
            .0
            .send(("reset", t.board.row.id.clone(), t.size, end, reset));
    }
}

/// A minutely tournament active 10 s per minute: the scheduler calls the end hook when the
/// window closes and the reset hook when the minute ends, with Nakama's arguments, and the
/// size starts over for the next period.
#[tokio::test(start_paused = true)]
async fn the_scheduler_calls_the_tournament_end_and_reset_hooks() {
    let env = env().await;
    // 22:13:20; the running minute started at 22:13:00.
    let minute = NOW - 20;
    let mut t = new_tournament("minutely");
    t.reset_schedule = "* * * * *".into();
    t.duration = 30;
    t.max_size = 5;
    t.start_time = minute;
    env.service.create_tournament(t).await.expect("create");
    let a = Uuid::from_u128(1);
    env.service
        .write_tournament(None, "minutely", score(a, 1))
        .await
        .expect("write");
    let service = Arc::new(env.service);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let task = spawn_scheduler(service.clone(), Some(Arc::new(Recorder(tx))));
    tokio::task::yield_now().await;
    // The window ends at 22:13:30.
    env.clock.advance_ms(10_000);
    tokio::time::advance(std::time::Duration::from_secs(11)).await;
    let seen = rx.recv().await.expect("an end");
    assert_eq!(
        seen,
        ("end", "minutely".to_owned(), 1, minute + 30, minute + 60)
    );
    // The period ends at 22:14:00.
    env.clock.advance_ms(30_000);
    tokio::time::advance(std::time::Duration::from_secs(31)).await;
    let seen = rx.recv().await.expect("a reset");
    assert_eq!(
        seen,
        ("reset", "minutely".to_owned(), 1, minute + 30, minute + 60)
    );
    let views = service
        .tournaments_by_id(&["minutely".into()])
        .await
        .expect("get");
    assert_eq!(views[0].size, 0, "the next period starts empty");
    assert!(views[0].can_enter);
    assert!(rx.try_recv().is_err(), "one call per event");
    task.abort();
}
