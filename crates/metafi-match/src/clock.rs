//! Monotonic time behind a trait: the executor reads the system clock; deterministic tests use
//! [`FakeClock`], which moves only when told (a fake handler can advance it to "take" time).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A source of monotonic "now".
pub trait MonotonicClock: Send + Sync + fmt::Debug {
    fn now(&self) -> Instant;
}

/// The system's monotonic clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemMonotonic;

impl MonotonicClock for SystemMonotonic {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that stands still until advanced.
#[derive(Debug)]
pub struct FakeClock {
    base: Instant,
    offset_ns: AtomicU64,
}

impl Default for FakeClock {
    fn default() -> Self {
        FakeClock::new()
    }
}

impl FakeClock {
    pub fn new() -> FakeClock {
        FakeClock {
            base: Instant::now(),
            offset_ns: AtomicU64::new(0),
        }
    }

    pub fn advance(&self, by: Duration) {
        self.offset_ns.fetch_add(
            by.as_nanos().min(u128::from(u64::MAX)) as u64,
            Ordering::SeqCst,
        );
    }

    /// Moves the clock to `at` if that is later than now.
    pub fn advance_to(&self, at: Instant) {
        let target = at
            .saturating_duration_since(self.base)
            .as_nanos()
            .min(u128::from(u64::MAX)) as u64;
        self.offset_ns.fetch_max(target, Ordering::SeqCst);
    }

    /// Sets the clock to `at`, earlier or later (not before its start). Tests that simulate
    /// executor threads running side by side step each one from the same instant.
    pub fn set(&self, at: Instant) {
        let target = at
            .saturating_duration_since(self.base)
            .as_nanos()
            .min(u128::from(u64::MAX)) as u64;
        self.offset_ns.store(target, Ordering::SeqCst);
    }
}

impl MonotonicClock for FakeClock {
    fn now(&self) -> Instant {
        self.base + Duration::from_nanos(self.offset_ns.load(Ordering::SeqCst))
    }
}
