//! Throttling of failed sign-ins, per account and per client address, so that guessing a
//! password (or a device or custom id with `create=false`) costs real time.
//!
//! Each key (an account identifier, or a client IP address) counts failures in a fixed window
//! that starts at its first failure. Once a key has `max_failures` failures in its window, every
//! sign-in with that key is refused (code 8, RESOURCE_EXHAUSTED) until the window ends, without
//! checking the secret. A successful sign-in clears the account's count (not the address's: one
//! good password must not buy an address more guesses at other accounts).
//!
//! Memory is bounded: at most `max_entries` keys per scope; when full, expired windows are
//! dropped first, then the oldest windows.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::{Clock, CoreError};

/// Limits of the throttle (`[signin_throttle]` in the server configuration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInThrottleConfig {
    /// Failures one account identifier may have in a window before it is refused; 0 disables
    /// the per-account limit.
    pub max_failures_per_account: u32,
    /// Failures one client address may have in a window before it is refused; 0 disables the
    /// per-address limit.
    pub max_failures_per_address: u32,
    /// Length of a window, counted from its first failure.
    pub window: Duration,
    /// Keys remembered per scope (accounts, addresses).
    pub max_entries: usize,
}

impl Default for SignInThrottleConfig {
    fn default() -> Self {
        SignInThrottleConfig {
            max_failures_per_account: 10,
            max_failures_per_address: 100,
            window: Duration::from_secs(300),
            max_entries: 100_000,
        }
    }
}

/// The account a sign-in names, as the throttle counts it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ThrottleKey {
    /// An email address, lower-cased.
    Email(String),
    Username(String),
    Device(String),
    Custom(String),
}

/// Why a sign-in was refused without being tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThrottleScope {
    Account,
    Address,
}

impl ThrottleScope {
    fn label(self) -> &'static str {
        match self {
            ThrottleScope::Account => "account",
            ThrottleScope::Address => "address",
        }
    }
}

/// Counts failed sign-ins and refuses further ones past the limits.
#[derive(Debug)]
pub struct SignInThrottle {
    config: SignInThrottleConfig,
    clock: Arc<dyn Clock>,
    accounts: Mutex<Windows<ThrottleKey>>,
    addresses: Mutex<Windows<IpAddr>>,
}

impl SignInThrottle {
    pub fn new(config: SignInThrottleConfig, clock: Arc<dyn Clock>) -> Self {
        SignInThrottle {
            accounts: Mutex::new(Windows::default()),
            addresses: Mutex::new(Windows::default()),
            config,
            clock,
        }
    }

    /// Refuses the sign-in when the account or the address used up its failures. Call before
    /// checking the secret.
    pub fn check(&self, key: &ThrottleKey, address: Option<IpAddr>) -> Result<(), CoreError> {
        let now = self.clock.now_ms();
        let window = self.window_ms();
        if self.config.max_failures_per_account > 0
            && let Some(wait) =
                self.accounts
                    .lock()
                    .blocked(key, now, window, self.config.max_failures_per_account)
        {
            return Err(refusal(ThrottleScope::Account, wait));
        }
        if self.config.max_failures_per_address > 0
            && let Some(address) = address
            && let Some(wait) = self.addresses.lock().blocked(
                &address,
                now,
                window,
                self.config.max_failures_per_address,
            )
        {
            return Err(refusal(ThrottleScope::Address, wait));
        }
        Ok(())
    }

    /// Counts a sign-in that failed on its secret (wrong password, unknown id).
    pub fn failed(&self, key: ThrottleKey, address: Option<IpAddr>) {
        let now = self.clock.now_ms();
        let window = self.window_ms();
        let cap = self.config.max_entries;
        if self.config.max_failures_per_account > 0 {
            let count = self.accounts.lock().fail(key.clone(), now, window, cap);
            if count == self.config.max_failures_per_account {
                tracing::warn!(account = ?key, failures = count, window_sec = self.config.window.as_secs(), "sign-ins for this account are throttled");
            }
        }
        if self.config.max_failures_per_address > 0
            && let Some(address) = address
        {
            let count = self.addresses.lock().fail(address, now, window, cap);
            if count == self.config.max_failures_per_address {
                tracing::warn!(%address, failures = count, window_sec = self.config.window.as_secs(), "sign-ins from this address are throttled");
            }
        }
    }

    /// Refuses a sign-in from an address that used up its failures. For sign-ins that name no
    /// account before their proof is checked (social sign-in: the provider's token is the
    /// proof and the account).
    pub fn check_address(&self, address: Option<IpAddr>) -> Result<(), CoreError> {
        if self.config.max_failures_per_address == 0 {
            return Ok(());
        }
        let Some(address) = address else {
            return Ok(());
        };
        let now = self.clock.now_ms();
        match self.addresses.lock().blocked(
            &address,
            now,
            self.window_ms(),
            self.config.max_failures_per_address,
        ) {
            Some(wait) => Err(refusal(ThrottleScope::Address, wait)),
            None => Ok(()),
        }
    }

    /// Counts a failed proof against its address only (see [`Self::check_address`]).
    pub fn failed_address(&self, address: Option<IpAddr>) {
        let Some(address) = address else {
            return;
        };
        if self.config.max_failures_per_address == 0 {
            return;
        }
        let now = self.clock.now_ms();
        let window = self.window_ms();
        let count = self
            .addresses
            .lock()
            .fail(address, now, window, self.config.max_entries);
        if count == self.config.max_failures_per_address {
            tracing::warn!(%address, failures = count, "sign-ins from this address are throttled");
        }
    }

    /// A successful sign-in: the account's failures are forgiven.
    pub fn succeeded(&self, key: &ThrottleKey) {
        self.accounts.lock().entries.remove(key);
    }

    /// Keys remembered, accounts plus addresses (for tests and metrics).
    pub fn len(&self) -> usize {
        self.accounts.lock().entries.len() + self.addresses.lock().entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn window_ms(&self) -> i64 {
        i64::try_from(self.config.window.as_millis()).unwrap_or(i64::MAX)
    }
}

fn refusal(scope: ThrottleScope, wait_ms: i64) -> CoreError {
    metrics::counter!("metafi_signin_throttled_total", "scope" => scope.label()).increment(1);
    tracing::debug!(
        scope = scope.label(),
        wait_ms,
        "sign-in refused by the throttle"
    );
    let seconds = (wait_ms + 999) / 1000;
    let what = match scope {
        ThrottleScope::Account => "for this account",
        ThrottleScope::Address => "from this address",
    };
    CoreError::ResourceExhausted {
        message: format!("Too many failed sign-in attempts {what}; retry in {seconds} s.").into(),
    }
}

/// One fixed window per key.
#[derive(Debug)]
struct Windows<K> {
    entries: HashMap<K, Window>,
}

impl<K> Default for Windows<K> {
    fn default() -> Self {
        Windows {
            entries: HashMap::new(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Window {
    start_ms: i64,
    failures: u32,
}

impl<K: std::hash::Hash + Eq + Clone> Windows<K> {
    /// How long the key stays refused, when it is.
    fn blocked(&self, key: &K, now: i64, window: i64, max: u32) -> Option<i64> {
        let entry = self.entries.get(key)?;
        let ends = entry.start_ms.saturating_add(window);
        (entry.failures >= max && now < ends).then_some(ends - now)
    }

    /// Counts one failure; returns the failures of the key's current window.
    fn fail(&mut self, key: K, now: i64, window: i64, cap: usize) -> u32 {
        if !self.entries.contains_key(&key) && self.entries.len() >= cap {
            self.make_room(now, window, cap);
        }
        let entry = self.entries.entry(key).or_insert(Window {
            start_ms: now,
            failures: 0,
        });
        if now >= entry.start_ms.saturating_add(window) {
            *entry = Window {
                start_ms: now,
                failures: 0,
            };
        }
        entry.failures = entry.failures.saturating_add(1);
        entry.failures
    }

    /// Drops expired windows; if that is not enough, the oldest sixteenth (so a flood of new
    /// keys costs one scan per many inserts, not one per insert).
    fn make_room(&mut self, now: i64, window: i64, cap: usize) {
        self.entries
            .retain(|_, w| now < w.start_ms.saturating_add(window));
        if self.entries.len() < cap || self.entries.is_empty() {
            // Room enough, or nothing to evict (`cap` 0: the config refuses it, callers may not).
            return;
        }
        let mut starts: Vec<i64> = self.entries.values().map(|w| w.start_ms).collect();
        let evict = (cap / 16).max(1).min(starts.len() - 1);
        let (_, cutoff, _) = starts.select_nth_unstable(evict);
        let cutoff = *cutoff;
        let mut left = evict + 1;
        self.entries.retain(|_, w| {
            if w.start_ms <= cutoff && left > 0 {
                left -= 1;
                false
            } else {
                true
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ManualClock;

    fn throttle(config: SignInThrottleConfig) -> (SignInThrottle, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new(1_000_000));
        (SignInThrottle::new(config, clock.clone()), clock)
    }

    fn small() -> SignInThrottleConfig {
        SignInThrottleConfig {
            max_failures_per_account: 3,
            max_failures_per_address: 5,
            window: Duration::from_secs(60),
            max_entries: 100,
        }
    }

    fn email(s: &str) -> ThrottleKey {
        ThrottleKey::Email(s.into())
    }

    #[test]
    fn failed_social_proofs_count_against_the_address_only() {
        let (t, clock) = throttle(small());
        let here: IpAddr = "192.0.2.7".parse().unwrap();
        let there: IpAddr = "192.0.2.8".parse().unwrap();
        for _ in 0..5 {
            assert!(t.check_address(Some(here)).is_ok());
            t.failed_address(Some(here));
        }
        let error = t.check_address(Some(here)).unwrap_err();
        assert_eq!(error.code(), metafi_proto::Code::ResourceExhausted);
        // The same address is refused for password sign-ins too, other addresses are not.
        assert!(t.check(&email("a@x"), Some(here)).is_err());
        assert!(t.check_address(Some(there)).is_ok());
        // No address (server code): never refused, never counted.
        t.failed_address(None);
        assert!(t.check_address(None).is_ok());
        clock.advance_ms(60_000);
        assert!(t.check_address(Some(here)).is_ok());
    }

    #[test]
    fn account_is_refused_after_its_failures_until_the_window_ends() {
        let (t, clock) = throttle(small());
        for _ in 0..3 {
            assert!(t.check(&email("a@x"), None).is_ok());
            t.failed(email("a@x"), None);
        }
        let error = t.check(&email("a@x"), None).unwrap_err();
        assert!(matches!(error, CoreError::ResourceExhausted { .. }));
        assert!(error.to_string().contains("retry in 60 s"), "{error}");
        assert!(t.check(&email("b@x"), None).is_ok());
        clock.advance_ms(60_000);
        assert!(t.check(&email("a@x"), None).is_ok());
    }

    #[test]
    fn success_clears_the_account_but_not_the_address() {
        let (t, _clock) = throttle(small());
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        for _ in 0..2 {
            t.failed(email("a@x"), Some(ip));
        }
        t.succeeded(&email("a@x"));
        t.failed(email("a@x"), Some(ip));
        t.failed(email("a@x"), Some(ip));
        assert!(t.check(&email("a@x"), None).is_ok());
        t.failed(email("c@x"), Some(ip));
        let error = t.check(&email("d@x"), Some(ip)).unwrap_err();
        assert!(error.to_string().contains("from this address"), "{error}");
        assert!(t.check(&email("d@x"), None).is_ok());
    }

    #[test]
    fn memory_stays_bounded_under_a_flood_of_keys() {
        let (t, clock) = throttle(small());
        for i in 0..10_000 {
            t.failed(email(&format!("{i}@x")), None);
            clock.advance_ms(1);
        }
        assert!(t.len() <= 100, "{} keys remembered", t.len());
        // The newest keys are kept.
        for _ in 0..2 {
            t.failed(email("9999@x"), None);
        }
        assert!(t.check(&email("9999@x"), None).is_err());
    }

    /// `max_entries: 0` underflowed `starts.len() - 1` on the first failure.
    #[test]
    fn a_zero_entry_cap_does_not_panic() {
        let (t, _clock) = throttle(SignInThrottleConfig {
            max_entries: 0,
            ..small()
        });
        for i in 0..3 {
            t.failed(email(&format!("{i}@x")), None);
        }
        assert!(t.len() <= 1, "{} keys remembered", t.len());
    }

    #[test]
    fn zero_limits_disable_the_scope() {
        let (t, _clock) = throttle(SignInThrottleConfig {
            max_failures_per_account: 0,
            max_failures_per_address: 0,
            ..small()
        });
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        for _ in 0..50 {
            t.failed(email("a@x"), Some(ip));
        }
        assert!(t.check(&email("a@x"), Some(ip)).is_ok());
        assert!(t.is_empty());
    }
}
