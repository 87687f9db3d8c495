//! A MetaFi server started in-process on port 0 with a throwaway data directory, and a small
//! HTTP helper to call it.

#![allow(dead_code)] // each test file uses a different part of this module

use std::future::Future;
use std::path::{Path, PathBuf};

use metafi_server::config::{Config, RawConfig};
use metafi_server::{Listeners, run};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub struct TestServer {
    pub base: String,
    pub metrics: Option<String>,
    /// The QUIC listener's address, when `[quic]` is enabled.
    pub quic: Option<std::net::SocketAddr>,
    pub data_dir: PathBuf,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<anyhow::Result<()>>>,
}

impl TestServer {
    /// A server on SQLite in `dir`, with `tweak` applied to its configuration.
    pub async fn start_in(dir: &Path, tweak: impl FnOnce(&mut RawConfig)) -> TestServer {
        let mut raw = RawConfig {
            data_dir: dir.join("data").display().to_string(),
            ..RawConfig::default()
        };
        raw.socket.port = 0;
        raw.metrics.port = 0;
        raw.accounts.bcrypt_cost = 4;
        tweak(&mut raw);
        let config = Config::try_from(raw).expect("test configuration is valid");
        let listeners = Listeners::bind(&config).await.expect("bind port 0");
        let base = format!("http://{}", listeners.api_addr().unwrap());
        let metrics = listeners
            .metrics_addr()
            .unwrap()
            .map(|a| format!("http://{a}"));
        let quic = listeners.quic_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(run(config, listeners, async move {
            let _ = stopped.await;
        }));
        let server = TestServer {
            base,
            metrics,
            quic,
            data_dir: dir.to_owned(),
            stop: Some(stop),
            task: Some(task),
        };
        server.wait_ready().await;
        server
    }

    /// Asks the server to shut down and waits until it has closed its database.
    pub async fn stop(mut self) {
        self.shutdown().await.expect("server shut down cleanly");
    }

    /// Like `stop`, returning the server's result.
    pub async fn shutdown(&mut self) -> anyhow::Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task.await?,
            None => Ok(()),
        }
    }

    /// Triggers shutdown without waiting; returns the join handle.
    pub fn begin_shutdown(&mut self) -> impl Future<Output = anyhow::Result<()>> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let task = self.task.take();
        async move {
            match task {
                Some(task) => task.await?,
                None => Ok(()),
            }
        }
    }

    async fn wait_ready(&self) {
        let client = reqwest::Client::new();
        for _ in 0..200 {
            if let Ok(r) = client
                .get(format!("{}/healthcheck", self.base))
                .send()
                .await
                && r.status().is_success()
            {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!("server at {} did not become healthy", self.base);
    }
}

/// A response reduced to what tests look at.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
}

/// Thin HTTP helper speaking to one server.
#[derive(Clone)]
pub struct Http {
    pub base: String,
    client: reqwest::Client,
}

impl Http {
    pub fn new(base: &str) -> Http {
        Http {
            base: base.to_owned(),
            client: reqwest::Client::new(),
        }
    }

    pub async fn send(&self, request: reqwest::RequestBuilder) -> Reply {
        let response = request.send().await.expect("request sent");
        let status = response.status().as_u16();
        let text = response.text().await.expect("body read");
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Reply { status, body }
    }

    pub fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.client.post(format!("{}{}", self.base, path))
    }

    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.client.get(format!("{}{}", self.base, path))
    }

    pub fn put(&self, path: &str) -> reqwest::RequestBuilder {
        self.client.put(format!("{}{}", self.base, path))
    }

    /// Device authentication with the default server key.
    pub async fn auth_device(&self, device_id: &str, create: bool) -> Reply {
        self.send(
            self.post(&format!("/v2/account/authenticate/device?create={create}"))
                .basic_auth("defaultkey", Some(""))
                .json(&serde_json::json!({ "id": device_id })),
        )
        .await
    }

    /// A new account's session token.
    pub async fn new_session(&self) -> (String, String) {
        let reply = self
            .auth_device(&format!("device-{}", uuid::Uuid::new_v4()), true)
            .await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        (
            reply.body["token"].as_str().unwrap().to_owned(),
            reply.body["refresh_token"].as_str().unwrap().to_owned(),
        )
    }
}

/// Asserts Nakama's error shape with the given HTTP status and gRPC code.
pub fn assert_error(reply: &Reply, status: u16, code: i64) {
    assert_eq!(reply.status, status, "body: {}", reply.body);
    assert_eq!(reply.body["code"], code, "body: {}", reply.body);
    assert!(reply.body["message"].is_string(), "body: {}", reply.body);
    assert_eq!(reply.body["error"], reply.body["message"]);
}
