//! Settings of the WebSocket transport (the `socket.*` keys of the server configuration).

use std::time::Duration;

/// How sockets are read, written and kept alive. Defaults are Nakama's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketConfig {
    /// Largest message a client may send; a bigger one closes the socket with code 1009.
    pub max_message_size_bytes: usize,
    /// Read buffer of each socket, allocated for its whole life: the main per-socket memory.
    pub read_buffer_size_bytes: usize,
    /// Bytes of outgoing frames gathered before a write to the network.
    pub write_buffer_size_bytes: usize,
    /// A ping is sent when nothing arrived from the client for this long.
    pub ping_period: Duration,
    /// The socket is closed when nothing (not even a pong) arrived for this long.
    pub pong_wait: Duration,
    /// Writing one frame (or flushing) that takes longer closes the socket.
    pub write_wait: Duration,
    /// After the server sends a close frame, how long it waits for the client's answer.
    pub close_ack_wait: Duration,
    /// Close a socket whose client sent no message for this long; `None` never.
    pub idle_timeout: Option<Duration>,
}

impl Default for SocketConfig {
    fn default() -> Self {
        SocketConfig {
            max_message_size_bytes: 4096,
            read_buffer_size_bytes: 4096,
            write_buffer_size_bytes: 4096,
            ping_period: Duration::from_millis(15_000),
            pong_wait: Duration::from_millis(25_000),
            write_wait: Duration::from_millis(5_000),
            close_ack_wait: Duration::from_millis(2_000),
            idle_timeout: None,
        }
    }
}
