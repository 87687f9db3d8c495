//! The `[match]` and `[matchmaker]` keys, checked and turned into the match engine's settings.

use std::time::Duration;

use metafi_match::{MAX_TICK_RATE, MatchConfig, MatchmakerConfig, default_threads};
use metafi_runtime::MatchVms;

use super::RawConfig;

pub(super) fn match_settings(
    raw: &RawConfig,
    problems: &mut Vec<String>,
) -> (MatchConfig, MatchmakerConfig, MatchVms) {
    let mut range = |key: &str, value: i64, min: i64, max: i64| -> u64 {
        if value < min || value > max {
            problems.push(format!("{key} = {value}: must be between {min} and {max}"));
            min as u64
        } else {
            value as u64
        }
    };
    const HOUR_MS: i64 = 3_600_000;
    const QUEUE_MAX: i64 = 1 << 20;
    let m = &raw.matches;
    let input = range("match.input_queue_size", m.input_queue_size, 1, QUEUE_MAX);
    let calls = range("match.call_queue_size", m.call_queue_size, 1, QUEUE_MAX);
    let signals = range("match.signal_queue_size", m.signal_queue_size, 1, QUEUE_MAX);
    let joins = range(
        "match.join_attempt_queue_size",
        m.join_attempt_queue_size,
        1,
        QUEUE_MAX,
    );
    let deferred = range(
        "match.deferred_queue_size",
        m.deferred_queue_size,
        1,
        QUEUE_MAX,
    );
    let marker = range(
        "match.join_marker_deadline_ms",
        m.join_marker_deadline_ms,
        1,
        HOUR_MS,
    );
    let empty = range("match.max_empty_sec", m.max_empty_sec, 0, 30 * 86_400);
    let threads = range("match.executor_threads", m.executor_threads, 0, 1024);
    let rate = range(
        "match.max_tick_rate",
        m.max_tick_rate,
        1,
        i64::from(MAX_TICK_RATE),
    );
    let budget = range("match.handler_budget_ms", m.handler_budget_ms, 1, 60_000);
    let reply = range("match.reply_timeout_ms", m.reply_timeout_ms, 1, HOUR_MS);

    let mm = &raw.matchmaker;
    let tickets = range("matchmaker.max_tickets", mm.max_tickets, 1, 1_000);
    let interval = range("matchmaker.interval_sec", mm.interval_sec, 1, 3_600);
    let intervals = range("matchmaker.max_intervals", mm.max_intervals, 1, 1_000_000);
    let ttl = range("matchmaker.token_ttl_sec", mm.token_ttl_sec, 1, 86_400);

    let matches = MatchConfig {
        input_queue_size: input as usize,
        call_queue_size: calls as usize,
        signal_queue_size: signals as usize,
        join_attempt_queue_size: joins as usize,
        deferred_queue_size: deferred as usize,
        join_marker_deadline: Duration::from_millis(marker),
        max_empty: (empty > 0).then(|| Duration::from_secs(empty)),
        executor_threads: if threads == 0 {
            default_threads()
        } else {
            threads as usize
        },
        max_tick_rate: rate as u32,
        handler_budget: Duration::from_millis(budget),
        reply_timeout: Duration::from_millis(reply),
    };
    let matchmaker = MatchmakerConfig {
        max_tickets: tickets as usize,
        interval: Duration::from_secs(interval),
        max_intervals: intervals as u32,
        rev_precision: mm.rev_precision,
        token_ttl: Duration::from_secs(ttl),
    };
    let vms = if m.vm_per_match {
        MatchVms::PerMatch
    } else {
        MatchVms::PerThread
    };
    (matches, matchmaker, vms)
}
