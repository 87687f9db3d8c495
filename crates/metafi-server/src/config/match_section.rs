//! The `[match]` keys, checked and turned into the match engine's settings.

use std::time::Duration;

use metafi_match::{MAX_TICK_RATE, MatchConfig, Objective, Placement, default_threads};
use metafi_runtime::MatchVms;

use super::check::{Checker, HOUR_MS};
use super::raw::RawMatch;

/// The most messages any one match queue may hold.
const QUEUE_MAX: i64 = 1 << 20;

/// The match engine's settings, and where script match handlers' VMs live.
pub(super) fn validate(m: &RawMatch, check: &mut Checker) -> (MatchConfig, MatchVms) {
    let threads = check.count("match.executor_threads", m.executor_threads, 0, 1024);
    let max_empty = check.secs("match.max_empty_sec", m.max_empty_sec, 0, 30 * 86_400);
    let matches = MatchConfig {
        input_queue_size: check.count("match.input_queue_size", m.input_queue_size, 1, QUEUE_MAX),
        call_queue_size: check.count("match.call_queue_size", m.call_queue_size, 1, QUEUE_MAX),
        signal_queue_size: check.count(
            "match.signal_queue_size",
            m.signal_queue_size,
            1,
            QUEUE_MAX,
        ),
        join_attempt_queue_size: check.count(
            "match.join_attempt_queue_size",
            m.join_attempt_queue_size,
            1,
            QUEUE_MAX,
        ),
        deferred_queue_size: check.count(
            "match.deferred_queue_size",
            m.deferred_queue_size,
            1,
            QUEUE_MAX,
        ),
        join_marker_deadline: check.millis(
            "match.join_marker_deadline_ms",
            m.join_marker_deadline_ms,
            1,
            HOUR_MS,
        ),
        seat_reservation: check.millis(
            "match.seat_reservation_ms",
            m.seat_reservation_ms,
            1,
            HOUR_MS,
        ),
        max_empty: (!max_empty.is_zero()).then_some(max_empty),
        executor_threads: if threads == 0 {
            default_threads()
        } else {
            threads
        },
        max_tick_rate: check.count_u32(
            "match.max_tick_rate",
            m.max_tick_rate,
            1,
            i64::from(MAX_TICK_RATE),
        ),
        handler_budget: check.millis("match.handler_budget_ms", m.handler_budget_ms, 1, 60_000),
        reply_timeout: check.millis("match.reply_timeout_ms", m.reply_timeout_ms, 1, HOUR_MS),
        spread_tick_phases: m.spread_tick_phases,
        tick_batch_window: check.millis(
            "match.tick_batch_window_ms",
            m.tick_batch_window_ms,
            0,
            1_000,
        ),
        objective: objective(m, check),
    };
    let vms = if m.vm_per_match {
        MatchVms::PerMatch
    } else {
        MatchVms::PerThread
    };
    (matches, vms)
}

/// The latency objective and the rules that keep it (`docs/MATCHES.md`, "Objective, placement,
/// admission").
fn objective(m: &RawMatch, check: &mut Checker) -> Objective {
    let lateness = check.range(
        "match.objective_lateness_us",
        m.objective_lateness_us,
        1,
        10_000_000,
    );
    let placement = match m.placement.as_str() {
        "cost" => Placement::Cost,
        "count" => Placement::Count,
        other => {
            check.problem(format!(
                "match.placement = \"{other}\": must be \"cost\" or \"count\""
            ));
            Placement::Cost
        }
    };
    Objective {
        max_lateness: Duration::from_micros(u64::try_from(lateness).unwrap_or(1)),
        max_cpu_percent: check.count_u32(
            "match.objective_cpu_percent",
            m.objective_cpu_percent,
            1,
            100,
        ),
        window: check.millis(
            "match.objective_window_ms",
            m.objective_window_ms,
            100,
            HOUR_MS,
        ),
        new_match_cpu_us: u64::try_from(check.range(
            "match.new_match_cpu_us",
            m.new_match_cpu_us,
            0,
            1_000_000,
        ))
        .unwrap_or(0),
        placement,
        admission: m.admission,
        stretch_overloaded: m.stretch_overloaded,
        hand_off: m.hand_off,
        hand_off_after: check.millis("match.hand_off_after_ms", m.hand_off_after_ms, 0, HOUR_MS),
    }
}
