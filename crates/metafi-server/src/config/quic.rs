//! The `[quic]` keys, checked and turned into the QUIC transport's settings.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use metafi_quic::wire::{KEY_SPACE, LANE_SPACE};
use metafi_quic::{Congestion, Tuning};
use metafi_transport::SocketConfig;
use metafi_transport::quic::QuicConfig;

use super::RawConfig;

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

/// `None` when QUIC is disabled.
pub(super) fn quic_settings(
    raw: &RawConfig,
    socket_ip: Option<IpAddr>,
    socket: &SocketConfig,
    problems: &mut Vec<String>,
) -> Option<QuicSettings> {
    let q = &raw.quic;
    let mut range = |key: &str, value: i64, min: i64, max: i64| -> u64 {
        if value < min || value > max {
            problems.push(format!(
                "quic.{key} = {value}: must be between {min} and {max}"
            ));
            min.max(0) as u64
        } else {
            value as u64
        }
    };
    const HOUR_MS: i64 = 3_600_000;
    let handshake = range("handshake_timeout_ms", q.handshake_timeout_ms, 100, HOUR_MS);
    let incoming = range("max_incoming", q.max_incoming, 1, 1 << 20);
    let sessions = range("session_cache", q.session_cache, 1, 1 << 22);
    let close_wait = range("close_wait_ms", q.close_wait_ms, 0, HOUR_MS);
    let receive_queue = range("receive_queue", q.receive_queue, 1, 1 << 20);
    let initial_rtt = range("initial_rtt_ms", q.initial_rtt_ms, 1, 60_000);
    let ack_delay = range("max_ack_delay_ms", q.max_ack_delay_ms, 0, 16_383);
    let ack_threshold = range(
        "ack_eliciting_threshold",
        q.ack_eliciting_threshold,
        0,
        1_000,
    );
    let packet_threshold = range("packet_threshold", q.packet_threshold, 3, 1_000);
    let send_buffer = range(
        "datagram_send_buffer_bytes",
        q.datagram_send_buffer_bytes,
        1_500,
        64 << 20,
    );
    let receive_buffer = range(
        "datagram_receive_buffer_bytes",
        q.datagram_receive_buffer_bytes,
        1_500,
        64 << 20,
    );
    let copies = range("redundancy_copies", q.redundancy_copies, 0, 8);
    let copy_max = range("redundancy_max_bytes", q.redundancy_max_bytes, 0, 1_200);
    let spacing = range("redundancy_spacing_ms", q.redundancy_spacing_ms, 0, 1_000);
    let settle = range("latest_settle_ms", q.latest_settle_ms, 1, 60_000);
    let lanes = range(
        "max_ordered_streams",
        q.max_ordered_streams,
        0,
        LANE_SPACE as i64 - 1,
    );
    let keys = range("max_latest_keys", q.max_latest_keys, 1, KEY_SPACE as i64);
    let unordered = range(
        "max_unordered_in_flight",
        q.max_unordered_in_flight,
        1,
        65_536,
    );
    let keep_alive = range("keep_alive_ms", q.keep_alive_ms, 0, HOUR_MS);
    let idle = range("idle_timeout_ms", q.idle_timeout_ms, 1_000, 24 * HOUR_MS);
    if !(1.0..=100.0).contains(&q.time_threshold) {
        problems.push(format!(
            "quic.time_threshold = {}: must be between 1.0 and 100.0 (RTTs)",
            q.time_threshold
        ));
    }
    let congestion = Congestion::parse(&q.congestion).unwrap_or_else(|| {
        problems.push(format!(
            "quic.congestion = \"{}\": must be \"cubic\", \"new_reno\" or \"bbr\"",
            q.congestion
        ));
        Congestion::Cubic
    });
    if q.keep_alive_ms > 0 && q.keep_alive_ms >= q.idle_timeout_ms {
        problems.push(format!(
            "quic.keep_alive_ms = {} must be less than quic.idle_timeout_ms = {}, or idle connections would time out between keep-alives",
            q.keep_alive_ms, q.idle_timeout_ms
        ));
    }
    let port = match q.port {
        -1 if raw.socket.port == 0 => 0,
        -1 => match u16::try_from(raw.socket.port + 2) {
            Ok(port) => port,
            Err(_) => {
                problems.push(format!(
                    "quic.port = -1 means socket.port + 2, which is past 65535 for socket.port = {}; set quic.port",
                    raw.socket.port
                ));
                0
            }
        },
        port => match u16::try_from(port) {
            Ok(port) => port,
            Err(_) => {
                problems.push(format!(
                    "quic.port = {port}: must be between 0 and 65535, or -1 for socket.port + 2"
                ));
                0
            }
        },
    };
    let ip = if q.address.is_empty() {
        socket_ip
    } else {
        match q.address.parse::<IpAddr>() {
            Ok(ip) => Some(ip),
            Err(_) => {
                problems.push(format!(
                    "quic.address = \"{}\": not an IP address (empty uses socket.address)",
                    q.address
                ));
                None
            }
        }
    };
    let cert = match (q.cert_path.is_empty(), q.key_path.is_empty()) {
        (true, true) => CertSource::Generated {
            dir: PathBuf::from(&raw.data_dir).join("quic"),
        },
        (false, false) => CertSource::Files {
            cert: PathBuf::from(&q.cert_path),
            key: PathBuf::from(&q.key_path),
        },
        _ => {
            problems.push(
                "quic.cert_path and quic.key_path: set both (the operator's certificate) or neither (a generated self-signed one)".into(),
            );
            CertSource::Generated {
                dir: PathBuf::from(&raw.data_dir).join("quic"),
            }
        }
    };
    if !q.enabled {
        return None;
    }
    let tuning = Tuning {
        initial_rtt: Duration::from_millis(initial_rtt),
        max_ack_delay: Duration::from_millis(ack_delay),
        ack_eliciting_threshold: ack_threshold as u32,
        packet_threshold: packet_threshold as u32,
        time_threshold: q.time_threshold as f32,
        congestion,
        datagram_send_buffer_bytes: send_buffer as usize,
        datagram_receive_buffer_bytes: receive_buffer as usize,
        redundancy_copies: copies as u32,
        redundancy_max_bytes: copy_max as usize,
        redundancy_spacing: Duration::from_millis(spacing),
        latest_settle: Duration::from_millis(settle),
        max_ordered_streams: lanes as usize,
        max_latest_keys: keys as usize,
        max_unordered_in_flight: unordered as u32,
        keep_alive: (keep_alive > 0).then(|| Duration::from_millis(keep_alive)),
        idle_timeout: Duration::from_millis(idle),
        max_message_size_bytes: socket.max_message_size_bytes,
        receive_queue: receive_queue as usize,
        mtu_discovery: q.mtu_discovery,
    };
    Some(QuicSettings {
        listen: SocketAddr::new(ip?, port),
        cert,
        transport: QuicConfig {
            tuning,
            handshake_timeout: Duration::from_millis(handshake),
            limits: metafi_quic::ServerLimits {
                max_incoming: incoming as usize,
                session_cache: sessions as usize,
            },
            write_wait: socket.write_wait,
            close_wait: Duration::from_millis(close_wait),
            idle_timeout: socket.idle_timeout,
        },
    })
}
