//! Friends imported from a social provider (Nakama's `importFacebookFriends` and
//! `importSteamFriends`): the users linked to the provider's ids of the importer's friends
//! become mutual friends, and each is told that their friend has joined the game. The
//! provider's list comes from `SocialSignIn`; this holds the rule.

use metafi_proto::Code;
use metafi_storage::{FriendImport, Provider, StorageError};
use tracing::warn;

use super::{Actor, Friends, notification};
use crate::CoreError;
use crate::notify::codes;

/// What Nakama's friend-import notification says.
const JOINED: &str = "Your friend has just joined the game";

impl Friends {
    /// Makes `actor` friends with the users linked to `provider_ids` (the provider's ids of
    /// their friends), after removing their relationships but blocks when `reset` is set, in
    /// one transaction; then tells each new friend (code -6, persistent, sender the actor,
    /// content `{"username": …}`). Nothing to import and no reset: nothing happens, as
    /// Nakama. A storage failure is Nakama's `Error importing <Provider> friends.` (code 13).
    pub async fn import(
        &self,
        actor: &Actor,
        provider: Provider,
        provider_ids: Vec<String>,
        reset: bool,
    ) -> Result<(), CoreError> {
        if provider_ids.is_empty() && !reset {
            return Ok(());
        }
        let import = FriendImport {
            user_id: actor.id,
            provider,
            provider_ids,
            reset,
            now_ms: self.clock.now_ms(),
            max_edges: self.config.max_friends,
        };
        let friends = self
            .store
            .import_friends(import)
            .await
            .map_err(|e| import_failed(provider, e))?;
        let notifications = friends
            .into_iter()
            .map(|friend| notification(actor, friend, codes::FRIEND_JOIN_GAME, JOINED.to_owned()))
            .collect();
        self.send(notifications).await;
        Ok(())
    }
}

fn import_failed(provider: Provider, error: StorageError) -> CoreError {
    if matches!(error, StorageError::Closed) {
        return CoreError::Unavailable {
            operation: "importing friends",
        };
    }
    warn!(%error, ?provider, "friend import failed");
    let name = match provider {
        Provider::Steam => "Steam",
        _ => "Facebook",
    };
    CoreError::Status {
        code: Code::Internal,
        message: format!("Error importing {name} friends."),
    }
}
