//! A WebSocket client over a bare TCP stream that writes hand-built frames, for the protocol
//! violations no well-behaved client library can send (invalid UTF-8, reserved opcodes and
//! bits, unmasked or oversized frames), and reads the server's frames up to its close.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub struct RawWs {
    stream: TcpStream,
    /// Bytes read past what was parsed so far.
    buffer: Vec<u8>,
}

/// Opcodes (RFC 6455 section 5.2).
pub const TEXT: u8 = 0x1;
pub const BINARY: u8 = 0x2;

impl RawWs {
    /// Upgrades `GET /ws?token=…` by hand; panics unless the server answers 101.
    pub async fn connect(base: &str, token: &str) -> RawWs {
        let host = base.trim_start_matches("http://");
        let mut stream = TcpStream::connect(host).await.expect("connect");
        let request = format!(
            "GET /ws?token={token} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n\
             Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
             Sec-WebSocket-Version: 13\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut buffer = Vec::new();
        let end = loop {
            if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            let mut chunk = [0u8; 1024];
            let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut chunk))
                .await
                .expect("upgrade answer in time")
                .expect("read");
            assert!(n > 0, "connection closed during the upgrade");
            buffer.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        buffer.drain(..end);
        RawWs { stream, buffer }
    }

    /// Writes raw bytes (one or more frames) in one write.
    pub async fn write(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write");
    }

    /// Reads frames until the server's close frame; returns its status code, or `None` when
    /// the connection ended without a close frame (or with one that carries no code).
    pub async fn close_code(&mut self, within: Duration) -> Option<u16> {
        tokio::time::timeout(within, async {
            loop {
                let (opcode, payload) = self.read_frame().await?;
                if opcode == 0x8 {
                    return (payload.len() >= 2)
                        .then(|| u16::from_be_bytes([payload[0], payload[1]]));
                }
            }
        })
        .await
        .expect("the server neither closed nor ended the connection in time")
    }

    async fn read_frame(&mut self) -> Option<(u8, Vec<u8>)> {
        loop {
            if let Some((opcode, payload, used)) = parse_frame(&self.buffer) {
                self.buffer.drain(..used);
                return Some((opcode, payload));
            }
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buffer.extend_from_slice(&chunk[..n]),
            }
        }
    }
}

/// One frame: `first` is the first header byte (FIN, RSV1-3, opcode); a masked payload when
/// `mask` (clients must mask); `declared_len` overrides the length field (an oversized frame
/// whose payload is not sent).
pub fn frame(first: u8, payload: &[u8], mask: bool, declared_len: Option<u64>) -> Vec<u8> {
    let len = declared_len.unwrap_or(payload.len() as u64);
    let mask_bit = if mask { 0x80 } else { 0 };
    let mut out = vec![first];
    if len < 126 {
        out.push(mask_bit | len as u8);
    } else if len <= u64::from(u16::MAX) {
        out.push(mask_bit | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(mask_bit | 127);
        out.extend_from_slice(&len.to_be_bytes());
    }
    if mask {
        let key = [0x12, 0x34, 0x56, 0x78];
        out.extend_from_slice(&key);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    } else {
        out.extend_from_slice(payload);
    }
    out
}

/// A complete server frame at the start of `bytes`: (opcode, payload, bytes used).
fn parse_frame(bytes: &[u8]) -> Option<(u8, Vec<u8>, usize)> {
    let [first, second, rest @ ..] = bytes else {
        return None;
    };
    let opcode = first & 0x0f;
    let (len, header) = match second & 0x7f {
        126 => (
            u64::from(u16::from_be_bytes([*rest.first()?, *rest.get(1)?])),
            4,
        ),
        127 => {
            let raw: [u8; 8] = rest.get(..8)?.try_into().ok()?;
            (u64::from_be_bytes(raw), 10)
        }
        n => (u64::from(n), 2),
    };
    let end = header + usize::try_from(len).ok()?;
    let payload = bytes.get(header..end)?.to_vec();
    Some((opcode, payload, end))
}
