//! A server link and a client link joined through a [`LossyProxy`], for the class tests and
//! the knob measurements.

#![allow(dead_code)] // each test file uses a different part of this module

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use metafi_quic::cert::{ServerCert, Trust};
use metafi_quic::lossy::{LossyProxy, Profile};
use metafi_quic::wire::{Hello, Welcome};
use metafi_quic::{ClientLink, Connector, Handshake, LinkReceiver, LinkSender, Tuning};
use tokio::sync::oneshot;

/// How long a test waits for something that must arrive.
pub const WAIT: Duration = Duration::from_secs(10);

pub struct Pair {
    pub proxy: LossyProxy,
    pub client: ClientLink,
    pub server_sender: LinkSender,
    pub server_receiver: LinkReceiver,
    pub endpoint: metafi_quic::quinn::Endpoint,
    pub connector: Connector,
}

/// A connected pair over a proxy with these profiles; both ends use `tuning`.
pub async fn pair(up: Profile, down: Profile, seed: u64, tuning: Tuning) -> Pair {
    let cert = ServerCert::ephemeral(&["localhost".to_owned()]).unwrap();
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let server_addr = socket.local_addr().unwrap();
    let endpoint =
        metafi_quic::server_endpoint(socket, &cert, &tuning, metafi_quic::ServerLimits::default())
            .unwrap();
    let (tx, rx) = oneshot::channel();
    let server_tuning = Arc::new(tuning.clone());
    let accept = endpoint.clone();
    tokio::spawn(async move {
        let incoming = accept.accept().await.unwrap();
        let conn = incoming.await.unwrap();
        let handshake = Handshake::accept(&conn, WAIT, 4096).await.unwrap();
        assert_eq!(handshake.hello.token, "token");
        let link = handshake
            .welcome(
                &Welcome {
                    session_id: "s1".into(),
                },
                server_tuning,
            )
            .await
            .unwrap();
        let _ = tx.send(link);
    });
    let proxy = LossyProxy::start(server_addr, up, down, seed)
        .await
        .unwrap();
    let connector = Connector::new(
        "127.0.0.1:0".parse().unwrap(),
        proxy.addr(),
        "localhost",
        &Trust::Fingerprint(cert.fingerprint),
        tuning,
    )
    .unwrap();
    let client = connector.connect(&hello()).await.unwrap();
    assert_eq!(client.welcome.session_id, "s1");
    let (server_sender, server_receiver) = tokio::time::timeout(WAIT, rx).await.unwrap().unwrap();
    Pair {
        proxy,
        client,
        server_sender,
        server_receiver,
        endpoint,
        connector,
    }
}

pub fn hello() -> Hello {
    Hello {
        token: "token".into(),
        appear_online: false,
        lang: String::new(),
    }
}

/// The next message, or a panic naming what was expected.
pub async fn next(receiver: &mut LinkReceiver, what: &str) -> Bytes {
    match tokio::time::timeout(WAIT, receiver.recv()).await {
        Ok(Some(Ok(bytes))) => bytes,
        Ok(Some(Err(e))) => panic!("link error while waiting for {what}: {e}"),
        Ok(None) => panic!("link closed while waiting for {what}"),
        Err(_) => panic!("{what} did not arrive within {WAIT:?}"),
    }
}

/// Whatever arrives within `quiet` of the previous message.
pub async fn drain(receiver: &mut LinkReceiver, quiet: Duration) -> Vec<Bytes> {
    let mut got = Vec::new();
    while let Ok(Some(Ok(bytes))) = tokio::time::timeout(quiet, receiver.recv()).await {
        got.push(bytes);
    }
    got
}

/// `"<tag>:<n>"` payloads, so the receiver can tell what it got.
pub fn msg(tag: &str, n: u32) -> Bytes {
    Bytes::from(format!("{tag}:{n:06}"))
}

/// A payload of `len` bytes starting with `"<tag>:<n>"`.
pub fn padded(tag: &str, n: u32, len: usize) -> Bytes {
    let mut text = format!("{tag}:{n:06}:").into_bytes();
    text.resize(len.max(text.len()), b'.');
    Bytes::from(text)
}

pub fn parse(bytes: &[u8]) -> (String, u32) {
    let text = std::str::from_utf8(bytes).unwrap();
    let mut parts = text.split(':');
    let tag = parts.next().unwrap().to_owned();
    let n = parts.next().unwrap().parse().unwrap();
    (tag, n)
}

pub fn server_addr(pair: &Pair) -> SocketAddr {
    pair.endpoint.local_addr().unwrap()
}
