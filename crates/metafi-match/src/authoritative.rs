//! One authoritative match as a state machine: init → join attempts → joins and leaves → a
//! loop tick per interval → end. Sans-IO: it is driven by its executor thread's
//! [`Scheduler`](crate::Scheduler), reads time only from the clock it is given, and hands
//! everything it sends to the [`Outlet`](crate::Outlet).

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::dispatcher::{Dispatcher, Effects, MAX_LABEL_BYTES, Members};
use crate::match_handler::{
    BuiltHandler, Flow, HandlerError, JoinRequest, MatchContext, MatchHandler, MatchSpec,
    PresenceEvents,
};
use crate::metrics;
use crate::outlet::PresenceEvent;
use crate::presence::{MatchMessage, Presence, PresenceReason};
use crate::registry::Inner;
use crate::shared::MatchShared;

/// Why a match ended; a log field and a metric label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EndReason {
    /// A callback returned no state (`Flow::End`).
    Returned { callback: &'static str },
    /// A callback failed, panicked or ran past its budget.
    Failed {
        callback: &'static str,
        error: HandlerError,
    },
    /// Empty for `match.max_empty_sec`.
    Empty,
    /// Leaves and join completions piled up past `match.call_queue_size`.
    CallQueueFull,
    /// The shutdown grace period after `match_terminate` ran out.
    GraceOver,
    /// The server stopped without a grace period.
    Stopped,
}

impl EndReason {
    pub(crate) fn label(&self) -> &'static str {
        match self {
            EndReason::Returned { .. } => "returned_nil",
            EndReason::Failed { error, .. } => error.kind(),
            EndReason::Empty => "empty",
            EndReason::CallQueueFull => "call_queue_full",
            EndReason::GraceOver => "terminated",
            EndReason::Stopped => "stopped",
        }
    }
}

/// The answer to a join attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinOutcome {
    /// The client may join. `presences` are the others already in the match (the client
    /// itself too when it was already in); `is_new` is false for a repeated join, which needs
    /// no completion.
    Accepted {
        label: Arc<str>,
        presences: Vec<Arc<Presence>>,
        is_new: bool,
    },
    /// The handler refused, with its reason or Nakama's default.
    Rejected { reason: String },
    /// No such match (or it ended meanwhile).
    NotFound,
}

/// A join the handler accepted, waiting for the client to complete it.
#[derive(Debug)]
struct Pending {
    presence: Arc<Presence>,
    expires: Instant,
}

/// The result of one step of the match.
pub(crate) type Step = Result<(), EndReason>;

/// A running match. `H` is how its handler is held: [`BuiltHandler`] while it runs; a `Send`
/// box while it travels between executor threads ([`MovingMatch`]).
pub(crate) struct AuthoritativeMatch<H = BuiltHandler> {
    handler: H,
    /// Everything else, carried over unchanged when the handler changes hands.
    core: MatchCore,
}

/// An authoritative match apart from its handler.
struct MatchCore {
    /// What the registry and the IO threads see of the match (id, inbox, counters, seats).
    shared: Arc<MatchShared>,
    ctx: MatchContext,
    /// Loop executions so far (what `match_loop` sees as `tick`).
    tick: i64,
    /// When tick slot 0 was due; slot `n` is due at `origin + n * interval`, so the schedule
    /// never drifts.
    origin: Instant,
    slot: u64,
    interval_ns: u64,
    members: Members,
    pending: Vec<Pending>,
    effects: Effects,
    /// The input queue swapped out of the inbox at each tick (its buffer is reused).
    inputs: VecDeque<MatchMessage>,
    empty_ticks: u64,
    max_empty_ticks: Option<u64>,
    /// Set by `match_terminate` with a grace period: when the match must stop.
    terminate_at: Option<Instant>,
    /// Who is told of joins and leaves (the handler's choice, asked once after `init`).
    presence_events: PresenceEvents,
    /// 1 while `match_join_attempt` runs for a player holding a reserved seat (not counted in
    /// its own `pending_joins`), else 0.
    own_seat: usize,
}

/// A match on its way from one executor thread to another (hand-off): everything it is, its
/// handler included, is `Send`, which the compiler checks where it is put in a command.
pub(crate) type MovingMatch = AuthoritativeMatch<Box<dyn MatchHandler + Send>>;

impl<H> AuthoritativeMatch<H> {
    /// The same match with its handler held as `handler`; returns the old holder.
    fn with_handler<H2>(self, handler: H2) -> (AuthoritativeMatch<H2>, H) {
        (
            AuthoritativeMatch {
                handler,
                core: self.core,
            },
            self.handler,
        )
    }

    /// The match's state shared with the registry.
    pub(crate) fn shared(&self) -> &Arc<MatchShared> {
        &self.core.shared
    }
}

impl MovingMatch {
    /// Back to a running match on the thread that adopts it.
    pub(crate) fn settle_in(self) -> AuthoritativeMatch {
        let (m, handler) = self.with_handler(());
        m.with_handler(BuiltHandler::Movable(handler)).0
    }
}

impl<H> std::fmt::Debug for AuthoritativeMatch<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthoritativeMatch")
            .field("id", &self.core.shared.id_text)
            .field("tick", &self.core.tick)
            .field("members", &self.core.members.len())
            .finish_non_exhaustive()
    }
}

impl AuthoritativeMatch {
    /// Builds the handler (on this thread) and runs `match_init`.
    pub(crate) fn start(
        inner: &Inner,
        shared: Arc<MatchShared>,
        spec: MatchSpec,
        now: Instant,
    ) -> Result<AuthoritativeMatch, HandlerError> {
        let budget = inner.config.handler_budget;
        let mut ctx = MatchContext {
            match_id: shared.id_text.clone(),
            node: inner.node.clone(),
            handler_name: shared.handler_name.clone(),
            label: Arc::from(""),
            tick_rate: 0,
            presences: 0,
            pending_joins: 0,
            deadline: now + budget,
        };
        let MatchSpec {
            factory, params, ..
        } = spec;
        let started = inner.clock.now();
        let mut handler = guarded(|| factory.create_handler(&ctx))?;
        let init = guarded(|| handler.get().init(&ctx, &params))?;
        metrics::created(
            shared.runtime,
            inner
                .clock
                .now()
                .saturating_duration_since(started)
                .as_secs_f64(),
        );
        let max = inner.config.max_tick_rate;
        if init.tick_rate == 0 || init.tick_rate > max {
            return Err(HandlerError::invalid(format!(
                "match_init returned invalid tick rate {}, must be between 1 and {max} (match.max_tick_rate)",
                init.tick_rate
            )));
        }
        if init.label.len() > MAX_LABEL_BYTES {
            return Err(HandlerError::invalid(format!(
                "match_init returned a label of {} bytes, must be {MAX_LABEL_BYTES} bytes or less",
                init.label.len()
            )));
        }
        if let Some(tap) = handler.get_ref().input_tap() {
            let _ = shared.tap.set(tap);
        }
        let presence_events = handler.get_ref().presence_events();
        ctx.label = Arc::from(init.label.as_str());
        ctx.tick_rate = init.tick_rate;
        shared.tick_rate.store(init.tick_rate, Ordering::Relaxed);
        *shared.stats.label.lock() = ctx.label.clone();
        inner
            .listing
            .write()
            .upsert(&shared, ctx.label.clone(), init.tick_rate);
        let max_empty_ticks = inner.config.max_empty.map(|d| {
            (d.as_secs_f64() * f64::from(init.tick_rate))
                .ceil()
                .max(1.0) as u64
        });
        Ok(AuthoritativeMatch {
            handler,
            core: MatchCore {
                shared,
                ctx,
                tick: 0,
                origin: grid(inner.epoch, now),
                slot: 1,
                interval_ns: 1_000_000_000 / u64::from(init.tick_rate),
                members: Members::default(),
                pending: Vec::new(),
                effects: Effects::default(),
                inputs: VecDeque::new(),
                empty_ticks: 0,
                max_empty_ticks,
                terminate_at: None,
                presence_events,
                own_seat: 0,
            },
        })
    }

    /// The members a join answer lists: all of them (Nakama's), or none when the handler
    /// tells presences only to their own sessions.
    fn listed_presences(&self) -> Vec<Arc<Presence>> {
        match self.core.presence_events {
            PresenceEvents::Everyone => self.core.members.presences().to_vec(),
            PresenceEvents::OwnJoinOnly => Vec::new(),
        }
    }

    /// The match ready to travel to another executor thread, or itself back when its handler
    /// must stay where it is (a script VM).
    pub(crate) fn into_moving(self) -> Result<MovingMatch, Box<AuthoritativeMatch>> {
        let (m, handler) = self.with_handler(());
        match handler {
            BuiltHandler::Movable(handler) => Ok(m.with_handler(handler).0),
            pinned => Err(Box::new(m.with_handler(pinned).0)),
        }
    }

    /// Whether the match may move to another executor thread.
    pub(crate) fn is_movable(&self) -> bool {
        self.handler.is_movable()
    }

    /// When the next tick is due.
    pub(crate) fn next_tick(&self) -> Instant {
        self.core.origin + Duration::from_nanos(self.core.slot * self.core.interval_ns)
    }

    /// Ticks per second `match_init` asked for.
    pub(crate) fn tick_rate(&self) -> u32 {
        self.core.ctx.tick_rate
    }

    /// Nanoseconds between two of its ticks.
    pub(crate) fn interval_ns(&self) -> u64 {
        self.core.interval_ns
    }

    /// Moves its schedule `by` earlier before its first tick, to spread the phases of a burst
    /// of new matches (`phase.rs`): less than one interval, so the first tick stays after its
    /// creation; the interval and the grid's spacing are unchanged.
    pub(crate) fn tick_first_earlier(&mut self, by: Duration) {
        debug_assert!(self.core.tick == 0 && by.as_nanos() < u128::from(self.core.interval_ns));
        if let Some(origin) = self.core.origin.checked_sub(by) {
            self.core.origin = origin;
        }
    }

    /// Skips the next `slots` tick slots: the match is stretched to keep its thread within the
    /// latency objective (overload, `docs/MATCHES.md`). Counted; the schedule keeps its grid.
    pub(crate) fn stretch(&mut self, slots: u32) {
        if slots == 0 {
            return;
        }
        self.core.slot += u64::from(slots);
        self.core
            .shared
            .stats
            .stretched
            .fetch_add(u64::from(slots), Ordering::Relaxed);
        self.core
            .shared
            .metrics
            .stretched
            .increment(u64::from(slots));
    }

    fn interval(&self) -> Duration {
        Duration::from_nanos(self.core.interval_ns)
    }

    /// Runs one `match_loop` tick. `now` is when it starts.
    pub(crate) fn run_tick(&mut self, inner: &Inner, now: Instant) -> Step {
        let scheduled = self.next_tick();
        let lateness = now.saturating_duration_since(scheduled);
        let shared = self.core.shared.clone();
        let stats = &shared.stats;
        // Several ticks due at once (the thread was held up): run one, for the latest due
        // slot, and drop the others rather than running them back to back, as a Go ticker
        // drops ticks for a slow receiver.
        let due = (now.saturating_duration_since(self.core.origin).as_nanos()
            / u128::from(self.core.interval_ns)) as u64;
        if due > self.core.slot {
            let missed = due - self.core.slot;
            self.core.slot = due;
            stats.skipped.fetch_add(missed, Ordering::Relaxed);
            shared.metrics.skipped.increment(missed);
        }
        let mut inputs = std::mem::take(&mut self.core.inputs);
        {
            let mut inbox = self.core.shared.inbox.lock();
            std::mem::swap(&mut inbox.queue, &mut inputs);
        }
        let depth = inputs.len();
        let tick = self.core.tick;
        let messages = inputs.make_contiguous();
        let result = self.call(inner, now, |h, ctx, d| h.tick(ctx, d, tick, messages));
        inputs.clear();
        self.core.inputs = inputs;
        self.settle(inner, now, "match_loop", result)?;

        let finished = inner.clock.now();
        let took = finished.saturating_duration_since(now);
        let m = &shared.metrics;
        m.tick_duration.record(took.as_secs_f64());
        m.tick_lateness.record(lateness.as_secs_f64());
        m.queue_depth.record(depth as f64);
        stats.ticks.fetch_add(1, Ordering::Relaxed);
        record(&stats.last_tick_ns, &stats.max_tick_ns, took);
        record(&stats.last_lateness_ns, &stats.max_lateness_ns, lateness);
        stats
            .last_queue_depth
            .store(depth as u64, Ordering::Relaxed);
        stats
            .last_tick_unix_ms
            .store(inner.wall.now_ms(), Ordering::Relaxed);
        if took > self.interval() {
            stats.overruns.fetch_add(1, Ordering::Relaxed);
            m.overruns.increment(1);
        }

        self.core.tick += 1;
        self.core.slot += 1;

        self.expire_pending(inner, now);
        if let Some(max) = self.core.max_empty_ticks {
            if self.core.members.len() == 0 && self.core.pending.is_empty() {
                self.core.empty_ticks += 1;
                if self.core.empty_ticks >= max {
                    return Err(EndReason::Empty);
                }
            } else {
                self.core.empty_ticks = 0;
            }
        }
        if self.core.terminate_at.is_some_and(|at| now >= at) {
            return Err(EndReason::GraceOver);
        }
        Ok(())
    }

    /// `match_join_attempt` for one client.
    pub(crate) fn join_attempt(
        &mut self,
        inner: &Inner,
        now: Instant,
        request: &JoinRequest,
    ) -> (Step, JoinOutcome) {
        let session = request.presence.session_id;
        if self.core.members.contains(session)
            || self
                .core
                .pending
                .iter()
                .any(|p| p.presence.session_id == session)
        {
            let mut presences = self.listed_presences();
            if self.core.presence_events == PresenceEvents::Everyone {
                presences.extend(self.core.pending.iter().map(|p| p.presence.clone()));
            }
            return (
                Ok(()),
                JoinOutcome::Accepted {
                    label: self.core.ctx.label.clone(),
                    presences,
                    is_new: false,
                },
            );
        }
        // The match's seats stay locked while the handler decides: a reservation made
        // meanwhile could otherwise take the seat the handler is giving away. Whatever the
        // verdict, the joiner's reservation (if any) is used up: an accepted join holds the
        // seat as a pending join, a refused or failed one frees it.
        let shared = self.core.shared.clone();
        let mut seats = shared.seats.lock();
        if seats.prune(now) {
            shared
                .reserved
                .store(seats.held.len() as u32, Ordering::Release);
        }
        let user = request.presence.user_id;
        self.core.own_seat = usize::from(seats.held.contains_key(&user));
        let (step, outcome) = self.join_attempt_unlocked(inner, now, request);
        self.core.own_seat = 0;
        if seats.held.remove(&user).is_some() {
            shared
                .reserved
                .store(seats.held.len() as u32, Ordering::Release);
        }
        drop(seats);
        self.update_counts();
        (step, outcome)
    }

    fn join_attempt_unlocked(
        &mut self,
        inner: &Inner,
        now: Instant,
        request: &JoinRequest,
    ) -> (Step, JoinOutcome) {
        let session = request.presence.session_id;
        // Registered before checking the connection: a session ending concurrently either is
        // seen as gone here, or finds this match in its list and leaves it.
        inner.session_entered(session, self.core.shared.id.uuid());
        if !inner.outlet.is_connected(session) {
            inner.session_exited(session, self.core.shared.id.uuid());
            return (
                Ok(()),
                JoinOutcome::Rejected {
                    reason: "Match join rejected".into(),
                },
            );
        }
        let tick = self.core.tick;
        let result = self.call(inner, now, |h, ctx, d| {
            h.join_attempt(ctx, d, tick, request)
        });
        let verdict = match result {
            Ok(verdict) => verdict,
            Err(error) => {
                inner.session_exited(session, self.core.shared.id.uuid());
                let step = self.settle::<()>(inner, now, "match_join_attempt", Err(error));
                return (step, rejected(None));
            }
        };
        if verdict.flow == Flow::End {
            inner.session_exited(session, self.core.shared.id.uuid());
            let step = self.settle(inner, now, "match_join_attempt", Ok(Flow::End));
            return (step, rejected(None));
        }
        if !verdict.allow {
            inner.session_exited(session, self.core.shared.id.uuid());
            let step = self.settle(inner, now, "match_join_attempt", Ok(Flow::Continue));
            return (step, rejected(verdict.reason));
        }
        self.core.shared.awaiting_completion.lock().insert(session);
        self.core.pending.push(Pending {
            presence: request.presence.clone(),
            expires: now + inner.config.join_marker_deadline,
        });
        self.update_counts();
        let outcome = JoinOutcome::Accepted {
            label: self.core.ctx.label.clone(),
            presences: self.listed_presences(),
            is_new: true,
        };
        let step = self.settle(inner, now, "match_join_attempt", Ok(Flow::Continue));
        (step, outcome)
    }

    /// The client of an accepted join received its answer: it is now in the match. Everyone
    /// (the joiner included) gets the presence event, then `match_join` runs.
    pub(crate) fn complete_join(&mut self, inner: &Inner, now: Instant, session_id: Uuid) -> Step {
        let Some(at) = self
            .core
            .pending
            .iter()
            .position(|p| p.presence.session_id == session_id)
        else {
            return Ok(());
        };
        let presence = self.core.pending.swap_remove(at).presence;
        self.core.members.insert(presence.clone());
        self.core
            .shared
            .inbox
            .lock()
            .senders
            .insert(session_id, presence.clone());
        self.update_counts();
        let joins = [presence];
        let own = [session_id];
        let told = match self.core.presence_events {
            PresenceEvents::Everyone => self.core.members.sessions(),
            PresenceEvents::OwnJoinOnly => &own[..],
        };
        inner.outlet.send_presences(
            told,
            &PresenceEvent {
                match_id: &self.core.shared.id_text,
                joins: &joins,
                leaves: &[],
            },
        );
        let tick = self.core.tick;
        let result = self.call(inner, now, |h, ctx, d| h.join(ctx, d, tick, &joins));
        self.settle(inner, now, "match_join", result)
    }

    /// Players leave (or their sessions ended): the others get the event, then `match_leave`
    /// runs. Pending joins are dropped silently (they never joined).
    pub(crate) fn leave(
        &mut self,
        inner: &Inner,
        now: Instant,
        sessions: &[Uuid],
        reason: PresenceReason,
    ) -> Step {
        let mut left = Vec::new();
        for session in sessions {
            if let Some(at) = self
                .core
                .pending
                .iter()
                .position(|p| p.presence.session_id == *session)
            {
                self.core.pending.swap_remove(at);
                self.core.shared.awaiting_completion.lock().remove(session);
                inner.session_exited(*session, self.core.shared.id.uuid());
            } else if let Some(presence) = self.core.members.remove(*session) {
                self.core.shared.inbox.lock().senders.remove(session);
                inner.session_exited(*session, self.core.shared.id.uuid());
                left.push(presence);
            }
        }
        self.update_counts();
        if left.is_empty() {
            return Ok(());
        }
        if self.core.presence_events == PresenceEvents::Everyone {
            inner.outlet.send_presences(
                self.core.members.sessions(),
                &PresenceEvent {
                    match_id: &self.core.shared.id_text,
                    joins: &[],
                    leaves: &left,
                },
            );
        }
        let tick = self.core.tick;
        let result = self.call(inner, now, |h, ctx, d| h.leave(ctx, d, tick, &left, reason));
        self.settle(inner, now, "match_leave", result)
    }

    /// `match_signal`; the reply is the handler's result.
    pub(crate) fn signal(
        &mut self,
        inner: &Inner,
        now: Instant,
        data: &str,
    ) -> (Step, Option<String>) {
        let tick = self.core.tick;
        let result = self.call(inner, now, |h, ctx, d| h.signal(ctx, d, tick, data));
        match result {
            Ok((flow, reply)) => {
                let step = self.settle(inner, now, "match_signal", Ok(flow));
                // As Nakama: a signal whose handler ended the match has no result.
                let reply = (flow == Flow::Continue && step.is_ok()).then_some(reply);
                (step, reply)
            }
            Err(error) => (
                self.settle::<()>(inner, now, "match_signal", Err(error)),
                None,
            ),
        }
    }

    /// `match_terminate`: the server is stopping. With no grace the match ends right after.
    pub(crate) fn terminate(&mut self, inner: &Inner, now: Instant, grace: Duration) -> Step {
        if self.core.terminate_at.is_some() {
            return Ok(());
        }
        let seconds = grace.as_secs().min(u64::from(u32::MAX)) as u32;
        let tick = self.core.tick;
        let result = self.call(inner, now, |h, ctx, d| h.terminate(ctx, d, tick, seconds));
        self.settle(inner, now, "match_terminate", result)?;
        if grace.is_zero() {
            return Err(EndReason::GraceOver);
        }
        self.core.terminate_at = Some(now + grace);
        Ok(())
    }

    /// Runs a handler callback with a fresh deadline, catching panics and timing it against
    /// the budget.
    fn call<T>(
        &mut self,
        inner: &Inner,
        now: Instant,
        f: impl FnOnce(
            &mut dyn MatchHandler,
            &MatchContext,
            &mut Dispatcher<'_>,
        ) -> Result<T, HandlerError>,
    ) -> Result<T, HandlerError> {
        let budget = inner.config.handler_budget;
        self.core.ctx.deadline = now + budget;
        // Seats promised to players on their way count as pending joins (`docs/MATCHES.md`,
        // "Seats"); a joiner's own reservation is not counted against it.
        self.core.ctx.pending_joins = (self.core.pending.len()
            + self.core.shared.reserved.load(Ordering::Acquire) as usize)
            .saturating_sub(self.core.own_seat);
        let mut dispatcher = Dispatcher {
            match_id: &self.core.shared.id_text,
            members: &self.core.members,
            outlet: &*inner.outlet,
            effects: &mut self.core.effects,
            deferred_limit: inner.config.deferred_queue_size,
        };
        let handler = self.handler.get();
        let ctx = &self.core.ctx;
        let started = inner.clock.now();
        let result = guarded(|| f(handler, ctx, &mut dispatcher));
        if result.is_ok() && inner.clock.now().saturating_duration_since(started) > budget {
            return Err(HandlerError::Timeout);
        }
        result
    }

    /// Applies what a callback asked for (label, kicks, deferred sends) and turns its outcome
    /// into a step.
    fn settle<T>(
        &mut self,
        inner: &Inner,
        now: Instant,
        callback: &'static str,
        result: Result<T, HandlerError>,
    ) -> Step
    where
        T: Into<FlowOf>,
    {
        let flow = match result {
            Ok(value) => value.into().0,
            Err(error) => {
                self.flush(inner);
                return Err(EndReason::Failed { callback, error });
            }
        };
        if let Some(label) = self.core.effects.label.take() {
            self.core.ctx.label = label.clone();
            *self.core.shared.stats.label.lock() = label.clone();
            inner
                .listing
                .write()
                .upsert(&self.core.shared, label, self.core.ctx.tick_rate);
        }
        self.flush(inner);
        if flow == Flow::End {
            return Err(EndReason::Returned { callback });
        }
        // Kicks run `match_leave`, which may kick again; bounded by the number of members.
        let mut rounds = 0;
        while !self.core.effects.kicks.is_empty() && rounds <= self.core.members.len() + 1 {
            rounds += 1;
            let kicked = std::mem::take(&mut self.core.effects.kicks);
            // Kicked players are told too (Nakama only tells the others).
            let presences: Vec<Arc<Presence>> = self
                .core
                .members
                .presences()
                .iter()
                .filter(|p| kicked.contains(&p.session_id))
                .cloned()
                .collect();
            if !presences.is_empty() {
                inner.outlet.send_presences(
                    &kicked,
                    &PresenceEvent {
                        match_id: &self.core.shared.id_text,
                        joins: &[],
                        leaves: &presences,
                    },
                );
            }
            self.leave(inner, now, &kicked, PresenceReason::Leave)?;
        }
        Ok(())
    }

    fn flush(&mut self, inner: &Inner) {
        if !self.core.effects.deferred.is_empty() {
            self.core
                .effects
                .flush_deferred(&self.core.shared.id_text, &*inner.outlet);
        }
        if self.core.effects.delivered > 0 {
            self.core
                .shared
                .metrics
                .sent
                .increment(self.core.effects.delivered);
            self.core.effects.delivered = 0;
        }
    }

    fn expire_pending(&mut self, inner: &Inner, now: Instant) {
        if self.core.shared.reserved.load(Ordering::Acquire) > 0 {
            let mut seats = self.core.shared.seats.lock();
            if seats.prune(now) {
                self.core
                    .shared
                    .reserved
                    .store(seats.held.len() as u32, Ordering::Release);
                tracing::debug!(match_id = %self.core.shared.id_text, "reserved seats lapsed: their players did not join within match.seat_reservation_ms");
            }
        }
        if self.core.pending.iter().all(|p| p.expires > now) {
            return;
        }
        let uuid = self.core.shared.id.uuid();
        let mut awaiting = self.core.shared.awaiting_completion.lock();
        self.core.pending.retain(|p| {
            let keep = p.expires > now;
            if !keep {
                awaiting.remove(&p.presence.session_id);
                inner.session_exited(p.presence.session_id, uuid);
                tracing::debug!(match_id = %self.core.shared.id_text, sid = %p.presence.session_id, "accepted join lapsed: the client did not complete it within match.join_marker_deadline_ms");
            }
            keep
        });
        drop(awaiting);
        self.update_counts();
    }

    fn update_counts(&mut self) {
        self.core.ctx.presences = self.core.members.len();
        self.core.ctx.pending_joins =
            self.core.pending.len() + self.core.shared.reserved.load(Ordering::Acquire) as usize;
        let stats = &self.core.shared.stats;
        stats
            .presences
            .store(self.core.members.len() as u32, Ordering::Relaxed);
        stats
            .pending
            .store(self.core.pending.len() as u32, Ordering::Relaxed);
        self.core.shared.size.store(
            (self.core.members.len() + self.core.pending.len()) as u32,
            Ordering::Release,
        );
    }

    /// Ends the match: it leaves the registry and the listing, and everyone in it (joined or
    /// pending) is told they left. Returns the presences it had.
    pub(crate) fn finish(mut self, inner: &Inner, reason: &EndReason) {
        self.flush(inner);
        let shared = self.core.shared.clone();
        shared.ended.store(true, Ordering::Release);
        inner.remove_authoritative(&shared);
        let mut everyone = self.core.members.take_all();
        everyone.extend(self.core.pending.drain(..).map(|p| p.presence));
        let sessions: Vec<Uuid> = everyone.iter().map(|p| p.session_id).collect();
        for session in &sessions {
            inner.session_exited(*session, shared.id.uuid());
        }
        if !sessions.is_empty() {
            match self.core.presence_events {
                PresenceEvents::Everyone => inner.outlet.send_presences(
                    &sessions,
                    &PresenceEvent {
                        match_id: &shared.id_text,
                        joins: &[],
                        leaves: &everyone,
                    },
                ),
                // Each is told of its own leave only (not n events of n presences).
                PresenceEvents::OwnJoinOnly => {
                    for presence in &everyone {
                        inner.outlet.send_presences(
                            &[presence.session_id],
                            &PresenceEvent {
                                match_id: &shared.id_text,
                                joins: &[],
                                leaves: std::slice::from_ref(presence),
                            },
                        );
                    }
                }
            }
        }
        shared.inbox.lock().senders.clear();
        shared.inbox.lock().queue.clear();
        shared.size.store(0, Ordering::Release);
        shared.seats.lock().held.clear();
        shared.reserved.store(0, Ordering::Release);
        metrics::ended(&shared.handler_name, shared.runtime, reason.label());
        shared.metrics.running.decrement(1.0);
        let snapshot = shared.snapshot();
        match reason {
            EndReason::Failed { callback, error } => {
                shared.metrics.errors.increment(1);
                inner.handler_failed(&shared, callback, error);
                tracing::warn!(
                    match_id = %shared.id_text,
                    handler = %shared.handler_name,
                    runtime = shared.runtime,
                    callback,
                    error = %error,
                    kind = error.kind(),
                    players = sessions.len(),
                    ticks = snapshot.ticks,
                    "match stopped: its handler failed; its players were told they left"
                );
            }
            other => tracing::info!(
                match_id = %shared.id_text,
                handler = %shared.handler_name,
                runtime = shared.runtime,
                reason = other.label(),
                players = sessions.len(),
                ticks = snapshot.ticks,
                max_tick_ms = snapshot.max_tick_seconds * 1e3,
                max_lateness_ms = snapshot.max_lateness_seconds * 1e3,
                overruns = snapshot.overruns,
                dropped_inputs = snapshot.dropped_inputs,
                "match ended"
            ),
        }
        // The handler (and a script VM it owns) is dropped here, on its own thread.
    }
}

/// What a callback returns, reduced to its flow.
pub(crate) struct FlowOf(Flow);

impl From<Flow> for FlowOf {
    fn from(flow: Flow) -> FlowOf {
        FlowOf(flow)
    }
}

impl From<()> for FlowOf {
    fn from(_: ()) -> FlowOf {
        FlowOf(Flow::Continue)
    }
}

/// `now` rounded up to a whole millisecond after `epoch` (see `Inner::epoch`).
fn grid(epoch: Instant, now: Instant) -> Instant {
    let since = now.saturating_duration_since(epoch).as_nanos();
    let step = 1_000_000u128;
    let rounded = since.div_ceil(step) * step;
    epoch + Duration::from_nanos(u64::try_from(rounded).unwrap_or(u64::MAX))
}

fn rejected(reason: Option<String>) -> JoinOutcome {
    JoinOutcome::Rejected {
        reason: reason
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| "Match join rejected".into()),
    }
}

fn record(
    last: &std::sync::atomic::AtomicU64,
    max: &std::sync::atomic::AtomicU64,
    value: Duration,
) {
    let ns = value.as_nanos().min(u128::from(u64::MAX)) as u64;
    last.store(ns, Ordering::Relaxed);
    max.fetch_max(ns, Ordering::Relaxed);
}

/// Runs handler code, turning a panic into an error so it ends only its own match.
fn guarded<T>(f: impl FnOnce() -> Result<T, HandlerError>) -> Result<T, HandlerError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(panic) => Err(HandlerError::Panicked {
            message: panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".into()),
        }),
    }
}
