//! Deadlines of one HTTP connection, enforced at the socket so that no client can hold a
//! connection (a file descriptor) without making progress:
//!
//! - waiting for a request (just accepted, or after the previous response): `idle_timeout`;
//! - a request's head started arriving: it must be complete within `header_read_timeout`;
//! - a handler is running: no deadline here (the body has its own, handlers have budgets);
//! - a response is being written: no progress for `idle_timeout` (a client that stopped
//!   reading) closes the connection;
//! - upgraded to a WebSocket: none (the socket has its own pings and deadlines).
//!
//! [`Watched`] wraps the TCP stream and checks the deadline whenever the stream would block;
//! [`ConnState`] is what the connection's service tells it about requests ([`RequestGuard`]).
//! The timer is reset lazily: progress only records a time, and the sleep is moved when it
//! fires early.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use http_body::{Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// No time recorded.
const NONE: u64 = u64::MAX;

/// The timeouts a connection is held to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    pub header: Duration,
    pub idle: Duration,
}

/// Which deadline closed a connection (metric label and log field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expired {
    Idle,
    Header,
    Write,
}

impl Expired {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Expired::Idle => "idle",
            Expired::Header => "header",
            Expired::Write => "write",
        }
    }
}

/// What the connection is doing, shared by its socket wrapper and its service.
#[derive(Debug)]
pub(crate) struct ConnState {
    epoch: Instant,
    timeouts: Timeouts,
    /// Requests whose handler is running.
    handling: AtomicUsize,
    /// Responses whose body is still being sent.
    responding: AtomicUsize,
    upgraded: AtomicBool,
    /// Milliseconds since `epoch` when the connection last became ready for a request.
    ready_since: AtomicU64,
    /// When the first byte of the next request's head arrived; `NONE` before.
    head_started: AtomicU64,
    /// Last time bytes moved in either direction.
    last_progress: AtomicU64,
    /// The connection task, when it last found no deadline in force (a handler was running):
    /// woken when the handler answers, so that the next deadline gets armed even if hyper is
    /// only waiting for the socket to become readable.
    parked: Mutex<Option<Waker>>,
}

impl ConnState {
    pub(crate) fn new(timeouts: Timeouts) -> Arc<ConnState> {
        Arc::new(ConnState {
            epoch: Instant::now(),
            timeouts,
            handling: AtomicUsize::new(0),
            responding: AtomicUsize::new(0),
            upgraded: AtomicBool::new(false),
            ready_since: AtomicU64::new(0),
            head_started: AtomicU64::new(NONE),
            last_progress: AtomicU64::new(0),
            parked: Mutex::new(None),
        })
    }

    fn park(&self, waker: &Waker) {
        if let Ok(mut parked) = self.parked.lock() {
            match parked.as_ref() {
                Some(known) if known.will_wake(waker) => {}
                _ => *parked = Some(waker.clone()),
            }
        }
    }

    fn unpark(&self) {
        let waker = self.parked.lock().ok().and_then(|mut parked| parked.take());
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// A request's head was parsed: its handler starts.
    pub(crate) fn begin_request(self: &Arc<Self>) -> RequestGuard {
        self.head_started.store(NONE, Ordering::Relaxed);
        self.handling.fetch_add(1, Ordering::Relaxed);
        RequestGuard {
            state: self.clone(),
            stage: Stage::Handling,
        }
    }

    fn millis(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.epoch).as_millis()).unwrap_or(NONE - 1)
    }

    fn instant(&self, millis: u64) -> Instant {
        self.epoch + Duration::from_millis(millis)
    }

    fn is_idle(&self) -> bool {
        self.handling.load(Ordering::Relaxed) == 0 && self.responding.load(Ordering::Relaxed) == 0
    }

    fn progressed(&self, read: bool) {
        // An upgraded connection has no deadline here: spare every WebSocket frame the clock.
        if self.upgraded.load(Ordering::Relaxed) {
            return;
        }
        let now = self.millis(Instant::now());
        self.last_progress.store(now, Ordering::Relaxed);
        if read && self.is_idle() && self.head_started.load(Ordering::Relaxed) == NONE {
            self.head_started.store(now, Ordering::Relaxed);
        }
    }

    /// The deadline in force and which one it is; `None` when there is none.
    fn deadline(&self) -> Option<(Instant, Expired)> {
        if self.upgraded.load(Ordering::Relaxed) || self.handling.load(Ordering::Relaxed) > 0 {
            return None;
        }
        if self.responding.load(Ordering::Relaxed) > 0 {
            let last = self.last_progress.load(Ordering::Relaxed);
            return Some((self.instant(last) + self.timeouts.idle, Expired::Write));
        }
        match self.head_started.load(Ordering::Relaxed) {
            NONE => {
                let since = self.ready_since.load(Ordering::Relaxed);
                Some((self.instant(since) + self.timeouts.idle, Expired::Idle))
            }
            started => Some((
                self.instant(started) + self.timeouts.header,
                Expired::Header,
            )),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Handling,
    Responding,
    Done,
}

/// One request's hold on its connection's state; dropping it (the handler was cancelled, or
/// its response was sent) releases it.
#[derive(Debug)]
pub(crate) struct RequestGuard {
    state: Arc<ConnState>,
    stage: Stage,
}

impl RequestGuard {
    /// The handler answered: the response is being sent; a `101 Switching Protocols` answer
    /// hands the connection to the upgraded protocol, which no deadline here applies to.
    pub(crate) fn respond(
        mut self,
        response: axum::response::Response,
    ) -> axum::response::Response<GuardedBody> {
        // Enter the next stage before leaving this one: HTTP/2 runs handlers on other tasks,
        // and the connection must never look idle in between.
        if response.status() == axum::http::StatusCode::SWITCHING_PROTOCOLS {
            self.state.upgraded.store(true, Ordering::Relaxed);
            self.stage = Stage::Done;
        } else {
            self.state.progressed(false);
            self.state.responding.fetch_add(1, Ordering::Relaxed);
            self.stage = Stage::Responding;
        }
        self.state.handling.fetch_sub(1, Ordering::Relaxed);
        self.state.unpark();
        response.map(|inner| GuardedBody {
            inner,
            _guard: self,
        })
    }
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let counter = match self.stage {
            Stage::Handling => &self.state.handling,
            Stage::Responding => &self.state.responding,
            Stage::Done => return,
        };
        // The idle deadline counts from the last answer; recorded before the count drops, so
        // the connection never looks idle since an older time.
        let now = self.state.millis(Instant::now());
        self.state.ready_since.store(now, Ordering::Relaxed);
        counter.fetch_sub(1, Ordering::Relaxed);
        self.state.unpark();
    }
}

/// A response body that releases its request's [`RequestGuard`] when hyper is done with it.
#[derive(Debug)]
pub(crate) struct GuardedBody {
    inner: Body,
    _guard: RequestGuard,
}

impl HttpBody for GuardedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A connection's socket, failing with `TimedOut` once the connection's deadline passes while
/// it waits.
#[derive(Debug)]
pub(crate) struct Watched<IO> {
    io: IO,
    state: Arc<ConnState>,
    /// Created the first time the socket blocks with a deadline in force: most WebSockets
    /// never need one.
    sleep: Option<Pin<Box<Sleep>>>,
}

impl<IO> Watched<IO> {
    pub(crate) fn new(io: IO, state: Arc<ConnState>) -> Self {
        Watched {
            io,
            state,
            sleep: None,
        }
    }

    /// The socket would block: `Ready(error)` when the deadline passed, else arms the timer.
    fn check(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        if self.state.upgraded.load(Ordering::Relaxed) {
            return Poll::Pending;
        }
        loop {
            let Some((deadline, which)) = self.state.deadline() else {
                self.state.park(cx.waker());
                return Poll::Pending;
            };
            if Instant::now() >= deadline {
                metrics::counter!("metafi_http_connections_timed_out_total", "deadline" => which.label())
                    .increment(1);
                tracing::debug!(
                    deadline = which.label(),
                    "closing an HTTP connection past its deadline"
                );
                return Poll::Ready(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("HTTP connection {} deadline passed", which.label()),
                ));
            }
            let sleep = self
                .sleep
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
            if sleep.deadline() != deadline {
                sleep.as_mut().reset(deadline);
            }
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Watched<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    self.state.progressed(true);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => self.check(cx).map(Err),
        }
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Watched<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.io).poll_write(cx, buf) {
            Poll::Ready(Ok(n)) => {
                if n > 0 {
                    self.state.progressed(false);
                }
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => self.check(cx).map(Err),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.io).poll_write_vectored(cx, bufs) {
            Poll::Ready(Ok(n)) => {
                if n > 0 {
                    self.state.progressed(false);
                }
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => self.check(cx).map(Err),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.io).poll_flush(cx) {
            Poll::Pending => self.check(cx).map(Err),
            ready => ready,
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.io).poll_shutdown(cx) {
            Poll::Pending => self.check(cx).map(Err),
            ready => ready,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> Arc<ConnState> {
        ConnState::new(Timeouts {
            header: Duration::from_secs(10),
            idle: Duration::from_secs(60),
        })
    }

    fn which(state: &ConnState) -> Option<Expired> {
        state.deadline().map(|(_, which)| which)
    }

    #[tokio::test(start_paused = true)]
    async fn each_stage_of_a_connection_has_its_deadline() {
        let state = state();
        assert_eq!(which(&state), Some(Expired::Idle));
        state.progressed(true);
        assert_eq!(which(&state), Some(Expired::Header));
        let guard = state.begin_request();
        assert_eq!(which(&state), None, "a running handler is not cut");
        let response = guard.respond(axum::response::Response::new(Body::empty()));
        assert_eq!(which(&state), Some(Expired::Write));
        tokio::time::advance(Duration::from_secs(5)).await;
        drop(response);
        let (deadline, which) = state.deadline().unwrap();
        assert_eq!(which, Expired::Idle);
        assert_eq!(deadline, Instant::now() + Duration::from_secs(60));
    }

    #[tokio::test(start_paused = true)]
    async fn an_upgraded_connection_has_no_deadline() {
        let state = state();
        let guard = state.begin_request();
        let mut switching = axum::response::Response::new(Body::empty());
        *switching.status_mut() = axum::http::StatusCode::SWITCHING_PROTOCOLS;
        drop(guard.respond(switching));
        assert_eq!(which(&state), None);
        state.progressed(true);
        assert_eq!(which(&state), None);
    }

    /// Every read and write of a WebSocket recorded its time (a clock read) though no
    /// deadline of this module applies to it any more.
    #[tokio::test(start_paused = true)]
    async fn websocket_traffic_records_no_progress() {
        let state = state();
        let guard = state.begin_request();
        let mut switching = axum::response::Response::new(Body::empty());
        *switching.status_mut() = axum::http::StatusCode::SWITCHING_PROTOCOLS;
        drop(guard.respond(switching));
        tokio::time::advance(Duration::from_secs(5)).await;
        state.progressed(true);
        state.progressed(false);
        assert_eq!(
            state.head_started.load(Ordering::Relaxed),
            NONE,
            "WebSocket frames are not request heads"
        );
        assert_eq!(
            state.last_progress.load(Ordering::Relaxed),
            0,
            "no clock read per WebSocket frame"
        );
    }
}
