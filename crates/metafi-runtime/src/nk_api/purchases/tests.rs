use std::collections::HashMap;
use std::sync::Arc;

use metafi_core::iap::sign_facebook_instant;
use metafi_core::{IapConfig, ManualClock, Objects};
use metafi_storage::{NewIdentity, NewUser, Storage};
use metafi_storage_sqlite::{SqliteConfig, SqliteStorage};

use super::*;
use crate::nk::RuntimeServices;
use crate::nk_api::Naming;
use crate::nk_api::test_support::{T0_MS, on};
use crate::testing::FakeMatches;

const SECRET: &str = "fb-secret";

struct Rig {
    nk: Nk,
    user: Uuid,
    _dir: tempfile::TempDir,
}

async fn rig(iap: IapConfig) -> Rig {
    let dir = tempfile::tempdir().expect("dir");
    let config = SqliteConfig {
        path: dir.path().join("metafi.db"),
        ..SqliteConfig::default()
    };
    let store: Arc<dyn Storage> = Arc::new(SqliteStorage::open(config).expect("sqlite"));
    let user = Uuid::new_v4();
    store
        .create_user(NewUser {
            id: user,
            username: "buyer".into(),
            identity: NewIdentity::Device {
                id: "buyer-device".into(),
            },
            now_ms: T0_MS,
        })
        .await
        .expect("user");
    let clock = Arc::new(ManualClock::new(T0_MS));
    let purchases = Arc::new(Purchases::new(store.clone(), clock.clone(), iap).expect("service"));
    let services = RuntimeServices::new(
        Arc::new(Objects::new(store.clone(), clock.clone())),
        store,
        Arc::new(FakeMatches::default()),
        clock,
    )
    .with_purchases(purchases);
    Rig {
        nk: Nk::new(services, Arc::from("test-node"), Arc::new(HashMap::new())),
        user,
        _dir: dir,
    }
}

async fn facebook() -> Rig {
    let mut iap = IapConfig::default();
    iap.facebook_instant.app_secret = SECRET.into();
    rig(iap).await
}

fn signed(token: &str, time: i64) -> NkValue {
    sign_facebook_instant(
        SECRET,
        &format!(r#"{{"product_id":"gems","purchase_time":{time},"purchase_token":"{token}"}}"#),
    )
    .into()
}

/// An API field of a map; keys are kept snake_case (the engine spells them in camelCase for
/// JavaScript), so `_naming` only documents which language called.
fn field<'a>(value: &'a NkValue, name: &'static str, _naming: Naming) -> &'a NkValue {
    let NkValue::Map(map) = value else {
        panic!("not a map: {value:?}")
    };
    map.field(name, Naming::Snake)
        .unwrap_or_else(|| panic!("no {name} in {value:?}"))
}

fn first(list: &NkValue) -> &NkValue {
    let NkValue::List(items) = list else {
        panic!("not a list: {list:?}")
    };
    &items[0]
}

#[tokio::test]
async fn lua_validates_facebook_instant_with_nakamas_table() {
    let r = facebook().await;
    let args = || vec![r.user.to_string().into(), signed("t1", 1_700_000_001)];
    let out = on(
        &r.nk,
        Naming::Snake,
        "purchase_validate_facebook_instant",
        args(),
    )
    .await
    .expect("valid");
    let p = first(field(&out, "validated_purchases", Naming::Snake));
    assert_eq!(
        field(p, "user_id", Naming::Snake),
        &NkValue::from(r.user.to_string())
    );
    assert_eq!(
        field(p, "transaction_id", Naming::Snake),
        &NkValue::from("t1")
    );
    assert_eq!(
        field(p, "store", Naming::Snake),
        &NkValue::from("FACEBOOK_INSTANT_STORE")
    );
    assert_eq!(
        field(p, "environment", Naming::Snake),
        &NkValue::from("PRODUCTION")
    );
    assert_eq!(
        field(p, "purchase_time", Naming::Snake),
        &NkValue::from(1_700_000_001i64)
    );
    assert_eq!(
        field(p, "create_time", Naming::Snake),
        &NkValue::from(T0_MS / 1000)
    );
    assert_eq!(
        field(p, "seen_before", Naming::Snake),
        &NkValue::from(false)
    );
    let again = on(
        &r.nk,
        Naming::Snake,
        "purchase_validate_facebook_instant",
        args(),
    )
    .await
    .expect("valid");
    let p = first(field(&again, "validated_purchases", Naming::Snake));
    assert_eq!(field(p, "seen_before", Naming::Snake), &NkValue::from(true));
}

#[tokio::test]
async fn js_reads_back_in_camel_case_and_lists_with_cursors() {
    let r = facebook().await;
    for (n, token) in ["a", "b", "c"].iter().enumerate() {
        on(
            &r.nk,
            Naming::Camel,
            "purchaseValidateFacebookInstant",
            vec![
                r.user.to_string().into(),
                signed(token, 1_700_000_000 + n as i64),
            ],
        )
        .await
        .expect("valid");
    }
    let got = on(
        &r.nk,
        Naming::Camel,
        "purchaseGetByTransactionId",
        vec!["b".into()],
    )
    .await
    .expect("get");
    assert_eq!(
        field(&got, "transaction_id", Naming::Camel),
        &NkValue::from("b")
    );
    assert_eq!(
        field(&got, "refund_time", Naming::Camel),
        &NkValue::from(0i64)
    );
    let missing = on(
        &r.nk,
        Naming::Camel,
        "purchaseGetByTransactionId",
        vec!["zz".into()],
    )
    .await
    .expect("get");
    assert_eq!(missing, NkValue::Nil);

    let page = on(
        &r.nk,
        Naming::Camel,
        "purchasesList",
        vec![r.user.to_string().into(), 2i64.into()],
    )
    .await
    .expect("list");
    let NkValue::List(items) = field(&page, "validated_purchases", Naming::Camel) else {
        panic!("list")
    };
    assert_eq!(items.len(), 2);
    assert_eq!(
        field(&items[0], "transaction_id", Naming::Camel),
        &NkValue::from("c")
    );
    let cursor = field(&page, "cursor", Naming::Camel).clone();
    assert!(matches!(cursor, NkValue::Str(_)), "{cursor:?}");
    assert_eq!(field(&page, "prev_cursor", Naming::Camel), &NkValue::Nil);

    // Lua: three results; everyone's purchases with an empty user id.
    let lua = on(
        &r.nk,
        Naming::Snake,
        "purchases_list",
        vec!["".into(), 2i64.into(), cursor],
    )
    .await
    .expect("list");
    let NkValue::Multi(results) = lua else {
        panic!("three results: {lua:?}")
    };
    let NkValue::List(rest) = &results[0] else {
        panic!("list")
    };
    assert_eq!(rest.len(), 1);
    assert_eq!(results[1], NkValue::Nil, "no more");
}

#[tokio::test]
async fn arguments_and_configuration_are_checked_as_nakama() {
    let r = rig(IapConfig::default()).await;
    let err = on(
        &r.nk,
        Naming::Snake,
        "purchase_validate_apple",
        vec![r.user.to_string().into(), "receipt".into()],
    )
    .await
    .expect_err("not configured");
    assert_eq!(err, NkError::failed("Apple IAP is not configured."));
    let err = on(
        &r.nk,
        Naming::Camel,
        "purchaseValidateApple",
        vec![r.user.to_string().into(), "receipt".into()],
    )
    .await
    .expect_err("not configured");
    assert_eq!(err, NkError::failed("apple IAP is not configured"));
    let err = on(
        &r.nk,
        Naming::Snake,
        "purchase_validate_google",
        vec!["not-a-uuid".into(), "{}".into()],
    )
    .await
    .expect_err("bad id");
    assert_eq!(
        err.lua_message("purchase_validate_google"),
        "bad argument #1 to purchase_validate_google (invalid user id)"
    );
    let err = on(
        &r.nk,
        Naming::Snake,
        "purchases_list",
        vec!["".into(), 101i64.into()],
    )
    .await
    .expect_err("limit");
    assert_eq!(
        err.lua_message("purchases_list"),
        "bad argument #2 to purchases_list (expects a limit 1-100)"
    );
    let err = on(
        &r.nk,
        Naming::Snake,
        "subscription_get_by_product_id",
        vec![r.user.to_string().into(), "vip".into()],
    )
    .await
    .expect_err("none");
    assert_eq!(
        err,
        NkError::failed("error retrieving subscription: subscription not found")
    );
    // An override password reaches the (here unreachable) store instead of being refused.
    let mut iap = IapConfig::default();
    iap.apple.production_url = "http://127.0.0.1:9/verifyReceipt".into();
    let r = rig(iap).await;
    let err = on(
        &r.nk,
        Naming::Snake,
        "purchase_validate_apple",
        vec![
            r.user.to_string().into(),
            "receipt".into(),
            true.into(),
            "override".into(),
        ],
    )
    .await
    .expect_err("unreachable store");
    assert_eq!(
        err,
        NkError::failed(
            "error validating Apple receipt: Internal error during purchase validation."
        )
    );
}

/// A Samsung receipt API on 127.0.0.1 that answers every request with `receipt`.
async fn samsung_fake(receipt: &'static str) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{receipt}",
                    receipt.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    base
}

#[tokio::test]
async fn samsung_is_validated_in_both_languages_with_nakamas_arguments() {
    let base = samsung_fake(
        r#"{"status":"success","mode":"TEST","itemId":"coins","purchaseDate":"2023-11-14 22:13:20"}"#,
    )
    .await;
    let mut iap = IapConfig::default();
    iap.samsung.receipt_url = format!("{base}/iap/v6/receipt");
    let r = rig(iap).await;
    let out = on(
        &r.nk,
        Naming::Snake,
        "purchase_validate_samsung",
        vec![r.user.to_string().into(), "sp-1".into()],
    )
    .await
    .expect("valid");
    let p = first(field(&out, "validated_purchases", Naming::Snake));
    assert_eq!(
        field(p, "product_id", Naming::Snake),
        &NkValue::from("coins")
    );
    assert_eq!(
        field(p, "store", Naming::Snake),
        &NkValue::from("SAMSUNG_GALAXY_STORE")
    );
    assert_eq!(
        field(p, "environment", Naming::Snake),
        &NkValue::from("SANDBOX")
    );
    assert_eq!(
        field(p, "purchase_time", Naming::Snake),
        &NkValue::from(1_700_000_000i64)
    );
    let again = on(
        &r.nk,
        Naming::Camel,
        "purchaseValidateSamsung",
        vec![r.user.to_string().into(), "sp-1".into(), false.into()],
    )
    .await
    .expect("valid");
    let p = first(field(&again, "validated_purchases", Naming::Camel));
    assert_eq!(
        field(p, "transaction_id", Naming::Camel),
        &NkValue::from("sp-1")
    );
    let err = on(
        &r.nk,
        Naming::Snake,
        "purchase_validate_samsung",
        vec![r.user.to_string().into(), "".into()],
    )
    .await
    .expect_err("empty purchase id");
    assert_eq!(
        err.lua_message("purchase_validate_samsung"),
        "bad argument #2 to purchase_validate_samsung (expects purchaseId)"
    );
}
