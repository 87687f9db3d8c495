//! Social sign-in bodies: the provider credentials of `/v2/account/authenticate/…`,
//! `/v2/account/link/…` and `/v2/account/unlink/…` (Nakama's `AccountApple`, …). Every field
//! is written out, as before/after hooks see unpopulated fields.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::json::nullable;

/// `AccountApple`: a Sign in with Apple id token.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AccountApple {
    #[serde(deserialize_with = "nullable")]
    pub token: String,
    #[serde(deserialize_with = "nullable")]
    pub vars: HashMap<String, String>,
}

/// `AccountFacebook`: an access token or Limited Login id token.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AccountFacebook {
    #[serde(deserialize_with = "nullable")]
    pub token: String,
    #[serde(deserialize_with = "nullable")]
    pub vars: HashMap<String, String>,
}

/// `AccountFacebookInstantGame`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AccountFacebookInstantGame {
    #[serde(deserialize_with = "nullable")]
    pub signed_player_info: String,
    #[serde(deserialize_with = "nullable")]
    pub vars: HashMap<String, String>,
}

/// `AccountGameCenter`: the proof a Game Center client signs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AccountGameCenter {
    #[serde(deserialize_with = "nullable")]
    pub player_id: String,
    #[serde(deserialize_with = "nullable")]
    pub bundle_id: String,
    #[serde(with = "crate::json::int64")]
    pub timestamp_seconds: i64,
    #[serde(deserialize_with = "nullable")]
    pub salt: String,
    #[serde(deserialize_with = "nullable")]
    pub signature: String,
    #[serde(deserialize_with = "nullable")]
    pub public_key_url: String,
    #[serde(deserialize_with = "nullable")]
    pub vars: HashMap<String, String>,
}

/// `AccountGoogle`: a Google id token.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AccountGoogle {
    #[serde(deserialize_with = "nullable")]
    pub token: String,
    #[serde(deserialize_with = "nullable")]
    pub vars: HashMap<String, String>,
}

/// `AccountSteam`: a Steam session ticket.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AccountSteam {
    #[serde(deserialize_with = "nullable")]
    pub token: String,
    #[serde(deserialize_with = "nullable")]
    pub vars: HashMap<String, String>,
}

/// `LinkSteamRequest`, the body of `POST /v2/account/link/steam`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LinkSteamRequest {
    #[serde(deserialize_with = "nullable")]
    pub account: AccountSteam,
    pub sync: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn game_center_timestamps_are_read_as_numbers_or_strings() {
        for body in [
            r#"{"player_id":"p","timestamp_seconds":1700000000}"#,
            r#"{"player_id":"p","timestamp_seconds":"1700000000","vars":null}"#,
        ] {
            let account: AccountGameCenter = serde_json::from_str(body).expect(body);
            assert_eq!(account.timestamp_seconds, 1_700_000_000, "{body}");
        }
        let steam: LinkSteamRequest =
            serde_json::from_str(r#"{"account":{"token":"t"},"sync":true}"#).expect("steam");
        assert_eq!(
            (steam.account.token.as_str(), steam.sync),
            ("t", Some(true))
        );
    }
}
