//! The `[quic]` keys, checked and turned into the QUIC transport's settings.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use metafi_quic::wire::{KEY_SPACE, LANE_SPACE};
use metafi_quic::{Congestion, ServerLimits, Tuning};
use metafi_transport::quic::QuicConfig;

use super::check::{Checker, HOUR_MS};
use super::raw::RawQuic;
use super::socket::SocketSettings;

/// Where the QUIC listener's certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertSource {
    /// Self-signed, generated on first start into this directory and reused.
    Generated { dir: PathBuf },
    /// The operator's PEM files.
    Files { cert: PathBuf, key: PathBuf },
}

/// The validated `[quic]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct QuicSettings {
    pub listen: SocketAddr,
    pub cert: CertSource,
    pub transport: QuicConfig,
}

/// `None` when QUIC is disabled. The port -1 follows `socket.port` (`socket_port` as written),
/// an empty address `socket.address`; the socket's write wait, idle timeout and message size
/// apply to QUIC too.
pub(super) fn validate(
    q: &RawQuic,
    socket: &SocketSettings,
    socket_port: i64,
    data_dir: &Path,
    check: &mut Checker,
) -> Option<QuicSettings> {
    let handshake_timeout = check.millis(
        "quic.handshake_timeout_ms",
        q.handshake_timeout_ms,
        100,
        HOUR_MS,
    );
    let limits = ServerLimits {
        max_incoming: check.count("quic.max_incoming", q.max_incoming, 1, 1 << 20),
        session_cache: check.count("quic.session_cache", q.session_cache, 1, 1 << 22),
    };
    let close_wait = check.millis("quic.close_wait_ms", q.close_wait_ms, 0, HOUR_MS);
    let receive_queue = check.count("quic.receive_queue", q.receive_queue, 1, 1 << 20);
    let initial_rtt = check.millis("quic.initial_rtt_ms", q.initial_rtt_ms, 1, 60_000);
    let max_ack_delay = check.millis("quic.max_ack_delay_ms", q.max_ack_delay_ms, 0, 16_383);
    let ack_eliciting_threshold = check.count_u32(
        "quic.ack_eliciting_threshold",
        q.ack_eliciting_threshold,
        0,
        1_000,
    );
    let packet_threshold = check.count_u32("quic.packet_threshold", q.packet_threshold, 3, 1_000);
    let datagram_send_buffer_bytes = check.count(
        "quic.datagram_send_buffer_bytes",
        q.datagram_send_buffer_bytes,
        1_500,
        64 << 20,
    );
    let datagram_receive_buffer_bytes = check.count(
        "quic.datagram_receive_buffer_bytes",
        q.datagram_receive_buffer_bytes,
        1_500,
        64 << 20,
    );
    let redundancy_copies = check.count_u32("quic.redundancy_copies", q.redundancy_copies, 0, 8);
    let redundancy_max_bytes = check.count(
        "quic.redundancy_max_bytes",
        q.redundancy_max_bytes,
        0,
        1_200,
    );
    let redundancy_spacing = check.millis(
        "quic.redundancy_spacing_ms",
        q.redundancy_spacing_ms,
        0,
        1_000,
    );
    let latest_settle = check.millis("quic.latest_settle_ms", q.latest_settle_ms, 1, 60_000);
    let max_ordered_streams = check.count(
        "quic.max_ordered_streams",
        q.max_ordered_streams,
        0,
        LANE_SPACE as i64 - 1,
    );
    let max_latest_keys = check.count(
        "quic.max_latest_keys",
        q.max_latest_keys,
        1,
        KEY_SPACE as i64,
    );
    let max_unordered_in_flight = check.count_u32(
        "quic.max_unordered_in_flight",
        q.max_unordered_in_flight,
        1,
        65_536,
    );
    let keep_alive = check.millis("quic.keep_alive_ms", q.keep_alive_ms, 0, HOUR_MS);
    let idle_timeout = check.millis(
        "quic.idle_timeout_ms",
        q.idle_timeout_ms,
        1_000,
        24 * HOUR_MS,
    );
    if !(1.0..=100.0).contains(&q.time_threshold) {
        check.problem(format!(
            "quic.time_threshold = {}: must be between 1.0 and 100.0 (RTTs)",
            q.time_threshold
        ));
    }
    let congestion = Congestion::parse(&q.congestion).unwrap_or_else(|| {
        check.problem(format!(
            "quic.congestion = \"{}\": must be \"cubic\", \"new_reno\" or \"bbr\"",
            q.congestion
        ));
        Congestion::Cubic
    });
    if q.keep_alive_ms > 0 && q.keep_alive_ms >= q.idle_timeout_ms {
        check.problem(format!(
            "quic.keep_alive_ms = {} must be less than quic.idle_timeout_ms = {}, or idle connections would time out between keep-alives",
            q.keep_alive_ms, q.idle_timeout_ms
        ));
    }
    let port = match q.port {
        -1 if socket_port == 0 => 0,
        -1 => match u16::try_from(socket_port.saturating_add(2)) {
            Ok(port) => port,
            Err(_) => {
                check.problem(format!(
                    "quic.port = -1 means socket.port + 2, which is past 65535 for socket.port = {socket_port}; set quic.port"
                ));
                0
            }
        },
        port => match u16::try_from(port) {
            Ok(port) => port,
            Err(_) => {
                check.problem(format!(
                    "quic.port = {port}: must be between 0 and 65535, or -1 for socket.port + 2"
                ));
                0
            }
        },
    };
    let ip = if q.address.is_empty() {
        socket.ip
    } else {
        match q.address.parse::<IpAddr>() {
            Ok(ip) => Some(ip),
            Err(_) => {
                check.problem(format!(
                    "quic.address = \"{}\": not an IP address (empty uses socket.address)",
                    q.address
                ));
                None
            }
        }
    };
    let cert = match (q.cert_path.is_empty(), q.key_path.is_empty()) {
        (true, true) => CertSource::Generated {
            dir: data_dir.join("quic"),
        },
        (false, false) => CertSource::Files {
            cert: PathBuf::from(&q.cert_path),
            key: PathBuf::from(&q.key_path),
        },
        _ => {
            check.problem(
                "quic.cert_path and quic.key_path: set both (the operator's certificate) or neither (a generated self-signed one)",
            );
            CertSource::Generated {
                dir: data_dir.join("quic"),
            }
        }
    };
    if !q.enabled {
        return None;
    }
    let tuning = Tuning {
        initial_rtt,
        max_ack_delay,
        ack_eliciting_threshold,
        packet_threshold,
        time_threshold: q.time_threshold as f32,
        congestion,
        datagram_send_buffer_bytes,
        datagram_receive_buffer_bytes,
        redundancy_copies,
        redundancy_max_bytes,
        redundancy_spacing,
        latest_settle,
        max_ordered_streams,
        max_latest_keys,
        max_unordered_in_flight,
        keep_alive: (!keep_alive.is_zero()).then_some(keep_alive),
        idle_timeout,
        max_message_size_bytes: socket.transport.max_message_size_bytes,
        receive_queue,
        mtu_discovery: q.mtu_discovery,
    };
    Some(QuicSettings {
        listen: SocketAddr::new(ip?, port),
        cert,
        transport: QuicConfig {
            tuning,
            handshake_timeout,
            limits,
            write_wait: socket.transport.write_wait,
            close_wait,
            idle_timeout: socket.transport.idle_timeout,
        },
    })
}
