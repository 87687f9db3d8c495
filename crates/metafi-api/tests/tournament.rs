//! `/v2/tournament`: listing with Nakama's filters and checks, records, writes with the
//! active window, attempt limit, max size and join rules, joins, around-owner and own-record
//! deletion — statuses, codes and messages as Nakama's `api_tournament.go`.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use metafi_core::hooks::HookFuture;
use metafi_core::leaderboards::NewTournament;
use metafi_core::{CoreError, Hook, Hooks, RpcContext};
use metafi_storage::{Operator, SortOrder};
use serde_json::{Value, json};
use support::{Api, assert_error};

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn tournament(id: &str) -> NewTournament {
    NewTournament {
        id: id.into(),
        authoritative: false,
        sort_order: SortOrder::Descending,
        operator: Operator::Best,
        reset_schedule: String::new(),
        metadata: "{\"weekly\":true}".into(),
        title: "Weekly".into(),
        description: "Best of the week".into(),
        category: 3,
        start_time: 0,
        end_time: 0,
        duration: 3600,
        max_size: 0,
        max_num_score: 0,
        join_required: false,
        enable_ranks: true,
    }
}

async fn create(api: &Api, t: NewTournament) {
    api.leaderboards().create_tournament(t).await.unwrap();
}

#[tokio::test]
async fn list_shows_tournaments_as_nakama_does() {
    let api = Api::new().await;
    let mut sized = tournament("sized");
    sized.max_size = 10;
    sized.join_required = true;
    sized.authoritative = true;
    create(&api, sized).await;
    let mut ended = tournament("ended");
    ended.start_time = now() - 100;
    ended.end_time = now() - 50;
    create(&api, ended).await;
    let ada = api.sign_up("&username=ada").await;
    let (status, body) = api.as_user(&ada, Method::GET, "/v2/tournament", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let list = body["tournaments"].as_array().unwrap();
    assert_eq!(
        list.len(),
        1,
        "an ended tournament is not listed by default: {body}"
    );
    let t = &list[0];
    assert_eq!(t["id"], "sized");
    assert_eq!(t["title"], "Weekly");
    assert_eq!(t["description"], "Best of the week");
    assert_eq!(t["category"], 3);
    assert_eq!(t["sort_order"], 1);
    assert_eq!(t["operator"], 1, "BEST as a number");
    assert_eq!(t["max_size"], 10);
    assert_eq!(t["duration"], 3600);
    assert_eq!(t["can_enter"], true);
    assert_eq!(t["authoritative"], true);
    assert_eq!(t["join_required"], true);
    assert_eq!(t["metadata"], "{\"weekly\":true}");
    assert!(t["start_time"].is_string());
    assert!(t["create_time"].is_string());
    assert_eq!(t.get("end_time"), None, "no end time");
    assert_eq!(t.get("size"), None, "0 is omitted");
    assert_eq!(t.get("next_reset"), None, "never expires");
    assert_eq!(
        t["end_active"].as_i64().unwrap() - t["start_active"].as_i64().unwrap(),
        3600
    );
    // Filters and their checks.
    let (_, body) = api
        .as_user(&ada, Method::GET, "/v2/tournament?category_start=4", None)
        .await;
    assert_eq!(body, json!({}));
    let (_, body) = api
        .as_user(
            &ada,
            Method::GET,
            &format!("/v2/tournament?start_time=0&end_time={}", now()),
            None,
        )
        .await;
    assert_eq!(body["tournaments"][0]["id"], "ended");
    assert_error(
        &api.as_user(&ada, Method::GET, "/v2/tournament?category_end=128", None)
            .await,
        400,
        3,
        "Tournament category end must be >=0 and <128.",
    );
    assert_error(
        &api.as_user(
            &ada,
            Method::GET,
            "/v2/tournament?category_start=5&category_end=4",
            None,
        )
        .await,
        400,
        3,
        "Tournament category end must be greater than category start.",
    );
    assert_error(
        &api.as_user(
            &ada,
            Method::GET,
            "/v2/tournament?start_time=100&end_time=50",
            None,
        )
        .await,
        400,
        3,
        "Tournament end time must be greater than start time.",
    );
    assert_error(
        &api.as_user(&ada, Method::GET, "/v2/tournament?limit=101", None)
            .await,
        400,
        3,
        "Limit must be between 1 and 100.",
    );
}

#[tokio::test]
async fn list_pages_with_a_cursor() {
    let api = Api::new().await;
    for id in ["a", "b", "c"] {
        create(&api, tournament(id)).await;
    }
    let ada = api.sign_up("&username=ada").await;
    let (_, first) = api
        .as_user(&ada, Method::GET, "/v2/tournament?limit=2", None)
        .await;
    assert_eq!(first["tournaments"].as_array().unwrap().len(), 2);
    let cursor = first["cursor"].as_str().unwrap();
    let (_, second) = api
        .as_user(
            &ada,
            Method::GET,
            &format!("/v2/tournament?limit=2&cursor={cursor}"),
            None,
        )
        .await;
    assert_eq!(second["tournaments"].as_array().unwrap().len(), 1);
    assert_eq!(second.get("cursor"), None);
}

#[tokio::test]
async fn write_list_and_around_owner() {
    let api = Api::new().await;
    let mut t = tournament("cup");
    t.max_num_score = 2;
    create(&api, t).await;
    let ada = api.sign_up("&username=ada").await;
    let bob = api.sign_up("&username=bob").await;
    let (status, record) = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/tournament/cup",
            Some(json!({"score": "50", "metadata": "{\"lap\":1}"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{record}");
    assert_eq!(record["leaderboard_id"], "cup");
    assert_eq!(record["owner_id"], ada.id.to_string());
    assert_eq!(record["username"], "ada");
    assert_eq!(record["score"], "50");
    assert_eq!(record["num_score"], 1);
    assert_eq!(record["max_num_score"], 2);
    assert_eq!(record["rank"], "1");
    let (status, record) = api
        .as_user(
            &bob,
            Method::PUT,
            "/v2/tournament/cup",
            Some(json!({"score": "70"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{record}");
    // A second attempt counts, a third is refused.
    let (status, record) = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/tournament/cup",
            Some(json!({"score": "10"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{record}");
    assert_eq!(
        (record["score"].clone(), record["num_score"].clone()),
        (json!("50"), json!(2))
    );
    assert_error(
        &api.as_user(
            &ada,
            Method::POST,
            "/v2/tournament/cup",
            Some(json!({"score": "99"})),
        )
        .await,
        400,
        9,
        "Reached allowed max number of score attempts.",
    );
    let (status, list) = api
        .as_user(
            &ada,
            Method::GET,
            &format!("/v2/tournament/cup?owner_ids={}", ada.id),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let scores: Vec<&str> = list["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["score"].as_str().unwrap())
        .collect();
    assert_eq!(scores, ["70", "50"]);
    assert_eq!(list["owner_records"][0]["rank"], "2");
    assert_eq!(list["rank_count"], "2");
    let (status, around) = api
        .as_user(
            &ada,
            Method::GET,
            &format!("/v2/tournament/cup/owner/{}?limit=1", ada.id),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{around}");
    assert_eq!(around["records"][0]["owner_id"], ada.id.to_string());
    // Checks.
    assert_error(
        &api.as_user(&ada, Method::GET, "/v2/tournament/cup?limit=101", None)
            .await,
        400,
        3,
        "Invalid limit - limit must be between 1 and 100.",
    );
    assert_error(
        &api.as_user(&ada, Method::GET, "/v2/tournament/cup?owner_ids=x", None)
            .await,
        400,
        3,
        "One or more owner IDs are invalid.",
    );
    assert_error(
        &api.as_user(&ada, Method::GET, "/v2/tournament/nope", None)
            .await,
        404,
        5,
        "Tournament not found.",
    );
    assert_error(
        &api.as_user(&ada, Method::GET, "/v2/tournament/cup/owner/x", None)
            .await,
        400,
        3,
        "Invalid owner ID provided.",
    );
    assert_error(
        &api.as_user(
            &ada,
            Method::GET,
            &format!("/v2/tournament/nope/owner/{}", ada.id),
            None,
        )
        .await,
        404,
        5,
        "Tournament not found.",
    );
    assert_error(
        &api.as_user(
            &ada,
            Method::POST,
            "/v2/tournament/nope",
            Some(json!({"score": "1"})),
        )
        .await,
        404,
        5,
        "Tournament not found.",
    );
    assert_error(
        &api.as_user(
            &ada,
            Method::POST,
            "/v2/tournament/cup",
            Some(json!({"score": "1", "metadata": "[1]"})),
        )
        .await,
        400,
        3,
        "Metadata value must be JSON, if provided.",
    );
    // Deleting one's own record.
    let (status, body) = api
        .as_user(&ada, Method::DELETE, "/v2/tournament/cup", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, list) = api
        .as_user(&ada, Method::GET, "/v2/tournament/cup", None)
        .await;
    assert_eq!(list["records"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn writes_outside_the_window_and_to_ended_tournaments_are_refused() {
    let api = Api::new().await;
    let mut later = tournament("later");
    later.start_time = now() + 86_400;
    create(&api, later).await;
    let mut ended = tournament("ended");
    ended.start_time = now() - 100;
    ended.end_time = now() - 50;
    create(&api, ended).await;
    let mut auth = tournament("auth");
    auth.authoritative = true;
    create(&api, auth).await;
    let ada = api.sign_up("&username=ada").await;
    assert_error(
        &api.as_user(
            &ada,
            Method::POST,
            "/v2/tournament/later",
            Some(json!({"score": "1"})),
        )
        .await,
        400,
        9,
        "Tournament is not active and cannot accept new scores.",
    );
    assert_error(
        &api.as_user(
            &ada,
            Method::POST,
            "/v2/tournament/ended",
            Some(json!({"score": "1"})),
        )
        .await,
        404,
        5,
        "Tournament not found or has ended.",
    );
    assert_error(
        &api.as_user(&ada, Method::GET, "/v2/tournament/ended", None)
            .await,
        404,
        5,
        "Tournament has ended.",
    );
    assert_error(
        &api.as_user(
            &ada,
            Method::POST,
            "/v2/tournament/auth",
            Some(json!({"score": "1"})),
        )
        .await,
        403,
        7,
        "Tournament only allows authoritative score submissions.",
    );
    assert_error(
        &api.as_user(&ada, Method::DELETE, "/v2/tournament/auth", None)
            .await,
        500,
        13,
        "Error deleting score from tournament.",
    );
}

#[tokio::test]
async fn joins_are_required_and_limited_by_the_max_size() {
    let api = Api::new().await;
    let mut t = tournament("club");
    t.join_required = true;
    t.max_size = 1;
    create(&api, t).await;
    let ada = api.sign_up("&username=ada").await;
    let bob = api.sign_up("&username=bob").await;
    assert_error(
        &api.as_user(
            &ada,
            Method::POST,
            "/v2/tournament/club",
            Some(json!({"score": "5"})),
        )
        .await,
        400,
        9,
        "Must join tournament before attempting to write value.",
    );
    let (status, body) = api
        .as_user(&ada, Method::POST, "/v2/tournament/club/join", None)
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!({})));
    let (status, _) = api
        .as_user(&ada, Method::POST, "/v2/tournament/club/join", None)
        .await;
    assert_eq!(status, StatusCode::OK, "joining again is a no-op");
    assert_error(
        &api.as_user(&bob, Method::POST, "/v2/tournament/club/join", None)
            .await,
        400,
        3,
        "Tournament cannot be joined as it has reached its max size.",
    );
    let (status, record) = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/tournament/club",
            Some(json!({"score": "5"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{record}");
    assert_eq!(record["num_score"], 1);
    let (_, list) = api.as_user(&ada, Method::GET, "/v2/tournament", None).await;
    assert_eq!(list["tournaments"][0]["size"], 1);
    assert_eq!(list["tournaments"][0].get("can_enter"), None, "full");
    assert_error(
        &api.as_user(&ada, Method::POST, "/v2/tournament/nope/join", None)
            .await,
        404,
        5,
        "Tournament not found.",
    );
}

/// Doubles every tournament score written (`WriteTournamentRecord` before hook) and drops
/// every join (`JoinTournament`).
#[derive(Debug)]
struct TournamentHooks;

impl Hooks for TournamentHooks {
    fn has_before(&self, hook: Hook) -> bool {
        matches!(hook, Hook::WriteTournamentRecord | Hook::JoinTournament)
    }

    fn has_after(&self, _hook: Hook) -> bool {
        false
    }

    fn before(
        &self,
        hook: Hook,
        _ctx: RpcContext,
        input: Option<Value>,
    ) -> HookFuture<'_, Result<Option<Value>, CoreError>> {
        Box::pin(async move {
            Ok(match hook {
                Hook::WriteTournamentRecord => input.map(|mut request| {
                    request["record"]["score"] = json!(84);
                    request
                }),
                _ => None,
            })
        })
    }

    fn after(
        &self,
        _hook: Hook,
        _ctx: RpcContext,
        _output: Option<Value>,
        _input: Option<Value>,
    ) -> HookFuture<'_, ()> {
        Box::pin(async {})
    }
}

#[tokio::test]
async fn before_hooks_change_or_drop_tournament_calls() {
    let api = Api::with_hooks(Arc::new(TournamentHooks)).await;
    create(&api, tournament("hooked")).await;
    let ada = api.sign_up("&username=ada").await;
    let (status, record) = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/tournament/hooked",
            Some(json!({"score": "42"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{record}");
    assert_eq!(record["score"], "84");
    assert_error(
        &api.as_user(&ada, Method::POST, "/v2/tournament/hooked/join", None)
            .await,
        404,
        5,
        "Requested resource was not found.",
    );
}
