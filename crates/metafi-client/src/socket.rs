//! The realtime socket: envelopes (`metafi_proto::realtime`) over a [`Transport`] — WebSocket
//! here, in Nakama's JSON text frames or protobuf binary frames; QUIC can be another
//! implementation of the same trait. Requests get a numeric `cid` and are matched with their
//! answer; everything the server pushes (match data, presences, notifications) goes to
//! [`Events`].
//!
//! One task per socket drives the transport, so a socket costs one task, one TCP connection and
//! small buffers: a load tool can hold 100k of them. Every queue is bounded: when `Events` is
//! full, reading from the server pauses (TCP backpressure) rather than growing memory.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt as _, StreamExt as _};
use metafi_proto::api::Rpc;
use metafi_proto::realtime::{
    DeliveryClass, Envelope, Match, MatchDataSend, MatchJoin, MatchJoinId, Message,
};
use parking_lot::Mutex;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Utf8Bytes};

pub use metafi_proto::realtime::Format;

use crate::net::Counted;
use crate::rest::encode_component;
use crate::{ClientError, Endpoint};

/// How a socket is opened and buffered.
#[derive(Debug, Clone)]
pub struct SocketConfig {
    pub format: Format,
    /// Longest wait for the answer to a request (and for the connection handshake).
    pub timeout: Duration,
    /// Encoded envelopes queued for sending before senders wait.
    pub send_queue: usize,
    /// Pushed envelopes buffered for [`Events`]; when full, reading from the server pauses.
    pub event_queue: usize,
    /// `status=true` at connect: the user appears online to its followers.
    pub appear_online: bool,
    /// Read buffer of the WebSocket layer per socket, in bytes (small keeps many sockets
    /// cheap; messages larger than it still arrive whole).
    pub read_buffer: usize,
}

impl Default for SocketConfig {
    fn default() -> Self {
        SocketConfig {
            format: Format::Json,
            timeout: Duration::from_secs(10),
            send_queue: 64,
            event_queue: 256,
            appear_online: false,
            read_buffer: 4096,
        }
    }
}

/// What carries encoded envelopes between client and server.
pub trait Transport: Send + 'static {
    /// Sends one encoded envelope.
    fn send(&mut self, frame: Bytes) -> impl Future<Output = Result<(), ClientError>> + Send;
    /// Sends one encoded envelope as `class` says. Transports without classes (WebSocket:
    /// TCP is always reliable and ordered) send it like any other.
    fn send_class(
        &mut self,
        frame: Bytes,
        class: &DeliveryClass,
    ) -> impl Future<Output = Result<(), ClientError>> + Send {
        let _ = class;
        self.send(frame)
    }
    /// When the transport's own timers (QUIC: settling latest-wins keys, redundant copies) next
    /// need [`Transport::on_timers`]; `None` when it has none.
    fn next_deadline(&self) -> Option<tokio::time::Instant> {
        None
    }
    /// Runs the timers that are due.
    fn on_timers(&mut self) -> impl Future<Output = Result<(), ClientError>> + Send {
        std::future::ready(Ok(()))
    }
    /// The next encoded envelope, `Ok(None)` once the server has closed. Must be cancel-safe:
    /// the socket task drops it whenever there is something to send.
    fn recv(&mut self) -> impl Future<Output = Result<Option<Bytes>, ClientError>> + Send;
    /// Closes politely.
    fn close(&mut self) -> impl Future<Output = ()> + Send;
}

/// Nakama's WebSocket transport: JSON envelopes in text frames, protobuf in binary frames.
#[derive(Debug)]
pub struct WebSocketTransport {
    ws: WebSocketStream<Counted<TcpStream>>,
    format: Format,
}

impl WebSocketTransport {
    /// Opens `/ws` on the endpoint's server as the session of `token` (TCP connect and
    /// WebSocket upgrade within `config.timeout`). [`Socket::connect`] wraps this in a task; a
    /// caller that drives one socket from its own task (a load tool holding thousands) can use
    /// the transport directly: [`Transport::recv`], [`WebSocketTransport::send_text`].
    pub async fn connect(
        endpoint: &Endpoint,
        token: &str,
        config: &SocketConfig,
    ) -> Result<WebSocketTransport, ClientError> {
        let handshake = async {
            let stream = endpoint
                .connector()
                .connect()
                .await
                .map_err(|source| ClientError::Connect { source })?;
            let host = endpoint
                .host()
                .to_str()
                .map_err(|_| ClientError::Unexpected {
                    what: "a host that is not text".into(),
                })?;
            let url = format!(
                "ws://{host}/ws?lang=en&status={}&token={}{}",
                config.appear_online,
                encode_component(token),
                match config.format {
                    Format::Json => "",
                    Format::Protobuf => "&format=protobuf",
                }
            );
            let ws_config = WebSocketConfig::default()
                .read_buffer_size(config.read_buffer)
                .write_buffer_size(0);
            let (ws, _response) =
                tokio_tungstenite::client_async_with_config(url, stream, Some(ws_config))
                    .await
                    .map_err(ws_error)?;
            Ok(ws)
        };
        let ws = tokio::time::timeout(config.timeout, handshake)
            .await
            .map_err(|_| ClientError::Timeout {
                timeout: config.timeout,
            })??;
        Ok(WebSocketTransport {
            ws,
            format: config.format,
        })
    }

    /// The format the socket was opened with.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Sends a JSON envelope already encoded as text (no UTF-8 check: a `String` is UTF-8).
    pub async fn send_text(&mut self, text: String) -> Result<(), ClientError> {
        self.ws
            .send(tungstenite::Message::Text(Utf8Bytes::from(text)))
            .await
            .map_err(ws_error)
    }
}

impl Transport for WebSocketTransport {
    async fn send(&mut self, frame: Bytes) -> Result<(), ClientError> {
        let message = match self.format {
            Format::Json => {
                tungstenite::Message::Text(Utf8Bytes::try_from(frame).map_err(|e| {
                    ClientError::Unexpected {
                        what: format!("a JSON envelope that is not UTF-8: {e}"),
                    }
                })?)
            }
            Format::Protobuf => tungstenite::Message::Binary(frame),
        };
        self.ws.send(message).await.map_err(ws_error)
    }

    async fn recv(&mut self) -> Result<Option<Bytes>, ClientError> {
        loop {
            match self.ws.next().await {
                None => return Ok(None),
                Some(Err(e)) => return Err(ws_error(e)),
                Some(Ok(tungstenite::Message::Text(text))) => return Ok(Some(text.into())),
                Some(Ok(tungstenite::Message::Binary(bytes))) => return Ok(Some(bytes)),
                Some(Ok(tungstenite::Message::Close(frame))) => {
                    return Err(ClientError::Closed {
                        reason: frame.map_or_else(
                            || "the server closed the socket".to_owned(),
                            |f| format!("{} ({})", f.reason, u16::from(f.code)),
                        ),
                    });
                }
                // pings are answered by tungstenite itself
                Some(Ok(_)) => {}
            }
        }
    }

    async fn close(&mut self) {
        let _ = self.ws.close(None).await;
    }
}

/// A connected realtime socket. Dropping it closes the connection.
#[derive(Debug)]
pub struct Socket {
    outbound: mpsc::Sender<(Bytes, DeliveryClass)>,
    pending: Arc<Pending>,
    closed: watch::Receiver<Option<String>>,
    next_cid: AtomicU64,
    format: Format,
    timeout: Duration,
    session_id: Option<String>,
}

/// What the server pushes without being asked: match data, presence events, notifications, …
#[derive(Debug)]
pub struct Events {
    rx: mpsc::Receiver<Envelope>,
}

impl Events {
    /// The next pushed envelope; `None` once the socket is closed.
    pub async fn next(&mut self) -> Option<Envelope> {
        self.rx.recv().await
    }
}

/// Requests waiting for their answer, by cid.
#[derive(Debug, Default)]
struct Pending {
    waiting: Mutex<HashMap<u64, oneshot::Sender<Envelope>>>,
}

impl Socket {
    /// Opens `/ws` on the endpoint's server as the session of `token`.
    pub async fn connect(
        endpoint: &Endpoint,
        token: &str,
        config: &SocketConfig,
    ) -> Result<(Socket, Events), ClientError> {
        let transport = WebSocketTransport::connect(endpoint, token, config).await?;
        Ok(Socket::over(transport, config))
    }

    /// A socket over any transport (the transport has finished its own handshake).
    pub fn over<T: Transport>(transport: T, config: &SocketConfig) -> (Socket, Events) {
        Socket::over_session(transport, config, None)
    }

    /// [`Socket::over`] for a transport whose handshake told the server's session id.
    pub fn over_session<T: Transport>(
        transport: T,
        config: &SocketConfig,
        session_id: Option<String>,
    ) -> (Socket, Events) {
        let (outbound, outbound_rx) = mpsc::channel(config.send_queue.max(1));
        let (events_tx, events_rx) = mpsc::channel(config.event_queue.max(1));
        let (closed_tx, closed) = watch::channel(None);
        let pending = Arc::new(Pending::default());
        tokio::spawn(drive(
            transport,
            config.format,
            outbound_rx,
            pending.clone(),
            events_tx,
            closed_tx,
        ));
        (
            Socket {
                outbound,
                pending,
                closed,
                next_cid: AtomicU64::new(1),
                format: config.format,
                timeout: config.timeout,
                session_id,
            },
            Events { rx: events_rx },
        )
    }

    /// Sends `message` with a new cid and waits for its answer. An error envelope becomes
    /// [`ClientError::Realtime`].
    pub async fn request(&self, message: Message) -> Result<Envelope, ClientError> {
        let cid = self.next_cid.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.waiting.lock().insert(cid, tx);
        let envelope = Envelope::new(cid.to_string(), message);
        let sent = async {
            self.outbound
                .send((
                    Bytes::from(self.format.encode(&envelope)),
                    DeliveryClass::default_stream(),
                ))
                .await
                .map_err(|_| self.closed_error())?;
            rx.await.map_err(|_| self.closed_error())
        };
        let answer = match tokio::time::timeout(self.timeout, sent).await {
            Ok(answer) => answer,
            Err(_) => Err(ClientError::Timeout {
                timeout: self.timeout,
            }),
        };
        if answer.is_err() {
            self.pending.waiting.lock().remove(&cid);
        }
        let answer = answer?;
        match answer.message {
            Some(Message::Error(error)) => Err(ClientError::Realtime {
                code: error.code,
                message: error.message,
            }),
            _ => Ok(answer),
        }
    }

    /// Sends `message` without a cid: nothing is answered (e.g. match data).
    pub async fn send(&self, message: Message) -> Result<(), ClientError> {
        self.send_class(message, DeliveryClass::default_stream())
            .await
    }

    /// Sends `message` without a cid, delivered as `class` says (over WebSocket every class
    /// is reliable and ordered).
    pub async fn send_class(
        &self,
        message: Message,
        class: DeliveryClass,
    ) -> Result<(), ClientError> {
        let envelope = Envelope::new(String::new(), message);
        self.outbound
            .send((Bytes::from(self.format.encode(&envelope)), class))
            .await
            .map_err(|_| self.closed_error())
    }

    /// Calls RPC `id` over the socket; returns its output text.
    pub async fn rpc(&self, id: &str, payload: &str) -> Result<String, ClientError> {
        let answer = self
            .request(Message::Rpc(Rpc {
                id: id.to_owned(),
                payload: payload.to_owned(),
                http_key: String::new(),
            }))
            .await?;
        match answer.message {
            Some(Message::Rpc(rpc)) => Ok(rpc.payload),
            other => Err(unexpected("rpc", other.as_ref())),
        }
    }

    /// Joins match `match_id`.
    pub async fn match_join(&self, match_id: &str) -> Result<Match, ClientError> {
        let answer = self
            .request(Message::MatchJoin(MatchJoin {
                id: Some(MatchJoinId::MatchId(match_id.to_owned())),
                metadata: HashMap::new(),
            }))
            .await?;
        match answer.message {
            Some(Message::Match(m)) => Ok(m),
            other => Err(unexpected("match", other.as_ref())),
        }
    }

    /// Sends match data (not answered; the match handler decides who receives what), as
    /// Nakama's clients do: `reliable` maps to the default stream or to unreliable.
    pub async fn match_data_send(
        &self,
        match_id: &str,
        op_code: i64,
        data: Bytes,
        reliable: bool,
    ) -> Result<(), ClientError> {
        self.send(Message::MatchDataSend(MatchDataSend {
            match_id: match_id.to_owned(),
            op_code,
            data,
            presences: Vec::new(),
            reliable,
            delivery: None,
        }))
        .await
    }

    /// Sends match data delivered as `class` says: the class is named in the message
    /// (MetaFi's extension), so the server relays it to the other players with the same class.
    pub async fn send_match_data(
        &self,
        match_id: &str,
        op_code: i64,
        data: Bytes,
        class: DeliveryClass,
    ) -> Result<(), ClientError> {
        let message = Message::MatchDataSend(MatchDataSend {
            match_id: match_id.to_owned(),
            op_code,
            data,
            presences: Vec::new(),
            reliable: class.is_reliable(),
            delivery: Some(class.to_wire()),
        });
        self.send_class(message, class).await
    }

    /// The id of the server's session for this socket (its presences' `session_id`), when
    /// the transport told it at connect (QUIC's welcome).
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Resolves when the socket has closed, with the reason.
    pub async fn closed(&self) -> String {
        let mut closed = self.closed.clone();
        match closed.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone().unwrap_or_default(),
            Err(_) => "the socket task ended".to_owned(),
        }
    }

    /// Whether the socket has closed.
    pub fn is_closed(&self) -> bool {
        self.closed.borrow().is_some()
    }

    fn closed_error(&self) -> ClientError {
        ClientError::Closed {
            reason: self
                .closed
                .borrow()
                .clone()
                .unwrap_or_else(|| "the socket closed".to_owned()),
        }
    }
}

/// The socket's task: sends what is queued, hands answers to their requests and pushes to
/// `events`, and on the way out fails every waiting request.
async fn drive<T: Transport>(
    mut transport: T,
    format: Format,
    mut outbound: mpsc::Receiver<(Bytes, DeliveryClass)>,
    pending: Arc<Pending>,
    events: mpsc::Sender<Envelope>,
    closed: watch::Sender<Option<String>>,
) {
    let reason = loop {
        let timers = transport.next_deadline();
        tokio::select! {
            frame = outbound.recv() => match frame {
                Some((frame, class)) => {
                    if let Err(e) = transport.send_class(frame, &class).await {
                        break describe(&e);
                    }
                }
                None => {
                    transport.close().await;
                    break "closed by the client".to_owned();
                }
            },
            incoming = transport.recv() => match incoming {
                Ok(Some(bytes)) => match format.decode(&bytes) {
                    Ok(envelope) => {
                        let waiter = envelope
                            .cid
                            .parse::<u64>()
                            .ok()
                            .and_then(|cid| pending.waiting.lock().remove(&cid));
                        match waiter {
                            Some(waiter) => {
                                let _ = waiter.send(envelope);
                            }
                            // nobody listening for events is fine (e.g. idle sockets)
                            None => {
                                if !events.is_closed() {
                                    let _ = events.send(envelope).await;
                                }
                            }
                        }
                    }
                    Err(e) => tracing::debug!(error = %e, "ignoring a frame that is not an envelope"),
                },
                Ok(None) => break "closed by the server".to_owned(),
                Err(e) => break describe(&e),
            },
            () = sleep_until(timers) => {
                if let Err(e) = transport.on_timers().await {
                    break describe(&e);
                }
            }
        }
    };
    let _ = closed.send(Some(reason));
    // dropping the senders fails every waiting request with `Closed`
    pending.waiting.lock().clear();
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn describe(error: &ClientError) -> String {
    match error {
        ClientError::Closed { reason } => reason.clone(),
        other => {
            let mut text = other.to_string();
            let mut source = std::error::Error::source(other);
            while let Some(cause) = source {
                text.push_str(": ");
                text.push_str(&cause.to_string());
                source = cause.source();
            }
            text
        }
    }
}

fn ws_error(e: tungstenite::Error) -> ClientError {
    match e {
        tungstenite::Error::Http(response) => {
            let status = response.status().as_u16();
            let body = response
                .body()
                .as_deref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default();
            ClientError::Api {
                status,
                code: 0,
                message: body.chars().take(200).collect(),
            }
        }
        tungstenite::Error::ConnectionClosed | tungstenite::Error::AlreadyClosed => {
            ClientError::Closed {
                reason: "the connection closed".into(),
            }
        }
        other => ClientError::WebSocket {
            source: Box::new(other),
        },
    }
}

fn unexpected(wanted: &str, got: Option<&Message>) -> ClientError {
    ClientError::Unexpected {
        what: format!(
            "expected {wanted}, got {}",
            got.map_or("an empty envelope", Message::name)
        ),
    }
}

#[cfg(test)]
mod tests {
    use metafi_proto::realtime::{Error as RtError, MatchData};

    use super::*;

    /// An in-memory transport: what the socket sends arrives at the test's "server" end.
    struct Fake {
        to_server: mpsc::Sender<Bytes>,
        from_server: mpsc::Receiver<Bytes>,
    }

    impl Transport for Fake {
        async fn send(&mut self, frame: Bytes) -> Result<(), ClientError> {
            self.to_server
                .send(frame)
                .await
                .map_err(|_| ClientError::Closed {
                    reason: "server gone".into(),
                })
        }

        async fn recv(&mut self) -> Result<Option<Bytes>, ClientError> {
            Ok(self.from_server.recv().await)
        }

        async fn close(&mut self) {}
    }

    fn pair(format: Format) -> (Socket, Events, mpsc::Receiver<Bytes>, mpsc::Sender<Bytes>) {
        let (to_server, server_rx) = mpsc::channel(16);
        let (server_tx, from_server) = mpsc::channel(16);
        let config = SocketConfig {
            format,
            timeout: Duration::from_secs(5),
            ..SocketConfig::default()
        };
        let (socket, events) = Socket::over(
            Fake {
                to_server,
                from_server,
            },
            &config,
        );
        (socket, events, server_rx, server_tx)
    }

    /// Answers requests out of order and pushes an event in between, in `format`.
    async fn serve(format: Format, mut rx: mpsc::Receiver<Bytes>, tx: mpsc::Sender<Bytes>) {
        let first = format
            .decode(&rx.recv().await.expect("first request"))
            .expect("envelope");
        let second = format
            .decode(&rx.recv().await.expect("second request"))
            .expect("envelope");
        let push = Envelope::new(
            "",
            Message::MatchData(MatchData {
                match_id: "m1".into(),
                op_code: 2,
                data: Bytes::from_static(b"hello"),
                ..MatchData::default()
            }),
        );
        tx.send(Bytes::from(format.encode(&push)))
            .await
            .expect("push");
        for request in [second, first] {
            let answer = match request.message {
                Some(Message::Rpc(rpc)) if rpc.id == "fail" => Envelope::new(
                    request.cid,
                    Message::Error(RtError {
                        code: 6,
                        message: "RPC function not found".into(),
                        ..RtError::default()
                    }),
                ),
                Some(Message::Rpc(rpc)) => Envelope::new(request.cid, Message::Rpc(rpc)),
                other => panic!("unexpected request {:?}", other.map(|m| m.name())),
            };
            tx.send(Bytes::from(format.encode(&answer)))
                .await
                .expect("answer");
        }
        // then the server goes away
    }

    #[tokio::test]
    async fn answers_find_their_requests_and_pushes_go_to_events_in_both_formats() {
        for format in [Format::Json, Format::Protobuf] {
            let (socket, mut events, server_rx, server_tx) = pair(format);
            let server = tokio::spawn(serve(format, server_rx, server_tx));
            let (echo, fail) =
                tokio::join!(socket.rpc("echo", "{\"a\":1}"), socket.rpc("fail", ""));
            assert_eq!(echo.expect("echo answered"), "{\"a\":1}");
            match fail {
                Err(ClientError::Realtime { code, message }) => {
                    assert_eq!((code, message.as_str()), (6, "RPC function not found"));
                }
                other => panic!("expected an error envelope, got {other:?}"),
            }
            let pushed = events.next().await.expect("a pushed envelope");
            match pushed.message {
                Some(Message::MatchData(data)) => {
                    assert_eq!((data.op_code, &data.data[..]), (2, &b"hello"[..]));
                }
                other => panic!("expected match data, got {:?}", other.map(|m| m.name())),
            }
            server.await.expect("server task");
            let reason = socket.closed().await;
            assert_eq!(reason, "closed by the server");
            assert!(matches!(
                socket.rpc("echo", "x").await,
                Err(ClientError::Closed { .. })
            ));
        }
    }

    #[tokio::test]
    async fn an_unanswered_request_times_out_and_is_forgotten() {
        let (to_server, _server_rx) = mpsc::channel(16);
        let (_server_tx, from_server) = mpsc::channel(16);
        let config = SocketConfig {
            timeout: Duration::from_millis(50),
            ..SocketConfig::default()
        };
        let (socket, _events) = Socket::over(
            Fake {
                to_server,
                from_server,
            },
            &config,
        );
        let result = socket.rpc("slow", "").await;
        assert!(
            matches!(result, Err(ClientError::Timeout { .. })),
            "{result:?}"
        );
        assert!(socket.pending.waiting.lock().is_empty());
    }
}
