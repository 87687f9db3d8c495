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

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::config::{Objective, Placement};
use crate::error::MatchError;

/// How fast a match's average tick time falls towards cheaper ticks, as a shift (1/8).
const EWMA_SHIFT: u32 = 3;

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
    /// objective, and how many of those by the thread's own lateness alone (admission, hand-off
    /// and health read these: the rest were woken or preempted late, see [`OwnTime`]).
    window_ticks: AtomicU64,
    window_late: AtomicU64,
    window_own_late: AtomicU64,
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
    /// thread's own lateness: it was busy with its own work when its ticks fell due.
    pub(crate) fn late(&self) -> bool {
        breaks(
            self.window_ticks.load(Ordering::Relaxed),
            self.window_own_late.load(Ordering::Relaxed),
        )
    }

    /// Whether the last complete window broke the lateness objective only with the time others
    /// took — the thread woken late, or preempted — (it is not [`late`](Self::late)): what
    /// players feel, which the node's matches did not cause.
    pub(crate) fn late_by_others(&self) -> bool {
        let ticks = self.window_ticks.load(Ordering::Relaxed);
        breaks(ticks, self.window_late.load(Ordering::Relaxed)) && !self.late()
    }

    pub(crate) fn cost(&self) -> i64 {
        self.cost_ns.load(Ordering::Relaxed).max(0)
    }
}

/// Whether `late` of `ticks` breaks the objective: more than 1 % of them.
fn breaks(ticks: u64, late: u64) -> bool {
    ticks > 0 && late * 100 > ticks * LATE_PER_HUNDRED
}

/// Marks an executor thread keeps between two waits, at most (a thread that never waits keeps
/// the latest; an older due instant then falls back to the wake mark, which overstates the
/// thread's own time: the safe side).
const MARKS: usize = 64;

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
    /// Marks taken since, oldest first, at most [`MARKS`].
    since: VecDeque<Mark>,
}

impl OwnTime {
    pub(crate) fn new(now: Mark) -> OwnTime {
        OwnTime {
            woke: now,
            since: VecDeque::with_capacity(MARKS),
        }
    }

    /// The thread has just come back from waiting: what passed before `now` was not its own.
    pub(crate) fn woke(&mut self, now: Mark) {
        self.woke = now;
        self.since.clear();
    }

    /// The thread is about to run a step or a tick.
    pub(crate) fn mark(&mut self, now: Mark) {
        if self.since.len() == MARKS {
            self.since.pop_front();
        }
        self.since.push_back(now);
    }

    /// The thread's own part of the lateness of a tick due at `scheduled` that starts at
    /// `started`: its own time ([`Mark::own_since`]) since the last mark at or before
    /// `max(scheduled, woke)` — a mark a little before the due instant overstates it by at
    /// most one tick or callback: the safe side — and at most the wall time since
    /// `max(scheduled, woke)`. A thread never waits past a due tick, so a tick due before
    /// `woke` was due while it waited.
    pub(crate) fn own_lateness(&self, scheduled: Instant, started: Mark) -> Duration {
        let from = scheduled.max(self.woke.wall);
        let at = self.since.partition_point(|m| m.wall <= from);
        let base = match at {
            0 => self.woke,
            n => self.since[n - 1],
        };
        started
            .wall
            .saturating_duration_since(from)
            .min(started.own_since(&base))
    }
}

/// One executor thread's lateness window (owned by its scheduler).
#[derive(Debug, Default)]
pub(crate) struct Window {
    start: Option<Instant>,
    ticks: u64,
    late: u64,
    own_late: u64,
    /// Windows published so far.
    pub(crate) published: u64,
}

impl Window {
    /// Counts one tick started at `now` with `lateness`, of which `own` was the thread's own
    /// ([`OwnTime::own_lateness`]); publishes the window to `shared` when it is complete. Returns the
    /// cause when the tick was late past the objective.
    pub(crate) fn record(
        &mut self,
        objective: &Objective,
        shared: &ThreadLoad,
        now: Instant,
        lateness: Duration,
        own: Duration,
    ) -> Option<LateCause> {
        let start = *self.start.get_or_insert(now);
        if now.saturating_duration_since(start) >= objective.window {
            shared.window_ticks.store(self.ticks, Ordering::Relaxed);
            shared.window_late.store(self.late, Ordering::Relaxed);
            shared
                .window_own_late
                .store(self.own_late, Ordering::Relaxed);
            self.published += 1;
            self.start = Some(now);
            self.ticks = 0;
            self.late = 0;
            self.own_late = 0;
        }
        self.ticks += 1;
        if lateness <= objective.max_lateness {
            return None;
        }
        self.late += 1;
        if own > objective.max_lateness {
            self.own_late += 1;
            Some(LateCause::Own)
        } else {
            Some(LateCause::Others)
        }
    }
}

/// Why a tick was late past the objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LateCause {
    /// Its thread's own lateness alone breaks the objective.
    Own,
    /// Only with the time its thread waited to be woken or was preempted.
    Others,
}

impl LateCause {
    pub(crate) fn label(self) -> &'static str {
        match self {
            LateCause::Own => "own",
            LateCause::Others => "others",
        }
    }
}

/// One match's measured cost (owned by its scheduler, one per slot).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SlotCost {
    /// Decaying average of its tick durations, nanoseconds; 0 before its first tick.
    tick_ns: u64,
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
        // Fast up, slow down: a tick dearer than the average is taken at once (a match whose
        // code suddenly costs 10x is stretched from its next tick on, before its neighbours
        // fall behind); cheaper ticks pull the average down by an eighth of the difference.
        self.tick_ns = if took >= self.tick_ns {
            took
        } else {
            self.tick_ns - ((self.tick_ns - took) >> EWMA_SHIFT)
        };
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

/// Where a new match goes, or why the node refuses it. `threads` are the executor threads'
/// loads with their match counts.
pub(crate) fn place(
    objective: &Objective,
    threads: &[(&ThreadLoad, usize)],
    projected: i64,
) -> Result<usize, MatchError> {
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
        return Err(MatchError::Full {
            reason: format!(
                "tick lateness p99 is over the objective of {} ms on every executor thread",
                objective.max_lateness.as_secs_f64() * 1e3
            ),
        });
    };
    if projected > headroom {
        let used: i64 = threads.iter().map(|(l, _)| l.cost()).sum();
        let cores = threads.len().max(1) as f64;
        return Err(MatchError::Full {
            reason: format!(
                "a new match would take executor CPU past the objective of {}% (in use: {:.1}% of {} cores, the least loaded thread has {:.1}% free, a match of this handler costs {:.1}%)",
                objective.max_cpu_percent,
                used as f64 / 1e7 / cores,
                threads.len(),
                headroom.max(0) as f64 / 1e7,
                projected as f64 / 1e7,
            ),
        });
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
mod tests {
    use super::*;

    fn objective() -> Objective {
        Objective::default()
    }

    #[test]
    fn a_match_costs_its_average_tick_times_its_rate() {
        let o = objective();
        let mut c = SlotCost::placed(5_000_000);
        let delta = c.tick(&o, Duration::from_micros(100), 64, 5_000_000, 1);
        assert_eq!(c.applied, 100_000 * 64);
        assert_eq!(delta, 100_000 * 64 - 5_000_000);
        // A dearer tick counts at once; cheaper ones pull the average down by an eighth.
        c.tick(&o, Duration::from_micros(900), 64, c.applied, 1);
        assert_eq!(c.applied, 900_000 * 64);
        c.tick(&o, Duration::from_micros(100), 64, c.applied, 1);
        assert_eq!(c.applied, 800_000 * 64);
        assert_eq!(c.stretch, 0);
    }

    #[test]
    fn an_expensive_match_on_a_full_thread_is_stretched_to_fit() {
        let o = objective();
        // Others use 50 % of the core; this match needs 5 ms × 100/s = 50 %: 25 % fits.
        let mut c = SlotCost::placed(0);
        c.tick(&o, Duration::from_millis(5), 100, 500_000_000, 10);
        assert_eq!(c.stretch, 1, "every other slot");
        assert_eq!(c.applied, 250_000_000);
        // The others leave: it runs at full rate again.
        c.tick(&o, Duration::from_millis(5), 100, c.applied, 1);
        assert_eq!(c.stretch, 0);
        // Stretching off: never stretched.
        let o = Objective {
            stretch_overloaded: false,
            ..objective()
        };
        c.tick(&o, Duration::from_millis(5), 100, 900_000_000, 10);
        assert_eq!(c.stretch, 0);
    }

    #[test]
    fn windows_judge_lateness_at_the_99th_percentile() {
        let o = objective();
        let shared = ThreadLoad::default();
        let mut w = Window::default();
        let t0 = Instant::now();
        for i in 0..200u64 {
            let late = if i < 2 {
                Duration::from_millis(3)
            } else {
                Duration::ZERO
            };
            w.record(&o, &shared, t0 + Duration::from_millis(i), late, late);
        }
        let zero = Duration::ZERO;
        w.record(&o, &shared, t0 + Duration::from_secs(3), zero, zero);
        assert!(!shared.late(), "2 of 200 late is the 99th percentile");
        for i in 0..200u64 {
            let late = if i < 3 {
                Duration::from_millis(3)
            } else {
                Duration::ZERO
            };
            w.record(
                &o,
                &shared,
                t0 + Duration::from_secs(3) + Duration::from_millis(i),
                late,
                late,
            );
        }
        w.record(&o, &shared, t0 + Duration::from_secs(6), zero, zero);
        assert!(shared.late(), "3 of 201 late breaks it");
    }

    /// The clocks at `wall` after the thread waited `run_delay` for its core in all.
    fn mark(wall: Instant, run_delay: Duration) -> Mark {
        Mark { wall, run_delay }
    }

    #[test]
    fn lateness_while_the_thread_waited_is_not_its_own() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // Asleep when the tick fell due at t0, woken 5 ms late (of which 1 ms it was runnable
        // and waited for its core), started at once: none is its own.
        let mut own = OwnTime::new(mark(t0 - ms(10), ms(7)));
        own.woke(mark(t0 + ms(5), ms(8)));
        assert_eq!(own.own_lateness(t0, mark(t0 + ms(5), ms(8))), ms(0));
        // Woken 5 ms late, then 3 ms of earlier ticks and callbacks: those 3 ms are its own.
        assert_eq!(own.own_lateness(t0, mark(t0 + ms(8), ms(8))), ms(3));
        // Busy since before the tick fell due (woke at t0 - 1 ms): all 4 ms are its own.
        let mut own = OwnTime::new(mark(t0 - ms(1), ms(8)));
        own.mark(mark(t0 - ms(1), ms(8)));
        assert_eq!(own.own_lateness(t0, mark(t0 + ms(4), ms(8))), ms(4));
        // Woken on time.
        own.woke(mark(t0, ms(8)));
        assert_eq!(own.own_lateness(t0, mark(t0 + ms(1), ms(8))), ms(1));
    }

    /// The batch the wall clock blamed on the thread (issue 21): woken on time at t0, it runs a
    /// 0.2 ms tick, then the IO threads hold its core for 5 ms; the ticks that fell due
    /// meanwhile start ~5 ms late, but the thread's own time since they fell due is its 0.2 ms
    /// tick (and the ticks before each one).
    #[test]
    fn time_the_thread_waited_for_its_core_in_a_batch_is_not_its_own() {
        let t0 = Instant::now();
        let us = Duration::from_micros;
        let mut own = OwnTime::new(mark(t0 - us(50_000), us(1_000)));
        own.woke(mark(t0, us(1_000)));
        own.mark(mark(t0, us(1_000))); // the step
        own.mark(mark(t0, us(1_000))); // tick 1, due at t0
        // Tick 2 was due at t0 + 1 ms and starts at t0 + 5.2 ms: 4.2 ms late by the wall, of
        // which 0.2 ms (tick 1) the thread's own since its last mark before the due instant.
        let tick2 = mark(t0 + us(5_200), us(6_000));
        assert_eq!(own.own_lateness(t0 + us(1_000), tick2), us(200));
        // The wall clock alone (the old rule) called all 4.2 ms its own: over the objective of
        // 2 ms, so this thread counted as full.
        assert!(Objective::default().max_lateness < us(4_200));
        own.mark(tick2);
        // Tick 3, due at t0 + 2 ms, starts after tick 2 (0.2 ms more): 0.4 ms its own.
        let tick3 = mark(t0 + us(5_400), us(6_000));
        assert_eq!(own.own_lateness(t0 + us(2_000), tick3), us(400));
        // A tick due after tick 2 started is charged from tick 2's mark, at most the wall time.
        assert_eq!(own.own_lateness(t0 + us(5_300), tick3), us(100));
    }

    /// A thread that really spends its time on its matches — running them, or blocked in a
    /// callback that waits (a sleeping native tick, an `nk` call waiting for storage): woken
    /// on time, 3 ms of ticks before a tick due at the wake-up. All of it is its own.
    #[test]
    fn time_the_thread_spends_in_its_matches_is_its_own() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut own = OwnTime::new(mark(t0, ms(0)));
        own.woke(mark(t0, ms(10)));
        own.mark(mark(t0, ms(10)));
        for i in 0..3 {
            own.mark(mark(t0 + ms(i), ms(10)));
        }
        assert_eq!(own.own_lateness(t0, mark(t0 + ms(3), ms(10))), ms(3));
        // More marks than it keeps (a thread that never waits): an older due instant is
        // charged from the wake-up, never from a later mark (that would understate it).
        for i in 0..(MARKS as u64 * 2) {
            own.mark(mark(t0 + ms(3 + i), ms(10)));
        }
        let end = 3 + MARKS as u64 * 2;
        assert_eq!(
            own.own_lateness(t0 + ms(1), mark(t0 + ms(end), ms(12))),
            ms(end - 2),
            "from the wake-up: the wall time since, less the 2 ms it waited for its core"
        );
    }

    #[test]
    fn a_thread_woken_late_is_late_by_others_and_not_full() {
        let o = objective();
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // Every tick 5 ms late, of which 1 ms its own: the window breaks the objective, but not
        // by the thread's own lateness.
        let woken_late = ThreadLoad::default();
        let mut w = Window::default();
        let mut causes = Vec::new();
        for i in 0..100u64 {
            causes.extend(w.record(&o, &woken_late, t0 + ms(10 * i), ms(5), ms(1)));
        }
        w.record(&o, &woken_late, t0 + ms(3_000), ms(0), ms(0));
        assert!(causes.iter().all(|c| *c == LateCause::Others) && causes.len() == 100);
        assert!(!woken_late.late());
        assert!(woken_late.late_by_others());
        // It still takes matches, even with its matches' cost over the floor.
        woken_late.cost_ns.store(500_000_000, Ordering::Relaxed);
        assert_eq!(place(&o, &[(&woken_late, 10)], 1_000_000), Ok(0));

        // Still busy with its own work for 3 ms when ticks fell due: full.
        let busy = ThreadLoad::default();
        let mut w = Window::default();
        for i in 0..100u64 {
            let cause = w.record(&o, &busy, t0 + ms(10 * i), ms(3), ms(3));
            assert_eq!(cause, Some(LateCause::Own));
        }
        w.record(&o, &busy, t0 + ms(3_000), ms(0), ms(0));
        assert!(busy.late());
        assert!(!busy.late_by_others());
        busy.cost_ns.store(500_000_000, Ordering::Relaxed);
        let err = place(&o, &[(&busy, 10)], 1_000_000).unwrap_err();
        assert!(err.to_string().contains("tick lateness p99"), "{err}");
    }

    #[test]
    fn placement_takes_the_most_headroom_and_refuses_past_the_objective() {
        let o = objective();
        let a = ThreadLoad::default();
        let b = ThreadLoad::default();
        a.cost_ns.store(100_000_000, Ordering::Relaxed);
        b.cost_ns.store(600_000_000, Ordering::Relaxed);
        // By cost: the thread with fewer matches but more load is not chosen.
        assert_eq!(place(&o, &[(&a, 30), (&b, 1)], 10_000_000), Ok(0));
        let by_count = Objective {
            placement: Placement::Count,
            ..objective()
        };
        assert_eq!(place(&by_count, &[(&a, 30), (&b, 1)], 10_000_000), Ok(1));
        // 650 + 100 fits 750; 660 + 100 does not, anywhere.
        a.cost_ns.store(700_000_000, Ordering::Relaxed);
        b.cost_ns.store(650_000_000, Ordering::Relaxed);
        assert_eq!(place(&o, &[(&a, 1), (&b, 1)], 100_000_000), Ok(1));
        b.cost_ns.store(660_000_000, Ordering::Relaxed);
        let err = place(&o, &[(&a, 1), (&b, 1)], 100_000_000).unwrap_err();
        assert!(err.to_string().starts_with("Node is full"), "{err}");
        // Without admission the match is placed anyway.
        let open = Objective {
            admission: false,
            ..objective()
        };
        assert_eq!(place(&open, &[(&a, 1), (&b, 1)], 100_000_000), Ok(1));
    }
}
