//! Groups and their memberships (Nakama's `groups` and `group_edge`).
//!
//! Permission rules (who may kick whom) live in the service; the store keeps the invariants
//! that must hold under concurrency: a group never counts more members than its `max_count`,
//! `edge_count` always equals its members (superadmins, admins, members; not join requests or
//! bans), and a membership change never removes a group's last superadmin.

use async_trait::async_trait;
use uuid::Uuid;

use crate::{StorageError, User};

/// Nakama's membership states (`GroupUserList.GroupUser.State`).
pub mod state {
    pub const SUPERADMIN: i32 = 0;
    pub const ADMIN: i32 = 1;
    pub const MEMBER: i32 = 2;
    pub const JOIN_REQUEST: i32 = 3;
    pub const BANNED: i32 = 4;

    /// Whether a state counts towards `edge_count` (and may chat in the group channel).
    pub const fn is_member(state: i32) -> bool {
        state >= SUPERADMIN && state <= MEMBER
    }
}

/// A stored group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub id: Uuid,
    pub creator_id: Uuid,
    pub name: String,
    pub description: String,
    pub avatar_url: String,
    pub lang_tag: String,
    /// JSON object text.
    pub metadata: String,
    pub open: bool,
    /// Members (states 0–2).
    pub edge_count: i32,
    pub max_count: i32,
    pub create_time_ms: i64,
    pub update_time_ms: i64,
}

/// A group to create; its creator becomes its superadmin (`edge_count` 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewGroup {
    pub id: Uuid,
    pub creator_id: Uuid,
    /// The user who becomes superadmin (Nakama's `user_id`; usually the creator).
    pub superadmin_id: Uuid,
    pub name: String,
    pub description: String,
    pub avatar_url: String,
    pub lang_tag: String,
    pub metadata: String,
    pub open: bool,
    pub max_count: i32,
    pub now_ms: i64,
}

/// Fields to change; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupUpdate {
    pub creator_id: Option<Uuid>,
    pub name: Option<String>,
    pub description: Option<String>,
    pub avatar_url: Option<String>,
    pub lang_tag: Option<String>,
    pub metadata: Option<String>,
    pub open: Option<bool>,
    pub max_count: Option<i32>,
}

impl GroupUpdate {
    pub fn is_empty(&self) -> bool {
        *self == GroupUpdate::default()
    }
}

/// One membership change, applied only if the user's state is still `from` (compare and set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemberChange {
    pub user_id: Uuid,
    /// The state the user must be in now; `None`: no membership.
    pub from: Option<i32>,
    /// The state to set; `None`: remove the membership.
    pub to: Option<i32>,
}

/// Why a batch of membership changes was refused as a whole (nothing written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MembershipRefusal {
    /// No such group.
    GroupNotFound,
    /// A change would make the members exceed `max_count`.
    GroupFull,
}

/// The outcome of [`GroupStore::change_members`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MembershipOutcome {
    /// Written; one flag per change: applied, or skipped because the user's state was no longer
    /// `from` or the change would have removed the last superadmin.
    Applied(Vec<bool>),
    Refused(MembershipRefusal),
}

/// Filters of [`GroupStore::list_groups`] (Nakama's `ListGroups`). A name prefix cannot be
/// combined with the others (the service refuses it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupFilter {
    /// Case-insensitive prefix of the name (Nakama: `name ILIKE 'prefix%'` when the client
    /// sends `prefix%`, an exact case-insensitive match otherwise).
    pub name: Option<String>,
    pub lang_tag: Option<String>,
    pub open: Option<bool>,
    /// At most this many members.
    pub max_members: Option<i32>,
}

/// A page of groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupPage {
    pub groups: Vec<Group>,
    pub cursor: Option<String>,
}

/// A user of a group with its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    pub user: User,
    pub state: i32,
}

/// A page of a group's users, ordered by state then by when they got it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMemberPage {
    pub members: Vec<GroupMember>,
    pub cursor: Option<String>,
}

/// A group of a user with the user's state in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserGroup {
    pub group: Group,
    pub state: i32,
}

/// A page of a user's groups, ordered by state then by when the user got it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserGroupPage {
    pub groups: Vec<UserGroup>,
    pub cursor: Option<String>,
}

/// Persistent groups and memberships.
#[async_trait]
pub trait GroupStore: Send + Sync {
    /// Creates a group with its superadmin. `Conflict { GroupName }` when the name is taken.
    async fn create_group(&self, group: NewGroup) -> Result<Group, StorageError>;

    /// Changes the given fields. `NotFound` when no such group exists; `Conflict { GroupName }`
    /// when the new name is taken.
    async fn update_group(
        &self,
        group_id: Uuid,
        update: GroupUpdate,
        now_ms: i64,
    ) -> Result<(), StorageError>;

    /// Deletes a group and all its memberships. Returns whether it existed.
    async fn delete_group(&self, group_id: Uuid) -> Result<bool, StorageError>;

    /// The groups with these ids that exist, in no particular order.
    async fn groups_by_id(&self, ids: &[Uuid]) -> Result<Vec<Group>, StorageError>;

    /// Up to `count` groups starting at a random id (wrapping around), without repeats.
    async fn random_groups(&self, count: usize) -> Result<Vec<Group>, StorageError>;

    /// Lists groups matching `filter`, `limit` per page.
    async fn list_groups(
        &self,
        filter: &GroupFilter,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<GroupPage, StorageError>;

    /// The state of `user_id` in `group_id`, if any.
    async fn member_state(
        &self,
        group_id: Uuid,
        user_id: Uuid,
    ) -> Result<Option<i32>, StorageError>;

    /// The users of a group having membership states up to `JOIN_REQUEST` (or exactly
    /// `state`), ordered by state, then by when they got it.
    async fn list_group_members(
        &self,
        group_id: Uuid,
        state: Option<i32>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<GroupMemberPage, StorageError>;

    /// The groups of a user with states up to `JOIN_REQUEST` (or exactly `state`), ordered
    /// by state, then by when the user got it.
    async fn list_user_groups(
        &self,
        user_id: Uuid,
        state: Option<i32>,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<UserGroupPage, StorageError>;

    /// The ids of the group's users in these states.
    async fn member_ids_in_states(
        &self,
        group_id: Uuid,
        states: &[i32],
    ) -> Result<Vec<Uuid>, StorageError>;

    /// Applies membership changes in order, atomically, keeping the store's invariants: each
    /// change is skipped unless the user's state is `from` and it does not remove the group's
    /// last superadmin; a change that adds a member to a group already at `max_count`
    /// refuses the whole batch (`GroupFull`), as does a missing group.
    async fn change_members(
        &self,
        group_id: Uuid,
        changes: Vec<MemberChange>,
        now_ms: i64,
    ) -> Result<MembershipOutcome, StorageError>;
}
