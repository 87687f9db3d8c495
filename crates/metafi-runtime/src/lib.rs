//! MetaFi's script host: server code in Lua, JavaScript and native Rust behind one
//! [`RpcDispatch`](metafi_core::RpcDispatch) implementation, [`Runtime`].
//!
//! - [`host`] is the engine interface: what a script engine implements ([`EngineFactory`],
//!   [`EngineVm`]) and what it receives (modules, the [`Nk`] API, [`VmLimits`]). The engines are
//!   peer crates over this interface: Lua in `metafi-runtime-lua`, JavaScript in
//!   `metafi-runtime-js`.
//! - [`native`] is the native Rust path: [`NativeModule`]s compiled into the binary.
//! - [`Nk`] is the `nk` API as Rust functions; engines only convert values.
//! - [`MatchHost`] is what `nk.match_*` needs from the match engine, injected by the server;
//!   [`EngineMatchHost`] implements it over `metafi-match`, and [`MatchHandlers`] maps handler
//!   names to the runtime that runs them (Lua modules, JS `registerMatch`, native
//!   `register_match`) on the match executor threads.
//! - [`RealtimeHost`] is what `nk.stream_*`, `nk.channel_message_*`, `nk.status_follow` and
//!   `nk.session_disconnect` need from the realtime layer, injected by the server
//!   (`RuntimeServices::with_realtime`).
//!
//! Threads: each engine has a pool of VM threads (one VM each, modules loaded, a current-thread
//! tokio runtime); native functions run on the caller's IO runtime. Every call has a time
//! budget, every VM a memory cap. Design and engine contract: `docs/RUNTIME.md`.
//!
//! Must not depend on: the transport, the REST API, the server binary, a storage backend, a
//! script engine (its tests use the Lua engine as a dev-dependency).
//! Key types: [`Runtime`], [`RuntimeBuilder`], [`RuntimeConfig`], [`Nk`], [`EngineFactory`],
//! [`NativeModule`], [`MatchHost`].

mod block;
pub mod context;
pub mod error;
pub mod hooks;
pub mod host;
mod inline;
mod job_queue;
mod last_errors;
pub mod log_limit;
pub mod match_bridge;
pub mod match_host;
pub mod modules;
pub mod native;
pub mod nk;
pub mod nk_api;
mod pool;
pub mod realtime_host;
mod runtime;
pub mod storage_indexes;
#[cfg(feature = "test-util")]
pub mod testing;
mod watchdog;
pub mod world_host;

pub use block::block_on_until;
pub use context::{CallContext, ExecutionMode};
pub use error::{LoadError, RpcError, ScriptError, code_from_number};
pub use hooks::{HookMode, RuntimeHooks, hook_key};
pub use host::{
    EngineFactory, EngineVm, HookArgs, LocalFuture, ModuleSource, Registered, Registrations,
    RpcCall, VmLimits, VmSetup,
};
pub use inline::{may_block, on_inline_call};
pub use log_limit::LogLimit;
pub use match_host::{
    EngineMatchHost, MATCHMAKER_MATCHED_HOOK, MatchHandlers, MatchHost, MatchVms, NoMatches,
};
pub use metafi_core::{HookMessage, HookValue};
pub use native::{
    NativeEvent, NativeInitializer, NativeMatch, NativeMatchmakerMatched, NativeModule,
};
pub use nk::{AccountServices, LogLevel, Nk, RuntimeServices};
pub use pool::PoolConfig;
pub use realtime_host::{
    ChannelEdit, ChannelSender, RealtimeHost, StreamId, StreamJoin, StreamJoinError, StreamMeta,
    StreamPresence,
};
pub use runtime::{Runtime, RuntimeBuilder, RuntimeConfig, default_inline_vms};
pub use watchdog::DEFAULT_WATCHDOG_GRACE;
pub use world_host::WorldHost;
