//! Before and after hooks on client calls, with Nakama's semantics: the seam between the edges
//! that serve a call (REST in `metafi-api`, realtime messages in `metafi-realtime`) and the
//! runtime whose modules registered hooks (Lua, JavaScript, native).
//!
//! - A **before** hook receives the request (as JSON with Nakama's proto field names) and
//!   returns it, possibly changed, or `None` to drop the call; its error goes to the client
//!   with its code.
//! - An **after** hook receives the answer and the request; it cannot change the answer and its
//!   error is only logged.
//!
//! Hooks are keyed by [`Hook`], one variant per call MetaFi serves, named as Nakama names them.
//! Whether a hook is registered is an array lookup ([`Hooks::has_before`]), so a call with no
//! hook builds no JSON, allocates nothing and takes no lock. [`NoHooks`] is the default.
//!
//! The edges hand a hook the request or answer struct itself ([`HookValue::message`], through
//! [`Hooks::before_value`] and [`Hooks::after_value`]): a script engine serializes it straight
//! into its own values, without a `serde_json::Value` tree in between (one `String` per key
//! and one `BTreeMap` per object, three times per before+after pair).

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value as Json;

use crate::{CoreError, RpcContext};

/// A request or answer on its way to a hook, or a before hook's result on its way back.
pub enum HookValue {
    /// JSON in proto field names: every object key is a field name, except the keys inside
    /// map fields (`vars`, `metadata`, …), which are user data.
    Json(Json),
    /// The edge's own message, serialized straight into an engine's values: struct field names
    /// (`&'static str`) are proto names, the keys of maps are user data. It serializes as the
    /// JSON of [`HookValue::Json`] does (`serde_json::to_value`, the same `Serialize`).
    Message(Box<dyn HookMessage>),
}

/// A message an engine can serialize through `erased_serde` (its `Serializer` is not known
/// here), or have as JSON. Object-safe: engines hold it as `Box<dyn HookMessage>`.
///
/// `to_json` is `serde_json::to_value` compiled for the message's own type: through
/// `erased_serde`, every value `serde_json`'s serializer returns would be boxed (its `Value`
/// is larger than the inline slot `erased_serde` keeps for results), ≈ 1,900 instructions a
/// request instead of a few hundred.
pub trait HookMessage: erased_serde::Serialize + Send + Sync {
    /// The message as JSON in proto field names.
    fn to_json(&self) -> serde_json::Result<Json>;
}

impl<T: Serialize + Send + Sync> HookMessage for T {
    fn to_json(&self) -> serde_json::Result<Json> {
        serde_json::to_value(self)
    }
}

impl HookValue {
    /// The edge's request or answer, for an engine to serialize.
    pub fn message<T: Serialize + Send + Sync + 'static>(message: T) -> HookValue {
        HookValue::Message(Box::new(message))
    }

    /// The value as JSON in proto field names, for hooks that take JSON (native ones, and
    /// engines without a serializer of their own).
    pub fn into_json(self) -> serde_json::Result<Json> {
        match self {
            HookValue::Json(json) => Ok(json),
            HookValue::Message(message) => message.to_json(),
        }
    }

    /// A before hook's result as the edge's request struct, read from its JSON. Something
    /// that is not a `T` is the client's Internal error "Could not complete runtime Before
    /// function.", logged as a warning.
    pub fn into_message<T: DeserializeOwned>(self, hook: Hook) -> Result<T, CoreError> {
        let read = self.into_json().and_then(serde_json::from_value::<T>);
        read.map_err(|e| {
            tracing::warn!(hook = hook.name(), error = %e, "a before hook returned something that is not the request");
            CoreError::Status {
                code: metafi_proto::Code::Internal,
                message: "Could not complete runtime Before function.".into(),
            }
        })
    }
}

impl Serialize for HookValue {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            HookValue::Json(json) => json.serialize(serializer),
            HookValue::Message(message) => {
                let message: &dyn erased_serde::Serialize = &**message;
                message.serialize(serializer)
            }
        }
    }
}

impl fmt::Debug for HookValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HookValue::Json(json) => f.debug_tuple("Json").field(json).finish(),
            HookValue::Message(_) => f.write_str("Message(..)"),
        }
    }
}

impl From<Json> for HookValue {
    fn from(json: Json) -> HookValue {
        HookValue::Json(json)
    }
}

/// The client's error when a request cannot be encoded for its before hook (never for the
/// edges' own messages: their `Serialize` cannot fail).
pub fn unencodable_request(hook: Hook, error: &dyn fmt::Display) -> CoreError {
    tracing::error!(hook = hook.name(), %error, "could not encode a request for its before hook");
    CoreError::Status {
        code: metafi_proto::Code::Internal,
        message: "Could not run runtime Before function.".into(),
    }
}

/// A before hook's request as JSON, for hooks that take JSON; a request that cannot be
/// encoded is the client's [`unencodable_request`] error.
pub fn request_json(hook: Hook, input: Option<HookValue>) -> Result<Option<Json>, CoreError> {
    input
        .map(HookValue::into_json)
        .transpose()
        .map_err(|e| unencodable_request(hook, &e))
}

/// A boxed future of a hook call.
pub type HookFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Which namespace a hook name belongs to: REST/gRPC API calls or realtime messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookKind {
    /// `nk.register_req_before`, `initializer.registerBefore<Name>`.
    Api,
    /// `nk.register_rt_before`, `initializer.registerRtBefore(name, fn)`.
    Rt,
}

macro_rules! hooks {
    ($( $variant:ident $kind:ident $name:literal $input:literal; )*) => {
        /// A client call MetaFi serves that hooks can intercept. The discriminant indexes the
        /// arrays of [`HookTable`].
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Hook {
            $( $variant, )*
        }

        impl Hook {
            /// Every hook, in discriminant order.
            pub const ALL: &'static [Hook] = &[$( Hook::$variant, )*];

            /// Nakama's name: the API method (`AuthenticateDevice`) or the realtime message
            /// (`ChannelMessageSend`).
            pub const fn name(self) -> &'static str {
                match self {
                    $( Hook::$variant => $name, )*
                }
            }

            pub const fn kind(self) -> HookKind {
                match self {
                    $( Hook::$variant => HookKind::$kind, )*
                }
            }

            /// Whether the call carries a request a before hook can change or drop (Nakama
            /// passes no input to `GetAccount`'s hooks, and ignores their result).
            pub const fn has_input(self) -> bool {
                match self {
                    $( Hook::$variant => $input, )*
                }
            }
        }
    };
}

hooks! {
    AuthenticateCustom Api "AuthenticateCustom" true;
    AuthenticateDevice Api "AuthenticateDevice" true;
    AuthenticateEmail Api "AuthenticateEmail" true;
    AuthenticateApple Api "AuthenticateApple" true;
    AuthenticateFacebook Api "AuthenticateFacebook" true;
    AuthenticateFacebookInstantGame Api "AuthenticateFacebookInstantGame" true;
    AuthenticateGameCenter Api "AuthenticateGameCenter" true;
    AuthenticateGoogle Api "AuthenticateGoogle" true;
    AuthenticateSteam Api "AuthenticateSteam" true;
    LinkApple Api "LinkApple" true;
    LinkFacebook Api "LinkFacebook" true;
    LinkFacebookInstantGame Api "LinkFacebookInstantGame" true;
    LinkGameCenter Api "LinkGameCenter" true;
    LinkGoogle Api "LinkGoogle" true;
    LinkSteam Api "LinkSteam" true;
    UnlinkApple Api "UnlinkApple" true;
    UnlinkFacebook Api "UnlinkFacebook" true;
    UnlinkFacebookInstantGame Api "UnlinkFacebookInstantGame" true;
    UnlinkGameCenter Api "UnlinkGameCenter" true;
    UnlinkGoogle Api "UnlinkGoogle" true;
    UnlinkSteam Api "UnlinkSteam" true;
    SessionRefresh Api "SessionRefresh" true;
    SessionLogout Api "SessionLogout" true;
    GetAccount Api "GetAccount" false;
    UpdateAccount Api "UpdateAccount" true;
    DeleteAccount Api "DeleteAccount" false;
    LinkCustom Api "LinkCustom" true;
    LinkDevice Api "LinkDevice" true;
    LinkEmail Api "LinkEmail" true;
    UnlinkCustom Api "UnlinkCustom" true;
    UnlinkDevice Api "UnlinkDevice" true;
    UnlinkEmail Api "UnlinkEmail" true;
    GetUsers Api "GetUsers" true;
    ListChannelMessages Api "ListChannelMessages" true;
    ListMatches Api "ListMatches" true;
    ReadStorageObjects Api "ReadStorageObjects" true;
    WriteStorageObjects Api "WriteStorageObjects" true;
    DeleteStorageObjects Api "DeleteStorageObjects" true;
    ListStorageObjects Api "ListStorageObjects" true;
    ListNotifications Api "ListNotifications" true;
    DeleteNotifications Api "DeleteNotifications" true;
    ListFriends Api "ListFriends" true;
    ListFriendsOfFriends Api "ListFriendsOfFriends" true;
    AddFriends Api "AddFriends" true;
    DeleteFriends Api "DeleteFriends" true;
    BlockFriends Api "BlockFriends" true;
    ImportFacebookFriends Api "ImportFacebookFriends" true;
    ImportSteamFriends Api "ImportSteamFriends" true;
    CreateGroup Api "CreateGroup" true;
    UpdateGroup Api "UpdateGroup" true;
    DeleteGroup Api "DeleteGroup" true;
    JoinGroup Api "JoinGroup" true;
    LeaveGroup Api "LeaveGroup" true;
    AddGroupUsers Api "AddGroupUsers" true;
    BanGroupUsers Api "BanGroupUsers" true;
    KickGroupUsers Api "KickGroupUsers" true;
    PromoteGroupUsers Api "PromoteGroupUsers" true;
    DemoteGroupUsers Api "DemoteGroupUsers" true;
    ListGroupUsers Api "ListGroupUsers" true;
    ListUserGroups Api "ListUserGroups" true;
    ListGroups Api "ListGroups" true;
    WriteLeaderboardRecord Api "WriteLeaderboardRecord" true;
    DeleteLeaderboardRecord Api "DeleteLeaderboardRecord" true;
    ListLeaderboardRecords Api "ListLeaderboardRecords" true;
    ListLeaderboardRecordsAroundOwner Api "ListLeaderboardRecordsAroundOwner" true;
    DeleteTournamentRecord Api "DeleteTournamentRecord" true;
    ListTournaments Api "ListTournaments" true;
    ListTournamentRecords Api "ListTournamentRecords" true;
    WriteTournamentRecord Api "WriteTournamentRecord" true;
    JoinTournament Api "JoinTournament" true;
    ListTournamentRecordsAroundOwner Api "ListTournamentRecordsAroundOwner" true;
    ValidatePurchaseApple Api "ValidatePurchaseApple" true;
    ValidatePurchaseGoogle Api "ValidatePurchaseGoogle" true;
    ValidatePurchaseHuawei Api "ValidatePurchaseHuawei" true;
    ValidatePurchaseFacebookInstant Api "ValidatePurchaseFacebookInstant" true;
    ValidatePurchaseSamsung Api "ValidatePurchaseSamsung" true;
    ValidateSubscriptionApple Api "ValidateSubscriptionApple" true;
    ValidateSubscriptionGoogle Api "ValidateSubscriptionGoogle" true;
    ListSubscriptions Api "ListSubscriptions" true;
    GetSubscription Api "GetSubscription" true;
    ListParties Api "ListParties" true;
    GetMatchmakerStats Api "GetMatchmakerStats" false;
    Event Api "Event" true;
    ChannelJoin Rt "ChannelJoin" true;
    ChannelLeave Rt "ChannelLeave" true;
    ChannelMessageSend Rt "ChannelMessageSend" true;
    ChannelMessageUpdate Rt "ChannelMessageUpdate" true;
    ChannelMessageRemove Rt "ChannelMessageRemove" true;
    MatchCreate Rt "MatchCreate" true;
    MatchDataSend Rt "MatchDataSend" true;
    MatchJoin Rt "MatchJoin" true;
    MatchLeave Rt "MatchLeave" true;
    MatchmakerAdd Rt "MatchmakerAdd" true;
    MatchmakerRemove Rt "MatchmakerRemove" true;
    PartyCreate Rt "PartyCreate" true;
    PartyJoin Rt "PartyJoin" true;
    PartyLeave Rt "PartyLeave" true;
    PartyPromote Rt "PartyPromote" true;
    PartyAccept Rt "PartyAccept" true;
    PartyRemove Rt "PartyRemove" true;
    PartyClose Rt "PartyClose" true;
    PartyJoinRequestList Rt "PartyJoinRequestList" true;
    PartyMatchmakerAdd Rt "PartyMatchmakerAdd" true;
    PartyMatchmakerRemove Rt "PartyMatchmakerRemove" true;
    PartyDataSend Rt "PartyDataSend" true;
    PartyUpdate Rt "PartyUpdate" true;
    Ping Rt "Ping" true;
    Pong Rt "Pong" true;
    StatusFollow Rt "StatusFollow" true;
    StatusUnfollow Rt "StatusUnfollow" true;
    StatusUpdate Rt "StatusUpdate" true;
}

impl Hook {
    /// How many hooks there are: the length of a [`HookTable`] array.
    pub const COUNT: usize = Hook::ALL.len();

    /// The index of this hook in a [`HookTable`] array.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The hook a registration names, compared as Nakama does (lower case, so
    /// `"authenticatedevice"` and `"AuthenticateDevice"` are the same).
    pub fn find(kind: HookKind, name: &str) -> Option<Hook> {
        Hook::ALL
            .iter()
            .copied()
            .find(|h| h.kind() == kind && h.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for Hook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Every API method Nakama lets hooks intercept (its JavaScript `registerBefore<Name>` set,
/// plus `SessionLogout`, which only the Lua and Go runtimes name). Those MetaFi does not serve
/// register fine and are reported once at start.
pub const NAKAMA_API_HOOKS: &[&str] = &[
    "GetAccount",
    "GetMatchmakerStats",
    "UpdateAccount",
    "DeleteAccount",
    "AuthenticateApple",
    "AuthenticateCustom",
    "AuthenticateDevice",
    "AuthenticateEmail",
    "AuthenticateFacebook",
    "AuthenticateFacebookInstantGame",
    "AuthenticateGameCenter",
    "AuthenticateGoogle",
    "AuthenticateSteam",
    "SessionRefresh",
    "SessionLogout",
    "ListChannelMessages",
    "ListFriends",
    "ListFriendsOfFriends",
    "AddFriends",
    "DeleteFriends",
    "BlockFriends",
    "ImportFacebookFriends",
    "ImportSteamFriends",
    "CreateGroup",
    "UpdateGroup",
    "DeleteGroup",
    "JoinGroup",
    "LeaveGroup",
    "AddGroupUsers",
    "BanGroupUsers",
    "KickGroupUsers",
    "PromoteGroupUsers",
    "DemoteGroupUsers",
    "ListGroupUsers",
    "ListUserGroups",
    "ListGroups",
    "DeleteLeaderboardRecord",
    "DeleteTournamentRecord",
    "ListLeaderboardRecords",
    "WriteLeaderboardRecord",
    "ListLeaderboardRecordsAroundOwner",
    "LinkApple",
    "LinkCustom",
    "LinkDevice",
    "LinkEmail",
    "LinkFacebook",
    "LinkFacebookInstantGame",
    "LinkGameCenter",
    "LinkGoogle",
    "LinkSteam",
    "ListMatches",
    "ListNotifications",
    "DeleteNotifications",
    "ListStorageObjects",
    "ReadStorageObjects",
    "WriteStorageObjects",
    "DeleteStorageObjects",
    "JoinTournament",
    "ListTournamentRecords",
    "ListTournaments",
    "WriteTournamentRecord",
    "ListTournamentRecordsAroundOwner",
    "UnlinkApple",
    "UnlinkCustom",
    "UnlinkDevice",
    "UnlinkEmail",
    "UnlinkFacebook",
    "UnlinkFacebookInstantGame",
    "UnlinkGameCenter",
    "UnlinkGoogle",
    "UnlinkSteam",
    "GetUsers",
    "ValidatePurchaseApple",
    "ValidateSubscriptionApple",
    "ValidatePurchaseGoogle",
    "ValidateSubscriptionGoogle",
    "ValidatePurchaseHuawei",
    "ValidatePurchaseFacebookInstant",
    "ValidatePurchaseSamsung",
    "ListSubscriptions",
    "GetSubscription",
    "ListParties",
    "Event",
];

/// Every realtime message Nakama runs hooks on (RPC has none).
pub const NAKAMA_RT_HOOKS: &[&str] = &[
    "ChannelJoin",
    "ChannelLeave",
    "ChannelMessageSend",
    "ChannelMessageUpdate",
    "ChannelMessageRemove",
    "MatchCreate",
    "MatchDataSend",
    "MatchJoin",
    "MatchLeave",
    "MatchmakerAdd",
    "MatchmakerRemove",
    "Ping",
    "Pong",
    "StatusFollow",
    "StatusUnfollow",
    "StatusUpdate",
    "PartyCreate",
    "PartyJoin",
    "PartyLeave",
    "PartyPromote",
    "PartyAccept",
    "PartyRemove",
    "PartyClose",
    "PartyJoinRequestList",
    "PartyMatchmakerAdd",
    "PartyMatchmakerRemove",
    "PartyDataSend",
    "PartyUpdate",
];

/// The hooks of a server: what the edges call around each client call.
pub trait Hooks: Send + Sync + fmt::Debug {
    /// Whether a before hook is registered for `hook`: an array lookup, nothing more.
    fn has_before(&self, hook: Hook) -> bool;

    /// Whether an after hook is registered for `hook`: an array lookup, nothing more.
    fn has_after(&self, hook: Hook) -> bool;

    /// Runs the before hook of `hook` with the request (`None` for calls without input).
    /// `Ok(Some(request))`: go on with that request; `Ok(None)`: the hook returned nothing
    /// (for a call with input, Nakama drops the call); `Err`: the hook's error, for the client.
    /// Only called when [`Hooks::has_before`] is true.
    fn before(
        &self,
        hook: Hook,
        ctx: RpcContext,
        input: Option<Json>,
    ) -> HookFuture<'_, Result<Option<Json>, CoreError>>;

    /// Runs the after hook of `hook` with the answer and the request. Its failure is logged by
    /// the implementation; the caller's answer does not change. Only called when
    /// [`Hooks::has_after`] is true.
    fn after(
        &self,
        hook: Hook,
        ctx: RpcContext,
        output: Option<Json>,
        input: Option<Json>,
    ) -> HookFuture<'_, ()>;

    /// [`Hooks::before`] with the request as the edge holds it ([`HookValue::message`]): what
    /// the edges call. `Ok(Some(value))` is the hook's result, which the edge takes back as
    /// its request with [`HookValue::into_message`] (a message an engine read straight from
    /// its own value, or JSON). The default hands JSON to [`Hooks::before`]; the runtime
    /// passes the value to its engines, which serialize it straight into their own values.
    fn before_value(
        &self,
        hook: Hook,
        ctx: RpcContext,
        input: Option<HookValue>,
    ) -> HookFuture<'_, Result<Option<HookValue>, CoreError>> {
        match request_json(hook, input) {
            Ok(input) => {
                let call = self.before(hook, ctx, input);
                Box::pin(async move { Ok(call.await?.map(HookValue::Json)) })
            }
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }

    /// [`Hooks::after`] with the answer and request as the edge holds them (see
    /// [`Hooks::before_value`]); a value that cannot be encoded is passed as `None`.
    fn after_value(
        &self,
        hook: Hook,
        ctx: RpcContext,
        output: Option<HookValue>,
        input: Option<HookValue>,
    ) -> HookFuture<'_, ()> {
        let json = |value: Option<HookValue>| value.and_then(|v| v.into_json().ok());
        self.after(hook, ctx, json(output), json(input))
    }
}

/// A server without hooks: every call goes straight through.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoHooks;

impl Hooks for NoHooks {
    fn has_before(&self, _hook: Hook) -> bool {
        false
    }

    fn has_after(&self, _hook: Hook) -> bool {
        false
    }

    fn before(
        &self,
        _hook: Hook,
        _ctx: RpcContext,
        input: Option<Json>,
    ) -> HookFuture<'_, Result<Option<Json>, CoreError>> {
        Box::pin(async move { Ok(input) })
    }

    fn after(
        &self,
        _hook: Hook,
        _ctx: RpcContext,
        _output: Option<Json>,
        _input: Option<Json>,
    ) -> HookFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// One value per hook, indexed by [`Hook::index`]: how implementations keep their hooks so
/// that presence is an array lookup.
#[derive(Debug, Clone)]
pub struct HookTable<T> {
    slots: Vec<Option<T>>,
}

impl<T> Default for HookTable<T> {
    fn default() -> Self {
        HookTable {
            slots: (0..Hook::COUNT).map(|_| None).collect(),
        }
    }
}

impl<T> HookTable<T> {
    pub fn get(&self, hook: Hook) -> Option<&T> {
        // Invariant: `slots` has `Hook::COUNT` entries, so every index is in range.
        self.slots.get(hook.index()).and_then(Option::as_ref)
    }

    pub fn contains(&self, hook: Hook) -> bool {
        self.get(hook).is_some()
    }

    /// Sets the slot of `hook`, returning what was there.
    pub fn insert(&mut self, hook: Hook, value: T) -> Option<T> {
        self.slots
            .get_mut(hook.index())
            .and_then(|slot| slot.replace(value))
    }

    pub fn is_empty(&self) -> bool {
        self.slots.iter().all(Option::is_none)
    }

    /// The hooks that have a value, in [`Hook`] order.
    pub fn hooks(&self) -> impl Iterator<Item = Hook> + '_ {
        Hook::ALL.iter().copied().filter(|h| self.contains(*h))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, serde::Deserialize)]
    struct Account {
        id: String,
        #[serde(default)]
        vars: std::collections::BTreeMap<String, String>,
    }

    fn account() -> Account {
        Account {
            id: "d".into(),
            vars: [("k".to_owned(), "v".to_owned())].into(),
        }
    }

    #[test]
    fn json_and_other_messages_are_read_through_json_with_the_edges_error() {
        let json = HookValue::Json(serde_json::json!({"id": "j", "vars": {"a": "b"}}));
        let read: Account = json
            .into_message(Hook::AuthenticateDevice)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read.id, "j");
        assert_eq!(read.vars["a"], "b");
        // A message of another type goes through its JSON.
        let answer: Account = HookValue::message(account())
            .into_message(Hook::AuthenticateDevice)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(answer, account());
        let wrong = HookValue::Json(serde_json::json!({"id": 5}))
            .into_message::<Account>(Hook::AuthenticateDevice)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(wrong.code(), metafi_proto::Code::Internal);
        assert_eq!(
            wrong.client_message(),
            "Could not complete runtime Before function."
        );
    }

    #[test]
    fn every_served_hook_is_a_nakama_name_of_its_kind() {
        for hook in Hook::ALL {
            let list = match hook.kind() {
                HookKind::Api => NAKAMA_API_HOOKS,
                HookKind::Rt => NAKAMA_RT_HOOKS,
            };
            assert!(
                list.contains(&hook.name()),
                "{hook} is not in Nakama's list"
            );
            assert_eq!(Hook::ALL[hook.index()], *hook);
        }
    }

    #[test]
    fn names_are_found_case_insensitively_within_their_kind() {
        assert_eq!(
            Hook::find(HookKind::Api, "authenticatedevice"),
            Some(Hook::AuthenticateDevice)
        );
        assert_eq!(
            Hook::find(HookKind::Rt, "ChannelMessageSend"),
            Some(Hook::ChannelMessageSend)
        );
        assert_eq!(Hook::find(HookKind::Api, "ChannelMessageSend"), None);
        assert_eq!(
            Hook::find(HookKind::Api, "listfriends"),
            Some(Hook::ListFriends)
        );
        assert_eq!(
            Hook::find(HookKind::Api, "WriteTournamentRecord"),
            Some(Hook::WriteTournamentRecord)
        );
        assert_eq!(Hook::find(HookKind::Api, "ChannelJoin"), None);
    }

    #[test]
    fn a_table_answers_presence_by_hook() {
        let mut table = HookTable::default();
        assert!(table.is_empty());
        assert!(table.insert(Hook::Ping, 1).is_none());
        assert!(table.contains(Hook::Ping));
        assert!(!table.contains(Hook::Pong));
        assert_eq!(table.insert(Hook::Ping, 2), Some(1));
        assert_eq!(table.hooks().collect::<Vec<_>>(), vec![Hook::Ping]);
    }
}
