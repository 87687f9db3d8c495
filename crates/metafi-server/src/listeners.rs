//! The sockets a node serves on, bound before [`crate::Node::start`] so tests can bind port 0
//! and learn the real addresses.

use std::net::SocketAddr;

use anyhow::Context;
use tokio::net::TcpListener;

use crate::config::Config;

/// The bound sockets of one node.
#[derive(Debug)]
pub struct Listeners {
    pub api: TcpListener,
    pub metrics: Option<TcpListener>,
    /// The QUIC transport's UDP socket, when `[quic]` is enabled.
    pub quic: Option<std::net::UdpSocket>,
    /// The console's listener, when `[console]` is enabled.
    pub console: Option<TcpListener>,
}

impl Listeners {
    /// Binds the addresses of the configuration, with errors that say what to change.
    pub async fn bind(config: &Config) -> anyhow::Result<Listeners> {
        let api = bind(
            config.listen,
            "socket.address/socket.port (--address/--port)",
        )
        .await?;
        let metrics = match config.metrics {
            Some(addr) => Some(bind(addr, "metrics.address/metrics.port (--metrics-port)").await?),
            None => None,
        };
        let quic = match &config.quic {
            Some(quic) => Some(std::net::UdpSocket::bind(quic.listen).with_context(|| {
                format!(
                    "cannot listen on {}/udp for QUIC; is another server running there? Choose another with quic.port (--quic-port), or quic.enabled = false",
                    quic.listen
                )
            })?),
            None => None,
        };
        let console = match &config.console {
            Some(console) => Some(
                bind(
                    console.listen,
                    "console.address/console.port (--console-port), or console.enabled = false",
                )
                .await?,
            ),
            None => None,
        };
        Ok(Listeners {
            api,
            metrics,
            quic,
            console,
        })
    }

    /// The QUIC listener's address, when enabled.
    pub fn quic_addr(&self) -> anyhow::Result<Option<SocketAddr>> {
        self.quic
            .as_ref()
            .map(|s| s.local_addr())
            .transpose()
            .map_err(Into::into)
    }

    pub fn api_addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.api.local_addr()?)
    }

    pub fn metrics_addr(&self) -> anyhow::Result<Option<SocketAddr>> {
        self.metrics
            .as_ref()
            .map(|l| l.local_addr())
            .transpose()
            .map_err(Into::into)
    }

    /// Every address at once, read before the sockets are handed to their servers.
    pub fn addrs(&self) -> anyhow::Result<NodeAddrs> {
        Ok(NodeAddrs {
            api: self.api_addr()?,
            metrics: self.metrics_addr()?,
            quic: self.quic_addr()?,
            console: self.console.as_ref().map(|l| l.local_addr()).transpose()?,
        })
    }
}

/// Where a running node listens (the real ports when the configuration asked for port 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeAddrs {
    /// REST API and the realtime socket (`/ws`).
    pub api: SocketAddr,
    /// `/metrics` and `/debug/matches`, when enabled.
    pub metrics: Option<SocketAddr>,
    /// The QUIC transport (UDP), when enabled.
    pub quic: Option<SocketAddr>,
    /// The console, when enabled.
    pub console: Option<SocketAddr>,
}

async fn bind(addr: SocketAddr, keys: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr).await.with_context(|| {
        format!(
            "cannot listen on {addr}; is another server running there? Choose another with {keys}"
        )
    })
}
