//! [`LinkError`]: why sending or receiving on a link failed.

use quinn::{ConnectionError, ReadError, WriteError};

use crate::wire::WireError;

/// A link failure. [`LinkError::is_protocol`] tells the peer's fault (close the connection
/// with a reason) from the connection simply going away.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// The connection is closed or lost; the cause says who closed it and why.
    #[error("QUIC connection ended")]
    Connection(#[source] ConnectionError),
    /// A stream was stopped or reset by the peer, or used after it ended.
    #[error("QUIC stream ended by the peer")]
    StreamEnded,
    /// The server refused the 0-RTT data; the client sends it again after the handshake.
    #[error("0-RTT data refused by the server")]
    ZeroRttRejected,
    /// The peer broke the framing rules.
    #[error("protocol violation: {0}")]
    Protocol(&'static str),
    /// A header the wire format does not allow.
    #[error("protocol violation")]
    Wire(#[source] WireError),
    /// A message over the size limit.
    #[error("message larger than {limit} bytes")]
    TooLarge { limit: usize },
    /// The peer does not accept datagrams (a MetaFi peer always does).
    #[error("the peer does not accept QUIC datagrams")]
    NoDatagrams,
    /// A step of the handshake took longer than allowed.
    #[error("no answer within the handshake deadline")]
    Timeout,
}

impl LinkError {
    /// Whether the peer broke the protocol (as opposed to going away).
    pub fn is_protocol(&self) -> bool {
        matches!(
            self,
            LinkError::Protocol(_) | LinkError::Wire(_) | LinkError::TooLarge { .. }
        )
    }
}

impl From<ConnectionError> for LinkError {
    fn from(error: ConnectionError) -> LinkError {
        LinkError::Connection(error)
    }
}

impl From<WriteError> for LinkError {
    fn from(error: WriteError) -> LinkError {
        match error {
            WriteError::ConnectionLost(error) => LinkError::Connection(error),
            WriteError::ZeroRttRejected => LinkError::ZeroRttRejected,
            WriteError::Stopped(_) | WriteError::ClosedStream => LinkError::StreamEnded,
        }
    }
}

impl From<ReadError> for LinkError {
    fn from(error: ReadError) -> LinkError {
        match error {
            ReadError::ConnectionLost(error) => LinkError::Connection(error),
            ReadError::ZeroRttRejected => LinkError::ZeroRttRejected,
            ReadError::Reset(_) | ReadError::ClosedStream => LinkError::StreamEnded,
            ReadError::IllegalOrderedRead => LinkError::Protocol("illegal ordered read"),
        }
    }
}

impl From<WireError> for LinkError {
    fn from(error: WireError) -> LinkError {
        LinkError::Wire(error)
    }
}
