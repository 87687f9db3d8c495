//! Test support (feature `test-util`): an outlet that records what the engine sends, the
//! seed benchmark's match as a native handler, a handler whose callbacks a test scripts (and
//! that records them in order, with the thread each ran on; optionally with an input tap or
//! quiet presence events), and the engine on its real executor threads ([`running`]). The match
//! crate's own tests add a hand-stepped engine on top (`tests/support`).

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use uuid::Uuid;

use crate::clock::{FakeClock, SystemMonotonic};
use crate::config::MatchConfig;
use crate::dispatcher::Dispatcher;
use crate::executor::Executor;
use crate::match_handler::{
    Flow, HandlerError, InputTap, JoinRequest, JoinVerdict, MatchContext, MatchHandler, MatchInit,
    Params, PresenceEvents,
};
use crate::outlet::{OutgoingData, Outlet, PresenceEvent};
use crate::presence::{MatchMessage, Presence, PresenceReason};
use crate::registry::Matches;

/// Something the engine handed to the outlet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    Data {
        to: Vec<Uuid>,
        match_id: String,
        op_code: i64,
        data: Bytes,
        sender: Option<Uuid>,
    },
    Presences {
        to: Vec<Uuid>,
        match_id: String,
        joins: Vec<Uuid>,
        leaves: Vec<Uuid>,
    },
}

/// Records every delivery; sessions are connected unless [`RecordingOutlet::disconnect`]ed.
#[derive(Debug, Default)]
pub struct RecordingOutlet {
    sent: Mutex<Vec<Sent>>,
    gone: Mutex<HashSet<Uuid>>,
    /// The fake clock each flush preempts, and by how much ([`RecordingOutlet::preempt_on_flush`]).
    flush_preempts: Mutex<Option<(Arc<FakeClock>, Duration)>>,
    /// Flushes so far: each is one wake-up of the IO threads in the server.
    flushes: AtomicUsize,
}

impl RecordingOutlet {
    pub fn new() -> Arc<RecordingOutlet> {
        Arc::new(RecordingOutlet::default())
    }

    /// Everything sent so far, emptying the record.
    pub fn take(&self) -> Vec<Sent> {
        std::mem::take(&mut *self.sent.lock())
    }

    /// From now on each flush is followed by `by` during which the OS runs another thread:
    /// the IO thread the flush woke preempts the executor (on a one-core node it does).
    pub fn preempt_on_flush(&self, clock: Arc<FakeClock>, by: Duration) {
        *self.flush_preempts.lock() = Some((clock, by));
    }

    /// How many times the engine has let out what it sent ([`Outlet::flush`]).
    pub fn flushes(&self) -> usize {
        self.flushes.load(Ordering::Relaxed)
    }

    pub fn disconnect(&self, session: Uuid) {
        self.gone.lock().insert(session);
    }

    /// Match data received by `session` so far (op code, data), without emptying the record.
    pub fn data_for(&self, session: Uuid) -> Vec<(i64, Bytes)> {
        self.sent
            .lock()
            .iter()
            .filter_map(|s| match s {
                Sent::Data {
                    to, op_code, data, ..
                } if to.contains(&session) => Some((*op_code, data.clone())),
                _ => None,
            })
            .collect()
    }
}

impl Outlet for RecordingOutlet {
    fn send_data(&self, recipients: &[Uuid], data: &OutgoingData<'_>) {
        self.sent.lock().push(Sent::Data {
            to: recipients.to_vec(),
            match_id: data.match_id.to_owned(),
            op_code: data.op_code,
            data: data.data.clone(),
            sender: data.sender.map(|p| p.session_id),
        });
    }

    fn send_presences(&self, recipients: &[Uuid], event: &PresenceEvent<'_>) {
        self.sent.lock().push(Sent::Presences {
            to: recipients.to_vec(),
            match_id: event.match_id.to_owned(),
            joins: event.joins.iter().map(|p| p.session_id).collect(),
            leaves: event.leaves.iter().map(|p| p.session_id).collect(),
        });
    }

    fn is_connected(&self, session_id: Uuid) -> bool {
        !self.gone.lock().contains(&session_id)
    }

    fn flush(&self) {
        self.flushes.fetch_add(1, Ordering::Relaxed);
        if let Some((clock, by)) = &*self.flush_preempts.lock() {
            clock.preempt(*by);
        }
    }
}

/// The engine as the server runs it, for tests on real threads: node `node1`, the system
/// clocks, `config`'s executor threads started, and an outlet that records. End it with
/// [`Matches::stop`] and [`Executor::join`].
pub fn running(config: MatchConfig) -> std::io::Result<(Matches, Executor, Arc<RecordingOutlet>)> {
    let outlet = RecordingOutlet::new();
    let (matches, seeds) = Matches::new(
        config,
        "node1",
        outlet.clone(),
        Arc::new(SystemMonotonic),
        Arc::new(metafi_core::SystemClock),
    );
    let executor = Executor::spawn(seeds)?;
    Ok((matches, executor, outlet))
}

/// A presence for tests.
pub fn presence(name: &str) -> Arc<Presence> {
    Arc::new(Presence {
        user_id: Uuid::new_v4(),
        session_id: Uuid::new_v4(),
        username: Arc::from(name),
        node: Arc::from("test"),
    })
}

/// A join request for tests.
pub fn join_request(presence: &Arc<Presence>) -> JoinRequest {
    JoinRequest {
        presence: presence.clone(),
        metadata: Default::default(),
        vars: Default::default(),
        session_expiry: 0,
        client_ip: None,
        client_port: None,
    }
}

/// The seed benchmark's match: `tick_rate` ticks per second, at most `max_players` (counting
/// pending joins), op code 1 echoed to its sender, op code 2 broadcast to everyone; the label
/// says whether it is open. Tracks players in `match_join`/`match_leave` only.
#[derive(Debug)]
pub struct SeedMatch {
    pub tick_rate: u32,
    pub max_players: usize,
}

impl SeedMatch {
    fn label(open: bool) -> String {
        format!(r#"{{"open":{}}}"#, u8::from(open))
    }
}

impl MatchHandler for SeedMatch {
    fn init(&mut self, _ctx: &MatchContext, _params: &Params) -> Result<MatchInit, HandlerError> {
        Ok(MatchInit {
            tick_rate: self.tick_rate,
            label: SeedMatch::label(true),
        })
    }

    fn join_attempt(
        &mut self,
        ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        _request: &JoinRequest,
    ) -> Result<JoinVerdict, HandlerError> {
        let allow = ctx.presences + ctx.pending_joins < self.max_players;
        Ok(JoinVerdict {
            flow: Flow::Continue,
            allow,
            reason: (!allow).then(|| "match full".to_owned()),
        })
    }

    fn join(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        _tick: i64,
        _presences: &[Arc<Presence>],
    ) -> Result<Flow, HandlerError> {
        if ctx.presences >= self.max_players {
            d.update_label(&SeedMatch::label(false))
                .map_err(|e| HandlerError::failed(e.to_string()))?;
        }
        Ok(Flow::Continue)
    }

    fn leave(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        _tick: i64,
        _presences: &[Arc<Presence>],
        _reason: PresenceReason,
    ) -> Result<Flow, HandlerError> {
        if ctx.presences < self.max_players {
            d.update_label(&SeedMatch::label(true))
                .map_err(|e| HandlerError::failed(e.to_string()))?;
        }
        Ok(Flow::Continue)
    }

    fn tick(
        &mut self,
        _ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        _tick: i64,
        messages: &[MatchMessage],
    ) -> Result<Flow, HandlerError> {
        for message in messages {
            match message.op_code {
                1 => d.broadcast(
                    1,
                    &message.data,
                    Some(std::slice::from_ref(&message.sender.session_id)),
                    Some(&message.sender),
                    true,
                ),
                2 => d.broadcast(2, &message.data, None, Some(&message.sender), true),
                _ => {}
            }
        }
        Ok(Flow::Continue)
    }

    fn terminate(
        &mut self,
        _ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        _grace_seconds: u32,
    ) -> Result<Flow, HandlerError> {
        Ok(Flow::Continue)
    }

    fn signal(
        &mut self,
        _ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        data: &str,
    ) -> Result<(Flow, String), HandlerError> {
        Ok((Flow::Continue, data.to_owned()))
    }
}

type TickFn = dyn FnMut(&MatchContext, &mut Dispatcher<'_>, i64, &[MatchMessage]) -> Result<Flow, HandlerError>
    + Send;

/// A handler whose `match_loop` a test provides; every other callback accepts and goes on,
/// and records what it was called with in [`Calls`]. Its served-world seams are chosen with
/// [`ScriptedMatch::with_tap`] and [`ScriptedMatch::with_presence_events`].
pub struct ScriptedMatch {
    pub tick_rate: u32,
    pub label: String,
    pub on_tick: Box<TickFn>,
    pub calls: Arc<Mutex<Calls>>,
    /// Where its members' match data goes as it arrives (`MatchHandler::input_tap`).
    pub tap: Option<Arc<dyn InputTap>>,
    /// Who hears its presence events (`MatchHandler::presence_events`).
    pub presence_events: PresenceEvents,
}

/// What a [`ScriptedMatch`] saw.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Calls {
    pub ticks: Vec<i64>,
    pub joins: Vec<Uuid>,
    pub leaves: Vec<(Uuid, PresenceReason)>,
    pub terminated_with: Option<u32>,
    pub signals: Vec<String>,
    /// Every callback above in the order they ran, with the thread each ran on.
    pub order: Vec<Seen>,
}

/// One callback of a [`ScriptedMatch`] and the name of the thread it ran on.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub call: Call,
    pub thread: Option<String>,
}

/// A callback of a [`ScriptedMatch`].
#[derive(Debug, Clone, PartialEq)]
pub enum Call {
    Tick(i64),
    Join(Uuid),
    Leave(Uuid, PresenceReason),
    Terminate(u32),
    Signal(String),
}

impl Calls {
    fn seen(&mut self, call: Call) {
        self.order.push(Seen {
            call,
            thread: std::thread::current().name().map(str::to_owned),
        });
    }
}

impl ScriptedMatch {
    pub fn new(
        tick_rate: u32,
        on_tick: impl FnMut(
            &MatchContext,
            &mut Dispatcher<'_>,
            i64,
            &[MatchMessage],
        ) -> Result<Flow, HandlerError>
        + Send
        + 'static,
    ) -> (ScriptedMatch, Arc<Mutex<Calls>>) {
        let calls = Arc::new(Mutex::new(Calls::default()));
        (
            ScriptedMatch {
                tick_rate,
                label: String::new(),
                on_tick: Box::new(on_tick),
                calls: calls.clone(),
                tap: None,
                presence_events: PresenceEvents::default(),
            },
            calls,
        )
    }

    /// The same handler, with its members' data going to `tap` instead of `match_loop`.
    pub fn with_tap(self, tap: Arc<dyn InputTap>) -> ScriptedMatch {
        ScriptedMatch {
            tap: Some(tap),
            ..self
        }
    }

    /// The same handler, with presence events told as `events` says.
    pub fn with_presence_events(self, events: PresenceEvents) -> ScriptedMatch {
        ScriptedMatch {
            presence_events: events,
            ..self
        }
    }
}

impl MatchHandler for ScriptedMatch {
    fn init(&mut self, _ctx: &MatchContext, _params: &Params) -> Result<MatchInit, HandlerError> {
        Ok(MatchInit {
            tick_rate: self.tick_rate,
            label: self.label.clone(),
        })
    }

    fn join_attempt(
        &mut self,
        _ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        _request: &JoinRequest,
    ) -> Result<JoinVerdict, HandlerError> {
        Ok(JoinVerdict {
            flow: Flow::Continue,
            allow: true,
            reason: None,
        })
    }

    fn join(
        &mut self,
        _ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        presences: &[Arc<Presence>],
    ) -> Result<Flow, HandlerError> {
        let mut calls = self.calls.lock();
        for p in presences {
            calls.joins.push(p.session_id);
            calls.seen(Call::Join(p.session_id));
        }
        Ok(Flow::Continue)
    }

    fn leave(
        &mut self,
        _ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        presences: &[Arc<Presence>],
        reason: PresenceReason,
    ) -> Result<Flow, HandlerError> {
        let mut calls = self.calls.lock();
        for p in presences {
            calls.leaves.push((p.session_id, reason));
            calls.seen(Call::Leave(p.session_id, reason));
        }
        Ok(Flow::Continue)
    }

    fn tick(
        &mut self,
        ctx: &MatchContext,
        d: &mut Dispatcher<'_>,
        tick: i64,
        messages: &[MatchMessage],
    ) -> Result<Flow, HandlerError> {
        {
            let mut calls = self.calls.lock();
            calls.ticks.push(tick);
            calls.seen(Call::Tick(tick));
        }
        (self.on_tick)(ctx, d, tick, messages)
    }

    fn terminate(
        &mut self,
        _ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        grace_seconds: u32,
    ) -> Result<Flow, HandlerError> {
        let mut calls = self.calls.lock();
        calls.terminated_with = Some(grace_seconds);
        calls.seen(Call::Terminate(grace_seconds));
        Ok(Flow::Continue)
    }

    fn signal(
        &mut self,
        _ctx: &MatchContext,
        _d: &mut Dispatcher<'_>,
        _tick: i64,
        data: &str,
    ) -> Result<(Flow, String), HandlerError> {
        let mut calls = self.calls.lock();
        calls.signals.push(data.to_owned());
        calls.seen(Call::Signal(data.to_owned()));
        Ok((Flow::Continue, format!("got {data}")))
    }

    fn input_tap(&self) -> Option<Arc<dyn InputTap>> {
        self.tap.clone()
    }

    fn presence_events(&self) -> PresenceEvents {
        self.presence_events
    }
}
