//! One WebSocket connection: a reader (the upgrade task) that decodes frames into envelopes
//! and hands them to the realtime session one at a time, and a writer task that drains the
//! session's outbox, sends pings and enforces the liveness deadlines.
//!
//! The split matters: a request that takes a while (an RPC) never stops events from being
//! written, and a client that stops reading never holds up anyone else (it is closed when its
//! bounded outbox overflows, or when a write exceeds `socket.write_wait_ms`). The
//! reader takes the next request only while the outbox has room ([`Outbox::writable`]): a
//! burst of requests is read as fast as the client reads its answers, never answered by a
//! close.
//!
//! A frame that breaks the WebSocket protocol closes the connection with the code RFC 6455
//! gives it: 1007 for a text frame that is not UTF-8, 1009 for a message over
//! `socket.max_message_size_bytes`, 1002 for anything else (unmasked frames, reserved opcodes
//! or bits, bad fragments or control frames).
//!
//! [`Outbox::writable`]: metafi_realtime::Outbox::writable

use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::task::Poll;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use bytes::Bytes;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use metafi_proto::realtime::Format;
use metafi_realtime::{CloseReason, Next, Session, SessionParams};
use tokio::time::{Instant, timeout};
use tokio_tungstenite::tungstenite;

use crate::{SocketConfig, TransportState, metrics};

/// Most frames written before one flush, so a burst costs few system calls.
const MAX_FRAMES_PER_FLUSH: usize = 64;

/// Milliseconds since the first connection: the clock of liveness bookkeeping (tokio's, so
/// tests can pause it).
pub(crate) fn now_ms() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let elapsed = EPOCH.get_or_init(Instant::now).elapsed();
    u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
}

/// Runs the connection to its end (called in the upgrade task).
pub(crate) async fn run(state: TransportState, socket: WebSocket, params: SessionParams) {
    let session = state.realtime.open(params);
    let now = now_ms();
    session.record_message(now);
    metrics::connection_opened();
    let (sink, mut stream) = socket.split();
    let mut writer = tokio::spawn(write_loop(state.config.clone(), session.clone(), sink));

    let reason = read_loop(&state, &session, &mut stream).await;
    // Cleanup first (others see this session leave at once), then let the writer finish.
    state.realtime.end(&session, reason);
    let reason = session.outbox().close_reason().unwrap_or(reason);
    let config = &state.config;
    let writer_budget = config.write_wait * 2 + Duration::from_millis(100);
    if timeout(writer_budget, &mut writer).await.is_err() {
        // Every write has its own deadline, so this is a backstop, not the normal path.
        writer.abort();
        tracing::debug!(sid = %session.id(), "writer did not finish in time; dropping the connection");
    }
    if reason.tells_client() {
        // Give the client a moment to answer our close frame, so it sees a clean close.
        let _ = timeout(config.close_ack_wait, async {
            while let Some(Ok(message)) = stream.next().await {
                if matches!(message, Message::Close(_)) {
                    break;
                }
            }
        })
        .await;
    }
    metrics::connection_closed(reason.label());
}

/// Reads until the connection ends or the session closes; returns why.
async fn read_loop(
    state: &TransportState,
    session: &Arc<Session>,
    stream: &mut SplitStream<WebSocket>,
) -> CloseReason {
    let outbox = session.outbox();
    let format = session.format();
    loop {
        // Backpressure: the next request waits until the client has read enough answers; the
        // time the reader was held does not count as the client's silence.
        if outbox.writable().await {
            session.record_message(now_ms());
        }
        let frame = tokio::select! {
            biased;
            () = outbox.closed() => {
                return outbox.close_reason().unwrap_or(CloseReason::Shutdown);
            }
            frame = stream.next() => frame,
        };
        let message = match frame {
            None => return CloseReason::ClientClosed,
            Some(Err(error)) => return read_error(error, &state.config),
            Some(Ok(message)) => message,
        };
        let now = now_ms();
        session.record_frame(now);
        let envelope = match (message, format) {
            (Message::Text(text), Format::Json) => {
                metrics::received(text.len());
                format.decode(text.as_bytes())
            }
            (Message::Binary(bytes), Format::Protobuf) => {
                metrics::received(bytes.len());
                format.decode(&bytes)
            }
            (Message::Text(_) | Message::Binary(_), _) => return CloseReason::WrongFrameType,
            (Message::Ping(_) | Message::Pong(_), _) => continue,
            (Message::Close(_), _) => return CloseReason::ClientClosed,
        };
        let envelope = match envelope {
            Ok(envelope) => envelope,
            Err(error) => {
                tracing::debug!(sid = %session.id(), error = %error, "malformed message from client");
                return CloseReason::MalformedMessage;
            }
        };
        session.record_message(now);
        // A game's inputs are served at once; anything else goes through the handler's future,
        // boxed: its state (kilobytes, for its largest request) then exists only while a
        // request runs, instead of inside every idle connection's task.
        let handled = match state.realtime.handle_now(session, envelope) {
            Ok(handled) => handled,
            Err(envelope) => Box::pin(state.realtime.handle(session, *envelope)).await,
        };
        if let Err(reason) = handled {
            return reason;
        }
    }
}

fn read_error(error: axum::Error, config: &SocketConfig) -> CloseReason {
    let inner = error.into_inner();
    let Some(error) = inner.downcast_ref::<tungstenite::Error>() else {
        tracing::debug!(error = %inner, "WebSocket read failed");
        return CloseReason::ConnectionError;
    };
    let reason = protocol_close(error, config);
    if matches!(
        reason,
        CloseReason::ProtocolViolation | CloseReason::MalformedMessage
    ) {
        tracing::debug!(error = %error, "WebSocket protocol violation");
    } else if reason == CloseReason::ConnectionError {
        tracing::debug!(error = %error, "WebSocket read failed");
    }
    reason
}

/// What a read error means for the client: its own close, a violation it is told about
/// (1002, 1007, 1009), or a broken connection (nothing can be sent).
fn protocol_close(error: &tungstenite::Error, config: &SocketConfig) -> CloseReason {
    use tungstenite::error::ProtocolError;
    match error {
        tungstenite::Error::Capacity(_) => CloseReason::MessageTooLarge {
            limit: config.max_message_size_bytes,
        },
        tungstenite::Error::Utf8(_) => CloseReason::MalformedMessage,
        tungstenite::Error::ConnectionClosed
        | tungstenite::Error::AlreadyClosed
        | tungstenite::Error::Protocol(ProtocolError::ResetWithoutClosingHandshake) => {
            CloseReason::ClientClosed
        }
        tungstenite::Error::Protocol(_) | tungstenite::Error::AttackAttempt => {
            CloseReason::ProtocolViolation
        }
        _ => CloseReason::ConnectionError,
    }
}

/// Writes the outbox to the client, pings an idle client, and closes on the deadlines.
async fn write_loop(
    config: Arc<SocketConfig>,
    session: Arc<Session>,
    mut sink: SplitSink<WebSocket, Message>,
) {
    let outbox = session.outbox();
    // Reused by every batch, so a wake-up does not allocate.
    let mut batch = Vec::new();
    let mut keepalive = Keepalive::new(&config);
    let deadline = tokio::time::sleep(keepalive.first_wait());
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            next = outbox.next() => match next {
                Next::Frame(frame) => {
                    // Boxed for the same reason as the handler in `read_loop`.
                    batch.push(frame);
                    let written =
                        Box::pin(write_frames(&config, &session, &mut sink, &mut batch)).await;
                    if let Err(reason) = written {
                        session.close(reason);
                        return;
                    }
                }
                Next::Close(reason) => {
                    close(&config, &mut sink, reason).await;
                    return;
                }
            },
            () = &mut deadline => {
                let wait = match keepalive.check(&session, now_ms()) {
                    Check::Ping => {
                        match timeout(config.write_wait, sink.send(Message::Ping(Bytes::new()))).await {
                            Ok(Ok(())) => keepalive.next_wait(&session, now_ms()),
                            Ok(Err(_)) => keepalive.closing(&session, CloseReason::ConnectionError),
                            Err(_) => keepalive.closing(&session, CloseReason::WriteTimeout),
                        }
                    }
                    Check::Wait(wait) => wait,
                };
                deadline.as_mut().reset(Instant::now() + wait);
            }
        }
    }
}

/// The liveness deadlines of one connection, in milliseconds on [`now_ms`]'s clock.
struct Keepalive {
    ping_period: u64,
    pong_wait: u64,
    idle: Option<u64>,
    last_ping: u64,
}

enum Check {
    /// Send a ping now.
    Ping,
    /// Nothing to do; check again after this long.
    Wait(Duration),
}

impl Keepalive {
    fn new(config: &SocketConfig) -> Keepalive {
        Keepalive {
            ping_period: duration_ms(config.ping_period),
            pong_wait: duration_ms(config.pong_wait),
            idle: config.idle_timeout.map(duration_ms),
            last_ping: now_ms(),
        }
    }

    fn first_wait(&self) -> Duration {
        Duration::from_millis(self.ping_period.min(self.idle.unwrap_or(u64::MAX)).max(1))
    }

    /// Closes the session when a deadline passed; says whether a ping is due.
    fn check(&mut self, session: &Session, now: u64) -> Check {
        if session.outbox().is_reader_held() {
            // Our reader is held by backpressure: the client's pongs wait unread, so its
            // silence is ours. Look again a ping period later.
            return Check::Wait(Duration::from_millis(self.ping_period.max(1)));
        }
        if now >= session.last_frame_ms().saturating_add(self.pong_wait) {
            return Check::Wait(self.closing(session, CloseReason::PongTimeout));
        }
        if let Some(idle) = self.idle
            && now >= session.last_message_ms().saturating_add(idle)
        {
            return Check::Wait(self.closing(session, CloseReason::IdleTimeout));
        }
        // Active clients are not pinged: any frame from them proves they are alive.
        if now
            >= session
                .last_frame_ms()
                .max(self.last_ping)
                .saturating_add(self.ping_period)
        {
            self.last_ping = now;
            return Check::Ping;
        }
        Check::Wait(self.next_wait(session, now))
    }

    /// Until the earliest of the pong deadline, the idle deadline and the next ping.
    fn next_wait(&self, session: &Session, now: u64) -> Duration {
        let last_frame = session.last_frame_ms();
        let mut wake = last_frame.saturating_add(self.pong_wait).min(
            last_frame
                .max(self.last_ping)
                .saturating_add(self.ping_period),
        );
        if let Some(idle) = self.idle {
            wake = wake.min(session.last_message_ms().saturating_add(idle));
        }
        Duration::from_millis(wake.saturating_sub(now).max(1))
    }

    /// Starts closing; the outbox now ends with the close, so the deadline can sleep long.
    fn closing(&self, session: &Session, reason: CloseReason) -> Duration {
        session.close(reason);
        Duration::from_secs(3600)
    }
}

/// Writes the frame in `batch` and whatever else is queued (up to a batch, taken from the
/// outbox under one lock), then flushes; `batch` is left empty: one `send` per wake-up for a batch that fits the write buffer. Each
/// frame's write and the flush must each make progress within `write_wait` — a client that
/// reads slowly through a large batch is not mistaken for one that does not read. A timer is
/// armed only when a step cannot finish at once (the common case on a healthy connection
/// costs no timer registration).
async fn write_frames(
    config: &SocketConfig,
    session: &Session,
    sink: &mut SplitSink<WebSocket, Message>,
    batch: &mut Vec<Bytes>,
) -> Result<(), CloseReason> {
    let format = session.format();
    session
        .outbox()
        .take_batch(MAX_FRAMES_PER_FLUSH - batch.len(), batch);
    let wait = config.write_wait;
    let mut bytes = 0;
    let mut written = Some(Ok(()));
    for frame in batch.drain(..) {
        let len = frame.len();
        let message = match format {
            Format::Json => match Utf8Bytes::try_from(frame) {
                Ok(text) => Message::Text(text),
                Err(_) => {
                    // The JSON encoder only produces UTF-8; never send a broken frame.
                    tracing::error!(sid = %session.id(), "dropping a non-UTF-8 JSON frame");
                    continue;
                }
            },
            Format::Protobuf => Message::Binary(frame),
        };
        written = within(wait, sink.feed(message)).await;
        if !matches!(written, Some(Ok(()))) {
            break;
        }
        bytes += len;
    }
    metrics::sent(bytes);
    if matches!(written, Some(Ok(()))) {
        written = within(wait, sink.flush()).await;
    }
    match written {
        Some(Ok(())) => Ok(()),
        Some(Err(error)) => {
            tracing::debug!(sid = %session.id(), error = %error, "WebSocket write failed");
            Err(CloseReason::ConnectionError)
        }
        None => Err(CloseReason::WriteTimeout),
    }
}

/// Runs `step` to completion, or gives up after `wait`; the timer is registered only when the
/// step cannot finish on its first poll.
async fn within<T>(wait: Duration, step: impl Future<Output = T>) -> Option<T> {
    let mut step = std::pin::pin!(step);
    match std::future::poll_fn(|cx| Poll::Ready(step.as_mut().poll(cx))).await {
        Poll::Ready(output) => Some(output),
        Poll::Pending => timeout(wait, step).await.ok(),
    }
}

/// Sends the close frame (when the client should hear why) and closes the sink.
async fn close(
    config: &SocketConfig,
    sink: &mut SplitSink<WebSocket, Message>,
    reason: CloseReason,
) {
    if reason.tells_client() {
        let frame = CloseFrame {
            code: reason.code(),
            reason: Utf8Bytes::from(reason.text().into_owned()),
        };
        let _ = timeout(config.write_wait, sink.send(Message::Close(Some(frame)))).await;
    }
    let _ = timeout(config.write_wait, sink.close()).await;
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
