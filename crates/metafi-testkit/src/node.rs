//! A MetaFi node started in-process on port 0 through `metafi_server::Node::start`, with a
//! throwaway data directory.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use metafi_server::config::{Config, RawConfig};
use metafi_server::{Listeners, Node};
use tempfile::TempDir;

use crate::Http;

/// The variable naming the PostgreSQL server for tests (`scripts/postgres.sh` prints one).
pub const POSTGRES_URL_VAR: &str = "METAFI_TEST_POSTGRES_URL";

/// A running node and where to reach it.
pub struct TestNode {
    /// `http://127.0.0.1:PORT`: the REST API and `/ws`.
    pub base: String,
    /// `http://…` of `/metrics` and `/debug/matches`, when enabled.
    pub metrics: Option<String>,
    /// The QUIC listener's address, when `[quic]` is enabled.
    pub quic: Option<std::net::SocketAddr>,
    /// `http://…` of the console, when `[console]` is enabled.
    pub console: Option<String>,
    /// The directory given to the node: its data is under `data/`.
    pub data_dir: PathBuf,
    node: Option<Node>,
    grace: Duration,
    /// The directory the kit made, removed when the node value is dropped.
    _owned_dir: Option<TempDir>,
}

impl TestNode {
    /// A node on SQLite in a temporary directory of its own, with `tweak` applied to its
    /// configuration.
    pub async fn start(tweak: impl FnOnce(&mut RawConfig)) -> TestNode {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut node = TestNode::start_in(dir.path(), tweak).await;
        node._owned_dir = Some(dir);
        node
    }

    /// A node on SQLite in `dir`, with `tweak` applied to its configuration.
    pub async fn start_in(dir: &Path, tweak: impl FnOnce(&mut RawConfig)) -> TestNode {
        match TestNode::try_start_in(dir, tweak).await {
            Ok(node) => node,
            Err(e) => panic!("the test node did not start: {e:#}"),
        }
    }

    /// A node on the PostgreSQL server named by `METAFI_TEST_POSTGRES_URL` (data other than the
    /// database in `dir`), or `None` when the variable is not set: the test then skips, unless
    /// `METAFI_REQUIRE_POSTGRES=1` (as in `scripts/test.sh`) makes a missing server a failure.
    pub async fn start_on_postgres(
        dir: &Path,
        tweak: impl FnOnce(&mut RawConfig),
    ) -> Option<TestNode> {
        let Ok(url) = std::env::var(POSTGRES_URL_VAR) else {
            assert!(
                std::env::var("METAFI_REQUIRE_POSTGRES").as_deref() != Ok("1"),
                "METAFI_REQUIRE_POSTGRES=1 but {POSTGRES_URL_VAR} is not set (see scripts/postgres.sh)"
            );
            return None;
        };
        Some(
            TestNode::start_in(dir, |raw| {
                raw.database.url = url;
                tweak(raw);
            })
            .await,
        )
    }

    /// Like [`TestNode::start_in`], returning the start error (a test of start failures).
    pub async fn try_start_in(
        dir: &Path,
        tweak: impl FnOnce(&mut RawConfig),
    ) -> anyhow::Result<TestNode> {
        let config = Config::try_from(test_config(dir, tweak))?;
        let grace = config.shutdown_grace;
        let listeners = Listeners::bind(&config).await?;
        let node = Node::start(config, listeners).await?;
        let addrs = node.addrs();
        let node = TestNode {
            base: format!("http://{}", addrs.api),
            metrics: addrs.metrics.map(|a| format!("http://{a}")),
            quic: addrs.quic,
            console: addrs.console.map(|a| format!("http://{a}")),
            data_dir: dir.to_owned(),
            node: Some(node),
            grace,
            _owned_dir: None,
        };
        node.wait_ready().await;
        Ok(node)
    }

    /// The node's `nk` API, to call server functions as its modules would.
    pub fn nk(&self) -> metafi_runtime::Nk {
        self.node
            .as_ref()
            .and_then(Node::nk)
            .expect("a running node has a runtime")
    }

    /// The running node itself (what it knows beyond its API: its cluster, …).
    pub fn node(&self) -> &Node {
        self.node.as_ref().expect("the node is running")
    }

    /// The running node, to act on it (halt its cluster, …).
    pub fn node_mut(&mut self) -> &mut Node {
        self.node.as_mut().expect("the node is running")
    }

    /// An HTTP client for this node.
    pub fn http(&self) -> Http {
        Http::new(&self.base)
    }

    /// Stops the node (`shutdown.grace_period_sec`) and waits until it has closed its database.
    pub async fn stop(mut self) {
        self.shutdown().await.expect("node shut down cleanly");
    }

    /// Like `stop`, returning the result.
    pub async fn shutdown(&mut self) -> anyhow::Result<()> {
        self.begin_shutdown().await
    }

    /// Starts stopping the node now; the returned future ends when it has stopped.
    pub fn begin_shutdown(&mut self) -> impl Future<Output = anyhow::Result<()>> + use<> {
        let grace = self.grace;
        let task = self.node.take().map(|node| tokio::spawn(node.stop(grace)));
        async move {
            if let Some(task) = task {
                task.await?;
            }
            Ok(())
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
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("node at {} did not become healthy", self.base);
    }
}

impl Drop for TestNode {
    /// A node the test did not stop is stopped in the background, as a signal would.
    fn drop(&mut self) {
        if let (Some(node), Ok(runtime)) = (self.node.take(), tokio::runtime::Handle::try_current())
        {
            runtime.spawn(node.stop(self.grace));
        }
    }
}

/// The test defaults: data under `dir/data`, every listener on port 0, cheap password hashes.
fn test_config(dir: &Path, tweak: impl FnOnce(&mut RawConfig)) -> RawConfig {
    let mut raw = RawConfig {
        data_dir: dir.join("data").display().to_string(),
        ..RawConfig::default()
    };
    raw.socket.port = 0;
    raw.metrics.port = 0;
    raw.console.port = 0;
    raw.accounts.bcrypt_cost = 4;
    tweak(&mut raw);
    raw
}
