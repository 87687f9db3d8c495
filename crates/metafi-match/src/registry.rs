//! [`Matches`]: the match registry every edge uses — create and find matches, join and leave
//! them, send them data, list them, signal them, stop them. Authoritative matches run on the
//! executor threads; this type routes to the owning thread and keeps the listing and the
//! per-session membership that lets a disconnect leave every match at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use metafi_core::Clock;
use parking_lot::{Mutex, RwLock};
use tokio::sync::oneshot;
use uuid::Uuid;

use crate::authoritative::{AuthoritativeMatch, JoinOutcome};
use crate::clock::MonotonicClock;
use crate::config::MatchConfig;
use crate::error::MatchError;
use crate::id::MatchId;
use crate::listing::{ListQuery, Listing, MatchInfo};
use crate::mailbox::Mailbox;
use crate::match_handler::{JoinRequest, MatchSpec};
use crate::metrics::MetricsCache;
use crate::outlet::Outlet;
use crate::presence::PresenceReason;
use crate::query::Query;
use crate::relayed::Relayed;
use crate::remote::{ListedMatch, RemoteMatches, SeatRequest, WeakMatches};
use crate::scheduler::{self, Command, SchedulerSeed};
use crate::shared::{Inbox, MatchShared, MatchStats, MatchStatsSnapshot, Queued};

/// Matches [`Matches::find_seat`] tries per listing round, and rounds before it creates one.
const FIND_CANDIDATES: usize = 8;
const FIND_ROUNDS: usize = 2;

/// How a node starts a match of a handler name with params (`None`: no runtime has that
/// handler): the runtimes' handlers, for seats other nodes ask this node to find.
pub type SpecSource = dyn Fn(&str, crate::match_handler::Params) -> Option<MatchSpec> + Send + Sync;

/// The installed [`SpecSource`].
pub(crate) struct Specs(Arc<SpecSource>);

impl std::fmt::Debug for Specs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Specs")
    }
}

/// An executor thread as the registry sees it.
#[derive(Debug)]
pub(crate) struct ThreadHandle {
    pub(crate) mailbox: Arc<Mailbox>,
    /// Matches it runs.
    pub(crate) load: AtomicUsize,
    /// What its matches cost and whether its ticks are late (placement and admission).
    pub(crate) cost: crate::load::ThreadLoad,
}

/// State shared by the registry and the executor threads.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) config: MatchConfig,
    pub(crate) node: Arc<str>,
    pub(crate) outlet: Arc<dyn Outlet>,
    /// Monotonic time: tick schedules, lateness, budgets.
    pub(crate) clock: Arc<dyn MonotonicClock>,
    /// Wall time: create times, message receive times.
    pub(crate) wall: Arc<dyn Clock>,
    /// Origin of the tick grid: matches start their schedules on whole milliseconds from here,
    /// so the ticks of many matches fall on shared instants and a thread wakes at most once a
    /// millisecond instead of once per match tick.
    pub(crate) epoch: std::time::Instant,
    pub(crate) authoritative: RwLock<HashMap<Uuid, Arc<MatchShared>>>,
    pub(crate) relayed: RwLock<HashMap<Uuid, Relayed>>,
    pub(crate) listing: RwLock<Listing>,
    /// The matches (both kinds) each session is in or has a pending join to, and has not
    /// asked to leave yet; sessions of other nodes too (a join attempt enters them here on the
    /// match's node). [`Matches::leave`] checks membership here.
    pub(crate) sessions: Mutex<HashMap<Uuid, Vec<Uuid>>>,
    pub(crate) threads: Vec<ThreadHandle>,
    pub(crate) stopping: AtomicBool,
    /// Held while a new match is placed: its thread is chosen and its projected cost reserved
    /// in one step, so concurrent creations see each other.
    pub(crate) placement: Mutex<()>,
    /// Raised by [`Matches::request_drain`]; the node waits on it (`docs/MATCHES.md`, "Drain").
    pub(crate) drain: tokio::sync::watch::Sender<bool>,
    pub(crate) seq: AtomicU64,
    /// Held by [`Matches::find_seat`] while it creates a match (concurrent finders then
    /// reserve in it rather than each creating one).
    pub(crate) finding: tokio::sync::Mutex<()>,
    pub(crate) metrics: MetricsCache,
    /// Matches on other nodes of a cluster; unset on a single node.
    pub(crate) remote: OnceLock<Arc<dyn RemoteMatches>>,
    /// How to start a match of a handler name, for other nodes' seat requests (set once the
    /// runtimes' handlers are known).
    pub(crate) specs: OnceLock<Specs>,
    /// Where a failed match handler is recorded for the console (set once at start).
    pub(crate) errors: OnceLock<Arc<metafi_core::ModuleErrors>>,
}

impl Inner {
    pub(crate) fn session_entered(&self, session: Uuid, id: Uuid) {
        let mut sessions = self.sessions.lock();
        let list = sessions.entry(session).or_default();
        if !list.contains(&id) {
            list.push(id);
        }
    }

    /// Takes match `id` out of `session`'s matches; false when it was not among them.
    pub(crate) fn session_exited(&self, session: Uuid, id: Uuid) -> bool {
        let mut sessions = self.sessions.lock();
        let Some(list) = sessions.get_mut(&session) else {
            return false;
        };
        let Some(at) = list.iter().position(|m| *m == id) else {
            return false;
        };
        // In order: a session's end leaves its matches in the order it entered them.
        list.remove(at);
        if list.is_empty() {
            sessions.remove(&session);
        }
        true
    }

    /// Forgets an authoritative match (it ended or never started).
    pub(crate) fn remove_authoritative(&self, shared: &MatchShared) {
        let uuid = shared.id.uuid();
        if self.authoritative.write().remove(&uuid).is_some() {
            let thread = &self.threads[shared.thread()];
            thread.load.fetch_sub(1, Ordering::Relaxed);
            let cost = shared.cost_ns.swap(0, Ordering::Relaxed);
            thread.cost.cost_ns.fetch_sub(cost, Ordering::Relaxed);
            shared.metrics.cost.ended(cost);
        }
        self.listing.write().remove(uuid);
    }

    /// Records a handler callback's failure among its module's last errors (the handler name
    /// stands for the module: a Lua match module is named after its file).
    pub(crate) fn handler_failed(
        &self,
        shared: &MatchShared,
        callback: &str,
        error: &crate::match_handler::HandlerError,
    ) {
        if let Some(errors) = self.errors.get() {
            errors.record(
                &shared.handler_name,
                shared.runtime,
                &format!("match {} {callback}", shared.handler_name),
                error.kind(),
                &error.to_string(),
            );
        }
    }

    /// Queues a command on the mailbox of the thread that owns the match now (see
    /// `MatchShared::route`).
    pub(crate) fn route(&self, shared: &MatchShared, command: Command) {
        let route = shared.route.lock();
        self.threads[*route].mailbox.send(command);
    }

    pub(crate) fn next_seq(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }
}

/// The match registry. Cheap to clone; every clone is the same registry.
#[derive(Debug, Clone)]
pub struct Matches {
    pub(crate) inner: Arc<Inner>,
}

impl Matches {
    /// A registry for node `node` and the seeds of its executor threads'
    /// schedulers (`config.executor_threads`, at least one). Hand them to
    /// [`Executor::spawn`](crate::Executor::spawn), or build and step the schedulers by hand in
    /// tests.
    pub fn new(
        config: MatchConfig,
        node: &str,
        outlet: Arc<dyn Outlet>,
        clock: Arc<dyn MonotonicClock>,
        wall: Arc<dyn Clock>,
    ) -> (Matches, Vec<SchedulerSeed>) {
        let count = config.executor_threads.max(1);
        let mut receivers = Vec::with_capacity(count);
        let mut threads = Vec::with_capacity(count);
        for _ in 0..count {
            // Unbounded, but every command is bounded per match by the match's queue limits.
            let mailbox = Arc::new(Mailbox::default());
            threads.push(ThreadHandle {
                mailbox: mailbox.clone(),
                load: AtomicUsize::new(0),
                cost: crate::load::ThreadLoad::default(),
            });
            receivers.push(mailbox);
        }
        let inner = Arc::new(Inner {
            config,
            node: Arc::from(node),
            outlet,
            epoch: clock.now(),
            clock,
            wall,
            authoritative: RwLock::new(HashMap::new()),
            relayed: RwLock::new(HashMap::new()),
            listing: RwLock::new(Listing::default()),
            sessions: Mutex::new(HashMap::new()),
            threads,
            stopping: AtomicBool::new(false),
            placement: Mutex::new(()),
            drain: tokio::sync::watch::Sender::new(false),
            seq: AtomicU64::new(1),
            finding: tokio::sync::Mutex::new(()),
            metrics: MetricsCache::default(),
            remote: OnceLock::new(),
            specs: OnceLock::new(),
            errors: OnceLock::new(),
        });
        let schedulers = receivers
            .into_iter()
            .enumerate()
            .map(|(index, rx)| SchedulerSeed::new(index, inner.clone(), rx))
            .collect();
        (Matches { inner }, schedulers)
    }

    /// This node's name (the part after the dot of authoritative match ids).
    pub fn node(&self) -> &str {
        &self.inner.node
    }

    pub fn config(&self) -> &MatchConfig {
        &self.inner.config
    }

    /// Installs the seam to other nodes' matches (a cluster, once, at start); false when one
    /// was installed already.
    pub fn set_remote(&self, remote: Arc<dyn RemoteMatches>) -> bool {
        self.inner.remote.set(remote).is_ok()
    }

    /// Installs how this node starts a match of a handler name (the runtimes' handlers), so
    /// other nodes of a cluster can ask it for a seat ([`Matches::find_seat_here`]); false
    /// when it was installed already.
    pub fn set_specs(&self, specs: Arc<SpecSource>) -> bool {
        self.inner.specs.set(Specs(specs)).is_ok()
    }

    /// Installs where failed match handlers are recorded (the runtime's last errors per
    /// module, shown by the console); false when one was installed already.
    pub fn set_error_log(&self, errors: Arc<metafi_core::ModuleErrors>) -> bool {
        self.inner.errors.set(errors).is_ok()
    }

    pub(crate) fn remote(&self) -> Option<&Arc<dyn RemoteMatches>> {
        self.inner.remote.get()
    }

    /// A handle that does not keep the registry alive.
    pub fn downgrade(&self) -> WeakMatches {
        WeakMatches(Arc::downgrade(&self.inner))
    }

    /// Every match of this node (authoritative and relayed) as other nodes list it.
    pub fn listed(&self) -> Vec<ListedMatch> {
        let mut all = self.inner.listing.read().listed();
        self.listed_relayed(&mut all);
        all
    }

    /// Starts an authoritative match: its handler is built and `match_init` runs on the least
    /// loaded executor thread (or, when called from handler code, on the calling thread).
    /// Returns once `match_init` succeeded.
    pub async fn create(&self, spec: MatchSpec) -> Result<MatchId, MatchError> {
        self.create_holding(spec, None).await
    }

    /// [`Matches::create`] with a seat already reserved for `seat_for` (before the match is
    /// listed, so no one else can take it first).
    async fn create_holding(
        &self,
        spec: MatchSpec,
        seat_for: Option<Uuid>,
    ) -> Result<MatchId, MatchError> {
        let inner = &self.inner;
        if inner.stopping.load(Ordering::Acquire) {
            return Err(MatchError::ShuttingDown);
        }
        let current = scheduler::current_thread();
        let metrics = inner.metrics.handler(&spec.handler_name, spec.runtime);
        let id = MatchId::authoritative(Uuid::new_v4(), inner.node.clone());
        // Placement and the reservation of the match's projected cost, in one step.
        let placed = inner.placement.lock();
        let projected = metrics.cost.projection(&inner.config.objective);
        let thread = match self.place(current, projected) {
            Ok(thread) => thread,
            Err(refusal) => {
                crate::metrics::refused(refusal.label());
                let error = refusal.into_error();
                tracing::debug!(handler = %spec.handler_name, error = %error, "match refused");
                return Err(error);
            }
        };
        let shared = Arc::new(MatchShared {
            id_text: Arc::from(id.to_string()),
            id: id.clone(),
            handler_name: spec.handler_name.clone(),
            runtime: spec.runtime,
            route: Mutex::new(thread),
            seq: inner.next_seq(),
            create_time_ms: inner.wall.now_ms(),
            inbox: Mutex::new(Inbox {
                senders: HashMap::new(),
                queue: std::collections::VecDeque::new(),
                capacity: inner.config.input_queue_size,
            }),
            size: AtomicU32::new(0),
            seats: Mutex::new(crate::shared::Seats::default()),
            reserved: AtomicU32::new(0),
            tick_rate: AtomicU32::new(0),
            ended: AtomicBool::new(false),
            join_attempts: AtomicU32::new(0),
            signals: AtomicU32::new(0),
            calls: AtomicU32::new(0),
            overloaded: AtomicBool::new(false),
            awaiting_completion: Mutex::new(std::collections::HashSet::new()),
            stats: MatchStats::default(),
            metrics,
            cost_ns: AtomicI64::new(projected),
            tap: std::sync::OnceLock::new(),
        });
        if let Some(user) = seat_for {
            let hold = inner.clock.now() + inner.config.seat_reservation;
            shared.seats.lock().held.insert(user, hold);
            shared.reserved.store(1, Ordering::Release);
        }
        inner
            .authoritative
            .write()
            .insert(id.uuid(), shared.clone());
        inner.threads[thread].load.fetch_add(1, Ordering::Relaxed);
        inner.threads[thread]
            .cost
            .cost_ns
            .fetch_add(projected, Ordering::Relaxed);
        shared.metrics.cost.started();
        shared.metrics.cost.add(projected);
        drop(placed);

        if current.is_some() {
            // Handler code creating a match: this thread is busy running it, so the new
            // match's init runs right here and the scheduler adopts it when the callback ends.
            let now = inner.clock.now();
            return match AuthoritativeMatch::start(inner, shared.clone(), spec, now) {
                Ok(started) => match scheduler::adopt_inline(Box::new(started)) {
                    Ok(()) => Ok(id),
                    Err(started) => {
                        started.finish(inner, &crate::authoritative::EndReason::Stopped);
                        Err(MatchError::ShuttingDown)
                    }
                },
                Err(error) => {
                    shared.ended.store(true, Ordering::Release);
                    inner.remove_authoritative(&shared);
                    Err(MatchError::Init { error })
                }
            };
        }

        let (reply, answer) = oneshot::channel();
        inner.threads[thread].mailbox.send(Command::Start {
            shared: shared.clone(),
            spec,
            reply,
        });
        match self.wait(answer).await {
            Some(Ok(())) => Ok(id),
            Some(Err(error)) => Err(error),
            None => Err(MatchError::TimedOut),
        }
    }

    /// Asks an authoritative match to let a client in. On `Accepted { is_new: true }` the
    /// caller answers its client and then calls [`Matches::complete_join`]; until then the
    /// player is a pending join (counted in the match's size and in `ctx.pending_joins`).
    pub async fn join(
        &self,
        id: &MatchId,
        request: JoinRequest,
    ) -> Result<JoinOutcome, MatchError> {
        let Some(shared) = self.authoritative(id) else {
            if let Some(remote) = self.remote().filter(|_| self.is_elsewhere(id)) {
                return remote.join(id, request).await;
            }
            return Ok(JoinOutcome::NotFound);
        };
        let limit = self.inner.config.join_attempt_queue_size as u32;
        if shared.join_attempts.fetch_add(1, Ordering::AcqRel) >= limit {
            shared.join_attempts.fetch_sub(1, Ordering::AcqRel);
            crate::metrics::join("authoritative", "queue_full");
            return Ok(JoinOutcome::Rejected {
                reason: "Match is not currently accepting join requests".into(),
            });
        }
        if scheduler::current_thread() == Some(shared.thread()) {
            shared.join_attempts.fetch_sub(1, Ordering::AcqRel);
            return Err(MatchError::busy(
                "a match handler cannot join a client to a match on its own executor thread",
            ));
        }
        let (reply, answer) = oneshot::channel();
        self.inner.route(
            &shared,
            Command::JoinAttempt {
                id: id.uuid(),
                request,
                reply,
            },
        );
        let outcome = self.wait(answer).await.unwrap_or(JoinOutcome::Rejected {
            reason: "Match join rejected".into(),
        });
        let label = match &outcome {
            JoinOutcome::Accepted { is_new: true, .. } => "accepted",
            JoinOutcome::Accepted { .. } => "already_in",
            JoinOutcome::Rejected { .. } => "rejected",
            JoinOutcome::NotFound => "not_found",
        };
        crate::metrics::join("authoritative", label);
        Ok(outcome)
    }

    /// The client of an accepted join has its answer: the join completes (presence event to
    /// everyone, then `match_join`). For a relayed match this sends the presence event. A
    /// session with no accepted join waiting in the match changes nothing (as a leave of a
    /// session that is not in it): nothing is queued.
    pub fn complete_join(&self, id: &MatchId, session_id: Uuid) {
        if !id.is_authoritative() {
            if !self.relayed_announce(id.uuid(), session_id)
                && let Some(remote) = self.remote()
            {
                remote.complete_join(id, session_id);
            }
            return;
        }
        if let Some(shared) = self.authoritative(id) {
            // Checked where the match lives: a completion cast by another node lands here too.
            if !shared.awaiting_completion.lock().remove(&session_id) {
                return;
            }
            self.call(
                &shared,
                Command::CompleteJoin {
                    id: id.uuid(),
                    session: session_id,
                },
            );
        } else if let Some(remote) = self.remote().filter(|_| self.is_elsewhere(id)) {
            remote.complete_join(id, session_id);
        }
    }

    /// A client leaves a match (`match_leave`). A match it is not in, or an unknown one, is
    /// ignored, as Nakama does.
    pub fn leave(&self, id: &MatchId, session_id: Uuid) {
        if !id.is_authoritative() {
            if !self.relayed_leave(id.uuid(), session_id, PresenceReason::Leave)
                && let Some(remote) = self.remote()
            {
                remote.leave(id, session_id);
            }
            return;
        }
        if let Some(shared) = self.authoritative(id) {
            // Anyone can name any match, and each queued leave takes a place in the match's
            // call queue: only a member (or pending join) queues one, and only once — the
            // match leaves its list now — so neither strangers nor a member repeating itself
            // can fill the queue and stop the match. A leave cast by another node lands here
            // too, on the match's node, where its sessions are listed.
            if self.inner.session_exited(session_id, id.uuid()) {
                self.call(
                    &shared,
                    Command::Leave {
                        id: id.uuid(),
                        sessions: vec![session_id],
                        reason: PresenceReason::Leave,
                    },
                );
            }
        } else if let Some(remote) = self.remote().filter(|_| self.is_elsewhere(id)) {
            remote.leave(id, session_id);
        }
    }

    /// A client's match data. Authoritative: queued for the next tick (the sender must have
    /// joined). Relayed: delivered now to the other members, or to those of `to` (session ids).
    pub fn send(
        &self,
        id: &MatchId,
        session_id: Uuid,
        op_code: i64,
        data: Bytes,
        reliable: bool,
        to: &[Uuid],
    ) -> Queued {
        self.send_with(id, session_id, op_code, data, reliable, None, to)
    }

    /// [`Matches::send`] with MetaFi's delivery extension: relayed matches pass it on to the
    /// recipients (so their transport delivers with the class the sender chose), also to a
    /// relayed match on another node (the seam carries it); authoritative handlers see only
    /// `reliable`.
    #[allow(clippy::too_many_arguments)] // the fields of the client's match_data_send
    pub fn send_with(
        &self,
        id: &MatchId,
        session_id: Uuid,
        op_code: i64,
        data: Bytes,
        reliable: bool,
        delivery: Option<&metafi_proto::realtime::Delivery>,
        to: &[Uuid],
    ) -> Queued {
        if !id.is_authoritative() {
            let queued = self.relayed_send(id, session_id, op_code, &data, reliable, delivery, to);
            return match (queued, self.remote()) {
                (Queued::Ended, Some(remote)) => {
                    remote.send(id, session_id, op_code, data, reliable, delivery, to)
                }
                (queued, _) => queued,
            };
        }
        match self.authoritative(id) {
            Some(shared) => shared.push_input(
                session_id,
                op_code,
                data,
                reliable,
                self.inner.wall.now_ms(),
            ),
            None => match self.remote().filter(|_| self.is_elsewhere(id)) {
                Some(remote) => remote.send(id, session_id, op_code, data, reliable, delivery, to),
                None => Queued::Ended,
            },
        }
    }

    /// A session ended: it leaves every match it is in, with reason Disconnect.
    pub fn session_ended(&self, session_id: Uuid) {
        self.session_ended_because(session_id, PresenceReason::Disconnect);
    }

    /// A session ended: it leaves every match it is in with `reason` (server code's
    /// `nk.session_disconnect` may name one).
    pub fn session_ended_because(&self, session_id: Uuid, reason: PresenceReason) {
        let ids = self
            .inner
            .sessions
            .lock()
            .remove(&session_id)
            .unwrap_or_default();
        for uuid in ids {
            let shared = self.inner.authoritative.read().get(&uuid).cloned();
            match shared {
                Some(shared) => self.call(
                    &shared,
                    Command::Leave {
                        id: uuid,
                        sessions: vec![session_id],
                        reason,
                    },
                ),
                None => {
                    self.relayed_leave(uuid, session_id, reason);
                }
            }
        }
        if let Some(remote) = self.remote() {
            remote.session_ended(session_id, reason);
        }
    }

    /// Lists matches as Nakama does: a query or an exact label searches authoritative
    /// matches only; otherwise authoritative matches first (newest first), then relayed ones
    /// unless `authoritative` is `Some(true)`.
    pub fn list(&self, filters: &ListQuery) -> Result<Vec<MatchInfo>, MatchError> {
        if filters.limit == 0 {
            return Ok(Vec::new());
        }
        if let Some(remote) = self.remote() {
            return self.list_everywhere(remote.as_ref(), filters);
        }
        if let Some(text) = &filters.query {
            let query = Query::parse(text)?;
            if filters.authoritative == Some(false) {
                return Ok(Vec::new());
            }
            return Ok(self.inner.listing.read().search(&query, filters));
        }
        if let Some(label) = &filters.label {
            if filters.authoritative == Some(false) {
                return Ok(Vec::new());
            }
            return Ok(self.inner.listing.read().with_label(label, filters));
        }
        let mut results = Vec::new();
        if filters.authoritative != Some(false) {
            results = self.inner.listing.read().search(&Query::all(), filters);
        }
        if filters.authoritative != Some(true) && results.len() < filters.limit {
            self.list_relayed(filters, &mut results);
        }
        Ok(results)
    }

    /// Reserves a seat in authoritative match `id` for `user` if fewer than `seats` are taken
    /// (joined players, pending joins and reserved seats), or renews the seat `user` holds.
    /// Listings count the seat in the match's size and its handler sees it in
    /// `pending_joins`; `user`'s join uses it up; it lapses after `match.seat_reservation_ms`.
    /// `Ok(false)`: the match is full or ended. This node's matches only (`Ok(false)` for a
    /// match of another node; [`Matches::reserve_seat_anywhere`] reaches those).
    pub fn reserve_seat(&self, id: &str, user: Uuid, seats: u32) -> Result<bool, MatchError> {
        let id = MatchId::parse(id).map_err(|_| MatchError::InvalidId)?;
        let Some(shared) = self.authoritative(&id) else {
            return Ok(false);
        };
        self.reserve_in(&shared, user, seats)
    }

    /// [`Matches::reserve_seat`] in a match on any node of a cluster: one of another node is
    /// asked of that node (the same atomic check there; `Ok(false)` when its node is gone).
    pub async fn reserve_seat_anywhere(
        &self,
        id: &str,
        user: Uuid,
        seats: u32,
    ) -> Result<bool, MatchError> {
        let parsed = MatchId::parse(id).map_err(|_| MatchError::InvalidId)?;
        if seats == 0 {
            return Err(MatchError::InvalidArgument {
                message: "expects max size to be at least 1".into(),
            });
        }
        match self.remote().filter(|_| self.is_elsewhere(&parsed)) {
            Some(remote) => remote.reserve_seat(&parsed, user, seats).await,
            None => self.reserve_seat(id, user, seats),
        }
    }

    /// Whether a new match would be refused now: the node drains, or admission says it is
    /// full. Other nodes of a cluster learn it with this node's listing.
    pub fn refuses_new_matches(&self) -> bool {
        self.is_draining() || self.admission_refusal().is_some()
    }

    fn reserve_in(&self, shared: &MatchShared, user: Uuid, seats: u32) -> Result<bool, MatchError> {
        if scheduler::current_thread() == Some(shared.thread()) {
            // The match's thread may be running a join attempt holding its seats.
            return Err(MatchError::busy(
                "a match handler cannot reserve a seat in a match on its own executor thread",
            ));
        }
        let inner = &self.inner;
        Ok(shared.reserve_seat(
            user,
            seats,
            inner.clock.now(),
            inner.config.seat_reservation,
        ))
    }

    /// Finds or creates a match and reserves a seat in it for `user`, atomically: the first
    /// match `filters` list (with `spec`'s handler name) that has fewer than `seats` seats
    /// taken gets the reservation; when none has room, `spec` is created with the seat already
    /// reserved. Concurrent finders never promise more than `seats` seats of one match, so
    /// every player sent to a match finds its seat (`docs/MATCHES.md`, "Seats").
    ///
    /// In a cluster (not from handler code): when none of this node's matches has room, the
    /// other nodes' listed matches are tried next (reserved on their node, in listing order);
    /// and when this node refuses to start the match (admission: "Node is full"; draining),
    /// the nodes that are not full are asked to find or create the seat among theirs.
    pub async fn find_seat(
        &self,
        filters: &ListQuery,
        user: Uuid,
        seats: u32,
        spec: MatchSpec,
    ) -> Result<MatchId, MatchError> {
        // Handler code does not wait on other nodes: its executor thread runs other matches.
        let remote = self
            .remote()
            .filter(|_| scheduler::current_thread().is_none())
            .cloned();
        self.find_seat_in(filters, user, seats, spec, remote).await
    }

    /// Another node's seat request: [`Matches::find_seat`] among this node's matches only
    /// (never passed on), starting the handler with the request's params when none has room.
    pub async fn find_seat_here(&self, request: SeatRequest) -> Result<MatchId, MatchError> {
        let Some(specs) = self.inner.specs.get() else {
            return Err(MatchError::busy(
                "this node's match handlers are not loaded yet",
            ));
        };
        let filters = request.filters();
        let spec = (*specs.0)(&request.handler_name, request.params).ok_or_else(|| {
            MatchError::HandlerNotFound {
                name: request.handler_name.clone(),
            }
        })?;
        self.find_seat_in(&filters, request.user, request.seats, spec, None)
            .await
    }

    async fn find_seat_in(
        &self,
        filters: &ListQuery,
        user: Uuid,
        seats: u32,
        spec: MatchSpec,
        remote: Option<Arc<dyn RemoteMatches>>,
    ) -> Result<MatchId, MatchError> {
        if seats == 0 {
            return Err(MatchError::InvalidArgument {
                message: "expects max size to be at least 1".into(),
            });
        }
        let query = match &filters.query {
            Some(text) => Query::parse(text)?,
            None => Query::all(),
        };
        let candidates = ListQuery {
            limit: FIND_CANDIDATES,
            authoritative: Some(true),
            max_size: Some(
                filters
                    .max_size
                    .map_or(seats as i32 - 1, |max| max.min(seats as i32 - 1)),
            ),
            ..filters.clone()
        };
        if let Some(id) = self.reserve_listed(&query, &candidates, filters, user, seats, &spec)? {
            return Ok(id);
        }
        if let Some(remote) = &remote {
            let query = (filters.query.is_some() || candidates.label.is_none()).then_some(&query);
            let handler_name = spec.handler_name.clone();
            if let Some(id) = self
                .reserve_elsewhere(
                    remote.as_ref(),
                    query,
                    &candidates,
                    user,
                    seats,
                    &handler_name,
                )
                .await
            {
                return Ok(id);
            }
        }
        let spill = remote.as_ref().map(|_| SeatRequest {
            handler_name: spec.handler_name.to_string(),
            params: spec.params.clone(),
            query: filters.query.clone(),
            label: filters.label.clone(),
            min_size: filters.min_size,
            max_size: filters.max_size,
            user,
            seats,
        });
        let created = {
            // No room anywhere: one finder at a time creates, and the others wait for its
            // match instead of each creating their own. Handler code (on an executor thread)
            // does not wait: the creation it would wait for may need its own thread.
            let _creating = match scheduler::current_thread() {
                None => Some(self.inner.finding.lock().await),
                Some(_) => None,
            };
            if let Some(id) =
                self.reserve_listed(&query, &candidates, filters, user, seats, &spec)?
            {
                return Ok(id);
            }
            self.create_holding(spec, Some(user)).await
        };
        match (created, remote, spill) {
            (
                Err(error @ (MatchError::Full { .. } | MatchError::ShuttingDown)),
                Some(remote),
                Some(spill),
            ) => match remote.find_seat_elsewhere(spill).await {
                Ok(id) => {
                    crate::metrics::seat_spilled("found");
                    Ok(id)
                }
                Err(elsewhere) => {
                    crate::metrics::seat_spilled("refused");
                    tracing::debug!(error = %error, elsewhere = %elsewhere, "no node had a seat");
                    Err(error)
                }
            },
            (created, ..) => created,
        }
    }

    /// The first of the other nodes' listed matches (as last published) with room for one
    /// more that takes `user`'s reservation on its node; a node that is gone or does not
    /// answer is skipped.
    async fn reserve_elsewhere(
        &self,
        remote: &dyn RemoteMatches,
        query: Option<&Query>,
        candidates: &ListQuery,
        user: Uuid,
        seats: u32,
        handler_name: &str,
    ) -> Option<MatchId> {
        // Other handlers' matches are filtered out after the search: look further than the
        // candidates tried.
        let wide = ListQuery {
            limit: FIND_CANDIDATES * 8,
            ..candidates.clone()
        };
        let listed: Vec<_> = remote
            .list(query, &wide)
            .into_iter()
            .filter(|(_, _, m)| m.handler_name.as_deref() == Some(handler_name))
            .collect();
        for info in crate::remote::merge(listed, FIND_CANDIDATES) {
            let Ok(id) = MatchId::parse(&info.match_id) else {
                continue;
            };
            match remote.reserve_seat(&id, user, seats).await {
                Ok(true) => {
                    crate::metrics::seat_elsewhere("reserved");
                    return Some(id);
                }
                Ok(false) => crate::metrics::seat_elsewhere("full"),
                Err(error) => {
                    crate::metrics::seat_elsewhere("failed");
                    tracing::debug!(match_id = %id, error = %error, "a seat on another node could not be reserved");
                }
            }
        }
        None
    }

    /// The first listed match with room for one more that takes `user`'s reservation.
    fn reserve_listed(
        &self,
        query: &Query,
        candidates: &ListQuery,
        filters: &ListQuery,
        user: Uuid,
        seats: u32,
        spec: &MatchSpec,
    ) -> Result<Option<MatchId>, MatchError> {
        for _ in 0..FIND_ROUNDS {
            let found = {
                let listing = self.inner.listing.read();
                match &candidates.label {
                    Some(label) if filters.query.is_none() => {
                        listing.with_label_shared(label, candidates, &spec.handler_name)
                    }
                    _ => listing.search_shared(query, candidates, &spec.handler_name),
                }
            };
            if found.is_empty() {
                break;
            }
            for shared in found {
                if self.reserve_in(&shared, user, seats)? {
                    return Ok(Some(shared.id.clone()));
                }
            }
        }
        Ok(None)
    }

    /// One match by id; `None` when there is no such match.
    pub fn get(&self, id: &str) -> Result<Option<MatchInfo>, MatchError> {
        let id = MatchId::parse(id).map_err(|_| MatchError::InvalidId)?;
        if !id.is_authoritative() {
            let local = self.relayed_info(id.uuid());
            return Ok(local.or_else(|| self.remote().and_then(|r| r.info(&id))));
        }
        if id.node() != &*self.inner.node {
            return Ok(self.remote().and_then(|r| r.info(&id)));
        }
        Ok(self.inner.listing.read().info(id.uuid()))
    }

    /// Calls the match's `match_signal` and returns its result.
    pub async fn signal(&self, id: &str, data: String) -> Result<String, MatchError> {
        let id = MatchId::parse(id).map_err(|_| MatchError::InvalidId)?;
        let Some(shared) = self.authoritative(&id) else {
            if let Some(remote) = self.remote().filter(|_| self.is_elsewhere(&id)) {
                return remote.signal(&id, data).await;
            }
            return Err(MatchError::NotFound);
        };
        let limit = self.inner.config.signal_queue_size as u32;
        if shared.signals.fetch_add(1, Ordering::AcqRel) >= limit {
            shared.signals.fetch_sub(1, Ordering::AcqRel);
            return Err(MatchError::busy(
                "Match is busy: too many signals waiting (match.signal_queue_size)",
            ));
        }
        if scheduler::current_thread() == Some(shared.thread()) {
            shared.signals.fetch_sub(1, Ordering::AcqRel);
            return Err(MatchError::busy(
                "a match handler cannot signal a match on its own executor thread",
            ));
        }
        let (reply, answer) = oneshot::channel();
        self.inner.route(
            &shared,
            Command::Signal {
                id: id.uuid(),
                data,
                reply,
            },
        );
        self.wait(answer).await.unwrap_or(Err(MatchError::TimedOut))
    }

    /// Counters of every running authoritative match.
    pub fn stats(&self) -> Vec<MatchStatsSnapshot> {
        let mut all: Vec<MatchStatsSnapshot> = self
            .inner
            .authoritative
            .read()
            .values()
            .map(|s| s.snapshot())
            .collect();
        all.sort_by(|a, b| {
            a.create_time_ms
                .cmp(&b.create_time_ms)
                .then(a.match_id.cmp(&b.match_id))
        });
        all
    }

    /// Ids of the running authoritative matches, oldest first (Agones' matches List).
    pub fn authoritative_ids(&self) -> Vec<String> {
        let mut all: Vec<(u64, String)> = self
            .inner
            .authoritative
            .read()
            .values()
            .map(|s| (s.seq, s.id_text.to_string()))
            .collect();
        all.sort_unstable();
        all.into_iter().map(|(_, id)| id).collect()
    }

    /// Running authoritative matches.
    pub fn count(&self) -> usize {
        self.inner.authoritative.read().len()
    }

    /// Stops taking new matches and calls `match_terminate(grace)` on every match. Matches end
    /// when their handler says so or when the grace period is over.
    pub fn begin_shutdown(&self, grace: Duration) {
        self.inner.stopping.store(true, Ordering::Release);
        for thread in &self.inner.threads {
            thread.mailbox.send(Command::Terminate { grace });
        }
    }

    /// Ends every match now and stops the executor threads' loops.
    pub fn stop(&self) {
        self.inner.stopping.store(true, Ordering::Release);
        for thread in &self.inner.threads {
            thread.mailbox.send(Command::Stop);
        }
    }

    /// Graceful shutdown: `match_terminate(grace)` everywhere, waits for matches to end (at
    /// most `grace` plus one second), then ends what is left.
    pub async fn shutdown(&self, grace: Duration) {
        self.begin_shutdown(grace);
        let deadline = tokio::time::Instant::now() + grace + Duration::from_secs(1);
        while self.count() > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.stop();
    }

    pub(crate) fn authoritative(&self, id: &MatchId) -> Option<Arc<MatchShared>> {
        if !id.is_authoritative() || id.node() != &*self.inner.node {
            return None;
        }
        self.inner.authoritative.read().get(&id.uuid()).cloned()
    }

    /// An authoritative match of another node.
    pub(crate) fn is_elsewhere(&self, id: &MatchId) -> bool {
        id.is_authoritative() && id.node() != &*self.inner.node
    }

    /// [`Matches::list`] in a cluster: this node's matches (never stale) and the other nodes'
    /// (as last published), merged in one order: best score, then newest first (without a
    /// query: authoritative matches first).
    fn list_everywhere(
        &self,
        remote: &dyn RemoteMatches,
        filters: &ListQuery,
    ) -> Result<Vec<MatchInfo>, MatchError> {
        let query = filters.query.as_deref().map(Query::parse).transpose()?;
        let searched = query.is_some() || filters.label.is_some();
        let mut all = self.inner.listing.read().scored(query.as_ref(), filters);
        if !searched && filters.authoritative != Some(true) {
            let mut relayed = Vec::new();
            self.listed_relayed(&mut relayed);
            all.extend(
                relayed
                    .into_iter()
                    .filter(|m| filters.size_ok(m.size))
                    .map(|m| (0.0, m.create_time_ms, m.info())),
            );
        }
        all.extend(remote.list(query.as_ref(), filters));
        Ok(crate::remote::merge(all, filters.limit))
    }

    /// The thread a new match of `projected` cost goes to (the caller's own thread for a
    /// match created by handler code), or why the node refuses it.
    fn place(&self, current: Option<usize>, projected: i64) -> Result<usize, crate::load::Refusal> {
        let inner = &self.inner;
        let threads: Vec<(&crate::load::ThreadLoad, usize)> = match current {
            Some(thread) => vec![(
                &inner.threads[thread].cost,
                inner.threads[thread].load.load(Ordering::Relaxed),
            )],
            None => inner
                .threads
                .iter()
                .map(|t| (&t.cost, t.load.load(Ordering::Relaxed)))
                .collect(),
        };
        let chosen = crate::load::place(&inner.config.objective, &threads, projected)?;
        Ok(current.unwrap_or(chosen))
    }

    /// Why a new match of the default projected cost would be refused now (admission on).
    pub(crate) fn admission_refusal(&self) -> Option<crate::load::Refusal> {
        let inner = &self.inner;
        let objective = &inner.config.objective;
        if !objective.admission {
            return None;
        }
        let threads: Vec<(&crate::load::ThreadLoad, usize)> = inner
            .threads
            .iter()
            .map(|t| (&t.cost, t.load.load(Ordering::Relaxed)))
            .collect();
        let projected =
            i64::try_from(objective.new_match_cpu_us.saturating_mul(1_000)).unwrap_or(i64::MAX);
        crate::load::place(objective, &threads, projected).err()
    }

    /// The node's load against its latency objective (health, metrics, operators); also
    /// sets the `metafi_match_executor_*` and `metafi_node_*` gauges.
    pub fn load(&self) -> crate::load::NodeLoad {
        let inner = &self.inner;
        let objective = &inner.config.objective;
        let threads: Vec<(&crate::load::ThreadLoad, usize)> = inner
            .threads
            .iter()
            .map(|t| (&t.cost, t.load.load(Ordering::Relaxed)))
            .collect();
        let used: i64 = threads.iter().map(|(l, _)| l.cost()).sum();
        let draining = inner.stopping.load(Ordering::Acquire);
        let full = if draining {
            Some("the node is draining".to_owned())
        } else {
            self.admission_refusal().map(|r| r.into_error().to_string())
        };
        let load = crate::load::NodeLoad {
            cpu: used as f64 / 1e9 / threads.len().max(1) as f64,
            cpu_objective: f64::from(objective.max_cpu_percent) / 100.0,
            late_threads: threads.iter().filter(|(l, n)| *n > 0 && l.late()).count(),
            late_threads_by_others: threads
                .iter()
                .filter(|(l, n)| *n > 0 && l.late_by_others())
                .count(),
            threads: threads.len(),
            matches: self.count(),
            full,
            draining,
            moves: inner
                .threads
                .iter()
                .map(|t| t.cost.moves.load(Ordering::Relaxed))
                .sum(),
            moves_refused_not_movable: inner
                .threads
                .iter()
                .map(|t| t.cost.refused_not_movable.load(Ordering::Relaxed))
                .sum(),
            moves_refused_no_room: inner
                .threads
                .iter()
                .map(|t| t.cost.refused_no_room.load(Ordering::Relaxed))
                .sum(),
        };
        crate::metrics::node_load(&load);
        load
    }

    /// Whether the node is stopping or draining (no new matches).
    pub fn is_draining(&self) -> bool {
        self.inner.stopping.load(Ordering::Acquire)
    }

    /// Asks the node to drain (an operator's call): from now on no new match starts, and
    /// whoever waits on [`Matches::drain_requested`] (the node's main loop) stops the node
    /// gracefully, as on SIGTERM. False when a drain was requested already.
    pub fn request_drain(&self) -> bool {
        self.inner.stopping.store(true, Ordering::Release);
        !self.inner.drain.send_replace(true)
    }

    /// Resolves once a drain was requested.
    pub fn drain_requested(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut requested = self.inner.drain.subscribe();
        async move {
            let _ = requested.wait_for(|drain| *drain).await;
        }
    }

    /// Sends a leave or join completion, bounded by `match.call_queue_size` beyond the match's
    /// own presences: a match that falls that far behind is stopped. Every joined or pending
    /// presence may leave (or complete its join) at once — a mass disconnect of a 5,000-player
    /// world queued 5,000 leaves and stopped it with the bare limit of 128 — so those always
    /// fit, and the queue stays bounded by the match's size plus the limit.
    fn call(&self, shared: &MatchShared, command: Command) {
        let limit = (self.inner.config.call_queue_size as u32)
            .saturating_add(shared.size.load(Ordering::Acquire));
        if shared.calls.fetch_add(1, Ordering::AcqRel) >= limit {
            shared.calls.fetch_sub(1, Ordering::AcqRel);
            if !shared.overloaded.swap(true, Ordering::AcqRel) {
                tracing::warn!(match_id = %shared.id_text, handler = %shared.handler_name, limit, "match call queue full (match.call_queue_size); stopping the match");
                self.inner.route(
                    shared,
                    Command::Overloaded {
                        id: shared.id.uuid(),
                    },
                );
            }
            return;
        }
        self.inner.route(shared, command);
    }

    /// Waits for an executor's answer, at most `match.reply_timeout_ms` (when called outside
    /// a tokio runtime with timers, without a limit).
    pub(crate) async fn wait<T>(&self, answer: oneshot::Receiver<T>) -> Option<T> {
        if tokio::runtime::Handle::try_current().is_err() {
            return answer.await.ok();
        }
        match tokio::time::timeout(self.inner.config.reply_timeout, answer).await {
            Ok(Ok(value)) => Some(value),
            Ok(Err(_)) | Err(_) => None,
        }
    }
}
