//! Known vectors, several made by Go's own libraries as Nakama calls them (Nakama's
//! `aesEncrypt`, `x/crypto/bcrypt`, `golang-jwt/jwt/v5`, `rsa.SignPKCS1v15`), so output made
//! by Nakama is accepted here and ours matches it byte for byte.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::json;

use super::*;
use crate::nk_api::UtilityConfig;
use crate::nk_api::test_support::{js, lua, nk_with, on};
use crate::nk_api::{Naming, NkMap};

const RSA_PKCS1: &str = include_str!("testdata/rsa_pkcs1.pem");
const RSA_PKCS8: &str = include_str!("testdata/rsa_pkcs8.pem");

// Made by Go: Nakama's aesEncrypt of "hello nakama" / "secret data!" (JavaScript form, base64),
// bcrypt of "password123" at cost 4, the HS256 token of
// {"user_id":"abc","exp":1700000000,"zeta":"<&>","nested":{"b":1,"a":true}} with key "secret",
// the PKCS#1 v1.5 SHA-256 signature of "sign me" and the RS256 token of {"sub":"x","n":1} with
// the keys in testdata/.
const GO_AES128: &str = "hbIPtU01pgXkMMzHmipvxs46ytGkQGxjJX126A==";
const GO_AES256: &str = "iiw0VakYtM9MQHmJm2SjaA4LE/rRL5XVwlmkaA==";
const GO_BCRYPT: &str = "$2a$04$h2TMNX/nRKVhjSyXB5KVIe3WxYjD54xV8AM.kcKM2BRPZrfXU2BEC";
const GO_JWTHS: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjE3MDAwMDAwMDAsIm5lc3RlZCI6eyJhIjp0cnVlLCJiIjoxfSwidXNlcl9pZCI6ImFiYyIsInpldGEiOiJcdTAwM2NcdTAwMjZcdTAwM2UifQ.StV0Lp9D5anltxKHLoYbUjG_XkfsNh2Pw9fLyc0pj1o";
const GO_RSASIG: &str = "FGg5yfHfotrLmnJgCFfFlC7gB88IE5GIepKYfg8PgjYwwKIpQ+YcKupkVqodrmdY+x1Q/tZPLs7k6QGaN9wRuQe9OhfXregUfxqS4BpbAnsW+U/WGDDWrBTBjpYkZkUa7Kw4ZifJPzYxUOQLdj5DNZwKVbSxONPOveFcIDKr1pTQTU3LKfxaYjQZ4ZUseNQjsJrebMuhvsBipZML0B0fOV7E8Hnzk/UtmobOEhYczhKlli+t/mgReSjSeqML7h66tX2Vufji7JbeHUfZwOaH5mXr10tggm1G7JXV5UBhti1pkZU3ezNvBRnekMBdDu35xFV5KuGf4oowGlR6s11gFw==";
const GO_JWTRS: &str = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.eyJuIjoxLCJzdWIiOiJ4In0.F0xpU0Z5dgU7dV5oK9OJrOYWoaTk1Nw2SW85gjoreTbm7qC-Hm71_Ahm5tULNgdnD5FVaEJWlWu3R0b73sMRY1OugZ3RGIcjzAMwkNVvaWown1GkysdaYbWjtDo0ci0faWoYb9ZtpDpirSEAAX7gpRyaqWZCCzE8MPX0ezxqqUDx5IR61WHwIC07gKRzJ4FQ6JQAyYiUNSJWPzo-UhHr5xd-xMYZDIkDY7OQNUfaXouUbXamFvWhsBYi4bkiW370t9Fx5ln0Rs3Uh8_r9oSjbL1SqosD79tDZtQgGmeWUECylZ_3VWuDbh442RngEjQz5bet9weY__4KWRru9-OwYw";

fn arg_error(position: usize, message: &str) -> NkError {
    NkError::Arg {
        position,
        message: message.to_owned().into(),
    }
}

#[tokio::test]
async fn digests_match_known_vectors() {
    assert_eq!(
        lua("sha256_hash", vec!["abc".into()]).await,
        Ok("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".into())
    );
    assert_eq!(
        js("md5Hash", vec!["abc".into()]).await,
        Ok("900150983cd24fb0d6963f7d28e17f72".into())
    );
    // JavaScript hashes the empty string; Lua refuses it, as Nakama.
    assert_eq!(
        js("sha256Hash", vec!["".into()]).await,
        Ok("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855".into())
    );
    assert_eq!(
        lua("md5_hash", vec!["".into()]).await,
        Err(arg_error(1, "expects input string"))
    );
}

#[tokio::test]
async fn hmac_sha256_is_the_raw_mac() {
    let mac = lua(
        "hmac_sha256_hash",
        vec![
            "The quick brown fox jumps over the lazy dog".into(),
            "key".into(),
        ],
    )
    .await
    .unwrap();
    let NkValue::Bytes(mac) = mac else {
        panic!("expected bytes, got {mac:?}")
    };
    assert_eq!(
        hex_encode(&mac),
        "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"
    );
    assert_eq!(
        js("hmacSha256Hash", vec!["x".into(), "".into()]).await,
        Err(arg_error(2, "key cannot be empty"))
    );
}

#[tokio::test]
async fn aes_decrypts_what_nakama_encrypted() {
    assert_eq!(
        js(
            "aes128Decrypt",
            vec![GO_AES128.into(), "0123456789abcdef".into()]
        )
        .await,
        Ok("hello nakama".into())
    );
    // Lua takes the raw bytes.
    let raw = STANDARD.decode(GO_AES256).unwrap();
    assert_eq!(
        lua(
            "aes256_decrypt",
            vec![
                NkValue::Bytes(raw),
                "0123456789abcdef0123456789abcdef".into()
            ]
        )
        .await,
        Ok(NkValue::Bytes(b"secret data!".to_vec()))
    );
}

#[tokio::test]
async fn aes_round_trips_with_nakamas_space_padding_and_a_fresh_iv() {
    let key = "0123456789abcdef";
    let a = lua("aes128_encrypt", vec!["hello".into(), key.into()])
        .await
        .unwrap();
    let b = lua("aes128_encrypt", vec!["hello".into(), key.into()])
        .await
        .unwrap();
    assert_ne!(a, b, "each encryption draws a new IV");
    let NkValue::Bytes(bytes) = &a else {
        panic!("expected bytes")
    };
    assert_eq!(bytes.len(), 16 + 8, "IV, then the input padded to 8 bytes");
    assert_eq!(
        lua("aes128_decrypt", vec![a, key.into()]).await,
        Ok(NkValue::Bytes(b"hello   ".to_vec()))
    );
    let text = js("aes256Encrypt", vec!["hi".into(), "k".repeat(32).into()])
        .await
        .unwrap();
    assert_eq!(
        js("aes256Decrypt", vec![text, "k".repeat(32).into()]).await,
        Ok("hi  ".into())
    );
}

#[tokio::test]
async fn aes_refuses_bad_keys_and_short_input() {
    assert_eq!(
        lua("aes128_encrypt", vec!["x".into(), "short".into()]).await,
        Err(arg_error(2, "expects key 16 bytes long"))
    );
    assert_eq!(
        js("aes256Encrypt", vec!["x".into(), "short".into()]).await,
        Err(NkError::failed("expects key 32 bytes long"))
    );
    assert_eq!(
        lua(
            "aes128_decrypt",
            vec!["tiny".into(), "0123456789abcdef".into()]
        )
        .await,
        Err(NkError::failed("input too short"))
    );
}

#[tokio::test]
async fn rsa_sha256_signature_is_gos() {
    let signature = lua("rsa_sha256_hash", vec!["sign me".into(), RSA_PKCS1.into()])
        .await
        .unwrap();
    assert_eq!(
        signature,
        NkValue::Bytes(STANDARD.decode(GO_RSASIG).unwrap())
    );
    assert_eq!(
        lua(
            "rsa_sha256_hash",
            vec!["sign me".into(), "not a key".into()]
        )
        .await,
        Err(NkError::failed(
            "could not parse private key: no valid blocks found"
        ))
    );
}

#[tokio::test]
async fn bcrypt_compares_gos_hashes_and_makes_2a_hashes() {
    let nk = nk_with(UtilityConfig {
        bcrypt_cost: 4,
        ..UtilityConfig::default()
    })
    .await;
    assert_eq!(
        on(
            &nk.nk,
            Naming::Snake,
            "bcrypt_compare",
            vec![GO_BCRYPT.into(), "password123".into()]
        )
        .await,
        Ok(true.into())
    );
    assert_eq!(
        on(
            &nk.nk,
            Naming::Camel,
            "bcryptCompare",
            vec![GO_BCRYPT.into(), "wrong".into()]
        )
        .await,
        Ok(false.into())
    );
    // Too short to be a hash: a mismatch, as Go's ErrHashTooShort.
    assert_eq!(
        on(
            &nk.nk,
            Naming::Snake,
            "bcrypt_compare",
            vec!["$2a$04$abc".into(), "x".into()]
        )
        .await,
        Ok(false.into())
    );
    let hash = on(&nk.nk, Naming::Snake, "bcrypt_hash", vec!["hunter2".into()])
        .await
        .unwrap();
    let NkValue::Str(hash) = hash else {
        panic!("expected a string")
    };
    assert!(hash.starts_with("$2a$04$"), "{hash}");
    assert_eq!(
        on(
            &nk.nk,
            Naming::Snake,
            "bcrypt_compare",
            vec![hash.into(), "hunter2".into()]
        )
        .await,
        Ok(true.into())
    );
    assert_eq!(
        on(
            &nk.nk,
            Naming::Camel,
            "bcryptCompare",
            vec!["".into(), "x".into()]
        )
        .await,
        Err(arg_error(1, "hash cannot be empty"))
    );
}

#[tokio::test]
async fn jwt_hs256_is_byte_for_byte_gos() {
    let claims = NkValue::from_json(
        &json!({"user_id": "abc", "exp": 1_700_000_000, "zeta": "<&>", "nested": {"b": 1, "a": true}}),
    );
    assert_eq!(
        lua(
            "jwt_generate",
            vec!["HS256".into(), "secret".into(), claims.clone()]
        )
        .await,
        Ok(GO_JWTHS.into())
    );
    assert_eq!(
        js("jwtGenerate", vec!["HS256".into(), "secret".into(), claims]).await,
        Ok(GO_JWTHS.into())
    );
}

#[tokio::test]
async fn jwt_writes_whole_numbers_as_go_does() {
    // A JavaScript number arrives as a float; Go writes 1700000000, not 1700000000.0.
    let mut claims = NkMap::new();
    claims.insert_data("exp", 1_700_000_000f64);
    claims.insert_data("ratio", 0.5f64);
    let token = js(
        "jwtGenerate",
        vec!["HS256".into(), "secret".into(), NkValue::Map(claims)],
    )
    .await
    .unwrap();
    let token = token.as_str().unwrap().to_owned();
    let payload = token.split('.').nth(1).unwrap();
    let payload = URL_SAFE_NO_PAD.decode(payload).unwrap();
    assert_eq!(payload, br#"{"exp":1700000000,"ratio":0.5}"#);
}

#[tokio::test]
async fn jwt_rs256_is_byte_for_byte_gos() {
    let claims = NkValue::from_json(&json!({"sub": "x", "n": 1}));
    assert_eq!(
        lua(
            "jwt_generate",
            vec!["RS256".into(), RSA_PKCS8.into(), claims]
        )
        .await,
        Ok(GO_JWTRS.into())
    );
}

#[tokio::test]
async fn jwt_argument_errors_are_nakamas() {
    let claims = NkValue::from_json(&json!({"a": 1}));
    assert_eq!(
        lua(
            "jwt_generate",
            vec!["HS512".into(), "k".into(), claims.clone()]
        )
        .await,
        Err(arg_error(
            1,
            "unsupported algo type - only allowed 'HS256', 'RS256'."
        ))
    );
    assert_eq!(
        js(
            "jwtGenerate",
            vec!["HS256".into(), "".into(), claims.clone()]
        )
        .await,
        Err(arg_error(2, "signing key cannot be empty"))
    );
    assert_eq!(
        js("jwtGenerate", vec!["HS256".into(), "k".into(), "x".into()]).await,
        Err(arg_error(3, "claims must be an object"))
    );
    assert_eq!(
        lua("jwt_generate", vec!["RS256".into(), "nope".into(), claims]).await,
        Err(NkError::failed(
            "could not parse private key: no valid blocks found"
        ))
    );
}
