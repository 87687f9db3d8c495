//! Against a loopback server only: it answers each request with what it received.

use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::*;
use crate::nk_api::test_support::{nk_with, on};
use crate::nk_api::{Naming, UtilityConfig};

/// What the loopback server does with each request.
#[derive(Clone, Copy)]
enum Reply {
    /// 201 with `X-Seen: <method> <path> <x-test header>` and the request body echoed.
    Echo,
    /// 200 with a body of this many bytes.
    Bytes(usize),
    /// Never answers.
    Silent,
}

/// Serves `reply` on 127.0.0.1; returns the base URL.
async fn serve(reply: Reply) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                let head_end = loop {
                    let Ok(n) = socket.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    request.extend_from_slice(&buf[..n]);
                    if let Some(at) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                        break at + 4;
                    }
                };
                let head = String::from_utf8_lossy(&request[..head_end]).into_owned();
                let length = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length: ")
                            .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                    })
                    .unwrap_or(0);
                while request.len() < head_end + length {
                    let Ok(n) = socket.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        break;
                    }
                    request.extend_from_slice(&buf[..n]);
                }
                let body = request[head_end..].to_vec();
                let response = match reply {
                    Reply::Silent => {
                        tokio::time::sleep(Duration::from_secs(60)).await;
                        return;
                    }
                    Reply::Echo => {
                        let mut first = head.lines().next().unwrap_or("").split(' ');
                        let (method, path) =
                            (first.next().unwrap_or(""), first.next().unwrap_or(""));
                        let test = head
                            .lines()
                            .find_map(|l| l.strip_prefix("x-test: "))
                            .unwrap_or("-");
                        let mut out = format!(
                            "HTTP/1.1 201 Created\r\nx-seen: {method} {path} {test}\r\nset-cookie: a=1\r\nset-cookie: b=2\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                            body.len()
                        )
                        .into_bytes();
                        out.extend_from_slice(&body);
                        out
                    }
                    Reply::Bytes(n) => {
                        let mut out = format!(
                            "HTTP/1.1 200 OK\r\ncontent-length: {n}\r\nconnection: close\r\n\r\n"
                        )
                        .into_bytes();
                        out.extend(std::iter::repeat_n(b'x', n));
                        out
                    }
                };
                let _ = socket.write_all(&response).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    format!("http://{address}")
}

/// A hang guard far above any real wait.
async fn guarded<T>(work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), work)
        .await
        .expect("the call hung")
}

#[tokio::test]
async fn lua_gets_code_headers_and_body() {
    let base = serve(Reply::Echo).await;
    let t = nk_with(UtilityConfig::default()).await;
    let result = guarded(on(
        &t.nk,
        Naming::Snake,
        "http_request",
        vec![
            format!("{base}/path?q=1").into(),
            "post".into(),
            NkValue::from_json(&json!({"x-test": "yes"})),
            "payload".into(),
        ],
    ))
    .await
    .unwrap();
    let NkValue::Multi(values) = result else {
        panic!("Lua gets three values, got {result:?}")
    };
    assert_eq!(values[0], NkValue::Int(201));
    let headers = values[1].as_map().expect("a header table");
    assert_eq!(headers.get("X-Seen"), Some(&"POST /path?q=1 yes".into()));
    assert_eq!(
        headers.get("Set-Cookie"),
        Some(&"a=1".into()),
        "the first value"
    );
    assert_eq!(values[2], NkValue::from("payload"));
}

#[tokio::test]
async fn javascript_gets_one_object_with_every_header_value() {
    let base = serve(Reply::Echo).await;
    let t = nk_with(UtilityConfig::default()).await;
    let result = guarded(on(
        &t.nk,
        Naming::Camel,
        "httpRequest",
        // `insecure`: the client that skips certificate checks serves plain HTTP too.
        vec![
            base.into(),
            "get".into(),
            NkValue::Nil,
            NkValue::Nil,
            NkValue::Nil,
            true.into(),
        ],
    ))
    .await
    .unwrap();
    let json = result.to_json(Naming::Camel).unwrap();
    assert_eq!(json["code"], json!(201));
    assert_eq!(json["headers"]["Set-Cookie"], json!(["a=1", "b=2"]));
    assert_eq!(json["headers"]["X-Seen"], json!(["GET / -"]));
    assert_eq!(json["body"], json!(""));
}

#[tokio::test]
async fn a_body_past_the_limit_fails_instead_of_growing() {
    let base = serve(Reply::Bytes(2048)).await;
    let t = nk_with(UtilityConfig {
        http_request_max_bytes: 1024,
        ..UtilityConfig::default()
    })
    .await;
    let result = guarded(on(
        &t.nk,
        Naming::Snake,
        "http_request",
        vec![
            base.clone().into(),
            "GET".into(),
            NkValue::Map(NkMap::new()),
        ],
    ))
    .await;
    assert_eq!(
        result,
        Err(NkError::failed(
            "HTTP response body error: the body exceeds 1024 bytes (runtime.http_request_max_bytes)"
        ))
    );
    let t = nk_with(UtilityConfig {
        http_request_max_bytes: 2048,
        ..UtilityConfig::default()
    })
    .await;
    let result = guarded(on(
        &t.nk,
        Naming::Snake,
        "http_request",
        vec![base.into(), "GET".into(), NkValue::Map(NkMap::new())],
    ))
    .await
    .unwrap();
    let NkValue::Multi(values) = result else {
        panic!("three values")
    };
    assert_eq!(values[2].as_str().map(str::len), Some(2048));
}

#[tokio::test]
async fn a_silent_server_times_out_after_the_given_milliseconds() {
    let base = serve(Reply::Silent).await;
    let t = nk_with(UtilityConfig::default()).await;
    let result = guarded(on(
        &t.nk,
        Naming::Snake,
        "http_request",
        vec![
            base.clone().into(),
            "GET".into(),
            NkValue::Map(NkMap::new()),
            NkValue::Nil,
            100i64.into(),
        ],
    ))
    .await;
    assert_eq!(
        result,
        Err(NkError::failed(format!(
            "HTTP request error: Get \"{base}/\": context deadline exceeded"
        )))
    );
}

#[tokio::test]
async fn https_fails_cleanly_when_nothing_listens() {
    // Builds the TLS client (rustls with ring) and reports the connection error as an error.
    let t = nk_with(UtilityConfig::default()).await;
    let result = guarded(on(
        &t.nk,
        Naming::Snake,
        "http_request",
        vec![
            "https://127.0.0.1:1/".into(),
            "GET".into(),
            NkValue::Map(NkMap::new()),
        ],
    ))
    .await;
    let Err(NkError::Failed { message }) = result else {
        panic!("expected a failure, got {result:?}")
    };
    assert!(
        message.starts_with("HTTP request error: Get \"https://127.0.0.1:1/\": "),
        "{message}"
    );
}

#[tokio::test]
async fn only_http_urls_and_nakamas_methods_are_accepted() {
    let t = nk_with(UtilityConfig::default()).await;
    let empty = || NkValue::Map(NkMap::new());
    assert_eq!(
        on(
            &t.nk,
            Naming::Snake,
            "http_request",
            vec!["file:///etc/passwd".into(), "GET".into(), empty()]
        )
        .await,
        Err(NkError::failed(
            "HTTP request error: unsupported protocol scheme \"file\""
        ))
    );
    assert_eq!(
        on(
            &t.nk,
            Naming::Snake,
            "http_request",
            vec!["http://127.0.0.1:1/".into(), "TRACE".into(), empty()]
        )
        .await,
        Err(NkError::Arg {
            position: 2,
            message: "expects method to be one of: 'get', 'post', 'put', 'patch', 'delete', 'head'"
                .into()
        })
    );
    assert_eq!(
        on(
            &t.nk,
            Naming::Camel,
            "httpRequest",
            vec!["".into(), "GET".into()]
        )
        .await,
        Err(NkError::Arg {
            position: 1,
            message: "URL string cannot be empty.".into()
        })
    );
    assert_eq!(
        on(
            &t.nk,
            Naming::Snake,
            "http_request",
            vec![
                "http://127.0.0.1:1/".into(),
                "GET".into(),
                NkValue::from_json(&json!({"a": 1}))
            ]
        )
        .await,
        Err(NkError::failed("HTTP header values must be strings"))
    );
}
