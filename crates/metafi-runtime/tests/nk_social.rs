//! The social sign-in rows of the `nk` table (`authenticate_*`, `link_*`, `unlink_*` for the
//! six providers), called as Lua and JavaScript call them over the real service on SQLite.
//! Facebook Instant Games is verified locally (HMAC with the app secret), so no provider is
//! faked here; the other providers' verification is tested in `metafi-core` and over REST.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::sync::Arc;

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey};
use metafi_core::{SocialConfig, SocialSignIn};
use metafi_runtime::Nk;
use metafi_runtime::nk_api::{Naming, NkCall, NkError, NkValue, js_function, lua_function};
use metafi_storage::Storage;
use nk_rig::{call_as, s};
use uuid::Uuid;

mod nk_rig;

const SECRET: &str = "instant-secret";

struct Host {
    nk: Nk,
    store: Arc<dyn Storage>,
    _dir: tempfile::TempDir,
}

async fn host() -> Host {
    let rig = nk_rig::rig().await;
    let social = SocialSignIn::new(
        rig.store.clone(),
        SocialConfig {
            facebook_instant_game_app_secret: SECRET.into(),
            ..SocialConfig::default()
        },
        rig.clock.clone(),
    )
    .unwrap();
    let services = rig.services.with_social(Arc::new(social));
    Host {
        nk: nk_rig::nk(services),
        store: rig.store,
        _dir: rig.dir,
    }
}

impl Host {
    async fn lua(&self, name: &str, args: Vec<NkValue>) -> Result<NkValue, String> {
        nk_rig::lua(&self.nk, name, args).await
    }

    async fn js(&self, name: &str, args: Vec<NkValue>) -> Result<NkValue, NkError> {
        call_as(&self.nk, Naming::Camel, name, args).await
    }

    async fn device_user(&self, device: &str) -> Uuid {
        let out = self
            .lua("authenticate_device", vec![s(device)])
            .await
            .unwrap();
        let NkValue::Multi(values) = out else {
            panic!("{out:?}")
        };
        Uuid::parse_str(values[0].as_str().unwrap()).unwrap()
    }
}

fn signed_player_info(player_id: &str, secret: &str) -> String {
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!(
        r#"{{"algorithm":"HMAC-SHA256","player_id":"{player_id}"}}"#
    ));
    let signature = jsonwebtoken::crypto::sign(
        payload.as_bytes(),
        &EncodingKey::from_secret(secret.as_bytes()),
        Algorithm::HS256,
    )
    .unwrap();
    format!("{signature}.{payload}")
}

#[tokio::test]
async fn every_social_row_is_served_in_both_languages() {
    let names = [
        ("authenticate_apple", "authenticateApple"),
        ("authenticate_facebook", "authenticateFacebook"),
        (
            "authenticate_facebook_instant_game",
            "authenticateFacebookInstantGame",
        ),
        ("authenticate_game_center", "authenticateGameCenter"),
        ("authenticate_google", "authenticateGoogle"),
        ("authenticate_steam", "authenticateSteam"),
        ("link_apple", "linkApple"),
        ("link_facebook", "linkFacebook"),
        ("link_facebook_instant_game", "linkFacebookInstantGame"),
        ("link_gamecenter", "linkGameCenter"),
        ("link_google", "linkGoogle"),
        ("link_steam", "linkSteam"),
        ("unlink_apple", "unlinkApple"),
        ("unlink_facebook", "unlinkFacebook"),
        ("unlink_facebook_instant_game", "unlinkFacebookInstantGame"),
        ("unlink_gamecenter", "unlinkGameCenter"),
        ("unlink_google", "unlinkGoogle"),
        ("unlink_steam", "unlinkSteam"),
    ];
    for (lua, js) in names {
        let row = lua_function(lua).unwrap_or_else(|| panic!("{lua}"));
        assert!(matches!(row.call, NkCall::Async(_)), "{lua} is not served");
        assert!(js_function(js).is_some(), "{js}");
    }
}

#[tokio::test]
async fn instant_game_sign_in_link_and_unlink_with_nakamas_results_and_errors() {
    let h = host().await;
    let info = signed_player_info("fbig-1", SECRET);
    let first = h
        .lua(
            "authenticate_facebook_instant_game",
            vec![s(&info), s("ann")],
        )
        .await
        .unwrap();
    let NkValue::Multi(values) = &first else {
        panic!("{first:?}")
    };
    assert_eq!(values[1], s("ann"));
    assert_eq!(values[2], NkValue::Bool(true));
    let again = h
        .js("authenticateFacebookInstantGame", vec![s(&info)])
        .await
        .unwrap();
    let map = again.as_map().unwrap();
    assert_eq!(map.get("user_id"), Some(&values[0]));
    assert_eq!(map.get("created"), Some(&NkValue::Bool(false)));

    let forged = signed_player_info("fbig-1", "wrong");
    let err = h
        .lua("authenticate_facebook_instant_game", vec![s(&forged)])
        .await
        .unwrap_err();
    assert!(
        err.contains("error authenticating: Error extracting the Facebook Instant Game player ID"),
        "{err}"
    );
    let err = h
        .lua("authenticate_facebook_instant_game", vec![s("")])
        .await
        .unwrap_err();
    assert!(err.contains("expects signed player info"), "{err}");

    // Link to a device user: the id is another user's.
    let bob = h.device_user("device-bob-0001").await;
    let bob_id = s(&bob.to_string());
    let err = h
        .lua("link_facebook_instant_game", vec![bob_id.clone(), s(&info)])
        .await
        .unwrap_err();
    assert!(
        err.contains("error linking: Facebook Instant Game ID is already in use."),
        "{err}"
    );
    let other = signed_player_info("fbig-2", SECRET);
    h.js("linkFacebookInstantGame", vec![bob_id.clone(), s(&other)])
        .await
        .unwrap();
    let account = h.store.account(bob).await.unwrap().unwrap();
    assert_eq!(
        account.user.social.facebook_instant_game_id.as_deref(),
        Some("fbig-2")
    );
    // Unlink without the proof: whichever id Bob has (his device remains).
    h.lua("unlink_facebook_instant_game", vec![bob_id])
        .await
        .unwrap();
    let account = h.store.account(bob).await.unwrap().unwrap();
    assert_eq!(account.user.social.facebook_instant_game_id, None);
    // Ann's Instant Games id is her only identity.
    let ann = values[0].clone();
    let err = h
        .lua("unlink_facebook_instant_game", vec![ann])
        .await
        .unwrap_err();
    assert!(
        err.contains("Cannot unlink last account identifier"),
        "{err}"
    );
}

#[tokio::test]
async fn unconfigured_providers_and_missing_arguments_raise_nakamas_errors() {
    let h = host().await;
    let err = h
        .lua("authenticate_apple", vec![s("token")])
        .await
        .unwrap_err();
    assert!(
        err.contains("Apple authentication is not configured"),
        "{err}"
    );
    let err = h
        .js("authenticateSteam", vec![s("ticket")])
        .await
        .unwrap_err();
    assert_eq!(
        err,
        NkError::failed("Steam authentication is not configured")
    );
    let err = h.lua("authenticate_google", vec![s("")]).await.unwrap_err();
    assert!(err.contains("expects ID token string"), "{err}");
    let err = h
        .lua("authenticate_facebook", vec![s("")])
        .await
        .unwrap_err();
    assert!(err.contains("expects access token string"), "{err}");
    let gc = vec![
        s("player"),
        s("bundle"),
        NkValue::Int(0),
        s("salt"),
        s("sig"),
        s("url"),
    ];
    let err = h.lua("authenticate_game_center", gc).await.unwrap_err();
    assert!(err.contains("expects timestamp value"), "{err}");
    let user = s(&Uuid::new_v4().to_string());
    let err = h
        .lua("link_steam", vec![user.clone(), s(""), s("ticket")])
        .await
        .unwrap_err();
    assert!(err.contains("expects username string"), "{err}");
    let err = h
        .lua("link_google", vec![s("not-a-uuid"), s("t")])
        .await
        .unwrap_err();
    assert!(err.contains("user ID must be a valid identifier"), "{err}");
    // An unverifiable Google token fails as Nakama words it (no provider is reachable: the
    // token is not even a JWT, so nothing is fetched).
    let err = h.lua("link_google", vec![user, s("t")]).await.unwrap_err();
    assert!(
        err.contains("error linking: Could not authenticate Google profile."),
        "{err}"
    );
}

#[tokio::test]
async fn users_get_id_finds_users_by_facebook_id_in_both_languages() {
    let h = host().await;
    let linked = Uuid::new_v4();
    h.store
        .create_social_user(metafi_storage::NewSocialUser {
            id: linked,
            username: "fbuser".into(),
            provider: metafi_storage::Provider::Facebook,
            provider_id: "fb-42".into(),
            display_name: String::new(),
            avatar_url: String::new(),
            email: None,
            now_ms: 1,
        })
        .await
        .unwrap();
    let other = h.device_user("device-other").await;
    let ids = |list: &NkValue, key: &str| -> Vec<String> {
        let mut found: Vec<String> = list
            .as_list()
            .unwrap()
            .iter()
            .map(|u| {
                u.as_map()
                    .unwrap()
                    .get(key)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        found.sort();
        found
    };
    // Lua: only Facebook ids.
    let out = h
        .lua(
            "users_get_id",
            vec![
                NkValue::Nil,
                NkValue::List(vec![s("fb-42"), s("fb-unknown")]),
            ],
        )
        .await
        .unwrap();
    assert_eq!(ids(&out, "user_id"), vec![linked.to_string()]);
    // JavaScript: ids and Facebook ids together, each user once.
    let out = h
        .js(
            "usersGetId",
            vec![
                NkValue::List(vec![s(&other.to_string()), s(&linked.to_string())]),
                NkValue::List(vec![s("fb-42")]),
            ],
        )
        .await
        .unwrap();
    let mut expected = vec![linked.to_string(), other.to_string()];
    expected.sort();
    assert_eq!(ids(&out, "user_id"), expected);
    // Lua refuses an empty Facebook id with Nakama's words.
    let err = h
        .lua(
            "users_get_id",
            vec![NkValue::Nil, NkValue::List(vec![s("")])],
        )
        .await
        .unwrap_err();
    assert!(err.contains("each facebook id must be a string"), "{err}");
}
