//! `GET /v2/user`: users by `ids`, `usernames` and `facebook_ids` (each repeatable).

use axum::Json;
use axum::extract::State;
use axum::http::Uri;
use metafi_core::UserLookup;
use metafi_proto::api::Users;

use crate::body::query_pairs;
use crate::{ApiError, ApiState, SessionAuth};

pub(super) async fn get(
    State(state): State<ApiState>,
    SessionAuth(_claims): SessionAuth,
    uri: Uri,
) -> Result<Json<Users>, ApiError> {
    let mut lookup = UserLookup::default();
    for (name, value) in query_pairs(uri.query().unwrap_or_default())? {
        match name.as_str() {
            "ids" => lookup.ids.push(value),
            "usernames" => lookup.usernames.push(value),
            "facebook_ids" => lookup.facebook_ids.push(value),
            _ => {}
        }
    }
    let users = state.users.users(lookup).await?;
    Ok(Json(Users { users }))
}
