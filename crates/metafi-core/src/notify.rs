//! The seam through which a feature notifies users: friend requests and accepts, group join
//! requests, single-socket kicks. Features hold an `Arc<dyn Notifier>` and never know how
//! notifications are stored or pushed; the notifications service implements it (stored when
//! persistent, pushed live to every socket of the user).

use std::fmt;

use async_trait::async_trait;
use uuid::Uuid;

use crate::CoreError;

/// Nakama's reserved notification codes (below zero: sent by the server itself).
pub mod codes {
    pub const DM_REQUEST: i32 = -1;
    pub const FRIEND_REQUEST: i32 = -2;
    pub const FRIEND_ACCEPT: i32 = -3;
    pub const GROUP_ADD: i32 = -4;
    pub const GROUP_JOIN_REQUEST: i32 = -5;
    pub const FRIEND_JOIN_GAME: i32 = -6;
    pub const SINGLE_SOCKET: i32 = -7;
    pub const USER_BANNED: i32 = -8;
    pub const FRIEND_REMOVE: i32 = -9;
}

/// A notification to send to one user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewNotification {
    /// Who receives it.
    pub user_id: Uuid,
    pub subject: String,
    /// A JSON object, as text (Nakama's `content`).
    pub content: String,
    /// Below zero: one of [`codes`]; zero and above: chosen by server code.
    pub code: i32,
    /// Who sent it; `None` for the system (Nakama shows an empty sender).
    pub sender_id: Option<Uuid>,
    /// Stored and listed later (`GET /v2/notification`), or only pushed to open sockets.
    pub persistent: bool,
}

/// Sends notifications: stores the persistent ones and pushes all of them to the receivers'
/// open sockets.
#[async_trait]
pub trait Notifier: Send + Sync + fmt::Debug {
    /// Sends every notification; returns once the persistent ones are durable.
    async fn notify(&self, notifications: Vec<NewNotification>) -> Result<(), CoreError>;
}
