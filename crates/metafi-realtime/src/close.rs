//! Why a session ends, and what the client is told.

use std::borrow::Cow;

/// Which bound of the outgoing queue a client that does not read went over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueLimit {
    /// Bytes queued (`socket.outgoing_queue_bytes`). `u32` keeps [`CloseReason`] (held by
    /// every outbox) at 16 bytes.
    Bytes(u32),
    /// Messages queued (`socket.outgoing_queue_size`).
    Messages(u32),
}

/// The reason a session closed. Transports turn it into their own close signal (a WebSocket
/// close frame with [`CloseReason::code`] and [`CloseReason::text`]); metrics label it with
/// [`CloseReason::label`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The client closed the socket or the connection ended.
    ClientClosed,
    /// Reading or writing failed.
    ConnectionError,
    /// Nothing arrived from the client (not even a pong) within `socket.pong_wait_ms`.
    PongTimeout,
    /// No message arrived from the client within `socket.idle_timeout_ms`.
    IdleTimeout,
    /// A write did not complete within `socket.write_wait_ms`.
    WriteTimeout,
    /// The client does not read: its outgoing queue went over `limit`.
    OutgoingQueueFull { limit: QueueLimit },
    /// The client does not read: queued messages waited `limit_ms` while the writer could
    /// take none (`socket.outgoing_queue_max_age_ms`).
    OutgoingQueueStalled { limit_ms: u64 },
    /// The client broke the WebSocket protocol (an unmasked frame, a reserved opcode or
    /// reserved bits, a bad fragment or control frame).
    ProtocolViolation,
    /// The client sent a message over `limit` bytes.
    MessageTooLarge { limit: usize },
    /// A binary frame on a JSON socket or a text frame on a protobuf socket.
    WrongFrameType,
    /// The client sent bytes that are not an envelope.
    MalformedMessage,
    /// The client sent an envelope without a message, or one the server never accepts.
    UnrecognizedMessage,
    /// A newer socket of the same user replaced this one (`session.single_socket`).
    SingleSocket,
    /// Server code disconnected the session (`nk.session_disconnect`); its matches see it
    /// leave with `presence_reason`.
    ServerDisconnect {
        presence_reason: metafi_match::PresenceReason,
    },
    /// The server is shutting down.
    Shutdown,
}

impl CloseReason {
    /// The WebSocket close code (RFC 6455 section 7.4.1).
    pub fn code(&self) -> u16 {
        match self {
            CloseReason::ClientClosed
            | CloseReason::IdleTimeout
            | CloseReason::SingleSocket
            | CloseReason::ServerDisconnect { .. } => 1000,
            CloseReason::PongTimeout | CloseReason::WriteTimeout | CloseReason::Shutdown => 1001,
            CloseReason::WrongFrameType => 1003,
            CloseReason::MalformedMessage => 1007,
            CloseReason::ProtocolViolation => 1002,
            CloseReason::OutgoingQueueFull { .. }
            | CloseReason::OutgoingQueueStalled { .. }
            | CloseReason::UnrecognizedMessage => 1008,
            CloseReason::MessageTooLarge { .. } => 1009,
            CloseReason::ConnectionError => 1011,
        }
    }

    /// What the client is told (at most 123 bytes, the limit of a close frame's reason).
    pub fn text(&self) -> Cow<'static, str> {
        match self {
            CloseReason::ClientClosed => "closed by the client".into(),
            CloseReason::ConnectionError => "connection error".into(),
            CloseReason::PongTimeout => "no answer to pings within socket.pong_wait_ms".into(),
            CloseReason::IdleTimeout => "idle: no message within socket.idle_timeout_ms".into(),
            CloseReason::WriteTimeout => "write not completed within socket.write_wait_ms".into(),
            CloseReason::OutgoingQueueFull {
                limit: QueueLimit::Bytes(limit),
            } => format!(
                "outgoing queue full: client not reading, over {limit} bytes queued (socket.outgoing_queue_bytes)"
            )
            .into(),
            CloseReason::OutgoingQueueFull {
                limit: QueueLimit::Messages(limit),
            } => format!(
                "outgoing queue full: client not reading, over {limit} messages queued (socket.outgoing_queue_size)"
            )
            .into(),
            CloseReason::OutgoingQueueStalled { limit_ms } => format!(
                "client not reading: nothing written for {limit_ms} ms (socket.outgoing_queue_max_age_ms)"
            )
            .into(),
            CloseReason::ProtocolViolation => {
                "WebSocket protocol error: send masked frames with known opcodes (RFC 6455)".into()
            }
            CloseReason::MessageTooLarge { limit } => format!(
                "message too large: limit is {limit} bytes (socket.max_message_size_bytes)"
            )
            .into(),
            CloseReason::WrongFrameType => "received unexpected WebSocket message type".into(),
            CloseReason::MalformedMessage => "received malformed payload".into(),
            CloseReason::UnrecognizedMessage => "received unrecognized message".into(),
            CloseReason::SingleSocket => {
                "server-side session disconnect: a newer socket of this user replaced it".into()
            }
            CloseReason::ServerDisconnect { .. } => "server-side session disconnect".into(),
            CloseReason::Shutdown => "server shutting down".into(),
        }
    }

    /// A fixed metric label.
    pub fn label(&self) -> &'static str {
        match self {
            CloseReason::ClientClosed => "client_closed",
            CloseReason::ConnectionError => "connection_error",
            CloseReason::PongTimeout => "pong_timeout",
            CloseReason::IdleTimeout => "idle_timeout",
            CloseReason::WriteTimeout => "write_timeout",
            CloseReason::OutgoingQueueFull { .. } => "outgoing_queue_full",
            CloseReason::OutgoingQueueStalled { .. } => "outgoing_queue_stalled",
            CloseReason::ProtocolViolation => "protocol_violation",
            CloseReason::MessageTooLarge { .. } => "message_too_large",
            CloseReason::WrongFrameType => "wrong_frame_type",
            CloseReason::MalformedMessage => "malformed_message",
            CloseReason::UnrecognizedMessage => "unrecognized_message",
            CloseReason::SingleSocket => "single_socket",
            CloseReason::ServerDisconnect { .. } => "server_disconnect",
            CloseReason::Shutdown => "shutdown",
        }
    }

    /// Whether the client should be sent a close frame: not when it closed or vanished.
    pub fn tells_client(&self) -> bool {
        !matches!(
            self,
            CloseReason::ClientClosed | CloseReason::ConnectionError
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_fit_a_close_frame() {
        for reason in [
            CloseReason::ClientClosed,
            CloseReason::ConnectionError,
            CloseReason::PongTimeout,
            CloseReason::IdleTimeout,
            CloseReason::WriteTimeout,
            CloseReason::OutgoingQueueFull {
                limit: QueueLimit::Bytes(u32::MAX),
            },
            CloseReason::OutgoingQueueFull {
                limit: QueueLimit::Messages(u32::MAX),
            },
            CloseReason::OutgoingQueueStalled { limit_ms: u64::MAX },
            CloseReason::ProtocolViolation,
            CloseReason::MessageTooLarge { limit: usize::MAX },
            CloseReason::WrongFrameType,
            CloseReason::MalformedMessage,
            CloseReason::UnrecognizedMessage,
            CloseReason::SingleSocket,
            CloseReason::ServerDisconnect {
                presence_reason: metafi_match::PresenceReason::Leave,
            },
            CloseReason::Shutdown,
        ] {
            assert!(reason.text().len() <= 123, "{reason:?}: {}", reason.text());
        }
    }
}
