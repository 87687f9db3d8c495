//! A player's realtime connection: the WebSocket over kernel TCP, or QUIC with delivery
//! classes (`metafi-client`'s `QuicConnector`, one per player so each sends from its own
//! address).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::Context as _;
use bytes::Bytes;
use metafi_client::{
    ClientError, DeliveryClass, Endpoint, Events, Fingerprint, QuicConfig, QuicConnector,
    QuicTrust, QuicTuning, Socket, SocketConfig,
};

use crate::replay::RunOptions;
use crate::strategy::Class;

/// Largest envelope a player accepts over QUIC.
const MAX_MESSAGE_BYTES: usize = 256 * 1024;

/// An open connection of one player.
#[derive(Debug)]
pub struct Connection {
    socket: Socket,
    quic: bool,
}

impl Connection {
    pub async fn open(
        options: &RunOptions,
        endpoint: &Endpoint,
        source: Option<Ipv4Addr>,
        token: &str,
        config: &SocketConfig,
    ) -> anyhow::Result<(Connection, Events)> {
        if !options.strategy.uses_quic() {
            let (socket, events) = Socket::connect(endpoint, token, config).await?;
            return Ok((
                Connection {
                    socket,
                    quic: false,
                },
                events,
            ));
        }
        let server = options
            .quic
            .context("QUIC strategies need --quic HOST:PORT")?;
        let fingerprint: Fingerprint = options
            .quic_fingerprint
            .as_deref()
            .context("QUIC strategies need --quic-fingerprint")?
            .parse()
            .map_err(|e| anyhow::anyhow!("--quic-fingerprint: {e}"))?;
        let mut quic = QuicConfig::pinned(server, fingerprint);
        quic.trust = QuicTrust::Fingerprint(fingerprint);
        if let Some(source) = source {
            quic.bind = SocketAddr::new(IpAddr::V4(source), 0);
        }
        quic.tuning = tuning(&options.quic_tuning)?;
        let connector = QuicConnector::new(&quic)?;
        let (socket, events) = connector.connect(token, config).await?;
        Ok((Connection { socket, quic: true }, events))
    }

    pub fn socket(&self) -> &Socket {
        &self.socket
    }

    /// Sends match data with the class of its type. Over WebSocket the class travels in the
    /// envelope, but TCP delivers everything reliably and in order.
    pub async fn send(
        &self,
        match_id: &str,
        op_code: i64,
        data: Bytes,
        class: &Class,
    ) -> Result<(), ClientError> {
        if !self.quic {
            return self
                .socket
                .match_data_send(match_id, op_code, data, class.reliable())
                .await;
        }
        self.socket
            .send_match_data(match_id, op_code, data, delivery_class(class))
            .await
    }

    pub async fn close(self) {
        drop(self.socket);
    }
}

pub fn delivery_class(class: &Class) -> DeliveryClass {
    match class {
        Class::Ordered(lane) => DeliveryClass::ordered(lane),
        Class::Unordered => DeliveryClass::ReliableUnordered,
        Class::Unreliable => DeliveryClass::Unreliable,
        Class::Latest(key) => DeliveryClass::latest(key),
    }
}

/// QUIC knobs from `key=value` pairs, named as the server's `[quic]` keys.
pub fn tuning(pairs: &[(String, String)]) -> anyhow::Result<QuicTuning> {
    let mut t = QuicTuning::default();
    // The join answer lists every player of the match (about 110 bytes each).
    t.max_message_size_bytes = t.max_message_size_bytes.max(MAX_MESSAGE_BYTES);
    for (key, value) in pairs {
        let ms = || -> anyhow::Result<Duration> {
            Ok(Duration::from_millis(value.parse().with_context(|| {
                format!("quic tuning {key}={value}: milliseconds expected")
            })?))
        };
        let number = || -> anyhow::Result<u32> {
            value
                .parse()
                .with_context(|| format!("quic tuning {key}={value}: a number expected"))
        };
        match key.as_str() {
            "initial_rtt_ms" => t.initial_rtt = ms()?,
            "max_ack_delay_ms" => t.max_ack_delay = ms()?,
            "ack_eliciting_threshold" => t.ack_eliciting_threshold = number()?,
            "packet_threshold" => t.packet_threshold = number()?,
            "time_threshold" => {
                t.time_threshold = value
                    .parse()
                    .with_context(|| format!("quic tuning {key}={value}"))?;
            }
            "congestion" => {
                t.congestion = metafi_quic::Congestion::parse(value).with_context(|| {
                    format!("quic tuning {key}={value}: cubic, new_reno or bbr")
                })?;
            }
            "redundancy_copies" => t.redundancy_copies = number()?,
            "redundancy_spacing_ms" => t.redundancy_spacing = ms()?,
            "latest_settle_ms" => t.latest_settle = ms()?,
            other => anyhow::bail!(
                "unknown quic tuning key `{other}` (initial_rtt_ms, max_ack_delay_ms, \
                 ack_eliciting_threshold, packet_threshold, time_threshold, congestion, \
                 redundancy_copies, redundancy_spacing_ms, latest_settle_ms)"
            ),
        }
    }
    Ok(t)
}
