//! `GET` and `DELETE /v2/notification` without a socket: Nakama's defaults, limits, cursor and
//! error answers (`server/api_notification.go`, `core_notification.go`).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use axum::http::{Method, StatusCode};
use metafi_core::NewNotification;
use support::{Api, Player, assert_error};

async fn send(api: &Api, to: &Player, subject: &str) -> String {
    let sent = api
        .notifications
        .send(vec![NewNotification {
            user_id: to.id,
            subject: subject.into(),
            content: r#"{"a":1}"#.into(),
            code: 9,
            sender_id: None,
            persistent: true,
        }])
        .await
        .unwrap();
    sent[0].id.clone()
}

fn subjects(body: &serde_json::Value) -> Vec<&str> {
    body["notifications"]
        .as_array()
        .map(|list| list.iter().filter_map(|n| n["subject"].as_str()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn list_defaults_to_one_and_walks_on_with_the_cacheable_cursor() {
    let api = Api::new().await;
    let ada = api.sign_up("").await;
    let (status, body) = api
        .as_user(&ada, Method::GET, "/v2/notification", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body.get("notifications"), None, "empty lists are omitted");
    let start = body["cacheable_cursor"].as_str().unwrap().to_owned();
    assert!(
        !start.is_empty(),
        "a cursor to keep even with nothing listed"
    );

    send(&api, &ada, "one").await;
    send(&api, &ada, "two").await;
    let (_, body) = api
        .as_user(&ada, Method::GET, "/v2/notification", None)
        .await;
    assert_eq!(subjects(&body), ["one"], "Nakama lists one without a limit");
    let first = &body["notifications"][0];
    assert_eq!(first["content"], r#"{"a":1}"#);
    assert_eq!(first["code"], 9);
    assert_eq!(first["persistent"], true);
    assert_eq!(
        first["sender_id"], "00000000-0000-0000-0000-000000000000",
        "the system's sender is the nil UUID, as Nakama shows it"
    );
    assert!(first["create_time"].as_str().unwrap().ends_with('Z'));
    let cursor = body["cacheable_cursor"].as_str().unwrap();
    let (_, body) = api
        .as_user(
            &ada,
            Method::GET,
            &format!("/v2/notification?limit=100&cacheable_cursor={cursor}"),
            None,
        )
        .await;
    assert_eq!(subjects(&body), ["two"]);
    let (_, body) = api
        .as_user(
            &ada,
            Method::GET,
            &format!("/v2/notification?limit=100&cacheable_cursor={start}"),
            None,
        )
        .await;
    assert_eq!(
        subjects(&body),
        ["one", "two"],
        "the kept start cursor sees both"
    );
}

#[tokio::test]
async fn bad_limits_and_cursors_get_nakamas_answers() {
    let api = Api::new().await;
    let ada = api.sign_up("").await;
    for limit in ["0", "101", "-1"] {
        let answer = api
            .as_user(
                &ada,
                Method::GET,
                &format!("/v2/notification?limit={limit}"),
                None,
            )
            .await;
        assert_error(
            &answer,
            400,
            3,
            "Invalid limit - limit must be between 1 and 100.",
        );
    }
    // Nakama answers a cursor it cannot decode with its generic listing failure.
    let answer = api
        .as_user(
            &ada,
            Method::GET,
            "/v2/notification?cacheable_cursor=garbage!",
            None,
        )
        .await;
    assert_error(&answer, 500, 13, "Error retrieving notifications.");
    let answer = api.call(Method::GET, "/v2/notification", None, None).await;
    assert_eq!(answer.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn delete_removes_only_the_callers_own() {
    let api = Api::new().await;
    let ada = api.sign_up("").await;
    let bob = api.sign_up("").await;
    let a1 = send(&api, &ada, "a1").await;
    let a2 = send(&api, &ada, "a2").await;
    let b1 = send(&api, &bob, "b1").await;

    let (status, body) = api
        .as_user(
            &bob,
            Method::DELETE,
            &format!("/v2/notification?ids={a1}&ids={a2}"),
            None,
        )
        .await;
    assert_eq!((status, body), (StatusCode::OK, serde_json::json!({})));
    let (_, body) = api
        .as_user(&ada, Method::GET, "/v2/notification?limit=10", None)
        .await;
    assert_eq!(subjects(&body), ["a1", "a2"], "bob cannot delete ada's");

    let (status, _) = api
        .as_user(
            &ada,
            Method::DELETE,
            &format!("/v2/notification?ids={a1}&ids={b1}"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, body) = api
        .as_user(&ada, Method::GET, "/v2/notification?limit=10", None)
        .await;
    assert_eq!(subjects(&body), ["a2"]);
    let (_, body) = api
        .as_user(&bob, Method::GET, "/v2/notification?limit=10", None)
        .await;
    assert_eq!(subjects(&body), ["b1"], "ada cannot delete bob's");

    // No ids: nothing to do. An id that is not a UUID fails the call, as in Nakama.
    let (status, _) = api
        .as_user(&ada, Method::DELETE, "/v2/notification", None)
        .await;
    assert_eq!(status, StatusCode::OK);
    let answer = api
        .as_user(
            &ada,
            Method::DELETE,
            &format!("/v2/notification?ids={a2}&ids=nope"),
            None,
        )
        .await;
    assert_error(&answer, 500, 13, "Error while deleting notifications.");
    let (_, body) = api
        .as_user(&ada, Method::GET, "/v2/notification?limit=10", None)
        .await;
    assert_eq!(subjects(&body), ["a2"], "nothing deleted");
}
