//! Test support (feature `test-util`): an Apple-like signing chain made at test time
//! (root → intermediate → leaf, P-256, with rcgen) and JWS signed by its leaf as Apple signs
//! transactions and notifications. Configure `AppleConfig::root_certificates` with
//! [`TestChain::root`] to make the server trust it.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, IsCa, KeyPair,
    KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, date_time_ymd,
};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};

/// A root, an intermediate and a leaf; the leaf's key signs.
pub struct TestChain {
    /// The root certificate (DER): the trust anchor to configure.
    pub root: Vec<u8>,
    /// The header's `x5c`: leaf, intermediate, root (standard base64 DER).
    pub x5c: Vec<String>,
    leaf_key: KeyPair,
}

fn params(name: &str, ca: bool, not_after_year: i32) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, name);
    params.not_before = date_time_ymd(2020, 1, 1);
    params.not_after = date_time_ymd(not_after_year, 1, 1);
    if ca {
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    } else {
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    }
    params
}

impl TestChain {
    /// A chain valid from 2020 whose leaf expires on 1 January of `leaf_not_after_year`
    /// (the root and intermediate last until 2039).
    pub fn new(leaf_not_after_year: i32) -> TestChain {
        let key = || KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).expect("key");
        let root =
            CertifiedIssuer::self_signed(params("Test Root CA", true, 2040), key()).expect("root");
        let inter = CertifiedIssuer::signed_by(params("Test WWDR CA", true, 2039), key(), &root)
            .expect("intermediate");
        let leaf_key = key();
        let leaf = params("Test Receipt Signing", false, leaf_not_after_year)
            .signed_by(&leaf_key, &inter)
            .expect("leaf");
        TestChain {
            root: root.der().to_vec(),
            x5c: [
                leaf.der().as_ref(),
                inter.der().as_ref(),
                root.der().as_ref(),
            ]
            .iter()
            .map(|d| STANDARD.encode(d))
            .collect(),
            leaf_key,
        }
    }

    /// The root as PEM text (for `iap.apple.root_certificates` files).
    pub fn root_pem(&self) -> String {
        let body = STANDARD.encode(&self.root);
        let lines: Vec<&str> = body
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap_or_default())
            .collect();
        format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
            lines.join("\n")
        )
    }

    /// A JWS over `payload` (JSON text) signed by the leaf: ES256, `r || s`.
    pub fn sign(&self, payload: &str) -> String {
        let header = serde_json::json!({"alg": "ES256", "x5c": self.x5c}).to_string();
        let signed = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header),
            URL_SAFE_NO_PAD.encode(payload)
        );
        let key = EcdsaKeyPair::from_pkcs8(
            &ECDSA_P256_SHA256_FIXED_SIGNING,
            &self.leaf_key.serialize_der(),
            &SystemRandom::new(),
        )
        .expect("leaf key");
        let signature = key
            .sign(&SystemRandom::new(), signed.as_bytes())
            .expect("sign");
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    }
}
