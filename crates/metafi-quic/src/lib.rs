//! MetaFi's QUIC link: Nakama realtime envelopes (protobuf) over one QUIC connection, each
//! delivered by the class its sender chose — reliable-ordered within a named stream,
//! reliable-unordered, unreliable, unreliable-latest (`docs/TRANSPORT.md`). Shared by the
//! server (`metafi-transport`) and the client (`metafi-client`), so both ends speak exactly the
//! same bytes.
//!
//! A connection is a [`LinkSender`] and a [`LinkReceiver`] after a two-frame handshake on the
//! control stream: the client's [`Hello`] (session token) and the server's
//! [`Welcome`]. [`Handshake`] is the server's side, [`Connector`] the client's
//! (with TLS resumption and 0-RTT). [`Tuning`] holds the knobs, [`cert`] the certificates and
//! pinning. The bookkeeping of the classes (sequence numbers, de-duplication, bounded tables) is
//! sans-IO and unit-tested; `tests/classes.rs` checks each guarantee over a lossy link
//! (`lossy::LossyProxy`, feature `test-util`).
//!
//! Must not depend on: realtime sessions, the match engine, storage, HTTP — it carries opaque
//! envelopes. Key types: [`LinkSender`], [`LinkReceiver`], [`Handshake`], [`Connector`],
//! [`Tuning`], [`cert::ServerCert`], [`cert::Trust`], [`LinkError`].

mod books;
pub mod cert;
mod error;
#[cfg(feature = "test-util")]
pub mod lossy;
mod metrics;
mod receiver;
mod sender;
mod tuning;
pub mod wire;

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use prost::Message as _;
use quinn::{Connection, Endpoint, RecvStream, SendStream, VarInt};

pub use error::LinkError;
pub use metafi_proto::realtime::{DeliveryClass, Lane};
pub use quinn;
pub use receiver::LinkReceiver;
pub use sender::LinkSender;
pub use tuning::{Congestion, Tuning};

use crate::cert::{CertError, ServerCert, Trust};
use crate::wire::{Hello, Welcome, close_code};

/// Which end of a link, for metric labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Server,
    Client,
}

impl Side {
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Server => "server",
            Side::Client => "client",
        }
    }
}

/// Server limits beyond the link's knobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Connection attempts handshaken at once; more are refused.
    pub max_incoming: usize,
    /// TLS sessions remembered for resumption with 0-RTT (each ticket is single-use, which is
    /// what makes 0-RTT data safe from replay); about 300 bytes each.
    pub session_cache: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_incoming: 4096,
            session_cache: 4096,
        }
    }
}

/// A server endpoint on an already bound UDP socket (tests bind port 0).
pub fn server_endpoint(
    socket: UdpSocket,
    cert: &ServerCert,
    tuning: &Tuning,
    limits: ServerLimits,
) -> Result<Endpoint, CertError> {
    let mut config = cert.server_config(tuning, limits.session_cache)?;
    config.max_incoming(limits.max_incoming.max(1));
    let runtime = quinn::default_runtime().ok_or_else(|| CertError::Write {
        path: std::path::PathBuf::from("<udp socket>"),
        source: std::io::Error::other("no async runtime"),
    })?;
    Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(config),
        socket,
        runtime,
    )
    .map_err(|source| CertError::Write {
        path: std::path::PathBuf::from("<udp socket>"),
        source,
    })
}

/// The server's side of the handshake: the client's control stream and its [`Hello`].
#[derive(Debug)]
pub struct Handshake {
    pub hello: Hello,
    conn: Connection,
    send: SendStream,
    recv: RecvStream,
}

impl Handshake {
    /// Waits (at most `deadline`) for the client to open the control stream and say hello.
    pub async fn accept(
        conn: &Connection,
        deadline: Duration,
        max_message: usize,
    ) -> Result<Handshake, LinkError> {
        let accept = async {
            let (send, mut recv) = conn.accept_bi().await?;
            let Some(hello) = receiver::read_frame(&mut recv, max_message).await? else {
                return Err(LinkError::Protocol("control stream ended before hello"));
            };
            let hello =
                Hello::decode(hello).map_err(|_| LinkError::Protocol("hello is not protobuf"))?;
            Ok(Handshake {
                hello,
                conn: conn.clone(),
                send,
                recv,
            })
        };
        tokio::time::timeout(deadline, accept)
            .await
            .map_err(|_| LinkError::Timeout)?
    }

    /// Accepts the client: sends `welcome` and starts the link.
    pub async fn welcome(
        self,
        welcome: &Welcome,
        tuning: Arc<Tuning>,
    ) -> Result<(LinkSender, LinkReceiver), LinkError> {
        let receiver = receiver::spawn(self.conn.clone(), self.recv, &tuning, Side::Server);
        let mut sender = LinkSender::new(self.conn, self.send, tuning, Side::Server);
        sender.send_handshake(&welcome.encode_to_vec()).await?;
        Ok((sender, receiver))
    }

    /// Refuses the client: closes the connection with `code` and `reason` (what it is told).
    pub fn refuse(self, code: u32, reason: &str) {
        self.conn.close(VarInt::from_u32(code), reason.as_bytes());
    }
}

/// A client endpoint: one UDP socket and one TLS session cache, shared by every connection it
/// opens, so reconnecting resumes the TLS session and sends its hello as 0-RTT data.
#[derive(Debug, Clone)]
pub struct Connector {
    endpoint: Endpoint,
    server: SocketAddr,
    server_name: String,
    tuning: Arc<Tuning>,
}

/// A connected client link.
#[derive(Debug)]
pub struct ClientLink {
    pub welcome: Welcome,
    pub sender: LinkSender,
    pub receiver: LinkReceiver,
    /// Whether the hello went out as 0-RTT data (a resumed session) and was accepted.
    pub zero_rtt: bool,
}

impl Connector {
    /// A connector from `bind` (e.g. `0.0.0.0:0`) to the server at `server`.
    pub fn new(
        bind: SocketAddr,
        server: SocketAddr,
        server_name: &str,
        trust: &Trust,
        tuning: Tuning,
    ) -> Result<Connector, ConnectError> {
        let mut endpoint = Endpoint::client(bind).map_err(ConnectError::Bind)?;
        endpoint.set_default_client_config(cert::client_config(trust, &tuning)?);
        Ok(Connector {
            endpoint,
            server,
            server_name: server_name.to_owned(),
            tuning: Arc::new(tuning),
        })
    }

    /// The local address of the connector's UDP socket.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.endpoint.local_addr()
    }

    /// Connects, says hello with `hello`, and waits for the welcome (or the refusal).
    pub async fn connect(&self, hello: &Hello) -> Result<ClientLink, ConnectError> {
        let connecting = self
            .endpoint
            .connect(self.server, &self.server_name)
            .map_err(|e| ConnectError::Refused {
                code: 0,
                reason: e.to_string(),
            })?;
        let hello = hello.encode_to_vec();
        match connecting.into_0rtt() {
            Ok((conn, accepted)) => {
                let early = self.open_control(&conn, &hello).await;
                if accepted.await
                    && let Ok((send, recv)) = early
                {
                    return self.finish(conn, send, recv, true).await;
                }
                // 0-RTT refused: the early stream is gone; say hello again.
                let (send, recv) = self.open_control(&conn, &hello).await?;
                self.finish(conn, send, recv, false).await
            }
            Err(connecting) => {
                let conn = connecting.await.map_err(ConnectError::from_connection)?;
                let (send, recv) = self.open_control(&conn, &hello).await?;
                self.finish(conn, send, recv, false).await
            }
        }
    }

    async fn open_control(
        &self,
        conn: &Connection,
        hello: &[u8],
    ) -> Result<(SendStream, RecvStream), ConnectError> {
        let (mut send, recv) = conn
            .open_bi()
            .await
            .map_err(ConnectError::from_connection)?;
        send.write_all(&wire::frame(hello))
            .await
            .map_err(|e| ConnectError::from_link(LinkError::from(e), conn))?;
        Ok((send, recv))
    }

    async fn finish(
        &self,
        conn: Connection,
        send: SendStream,
        mut recv: RecvStream,
        zero_rtt: bool,
    ) -> Result<ClientLink, ConnectError> {
        let welcome = match receiver::read_frame(&mut recv, self.tuning.max_message_size_bytes)
            .await
        {
            Ok(Some(bytes)) => Welcome::decode(bytes)
                .map_err(|_| ConnectError::Link(LinkError::Protocol("welcome is not protobuf")))?,
            Ok(None) => {
                return Err(ConnectError::from_link(
                    LinkError::Protocol("control stream ended before welcome"),
                    &conn,
                ));
            }
            Err(error) => return Err(ConnectError::from_link(error, &conn)),
        };
        let receiver = receiver::spawn(conn.clone(), recv, &self.tuning, Side::Client);
        let sender = LinkSender::new(conn, send, self.tuning.clone(), Side::Client);
        Ok(ClientLink {
            welcome,
            sender,
            receiver,
            zero_rtt,
        })
    }
}

/// Why a client could not connect.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot bind the client's UDP socket")]
    Bind(#[source] std::io::Error),
    #[error("TLS settings")]
    Cert(#[from] CertError),
    /// The server closed the connection with an application code: a refusal (4016: the
    /// session token) or a session close.
    #[error("server refused the connection ({code}): {reason}")]
    Refused { code: u32, reason: String },
    #[error("QUIC handshake failed")]
    Connection(#[source] quinn::ConnectionError),
    #[error("QUIC link failed")]
    Link(#[source] LinkError),
}

impl ConnectError {
    fn from_connection(error: quinn::ConnectionError) -> ConnectError {
        match error {
            quinn::ConnectionError::ApplicationClosed(close) => ConnectError::Refused {
                code: u32::try_from(close.error_code.into_inner()).unwrap_or(u32::MAX),
                reason: String::from_utf8_lossy(&close.reason).into_owned(),
            },
            other => ConnectError::Connection(other),
        }
    }

    /// A link error during the handshake; if the server closed the connection, its reason.
    fn from_link(error: LinkError, conn: &Connection) -> ConnectError {
        match conn.close_reason() {
            Some(reason) => ConnectError::from_connection(reason),
            None => match error {
                LinkError::Connection(error) => ConnectError::from_connection(error),
                other => ConnectError::Link(other),
            },
        }
    }

    /// Whether the server refused the session token.
    pub fn is_unauthenticated(&self) -> bool {
        matches!(self, ConnectError::Refused { code, .. } if *code == close_code::UNAUTHENTICATED)
    }
}
