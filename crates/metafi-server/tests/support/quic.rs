//! Players of a test node over QUIC (pinned to the node's generated certificate) and over a
//! protobuf WebSocket, with `metafi-client`.

use metafi_client::{Events, Fingerprint, QuicConfig, QuicConnector, Socket, SocketConfig};
use metafi_proto::realtime::Format;
use metafi_testkit::TestNode;

/// The fingerprint of the node's QUIC certificate.
pub fn fingerprint(server: &TestNode) -> Fingerprint {
    let path = server.data_dir.join("data/quic/fingerprint.txt");
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// A connector pinned to the node's certificate.
pub fn connector(server: &TestNode) -> QuicConnector {
    QuicConnector::new(&QuicConfig::pinned(
        server.quic.expect("QUIC is on by default"),
        fingerprint(server),
    ))
    .unwrap()
}

/// A realtime session over QUIC.
pub async fn quic_socket(server: &TestNode, token: &str) -> (Socket, Events) {
    connector(server)
        .connect(token, &SocketConfig::default())
        .await
        .unwrap()
}

/// A realtime session over WebSocket, protobuf frames.
pub async fn ws_socket(server: &TestNode, token: &str) -> (Socket, Events) {
    let endpoint = metafi_client::Endpoint::resolve(
        &metafi_client::ClientConfig {
            server: server.base.clone(),
            ..metafi_client::ClientConfig::default()
        },
        std::sync::Arc::new(metafi_client::net::NetCounters::default()),
    )
    .await
    .unwrap();
    Socket::connect(
        &endpoint,
        token,
        &SocketConfig {
            format: Format::Protobuf,
            ..SocketConfig::default()
        },
    )
    .await
    .unwrap()
}
