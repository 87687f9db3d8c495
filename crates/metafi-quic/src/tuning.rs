//! The knobs of a MetaFi QUIC connection, the same on server and client (`[quic]` in the
//! server's configuration; `docs/TRANSPORT.md`, "Tuning knobs", says what each does to delay
//! and jitter, measured).

use std::sync::Arc;
use std::time::Duration;

use quinn::congestion::{BbrConfig, CubicConfig, NewRenoConfig};
use quinn::{AckFrequencyConfig, IdleTimeout, TransportConfig, VarInt};

/// Which congestion controller paces sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Congestion {
    #[default]
    Cubic,
    NewReno,
    Bbr,
}

impl Congestion {
    /// Parses the configuration's name: `cubic`, `new_reno` or `bbr`.
    pub fn parse(name: &str) -> Option<Congestion> {
        match name {
            "cubic" => Some(Congestion::Cubic),
            "new_reno" => Some(Congestion::NewReno),
            "bbr" => Some(Congestion::Bbr),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Congestion::Cubic => "cubic",
            Congestion::NewReno => "new_reno",
            Congestion::Bbr => "bbr",
        }
    }
}

/// Every knob of a connection. `Default` is the tuned setting for thin game streams.
#[derive(Debug, Clone, PartialEq)]
pub struct Tuning {
    /// RTT assumed before the first sample: sets the first retransmission timeouts (of the
    /// handshake too). Too small on a slow link retransmits the handshake needlessly.
    pub initial_rtt: Duration,
    /// Asks the peer to acknowledge within this long (QUIC ack-frequency extension); the
    /// sender's probe timeout includes it, so smaller detects tail losses sooner.
    pub max_ack_delay: Duration,
    /// Ack-eliciting packets the peer may receive before it must acknowledge (0 = every one).
    pub ack_eliciting_threshold: u32,
    /// A packet is lost once this many later packets are acknowledged.
    pub packet_threshold: u32,
    /// A packet is lost once it is this many RTTs older than an acknowledged one.
    pub time_threshold: f32,
    pub congestion: Congestion,
    /// Outgoing datagram bytes queued at most; when more are sent, the oldest are dropped, so
    /// fresh data never waits behind stale data.
    pub datagram_send_buffer_bytes: usize,
    /// Incoming datagram bytes buffered at most before the oldest are dropped.
    pub datagram_receive_buffer_bytes: usize,
    /// Extra copies of each small reliable message, sent as datagrams after the original (0 =
    /// off). The receiver delivers whichever arrives first, once.
    pub redundancy_copies: u32,
    /// Only messages of at most this many bytes get copies.
    pub redundancy_max_bytes: usize,
    /// Time between the original and each copy, so they travel in different packets.
    pub redundancy_spacing: Duration,
    /// A latest-wins key with no newer value for this long has its last value sent again
    /// reliably: the final value always arrives.
    pub latest_settle: Duration,
    /// Named reliable-ordered streams one side may open (each is a QUIC stream); more names
    /// share the default stream. At most `wire::LANE_SPACE - 1`.
    pub max_ordered_streams: usize,
    /// Latest-wins keys one side tracks; the least recently used key is settled and forgotten
    /// to make room. At most `wire::KEY_SPACE`.
    pub max_latest_keys: usize,
    /// Reliable-unordered messages (each its own QUIC stream) in flight at once per direction.
    pub max_unordered_in_flight: u32,
    /// A packet is sent after this long without traffic, so NATs and the idle timeout keep the
    /// connection; `None` never.
    pub keep_alive: Option<Duration>,
    /// The connection is dropped after this long without any packet from the peer (also the
    /// handshake's deadline).
    pub idle_timeout: Duration,
    /// Largest envelope accepted from the peer; a larger one closes the connection.
    pub max_message_size_bytes: usize,
    /// Envelopes received but not yet handled; when full, streams stop being read (flow
    /// control pushes back) and datagrams are dropped.
    pub receive_queue: usize,
    /// Probe for a path MTU above 1,200 bytes after the handshake. Probes are up to 1,452-byte
    /// packets: a cost on thin links that small game messages do not need.
    pub mtu_discovery: bool,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            initial_rtt: Duration::from_millis(333),
            max_ack_delay: Duration::from_millis(25),
            ack_eliciting_threshold: 1,
            packet_threshold: 3,
            time_threshold: 9.0 / 8.0,
            congestion: Congestion::Cubic,
            datagram_send_buffer_bytes: 8 * 1024,
            datagram_receive_buffer_bytes: 64 * 1024,
            redundancy_copies: 1,
            redundancy_max_bytes: 256,
            redundancy_spacing: Duration::from_millis(5),
            latest_settle: Duration::from_millis(100),
            max_ordered_streams: 16,
            max_latest_keys: 256,
            max_unordered_in_flight: 128,
            keep_alive: Some(Duration::from_secs(5)),
            idle_timeout: Duration::from_secs(60),
            max_message_size_bytes: 4096,
            receive_queue: 256,
            mtu_discovery: false,
        }
    }
}

impl Tuning {
    /// The quinn transport settings these knobs make.
    pub fn transport_config(&self) -> Arc<TransportConfig> {
        let mut t = TransportConfig::default();
        t.initial_rtt(self.initial_rtt)
            .packet_threshold(self.packet_threshold.max(3))
            .time_threshold(self.time_threshold.max(1.0))
            .datagram_send_buffer_size(self.datagram_send_buffer_bytes)
            .datagram_receive_buffer_size(Some(self.datagram_receive_buffer_bytes))
            .keep_alive_interval(self.keep_alive)
            .max_idle_timeout(Some(idle_timeout(self.idle_timeout)))
            // Streams the peer may open to us: its named lanes and unordered messages.
            .max_concurrent_uni_streams(VarInt::from_u32(
                self.max_unordered_in_flight
                    .saturating_add(self.max_ordered_streams as u32 + 4),
            ))
            // Only the control stream is bidirectional (a second one: a client whose 0-RTT
            // was refused opens it again).
            .max_concurrent_bidi_streams(VarInt::from_u32(2));
        if !self.mtu_discovery {
            t.mtu_discovery_config(None);
        }
        let mut ack = AckFrequencyConfig::default();
        ack.max_ack_delay(Some(self.max_ack_delay))
            .ack_eliciting_threshold(VarInt::from_u32(self.ack_eliciting_threshold))
            .reordering_threshold(VarInt::from_u32(self.packet_threshold.max(3) - 1));
        t.ack_frequency_config(Some(ack));
        match self.congestion {
            Congestion::Cubic => t.congestion_controller_factory(Arc::new(CubicConfig::default())),
            Congestion::NewReno => {
                t.congestion_controller_factory(Arc::new(NewRenoConfig::default()))
            }
            Congestion::Bbr => t.congestion_controller_factory(Arc::new(BbrConfig::default())),
        };
        Arc::new(t)
    }
}

fn idle_timeout(duration: Duration) -> IdleTimeout {
    // Invariant: QUIC allows idle timeouts up to 2^62 ms; the configuration caps far below.
    let ms = u32::try_from(duration.as_millis()).unwrap_or(u32::MAX);
    IdleTimeout::from(VarInt::from_u32(ms))
}
