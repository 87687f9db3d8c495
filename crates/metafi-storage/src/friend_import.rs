//! Friends imported from a social provider: Nakama's Facebook and Steam friend import. The
//! provider names the user's friends by their provider ids; every user linked to one of
//! those ids becomes a mutual friend, in one transaction with the optional reset.

use async_trait::async_trait;
use uuid::Uuid;

use crate::{Provider, StorageError};

/// One import, as Nakama's `importFacebookFriends` / `importSteamFriends` run it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FriendImport {
    /// Who imports.
    pub user_id: Uuid,
    /// Whose ids `provider_ids` are: Facebook or Steam (Nakama imports from those two only).
    pub provider: Provider,
    /// The provider's ids of the user's friends (as the provider listed them).
    pub provider_ids: Vec<String>,
    /// Remove the user's relationships first, except blocks either way (Nakama's
    /// `resetUserFriends`): the import then replaces the friend list.
    pub reset: bool,
    pub now_ms: i64,
    /// Most edges one user may hold (`friends.max_friends`): a new friendship is made only
    /// while both users hold fewer. Accepting an invite needs no room.
    pub max_edges: usize,
}

/// Imports friends from a provider.
#[async_trait]
pub trait FriendImportStore: Send + Sync {
    /// Runs the import in one transaction and answers the users that became the importer's
    /// friends (Nakama tells them), in the order of `provider_ids`. For each user linked to
    /// one of the ids (the importer excepted): an invite either way is accepted (both edges
    /// become friends, [`import_metadata`] merged into each edge's metadata); no edge either
    /// way makes both edges friends with that metadata; anything else (already friends, a
    /// block by either side) is left alone.
    async fn import_friends(&self, import: FriendImport) -> Result<Vec<Uuid>, StorageError>;
}

/// The metadata an imported friendship's edges carry, as Nakama's:
/// `{"provider":"facebook"}` / `{"provider":"steam"}`.
pub fn import_metadata(provider: Provider) -> String {
    let name = provider.column().trim_end_matches("_id");
    serde_json::json!({ "provider": name }).to_string()
}
