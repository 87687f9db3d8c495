//! One QUIC connection: the handshake (TLS, then the client's hello with its session token),
//! then a reader (this task) that hands each envelope to the realtime session one at a time,
//! and a writer task that sends the session's outbox by delivery class, runs the link's timers
//! and enforces the idle deadline — the same split as the WebSocket connection, for the same
//! reasons.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use metafi_proto::realtime::Format;
use metafi_quic::quinn::{Connection, Incoming, VarInt};
use metafi_quic::wire::{Welcome, close_code};
use metafi_quic::{Handshake, LinkError, LinkReceiver, LinkSender};
use metafi_realtime::{CloseReason, NextRouted, Session, SessionParams};
use tokio::time::{Instant, timeout};

use super::metrics::{self, Reported};
use super::{QuicConfig, QuicState};
use crate::connection::now_ms;

/// How often a connection's QUIC statistics (losses, RTT) are added to the metrics.
const STATS_EVERY: Duration = Duration::from_secs(5);

/// Runs a connection from its first packet to its end.
pub(crate) async fn run(state: QuicState, incoming: Incoming) {
    let config = state.config.clone();
    let remote = incoming.remote_address();
    let conn = match timeout(config.handshake_timeout, incoming).await {
        Ok(Ok(conn)) => conn,
        Ok(Err(error)) => {
            metrics::rejected("handshake");
            tracing::debug!(%remote, error = %error, "QUIC handshake failed");
            return;
        }
        Err(_) => {
            metrics::rejected("handshake");
            tracing::debug!(%remote, "QUIC handshake timed out");
            return;
        }
    };
    let max_message = config.tuning.max_message_size_bytes;
    let handshake = match Handshake::accept(&conn, config.handshake_timeout, max_message).await {
        Ok(handshake) => handshake,
        Err(error) => {
            metrics::rejected("hello");
            tracing::debug!(%remote, error = %error, "no valid hello on the QUIC control stream");
            let (code, reason) = match error {
                LinkError::Timeout => (
                    close_code::INVALID_ARGUMENT,
                    "no hello within the handshake deadline",
                ),
                _ => (close_code::INVALID_ARGUMENT, "malformed hello"),
            };
            conn.close(VarInt::from_u32(code), reason.as_bytes());
            return;
        }
    };
    let hello = &handshake.hello;
    if hello.token.is_empty() {
        metrics::rejected("token");
        handshake.refuse(
            close_code::UNAUTHENTICATED,
            "Auth token required: send the session token in the hello",
        );
        return;
    }
    let claims = match state.sessions.verify(&hello.token) {
        Ok(claims) => claims,
        Err(error) => {
            metrics::rejected("token");
            handshake.refuse(close_code::UNAUTHENTICATED, &error.client_message());
            return;
        }
    };
    let session = state.realtime.open(SessionParams {
        user_id: claims.user_id,
        username: claims.username,
        vars: claims.vars,
        expires_at: claims.expires_at,
        client_addr: Some(remote),
        // The QUIC hello has no language: Nakama's default.
        lang: None,
        format: Format::Protobuf,
        appear_online: hello.appear_online,
    });
    session.record_message(now_ms());
    let welcome = Welcome {
        session_id: session.id().to_string(),
    };
    let (sender, mut receiver) = match handshake
        .welcome(&welcome, Arc::new(config.tuning.clone()))
        .await
    {
        Ok(link) => link,
        Err(error) => {
            tracing::debug!(sid = %session.id(), error = %error, "QUIC welcome failed");
            state.realtime.end(&session, CloseReason::ConnectionError);
            return;
        }
    };
    metrics::connection_opened();
    tracing::debug!(sid = %session.id(), %remote, "QUIC session opened");
    let mut writer = tokio::spawn(write_loop(
        config.clone(),
        session.clone(),
        sender,
        conn.clone(),
    ));

    let reason = read_loop(&state, &session, &mut receiver, &conn).await;
    state.realtime.end(&session, reason);
    let reason = session.outbox().close_reason().unwrap_or(reason);
    let budget = config.write_wait + config.close_wait + Duration::from_millis(100);
    if timeout(budget, &mut writer).await.is_err() {
        writer.abort();
        conn.close(VarInt::from_u32(u32::from(reason.code())), b"");
    }
    metrics::connection_closed(reason.label());
}

/// Reads envelopes until the connection ends or the session closes; returns why.
async fn read_loop(
    state: &QuicState,
    session: &Arc<Session>,
    receiver: &mut LinkReceiver,
    conn: &Connection,
) -> CloseReason {
    let outbox = session.outbox();
    loop {
        // Backpressure: the next request waits until the client has read enough answers; the
        // time the reader was held does not count as the client's silence.
        if outbox.writable().await {
            session.record_message(now_ms());
        }
        let received = tokio::select! {
            biased;
            () = outbox.closed() => {
                return outbox.close_reason().unwrap_or(CloseReason::Shutdown);
            }
            received = receiver.recv() => received,
        };
        let bytes = match received {
            Some(Ok(bytes)) => bytes,
            Some(Err(LinkError::TooLarge { limit })) => {
                return CloseReason::MessageTooLarge { limit };
            }
            Some(Err(error)) => {
                tracing::debug!(sid = %session.id(), error = %error, "QUIC protocol violation");
                return CloseReason::MalformedMessage;
            }
            None => return closed_by_peer(conn),
        };
        let now = now_ms();
        session.record_message(now);
        let envelope = match Format::Protobuf.decode(&bytes) {
            Ok(envelope) => envelope,
            Err(error) => {
                tracing::debug!(sid = %session.id(), error = %error, "malformed message from client");
                return CloseReason::MalformedMessage;
            }
        };
        if let Err(reason) = Box::pin(state.realtime.handle(session, envelope)).await {
            return reason;
        }
    }
}

/// Why the connection ended, when the receiving side found it gone.
fn closed_by_peer(conn: &Connection) -> CloseReason {
    match conn.close_reason() {
        Some(
            metafi_quic::quinn::ConnectionError::ApplicationClosed(_)
            | metafi_quic::quinn::ConnectionError::LocallyClosed,
        )
        | None => CloseReason::ClientClosed,
        // Timed out (no packet within quic.idle_timeout_ms), reset, or a transport error.
        Some(_) => CloseReason::ConnectionError,
    }
}

/// Sends the outbox by class, runs the link's timers, checks the idle deadline, and closes
/// the connection with the session's reason once the outbox says so.
async fn write_loop(
    config: Arc<QuicConfig>,
    session: Arc<Session>,
    mut sender: LinkSender,
    conn: Connection,
) {
    let outbox = session.outbox();
    let mut reported = Reported::default();
    let mut next_stats = Instant::now() + STATS_EVERY;
    loop {
        let timers = sender.next_deadline();
        let idle = config.idle_timeout.map(|idle| {
            let since = now_ms().saturating_sub(session.last_message_ms());
            Instant::now() + idle.saturating_sub(Duration::from_millis(since))
        });
        let wake = [timers, idle, Some(next_stats)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(next_stats);
        tokio::select! {
            next = outbox.next_routed() => match next {
                NextRouted::Frame(frame, class) => {
                    if let Err(reason) = send(&config, &mut sender, frame, &class).await {
                        session.close(reason);
                    }
                }
                NextRouted::Close(reason) => {
                    if reason.tells_client() {
                        // Deliver what is queued (a goodbye notice) before closing.
                        sender.flush(config.close_wait).await;
                    }
                    reported.report(&conn.stats());
                    let text = reason.text();
                    conn.close(VarInt::from_u32(u32::from(reason.code())), text.as_bytes());
                    return;
                }
            },
            () = tokio::time::sleep_until(wake) => {
                let now = Instant::now();
                if let Err(error) = sender.on_timers(now).await {
                    tracing::debug!(sid = %session.id(), error = %error, "QUIC send failed");
                    session.close(CloseReason::ConnectionError);
                }
                if let Some(idle) = config.idle_timeout
                    && !session.outbox().is_reader_held()
                    && now_ms() >= session.last_message_ms().saturating_add(idle.as_millis() as u64)
                {
                    session.close(CloseReason::IdleTimeout);
                }
                if now >= next_stats {
                    reported.report(&conn.stats());
                    next_stats = now + STATS_EVERY;
                }
            }
            _ = conn.closed() => {
                session.close(closed_by_peer(&conn));
                reported.report(&conn.stats());
                return;
            }
        }
    }
}

async fn send(
    config: &QuicConfig,
    sender: &mut LinkSender,
    frame: Bytes,
    class: &metafi_proto::realtime::DeliveryClass,
) -> Result<(), CloseReason> {
    match timeout(config.write_wait, sender.send(frame, class)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => {
            tracing::debug!(error = %error, "QUIC send failed");
            Err(CloseReason::ConnectionError)
        }
        Err(_) => Err(CloseReason::WriteTimeout),
    }
}
