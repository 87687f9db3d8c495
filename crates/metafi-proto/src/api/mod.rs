//! REST request and response bodies (`/v2/...`), named as in Nakama's `api.proto`.

mod account;
mod channel;
mod event;
mod matchmaker;
mod notification;
mod party;
mod rpc;
mod session;
mod storage;

pub use account::{
    Account, AccountCustom, AccountDevice, AccountEmail, UpdateAccountRequest, User, Users,
};
pub use channel::{ChannelMessage, ChannelMessageList};
pub use event::Event;
pub use matchmaker::{MatchmakerCompletionStats, MatchmakerStats};
pub use notification::Notification;
pub use party::{Party, PartyList};
pub use rpc::Rpc;
pub use session::{Session, SessionLogoutRequest, SessionRefreshRequest};
pub use storage::{
    DeleteStorageObjectId, DeleteStorageObjectsRequest, ReadStorageObjectId,
    ReadStorageObjectsRequest, StorageObject, StorageObjectAck, StorageObjectAcks,
    StorageObjectList, StorageObjects, WriteStorageObject, WriteStorageObjectsRequest,
};

/// `skip_serializing_if` helper: protobuf JSON omits `false`.
pub(crate) fn is_false(value: &bool) -> bool {
    !*value
}
