//! NUL characters and over-long names answer 400/3 at the edge on every backend (PostgreSQL
//! answered 500 while SQLite stored them), and a query string that is not UTF-8 is refused
//! instead of read with replacement characters (issue 14).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use axum::http::{Method, StatusCode};
use serde_json::json;
use support::{Api, assert_error};

#[tokio::test]
async fn storage_names_with_nul_or_over_128_characters_are_400_3() {
    let api = Api::new().await;
    let ada = api.sign_up("").await;
    let write = |collection: &str, key: &str| json!({ "objects": [{ "collection": collection, "key": key, "value": "{}" }] });
    let nul = "Invalid collection or key value supplied. They must not contain NUL characters.";
    let long = "Invalid collection or key value supplied. They must be at most 128 characters.";
    for (collection, key, message) in [
        ("c\0", "k", nul),
        ("c", "k\0", nul),
        (&*"c".repeat(129), "k", long),
        ("c", &*"k".repeat(3000), long),
    ] {
        let answer = api
            .as_user(
                &ada,
                Method::PUT,
                "/v2/storage",
                Some(write(collection, key)),
            )
            .await;
        assert_error(&answer, 400, 3, message);
    }
    // 128 characters of any width fit, as in Nakama's VARCHAR(128).
    let (status, body) = api
        .as_user(
            &ada,
            Method::PUT,
            "/v2/storage",
            Some(write(&"ü".repeat(128), &"🔑".repeat(128))),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // A NUL inside the value's JSON string is escaped text, not a NUL: stored as sent.
    let value =
        json!({ "objects": [{ "collection": "c", "key": "k", "value": "{\"a\":\"\\u0000\"}" }] });
    let (status, body) = api
        .as_user(&ada, Method::PUT, "/v2/storage", Some(value))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let read = json!({ "object_ids": [{ "collection": "c\u{0}", "key": "k", "user_id": ada.id }] });
    let answer = api
        .as_user(&ada, Method::POST, "/v2/storage", Some(read))
        .await;
    assert_error(&answer, 400, 3, nul);
    let answer = api
        .as_user(&ada, Method::GET, "/v2/storage/c%00?limit=10", None)
        .await;
    assert_error(
        &answer,
        400,
        3,
        "Invalid collection value supplied. It must not contain NUL characters.",
    );
}

#[tokio::test]
async fn account_fields_with_nul_or_over_the_column_are_400_3() {
    let api = Api::new().await;
    let ada = api.sign_up("").await;
    for (update, message) in [
        (
            json!({ "display_name": "a\u{0}b" }),
            "Display name invalid, no NUL characters allowed.",
        ),
        (
            json!({ "location": "x".repeat(256) }),
            "Location invalid, must be at most 255 characters.",
        ),
        (
            json!({ "lang_tag": "x".repeat(19) }),
            "Lang tag invalid, must be at most 18 characters.",
        ),
        (
            json!({ "avatar_url": "x\u{0}" }),
            "Avatar URL invalid, no NUL characters allowed.",
        ),
        (
            json!({ "timezone": "x\u{0}" }),
            "Timezone invalid, no NUL characters allowed.",
        ),
        (
            json!({ "username": "a\u{0}b" }),
            "Username invalid, no spaces or control characters allowed.",
        ),
    ] {
        let answer = api
            .as_user(&ada, Method::PUT, "/v2/account", Some(update))
            .await;
        assert_error(&answer, 400, 3, message);
    }
    let answer = api.sign_up_raw("device\u{0}nul-id", "").await;
    assert_error(
        &answer,
        400,
        3,
        "Device ID invalid, no spaces or control characters allowed.",
    );
    let answer = api
        .sign_up_raw("device-nul-username", "&username=a%00b")
        .await;
    assert_error(
        &answer,
        400,
        3,
        "Username invalid, no spaces or control characters allowed.",
    );
}

#[tokio::test]
async fn username_query_with_invalid_utf8_is_refused() {
    let api = Api::new().await;
    let answer = api
        .sign_up_raw("device-invalid-utf8", "&username=%FF%FEada")
        .await;
    assert_error(
        &answer,
        400,
        3,
        "Query parameter 'username' must be valid UTF-8 once percent-decoded.",
    );
    let ada = api.sign_up("").await;
    let answer = api
        .as_user(&ada, Method::GET, "/v2/user?usernames=%C3", None)
        .await;
    assert_eq!(answer.0, StatusCode::BAD_REQUEST, "{}", answer.1);
}
