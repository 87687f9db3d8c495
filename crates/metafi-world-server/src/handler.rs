//! The world as an authoritative match: the match engine runs joins, leaves and listings;
//! the world's own thread runs the tick (see `runner`).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;

use metafi_match::{
    Dispatcher, Flow, HandlerError, InputTap, JoinRequest, JoinVerdict, MatchContext, MatchHandler,
    MatchInit, MatchMessage, Params, Presence, PresenceEvents, PresenceReason,
};

use crate::codec::{self, CommandMsg};
use crate::runner::{Input, WorldShared};

/// The match handler of a world. Dropping it (the match ended) stops the world's thread.
pub(crate) struct WorldHandler {
    pub(crate) shared: Arc<WorldShared>,
    pub(crate) thread: Option<JoinHandle<()>>,
    pub(crate) tap: Arc<WorldTap>,
    pub(crate) label: String,
    pub(crate) tick_rate: u32,
    pub(crate) max_players: usize,
    /// `world.presence_events`: Nakama's events to every member, or only a joiner's own.
    pub(crate) presence_events: bool,
    pub(crate) node: Arc<str>,
    pub(crate) on_end: Option<Box<dyn FnOnce() + Send>>,
}

impl std::fmt::Debug for WorldHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorldHandler")
            .field("label", &self.label)
            .field("tick_rate", &self.tick_rate)
            .finish_non_exhaustive()
    }
}

/// Takes players' commands on the IO thread that read them, straight into the world's inbox
/// (the match's own tick never sees them).
#[derive(Debug)]
pub(crate) struct WorldTap {
    pub(crate) shared: Arc<WorldShared>,
}

impl InputTap for WorldTap {
    fn input(&self, message: MatchMessage) {
        let stats = &self.shared.stats;
        if message.op_code != codec::OP_COMMAND {
            stats.bad_commands.fetch_add(1, Ordering::Relaxed);
            return;
        }
        match CommandMsg::decode(&message.data) {
            Ok(msg) => self.shared.inbox.lock().push(Input::Command {
                session: message.sender.session_id,
                msg,
            }),
            Err(_) => {
                stats.bad_commands.fetch_add(1, Ordering::Relaxed);
                metrics::counter!("metafi_world_commands_total", "result" => "bad").increment(1);
            }
        }
    }
}

impl WorldHandler {
    fn queue(&self, inputs: impl IntoIterator<Item = Input>) {
        self.shared.inbox.lock().extend(inputs);
    }

    fn queue_leaves(&self, presences: &[Arc<Presence>]) {
        self.queue(presences.iter().map(|p| Input::Leave {
            session: p.session_id,
        }));
    }
}

impl Drop for WorldHandler {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            if thread.join().is_err() {
                tracing::error!("a world thread panicked");
            }
        }
        if let Some(on_end) = self.on_end.take() {
            on_end();
        }
    }
}

impl MatchHandler for WorldHandler {
    fn init(&mut self, _ctx: &MatchContext, _params: &Params) -> Result<MatchInit, HandlerError> {
        Ok(MatchInit {
            tick_rate: self.tick_rate,
            label: self.label.clone(),
        })
    }

    fn join_attempt(
        &mut self,
        ctx: &MatchContext,
        _dispatcher: &mut Dispatcher<'_>,
        _tick: i64,
        request: &JoinRequest,
    ) -> Result<JoinVerdict, HandlerError> {
        let refuse = |reason: &str| JoinVerdict {
            flow: Flow::Continue,
            allow: false,
            reason: Some(reason.into()),
        };
        if request.presence.node != self.node {
            // The world sends snapshots straight into this node's sessions.
            return Ok(refuse("World players must connect to the world's node"));
        }
        if ctx.presences + ctx.pending_joins >= self.max_players {
            return Ok(refuse("World is full"));
        }
        Ok(JoinVerdict {
            flow: Flow::Continue,
            allow: true,
            reason: None,
        })
    }

    fn join(
        &mut self,
        _ctx: &MatchContext,
        _dispatcher: &mut Dispatcher<'_>,
        _tick: i64,
        presences: &[Arc<Presence>],
    ) -> Result<Flow, HandlerError> {
        self.queue(presences.iter().map(|p| Input::Join {
            session: p.session_id,
        }));
        Ok(Flow::Continue)
    }

    fn leave(
        &mut self,
        _ctx: &MatchContext,
        _dispatcher: &mut Dispatcher<'_>,
        _tick: i64,
        presences: &[Arc<Presence>],
        _reason: PresenceReason,
    ) -> Result<Flow, HandlerError> {
        self.queue_leaves(presences);
        Ok(Flow::Continue)
    }

    fn tick(
        &mut self,
        _ctx: &MatchContext,
        _dispatcher: &mut Dispatcher<'_>,
        _tick: i64,
        _messages: &[MatchMessage],
    ) -> Result<Flow, HandlerError> {
        // The world ticks on its own thread; the match's tick only keeps the match alive.
        Ok(Flow::Continue)
    }

    fn terminate(
        &mut self,
        _ctx: &MatchContext,
        _dispatcher: &mut Dispatcher<'_>,
        _tick: i64,
        _grace_seconds: u32,
    ) -> Result<Flow, HandlerError> {
        Ok(Flow::Continue)
    }

    fn signal(
        &mut self,
        _ctx: &MatchContext,
        _dispatcher: &mut Dispatcher<'_>,
        _tick: i64,
        data: &str,
    ) -> Result<(Flow, String), HandlerError> {
        // `stats`: the world's counters as JSON (what `GET /debug/worlds` shows).
        let answer = if data == "stats" {
            self.shared.stats.to_json().to_string()
        } else {
            String::new()
        };
        Ok((Flow::Continue, answer))
    }

    fn input_tap(&self) -> Option<Arc<dyn InputTap>> {
        Some(self.tap.clone())
    }

    fn presence_events(&self) -> PresenceEvents {
        if self.presence_events {
            PresenceEvents::Everyone
        } else {
            PresenceEvents::OwnJoinOnly
        }
    }
}
