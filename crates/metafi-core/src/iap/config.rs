//! `[iap]`: the stores' credentials (Nakama's `iap.*` keys) and where each store is reached.

use std::time::Duration;

/// Credentials and endpoints of every store. A store whose credentials are empty answers
/// Nakama's "… IAP is not configured." The endpoints default to the stores' real URLs; tests
/// point them at fakes on 127.0.0.1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IapConfig {
    pub apple: AppleConfig,
    pub google: GoogleConfig,
    pub huawei: HuaweiConfig,
    pub facebook_instant: FacebookInstantConfig,
    pub samsung: SamsungConfig,
    /// Deadline of each call to a store (Nakama: 20 s).
    pub timeout: Duration,
    /// A store's answer larger than this fails the validation instead of being buffered.
    pub max_response_bytes: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppleConfig {
    /// The App Store shared secret (`iap.apple.shared_password`).
    pub shared_password: String,
    pub production_url: String,
    /// Asked when production answers 21007 (a sandbox receipt), as Apple documents.
    pub sandbox_url: String,
    /// Trusted roots (DER) of signed transactions and notifications
    /// (`iap.apple.root_certificates`): Apple Root CA - G3 unless configured.
    pub root_certificates: Vec<Vec<u8>>,
    /// App Store Server Notifications are served at `/v2/console/apple/notifications/{id}`
    /// (`iap.apple.notifications_endpoint_id`); empty: not served.
    pub notifications_endpoint_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoogleConfig {
    /// The service account's email (`iap.google.client_email`).
    pub client_email: String,
    /// The service account's PEM private key (`iap.google.private_key`).
    pub private_key: String,
    /// Where the signed JWT is exchanged for an access token (also its audience).
    pub token_url: String,
    /// The Android Publisher API root.
    pub publisher_url: String,
    /// Real-time developer notifications are served at `/v2/console/google/notifications/{id}`
    /// (`iap.google.notifications_endpoint_id`); empty: not served.
    pub notifications_endpoint_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HuaweiConfig {
    /// Base64 DER (X.509 SubjectPublicKeyInfo) RSA key that signs purchase data
    /// (`iap.huawei.public_key`).
    pub public_key: String,
    pub client_id: String,
    pub client_secret: String,
    pub token_url: String,
    /// The order service for accounts with `accountFlag` 1 (Huawei's AppTouch, Germany).
    pub orders_url_apptouch: String,
    /// The order service for every other account.
    pub orders_url: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FacebookInstantConfig {
    /// The app secret that signs payment requests (`iap.facebook_instant.app_secret`).
    pub app_secret: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamsungConfig {
    /// The app's package name (`iap.samsung.package_name`); when set, a receipt for another
    /// package is refused. Samsung needs no credentials.
    pub package_name: String,
    /// Samsung's receipt API (`GET …?purchaseID=`).
    pub receipt_url: String,
}

impl Default for IapConfig {
    fn default() -> Self {
        IapConfig {
            apple: AppleConfig {
                shared_password: String::new(),
                production_url: "https://buy.itunes.apple.com/verifyReceipt".into(),
                sandbox_url: "https://sandbox.itunes.apple.com/verifyReceipt".into(),
                root_certificates: vec![super::apple_jws::apple_root_g3()],
                notifications_endpoint_id: String::new(),
            },
            google: GoogleConfig {
                client_email: String::new(),
                private_key: String::new(),
                token_url: "https://accounts.google.com/o/oauth2/token".into(),
                publisher_url: "https://androidpublisher.googleapis.com".into(),
                notifications_endpoint_id: String::new(),
            },
            huawei: HuaweiConfig {
                public_key: String::new(),
                client_id: String::new(),
                client_secret: String::new(),
                token_url: "https://oauth-login.cloud.huawei.com/oauth2/v3/token".into(),
                orders_url_apptouch: "https://orders-at-dre.iap.dbankcloud.com".into(),
                orders_url: "https://orders-dre.iap.hicloud.com".into(),
            },
            facebook_instant: FacebookInstantConfig {
                app_secret: String::new(),
            },
            samsung: SamsungConfig {
                package_name: String::new(),
                receipt_url: "https://iap.samsungapps.com/iap/v6/receipt".into(),
            },
            timeout: Duration::from_secs(20),
            max_response_bytes: 1 << 20,
        }
    }
}
