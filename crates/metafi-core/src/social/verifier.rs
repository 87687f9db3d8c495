//! Checks a provider credential and answers who it proves the user is ([`Profile`]). Each
//! provider's rules are in its own module; this holds what they share: the configuration, the
//! HTTP client and the key sets.

use std::sync::Arc;

use super::fetch::Fetcher;
use super::jwks::KeySet;
use super::{Credential, SocialConfig, VerifyError, apple, facebook, game_center, google};
use super::{instant_game, steam};
use crate::Clock;

/// What a verified credential says about the user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    /// The provider's id of the user (the `users` column value).
    pub id: String,
    pub display_name: String,
    pub avatar_url: String,
    pub email: String,
    /// The credential is a Facebook access token the Graph API accepted (not a Limited Login
    /// id token): only such a token can list the user's friends (Nakama imports with it
    /// only then when linking).
    pub access_token: bool,
}

#[derive(Debug)]
pub(crate) struct Verifier {
    pub(crate) config: SocialConfig,
    pub(crate) fetcher: Fetcher,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) apple_keys: KeySet,
    pub(crate) google_keys: KeySet,
    pub(crate) facebook_keys: KeySet,
}

impl Verifier {
    pub(crate) fn new(config: SocialConfig, clock: Arc<dyn Clock>) -> Result<Self, reqwest::Error> {
        let fetcher = Fetcher::new(config.timeout, config.max_response_bytes)?;
        let refresh_ms = i64::try_from(config.keys_refresh.as_millis()).unwrap_or(i64::MAX);
        Ok(Verifier {
            apple_keys: KeySet::new("apple keys", config.apple_keys_url.clone(), refresh_ms),
            google_keys: KeySet::new("google keys", config.google_keys_url.clone(), refresh_ms),
            facebook_keys: KeySet::new(
                "facebook limited login keys",
                config.facebook_limited_keys_url.clone(),
                refresh_ms,
            ),
            config,
            fetcher,
            clock,
        })
    }

    /// Verifies a credential with its provider.
    pub(crate) async fn verify(&self, credential: &Credential) -> Result<Profile, VerifyError> {
        match credential {
            Credential::Apple { token } => apple::verify(self, token).await,
            Credential::Facebook { token } => facebook::verify(self, token).await,
            Credential::FacebookInstantGame { signed_player_info } => {
                instant_game::verify(&self.config, signed_player_info)
            }
            Credential::GameCenter(proof) => game_center::verify(self, proof).await,
            Credential::Google { token } => google::verify(self, token).await,
            Credential::Steam { token } => steam::verify(self, token).await,
        }
    }
}
