//! What a server function learns of a REST call's headers (`ctx.headers`): the request's own
//! headers, moved into the context and shown as Nakama shows them when the function reads
//! them — Go's names, every value of a repeated header, without `Host` and `Grpc-Timeout`.

#![allow(clippy::unwrap_used)] // tests: a panic is the failure report

mod support;

use std::sync::Arc;

use async_trait::async_trait;
use axum::body::Body;
use axum::http::{Method, Request};
use metafi_api::HttpConfig;
use metafi_core::{CoreError, RpcContext, RpcDispatch};
use serde_json::json;
use support::{TestApi, api_config, call};

/// A native function that reads its headers: one by name, and the whole view.
#[derive(Debug)]
struct ReadsHeaders;

#[async_trait]
impl RpcDispatch for ReadsHeaders {
    async fn call(
        &self,
        _id: &str,
        ctx: RpcContext,
        _payload: String,
    ) -> Result<String, CoreError> {
        Ok(json!({
            "build": ctx.headers.get("x-game-build"),
            "host": ctx.headers.get("Host"),
            "names": ctx.headers.len(),
            "all": ctx.headers,
        })
        .to_string())
    }
}

#[tokio::test]
async fn a_native_rpc_that_reads_headers_gets_them_as_nakama_names_them() {
    let api = TestApi::start(api_config(HttpConfig::default()), None).await;
    let mut state = api.state.clone();
    state.services_mut().rpc = Arc::new(ReadsHeaders);
    let router = metafi_api::router(state);
    let request = Request::builder()
        .method(Method::POST)
        .uri("/v2/rpc/headers?http_key=defaulthttpkey")
        .header("host", "127.0.0.1:7350")
        .header("grpc-timeout", "5S")
        .header("content-type", "application/json")
        .header("x-game-build", "41")
        .header("x-game-build", "42")
        .body(Body::from(r#""{}""#))
        .unwrap();
    let reply = call(&router, request).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let seen: serde_json::Value =
        serde_json::from_str(reply.body["payload"].as_str().unwrap()).unwrap();
    assert_eq!(
        seen,
        json!({
            "build": ["41", "42"],
            "host": [],
            "names": 2,
            "all": {
                "Content-Type": ["application/json"],
                "X-Game-Build": ["41", "42"],
            },
        })
    );
    api.close().await;
}
