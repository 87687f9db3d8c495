//! `GET /v2/user`: users by `ids`, `usernames` and `facebook_ids` (each repeatable).

use axum::Json;
use axum::extract::State;
use axum::http::Uri;
use metafi_core::{Hook, UserLookup};
use metafi_proto::api::Users;

use crate::body::query_of;
use crate::client_address::ClientAddress;
use crate::hooks::{self, GetUsersRequest};
use crate::{ApiError, ApiState, SessionAuth};

pub(super) async fn get(
    State(state): State<ApiState>,
    SessionAuth(claims): SessionAuth,
    client: ClientAddress,
    uri: Uri,
) -> Result<Json<Users>, ApiError> {
    let mut request = GetUsersRequest::default();
    for (name, value) in query_of(&uri)? {
        match name.as_str() {
            "ids" => request.ids.push(value),
            "usernames" => request.usernames.push(value),
            "facebook_ids" => request.facebook_ids.push(value),
            _ => {}
        }
    }
    let ctx = || hooks::signed_in(&claims, &client);
    hooks::around(&state, Hook::GetUsers, ctx, request, async |request| {
        let lookup = UserLookup {
            ids: request.ids,
            usernames: request.usernames,
            facebook_ids: request.facebook_ids,
        };
        let users = Users {
            users: state.users.users(lookup).await?,
        };
        Ok(users)
    })
    .await
}
