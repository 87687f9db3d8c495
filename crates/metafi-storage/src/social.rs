//! Social sign-in identities: the Apple, Facebook, Facebook Instant Games, Game Center, Google
//! and Steam ids a user is known by (Nakama's `users` columns). The provider tokens are
//! verified before these are called; storage only keeps each id unique to one user.

use async_trait::async_trait;
use uuid::Uuid;

use crate::{AuthUser, StorageError, User};

/// A social identity provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    Apple,
    Facebook,
    FacebookInstantGame,
    GameCenter,
    Google,
    Steam,
}

impl Provider {
    /// Every provider, in Nakama's column order.
    pub const ALL: [Provider; 6] = [
        Provider::Apple,
        Provider::Facebook,
        Provider::FacebookInstantGame,
        Provider::GameCenter,
        Provider::Google,
        Provider::Steam,
    ];

    /// The `users` column that holds this provider's id (Nakama's name).
    pub fn column(self) -> &'static str {
        match self {
            Provider::Apple => "apple_id",
            Provider::Facebook => "facebook_id",
            Provider::FacebookInstantGame => "facebook_instant_game_id",
            Provider::GameCenter => "gamecenter_id",
            Provider::Google => "google_id",
            Provider::Steam => "steam_id",
        }
    }
}

/// The social ids of a user; `None` where it has none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SocialIds {
    pub apple_id: Option<String>,
    pub facebook_id: Option<String>,
    pub facebook_instant_game_id: Option<String>,
    pub gamecenter_id: Option<String>,
    pub google_id: Option<String>,
    pub steam_id: Option<String>,
}

impl SocialIds {
    /// The id of one provider.
    pub fn get(&self, provider: Provider) -> Option<&str> {
        match provider {
            Provider::Apple => self.apple_id.as_deref(),
            Provider::Facebook => self.facebook_id.as_deref(),
            Provider::FacebookInstantGame => self.facebook_instant_game_id.as_deref(),
            Provider::GameCenter => self.gamecenter_id.as_deref(),
            Provider::Google => self.google_id.as_deref(),
            Provider::Steam => self.steam_id.as_deref(),
        }
    }

    /// True when the user has at least one social id.
    pub fn any(&self) -> bool {
        Provider::ALL.iter().any(|p| self.get(*p).is_some())
    }
}

/// A new account created by a social sign-in: the user row with the provider's id and what
/// the provider said about the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSocialUser {
    pub id: Uuid,
    pub username: String,
    pub provider: Provider,
    pub provider_id: String,
    /// The provider's display name and picture; empty when it gave none.
    pub display_name: String,
    pub avatar_url: String,
    /// The provider's email address, imported when no other user has it (else skipped, as
    /// Nakama).
    pub email: Option<String>,
    pub now_ms: i64,
}

/// Profile fields a provider fills in where the user has none (Nakama's Google sign-in).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SocialProfile {
    pub display_name: String,
    pub avatar_url: String,
    /// Imported when the user has no email and no other user has it.
    pub email: Option<String>,
}

/// Social identities of accounts.
#[async_trait]
pub trait SocialStore: Send + Sync {
    /// Finds the user that owns a provider id.
    async fn find_social_user(
        &self,
        provider: Provider,
        provider_id: &str,
    ) -> Result<Option<AuthUser>, StorageError>;

    /// Creates the user with its social id atomically. Errors with `Conflict { what:
    /// SocialId }` when the id already belongs to a user and `Conflict { what: Username }`
    /// when the username is taken (the id's conflict wins when both are); nothing is written
    /// then. The email is imported only when free.
    async fn create_social_user(&self, new: NewSocialUser) -> Result<(), StorageError>;

    /// Sets a user's provider id (replacing the one it had), fills the empty display name and
    /// avatar from `profile`, imports its email when free, and bumps `update_time`. Errors
    /// with `NotFound` for an unknown user and `Conflict { what: SocialId }` when another user
    /// has the id.
    async fn link_social(
        &self,
        user_id: Uuid,
        provider: Provider,
        provider_id: &str,
        profile: SocialProfile,
        now_ms: i64,
    ) -> Result<(), StorageError>;

    /// Clears a user's provider id (only when it is `provider_id`, if given) and bumps
    /// `update_time`, unless the user would be left without another identity. `Ok(false)`
    /// when nothing was changed: no such user, a different id, or no other identity. As
    /// Nakama, a user without this provider's id but with another identity is `Ok(true)`.
    async fn unlink_social(
        &self,
        user_id: Uuid,
        provider: Provider,
        provider_id: Option<&str>,
        now_ms: i64,
    ) -> Result<bool, StorageError>;

    /// Fills a user's empty display name and avatar from a provider (fields already set are
    /// kept); bumps `update_time` only when something changed.
    async fn fill_social_profile(
        &self,
        user_id: Uuid,
        profile: SocialProfile,
        now_ms: i64,
    ) -> Result<(), StorageError>;

    /// The users whose `provider` id is one of `provider_ids` (Nakama's `GET
    /// /v2/user?facebook_ids=`), each once, in no particular order. Ids no user has, and ids
    /// no user could have (see [`lookup_social_ids`]), are skipped. One indexed look-up per
    /// id (the ids are unique per user).
    async fn users_by_social_id(
        &self,
        provider: Provider,
        provider_ids: &[String],
    ) -> Result<Vec<User>, StorageError>;
}

/// The distinct ids of `provider_ids` a user could have, in the order first given: an id with
/// a NUL character or longer than the column names nobody, so it is dropped instead of
/// failing the whole look-up (as a name that matches no row).
pub fn lookup_social_ids(provider_ids: &[String]) -> Vec<String> {
    let mut seen = std::collections::HashSet::with_capacity(provider_ids.len());
    provider_ids
        .iter()
        .filter(|id| !id.is_empty() && check_social_id(id).is_ok())
        .filter(|id| seen.insert(id.as_str()))
        .cloned()
        .collect()
}

/// Refuses what no backend can store: NUL characters, text longer than Nakama's columns.
pub fn check_social_id(provider_id: &str) -> Result<(), StorageError> {
    crate::text::check_text("social id", provider_id, crate::text::MAX_ID_CHARS)
}

/// [`check_social_id`] and the profile fields of a new social user.
pub fn check_new_social_user(new: &NewSocialUser) -> Result<(), StorageError> {
    crate::text::check_text("username", &new.username, crate::text::MAX_ID_CHARS)?;
    check_social_id(&new.provider_id)?;
    check_social_profile(&SocialProfile {
        display_name: new.display_name.clone(),
        avatar_url: new.avatar_url.clone(),
        email: new.email.clone(),
    })
}

/// The provider's profile fields fit Nakama's columns.
pub fn check_social_profile(profile: &SocialProfile) -> Result<(), StorageError> {
    use crate::text::{MAX_AVATAR_URL_CHARS, MAX_EMAIL_CHARS, MAX_PROFILE_CHARS, check_text};
    check_text("display name", &profile.display_name, MAX_PROFILE_CHARS)?;
    check_text("avatar url", &profile.avatar_url, MAX_AVATAR_URL_CHARS)?;
    if let Some(email) = &profile.email {
        check_text("email", email, MAX_EMAIL_CHARS)?;
    }
    Ok(())
}
