//! The account, user, sign-in, link and session rows of the `nk` table, called as Lua and
//! JavaScript call them, over the real services on SQLite: what a script author sees, results
//! and Nakama's error texts.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

use std::collections::HashMap;
use std::sync::Arc;

use metafi_core::{Objects, Sessions, SystemClock};
use metafi_runtime::nk_api::{Naming, NkError, NkMap, NkValue, lua_function};
use metafi_runtime::testing::FakeMatches;
use metafi_runtime::{Nk, RuntimeServices};
use metafi_storage::{Caller, ObjectWrite, Storage, VersionCheck};
use nk_rig::{call_as, s};
use uuid::Uuid;

mod nk_rig;

struct Host {
    nk: Nk,
    sessions: Arc<Sessions>,
    store: Arc<dyn Storage>,
    _dir: tempfile::TempDir,
}

async fn host() -> Host {
    let rig = nk_rig::rig().await;
    Host {
        nk: nk_rig::nk(rig.services),
        sessions: rig.sessions,
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

    /// Signs a device in through Lua and returns the user id.
    async fn device_user(&self, device: &str, username: &str) -> Uuid {
        let out = self
            .lua("authenticate_device", vec![s(device), s(username)])
            .await
            .unwrap();
        let NkValue::Multi(values) = out else {
            panic!("Lua gets three values, got {out:?}")
        };
        Uuid::parse_str(values[0].as_str().unwrap()).unwrap()
    }
}

fn list(items: &[&str]) -> NkValue {
    NkValue::List(items.iter().map(|i| s(i)).collect())
}

/// A map argument as an engine builds it (every key is data).
fn table(pairs: &[(&str, NkValue)]) -> NkValue {
    let mut map = NkMap::new();
    for (key, value) in pairs {
        map.insert_data(*key, value.clone());
    }
    NkValue::Map(map)
}

fn field<'a>(value: &'a NkValue, key: &str) -> &'a NkValue {
    value
        .as_map()
        .unwrap_or_else(|| panic!("not a map: {value:?}"))
        .get(key)
        .unwrap_or_else(|| panic!("no field {key} in {value:?}"))
}

fn failed(message: &str) -> NkError {
    NkError::failed(message)
}

#[tokio::test]
async fn authenticate_device_creates_then_signs_in_with_nakamas_results_and_errors() {
    let h = host().await;
    let first = h
        .lua(
            "authenticate_device",
            vec![s("device-0001-abc"), s("alice")],
        )
        .await
        .unwrap();
    let NkValue::Multi(values) = &first else {
        panic!("{first:?}")
    };
    assert_eq!(values[1], s("alice"));
    assert_eq!(values[2], NkValue::Bool(true));
    let again = h
        .js("authenticateDevice", vec![s("device-0001-abc")])
        .await
        .unwrap();
    assert_eq!(field(&again, "user_id"), &values[0]);
    assert_eq!(field(&again, "username"), &s("alice"));
    assert_eq!(field(&again, "created"), &NkValue::Bool(false));

    let short = h.lua("authenticate_device", vec![s("short")]).await;
    assert_eq!(
        short.unwrap_err(),
        "bad argument #1 to authenticate_device (expects id to be valid, must be 10-128 bytes)"
    );
    let spaced = h
        .js("authenticateDevice", vec![s("has a space in it")])
        .await;
    assert_eq!(
        spaced.unwrap_err(),
        NkError::Arg {
            position: 1,
            message: "expects id to be valid, no spaces or control characters allowed".into()
        }
    );
    let bad_name = h
        .lua(
            "authenticate_device",
            vec![s("device-0002-abc"), s("a\u{7}b")],
        )
        .await;
    assert_eq!(
        bad_name.unwrap_err(),
        "bad argument #2 to authenticate_device (expects username to be valid, no spaces or control characters allowed)"
    );
    let unknown = h
        .lua(
            "authenticate_device",
            vec![s("device-0003-abc"), NkValue::Nil, NkValue::Bool(false)],
        )
        .await;
    assert_eq!(
        unknown.unwrap_err(),
        "error authenticating: User account not found."
    );
    let taken = h
        .lua(
            "authenticate_device",
            vec![s("device-0004-abc"), s("alice")],
        )
        .await;
    assert_eq!(
        taken.unwrap_err(),
        "error authenticating: Username is already in use."
    );
}

#[tokio::test]
async fn authenticate_email_and_custom_follow_nakamas_rules() {
    let h = host().await;
    let created = h
        .lua(
            "authenticate_email",
            vec![s("Bob@Example.com"), s("password1"), s("bob")],
        )
        .await
        .unwrap();
    let NkValue::Multi(values) = created else {
        panic!()
    };
    assert_eq!(values[2], NkValue::Bool(true));
    // The address is case-insensitive; a username and password sign in without an email.
    h.lua(
        "authenticate_email",
        vec![s("bob@example.com"), s("password1")],
    )
    .await
    .unwrap();
    let by_name = h
        .lua(
            "authenticate_email",
            vec![NkValue::Nil, s("password1"), s("bob")],
        )
        .await
        .unwrap();
    let NkValue::Multi(again) = by_name else {
        panic!()
    };
    assert_eq!(again[0], values[0]);
    let wrong = h
        .lua(
            "authenticate_email",
            vec![s("bob@example.com"), s("password2")],
        )
        .await;
    assert_eq!(
        wrong.unwrap_err(),
        "error authenticating: Invalid credentials."
    );
    let no_name = h
        .lua("authenticate_email", vec![s(""), s("password1")])
        .await;
    assert_eq!(
        no_name.unwrap_err(),
        "bad argument #1 to authenticate_email (expects username string when email is not supplied)"
    );
    let format = h
        .lua(
            "authenticate_email",
            vec![s("not-an-address"), s("password1")],
        )
        .await;
    assert_eq!(
        format.unwrap_err(),
        "bad argument #1 to authenticate_email (expects email to be valid, invalid email address format)"
    );
    let short = h
        .lua(
            "authenticate_email",
            vec![s("carl@example.com"), s("short")],
        )
        .await;
    assert_eq!(
        short.unwrap_err(),
        "bad argument #2 to authenticate_email (expects password to be valid, must be longer than 8 characters)"
    );

    let custom = h
        .js("authenticateCustom", vec![s("custom-1"), s("dora")])
        .await
        .unwrap();
    assert_eq!(field(&custom, "created"), &NkValue::Bool(true));
    let short = h.lua("authenticate_custom", vec![s("abc")]).await;
    assert_eq!(
        short.unwrap_err(),
        "bad argument #1 to authenticate_custom (expects id to be valid, must be 6-128 bytes)"
    );
}

#[tokio::test]
async fn account_get_id_has_each_languages_shape() {
    let h = host().await;
    let id = h.device_user("device-acct-001", "erin").await;
    let lua = h
        .lua("account_get_id", vec![s(&id.to_string())])
        .await
        .unwrap();
    // Lua repeats the user's fields at the top level.
    assert_eq!(field(&lua, "username"), &s("erin"));
    assert_eq!(field(field(&lua, "user"), "user_id"), &s(&id.to_string()));
    let devices = field(&lua, "devices").as_list().unwrap();
    assert_eq!(field(&devices[0], "id"), &s("device-acct-001"));
    assert_eq!(field(&lua, "wallet"), &NkValue::Map(NkMap::new()));
    let js = h
        .js("accountGetId", vec![s(&id.to_string())])
        .await
        .unwrap();
    assert!(js.as_map().unwrap().get("username").is_none(), "{js:?}");
    let user = field(&js, "user");
    assert_eq!(field(user, "username"), &s("erin"));
    assert_eq!(field(user, "online"), &NkValue::Bool(false));
    assert!(field(user, "create_time").as_i64().unwrap() > 1_600_000_000);

    let missing = Uuid::new_v4();
    let lua = h.lua("account_get_id", vec![s(&missing.to_string())]).await;
    assert_eq!(
        lua.unwrap_err(),
        format!("failed to get account for user_id {missing}: account not found")
    );
    let js = h.js("accountGetId", vec![s(&missing.to_string())]).await;
    assert_eq!(
        js.unwrap_err(),
        failed("error getting account: account not found")
    );
    assert_eq!(
        h.lua("account_get_id", vec![s("")]).await.unwrap_err(),
        "bad argument #1 to account_get_id (expects user id)"
    );
    assert_eq!(
        h.lua("account_get_id", vec![s("nope")]).await.unwrap_err(),
        "bad argument #1 to account_get_id (invalid user id)"
    );
}

#[tokio::test]
async fn accounts_get_id_finds_by_user_and_device_ids() {
    let h = host().await;
    let a = h.device_user("device-many-01", "fay").await;
    let b = h.device_user("device-many-02", "gus").await;
    let out = h
        .lua(
            "accounts_get_id",
            vec![
                list(&[&a.to_string()]),
                list(&["device-many-02", "device-none-00"]),
            ],
        )
        .await
        .unwrap();
    let mut names: Vec<_> = out
        .as_list()
        .unwrap()
        .iter()
        .map(|acc| field(acc, "username").as_str().unwrap().to_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["fay", "gus"]);
    let _ = b;
    let bad = h.lua("accounts_get_id", vec![list(&["nope"])]).await;
    assert_eq!(
        bad.unwrap_err(),
        "bad argument #1 to accounts_get_id (user id must be a valid identifier string)"
    );
    let bad = h.js("accountsGetId", vec![list(&["nope"])]).await;
    assert_eq!(
        bad.unwrap_err(),
        NkError::Arg {
            position: 1,
            message: "invalid user id: nope".into()
        }
    );
}

#[tokio::test]
async fn account_update_id_sets_profile_and_metadata() {
    let h = host().await;
    let id = h.device_user("device-upd-001", "hana").await;
    h.device_user("device-upd-002", "ivan").await;
    // Lua: (user_id, metadata, username, display_name, timezone, location, lang_tag, avatar_url).
    h.lua(
        "account_update_id",
        vec![
            s(&id.to_string()),
            table(&[("level", NkValue::Int(3))]),
            s("hana2"),
            s("Hana"),
            s(""),
            s("Oslo"),
        ],
    )
    .await
    .unwrap();
    let account = h
        .lua("account_get_id", vec![s(&id.to_string())])
        .await
        .unwrap();
    assert_eq!(field(&account, "username"), &s("hana2"));
    assert_eq!(field(&account, "display_name"), &s("Hana"));
    assert_eq!(field(&account, "location"), &s("Oslo"));
    assert_eq!(
        field(field(&account, "metadata"), "level"),
        &NkValue::Int(3)
    );
    // JavaScript: (userId, username, displayName, …, metadata); an empty string clears.
    h.js(
        "accountUpdateId",
        vec![s(&id.to_string()), NkValue::Nil, s("")],
    )
    .await
    .unwrap();
    let account = h
        .js("accountGetId", vec![s(&id.to_string())])
        .await
        .unwrap();
    assert_eq!(field(field(&account, "user"), "display_name"), &s(""));

    let taken = h
        .lua(
            "account_update_id",
            vec![s(&id.to_string()), NkValue::Nil, s("ivan")],
        )
        .await;
    assert_eq!(
        taken.unwrap_err(),
        "error while trying to update user: Username is already in use."
    );
    let nothing = h.lua("account_update_id", vec![s(&id.to_string())]).await;
    assert_eq!(
        nothing.unwrap_err(),
        "error while trying to update user: No fields to update."
    );
    let bad = h.lua("account_update_id", vec![s("x")]).await;
    assert_eq!(
        bad.unwrap_err(),
        "bad argument #1 to account_update_id (expects user ID to be a valid identifier)"
    );
}

#[tokio::test]
async fn links_follow_nakamas_rules_and_keep_the_last_identity() {
    let h = host().await;
    let id = h.device_user("device-link-01", "jo").await;
    let other = h.device_user("device-link-02", "kim").await;
    let uid = s(&id.to_string());
    h.lua("link_custom", vec![uid.clone(), s("custom-jo")])
        .await
        .unwrap();
    h.lua(
        "link_email",
        vec![uid.clone(), s("Jo@Example.com"), s("password1")],
    )
    .await
    .unwrap();
    // The linked email signs in to the same account.
    let signed = h
        .js(
            "authenticateEmail",
            vec![
                s("jo@example.com"),
                s("password1"),
                NkValue::Nil,
                NkValue::Bool(false),
            ],
        )
        .await
        .unwrap();
    assert_eq!(field(&signed, "user_id"), &uid);
    let taken = h
        .lua(
            "link_device",
            vec![s(&other.to_string()), s("device-link-01")],
        )
        .await;
    assert_eq!(
        taken.unwrap_err(),
        "error linking: Device ID already in use."
    );
    let taken = h
        .lua("link_custom", vec![s(&other.to_string()), s("custom-jo")])
        .await;
    assert_eq!(
        taken.unwrap_err(),
        "error linking: Custom ID is already in use."
    );
    let short = h.lua("link_custom", vec![uid.clone(), s("abc")]).await;
    assert_eq!(
        short.unwrap_err(),
        "error linking: Invalid custom ID, must be 6-128 bytes."
    );
    let missing = h.lua("link_email", vec![uid.clone(), s("a@b.cd")]).await;
    assert_eq!(
        missing.unwrap_err(),
        "bad argument #3 to link_email (expects username string)"
    );

    h.lua("unlink_device", vec![uid.clone(), s("device-link-01")])
        .await
        .unwrap();
    h.js("unlinkCustom", vec![uid.clone()]).await.unwrap();
    let last = h.lua("unlink_email", vec![uid.clone()]).await;
    assert_eq!(
        last.unwrap_err(),
        "error unlinking: Cannot unlink last account identifier. Check profile exists and is not last link."
    );
    let account = h.lua("account_get_id", vec![uid.clone()]).await.unwrap();
    assert_eq!(field(&account, "email"), &s("jo@example.com"));
    assert!(account.as_map().unwrap().get("devices").is_none());
    let bad = h.js("linkDevice", vec![s("x"), s("device-link-09")]).await;
    assert_eq!(
        bad.unwrap_err(),
        NkError::Arg {
            position: 1,
            message: "invalid user id".into()
        }
    );
}

#[tokio::test]
async fn users_get_by_id_username_and_random() {
    let h = host().await;
    let a = h.device_user("device-users-1", "lou").await;
    h.device_user("device-users-2", "max").await;
    let by_id = h
        .lua("users_get_id", vec![list(&[&a.to_string()])])
        .await
        .unwrap();
    let users = by_id.as_list().unwrap();
    assert_eq!(users.len(), 1);
    assert_eq!(field(&users[0], "username"), &s("lou"));
    let by_name = h
        .js("usersGetUsername", vec![list(&["max", "nobody"])])
        .await
        .unwrap();
    assert_eq!(by_name.as_list().unwrap().len(), 1);
    let random = h
        .lua("users_get_random", vec![NkValue::Int(5)])
        .await
        .unwrap();
    assert_eq!(random.as_list().unwrap().len(), 2, "both users, once each");
    let none = h.lua("users_get_random", vec![]).await.unwrap();
    assert_eq!(none.as_list().unwrap().len(), 0);
    let over = h.lua("users_get_random", vec![NkValue::Int(1001)]).await;
    assert_eq!(
        over.unwrap_err(),
        "bad argument #1 to users_get_random (count must be 0-1000)"
    );
    let bad = h.lua("users_get_id", vec![list(&["nope"])]).await;
    assert_eq!(
        bad.unwrap_err(),
        "bad argument #1 to users_get_id (each user id must be a valid id string)"
    );
    let missing = h.lua("users_get_username", vec![]).await;
    assert_eq!(
        missing.unwrap_err(),
        "bad argument #1 to users_get_username (invalid username list)"
    );
}

#[tokio::test]
async fn a_banned_user_cannot_sign_in_and_its_sessions_end() {
    let h = host().await;
    let id = h.device_user("device-ban-001", "ned").await;
    let session = h.sessions.issue(id, "ned", HashMap::new(), false).unwrap();
    h.sessions.verify(&session.token).unwrap();
    h.lua("users_ban_id", vec![list(&[&id.to_string()])])
        .await
        .unwrap();
    let refused = h
        .lua("authenticate_device", vec![s("device-ban-001")])
        .await;
    assert_eq!(
        refused.unwrap_err(),
        "error authenticating: User account banned."
    );
    let verify = h.sessions.verify(&session.token);
    assert_eq!(
        verify.unwrap_err().client_message(),
        "Auth token invalid",
        "the ban ends the session"
    );
    let refresh = h.sessions.refresh(&session.refresh_token, None).await;
    assert!(refresh.is_err());
    let account = h
        .lua("account_get_id", vec![s(&id.to_string())])
        .await
        .unwrap();
    assert!(field(&account, "disable_time").as_i64().is_some());

    h.js("usersUnbanId", vec![list(&[&id.to_string()])])
        .await
        .unwrap();
    h.lua("authenticate_device", vec![s("device-ban-001")])
        .await
        .unwrap();
    let bad = h.lua("users_ban_id", vec![]).await;
    assert_eq!(
        bad.unwrap_err(),
        "bad argument #1 to users_ban_id (invalid user id list)"
    );
}

#[tokio::test]
async fn account_delete_and_export() {
    let h = host().await;
    let id = h.device_user("device-del-001", "olga").await;
    h.store
        .write_objects(
            Caller::Server,
            ["slot1", "slot2"]
                .map(|key| ObjectWrite {
                    collection: "saves".into(),
                    key: key.into(),
                    user_id: id,
                    value: r#"{"hp":3}"#.into(),
                    version: VersionCheck::Any,
                    permission_read: 1,
                    permission_write: 1,
                })
                .to_vec(),
            1,
        )
        .await
        .unwrap();
    let export = h
        .lua("account_export_id", vec![s(&id.to_string())])
        .await
        .unwrap();
    let export: serde_json::Value = serde_json::from_str(export.as_str().unwrap()).unwrap();
    assert_eq!(export["account"]["user"]["username"], "olga");
    assert_eq!(export["objects"][0]["key"], "slot1");
    assert_eq!(export["objects"][0]["value"], r#"{"hp":3}"#);
    let exported = export["objects"].as_array().unwrap().len();
    assert_eq!(
        exported, 1,
        "accounts.max_exported_objects bounds the export"
    );

    let session = h.sessions.issue(id, "olga", HashMap::new(), false).unwrap();
    h.lua(
        "account_delete_id",
        vec![s(&id.to_string()), NkValue::Bool(true)],
    )
    .await
    .unwrap();
    let gone = h.lua("account_get_id", vec![s(&id.to_string())]).await;
    assert!(gone.unwrap_err().ends_with("account not found"));
    assert!(h.sessions.verify(&session.token).is_err());
    assert!(h.store.objects_of_user(id, 10).await.unwrap().is_empty());
    // Deleting again is not an error (Nakama); exporting a missing account is.
    h.js("accountDeleteId", vec![s(&id.to_string())])
        .await
        .unwrap();
    let missing = h.js("accountExportId", vec![s(&id.to_string())]).await;
    assert_eq!(
        missing.unwrap_err(),
        failed("error exporting account: Account not found.")
    );
}

#[tokio::test]
async fn token_generate_and_session_logout() {
    let h = host().await;
    let id = h.device_user("device-tok-001", "pia").await;
    let out = h
        .lua(
            "authenticate_token_generate",
            vec![
                s(&id.to_string()),
                s("pia"),
                NkValue::Nil,
                table(&[("tier", s("gold"))]),
            ],
        )
        .await
        .unwrap();
    let NkValue::Multi(values) = out else {
        panic!()
    };
    let token = values[0].as_str().unwrap().to_owned();
    let claims = h.sessions.verify(&token).unwrap();
    assert_eq!(claims.user_id, id);
    assert_eq!(claims.vars.get("tier").map(String::as_str), Some("gold"));
    assert_eq!(values[1], NkValue::Int(claims.expires_at));
    let js = h
        .js(
            "authenticateTokenGenerate",
            vec![s(&id.to_string()), s("pia"), NkValue::Int(4_000_000_000)],
        )
        .await
        .unwrap();
    assert_eq!(field(&js, "exp"), &NkValue::Int(4_000_000_000));
    let bad_vars = h
        .lua(
            "authenticate_token_generate",
            vec![
                s(&id.to_string()),
                s("pia"),
                NkValue::Nil,
                table(&[("n", NkValue::Int(1))]),
            ],
        )
        .await;
    assert_eq!(
        bad_vars.unwrap_err(),
        "bad argument #4 to authenticate_token_generate (vars values must be strings)"
    );

    // Another user's token is refused; the user's own is ended.
    let stranger = h.device_user("device-tok-002", "quin").await;
    let wrong = h
        .lua("session_logout", vec![s(&stranger.to_string()), s(&token)])
        .await;
    assert_eq!(
        wrong.unwrap_err(),
        "failed to logout: Session token invalid."
    );
    h.lua("session_logout", vec![s(&id.to_string()), s(&token)])
        .await
        .unwrap();
    assert!(h.sessions.verify(&token).is_err());
    let bad = h.js("sessionLogout", vec![s("x")]).await;
    assert_eq!(
        bad.unwrap_err(),
        NkError::Arg {
            position: 1,
            message: "expects a valid user id".into()
        }
    );
}

#[tokio::test]
async fn social_rows_without_their_service_and_import_fail_at_call_time_naming_why() {
    // This host has no social sign-in service (nk_social.rs tests the rows with one).
    let h = host().await;
    let apple = h.lua("authenticate_apple", vec![s("token")]).await;
    let apple = apple.unwrap_err();
    assert!(
        apple.contains(
            "nk.authenticate_apple is not available: this server runs without social sign-in"
        ),
        "{apple}"
    );
    let id = s(&Uuid::new_v4().to_string());
    let steam = h.js("unlinkSteam", vec![id]).await.unwrap_err();
    assert!(
        steam
            .lua_message("unlinkSteam")
            .contains("runs without social sign-in")
    );
    let import = h.lua("account_import_id", vec![]).await.unwrap_err();
    assert!(import.starts_with("nk.account_import_id is not supported by MetaFi"));
    for name in [
        "authenticate_game_center",
        "link_gamecenter",
        "unlink_facebook_instant_game",
    ] {
        assert!(lua_function(name).is_some(), "{name} is in the table");
    }
}

#[tokio::test]
async fn without_account_services_a_call_says_what_is_missing() {
    let h = host().await;
    let bare = RuntimeServices::new(
        Arc::new(Objects::new(h.store.clone(), Arc::new(SystemClock))),
        h.store.clone(),
        Arc::new(FakeMatches::default()),
        Arc::new(SystemClock),
    );
    let nk = Nk::new(bare, Arc::from("node"), Arc::new(HashMap::new()));
    let id = Uuid::new_v4().to_string();
    let err = call_as(&nk, Naming::Snake, "account_get_id", vec![s(&id)])
        .await
        .unwrap_err();
    assert_eq!(
        err,
        failed("nk.account_get_id is not available: this server runs without account services")
    );
}
