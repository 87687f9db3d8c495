//! The `[party]` keys and the event queue's `runtime.event_queue_*` keys, checked.

use metafi_core::EventConfig;
use metafi_realtime::PartyConfig;
use metafi_realtime::party::NAKAMA_MAX_SIZE;

use super::check::Checker;
use super::raw::{RawParty, RawRuntime};

pub(super) fn validate(party: &RawParty, check: &mut Checker) -> PartyConfig {
    PartyConfig {
        max_parties: check.count("party.max_parties", party.max_parties, 1, 10_000_000),
        max_size: check.count("party.max_size", party.max_size, 1, NAKAMA_MAX_SIZE as i64),
    }
}

pub(super) fn validate_events(runtime: &RawRuntime, check: &mut Checker) -> EventConfig {
    EventConfig {
        queue_size: check.count(
            "runtime.event_queue_size",
            runtime.event_queue_size,
            1,
            16_777_216,
        ),
        workers: check.count(
            "runtime.event_queue_workers",
            runtime.event_queue_workers,
            1,
            1_024,
        ),
    }
}
