//! Steam: the session ticket is checked by Steam's Web API (`AuthenticateUserTicket`) with the
//! publisher key and app id; its answer names the user's 64-bit Steam id.

use serde::Deserialize;

use super::{Profile, Verifier, VerifyError};

#[derive(Deserialize)]
struct Wrapper {
    response: Response,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    params: Option<Params>,
    #[serde(default)]
    error: Option<SteamError>,
}

#[derive(Deserialize)]
struct Params {
    steamid: String,
}

#[derive(Deserialize)]
struct SteamError {
    #[serde(default)]
    errordesc: String,
    #[serde(default)]
    errorcode: i64,
}

pub(crate) async fn verify(verifier: &Verifier, ticket: &str) -> Result<Profile, VerifyError> {
    let config = &verifier.config;
    let mut url = reqwest::Url::parse(&config.steam_auth_url)
        .map_err(|e| VerifyError::invalid(format!("steam url: {e}")))?;
    url.query_pairs_mut()
        .append_pair("format", "json")
        .append_pair("key", &config.steam_publisher_key)
        .append_pair("appid", &config.steam_app_id.to_string())
        .append_pair("ticket", ticket);
    let body = verifier.fetcher.get("steam profile", url.as_str()).await?;
    let wrapper: Wrapper = serde_json::from_slice(&body)
        .map_err(|e| VerifyError::invalid(format!("malformed steam answer: {e}")))?;
    if let Some(error) = wrapper.response.error {
        return Err(VerifyError::invalid(format!(
            "{}, {}",
            error.errordesc, error.errorcode
        )));
    }
    let params = wrapper
        .response
        .params
        .ok_or_else(|| VerifyError::invalid("no steam profile"))?;
    // Nakama reads it as an unsigned 64-bit number and stores its decimal form.
    let steam_id: u64 = params
        .steamid
        .parse()
        .map_err(|_| VerifyError::invalid("steam id is not a number"))?;
    Ok(Profile {
        id: steam_id.to_string(),
        ..Profile::default()
    })
}
