//! Persistent state of MetaFi: users and their social identities, revoked sessions, storage
//! objects, channel messages, notifications, friends, groups, wallets and their ledger,
//! leaderboards.
//!
//! The traits here are the contract; each backend crate implements all of them and must pass
//! the same conformance suite. Callers hold an `Arc<dyn Storage>` and never branch on the
//! backend.
//!
//! Durability: every method that writes returns only after its transaction is durable on disk.
//! Backends batch concurrent writes into shared commits (group commit) so that throughput is not
//! bounded by one flush per request; reads never wait behind writes.
//!
//! The backends live in their own crates (`metafi-storage-sqlite`, `metafi-storage-postgres`);
//! [`support`] holds the rules they share (object versions and permissions, cursors), [`text`]
//! what text they accept (no NUL, Nakama's column widths), and the
//! `conformance` feature adds the suite both must pass. Design: `docs/STORAGE.md`.
//!
//! Must not depend on: HTTP, the realtime protocol, the runtimes, any database driver. Key
//! types: [`Storage`],
//! [`StorageError`], [`User`], [`StorageObject`], [`ChannelMessage`].

mod account;
#[cfg(feature = "conformance")]
pub mod conformance;
mod console;
mod error;
mod friend;
mod friend_import;
mod group;
pub mod group_support;
mod leaderboard;
mod message;
mod notification;
mod object;
mod purchase;
mod session;
mod social;
pub mod support;
pub mod text;
mod tournament;
mod wallet;

pub use account::{
    Account, AccountStore, AccountUpdate, AuthUser, IdentityRef, NewIdentity, NewUser, Unlink, User,
};
pub use console::{AuditEntry, ConsoleMfaUpdate, ConsoleStore, ConsoleUser, ConsoleUserChange};
pub use error::{Conflict, StorageError};
pub use friend::{
    AddOutcome, EdgeWrite, Friend, FriendCursor, FriendOfFriend, FriendPage, FriendState,
    FriendStore, distinct_ids,
};
pub use friend_import::{FriendImport, FriendImportStore, import_metadata};
pub use group::{
    Group, GroupFilter, GroupMember, GroupMemberPage, GroupPage, GroupStore, GroupUpdate,
    MemberChange, MembershipOutcome, MembershipRefusal, NewGroup, UserGroup, UserGroupPage,
    state as group_state,
};
pub use leaderboard::{
    Leaderboard, LeaderboardRecord, LeaderboardStore, Operator, RankEntry, RecordQuery,
    RecordWrite, RecordWritten, SortOrder, apply_operator, initial_scores,
};
pub use message::{ChannelMessage, Direction, MessagePage, MessageStore};
pub use notification::{
    MAX_SUBJECT_CHARS, NotificationPosition, NotificationStore, NotificationUpdate,
    StoredNotification, check_notifications, check_updates as check_notification_updates,
};
pub use object::{
    Caller, ObjectAck, ObjectDelete, ObjectId, ObjectPage, ObjectStore, ObjectWrite, StorageObject,
    VersionCheck,
};
pub use purchase::{
    IapCursor, IapPage, NewPurchase, NewSubscription, Purchase, PurchaseStore, Subscription,
    UpsertedPurchase, check_new_purchase, check_new_subscription, dedup_purchases, iap_page,
};
pub use session::{Revocation, SessionStore, UserRevocation};
pub use social::{
    NewSocialUser, Provider, SocialIds, SocialProfile, SocialStore, check_new_social_user,
    check_social_id, check_social_profile, lookup_social_ids,
};
pub use tournament::{
    JoinOutcome, NO_MAX_SIZE, TournamentPlan, TournamentRefusal, TournamentStore, TournamentWrite,
    TournamentWritten, has_max_size, plan_tournament_write,
};
pub use wallet::{
    Balances, LedgerCursor, LedgerItem, LedgerPage, MultiResult, MultiUpdate, WalletChange,
    WalletResult, WalletStore, apply_change, balances_text, merge_metadata, parse_balances,
};

use async_trait::async_trait;

/// Everything the server persists, behind one object.
#[async_trait]
pub trait Storage:
    AccountStore
    + SessionStore
    + ObjectStore
    + MessageStore
    + NotificationStore
    + FriendStore
    + FriendImportStore
    + GroupStore
    + WalletStore
    + LeaderboardStore
    + SocialStore
    + PurchaseStore
    + TournamentStore
    + ConsoleStore
    + 'static
{
    /// A short name for logs and metrics: `"sqlite"` or `"postgres"`.
    fn backend_name(&self) -> &'static str;

    /// Flushes pending writes and closes connections. Writes issued after this fail with
    /// `StorageError::Closed`.
    async fn close(&self);

    /// Counters of the write path, to observe group commit (see [`StorageStats`]).
    fn stats(&self) -> StorageStats;
}

/// Monotonic counters of a backend's write path since it was opened.
///
/// `commits < writes` shows that concurrent writes shared commits (group commit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StorageStats {
    /// Write requests answered (applied or rejected).
    pub writes: u64,
    /// Transactions committed by the write path.
    pub commits: u64,
}

impl std::fmt::Debug for dyn Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Storage({})", self.backend_name())
    }
}
