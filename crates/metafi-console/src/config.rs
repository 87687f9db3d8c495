//! The console's settings and its roles.

use std::time::Duration;

use metafi_api::HttpConfig;
use serde::Serialize;

/// Settings of the console listener (`[console]`).
#[derive(Debug, Clone)]
pub struct ConsoleConfig {
    /// Signs the console's session tokens; never the client API's keys.
    pub signing_key: String,
    /// How long a console session lasts.
    pub token_expiry: Duration,
    /// Users created at start when no console user of that name exists yet.
    pub users: Vec<UserSeed>,
    /// Largest accepted request body, in bytes.
    pub max_request_size_bytes: usize,
    /// Every console user must set up MFA before a session is issued (besides users marked
    /// one by one).
    pub mfa_required: bool,
    /// Encrypts MFA secrets and recovery codes at rest (AES-256-GCM).
    pub mfa_storage_encryption_key: [u8; 32],
    /// Connection timeouts of the listener (CORS is not used: the console is same-origin).
    pub http: HttpConfig,
    /// The grace an authoritative match ended from the console gets: its `match_terminate`
    /// sees it, and the match ends at its end at the latest (`console.match_end_grace_sec`).
    pub match_end_grace: Duration,
}

/// A console user from the configuration. The password is hashed before it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserSeed {
    pub username: String,
    pub password: String,
    pub role: Role,
}

/// Nakama's console roles, with its numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Admin = 1,
    Developer = 2,
    Maintainer = 3,
    Readonly = 4,
}

/// What a route needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Perm {
    /// See anything (every role).
    Read,
    /// Change accounts and storage objects, ban and unban (admin, developer, maintainer).
    Edit,
    /// Run code and reach into running matches: the RPC explorer, match signals, account
    /// deletion and export (admin, developer).
    Develop,
    /// The audit log (admin).
    Admin,
}

impl Role {
    /// `admin`, `developer`, `maintainer`, `readonly` (also `read-only`).
    pub fn from_name(name: &str) -> Option<Role> {
        match name {
            "admin" => Some(Role::Admin),
            "developer" => Some(Role::Developer),
            "maintainer" => Some(Role::Maintainer),
            "readonly" | "read-only" => Some(Role::Readonly),
            _ => None,
        }
    }

    pub fn from_number(number: u8) -> Option<Role> {
        match number {
            1 => Some(Role::Admin),
            2 => Some(Role::Developer),
            3 => Some(Role::Maintainer),
            4 => Some(Role::Readonly),
            _ => None,
        }
    }

    pub fn number(self) -> u8 {
        self as u8
    }

    pub fn name(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Developer => "developer",
            Role::Maintainer => "maintainer",
            Role::Readonly => "readonly",
        }
    }

    /// Whether this role may do what `perm` guards.
    pub fn may(self, perm: Perm) -> bool {
        match perm {
            Perm::Read => true,
            Perm::Edit => self != Role::Readonly,
            Perm::Develop => matches!(self, Role::Admin | Role::Developer),
            Perm::Admin => self == Role::Admin,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_role_may_exactly_its_permissions() {
        let table = [
            (Role::Admin, [true, true, true, true]),
            (Role::Developer, [true, true, true, false]),
            (Role::Maintainer, [true, true, false, false]),
            (Role::Readonly, [true, false, false, false]),
        ];
        for (role, expected) in table {
            let got = [Perm::Read, Perm::Edit, Perm::Develop, Perm::Admin].map(|p| role.may(p));
            assert_eq!(got, expected, "{role:?}");
            assert_eq!(Role::from_number(role.number()), Some(role));
            assert_eq!(Role::from_name(role.name()), Some(role));
        }
        assert_eq!(Role::from_name("root"), None);
        assert_eq!(Role::from_number(0), None);
    }
}
