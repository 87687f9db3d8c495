//! The accept loop's deadlines over real sockets: slow headers, a short body and an idle
//! connection are closed by the server; a request in progress and a keep-alive connection in
//! use are not. Each test asserts that the server closed the connection, never how fast (the
//! timeouts are only a hang guard's fraction).

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use metafi_api::HttpConfig;
use support::{SERVER_KEY, TestApi, api_config};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Hang guard for each wait in these tests: far above every deadline configured below.
const GUARD: Duration = Duration::from_secs(20);

struct Served {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
    api: TestApi,
}

async fn serve(http: HttpConfig) -> Served {
    let api = TestApi::start(api_config(http.clone()), None).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let router = api.router();
    let task = tokio::spawn(async move {
        metafi_api::serve(listener, router, &http, async move {
            let _ = stopped.await;
        })
        .await;
    });
    Served {
        addr,
        stop,
        task,
        api,
    }
}

impl Served {
    async fn shutdown(self) {
        let _ = self.stop.send(());
        tokio::time::timeout(GUARD, self.task)
            .await
            .expect("the server stopped")
            .unwrap();
        self.api.close().await;
    }
}

fn short(header_ms: u64, body_ms: u64, idle_ms: u64) -> HttpConfig {
    HttpConfig {
        header_read_timeout: Duration::from_millis(header_ms),
        body_read_timeout: Duration::from_millis(body_ms),
        idle_timeout: Duration::from_millis(idle_ms),
        ..HttpConfig::default()
    }
}

/// Reads until the server closes the connection; returns what it sent. A reset counts as
/// closed too. Panics if the connection is still open after the hang guard.
async fn read_until_closed(stream: &mut TcpStream) -> String {
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(GUARD, stream.read(&mut buf)).await {
            Err(_) => panic!(
                "the server kept the connection open; received so far: {:?}",
                String::from_utf8_lossy(&received)
            ),
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => received.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&received).into_owned()
}

#[tokio::test]
async fn idle_connection_was_held_forever_now_closed_by_the_server() {
    let served = serve(short(10_000, 10_000, 200)).await;
    let mut stream = TcpStream::connect(served.addr).await.unwrap();
    let received = read_until_closed(&mut stream).await;
    assert_eq!(received, "", "nothing was asked, nothing is answered");
    served.shutdown().await;
}

#[tokio::test]
async fn trickled_headers_were_held_forever_now_cut_off() {
    // The idle deadline is long: only the header deadline, counted from the first byte, can
    // close this connection, although a byte arrives every 50 ms.
    let served = serve(short(300, 10_000, 60_000)).await;
    let stream = TcpStream::connect(served.addr).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let trickle = tokio::spawn(async move {
        let _ = writer
            .write_all(b"GET /healthcheck HTTP/1.1\r\nHost: x\r\n")
            .await;
        for _ in 0..2_000 {
            if writer.write_all(b"X").await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    });
    let mut buf = [0u8; 1024];
    let closed = tokio::time::timeout(GUARD, async {
        loop {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => return true,
                Ok(_) => {}
            }
        }
    })
    .await
    .unwrap_or(false);
    assert!(closed, "the server kept reading a head that never ends");
    trickle.abort();
    served.shutdown().await;
}

#[tokio::test]
async fn body_shorter_than_its_content_length_is_answered_408_and_closed() {
    let served = serve(short(10_000, 300, 60_000)).await;
    let mut stream = TcpStream::connect(served.addr).await.unwrap();
    let request = format!(
        "POST /v2/account/authenticate/device HTTP/1.1\r\nHost: x\r\nAuthorization: {SERVER_KEY}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"id\":"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let received = read_until_closed(&mut stream).await;
    assert!(
        received.starts_with("HTTP/1.1 408"),
        "expected 408, got {received:?}"
    );
    assert!(received.contains("http.body_read_timeout_ms"), "{received}");
    served.shutdown().await;
}

#[tokio::test]
async fn keep_alive_connection_serves_requests_then_is_closed_when_idle() {
    let served = serve(short(10_000, 10_000, 300)).await;
    let mut stream = TcpStream::connect(served.addr).await.unwrap();
    for _ in 0..3 {
        stream
            .write_all(b"GET /healthcheck HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 1024];
        let n = tokio::time::timeout(GUARD, stream.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        let answer = String::from_utf8_lossy(&buf[..n]);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("{}"), "{answer}");
    }
    let received = read_until_closed(&mut stream).await;
    assert_eq!(received, "");
    served.shutdown().await;
}

#[tokio::test]
async fn declared_oversize_body_is_refused_over_a_socket_without_sending_it() {
    let served = serve(HttpConfig::default()).await;
    let mut stream = TcpStream::connect(served.addr).await.unwrap();
    let request = format!(
        "POST /v2/account/authenticate/device HTTP/1.1\r\nHost: x\r\nAuthorization: {SERVER_KEY}\r\nContent-Type: application/json\r\nContent-Length: 50000000\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let received = read_until_closed(&mut stream).await;
    assert!(received.starts_with("HTTP/1.1 413"), "{received:?}");
    served.shutdown().await;
}

#[tokio::test]
async fn shutdown_with_an_idle_keep_alive_connection_completes() {
    let served = serve(HttpConfig::default()).await;
    let mut stream = TcpStream::connect(served.addr).await.unwrap();
    stream
        .write_all(b"GET /healthcheck HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 1024];
    let n = tokio::time::timeout(GUARD, stream.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    // The connection stays open on our side; the server must still finish (graceful close of
    // idle connections), within the hang guard.
    served.shutdown().await;
    assert_eq!(read_until_closed(&mut stream).await, "");
}
