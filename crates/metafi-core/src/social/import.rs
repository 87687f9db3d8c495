//! Friend import from Facebook and Steam (`POST /v2/friend/facebook`, `/v2/friend/steam`, and
//! `sync` on sign-in and link), as Nakama: the provider lists the user's friends, and
//! [`Friends::import`](crate::Friends::import) befriends the users linked to them.

use metafi_proto::Code;
use metafi_storage::Provider;

use super::{Credential, Profile, SocialSignIn, friend_lists, status};
use crate::CoreError;
use crate::friends::{Actor, Friends};

impl SocialSignIn {
    /// Where imported friends go (the server's friends service).
    pub fn with_friends(mut self, friends: std::sync::Arc<Friends>) -> Self {
        self.friends = Some(friends);
        self
    }

    /// `POST /v2/friend/facebook`: the token's Facebook friends become the user's friends
    /// (`reset` first removes the user's relationships but blocks). Nakama's answers: an
    /// empty token is code 3 `Facebook token is required.`; a token Facebook refuses (or any
    /// failure to list the friends) code 16 `Could not authenticate Facebook profile.`.
    pub async fn import_facebook_friends(
        &self,
        actor: &Actor,
        token: &str,
        reset: bool,
    ) -> Result<(), CoreError> {
        if token.is_empty() {
            return Err(CoreError::invalid("Facebook token is required."));
        }
        let friends = self.friends()?;
        let max = friends.config().max_friends;
        let ids = friend_lists::facebook(&self.verifier, token, max)
            .await
            .map_err(|e| {
                tracing::info!(error = %e, "could not list facebook friends");
                CoreError::unauthenticated("Could not authenticate Facebook profile.")
            })?;
        friends.import(actor, Provider::Facebook, ids, reset).await
    }

    /// `POST /v2/friend/steam`: the session ticket is checked with Steam, then the Steam
    /// friends of its user become the user's friends. Nakama's answers: Steam not configured
    /// is code 9, an empty ticket code 3 `Steam token is required.`, a refused ticket or a
    /// failed friend listing code 16 `Could not authenticate Steam profile.` (a private
    /// friend list is an empty one).
    pub async fn import_steam_friends(
        &self,
        actor: &Actor,
        token: &str,
        reset: bool,
    ) -> Result<(), CoreError> {
        if !self.is_configured(Provider::Steam) {
            return Err(status(
                Code::FailedPrecondition,
                "Steam authentication is not configured.",
            ));
        }
        if token.is_empty() {
            return Err(CoreError::invalid("Steam token is required."));
        }
        let friends = self.friends()?;
        let credential = Credential::Steam {
            token: token.to_owned(),
        };
        let unverified = || CoreError::unauthenticated("Could not authenticate Steam profile.");
        let profile = self.verifier.verify(&credential).await.map_err(|e| {
            tracing::info!(error = %e, "could not verify a steam ticket for a friend import");
            unverified()
        })?;
        let max = friends.config().max_friends;
        let ids = friend_lists::steam(&self.verifier, &profile.id, max)
            .await
            .map_err(|e| {
                tracing::info!(error = %e, "could not list steam friends");
                unverified()
            })?;
        friends.import(actor, Provider::Steam, ids, reset).await
    }

    /// `sync` after a sign-in or link: imports without reset; failures are logged only
    /// (Nakama ignores them). Facebook needs an access token the Graph API accepted (a
    /// Limited Login token cannot list friends); other providers import nothing.
    pub(super) async fn sync_friends(
        &self,
        actor: &Actor,
        provider: Provider,
        profile: &Profile,
        token: &str,
    ) {
        let Some(friends) = &self.friends else {
            return;
        };
        let max = friends.config().max_friends;
        let listed = match provider {
            Provider::Facebook if profile.access_token => {
                friend_lists::facebook(&self.verifier, token, max).await
            }
            Provider::Steam => friend_lists::steam(&self.verifier, &profile.id, max).await,
            _ => return,
        };
        let result = match listed {
            Ok(ids) => friends.import(actor, provider, ids, false).await,
            Err(e) => {
                tracing::info!(?provider, error = %e, "could not list friends to import");
                return;
            }
        };
        if let Err(e) = result {
            tracing::warn!(?provider, error = %e, "friend import after sign-in failed");
        }
    }

    fn friends(&self) -> Result<&Friends, CoreError> {
        self.friends.as_deref().ok_or(CoreError::Unavailable {
            operation: "importing friends (the server runs without friends)",
        })
    }
}
