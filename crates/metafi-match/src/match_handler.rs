//! The match handler contract: what server code (Lua, JavaScript or native Rust) implements to
//! run an authoritative match, with Nakama's callbacks and semantics.
//!
//! The engine calls a handler from one executor thread for the match's whole life, one
//! callback at a time, so a handler needs no locking and need not be `Send` (a script VM never
//! moves). The *state* of the match lives inside the handler (a Lua value in its VM, a Rust
//! struct); a callback says whether the match goes on ([`Flow::Continue`]) or ends
//! ([`Flow::End`], Nakama's "returned nil state").

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Map, Value};

use crate::dispatcher::Dispatcher;
use crate::presence::{MatchMessage, Presence, PresenceReason};

/// Whether the match goes on after a callback. `End` is Nakama's "nil state": the engine stops
/// the match at once (no `match_terminate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    End,
}

/// What `match_init` decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchInit {
    /// Ticks per second, 1 to `match.max_tick_rate` (at most 128).
    pub tick_rate: u32,
    /// The label listings show and queries search; JSON objects are indexed field by field.
    pub label: String,
}

/// The answer to a join attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinVerdict {
    pub flow: Flow,
    pub allow: bool,
    /// Sent to a rejected client instead of Nakama's "Match join rejected".
    pub reason: Option<String>,
}

/// How a callback failed. Any error ends the match (Nakama's semantics), is logged with the
/// match id and handler, and is counted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandlerError {
    /// The handler raised an error (a script error, a Rust `Err`).
    #[error("{message}")]
    Failed { message: String },
    /// The callback returned something the contract does not allow (a bad tick rate, a label
    /// over 2048 bytes, a non-boolean join result).
    #[error("{message}")]
    Invalid { message: String },
    /// The callback ran past its time budget (`match.handler_budget_ms`) and was stopped.
    #[error("the callback ran past its time budget")]
    Timeout,
    /// The script VM reached its memory cap.
    #[error("the script VM ran out of memory")]
    OutOfMemory,
    /// The handler panicked (native code).
    #[error("the handler panicked: {message}")]
    Panicked { message: String },
}

impl HandlerError {
    pub fn failed(message: impl Into<String>) -> HandlerError {
        HandlerError::Failed {
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> HandlerError {
        HandlerError::Invalid {
            message: message.into(),
        }
    }

    /// A fixed label for metrics and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            HandlerError::Failed { .. } => "error",
            HandlerError::Invalid { .. } => "invalid_result",
            HandlerError::Timeout => "timeout",
            HandlerError::OutOfMemory => "out_of_memory",
            HandlerError::Panicked { .. } => "panic",
        }
    }
}

/// What every callback can read about its match. Scripts see it as `ctx` (Lua `match_id`,
/// `match_node`, `match_label`, `match_tick_rate`, …; JS the camelCase names).
#[derive(Debug, Clone)]
pub struct MatchContext {
    /// `<uuid>.<node>`.
    pub match_id: Arc<str>,
    pub node: Arc<str>,
    /// The module (Lua) or registered name (JS, native) that runs the match.
    pub handler_name: Arc<str>,
    /// Current label (empty until `match_init` returns).
    pub label: Arc<str>,
    /// Ticks per second (0 until `match_init` returns).
    pub tick_rate: u32,
    /// Presences that have joined (those `match_join` was called with and that have not left).
    pub presences: usize,
    /// Join attempts this match accepted whose clients have not completed the join yet. A
    /// capacity check must count them: `presences + pending_joins < max` admits exactly `max`
    /// players however many race to join. A pending join that is never completed (the client
    /// vanished) expires after `match.join_marker_deadline_ms` without any callback. Seats
    /// reserved for players on their way (`Matches::find_seat`, `Matches::reserve_seat`) count
    /// here too, except the joiner's own during its `join_attempt` (`docs/MATCHES.md`, "Seats").
    pub pending_joins: usize,
    /// When the running callback must return; script engines stop code that runs past it.
    pub deadline: Instant,
}

/// A client asking to join an authoritative match; `match_join_attempt` decides.
#[derive(Debug, Clone)]
pub struct JoinRequest {
    pub presence: Arc<Presence>,
    /// From the client's `match_join` message.
    pub metadata: HashMap<String, String>,
    /// Session variables from the session token.
    pub vars: Arc<HashMap<String, String>>,
    /// Session token expiry, seconds since the Unix epoch.
    pub session_expiry: i64,
    pub client_ip: Option<String>,
    pub client_port: Option<String>,
}

/// Parameters given to `match_init` (`nk.match_create(module, params)`).
pub type Params = Map<String, Value>;

/// An authoritative match's code. Every callback gets the match context, a dispatcher (send
/// messages, kick, update the label) and the current tick.
pub trait MatchHandler {
    /// `match_init(context, params) → state, tick_rate, label`. An error here means the match
    /// is never created; the creator gets the error.
    fn init(&mut self, ctx: &MatchContext, params: &Params) -> Result<MatchInit, HandlerError>;

    /// `match_join_attempt(context, dispatcher, tick, state, presence, metadata) → state,
    /// allow, reason`. Join attempts of one match run one at a time.
    fn join_attempt(
        &mut self,
        ctx: &MatchContext,
        dispatcher: &mut Dispatcher<'_>,
        tick: i64,
        request: &JoinRequest,
    ) -> Result<JoinVerdict, HandlerError>;

    /// `match_join(context, dispatcher, tick, state, presences)`: players whose join completed.
    fn join(
        &mut self,
        ctx: &MatchContext,
        dispatcher: &mut Dispatcher<'_>,
        tick: i64,
        presences: &[Arc<Presence>],
    ) -> Result<Flow, HandlerError>;

    /// `match_leave(context, dispatcher, tick, state, presences)`: players who left, were kicked
    /// or disconnected (`reason`).
    fn leave(
        &mut self,
        ctx: &MatchContext,
        dispatcher: &mut Dispatcher<'_>,
        tick: i64,
        presences: &[Arc<Presence>],
        reason: PresenceReason,
    ) -> Result<Flow, HandlerError>;

    /// `match_loop(context, dispatcher, tick, state, messages)`, once per tick, with the
    /// messages received since the previous tick in arrival order.
    fn tick(
        &mut self,
        ctx: &MatchContext,
        dispatcher: &mut Dispatcher<'_>,
        tick: i64,
        messages: &[MatchMessage],
    ) -> Result<Flow, HandlerError>;

    /// `match_terminate(context, dispatcher, tick, state, grace_seconds)`: the server is
    /// stopping; the match has `grace_seconds` before it is stopped.
    fn terminate(
        &mut self,
        ctx: &MatchContext,
        dispatcher: &mut Dispatcher<'_>,
        tick: i64,
        grace_seconds: u32,
    ) -> Result<Flow, HandlerError>;

    /// `match_signal(context, dispatcher, tick, state, data) → state, result`
    /// (`nk.match_signal`).
    fn signal(
        &mut self,
        ctx: &MatchContext,
        dispatcher: &mut Dispatcher<'_>,
        tick: i64,
        data: &str,
    ) -> Result<(Flow, String), HandlerError>;

    /// MetaFi's input seam (served worlds): where this match's client data goes instead of
    /// its input queue. Asked once, right after `init`; `None` (the default) keeps Nakama's
    /// behaviour (messages wait for the next `match_loop`). With a tap, membership is still
    /// checked by the engine, but `match_loop` sees no client messages.
    fn input_tap(&self) -> Option<Arc<dyn InputTap>> {
        None
    }

    /// MetaFi's presence seam (served worlds): who is told of joins and leaves. Asked once,
    /// right after `init`; [`PresenceEvents::Everyone`] (the default) is Nakama's behaviour.
    fn presence_events(&self) -> PresenceEvents {
        PresenceEvents::Everyone
    }
}

/// Who gets a match's presence events (see [`MatchHandler::presence_events`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PresenceEvents {
    /// Nakama's: every join and leave is told to every member, and a join answer lists the
    /// members. A ramp to n players sends n²/2 events.
    #[default]
    Everyone,
    /// Only a joiner's own join is told, to the joiner (its join acknowledged); leaves are
    /// told to nobody but the kicked, and a join answer lists no other members. For matches
    /// whose own messages say who is near (a world's snapshots).
    OwnJoinOnly,
}

/// Takes a match's client messages as they arrive (see [`MatchHandler::input_tap`]). Called on
/// the IO thread that received each message, so it must be quick and never block.
pub trait InputTap: Send + Sync + fmt::Debug {
    fn input(&self, message: MatchMessage);
}

/// Builds a match's handler **on the executor thread that will run it**, so script VMs are
/// created where they live. Sent to that thread, hence `Send`; the handler it builds need not
/// be.
pub trait HandlerFactory: Send + 'static {
    fn create(self: Box<Self>, ctx: &MatchContext) -> Result<Box<dyn MatchHandler>, HandlerError>;

    /// What the engine calls: the handler, and whether it may move to another executor
    /// thread (hand-off, `docs/MATCHES.md`). By default it may not (a script VM stays on the
    /// thread that built it); [`Movable`] builds handlers that can.
    fn create_handler(self: Box<Self>, ctx: &MatchContext) -> Result<BuiltHandler, HandlerError> {
        self.create(ctx).map(BuiltHandler::Pinned)
    }
}

/// A match's handler as the engine holds it.
pub enum BuiltHandler {
    /// Stays on the executor thread that built it for the match's life (script VMs, which are
    /// not `Send`, and any handler whose factory did not say otherwise).
    Pinned(Box<dyn MatchHandler>),
    /// May be handed off to another executor thread at a tick boundary when its thread runs
    /// late (native Rust handlers that are `Send`).
    Movable(Box<dyn MatchHandler + Send>),
}

impl BuiltHandler {
    pub(crate) fn get(&mut self) -> &mut dyn MatchHandler {
        match self {
            BuiltHandler::Pinned(h) => &mut **h,
            BuiltHandler::Movable(h) => &mut **h,
        }
    }

    pub(crate) fn get_ref(&self) -> &dyn MatchHandler {
        match self {
            BuiltHandler::Pinned(h) => &**h,
            BuiltHandler::Movable(h) => &**h,
        }
    }

    /// Whether the match may move between executor threads.
    pub fn is_movable(&self) -> bool {
        matches!(self, BuiltHandler::Movable(_))
    }
}

impl fmt::Debug for BuiltHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BuiltHandler::Pinned(_) => "Pinned",
            BuiltHandler::Movable(_) => "Movable",
        })
    }
}

/// A factory whose handler is `Send`, so its match may be handed off between executor threads
/// (`MatchSpec { factory: Box::new(Movable(|ctx| …)), … }`).
pub struct Movable<F>(pub F);

impl<F> HandlerFactory for Movable<F>
where
    F: FnOnce(&MatchContext) -> Result<Box<dyn MatchHandler + Send>, HandlerError> + Send + 'static,
{
    fn create(self: Box<Self>, ctx: &MatchContext) -> Result<Box<dyn MatchHandler>, HandlerError> {
        let handler: Box<dyn MatchHandler> = (self.0)(ctx)?;
        Ok(handler)
    }

    fn create_handler(self: Box<Self>, ctx: &MatchContext) -> Result<BuiltHandler, HandlerError> {
        (self.0)(ctx).map(BuiltHandler::Movable)
    }
}

impl<F> HandlerFactory for F
where
    F: FnOnce(&MatchContext) -> Result<Box<dyn MatchHandler>, HandlerError> + Send + 'static,
{
    fn create(self: Box<Self>, ctx: &MatchContext) -> Result<Box<dyn MatchHandler>, HandlerError> {
        (*self)(ctx)
    }
}

/// Everything needed to start an authoritative match.
pub struct MatchSpec {
    /// Module or registered name, shown in listings (`handler_name`) and logs.
    pub handler_name: Arc<str>,
    /// `"lua"`, `"js"`, `"native"`: a metric label and a log field.
    pub runtime: &'static str,
    pub factory: Box<dyn HandlerFactory>,
    pub params: Params,
}

impl fmt::Debug for MatchSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MatchSpec")
            .field("handler_name", &self.handler_name)
            .field("runtime", &self.runtime)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}
