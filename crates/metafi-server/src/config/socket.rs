//! The `[socket]` keys (and `session.single_socket`), checked: where the API and realtime socket
//! listen, the request size, the realtime sessions' limits and the WebSocket transport's settings.

use std::net::IpAddr;

use metafi_realtime::{OutboxLimits, RealtimeConfig};
use metafi_transport::SocketConfig;

use super::check::{Checker, HOUR_MS, Port};
use super::raw::RawSocket;

/// The validated `[socket]` section.
pub(super) struct SocketSettings {
    /// `None` when `socket.address` does not parse (a problem is recorded).
    pub ip: Option<IpAddr>,
    pub port: Port,
    pub server_key: String,
    pub max_request_size_bytes: usize,
    pub realtime: RealtimeConfig,
    pub transport: SocketConfig,
}

pub(super) fn validate(s: &RawSocket, single_socket: bool, check: &mut Checker) -> SocketSettings {
    let port = check.port("socket.port", s.port);
    let max_request_size_bytes = check.count(
        "socket.max_request_size_bytes",
        s.max_request_size_bytes,
        64,
        64 << 20,
    );
    if s.server_key.is_empty() {
        check.problem("socket.server_key: must not be empty");
    }
    let transport = SocketConfig {
        max_message_size_bytes: check.count(
            "socket.max_message_size_bytes",
            s.max_message_size_bytes,
            64,
            64 << 20,
        ),
        read_buffer_size_bytes: check.count(
            "socket.read_buffer_size_bytes",
            s.read_buffer_size_bytes,
            64,
            16 << 20,
        ),
        write_buffer_size_bytes: check.count(
            "socket.write_buffer_size_bytes",
            s.write_buffer_size_bytes,
            0,
            16 << 20,
        ),
        ping_period: check.millis("socket.ping_period_ms", s.ping_period_ms, 10, HOUR_MS),
        pong_wait: check.millis("socket.pong_wait_ms", s.pong_wait_ms, 20, HOUR_MS),
        write_wait: check.millis("socket.write_wait_ms", s.write_wait_ms, 10, HOUR_MS),
        close_ack_wait: check.millis("socket.close_ack_wait_ms", s.close_ack_wait_ms, 0, HOUR_MS),
        idle_timeout: Some(check.millis(
            "socket.idle_timeout_ms",
            s.idle_timeout_ms,
            0,
            24 * HOUR_MS,
        ))
        .filter(|idle| !idle.is_zero()),
    };
    let realtime = RealtimeConfig {
        outbox: OutboxLimits {
            max_bytes: check.count(
                "socket.outgoing_queue_bytes",
                s.outgoing_queue_bytes,
                4096,
                1 << 30,
            ),
            max_messages: check.count(
                "socket.outgoing_queue_size",
                s.outgoing_queue_size,
                1,
                1 << 20,
            ),
            max_age: check.millis(
                "socket.outgoing_queue_max_age_ms",
                s.outgoing_queue_max_age_ms,
                100,
                HOUR_MS,
            ),
        },
        single_socket,
        max_channels_per_session: check.count(
            "socket.max_channels_per_session",
            s.max_channels_per_session,
            1,
            1 << 16,
        ),
        max_followed_users: check.count(
            "socket.max_followed_users",
            s.max_followed_users,
            0,
            1 << 20,
        ),
    };
    if s.ping_period_ms >= s.pong_wait_ms {
        check.problem(format!(
            "socket.ping_period_ms = {} must be less than socket.pong_wait_ms = {}, or live clients would time out before being pinged",
            s.ping_period_ms, s.pong_wait_ms
        ));
    }
    SocketSettings {
        ip: check.ip("socket.address", &s.address),
        port,
        server_key: s.server_key.clone(),
        max_request_size_bytes,
        realtime,
        transport,
    }
}
