//! Chains made at test time with rcgen: root → intermediate → leaf (P-256), and JWS signed
//! with the leaf's key, as Apple signs them.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::*;
use crate::iap::test_chain::TestChain;

/// 2026-01-01 in ms: inside every test certificate's validity unless a test says otherwise.
const NOW_MS: i64 = 1_767_225_600_000;

fn chain() -> TestChain {
    TestChain::new(2030)
}

fn chain_expiring(year: i32) -> TestChain {
    TestChain::new(year)
}

fn sign(chain: &TestChain, payload: &str) -> String {
    chain.sign(payload)
}

#[test]
fn the_embedded_root_is_apples_g3() {
    let der = apple_root_g3();
    let cert = CertificateDer::from(der.as_slice());
    webpki::anchor_from_trusted_cert(&cert).expect("a trust anchor");
    assert!(der.windows(18).any(|w| w == b"Apple Root CA - G3"));
}

#[test]
fn a_valid_chain_and_signature_give_the_payload() {
    let chain = chain();
    let jws = sign(&chain, r#"{"transactionId":"1"}"#);
    let payload = verify(&jws, std::slice::from_ref(&chain.root), NOW_MS).expect("valid");
    assert_eq!(payload, br#"{"transactionId":"1"}"#);
}

#[test]
fn another_root_is_an_unknown_authority() {
    let chain = chain();
    let other = self::chain();
    let jws = sign(&chain, "{}");
    assert_eq!(
        verify(&jws, &[other.root], NOW_MS),
        Err("x509: certificate signed by unknown authority".to_owned())
    );
    // Apple's real root does not sign test chains either.
    assert_eq!(
        verify(&jws, &[apple_root_g3()], NOW_MS),
        Err("x509: certificate signed by unknown authority".to_owned())
    );
}

#[test]
fn a_tampered_payload_fails_the_signature() {
    let chain = chain();
    let jws = sign(&chain, r#"{"productId":"gem.1"}"#);
    let parts: Vec<&str> = jws.split('.').collect();
    let forged = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(r#"{"productId":"gem.1000"}"#),
        parts[2]
    );
    assert_eq!(
        verify(&forged, std::slice::from_ref(&chain.root), NOW_MS),
        Err("invalid jws signature: ecdsa verification failed".to_owned())
    );
}

#[test]
fn an_expired_leaf_is_refused() {
    let chain = chain_expiring(2025);
    let jws = sign(&chain, "{}");
    assert_eq!(
        verify(&jws, std::slice::from_ref(&chain.root), NOW_MS),
        Err("x509: certificate has expired or is not yet valid".to_owned())
    );
    // The same chain was fine while the leaf was valid.
    assert!(verify(&jws, &[chain.root], NOW_MS - 365 * 86_400_000).is_ok());
}

#[test]
fn fewer_than_three_certificates_are_refused() {
    let mut chain = chain();
    chain.x5c.truncate(2);
    let jws = sign(&chain, "{}");
    assert_eq!(
        verify(&jws, std::slice::from_ref(&chain.root), NOW_MS),
        Err("invalid jws header: x5c field must contain at least 3 certificates".to_owned())
    );
}

#[test]
fn a_short_signature_is_refused() {
    let chain = chain();
    let jws = sign(&chain, "{}");
    let cut = format!(
        "{}{}",
        &jws[..jws.rfind('.').expect("dot") + 1],
        URL_SAFE_NO_PAD.encode([1u8; 10])
    );
    assert_eq!(
        verify(&cut, std::slice::from_ref(&chain.root), NOW_MS),
        Err("invalid jws signature: invalid length 10, expected 64".to_owned())
    );
}

#[test]
fn der_signatures_keep_integers_positive_and_minimal() {
    let mut raw = [0u8; 64];
    raw[31] = 1; // r = 1
    raw[32] = 0x80; // s has its top bit set: a leading zero
    let der = der_signature(&raw);
    assert_eq!(&der[..5], &[0x30, 3 + 35, 0x02, 1, 1]);
    assert_eq!(&der[5..8], &[0x02, 33, 0]);
}
