//! MetaFi's match engine: authoritative matches run by server code with Nakama's handler
//! contract, relayed (client-driven) matches, match listing with Nakama's query forms, and the
//! matchmaker.
//!
//! - [`MatchHandler`] is the contract a Lua, JavaScript or native handler implements
//!   (`match_init`, `match_join_attempt`, `match_join`, `match_leave`, `match_loop`,
//!   `match_terminate`, `match_signal`); a [`Dispatcher`] is what a callback sends through.
//! - [`Matches`] is the registry every edge uses: create, join (with capacity enforced one
//!   attempt at a time per match, pending joins counted), leave, send data, list, signal.
//! - [`Scheduler`] is one executor thread's sans-IO core: many matches ticked in deadline order,
//!   time read from an injected [`MonotonicClock`], so tests drive it tick by tick with a
//!   [`FakeClock`]. [`Executor`] owns the threads (one per core by default).
//! - Listings ([`ListQuery`]) are answered from an index updated synchronously on every join,
//!   leave and label change; queries are parsed by [`Query`].
//! - [`Matchmaker`] is the ticket pool and its matching pass, also sans-IO; [`Matchmaking`]
//!   wraps it with the runtime's `matchmaker_matched` hook and [`MatchTokens`].
//! - [`Outlet`] is where messages for sessions go; the realtime layer implements it.
//!
//! Design, scheduling, capacity rules and the query syntax: `docs/MATCHES.md`.
//!
//! Must not depend on: sockets and transports, HTTP, script engines (they implement
//! [`MatchHandler`]), storage backends. Key types: [`Matches`], [`MatchHandler`],
//! [`Dispatcher`], [`Scheduler`], [`Executor`], [`Query`], [`Matchmaker`], [`Outlet`].

mod authoritative;
mod clock;
mod config;
mod dispatcher;
mod error;
mod executor;
mod id;
mod idle;
mod inspect;
mod listing;
mod load;
mod mailbox;
mod match_handler;
mod matchmaker_pool;
mod matchmaker_service;
mod matchmaker_tokens;
mod metrics;
mod outlet;
mod phase;
mod presence;
use metafi_core::search::fields;
/// The query language of listings and tickets, shared with storage indexes (it lives in
/// `metafi_core::search`).
pub use metafi_core::search::query;
mod registry;
mod relayed;
mod remote;
mod scheduler;
mod shared;
#[cfg(any(test, feature = "test-util"))]
pub mod testing;

pub use authoritative::JoinOutcome;
pub use clock::{FakeClock, MonotonicClock, SystemMonotonic};
pub use config::{
    MAX_TICK_RATE, MatchConfig, MatchmakerConfig, Objective, Placement, default_threads,
};
pub use dispatcher::{Broadcast, DispatchError, Dispatcher, MAX_LABEL_BYTES};
pub use error::MatchError;
pub use executor::Executor;
pub use fields::{FieldValue, Fields};
pub use id::{InvalidMatchId, MatchId};
pub use idle::{IDLE_MARGIN, IDLE_SLICE, IdleStatus, register_idle_task};
pub use inspect::MatchState;
pub use listing::{ListQuery, MatchInfo};
pub use load::NodeLoad;
pub use match_handler::{
    BuiltHandler, Flow, HandlerError, HandlerFactory, InputTap, JoinRequest, JoinVerdict,
    MatchContext, MatchHandler, MatchInit, MatchSpec, Movable, Params, PresenceEvents,
};
pub use matchmaker_pool::{
    MatchedEntry, Matchmaker, MatchmakerError, PoolStats, TicketCopy, TicketRequest,
};
pub use matchmaker_service::{
    Completion, Formed, HookResult, MatchTarget, MatchmakerHook, MatchmakerStats, Matchmaking,
    PoolListener,
};
pub use matchmaker_tokens::{InvalidToken, MatchTokens};
pub use outlet::{OutgoingData, Outlet, PresenceEvent};
pub use presence::{MatchMessage, Presence, PresenceReason};
pub use query::{Query, QueryError};
pub use registry::Matches;
pub use relayed::RelayedJoin;
pub use remote::{
    BoxFuture, ListedMatch, RemoteListing, RemoteMatches, SeatRequest, WeakMatches, merge,
};
pub use scheduler::{HandOffRefused, Scheduler, SchedulerSeed};
pub use shared::{MatchStatsSnapshot, Queued};
