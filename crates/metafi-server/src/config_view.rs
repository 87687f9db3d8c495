//! What `nk.get_config()` shows server code: Nakama's shape, filled from MetaFi's config.
//!
//! As in Nakama, server code is trusted and sees the keys it may need (session encryption
//! keys, server key, HTTP key) in clear; the database address is left out, as Nakama leaves
//! it out. Sections of features MetaFi does not have (social logins, IAP, Google auth, Satori)
//! carry Nakama's empty values so scripts that read them do not fail.

use serde_json::{Value, json};

use crate::config::Config;

/// The `get_config` table.
pub(crate) fn nakama_view(config: &Config) -> Value {
    let raw = &config.raw;
    json!({
        "name": config.name,
        "shutdown_grace_sec": config.shutdown_grace.as_secs(),
        "logger": { "level": raw.logger.level },
        "session": {
            "encryption_key": raw.session.encryption_key,
            "token_expiry_sec": raw.session.token_expiry_sec,
            "refresh_encryption_key": raw.session.refresh_encryption_key,
            "refresh_token_expiry_sec": raw.session.refresh_token_expiry_sec,
            "single_socket": raw.session.single_socket,
            "single_match": false,
            "single_party": false,
            "single_session": false,
        },
        "socket": {
            "server_key": raw.socket.server_key,
            "port": raw.socket.port,
            "address": raw.socket.address,
            "protocol": "tcp",
        },
        "social": {
            "steam": { "publisher_key": "", "app_id": 0 },
            "facebook_instant_game": { "app_secret": "" },
            "facebook_limited_login": { "app_id": "" },
            "apple": { "bundle_id": "" },
        },
        "runtime": {
            "env": raw.runtime.env,
            "http_key": raw.runtime.http_key,
        },
        "iap": {
            "apple": { "shared_password": "", "notifications_endpoint_id": "" },
            "google": { "client_email": "", "private_key": "", "notifications_endpoint_id": "" },
            "huawei": { "public_key": "", "client_id": "", "client_secret": "" },
            "facebook_instant": { "app_secret": "" },
            "samsung": { "package_name": "" },
        },
        "google_auth": { "credentials_json": "" },
        "satori": { "url": "", "api_key_name": "", "api_key": "", "signing_key": "" },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RawConfig;

    #[test]
    fn has_nakamas_sections_and_metafis_values_but_no_database_address() {
        let mut raw = RawConfig {
            name: "node-7".into(),
            ..RawConfig::default()
        };
        raw.runtime.env = vec!["region=eu".into()];
        let config = Config::try_from(raw).unwrap();
        let view = nakama_view(&config);
        assert_eq!(view["name"], "node-7");
        assert_eq!(view["runtime"]["env"], json!(["region=eu"]));
        assert_eq!(view["socket"]["port"], 7350);
        assert_eq!(
            view["session"]["token_expiry_sec"],
            config.raw.session.token_expiry_sec
        );
        for section in [
            "logger",
            "session",
            "socket",
            "social",
            "runtime",
            "iap",
            "google_auth",
            "satori",
        ] {
            assert!(view[section].is_object(), "{section}");
        }
        assert!(view.get("database").is_none());
    }
}
