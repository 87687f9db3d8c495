//! Groups (Nakama's `core_group.go`): creating, updating, deleting and listing groups, and
//! the membership rules — who may join, leave, add, kick, ban, promote and demote whom.
//!
//! REST handlers and `nk` functions both call [`Groups`]; errors carry Nakama's REST texts
//! and codes. The store keeps the invariants that must hold under concurrency (`max_count`,
//! the last superadmin, the member count); this service decides what each call asks of it.
//!
//! Files: `mod.rs` (the service, groups themselves), `members.rs` (membership calls),
//! `channel.rs` (system messages in the group's chat channel), `view.rs` (storage rows to wire
//! types).

mod channel;
mod members;
mod view;

use std::sync::Arc;

use async_trait::async_trait;
use metafi_proto::{Code, api};
use metafi_storage::{
    Conflict, Group, GroupFilter, GroupMemberPage, GroupUpdate, NewGroup, Storage, StorageError,
    UserGroupPage, group_state,
};
use uuid::Uuid;

use crate::{ChannelPush, Clock, CoreError, GroupMembership, NoChannelPush, Notifier, OnlineUsers};

pub use view::group_view;

/// Nakama's default `max_count` of a new group.
pub const DEFAULT_MAX_COUNT: i32 = 100;

/// Who acts on a group: a signed-in user (permissions apply) or server code (Nakama's nil
/// caller: every permission granted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actor {
    User(Uuid),
    Server,
}

/// A group to create.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreateGroup {
    pub name: String,
    pub description: String,
    /// Empty: `en`.
    pub lang_tag: String,
    pub avatar_url: String,
    /// JSON object text; empty: `{}`.
    pub metadata: String,
    pub open: bool,
    /// 0: [`DEFAULT_MAX_COUNT`].
    pub max_count: i32,
}

/// Filters and paging of [`Groups::list`], as `GET /v2/group` takes them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListGroups {
    pub name: String,
    pub lang_tag: String,
    pub open: Option<bool>,
    /// At most this many members.
    pub members: Option<i32>,
    /// `None`: 1, as Nakama.
    pub limit: Option<i32>,
    pub cursor: String,
}

/// The groups service.
#[derive(Debug)]
pub struct Groups {
    store: Arc<dyn Storage>,
    notifier: Arc<dyn Notifier>,
    online: Arc<dyn OnlineUsers>,
    clock: Arc<dyn Clock>,
    /// The sessions present in group channels (system messages, removed users).
    channel_push: Arc<dyn ChannelPush>,
}

impl Groups {
    pub fn new(
        store: Arc<dyn Storage>,
        notifier: Arc<dyn Notifier>,
        online: Arc<dyn OnlineUsers>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Groups {
            store,
            notifier,
            online,
            clock,
            channel_push: Arc::new(NoChannelPush),
        }
    }

    /// Delivers the group channel's system messages through `push` and takes removed users
    /// out of the channel (without one, messages are only stored).
    pub fn with_channel_push(mut self, push: Arc<dyn ChannelPush>) -> Self {
        self.channel_push = push;
        self
    }

    /// Creates a group whose superadmin is `user_id` and creator `creator_id` (the same for
    /// clients). Nakama's `CreateGroup`.
    pub async fn create(
        &self,
        user_id: Uuid,
        creator_id: Uuid,
        request: CreateGroup,
    ) -> Result<api::Group, CoreError> {
        if user_id.is_nil() {
            return Err(CoreError::invalid("Group creator user ID not valid."));
        }
        if request.name.is_empty() {
            return Err(CoreError::invalid("Group name must be set."));
        }
        let max_count = match request.max_count {
            0 => DEFAULT_MAX_COUNT,
            n if n < 1 => {
                return Err(CoreError::invalid("Group max count must be >= 1 when set."));
            }
            n => n,
        };
        let metadata = metadata_or_empty_object(request.metadata)?;
        let known = self
            .store
            .users_by_id(&[user_id])
            .await
            .map_err(|e| CoreError::storage("looking up a group's creator", e))?;
        if known.is_empty() {
            return Err(CoreError::invalid("Group creator user ID not valid."));
        }
        let new = NewGroup {
            id: Uuid::new_v4(),
            creator_id,
            superadmin_id: user_id,
            name: request.name,
            description: request.description,
            avatar_url: request.avatar_url,
            lang_tag: if request.lang_tag.is_empty() {
                "en".to_owned()
            } else {
                request.lang_tag
            },
            metadata,
            open: request.open,
            max_count,
            now_ms: self.clock.now_ms(),
        };
        match self.store.create_group(new).await {
            Ok(group) => Ok(group_view(group)),
            Err(StorageError::Conflict {
                what: Conflict::GroupName,
            }) => Err(CoreError::already_exists("Group name is in use.")),
            Err(e) => Err(text_error(e, "creating a group")),
        }
    }

    /// Changes a group's fields. A user must be its superadmin or an admin. Nakama's
    /// `UpdateGroup`; `max_count` and `creator_id` only from server code.
    pub async fn update(
        &self,
        actor: Actor,
        group_id: Uuid,
        mut update: GroupUpdate,
    ) -> Result<(), CoreError> {
        if update.name.as_deref() == Some("") {
            return Err(CoreError::invalid("Group name cannot be empty."));
        }
        if update.lang_tag.as_deref() == Some("") {
            return Err(CoreError::invalid("Group language cannot be empty."));
        }
        if let Actor::User(user_id) = actor
            && !self
                .has_state_at_most(group_id, user_id, group_state::ADMIN)
                .await?
        {
            return Err(CoreError::not_found(
                "Group not found or you're not allowed to update.",
            ));
        }
        if update.max_count.is_some_and(|n| n < 1) {
            update.max_count = None;
        }
        if let Some(metadata) = update.metadata.take() {
            update.metadata = Some(metadata_or_empty_object(metadata)?);
        }
        if update.is_empty() {
            return Err(CoreError::invalid("Specify at least one field to update."));
        }
        match self
            .store
            .update_group(group_id, update, self.clock.now_ms())
            .await
        {
            Ok(()) => Ok(()),
            Err(StorageError::NotFound { .. }) => {
                Err(CoreError::invalid("No new fields in group update."))
            }
            Err(StorageError::Conflict {
                what: Conflict::GroupName,
            }) => Err(CoreError::invalid("Group name is in use.")),
            Err(e) => Err(text_error(e, "updating a group")),
        }
    }

    /// Deletes a group with its memberships. A user must be its superadmin. Nakama's
    /// `DeleteGroup`: deleting a group that does not exist is not an error for server code.
    pub async fn delete(&self, actor: Actor, group_id: Uuid) -> Result<(), CoreError> {
        if let Actor::User(user_id) = actor
            && !self
                .has_state_at_most(group_id, user_id, group_state::SUPERADMIN)
                .await?
        {
            return Err(CoreError::invalid(
                "Group not found or you're not allowed to delete.",
            ));
        }
        self.store
            .delete_group(group_id)
            .await
            .map_err(|e| CoreError::storage("deleting a group", e))?;
        // Nakama closes the group's chat channel after a delete.
        self.close_channel(group_id);
        Ok(())
    }

    /// The groups with these ids that exist.
    pub async fn by_id(&self, ids: &[Uuid]) -> Result<Vec<api::Group>, CoreError> {
        let groups = self
            .store
            .groups_by_id(ids)
            .await
            .map_err(|e| CoreError::storage("reading groups", e))?;
        Ok(groups.into_iter().map(group_view).collect())
    }

    /// Up to `count` groups picked at random.
    pub async fn random(&self, count: usize) -> Result<Vec<api::Group>, CoreError> {
        let groups = self
            .store
            .random_groups(count)
            .await
            .map_err(|e| CoreError::storage("picking random groups", e))?;
        Ok(groups.into_iter().map(group_view).collect())
    }

    /// `GET /v2/group`: groups by name pattern, or by language, open and member count.
    pub async fn list(&self, request: ListGroups) -> Result<api::GroupList, CoreError> {
        let limit = list_limit(request.limit, 1)?;
        let name = request.name.trim_start_matches(['%', ' ']).to_owned();
        if !name.is_empty()
            && (!request.lang_tag.is_empty()
                || request.open.is_some()
                || request.members.is_some_and(|m| m > -1))
        {
            return Err(CoreError::invalid(
                "name filter cannot be combined with any other filter",
            ));
        }
        let filter = GroupFilter {
            name: (!name.is_empty()).then_some(name),
            lang_tag: (!request.lang_tag.is_empty()).then_some(request.lang_tag),
            open: request.open,
            max_members: request.members.filter(|m| *m > -1),
        };
        let cursor = (!request.cursor.is_empty()).then_some(request.cursor.as_str());
        let page = self
            .store
            .list_groups(&filter, limit, cursor)
            .await
            .map_err(|e| match e {
                StorageError::Invalid { .. } => CoreError::invalid("Malformed cursor was used."),
                e => text_error(e, "listing groups"),
            })?;
        Ok(api::GroupList {
            groups: page.groups.into_iter().map(group_view).collect(),
            cursor: page.cursor.unwrap_or_default(),
        })
    }

    /// `GET /v2/group/{id}/user`: a group's users with their states (banned users only when
    /// asked for by state), each with whether it is online.
    pub async fn users(
        &self,
        group_id: Uuid,
        state: Option<i32>,
        limit: Option<i32>,
        cursor: &str,
    ) -> Result<api::GroupUserList, CoreError> {
        let limit = list_limit(limit, 100)?;
        let page = self.member_page(group_id, state, limit, cursor).await?;
        Ok(api::GroupUserList {
            group_users: page
                .members
                .into_iter()
                .map(|m| {
                    let online = self.online.is_online(m.user.id);
                    api::GroupUser {
                        user: api::User {
                            online,
                            ..crate::accounts::user_view(m.user)
                        },
                        state: m.state,
                    }
                })
                .collect(),
            cursor: page.cursor.unwrap_or_default(),
        })
    }

    /// A page of a group's users as stored rows, `limit` already bounded by the caller
    /// (server code may ask for up to 10,000).
    pub async fn member_page(
        &self,
        group_id: Uuid,
        state: Option<i32>,
        limit: usize,
        cursor: &str,
    ) -> Result<GroupMemberPage, CoreError> {
        let state = check_state(state)?;
        let cursor = (!cursor.is_empty()).then_some(cursor);
        self.store
            .list_group_members(group_id, state, limit, cursor)
            .await
            .map_err(|e| match e {
                StorageError::Invalid { .. } => CoreError::invalid("Cursor is invalid."),
                e => text_error(e, "listing a group's users"),
            })
    }

    /// `GET /v2/user/{id}/group`: a user's groups with its state in each.
    pub async fn user_groups(
        &self,
        user_id: Uuid,
        state: Option<i32>,
        limit: Option<i32>,
        cursor: &str,
    ) -> Result<api::UserGroupList, CoreError> {
        let limit = list_limit(limit, 100)?;
        let page = self.user_group_page(user_id, state, limit, cursor).await?;
        Ok(api::UserGroupList {
            user_groups: page
                .groups
                .into_iter()
                .map(|g| api::UserGroup {
                    group: group_view(g.group),
                    state: g.state,
                })
                .collect(),
            cursor: page.cursor.unwrap_or_default(),
        })
    }

    /// A page of a user's groups as stored rows.
    pub async fn user_group_page(
        &self,
        user_id: Uuid,
        state: Option<i32>,
        limit: usize,
        cursor: &str,
    ) -> Result<UserGroupPage, CoreError> {
        let state = check_state(state)?;
        let cursor = (!cursor.is_empty()).then_some(cursor);
        self.store
            .list_user_groups(user_id, state, limit, cursor)
            .await
            .map_err(|e| match e {
                StorageError::Invalid { .. } => CoreError::invalid("Cursor is invalid."),
                e => text_error(e, "listing a user's groups"),
            })
    }

    /// Whether `user_id` is online (for server code's views of group users).
    pub fn is_online(&self, user_id: Uuid) -> bool {
        self.online.is_online(user_id)
    }

    /// The stored groups with these ids (server code shapes them itself).
    pub async fn stored_by_id(&self, ids: &[Uuid]) -> Result<Vec<Group>, CoreError> {
        self.store
            .groups_by_id(ids)
            .await
            .map_err(|e| CoreError::storage("reading groups", e))
    }

    async fn state_of(&self, group_id: Uuid, user_id: Uuid) -> Result<Option<i32>, CoreError> {
        self.store
            .member_state(group_id, user_id)
            .await
            .map_err(|e| CoreError::storage("reading a group membership", e))
    }

    async fn has_state_at_most(
        &self,
        group_id: Uuid,
        user_id: Uuid,
        most: i32,
    ) -> Result<bool, CoreError> {
        Ok(self
            .state_of(group_id, user_id)
            .await?
            .is_some_and(|s| s <= most))
    }
}

#[async_trait]
impl GroupMembership for Groups {
    /// Superadmins, admins and members chat; join requests and banned users do not.
    async fn may_chat(&self, group_id: Uuid, user_id: Uuid) -> Result<bool, CoreError> {
        Ok(self
            .state_of(group_id, user_id)
            .await?
            .is_some_and(group_state::is_member))
    }
}

/// A listing's `limit`: `None` is `default`; otherwise 1 to 100 as in Nakama.
fn list_limit(limit: Option<i32>, default: usize) -> Result<usize, CoreError> {
    match limit {
        None => Ok(default),
        Some(n @ 1..=100) => Ok(usize::try_from(n).unwrap_or(default)),
        Some(_) => Err(CoreError::invalid(
            "Invalid limit - limit must be between 1 and 100.",
        )),
    }
}

fn check_state(state: Option<i32>) -> Result<Option<i32>, CoreError> {
    match state {
        Some(s) if !(group_state::SUPERADMIN..=group_state::BANNED).contains(&s) => Err(
            CoreError::invalid("Invalid state - state must be between 0 and 4."),
        ),
        other => Ok(other),
    }
}

/// Metadata must be a JSON object; empty text is `{}`.
fn metadata_or_empty_object(metadata: String) -> Result<String, CoreError> {
    if metadata.is_empty() {
        return Ok("{}".to_owned());
    }
    match serde_json::from_str::<serde_json::Value>(&metadata) {
        Ok(serde_json::Value::Object(_)) => Ok(metadata),
        _ => Err(CoreError::invalid("Metadata must be a valid JSON object.")),
    }
}

/// Text the store refused (a NUL, a column width) as the client's error; anything else
/// internal.
fn text_error(e: StorageError, operation: &'static str) -> CoreError {
    CoreError::storage(operation, e)
}

/// Nakama answers a few failures of server-side-only paths with an internal status and a
/// fixed text.
fn internal(message: &'static str) -> CoreError {
    CoreError::Status {
        code: Code::Internal,
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests;
