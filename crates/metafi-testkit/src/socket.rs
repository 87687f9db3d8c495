//! A realtime client for integration tests: a tokio-tungstenite WebSocket speaking the
//! envelope protocol in either format, with request/answer correlation by `cid` and helpers to
//! wait for pushed events or for the server to close the socket.

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use metafi_proto::realtime::{Envelope, Format, Message};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{self, Message as WsMessage};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How long a test waits for something the server should send.
pub const WAIT: Duration = Duration::from_secs(5);

pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

pub struct Socket {
    pub ws: Ws,
    pub format: Format,
    next_cid: u64,
    /// Events (no cid) and answers received while waiting for something else.
    backlog: VecDeque<Envelope>,
}

/// The HTTP answer to a refused upgrade.
#[derive(Debug)]
pub struct Refused {
    pub status: u16,
    pub body: serde_json::Value,
}

/// `ws://…/ws?token=…&<extra>` from the server's `http://` base.
pub fn ws_url(base: &str, token: &str, extra: &str) -> String {
    let host = base.trim_start_matches("http://");
    let mut url = format!("ws://{host}/ws?token={token}");
    if !extra.is_empty() {
        url.push('&');
        url.push_str(extra);
    }
    url
}

impl Socket {
    /// Connects with JSON (default) or `format=protobuf` in `extra`; panics if refused.
    pub async fn connect(base: &str, token: &str, extra: &str) -> Socket {
        match Socket::try_connect(&ws_url(base, token, extra)).await {
            Ok(socket) => socket,
            Err(refused) => panic!("socket refused: {refused:?}"),
        }
    }

    pub async fn try_connect(url: &str) -> Result<Socket, Refused> {
        let format = if url.contains("format=protobuf") {
            Format::Protobuf
        } else {
            Format::Json
        };
        match tokio_tungstenite::connect_async(url).await {
            Ok((ws, _)) => Ok(Socket {
                ws,
                format,
                next_cid: 1,
                backlog: VecDeque::new(),
            }),
            Err(tungstenite::Error::Http(response)) => {
                let status = response.status().as_u16();
                let body = response
                    .body()
                    .as_ref()
                    .map(|b| serde_json::from_slice(b).unwrap_or(serde_json::Value::Null))
                    .unwrap_or(serde_json::Value::Null);
                Err(Refused { status, body })
            }
            Err(other) => panic!("connect failed: {other}"),
        }
    }

    /// Sends an envelope as is.
    pub async fn send(&mut self, envelope: &Envelope) {
        let bytes = self.format.encode(envelope);
        let frame = match self.format {
            Format::Json => WsMessage::text(String::from_utf8(bytes).expect("JSON is UTF-8")),
            Format::Protobuf => WsMessage::binary(bytes),
        };
        self.ws.send(frame).await.expect("send");
    }

    /// Sends a raw frame.
    pub async fn send_raw(&mut self, frame: WsMessage) {
        self.ws.send(frame).await.expect("send");
    }

    /// Sends `message` with a fresh cid and returns the answer carrying that cid.
    pub async fn request(&mut self, message: Message) -> Envelope {
        let cid = self.next_cid.to_string();
        self.next_cid += 1;
        self.send(&Envelope::new(cid.clone(), message)).await;
        self.wait_for(|e| e.cid == cid).await
    }

    /// Like `request`, expecting an error answer: returns `(code, message)`.
    pub async fn request_error(&mut self, message: Message) -> (i32, String) {
        let answer = self.request(message).await;
        match answer.message {
            Some(Message::Error(e)) => (e.code, e.message),
            other => panic!("expected an error answer, got {other:?}"),
        }
    }

    /// Calls RPC `id` with `payload` over the socket and returns its result (panics, naming
    /// the RPC, when it fails).
    pub async fn rpc(&mut self, id: &str, payload: &str) -> String {
        match self.rpc_answer(id, payload).await.message {
            Some(Message::Rpc(rpc)) => rpc.payload,
            other => panic!("rpc {id} failed: {other:?}"),
        }
    }

    /// Calls RPC `id`, expecting it to fail: returns the error's message (panics when it
    /// answers).
    pub async fn rpc_error(&mut self, id: &str, payload: &str) -> String {
        match self.rpc_answer(id, payload).await.message {
            Some(Message::Error(error)) => error.message,
            other => panic!("rpc {id} did not fail: {other:?}"),
        }
    }

    async fn rpc_answer(&mut self, id: &str, payload: &str) -> Envelope {
        self.request(Message::Rpc(metafi_proto::api::Rpc {
            id: id.into(),
            payload: payload.into(),
            http_key: String::new(),
        }))
        .await
    }

    /// The next pushed event (no cid) matching `accept`; others stay in the backlog.
    pub async fn event(&mut self, accept: impl Fn(&Envelope) -> bool) -> Envelope {
        self.wait_for(|e| e.cid.is_empty() && accept(e)).await
    }

    /// Waits for an envelope matching `accept`, keeping the rest for later.
    pub async fn wait_for(&mut self, accept: impl Fn(&Envelope) -> bool) -> Envelope {
        if let Some(at) = self.backlog.iter().position(&accept) {
            return self.backlog.remove(at).expect("position is in range");
        }
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let envelope = tokio::time::timeout_at(deadline, self.read_envelope())
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "nothing matching arrived within {WAIT:?}; received meanwhile: {:?}",
                        self.backlog
                    )
                })
                .unwrap_or_else(|close| panic!("socket closed while waiting: {close:?}"));
            if accept(&envelope) {
                return envelope;
            }
            self.backlog.push_back(envelope);
        }
    }

    /// Asserts that nothing matching `reject` arrives within `within`.
    pub async fn assert_no_event(&mut self, within: Duration, reject: impl Fn(&Envelope) -> bool) {
        assert!(
            !self.backlog.iter().any(&reject),
            "unexpected: {:?}",
            self.backlog
        );
        let deadline = tokio::time::Instant::now() + within;
        while let Ok(result) = tokio::time::timeout_at(deadline, self.read_envelope()).await {
            let envelope = result.unwrap_or_else(|close| panic!("socket closed: {close:?}"));
            assert!(!reject(&envelope), "unexpected: {envelope:?}");
            self.backlog.push_back(envelope);
        }
    }

    /// Reads until the server closes the socket; returns its close frame, if it sent one.
    /// Envelopes read meanwhile are kept in the backlog.
    pub async fn closed(&mut self, within: Duration) -> Option<CloseFrame> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, self.ws.next()).await {
                Err(_) => panic!("the server did not close the socket within {within:?}"),
                Ok(None) => return None,
                Ok(Some(Err(_))) => return None,
                Ok(Some(Ok(WsMessage::Close(frame)))) => return frame,
                Ok(Some(Ok(WsMessage::Text(text)))) => {
                    if let Ok(e) = Format::Json.decode(text.as_bytes()) {
                        self.backlog.push_back(e);
                    }
                }
                Ok(Some(Ok(WsMessage::Binary(bytes)))) => {
                    if let Ok(e) = Format::Protobuf.decode(&bytes) {
                        self.backlog.push_back(e);
                    }
                }
                Ok(Some(Ok(_))) => {}
            }
        }
    }

    /// Envelopes received but not consumed yet.
    pub fn backlog(&self) -> &VecDeque<Envelope> {
        &self.backlog
    }

    /// Reads the next envelope; `Err` with the close frame when the socket closes.
    async fn read_envelope(&mut self) -> Result<Envelope, Option<CloseFrame>> {
        loop {
            let frame = match self.ws.next().await {
                None | Some(Err(_)) => return Err(None),
                Some(Ok(frame)) => frame,
            };
            let envelope = match (frame, self.format) {
                (WsMessage::Text(text), Format::Json) => {
                    // Every JSON frame must be a JSON object, whatever our decoder thinks.
                    let value: serde_json::Value =
                        serde_json::from_str(text.as_str()).expect("server sent invalid JSON");
                    assert!(value.is_object(), "not an object: {value}");
                    Format::Json
                        .decode(text.as_bytes())
                        .expect("server sent a bad envelope")
                }
                (WsMessage::Binary(bytes), Format::Protobuf) => Format::Protobuf
                    .decode(&bytes)
                    .expect("server sent a bad envelope"),
                (WsMessage::Close(frame), _) => return Err(frame),
                (WsMessage::Ping(_) | WsMessage::Pong(_) | WsMessage::Frame(_), _) => continue,
                (other, format) => panic!("{format:?} socket got the wrong frame type: {other:?}"),
            };
            return Ok(envelope);
        }
    }
}

impl Socket {
    /// Drops everything received so far.
    pub fn discard_backlog(&mut self) {
        self.backlog.clear();
    }
}
