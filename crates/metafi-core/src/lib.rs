//! The services behind every MetaFi edge: accounts (sign-in with its throttle, profile), other
//! users' profiles, session tokens and their revocation, storage objects, chat channels, and the
//! RPC seam to the runtime, wallets and their ledger ([`wallets`]), the hooks around client calls ([`hooks`]), and the seam through
//! which features notify users ([`notify`]). REST handlers,
//! realtime sockets and runtime modules all call these,
//! so a rule (validation, a ban, a logout) holds the same way everywhere.
//!
//! Errors are [`CoreError`]: each variant carries the gRPC code and the client-safe message that
//! the edges send (REST body, socket error envelope, runtime error); internal causes stay in
//! `#[source]` for logs.
//!
//! Must not depend on: HTTP frameworks, sockets, script engines, a particular storage backend.
//! Key types: [`Accounts`], [`Users`] (with the [`OnlineUsers`] seam), [`Sessions`], [`Objects`],
//! [`Channels`], [`Notifications`] (with the [`NotificationPush`] seam), [`TokenKeys`],
//! [`SessionClaims`], [`Clock`].

mod accounts;
mod channel_push;
pub mod channels;
mod clock;
pub mod cron;
mod error;
pub mod events;
pub mod friends;
mod go_header;
pub mod groups;
pub mod hooks;
pub mod iap;
mod ids;
mod jwt;
pub mod leaderboards;
pub mod module_errors;
pub mod notifications;
pub mod notify;
pub mod objects;
mod party_directory;
mod password;
mod revocations;
pub mod rpc;
pub mod search;
mod server_alloc;
mod session_tokens;
pub mod signin_throttle;
pub mod social;
mod sockets;
pub mod storage_index;
mod users;
mod validate;
mod verified_tokens;
pub mod wallets;

pub use accounts::{Accounts, AccountsConfig, AuthOutcome, Identity};
pub use channel_push::{ChannelPush, NoChannelPush};
pub use channels::{ChannelId, Channels, GroupMembership, NoGroups};
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::CoreError;
pub use events::{EventConfig, EventProcessor, Events, Submitted};
pub use friends::{Friends, FriendsConfig};
pub use go_header::{RequestHeaders, canonical_header_key};
pub use groups::{Actor, CreateGroup, Groups, ListGroups};
pub use hooks::{Hook, HookKind, HookMessage, HookTable, HookValue, Hooks, NoHooks};
pub use iap::{IapConfig, Purchases};
pub use ids::random_uuid;
pub use jwt::{SessionClaims, TokenKeys, TokenKind};
pub use leaderboards::{LeaderboardError, Leaderboards};
pub use module_errors::{ModuleError, ModuleErrors};
pub use notifications::{
    Broadcast, NoPush, NotificationPage, NotificationPush, Notifications, NotificationsConfig,
};
pub use notify::{NewNotification, Notifier};
pub use objects::Objects;
pub use party_directory::{ListParties, NoParties, PartyDirectory};
pub use password::PasswordHasher;
pub use revocations::Revocations;
pub use rpc::{NoRpcs, RpcContext, RpcDispatch, RpcUser, new_trace_id};
pub use server_alloc::ServerAllocator;
pub use session_tokens::{Sessions, SessionsConfig};
pub use signin_throttle::{SignInThrottle, SignInThrottleConfig};
pub use social::{Credential, GameCenterProof, SocialConfig, SocialSignIn};
pub use sockets::{NoSockets, UserSockets};
pub use users::{MAX_USERS_PER_LOOKUP, NobodyOnline, OnlineUsers, UserLookup, Users};
pub use validate::{
    Fault, custom_id_fault, device_id_fault, email_fault, generate_username, password_fault,
    username_fault,
};
pub use wallets::Wallets;
