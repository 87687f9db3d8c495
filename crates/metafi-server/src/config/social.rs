//! The `[social]` keys, checked: social sign-in's app ids and secrets (Nakama's names) and the
//! provider endpoints.

use metafi_core::SocialConfig;

use super::check::Checker;
use super::raw::RawSocial;

pub(super) fn validate(s: &RawSocial, check: &mut Checker) -> SocialConfig {
    let mut url = |key: &str, value: &str| {
        let rest = value
            .strip_prefix("https://")
            .or_else(|| value.strip_prefix("http://"));
        let ok = rest.is_some_and(|r| !r.is_empty() && !r.starts_with('/'));
        if !ok {
            check.problem(format!(
                "{key}: must be an http or https URL, got {value:?}"
            ));
        }
        value.to_owned()
    };
    let apple_keys_url = url("social.apple.keys_url", &s.apple.keys_url);
    let google_keys_url = url("social.google.keys_url", &s.google.keys_url);
    let facebook_limited_keys_url = url(
        "social.facebook_limited_login.keys_url",
        &s.facebook_limited_login.keys_url,
    );
    let facebook_graph_url = url("social.facebook.graph_url", &s.facebook.graph_url);
    let steam_auth_url = url("social.steam.auth_url", &s.steam.auth_url);
    let facebook_friends_url = url("social.facebook.friends_url", &s.facebook.friends_url);
    let steam_friends_url = url("social.steam.friends_url", &s.steam.friends_url);
    SocialConfig {
        apple_bundle_id: s.apple.bundle_id.clone(),
        apple_keys_url,
        google_client_ids: s.google.client_ids.clone(),
        google_keys_url,
        facebook_limited_login_app_id: s.facebook_limited_login.app_id.clone(),
        facebook_limited_keys_url,
        facebook_graph_url,
        facebook_friends_url,
        facebook_instant_game_app_secret: s.facebook_instant_game.app_secret.clone(),
        steam_publisher_key: s.steam.publisher_key.clone(),
        steam_app_id: check.count_u32(
            "social.steam.app_id",
            s.steam.app_id,
            0,
            i64::from(u32::MAX),
        ),
        steam_auth_url,
        steam_friends_url,
        game_center_extra_key_url_prefixes: s.game_center.extra_public_key_url_prefixes.clone(),
        timeout: check.millis("social.timeout_ms", s.timeout_ms, 1, 60_000),
        max_response_bytes: check.count(
            "social.max_response_bytes",
            s.max_response_bytes,
            1024,
            64 << 20,
        ),
        keys_refresh: check.secs("social.keys_refresh_sec", s.keys_refresh_sec, 60, 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_providers_real_endpoints() {
        let mut check = Checker::default();
        let config = validate(&RawSocial::default(), &mut check);
        assert!(check.problems().is_empty(), "{:?}", check.problems());
        assert_eq!(config, SocialConfig::default());
    }

    #[test]
    fn endpoints_must_be_http_urls_and_limits_in_range() {
        let mut raw = RawSocial::default();
        raw.steam.auth_url = "ftp://steam.example/".into();
        raw.timeout_ms = 0;
        let mut check = Checker::default();
        validate(&raw, &mut check);
        let text = check.problems().join("\n");
        assert!(text.contains("social.steam.auth_url"), "{text}");
        assert!(text.contains("social.timeout_ms"), "{text}");
    }
}
