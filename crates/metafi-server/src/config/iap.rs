//! The `[iap]` keys: the stores' credentials under Nakama's names (`iap.apple.shared_password`,
//! `iap.google.client_email`, …), where each store is reached, and the limits of every call.

use std::time::Duration;

use metafi_core::iap::apple_jws::certificates_from_pem;
use metafi_core::iap::{
    AppleConfig, FacebookInstantConfig, GoogleConfig, HuaweiConfig, IapConfig, SamsungConfig,
};
use serde::{Deserialize, Serialize};

use super::check::Checker;

/// `[iap]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawIap {
    /// Deadline of each call to a store, milliseconds.
    pub timeout_ms: i64,
    /// A store's answer over this many bytes fails the validation.
    pub max_response_bytes: i64,
    pub apple: RawIapApple,
    pub google: RawIapGoogle,
    pub huawei: RawIapHuawei,
    pub facebook_instant: RawIapFacebookInstant,
    pub samsung: RawIapSamsung,
}

/// `[iap.apple]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawIapApple {
    /// The App Store shared secret; empty: Apple validation answers "not configured".
    pub shared_password: String,
    /// `verifyReceipt` of production.
    pub production_url: String,
    /// `verifyReceipt` of the sandbox, asked after production's 21007.
    pub sandbox_url: String,
    /// PEM files of the roots trusted for signed (JWS) transactions and notifications; empty:
    /// Apple Root CA - G3 (embedded).
    pub root_certificates: Vec<String>,
    /// Serves App Store Server Notifications at `/v2/console/apple/notifications/{id}`
    /// (Nakama's `iap.apple.notifications_endpoint_id`); empty: not served.
    pub notifications_endpoint_id: String,
}

/// `[iap.google]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawIapGoogle {
    /// The service account's email.
    pub client_email: String,
    /// The service account's PEM private key.
    pub private_key: String,
    /// Google's OAuth token endpoint (also the JWT audience).
    pub token_url: String,
    /// The Android Publisher API root.
    pub publisher_url: String,
    /// Serves Google Play real-time developer notifications at
    /// `/v2/console/google/notifications/{id}` (Nakama's `iap.google.notifications_endpoint_id`);
    /// empty: not served.
    pub notifications_endpoint_id: String,
}

/// `[iap.huawei]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawIapHuawei {
    /// Base64 of the RSA public key (X.509 SubjectPublicKeyInfo) that signs purchase data.
    pub public_key: String,
    pub client_id: String,
    pub client_secret: String,
    pub token_url: String,
    /// Order service of AppTouch accounts (`accountFlag` 1).
    pub orders_url_apptouch: String,
    /// Order service of every other account.
    pub orders_url: String,
}

/// `[iap.facebook_instant]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawIapFacebookInstant {
    /// The app secret that signs payment requests.
    pub app_secret: String,
}

/// `[iap.samsung]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawIapSamsung {
    /// The app's package name; when set, receipts for other packages are refused.
    pub package_name: String,
    /// Samsung's receipt API.
    pub receipt_url: String,
}

impl Default for RawIapSamsung {
    fn default() -> Self {
        let d = IapConfig::default().samsung;
        RawIapSamsung {
            package_name: d.package_name,
            receipt_url: d.receipt_url,
        }
    }
}

impl Default for RawIap {
    fn default() -> Self {
        let d = IapConfig::default();
        RawIap {
            timeout_ms: i64::try_from(d.timeout.as_millis()).unwrap_or(20_000),
            max_response_bytes: i64::try_from(d.max_response_bytes).unwrap_or(1 << 20),
            apple: RawIapApple::default(),
            google: RawIapGoogle::default(),
            huawei: RawIapHuawei::default(),
            facebook_instant: RawIapFacebookInstant::default(),
            samsung: RawIapSamsung::default(),
        }
    }
}

impl Default for RawIapApple {
    fn default() -> Self {
        let d = IapConfig::default().apple;
        RawIapApple {
            shared_password: d.shared_password,
            production_url: d.production_url,
            sandbox_url: d.sandbox_url,
            root_certificates: Vec::new(),
            notifications_endpoint_id: d.notifications_endpoint_id,
        }
    }
}

impl Default for RawIapGoogle {
    fn default() -> Self {
        let d = IapConfig::default().google;
        RawIapGoogle {
            client_email: d.client_email,
            private_key: d.private_key,
            token_url: d.token_url,
            publisher_url: d.publisher_url,
            notifications_endpoint_id: d.notifications_endpoint_id,
        }
    }
}

impl Default for RawIapHuawei {
    fn default() -> Self {
        let d = IapConfig::default().huawei;
        RawIapHuawei {
            public_key: d.public_key,
            client_id: d.client_id,
            client_secret: d.client_secret,
            token_url: d.token_url,
            orders_url_apptouch: d.orders_url_apptouch,
            orders_url: d.orders_url,
        }
    }
}

impl Default for RawIapFacebookInstant {
    fn default() -> Self {
        RawIapFacebookInstant {
            app_secret: IapConfig::default().facebook_instant.app_secret,
        }
    }
}

pub(super) fn validate(raw: &RawIap, check: &mut Checker) -> IapConfig {
    for (key, url) in [
        ("iap.apple.production_url", &raw.apple.production_url),
        ("iap.apple.sandbox_url", &raw.apple.sandbox_url),
        ("iap.google.token_url", &raw.google.token_url),
        ("iap.google.publisher_url", &raw.google.publisher_url),
        ("iap.huawei.token_url", &raw.huawei.token_url),
        (
            "iap.huawei.orders_url_apptouch",
            &raw.huawei.orders_url_apptouch,
        ),
        ("iap.huawei.orders_url", &raw.huawei.orders_url),
        ("iap.samsung.receipt_url", &raw.samsung.receipt_url),
    ] {
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            check.problem(format!("{key}: must be an http:// or https:// URL"));
        }
    }
    let mut root_certificates = Vec::new();
    for path in &raw.apple.root_certificates {
        match std::fs::read_to_string(path)
            .map_err(|e| e.to_string())
            .and_then(|pem| certificates_from_pem(&pem))
        {
            Ok(certs) => root_certificates.extend(certs),
            Err(e) => check.problem(format!("iap.apple.root_certificates: {path}: {e}")),
        }
    }
    if raw.apple.root_certificates.is_empty() {
        root_certificates = IapConfig::default().apple.root_certificates;
    }
    IapConfig {
        apple: AppleConfig {
            shared_password: raw.apple.shared_password.clone(),
            production_url: raw.apple.production_url.clone(),
            sandbox_url: raw.apple.sandbox_url.clone(),
            root_certificates,
            notifications_endpoint_id: raw.apple.notifications_endpoint_id.clone(),
        },
        google: GoogleConfig {
            client_email: raw.google.client_email.clone(),
            private_key: raw.google.private_key.clone(),
            token_url: raw.google.token_url.clone(),
            publisher_url: raw.google.publisher_url.clone(),
            notifications_endpoint_id: raw.google.notifications_endpoint_id.clone(),
        },
        huawei: HuaweiConfig {
            public_key: raw.huawei.public_key.clone(),
            client_id: raw.huawei.client_id.clone(),
            client_secret: raw.huawei.client_secret.clone(),
            token_url: raw.huawei.token_url.clone(),
            orders_url_apptouch: raw.huawei.orders_url_apptouch.clone(),
            orders_url: raw.huawei.orders_url.clone(),
        },
        facebook_instant: FacebookInstantConfig {
            app_secret: raw.facebook_instant.app_secret.clone(),
        },
        samsung: SamsungConfig {
            package_name: raw.samsung.package_name.clone(),
            receipt_url: raw.samsung.receipt_url.clone(),
        },
        timeout: Duration::from_millis(
            u64::try_from(check.range("iap.timeout_ms", raw.timeout_ms, 1, 600_000)).unwrap_or(1),
        ),
        max_response_bytes: check.count(
            "iap.max_response_bytes",
            raw.max_response_bytes,
            1024,
            64 << 20,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_services_defaults() {
        let mut check = Checker::default();
        assert_eq!(
            validate(&RawIap::default(), &mut check),
            IapConfig::default()
        );
        assert!(check.problems().is_empty());
    }

    #[test]
    fn an_endpoint_that_is_not_http_and_out_of_range_limits_are_refused() {
        let mut raw = RawIap::default();
        raw.google.token_url = "ftp://example.com/token".into();
        raw.timeout_ms = 0;
        raw.max_response_bytes = 10;
        let mut check = Checker::default();
        validate(&raw, &mut check);
        let problems = check.problems().join("\n");
        assert!(problems.contains("iap.google.token_url"), "{problems}");
        assert!(problems.contains("iap.timeout_ms"), "{problems}");
        assert!(problems.contains("iap.max_response_bytes"), "{problems}");
    }

    #[test]
    fn root_certificates_are_read_from_pem_files() {
        let dir = tempfile::tempdir().expect("dir");
        let good = dir.path().join("root.pem");
        std::fs::write(&good, metafi_core::iap::apple_jws::APPLE_ROOT_CA_G3_PEM).expect("write");
        let bad = dir.path().join("bad.pem");
        std::fs::write(&bad, "not a certificate").expect("write");
        let mut raw = RawIap::default();
        raw.apple.root_certificates = vec![good.display().to_string()];
        let mut check = Checker::default();
        let config = validate(&raw, &mut check);
        assert!(check.problems().is_empty());
        assert_eq!(
            config.apple.root_certificates,
            IapConfig::default().apple.root_certificates
        );
        raw.apple.root_certificates = vec![bad.display().to_string()];
        let mut check = Checker::default();
        validate(&raw, &mut check);
        assert!(
            check
                .problems()
                .join("\n")
                .contains("iap.apple.root_certificates"),
            "{:?}",
            check.problems()
        );
    }
}
