//! The `[console]` keys: where the console listens, its signing key and session length, and
//! the console users created at start (docs/CONSOLE.md).

use std::net::SocketAddr;

use metafi_api::HttpConfig;
use metafi_console::{ConsoleConfig, Role, UserSeed};
use serde::{Deserialize, Serialize};

use super::check::Checker;

/// `[console]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawConsole {
    /// Serve the console; false: no console listener (and no store notifications).
    pub enabled: bool,
    pub address: String,
    pub port: i64,
    /// Signs console session tokens (HS256). Not a key of the client API.
    pub signing_key: String,
    /// How long a console session lasts, seconds.
    pub token_expiry_sec: i64,
    /// Largest request body the console accepts, bytes.
    pub max_request_size_bytes: i64,
    /// Grace of a match ended from the console, seconds (`match_terminate` sees it).
    pub match_end_grace_sec: i64,
    /// Console users added at start when no console user of that name exists.
    pub users: Vec<RawConsoleUser>,
    /// Every console user must set up MFA (TOTP) before a session is issued.
    pub mfa_required: bool,
    /// Encrypts MFA secrets and recovery codes at rest (AES-256-GCM): exactly 32 bytes
    /// (Nakama's `mfa.storage_encryption_key`).
    pub mfa_storage_encryption_key: String,
}

/// Nakama's default `mfa.storage_encryption_key`.
pub(super) const DEFAULT_MFA_KEY: &str = "the-key-has-to-be-32-bytes-long!";

/// One `[[console.users]]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConsoleUser {
    pub username: String,
    pub password: String,
    /// `admin`, `developer`, `maintainer` or `readonly`.
    pub role: String,
}

impl Default for RawConsole {
    fn default() -> Self {
        RawConsole {
            enabled: true,
            address: "127.0.0.1".into(),
            port: 7351,
            signing_key: "defaultsigningkey".into(),
            token_expiry_sec: 86_400,
            max_request_size_bytes: 4 * 1024 * 1024,
            match_end_grace_sec: 5,
            users: vec![RawConsoleUser {
                username: "admin".into(),
                password: "password".into(),
                role: "admin".into(),
            }],
            mfa_required: false,
            mfa_storage_encryption_key: DEFAULT_MFA_KEY.into(),
        }
    }
}

/// Where the console listens and what it runs with.
#[derive(Debug, Clone)]
pub struct ConsoleSettings {
    pub listen: SocketAddr,
    pub config: ConsoleConfig,
}

/// `None` when the console is disabled or a value is wrong (then a problem is recorded).
pub(super) fn validate(
    c: &RawConsole,
    http: &HttpConfig,
    check: &mut Checker,
) -> Option<ConsoleSettings> {
    let port = check.port("console.port", c.port);
    let ip = check.ip("console.address", &c.address);
    if c.signing_key.is_empty() {
        check.problem("console.signing_key: must not be empty");
    }
    let token_expiry = check.secs(
        "console.token_expiry_sec",
        c.token_expiry_sec,
        60,
        30 * 86_400,
    );
    let max_request_size_bytes = check.count(
        "console.max_request_size_bytes",
        c.max_request_size_bytes,
        1024,
        1 << 30,
    );
    let match_end_grace = check.secs(
        "console.match_end_grace_sec",
        c.match_end_grace_sec,
        0,
        3600,
    );
    let mut users = Vec::new();
    for (i, user) in c.users.iter().enumerate() {
        let Some(role) = Role::from_name(&user.role) else {
            check.problem(format!(
                "console.users[{i}].role \"{}\": expected admin, developer, maintainer or readonly",
                user.role
            ));
            continue;
        };
        if user.username.is_empty() || user.username.len() > 128 {
            check.problem(format!("console.users[{i}].username: 1 to 128 characters"));
            continue;
        }
        if user.password.len() < 8 {
            check.problem(format!(
                "console.users[{i}].password: at least 8 characters"
            ));
            continue;
        }
        users.push(UserSeed {
            username: user.username.clone(),
            password: user.password.clone(),
            role,
        });
    }
    let mfa_key: Option<[u8; 32]> = c.mfa_storage_encryption_key.as_bytes().try_into().ok();
    if mfa_key.is_none() {
        check.problem(format!(
            "console.mfa_storage_encryption_key: exactly 32 bytes (has {})",
            c.mfa_storage_encryption_key.len()
        ));
    }
    let ip = ip?;
    let mfa_storage_encryption_key = mfa_key?;
    c.enabled.then(|| ConsoleSettings {
        listen: SocketAddr::new(ip, port.get()),
        config: ConsoleConfig {
            signing_key: c.signing_key.clone(),
            token_expiry,
            users,
            max_request_size_bytes,
            mfa_required: c.mfa_required,
            mfa_storage_encryption_key,
            http: http.clone(),
            match_end_grace,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_listen_on_nakamas_console_port_with_one_admin() {
        let mut check = Checker::default();
        let settings = validate(&RawConsole::default(), &HttpConfig::default(), &mut check)
            .expect("enabled by default");
        assert!(check.problems().is_empty(), "{:?}", check.problems());
        assert_eq!(settings.listen.to_string(), "127.0.0.1:7351");
        assert_eq!(settings.config.users.len(), 1);
        assert_eq!(settings.config.users[0].role, Role::Admin);
    }

    #[test]
    fn bad_roles_short_passwords_and_empty_keys_are_named() {
        let raw = RawConsole {
            signing_key: String::new(),
            users: vec![
                RawConsoleUser {
                    username: "a".into(),
                    password: "longenough".into(),
                    role: "root".into(),
                },
                RawConsoleUser {
                    username: "b".into(),
                    password: "short".into(),
                    role: "readonly".into(),
                },
            ],
            ..RawConsole::default()
        };
        let mut check = Checker::default();
        validate(&raw, &HttpConfig::default(), &mut check);
        let problems = check.problems().join("\n");
        assert!(problems.contains("console.signing_key"), "{problems}");
        assert!(
            problems.contains("console.users[0].role \"root\""),
            "{problems}"
        );
        assert!(problems.contains("console.users[1].password"), "{problems}");
        let raw = RawConsole {
            mfa_storage_encryption_key: "short".into(),
            ..RawConsole::default()
        };
        let mut check = Checker::default();
        assert!(validate(&raw, &HttpConfig::default(), &mut check).is_none());
        assert!(
            check
                .problems()
                .join("\n")
                .contains("console.mfa_storage_encryption_key"),
            "{:?}",
            check.problems()
        );
    }

    #[test]
    fn disabled_means_no_listener() {
        let raw = RawConsole {
            enabled: false,
            ..RawConsole::default()
        };
        assert!(validate(&raw, &HttpConfig::default(), &mut Checker::default()).is_none());
    }
}
