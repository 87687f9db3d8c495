//! The `nk` API as plain Rust: what every engine binds (Lua `nk.storage_read`, JS
//! `nk.storageRead`, native `nk.storage_read`). Engines only convert arguments and results;
//! rules, permissions and errors live here and in `metafi-core`, so all runtimes agree.
//!
//! Server code acts as the server: storage calls use `Caller::Server` (no permission checks,
//! any owner) unless a function passes a caller id, as in Nakama.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use metafi_core::objects::{DeleteInput, WriteInput};
use metafi_core::{
    Accounts, Clock, CoreError, Events, Friends, Notifications, Objects, PartyDirectory, Sessions,
    SocialSignIn, Users, Wallets,
};
use metafi_match::{ListQuery, MatchInfo};
use metafi_storage::{
    Account, Caller, ObjectAck, ObjectId, ObjectPage, Storage, StorageObject, User,
};
use parking_lot::Mutex;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::log_limit::{Admit, LogLimit, LogLimiter};
use crate::match_host::MatchHost;
use crate::nk_api::{UtilityConfig, UtilityState};
use crate::realtime_host::RealtimeHost;
use crate::world_host::WorldHost;

/// Most users one `users_get_id` call may ask for (Nakama has no limit; we bound the query).
pub const MAX_USERS_PER_CALL: usize = 1000;

/// The services server code may use. Built once by the server and shared by every VM.
/// Build it with [`RuntimeServices::new`] and add optional services with the `with_*`
/// setters; a function whose service is absent fails at call time naming it.
#[derive(Debug, Clone)]
pub struct RuntimeServices {
    pub objects: Arc<Objects>,
    pub store: Arc<dyn Storage>,
    pub matches: Arc<dyn MatchHost>,
    pub clock: Arc<dyn Clock>,
    /// Limits and settings of the utility functions (local cache, `http_request`,
    /// `file_read`, custom metrics, `get_config`); defaults unless the server sets them.
    pub utilities: UtilityConfig,
    /// Streams, chat channels, status follows and sessions (`nk.stream_*`, …); `None` in a
    /// runtime built without the realtime layer.
    pub realtime: Option<Arc<dyn RealtimeHost>>,
    /// Accounts, sign-in, sessions and other users' profiles (`nk.account_*`, `users_*`,
    /// `authenticate_*`, `link_*`, `session_logout`); `None` where the server did not set them.
    pub accounts: Option<AccountServices>,
    /// Notifications (`nk.notification_send`, `notifications_list`, …); `None` where the
    /// server did not set them.
    pub notifications: Option<Arc<Notifications>>,
    /// Friends, invites and blocks (`nk.friends_*`, `users_get_friend_status`); `None` where
    /// the server did not set them.
    pub friends: Option<Arc<Friends>>,
    /// Groups and memberships (`nk.group_*`, `groups_*`, `user_groups_list`); `None` where
    /// the server did not set them.
    pub groups: Option<Arc<metafi_core::Groups>>,
    /// Wallets, their ledger and the multi-store update (`nk.wallet_*`, `nk.multi_update`);
    /// `None` where the server did not set them.
    pub wallets: Option<Arc<Wallets>>,
    /// Leaderboards (`nk.leaderboard_*`); `None` where the server did not set them.
    pub leaderboards: Option<Arc<metafi_core::Leaderboards>>,
    /// Sign-in, link and unlink by social identities (`nk.authenticate_apple`, `link_steam`,
    /// …); `None` where the server did not set it.
    pub social: Option<Arc<SocialSignIn>>,
    /// Purchase and subscription validation (`nk.purchase_*`, `nk.subscription_*`); `None`
    /// where the server did not set it.
    pub purchases: Option<Arc<metafi_core::Purchases>>,
    /// The event queue `nk.event` feeds and native modules' `register_event` processors
    /// drain; `None` where the server did not set it (events are then only counted).
    pub events: Option<Arc<Events>>,
    /// The parties of this node (`nk.party_list`); `None` where the server runs none.
    pub parties: Option<Arc<dyn PartyDirectory>>,
    /// Served worlds (`nk.world_create`); `None` where the server serves none.
    pub worlds: Option<Arc<dyn WorldHost>>,
}

/// The services behind the account, user, sign-in and session functions: the same ones the
/// REST handlers use, so a rule holds the same way for clients and for server code.
#[derive(Debug, Clone)]
pub struct AccountServices {
    pub accounts: Arc<Accounts>,
    pub sessions: Arc<Sessions>,
    pub users: Arc<Users>,
}

impl RuntimeServices {
    /// The services every server has: storage objects, the store, the match host, the clock.
    pub fn new(
        objects: Arc<Objects>,
        store: Arc<dyn Storage>,
        matches: Arc<dyn MatchHost>,
        clock: Arc<dyn Clock>,
    ) -> RuntimeServices {
        RuntimeServices {
            objects,
            store,
            matches,
            clock,
            utilities: UtilityConfig::default(),
            realtime: None,
            accounts: None,
            notifications: None,
            friends: None,
            groups: None,
            wallets: None,
            leaderboards: None,
            social: None,
            purchases: None,
            events: None,
            parties: None,
            worlds: None,
        }
    }

    /// The parties of this node (`nk.party_list`).
    pub fn with_parties(mut self, parties: Arc<dyn PartyDirectory>) -> RuntimeServices {
        self.parties = Some(parties);
        self
    }

    /// Served worlds (`nk.world_create`).
    pub fn with_worlds(mut self, worlds: Arc<dyn WorldHost>) -> RuntimeServices {
        self.worlds = Some(worlds);
        self
    }

    /// The event queue (`nk.event`, `POST /v2/event`, `register_event`).
    pub fn with_events(mut self, events: Arc<Events>) -> RuntimeServices {
        self.events = Some(events);
        self
    }

    /// The utility functions' limits and settings (`runtime.local_cache_max_entries`, …).
    pub fn with_utilities(mut self, utilities: UtilityConfig) -> RuntimeServices {
        self.utilities = utilities;
        self
    }

    /// Adds the realtime layer (`nk.stream_*`, `nk.channel_message_*`, `nk.status_follow`,
    /// `nk.session_disconnect`).
    pub fn with_realtime(mut self, realtime: Arc<dyn RealtimeHost>) -> RuntimeServices {
        self.realtime = Some(realtime);
        self
    }

    /// Serves the notification functions.
    pub fn with_notifications(mut self, notifications: Arc<Notifications>) -> RuntimeServices {
        self.notifications = Some(notifications);
        self
    }

    /// Serves the wallet functions and `multi_update`.
    pub fn with_wallets(mut self, wallets: Arc<Wallets>) -> RuntimeServices {
        self.wallets = Some(wallets);
        self
    }

    /// Serves the account, user, sign-in and session functions.
    pub fn with_accounts(mut self, accounts: AccountServices) -> RuntimeServices {
        self.accounts = Some(accounts);
        self
    }

    /// Serves the friend functions.
    pub fn with_friends(mut self, friends: Arc<Friends>) -> RuntimeServices {
        self.friends = Some(friends);
        self
    }

    /// Serves the group functions.
    pub fn with_groups(mut self, groups: Arc<metafi_core::Groups>) -> RuntimeServices {
        self.groups = Some(groups);
        self
    }

    /// Serves the leaderboard functions.
    pub fn with_leaderboards(
        mut self,
        leaderboards: Arc<metafi_core::Leaderboards>,
    ) -> RuntimeServices {
        self.leaderboards = Some(leaderboards);
        self
    }

    /// Serves the social sign-in, link and unlink functions.
    pub fn with_social(mut self, social: Arc<SocialSignIn>) -> RuntimeServices {
        self.social = Some(social);
        self
    }

    /// Serves `nk.purchase_*` and `nk.subscription_*` with the server's service.
    pub fn with_purchases(mut self, purchases: Arc<metafi_core::Purchases>) -> RuntimeServices {
        self.purchases = Some(purchases);
        self
    }
}

/// A service server code needs, or the error function `name` raises on a server without it.
fn available<'a, T>(
    service: Option<&'a T>,
    name: &str,
    what: &str,
) -> Result<&'a T, crate::nk_api::NkError> {
    service.ok_or_else(|| {
        crate::nk_api::NkError::failed(format!(
            "nk.{name} is not available: this server runs without {what}"
        ))
    })
}

/// Severity of a script log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Debug,
    Info,
    Warn,
    Error,
}

/// The `nk` API. Cheap to clone; `Send + Sync`, so native functions can hold it across
/// awaits and engines can move it into their VM threads.
#[derive(Debug, Clone)]
pub struct Nk {
    inner: Arc<NkInner>,
}

#[derive(Debug)]
struct NkInner {
    services: RuntimeServices,
    node: Arc<str>,
    env: Arc<HashMap<String, String>>,
    /// Engines whose `run_once` already ran: once per process and engine, as Nakama's shared
    /// `sync.Once` across all Lua VMs.
    ran_once: Mutex<HashSet<&'static str>>,
    /// The per-module log rate limit every engine's logger goes through.
    log_limiter: LogLimiter,
    /// The utility functions' process-wide state: local caches, HTTP clients, metric series.
    utilities: UtilityState,
}

/// Services that end users' sessions (an account deletion) close their sockets through `nk`.
impl metafi_core::UserSockets for Nk {
    fn disconnect_user(&self, user_id: Uuid) -> usize {
        Nk::disconnect_user(self, user_id)
    }
}

impl Nk {
    /// An `nk` with the default log rate limit ([`LogLimit::default`]).
    pub fn new(services: RuntimeServices, node: Arc<str>, env: Arc<HashMap<String, String>>) -> Nk {
        Nk::with_log_limit(services, node, env, LogLimit::default())
    }

    pub fn with_log_limit(
        services: RuntimeServices,
        node: Arc<str>,
        env: Arc<HashMap<String, String>>,
        log_limit: LogLimit,
    ) -> Nk {
        let utilities = UtilityState::new(&services.utilities);
        Nk {
            inner: Arc::new(NkInner {
                utilities,
                services,
                node,
                env,
                ran_once: Mutex::new(HashSet::new()),
                log_limiter: LogLimiter::new(log_limit),
            }),
        }
    }

    /// The utility functions' state (`nk_api`).
    pub(crate) fn utilities(&self) -> &UtilityState {
        &self.inner.utilities
    }

    pub fn node(&self) -> &Arc<str> {
        &self.inner.node
    }

    /// `runtime.env`, as every context shows it.
    pub fn env(&self) -> &Arc<HashMap<String, String>> {
        &self.inner.env
    }

    /// True for the first caller per `engine` in this process: that caller runs its
    /// `run_once` function, every later one skips it.
    pub fn claim_run_once(&self, engine: &'static str) -> bool {
        self.inner.ran_once.lock().insert(engine)
    }

    /// The parties of this node, when the server runs them.
    pub fn parties(&self) -> Option<&Arc<dyn PartyDirectory>> {
        self.inner.services.parties.as_ref()
    }

    /// The worlds of this node, when the server serves them.
    pub fn worlds(&self) -> Option<&Arc<dyn WorldHost>> {
        self.inner.services.worlds.as_ref()
    }

    /// The event queue, when the server has one.
    pub fn events(&self) -> Option<&Arc<Events>> {
        self.inner.services.events.as_ref()
    }

    /// The realtime layer, when the server has one.
    pub fn realtime(&self) -> Option<&Arc<dyn RealtimeHost>> {
        self.inner.services.realtime.as_ref()
    }

    /// Closes every live socket of `user_id`, on every node of a cluster (a ban or an account
    /// deletion ends what the user has open, not only their tokens); nothing without a
    /// realtime layer.
    pub fn disconnect_user(&self, user_id: Uuid) -> usize {
        self.realtime().map_or(0, |realtime| {
            realtime.user_disconnect(user_id, metafi_match::PresenceReason::Disconnect)
        })
    }

    /// A random (version 4) UUID in its 36-character form.
    pub fn uuid_v4(&self) -> String {
        Uuid::new_v4().to_string()
    }

    /// The account services, or the error a function `name` raises without them.
    pub(crate) fn account_services(
        &self,
        name: &str,
    ) -> Result<&AccountServices, crate::nk_api::NkError> {
        available(
            self.inner.services.accounts.as_ref(),
            name,
            "account services",
        )
    }

    /// The notifications service, or the error a function `name` raises without it.
    pub(crate) fn notifications(
        &self,
        name: &str,
    ) -> Result<&Arc<Notifications>, crate::nk_api::NkError> {
        available(
            self.inner.services.notifications.as_ref(),
            name,
            "notifications",
        )
    }

    /// The friends service, or the error a function `name` raises without it.
    pub(crate) fn friends(&self, name: &str) -> Result<&Arc<Friends>, crate::nk_api::NkError> {
        available(
            self.inner.services.friends.as_ref(),
            name,
            "the friends service",
        )
    }

    /// The groups service, or the error a function `name` raises without it.
    pub(crate) fn group_service(
        &self,
        name: &str,
    ) -> Result<&Arc<metafi_core::Groups>, crate::nk_api::NkError> {
        available(
            self.inner.services.groups.as_ref(),
            name,
            "the groups service",
        )
    }

    /// The wallet service, or the error a function `name` raises without it.
    pub(crate) fn wallets(&self, name: &str) -> Result<&Arc<Wallets>, crate::nk_api::NkError> {
        available(self.inner.services.wallets.as_ref(), name, "wallets")
    }

    /// The leaderboard service, or the error a function `name` raises without it.
    pub(crate) fn leaderboards(
        &self,
        name: &str,
    ) -> Result<&Arc<metafi_core::Leaderboards>, crate::nk_api::NkError> {
        available(
            self.inner.services.leaderboards.as_ref(),
            name,
            "leaderboards",
        )
    }

    /// The social sign-in service, or the error a function `name` raises without it.
    pub(crate) fn social_services(
        &self,
        name: &str,
    ) -> Result<&Arc<SocialSignIn>, crate::nk_api::NkError> {
        available(self.inner.services.social.as_ref(), name, "social sign-in")
    }

    /// The purchase service, or the error `nk.{name}` raises on a server without it.
    pub(crate) fn purchases(
        &self,
        name: &str,
    ) -> Result<&Arc<metafi_core::Purchases>, crate::nk_api::NkError> {
        available(
            self.inner.services.purchases.as_ref(),
            name,
            "purchase validation",
        )
    }

    /// Milliseconds since the Unix epoch (Nakama's `nk.time()`).
    pub fn time_ms(&self) -> i64 {
        self.inner.services.clock.now_ms()
    }

    /// Writes a script's log line with the engine and module as fields, and the call it came
    /// from ([`LogCall`]: Nakama's `rpc_id`, or `api_id` and `mode`, and `trace_id`), within
    /// the module's log rate limit (`log_limit.rs`): excess lines are dropped and counted,
    /// and the first line after drops is preceded by a summary. Lines the log level filters
    /// out cost nothing.
    pub fn log(
        &self,
        level: LogLevel,
        engine: &'static str,
        module: &str,
        call: Option<LogCall<'_>>,
        message: &str,
    ) {
        let enabled = match level {
            LogLevel::Debug => {
                tracing::enabled!(target: "metafi_runtime::script", tracing::Level::DEBUG)
            }
            LogLevel::Info => {
                tracing::enabled!(target: "metafi_runtime::script", tracing::Level::INFO)
            }
            LogLevel::Warn => {
                tracing::enabled!(target: "metafi_runtime::script", tracing::Level::WARN)
            }
            LogLevel::Error => {
                tracing::enabled!(target: "metafi_runtime::script", tracing::Level::ERROR)
            }
        };
        if !enabled {
            return;
        }
        let (admit, bucket) = self
            .inner
            .log_limiter
            .admit_keyed(module, std::time::Instant::now());
        match admit {
            Admit::Write => {}
            Admit::Drop => {
                metrics::counter!("metafi_runtime_log_lines_dropped_total", "module" => bucket.to_owned())
                    .increment(1);
                return;
            }
            Admit::WriteAfterDrops { dropped, over } => {
                let limit = self.inner.log_limiter.limit();
                tracing::warn!(
                    target: "metafi_runtime::script",
                    engine,
                    module,
                    dropped,
                    lines_per_second = limit.lines_per_second,
                    burst = limit.burst,
                    "module {module} dropped {dropped} log lines in the last {:.1} s (runtime.log_lines_per_second, runtime.log_burst_lines)",
                    over.as_secs_f64()
                );
            }
        }
        let LogFields {
            rpc_id,
            api_id,
            mode,
            trace_id,
        } = call.map(LogCall::fields).unwrap_or_default();
        let trace_id = trace_id.map(tracing::field::display);
        macro_rules! line {
            ($event:ident) => {
                tracing::$event!(target: "metafi_runtime::script", engine, module, rpc_id, api_id, mode, trace_id, "{message}")
            };
        }
        match level {
            LogLevel::Debug => line!(debug),
            LogLevel::Info => line!(info),
            LogLevel::Warn => line!(warn),
            LogLevel::Error => line!(error),
        }
    }

    /// The storage-object service (server code's `storage_write_retry` runs its retry loop).
    pub fn objects(&self) -> &Arc<Objects> {
        &self.inner.services.objects
    }

    /// `storage_write_retry` for native modules: reads `ids`, calls `update` with the
    /// objects that exist, writes what it returns (each write's `version` is its condition)
    /// and starts over on a version conflict, at most `max_retries` (0–10) more times.
    pub async fn storage_write_retry<F, Fut, E>(
        &self,
        ids: Vec<ObjectId>,
        update: F,
        max_retries: usize,
    ) -> Result<Vec<ObjectAck>, metafi_core::objects::RetryError<E>>
    where
        F: FnMut(Vec<StorageObject>) -> Fut,
        Fut: std::future::Future<Output = Result<Vec<WriteInput>, E>>,
    {
        self.objects()
            .write_with_retries(ids, update, max_retries)
            .await
    }

    /// The storage indexes (kept by the objects service), or the error `nk.{name}` raises on
    /// a server without them.
    pub(crate) fn storage_indexes(
        &self,
        name: &str,
    ) -> Result<&Arc<metafi_core::storage_index::StorageIndexes>, crate::nk_api::NkError> {
        available(
            self.inner.services.objects.indexes(),
            name,
            "storage indexes",
        )
    }

    /// The node's storage indexes, which modules register into at start.
    pub fn index_service(&self) -> Option<&Arc<metafi_core::storage_index::StorageIndexes>> {
        self.inner.services.objects.indexes()
    }

    /// Reads objects by id; missing objects are left out. As the server: any owner, any
    /// permission. A nil `user_id` means system-owned objects.
    pub async fn storage_read(&self, ids: Vec<ObjectId>) -> Result<Vec<StorageObject>, CoreError> {
        self.inner.services.objects.read(Caller::Server, ids).await
    }

    /// Writes objects atomically; `user_id` of each write is its owner (nil: system-owned).
    pub async fn storage_write(
        &self,
        writes: Vec<WriteInput>,
    ) -> Result<Vec<ObjectAck>, CoreError> {
        self.inner
            .services
            .objects
            .write(Caller::Server, writes)
            .await
    }

    /// Lists a collection. `owner` narrows to one user's objects; `caller` lists as that user
    /// would see them (public and own objects) instead of as the server.
    pub async fn storage_list(
        &self,
        caller: Option<Uuid>,
        owner: Option<Uuid>,
        collection: &str,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<ObjectPage, CoreError> {
        let caller = caller.map_or(Caller::Server, Caller::User);
        self.inner
            .services
            .objects
            .list(caller, collection, owner, limit, cursor)
            .await
    }

    /// Deletes objects atomically; a delete with a version deletes only that version.
    pub async fn storage_delete(&self, deletes: Vec<DeleteInput>) -> Result<(), CoreError> {
        self.inner
            .services
            .objects
            .delete(Caller::Server, deletes)
            .await
    }

    /// A user's full account (profile, identities, wallet).
    pub async fn account_get_id(&self, user_id: Uuid) -> Result<Account, CoreError> {
        self.inner
            .services
            .store
            .account(user_id)
            .await
            .map_err(|e| CoreError::storage("reading an account", e))?
            .ok_or_else(|| CoreError::not_found("Account not found."))
    }

    /// Users by id, in no particular order; unknown ids are left out.
    pub async fn users_get_id(&self, ids: Vec<Uuid>) -> Result<Vec<User>, CoreError> {
        if ids.len() > MAX_USERS_PER_CALL {
            return Err(CoreError::invalid(format!(
                "Too many user ids: at most {MAX_USERS_PER_CALL} per call."
            )));
        }
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        self.inner
            .services
            .store
            .users_by_id(&ids)
            .await
            .map_err(|e| CoreError::storage("reading users", e))
    }

    pub async fn match_create(
        &self,
        module: &str,
        params: Map<String, Value>,
    ) -> Result<String, CoreError> {
        if module.is_empty() {
            return Err(CoreError::invalid("expects module name"));
        }
        self.inner.services.matches.create(module, params).await
    }

    /// `nk.world_create(map, options)` (MetaFi): a served world, as a match; answers its id.
    pub async fn world_create(
        &self,
        map: &str,
        options: Map<String, Value>,
    ) -> Result<String, CoreError> {
        if map.is_empty() {
            return Err(CoreError::invalid("expects map name"));
        }
        let Some(worlds) = self.worlds() else {
            return Err(CoreError::invalid("this server serves no worlds"));
        };
        worlds
            .create_world(map.to_owned(), options)
            .await
            .map_err(CoreError::invalid)
    }

    pub async fn match_get(&self, id: &str) -> Result<Option<MatchInfo>, CoreError> {
        self.inner.services.matches.get(id).await
    }

    pub async fn match_list(&self, query: ListQuery) -> Result<Vec<MatchInfo>, CoreError> {
        self.inner.services.matches.list(query).await
    }

    pub async fn match_signal(&self, id: &str, data: String) -> Result<String, CoreError> {
        self.inner.services.matches.signal(id, data).await
    }

    /// `nk.match_find_seat` (MetaFi): the id of a match of handler `module` passing `query`
    /// (its `query`, `label`, `min_size`, `max_size`) with a seat reserved for `user_id`,
    /// created with `params` when none of them has fewer than `seats` seats taken. The seat
    /// is counted by listings and the handler's pending joins until `user_id` joins, or
    /// `match.seat_reservation_ms` passes (`docs/MATCHES.md`, "Seats").
    pub async fn match_find_seat(
        &self,
        module: &str,
        params: Map<String, Value>,
        query: ListQuery,
        user_id: Uuid,
        seats: u32,
    ) -> Result<String, CoreError> {
        if module.is_empty() {
            return Err(CoreError::invalid("expects module name"));
        }
        self.inner
            .services
            .matches
            .find_seat(module, params, query, user_id, seats)
            .await
    }

    /// `nk.match_reserve_seat` (MetaFi): reserves a seat for `user_id` in match `id` (on any
    /// node of a cluster) if fewer than `seats` are taken; false when it is full, ended, or its
    /// node is gone.
    pub async fn match_reserve_seat(
        &self,
        id: &str,
        user_id: Uuid,
        seats: u32,
    ) -> Result<bool, CoreError> {
        self.inner
            .services
            .matches
            .reserve_seat(id, user_id, seats)
            .await
    }
}

/// The call a script's log line was written in: its id (an RPC's, or a host-reserved one,
/// [`crate::hooks::HOOK_KEY_PREFIX`]) and trace id.
#[derive(Debug, Clone, Copy)]
pub struct LogCall<'a> {
    pub id: &'a str,
    pub trace_id: Option<Uuid>,
}

/// The fields Nakama's log line of a script has: `rpc_id` in an RPC, `api_id` (the call's
/// lower-case name) and `mode` (`before`/`after`) in a hook, `mode` alone in the other
/// functions the server calls (`shutdown`, …), and `trace_id` where a client's request
/// started it.
#[derive(Debug, Default)]
struct LogFields<'a> {
    rpc_id: Option<&'a str>,
    api_id: Option<&'a str>,
    mode: Option<&'a str>,
    trace_id: Option<Uuid>,
}

impl<'a> LogCall<'a> {
    fn fields(self) -> LogFields<'a> {
        let mut fields = LogFields {
            trace_id: self.trace_id,
            ..LogFields::default()
        };
        if let Some((mode, _, name)) = crate::hooks::parse_hook_key(self.id) {
            fields.api_id = Some(name);
            fields.mode = Some(match mode {
                crate::hooks::HookMode::Before => "before",
                crate::hooks::HookMode::After => "after",
            });
        } else if let Some(reserved) = self.id.strip_prefix(crate::hooks::HOOK_KEY_PREFIX) {
            fields.mode = Some(reserved);
        } else {
            fields.rpc_id = Some(self.id);
        }
        fields
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(id: &str) -> (Option<&str>, Option<&str>, Option<&str>) {
        let f = LogCall { id, trace_id: None }.fields();
        (f.rpc_id, f.api_id, f.mode)
    }

    #[test]
    fn a_log_line_names_its_call_as_nakamas_does() {
        assert_eq!(fields("echo"), (Some("echo"), None, None));
        assert_eq!(
            fields("\u{1}before:authenticatedevice"),
            (None, Some("authenticatedevice"), Some("before"))
        );
        assert_eq!(
            fields("\u{1}rtafter:statusupdate"),
            (None, Some("statusupdate"), Some("after"))
        );
        assert_eq!(
            fields(crate::hooks::SHUTDOWN_KEY),
            (None, None, Some("shutdown"))
        );
        let trace_id = Uuid::from_u128(7);
        let f = LogCall {
            id: "echo",
            trace_id: Some(trace_id),
        }
        .fields();
        assert_eq!(f.trace_id, Some(trace_id));
    }
}
