//! Friend relationships: directed edges between users, as Nakama's `user_edge`.
//!
//! Every relationship is two edges, one seen from each side, written in one transaction: a
//! friendship is `Friend` both ways, an invite is `InviteSent` from the inviter and
//! `InviteReceived` from the invitee. A block is one edge (`Blocked`, from the blocker); the
//! blocked user's edge is removed. Each edge keeps the `position` (creation time) that orders a
//! listing within one state.

use async_trait::async_trait;
use uuid::Uuid;

use crate::{StorageError, User};

/// The state of an edge, with Nakama's numbers (`Friend.State`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FriendState {
    /// Mutual friends.
    Friend = 0,
    /// This user invited the other one, who has not accepted yet.
    InviteSent = 1,
    /// The other user invited this one.
    InviteReceived = 2,
    /// This user blocked the other one.
    Blocked = 3,
}

impl FriendState {
    /// The state with Nakama's number, if there is one.
    pub fn from_number(n: i64) -> Option<FriendState> {
        match n {
            0 => Some(FriendState::Friend),
            1 => Some(FriendState::InviteSent),
            2 => Some(FriendState::InviteReceived),
            3 => Some(FriendState::Blocked),
            _ => None,
        }
    }

    /// Nakama's number for the state.
    pub fn number(self) -> i32 {
        self as i32
    }
}

/// One edge seen from its source: the other user and the relationship.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Friend {
    /// The other user (the edge's destination).
    pub user: User,
    pub state: FriendState,
    /// When the edge was created (ms since the epoch): the listing order within a state.
    pub position: i64,
    /// The edge's last change (invite, accept, block), ms since the epoch.
    pub update_time_ms: i64,
    /// JSON object text the source attached when adding (`{}` when none).
    pub metadata: String,
}

/// Where a friend listing resumes: after this edge, in `(state, position, user id)` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FriendCursor {
    pub state: FriendState,
    pub position: i64,
    pub user_id: Uuid,
}

/// One page of a user's edges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FriendPage {
    pub friends: Vec<Friend>,
    /// Set when more edges follow the last one returned.
    pub next: Option<FriendCursor>,
}

/// What adding one user did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddOutcome {
    /// A new invite: the caller's edge is `InviteSent`, the other's `InviteReceived`.
    Invited,
    /// The other user had invited the caller: both edges are now `Friend`.
    Accepted,
    /// Nothing changed: already friends or invited, the caller blocked them, they blocked the
    /// caller, the user does not exist, or the other user holds the most edges allowed.
    Unchanged,
}

/// The answer to adding or blocking several users at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EdgeWrite<T> {
    /// Applied; one answer per distinct id, in the order first given.
    Done(T),
    /// The caller would hold more than the allowed number of edges; nothing was written.
    OverLimit,
}

/// A friend of one of the user's friends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct FriendOfFriend {
    /// The user's friend through whom this one was found.
    pub referrer: Uuid,
    pub user_id: Uuid,
}

/// Persistent friend relationships.
#[async_trait]
pub trait FriendStore: Send + Sync {
    /// Adds each user (duplicates count once) as `user_id`'s friend in one transaction:
    /// accepts an invite they sent, or invites them. `metadata` (a JSON object) is stored on
    /// the caller's edge of a new invite, or merged (top-level keys) into it on accept. A user
    /// the caller blocked, or who blocked the caller, is left alone. Refused with `OverLimit`
    /// when the new invites would give the caller more than `max_edges` edges; a user already
    /// holding `max_edges` edges is left alone.
    async fn add_friends(
        &self,
        user_id: Uuid,
        ids: &[Uuid],
        metadata: &str,
        now_ms: i64,
        max_edges: usize,
    ) -> Result<EdgeWrite<Vec<(Uuid, AddOutcome)>>, StorageError>;

    /// Removes the relationship with each user in one transaction: the caller's edge whatever
    /// its state, and the other user's unless it is a block. Returns the users whose edges
    /// were both removed (friends, invites either way): Nakama tells them.
    async fn delete_friends(&self, user_id: Uuid, ids: &[Uuid]) -> Result<Vec<Uuid>, StorageError>;

    /// Blocks each existing user in one transaction: the caller's edge becomes (or is created
    /// as) `Blocked`, and the other user's edge is removed unless they blocked the caller too.
    /// `OverLimit` when new edges would give the caller more than `max_edges`.
    async fn block_friends(
        &self,
        user_id: Uuid,
        ids: &[Uuid],
        now_ms: i64,
        max_edges: usize,
    ) -> Result<EdgeWrite<()>, StorageError>;

    /// Replaces the metadata (a JSON object) of `user_id`'s edge to `friend_id`, whatever its
    /// state, leaving its state, position and update time alone (Nakama's
    /// `UpdateFriendMetadata`). Returns whether such an edge exists; none is not an error.
    async fn update_friend_metadata(
        &self,
        user_id: Uuid,
        friend_id: Uuid,
        metadata: &str,
    ) -> Result<bool, StorageError>;

    /// Up to `limit` of the user's edges in `(state, position, user id)` order, only those in
    /// `state` when given, after `after` when given.
    async fn list_friends(
        &self,
        user_id: Uuid,
        state: Option<FriendState>,
        limit: usize,
        after: Option<FriendCursor>,
    ) -> Result<FriendPage, StorageError>;

    /// The user's edges to each of `ids` that has one (any order).
    async fn friends_by_id(&self, user_id: Uuid, ids: &[Uuid])
    -> Result<Vec<Friend>, StorageError>;

    /// Up to `limit` friends of the user's friends who are not the user nor already their
    /// friends, in `(referrer, user id)` order after `after`. A user reached through two
    /// friends appears once per friend, as in Nakama.
    async fn friends_of_friends(
        &self,
        user_id: Uuid,
        limit: usize,
        after: Option<FriendOfFriend>,
    ) -> Result<Vec<FriendOfFriend>, StorageError>;
}

/// Distinct ids in the order first given (Nakama collapses duplicates of one request).
pub fn distinct_ids(ids: &[Uuid]) -> Vec<Uuid> {
    let mut seen = std::collections::HashSet::with_capacity(ids.len());
    ids.iter().copied().filter(|id| seen.insert(*id)).collect()
}
