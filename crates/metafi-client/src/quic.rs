//! The realtime socket over QUIC (MetaFi's transport, `docs/TRANSPORT.md`): the same
//! [`Socket`] and [`Events`] as over WebSocket, protobuf envelopes, and every delivery class —
//! [`Socket::send_match_data`] with a [`DeliveryClass`].
//!
//! A [`QuicConnector`] is one UDP socket and one TLS session cache: open many connections
//! through one connector and reconnects resume their TLS session and send the hello as 0-RTT
//! data, which keeps handshakes small on thin links.

use std::net::SocketAddr;

use bytes::Bytes;
use metafi_proto::realtime::DeliveryClass;
use metafi_quic::wire::{Hello, close_code};
use metafi_quic::{ConnectError, Connector, LinkError, LinkReceiver, LinkSender};

pub use metafi_quic::Tuning as QuicTuning;
pub use metafi_quic::cert::{Fingerprint, Trust as QuicTrust};

use crate::ClientError;
use crate::socket::{Events, Format, Socket, SocketConfig, Transport};

/// Where and how to connect over QUIC.
#[derive(Debug, Clone)]
pub struct QuicConfig {
    /// The server's QUIC address (UDP; `quic.port`, 7352 by default).
    pub server: SocketAddr,
    /// The TLS server name (not checked when pinning a fingerprint).
    pub server_name: String,
    /// A pinned certificate fingerprint (the server logs it at start and writes it to
    /// `<data_dir>/quic/fingerprint.txt`) or CA certificates.
    pub trust: QuicTrust,
    /// Local UDP address of the connector (choose an interface or a network namespace's
    /// address; port 0 picks one).
    pub bind: SocketAddr,
    /// The link's knobs; the same names as the server's `[quic]` keys.
    pub tuning: QuicTuning,
}

impl QuicConfig {
    /// A config for `server` trusting the certificate with `fingerprint`, default knobs.
    pub fn pinned(server: SocketAddr, fingerprint: Fingerprint) -> QuicConfig {
        let bind = if server.is_ipv4() {
            SocketAddr::from(([0, 0, 0, 0], 0))
        } else {
            SocketAddr::from(([0u16; 8], 0))
        };
        QuicConfig {
            server,
            server_name: "localhost".into(),
            trust: QuicTrust::Fingerprint(fingerprint),
            bind,
            tuning: QuicTuning::default(),
        }
    }
}

/// Opens QUIC realtime sockets to one server. Cheap to clone (clones share the UDP socket and
/// the TLS session cache).
#[derive(Debug, Clone)]
pub struct QuicConnector {
    connector: Connector,
}

impl QuicConnector {
    /// Binds the local UDP socket; nothing is sent yet.
    pub fn new(config: &QuicConfig) -> Result<QuicConnector, ClientError> {
        let connector = Connector::new(
            config.bind,
            config.server,
            &config.server_name,
            &config.trust,
            config.tuning.clone(),
        )
        .map_err(connect_error)?;
        Ok(QuicConnector { connector })
    }

    /// The local UDP address.
    pub fn local_addr(&self) -> Result<SocketAddr, ClientError> {
        self.connector
            .local_addr()
            .map_err(|source| ClientError::Connect { source })
    }

    /// Connects as the session of `token`. A refused token is [`ClientError::Api`] with
    /// status 401 and code 16, as over WebSocket. `config.format` is ignored: QUIC carries
    /// protobuf envelopes.
    pub async fn connect(
        &self,
        token: &str,
        config: &SocketConfig,
    ) -> Result<(Socket, Events), ClientError> {
        let hello = Hello {
            token: token.to_owned(),
            appear_online: config.appear_online,
            lang: "en".into(),
        };
        let link = tokio::time::timeout(config.timeout, self.connector.connect(&hello))
            .await
            .map_err(|_| ClientError::Timeout {
                timeout: config.timeout,
            })?
            .map_err(connect_error)?;
        let conn = link.sender.connection().clone();
        let transport = QuicTransport {
            sender: link.sender,
            receiver: link.receiver,
            conn,
        };
        let config = SocketConfig {
            format: Format::Protobuf,
            ..config.clone()
        };
        Ok(Socket::over_session(
            transport,
            &config,
            Some(link.welcome.session_id),
        ))
    }
}

/// Envelopes over a QUIC link, each by its delivery class.
#[derive(Debug)]
pub struct QuicTransport {
    sender: LinkSender,
    receiver: LinkReceiver,
    conn: metafi_quic::quinn::Connection,
}

impl Transport for QuicTransport {
    async fn send(&mut self, frame: Bytes) -> Result<(), ClientError> {
        self.send_class(frame, &DeliveryClass::default_stream())
            .await
    }

    async fn send_class(&mut self, frame: Bytes, class: &DeliveryClass) -> Result<(), ClientError> {
        let sent = self.sender.send(frame, class).await;
        sent.map_err(|e| self.link_error(e))
    }

    async fn recv(&mut self) -> Result<Option<Bytes>, ClientError> {
        match self.receiver.recv().await {
            Some(Ok(bytes)) => Ok(Some(bytes)),
            Some(Err(e)) => Err(self.link_error(e)),
            None => Err(self.closed()),
        }
    }

    fn next_deadline(&self) -> Option<tokio::time::Instant> {
        self.sender.next_deadline()
    }

    async fn on_timers(&mut self) -> Result<(), ClientError> {
        let done = self.sender.on_timers(tokio::time::Instant::now()).await;
        done.map_err(|e| self.link_error(e))
    }

    async fn close(&mut self) {
        self.sender.flush(std::time::Duration::from_secs(1)).await;
        self.conn.close(
            metafi_quic::quinn::VarInt::from_u32(close_code::NORMAL),
            b"closed by the client",
        );
    }
}

impl QuicTransport {
    /// The server's close reason if it closed the connection, else the link error.
    fn link_error(&self, error: LinkError) -> ClientError {
        if self.conn.close_reason().is_some() {
            return self.closed();
        }
        ClientError::Quic {
            source: Box::new(error),
        }
    }

    fn closed(&self) -> ClientError {
        let reason = match self.conn.close_reason() {
            Some(metafi_quic::quinn::ConnectionError::ApplicationClosed(close)) => format!(
                "{} ({})",
                String::from_utf8_lossy(&close.reason),
                close.error_code
            ),
            Some(other) => other.to_string(),
            None => "the connection closed".to_owned(),
        };
        ClientError::Closed { reason }
    }
}

fn connect_error(error: ConnectError) -> ClientError {
    match error {
        ConnectError::Refused { code, reason } if code == close_code::UNAUTHENTICATED => {
            ClientError::Api {
                status: 401,
                code: 16,
                message: reason,
            }
        }
        ConnectError::Refused { code, reason } => ClientError::Closed {
            reason: format!("{reason} ({code})"),
        },
        ConnectError::Bind(source) => ClientError::Connect { source },
        other => ClientError::Quic {
            source: Box::new(other),
        },
    }
}
