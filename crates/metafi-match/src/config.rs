//! The validated `[match]` and `[matchmaker]` settings. The server parses and checks the
//! configuration file (`metafi-server/src/config`); these are the values the engine receives.

use std::time::Duration;

/// Highest tick rate a handler may ask for (Nakama stops at 60; competitive shooters run 64–128).
pub const MAX_TICK_RATE: u32 = 128;

/// `[match]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchConfig {
    /// Client messages waiting for the next tick, per match; more are dropped and counted.
    pub input_queue_size: usize,
    /// Leaves and join completions waiting for a match; a match that falls this far behind is
    /// stopped (as Nakama does).
    pub call_queue_size: usize,
    /// `nk.match_signal` calls waiting for a match; more are refused ("match busy").
    pub signal_queue_size: usize,
    /// Join attempts waiting for a match; more are refused.
    pub join_attempt_queue_size: usize,
    /// `broadcast_message_deferred` messages one callback may queue.
    pub deferred_queue_size: usize,
    /// How long an accepted join waits for its client to complete it before it lapses.
    pub join_marker_deadline: Duration,
    /// How long a seat reserved for a player on its way (`Matches::find_seat`,
    /// `Matches::reserve_seat`) is held for its join; `docs/MATCHES.md`, "Seats".
    pub seat_reservation: Duration,
    /// Stop a match empty for this long; `None` keeps empty matches.
    pub max_empty: Option<Duration>,
    /// Executor threads; each drives many matches.
    pub executor_threads: usize,
    /// Highest tick rate `match_init` may return (1 to [`MAX_TICK_RATE`]).
    pub max_tick_rate: u32,
    /// Time budget of one handler callback; a callback past it is stopped (scripts) or the
    /// match is ended (native code that returns late).
    pub handler_budget: Duration,
    /// How long a join attempt, match creation or signal waits for the match's answer.
    pub reply_timeout: Duration,
    /// A new match's first tick goes to the millisecond of its interval where its thread has
    /// the fewest ticks due (`docs/MATCHES.md`, "Tick phases"); off, it ticks one whole
    /// interval after its creation, and a burst of creations shares one phase.
    pub spread_tick_phases: bool,
    /// How much earlier than it is due a tick may run, so that ticks due close together share
    /// one executor step: one wake-up of the executor thread and one of the IO threads it
    /// hands the step's messages to, instead of one each per tick (`docs/MATCHES.md`, "Ticks
    /// batched into one step"). A tick runs at most an eighth of its interval early; zero runs
    /// every tick at its due instant.
    pub tick_batch_window: Duration,
    /// The latency objective, placement, admission and overload rules (`docs/MATCHES.md`,
    /// "Objective, placement, admission").
    pub objective: Objective,
}

impl Default for MatchConfig {
    fn default() -> Self {
        MatchConfig {
            input_queue_size: 128,
            call_queue_size: 128,
            signal_queue_size: 10,
            join_attempt_queue_size: 128,
            deferred_queue_size: 128,
            join_marker_deadline: Duration::from_millis(15_000),
            seat_reservation: Duration::from_millis(10_000),
            max_empty: None,
            executor_threads: default_threads(),
            max_tick_rate: MAX_TICK_RATE,
            handler_budget: Duration::from_millis(100),
            reply_timeout: Duration::from_secs(10),
            spread_tick_phases: true,
            tick_batch_window: Duration::from_millis(4),
            objective: Objective::default(),
        }
    }
}

/// How a new match's executor thread is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// The thread with the most CPU headroom under the objective (measured tick costs).
    Cost,
    /// The thread with the fewest matches (MetaFi before the objective; for comparisons).
    Count,
}

/// The node's latency objective and what the engine does to keep it (`[match]` keys
/// `objective_*`, `placement`, `admission`, `stretch_overloaded`, `new_match_cpu_us`,
/// `hand_off`, `hand_off_after_ms`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Objective {
    /// Tick lateness the 99th percentile must stay under (default 2 ms).
    pub max_lateness: Duration,
    /// Share of the executor's cores its matches may use, percent (default 75). Each executor
    /// thread counts as one core.
    pub max_cpu_percent: u32,
    /// The window lateness is judged over (default 2 s): a thread whose ticks in its last
    /// complete window were late past `max_lateness` more than 1 % of the time breaks the
    /// objective.
    pub window: Duration,
    /// CPU a new match is assumed to cost, microseconds per second, until its handler has
    /// a running match whose cost was measured (then their average is used).
    pub new_match_cpu_us: u64,
    /// How a new match's thread is chosen.
    pub placement: Placement,
    /// Refuse new matches that would break the objective (`match_create` answers
    /// RESOURCE_EXHAUSTED "Node is full: …").
    pub admission: bool,
    /// When a thread's matches need more CPU than the objective allows, the most expensive
    /// match's ticks stretch (slots are skipped and counted) until the thread fits again.
    pub stretch_overloaded: bool,
    /// Hand-off: an executor thread whose lateness windows break the objective for
    /// `hand_off_after` moves one movable (native, `Send`) match to the least loaded thread at
    /// a tick boundary. Script VM matches stay where they are.
    pub hand_off: bool,
    /// How long a thread's lateness must break the objective before it hands a match off
    /// (rounded up to whole `window`s, at least one; default 4 s: two windows).
    pub hand_off_after: Duration,
}

impl Default for Objective {
    fn default() -> Self {
        Objective {
            max_lateness: Duration::from_millis(2),
            max_cpu_percent: 75,
            window: Duration::from_secs(2),
            new_match_cpu_us: 200,
            placement: Placement::Cost,
            admission: true,
            stretch_overloaded: true,
            hand_off: true,
            hand_off_after: Duration::from_secs(4),
        }
    }
}

impl Objective {
    /// CPU one executor thread may use, nanoseconds per second.
    pub fn thread_budget_ns(&self) -> i64 {
        i64::from(self.max_cpu_percent) * 10_000_000
    }

    /// Consecutive late windows after which a thread hands a match off (at least one).
    pub fn hand_off_windows(&self) -> u64 {
        let window = self.window.as_nanos().max(1);
        let windows = self.hand_off_after.as_nanos().div_ceil(window);
        u64::try_from(windows).unwrap_or(u64::MAX).max(1)
    }
}

/// One executor thread per core available to this process (its CPU affinity included).
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// `[matchmaker]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatchmakerConfig {
    /// Tickets one session may hold at once.
    pub max_tickets: usize,
    /// Time between two matchmaking passes.
    pub interval: Duration,
    /// Passes a ticket waits for its preferred (maximum) count before settling for fewer.
    pub max_intervals: u32,
    /// Also require each matched ticket's query to accept the others (Nakama's
    /// `rev_precision`).
    pub rev_precision: bool,
    /// How long a matchmaker token (for `match_join`) stays valid.
    pub token_ttl: Duration,
}

impl Default for MatchmakerConfig {
    fn default() -> Self {
        MatchmakerConfig {
            max_tickets: 3,
            interval: Duration::from_secs(15),
            max_intervals: 2,
            rev_precision: false,
            token_ttl: Duration::from_secs(30),
        }
    }
}
