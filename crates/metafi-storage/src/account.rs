//! Users and the identities they sign in with (device ids, custom ids, email + password).

use async_trait::async_trait;
use uuid::Uuid;

use crate::StorageError;

/// A user row as the API shows it. Empty strings mean "not set", as in Nakama.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub id: Uuid,
    pub username: String,
    pub display_name: String,
    pub avatar_url: String,
    pub lang_tag: String,
    pub location: String,
    pub timezone: String,
    /// JSON object text, written only by server code; `{}` when unset.
    pub metadata: String,
    /// JSON object text; `{}` when unset.
    pub wallet: String,
    pub email: Option<String>,
    pub custom_id: Option<String>,
    pub create_time_ms: i64,
    pub update_time_ms: i64,
    /// Set when the email address was verified.
    pub verify_time_ms: Option<i64>,
    /// Set when the account was disabled (banned); a disabled account cannot sign in.
    pub disable_time_ms: Option<i64>,
    /// The social sign-in ids the user has linked.
    pub social: crate::SocialIds,
}

/// A user with every device id linked to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Account {
    pub user: User,
    pub device_ids: Vec<String>,
}

/// What authentication needs to know about a user found by one of its identities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthUser {
    pub id: Uuid,
    pub username: String,
    pub disabled: bool,
    /// The bcrypt hash, for lookups by email or username; `None` for accounts without a password.
    pub password_hash: Option<String>,
}

/// The identity a new account is created with. The user row and the identity are written in
/// one transaction: either both exist afterwards or neither does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewIdentity {
    Device {
        id: String,
    },
    Custom {
        id: String,
    },
    Email {
        email: String,
        password_hash: String,
    },
}

/// A new account. `id` and `username` are chosen by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewUser {
    pub id: Uuid,
    pub username: String,
    pub identity: NewIdentity,
    pub now_ms: i64,
}

/// Which identity to look a user up by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentityRef<'a> {
    Device(&'a str),
    Custom(&'a str),
    Email(&'a str),
    Username(&'a str),
}

/// An identity to remove from an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unlink<'a> {
    /// This device id, if the user has it.
    Device(&'a str),
    /// The custom id; `Some` only when it is this one.
    Custom(Option<&'a str>),
    /// The email address and password; `Some` only when the address is this one.
    Email(Option<&'a str>),
}

/// A partial update of the fields a user may change. `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountUpdate {
    pub username: Option<String>,
    pub display_name: Option<String>,
    pub avatar_url: Option<String>,
    pub lang_tag: Option<String>,
    pub location: Option<String>,
    pub timezone: Option<String>,
    /// Server code only; the REST API never sets it.
    pub metadata: Option<String>,
    /// The console only (Nakama's console `UpdateAccount`): the whole wallet, replaced in the
    /// same statement as the other fields, with no ledger row. Neither the REST API nor server
    /// code sets it; their wallet changes are `WalletStore::update_wallets`.
    pub wallet: Option<crate::Balances>,
}

impl AccountUpdate {
    /// True when the update would change nothing.
    pub fn is_empty(&self) -> bool {
        *self == AccountUpdate::default()
    }
}

/// Accounts: creation, lookup by identity, reads by id or username, profile updates.
#[async_trait]
pub trait AccountStore: Send + Sync {
    /// Creates the user and its identity atomically.
    ///
    /// Errors with `Conflict { what: Username }` when the username is taken and with the
    /// identity's conflict (`DeviceId`, `CustomId`, `Email`) when the identity already belongs
    /// to a user — in which case nothing was written. When both are taken, the identity's
    /// conflict is the one reported (a racing sign-up then finds the identity's owner).
    async fn create_user(&self, new: NewUser) -> Result<(), StorageError>;

    /// Finds the user that owns an identity.
    async fn find_user(&self, identity: IdentityRef<'_>) -> Result<Option<AuthUser>, StorageError>;

    /// The account of a user: the user row and its device ids (sorted).
    async fn account(&self, user_id: Uuid) -> Result<Option<Account>, StorageError>;

    /// Users by id; unknown ids are skipped. Order is unspecified.
    async fn users_by_id(&self, ids: &[Uuid]) -> Result<Vec<User>, StorageError>;

    /// Users by username; unknown names are skipped. Order is unspecified.
    async fn users_by_username(&self, usernames: &[String]) -> Result<Vec<User>, StorageError>;

    /// Links one more device id to an existing user. Linking a device the user already has is
    /// not an error. Errors with `NotFound` for an unknown user and `Conflict { what: DeviceId }`
    /// when the device belongs to another user.
    async fn link_device(&self, user_id: Uuid, device_id: &str) -> Result<(), StorageError>;

    /// Sets a user's custom id (replacing the one it had) and bumps `update_time`. Errors with
    /// `NotFound` for an unknown user and `Conflict { what: CustomId }` when another user has
    /// the id.
    async fn link_custom(
        &self,
        user_id: Uuid,
        custom_id: &str,
        now_ms: i64,
    ) -> Result<(), StorageError>;

    /// Sets a user's email address and password hash (replacing those it had) and bumps
    /// `update_time`. Errors with `NotFound` for an unknown user and `Conflict { what: Email }`
    /// when another user has the address.
    async fn link_email(
        &self,
        user_id: Uuid,
        email: &str,
        password_hash: &str,
        now_ms: i64,
    ) -> Result<(), StorageError>;

    /// Removes one identity of a user and bumps `update_time`, unless it is the user's last
    /// identity (an account must keep a way to sign in). `Ok(false)` when nothing was removed:
    /// no such user, the user does not have that identity, or it is the last one.
    async fn unlink(
        &self,
        user_id: Uuid,
        identity: Unlink<'_>,
        now_ms: i64,
    ) -> Result<bool, StorageError>;

    /// Deletes a user with its device ids and the storage objects it owns, atomically.
    /// `Ok(false)` when there is no such user.
    async fn delete_user(&self, user_id: Uuid) -> Result<bool, StorageError>;

    /// Sets (`Some`: banned since then) or clears (`None`) the disable time of the users among
    /// `ids` that exist; unknown ids are skipped.
    async fn set_disable_time(
        &self,
        ids: &[Uuid],
        disable_time_ms: Option<i64>,
    ) -> Result<(), StorageError>;

    /// Up to `limit` users whose id is greater than `after`, in id order (a random `after`
    /// gives a random sample, as Nakama's `users_get_random`).
    async fn users_after(&self, after: Uuid, limit: usize) -> Result<Vec<User>, StorageError>;

    /// Applies a partial update and bumps `update_time`, in one statement (a `wallet` given
    /// replaces the stored one there, so a concurrent `update_wallets` is applied either
    /// wholly before it or wholly on top of it). Errors with `NotFound` for an unknown
    /// user and `Conflict { what: Username }` when the new username is taken.
    async fn update_account(
        &self,
        user_id: Uuid,
        update: AccountUpdate,
        now_ms: i64,
    ) -> Result<(), StorageError>;
}
