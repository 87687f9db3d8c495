//! What the cluster tests share: the NATS server `scripts/test.sh` starts (`scripts/nats.sh`),
//! nodes in one process that form a cluster of their own ([`ClusterSpec`], [`TestCluster`]),
//! and waiting for state that reaches a node over the network.

use std::sync::Arc;
use std::time::{Duration, Instant};

use metafi_server::config::RawConfig;
use tempfile::TempDir;

use crate::TestNode;

/// The NATS server to cluster on (`METAFI_TEST_NATS_URL`); `None` skips a cluster test, unless
/// `METAFI_REQUIRE_NATS=1` (as in `scripts/test.sh`), where a missing server fails it.
pub fn nats_url() -> Option<String> {
    match std::env::var("METAFI_TEST_NATS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("METAFI_REQUIRE_NATS").as_deref() != Ok("1"),
                "METAFI_REQUIRE_NATS=1 but METAFI_TEST_NATS_URL is not set (see scripts/nats.sh)"
            );
            None
        }
    }
}

/// Polls `done` every 10 ms for up to 5 s (generous for a loaded machine); fails the test with
/// `what` when it never holds.
pub async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "not within 5 s: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A node's configuration change, given the node's name (`n1`, `n2`, …).
type Tweak = Arc<dyn Fn(&str, &mut RawConfig) + Send + Sync>;

/// How each node of a [`TestCluster`] is set up: the modules in its runtime folder and its
/// configuration. Every node gets, before the test's own changes: its name, the test NATS,
/// a subject prefix of this cluster's own (tests running at once form separate clusters), a
/// 100 ms heartbeat and a 500 ms lost-peer bound (a lost node is noticed quickly), and the
/// PostgreSQL of `METAFI_TEST_POSTGRES_URL`.
#[derive(Clone, Default)]
pub struct ClusterSpec {
    modules: Vec<(String, String)>,
    small: bool,
    tweaks: Vec<Tweak>,
}

impl ClusterSpec {
    pub fn new() -> ClusterSpec {
        ClusterSpec::default()
    }

    /// A module file (`name`, e.g. `rpcs.lua`) written into every node's runtime folder.
    pub fn module(mut self, name: &str, source: &str) -> ClusterSpec {
        self.modules.push((name.to_owned(), source.to_owned()));
        self
    }

    /// One Lua VM, one match executor thread and no shutdown grace: small nodes, several to a
    /// test process on a shared machine.
    pub fn small(mut self) -> ClusterSpec {
        self.small = true;
        self
    }

    /// A configuration change for every node, after the kit's own; it is given the node's
    /// name, so one node can differ.
    pub fn config(
        mut self,
        tweak: impl Fn(&str, &mut RawConfig) + Send + Sync + 'static,
    ) -> ClusterSpec {
        self.tweaks.push(Arc::new(tweak));
        self
    }

    /// Starts `count` nodes, `n1` to `n{count}`, one after another, and waits until every node
    /// sees every other (`0`: none yet, see [`TestCluster::add_named`]). `None` when the test
    /// NATS or PostgreSQL is not configured (the test skips; see [`nats_url`] and
    /// [`TestNode::start_on_postgres`]).
    pub async fn start(self, count: usize) -> Option<TestCluster> {
        let mut cluster = TestCluster {
            nodes: Vec::new(),
            dirs: NodeDirs(Vec::new()),
            nats: nats_url()?,
            prefix: format!("test{}", uuid::Uuid::new_v4().simple()),
            spec: self,
        };
        for _ in 0..count {
            cluster.add_node().await?;
        }
        Some(cluster)
    }
}

/// Nodes in one process that form one cluster (see [`ClusterSpec`]). Dropping it stops them.
pub struct TestCluster {
    /// `nodes[0]` is `n1`, and so on.
    pub nodes: Vec<TestNode>,
    /// Each node's directory; dropped after the nodes (field order).
    dirs: NodeDirs,
    nats: String,
    prefix: String,
    spec: ClusterSpec,
}

impl TestCluster {
    /// Starts the next node (`n{len + 1}`) as the spec says and waits until every node sees
    /// every other. `None` as [`ClusterSpec::start`].
    pub async fn add_node(&mut self) -> Option<&TestNode> {
        let name = format!("n{}", self.nodes.len() + 1);
        self.add_named(&name).await
    }

    /// Starts a node named `name` (for a test about names: the lowest runs the matchmaker
    /// pool) as [`TestCluster::add_node`] does.
    pub async fn add_named(&mut self, name: &str) -> Option<&TestNode> {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let modules = dir.path().join("modules");
        for (file, source) in &self.spec.modules {
            std::fs::create_dir_all(&modules).expect("the modules folder");
            std::fs::write(modules.join(file), source).expect("a module file");
        }
        let (spec, nats, prefix) = (&self.spec, self.nats.clone(), self.prefix.clone());
        let node = TestNode::start_on_postgres(dir.path(), |raw| {
            raw.name = name.to_owned();
            raw.cluster.url = nats;
            raw.cluster.subject_prefix = prefix;
            raw.cluster.heartbeat_interval_ms = 100;
            raw.cluster.peer_lost_timeout_ms = 500;
            if !spec.modules.is_empty() {
                raw.runtime.path = modules.display().to_string();
            }
            if spec.small {
                raw.runtime.lua_vms = 1;
                raw.matches.executor_threads = 1;
                raw.shutdown.grace_period_sec = 0;
            }
            for tweak in &spec.tweaks {
                tweak(name, raw);
            }
        })
        .await?;
        self.nodes.push(node);
        self.dirs.0.push(dir);
        let others = self.nodes.len() - 1;
        eventually("the nodes see each other", || {
            self.nodes.iter().all(|n| peers(n).len() == others)
        })
        .await;
        self.nodes.last()
    }

    /// The nodes, and their directories to hold for as long as the nodes run
    /// (`let (nodes, _dirs) = cluster.into_nodes();`): for a test that stops nodes one by one.
    pub fn into_nodes(self) -> (Vec<TestNode>, NodeDirs) {
        (self.nodes, self.dirs)
    }

    /// The cluster as its two nodes, for tests written about `n1` and `n2`. Panics unless it
    /// has exactly two.
    pub fn pair(self) -> Pair {
        let (nodes, dirs) = self.into_nodes();
        let [n1, n2]: [TestNode; 2] = nodes
            .try_into()
            .unwrap_or_else(|n: Vec<TestNode>| panic!("a pair has two nodes, not {}", n.len()));
        Pair {
            n1,
            n2,
            _dirs: dirs,
        }
    }
}

/// The directories of a cluster's nodes, removed when dropped: hold it until the nodes stop.
pub struct NodeDirs(Vec<TempDir>);

/// Two nodes of one cluster (see [`TestCluster::pair`]).
pub struct Pair {
    pub n1: TestNode,
    pub n2: TestNode,
    /// The nodes' directories: bind it (`Pair { n1, n2, _dirs }`) so they outlive the nodes.
    pub _dirs: NodeDirs,
}

/// The names of the peers `node` knows.
pub fn peers(node: &TestNode) -> Vec<String> {
    node.node().cluster().expect("a clustered node").peers()
}
