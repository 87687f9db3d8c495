//! The latency objective's bookkeeping: what each match costs (from its tick times), what each
//! executor thread carries, whether its ticks are late, where a new match goes and whether the
//! node takes it at all (`docs/MATCHES.md`, "Objective, placement, admission").
//!
//! Costs are CPU nanoseconds per second (1e9 = one whole core). A match's cost is a decaying
//! average of its tick durations times the ticks it runs per second; a thread's cost is the sum
//! of its matches' costs, kept by deltas so reading it is one atomic load. A new match counts
//! its projected cost from the moment it is placed (so a burst of creations does not all land
//! on the thread that looked empty) until its own ticks are measured.
//!
//! A tick's lateness is split by cause ([`OwnTime`]): the time its thread itself spent, since
//! the tick fell due (or since it woke), running or blocked in its own ticks and callbacks (its
//! matches are too many for it), and the rest: waiting to be woken, and waiting for its core
//! while it ran a batch (the OS gave the core to someone else). Players feel both (the lateness
//! histogram keeps both); admission, hand-off and health judge only the first, since refusing
//! matches cannot cure the second. A tick's duration, the match's cost, leaves out the same
//! waits for the core.
//!
//! The thread's own lateness is split again by the work that ran ([`Work`]): its matches'
//! ticks, match starts (`match_init`), join attempts, joins, leaves, signals, idle work, its
//! mailbox (`metafi_match_own_lateness_microseconds_total{work}`). Admission, hand-off and
//! health leave out the part players arriving and leaving took ([`Work::is_arrival`]: match
//! starts, join attempts, joins, leaves): a rush's own work passes with the rush, and refusing
//! its finders turns players away without curing it. Unless that work and the thread's
//! matches together need more than the whole thread ([`ThreadLoad::late`]): then it does not
//! pass.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::config::{Objective, Placement};
use crate::error::MatchError;

/// How fast a match's average tick time follows its ticks, as a shift (1/8 of the difference
/// per tick, up or down).
const EWMA_SHIFT: u32 = 3;

/// Two ticks in a row each dearer than this many times a match's average: its code got
/// dearer (a match whose code suddenly costs 10x), and the average takes the cheaper of the two
/// at once instead of an eighth of the difference.
const JUMP_FACTOR: u64 = 2;

/// Lateness is judged at the 99th percentile: more than 1 % of a window's ticks late past the
/// objective breaks it.
const LATE_PER_HUNDRED: u64 = 1;

/// A thread whose own lateness breaks the objective while its matches use less than this share
/// of the CPU objective is late from a burst of callbacks (a rush of joins and match creations
/// handled before its ticks), not from carrying too many matches: it is not counted as full.
const LATE_LOAD_FLOOR_DIVISOR: i64 = 3;

/// What an executor thread carries, shared with the registry (placement, admission, health).
#[derive(Debug, Default)]
pub(crate) struct ThreadLoad {
    /// CPU its matches use, nanoseconds per second.
    pub(crate) cost_ns: AtomicI64,
    /// Ticks in its last complete lateness window, how many of them were late past the
    /// objective, how many of those by the thread's own lateness alone (the rest were woken or
    /// preempted late, see [`OwnTime`]), and how many by its own lateness less what arrivals
    /// took ([`Work::is_arrival`]; admission, hand-off and health read these).
    window_ticks: AtomicU64,
    window_late: AtomicU64,
    window_own_late: AtomicU64,
    window_steady_late: AtomicU64,
    /// The thread's own time on arrivals in that window, nanoseconds per second of it (as
    /// `cost_ns`): whether a rush fits beside its matches ([`late`](Self::late)).
    window_arrivals_ns: AtomicI64,
    /// Matches this thread handed off to another thread (hand-off).
    pub(crate) moves: AtomicU64,
    /// Hand-offs that were due but did not happen: the matches that would fit elsewhere are
    /// script VMs, which cannot move.
    pub(crate) refused_not_movable: AtomicU64,
    /// Hand-offs that were due but no other thread had room for any of its matches.
    pub(crate) refused_no_room: AtomicU64,
}

impl ThreadLoad {
    /// Whether the last complete window broke the lateness objective (p99 over it) by the
    /// thread's own work that stays: it was busy with its matches' ticks (or its other steady
    /// work) when its ticks fell due, past the objective without what players arriving and
    /// leaving took. Or its own lateness broke it only with those arrivals, and they and its
    /// matches together needed more than the whole thread over the window: it cannot catch
    /// up while they last. A rush of match starts and joins on a thread with room passes: not
    /// late (`docs/MATCHES.md`, "Objective, placement, admission").
    pub(crate) fn late(&self) -> bool {
        let ticks = self.window_ticks.load(Ordering::Relaxed);
        if breaks(ticks, self.window_steady_late.load(Ordering::Relaxed)) {
            return true;
        }
        breaks(ticks, self.window_own_late.load(Ordering::Relaxed))
            && self
                .cost()
                .saturating_add(self.window_arrivals_ns.load(Ordering::Relaxed))
                > WHOLE_THREAD_NS
    }

    /// Whether the last complete window broke the lateness objective only with the time others
    /// took — the thread woken late, or preempted — (its own lateness alone did not): what
    /// players feel, which the node's matches did not cause.
    pub(crate) fn late_by_others(&self) -> bool {
        let ticks = self.window_ticks.load(Ordering::Relaxed);
        breaks(ticks, self.window_late.load(Ordering::Relaxed))
            && !breaks(ticks, self.window_own_late.load(Ordering::Relaxed))
    }

    pub(crate) fn cost(&self) -> i64 {
        self.cost_ns.load(Ordering::Relaxed).max(0)
    }
}

/// A whole executor thread, CPU nanoseconds per second.
const WHOLE_THREAD_NS: i64 = 1_000_000_000;

/// Whether `late` of `ticks` breaks the objective: more than 1 % of them.
fn breaks(ticks: u64, late: u64) -> bool {
    ticks > 0 && late * 100 > ticks * LATE_PER_HUNDRED
}

/// Marks an executor thread keeps between two waits, at most (a thread that never waits keeps
/// the latest; an older due instant then falls back to the wake mark, which overstates the
/// thread's own time: the safe side). A step marks each command it handles, up to 256.
const MARKS: usize = 512;

/// What an executor thread runs from a mark until its next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Work {
    /// A match's tick, the sends it lets out, and the step's bookkeeping after it.
    Tick,
    /// A new match's start (`match_init`), or a match adopted from another thread.
    Start,
    JoinAttempt,
    /// A join completed (`match_join`).
    Join,
    Leave,
    Signal,
    /// Script VMs' idle work (garbage collection) between ticks.
    Idle,
    /// Taking commands from the thread's mailbox, from a wake-up or the start of a step to
    /// the first command: the IO threads put arrivals there, and the thread blocks on its
    /// lock while one of them holds it (on a busy core, until the OS runs that thread again).
    Mailbox,
    /// Anything else: the start of a step's ticks, termination, operator commands.
    Other,
}

/// How many kinds of [`Work`].
pub(crate) const WORKS: usize = 9;

impl Work {
    pub(crate) const ALL: [Work; WORKS] = [
        Work::Tick,
        Work::Start,
        Work::JoinAttempt,
        Work::Join,
        Work::Leave,
        Work::Signal,
        Work::Idle,
        Work::Mailbox,
        Work::Other,
    ];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Work::Tick => "tick",
            Work::Start => "match_init",
            Work::JoinAttempt => "join_attempt",
            Work::Join => "join",
            Work::Leave => "leave",
            Work::Signal => "signal",
            Work::Idle => "idle",
            Work::Mailbox => "mailbox",
            Work::Other => "other",
        }
    }

    /// Players and matches arriving or leaving — match starts, join attempts, joins, leaves:
    /// bursts at a rush (or a mass leave) that pass, not what the thread's matches cost once
    /// they run. Signals are not counted: a game may signal its matches all the time.
    pub(crate) fn is_arrival(self) -> bool {
        matches!(
            self,
            Work::Start | Work::JoinAttempt | Work::Join | Work::Leave
        )
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A tick's own lateness by the work the thread ran between its due instant and its start,
/// and the part of it its steady work alone would have caused ([`OwnTime::steady_lateness`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OwnSplit {
    pub(crate) by_work: [Duration; WORKS],
    /// The lateness the thread's steady work alone makes (at most the total).
    pub(crate) steady: Duration,
}

impl OwnSplit {
    pub(crate) fn total(&self) -> Duration {
        self.by_work.iter().sum()
    }

    pub(crate) fn of(&self, work: Work) -> Duration {
        self.by_work[work.index()]
    }

    /// The part the thread's steady work alone makes ([`OwnTime::steady_lateness`]), not
    /// what arrivals took, nor the backlog of ticks they held back.
    pub(crate) fn steady(&self) -> Duration {
        self.steady
    }
}

/// An executor thread's clocks read at one instant: the wall clock and how long the thread has
/// waited for its core so far (`MonotonicClock::thread_run_delay`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mark {
    pub(crate) wall: Instant,
    pub(crate) run_delay: Duration,
}

impl Mark {
    /// The thread's own time from `earlier` to this mark: the wall time less what it spent
    /// waiting for its core. Running and blocking in its own code (an `nk` call waiting for
    /// storage, a native handler that sleeps) both hold the thread, so both are its own.
    pub(crate) fn own_since(&self, earlier: &Mark) -> Duration {
        self.wall
            .saturating_duration_since(earlier.wall)
            .saturating_sub(self.run_delay.saturating_sub(earlier.run_delay))
    }
}

/// What an executor thread knows to split a tick's lateness by cause: its clocks when it last
/// came back from waiting (for a command or its next tick), and at each step and tick start
/// since. The rule ([`OwnTime::own_lateness`]): a tick's own lateness is the time the thread
/// itself ran or blocked in its own code from the instant the tick fell due — or from its
/// wake-up, if it was waiting then — to the tick's start. Not its own: the time it waited to
/// be woken (timer slack; on a one-core node at a rush, the IO threads' sign-ins, finder RPCs
/// and joins), and the time it was runnable but the OS gave its core to another thread while
/// it ran a batch of ticks (every later tick of the batch starts late though the thread did
/// not use that time). So work of other threads — RPCs on the IO threads or on a script
/// pool's VM threads — never counts as this thread's (`docs/MATCHES.md`, "Whose lateness").
#[derive(Debug)]
pub(crate) struct OwnTime {
    /// When the thread last came back from waiting (until it first waits: when it started).
    woke: Mark,
    /// Marks taken since, oldest first, at most [`MARKS`], each with the work that ran from it
    /// to the next.
    since: VecDeque<(Mark, Work)>,
    /// Whether marks taken since the wake-up were dropped (more than [`MARKS`]): the work from
    /// the wake-up to the oldest mark kept is then unknown.
    dropped: bool,
    /// The thread's own time on arrivals ([`Work::is_arrival`]) since it started, each piece
    /// counted when the mark after it is taken (the lateness window takes its share).
    arrivals: Duration,
    /// When the thread would be done with its steady work (everything but arrivals) had it
    /// run nothing else: each tick queued at its due instant, other steady work at the
    /// wake-up before it, each taking the thread's own time it took ([`steady_lateness`](Self::steady_lateness)).
    steady_end: Option<Instant>,
    /// The due instant of the tick that runs from the last mark, if that mark began a tick.
    open_due: Option<Instant>,
}

impl OwnTime {
    pub(crate) fn new(now: Mark) -> OwnTime {
        OwnTime {
            woke: now,
            since: VecDeque::with_capacity(MARKS),
            dropped: false,
            arrivals: Duration::ZERO,
            steady_end: None,
            open_due: None,
        }
    }

    /// The thread has just come back from waiting: what passed before `now` was not its own.
    /// (The work before the wait was closed by a mark taken before it: `Scheduler::wait`.)
    pub(crate) fn woke(&mut self, now: Mark) {
        self.woke = now;
        self.since.clear();
        self.dropped = false;
    }

    /// The thread is about to run `work` (a tick: [`mark_tick`](Self::mark_tick)).
    pub(crate) fn mark(&mut self, now: Mark, work: Work) {
        if let Some(&(last, was)) = self.since.back() {
            let own = now.own_since(&last);
            if was.is_arrival() {
                self.arrivals += own;
            } else {
                self.steady_end = Some(self.steady_end_after(was, own));
            }
        }
        if self.since.len() == MARKS {
            self.since.pop_front();
            self.dropped = true;
        }
        self.since.push_back((now, work));
        self.open_due = None;
    }

    /// The thread is about to run a tick that fell due at `due`.
    pub(crate) fn mark_tick(&mut self, now: Mark, due: Instant) {
        self.mark(now, Work::Tick);
        self.open_due = Some(due);
    }

    /// The lateness of a tick due at `due` that starts at `started` had the thread run only
    /// its steady work — its matches' ticks each from its due instant, signals, idle work, its
    /// mailbox — and no arrivals: how far past `due` that work would have kept it busy (a
    /// queue of that work alone). Arrivals hold ticks back, and the ticks held back then run
    /// back to back: a tick due at the end of a burst of join attempts waits for them and for
    /// the backlog of ticks behind them, and by the work that ran (`own_split`) that backlog
    /// is "ticks". Had the arrivals not come, those ticks would have run at their own due
    /// instants, spread out: that lateness is the arrivals', and passes with them. Ticks that
    /// fall due together and outgrow the thread (its matches are too many, or one too dear)
    /// queue here as they do on the thread: that lateness is steady.
    pub(crate) fn steady_lateness(&self, due: Instant, started: Mark) -> Duration {
        let end = match self.since.back() {
            Some(&(last, was)) if !was.is_arrival() => {
                Some(self.steady_end_after(was, started.own_since(&last)))
            }
            _ => self.steady_end,
        };
        end.map_or(Duration::ZERO, |end| end.saturating_duration_since(due))
    }

    /// [`steady_end`](Self::steady_end) after a piece of steady work `was` that took `own` of
    /// the thread's own time. A tick joins the queue at its due instant. Other steady work
    /// (a signal, idle work, the mailbox) joins it where the thread's busy stretch began, its
    /// wake-up: when it was sent is not known, and queued where it ran, after a burst of
    /// arrivals, it would carry the delay the arrivals made into the queue (and every tick due
    /// during the burst would look late by the thread's steady work).
    fn steady_end_after(&self, was: Work, own: Duration) -> Instant {
        let queued = match (was, self.open_due) {
            (Work::Tick, Some(due)) => due,
            _ => self.woke.wall,
        };
        self.steady_end.map_or(queued, |end| end.max(queued)) + own
    }

    /// The thread's own time on arrivals since it started.
    pub(crate) fn arrivals(&self) -> Duration {
        self.arrivals
    }

    /// The thread's own part of the lateness of a tick due at `scheduled` that starts at
    /// `started` ([`own_split`](Self::own_split) adds it up): its own time
    /// ([`Mark::own_since`]) since the last mark at or before `max(scheduled, woke)` — a mark a little before the due instant overstates it by at
    /// most one tick or callback: the safe side — and at most the wall time since
    /// `max(scheduled, woke)`. A thread never waits past a due tick, so a tick due before
    /// `woke` was due while it waited.
    #[cfg(test)]
    pub(crate) fn own_lateness(&self, scheduled: Instant, started: Mark) -> Duration {
        self.own_split(scheduled, started).total()
    }

    /// That lateness split by the work that ran from mark to mark; where the pieces add up to
    /// more (the first piece began before the due instant and the total is at most the wall
    /// time since), the excess is taken off the first pieces. Work from the wake-up to the
    /// oldest mark kept, when marks were dropped, is unknown and counted as [`Work::Tick`] (the
    /// thread's own time either way; the split only names it).
    pub(crate) fn own_split(&self, scheduled: Instant, started: Mark) -> OwnSplit {
        let (from, at) = self.from(scheduled);
        let (mut base, mut work) = match at {
            0 if self.dropped => (self.woke, Work::Tick),
            // From the wake-up the thread takes its commands first.
            0 => (self.woke, Work::Mailbox),
            n => self.since[n - 1],
        };
        let total = started
            .wall
            .saturating_duration_since(from)
            .min(started.own_since(&base));
        let mut pieces = Vec::with_capacity(self.since.len() - at + 1);
        for &(next, next_work) in self.since.range(at..) {
            if next.wall > started.wall {
                break;
            }
            pieces.push((work, next.own_since(&base)));
            (base, work) = (next, next_work);
        }
        pieces.push((work, started.own_since(&base)));
        let mut over = pieces
            .iter()
            .map(|(_, d)| *d)
            .sum::<Duration>()
            .saturating_sub(total);
        let mut split = OwnSplit::default();
        for (work, piece) in pieces {
            let cut = piece.min(over);
            over -= cut;
            split.by_work[work.index()] += piece - cut;
        }
        split.steady = self.steady_lateness(scheduled, started).min(split.total());
        split
    }

    /// `max(scheduled, woke)`, and the index of the first mark after it.
    fn from(&self, scheduled: Instant) -> (Instant, usize) {
        let from = scheduled.max(self.woke.wall);
        (from, self.since.partition_point(|(m, _)| m.wall <= from))
    }
}

/// One executor thread's lateness window (owned by its scheduler).
#[derive(Debug, Default)]
pub(crate) struct Window {
    start: Option<Instant>,
    /// The thread's own time on arrivals ([`OwnTime::arrivals`]) when the window started.
    arrivals_from: Duration,
    ticks: u64,
    late: u64,
    own_late: u64,
    steady_late: u64,
    /// Windows published so far.
    pub(crate) published: u64,
}

impl Window {
    /// Counts one tick started at `now` with `lateness`; `own` is the thread's own part of it
    /// split by work ([`OwnTime::own_split`], asked only when the tick is late past the
    /// objective: it walks the marks), `arrivals` the thread's own time on arrivals so far
    /// ([`OwnTime::arrivals`]). Publishes the window to `shared` when it is complete.
    /// Returns the cause, with the split, when the tick was late past the objective.
    pub(crate) fn record(
        &mut self,
        objective: &Objective,
        shared: &ThreadLoad,
        now: Instant,
        lateness: Duration,
        arrivals: Duration,
        own: impl FnOnce() -> OwnSplit,
    ) -> Option<(LateCause, OwnSplit)> {
        let start = *self.start.get_or_insert_with(|| {
            self.arrivals_from = arrivals;
            now
        });
        let elapsed = now.saturating_duration_since(start);
        if elapsed >= objective.window {
            let spent = arrivals.saturating_sub(self.arrivals_from);
            let per_second =
                spent.as_nanos().saturating_mul(1_000_000_000) / elapsed.as_nanos().max(1);
            shared.window_ticks.store(self.ticks, Ordering::Relaxed);
            shared.window_late.store(self.late, Ordering::Relaxed);
            shared
                .window_own_late
                .store(self.own_late, Ordering::Relaxed);
            shared
                .window_steady_late
                .store(self.steady_late, Ordering::Relaxed);
            shared.window_arrivals_ns.store(
                i64::try_from(per_second).unwrap_or(i64::MAX),
                Ordering::Relaxed,
            );
            self.published += 1;
            self.start = Some(now);
            self.arrivals_from = arrivals;
            self.ticks = 0;
            self.late = 0;
            self.own_late = 0;
            self.steady_late = 0;
        }
        self.ticks += 1;
        if lateness <= objective.max_lateness {
            return None;
        }
        self.late += 1;
        let split = own();
        let cause = if split.steady() > objective.max_lateness {
            self.own_late += 1;
            self.steady_late += 1;
            LateCause::Own
        } else if split.total() > objective.max_lateness {
            self.own_late += 1;
            LateCause::Arrivals
        } else {
            LateCause::Others
        };
        Some((cause, split))
    }
}

/// Why a tick was late past the objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LateCause {
    /// Its thread's own lateness alone breaks the objective, without what arrivals took.
    Own,
    /// Its thread's own lateness breaks it only with what players arriving and leaving took
    /// ([`Work::is_arrival`]).
    Arrivals,
    /// Only with the time its thread waited to be woken or was preempted.
    Others,
}

impl LateCause {
    pub(crate) fn label(self) -> &'static str {
        match self {
            LateCause::Own => "own",
            LateCause::Arrivals => "arrivals",
            LateCause::Others => "others",
        }
    }
}

/// One match's measured cost (owned by its scheduler, one per slot).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SlotCost {
    /// Decaying average of its tick durations, nanoseconds; 0 before its first tick.
    tick_ns: u64,
    /// Its last tick's duration, nanoseconds: with this one, whether the match's code got
    /// dearer for good ([`JUMP_FACTOR`]).
    last_ns: u64,
    /// What this match adds to its thread's cost now, ns per second.
    pub(crate) applied: i64,
    /// Slots skipped after each tick to keep its thread within the objective (0: full rate).
    pub(crate) stretch: u32,
}

impl SlotCost {
    /// A match placed with `projected` cost (already added to its thread).
    pub(crate) fn placed(projected: i64) -> SlotCost {
        SlotCost {
            tick_ns: 0,
            last_ns: 0,
            applied: projected,
            stretch: 0,
        }
    }

    /// Whether its ticks run after cheaper ones due at the same instant: a tick that alone
    /// would make a neighbour due with it late, or a stretched match.
    pub(crate) fn heavy(&self, objective: &Objective) -> bool {
        self.stretch > 0 || self.tick_ns > (objective.max_lateness.as_nanos() as u64) / 2
    }

    /// Folds one tick that took `took` into the average and decides the stretch. `thread` is
    /// the thread's cost now (this match's old share included), `matches` how many it runs.
    /// Returns the change of this match's cost (to add to the thread's and handler's).
    pub(crate) fn tick(
        &mut self,
        objective: &Objective,
        took: Duration,
        tick_rate: u32,
        thread: i64,
        matches: usize,
    ) -> i64 {
        let took = took.as_nanos().min(u128::from(u64::MAX / 2)) as u64;
        // The mean, not the upper envelope: each tick moves the average by an eighth of the
        // difference, up or down. Taking every dearer tick at once ("fast up, slow down", the
        // rule until issue 21's twentieth session) kept the average near the dearest ticks of a
        // match whose ticks vary (a script VM's, by its garbage collector and its messages): the
        // engine counted JavaScript seed matches at 1.7-1.8 times the executor thread's CPU,
        // which took the thread past the lateness floor and refused finders at a rush. A match
        // whose code suddenly costs 10x is still taken at once, from its second dear tick in a
        // row (stretched before its neighbours fall behind: docs/MATCHES.md, "Overload").
        let sustained = took.min(self.last_ns);
        self.tick_ns = if self.tick_ns == 0 {
            took
        } else if sustained > self.tick_ns.saturating_mul(JUMP_FACTOR) {
            sustained
        } else if took >= self.tick_ns {
            self.tick_ns + ((took - self.tick_ns) >> EWMA_SHIFT)
        } else {
            self.tick_ns - ((self.tick_ns - took) >> EWMA_SHIFT)
        };
        self.last_ns = took;
        let rate = i64::from(tick_rate.max(1));
        let demand = (self.tick_ns as i64).saturating_mul(rate);
        self.stretch = 0;
        if objective.stretch_overloaded {
            let budget = objective.thread_budget_ns();
            let others = (thread - self.applied).max(0);
            let fair = budget / matches.max(1) as i64;
            if others.saturating_add(demand) > budget && demand > fair {
                // At least one tick per second.
                let allowed = (budget - others).max(fair).max(self.tick_ns as i64).max(1);
                let runs = ((demand + allowed - 1) / allowed).clamp(1, rate);
                self.stretch = (runs - 1) as u32;
            }
        }
        let actual = demand / (i64::from(self.stretch) + 1);
        let delta = actual - self.applied;
        self.applied = actual;
        delta
    }
}

/// A per-handler tally of its running matches' costs: a new match of a handler is projected at
/// their average.
#[derive(Debug, Default)]
pub(crate) struct HandlerCost {
    cost_ns: AtomicI64,
    matches: AtomicI64,
}

impl HandlerCost {
    pub(crate) fn add(&self, delta: i64) {
        self.cost_ns.fetch_add(delta, Ordering::Relaxed);
    }

    pub(crate) fn started(&self) {
        self.matches.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn ended(&self, cost: i64) {
        self.matches.fetch_sub(1, Ordering::Relaxed);
        self.cost_ns.fetch_sub(cost, Ordering::Relaxed);
    }

    /// What a new match of this handler is expected to cost.
    pub(crate) fn projection(&self, objective: &Objective) -> i64 {
        let matches = self.matches.load(Ordering::Relaxed);
        let cost = self.cost_ns.load(Ordering::Relaxed);
        if matches > 0 && cost > 0 {
            cost / matches
        } else {
            i64::try_from(objective.new_match_cpu_us.saturating_mul(1_000)).unwrap_or(i64::MAX)
        }
    }
}

/// Why admission refused a new match: the error for the caller, and the rule that refused it
/// (`metafi_match_admission_refused_total{reason}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Every thread breaks the lateness objective by its own matches ([`ThreadLoad::late`]).
    Lateness(MatchError),
    /// No thread has room for the match's projected cost within the CPU objective.
    Cpu(MatchError),
}

impl Refusal {
    pub(crate) fn label(&self) -> &'static str {
        match self {
            Refusal::Lateness(_) => "lateness",
            Refusal::Cpu(_) => "cpu",
        }
    }

    pub(crate) fn into_error(self) -> MatchError {
        match self {
            Refusal::Lateness(error) | Refusal::Cpu(error) => error,
        }
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Lateness(error) | Refusal::Cpu(error) => error.fmt(f),
        }
    }
}

/// Where a new match goes, or why the node refuses it. `threads` are the executor threads'
/// loads with their match counts.
pub(crate) fn place(
    objective: &Objective,
    threads: &[(&ThreadLoad, usize)],
    projected: i64,
) -> Result<usize, Refusal> {
    let budget = objective.thread_budget_ns();
    let count_choice = || {
        threads
            .iter()
            .enumerate()
            .min_by_key(|(_, (_, n))| *n)
            .map_or(0, |(i, _)| i)
    };
    // Threads that break the lateness objective because of their own matches take no more.
    let usable = |load: &ThreadLoad, n: usize| {
        !(n > 0 && load.late() && load.cost() >= budget / LATE_LOAD_FLOOR_DIVISOR)
    };
    let best = threads
        .iter()
        .enumerate()
        .filter(|(_, (load, n))| usable(load, *n))
        .max_by_key(|(i, (load, _))| (budget - load.cost(), std::cmp::Reverse(*i)))
        .map(|(i, (load, _))| (i, budget - load.cost()));
    if !objective.admission {
        return Ok(match (objective.placement, best) {
            (Placement::Cost, Some((i, _))) => i,
            _ => count_choice(),
        });
    }
    let Some((thread, headroom)) = best else {
        return Err(Refusal::Lateness(MatchError::Full {
            reason: format!(
                "tick lateness p99 is over the objective of {} ms on every executor thread",
                objective.max_lateness.as_secs_f64() * 1e3
            ),
        }));
    };
    if projected > headroom {
        let used: i64 = threads.iter().map(|(l, _)| l.cost()).sum();
        let cores = threads.len().max(1) as f64;
        return Err(Refusal::Cpu(MatchError::Full {
            reason: format!(
                "a new match would take executor CPU past the objective of {}% (in use: {:.1}% of {} cores, the least loaded thread has {:.1}% free, a match of this handler costs {:.1}%)",
                objective.max_cpu_percent,
                used as f64 / 1e7 / cores,
                threads.len(),
                headroom.max(0) as f64 / 1e7,
                projected as f64 / 1e7,
            ),
        }));
    }
    Ok(match objective.placement {
        Placement::Cost => thread,
        Placement::Count => {
            let chosen = count_choice();
            // By count, but never onto a thread the match does not fit.
            let (load, n) = threads[chosen];
            if budget - load.cost() >= projected && usable(load, n) {
                chosen
            } else {
                thread
            }
        }
    })
}

/// The node's load as health, metrics and operators see it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeLoad {
    /// Executor CPU in use, as a share of the executor's cores (0–1 and more).
    pub cpu: f64,
    /// The objective's CPU share.
    pub cpu_objective: f64,
    /// Executor threads whose last window broke the lateness objective by their own lateness
    /// (they were busy with their own work when ticks fell due): these count as full.
    pub late_threads: usize,
    /// Executor threads whose last window broke the lateness objective only with the time other
    /// work held their core (woken late, or preempted): players feel it, but the node is not
    /// full.
    pub late_threads_by_others: usize,
    pub threads: usize,
    /// Authoritative matches running.
    pub matches: usize,
    /// Whether a new match of the default projected cost would be refused now, and why.
    pub full: Option<String>,
    /// The node is draining: it takes no new matches or sockets.
    pub draining: bool,
    /// Matches handed off between executor threads since the node started (hand-off).
    pub moves: u64,
    /// Hand-offs refused because the matches that would have moved are script VMs (not
    /// movable), and because no other thread had room.
    pub moves_refused_not_movable: u64,
    pub moves_refused_no_room: u64,
}

#[cfg(test)]
mod tests;
