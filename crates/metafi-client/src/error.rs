//! `ClientError`: everything a call can fail with, and a short stable `kind` per failure so a
//! load tool can count errors by kind without looking at message text.

use std::borrow::Cow;
use std::io;
use std::time::Duration;

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server address could not be parsed or resolved.
    #[error("invalid server address {address:?}: {reason}")]
    Address { address: String, reason: String },
    /// The TCP connection could not be opened.
    #[error("cannot connect to the server")]
    Connect {
        #[source]
        source: io::Error,
    },
    /// The HTTP exchange failed below the application (connection reset, malformed response).
    #[error("HTTP exchange failed")]
    Http {
        #[source]
        source: hyper::Error,
    },
    /// The server answered with Nakama's error body (or a non-2xx status without one).
    #[error("server answered HTTP {status}, code {code}: {message}")]
    Api {
        status: u16,
        code: i32,
        message: String,
    },
    /// The answer was not what the API promises.
    #[error("cannot decode the server's answer")]
    Decode {
        #[source]
        source: serde_json::Error,
    },
    /// The answer did not arrive in time.
    #[error("no answer within {timeout:?}")]
    Timeout { timeout: Duration },
    /// The WebSocket handshake or a frame failed.
    #[error("realtime socket failed")]
    WebSocket {
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The realtime socket is closed; `reason` is the close frame's text, if any.
    #[error("realtime socket closed: {reason}")]
    Closed { reason: String },
    /// The server answered a socket request with an error envelope.
    #[error("server answered code {code}: {message}")]
    Realtime { code: i32, message: String },
    /// The QUIC connection or link failed (handshake, TLS, protocol).
    #[error("QUIC transport failed")]
    Quic {
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An answer of an unexpected type arrived for a request.
    #[error("unexpected answer: {what}")]
    Unexpected { what: String },
}

impl ClientError {
    /// A short stable label for counting errors by kind: `connect`, `http`, `timeout`,
    /// `status 409`, `code 5`, …
    pub fn kind(&self) -> Cow<'static, str> {
        match self {
            ClientError::Address { .. } => "address".into(),
            ClientError::Connect { source } => match source.kind() {
                io::ErrorKind::ConnectionRefused => "connect refused".into(),
                io::ErrorKind::AddrNotAvailable | io::ErrorKind::AddrInUse => {
                    "connect no local port".into()
                }
                _ if source.raw_os_error() == Some(24) => "connect too many open files".into(),
                _ => "connect".into(),
            },
            ClientError::Http { source } if source.is_incomplete_message() => {
                "http closed early".into()
            }
            ClientError::Http { .. } => "http".into(),
            ClientError::Api { status, .. } => format!("status {status}").into(),
            ClientError::Decode { .. } => "decode".into(),
            ClientError::Timeout { .. } => "timeout".into(),
            ClientError::WebSocket { .. } => "websocket".into(),
            ClientError::Quic { .. } => "quic".into(),
            ClientError::Closed { .. } => "socket closed".into(),
            ClientError::Realtime { code, .. } => format!("socket code {code}").into(),
            ClientError::Unexpected { .. } => "unexpected answer".into(),
        }
    }
}
