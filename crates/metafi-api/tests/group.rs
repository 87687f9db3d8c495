//! Groups over REST: Nakama's paths, JSON shapes, statuses, codes and texts.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::sync::Arc;

use axum::http::Method;
use metafi_core::hooks::HookFuture;
use metafi_core::{CoreError, Hook, Hooks, RpcContext};
use serde_json::{Value, json};
use support::{Api, Player, assert_error};

async fn create(api: &Api, owner: &Player, name: &str, open: bool) -> String {
    let (status, body) = api
        .as_user(
            owner,
            Method::POST,
            "/v2/group",
            Some(json!({ "name": name, "description": "d", "open": open, "max_count": 3 })),
        )
        .await;
    assert_eq!(status.as_u16(), 200, "{body}");
    body["id"].as_str().expect("id").to_owned()
}

#[tokio::test]
async fn create_answers_the_group_in_nakamas_shape() {
    let api = Api::new().await;
    let ada = api.sign_up("&username=ada").await;
    let (status, body) = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/group",
            Some(json!({ "name": "Knights", "lang_tag": "fr", "open": false })),
        )
        .await;
    assert_eq!(status.as_u16(), 200, "{body}");
    assert_eq!(body["name"], "Knights");
    assert_eq!(body["creator_id"], ada.id.to_string());
    assert_eq!(body["lang_tag"], "fr");
    assert_eq!(body["open"], false, "a BoolValue is rendered when false");
    assert_eq!(body["edge_count"], 1);
    assert_eq!(body["max_count"], 100);
    assert_eq!(body["metadata"], "{}");
    assert!(
        body["create_time"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    let again = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/group",
            Some(json!({ "name": "Knights" })),
        )
        .await;
    assert_error(&again, 409, 6, "Group name is in use.");
    let unnamed = api
        .as_user(&ada, Method::POST, "/v2/group", Some(json!({})))
        .await;
    assert_error(&unnamed, 400, 3, "Group name must be set.");
}

#[tokio::test]
async fn closed_group_request_is_accepted_by_add_and_listed() {
    let api = Api::new().await;
    let ada = api.sign_up("&username=ada").await;
    let bob = api.sign_up("&username=bob").await;
    let g = create(&api, &ada, "Closed", false).await;
    let (status, _) = api
        .as_user(&bob, Method::POST, &format!("/v2/group/{g}/join"), None)
        .await;
    assert_eq!(status.as_u16(), 200);
    let sent = api.take_notifications();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].code, -5);
    assert_eq!(sent[0].user_id, ada.id);
    assert_eq!(sent[0].subject, "User bob wants to join your group");
    let (_, body) = api
        .as_user(&ada, Method::GET, &format!("/v2/group/{g}/user"), None)
        .await;
    assert_eq!(body["group_users"][0]["state"], 0);
    assert_eq!(body["group_users"][0]["user"]["username"], "ada");
    assert_eq!(body["group_users"][1]["state"], 3);
    // A member of nothing cannot accept.
    let refused = api
        .as_user(
            &bob,
            Method::POST,
            &format!("/v2/group/{g}/add?user_ids={}", bob.id),
            None,
        )
        .await;
    assert_error(&refused, 404, 5, "Group not found or permission denied.");
    let (status, _) = api
        .as_user(
            &ada,
            Method::POST,
            &format!("/v2/group/{g}/add?user_ids={}", bob.id),
            None,
        )
        .await;
    assert_eq!(status.as_u16(), 200);
    assert_eq!(api.take_notifications()[0].code, -4);
    let (_, body) = api
        .as_user(
            &bob,
            Method::GET,
            &format!("/v2/user/{}/group", bob.id),
            None,
        )
        .await;
    assert_eq!(body["user_groups"][0]["state"], 2);
    assert_eq!(body["user_groups"][0]["group"]["edge_count"], 2);
    let (_, body) = api
        .as_user(&bob, Method::GET, "/v2/group?name=clo%25&limit=10", None)
        .await;
    assert_eq!(body["groups"][0]["id"], g);
}

#[tokio::test]
async fn membership_rules_answer_nakamas_errors() {
    let api = Api::new().await;
    let ada = api.sign_up("&username=ada").await;
    let bob = api.sign_up("&username=bob").await;
    let cy = api.sign_up("&username=cy").await;
    let g = create(&api, &ada, "Open", true).await;
    for p in [&bob, &cy] {
        let (status, _) = api
            .as_user(p, Method::POST, &format!("/v2/group/{g}/join"), None)
            .await;
        assert_eq!(status.as_u16(), 200);
    }
    let full = api
        .as_user(&ada, Method::POST, &format!("/v2/group/{g}/join"), None)
        .await;
    assert_error(&full, 400, 3, "Group is full.");
    let kick = api
        .as_user(
            &bob,
            Method::POST,
            &format!("/v2/group/{g}/kick?user_ids={}", cy.id),
            None,
        )
        .await;
    assert_error(&kick, 404, 5, "Group not found or permission denied.");
    let leave = api
        .as_user(&ada, Method::POST, &format!("/v2/group/{g}/leave"), None)
        .await;
    assert_error(
        &leave,
        400,
        3,
        "Cannot leave group when you are the last superadmin.",
    );
    let demote = api
        .as_user(&ada, Method::POST, &format!("/v2/group/{g}/demote"), None)
        .await;
    assert_error(&demote, 400, 3, "User IDs must be set.");
    let bad = api
        .as_user(
            &ada,
            Method::POST,
            &format!("/v2/group/{g}/ban?user_ids=nope"),
            None,
        )
        .await;
    assert_error(&bad, 400, 3, "User ID must be a valid ID.");
    let bad = api
        .as_user(&ada, Method::POST, "/v2/group/nope/join", None)
        .await;
    assert_error(&bad, 400, 3, "Group ID must be a valid ID.");
    let (status, _) = api
        .as_user(
            &ada,
            Method::POST,
            &format!("/v2/group/{g}/ban?user_ids={}", cy.id),
            None,
        )
        .await;
    assert_eq!(status.as_u16(), 200);
    let (_, body) = api
        .as_user(
            &ada,
            Method::GET,
            &format!("/v2/group/{g}/user?state=4"),
            None,
        )
        .await;
    assert_eq!(body["group_users"][0]["user"]["id"], cy.id.to_string());
    let update = api
        .as_user(
            &bob,
            Method::PUT,
            &format!("/v2/group/{g}"),
            Some(json!({ "description": "x" })),
        )
        .await;
    assert_error(
        &update,
        404,
        5,
        "Group not found or you're not allowed to update.",
    );
    let delete = api
        .as_user(&bob, Method::DELETE, &format!("/v2/group/{g}"), None)
        .await;
    assert_error(
        &delete,
        400,
        3,
        "Group not found or you're not allowed to delete.",
    );
    let (status, _) = api
        .as_user(&ada, Method::DELETE, &format!("/v2/group/{g}"), None)
        .await;
    assert_eq!(status.as_u16(), 200);
    let gone = api
        .as_user(&bob, Method::POST, &format!("/v2/group/{g}/join"), None)
        .await;
    assert_error(&gone, 404, 5, "Group not found.");
}

/// Drops every `JoinGroup` and renames every group created (`CreateGroup` before hooks).
#[derive(Debug)]
struct GroupHooks;

impl Hooks for GroupHooks {
    fn has_before(&self, hook: Hook) -> bool {
        matches!(hook, Hook::JoinGroup | Hook::CreateGroup)
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
                Hook::CreateGroup => input.map(|mut request| {
                    request["name"] = json!("Renamed");
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
async fn before_hooks_change_or_drop_group_calls() {
    let api = Api::with_hooks(Arc::new(GroupHooks)).await;
    let ada = api.sign_up("&username=ada").await;
    let bob = api.sign_up("&username=bob").await;
    let (status, body) = api
        .as_user(
            &ada,
            Method::POST,
            "/v2/group",
            Some(json!({ "name": "Original", "open": true })),
        )
        .await;
    assert_eq!(status.as_u16(), 200, "{body}");
    assert_eq!(body["name"], "Renamed");
    let g = body["id"].as_str().expect("id").to_owned();
    let dropped = api
        .as_user(&bob, Method::POST, &format!("/v2/group/{g}/join"), None)
        .await;
    assert_error(&dropped, 404, 5, "Requested resource was not found.");
    let (_, body) = api
        .as_user(&ada, Method::GET, &format!("/v2/group/{g}/user"), None)
        .await;
    assert_eq!(body["group_users"].as_array().map(Vec::len), Some(1));
}
