//! The last line of defence of the call budget: noticing a VM thread that runs script code
//! past its call's deadline without coming back to its event loop.
//!
//! Engines stop a running call at its deadline (Lua: the instruction hook; QuickJS: the
//! interrupt handler), but only while the interpreter executes script instructions. A native
//! function that runs long without a check (a runaway C routine the sandbox missed) keeps its
//! thread busy past any deadline. Each poll of a call on a VM thread is [`Watched`]: it
//! records the call's deadline in the thread's [`ThreadWatch`] while it runs. The pool's
//! watchdog task reads the watches; a poll still running `runtime.watchdog_grace_ms` after its
//! deadline means the VM cannot be interrupted: the pool fails the calls started on it with
//! DEADLINE_EXCEEDED, abandons the OS thread and starts a replacement (`crate::pool`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Default of `runtime.watchdog_grace_ms`.
pub const DEFAULT_WATCHDOG_GRACE: Duration = Duration::from_secs(1);

/// What the watchdog knows of one VM thread.
#[derive(Debug)]
pub(crate) struct ThreadWatch {
    /// Reference point of `polling`.
    epoch: Instant,
    /// Deadline of the call being polled now, in microseconds after `epoch` plus one; 0 when
    /// the thread is not running a call.
    polling: AtomicU64,
    /// Set by the watchdog when it gave up on this thread; a thread that comes back after that
    /// must stop serving (its replacement owns the queue).
    abandoned: AtomicBool,
}

impl ThreadWatch {
    pub(crate) fn new() -> ThreadWatch {
        ThreadWatch {
            epoch: Instant::now(),
            polling: AtomicU64::new(0),
            abandoned: AtomicBool::new(false),
        }
    }

    fn offset(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_micros()).unwrap_or(u64::MAX)
    }

    /// Whether a poll is still running `grace` after its call's deadline at `now`.
    pub(crate) fn overdue(&self, now: Instant, grace: Duration) -> bool {
        let polling = self.polling.load(Ordering::Acquire);
        if polling == 0 {
            return false;
        }
        let limit = (polling - 1).saturating_add(u64::try_from(grace.as_micros()).unwrap_or(0));
        self.offset(now) > limit
    }

    pub(crate) fn abandon(&self) {
        self.abandoned.store(true, Ordering::Release);
    }

    pub(crate) fn is_abandoned(&self) -> bool {
        self.abandoned.load(Ordering::Acquire)
    }
}

/// A call future whose polls are recorded in its thread's [`ThreadWatch`].
pub(crate) struct Watched<F> {
    inner: F,
    watch: Arc<ThreadWatch>,
    deadline: Instant,
}

impl<F: Future + Unpin> Watched<F> {
    pub(crate) fn new(inner: F, watch: Arc<ThreadWatch>, deadline: Instant) -> Self {
        Watched {
            inner,
            watch,
            deadline,
        }
    }
}

impl<F: Future + Unpin> Future for Watched<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let mark = self.watch.offset(self.deadline).saturating_add(1);
        self.watch.polling.store(mark, Ordering::Release);
        let result = Pin::new(&mut self.inner).poll(cx);
        self.watch.polling.store(0, Ordering::Release);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poll_is_overdue_only_past_deadline_plus_grace() {
        let watch = Arc::new(ThreadWatch::new());
        let now = Instant::now();
        assert!(!watch.overdue(now, Duration::ZERO), "idle thread");
        let deadline = now + Duration::from_millis(100);
        let grace = Duration::from_millis(50);
        let seen = std::cell::Cell::new((false, false));
        let probe = {
            let watch = watch.clone();
            std::future::poll_fn(move |_| {
                seen.set((
                    watch.overdue(deadline + Duration::from_millis(40), grace),
                    watch.overdue(deadline + Duration::from_millis(60), grace),
                ));
                Poll::Ready(seen.get())
            })
        };
        let mut watched = Box::pin(Watched::new(Box::pin(probe), watch.clone(), deadline));
        let waker = futures_util::task::noop_waker();
        let Poll::Ready((early, late)) = watched.as_mut().poll(&mut Context::from_waker(&waker))
        else {
            panic!("the probe is always ready");
        };
        assert!(!early, "within the grace");
        assert!(late, "past the grace");
        assert!(
            !watch.overdue(deadline + Duration::from_secs(5), grace),
            "the poll ended"
        );
    }
}
