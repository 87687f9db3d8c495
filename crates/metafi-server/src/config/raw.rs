//! The configuration as written: every key, its default, no cross-field validation yet.
//! The documentation of each key lives in `default.toml`, which is what users read.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawConfig {
    pub name: String,
    pub data_dir: String,
    pub socket: RawSocket,
    pub session: RawSession,
    pub database: RawDatabase,
    pub accounts: RawAccounts,
    pub logger: RawLogger,
    pub metrics: RawMetrics,
    pub shutdown: RawShutdown,
    pub runtime: RawRuntime,
    #[serde(rename = "match")]
    pub matches: RawMatch,
    pub matchmaker: RawMatchmaker,
    pub party: RawParty,
    pub quic: RawQuic,
    pub http: RawHttp,
    pub signin_throttle: RawSignInThrottle,
    pub notification: RawNotification,
    pub friends: RawFriends,
    pub social: RawSocial,
    pub iap: super::iap::RawIap,
    pub cluster: super::cluster::RawCluster,
    pub console: super::console::RawConsole,
    pub world: super::world::RawWorld,
    pub agones: super::agones::RawAgones,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawSocket {
    pub address: String,
    pub port: i64,
    pub server_key: String,
    pub max_request_size_bytes: i64,
    /// Largest realtime message a client may send.
    pub max_message_size_bytes: i64,
    /// Read buffer of each realtime socket.
    pub read_buffer_size_bytes: i64,
    /// Outgoing bytes gathered before a write to the network.
    pub write_buffer_size_bytes: i64,
    /// Messages queued for one client before it is disconnected: a sanity bound far above
    /// bursts (merged presence events count once); the byte and age bounds do the real work.
    pub outgoing_queue_size: i64,
    /// Bytes queued for one client (encoded messages plus bookkeeping) before it is
    /// disconnected as not reading.
    pub outgoing_queue_bytes: i64,
    /// How long messages may wait for one client while its writer can write none before it is
    /// disconnected as not reading, milliseconds.
    pub outgoing_queue_max_age_ms: i64,
    /// Ping a client that sent nothing for this long.
    pub ping_period_ms: i64,
    /// Close a socket that sent nothing (not even a pong) for this long.
    pub pong_wait_ms: i64,
    /// Close a socket when writing one frame (or flushing) takes longer.
    pub write_wait_ms: i64,
    /// How long to wait for the client's answer to a close frame.
    pub close_ack_wait_ms: i64,
    /// Close a socket that sent no message for this long; 0 never.
    pub idle_timeout_ms: i64,
    /// Chat channels one socket may be in at once.
    pub max_channels_per_session: i64,
    /// Users one socket may follow.
    pub max_followed_users: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawSession {
    pub encryption_key: String,
    pub refresh_encryption_key: String,
    pub token_expiry_sec: i64,
    pub refresh_token_expiry_sec: i64,
    pub revocation_purge_interval_sec: i64,
    /// Session tokens whose verified claims are remembered (0: verify every call in full).
    pub verified_token_cache_size: i64,
    /// One realtime socket per user: a new one closes the older ones.
    pub single_socket: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawDatabase {
    pub url: String,
    pub sqlite_readers: i64,
    pub postgres_pool_size: i64,
    pub max_write_batch: i64,
    pub write_queue_capacity: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawAccounts {
    pub bcrypt_cost: i64,
    pub max_concurrent_hashes: i64,
    pub max_exported_objects: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawLogger {
    pub level: String,
    pub format: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawMetrics {
    pub enabled: bool,
    pub address: String,
    pub port: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawShutdown {
    pub grace_period_sec: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawRuntime {
    /// Module directory; empty means `<data_dir>/modules`.
    pub path: String,
    /// Key of server-to-server RPC calls.
    pub http_key: String,
    /// `KEY=VALUE` strings scripts see as `ctx.env`.
    pub env: Vec<String>,
    /// Time budget of one RPC call, milliseconds.
    pub call_timeout_ms: i64,
    /// Time budget of loading one module, milliseconds.
    pub load_timeout_ms: i64,
    /// Memory cap of one script VM, MiB.
    pub memory_limit_mb: i64,
    /// How long a call may keep its script VM busy past its deadline before the VM is declared
    /// wedged and replaced, milliseconds.
    pub watchdog_grace_ms: i64,
    /// Lua VM threads; 0 means one per CPU core.
    pub lua_vms: i64,
    /// Calls in flight on one Lua VM (interleaved while they await IO).
    pub lua_max_calls_per_vm: i64,
    /// Calls that may wait for a Lua VM, over all VMs.
    pub lua_queue_capacity: i64,
    /// JavaScript VM threads; 0 means four per CPU core.
    pub js_vms: i64,
    /// Calls one JavaScript VM takes from its queue at once (they run one after another).
    pub js_max_calls_per_vm: i64,
    /// Calls that may wait for a JavaScript VM, over all VMs.
    pub js_queue_capacity: i64,
    /// Freeze the JavaScript intrinsics (`Object.prototype`, `JSON`, …) once the modules are
    /// loaded, so no call can change them for the calls after it (Nakama's key).
    pub js_read_only_globals: bool,
    /// Run script calls on the IO thread that received them, in a VM of that thread, instead
    /// of handing them to a VM thread (docs/RUNTIME.md, "Calls without thread hops").
    pub inline_calls: bool,
    /// Most VMs each script engine builds on IO threads for inline calls; 0 means two per core.
    pub inline_vms: i64,
    /// Last errors kept per module (failed RPCs, hooks, match handlers) for the console.
    pub errors_per_module: i64,
    /// Script log lines one module may write per second, sustained (every runtime's logger);
    /// excess lines are dropped and counted. 0 turns the limit off.
    pub log_lines_per_second: i64,
    /// Script log lines one module may write at once before the per-second rate applies.
    pub log_burst_lines: i64,
    /// Entries of each local cache (`nk.localcache_put`); a full cache evicts its oldest entry.
    pub local_cache_max_entries: i64,
    /// Bytes of values each local cache holds, estimated; past it the oldest entries go.
    pub local_cache_max_bytes: i64,
    /// Largest response body `nk.http_request` reads, bytes; a larger one fails the call.
    pub http_request_max_bytes: i64,
    /// Largest file `nk.file_read` reads, bytes.
    pub file_read_max_bytes: i64,
    /// Distinct custom metric series (kind, name, labels) scripts may create; new ones past it
    /// are dropped and counted.
    pub metrics_custom_series_max: i64,
    /// Events (`POST /v2/event`, `nk.event`) waiting for the event processors; more are
    /// dropped and counted.
    pub event_queue_size: i64,
    /// Events processed at once.
    pub event_queue_workers: i64,
}

impl Default for RawConfig {
    fn default() -> Self {
        RawConfig {
            name: "metafi".into(),
            data_dir: "./data".into(),
            socket: RawSocket::default(),
            session: RawSession::default(),
            database: RawDatabase::default(),
            accounts: RawAccounts::default(),
            logger: RawLogger::default(),
            metrics: RawMetrics::default(),
            shutdown: RawShutdown::default(),
            runtime: RawRuntime::default(),
            matches: RawMatch::default(),
            matchmaker: RawMatchmaker::default(),
            party: RawParty::default(),
            quic: RawQuic::default(),
            http: RawHttp::default(),
            signin_throttle: RawSignInThrottle::default(),
            notification: RawNotification::default(),
            friends: RawFriends::default(),
            social: RawSocial::default(),
            iap: super::iap::RawIap::default(),
            cluster: super::cluster::RawCluster::default(),
            console: super::console::RawConsole::default(),
            world: super::world::RawWorld::default(),
            agones: super::agones::RawAgones::default(),
        }
    }
}

impl Default for RawSocket {
    fn default() -> Self {
        RawSocket {
            address: "127.0.0.1".into(),
            port: 7350,
            server_key: "defaultkey".into(),
            max_request_size_bytes: 262_144,
            max_message_size_bytes: 4096,
            read_buffer_size_bytes: 4096,
            write_buffer_size_bytes: 4096,
            outgoing_queue_size: 16_384,
            outgoing_queue_bytes: 4_194_304,
            outgoing_queue_max_age_ms: 10_000,
            ping_period_ms: 15_000,
            pong_wait_ms: 25_000,
            write_wait_ms: 5_000,
            close_ack_wait_ms: 2_000,
            idle_timeout_ms: 0,
            max_channels_per_session: 128,
            max_followed_users: 1_024,
        }
    }
}

impl Default for RawSession {
    fn default() -> Self {
        RawSession {
            encryption_key: "defaultencryptionkey".into(),
            refresh_encryption_key: "defaultrefreshencryptionkey".into(),
            token_expiry_sec: 60,
            refresh_token_expiry_sec: 3600,
            revocation_purge_interval_sec: 600,
            verified_token_cache_size: 16_384,
            single_socket: false,
        }
    }
}

impl Default for RawDatabase {
    fn default() -> Self {
        RawDatabase {
            url: String::new(),
            sqlite_readers: 4,
            postgres_pool_size: 16,
            max_write_batch: 512,
            write_queue_capacity: 16_384,
        }
    }
}

impl Default for RawAccounts {
    fn default() -> Self {
        RawAccounts {
            bcrypt_cost: 10,
            max_concurrent_hashes: 0,
            max_exported_objects: 10_000,
        }
    }
}

impl Default for RawLogger {
    fn default() -> Self {
        RawLogger {
            level: "info".into(),
            format: "text".into(),
        }
    }
}

impl Default for RawMetrics {
    fn default() -> Self {
        RawMetrics {
            enabled: true,
            address: "127.0.0.1".into(),
            port: 9100,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawNotification {
    /// Most notifications one send (or one delete, get or update by id) may name.
    pub max_per_send: i64,
    /// Users a persistent send to everyone stores notifications for at a time.
    pub send_all_batch: i64,
}

impl Default for RawNotification {
    fn default() -> Self {
        RawNotification {
            max_per_send: 1000,
            send_all_batch: 10_000,
        }
    }
}

impl Default for RawShutdown {
    fn default() -> Self {
        RawShutdown {
            grace_period_sec: 10,
        }
    }
}

impl Default for RawRuntime {
    fn default() -> Self {
        RawRuntime {
            path: String::new(),
            http_key: "defaulthttpkey".into(),
            env: Vec::new(),
            call_timeout_ms: 5_000,
            load_timeout_ms: 30_000,
            memory_limit_mb: 64,
            watchdog_grace_ms: 1_000,
            lua_vms: 0,
            lua_max_calls_per_vm: 64,
            lua_queue_capacity: 1_024,
            js_vms: 0,
            js_max_calls_per_vm: 1,
            js_queue_capacity: 1_024,
            js_read_only_globals: true,
            inline_calls: true,
            inline_vms: 0,
            errors_per_module: 20,
            log_lines_per_second: 100,
            log_burst_lines: 1_000,
            local_cache_max_entries: 10_000,
            local_cache_max_bytes: 67_108_864,
            http_request_max_bytes: 4_194_304,
            file_read_max_bytes: 16_777_216,
            metrics_custom_series_max: 1_000,
            event_queue_size: 65_536,
            event_queue_workers: 8,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawMatch {
    /// Client messages waiting for a match's next tick; more are dropped and counted.
    pub input_queue_size: i64,
    /// Leaves and join completions waiting for a match; past it the match is stopped.
    pub call_queue_size: i64,
    /// `nk.match_signal` calls waiting for a match.
    pub signal_queue_size: i64,
    /// Join attempts waiting for a match.
    pub join_attempt_queue_size: i64,
    /// Deferred broadcasts one handler callback may queue.
    pub deferred_queue_size: i64,
    /// How long an accepted join waits for its client to complete it, milliseconds.
    pub join_marker_deadline_ms: i64,
    /// How long a seat reserved for a player on its way is held for its join, milliseconds.
    pub seat_reservation_ms: i64,
    /// Stop a match empty this long, seconds; 0 keeps empty matches.
    pub max_empty_sec: i64,
    /// Executor threads ticking matches; 0 means one per CPU core.
    pub executor_threads: i64,
    /// Highest tick rate a handler may ask for.
    pub max_tick_rate: i64,
    /// Time budget of one handler callback, milliseconds.
    pub handler_budget_ms: i64,
    /// How long a join attempt, match creation or signal waits for its match, milliseconds.
    pub reply_timeout_ms: i64,
    /// Script match handlers: one VM per match (true) or one per executor thread (false).
    pub vm_per_match: bool,
    /// Latency objective: tick lateness p99 at most this, microseconds.
    pub objective_lateness_us: i64,
    /// Latency objective: executor CPU at most this share of its cores, percent.
    pub objective_cpu_percent: i64,
    /// Window the lateness p99 is judged over, milliseconds.
    pub objective_window_ms: i64,
    /// CPU a new match of a handler with no measured match is assumed to cost, µs per second.
    pub new_match_cpu_us: i64,
    /// Where a new match goes: "cost" (most headroom) or "count" (fewest matches).
    pub placement: String,
    /// Refuse new matches that would break the objective.
    pub admission: bool,
    /// Stretch the ticks of the dearest match of a thread past the CPU objective.
    pub stretch_overloaded: bool,
    /// Put a new match's first tick where its executor thread has the fewest ticks due.
    pub spread_tick_phases: bool,
    /// How many milliseconds early a tick may run to share a step with ticks due soon after.
    pub tick_batch_window_ms: i64,
    /// Hand a movable (native) match off from a thread whose ticks run late to the least
    /// loaded thread.
    pub hand_off: bool,
    /// How long a thread's lateness must break the objective before it hands a match off.
    pub hand_off_after_ms: i64,
}

impl Default for RawMatch {
    fn default() -> Self {
        RawMatch {
            input_queue_size: 128,
            call_queue_size: 128,
            signal_queue_size: 10,
            join_attempt_queue_size: 128,
            deferred_queue_size: 128,
            join_marker_deadline_ms: 15_000,
            seat_reservation_ms: 10_000,
            max_empty_sec: 0,
            executor_threads: 0,
            max_tick_rate: 128,
            handler_budget_ms: 100,
            reply_timeout_ms: 10_000,
            vm_per_match: false,
            objective_lateness_us: 2_000,
            objective_cpu_percent: 75,
            objective_window_ms: 2_000,
            new_match_cpu_us: 200,
            placement: "cost".into(),
            admission: true,
            stretch_overloaded: true,
            spread_tick_phases: true,
            tick_batch_window_ms: 4,
            hand_off: true,
            hand_off_after_ms: 4_000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawMatchmaker {
    /// Tickets one session may hold at once.
    pub max_tickets: i64,
    /// Seconds between matchmaking passes.
    pub interval_sec: i64,
    /// Passes a ticket waits for its maximum count before settling for fewer.
    pub max_intervals: i64,
    /// Require every matched ticket's query to accept the others too.
    pub rev_precision: bool,
    /// Lifetime of a matchmaker token, seconds.
    pub token_ttl_sec: i64,
}

impl Default for RawMatchmaker {
    fn default() -> Self {
        RawMatchmaker {
            max_tickets: 3,
            interval_sec: 15,
            max_intervals: 2,
            rev_precision: false,
            token_ttl_sec: 30,
        }
    }
}

/// `[party]`: parties (`docs/REALTIME.md`, "Parties").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawParty {
    /// Parties this node holds at once.
    pub max_parties: i64,
    /// The largest `max_size` a party may be created with (at most 256, Nakama's bound).
    pub max_size: i64,
}

impl Default for RawParty {
    fn default() -> Self {
        RawParty {
            max_parties: 100_000,
            max_size: 256,
        }
    }
}

/// `[quic]`: the QUIC transport (`docs/TRANSPORT.md`); `default.toml` documents each key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawQuic {
    /// Serve realtime sessions over QUIC too.
    pub enabled: bool,
    /// Listen address; empty means `socket.address`.
    pub address: String,
    /// UDP port; -1 means `socket.port + 2` (0 when `socket.port` is 0).
    pub port: i64,
    /// Operator certificate chain (PEM); empty generates a self-signed one in the data dir.
    pub cert_path: String,
    /// Operator private key (PEM), with `cert_path`.
    pub key_path: String,
    /// Deadline of the TLS handshake and of the client's hello, milliseconds.
    pub handshake_timeout_ms: i64,
    /// Connection attempts handshaken at once.
    pub max_incoming: i64,
    /// TLS sessions kept for resumption and 0-RTT.
    pub session_cache: i64,
    /// How long queued messages may take to be acknowledged when a session closes, ms.
    pub close_wait_ms: i64,
    /// Envelopes received and not yet handled, per connection.
    pub receive_queue: i64,
    /// RTT assumed before the first measurement, milliseconds.
    pub initial_rtt_ms: i64,
    /// Acknowledgement delay asked of the peer, milliseconds.
    pub max_ack_delay_ms: i64,
    /// Packets the peer may receive before it must acknowledge.
    pub ack_eliciting_threshold: i64,
    /// Loss detection: later packets acknowledged before a packet counts as lost.
    pub packet_threshold: i64,
    /// Loss detection: RTTs after which an unacknowledged packet counts as lost.
    pub time_threshold: f64,
    /// Congestion controller: cubic, new_reno or bbr.
    pub congestion: String,
    /// Outgoing datagram bytes queued; more drop the oldest.
    pub datagram_send_buffer_bytes: i64,
    /// Incoming datagram bytes buffered; more drop the oldest.
    pub datagram_receive_buffer_bytes: i64,
    /// Datagram copies of each small reliable message; 0 is off.
    pub redundancy_copies: i64,
    /// Largest message that gets copies, bytes.
    pub redundancy_max_bytes: i64,
    /// Time between a message and each copy, milliseconds.
    pub redundancy_spacing_ms: i64,
    /// Quiet time after which a latest-wins key's last value is sent reliably, milliseconds.
    pub latest_settle_ms: i64,
    /// Named reliable-ordered streams per connection and direction.
    pub max_ordered_streams: i64,
    /// Latest-wins keys tracked per connection and direction.
    pub max_latest_keys: i64,
    /// Reliable-unordered messages in flight per connection and direction.
    pub max_unordered_in_flight: i64,
    /// Keep-alive interval, milliseconds; 0 is off.
    pub keep_alive_ms: i64,
    /// Drop a connection silent this long, milliseconds.
    pub idle_timeout_ms: i64,
    /// Probe for a path MTU above 1200 bytes.
    pub mtu_discovery: bool,
}

impl Default for RawQuic {
    fn default() -> Self {
        RawQuic {
            enabled: true,
            address: String::new(),
            port: -1,
            cert_path: String::new(),
            key_path: String::new(),
            handshake_timeout_ms: 120_000,
            max_incoming: 4_096,
            session_cache: 4_096,
            close_wait_ms: 2_000,
            receive_queue: 256,
            initial_rtt_ms: 333,
            max_ack_delay_ms: 25,
            ack_eliciting_threshold: 1,
            packet_threshold: 3,
            time_threshold: 1.125,
            congestion: "cubic".into(),
            datagram_send_buffer_bytes: 8_192,
            datagram_receive_buffer_bytes: 65_536,
            redundancy_copies: 1,
            redundancy_max_bytes: 256,
            redundancy_spacing_ms: 5,
            latest_settle_ms: 100,
            max_ordered_streams: 16,
            max_latest_keys: 256,
            max_unordered_in_flight: 128,
            keep_alive_ms: 5_000,
            idle_timeout_ms: 60_000,
            mtu_discovery: false,
        }
    }
}

/// `[http]`: the HTTP edge below the routes, CORS and connection timeouts (`docs/HTTP.md`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawHttp {
    /// Origins browsers may call from; `["*"]` is any.
    pub cors_allowed_origins: Vec<String>,
    /// Request headers browser pages may send.
    pub cors_allowed_headers: Vec<String>,
    /// How long browsers may cache a preflight answer, seconds; 0 sends no max age.
    pub cors_max_age_sec: i64,
    /// Time for a request's head to arrive after its first byte, milliseconds.
    pub header_read_timeout_ms: i64,
    /// Time for a request's whole body to arrive after its head, milliseconds.
    pub body_read_timeout_ms: i64,
    /// Close a connection idle between requests, or stalled writing a response, this long, ms.
    pub idle_timeout_ms: i64,
}

impl Default for RawHttp {
    fn default() -> Self {
        RawHttp {
            cors_allowed_origins: vec!["*".into()],
            cors_allowed_headers: vec![
                "Authorization".into(),
                "Content-Type".into(),
                "User-Agent".into(),
            ],
            cors_max_age_sec: 600,
            header_read_timeout_ms: 10_000,
            body_read_timeout_ms: 30_000,
            idle_timeout_ms: 60_000,
        }
    }
}

/// `[signin_throttle]`: failed sign-ins per account and per client address (`docs/HTTP.md`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawSignInThrottle {
    /// Failed sign-ins of one account in a window before it is refused; 0 is off.
    pub max_failures_per_account: i64,
    /// Failed sign-ins from one address in a window before it is refused; 0 is off.
    pub max_failures_per_address: i64,
    /// Length of the window, from its first failure, seconds.
    pub window_sec: i64,
    /// Accounts (and, separately, addresses) remembered at most.
    pub max_entries: i64,
}

impl Default for RawSignInThrottle {
    fn default() -> Self {
        RawSignInThrottle {
            max_failures_per_account: 10,
            max_failures_per_address: 100,
            window_sec: 300,
            max_entries: 100_000,
        }
    }
}

/// `[friends]`: the bound on one user's relationships (`docs/SOCIAL.md`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawFriends {
    /// Most relationships one user may hold: friends, invites sent and received, blocks.
    pub max_friends: i64,
}

impl Default for RawFriends {
    fn default() -> Self {
        RawFriends {
            max_friends: i64::try_from(metafi_core::friends::DEFAULT_MAX_FRIENDS)
                .unwrap_or(i64::MAX),
        }
    }
}

/// `[social]`: social sign-in (`docs/SOCIAL.md`). Nakama's keys keep Nakama's names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawSocial {
    /// Timeout of each call to a provider, milliseconds.
    pub timeout_ms: i64,
    /// Largest provider answer read, bytes.
    pub max_response_bytes: i64,
    /// How long a fetched key set is used before it is fetched again, seconds.
    pub keys_refresh_sec: i64,
    pub apple: RawSocialApple,
    pub google: RawSocialGoogle,
    pub facebook: RawSocialFacebook,
    pub facebook_limited_login: RawSocialFacebookLimitedLogin,
    pub facebook_instant_game: RawSocialFacebookInstantGame,
    pub steam: RawSocialSteam,
    pub game_center: RawSocialGameCenter,
}

impl Default for RawSocial {
    fn default() -> Self {
        let core = metafi_core::SocialConfig::default();
        RawSocial {
            timeout_ms: 5_000,
            max_response_bytes: 1 << 20,
            keys_refresh_sec: 3_600,
            apple: RawSocialApple {
                bundle_id: String::new(),
                keys_url: core.apple_keys_url,
            },
            google: RawSocialGoogle {
                client_ids: Vec::new(),
                keys_url: core.google_keys_url,
            },
            facebook: RawSocialFacebook {
                graph_url: core.facebook_graph_url,
                friends_url: core.facebook_friends_url,
            },
            facebook_limited_login: RawSocialFacebookLimitedLogin {
                app_id: String::new(),
                keys_url: core.facebook_limited_keys_url,
            },
            facebook_instant_game: RawSocialFacebookInstantGame::default(),
            steam: RawSocialSteam {
                publisher_key: String::new(),
                app_id: 0,
                auth_url: core.steam_auth_url,
                friends_url: core.steam_friends_url,
            },
            game_center: RawSocialGameCenter::default(),
        }
    }
}

/// `[social.apple]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawSocialApple {
    /// The app's bundle id; empty disables Sign in with Apple.
    pub bundle_id: String,
    /// Apple's key set.
    pub keys_url: String,
}

/// `[social.google]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawSocialGoogle {
    /// OAuth client ids id tokens must be issued to; empty accepts any (Nakama).
    pub client_ids: Vec<String>,
    /// Google's key set.
    pub keys_url: String,
}

/// `[social.facebook]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawSocialFacebook {
    /// The Graph API `me` endpoint.
    pub graph_url: String,
    /// The Graph API `me/friends` endpoint (friend import).
    pub friends_url: String,
}

/// `[social.facebook_limited_login]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawSocialFacebookLimitedLogin {
    /// The app id Limited Login tokens must be issued to; empty accepts any (Nakama).
    pub app_id: String,
    /// Facebook Limited Login's key set.
    pub keys_url: String,
}

/// `[social.facebook_instant_game]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawSocialFacebookInstantGame {
    /// The app secret signed player info is checked with.
    pub app_secret: String,
}

/// `[social.steam]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawSocialSteam {
    /// The publisher Web API key; empty disables Steam sign-in.
    pub publisher_key: String,
    /// The app id; 0 disables Steam sign-in.
    pub app_id: i64,
    /// Steam's `AuthenticateUserTicket` endpoint.
    pub auth_url: String,
    /// Steam's `GetFriendList` endpoint (friend import).
    pub friends_url: String,
}

/// `[social.game_center]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RawSocialGameCenter {
    /// Public key URL prefixes accepted besides Apple's `https://*.apple.com/…`.
    pub extra_public_key_url_prefixes: Vec<String>,
}
