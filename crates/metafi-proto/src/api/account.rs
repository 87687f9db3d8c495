//! Account bodies: the identities users authenticate with, the account and user views, and
//! account updates.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// Body of `POST /v2/account/authenticate/device`; also a device entry of [`Account`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AccountDevice {
    pub id: String,
    #[serde(skip_serializing_if = "HashMap::is_empty")]
    pub vars: HashMap<String, String>,
}

/// Body of `POST /v2/account/authenticate/custom`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct AccountCustom {
    pub id: String,
    pub vars: HashMap<String, String>,
}

/// Body of `POST /v2/account/authenticate/email`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct AccountEmail {
    pub email: String,
    pub password: String,
    pub vars: HashMap<String, String>,
}

/// A user as other users and the owner see it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct User {
    pub id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub avatar_url: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub lang_tag: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub location: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub timezone: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub metadata: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub facebook_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub google_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub gamecenter_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub steam_id: String,
    #[serde(skip_serializing_if = "super::is_false")]
    pub online: bool,
    #[serde(skip_serializing_if = "is_zero")]
    pub edge_count: i32,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub create_time: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub update_time: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub facebook_instant_game_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub apple_id: String,
}

/// `GET /v2/user`: users looked up by id or username (omitted when none is found, as Nakama's
/// gateway omits empty lists).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Users {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<User>,
}

/// `GET /v2/account`: the signed-in user's own view.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Account {
    pub user: User,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub wallet: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub email: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<AccountDevice>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub custom_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub verify_time: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub disable_time: String,
}

/// `PUT /v2/account`. An absent field is left unchanged; an empty string clears it (except the
/// username, which cannot be empty).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct UpdateAccountRequest {
    pub username: Option<String>,
    #[serde(alias = "displayName")]
    pub display_name: Option<String>,
    #[serde(alias = "avatarUrl")]
    pub avatar_url: Option<String>,
    #[serde(alias = "langTag")]
    pub lang_tag: Option<String>,
    pub location: Option<String>,
    pub timezone: Option<String>,
}

fn is_zero(value: &i32) -> bool {
    *value == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_request_accepts_proto_and_json_names_and_ignores_unknown_fields() {
        let a: UpdateAccountRequest =
            serde_json::from_str(r#"{"display_name":"A","langTag":"fr","bogus":1}"#).unwrap();
        assert_eq!(a.display_name.as_deref(), Some("A"));
        assert_eq!(a.lang_tag.as_deref(), Some("fr"));
        assert_eq!(a.username, None);
    }

    #[test]
    fn empty_fields_are_omitted_from_responses() {
        let user = User {
            id: "u".into(),
            username: "bob".into(),
            ..User::default()
        };
        let json = serde_json::to_string(&user).unwrap();
        assert_eq!(json, r#"{"id":"u","username":"bob"}"#);
    }
}
