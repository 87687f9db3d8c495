//! Waiting for a future on a thread that is not a tokio worker: a match executor thread runs
//! script callbacks synchronously, and a callback that calls an `nk` function doing IO must
//! wait for it there. The future is polled on the calling thread, which parks between polls
//! (the IO itself is driven by the server's runtime, whose context the caller has entered).
//! Nesting is allowed: handler code creating a match blocks inside another callback's wait.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::Instant;

struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

thread_local! {
    static WAKER: Waker = Waker::from(Arc::new(Unpark(std::thread::current())));
}

/// Runs `f` with this thread's waker, the one [`block_on_until`] parks on.
pub(crate) fn with_waker<R>(f: impl FnOnce(&Waker) -> R) -> R {
    WAKER.with(f)
}

/// Polls `future` to completion on this thread; `None` if `deadline` passes first (the future
/// is dropped, cancelling what it waited for).
pub fn block_on_until<F: Future>(future: F, deadline: Option<Instant>) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    WAKER.with(|waker| {
        let mut cx = Context::from_waker(waker);
        loop {
            if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
                return Some(value);
            }
            match deadline {
                None => std::thread::park(),
                Some(at) => {
                    let now = Instant::now();
                    if now >= at {
                        return None;
                    }
                    std::thread::park_timeout(at - now);
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn waits_for_a_future_completed_by_another_thread() {
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            let _ = tx.send(7);
        });
        assert_eq!(block_on_until(rx, None).map(Result::ok), Some(Some(7)));
    }

    #[test]
    fn gives_up_at_the_deadline_and_nests() {
        let (_tx, rx) = tokio::sync::oneshot::channel::<()>();
        let deadline = Instant::now() + Duration::from_millis(30);
        assert!(block_on_until(rx, Some(deadline)).is_none());
        let nested = block_on_until(async { block_on_until(async { 1 }, None) }, None);
        assert_eq!(nested, Some(Some(1)));
    }
}
