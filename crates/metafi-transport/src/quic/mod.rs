//! The QUIC listener: the same realtime sessions as `/ws`, over QUIC with per-message delivery
//! classes (`docs/TRANSPORT.md`). A client opens the control stream, sends its session token
//! in a `Hello`, and gets a `Welcome` or a close with code 4016 and the reason. After that the
//! connection is a session like a WebSocket's: envelopes (protobuf) in, the outbox out — each
//! message by its delivery class ([`metafi_quic::LinkSender`]).
//!
//! [`QuicServer::serve`] accepts until its stop future completes; sessions are closed by
//! [`crate::close_all`] (each connection closes with code 1001 "server shutting down" after its
//! queued messages are delivered), then [`QuicServer::finish`] waits for the connections to end.

mod connection;
mod metrics;

use std::future::Future;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use metafi_core::Sessions;
use metafi_quic::cert::{CertError, ServerCert};
use metafi_quic::quinn::{Endpoint, VarInt};
use metafi_quic::{Tuning, wire};
use metafi_realtime::Realtime;

/// Settings of the QUIC transport (`[quic]`, plus the `socket.*` limits it shares with `/ws`).
#[derive(Debug, Clone, PartialEq)]
pub struct QuicConfig {
    /// The link's knobs (also the largest message a client may send).
    pub tuning: Tuning,
    /// Longest wait for the TLS handshake and then for the client's hello.
    pub handshake_timeout: Duration,
    /// Connection attempts being handshaken at once, TLS sessions kept for resumption.
    pub limits: metafi_quic::ServerLimits,
    /// A send to QUIC (waiting for stream credit) that takes longer closes the session.
    pub write_wait: Duration,
    /// On close, how long queued messages may take to be acknowledged before the connection
    /// is closed anyway.
    pub close_wait: Duration,
    /// Close a session that sent no message for this long (`socket.idle_timeout_ms`).
    pub idle_timeout: Option<Duration>,
}

impl Default for QuicConfig {
    fn default() -> Self {
        QuicConfig {
            tuning: Tuning::default(),
            handshake_timeout: Duration::from_secs(120),
            limits: metafi_quic::ServerLimits::default(),
            write_wait: Duration::from_secs(5),
            close_wait: Duration::from_secs(2),
            idle_timeout: None,
        }
    }
}

/// What a QUIC connection needs; cheap to clone.
#[derive(Debug, Clone)]
pub struct QuicState {
    pub realtime: Arc<Realtime>,
    /// Verifies session tokens.
    pub sessions: Arc<Sessions>,
    pub config: Arc<QuicConfig>,
}

/// A QUIC endpoint serving realtime sessions.
#[derive(Debug)]
pub struct QuicServer {
    endpoint: Endpoint,
}

impl QuicServer {
    /// A server on an already bound UDP socket, presenting `cert`.
    pub fn new(
        socket: UdpSocket,
        cert: &ServerCert,
        config: &QuicConfig,
    ) -> Result<QuicServer, CertError> {
        let endpoint = metafi_quic::server_endpoint(socket, cert, &config.tuning, config.limits)?;
        Ok(QuicServer { endpoint })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.endpoint.local_addr()
    }

    /// Accepts connections until `stop` completes; each runs as its own task.
    pub async fn serve(&self, state: QuicState, stop: impl Future<Output = ()>) {
        let mut stop = std::pin::pin!(stop);
        loop {
            let incoming = tokio::select! {
                () = &mut stop => break,
                incoming = self.endpoint.accept() => incoming,
            };
            let Some(incoming) = incoming else { break };
            tokio::spawn(connection::run(state.clone(), incoming));
        }
        // No new connections; the open ones close with their sessions.
        self.endpoint.set_server_config(None);
    }

    /// Waits up to `grace` for open connections to close, then closes the rest and the
    /// endpoint.
    pub async fn finish(&self, grace: Duration) {
        let _ = tokio::time::timeout(grace, self.endpoint.wait_idle()).await;
        self.endpoint.close(
            VarInt::from_u32(wire::close_code::GOING_AWAY),
            b"server shutting down",
        );
    }
}
