//! Answers pinned to Nakama 3.40's, each a case where MetaFi answered differently (issue 14).
//! The expected codes and messages come from Nakama's source (`server/api_*.go`, `core_*.go`).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use axum::http::{Method, StatusCode};
use serde_json::json;
use support::{Api, assert_error};

#[tokio::test]
async fn get_users_by_id_and_username_reports_online() {
    let api = Api::new().await;
    let ada = api.sign_up("&username=ada").await;
    let bob = api.sign_up("&username=bob").await;
    api.online.set(bob.id);
    let uri = format!("/v2/user?ids={}&usernames=bob&usernames=nobody", ada.id);
    let (status, body) = api.as_user(&ada, Method::GET, &uri, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut users = body["users"].as_array().expect("users").clone();
    users.sort_by_key(|u| u["username"].as_str().unwrap_or_default().to_owned());
    assert_eq!(users.len(), 2, "{body}");
    assert_eq!(users[0]["id"], ada.id.to_string());
    assert_eq!(users[0]["username"], "ada");
    assert_eq!(
        users[0].get("online"),
        None,
        "offline is omitted, as Nakama's gateway does"
    );
    assert_eq!(users[1]["username"], "bob");
    assert_eq!(users[1]["online"], true);
    assert!(users[1]["create_time"].is_string());

    // The same user asked for twice (by id and by name) is listed once.
    let uri = format!("/v2/user?ids={}&usernames=bob", bob.id);
    let (_, body) = api.as_user(&ada, Method::GET, &uri, None).await;
    assert_eq!(body["users"].as_array().map(Vec::len), Some(1), "{body}");
}

#[tokio::test]
async fn account_never_said_online_now_it_says_so_while_the_user_appears_online() {
    let api = Api::new().await;
    let ada = api.sign_up("&username=ada").await;
    let (status, body) = api.as_user(&ada, Method::GET, "/v2/account", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["user"].get("online"), None, "offline is omitted");
    api.online.set(ada.id);
    let (_, body) = api.as_user(&ada, Method::GET, "/v2/account", None).await;
    assert_eq!(body["user"]["online"], true, "{body}");
}

#[tokio::test]
async fn get_users_naming_thousands_of_users_was_unbounded_now_refused() {
    let api = Api::new().await;
    let ada = api.sign_up("&username=ada").await;
    let many = "&usernames=x".repeat(1001);
    let answer = api
        .as_user(
            &ada,
            Method::GET,
            &format!("/v2/user?usernames=ada{many}"),
            None,
        )
        .await;
    assert_error(
        &answer,
        400,
        3,
        "Too many users requested: at most 1000 ids and usernames together.",
    );
    let some = "&usernames=x".repeat(999);
    let (status, body) = api
        .as_user(
            &ada,
            Method::GET,
            &format!("/v2/user?usernames=ada{some}"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "1000 is allowed: {body}");
}

#[tokio::test]
async fn get_users_refuses_a_bad_id_and_answers_nothing_for_nothing() {
    let api = Api::new().await;
    let ada = api.sign_up("").await;
    let answer = api
        .as_user(&ada, Method::GET, "/v2/user?ids=not-a-uuid", None)
        .await;
    assert_error(&answer, 400, 3, "ID 'not-a-uuid' is not a valid system ID.");
    let (status, body) = api.as_user(&ada, Method::GET, "/v2/user", None).await;
    assert_eq!((status, body), (StatusCode::OK, json!({})));
    let (status, body) = api
        .as_user(&ada, Method::GET, "/v2/user?facebook_ids=123", None)
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!({})));
    let answer = api.call(Method::GET, "/v2/user", None, None).await;
    assert_error(&answer, 401, 16, "Auth token required");
}

#[tokio::test]
async fn taken_username_in_account_update_is_400_3_with_nakamas_wrapped_message() {
    let api = Api::new().await;
    api.sign_up("&username=taken").await;
    let other = api.sign_up("").await;
    let answer = api
        .as_user(
            &other,
            Method::PUT,
            "/v2/account",
            Some(json!({ "username": "taken" })),
        )
        .await;
    assert_error(
        &answer,
        400,
        3,
        "rpc error: code = AlreadyExists desc = Username is already in use.",
    );
    // Signing up with a taken username stays 409/6, as Nakama's authenticate answers.
    let answer = api
        .sign_up_raw("device-taken-0001", "&username=taken")
        .await;
    assert_error(&answer, 409, 6, "Username is already in use.");
}

#[tokio::test]
async fn username_with_plain_space_is_accepted() {
    let api = Api::new().await;
    let ada = api.sign_up("&username=first+last").await;
    let (_, account) = api.as_user(&ada, Method::GET, "/v2/account", None).await;
    assert_eq!(account["user"]["username"], "first last");
    let (status, body) = api
        .as_user(
            &ada,
            Method::PUT,
            "/v2/account",
            Some(json!({ "username": "second name" })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Control characters are still refused, with Nakama's message.
    let answer = api
        .as_user(
            &ada,
            Method::PUT,
            "/v2/account",
            Some(json!({ "username": "tab\there" })),
        )
        .await;
    assert_error(
        &answer,
        400,
        3,
        "Username invalid, no spaces or control characters allowed.",
    );
}

#[tokio::test]
async fn sign_in_checks_the_identity_before_the_username_as_nakama() {
    let api = Api::new().await;
    let answer = api
        .sign_up_raw("has a space in it", "&username=tab%09name")
        .await;
    assert_error(
        &answer,
        400,
        3,
        "Device ID invalid, no spaces or control characters allowed.",
    );
    let answer = api
        .call(
            Method::POST,
            "/v2/account/authenticate/email?create=true&username=tab%09name",
            Some("Basic ZGVmYXVsdGtleTo="),
            Some(json!({ "email": "not-an-email", "password": "short" })),
        )
        .await;
    assert_error(&answer, 400, 3, "Invalid email address format.");
    let answer = api
        .call(
            Method::POST,
            "/v2/account/authenticate/email?create=true&username=tab%09name",
            Some("Basic ZGVmYXVsdGtleTo="),
            Some(json!({ "email": "ada@example.com", "password": "short" })),
        )
        .await;
    assert_error(
        &answer,
        400,
        3,
        "Password must be at least 8 characters long.",
    );
}

#[tokio::test]
async fn revoked_token_is_refused_with_nakamas_exact_message() {
    let api = Api::new().await;
    let ada = api.sign_up("").await;
    let (status, body) = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/session/logout",
            Some(json!({ "token": ada.token, "refresh_token": ada.refresh_token })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let answer = api.as_user(&ada, Method::GET, "/v2/account", None).await;
    assert_error(&answer, 401, 16, "Auth token invalid");
}

#[tokio::test]
async fn storage_delete_of_missing_object_is_refused() {
    let api = Api::new().await;
    let ada = api.sign_up("").await;
    let message =
        "Storage delete rejected - not found, version check failed, or permission denied.";
    let delete = |key: &str, version: &str| json!({ "object_ids": [{ "collection": "c", "key": key, "version": version }] });
    let answer = api
        .as_user(
            &ada,
            Method::PUT,
            "/v2/storage/delete",
            Some(delete("ghost", "")),
        )
        .await;
    assert_error(&answer, 400, 3, message);
    let write = json!({ "objects": [{ "collection": "c", "key": "k", "value": "{\"a\":1}" }] });
    let (status, body) = api
        .as_user(&ada, Method::PUT, "/v2/storage", Some(write))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // A version mismatch gets the same answer.
    let answer = api
        .as_user(
            &ada,
            Method::PUT,
            "/v2/storage/delete",
            Some(delete("k", "nope")),
        )
        .await;
    assert_error(&answer, 400, 3, message);
    let (status, body) = api
        .as_user(
            &ada,
            Method::PUT,
            "/v2/storage/delete",
            Some(delete("k", "")),
        )
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!({})));
}

#[tokio::test]
async fn storage_write_of_empty_value_and_read_of_nil_owner_answer_as_nakama() {
    let api = Api::new().await;
    let ada = api.sign_up("").await;
    let write = json!({ "objects": [{ "collection": "c", "key": "k", "value": "" }] });
    let answer = api
        .as_user(&ada, Method::PUT, "/v2/storage", Some(write))
        .await;
    assert_error(
        &answer,
        400,
        3,
        "Invalid collection or key value supplied. They must be set.",
    );
    let read =
        json!({ "object_ids": [{ "collection": "c", "key": "k", "user_id": uuid::Uuid::nil() }] });
    let answer = api
        .as_user(&ada, Method::POST, "/v2/storage", Some(read))
        .await;
    assert_error(
        &answer,
        400,
        3,
        "Invalid user ID - make sure user ID is a valid UUID.",
    );
    let read = json!({ "object_ids": [{ "collection": "c", "key": "k" }] });
    let (status, body) = api
        .as_user(&ada, Method::POST, "/v2/storage", Some(read))
        .await;
    assert_eq!((status, body), (StatusCode::OK, json!({})));
}

#[tokio::test]
async fn path_with_invalid_utf8_is_400_3() {
    let api = Api::new().await;
    let ada = api.sign_up("").await;
    let (status, body) = api
        .as_user(&ada, Method::GET, "/v2/storage/%FF?limit=1", None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["code"], 3, "{body}");
}

#[tokio::test]
async fn owner_storage_listing_is_in_nakamas_order() {
    let api = Api::new().await;
    let ada = api.sign_up("").await;
    // Nakama lists an owner's objects by read permission, then key.
    let object = |key: &str, read: i32| json!({ "collection": "c", "key": key, "value": "{}", "permission_read": read });
    let write =
        json!({ "objects": [object("a", 2), object("b", 1), object("c", 2), object("d", 1)] });
    let (status, body) = api
        .as_user(&ada, Method::PUT, "/v2/storage", Some(write))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let keys = |body: &serde_json::Value| -> Vec<String> {
        body["objects"]
            .as_array()
            .map(|objects| {
                objects
                    .iter()
                    .filter_map(|o| o["key"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    for uri in [
        format!("/v2/storage/c?user_id={}&limit=10", ada.id),
        format!("/v2/storage/c/{}?limit=10", ada.id),
    ] {
        let (_, body) = api.as_user(&ada, Method::GET, &uri, None).await;
        assert_eq!(keys(&body), ["b", "d", "a", "c"], "{uri}: {body}");
    }
    // Paged one by one, the same order.
    let mut seen = Vec::new();
    let mut cursor = String::new();
    for _ in 0..10 {
        let uri = format!("/v2/storage/c?user_id={}&limit=1&cursor={cursor}", ada.id);
        let (_, body) = api.as_user(&ada, Method::GET, &uri, None).await;
        seen.extend(keys(&body));
        match body["cursor"].as_str() {
            Some(next) if !next.is_empty() => cursor = next.to_owned(),
            _ => break,
        }
    }
    assert_eq!(seen, ["b", "d", "a", "c"]);
    // Without user_id: public objects only, by key then owner.
    let (_, body) = api
        .as_user(&ada, Method::GET, "/v2/storage/c?limit=10", None)
        .await;
    assert_eq!(keys(&body), ["a", "c"], "{body}");
}
