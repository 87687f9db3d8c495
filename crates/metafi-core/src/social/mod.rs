//! Social sign-in: accounts created, found, linked and unlinked by Apple, Facebook, Facebook
//! Instant Games, Game Center, Google and Steam identities, with Nakama's rules and messages.
//!
//! Every credential is verified with its provider first (`Verifier`: id tokens against the
//! provider's key set, Facebook's Graph API, Steam's Web API, Game Center's certificate, the
//! Instant Games app secret); only the id it proves is stored. Each endpoint is configurable
//! ([`SocialConfig`]) and every call has a timeout and a response size limit.
//!
//! Key types: [`SocialSignIn`] (the service REST and `nk` call), [`Credential`],
//! [`SocialConfig`].

mod apple;
mod config;
mod facebook;
mod fetch;
mod friend_lists;
mod game_center;
mod google;
mod import;
mod instant_game;
mod jwks;
mod steam;
mod verifier;

#[cfg(test)]
mod import_tests;
#[cfg(test)]
mod tests;

use std::net::IpAddr;
use std::sync::Arc;

use metafi_proto::Code;
use metafi_storage::{Conflict, NewSocialUser, Provider, SocialProfile, Storage, StorageError};
use uuid::Uuid;

pub use config::SocialConfig;
pub use fetch::FetchError;
pub use game_center::GameCenterProof;
pub use verifier::Profile;

use crate::friends::{Actor, Friends};
use crate::signin_throttle::SignInThrottle;
use crate::{AuthOutcome, Clock, CoreError, validate};
use verifier::Verifier;

/// Nakama's answer when an unlink would leave an account without a way to sign in.
const LAST_IDENTITY: &str =
    "Cannot unlink last account identifier. Check profile exists and is not last link.";

/// How many times a generated username is re-drawn when it collides with an existing one.
const GENERATED_USERNAME_ATTEMPTS: usize = 5;

/// What a user proves its social identity with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// A Sign in with Apple id token.
    Apple {
        token: String,
    },
    /// A Facebook access token or Limited Login id token.
    Facebook {
        token: String,
    },
    FacebookInstantGame {
        signed_player_info: String,
    },
    GameCenter(GameCenterProof),
    /// A Google id token.
    Google {
        token: String,
    },
    /// A Steam session ticket.
    Steam {
        token: String,
    },
}

impl Credential {
    pub fn provider(&self) -> Provider {
        match self {
            Credential::Apple { .. } => Provider::Apple,
            Credential::Facebook { .. } => Provider::Facebook,
            Credential::FacebookInstantGame { .. } => Provider::FacebookInstantGame,
            Credential::GameCenter(_) => Provider::GameCenter,
            Credential::Google { .. } => Provider::Google,
            Credential::Steam { .. } => Provider::Steam,
        }
    }

    /// Whether the credential is empty: an unlink without one removes whichever id the user
    /// has (Nakama).
    fn is_empty(&self) -> bool {
        match self {
            Credential::Apple { token }
            | Credential::Facebook { token }
            | Credential::Google { token }
            | Credential::Steam { token } => token.is_empty(),
            Credential::FacebookInstantGame { signed_player_info } => signed_player_info.is_empty(),
            Credential::GameCenter(proof) => !proof.is_complete(),
        }
    }
}

/// Why a credential was not accepted. Logged; clients get their provider's message.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Fetch(#[from] FetchError),
}

impl VerifyError {
    pub(crate) fn invalid(reason: impl Into<String>) -> Self {
        VerifyError::Invalid(reason.into())
    }
}

/// Sign-in, link and unlink by social identities.
#[derive(Debug)]
pub struct SocialSignIn {
    store: Arc<dyn Storage>,
    verifier: Verifier,
    clock: Arc<dyn Clock>,
    /// Refuses addresses with too many failed proofs; `None` when the server runs without it.
    throttle: Option<Arc<SignInThrottle>>,
    /// Where friends imported from Facebook and Steam go; `None`: imports are refused and
    /// `sync` does nothing.
    friends: Option<Arc<Friends>>,
}

impl SocialSignIn {
    /// Builds the service and its HTTP client.
    pub fn new(
        store: Arc<dyn Storage>,
        config: SocialConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, CoreError> {
        let verifier =
            Verifier::new(config, Arc::clone(&clock)).map_err(|e| CoreError::Internal {
                operation: "building the social sign-in HTTP client",
                source: Box::new(e),
            })?;
        Ok(SocialSignIn {
            store,
            verifier,
            clock,
            throttle: None,
            friends: None,
        })
    }

    /// Throttles failed proofs per client address (see [`SignInThrottle`]).
    pub fn with_throttle(mut self, throttle: Arc<SignInThrottle>) -> Self {
        self.throttle = Some(throttle);
        self
    }

    /// Signs a user in by a social identity, creating the account when `create` is set and
    /// none exists (`username` is used only then; a random one when `None`). Checked in
    /// Nakama's order: the provider is configured, the credential is given, the username,
    /// then the credential with its provider.
    pub async fn authenticate(
        &self,
        credential: Credential,
        username: Option<String>,
        create: bool,
        address: Option<IpAddr>,
    ) -> Result<AuthOutcome, CoreError> {
        Ok(self
            .authenticate_profile(credential, username, create, address)
            .await?
            .0)
    }

    /// [`SocialSignIn::authenticate`], then, when `sync` is set, the user's Facebook or Steam
    /// friends are imported (Nakama's `sync` / `import_friends`; a failed import is logged and
    /// does not fail the sign-in).
    pub async fn authenticate_and_sync(
        &self,
        credential: Credential,
        username: Option<String>,
        create: bool,
        address: Option<IpAddr>,
        sync: bool,
    ) -> Result<AuthOutcome, CoreError> {
        let provider = credential.provider();
        let token = credential_token(&credential);
        let (outcome, profile) = self
            .authenticate_profile(credential, username, create, address)
            .await?;
        if sync {
            let actor = Actor {
                id: outcome.user_id,
                username: outcome.username.clone(),
            };
            self.sync_friends(&actor, provider, &profile, &token).await;
        }
        Ok(outcome)
    }

    async fn authenticate_profile(
        &self,
        credential: Credential,
        username: Option<String>,
        create: bool,
        address: Option<IpAddr>,
    ) -> Result<(AuthOutcome, Profile), CoreError> {
        let provider = credential.provider();
        self.configured(provider)?;
        required(&credential)?;
        let username = username.filter(|u| !u.is_empty());
        if let Some(name) = &username {
            validate::username(name)?;
        }
        if let Some(throttle) = &self.throttle {
            throttle.check_address(address)?;
        }
        let profile = match self.verifier.verify(&credential).await {
            Ok(profile) => profile,
            Err(e) => {
                tracing::info!(?provider, error = %e, "could not verify a social sign-in");
                if let Some(throttle) = &self.throttle {
                    throttle.failed_address(address);
                }
                return Err(match provider {
                    Provider::FacebookInstantGame => status(
                        Code::DataLoss,
                        "Error extracting the Facebook Instant Game player ID or validating \
                         the signature",
                    ),
                    _ => CoreError::unauthenticated(messages(provider).unverified),
                });
            }
        };
        if let Some(outcome) = self.sign_in(provider, &profile).await? {
            return Ok((outcome, profile));
        }
        if !create {
            return Err(CoreError::not_found("User account not found."));
        }
        let outcome = self.create(provider, profile.clone(), username).await?;
        Ok((outcome, profile))
    }

    /// Links a social identity to a user; AlreadyExists when another user has it.
    pub async fn link(&self, user_id: Uuid, credential: Credential) -> Result<(), CoreError> {
        self.link_profile(user_id, credential).await.map(|_| ())
    }

    /// [`SocialSignIn::link`], then, when `sync` is set, the user's Facebook (an access token,
    /// not a Limited Login token, as Nakama) or Steam friends are imported; a failed import is
    /// logged and does not fail the link.
    pub async fn link_and_sync(
        &self,
        actor: &Actor,
        credential: Credential,
        sync: bool,
    ) -> Result<(), CoreError> {
        let provider = credential.provider();
        let token = credential_token(&credential);
        let profile = self.link_profile(actor.id, credential).await?;
        if sync {
            self.sync_friends(actor, provider, &profile, &token).await;
        }
        Ok(())
    }

    async fn link_profile(
        &self,
        user_id: Uuid,
        credential: Credential,
    ) -> Result<Profile, CoreError> {
        let provider = credential.provider();
        if provider != Provider::FacebookInstantGame {
            self.configured(provider)?;
        }
        required(&credential)?;
        let profile = self.verified(&credential).await?;
        let imported = SocialProfile {
            // Nakama fills the profile from Google only; it imports Apple's, Facebook's and
            // Google's email.
            display_name: if provider == Provider::Google {
                profile.display_name.clone()
            } else {
                String::new()
            },
            avatar_url: if provider == Provider::Google {
                profile.avatar_url.clone()
            } else {
                String::new()
            },
            email: imported_email(provider, profile.email.clone()),
        };
        let messages = messages(provider);
        match self
            .store
            .link_social(
                user_id,
                provider,
                &profile.id,
                imported,
                self.clock.now_ms(),
            )
            .await
        {
            Ok(()) => Ok(profile),
            // Nakama answers AlreadyExists for an unknown user too (its update finds no row).
            Err(StorageError::Conflict { .. } | StorageError::NotFound { .. }) => {
                Err(CoreError::already_exists(messages.in_use))
            }
            Err(e) => Err(CoreError::storage("linking a social id", e)),
        }
    }

    /// Removes a user's social identity: the one the credential proves, or whichever the user
    /// has when the credential is empty. Refused when it would leave the account without a
    /// way to sign in.
    pub async fn unlink(&self, user_id: Uuid, credential: Credential) -> Result<(), CoreError> {
        let provider = credential.provider();
        let id = if credential.is_empty() {
            None
        } else {
            Some(self.verified(&credential).await?.id)
        };
        let removed = self
            .store
            .unlink_social(user_id, provider, id.as_deref(), self.clock.now_ms())
            .await
            .map_err(|e| CoreError::storage("unlinking a social id", e))?;
        if !removed {
            return Err(CoreError::permission_denied(LAST_IDENTITY));
        }
        Ok(())
    }

    /// The credential's profile, or the provider's "Could not authenticate" answer (links and
    /// unlinks word failures alike for every provider).
    async fn verified(&self, credential: &Credential) -> Result<Profile, CoreError> {
        let provider = credential.provider();
        self.verifier.verify(credential).await.map_err(|e| {
            tracing::info!(?provider, error = %e, "could not verify a social credential");
            CoreError::unauthenticated(messages(provider).unverified)
        })
    }

    /// Whether a provider can be used: Apple needs a bundle id, Steam a publisher key and an
    /// app id (Nakama refuses their calls outright otherwise); the others always can.
    pub fn is_configured(&self, provider: Provider) -> bool {
        let config = &self.verifier.config;
        match provider {
            Provider::Apple => !config.apple_bundle_id.is_empty(),
            Provider::Steam => !config.steam_publisher_key.is_empty() && config.steam_app_id != 0,
            _ => true,
        }
    }

    fn configured(&self, provider: Provider) -> Result<(), CoreError> {
        if !self.is_configured(provider) {
            return Err(status(
                Code::FailedPrecondition,
                match provider {
                    Provider::Apple => "Apple authentication is not configured.",
                    _ => "Steam authentication is not configured.",
                },
            ));
        }
        Ok(())
    }

    async fn sign_in(
        &self,
        provider: Provider,
        profile: &Profile,
    ) -> Result<Option<AuthOutcome>, CoreError> {
        let Some(user) = self
            .store
            .find_social_user(provider, &profile.id)
            .await
            .map_err(|e| CoreError::storage("finding a user account", e))?
        else {
            return Ok(None);
        };
        if user.disabled {
            return Err(CoreError::permission_denied("User account banned."));
        }
        if provider == Provider::Google
            && (!profile.display_name.is_empty() || !profile.avatar_url.is_empty())
        {
            let filled = SocialProfile {
                display_name: profile.display_name.clone(),
                avatar_url: profile.avatar_url.clone(),
                email: None,
            };
            // As Nakama, a failure here does not fail the sign-in.
            if let Err(e) = self
                .store
                .fill_social_profile(user.id, filled, self.clock.now_ms())
                .await
            {
                tracing::warn!(error = %e, "could not fill a profile from google");
            }
        }
        Ok(Some(AuthOutcome {
            user_id: user.id,
            username: user.username,
            created: false,
        }))
    }

    async fn create(
        &self,
        provider: Provider,
        profile: Profile,
        username: Option<String>,
    ) -> Result<AuthOutcome, CoreError> {
        let attempts = if username.is_none() {
            GENERATED_USERNAME_ATTEMPTS
        } else {
            1
        };
        // Nakama sets the display name and picture from Facebook and Google only.
        let (display_name, avatar_url) = match provider {
            Provider::Facebook | Provider::Google => {
                (profile.display_name.clone(), profile.avatar_url.clone())
            }
            _ => (String::new(), String::new()),
        };
        let email = imported_email(provider, profile.email.clone());
        for _ in 0..attempts {
            let name = username.clone().unwrap_or_else(validate::generate_username);
            let new = NewSocialUser {
                id: Uuid::new_v4(),
                username: name.clone(),
                provider,
                provider_id: profile.id.clone(),
                display_name: display_name.clone(),
                avatar_url: avatar_url.clone(),
                email: email.clone(),
                now_ms: self.clock.now_ms(),
            };
            let id = new.id;
            match self.store.create_social_user(new).await {
                Ok(()) => {
                    return Ok(AuthOutcome {
                        user_id: id,
                        username: name,
                        created: true,
                    });
                }
                Err(StorageError::Conflict {
                    what: Conflict::Username,
                }) => continue,
                // Lost a race with a concurrent sign-up of the same id: that account is ours.
                Err(StorageError::Conflict { .. }) => {
                    return self.sign_in(provider, &profile).await?.ok_or_else(|| {
                        status(Code::Internal, "Error finding or creating user account.")
                    });
                }
                Err(e) => return Err(CoreError::storage("creating an account", e)),
            }
        }
        Err(CoreError::already_exists("Username is already in use."))
    }
}

/// The token a Facebook or Steam credential carries (friend import needs it); empty for the
/// others.
fn credential_token(credential: &Credential) -> String {
    match credential {
        Credential::Facebook { token } | Credential::Steam { token } => token.clone(),
        _ => String::new(),
    }
}

/// The provider's email to import: Apple's, Facebook's and Google's, when given.
fn imported_email(provider: Provider, email: String) -> Option<String> {
    let imports = matches!(
        provider,
        Provider::Apple | Provider::Facebook | Provider::Google
    );
    (imports && !email.is_empty() && !email.contains('\0')).then_some(email)
}

/// Refuses an empty credential with Nakama's message (Game Center names the first missing
/// field, in Nakama's order).
fn required(credential: &Credential) -> Result<(), CoreError> {
    let missing = match credential {
        Credential::GameCenter(proof) => {
            let checks: [(bool, &'static str); 6] = [
                (
                    proof.bundle_id.is_empty(),
                    "GameCenter bundle ID is required.",
                ),
                (
                    proof.player_id.is_empty(),
                    "GameCenter player ID is required.",
                ),
                (
                    proof.public_key_url.is_empty(),
                    "GameCenter public key URL is required.",
                ),
                (proof.salt.is_empty(), "GameCenter salt is required."),
                (
                    proof.signature.is_empty(),
                    "GameCenter signature is required.",
                ),
                (
                    proof.timestamp_seconds == 0,
                    "GameCenter timestamp is required.",
                ),
            ];
            checks.iter().find(|(missing, _)| *missing).map(|(_, m)| *m)
        }
        other if other.is_empty() => Some(messages(other.provider()).required),
        _ => None,
    };
    match missing {
        Some(message) => Err(CoreError::invalid(message)),
        None => Ok(()),
    }
}

/// A status outside the common constructors (FailedPrecondition, DataLoss, Internal).
fn status(code: Code, message: &str) -> CoreError {
    CoreError::Status {
        code,
        message: message.to_owned(),
    }
}

/// Nakama's words for one provider.
struct Messages {
    required: &'static str,
    unverified: &'static str,
    in_use: &'static str,
}

fn messages(provider: Provider) -> Messages {
    match provider {
        Provider::Apple => Messages {
            required: "Apple ID token is required.",
            unverified: "Could not authenticate Apple profile.",
            in_use: "Apple ID is already in use.",
        },
        Provider::Facebook => Messages {
            required: "Facebook access token is required.",
            unverified: "Could not authenticate Facebook profile.",
            in_use: "Facebook ID is already in use.",
        },
        Provider::FacebookInstantGame => Messages {
            required: "Signed Player Info for a Facebook Instant Game is required.",
            unverified: "Could not authenticate Facebook Instant Game profile.",
            in_use: "Facebook Instant Game ID is already in use.",
        },
        Provider::GameCenter => Messages {
            required: "GameCenter access credentials are required.",
            unverified: "Could not authenticate GameCenter profile.",
            in_use: "GameCenter ID is already in use.",
        },
        Provider::Google => Messages {
            required: "Google access token is required.",
            unverified: "Could not authenticate Google profile.",
            in_use: "Google ID is already in use.",
        },
        Provider::Steam => Messages {
            required: "Steam access token is required.",
            unverified: "Could not authenticate Steam profile.",
            in_use: "Steam ID is already in use.",
        },
    }
}
