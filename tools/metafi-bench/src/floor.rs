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

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context as _;
use axum::Router;
use axum::body::Bytes;
use axum::extract::Path;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt as _;
use tokio::net::TcpListener;

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
}

/// The body is the payload as a JSON string; it goes into the answer as it is.
async fn rpc(Path(id): Path<String>, body: Bytes) -> Response {
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
    // The id comes from the path: written as a JSON string so any id stays valid JSON.
    let id = serde_json::Value::String(id);
    json(format!(r#"{{"id":{id},"payload":{payload}}}"#))
}

fn json(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn ws(upgrade: WebSocketUpgrade) -> Response {
    upgrade.on_upgrade(echo)
}

async fn echo(mut socket: WebSocket) {
    while let Some(Ok(message)) = socket.recv().await {
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
