//! Friends, as Nakama keeps them: invites, accepts, blocks and deletes between users, listings
//! with cursors, friends of friends, and the notifications Nakama sends (a friend request to
//! the invitee, an accept to the inviter, a removal to the removed). REST handlers and `nk`
//! functions both call [`Friends`]; each edge validates its own input first (Nakama's REST
//! and runtime messages differ), then the rules here hold the same way for both.

#[cfg(test)]
mod block_chat_tests;
mod cursor;
mod import;
mod targets;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use metafi_proto::Code;
use metafi_proto::api;
use metafi_proto::format_timestamp_ms;
use metafi_storage::{AddOutcome, EdgeWrite, FriendState, Storage, StorageError, User};
use tracing::warn;
use uuid::Uuid;

use crate::accounts::user_view;
use crate::notify::{NewNotification, Notifier, codes};
use crate::{ChannelId, ChannelPush, Clock, CoreError, NoChannelPush, OnlineUsers};

pub use targets::{Messages, Op, RUNTIME_NOTHING_VALID, Targets};

/// Friends' limits (server config `[friends]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FriendsConfig {
    /// Most edges one user may hold: friends, invites sent and received, and blocks. Nakama
    /// has no bound; without one a user (or a script) could grow a listing without end.
    pub max_friends: usize,
}

impl Default for FriendsConfig {
    fn default() -> Self {
        FriendsConfig {
            max_friends: DEFAULT_MAX_FRIENDS,
        }
    }
}

/// The default of `friends.max_friends`.
pub const DEFAULT_MAX_FRIENDS: usize = 10_000;

/// Most friends one `GET /v2/friend` page holds, and its default (Nakama's).
pub const MAX_LIST_LIMIT: usize = 1000;
/// Most friends of friends one `GET /v2/friend/friends` page holds (Nakama's).
pub const MAX_OF_FRIENDS_LIMIT: usize = 100;
/// The default page of `GET /v2/friend/friends` (Nakama's).
pub const DEFAULT_OF_FRIENDS_LIMIT: usize = 10;

/// Most ids and usernames one add, delete or block may name (docs/LIMITS.md).
pub const MAX_TARGETS: usize = crate::MAX_USERS_PER_LOOKUP;

/// The user acting: their id, and their username (notifications carry it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub id: Uuid,
    pub username: String,
}

/// One relationship as a listing shows it: the stored edge and whether the other user is
/// online.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FriendView {
    pub friend: metafi_storage::Friend,
    pub online: bool,
}

/// A page of relationships; `cursor` is empty on the last page.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FriendListing {
    pub friends: Vec<FriendView>,
    pub cursor: String,
}

/// A friend of a friend, with whether they are online.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FriendOfFriendView {
    pub referrer: Uuid,
    pub user: User,
    pub online: bool,
}

/// A page of friends of friends; `cursor` is empty on the last page.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FriendsOfFriendsListing {
    pub friends_of_friends: Vec<FriendOfFriendView>,
    pub cursor: String,
}

#[derive(Debug)]
pub struct Friends {
    store: Arc<dyn Storage>,
    notifier: Arc<dyn Notifier>,
    online: Arc<dyn OnlineUsers>,
    clock: Arc<dyn Clock>,
    config: FriendsConfig,
    /// Ends direct chats on a block.
    channel_push: Arc<dyn ChannelPush>,
}

impl Friends {
    pub fn new(
        store: Arc<dyn Storage>,
        notifier: Arc<dyn Notifier>,
        online: Arc<dyn OnlineUsers>,
        clock: Arc<dyn Clock>,
        config: FriendsConfig,
    ) -> Self {
        Friends {
            store,
            notifier,
            online,
            clock,
            config,
            channel_push: Arc::new(NoChannelPush),
        }
    }

    /// Blocking a user takes both users out of their direct chat through `push`, as Nakama
    /// untracks the chat's stream.
    pub fn with_channel_push(mut self, push: Arc<dyn ChannelPush>) -> Self {
        self.channel_push = push;
        self
    }

    pub fn config(&self) -> FriendsConfig {
        self.config
    }

    /// A page of the user's relationships in (state, creation) order, only `state` when given.
    /// `limit` is 1..=[`MAX_LIST_LIMIT`]; the edges check it first with their own messages.
    pub async fn list(
        &self,
        user_id: Uuid,
        limit: usize,
        state: Option<FriendState>,
        cursor: &str,
    ) -> Result<FriendListing, CoreError> {
        let after = if cursor.is_empty() {
            None
        } else {
            let after = cursor::decode_list(cursor)?;
            // A cursor of another state filter (an old cursor with a changed filter).
            if state.is_some_and(|s| s != after.state) {
                return Err(cursor::invalid());
            }
            Some(after)
        };
        let page = self
            .store
            .list_friends(user_id, state, limit.clamp(1, MAX_LIST_LIMIT), after)
            .await
            .map_err(|e| internal("list friends", e))?;
        Ok(FriendListing {
            friends: self.views(page.friends),
            cursor: page.next.map(cursor::encode_list).unwrap_or_default(),
        })
    }

    /// `GET /v2/friend`: Nakama's REST checks, then [`Friends::list`].
    pub async fn list_for_client(
        &self,
        user_id: Uuid,
        limit: Option<i64>,
        state: Option<i64>,
        cursor: &str,
    ) -> Result<api::FriendList, CoreError> {
        let limit = match limit {
            None => MAX_LIST_LIMIT,
            Some(n) => usize::try_from(n)
                .ok()
                .filter(|n| (1..=MAX_LIST_LIMIT).contains(n))
                .ok_or_else(|| {
                    CoreError::invalid("Invalid limit - limit must be between 1 and 1000.")
                })?,
        };
        let state = match state {
            None => None,
            Some(n) => Some(FriendState::from_number(n).ok_or_else(|| {
                CoreError::invalid("Invalid state - state must be between 0 and 3.")
            })?),
        };
        let listing = self.list(user_id, limit, state, cursor).await?;
        Ok(api::FriendList {
            friends: listing.friends.into_iter().map(friend_view).collect(),
            cursor: listing.cursor,
        })
    }

    /// A page of friends of the user's friends who are neither the user nor their friends,
    /// in (referrer, user id) order. `limit` is 1..=1000 (the runtime's bound; REST checks 100).
    pub async fn friends_of_friends(
        &self,
        user_id: Uuid,
        limit: usize,
        cursor: &str,
    ) -> Result<FriendsOfFriendsListing, CoreError> {
        let after = if cursor.is_empty() {
            None
        } else {
            Some(cursor::decode_of_friends(cursor)?)
        };
        let limit = limit.clamp(1, MAX_LIST_LIMIT);
        let fail = |e| internal("list friends of friends", e);
        let mut found = self
            .store
            .friends_of_friends(user_id, limit.saturating_add(1), after)
            .await
            .map_err(fail)?;
        let cursor = if found.len() > limit {
            found.truncate(limit);
            found
                .last()
                .copied()
                .map(cursor::encode_of_friends)
                .unwrap_or_default()
        } else {
            String::new()
        };
        let mut ids: Vec<Uuid> = found.iter().map(|f| f.user_id).collect();
        ids.sort_unstable();
        ids.dedup();
        let users = self.store.users_by_id(&ids).await.map_err(fail)?;
        let friends_of_friends = found
            .into_iter()
            .filter_map(|f| {
                // A user deleted since the listing is skipped, as in Nakama.
                let user = users.iter().find(|u| u.id == f.user_id)?.clone();
                Some(FriendOfFriendView {
                    referrer: f.referrer,
                    online: self.online.is_online(user.id),
                    user,
                })
            })
            .collect();
        Ok(FriendsOfFriendsListing {
            friends_of_friends,
            cursor,
        })
    }

    /// `GET /v2/friend/friends`: Nakama's REST checks, then [`Friends::friends_of_friends`].
    pub async fn friends_of_friends_for_client(
        &self,
        user_id: Uuid,
        limit: Option<i64>,
        cursor: &str,
    ) -> Result<api::FriendsOfFriendsList, CoreError> {
        let limit = match limit {
            None => DEFAULT_OF_FRIENDS_LIMIT,
            Some(n) => usize::try_from(n)
                .ok()
                .filter(|n| (1..=MAX_OF_FRIENDS_LIMIT).contains(n))
                .ok_or_else(|| {
                    CoreError::invalid("Invalid limit - limit must be between 1 and 100.")
                })?,
        };
        let listing = self.friends_of_friends(user_id, limit, cursor).await?;
        Ok(api::FriendsOfFriendsList {
            friends_of_friends: listing
                .friends_of_friends
                .into_iter()
                .map(|f| api::FriendOfFriend {
                    referrer: f.referrer.to_string(),
                    user: api::User {
                        online: f.online,
                        ..user_view(f.user)
                    },
                })
                .collect(),
            cursor: listing.cursor,
        })
    }

    /// The user's relationship with each of `ids` that has one (`nk.users_get_friend_status`).
    pub async fn statuses(
        &self,
        user_id: Uuid,
        ids: &[Uuid],
    ) -> Result<Vec<FriendView>, CoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let friends = self
            .store
            .friends_by_id(user_id, ids)
            .await
            .map_err(|e| internal("read friend states", e))?;
        Ok(self.views(friends))
    }

    /// Adds friends: accepts their invites or invites them, and tells each. `metadata` is a
    /// JSON object (text) stored on the actor's edge; empty means none.
    pub async fn add(
        &self,
        actor: &Actor,
        targets: Targets,
        metadata: &str,
    ) -> Result<(), CoreError> {
        let metadata = metadata_object(metadata)?;
        let Some(ids) = self.resolve(targets, Op::Add).await? else {
            return Ok(());
        };
        let written = self
            .store
            .add_friends(
                actor.id,
                &ids,
                &metadata,
                self.clock.now_ms(),
                self.config.max_friends,
            )
            .await
            .map_err(|e| internal("add friends", e))?;
        let EdgeWrite::Done(outcomes) = written else {
            return Err(self.over_limit());
        };
        let notifications = outcomes
            .into_iter()
            .filter_map(|(id, outcome)| {
                let (code, subject) = match outcome {
                    AddOutcome::Invited => (
                        codes::FRIEND_REQUEST,
                        format!("{} wants to add you as a friend", actor.username),
                    ),
                    AddOutcome::Accepted => (
                        codes::FRIEND_ACCEPT,
                        format!("{} accepted your friend request", actor.username),
                    ),
                    AddOutcome::Unchanged => return None,
                };
                Some(notification(actor, id, code, subject))
            })
            .collect();
        self.send(notifications).await;
        Ok(())
    }

    /// Removes relationships (friends, invites either way, the actor's blocks) and tells the
    /// users whose friendship or invite was removed.
    pub async fn delete(&self, actor: &Actor, targets: Targets) -> Result<(), CoreError> {
        let Some(ids) = self.resolve(targets, Op::Delete).await? else {
            return Ok(());
        };
        let told = self
            .store
            .delete_friends(actor.id, &ids)
            .await
            .map_err(|e| internal("delete friends", e))?;
        let notifications = told
            .into_iter()
            .map(|id| {
                let subject = format!("{} removed you as a friend", actor.username);
                notification(actor, id, codes::FRIEND_REMOVE, subject)
            })
            .collect();
        self.send(notifications).await;
        Ok(())
    }

    /// Blocks users: the actor's edge becomes a block, the other side's edge goes.
    pub async fn block(&self, actor: &Actor, targets: Targets) -> Result<(), CoreError> {
        let Some(ids) = self.resolve(targets, Op::Block).await? else {
            return Ok(());
        };
        let written = self
            .store
            .block_friends(actor.id, &ids, self.clock.now_ms(), self.config.max_friends)
            .await
            .map_err(|e| internal("block friends", e))?;
        match written {
            EdgeWrite::Done(()) => {
                // The direct chat ends: both users leave it (Nakama's UntrackByStream), and
                // the blocked user cannot join it again (`Channels::resolve_join`).
                for id in ids {
                    self.channel_push.close(&ChannelId::direct(actor.id, id));
                }
                Ok(())
            }
            EdgeWrite::OverLimit => Err(self.over_limit()),
        }
    }

    /// Replaces the metadata of `user_id`'s edge to `friend_id` (server code's
    /// `nk.friend_metadata_update`, Nakama's `UpdateFriendMetadata`): whatever the edge's
    /// state, without touching its update time; no edge is not an error. `metadata` is a JSON
    /// object (text); empty means `{}`.
    pub async fn update_metadata(
        &self,
        user_id: Uuid,
        friend_id: Uuid,
        metadata: &str,
    ) -> Result<(), CoreError> {
        let metadata = metadata_object(metadata)?;
        self.store
            .update_friend_metadata(user_id, friend_id, &metadata)
            .await
            .map_err(|e| internal("update friend metadata", e))?;
        Ok(())
    }

    /// The ids of the targets (usernames looked up; unknown names skipped). `None` when there
    /// is nothing to do; an error when nothing valid was named and Nakama says so.
    async fn resolve(&self, targets: Targets, op: Op) -> Result<Option<Vec<Uuid>>, CoreError> {
        if targets.is_empty() {
            return Ok(None);
        }
        if targets.ids.len() + targets.usernames.len() > MAX_TARGETS {
            // Nakama has no cap; one request naming 100,000 users would hold one transaction
            // (and the writer) for all of them.
            return Err(CoreError::invalid(format!(
                "Too many users named: at most {MAX_TARGETS} ids and usernames together."
            )));
        }
        let mut ids = targets.ids;
        if !targets.usernames.is_empty() {
            let users = self
                .store
                .users_by_username(&targets.usernames)
                .await
                .map_err(|e| internal(op.operation(), e))?;
            ids.extend(users.into_iter().map(|u| u.id));
        }
        if ids.is_empty() {
            // Nakama's REST delete succeeds quietly here; everything else refuses.
            return match (op, targets.messages) {
                (Op::Delete, Messages::Rest) => Ok(None),
                _ => Err(targets::nothing_valid(targets.messages)),
            };
        }
        Ok(Some(ids))
    }

    fn over_limit(&self) -> CoreError {
        CoreError::Status {
            code: Code::FailedPrecondition,
            message: format!(
                "Friend limit reached: a user may hold at most {} friends, invites and blocks.",
                self.config.max_friends
            ),
        }
    }

    fn views(&self, friends: Vec<metafi_storage::Friend>) -> Vec<FriendView> {
        friends
            .into_iter()
            .map(|friend| FriendView {
                online: self.online.is_online(friend.user.id),
                friend,
            })
            .collect()
    }

    /// Nakama sends these after the write committed and ignores their failure (logged).
    async fn send(&self, notifications: Vec<NewNotification>) {
        if notifications.is_empty() {
            return;
        }
        if let Err(error) = self.notifier.notify(notifications).await {
            warn!(%error, "friend notifications not sent");
        }
    }
}

/// A relationship as `GET /v2/friend` shows it.
pub fn friend_view(view: FriendView) -> api::Friend {
    let FriendView { friend, online } = view;
    api::Friend {
        user: api::User {
            online,
            ..user_view(friend.user)
        },
        state: friend.state.number(),
        update_time: format_timestamp_ms(friend.update_time_ms),
        metadata: friend.metadata,
    }
}

fn notification(actor: &Actor, to: Uuid, code: i32, subject: String) -> NewNotification {
    NewNotification {
        user_id: to,
        subject,
        content: serde_json::json!({ "username": actor.username }).to_string(),
        code,
        sender_id: Some(actor.id),
        persistent: true,
    }
}

/// The metadata text stored: `{}` for none, else it must be a JSON object.
fn metadata_object(metadata: &str) -> Result<String, CoreError> {
    if metadata.is_empty() {
        return Ok("{}".to_owned());
    }
    match serde_json::from_str::<serde_json::Value>(metadata) {
        Ok(value) if value.is_object() && !metadata.contains('\0') => Ok(metadata.to_owned()),
        _ => Err(CoreError::invalid("Metadata must be a valid JSON object.")),
    }
}

/// A storage failure: "Error while trying to …" for the client (Nakama's text), the cause
/// logged.
fn internal(operation: &'static str, error: StorageError) -> CoreError {
    match error {
        StorageError::Closed => CoreError::Unavailable { operation },
        error => {
            warn!(%error, operation, "friends storage failure");
            CoreError::Status {
                code: Code::Internal,
                message: format!("Error while trying to {operation}."),
            }
        }
    }
}
