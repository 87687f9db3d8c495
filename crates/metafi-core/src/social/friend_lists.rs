//! The user's friends as a provider lists them, for Nakama's friend import: Facebook's Graph
//! API `me/friends` (every page, following `paging.cursors.after` while `paging.next` is set)
//! and Steam's Web API `GetFriendList`. Both answer provider ids; the import finds the users
//! linked to them.

use serde::Deserialize;

use super::fetch::FetchError;
use super::{Verifier, VerifyError};

#[derive(Deserialize, Default)]
#[serde(default)]
struct FacebookFriends {
    data: Vec<FacebookFriend>,
    paging: Paging,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct FacebookFriend {
    id: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Paging {
    cursors: Cursors,
    next: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Cursors {
    after: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct SteamFriends {
    // Steam writes `friendslist`; Nakama's Go decoder reads it case-insensitively.
    #[serde(alias = "friendsList")]
    friendslist: SteamFriendList,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct SteamFriendList {
    friends: Vec<SteamFriend>,
}

#[derive(Deserialize)]
struct SteamFriend {
    steamid: String,
}

/// The Facebook ids of the token's friends (Graph API 2.0+: those who use the same app), at
/// most `max` of them: pages are read until Facebook says there are no more, a page adds
/// nothing, or `max` are known (the import could not add more friends than that).
pub(crate) async fn facebook(
    verifier: &Verifier,
    token: &str,
    max: usize,
) -> Result<Vec<String>, VerifyError> {
    let mut ids = Vec::new();
    let mut after = String::new();
    loop {
        let mut url = reqwest::Url::parse(&verifier.config.facebook_friends_url)
            .map_err(|e| VerifyError::invalid(format!("facebook friends url: {e}")))?;
        url.query_pairs_mut().append_pair("access_token", token);
        if !after.is_empty() {
            url.query_pairs_mut().append_pair("after", &after);
        }
        let body = verifier
            .fetcher
            .get("facebook friends", url.as_str())
            .await?;
        let page: FacebookFriends = serde_json::from_slice(&body)
            .map_err(|e| VerifyError::invalid(format!("malformed facebook friends: {e}")))?;
        let added = page.data.len();
        ids.extend(
            page.data
                .into_iter()
                .map(|f| f.id)
                .filter(|id| !id.is_empty()),
        );
        // A provider that keeps answering the same cursor, or empty pages, ends the listing.
        let next = page.paging.cursors.after;
        if page.paging.next.is_empty() || added == 0 || next.is_empty() || next == after {
            break;
        }
        if ids.len() >= max {
            break;
        }
        after = next;
    }
    ids.truncate(max);
    Ok(ids)
}

/// The Steam ids of the user's friends. A 401 (the profile or its friends are private) is an
/// empty list, as Nakama takes it.
pub(crate) async fn steam(
    verifier: &Verifier,
    steam_id: &str,
    max: usize,
) -> Result<Vec<String>, VerifyError> {
    let config = &verifier.config;
    let mut url = reqwest::Url::parse(&config.steam_friends_url)
        .map_err(|e| VerifyError::invalid(format!("steam friends url: {e}")))?;
    url.query_pairs_mut()
        .append_pair("key", &config.steam_publisher_key)
        .append_pair("steamid", steam_id)
        .append_pair("relationship", "friend");
    let body = match verifier.fetcher.get("steam friends", url.as_str()).await {
        Ok(body) => body,
        Err(FetchError::Status { status: 401, .. }) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let list: SteamFriends = serde_json::from_slice(&body)
        .map_err(|e| VerifyError::invalid(format!("malformed steam friends: {e}")))?;
    let mut ids = Vec::with_capacity(list.friendslist.friends.len());
    for friend in list.friendslist.friends {
        // Nakama reads the id as an unsigned 64-bit number; the stored form is its decimal.
        let id: u64 = friend
            .steamid
            .parse()
            .map_err(|_| VerifyError::invalid("steam friend id is not a number"))?;
        ids.push(id.to_string());
    }
    ids.truncate(max);
    Ok(ids)
}
