//! The sans-IO heart of an executor thread: the matches it owns, their tick deadlines in a
//! heap, and the commands other threads send it. [`Scheduler::step`] handles waiting commands
//! and runs every tick that is due, in deadline order, reading time from the clock it was given;
//! it never blocks and never spawns. The executor thread calls it in a loop and sleeps until
//! the next deadline or command; tests call it by hand with a [`FakeClock`](crate::FakeClock).

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use uuid::Uuid;

use crate::authoritative::{AuthoritativeMatch, EndReason, JoinOutcome, MovingMatch, Step};
use crate::error::MatchError;
use crate::load::{Mark, OwnTime, SlotCost, Window, Work};
use crate::mailbox::Mailbox;
use crate::match_handler::{JoinRequest, MatchSpec};
use crate::phase::{Phase, Phases};
use crate::presence::PresenceReason;
use crate::registry::Inner;
use crate::shared::MatchShared;

/// Commands handled before ticks in each step, at most; the rest wait for the next step so a
/// flood of commands cannot starve ticks.
const MAX_COMMANDS_PER_STEP: usize = 256;

/// Within a step, how often what the ticks sent is let out (see `Outlet::flush`).
const FLUSH_EVERY: Duration = Duration::from_millis(2);

/// A step that has worked this long runs no tick early (`MatchConfig::tick_batch_window`): its
/// wake-ups are already shared by enough work, and more would only make the burst of writes
/// it hands the IO threads larger (a thread near its capacity, thousands of matches, runs
/// like one without the window).
const EARLY_ONLY_WITHIN: Duration = Duration::from_micros(500);

/// Work sent to an executor thread.
pub(crate) enum Command {
    Start {
        shared: Arc<MatchShared>,
        spec: MatchSpec,
        reply: oneshot::Sender<Result<(), MatchError>>,
    },
    JoinAttempt {
        id: Uuid,
        request: JoinRequest,
        reply: oneshot::Sender<JoinOutcome>,
    },
    CompleteJoin {
        id: Uuid,
        session: Uuid,
    },
    Leave {
        id: Uuid,
        sessions: Vec<Uuid>,
        reason: PresenceReason,
    },
    Signal {
        id: Uuid,
        data: String,
        reply: oneshot::Sender<Result<String, MatchError>>,
    },
    /// The match's call queue overflowed: stop it.
    Overloaded {
        id: Uuid,
    },
    /// The server is stopping: `match_terminate` with this grace for every match.
    Terminate {
        grace: Duration,
    },
    /// An operator ends one match (`Matches::end`): `match_terminate` with this grace; the
    /// reply says whether the thread had the match.
    End {
        id: Uuid,
        grace: Duration,
        reply: oneshot::Sender<bool>,
    },
    /// End every match now and stop the thread.
    Stop,
    /// A match handed off by another executor thread (hand-off), with the commands that were
    /// waiting for it there.
    Adopt {
        moving: Box<Moving>,
    },
}

/// A match travelling between executor threads.
pub(crate) struct Moving {
    m: MovingMatch,
    cost: SlotCost,
    /// Commands for the match queued on its old thread before the move, in their order.
    carried: Vec<Command>,
}

impl Command {
    /// The match a command is for (`None`: thread-wide commands, starts and adoptions).
    pub(crate) fn match_id(&self) -> Option<Uuid> {
        match self {
            Command::JoinAttempt { id, .. }
            | Command::CompleteJoin { id, .. }
            | Command::Leave { id, .. }
            | Command::Signal { id, .. }
            | Command::End { id, .. }
            | Command::Overloaded { id } => Some(*id),
            Command::Start { .. }
            | Command::Terminate { .. }
            | Command::Stop
            | Command::Adopt { .. } => None,
        }
    }
}

/// Why [`Scheduler::hand_off`] did not move a match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandOffRefused {
    /// This thread does not run that match.
    NotHere,
    /// Its handler must stay on its thread (a script VM).
    NotMovable,
    /// The target is this thread or does not exist.
    BadTarget,
    /// The node is stopping: matches stay where they are.
    Stopping,
}

thread_local! {
    /// Matches created by handler code running on this executor thread (`nk.match_create`
    /// inside a callback), waiting to join the scheduler once the callback returns.
    static INLINE: RefCell<Option<InlineStarts>> = const { RefCell::new(None) };
}

struct InlineStarts {
    thread: usize,
    started: Vec<AuthoritativeMatch>,
}

/// The executor thread running the calling code, if it is one.
pub(crate) fn current_thread() -> Option<usize> {
    INLINE.with(|cell| cell.borrow().as_ref().map(|s| s.thread))
}

/// Adopts a match started inline by handler code on this thread; gives it back when this is
/// not an executor thread.
pub(crate) fn adopt_inline(
    started: Box<AuthoritativeMatch>,
) -> Result<(), Box<AuthoritativeMatch>> {
    INLINE.with(|cell| match cell.borrow_mut().as_mut() {
        Some(inline) => {
            inline.started.push(*started);
            Ok(())
        }
        None => Err(started),
    })
}

/// What an executor thread needs to build its [`Scheduler`] (which, holding handlers that
/// need not be `Send`, is built on the thread itself).
pub struct SchedulerSeed {
    index: usize,
    inner: Arc<Inner>,
    rx: Arc<Mailbox>,
}

impl std::fmt::Debug for SchedulerSeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchedulerSeed")
            .field("index", &self.index)
            .finish()
    }
}

impl SchedulerSeed {
    pub(crate) fn new(index: usize, inner: Arc<Inner>, rx: Arc<Mailbox>) -> SchedulerSeed {
        SchedulerSeed { index, inner, rx }
    }

    /// Builds the scheduler on the calling thread.
    pub fn build(self) -> Scheduler {
        Scheduler::new(self.index, self.inner, self.rx)
    }
}

/// The matches of one executor thread.
pub struct Scheduler {
    index: usize,
    inner: Arc<Inner>,
    rx: Arc<Mailbox>,
    slots: Vec<Option<AuthoritativeMatch>>,
    /// Bumped when a slot is vacated, so stale timer entries are recognised.
    generations: Vec<u64>,
    /// Whether the slot's next tick is in `timers` (a tick pops it; other callbacks leave it).
    queued: Vec<bool>,
    free: Vec<usize>,
    by_id: HashMap<Uuid, usize>,
    /// Due time, then 1 for a heavy match (it runs after the cheap ones due with it), slot,
    /// generation.
    timers: BinaryHeap<Reverse<(Instant, u8, usize, u64)>>,
    /// Each slot's measured cost (the latency objective's bookkeeping, `load.rs`).
    costs: Vec<SlotCost>,
    /// Ticks due per millisecond of a second, so a new match ticks where the fewest are due
    /// (`phase.rs`), and each slot's place in it.
    phases: Phases,
    slot_phases: Vec<Phase>,
    /// This thread's lateness window.
    window: Window,
    /// Its clocks when it last came back from waiting for a command or its next tick, and at
    /// each step and tick since: a tick's own lateness is the time the thread ran or blocked
    /// in its own code after the tick fell due (`load::OwnTime`), not the time it waited to be
    /// woken or for its core.
    own_time: OwnTime,
    /// Lateness windows seen by the hand-off rule, and how many in a row broke the objective.
    seen_windows: u64,
    late_windows: u64,
    /// The grace of the `Terminate` this thread handled (a match adopted later gets it too).
    terminated: Option<Duration>,
    stopped: bool,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("index", &self.index)
            .field("matches", &self.by_id.len())
            .finish()
    }
}

impl Scheduler {
    fn new(index: usize, inner: Arc<Inner>, rx: Arc<Mailbox>) -> Scheduler {
        // Built on the executor thread itself (`SchedulerSeed::build`), whose clocks these are.
        let own_time = OwnTime::new(Mark {
            wall: inner.clock.now(),
            run_delay: inner.clock.thread_run_delay(),
        });
        Scheduler {
            index,
            inner,
            rx,
            slots: Vec::new(),
            generations: Vec::new(),
            queued: Vec::new(),
            free: Vec::new(),
            by_id: HashMap::new(),
            timers: BinaryHeap::new(),
            costs: Vec::new(),
            phases: Phases::default(),
            slot_phases: Vec::new(),
            window: Window::default(),
            own_time,
            seen_windows: 0,
            late_windows: 0,
            terminated: None,
            stopped: false,
        }
    }

    /// Marks the calling thread as this scheduler's executor thread (for matches created from
    /// inside handlers). The executor calls it once at thread start.
    pub fn enter_thread(&self) {
        INLINE.with(|cell| {
            *cell.borrow_mut() = Some(InlineStarts {
                thread: self.index,
                started: Vec::new(),
            });
        });
    }

    /// Handles waiting commands, then runs every due tick, and those due within the batch
    /// window (`MatchConfig::tick_batch_window`). Returns when the next tick is due (`None`:
    /// no matches).
    pub fn step(&mut self) -> Option<Instant> {
        let now = self.mark_now();
        self.own_time.mark(now, Work::Mailbox);
        for _ in 0..MAX_COMMANDS_PER_STEP {
            match self.rx.try_recv() {
                Some(command) => self.handle_marked(command),
                None => break,
            }
        }
        self.run_due();
        self.inner.outlet.flush();
        self.consider_hand_off();
        self.next_deadline()
    }

    /// Waits until the next tick is due at `next` (forever without one) or a command arrives,
    /// and handles that command. The executor thread calls it between steps.
    pub(crate) fn wait(&mut self, next: Option<Instant>) {
        // Closes the work before the wait (its own time counts up to here, not the wait); a
        // return without sleeping has spent the time on the mailbox.
        let now = self.mark_now();
        self.own_time.mark(now, Work::Mailbox);
        let (command, waited) = self.rx.recv_until(next);
        if waited {
            self.woke();
        }
        if let Some(command) = command {
            self.handle_marked(command);
            self.inner.outlet.flush();
        }
    }

    /// The thread is about to run idle work (script VMs' garbage collection) between ticks.
    pub(crate) fn idle(&mut self) {
        let now = self.mark_now();
        self.own_time.mark(now, Work::Idle);
    }

    /// The thread has just come back from waiting (for a command or its next tick): lateness
    /// of ticks that fell due while it waited, up to now, is not its own. The executor calls it
    /// after each wait; tests call it after moving the fake clock past a due tick, as an OS
    /// that wakes the thread late would.
    pub fn woke(&mut self) {
        let now = self.mark_now();
        self.own_time.woke(now);
    }

    /// Both clocks now (the run delay is one system call: read at each wake and wait, step,
    /// command, idle slice, tick start and tick end).
    fn mark_now(&self) -> Mark {
        Mark {
            wall: self.inner.clock.now(),
            run_delay: self.inner.clock.thread_run_delay(),
        }
    }

    pub(crate) fn mailbox(&self) -> &Arc<Mailbox> {
        &self.rx
    }

    /// Whether the scheduler received `Stop` and ended everything.
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// Matches this thread runs.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    pub fn next_deadline(&self) -> Option<Instant> {
        self.timers.peek().map(|Reverse((at, _, _, _))| *at)
    }

    fn run_due(&mut self) {
        // A mark where the step's ticks begin: a tick that falls due after it is not charged
        // the commands handled before it (`load::OwnTime` counts from the last mark).
        let began = self.mark_now();
        self.own_time.mark(began, Work::Other);
        let mut flushed = began.wall;
        // Only ticks due when the step began, or within the batch window after it: ticks that
        // fall due later wait for the next step, after the commands. An overloaded thread (its
        // ticks take longer than their intervals) would otherwise never leave this loop, and
        // joins, leaves and new matches would wait forever. The window lets ticks due close
        // together share this step, its wake-up and its flush (one wake of the IO threads)
        // instead of one each: with phases spread a millisecond apart, one step per tick was
        // about 3 context switches per tick on a shared core (issue 21, the match row).
        let horizon = began.wall + self.inner.config.tick_batch_window;
        loop {
            let now = self.inner.clock.now();
            // A long step (many ticks due at once) still lets out what it has sent every
            // FLUSH_EVERY, so early ticks' messages do not wait for the whole backlog.
            if now.saturating_duration_since(flushed) >= FLUSH_EVERY {
                self.inner.outlet.flush();
                flushed = now;
            }
            let Some(&Reverse((at, _, slot, generation))) = self.timers.peek() else {
                break;
            };
            let early = at > now;
            if at > horizon
                || (early
                    && (at > now + self.early_allowance(slot)
                        || now.saturating_duration_since(began.wall) >= EARLY_ONLY_WITHIN))
            {
                break;
            }
            self.timers.pop();
            if self.generations.get(slot) != Some(&generation) || self.slots[slot].is_none() {
                continue;
            }
            self.queued[slot] = false;
            // Both clocks read together, after the flush above: the IO threads a flush wakes
            // may take the core at once, and that wait belongs before the tick's mark. Read
            // with `now` from before the flush, it counted in the mark's run delay but not its
            // wall time, and so as the tick's own time — its cost, and the own lateness of the
            // ticks after it in the step (issue 21: JavaScript at 8,000 players, the engine's
            // count of its matches' cost 4.8 times the executor thread's CPU).
            let started = self.mark_now();
            let step = match self.slots[slot].as_mut() {
                Some(m) => m.run_tick(&self.inner, started.wall),
                None => continue,
            };
            if step.is_ok() {
                self.account(slot, at, started);
            }
            // A tick run early joins the thread's queue of steady work where it ran.
            self.own_time.mark_tick(started, at.min(started.wall));
            self.after(slot, step);
            self.adopt_inline_starts();
        }
    }

    /// How long before it is due the tick of `slot` may run: the batch window
    /// (`match.tick_batch_window_ms`), at most an eighth of the match's interval, so a fast
    /// match's ticks stay evenly spaced.
    fn early_allowance(&self, slot: usize) -> Duration {
        let window = self.inner.config.tick_batch_window;
        match self.slots.get(slot).and_then(Option::as_ref) {
            Some(m) => window.min(Duration::from_nanos(m.interval_ns() / 8)),
            None => Duration::ZERO,
        }
    }

    /// The objective's bookkeeping after a tick that was due at `scheduled` and started at
    /// `started`: the thread's lateness window (by the wall clock, and its own part), the
    /// match's cost (and its thread's and handler's) from the tick's own time — the time the
    /// OS gave the thread's core to others during the tick (the IO threads' RPCs at a rush) is
    /// not the match's — and its stretch when the thread needs more CPU than the objective
    /// allows.
    fn account(&mut self, slot: usize, scheduled: Instant, started: Mark) {
        let finished = self.mark_now();
        let took = finished.own_since(&started);
        let objective = &self.inner.config.objective;
        let thread = &self.inner.threads[self.index].cost;
        let own_time = &self.own_time;
        if let Some((cause, own)) = self.window.record(
            objective,
            thread,
            started.wall,
            started.wall.saturating_duration_since(scheduled),
            own_time.arrivals(),
            || own_time.own_split(scheduled, started),
        ) {
            crate::metrics::late_tick(cause, &own);
        }
        let matches = self.by_id.len();
        let Some(m) = self.slots[slot].as_mut() else {
            return;
        };
        let cost = &mut self.costs[slot];
        let delta = cost.tick(objective, took, m.tick_rate(), thread.cost(), matches);
        if delta != 0 {
            thread.cost_ns.fetch_add(delta, Ordering::Relaxed);
            m.shared().cost_ns.fetch_add(delta, Ordering::Relaxed);
            m.shared().metrics.cost.add(delta);
        }
        m.stretch(cost.stretch);
    }

    fn timer(&self, at: Instant, slot: usize) -> Reverse<(Instant, u8, usize, u64)> {
        let heavy = self.costs[slot].heavy(&self.inner.config.objective);
        Reverse((at, u8::from(heavy), slot, self.generations[slot]))
    }

    /// Handles `command` after a mark naming its work, so a tick that falls due meanwhile
    /// knows what kept it waiting (`load::OwnTime::own_split`).
    fn handle_marked(&mut self, command: Command) {
        let work = match &command {
            Command::Start { .. } | Command::Adopt { .. } => Work::Start,
            Command::JoinAttempt { .. } => Work::JoinAttempt,
            Command::CompleteJoin { .. } => Work::Join,
            Command::Leave { .. } => Work::Leave,
            Command::Signal { .. } => Work::Signal,
            Command::Overloaded { .. }
            | Command::Terminate { .. }
            | Command::End { .. }
            | Command::Stop => Work::Other,
        };
        let now = self.mark_now();
        self.own_time.mark(now, work);
        self.handle(command);
    }

    fn handle(&mut self, command: Command) {
        let now = self.inner.clock.now();
        match command {
            Command::Start {
                shared,
                spec,
                reply,
            } => {
                let started = AuthoritativeMatch::start(&self.inner, shared.clone(), spec, now);
                match started {
                    Ok(m) => {
                        self.insert(m);
                        let _ = reply.send(Ok(()));
                    }
                    Err(error) => {
                        shared.ended.store(true, Ordering::Release);
                        self.inner.remove_authoritative(&shared);
                        tracing::warn!(match_id = %shared.id_text, handler = %shared.handler_name, runtime = shared.runtime, error = %error, "match_init failed; the match was not created");
                        self.inner.handler_failed(&shared, "match_init", &error);
                        let _ = reply.send(Err(MatchError::Init { error }));
                    }
                }
            }
            Command::JoinAttempt { id, request, reply } => {
                let Some(slot) = self.by_id.get(&id).copied() else {
                    let _ = reply.send(JoinOutcome::NotFound);
                    return;
                };
                if let Some(m) = self.slots[slot].as_ref() {
                    m.shared().join_attempts.fetch_sub(1, Ordering::AcqRel);
                }
                let Some(m) = self.slots[slot].as_mut() else {
                    let _ = reply.send(JoinOutcome::NotFound);
                    return;
                };
                let (step, outcome) = m.join_attempt(&self.inner, now, &request);
                let outcome = if step.is_err() {
                    JoinOutcome::Rejected {
                        reason: "Match join rejected".into(),
                    }
                } else {
                    outcome
                };
                let _ = reply.send(outcome);
                self.after(slot, step);
            }
            Command::CompleteJoin { id, session } => {
                self.with_call(id, |m, inner| m.complete_join(inner, now, session));
            }
            Command::Leave {
                id,
                sessions,
                reason,
            } => {
                self.with_call(id, |m, inner| m.leave(inner, now, &sessions, reason));
            }
            Command::Signal { id, data, reply } => {
                let Some(slot) = self.by_id.get(&id).copied() else {
                    let _ = reply.send(Err(MatchError::NotFound));
                    return;
                };
                let Some(m) = self.slots[slot].as_mut() else {
                    let _ = reply.send(Err(MatchError::NotFound));
                    return;
                };
                m.shared().signals.fetch_sub(1, Ordering::AcqRel);
                let (step, result) = m.signal(&self.inner, now, &data);
                let _ = reply
                    .send(result.ok_or_else(|| MatchError::busy("Match is busy or has ended")));
                self.after(slot, step);
            }
            Command::Overloaded { id } => {
                if let Some(slot) = self.by_id.get(&id).copied() {
                    self.after(slot, Err(EndReason::CallQueueFull));
                }
            }
            Command::Terminate { grace } => {
                self.terminated = Some(grace);
                let slots: Vec<usize> = self.by_id.values().copied().collect();
                for slot in slots {
                    let step = match self.slots[slot].as_mut() {
                        Some(m) => m.terminate(&self.inner, now, grace),
                        None => continue,
                    };
                    self.after(slot, step);
                }
            }
            Command::End { id, grace, reply } => {
                let Some(slot) = self.by_id.get(&id).copied() else {
                    let _ = reply.send(false);
                    return;
                };
                let step = match self.slots[slot].as_mut() {
                    Some(m) => m.terminate(&self.inner, now, grace),
                    None => {
                        let _ = reply.send(false);
                        return;
                    }
                };
                let _ = reply.send(true);
                self.after(slot, step);
            }
            Command::Stop => {
                let slots: Vec<usize> = self.by_id.values().copied().collect();
                for slot in slots {
                    self.after(slot, Err(EndReason::Stopped));
                }
                self.stopped = true;
            }
            Command::Adopt { moving } => {
                let Moving { m, cost, carried } = *moving;
                let m = m.settle_in();
                let id = m.shared().id.uuid();
                let slot = self.insert_slot(m, cost);
                // The node began stopping while the match travelled: it gets the
                // `match_terminate` its old thread may not have given it.
                if let Some(grace) = self.terminated {
                    let step = match self.slots[slot].as_mut() {
                        Some(m) => m.terminate(&self.inner, now, grace),
                        None => Ok(()),
                    };
                    self.after(slot, step);
                }
                tracing::debug!(match_id = %id, thread = self.index, carried = carried.len(), "match adopted from another executor thread");
                for command in carried {
                    self.handle(command);
                }
            }
        }
        self.adopt_inline_starts();
    }

    /// Runs a leave or join completion, which counted against the match's call queue.
    fn with_call(&mut self, id: Uuid, f: impl FnOnce(&mut AuthoritativeMatch, &Inner) -> Step) {
        let Some(slot) = self.by_id.get(&id).copied() else {
            return;
        };
        let Some(m) = self.slots[slot].as_mut() else {
            return;
        };
        m.shared().calls.fetch_sub(1, Ordering::AcqRel);
        let step = f(m, &self.inner);
        self.after(slot, step);
    }

    /// Reschedules a match after it ran, or ends it.
    fn after(&mut self, slot: usize, step: Step) {
        match step {
            Ok(()) => {
                if let Some(m) = self.slots[slot].as_ref()
                    && !self.queued[slot]
                {
                    let timer = self.timer(m.next_tick(), slot);
                    self.timers.push(timer);
                    self.queued[slot] = true;
                }
            }
            Err(reason) => {
                let Some(m) = self.slots[slot].take() else {
                    return;
                };
                self.generations[slot] += 1;
                self.queued[slot] = false;
                self.free.push(slot);
                self.phases.remove(self.slot_phases[slot]);
                self.by_id.remove(&m.shared().id.uuid());
                m.finish(&self.inner, &reason);
            }
        }
    }

    /// A new match: its first tick goes where this thread has the fewest ticks due
    /// (`phase.rs`), within one interval of its creation (`match.spread_tick_phases`).
    fn insert(&mut self, mut m: AuthoritativeMatch) {
        if self.inner.config.spread_tick_phases {
            let first = self.since_epoch(m.next_tick());
            let earlier = self
                .phases
                .earlier_by(first, m.interval_ns(), m.tick_rate());
            m.tick_first_earlier(Duration::from_nanos(earlier));
        }
        m.shared().metrics.running.increment(1.0);
        let cost = SlotCost::placed(m.shared().cost_ns.load(Ordering::Relaxed));
        self.insert_slot(m, cost);
    }

    fn insert_slot(&mut self, m: AuthoritativeMatch, cost: SlotCost) -> usize {
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(None);
                self.generations.push(0);
                self.queued.push(false);
                self.costs.push(SlotCost::default());
                self.slot_phases.push(Phase::default());
                self.slots.len() - 1
            }
        };
        self.by_id.insert(m.shared().id.uuid(), slot);
        self.costs[slot] = cost;
        let phase = Phase::new(
            self.since_epoch(m.next_tick()),
            m.interval_ns(),
            m.tick_rate(),
        );
        self.phases.add(phase);
        self.slot_phases[slot] = phase;
        let timer = self.timer(m.next_tick(), slot);
        self.timers.push(timer);
        self.queued[slot] = true;
        self.slots[slot] = Some(m);
        slot
    }

    /// The hand-off rule, after each step's ticks: when this thread's lateness windows have
    /// broken the objective for `hand_off_after` in a row, it moves one movable match to the
    /// least loaded thread that is keeping its objective — the most expensive match that fits
    /// there within the CPU objective and leaves the two threads closer to even. A match whose
    /// handler cannot move (a script VM) is never chosen; that the one that would have moved
    /// was such a match is counted (`moves refused: not movable`).
    fn consider_hand_off(&mut self) {
        let objective = &self.inner.config.objective;
        if !objective.hand_off || self.inner.threads.len() < 2 {
            return;
        }
        if self.window.published == self.seen_windows {
            return;
        }
        self.seen_windows = self.window.published;
        let own = &self.inner.threads[self.index].cost;
        if !own.late() {
            self.late_windows = 0;
            return;
        }
        self.late_windows += 1;
        if self.late_windows < objective.hand_off_windows() {
            return;
        }
        // Whatever happens now, the next hand-off waits for as many late windows again (a
        // moved match's lateness has to leave the window first).
        self.late_windows = 0;
        if self.by_id.len() < 2 || self.inner.stopping.load(Ordering::Acquire) {
            return;
        }
        let budget = objective.thread_budget_ns();
        let own_cost = own.cost();
        let target = self
            .inner
            .threads
            .iter()
            .enumerate()
            .filter(|(i, t)| {
                *i != self.index && !(t.load.load(Ordering::Relaxed) > 0 && t.cost.late())
            })
            .min_by_key(|(i, t)| (t.cost.cost(), *i))
            .map(|(i, t)| (i, t.cost.cost()));
        let mut best: Option<(i64, usize)> = None;
        let mut pinned_fits = false;
        if let Some((_, target_cost)) = target {
            for (slot, m) in self.slots.iter().enumerate() {
                let Some(m) = m else { continue };
                let cost = m.shared().cost_ns.load(Ordering::Relaxed).max(0);
                if target_cost + cost > budget || target_cost + cost >= own_cost {
                    continue;
                }
                if !m.is_movable() {
                    pinned_fits = true;
                } else if best.is_none_or(|(c, _)| cost > c) {
                    best = Some((cost, slot));
                }
            }
        }
        match (target, best) {
            (Some((to, _)), Some((_, slot))) => {
                let _ = self.hand_off_slot(slot, to);
            }
            _ if pinned_fits => {
                own.refused_not_movable.fetch_add(1, Ordering::Relaxed);
                crate::metrics::move_refused("not_movable");
                tracing::debug!(
                    thread = self.index,
                    "executor thread late, but the matches that would fit elsewhere are script VMs, which stay on their thread"
                );
            }
            _ => {
                own.refused_no_room.fetch_add(1, Ordering::Relaxed);
                crate::metrics::move_refused("no_room");
            }
        }
    }

    /// Hands match `id` off to executor thread `to` now, between ticks (the hand-off rule does
    /// this by itself; tests and tools may call it). Its state stays in its handler, its tick
    /// schedule keeps its grid, and commands waiting for it here travel with it in order.
    pub fn hand_off(&mut self, id: Uuid, to: usize) -> Result<(), HandOffRefused> {
        let slot = *self.by_id.get(&id).ok_or(HandOffRefused::NotHere)?;
        let result = self.hand_off_slot(slot, to);
        if result == Err(HandOffRefused::NotMovable) {
            self.inner.threads[self.index]
                .cost
                .refused_not_movable
                .fetch_add(1, Ordering::Relaxed);
            crate::metrics::move_refused("not_movable");
        }
        result
    }

    fn hand_off_slot(&mut self, slot: usize, to: usize) -> Result<(), HandOffRefused> {
        if to == self.index || to >= self.inner.threads.len() {
            return Err(HandOffRefused::BadTarget);
        }
        if self.inner.stopping.load(Ordering::Acquire) {
            return Err(HandOffRefused::Stopping);
        }
        match self.slots[slot].as_ref() {
            None => return Err(HandOffRefused::NotHere),
            Some(m) if !m.is_movable() => return Err(HandOffRefused::NotMovable),
            Some(_) => {}
        }
        let m = self.slots[slot].take().ok_or(HandOffRefused::NotHere)?;
        let m = match m.into_moving() {
            Ok(moving) => moving,
            Err(pinned) => {
                self.slots[slot] = Some(*pinned);
                return Err(HandOffRefused::NotMovable);
            }
        };
        let id = m.shared().id.uuid();
        self.generations[slot] += 1;
        self.queued[slot] = false;
        self.free.push(slot);
        self.phases.remove(self.slot_phases[slot]);
        self.by_id.remove(&id);
        let cost = std::mem::take(&mut self.costs[slot]);
        let shared = m.shared().clone();
        let threads = &self.inner.threads;
        let applied = shared.cost_ns.load(Ordering::Relaxed);
        threads[self.index].load.fetch_sub(1, Ordering::Relaxed);
        threads[self.index]
            .cost
            .cost_ns
            .fetch_sub(applied, Ordering::Relaxed);
        threads[to].load.fetch_add(1, Ordering::Relaxed);
        threads[to]
            .cost
            .cost_ns
            .fetch_add(applied, Ordering::Relaxed);
        {
            // Under the route lock: a command for the match is queued here before this point
            // (and is taken along) or on the new thread after the match.
            let mut route = shared.route.lock();
            *route = to;
            let carried = self.rx.take_for(id);
            threads[to].mailbox.send(Command::Adopt {
                moving: Box::new(Moving { m, cost, carried }),
            });
        }
        threads[self.index]
            .cost
            .moves
            .fetch_add(1, Ordering::Relaxed);
        crate::metrics::moved();
        tracing::info!(match_id = %shared.id_text, handler = %shared.handler_name, from = self.index, to, cpu = applied as f64 / 1e9, "match handed off to a less loaded executor thread");
        Ok(())
    }

    /// Nanoseconds from the tick grid's origin to `at`.
    fn since_epoch(&self, at: Instant) -> u64 {
        let since = at.saturating_duration_since(self.inner.epoch).as_nanos();
        u64::try_from(since).unwrap_or(u64::MAX)
    }

    fn adopt_inline_starts(&mut self) {
        let started = INLINE.with(|cell| {
            cell.borrow_mut()
                .as_mut()
                .map(|inline| std::mem::take(&mut inline.started))
                .unwrap_or_default()
        });
        for m in started {
            self.insert(m);
        }
    }
}
