//! Session bodies: what authentication returns, refresh and logout requests.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// A signed-in session: returned by every authenticate call and by refresh.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// True when this call created the account.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub created: bool,
    pub token: String,
    #[serde(alias = "refreshToken")]
    pub refresh_token: String,
}

/// `POST /v2/account/session/refresh`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct SessionRefreshRequest {
    /// The refresh token.
    pub token: String,
    /// Replaces the session variables when present.
    pub vars: Option<HashMap<String, String>>,
}

/// `POST /v2/session/logout`. With neither token, every session of the user is ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct SessionLogoutRequest {
    pub token: String,
    #[serde(alias = "refreshToken")]
    pub refresh_token: String,
}
