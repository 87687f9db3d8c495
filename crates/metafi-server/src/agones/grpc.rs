//! A small gRPC client over HTTP/2 (h2, prior knowledge, as the Agones SDK sidecar serves on
//! `localhost:AGONES_SDK_GRPC_PORT`): unary calls, a client stream (Health) and a server stream
//! (WatchGameServer). gRPC's framing is one byte (compressed: always 0 here), a 4-byte
//! big-endian length and the protobuf message; the call's status comes in the `grpc-status`
//! trailer (or header, for a trailers-only answer).

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use h2::client::{ResponseFuture, SendRequest};
use h2::{RecvStream, SendStream};
use prost::Message;
use tokio::net::TcpStream;

/// How long one unary call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Encodes `message` as one gRPC frame.
pub fn frame(message: &impl Message) -> Bytes {
    let len = message.encoded_len();
    let mut buf = BytesMut::with_capacity(5 + len);
    buf.put_u8(0);
    buf.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
    // Encoding into a buffer with the room reserved cannot fail.
    let _ = message.encode(&mut buf);
    buf.freeze()
}

/// The largest message accepted from the SDK server (gRPC's default receive limit): a frame
/// header announcing more is refused rather than buffered.
const MAX_MESSAGE_LEN: usize = 4 << 20;

/// Splits a byte stream into gRPC frames' messages.
#[derive(Debug, Default)]
pub struct Frames {
    buf: BytesMut,
}

impl Frames {
    /// Adds received bytes.
    pub fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// The next complete message, if one has arrived; an error for a compressed frame.
    pub fn next_message(&mut self) -> anyhow::Result<Option<Bytes>> {
        if self.buf.len() < 5 {
            return Ok(None);
        }
        let compressed = self.buf[0];
        let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]) as usize;
        if len > MAX_MESSAGE_LEN {
            bail!("a gRPC message of {len} bytes (at most {MAX_MESSAGE_LEN} accepted)");
        }
        if self.buf.len() < 5 + len {
            return Ok(None);
        }
        if compressed != 0 {
            bail!("a compressed gRPC message (not asked for)");
        }
        self.buf.advance(5);
        Ok(Some(self.buf.split_to(len).freeze()))
    }
}

/// One HTTP/2 connection to the SDK server.
#[derive(Clone)]
pub struct Channel {
    send: SendRequest<Bytes>,
    authority: String,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("authority", &self.authority)
            .finish()
    }
}

impl Channel {
    /// Connects (HTTP/2 with prior knowledge) and drives the connection in a task.
    pub async fn connect(address: SocketAddr) -> anyhow::Result<Channel> {
        let tcp = TcpStream::connect(address).await?;
        let _ = tcp.set_nodelay(true);
        let (send, connection) = h2::client::handshake(tcp)
            .await
            .context("HTTP/2 handshake")?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "Agones SDK connection ended");
            }
        });
        Ok(Channel {
            send,
            authority: address.to_string(),
        })
    }

    /// Starts a call on `path`; the request body is left open for the caller.
    async fn start(&self, path: &str) -> anyhow::Result<(ResponseFuture, SendStream<Bytes>)> {
        let request = http::Request::builder()
            .method(http::Method::POST)
            .uri(format!("http://{}{path}", self.authority))
            .header(http::header::CONTENT_TYPE, "application/grpc")
            .header(http::header::TE, "trailers")
            .body(())?;
        let mut send = self.send.clone().ready().await?;
        Ok(send.send_request(request, false)?)
    }

    /// A unary call.
    pub async fn unary<Rq: Message, Rs: Message + Default>(
        &self,
        path: &str,
        request: &Rq,
    ) -> anyhow::Result<Rs> {
        let call = async {
            let (response, mut body) = self.start(path).await?;
            body.send_data(frame(request), true)?;
            let response = response.await?;
            status(response.headers(), path)?;
            let mut recv = response.into_body();
            let mut frames = Frames::default();
            while let Some(data) = recv.data().await {
                let data = data?;
                let _ = recv.flow_control().release_capacity(data.len());
                frames.push(&data);
            }
            if let Some(trailers) = recv.trailers().await? {
                status(&trailers, path)?;
            }
            let message = frames
                .next_message()?
                .ok_or_else(|| anyhow!("{path}: no answer"))?;
            Ok(Rs::decode(message)?)
        };
        tokio::time::timeout(CALL_TIMEOUT, call)
            .await
            .map_err(|_| anyhow!("{path}: no answer within {CALL_TIMEOUT:?}"))?
    }

    /// Opens a client stream (the request body stays open): messages go with
    /// [`ClientStream::send`].
    pub async fn client_stream(&self, path: &str) -> anyhow::Result<ClientStream> {
        let (response, body) = self.start(path).await?;
        Ok(ClientStream {
            _response: response,
            body,
        })
    }

    /// A server stream: the request is sent whole; the answers come from
    /// [`ServerStream::next`].
    pub async fn server_stream(
        &self,
        path: &str,
        request: &impl Message,
    ) -> anyhow::Result<ServerStream> {
        let (response, mut body) = self.start(path).await?;
        body.send_data(frame(request), true)?;
        let response = tokio::time::timeout(CALL_TIMEOUT, response)
            .await
            .map_err(|_| anyhow!("{path}: no answer within {CALL_TIMEOUT:?}"))??;
        status(response.headers(), path)?;
        Ok(ServerStream {
            recv: response.into_body(),
            frames: Frames::default(),
            path: path.to_owned(),
        })
    }
}

/// A call whose request is a stream of messages (Health).
pub struct ClientStream {
    /// Kept so the stream stays open; the answer comes when the stream ends.
    _response: ResponseFuture,
    body: SendStream<Bytes>,
}

impl ClientStream {
    /// Sends one message; an error when the stream or the connection is gone.
    pub fn send(&mut self, message: &impl Message) -> anyhow::Result<()> {
        self.body.send_data(frame(message), false)?;
        Ok(())
    }
}

impl std::fmt::Debug for ClientStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientStream")
    }
}

/// A call whose answer is a stream of messages (WatchGameServer).
#[derive(Debug)]
pub struct ServerStream {
    recv: RecvStream,
    frames: Frames,
    path: String,
}

impl ServerStream {
    /// The next answer; `None` when the server ended the stream well.
    pub async fn next<M: Message + Default>(&mut self) -> anyhow::Result<Option<M>> {
        loop {
            if let Some(message) = self.frames.next_message()? {
                return Ok(Some(M::decode(message)?));
            }
            match self.recv.data().await {
                Some(data) => {
                    let data = data?;
                    let _ = self.recv.flow_control().release_capacity(data.len());
                    self.frames.push(&data);
                }
                None => {
                    if let Some(trailers) = self.recv.trailers().await? {
                        status(&trailers, &self.path)?;
                    }
                    return Ok(None);
                }
            }
        }
    }
}

/// A call the SDK server answered with a gRPC status other than OK (inside the
/// `anyhow::Error` the calls return; [`status_code`] reads it back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrpcStatus {
    pub path: String,
    /// The gRPC code (5 NOT_FOUND, 6 ALREADY_EXISTS, 11 OUT_OF_RANGE, …).
    pub code: u32,
    pub message: String,
}

impl std::fmt::Display for GrpcStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: gRPC status {}: {}",
            self.path, self.code, self.message
        )
    }
}

impl std::error::Error for GrpcStatus {}

/// The gRPC code of a call's error, when the SDK server answered with one (not a transport
/// failure).
pub fn status_code(error: &anyhow::Error) -> Option<u32> {
    error.downcast_ref::<GrpcStatus>().map(|s| s.code)
}

/// The call's gRPC status from headers or trailers: an error unless absent or 0 (OK).
fn status(headers: &http::HeaderMap, path: &str) -> anyhow::Result<()> {
    let Some(code) = headers.get("grpc-status") else {
        return Ok(());
    };
    if code.as_bytes() == b"0" {
        return Ok(());
    }
    let message = headers
        .get("grpc-message")
        .and_then(|m| m.to_str().ok())
        .unwrap_or("");
    let Some(code) = std::str::from_utf8(code.as_bytes())
        .ok()
        .and_then(|c| c.parse::<u32>().ok())
    else {
        bail!(
            "{path}: gRPC status {}: {message}",
            String::from_utf8_lossy(code.as_bytes())
        )
    };
    Err(GrpcStatus {
        path: path.to_owned(),
        code,
        message: message.to_owned(),
    }
    .into())
}
