//! The `[matchmaker]` keys, checked and turned into the matchmaker's settings.

use metafi_match::MatchmakerConfig;

use super::check::Checker;
use super::raw::RawMatchmaker;

pub(super) fn validate(mm: &RawMatchmaker, check: &mut Checker) -> MatchmakerConfig {
    MatchmakerConfig {
        max_tickets: check.count("matchmaker.max_tickets", mm.max_tickets, 1, 1_000),
        interval: check.secs("matchmaker.interval_sec", mm.interval_sec, 1, 3_600),
        max_intervals: check.count_u32("matchmaker.max_intervals", mm.max_intervals, 1, 1_000_000),
        rev_precision: mm.rev_precision,
        token_ttl: check.secs("matchmaker.token_ttl_sec", mm.token_ttl_sec, 1, 86_400),
    }
}
