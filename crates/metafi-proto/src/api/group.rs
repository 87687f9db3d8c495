//! Group bodies (`/v2/group…`, `/v2/user/{id}/group`), named as in Nakama's `api.proto`.

use serde::{Deserialize, Serialize};

use super::User;

/// A group. `open` and the times are always present; empty text and zero counts are omitted,
/// as Nakama's gateway renders them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Group {
    pub id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub creator_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub description: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub lang_tag: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub metadata: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub avatar_url: String,
    /// Nakama's `BoolValue`: rendered even when false.
    pub open: bool,
    #[serde(skip_serializing_if = "is_zero")]
    pub edge_count: i32,
    #[serde(skip_serializing_if = "is_zero")]
    pub max_count: i32,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub create_time: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub update_time: String,
}

/// `GET /v2/group`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupList {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<Group>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cursor: String,
}

/// A user of a group with its state (0 superadmin … 4 banned).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupUser {
    pub user: User,
    /// Nakama's `Int32Value`: rendered even when 0.
    pub state: i32,
}

/// `GET /v2/group/{id}/user`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupUserList {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub group_users: Vec<GroupUser>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cursor: String,
}

/// A group of a user with the user's state in it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct UserGroup {
    pub group: Group,
    pub state: i32,
}

/// `GET /v2/user/{id}/group`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct UserGroupList {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub user_groups: Vec<UserGroup>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cursor: String,
}

/// Body of `POST /v2/group`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CreateGroupRequest {
    pub name: String,
    pub description: String,
    #[serde(alias = "langTag")]
    pub lang_tag: String,
    #[serde(alias = "avatarUrl")]
    pub avatar_url: String,
    pub open: bool,
    #[serde(alias = "maxCount")]
    pub max_count: i32,
}

/// Body of `PUT /v2/group/{id}`: an absent field is left unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct UpdateGroupRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(alias = "langTag", skip_serializing_if = "Option::is_none")]
    pub lang_tag: Option<String>,
    #[serde(alias = "avatarUrl", skip_serializing_if = "Option::is_none")]
    pub avatar_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open: Option<bool>,
}

fn is_zero(value: &i32) -> bool {
    *value == 0
}
