//! `metafi-bench floor`: the least a server built on MetaFi's network stack can spend on the
//! `rpc` workload — the floor of issue 21's RPC rows.
//!
//! It answers the three requests the `rpc` workload makes with the libraries MetaFi's edge is
//! built on (tokio's multi-threaded runtime, hyper through axum, tungstenite through axum's
//! WebSocket, TCP_NODELAY on every socket) and no server logic at all:
//! - `POST /v2/account/authenticate/device`: a session whose token is an opaque counter (no
//!   account, no database, no signature);
//! - `POST /v2/rpc/{id}`: the body (the payload as a JSON string, as Nakama's clients send it)
//!   copied into `{"id": …, "payload": …}` without parsing it; no token check;
//! - `GET /ws`: every text or binary frame sent back as it came. A socket RPC's answer has the
//!   request's shape (`{"cid", "rpc": {"id", "payload"}}`), so the echo is a valid answer in
//!   both formats.
//!
//! So the server CPU per call measured against it is the kernel's TCP work plus the framing
//! libraries' — what any server on this stack pays. What a real server adds on top (a token's
//! signature check, routing, the call into a runtime, metrics, logs) is the difference between
//! its row and this one (docs/BENCHMARKS.md, "The floor of the RPC rows").
//!
//! It is also the floor of the seed match row (`floor/seed_match.rs`): an RPC whose id starts with
//! `get_match` answers a seat (`{"match_id": …}`; `create_match` a new match), and a socket
//! whose first frame is a match join plays in that match instead of echoing.

mod seed_match;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context as _;
use axum::Router;
use axum::body::Bytes;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt as _;
use tokio::net::TcpListener;

use seed_match::Matches;

/// Runs the floor server on `listen` until Ctrl-C, on a runtime built as `metafi serve`
/// builds its own (multi-threaded, one worker per CPU the process may use).
pub fn run(listen: SocketAddr) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("floor-io")
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(listen)
            .await
            .with_context(|| format!("listening on {listen} (is the port taken?)"))?;
        tracing::info!(address = %listener.local_addr()?, "floor server listening");
        serve(listener, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
    })
}

/// Serves the floor on `listener` until `shutdown` completes (tests run it in-process).
pub async fn serve(
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    // Realtime messages are small: MetaFi sets TCP_NODELAY on every socket, so does the floor.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router())
        .with_graceful_shutdown(shutdown)
        .await
        .context("serving the floor")
}

fn router() -> Router {
    static SESSIONS: AtomicU64 = AtomicU64::new(0);
    Router::new()
        .route(
            "/v2/account/authenticate/device",
            post(|| async {
                let n = SESSIONS.fetch_add(1, Ordering::Relaxed);
                json(format!(
                    r#"{{"created":true,"token":"floor-{n}","refresh_token":"floor-{n}"}}"#
                ))
            }),
        )
        .route("/v2/rpc/{id}", post(rpc))
        .route("/ws", get(ws))
        .with_state(Arc::new(Matches::default()))
}

/// The body is the payload as a JSON string; it goes into the answer as it is. A finder of the
/// seed match (`get_match…`) answers a seat instead.
async fn rpc(State(matches): State<Arc<Matches>>, Path(id): Path<String>, body: Bytes) -> Response {
    let Ok(payload) = std::str::from_utf8(&body) else {
        return (StatusCode::BAD_REQUEST, "the body is not UTF-8").into_response();
    };
    if !(payload.len() >= 2 && payload.starts_with('"') && payload.ends_with('"')) {
        return (
            StatusCode::BAD_REQUEST,
            "the body must be the payload as a JSON string",
        )
            .into_response();
    }
    if id.starts_with("get_match") || id == "create_match" {
        let created = id == "create_match";
        let id = serde_json::Value::String(id);
        let seat = if created {
            matches.create()
        } else {
            matches.seat()
        };
        return json(format!(
            r#"{{"id":{id},"payload":"{{\"match_id\":\"{seat}\"}}"}}"#
        ));
    }
    // The id comes from the path: written as a JSON string so any id stays valid JSON.
    let id = serde_json::Value::String(id);
    json(format!(r#"{{"id":{id},"payload":{payload}}}"#))
}

fn json(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// MetaFi's socket read buffer (`socket.read_buffer_size_bytes`' default): tungstenite zeroes
/// its read chunk before every read, and axum's default (128 KiB) made that `memset` 37 % of the
/// floor's CPU in the match row (docs/BENCHMARKS.md, "The seed match beside Nakama").
const READ_BUFFER: usize = 4096;

async fn ws(State(matches): State<Arc<Matches>>, upgrade: WebSocketUpgrade) -> Response {
    upgrade
        .read_buffer_size(READ_BUFFER)
        .on_upgrade(|socket| echo(socket, matches))
}

async fn echo(mut socket: WebSocket, matches: Arc<Matches>) {
    let mut first = true;
    while let Some(Ok(message)) = socket.recv().await {
        if std::mem::take(&mut first)
            && let Message::Text(text) = &message
            && seed_match::is_join(text)
        {
            let text = text.clone();
            return seed_match::play(socket, text, matches).await;
        }
        match message {
            Message::Text(_) | Message::Binary(_) => {
                if socket.send(message).await.is_err() {
                    return;
                }
            }
            Message::Close(_) => return,
            Message::Ping(_) | Message::Pong(_) => {}
        }
    }
}
