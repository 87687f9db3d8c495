//! Accounts: sign-in by device id, custom id or email (creating the account on first use), the
//! account view and profile updates.

use std::net::IpAddr;
use std::sync::Arc;

use metafi_proto::api;
use metafi_proto::format_timestamp_ms;
use metafi_storage::{
    Account, AccountUpdate, Conflict, IdentityRef, NewIdentity, NewUser, Storage, StorageError,
    Unlink,
};
use uuid::Uuid;

use crate::signin_throttle::{SignInThrottle, ThrottleKey};
use crate::validate::ProfileField;
use crate::{Clock, CoreError, PasswordHasher, Sessions, UserSockets, validate};

/// Nakama's answer when an unlink would leave an account without a way to sign in.
const LAST_IDENTITY: &str =
    "Cannot unlink last account identifier. Check profile exists and is not last link.";

/// How many times a generated username is re-drawn when it collides with an existing one.
const GENERATED_USERNAME_ATTEMPTS: usize = 5;

/// Tunables of the account service.
#[derive(Debug, Clone)]
pub struct AccountsConfig {
    /// bcrypt work factor for new password hashes.
    pub bcrypt_cost: u32,
    /// How many password hashes may run at once on the blocking pool.
    pub max_concurrent_hashes: usize,
    /// Most storage objects an account export (`nk.account_export_id`) includes.
    pub max_exported_objects: usize,
}

/// What a user signs in with.
#[derive(Debug, Clone)]
pub enum Identity {
    Device {
        id: String,
    },
    Custom {
        id: String,
    },
    /// Email and password; an empty email means "sign in by username and password".
    Email {
        email: String,
        password: String,
    },
}

/// A successful authentication: who, and whether the account was just created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthOutcome {
    pub user_id: Uuid,
    pub username: String,
    pub created: bool,
}

#[derive(Debug)]
pub struct Accounts {
    store: Arc<dyn Storage>,
    hasher: PasswordHasher,
    clock: Arc<dyn Clock>,
    /// Most storage objects an export includes.
    max_exported_objects: usize,
    /// Refuses sign-ins of accounts and addresses with too many recent failures; `None` when
    /// the server runs without it.
    throttle: Option<Arc<SignInThrottle>>,
    /// Takes a deleted account out of the leaderboard ranks; `None` without leaderboards.
    leaderboards: Option<Arc<crate::Leaderboards>>,
}

impl Accounts {
    pub fn new(store: Arc<dyn Storage>, config: &AccountsConfig, clock: Arc<dyn Clock>) -> Self {
        Accounts {
            store,
            hasher: PasswordHasher::new(config.bcrypt_cost, config.max_concurrent_hashes),
            clock,
            max_exported_objects: config.max_exported_objects,
            throttle: None,
            leaderboards: None,
        }
    }

    /// Account deletion takes the account out of these leaderboards' ranks (its records go
    /// with the user row, as in Nakama).
    pub fn with_leaderboards(mut self, leaderboards: Arc<crate::Leaderboards>) -> Self {
        self.leaderboards = Some(leaderboards);
        self
    }

    /// Throttles failed sign-ins (see [`SignInThrottle`]).
    pub fn with_throttle(mut self, throttle: Arc<SignInThrottle>) -> Self {
        self.throttle = Some(throttle);
        self
    }

    /// Signs a user in, creating the account when `create` is set and none exists. `username`
    /// is used only when creating; a random one is generated when it is `None`. Inputs are
    /// checked in Nakama's order (the identity, then the username), so that a request with
    /// several faults gets Nakama's answer.
    ///
    /// A sign-in that can fail on a secret (a password; a device or custom id with
    /// `create=false`) is throttled per account and per client `address` when a throttle is
    /// set: past its failures it is refused with code 8 before the secret is checked.
    pub async fn authenticate(
        &self,
        identity: Identity,
        username: Option<String>,
        create: bool,
        address: Option<IpAddr>,
    ) -> Result<AuthOutcome, CoreError> {
        let guarded = self
            .throttle
            .as_ref()
            .and_then(|t| Some((t, throttle_key(&identity, username.as_deref(), create)?)));
        let Some((throttle, key)) = guarded else {
            return self
                .authenticate_unthrottled(identity, username, create)
                .await;
        };
        throttle.check(&key, address)?;
        let result = self
            .authenticate_unthrottled(identity, username, create)
            .await;
        match &result {
            Ok(_) => throttle.succeeded(&key),
            Err(CoreError::Unauthenticated { .. } | CoreError::NotFound { .. }) => {
                throttle.failed(key, address)
            }
            Err(_) => {}
        }
        result
    }

    async fn authenticate_unthrottled(
        &self,
        identity: Identity,
        username: Option<String>,
        create: bool,
    ) -> Result<AuthOutcome, CoreError> {
        let username = username.filter(|u| !u.is_empty());
        match identity {
            Identity::Device { id } => {
                validate::device_id(&id)?;
                let username = checked_username(username)?;
                self.find_or_create(NewIdentity::Device { id }, username, create)
                    .await
            }
            Identity::Custom { id } => {
                validate::custom_id(&id)?;
                let username = checked_username(username)?;
                self.find_or_create(NewIdentity::Custom { id }, username, create)
                    .await
            }
            Identity::Email { email, password } => {
                self.authenticate_email(email, password, username, create)
                    .await
            }
        }
    }

    /// The signed-in user's own account view.
    pub async fn account(&self, user_id: Uuid) -> Result<api::Account, CoreError> {
        let account = self.stored_account(user_id).await?;
        let user = account.user;
        Ok(api::Account {
            wallet: user.wallet.clone(),
            email: user.email.clone().unwrap_or_default(),
            devices: account
                .device_ids
                .into_iter()
                .map(|id| api::AccountDevice {
                    id,
                    vars: Default::default(),
                })
                .collect(),
            custom_id: user.custom_id.clone().unwrap_or_default(),
            verify_time: user
                .verify_time_ms
                .map(format_timestamp_ms)
                .unwrap_or_default(),
            disable_time: user
                .disable_time_ms
                .map(format_timestamp_ms)
                .unwrap_or_default(),
            user: user_view(user),
        })
    }

    /// Applies a client's profile update. The username, when given, must be valid and free.
    pub async fn update_account(
        &self,
        user_id: Uuid,
        request: api::UpdateAccountRequest,
    ) -> Result<(), CoreError> {
        let update = AccountUpdate {
            username: request.username,
            display_name: request.display_name,
            avatar_url: request.avatar_url,
            lang_tag: request.lang_tag,
            location: request.location,
            timezone: request.timezone,
            metadata: None,
            wallet: None,
        };
        match self.apply_update(user_id, update).await {
            // Nakama 3.40 answers InvalidArgument here, its message the wrapped gRPC status of
            // the conflict (its `UpdateAccount` turns any non-database error into code 3).
            Err(CoreError::AlreadyExists { .. }) => Err(CoreError::invalid(
                "rpc error: code = AlreadyExists desc = Username is already in use.",
            )),
            other => other,
        }
    }

    /// Server code's profile update (`nk.account_update_id`): the client's fields plus
    /// `metadata` (JSON object text), with the same rules. A taken username is AlreadyExists.
    pub async fn update_account_as_server(
        &self,
        user_id: Uuid,
        update: AccountUpdate,
    ) -> Result<(), CoreError> {
        self.apply_update(user_id, update).await
    }

    async fn apply_update(&self, user_id: Uuid, update: AccountUpdate) -> Result<(), CoreError> {
        check_update(&update)?;
        match self
            .store
            .update_account(user_id, update, self.clock.now_ms())
            .await
        {
            Ok(()) => Ok(()),
            Err(StorageError::Conflict {
                what: Conflict::Username,
            }) => Err(CoreError::already_exists("Username is already in use.")),
            Err(StorageError::NotFound { .. }) => Err(CoreError::not_found("Account not found.")),
            Err(e) => Err(CoreError::storage("updating an account", e)),
        }
    }

    /// A user's stored account (profile, identities, wallet); `Account not found.` when none.
    pub async fn stored_account(&self, user_id: Uuid) -> Result<Account, CoreError> {
        self.store
            .account(user_id)
            .await
            .map_err(|e| CoreError::storage("reading an account", e))?
            .ok_or_else(|| CoreError::not_found("Account not found."))
    }

    /// The accounts of the given users and of the owners of the given device ids, each once;
    /// unknown ids are skipped.
    pub async fn stored_accounts(
        &self,
        user_ids: &[Uuid],
        device_ids: &[String],
    ) -> Result<Vec<Account>, CoreError> {
        if user_ids.len() + device_ids.len() > crate::MAX_USERS_PER_LOOKUP {
            return Err(CoreError::invalid(format!(
                "Too many accounts requested: at most {} ids together.",
                crate::MAX_USERS_PER_LOOKUP
            )));
        }
        let mut ids: Vec<Uuid> = user_ids.to_vec();
        for device in device_ids {
            if device.contains('\0') {
                continue;
            }
            if let Some(user) = self.find(IdentityRef::Device(device)).await? {
                ids.push(user.id);
            }
        }
        let mut seen = std::collections::HashSet::with_capacity(ids.len());
        ids.retain(|id| seen.insert(*id));
        let mut accounts = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(account) = self
                .store
                .account(id)
                .await
                .map_err(|e| CoreError::storage("reading an account", e))?
            {
                accounts.push(account);
            }
        }
        Ok(accounts)
    }

    /// Links a device id to a user (Nakama's rules and messages).
    pub async fn link_device(&self, user_id: Uuid, device_id: &str) -> Result<(), CoreError> {
        validate::device_id(device_id)?;
        match self.store.link_device(user_id, device_id).await {
            Ok(()) => Ok(()),
            Err(StorageError::Conflict { .. }) => {
                Err(CoreError::already_exists("Device ID already in use."))
            }
            Err(e) => Err(link_failed(e)),
        }
    }

    /// Links (or replaces) a user's custom id.
    pub async fn link_custom(&self, user_id: Uuid, custom_id: &str) -> Result<(), CoreError> {
        validate::linked_custom_id(custom_id)?;
        match self
            .store
            .link_custom(user_id, custom_id, self.clock.now_ms())
            .await
        {
            Ok(()) => Ok(()),
            Err(StorageError::Conflict { .. }) => {
                Err(CoreError::already_exists("Custom ID is already in use."))
            }
            Err(e) => Err(link_failed(e)),
        }
    }

    /// Links (or replaces) a user's email address and password. Checked in Nakama's order:
    /// both given, the address's characters, the password, the address's shape and length.
    pub async fn link_email(
        &self,
        user_id: Uuid,
        email: &str,
        password: &str,
    ) -> Result<(), CoreError> {
        if email.is_empty() || password.is_empty() {
            return Err(CoreError::invalid(
                "Email address and password is required.",
            ));
        }
        if validate::email_fault(email) == Some(validate::Fault::Characters) {
            validate::email(email)?;
        }
        validate::password(password)?;
        let email = validate::email(email)?;
        let hash = self.hasher.hash(password.to_owned()).await?;
        match self
            .store
            .link_email(user_id, &email, &hash, self.clock.now_ms())
            .await
        {
            Ok(()) => Ok(()),
            Err(StorageError::Conflict { .. }) => {
                Err(CoreError::already_exists("Email is already in use."))
            }
            Err(e) => Err(link_failed(e)),
        }
    }

    /// Removes a device id from a user, unless it is the account's last identity.
    pub async fn unlink_device(&self, user_id: Uuid, device_id: &str) -> Result<(), CoreError> {
        if device_id.is_empty() {
            return Err(CoreError::invalid("A device ID must be supplied."));
        }
        self.unlink(user_id, Unlink::Device(device_id)).await
    }

    /// Removes the user's custom id (only if it is `custom_id`, when one is given), unless it
    /// is the account's last identity.
    pub async fn unlink_custom(&self, user_id: Uuid, custom_id: &str) -> Result<(), CoreError> {
        let id = Some(custom_id).filter(|id| !id.is_empty());
        self.unlink(user_id, Unlink::Custom(id)).await
    }

    /// Removes the user's email and password (only if the address is `email`, when one is
    /// given), unless they are the account's last identity.
    pub async fn unlink_email(&self, user_id: Uuid, email: &str) -> Result<(), CoreError> {
        let email = email.to_lowercase();
        let email = Some(email.as_str()).filter(|e| !e.is_empty());
        self.unlink(user_id, Unlink::Email(email)).await
    }

    async fn unlink(&self, user_id: Uuid, identity: Unlink<'_>) -> Result<(), CoreError> {
        let removed = self
            .store
            .unlink(user_id, identity, self.clock.now_ms())
            .await
            .map_err(|e| CoreError::storage("unlinking an identity", e))?;
        if !removed {
            return Err(CoreError::permission_denied(LAST_IDENTITY));
        }
        Ok(())
    }

    /// Bans users: they can no longer sign in or refresh, every session they have ends and
    /// their open sockets are closed (on every node of a cluster: `sockets` reaches them).
    /// Unknown ids are skipped. The console and `nk.users_ban_id` both come here.
    pub async fn ban(
        &self,
        sessions: &Sessions,
        sockets: &dyn UserSockets,
        user_ids: &[Uuid],
    ) -> Result<(), CoreError> {
        self.store
            .set_disable_time(user_ids, Some(self.clock.now_ms()))
            .await
            .map_err(|e| CoreError::storage("banning users", e))?;
        for user_id in user_ids {
            sessions.end_all(*user_id).await?;
            sockets.disconnect_user(*user_id);
        }
        Ok(())
    }

    /// Lifts bans; the users sign in again (sessions ended by the ban stay ended).
    pub async fn unban(&self, user_ids: &[Uuid]) -> Result<(), CoreError> {
        self.store
            .set_disable_time(user_ids, None)
            .await
            .map_err(|e| CoreError::storage("unbanning users", e))
    }

    /// Deletes an account with everything that goes with it (identities, storage objects,
    /// wallet ledger, leaderboard records: removed with the user row) and ends its sessions: its tokens stop
    /// working and its open sockets are closed (on every node of a cluster). REST `DELETE /v2/account` and
    /// `nk.account_delete_id` both come here. An unknown user is not an error (Nakama).
    /// MetaFi keeps no tombstones of deleted users.
    pub async fn delete(
        &self,
        sessions: &Sessions,
        sockets: &dyn UserSockets,
        user_id: Uuid,
    ) -> Result<(), CoreError> {
        if user_id.is_nil() {
            return Err(CoreError::invalid("Cannot delete the system user."));
        }
        let deleted = self
            .store
            .delete_user(user_id)
            .await
            .map_err(|e| CoreError::storage("deleting an account", e))?;
        if deleted {
            // The store removed its leaderboard records with the user row.
            if let Some(leaderboards) = &self.leaderboards {
                leaderboards.forget_owner(user_id);
            }
            sessions.end_all(user_id).await?;
            sockets.disconnect_user(user_id);
        }
        Ok(())
    }

    /// What MetaFi keeps of an account: the account and the storage objects the user owns (at
    /// most `accounts.max_exported_objects`), in the API's shapes.
    pub async fn export(
        &self,
        user_id: Uuid,
    ) -> Result<(api::Account, Vec<api::StorageObject>), CoreError> {
        let account = self.account(user_id).await?;
        let objects = self
            .store
            .objects_of_user(user_id, self.max_exported_objects)
            .await
            .map_err(|e| CoreError::storage("exporting an account", e))?;
        Ok((
            account,
            objects
                .into_iter()
                .map(crate::objects::object_view)
                .collect(),
        ))
    }

    async fn authenticate_email(
        &self,
        email: String,
        password: String,
        username: Option<String>,
        create: bool,
    ) -> Result<AuthOutcome, CoreError> {
        if email.is_empty() && password.is_empty() {
            return Err(CoreError::invalid(
                "Email address and password is required.",
            ));
        }
        // Nakama's order: the email, the password, then the username.
        let email = match email.as_str() {
            "" => String::new(),
            given => validate::email(given)?,
        };
        validate::password(&password)?;
        let username = checked_username(username)?;
        if email.is_empty() {
            // Sign-in by username and password; never creates an account.
            let username = username.ok_or_else(|| {
                CoreError::invalid("Username is required when email address is not supplied.")
            })?;
            return self
                .sign_in_with_password(IdentityRef::Username(&username), password)
                .await?
                .ok_or_else(|| CoreError::not_found("User account not found."));
        }
        if let Some(outcome) = self
            .sign_in_with_password(IdentityRef::Email(&email), password.clone())
            .await?
        {
            return Ok(outcome);
        }
        if !create {
            return Err(CoreError::not_found("User account not found."));
        }
        let password_hash = self.hasher.hash(password.clone()).await?;
        match self
            .create(
                NewIdentity::Email {
                    email: email.clone(),
                    password_hash,
                },
                username,
            )
            .await
        {
            // Someone created this email account meanwhile: sign in to it with the password.
            Err(CreateError::IdentityTaken) => self
                .sign_in_with_password(IdentityRef::Email(&email), password)
                .await?
                .ok_or_else(|| CoreError::unauthenticated("Invalid credentials.")),
            other => other.map_err(CreateError::into_core),
        }
    }

    /// Looks a password account up; `None` when it does not exist.
    async fn sign_in_with_password(
        &self,
        identity: IdentityRef<'_>,
        password: String,
    ) -> Result<Option<AuthOutcome>, CoreError> {
        let Some(user) = self.find(identity).await? else {
            return Ok(None);
        };
        if user.disabled {
            return Err(CoreError::permission_denied("User account banned."));
        }
        let Some(hash) = user.password_hash else {
            return Err(CoreError::unauthenticated("Invalid credentials."));
        };
        if !self.hasher.verify(password, hash).await? {
            return Err(CoreError::unauthenticated("Invalid credentials."));
        }
        Ok(Some(AuthOutcome {
            user_id: user.id,
            username: user.username,
            created: false,
        }))
    }

    async fn find_or_create(
        &self,
        identity: NewIdentity,
        username: Option<String>,
        create: bool,
    ) -> Result<AuthOutcome, CoreError> {
        if let Some(outcome) = self.sign_in(&identity).await? {
            return Ok(outcome);
        }
        if !create {
            return Err(CoreError::not_found("User account not found."));
        }
        match self.create(identity.clone(), username).await {
            // Lost a race with a concurrent sign-up of the same id: that account is ours too.
            Err(CreateError::IdentityTaken) => self
                .sign_in(&identity)
                .await?
                .ok_or_else(|| CoreError::not_found("User account not found.")),
            other => other.map_err(CreateError::into_core),
        }
    }

    async fn sign_in(&self, identity: &NewIdentity) -> Result<Option<AuthOutcome>, CoreError> {
        let lookup = match identity {
            NewIdentity::Device { id } => IdentityRef::Device(id),
            NewIdentity::Custom { id } => IdentityRef::Custom(id),
            NewIdentity::Email { email, .. } => IdentityRef::Email(email),
        };
        let Some(user) = self.find(lookup).await? else {
            return Ok(None);
        };
        if user.disabled {
            return Err(CoreError::permission_denied("User account banned."));
        }
        Ok(Some(AuthOutcome {
            user_id: user.id,
            username: user.username,
            created: false,
        }))
    }

    async fn find(
        &self,
        identity: IdentityRef<'_>,
    ) -> Result<Option<metafi_storage::AuthUser>, CoreError> {
        self.store
            .find_user(identity)
            .await
            .map_err(|e| CoreError::storage("finding a user account", e))
    }

    async fn create(
        &self,
        identity: NewIdentity,
        username: Option<String>,
    ) -> Result<AuthOutcome, CreateError> {
        let generated = username.is_none();
        let attempts = if generated {
            GENERATED_USERNAME_ATTEMPTS
        } else {
            1
        };
        let mut last = CreateError::UsernameTaken;
        for _ in 0..attempts {
            let username = username.clone().unwrap_or_else(validate::generate_username);
            let new = NewUser {
                id: crate::random_uuid(),
                username: username.clone(),
                identity: identity.clone(),
                now_ms: self.clock.now_ms(),
            };
            let id = new.id;
            match self.store.create_user(new).await {
                Ok(()) => {
                    return Ok(AuthOutcome {
                        user_id: id,
                        username,
                        created: true,
                    });
                }
                Err(StorageError::Conflict {
                    what: Conflict::Username,
                }) => last = CreateError::UsernameTaken,
                Err(StorageError::Conflict { .. }) => return Err(CreateError::IdentityTaken),
                Err(e) => {
                    return Err(CreateError::Core(CoreError::storage(
                        "creating an account",
                        e,
                    )));
                }
            }
        }
        Err(last)
    }
}

/// A link that failed for a reason other than a taken identity.
fn link_failed(error: StorageError) -> CoreError {
    match error {
        StorageError::NotFound { .. } => CoreError::not_found("User account not found."),
        other => CoreError::storage("linking an identity", other),
    }
}

/// A username given with a sign-in, checked; `None` when none was given.
fn checked_username(username: Option<String>) -> Result<Option<String>, CoreError> {
    if let Some(name) = &username {
        validate::username(name)?;
    }
    Ok(username)
}

/// The throttle's key of a sign-in that can fail on a secret; `None` for one that cannot (a
/// device or custom id with `create=true` signs in or creates, it never fails on the id).
fn throttle_key(identity: &Identity, username: Option<&str>, create: bool) -> Option<ThrottleKey> {
    match identity {
        Identity::Email { email, .. } if email.is_empty() => {
            Some(ThrottleKey::Username(username?.to_lowercase()))
        }
        Identity::Email { email, .. } => Some(ThrottleKey::Email(email.to_lowercase())),
        Identity::Device { id } if !create => Some(ThrottleKey::Device(id.clone())),
        Identity::Custom { id } if !create => Some(ThrottleKey::Custom(id.clone())),
        Identity::Device { .. } | Identity::Custom { .. } => None,
    }
}

/// Why creating an account failed, before mapping onto client errors.
enum CreateError {
    UsernameTaken,
    IdentityTaken,
    Core(CoreError),
}

impl CreateError {
    fn into_core(self) -> CoreError {
        match self {
            CreateError::UsernameTaken => CoreError::already_exists("Username is already in use."),
            CreateError::IdentityTaken => {
                CoreError::already_exists("Account identifier already in use.")
            }
            CreateError::Core(e) => e,
        }
    }
}

/// The API view of a stored user.
pub(crate) fn user_view(user: metafi_storage::User) -> api::User {
    let social = user.social;
    api::User {
        facebook_id: social.facebook_id.unwrap_or_default(),
        google_id: social.google_id.unwrap_or_default(),
        gamecenter_id: social.gamecenter_id.unwrap_or_default(),
        steam_id: social.steam_id.unwrap_or_default(),
        facebook_instant_game_id: social.facebook_instant_game_id.unwrap_or_default(),
        apple_id: social.apple_id.unwrap_or_default(),
        id: user.id.to_string(),
        username: user.username,
        display_name: user.display_name,
        avatar_url: user.avatar_url,
        lang_tag: user.lang_tag,
        location: user.location,
        timezone: user.timezone,
        metadata: user.metadata,
        online: false,
        edge_count: 0,
        create_time: format_timestamp_ms(user.create_time_ms),
        update_time: format_timestamp_ms(user.update_time_ms),
    }
}

/// The rules of a profile update (the username's, each field's, metadata a JSON object, not
/// empty), shared by the REST and server-code updates and `multi_update`.
pub(crate) fn check_update(update: &AccountUpdate) -> Result<(), CoreError> {
    if let Some(username) = &update.username {
        validate::new_username(username)?;
    }
    let fields = [
        (ProfileField::DisplayName, &update.display_name),
        (ProfileField::AvatarUrl, &update.avatar_url),
        (ProfileField::LangTag, &update.lang_tag),
        (ProfileField::Location, &update.location),
        (ProfileField::Timezone, &update.timezone),
    ];
    for (field, value) in fields {
        if let Some(value) = value {
            validate::profile_field(field, value)?;
        }
    }
    if let Some(metadata) = &update.metadata
        && !serde_json::from_str::<serde_json::Value>(metadata).is_ok_and(|v| v.is_object())
    {
        return Err(CoreError::invalid("Metadata must be a JSON object."));
    }
    if let Some(wallet) = &update.wallet {
        crate::wallets::check_wallet(wallet)?;
    }
    if update.is_empty() {
        return Err(CoreError::invalid("No fields to update."));
    }
    Ok(())
}
