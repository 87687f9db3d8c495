//! Monotonic time behind a trait: the executor reads the system clock; deterministic tests use
//! [`FakeClock`], which moves only when told (a fake handler can advance it to "take" time).
//! Beside "now" the trait reads how long the calling thread has waited for a core while it
//! could run (the OS ran other threads), which the latency objective uses to tell a thread's
//! own time from time the OS gave to other threads (`load::OwnTime`).

use std::cell::RefCell;
use std::fmt;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A source of monotonic "now", and of the calling thread's run-queue delay.
pub trait MonotonicClock: Send + Sync + fmt::Debug {
    fn now(&self) -> Instant;

    /// How long the calling thread has been runnable but not running since it started: the
    /// time the OS gave its core to other threads while it wanted to run (preemption, and the
    /// delay between its wake-up and its first instruction). Time it waited for a timer, a
    /// command or IO is not in it. Zero when the system does not say.
    fn thread_run_delay(&self) -> Duration;
}

/// The system's monotonic clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemMonotonic;

impl MonotonicClock for SystemMonotonic {
    fn now(&self) -> Instant {
        Instant::now()
    }

    /// The second field of `/proc/thread-self/schedstat` (`run_delay`, nanoseconds; the
    /// kernel's scheduler statistics, kept whenever `CONFIG_SCHED_INFO` is on, as in every
    /// distribution kernel). One `pread` of a file this thread opened once: about 0.40 µs of
    /// CPU on the benchmark VM, against 0.27 µs for its CPU time
    /// (`clock_gettime(CLOCK_THREAD_CPUTIME_ID)`), which cannot tell a thread that waits for
    /// its own blocking callback from one that was preempted (`docs/MATCHES.md`, "Whose
    /// lateness").
    fn thread_run_delay(&self) -> Duration {
        thread_local! {
            /// This thread's own schedstat file (`/proc/thread-self` names the thread that
            /// opens it); `None` when it cannot be opened: every read is then zero and a
            /// thread's own lateness is its wall-clock lateness, as before the split.
            static SCHEDSTAT: RefCell<Option<Option<File>>> = const { RefCell::new(None) };
        }
        SCHEDSTAT.with(|cell| {
            let mut cell = cell.borrow_mut();
            let file = cell.get_or_insert_with(|| File::open("/proc/thread-self/schedstat").ok());
            let Some(file) = file.as_ref() else {
                return Duration::ZERO;
            };
            let mut buf = [0u8; 96];
            let read = file.read_at(&mut buf, 0).unwrap_or(0);
            Duration::from_nanos(run_delay_field(&buf[..read]).unwrap_or(0))
        })
    }
}

/// The run delay in a schedstat line: "<on-cpu ns> <run delay ns> <timeslices>". Read by
/// hand from the bytes: the executor reads it at every tick's start and end (thousands of
/// times a second at a thousand matches), and UTF-8 validation, `split_ascii_whitespace` and
/// `str::parse` were ≈ 350 instructions of each reading.
fn run_delay_field(line: &[u8]) -> Option<u64> {
    let field = line
        .split(u8::is_ascii_whitespace)
        .filter(|field| !field.is_empty())
        .nth(1)?;
    field.iter().try_fold(0u64, |value, &b| {
        let digit = b.checked_sub(b'0').filter(|d| *d <= 9)?;
        value.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

/// A clock that stands still until advanced. Moving it is work (or a blocking wait) of the
/// thread that moves it, unless the test says the OS ran another thread meanwhile
/// ([`FakeClock::preempt`]): that is its run-queue delay.
#[derive(Debug)]
pub struct FakeClock {
    base: Instant,
    offset_ns: AtomicU64,
    /// Time passed while the thread wanted to run and did not (preempted).
    preempted_ns: AtomicU64,
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
            preempted_ns: AtomicU64::new(0),
        }
    }

    /// Moves the clock by `by` during which the thread wanted to run and the OS gave its core
    /// to another thread: its run-queue delay grows by `by`.
    pub fn preempt(&self, by: Duration) {
        let by = by.as_nanos().min(u128::from(u64::MAX)) as u64;
        self.preempted_ns.fetch_add(by, Ordering::SeqCst);
        self.offset_ns.fetch_add(by, Ordering::SeqCst);
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

    fn thread_run_delay(&self) -> Duration {
        Duration::from_nanos(self.preempted_ns.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_run_delay_of_a_schedstat_line() {
        assert_eq!(run_delay_field(b"84046123 5120 17\n"), Some(5120));
        assert_eq!(run_delay_field(b"garbage"), None);
        assert_eq!(run_delay_field(b""), None);
        assert_eq!(run_delay_field(b"1 \t 42\n"), Some(42));
        assert_eq!(run_delay_field(b"1 4x2 3"), None);
        assert_eq!(run_delay_field(b"1 -42 3"), None);
        assert_eq!(run_delay_field(b"1 18446744073709551615 3"), Some(u64::MAX));
        assert_eq!(run_delay_field(b"1 18446744073709551616 3"), None);
        assert_eq!(run_delay_field(b"17"), None);
    }

    /// The kernel the tests run on keeps the statistic (without it the executor falls back to
    /// the wall clock, and this test says so), and a thread's value never goes back.
    #[test]
    fn the_system_clock_reads_this_threads_run_delay() {
        let file = std::fs::read("/proc/thread-self/schedstat").unwrap_or_default();
        assert!(
            run_delay_field(&file).is_some(),
            "schedstat: {:?}",
            String::from_utf8_lossy(&file)
        );
        let first = SystemMonotonic.thread_run_delay();
        std::thread::yield_now();
        assert!(SystemMonotonic.thread_run_delay() >= first);
    }
}
