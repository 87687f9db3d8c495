//! Friend bodies: `api.Friend`, `api.FriendList` and `api.FriendsOfFriendsList` (the answers
//! of `GET /v2/friend` and `GET /v2/friend/friends`).

use serde::{Deserialize, Serialize};

use super::User;

/// One relationship seen from the signed-in user. `state` is always present (a wrapper in
/// Nakama's proto, so 0 is sent): 0 friend, 1 invite sent, 2 invite received, 3 blocked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Friend {
    pub user: User,
    pub state: i32,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub update_time: String,
    /// JSON object text the user attached when adding.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub metadata: String,
}

/// A page of relationships and the cursor of the next one (empty on the last page).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FriendList {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub friends: Vec<Friend>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cursor: String,
}

/// A friend of one of the user's friends, and that friend's id (`referrer`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FriendOfFriend {
    pub referrer: String,
    pub user: User,
}

/// A page of friends of friends and the cursor of the next one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FriendsOfFriendsList {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub friends_of_friends: Vec<FriendOfFriend>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cursor: String,
}
