//! REST request and response bodies (`/v2/...`), named as in Nakama's `api.proto`.

mod account;
mod channel;
mod event;
mod friend;
mod group;
mod leaderboard;
mod matchmaker;
mod notification;
mod party;
mod purchase;
mod rpc;
mod session;
mod social;
mod storage;
mod tournament;

pub use account::{
    Account, AccountCustom, AccountDevice, AccountEmail, UpdateAccountRequest, User, Users,
};
pub use channel::{ChannelMessage, ChannelMessageList};
pub use event::Event;
pub use friend::{Friend, FriendList, FriendOfFriend, FriendsOfFriendsList};
pub use group::{
    CreateGroupRequest, Group, GroupList, GroupUser, GroupUserList, UpdateGroupRequest, UserGroup,
    UserGroupList,
};
pub use leaderboard::{LeaderboardRecord, LeaderboardRecordList, LeaderboardRecordWrite};
pub use matchmaker::{MatchmakerCompletionStats, MatchmakerStats};
pub use notification::{Notification, NotificationList};
pub use party::{Party, PartyList};
pub use purchase::{
    ListSubscriptionsRequest, SubscriptionList, ValidatePurchaseRequest, ValidatePurchaseResponse,
    ValidateSubscriptionResponse, ValidatedPurchase, ValidatedSubscription,
};
pub use rpc::Rpc;
pub use session::{Session, SessionLogoutRequest, SessionRefreshRequest};
pub use social::{
    AccountApple, AccountFacebook, AccountFacebookInstantGame, AccountGameCenter, AccountGoogle,
    AccountSteam, LinkSteamRequest,
};
pub use storage::{
    DeleteStorageObjectId, DeleteStorageObjectsRequest, ReadStorageObjectId,
    ReadStorageObjectsRequest, StorageObject, StorageObjectAck, StorageObjectAcks,
    StorageObjectList, StorageObjects, WriteStorageObject, WriteStorageObjectsRequest,
};
pub use tournament::{Tournament, TournamentList, TournamentRecordList};

/// `skip_serializing_if` helper: protobuf JSON omits `false`.
pub(crate) fn is_false(value: &bool) -> bool {
    !*value
}
