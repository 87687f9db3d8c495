//! `rpc`: calls an RPC by id with a JSON payload as signed-in users (created in an unmeasured
//! setup), over REST `POST /v2/rpc/{id}` (the seed's workloads 4–6).

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use metafi_client::{ClientError, Socket, SocketConfig};
use serde_json::Value;

use crate::servers::Servers;
use crate::stats::SeriesKind;
use crate::workloads::{Ctx, DeviceIds, Workload, create_users, setup_note};

/// What the `rpc` workload calls and how it checks answers.
#[derive(Debug, Clone)]
pub struct RpcOptions {
    pub id: String,
    pub payload: String,
    /// Check that the answer is the payload (as JSON): right for echo functions.
    pub verify_echo: bool,
    /// Signed-in users to spread calls over.
    pub users: u64,
    pub setup_concurrency: u64,
    /// Calls per user in arrival mode.
    pub calls: u64,
    /// Call over the realtime socket (each user opens one) instead of REST.
    pub socket: Option<SocketConfig>,
}

#[derive(Debug)]
pub struct Rpc {
    options: RpcOptions,
    expected: Option<Value>,
    ids: Arc<DeviceIds>,
    tokens: OnceLock<Vec<String>>,
}

impl Rpc {
    pub fn new(options: RpcOptions) -> anyhow::Result<Rpc> {
        let expected = if options.verify_echo {
            Some(serde_json::from_str(&options.payload).map_err(|e| {
                anyhow::anyhow!(
                    "--payload is not JSON ({e}); give JSON or pass --no-verify-echo to send any text"
                )
            })?)
        } else {
            None
        };
        Ok(Rpc {
            options,
            expected,
            ids: Arc::new(DeviceIds::new("rpc")),
            tokens: OnceLock::new(),
        })
    }

    /// Whether `answer` is what this call should return.
    fn answer_ok(&self, answer: &str) -> bool {
        match &self.expected {
            None => true,
            Some(expected) => serde_json::from_str::<Value>(answer).is_ok_and(|v| &v == expected),
        }
    }
}

impl Workload for Rpc {
    fn name(&self) -> &'static str {
        "rpc"
    }

    fn series(&self) -> Vec<(&'static str, SeriesKind)> {
        let mut series = vec![("rpc", SeriesKind::Request)];
        if self.options.socket.is_some() {
            series.push(("connect", SeriesKind::Connect));
        }
        series
    }

    async fn prepare(&self, servers: &Servers) -> anyhow::Result<Vec<String>> {
        // Setup calls other than the users' creation go to the first server.
        let client = servers.client(0);
        let started = Instant::now();
        let users = self.options.users.max(1);
        let sessions =
            create_users(servers, &self.ids, users, self.options.setup_concurrency).await?;
        let took = started.elapsed();
        // the first call tells apart "no such RPC" from a load problem before the clock starts
        let probe = client
            .rpc(&sessions[0].token, &self.options.id, &self.options.payload)
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "calling RPC {:?} before the run failed: {e}; is the module loaded on the server? \
                     (metafi's example modules, such as echo_native, need a server built with \
                     `--features examples`)",
                    self.options.id
                )
            })?;
        if !self.answer_ok(&probe) {
            anyhow::bail!(
                "RPC {:?} answered {probe:?}, not the payload; pass --no-verify-echo if it is not an echo",
                self.options.id
            );
        }
        let _ = self
            .tokens
            .set(sessions.into_iter().map(|s| s.token).collect());
        Ok(vec![setup_note("signed in", users, took)])
    }

    async fn user(self: Arc<Self>, ctx: Arc<Ctx>, index: u64, repeat: bool) {
        let Some(tokens) = self.tokens.get() else {
            ctx.stats.error("no session (setup did not run)");
            return;
        };
        let token = &tokens[(index % tokens.len() as u64) as usize];
        match &self.options.socket {
            None => {
                let client = ctx.client().with_own_connections();
                self.calls(&ctx, repeat, |id, payload| client.rpc(token, id, payload))
                    .await;
            }
            Some(config) => {
                let started = Instant::now();
                let socket = match Socket::connect(ctx.client().endpoint(), token, config).await {
                    Ok((socket, _events)) => socket,
                    Err(e) => {
                        ctx.stats.error(&e.kind());
                        return;
                    }
                };
                ctx.stats.record(ctx.series("connect"), started.elapsed());
                ctx.stats.connected();
                self.calls(&ctx, repeat, |id, payload| socket.rpc(id, payload))
                    .await;
                ctx.stats.disconnected();
            }
        }
    }
}

impl Rpc {
    /// Calls with `call` until the user's script ends, recording each answer.
    async fn calls<'a, F, Fut>(&'a self, ctx: &Ctx, repeat: bool, call: F)
    where
        F: Fn(&'a str, &'a str) -> Fut,
        Fut: std::future::Future<Output = Result<String, ClientError>>,
    {
        let series = ctx.series("rpc");
        let mut calls = 0u64;
        loop {
            let started = Instant::now();
            match call(&self.options.id, &self.options.payload).await {
                Ok(answer) if self.answer_ok(&answer) => {
                    ctx.stats.record(series, started.elapsed())
                }
                Ok(_) => ctx.stats.error("answer is not the payload"),
                Err(e) => ctx.stats.error(&e.kind()),
            }
            calls += 1;
            if ctx.stopping() || (!repeat && calls >= self.options.calls) {
                break;
            }
        }
    }
}
