//! How a synchronous `nk` function waits for async Rust.
//!
//! Nakama's JavaScript API is synchronous (`const objects = nk.storageRead(ids)`), and QuickJS
//! cannot suspend a script in the middle of a native call. So a JS `nk` function hands its
//! future to a small dedicated tokio runtime (one `metafi-js-io` thread per engine) and blocks
//! the VM thread until the answer arrives or the call's deadline passes. The VM thread's own
//! current-thread runtime cannot drive the future: it is busy running this very call, and
//! timers or sockets registered with it would never fire.
//!
//! A blocked VM thread uses no CPU; other calls run on the other VMs.

use std::future::Future;
use std::sync::mpsc;
use std::time::Instant;

use tokio::runtime::{Handle, Runtime};

/// The runtime that drives the `nk` futures of one engine's VMs. Shut down without waiting
/// when the engine is dropped (which may happen inside an async context).
#[derive(Debug)]
pub(crate) struct IoRuntime {
    runtime: Option<Runtime>,
    handle: Handle,
}

impl IoRuntime {
    pub(crate) fn start() -> std::io::Result<IoRuntime> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("metafi-js-io")
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        Ok(IoRuntime {
            runtime: Some(runtime),
            handle,
        })
    }

    pub(crate) fn handle(&self) -> Handle {
        self.handle.clone()
    }
}

impl Drop for IoRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Why a blocking wait ended without an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitError {
    /// The deadline passed first; the future was cancelled.
    Deadline,
    /// The future panicked or the runtime is shutting down.
    Lost,
}

/// Runs `future` on `io` and blocks this thread until it finishes or `deadline` passes.
pub(crate) fn block_on<T, F>(
    io: &Handle,
    deadline: Option<Instant>,
    future: F,
) -> Result<T, WaitError>
where
    T: Send + 'static,
    F: Future<Output = T> + Send + 'static,
{
    let (tx, rx) = mpsc::sync_channel(1);
    let task = io.spawn(async move {
        let _ = tx.send(future.await);
    });
    let answer = match deadline {
        Some(at) => rx
            .recv_timeout(at.saturating_duration_since(Instant::now()))
            .map_err(|e| match e {
                mpsc::RecvTimeoutError::Timeout => WaitError::Deadline,
                mpsc::RecvTimeoutError::Disconnected => WaitError::Lost,
            }),
        None => rx.recv().map_err(|_| WaitError::Lost),
    };
    if answer.is_err() {
        task.abort();
    }
    answer
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn answers_come_back_and_deadlines_cancel() {
        let io = IoRuntime::start().unwrap();
        let got = block_on(&io.handle(), None, async { 41 + 1 });
        assert_eq!(got, Ok(42));

        // A future that never finishes: only the deadline ends the wait, and it is cancelled.
        struct OnDrop(mpsc::Sender<()>);
        impl Drop for OnDrop {
            fn drop(&mut self) {
                let _ = self.0.send(());
            }
        }
        let (dropped, was_dropped) = mpsc::channel();
        let (answer, answered) = mpsc::channel();
        let handle = io.handle();
        std::thread::spawn(move || {
            let got = block_on(
                &handle,
                Some(Instant::now() + Duration::from_millis(50)),
                async move {
                    let _cancelled = OnDrop(dropped);
                    std::future::pending::<()>().await;
                    1
                },
            );
            let _ = answer.send(got);
        });
        // Hang guards far above the 50 ms deadline: they fail only if it never acts.
        let got = answered
            .recv_timeout(Duration::from_secs(60))
            .expect("the wait never ended at its deadline");
        assert_eq!(got, Err(WaitError::Deadline));
        was_dropped
            .recv_timeout(Duration::from_secs(60))
            .expect("the future was not cancelled at the deadline");
    }

    #[test]
    fn a_panicking_future_is_lost_not_fatal() {
        let io = IoRuntime::start().unwrap();
        let got: Result<(), WaitError> = block_on(&io.handle(), None, async { panic!("boom") });
        assert_eq!(got, Err(WaitError::Lost));
    }
}
